//! Tokens and cost as the explorer shows them: the five kinds and the price of one LLM call
//! (detail pane), a run's totals and its cost by model (run header, the run event's detail).
//! Everything comes from `cost::usage`, the one definition every view shares.

use super::detail::{Line, Tok};
use crate::cost::usage::{Basis, CallCost, RunCost, Total, call_cost};
use crate::cost::{Prices, Tokens, dollars, per_million};
use crate::model::{Event, EventKind, Trace, Usage};
use crate::sanitize;

pub use crate::model::thousands;

fn line(spans: Vec<(Tok, String)>) -> Line {
    Line {
        spans,
        ..Default::default()
    }
}

/// The model a call is priced as: its own, else the run's.
fn model_of<'a>(t: &'a Trace, e: &Event) -> Option<&'a str> {
    let own = t.str(e.model);
    if own.is_empty() {
        t.meta.model.as_deref()
    } else {
        Some(own)
    }
}

thread_local! {
    /// The run's cost at the current prices when the caller has just made it from every event
    /// of the trace being shown (see [`with_run_cost`]).
    static KNOWN_RUN_COST: std::cell::RefCell<Option<RunCost>> = const { std::cell::RefCell::new(None) };
}

/// Run `f` with the root's totals taken from `rc`, which must be `run_cost` of the trace `f`
/// shows at [`super::config::prices`]: a view that just counted every event has it, and the
/// run event's detail priced every call again (the last update of a 1M-event load spent a
/// second pass over the trace on it, issue 13).
pub fn with_run_cost<R>(rc: Option<&RunCost>, f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            KNOWN_RUN_COST.with(|k| *k.borrow_mut() = None);
        }
    }
    KNOWN_RUN_COST.with(|k| *k.borrow_mut() = rc.cloned());
    let _reset = Reset;
    f()
}

/// The lines of an event's usage in its detail: for an LLM call the five kinds and the cost
/// with the price used; for the root run event the run's totals and cost by model.
pub fn lines(t: &Trace, e: &Event, prices: &Prices) -> Vec<Line> {
    match e.kind {
        // The run's totals on its root; a nested run (a subagent) shows its own usage only.
        EventKind::Run if e.parent == crate::model::NO_PARENT => match KNOWN_RUN_COST.with(|k| k.borrow().clone()) {
            Some(rc) => with_recorded(run_lines(&rc), &rc, t),
            None => {
                let rc = crate::cost::usage::run_cost(t, prices);
                with_recorded(run_lines(&rc), &rc, t)
            }
        },
        _ => match e.usage.get().as_ref() {
            Some(u) => {
                let model = model_of(t, e);
                let mut out = vec![token_line("tokens", u)];
                if e.kind == EventKind::LlmCall || u.cost.is_some() {
                    let c = call_cost(prices, model, Some(u));
                    out.push(cost_line(&c, prices));
                    out.extend(parts_line(&c, prices, model, u));
                }
                out
            }
            None => Vec::new(),
        },
    }
}

/// The kinds the call's format recorded, and the total: a kind a format does not record is
/// left out rather than shown as `?` on every call.
fn token_line(label: &str, u: &Usage) -> Line {
    let mut s = vec![(Tok::Dim, label.to_string())];
    for (k, v) in [
        ("  in ", u.input),
        ("  cache read ", u.cache_read),
        ("  cache write ", u.cache_write),
        ("  out ", u.output),
        ("  reasoning ", u.reasoning),
    ] {
        if let Some(v) = v {
            s.push((Tok::Dim, k.into()));
            s.push((Tok::Num, thousands(v)));
        }
    }
    s.push((Tok::Dim, "  total ".into()));
    s.push((Tok::Num, u.sum().map(thousands).unwrap_or_else(|| "?".into())));
    line(s)
}

fn tokens_line(label: &str, t: &Tokens, total: u64) -> Line {
    let mut s = vec![(Tok::Dim, label.to_string())];
    for (k, v) in [
        ("  in ", t.input),
        ("  cache read ", t.cache_read),
        ("  cache write ", t.cache_write),
        ("  out ", t.output),
        ("  reasoning ", t.reasoning),
        ("  total ", total),
    ] {
        s.push((Tok::Dim, k.into()));
        s.push((Tok::Num, thousands(v)));
    }
    line(s)
}

