//! Tokens and dollars of a run: the sum over its LLM calls of their normalized usage
//! ([`Usage`]), each call priced by its model (or the run's) unless the recorder wrote a cost.
//!
//! This is the one definition of a run's tokens and cost that every view uses (runs list,
//! header, `ls`, `show`, `check`, `stats`), so that they agree.

use super::{How, Prices};
use crate::model::{EventKind, Trace, Usage};

pub use crate::model::usage::{Charge, Total, tokens_of};

/// What one call cost and how that was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallCost {
    /// Microdollars; None when unknown (no usage, or no price for its model). The recorded
    /// cost where the recorder wrote one, else the computed one.
    pub micros: Option<u64>,
    pub basis: Basis,
    /// The cost computed from the tokens at the price list's price, even where the recorder
    /// wrote one (to be shown beside it); None when it cannot be computed.
    pub computed: Option<u64>,
}

impl From<&CallCost> for Charge {
    fn from(c: &CallCost) -> Charge {
        Charge {
            micros: c.micros,
            computed: c.computed,
            has_usage: c.basis != Basis::NoUsage,
        }
    }
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
            computed: None,
        };
    };
    let model = model.filter(|m| !m.trim().is_empty());
    let found = model.map(|m| (m, lookup(m)));
    let computed = match found {
        Some((_, Some((e, _)))) => super::cost(&e.price, tokens_of(u)),
        _ => None,
    };
    let basis = match found {
        _ if u.cost.is_some() => Basis::Recorded,
        None => Basis::NoModel,
        Some((_, Some((e, how)))) => Basis::Priced {
            model: e.model.clone(),
            how,
        },
        Some((m, None)) => Basis::UnknownModel(m.to_string()),
    };
    CallCost {
        micros: u.cost.or(computed),
        basis,
        computed,
    }
}

/// A call's cost by kind at its model's price (None: no usage, no model or an unknown one).
pub fn call_parts(prices: &Prices, model: Option<&str>, usage: Option<&Usage>) -> Option<(super::Priced, String)> {
    let u = usage.filter(|u| !u.is_empty())?;
    let m = model.filter(|m| !m.trim().is_empty())?;
    let (e, _) = prices.lookup(m)?;
    Some((super::price_parts(&e.price, tokens_of(u)), e.model.clone()))
}

/// A run's tokens and cost, in all and by model (models in order of first use).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunCost {
    pub total: Total,
    pub by_model: Vec<(String, Total)>,
    /// Of those, what the recorder counted and the transcript does not log (by model; see
    /// [`unlogged`]): included in `total` and `by_model`, shown apart.
    pub unlogged: Vec<(String, Total)>,
    /// The cost the recorder wrote for the whole run (Claude Code's `cost-state`), micros.
    pub recorded_run: Option<u64>,
}

impl RunCost {
    /// The recorder's own cost of the run, and the computed cost of the same calls: the run's
    /// recorded total beside the computed total, else the calls' recorded costs beside their
    /// computed ones. None when the recorder wrote no cost.
    pub fn recorded_vs_computed(&self) -> Option<(u64, u64)> {
        let t = &self.total;
        match self.recorded_run {
            Some(r) => {
                // The computed total: the calls' computed costs (a recorded call counts at
                // its computed cost where it has one).
                let computed = t.micros.saturating_sub(t.recorded).saturating_add(t.recomputed);
                Some((r, computed))
            }
            None if t.recorded_calls > 0 => Some((t.recorded, t.recomputed)),
            None => None,
        }
    }
}

/// Whether two costs differ by more than 1% (of the larger).
pub fn differ(a: u64, b: u64) -> bool {
    a.abs_diff(b) as u128 * 100 > a.max(b) as u128
}

