//! What model calls cost: a pinned snapshot of LiteLLM's public price list (`prices.tsv`,
//! reduced to chat/completion models by `update_prices.py`), the user's own prices from
//! `config.toml`, and the matching of model names as recorders spell them (provider prefixes,
//! date suffixes, `-latest`, Bedrock and Vertex ids).
//!
//! Money is integers: prices in picodollars a token (a price list's `3e-06` dollars is
//! 3,000,000), a call's cost rounded to microdollars, and totals summed in microdollars, so
//! that thousands of calls add up without float drift.

pub mod attribution;
pub mod usage;

pub use crate::model::usage::{Kind, Tokens};

use rustc_hash::FxHashMap as HashMap;
use std::sync::OnceLock;

/// The embedded price list.
const BUILTIN: &str = include_str!("prices.tsv");

/// Picodollars a token (dollars per million tokens x 1,000,000).
pub type Pico = u64;

/// The prices of one model. A kind without a price of its own falls back as `cost` says.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Price {
    pub input: Option<Pico>,
    pub output: Option<Pico>,
    pub cache_read: Option<Pico>,
    /// A write to the 5-minute cache (Anthropic: 1.25x input).
    pub cache_write: Option<Pico>,
    /// A write to the 1-hour cache (Anthropic: 2x input).
    pub cache_write_1h: Option<Pico>,
    pub reasoning: Option<Pico>,
    /// One web search request (picodollars a request).
    pub web_search: Option<Pico>,
    /// Other prices for calls whose prompt is longer than a threshold (long-context tiers).
    pub tier: Option<Box<Tier>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Tier {
    /// Prompt tokens (input, cache read and cache write) above which these prices apply.
    pub above: u64,
    pub input: Option<Pico>,
    pub output: Option<Pico>,
    pub cache_read: Option<Pico>,
    pub cache_write: Option<Pico>,
    pub cache_write_1h: Option<Pico>,
}

/// Where a price comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The embedded list (its source line says which list and revision).
    Builtin,
    /// The user's config file.
    Config(std::path::PathBuf),
}

#[derive(Clone, Debug)]
pub struct Entry {
    pub model: String,
    pub provider: String,
    pub price: Price,
    pub source: Source,
}

/// How a model name was matched to a price.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// The name is in the list as written.
    Exact,
    /// Found under another spelling of the same model (the name the list uses is `Entry::model`).
    Spelling,
    /// Only the model family matched: the name without its date or version suffix, priced as
    /// the list's first model of that family.
    Family,
}

impl How {
    pub fn describe(self) -> &'static str {
        match self {
            How::Exact => "exact name",
            How::Spelling => "same model, other spelling",
            How::Family => "same model family (date or version differs)",
        }
    }
}

/// A price list with its indexes.
#[derive(Clone, Debug, Default)]
pub struct Prices {
    pub entries: Vec<Entry>,
    /// Where the embedded list came from (its `# source:` line).
    pub builtin_source: String,
    exact: HashMap<String, usize>,
    /// Canonical spelling (no provider prefix, vendor prefix, region or `@`) → entry.
    spelled: HashMap<String, usize>,
    /// Canonical spelling without a date, version or `-latest` suffix → entry.
    family: HashMap<String, usize>,
}

