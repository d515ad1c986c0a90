//! Tokens and dollars of a run: the sum over its LLM calls of their normalized usage
//! ([`Usage`]), each call priced by its model (or the run's) unless the recorder wrote a cost.
//!
//! This is the one definition of a run's tokens and cost that every view uses (runs list,
//! header, `ls`, `show`, `check`, `stats`), so that they agree.

use super::{How, Prices, Tokens};
use crate::model::{EventKind, Trace, Usage};

/// The tokens of one call by kind (unknown kinds count 0).
pub fn tokens_of(u: &Usage) -> Tokens {
    Tokens {
        input: u.input.unwrap_or(0),
        cache_read: u.cache_read.unwrap_or(0),
        cache_write: u.cache_write.unwrap_or(0),
        output: u.output.unwrap_or(0),
        reasoning: u.reasoning.unwrap_or(0),
    }
}

/// What one call cost and how that was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallCost {
    /// Microdollars; None when unknown (no usage, or no price for its model).
    pub micros: Option<u64>,
    pub basis: Basis,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Basis {
    /// The recorder wrote the cost.
    Recorded,
    /// Computed from the price list entry `model`, matched as `how`.
    Priced { model: String, how: How },
    /// The call has no model name.
    NoModel,
    /// The model is not in the price list.
    UnknownModel(String),
    /// The call recorded no token counts.
    NoUsage,
}

/// The cost of one call with model `model` (the call's own, else the run's).
pub fn call_cost(prices: &Prices, model: Option<&str>, usage: Option<&Usage>) -> CallCost {
    call_cost_with(model, usage, |m| prices.lookup(m))
}

/// [`call_cost`] with the price list's lookup given (a run's calls look each model up once).
fn call_cost_with<'p>(
    model: Option<&str>,
    usage: Option<&Usage>,
    lookup: impl FnOnce(&str) -> Option<(&'p super::Entry, How)>,
) -> CallCost {
    let Some(u) = usage.filter(|u| !u.is_empty()) else {
        return CallCost {
            micros: None,
            basis: Basis::NoUsage,
        };
    };
    if let Some(c) = u.cost {
        return CallCost {
            micros: Some(c),
            basis: Basis::Recorded,
        };
    }
    let Some(model) = model.filter(|m| !m.trim().is_empty()) else {
        return CallCost {
            micros: None,
            basis: Basis::NoModel,
        };
    };
    match lookup(model) {
        Some((e, how)) => CallCost {
            micros: super::cost(&e.price, tokens_of(u)),
            basis: Basis::Priced {
                model: e.model.clone(),
                how,
            },
        },
        None => CallCost {
            micros: None,
            basis: Basis::UnknownModel(model.to_string()),
        },
    }
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
}

impl Total {
    pub fn add(&mut self, u: Option<&Usage>, c: &CallCost) {
        self.calls += 1;
        self.add_usage(u, c);
    }
    /// Add tokens and cost that are not one call's (a run's recorded totals).
    pub fn add_usage(&mut self, u: Option<&Usage>, c: &CallCost) {
        if let Some(u) = u {
            let t = tokens_of(u);
            let s = &mut self.tokens;
            s.input = s.input.saturating_add(t.input);
            s.cache_read = s.cache_read.saturating_add(t.cache_read);
            s.cache_write = s.cache_write.saturating_add(t.cache_write);
            s.output = s.output.saturating_add(t.output);
            s.reasoning = s.reasoning.saturating_add(t.reasoning);
            self.total_tokens = self.total_tokens.saturating_add(u.sum().unwrap_or(0));
        }
        match c.micros {
            Some(m) => self.micros = self.micros.saturating_add(m),
            None if c.basis != Basis::NoUsage => self.unknown += 1,
            None => {}
        }
    }
    pub fn merge(&mut self, o: &Total) {
        self.calls += o.calls;
        let (s, t) = (&mut self.tokens, o.tokens);
        s.input = s.input.saturating_add(t.input);
        s.cache_read = s.cache_read.saturating_add(t.cache_read);
        s.cache_write = s.cache_write.saturating_add(t.cache_write);
        s.output = s.output.saturating_add(t.output);
        s.reasoning = s.reasoning.saturating_add(t.reasoning);
        self.total_tokens = self.total_tokens.saturating_add(o.total_tokens);
        self.micros = self.micros.saturating_add(o.micros);
        self.unknown += o.unknown;
    }
    /// The cost as a user reads it: `$0.1234`, `≥$0.1234` when some calls are unknown,
    /// `?` when none is known.
    pub fn cost_text(&self) -> String {
        match (self.micros, self.unknown) {
            (0, u) if u > 0 => "?".into(),
            (m, 0) => super::dollars(m),
            (m, _) => format!("≥{}", super::dollars(m)),
        }
    }
}

