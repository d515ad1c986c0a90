//! Metric deltas between two runs: steps (events), tool calls, LLM calls, tokens, duration,
//! errors — each with baseline, current, delta and % change.

use crate::model::Trace;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Metric {
    pub name: &'static str,
    /// Absent when the run does not record it (duration without timestamps).
    pub baseline: Option<i64>,
    pub current: Option<i64>,
}

impl Metric {
    pub fn delta(&self) -> Option<i64> {
        Some(self.current? - self.baseline?)
    }
    /// Change relative to the baseline in percent; `None` when the baseline is 0 or unknown.
    pub fn pct(&self) -> Option<f64> {
        let b = self.baseline?;
        (b != 0).then(|| self.delta().map(|d| d as f64 * 100.0 / b as f64))?
    }
}

/// Metric names; `duration` values are nanoseconds.
pub fn compute(a: &Trace, b: &Trace) -> Vec<Metric> {
    let (ca, cb) = (a.counts(), b.counts());
    let m = |name, x: usize, y: usize| Metric {
        name,
        baseline: Some(x as i64),
        current: Some(y as i64),
    };
    vec![
        m("steps", ca.events, cb.events),
        m("tool_calls", ca.tool_calls, cb.tool_calls),
        m("llm_calls", ca.llm_calls, cb.llm_calls),
        Metric {
            name: "tokens",
            baseline: Some(ca.tokens as i64),
            current: Some(cb.tokens as i64),
        },
        Metric {
            name: "duration",
            baseline: a.duration(),
            current: b.duration(),
        },
        m("errors", ca.errors, cb.errors),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_and_percent() {
        let m = Metric {
            name: "x",
            baseline: Some(4),
            current: Some(5),
        };
        assert_eq!((m.delta(), m.pct()), (Some(1), Some(25.0)));
        let z = Metric {
            name: "x",
            baseline: Some(0),
            current: Some(3),
        };
        assert_eq!((z.delta(), z.pct()), (Some(3), None));
        let u = Metric {
            name: "x",
            baseline: None,
            current: Some(3),
        };
        assert_eq!((u.delta(), u.pct()), (None, None));
    }
}