impl Prices {
    /// The embedded list, parsed once.
    pub fn builtin() -> &'static Prices {
        static P: OnceLock<Prices> = OnceLock::new();
        P.get_or_init(|| Prices::parse_tsv(BUILTIN).expect("the embedded price list parses (a test checks it)"))
    }

    /// The embedded list with the user's prices over it: `[prices."MODEL"]` tables with
    /// `input`, `output`, `cache_read`, `cache_write` (5-minute), `cache_write_1h`,
    /// `reasoning` in dollars per million tokens, `web_search` per million requests. An override of a listed model replaces it; a new name is added.
    pub fn with_overrides(table: &toml::Table, path: &std::path::Path) -> Result<Prices, String> {
        let mut p = Prices::builtin().clone();
        for (model, v) in table {
            let t = v
                .as_table()
                .ok_or_else(|| format!("{}: [prices.{model:?}] must be a table", path.display()))?;
            let mut price = Price::default();
            for (k, x) in t {
                let n = match x {
                    toml::Value::Float(f) => *f,
                    toml::Value::Integer(i) => *i as f64,
                    _ => return Err(format!("{}: prices.{model:?}.{k} must be a number", path.display())),
                };
                if !(0.0..1e9).contains(&n) {
                    return Err(format!(
                        "{}: prices.{model:?}.{k} must be a dollar amount per million tokens",
                        path.display()
                    ));
                }
                let pico = Some((n * 1e6).round() as u64);
                match k.as_str() {
                    "input" => price.input = pico,
                    "output" => price.output = pico,
                    "cache_read" => price.cache_read = pico,
                    "cache_write" => price.cache_write = pico,
                    "cache_write_1h" => price.cache_write_1h = pico,
                    "reasoning" => price.reasoning = pico,
                    "web_search" => price.web_search = pico,
                    other => {
                        return Err(format!(
                            "{}: unknown price {other:?} for {model:?} (known: input, output, cache_read, cache_write, cache_write_1h, reasoning; dollars per million tokens; web_search: dollars per million requests)",
                            path.display()
                        ));
                    }
                }
            }
            let entry = Entry {
                model: model.clone(),
                provider: "config".into(),
                price,
                source: Source::Config(path.to_path_buf()),
            };
            match p.exact.get(&model.to_lowercase()) {
                Some(&i) => p.entries[i] = entry,
                None => p.entries.push(entry),
            }
        }
        // User prices win every way of matching: index them first.
        p.index(|e| matches!(e.source, Source::Config(_)));
        Ok(p)
    }

    fn parse_tsv(text: &str) -> Result<Prices, String> {
        let mut p = Prices::default();
        let mut header = false;
        for (n, line) in text.lines().enumerate() {
            if let Some(src) = line.strip_prefix("# source: ") {
                p.builtin_source = src.to_string();
                continue;
            }
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            if !header {
                header = true;
                continue;
            }
            let c: Vec<&str> = line.split('\t').collect();
            if c.len() != 15 {
                return Err(format!("prices.tsv line {}: {} columns, expected 15", n + 1, c.len()));
            }
            let num = |i: usize| -> Result<Option<Pico>, String> {
                if c[i].is_empty() {
                    Ok(None)
                } else {
                    pico_of(c[i])
                        .map(Some)
                        .ok_or_else(|| format!("prices.tsv line {}: bad price {:?}", n + 1, c[i]))
                }
            };
            let tier = match c[7] {
                "" => None,
                t => Some(Box::new(Tier {
                    above: t
                        .parse()
                        .map_err(|_| format!("prices.tsv line {}: bad tier {t:?}", n + 1))?,
                    input: num(8)?,
                    output: num(9)?,
                    cache_read: num(10)?,
                    cache_write: num(11)?,
                    cache_write_1h: num(13)?,
                })),
            };
            p.entries.push(Entry {
                model: c[0].to_string(),
                provider: c[1].to_string(),
                price: Price {
                    input: num(2)?,
                    output: num(3)?,
                    cache_read: num(4)?,
                    cache_write: num(5)?,
                    cache_write_1h: num(12)?,
                    reasoning: num(6)?,
                    web_search: num(14)?,
                    tier,
                },
                source: Source::Builtin,
            });
        }
        p.index(|_| false);
        Ok(p)
    }

    /// Build the indexes. Entries `first` says yes to are indexed before the rest; then a
    /// model's own provider's names (no `/` in the list's name: `claude-…`, `gpt-…`) before
    /// resellers' (`bedrock/…`, `openrouter/…`), so a family resolves to the maker's price.
    fn index(&mut self, first: impl Fn(&Entry) -> bool) {
        self.exact.clear();
        self.spelled.clear();
        self.family.clear();
        let mut order: Vec<usize> = (0..self.entries.len()).collect();
        order.sort_by_key(|&i| {
            let e = &self.entries[i];
            (!first(e), e.model.contains('/'))
        });
        for i in order {
            let name = self.entries[i].model.to_lowercase();
            let spelled = canonical(&name);
            let family = family(&spelled).to_string();
            self.exact.entry(name).or_insert(i);
            self.spelled.entry(spelled).or_insert(i);
            self.family.entry(family).or_insert(i);
        }
    }

    /// The price of a model as a recorder names it, and how it was found. The user's prices
    /// come first however they match (an override of `claude-sonnet-4-5` prices the dated
    /// `claude-sonnet-4-5-20250929` too), then the list's: exact, other spelling, family.
    pub fn lookup(&self, model: &str) -> Option<(&Entry, How)> {
        let name = model.trim().to_lowercase();
        if name.is_empty() {
            return None;
        }
        let spelled = canonical(&name);
        let fam = family(&spelled);
        let found = [
            (self.exact.get(&name), How::Exact),
            (self.spelled.get(&spelled), How::Spelling),
            (self.spelled.get(fam), How::Family),
            (self.family.get(fam), How::Family),
        ];
        let mut hits = found.iter().filter_map(|&(i, how)| i.map(|&i| (&self.entries[i], how)));
        let first = hits.clone().next();
        hits.find(|(e, _)| matches!(e.source, Source::Config(_))).or(first)
    }
}

