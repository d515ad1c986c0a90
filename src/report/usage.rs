//! A run's tokens by kind and cost in `show` and `check` output, from `cost::usage` (the one
//! definition every view shares), priced with the user's config over the embedded list (set at
//! start-up: `cost::usage::set_current`).

use crate::cost::usage::{RunCost, run_cost};
use crate::model::Trace;
use serde_json::{Value, json};

pub fn of(t: &Trace) -> RunCost {
    run_cost(t, crate::cost::usage::current())
}

/// `tokens in 942 · cache read 0 · cache write 0 · out 60 · reasoning 0 · total 1,002 · cost
/// $0.0030`, or None for a run without tokens or cost.
pub fn text(rc: &RunCost) -> Option<String> {
    let t = &rc.total;
    if t.total_tokens == 0 && t.micros == 0 && t.unknown == 0 {
        return None;
    }
    let k = &t.tokens;
    let n = crate::model::thousands;
    let mut s = format!(
        "tokens in {} · cache read {} · cache write {} · out {} · reasoning {} · total {} · cost {}",
        n(k.input),
        n(k.cache_read),
        n(k.cache_write),
        n(k.output),
        n(k.reasoning),
        n(t.total_tokens),
        t.cost_text()
    );
    if t.unknown > 0 {
        s.push_str(&format!(
            " ({} call{} of unknown cost{})",
            t.unknown,
            if t.unknown == 1 { "" } else { "s" },
            if t.micros > 0 { " left out" } else { "" }
        ));
    }
    if rc.by_model.len() > 1 {
        let parts: Vec<String> = rc
            .by_model
            .iter()
            .map(|(m, mt)| format!("{} {}", if m.is_empty() { "?" } else { m }, mt.cost_text()))
            .collect();
        s.push_str(&format!(" · by model: {}", parts.join(", ")));
    }
    Some(s)
}

/// The JSON fields: `tokens_by_kind` `{input, cache_read, cache_write, output, reasoning,
/// total}`, `cost_usd_micros` (the known costs' sum in microdollars, null when none is known),
/// `cost_unknown_calls` (LLM calls with tokens whose cost is unknown, left out of the sum) and
/// `cost_by_model` (`[{model, calls, cost_usd_micros, cost_unknown_calls, total_tokens}]`).
pub fn json(rc: &RunCost) -> [(&'static str, Value); 4] {
    let t = &rc.total;
    let k = &t.tokens;
    let micros =
        |t: &crate::cost::usage::Total| (t.micros > 0 || t.unknown == 0 && t.total_tokens > 0).then_some(t.micros);
    [
        (
            "tokens_by_kind",
            json!({"input": k.input, "cache_read": k.cache_read, "cache_write": k.cache_write,
                   "output": k.output, "reasoning": k.reasoning, "total": t.total_tokens}),
        ),
        ("cost_usd_micros", json!(micros(t))),
        ("cost_unknown_calls", json!(t.unknown)),
        (
            "cost_by_model",
            Value::Array(
                rc.by_model
                    .iter()
                    .map(|(m, mt)| {
                        json!({"model": m, "calls": mt.calls, "cost_usd_micros": micros(mt),
                               "cost_unknown_calls": mt.unknown, "total_tokens": mt.total_tokens})
                    })
                    .collect(),
            ),
        ),
    ]
}
