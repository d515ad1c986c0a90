//! `tracetui diff BASELINE RUN RUN...`: each run compared with the baseline, as a table (text,
//! Markdown) or JSON lines (one object per run, the shape of a single diff, then a summary).

use crate::diff::compare::{COLUMNS, RunDelta, tally};
use crate::diff::{Diff, Metric, Verdict};
use crate::model::Trace;
use crate::report::diff::Paint;
use crate::sanitize;
use serde_json::json;
use std::io::Write;

/// One run of a many-run diff, everything the outputs need (the traces are dropped).
pub struct Compared {
    /// The run as given on the command line.
    pub spec: String,
    pub name: String,
    pub delta: RunDelta,
    /// JSON reports: the run's single-diff JSON object with `cost` among its metrics and
    /// `first_divergence`, as one line (written where the diff was made: ten diffs of large
    /// runs held as JSON values took a gigabyte).
    pub json: Option<Vec<u8>>,
}

impl Compared {
    /// A table row only (text, Markdown): no more of the pair compared than the row needs.
    pub fn row(spec: &str, a: &Trace, b: &Trace, opts: &crate::diff::Options) -> Compared {
        let delta = RunDelta::compare(a, b, opts, crate::cost::Prices::builtin(), None).expect("not cancellable");
        Compared {
            spec: spec.to_string(),
            name: b.meta.name.clone().unwrap_or_else(|| b.meta.id.clone()),
            delta,
            json: None,
        }
    }

    /// The row and the whole diff's JSON line.
    pub fn new(spec: &str, d: &Diff, a: &Trace, b: &Trace) -> Compared {
        let delta = RunDelta::new(d, a, b, crate::cost::Prices::builtin());
        let mut json = super::diff::to_json(d, a, b);
        if let Some(c) = delta.metric("cost") {
            let usd = |x: Option<i64>| x.map(|m| m as f64 / 1e6);
            json["metrics"]["cost_usd"] = json!({
                "baseline": usd(c.baseline),
                "current": usd(c.current),
                "delta": usd(c.delta()),
                "pct": c.pct().map(|p| (p * 100.0).round() / 100.0),
            });
        }
        json["first_divergence"] = json!(delta.first);
        let mut line = Vec::new();
        crate::json::write_line(&mut line, &json).expect("writing to memory");
        Compared {
            spec: spec.to_string(),
            name: b.meta.name.clone().unwrap_or_else(|| b.meta.id.clone()),
            delta,
            json: Some(line),
        }
    }
}

/// `4 runs against the baseline: 1 PASSED · 1 OUTPUT_DRIFT · 2 REGRESSION; 3 fail`.
pub fn summary_line(runs: &[Compared], fail_on: &[Verdict]) -> String {
    let t = tally(runs.iter().map(|r| &r.delta.verdict));
    let parts: Vec<String> = t
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(v, n)| format!("{n} {}", v.as_str()))
        .collect();
    let failing = runs.iter().filter(|r| fail_on.contains(&r.delta.verdict)).count();
    format!(
        "{} against the baseline: {}; {failing} fail{}",
        crate::report::count(runs.len(), "run"),
        parts.join(" · "),
        if failing == 1 { "s" } else { "" }
    )
}

/// A metric cell: the run's value and its change, `3 (+1)`; `2` when unchanged.
pub fn cell(m: Option<&Metric>) -> String {
    let Some(m) = m else { return "-".into() };
    let v = m.value_text(m.current);
    match m.delta() {
        Some(0) | None => v,
        Some(d) => {
            let sign = if d > 0 { "+" } else { "-" };
            format!("{v} ({sign}{})", m.value_text(Some(d.abs())))
        }
    }
}

/// A metric column's heading (text report and the explorer's compare table).
pub fn header_name(c: &str) -> &'static str {
    match c {
        "tool_calls" => "TOOLS",
        "llm_calls" => "LLM",
        "tokens" => "TOKENS",
        "cost" => "COST",
        "duration" => "DURATION",
        "errors" => "ERRORS",
        _ => "?",
    }
}