/// A model name without what differs between the ways one model is named: provider
/// prefixes (`anthropic/`, `openrouter/anthropic/`), Bedrock's region and vendor prefixes and
/// `-v1:0` suffix (`us.anthropic.claude-…-v1:0`), Vertex's `@date`.
fn canonical(name: &str) -> String {
    let mut s = name.rsplit('/').next().unwrap_or(name);
    for region in ["us.", "eu.", "apac.", "global.", "jp.", "au."] {
        if let Some(rest) = s.strip_prefix(region) {
            s = rest;
            break;
        }
    }
    for vendor in [
        "anthropic.",
        "meta.",
        "amazon.",
        "mistral.",
        "cohere.",
        "ai21.",
        "deepseek.",
        "openai.",
        "qwen.",
    ] {
        if let Some(rest) = s.strip_prefix(vendor) {
            s = rest;
            break;
        }
    }
    // Bedrock's `-v1:0` / `-v2:0`.
    if let Some(at) = s.rfind("-v")
        && let Some((a, b)) = s[at + 2..].split_once(':')
        && !a.is_empty()
        && a.bytes().all(|c| c.is_ascii_digit())
        && b.bytes().all(|c| c.is_ascii_digit())
    {
        s = &s[..at];
    }
    s.replace('@', "-")
}

/// A canonical name without its date (`-20250929`, `-2024-08-06`) or `-latest` suffix.
fn family(s: &str) -> &str {
    let s = s.strip_suffix("-latest").unwrap_or(s);
    let b = s.as_bytes();
    let digits = |x: &[u8]| x.iter().all(u8::is_ascii_digit);
    if b.len() > 9 && b[b.len() - 9] == b'-' && digits(&b[b.len() - 8..]) {
        return &s[..s.len() - 9];
    }
    if b.len() > 11
        && b[b.len() - 11] == b'-'
        && digits(&b[b.len() - 10..b.len() - 6])
        && b[b.len() - 6] == b'-'
        && digits(&b[b.len() - 5..b.len() - 3])
        && b[b.len() - 3] == b'-'
        && digits(&b[b.len() - 2..])
    {
        return &s[..s.len() - 11];
    }
    s
}

/// Dollars per million tokens as written in the list ("3.75", "0.0125") → picodollars a
/// token, exactly (at most six decimals are meaningful; more are rounded).
fn pico_of(s: &str) -> Option<Pico> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|c| c.is_ascii_digit()) || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let whole: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut f: u64 = 0;
    let mut scale = 1_000_000u64;
    let mut round_up = false;
    for (i, c) in frac.bytes().enumerate() {
        let d = (c - b'0') as u64;
        if i < 6 {
            scale /= 10;
            f += d * scale;
        } else if i == 6 {
            round_up = d >= 5;
        }
    }
    whole.checked_mul(1_000_000)?.checked_add(f + round_up as u64)
}

pub use crate::model::micros::{dollars, micros_of_decimal, micros_of_json, micros_of_raw};

/// Picodollars a token → dollars per million tokens, for display.
pub fn per_million(p: Pico) -> String {
    let (whole, frac) = (p / 1_000_000, p % 1_000_000);
    if frac == 0 {
        return whole.to_string();
    }
    let f = format!("{frac:06}");
    format!("{whole}.{}", f.trim_end_matches('0'))
}