/// A run's tokens and cost, in all and by model (models in order of first use).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunCost {
    pub total: Total,
    pub by_model: Vec<(String, Total)>,
}

/// The prices every view uses: the embedded list, or the list with the user's config.toml
/// overrides once the program has set them ([`set_current`]).
pub fn current() -> &'static Prices {
    CURRENT.get().unwrap_or_else(|| Prices::builtin())
}

/// Set the prices [`current`] returns (once, at start-up; later calls are ignored).
pub fn set_current(p: Prices) {
    let _ = CURRENT.set(p);
}

static CURRENT: std::sync::OnceLock<Prices> = std::sync::OnceLock::new();

/// Every LLM call of a run with the model it is priced as (its own, else the run's; `""` when
/// neither is known), its usage and its cost, in event order. Prices are looked up once per
/// model name (a run of a million events has a handful of models).
pub fn each_call(trace: &Trace, prices: &Prices, f: impl FnMut(&crate::model::Event, &str, Option<&Usage>, &CallCost)) {
    each_call_from(trace, 0, prices, f)
}

/// [`each_call`] over the events `from` on (a view adds up the events that arrive).
pub fn each_call_from(
    trace: &Trace,
    from: usize,
    prices: &Prices,
    mut f: impl FnMut(&crate::model::Event, &str, Option<&Usage>, &CallCost),
) {
    let run_model = trace.meta.model.as_deref();
    // (the call's model as written, what the price list says of it)
    let mut seen: Vec<(crate::model::StrRef, Option<(&super::Entry, How)>)> = Vec::new();
    for e in trace.events.get(from..).unwrap_or(&[]) {
        if e.kind != EventKind::LlmCall {
            continue;
        }
        let own = trace.str(e.model);
        let model = if own.is_empty() { run_model } else { Some(own) };
        let u = e.usage.get();
        let c = call_cost_with(model, u.as_ref(), |m| match seen.iter().find(|(r, _)| *r == e.model) {
            Some((_, hit)) => *hit,
            None => {
                let hit = prices.lookup(m);
                seen.push((e.model, hit));
                hit
            }
        });
        f(e, model.unwrap_or(""), u.as_ref(), &c);
    }
}

/// Add up a run's LLM calls. Where the recorder wrote the run's own totals on its run event
/// (SWE-agent's `model_stats`, Copilot CLI's shutdown metrics, Inspect's `model_usage`) and the
/// calls it logged add up to fewer tokens (they carry no usage, or only part of it), the
/// run's totals are those, priced at the run's model: see [`run_totals`].
pub fn run_cost(trace: &Trace, prices: &Prices) -> RunCost {
    let rc = calls_cost(trace, prices);
    match recorded_totals(trace, prices, &rc.total) {
        Some((model, total)) => RunCost {
            by_model: vec![(model, total.clone())],
            total,
        },
        None => rc,
    }
}

/// The run's recorded totals as a [`Total`] with its model (the run's), when they win over
/// `calls`, what its calls add up to (see [`run_cost`]); `stats` applies the same rule.
pub fn recorded_totals(trace: &Trace, prices: &Prices, calls: &Total) -> Option<(String, Total)> {
    let u = run_totals(trace).filter(|u| u.sum().unwrap_or(0) > calls.total_tokens)?;
    let model = trace.meta.model.as_deref();
    let c = call_cost(prices, model, Some(&u));
    let mut total = Total::default();
    total.add_usage(Some(&u), &c);
    total.calls = calls.calls;
    Some((model.unwrap_or("").to_string(), total))
}

/// The run totals a recorder wrote on the run's own event(s), if any.
pub fn run_totals(trace: &Trace) -> Option<Usage> {
    trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Run)
        .find_map(|e| e.usage.get())
}