pub fn text(
    base: &Trace,
    runs: &[Compared],
    fail_on: &[Verdict],
    out: &mut dyn Write,
    color: bool,
) -> std::io::Result<()> {
    let paint = Paint(color);
    writeln!(
        out,
        "baseline  {}",
        sanitize::line(&format!(
            "{} · {} · {}",
            base.meta.name.as_deref().unwrap_or(&base.meta.id),
            base.meta.format,
            base.meta.source.display()
        ))
    )?;
    let mut head = vec!["RUN".to_string(), "VERDICT".to_string()];
    head.extend(COLUMNS.iter().map(|c| header_name(c).to_string()));
    head.push("FIRST DIVERGENCE".into());
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let mut row = vec![
                crate::report::cut(&sanitize::line(&r.name), 32),
                r.delta.verdict.as_str().to_string(),
            ];
            row.extend(COLUMNS.iter().map(|c| cell(r.delta.metric(c))));
            row.push(
                r.delta
                    .first
                    .as_deref()
                    .map_or("-".into(), |f| crate::report::cut(&sanitize::line(f), 80)),
            );
            row
        })
        .collect();
    let ncol = head.len();
    let width = |i: usize| {
        rows.iter()
            .map(|r| unicode_width::UnicodeWidthStr::width(r[i].as_str()))
            .chain([head[i].len()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..ncol).map(width).collect();
    let pad = |s: &str, w: usize| {
        let n = unicode_width::UnicodeWidthStr::width(s);
        format!("{s}{}", " ".repeat(w.saturating_sub(n)))
    };
    let line = |cells: &[String], verdict: Option<Verdict>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i + 1 == ncol {
                s.push_str(c);
            } else if i == 1
                && let Some(v) = verdict
            {
                s.push_str(&paint.verdict(v));
                s.push_str(&" ".repeat(widths[i].saturating_sub(c.len())));
            } else {
                s.push_str(&pad(c, widths[i]));
            }
        }
        s
    };
    writeln!(out, "{}", line(&head, None))?;
    for (r, cells) in runs.iter().zip(&rows) {
        writeln!(out, "{}", line(cells, Some(r.delta.verdict)))?;
    }
    writeln!(out, "{}", summary_line(runs, fail_on))
}

pub fn json_lines(runs: &[Compared], fail_on: &[Verdict], out: &mut dyn Write) -> std::io::Result<()> {
    for r in runs {
        if let Some(line) = &r.json {
            out.write_all(line)?;
        }
    }
    let mut counts = serde_json::Map::new();
    for (v, n) in tally(runs.iter().map(|r| &r.delta.verdict)) {
        counts.insert(v.as_str().into(), json!(n));
    }
    let failing: Vec<&str> = runs
        .iter()
        .filter(|r| fail_on.contains(&r.delta.verdict))
        .map(|r| r.spec.as_str())
        .collect();
    let worst = runs.iter().map(|r| r.delta.verdict).max();
    crate::json::write_line(
        out,
        &json!({
            "summary": {
                "runs": runs.len(),
                "verdicts": counts,
                "worst": worst,
                "failing": failing,
                "fail_on": fail_on.iter().map(|v| v.as_str()).collect::<Vec<_>>(),
            }
        }),
    )
}

pub fn markdown(base: &Trace, runs: &[Compared], fail_on: &[Verdict], out: &mut dyn Write) -> std::io::Result<()> {
    use super::diff_md::{cell as md_cell, code};
    writeln!(
        out,
        "## tracetui diff: {} runs against {}\n",
        runs.len(),
        code(base.meta.name.as_deref().unwrap_or(&base.meta.id))
    )?;
    let mut head = vec!["run", "verdict"];
    head.extend(COLUMNS.iter().map(|c| match *c {
        "tool_calls" => "tool calls",
        "llm_calls" => "LLM calls",
        other => other,
    }));
    head.push("first divergence");
    writeln!(out, "| {} |", head.join(" | "))?;
    writeln!(out, "|{}", "---|".repeat(head.len()))?;
    for r in runs {
        let mut cells = vec![md_cell(&code(&r.name)), format!("**{}**", r.delta.verdict.as_str())];
        cells.extend(COLUMNS.iter().map(|c| md_cell(&cell(r.delta.metric(c)))));
        cells.push(r.delta.first.as_deref().map_or("-".into(), |f| md_cell(&code(f))));
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    writeln!(out, "\n{}", summary_line(runs, fail_on))
}

/// The report format of `tracetui diff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    Text,
    Json,
    Markdown,
    Html,
}

/// `--format` values of `diff`: the report formats `markdown` (`md`) and `html` taken out, the
/// rest (text, json, a trace format) left for the entry point's `--format` reading.
pub fn split_report(format: &[String]) -> (Option<Report>, Vec<String>) {
    let mut report = None;
    let mut rest = Vec::new();
    for x in format {
        match x.as_str() {
            "markdown" | "md" => report = Some(Report::Markdown),
            "html" => report = Some(Report::Html),
            "text" => {
                report = Some(Report::Text);
                rest.push(x.clone());
            }
            "json" => {
                report = Some(Report::Json);
                rest.push(x.clone());
            }
            _ => rest.push(x.clone()),
        }
    }
    (report, rest)
}

