//! The usage types (DESIGN §8): the tokens of a call by kind ([`Tokens`], [`Kind`]) and what
//! some calls add up to ([`Total`]). No prices here: `cost/` prices the tokens and hands each
//! call's cost to [`Total`] as a [`Charge`].

use super::Usage;
use super::micros::dollars;

/// Tokens of one call by kind, as every format normalizes them: `input` excludes cached
/// tokens, `output` excludes reasoning tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub cache_read: u64,
    /// All cache writes, whatever their tier.
    pub cache_write: u64,
    pub output: u64,
    pub reasoning: u64,
    /// Of `cache_write`, those to the 1-hour cache.
    pub cache_write_1h: u64,
    /// Of `cache_write`, those whose tier the recorder did not say (priced as 5-minute).
    pub cache_write_untiered: u64,
    /// Web search requests.
    pub web_search: u64,
}

impl Tokens {
    /// Add another call's (or total's) tokens.
    pub fn add(&mut self, t: &Tokens) {
        self.input = self.input.saturating_add(t.input);
        self.cache_read = self.cache_read.saturating_add(t.cache_read);
        self.cache_write = self.cache_write.saturating_add(t.cache_write);
        self.output = self.output.saturating_add(t.output);
        self.reasoning = self.reasoning.saturating_add(t.reasoning);
        self.cache_write_1h = self.cache_write_1h.saturating_add(t.cache_write_1h);
        self.cache_write_untiered = self.cache_write_untiered.saturating_add(t.cache_write_untiered);
        self.web_search = self.web_search.saturating_add(t.web_search);
    }
    /// The count of one kind (cache writes split by tier).
    pub fn of(&self, k: Kind) -> u64 {
        let w1h = self.cache_write_1h.min(self.cache_write);
        match k {
            Kind::Input => self.input,
            Kind::CacheRead => self.cache_read,
            Kind::CacheWrite5m => self.cache_write - w1h,
            Kind::CacheWrite1h => w1h,
            Kind::Output => self.output,
            Kind::Reasoning => self.reasoning,
            Kind::WebSearch => self.web_search,
        }
    }
}

/// What a call is billed for, each at its own price.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Input,
    CacheRead,
    CacheWrite5m,
    CacheWrite1h,
    Output,
    Reasoning,
    WebSearch,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::Input,
        Kind::CacheRead,
        Kind::CacheWrite5m,
        Kind::CacheWrite1h,
        Kind::Output,
        Kind::Reasoning,
        Kind::WebSearch,
    ];
    pub fn label(self) -> &'static str {
        match self {
            Kind::Input => "input",
            Kind::CacheRead => "cache read",
            Kind::CacheWrite5m => "cache write 5m",
            Kind::CacheWrite1h => "cache write 1h",
            Kind::Output => "output",
            Kind::Reasoning => "reasoning",
            Kind::WebSearch => "web search",
        }
    }
    /// A name for JSON keys.
    pub fn key(self) -> &'static str {
        match self {
            Kind::Input => "input",
            Kind::CacheRead => "cache_read",
            Kind::CacheWrite5m => "cache_write_5m",
            Kind::CacheWrite1h => "cache_write_1h",
            Kind::Output => "output",
            Kind::Reasoning => "reasoning",
            Kind::WebSearch => "web_search",
        }
    }
    /// Billed per request rather than per token.
    pub fn per_request(self) -> bool {
        self == Kind::WebSearch
    }
}

/// The tokens of one call by kind (unknown kinds count 0).
pub fn tokens_of(u: &Usage) -> Tokens {
    let cache_write = u.cache_write.unwrap_or(0);
    Tokens {
        input: u.input.unwrap_or(0),
        cache_read: u.cache_read.unwrap_or(0),
        cache_write,
        output: u.output.unwrap_or(0),
        reasoning: u.reasoning.unwrap_or(0),
        cache_write_1h: u.cache_write_1h.map_or(0, |n| n.min(cache_write)),
        cache_write_untiered: if u.cache_write_1h.is_none() { cache_write } else { 0 },
        web_search: u.web_search.unwrap_or(0),
    }
}

/// What one call cost, as a [`Total`] adds it up (the `CallCost` of cost/usage.rs turns into one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Charge {
    /// Microdollars: the recorded cost where the recorder wrote one, else the computed one;
    /// None when unknown.
    pub micros: Option<u64>,
    /// The cost computed from the tokens, even where the recorder wrote one.
    pub computed: Option<u64>,
    /// Whether the call recorded token counts: a call without them has no cost to know, one
    /// with them and no `micros` has an unknown cost.
    pub has_usage: bool,
}

/// Tokens and cost added up over some calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Total {
    pub calls: u64,
    pub tokens: Tokens,
    /// Sum of [`Usage::sum`] (the recorded totals where the parts are not known).
    pub total_tokens: u64,
    /// Sum of the known costs, microdollars.
    pub micros: u64,
    /// Calls with usage whose cost is unknown (left out of `micros`).
    pub unknown: u64,
    /// Calls whose recorder wrote their cost, and the sum of those costs (microdollars).
    pub recorded_calls: u64,
    pub recorded: u64,
    /// The same calls' costs computed from their tokens (those that can be: the others are
    /// `recorded_uncomputed`), to set beside `recorded`.
    pub recomputed: u64,
    pub recorded_uncomputed: u64,
}

impl Total {
    /// Add one call: its usage and what it cost ([`Charge`]; the pricing in `cost/` makes
    /// one of each call it prices).
    pub fn add(&mut self, u: Option<&Usage>, c: impl Into<Charge>) {
        self.calls += 1;
        self.add_usage(u, c);
    }
    /// Add tokens and cost that are not one call's (a run's recorded totals).
    pub fn add_usage(&mut self, u: Option<&Usage>, c: impl Into<Charge>) {
        let c = c.into();
        if let Some(u) = u {
            self.tokens.add(&tokens_of(u));
            self.total_tokens = self.total_tokens.saturating_add(u.sum().unwrap_or(0));
            if let Some(r) = u.cost {
                self.recorded_calls += 1;
                self.recorded = self.recorded.saturating_add(r);
                match c.computed {
                    Some(m) => self.recomputed = self.recomputed.saturating_add(m),
                    None => self.recorded_uncomputed += 1,
                }
            }
        }
        match c.micros {
            Some(m) => self.micros = self.micros.saturating_add(m),
            None if c.has_usage => self.unknown += 1,
            None => {}
        }
    }
    pub fn merge(&mut self, o: &Total) {
        self.calls += o.calls;
        self.tokens.add(&o.tokens);
        self.total_tokens = self.total_tokens.saturating_add(o.total_tokens);
        self.micros = self.micros.saturating_add(o.micros);
        self.unknown += o.unknown;
        self.recorded_calls += o.recorded_calls;
        self.recorded = self.recorded.saturating_add(o.recorded);
        self.recomputed = self.recomputed.saturating_add(o.recomputed);
        self.recorded_uncomputed += o.recorded_uncomputed;
    }
    /// The cost as a user reads it: `$0.1234`, `≥$0.1234` when some calls are unknown,
    /// `?` when none is known.
    pub fn cost_text(&self) -> String {
        match (self.micros, self.unknown) {
            (0, u) if u > 0 => "?".into(),
            (m, 0) => dollars(m),
            (m, _) => format!("≥{}", dollars(m)),
        }
    }
}