/// The tokens and cost the recorder itself counted for the run, by model
/// ([`crate::model::RECORDED_USAGE_ATTR`]), in the order written. A model whose counts are
/// not numbers is left out.
pub fn recorded_by_model(trace: &Trace) -> Vec<(String, Usage)> {
    let Some(serde_json::Value::Object(m)) = trace
        .meta
        .attributes
        .iter()
        .find(|(k, _)| k == crate::model::RECORDED_USAGE_ATTR)
        .map(|(_, v)| v)
    else {
        return Vec::new();
    };
    m.iter()
        .filter_map(|(model, v)| {
            let n = |k: &str| crate::formats::lenient_u64(v.get(k));
            let (w5m, w1h) = (
                n("cacheCreationEphemeral5mInputTokens"),
                n("cacheCreationEphemeral1hInputTokens"),
            );
            let cache_write = n("cacheCreationInputTokens").or_else(|| w5m.zip(w1h).map(|(a, b)| a.saturating_add(b)));
            let u = Usage {
                input: n("inputTokens"),
                output: n("outputTokens"),
                cache_read: n("cacheReadInputTokens"),
                cache_write,
                cache_write_1h: (w5m.is_some() || w1h.is_some())
                    .then(|| w1h.unwrap_or(0).min(cache_write.unwrap_or(0))),
                web_search: n("webSearchRequests"),
                cost: v.get("costUSD").and_then(super::micros_of_json),
                ..Default::default()
            };
            (!u.is_empty()).then(|| (model.clone(), u))
        })
        .collect()
}

/// What the recorder counted for a model beyond what the run's logged calls of that model
/// add up to (`logged`, by the model name as written), kind by kind: calls the transcript
/// does not log. Claude Code's context compaction makes one such call (its summary request
/// is counted in `cost-state` and written nowhere else). Only where the recorder wrote
/// tokens by model; a kind it counted less of than the calls (a resumed session whose
/// count restarted) adds nothing.
pub fn unlogged(trace: &Trace, logged: &[(String, Total)]) -> Vec<(String, Usage)> {
    let mut out = Vec::new();
    for (model, r) in recorded_by_model(trace) {
        let t = logged
            .iter()
            .find(|(m, _)| *m == model)
            .map(|(_, t)| t.tokens)
            .unwrap_or_default();
        let more = |rec: Option<u64>, got: u64| rec.unwrap_or(0).saturating_sub(got);
        let rt = tokens_of(&r);
        let w1h = rt.cache_write_1h.saturating_sub(t.cache_write_1h);
        let u = Usage {
            input: Some(more(r.input, t.input)),
            output: Some(more(r.output, t.output)),
            cache_read: Some(more(r.cache_read, t.cache_read)),
            cache_write: Some(more(r.cache_write, t.cache_write)),
            cache_write_1h: r.cache_write_1h.map(|_| w1h.min(more(r.cache_write, t.cache_write))),
            web_search: Some(more(r.web_search, t.web_search)),
            ..Default::default()
        };
        if u.sum().unwrap_or(0) > 0 || u.web_search.unwrap_or(0) > 0 {
            out.push((model, u));
        }
    }
    out
}

/// Add the unlogged usage ([`unlogged`]) to a run's cost: each model's row and the total
/// (no call is counted), and `rc.unlogged`.
fn add_unlogged(rc: &mut RunCost, trace: &Trace, prices: &Prices) {
    for (model, u) in unlogged(trace, &rc.by_model) {
        let c = call_cost(prices, Some(&model), Some(&u));
        let mut t = Total::default();
        t.add_usage(Some(&u), &c);
        rc.total.merge(&t);
        match rc.by_model.iter_mut().find(|(m, _)| *m == model) {
            Some((_, x)) => x.merge(&t),
            None => rc.by_model.push((model.clone(), t.clone())),
        }
        rc.unlogged.push((model, t));
    }
}

/// The run's recorded total cost ([`crate::model::RECORDED_COST_ATTR`]), micros.
pub fn recorded_run_cost(trace: &Trace) -> Option<u64> {
    trace
        .meta
        .attributes
        .iter()
        .find(|(k, _)| k == crate::model::RECORDED_COST_ATTR)
        .and_then(|(_, v)| super::micros_of_json(v))
}

/// The prices every view uses: the embedded list, or the list with the user's config.toml
/// overrides once the program has set them ([`set_current`]).
pub fn current() -> &'static Prices {
    CURRENT.get().unwrap_or_else(|| Prices::builtin())
}

/// The prices set with the user's overrides, if any ([`set_current`]).
pub fn overridden() -> Option<&'static Prices> {
    CURRENT.get()
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
    let mut rc = calls_cost(trace, prices);
    finish(&mut rc, trace, prices);
    rc
}