fn calls_cost(trace: &Trace, prices: &Prices) -> RunCost {
    let mut rc = RunCost::default();
    add_calls(&mut rc, trace, 0, prices);
    rc
}

/// Add the LLM calls among the trace's events `from` on (a view adds the events that arrive;
/// [`run_cost`] of the whole trace is the definition, made again at the end of a load).
pub fn add_calls(rc: &mut RunCost, trace: &Trace, from: usize, prices: &Prices) {
    // Each call's model string as written -> its row in `by_model`: comparing the names of
    // every call was a third of the pass (1M calls; the explorer makes it three times).
    let mut rows: Vec<(crate::model::StrRef, usize)> = Vec::new();
    each_call_from(trace, from, prices, |e, model, u, c| {
        rc.total.add(u, c);
        let row = match rows.iter().find(|(r, _)| *r == e.model) {
            Some(&(_, k)) => k,
            None => {
                let k = match rc.by_model.iter().position(|(m, _)| m == model) {
                    Some(k) => k,
                    None => {
                        rc.by_model.push((model.to_string(), Total::default()));
                        rc.by_model.len() - 1
                    }
                };
                rows.push((e.model, k));
                k
            }
        };
        rc.by_model[row].1.add(u, c);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `add_calls` rows a call by its model string: calls with no model of their own go to the
    /// run's model, on the same row as calls that name it; totals as a plain grouping by name.
    #[test]
    fn add_calls_groups_by_the_priced_model_name_in_order_of_first_use() {
        use crate::model::{NewEvent, Parent, RunMeta};
        let mut t = Trace::new(RunMeta {
            model: Some("gpt-4o".into()),
            ..Default::default()
        });
        let models = [
            Some("claude-sonnet-4-5"),
            None,
            Some("gpt-4o"),
            Some("no-such-model"),
            None,
        ];
        for k in 0..40u64 {
            let model = models[(k * 7 % 5) as usize];
            t.add(NewEvent {
                parent: Parent::None,
                model,
                usage: Some(Usage {
                    input: Some(100 + k),
                    output: Some(k),
                    ..Default::default()
                }),
                ..NewEvent::new(EventKind::LlmCall, "call")
            });
        }
        let p = Prices::builtin();
        let mut rc = RunCost::default();
        add_calls(&mut rc, &t, 0, p);
        let mut plain: Vec<(String, Total)> = Vec::new();
        let mut total = Total::default();
        each_call(&t, p, |_, m, u, c| {
            total.add(u, c);
            match plain.iter_mut().find(|(n, _)| n == m) {
                Some((_, x)) => x.add(u, c),
                None => {
                    let mut x = Total::default();
                    x.add(u, c);
                    plain.push((m.to_string(), x));
                }
            }
        });
        assert_eq!(rc.by_model, plain);
        assert_eq!(rc.total, total);
        let names: Vec<&str> = rc.by_model.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(names, ["claude-sonnet-4-5", "gpt-4o", "no-such-model"]);
    }

    #[test]
    fn recorded_cost_wins_and_unknown_models_are_unknown_not_zero() {
        let p = Prices::builtin();
        let u = Usage {
            input: Some(1_000_000),
            output: Some(1_000_000),
            ..Default::default()
        };
        // Claude Sonnet 4.5: $3 in + $15 out per million.
        let c = call_cost(p, Some("claude-sonnet-4-5-20250929"), Some(&u));
        assert_eq!(c.micros, Some(18_000_000));
        let rec = Usage { cost: Some(42), ..u };
        assert_eq!(call_cost(p, Some("claude-sonnet-4-5"), Some(&rec)).micros, Some(42));
        let unk = call_cost(p, Some("no-such-model-xyz"), Some(&u));
        assert_eq!(unk.micros, None);
        let mut t = Total::default();
        t.add(Some(&u), &c);
        t.add(Some(&u), &unk);
        assert_eq!((t.micros, t.unknown, t.calls), (18_000_000, 1, 2));
        assert_eq!(t.cost_text(), "≥$18.0000");
        let mut none = Total::default();
        none.add(Some(&u), &unk);
        assert_eq!(none.cost_text(), "?");
        assert_eq!(call_cost(p, Some("gpt-4o"), None).basis, Basis::NoUsage);
    }
}