/// The call's cost by kind and cache tier (`by kind  in $0.0030 · cache write 1h $0.2400 · …`),
/// whether the long-context tier applied or a cache write's tier is unknown, and the computed
/// cost beside a recorded one.
fn parts_line(c: &CallCost, prices: &Prices, model: Option<&str>, u: &Usage) -> Option<Line> {
    let (p, _) = crate::cost::usage::call_parts(prices, model, Some(u))?;
    let mut s = vec![(Tok::Dim, "by kind".to_string())];
    for k in crate::cost::Kind::ALL {
        let n = p.parts[k as usize].0;
        if n == 0 {
            continue;
        }
        s.push((Tok::Dim, format!("  {} ", k.label())));
        s.push(match p.micros_of(k) {
            Some(m) => (Tok::Num, dollars(m)),
            None => (Tok::Pending, "unpriced".into()),
        });
    }
    if p.long_context {
        s.push((Tok::Dim, "  (long-context prices)".into()));
    }
    if p.untiered > 0 {
        s.push((Tok::Dim, "  (cache write tier not recorded: priced as 5-minute)".into()));
    }
    if c.basis == Basis::Recorded
        && let Some(m) = c.computed
    {
        s.push((Tok::Dim, "  computed ".into()));
        s.push((Tok::Num, dollars(m)));
    }
    (s.len() > 1).then(|| line(s))
}

/// `cost $0.0123  claude-sonnet-4-5 (exact name): in $3/M · cache read $0.3/M · …`.
fn cost_line(c: &CallCost, prices: &Prices) -> Line {
    let mut s = vec![(Tok::Dim, "cost ".to_string())];
    match (&c.micros, &c.basis) {
        (Some(m), Basis::Recorded) => {
            s.push((Tok::Num, dollars(*m)));
            s.push((Tok::Dim, "  recorded by the agent".into()));
        }
        (m, Basis::Priced { model, how }) => {
            s.push((Tok::Num, m.map(dollars).unwrap_or_else(|| "?".into())));
            s.push((Tok::Dim, "  priced as ".into()));
            s.push((Tok::Text, sanitize::line(model).into_owned()));
            s.push((Tok::Dim, format!(" ({})", how.describe())));
            if let Some((e, _)) = prices.lookup(model) {
                let p = &e.price;
                let mut first = true;
                for (k, v) in [
                    ("in", p.input),
                    ("cache read", p.cache_read),
                    ("cache write", p.cache_write),
                    ("out", p.output),
                    ("reasoning", p.reasoning),
                ] {
                    if let Some(v) = v {
                        s.push((Tok::Dim, format!("{}{k} ", if first { ": " } else { " · " })));
                        s.push((Tok::Text, format!("${}/M", per_million(v))));
                        first = false;
                    }
                }
                if let crate::cost::Source::Config(_) = e.source {
                    s.push((Tok::Dim, "  (from config.toml)".into()));
                }
            }
            if m.is_none() {
                s.push((Tok::Dim, "  (a token kind it used has no price)".into()));
            }
        }
        (_, Basis::UnknownModel(model)) => {
            s.push((Tok::Pending, "?".into()));
            s.push((
                Tok::Dim,
                format!("  unknown: model {} not in the price list", sanitize::line(model)),
            ));
        }
        (_, Basis::NoModel) => {
            s.push((Tok::Pending, "?".into()));
            s.push((Tok::Dim, "  unknown: the call names no model".into()));
        }
        (_, Basis::NoUsage) | (_, Basis::Recorded) => {
            s.push((Tok::Pending, "?".into()));
            s.push((Tok::Dim, "  unknown: no token counts".into()));
        }
    }
    line(s)
}

fn cost_text(t: &Total) -> String {
    let mut s = t.cost_text();
    if t.unknown > 0 && t.micros > 0 {
        s.push_str(&format!(
            " ({} call{} of unknown cost left out)",
            t.unknown,
            if t.unknown == 1 { "" } else { "s" }
        ));
    }
    s
}