/// What is added to a run's calls once they are all counted: the run's recorded totals
/// (where they win, see [`recorded_totals`]), the recorder's count of unlogged calls, and
/// its recorded cost of the run.
pub fn finish(rc: &mut RunCost, trace: &Trace, prices: &Prices) {
    if let Some((model, total)) = recorded_totals(trace, prices, &rc.total) {
        rc.by_model = vec![(model, total.clone())];
        rc.total = total;
    }
    add_unlogged(rc, trace, prices);
    rc.recorded_run = recorded_run_cost(trace);
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

    /// A recorder's cost that differs from the computed one: kept, and both are told.
    #[test]
    fn a_recorded_cost_is_kept_beside_the_computed_one() {
        use crate::model::{NewEvent, Parent, RunMeta};
        let mut t = Trace::new(RunMeta::default());
        // 100,000 input tokens of Claude Sonnet 4.5 at $3/M: $0.30 computed, $0.50 recorded;
        // a second call without a recorded cost: 1,000 output at $15/M, $0.015.
        for (u, cost) in [(100_000, Some(500_000)), (0, None)] {
            t.add(NewEvent {
                parent: Parent::None,
                model: Some("claude-sonnet-4-5"),
                usage: Some(Usage {
                    input: Some(u),
                    output: Some(if cost.is_some() { 0 } else { 1_000 }),
                    cost,
                    ..Default::default()
                }),
                ..NewEvent::new(EventKind::LlmCall, "call")
            });
        }
        let rc = run_cost(&t, Prices::builtin());
        assert_eq!(rc.total.micros, 515_000, "the recorded cost wins for its call");
        assert_eq!(
            (rc.total.recorded_calls, rc.total.recorded, rc.total.recomputed),
            (1, 500_000, 300_000)
        );
        assert_eq!(rc.recorded_vs_computed(), Some((500_000, 300_000)));
        assert!(differ(500_000, 300_000));
        assert!(!differ(1_000_000, 990_000), "1% is not a difference");
        assert!(differ(1_000_000, 989_999));
    }

    /// Claude Code's `cost-state` counts a call its transcript does not log (the compaction's
    /// summary request): the difference, kind by kind, is priced and added to the run.
    #[test]
    fn what_the_recorder_counted_beyond_the_logged_calls_is_added() {
        use crate::model::{NewEvent, Parent, RunMeta};
        let mut t = Trace::new(RunMeta::default());
        t.add(NewEvent {
            parent: Parent::None,
            model: Some("claude-sonnet-4-5-20250929"),
            usage: Some(Usage {
                input: Some(1_000),
                output: Some(100),
                cache_read: Some(4_000),
                cache_write: Some(2_000),
                cache_write_1h: Some(2_000),
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::LlmCall, "call")
        });
        t.meta.attributes.push((
            crate::model::RECORDED_USAGE_ATTR.into(),
            serde_json::json!({"claude-sonnet-4-5-20250929": {
                "inputTokens": 7_000, "outputTokens": 130, "cacheReadInputTokens": 8_000,
                "cacheCreationInputTokens": 2_000, "cacheCreationEphemeral5mInputTokens": 0,
                "cacheCreationEphemeral1hInputTokens": 2_000, "webSearchRequests": 0, "costUSD": 0.0443}}),
        ));
        t.meta
            .attributes
            .push((crate::model::RECORDED_COST_ATTR.into(), serde_json::json!(0.0443)));
        let rc = run_cost(&t, Prices::builtin());
        // Logged: 1,000 x 3 + 100 x 15 + 4,000 x 0.3 + 2,000 x 6 (1-hour) = $0.0177.
        // Unlogged: 6,000 in x 3 + 30 out x 15 + 4,000 read x 0.3 = 0.018 + 0.00045 + 0.0012.
        assert_eq!(rc.unlogged.len(), 1);
        assert_eq!(rc.unlogged[0].1.micros, 19_650);
        assert_eq!(rc.unlogged[0].1.calls, 0);
        assert_eq!(rc.total.micros, 17_700 + 19_650);
        assert_eq!(rc.total.tokens.input, 7_000);
        assert_eq!(rc.total.calls, 1);
        assert_eq!(rc.recorded_vs_computed(), Some((44_300, 37_350)));
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