/// A call's cost by kind: each kind's count and the price it is billed at (None: the list
/// has no price for it), and whether the long-context tier's prices applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priced {
    pub parts: [(u64, Option<Pico>); 7],
    pub long_context: bool,
    /// Cache-write tokens of unknown tier, priced at the 5-minute rate.
    pub untiered: u64,
}

impl Priced {
    /// Picodollars of one kind; None when it is used and has no price.
    pub fn pico(&self, k: Kind) -> Option<u128> {
        let (n, p) = self.parts[k as usize];
        if n == 0 {
            return Some(0);
        }
        p.map(|p| n as u128 * p as u128)
    }
    /// Microdollars of one kind (rounded), for display.
    pub fn micros_of(&self, k: Kind) -> Option<u64> {
        self.pico(k).and_then(|p| u64::try_from((p + 500_000) / 1_000_000).ok())
    }
    /// The whole call in microdollars (the exact sum, rounded once); None when some kind it
    /// used has no price.
    pub fn micros(&self) -> Option<u64> {
        let mut pico: u128 = 0;
        for k in Kind::ALL {
            pico += self.pico(k)?;
        }
        u64::try_from((pico + 500_000) / 1_000_000).ok()
    }
    /// The kinds used that have no price.
    pub fn unpriced(&self) -> impl Iterator<Item = Kind> + '_ {
        Kind::ALL.into_iter().filter(|&k| self.pico(k).is_none())
    }
}

/// Each kind of a call at a price. Cache reads and 5-minute writes without a price of their
/// own are priced as input, reasoning as output; a 1-hour write or a web search has no
/// fallback (Anthropic bills a 1-hour write at 2x input, not 1.25x: pricing it as a 5-minute
/// write is the under-count this split exists to avoid). A cache write of unknown tier is a
/// 5-minute write. Above a tier's threshold its prices apply to every token of the call.
pub fn price_parts(p: &Price, t: Tokens) -> Priced {
    let prompt = t.input.saturating_add(t.cache_read).saturating_add(t.cache_write);
    let tier = p.tier.as_deref().filter(|x| prompt > x.above);
    let pick = |base: Option<Pico>, tiered: Option<Option<Pico>>| tiered.flatten().or(base);
    let input = pick(p.input, tier.map(|x| x.input));
    let output = pick(p.output, tier.map(|x| x.output));
    let cache_read = pick(p.cache_read, tier.map(|x| x.cache_read)).or(input);
    let cache_write = pick(p.cache_write, tier.map(|x| x.cache_write)).or(input);
    let cache_write_1h = pick(p.cache_write_1h, tier.map(|x| x.cache_write_1h));
    let reasoning = p.reasoning.or(output);
    let price = |k: Kind| match k {
        Kind::Input => input,
        Kind::CacheRead => cache_read,
        Kind::CacheWrite5m => cache_write,
        Kind::CacheWrite1h => cache_write_1h,
        Kind::Output => output,
        Kind::Reasoning => reasoning,
        Kind::WebSearch => p.web_search,
    };
    Priced {
        parts: Kind::ALL.map(|k| (t.of(k), price(k))),
        long_context: tier.is_some(),
        untiered: t.cache_write_untiered.min(t.cache_write),
    }
}

