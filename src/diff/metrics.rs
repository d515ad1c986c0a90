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

    /// A value of this metric as shown: `-` when unknown, durations in their unit.
    pub fn value_text(&self, x: Option<i64>) -> String {
        match x {
            None => "-".to_string(),
            Some(x) if self.name == "duration" => crate::model::format_duration(x),
            Some(x) if self.name == "cost" => crate::cost::dollars(x.unsigned_abs()),
            // Grouped as everywhere else (`12,345`), whole.
            Some(x) if x < 0 => format!("-{}", crate::model::thousands(x.unsigned_abs())),
            Some(x) => crate::model::thousands(x as u64),
        }
    }

    /// The change as shown, `+1 (+50.0%)`; `None` when a side is unknown, `±0` when equal.
    pub fn delta_text(&self) -> Option<String> {
        let d = self.delta()?;
        if d == 0 {
            return Some("±0".to_string());
        }
        let sign = if d > 0 { "+" } else { "-" };
        let mag = self.value_text(Some(d.abs()));
        Some(match self.pct() {
            Some(p) => format!("{sign}{mag} ({p:+.1}%)"),
            None => format!("{sign}{mag}"),
        })
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
        assert_eq!(m.delta_text().as_deref(), Some("+1 (+25.0%)"));
        assert_eq!(z.delta_text().as_deref(), Some("+3"));
        assert_eq!((u.delta_text(), u.value_text(u.baseline)), (None, "-".to_string()));
        let d = Metric {
            name: "duration",
            baseline: Some(2_000_000_000),
            current: Some(1_000_000_000),
        };
        assert_eq!(d.delta_text().as_deref(), Some("-1.00s (-50.0%)"));
        assert_eq!(Metric { current: Some(4), ..m }.delta_text().as_deref(), Some("±0"));
    }
}