/// What `tracetui diff` (not on the explorer) is asked to do.
pub struct Request<'a> {
    pub baseline: &'a std::path::Path,
    pub current: &'a [std::path::PathBuf],
    pub forced: Option<&'static dyn crate::formats::Format>,
    pub opts: crate::diff::Options,
    pub fail_on: Vec<Verdict>,
    pub report: Report,
    pub context: usize,
    pub color: bool,
}

/// Load, diff and write; the exit code (1 when a verdict is in `fail_on`). `Err(msg)` is
/// trouble (exit 2): unreadable input, a report that needs two runs.
pub fn run(r: &Request, out: &mut dyn Write) -> Result<u8, RunError> {
    let warn = |side: &super::diff::Side| {
        for w in &side.warnings {
            eprintln!("{}", sanitize::line(&format!("tracetui: {w}")));
        }
    };
    let a = super::diff::open(r.baseline, r.forced).map_err(RunError::Usage)?;
    warn(&a);
    if let [one] = r.current {
        let b = super::diff::open(one, r.forced).map_err(RunError::Usage)?;
        warn(&b);
        let d = crate::diff::diff(&a.trace, &b.trace, &r.opts);
        match r.report {
            Report::Text => super::diff::write_with(
                &d,
                &a.trace,
                &b.trace,
                out,
                crate::output::Output::Text,
                r.color,
                r.context,
            )?,
            Report::Json => super::diff::write(&d, &a.trace, &b.trace, out, crate::output::Output::Json, false)?,
            Report::Markdown => super::diff_md::write(&d, &a.trace, &b.trace, out, r.context)?,
            Report::Html => super::diff_html::write(&d, &a.trace, &b.trace, out, r.context)?,
        }
        return Ok(u8::from(r.fail_on.contains(&d.verdict)));
    }
    if r.report == Report::Html {
        return Err(RunError::Usage(
            "--format html reports one pair of runs; compare many with text, json or markdown".into(),
        ));
    }
    use rayon::prelude::*;
    // Each run is loaded, diffed and dropped on its own: only the summaries stay.
    let results: Vec<Result<(Compared, Vec<String>), String>> = r
        .current
        .par_iter()
        .map(|spec| {
            let b = super::diff::open(spec, r.forced)?;
            let spec = spec.display().to_string();
            let c = if r.report == Report::Json {
                let d = crate::diff::diff(&a.trace, &b.trace, &r.opts);
                Compared::new(&spec, &d, &a.trace, &b.trace)
            } else {
                Compared::row(&spec, &a.trace, &b.trace, &r.opts)
            };
            Ok((c, b.warnings))
        })
        .collect();
    let mut runs = Vec::with_capacity(results.len());
    for res in results {
        let (c, warnings) = res.map_err(RunError::Usage)?;
        for w in warnings {
            eprintln!("{}", sanitize::line(&format!("tracetui: {w}")));
        }
        runs.push(c);
    }
    match r.report {
        Report::Text => text(&a.trace, &runs, &r.fail_on, out, r.color)?,
        Report::Json => json_lines(&runs, &r.fail_on, out)?,
        Report::Markdown => markdown(&a.trace, &runs, &r.fail_on, out)?,
        Report::Html => unreachable!("refused above"),
    }
    Ok(u8::from(runs.iter().any(|c| r.fail_on.contains(&c.delta.verdict))))
}

#[derive(Debug)]
pub enum RunError {
    /// Unreadable input or a bad request: exit 2 with this message.
    Usage(String),
    Io(std::io::Error),
}

impl From<std::io::Error> for RunError {
    fn from(e: std::io::Error) -> Self {
        RunError::Io(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_show_value_and_change() {
        let m = Metric {
            name: "tool_calls",
            baseline: Some(2),
            current: Some(3),
        };
        assert_eq!(cell(Some(&m)), "3 (+1)");
        let d = Metric {
            name: "duration",
            baseline: Some(4_000_000_000),
            current: Some(3_500_000_000),
        };
        assert_eq!(cell(Some(&d)), "3.50s (-500ms)");
        let c = Metric {
            name: "cost",
            baseline: None,
            current: Some(1234),
        };
        assert_eq!(cell(Some(&c)), crate::cost::dollars(1234));
        assert_eq!(cell(None), "-");
    }
}