/// What a call costs at a price, in microdollars; None when a kind of token it used has no
/// price (an unknown cost is never 0). See [`price_parts`].
pub fn cost(p: &Price, t: Tokens) -> Option<u64> {
    price_parts(p, t).micros()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_list_parses_and_names_its_source() {
        let p = Prices::parse_tsv(BUILTIN).expect("parses");
        assert!(p.entries.len() > 1000, "{} models", p.entries.len());
        assert!(p.builtin_source.starts_with("LiteLLM "), "{}", p.builtin_source);
    }

    fn price_of(model: &str) -> (String, How, Price) {
        let (e, how) = Prices::builtin()
            .lookup(model)
            .unwrap_or_else(|| panic!("{model} is priced"));
        (e.model.clone(), how, e.price.clone())
    }

    /// Published prices (dollars per million tokens) of models users run, checked by hand
    /// against the makers' price pages: Claude Sonnet 4.5 $3 in / $15 out / $0.30 cache read /
    /// $3.75 cache write (5-minute); GPT-4o $2.50 / $10 / $1.25 cached.
    #[test]
    fn model_names_match_as_recorders_spell_them() {
        for name in [
            "claude-sonnet-4-5-20250929",
            "claude-sonnet-4-5",
            "anthropic/claude-sonnet-4-5-20250929",
            "Claude-Sonnet-4-5",
        ] {
            let (_, _, p) = price_of(name);
            assert_eq!(
                (p.input, p.output, p.cache_read, p.cache_write),
                (Some(3_000_000), Some(15_000_000), Some(300_000), Some(3_750_000)),
                "{name}"
            );
        }
        let (_, how, _) = price_of("claude-sonnet-4-5-20250929");
        assert_eq!(how, How::Exact);
        let (_, how, _) = price_of("anthropic/claude-sonnet-4-5-20250929");
        assert_eq!(how, How::Spelling);
        let (_, _, p) = price_of("openai/gpt-4o");
        assert_eq!(
            (p.input, p.output, p.cache_read),
            (Some(2_500_000), Some(10_000_000), Some(1_250_000))
        );
        // A date the list does not have yet: the family's price, and said so.
        let (_, how, p) = price_of("gpt-4o-2099-01-01");
        assert_eq!((how, p.input), (How::Family, Some(2_500_000)));
        let (_, how, _) = price_of("claude-sonnet-4-5-latest");
        assert_ne!(how, How::Exact);
        // Bedrock and Vertex ids of one Anthropic model.
        let a = price_of("us.anthropic.claude-3-5-sonnet-20240620-v1:0").2;
        let b = price_of("claude-3-5-sonnet@20240620").2;
        let c = price_of("claude-3-5-sonnet-20240620").2;
        assert_eq!((a.input, a.output), (c.input, c.output));
        assert_eq!((b.input, b.output), (c.input, c.output));
        assert!(Prices::builtin().lookup("no-such-model-xyz").is_none());
        assert!(Prices::builtin().lookup("  ").is_none());
    }

    #[test]
    fn recorded_dollars_become_exact_microdollars() {
        let m = micros_of_decimal;
        assert_eq!(m("0.0123"), Some(12_300));
        assert_eq!(m("$0.01"), Some(10_000));
        assert_eq!(m("1.5e-05"), Some(15));
        assert_eq!(m("1.5E-5"), Some(15));
        assert_eq!(m("2"), Some(2_000_000));
        assert_eq!(m("1e3"), Some(1_000_000_000));
        assert_eq!(m(".5"), Some(500_000));
        assert_eq!(m("0.0000004"), Some(0));
        assert_eq!(m("0.0000005"), Some(1), "half a microdollar rounds up");
        assert_eq!(m("0.1234567"), Some(123_457));
        for bad in ["", "-0.1", "abc", "1.2.3", "1e", "e5", "NaN", "1e999"] {
            assert_eq!(m(bad), None, "{bad}");
        }
        // Summing 10,000 calls of $0.0001 is exactly $1 (a float sum is not).
        let one: u64 = (0..10_000).map(|_| m("0.0001").unwrap()).sum();
        assert_eq!(one, 1_000_000);
        let v: serde_json::Value = serde_json::from_str("[0.1, \"0.2\", 3.3e-3, null]").unwrap();
        let got: Vec<_> = v.as_array().unwrap().iter().map(micros_of_json).collect();
        assert_eq!(got, [Some(100_000), Some(200_000), Some(3_300), None]);
    }

    #[test]
    fn cost_is_exact_integer_microdollars_and_unknown_is_none() {
        let sonnet = price_of("claude-sonnet-4-5").2;
        // 1,000 in x $3/M + 2,000 cache read x $0.30/M + 500 cache write x $3.75/M + 400 out x $15/M
        // = 0.003 + 0.0006 + 0.001875 + 0.006 = $0.011475
        let t = Tokens {
            input: 1000,
            cache_read: 2000,
            cache_write: 500,
            output: 400,
            ..Tokens::default()
        };
        assert_eq!(cost(&sonnet, t), Some(11_475));
        // Thousands of small calls sum without drift: 10,000 x 1 output token x $15/M = $0.15.
        let one = Tokens {
            output: 1,
            ..Tokens::default()
        };
        let total: u64 = (0..10_000).map(|_| cost(&sonnet, one).unwrap_or(0)).sum();
        assert_eq!(total, 150_000, "$0.15 exactly");
        // A call's cost is rounded to whole microdollars: 1 cache-read token x $0.30/M.
        assert_eq!(
            cost(
                &sonnet,
                Tokens {
                    cache_read: 1,
                    ..Tokens::default()
                }
            ),
            Some(0)
        );
        assert_eq!(
            cost(
                &sonnet,
                Tokens {
                    cache_read: 5,
                    ..Tokens::default()
                }
            ),
            Some(2)
        );
        let ten = Tokens {
            output: 100,
            ..Tokens::default()
        };
        let total: u64 = (0..10_000).map(|_| cost(&sonnet, ten).unwrap_or(0)).sum();
        assert_eq!(total, 15_000_000, "$15.00 exactly");
        // A kind used but not priced: unknown, never 0.
        let no_output = Price {
            input: Some(1_000_000),
            ..Price::default()
        };
        assert_eq!(
            cost(
                &no_output,
                Tokens {
                    output: 5,
                    ..Tokens::default()
                }
            ),
            None
        );
        assert_eq!(
            cost(
                &no_output,
                Tokens {
                    input: 5,
                    ..Tokens::default()
                }
            ),
            Some(5)
        );
        // Reasoning without a price of its own is output.
        let o3 = price_of("o3").2;
        assert_eq!(
            cost(
                &o3,
                Tokens {
                    reasoning: 1_000_000,
                    ..Tokens::default()
                }
            ),
            cost(
                &o3,
                Tokens {
                    output: 1_000_000,
                    ..Tokens::default()
                }
            )
        );
    }

    #[test]
    fn long_prompts_use_the_tier_prices() {
        let p = Price {
            input: Some(1_250_000),
            output: Some(10_000_000),
            tier: Some(Box::new(Tier {
                above: 200_000,
                input: Some(2_500_000),
                output: Some(15_000_000),
                ..Tier::default()
            })),
            ..Price::default()
        };
        let short = Tokens {
            input: 200_000,
            output: 1_000,
            ..Tokens::default()
        };
        let long = Tokens {
            input: 200_001,
            output: 1_000,
            ..Tokens::default()
        };
        assert_eq!(cost(&p, short), Some(250_000 + 10_000));
        assert_eq!(cost(&p, long), Some(500_003 + 15_000));
    }

    /// Claude Sonnet 4.5 at Anthropic's published prices per million tokens: $3 input, $15
    /// output, $0.30 cache read, $3.75 a 5-minute cache write (1.25x), $6 a 1-hour one (2x),
    /// and $10 per 1,000 web searches.
    #[test]
    fn cache_writes_are_priced_by_tier_and_searches_by_request() {
        let sonnet = price_of("claude-sonnet-4-5-20250929").2;
        assert_eq!(
            (sonnet.cache_write_1h, sonnet.web_search),
            (Some(6_000_000), Some(10_000 * 1_000_000))
        );
        // 10 in + 60,000 written for 5 minutes + 40,000 for an hour + 1,000 out:
        // 0.00003 + 0.225 + 0.24 + 0.015 = $0.48003.
        let t = Tokens {
            input: 10,
            cache_write: 100_000,
            cache_write_1h: 40_000,
            output: 1_000,
            ..Tokens::default()
        };
        let p = price_parts(&sonnet, t);
        assert_eq!(p.micros(), Some(480_030));
        assert_eq!(p.micros_of(Kind::CacheWrite5m), Some(225_000));
        assert_eq!(p.micros_of(Kind::CacheWrite1h), Some(240_000));
        assert_eq!((p.long_context, p.untiered), (false, 0));
        // The same writes of unknown tier: all at the 5-minute rate (0.375), and marked.
        let unknown = Tokens {
            cache_write_1h: 0,
            cache_write_untiered: 100_000,
            ..t
        };
        let p = price_parts(&sonnet, unknown);
        assert_eq!(p.micros(), Some(390_030));
        assert_eq!(p.untiered, 100_000);
        // Three web searches add $0.03.
        let searched = Tokens { web_search: 3, ..t };
        assert_eq!(cost(&sonnet, searched), Some(510_030));
        // A 1-hour write or a search on a model with no price for it: unpriced, not guessed.
        let gpt = price_of("gpt-4o").2;
        let p = price_parts(&gpt, Tokens { cache_write_1h: 5, ..t });
        assert_eq!(p.micros(), None);
        assert_eq!(p.unpriced().collect::<Vec<_>>(), [Kind::CacheWrite1h]);
    }

    /// Gemini 2.5 Pro: $1.25 in / $10 out / $0.125 cache read up to 200,000 prompt tokens,
    /// $2.50 / $15 / $0.25 above (the whole call at the higher prices).
    #[test]
    fn a_long_prompt_prices_the_whole_call_at_the_long_context_tier() {
        let gemini = price_of("gemini-2.5-pro").2;
        // 140,000 in + 60,000 read = 200,000: not above. 0.175 + 0.0075 + 0.02 = $0.2025.
        let short = Tokens {
            input: 140_000,
            cache_read: 60_000,
            output: 2_000,
            ..Tokens::default()
        };
        let p = price_parts(&gemini, short);
        assert_eq!((p.micros(), p.long_context), (Some(202_500), false));
        // 150,000 + 60,000 = 210,000: above. 0.375 + 0.015 + 0.03 = $0.42.
        let long = Tokens {
            input: 150_000,
            ..short
        };
        let p = price_parts(&gemini, long);
        assert_eq!((p.micros(), p.long_context), (Some(420_000), true));
    }

    #[test]
    fn config_prices_override_and_add() {
        let table: toml::Table = r#"
            [prices."claude-sonnet-4-5"]
            input = 1
            output = 2.5
            [prices."my-local-model"]
            input = 0.1
            output = 0.2
        "#
        .parse()
        .expect("toml");
        let prices = table["prices"].as_table().expect("table");
        let p = Prices::with_overrides(prices, std::path::Path::new("/x/config.toml")).expect("valid");
        let (e, how) = p.lookup("claude-sonnet-4-5-20250929").expect("found");
        assert_eq!(
            e.source,
            Source::Config("/x/config.toml".into()),
            "the user's price wins ({how:?})"
        );
        assert_eq!((e.price.input, e.price.output), (Some(1_000_000), Some(2_500_000)));
        let (e, how) = p.lookup("my-local-model").expect("added");
        assert_eq!((how, e.price.output), (How::Exact, Some(200_000)));
        for bad in [
            "[prices.\"m\"]\ninput = \"3\"",
            "[prices.\"m\"]\ninptu = 3",
            "[prices.\"m\"]\ninput = -1",
            "[prices]\nm = 3",
        ] {
            let t: toml::Table = bad.parse().expect("toml");
            let err = Prices::with_overrides(t["prices"].as_table().expect("t"), std::path::Path::new("c.toml"))
                .expect_err(bad);
            assert!(err.contains("c.toml"), "{err}");
        }
    }

    #[test]
    fn prices_read_and_print_exactly() {
        assert_eq!(pico_of("3"), Some(3_000_000));
        assert_eq!(pico_of("3.75"), Some(3_750_000));
        assert_eq!(pico_of("0.0125"), Some(12_500));
        assert_eq!(pico_of("0.0000005"), Some(1), "past six decimals: rounded");
        assert_eq!(pico_of("1e-6"), None);
        assert_eq!(pico_of("."), None);
        assert_eq!(per_million(3_750_000), "3.75");
        assert_eq!(per_million(12_500), "0.0125");
        assert_eq!(dollars(11_475), "$0.0115");
        assert_eq!(dollars(15_000_000), "$15.0000");
        assert_eq!(dollars(15), "$0.000015");
        assert_eq!(dollars(0), "$0.0000");
    }

    #[test]
    fn names_are_canonical_and_families_drop_dates() {
        assert_eq!(canonical("openrouter/anthropic/claude-3-opus"), "claude-3-opus");
        assert_eq!(
            canonical("us.anthropic.claude-3-5-sonnet-20240620-v1:0"),
            "claude-3-5-sonnet-20240620"
        );
        assert_eq!(
            canonical("claude-3-5-sonnet-v2@20241022"),
            "claude-3-5-sonnet-v2-20241022"
        );
        assert_eq!(family("claude-sonnet-4-5-20250929"), "claude-sonnet-4-5");
        assert_eq!(family("gpt-4o-2024-08-06"), "gpt-4o");
        assert_eq!(family("claude-3-5-sonnet-latest"), "claude-3-5-sonnet");
        assert_eq!(family("gpt-4o"), "gpt-4o");
    }
}
