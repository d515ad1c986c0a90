//! Many runs against one baseline: for each run its verdict, the metric deltas a compare table
//! shows (tool calls, LLM calls, tokens, cost when known, duration, errors) and its first
//! divergence. Built from a finished [`Diff`], or made directly ([`RunDelta::compare`]) without
//! comparing more pairs than the row needs; no terminal.

use super::{Diff, Metric, Op, Options, Verdict};
use crate::cost::Prices;
use crate::model::Trace;

/// The columns of a compare table, in order. `duration` is nanoseconds, `cost` microdollars.
pub const COLUMNS: [&str; 6] = ["tool_calls", "llm_calls", "tokens", "cost", "duration", "errors"];

/// One run compared with the baseline.
#[derive(Clone, Debug, PartialEq)]
pub struct RunDelta {
    pub verdict: Verdict,
    /// [`COLUMNS`], each with baseline and current values.
    pub metrics: Vec<Metric>,
    /// The first aligned row that differs, as `~ llm[0] gpt-4o · llm[0].prompt[0].content`;
    /// or what else made the verdict (a regression, the run record); `None` when PASSED.
    pub first: Option<String>,
    /// Index of the first differing row in [`Diff::rows`].
    pub first_row: Option<usize>,
}

/// Microdollars of a run's LLM calls; `None` when some call's price is unknown.
pub fn cost(t: &Trace, prices: &Prices) -> Option<i64> {
    let c = crate::cost::usage::run_cost(t, prices);
    (c.total.unknown == 0).then_some(c.total.micros as i64)
}

impl RunDelta {
    /// The row of `b` against the baseline `a`: what [`RunDelta::new`] makes of their
    /// [`super::diff`], with only the pairs compared that the verdict and the first divergence
    /// need (see [`super::summary_diff`]). `None` soon after `cancel` is set.
    pub fn compare(
        a: &Trace,
        b: &Trace,
        opts: &Options,
        prices: &Prices,
        cancel: Option<&std::sync::atomic::AtomicBool>,
    ) -> Option<RunDelta> {
        let d = super::summary_diff(a, b, opts, cancel)?;
        Some(RunDelta::new(&d, a, b, prices))
    }

    pub fn new(d: &Diff, a: &Trace, b: &Trace, prices: &Prices) -> RunDelta {
        let mut metrics: Vec<Metric> = COLUMNS
            .iter()
            .filter_map(|c| d.metrics.iter().find(|m| m.name == *c).copied())
            .collect();
        let at = COLUMNS.iter().position(|c| *c == "cost").unwrap_or(metrics.len());
        metrics.insert(
            at.min(metrics.len()),
            Metric {
                name: "cost",
                baseline: cost(a, prices),
                current: cost(b, prices),
            },
        );
        let first_row = d.rows.iter().position(|r| r.op != Op::Same);
        let first = match first_row {
            Some(i) => {
                let r = &d.rows[i];
                let label = match (r.op, r.baseline, r.current) {
                    (Op::Moved, Some(x), Some(y)) => {
                        let l = |n| match r.kind {
                            crate::model::EventKind::LlmCall => format!("llm[{n}]"),
                            _ => format!("tools[{n}]"),
                        };
                        format!("{}→{}", l(x.kind_index), l(y.kind_index))
                    }
                    _ => r.label(),
                };
                let mut s = format!("{} {label} {} {}", r.op.sign(), r.name, r.op.as_str());
                if let Some(p) = r.paths.first() {
                    s.push_str(&format!(" · {}", p.path));
                }
                Some(s)
            }
            None => d
                .run
                .first()
                .map(|p| format!("~ run changed · {}", p.path))
                .or_else(|| d.regressions.first().cloned()),
        };
        RunDelta {
            verdict: d.verdict,
            metrics,
            first,
            first_row,
        }
    }

    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }
}

/// What the runs' verdicts add up to: counts per verdict, in [`Verdict::ALL`] order.
pub fn tally<'a>(verdicts: impl IntoIterator<Item = &'a Verdict>) -> [(Verdict, usize); 5] {
    let mut out = Verdict::ALL.map(|v| (v, 0));
    for v in verdicts {
        if let Some(x) = out.iter_mut().find(|(w, _)| w == v) {
            x.1 += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(p: &str) -> Trace {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(p);
        crate::formats::load(&path, None).unwrap().traces.remove(0)
    }

    #[test]
    fn each_rerun_gets_its_verdict_deltas_and_first_divergence() {
        let base = load("sample-traces/compare/baseline");
        let p = Prices::builtin();
        let row = |name: &str| {
            let b = load(&format!("sample-traces/compare/{name}"));
            let full = RunDelta::new(&super::super::diff(&base, &b, &Default::default()), &base, &b, p);
            // The table's shortcut says the same as the whole diff.
            assert_eq!(
                RunDelta::compare(&base, &b, &Default::default(), p, None),
                Some(full.clone())
            );
            full
        };
        let same = row("rerun-same");
        assert_eq!(same.verdict, Verdict::Passed);
        assert_eq!(same.first, None);
        let names: Vec<_> = same.metrics.iter().map(|m| m.name).collect();
        assert_eq!(names, COLUMNS);
        // gpt-4o has a price: the cost is known on both sides and equal.
        let c = same.metric("cost").unwrap();
        assert!(c.baseline.is_some_and(|x| x > 0) && c.delta() == Some(0));

        let wording = row("rerun-wording");
        assert_eq!(wording.verdict, Verdict::OutputDrift);
        assert_eq!(
            wording.first.as_deref(),
            Some("~ llm[1] gpt-4o changed · llm[1].response")
        );
        assert_eq!(wording.metric("tokens").unwrap().delta(), Some(3));

        let prompt = row("rerun-prompt");
        assert_eq!(prompt.verdict, Verdict::ToolsChanged);
        assert_eq!(
            prompt.first.as_deref(),
            Some("~ llm[0] gpt-4o changed · llm[0].prompt[0].content")
        );
        assert_eq!(prompt.metric("tool_calls").unwrap().delta(), Some(1));

        let error = row("rerun-error");
        assert_eq!(error.verdict, Verdict::Regression);
        assert_eq!(error.metric("errors").unwrap().delta(), Some(2));
        let t = tally([same.verdict, wording.verdict, prompt.verdict, error.verdict].iter());
        assert!(t.iter().all(|(_, n)| *n <= 1));
        assert_eq!(t.iter().map(|(_, n)| n).sum::<usize>(), 4);
    }
}