/// The cost the agent itself recorded for the run (DESIGN §8: kept beside the computed one),
/// after the run cost line, with how far the two differ when that is more than 1%.
fn with_recorded(mut out: Vec<Line>, rc: &RunCost, _t: &Trace) -> Vec<Line> {
    let Some((recorded, computed)) = rc.recorded_vs_computed() else {
        return out;
    };
    let mut spans = vec![
        (Tok::Dim, "recorded cost ".into()),
        (Tok::Num, dollars(recorded)),
        (Tok::Dim, " (by the agent)".into()),
    ];
    if computed > 0 && crate::cost::usage::differ(recorded, computed) {
        let pct = (recorded as f64 - computed as f64) / computed as f64 * 100.0;
        spans.push((Tok::Dim, "  computed ".into()));
        spans.push((Tok::Num, dollars(computed)));
        spans.push((Tok::Pending, format!("  {pct:+.1}% from the computed cost")));
    }
    for (m, u) in &rc.unlogged {
        spans.push((
            Tok::Dim,
            format!("  incl. {} not logged ({}) ", u.cost_text(), sanitize::line(m)),
        ));
    }
    let at = out.len().min(2);
    out.insert(at, line(spans));
    out
}

/// The run's totals: tokens by kind, cost, and the cost of each model when there are several.
pub fn run_lines(rc: &RunCost) -> Vec<Line> {
    let t = &rc.total;
    if t.total_tokens == 0 && t.micros == 0 && t.unknown == 0 {
        return Vec::new();
    }
    let mut out = vec![
        tokens_line("run tokens", &t.tokens, t.total_tokens),
        line(vec![(Tok::Dim, "run cost ".into()), (Tok::Num, cost_text(t))]),
    ];
    if rc.by_model.len() > 1 {
        for (m, mt) in &rc.by_model {
            let name = if m.is_empty() {
                "(no model)".to_string()
            } else {
                sanitize::line(m).into_owned()
            };
            out.push(line(vec![
                (Tok::Dim, "  ".into()),
                (Tok::Text, name),
                (Tok::Dim, format!("  {} calls  ", mt.calls)),
                (Tok::Num, mt.cost_text()),
                (Tok::Dim, format!("  {} tokens", thousands(mt.total_tokens))),
            ]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(l: &Line) -> String {
        l.spans.iter().map(|(_, s)| s.as_str()).collect()
    }

    #[test]
    fn a_call_shows_the_kinds_recorded_and_the_price_used() {
        let p = Prices::builtin();
        let u = Usage {
            input: Some(1000),
            cache_read: Some(2000),
            cache_write: Some(500),
            output: Some(400),
            ..Default::default()
        };
        let l = token_line("tokens", &u);
        assert_eq!(
            text(&l),
            "tokens  in 1,000  cache read 2,000  cache write 500  out 400  total 3,900",
            "reasoning is not recorded: left out, not `?`"
        );
        let only_out = Usage {
            output: Some(12),
            ..Default::default()
        };
        assert_eq!(text(&token_line("tokens", &only_out)), "tokens  out 12  total 12");
        assert_eq!(text(&token_line("tokens", &Usage::default())), "tokens  total ?");
        let c = call_cost(p, Some("claude-sonnet-4-5-20250929"), Some(&u));
        let l = text(&cost_line(&c, p));
        // 1,000 x $3 + 2,000 x $0.30 + 500 x $3.75 + 400 x $15 per million = $0.011475.
        assert!(
            l.starts_with("cost $0.0115  priced as claude-sonnet-4-5-20250929 (exact name): in $3/M"),
            "{l}"
        );
        assert!(
            l.contains("cache read $0.3/M") && l.contains("cache write $3.75/M") && l.contains("out $15/M"),
            "{l}"
        );
        let rec = Usage {
            cost: Some(12_300),
            ..u
        };
        let l = text(&cost_line(&call_cost(p, Some("x"), Some(&rec)), p));
        assert_eq!(l, "cost $0.0123  recorded by the agent");
        let l = text(&cost_line(&call_cost(p, Some("no-such-model-xyz"), Some(&u)), p));
        assert_eq!(l, "cost ?  unknown: model no-such-model-xyz not in the price list");
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
