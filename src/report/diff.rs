//! `tracetui diff`: choose the two traces, and print a [`Diff`] as text or JSON.
//!
//! A source holding several traces (a directory of runs, a multi-run file) is narrowed with
//! `PATH#N` (1-based, in discovery order) or `PATH#ID` (trace id or name); without a selector
//! the first trace is used and stderr says so.

use crate::diff::words::{Mark, Shown};
use crate::diff::{Diff, Op, PathChange, Row, Verdict};
use crate::formats::Format;
use crate::model::Trace;
use crate::output::Output;
use crate::report::short;
use crate::sanitize;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A loaded side of the diff and what the user should hear about how it was chosen.
pub struct Side {
    pub trace: Trace,
    pub warnings: Vec<String>,
}

/// Load `spec` (a trace file or run dir, optionally `#N` / `#ID`) and pick one trace.
pub fn open(spec: &Path, forced: Option<&'static dyn Format>) -> Result<Side, String> {
    let (path, selector) = split_selector(spec);
    let d = crate::source::discover(std::slice::from_ref(&path), forced);
    if let Some(e) = d.errors.first() {
        return Err(e.to_string());
    }
    let mut traces = Vec::new();
    for (_, res) in crate::source::load_all(&d.runs) {
        traces.extend(res.map_err(|e| e.to_string())?.traces);
    }
    let total = traces.len();
    let shown = |t: &Trace| t.meta.name.clone().unwrap_or_else(|| t.meta.id.clone());
    let mut warnings = Vec::new();
    let idx = match &selector {
        None => {
            if total > 1 {
                warnings.push(format!(
                    "{} holds {total} traces; using the first ({}); name another with {}#N or {}#ID",
                    path.display(),
                    shown(&traces[0]),
                    path.display(),
                    path.display()
                ));
            }
            0
        }
        Some(sel) => match sel.parse::<usize>() {
            Ok(n) if n >= 1 && n <= total => n - 1,
            Ok(n) => return Err(format!("{}: no trace #{n} (it holds {total})", path.display())),
            Err(_) => traces
                .iter()
                .position(|t| t.meta.id == *sel || t.meta.name.as_deref() == Some(sel))
                .ok_or_else(|| format!("{}: no trace with id or name {sel:?}", path.display()))?,
        },
    };
    if total == 0 {
        return Err(format!("{}: holds no trace", path.display()));
    }
    let mut trace = traces.swap_remove(idx);
    if path == Path::new("-") {
        // Not the temporary copy's name: where the user's data came from.
        trace.meta.source = PathBuf::from("-");
    }
    warnings.extend(trace.diagnostics.iter().map(|d| d.to_string()));
    Ok(Side { trace, warnings })
}

/// `PATH#SEL` when PATH exists and the whole does not (a file may have `#` in its name).
pub fn split_selector(spec: &Path) -> (PathBuf, Option<String>) {
    if spec.exists() {
        return (spec.to_path_buf(), None);
    }
    let s = spec.to_string_lossy();
    match s.rsplit_once('#') {
        Some((p, sel)) if !sel.is_empty() && Path::new(p).exists() => (PathBuf::from(p), Some(sel.to_string())),
        _ => (spec.to_path_buf(), None),
    }
}

/// `--fail-on a,b`: verdict names, or `none`. Default: every verdict but PASSED.
pub fn fail_on(list: &[String]) -> Result<Vec<Verdict>, String> {
    if list.is_empty() {
        return Ok(Verdict::ALL.into_iter().filter(|v| *v != Verdict::Passed).collect());
    }
    let mut out = Vec::new();
    for s in list {
        if s.trim().eq_ignore_ascii_case("none") {
            continue;
        }
        out.push(Verdict::parse(s).ok_or_else(|| {
            let names: Vec<_> = Verdict::ALL.iter().map(|v| v.as_str()).collect();
            format!("--fail-on: unknown verdict {s:?}; known: {}, none", names.join(", "))
        })?);
    }
    Ok(out)
}

pub fn write(d: &Diff, a: &Trace, b: &Trace, out: &mut dyn Write, fmt: Output, color: bool) -> std::io::Result<()> {
    write_with(d, a, b, out, fmt, color, crate::diff::words::DEFAULT_CONTEXT)
}

/// [`write`] with `context` words of unchanged text kept around each word-level change.
pub fn write_with(
    d: &Diff,
    a: &Trace,
    b: &Trace,
    out: &mut dyn Write,
    fmt: Output,
    color: bool,
    context: usize,
) -> std::io::Result<()> {
    match fmt {
        Output::Json => crate::json::write_line(out, &to_json(d, a, b)),
        Output::Text => text(d, a, b, out, &Paint(color), context),
    }
}

// ---- JSON ----

pub fn to_json(d: &Diff, a: &Trace, b: &Trace) -> Value {
    let mut metrics = serde_json::Map::new();
    for m in &d.metrics {
        // Durations are nanoseconds in the model, milliseconds here.
        let (name, scale) = if m.name == "duration" {
            ("duration_ms", 1e6)
        } else {
            (m.name, 1.0)
        };
        let v = |x: Option<i64>| x.map(|x| num(x as f64 / scale));
        metrics.insert(
            name.into(),
            json!({
                "baseline": v(m.baseline),
                "current": v(m.current),
                "delta": v(m.delta()),
                "pct": m.pct().map(|p| num((p * 100.0).round() / 100.0)),
            }),
        );
    }
    let mut changes: Vec<Value> = Vec::new();
    if !d.run.is_empty() {
        changes.push(json!({
            "op": Op::Changed.as_str(),
            "baseline_index": null,
            "current_index": null,
            "kind": "run",
            "name": b.meta.name.as_deref().unwrap_or(&b.meta.id),
            "paths": d.run.iter().map(path_json).collect::<Vec<_>>(),
        }));
    }
    changes.extend(d.changes().map(|r| {
        json!({
            "op": r.op.as_str(),
            "baseline_index": r.baseline.map(|c| c.index),
            "current_index": r.current.map(|c| c.index),
            "kind": r.kind.as_str(),
            "name": r.name,
            "paths": r.paths.iter().map(path_json).collect::<Vec<_>>(),
        })
    }));
    let side = |t: &Trace| {
        let mut v = json!({
            "format": t.meta.format,
            "id": t.meta.id,
            "name": t.meta.name,
        });
        crate::json::put_path(&mut v, "source", &t.meta.source);
        v
    };
    json!({
        "verdict": d.verdict,
        "baseline": side(a),
        "current": side(b),
        "metrics": metrics,
        "calls": {
            "baseline": d.rows.iter().filter(|r| r.baseline.is_some()).count(),
            "current": d.rows.iter().filter(|r| r.current.is_some()).count(),
            "unchanged": d.rows.iter().filter(|r| r.op == Op::Same).count(),
        },
        "changes": changes,
        "regressions": d.regressions,
        "notes": d.notes,
    })
}

/// Whole numbers as integers, others as floats.
fn num(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

fn path_json(p: &PathChange) -> Value {
    let change = match (&p.from, &p.to) {
        (None, _) => "added",
        (_, None) => "removed",
        _ => "changed",
    };
    let mut v = json!({
        "path": p.path,
        "from": p.from,
        "to": p.to,
        "change": change,
        "section": p.section,
    });
    // A string changed into another string: its word-level changes too.
    if let Some((x, y)) = crate::diff::words::strings(p.from.as_ref(), p.to.as_ref()) {
        v["segments"] = json!(crate::diff::words::segments(x, y));
    }
    v
}

// ---- text ----

/// ANSI colour when writing to a terminal without NO_COLOR; plain otherwise.
pub(crate) struct Paint(pub(crate) bool);

impl Paint {
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    pub(crate) fn verdict(&self, v: Verdict) -> String {
        let code = match v {
            Verdict::Passed => "1;32",
            Verdict::OutputDrift | Verdict::ToolsReordered => "1;33",
            Verdict::ToolsChanged | Verdict::Regression => "1;31",
        };
        self.wrap(code, v.as_str())
    }
    /// One line of a word diff: deleted words red, inserted green, by `[-…-]{+…+}` without
    /// colour; elisions dim. Each piece sanitized and cut to [`WORD_PIECE_MAX`] characters.
    fn words(&self, line: &[(Mark, String)]) -> String {
        let mut s = String::new();
        for (m, t) in line {
            let t = crate::report::cut(&sanitize::line(t), WORD_PIECE_MAX);
            s.push_str(&match (m, self.0) {
                (Mark::Equal, _) => t,
                (Mark::Elided, _) => self.wrap("2", &t),
                (Mark::Delete, true) => self.wrap("1;31", &t),
                (Mark::Insert, true) => self.wrap("1;32", &t),
                (Mark::Delete, false) => format!("[-{t}-]"),
                (Mark::Insert, false) => format!("{{+{t}+}}"),
            });
        }
        s
    }
    fn op(&self, op: Op, s: &str) -> String {
        match op {
            Op::Same => self.wrap("2", s),
            Op::Changed => self.wrap("33", s),
            Op::Added => self.wrap("32", s),
            Op::Removed => self.wrap("31", s),
            Op::Moved => self.wrap("36", s),
        }
    }
}

/// Path changes printed under one call; the rest are counted.
const MAX_PATHS_SHOWN: usize = 20;
/// Characters of one piece of a word diff (a long inserted text, an unbroken token).
pub const WORD_PIECE_MAX: usize = 2000;
/// Width of a value in a path line.
const VALUE_WIDTH: usize = 80;

fn text(d: &Diff, a: &Trace, b: &Trace, out: &mut dyn Write, paint: &Paint, context: usize) -> std::io::Result<()> {
    let side = |t: &Trace| {
        sanitize::line(&format!(
            "{} · {} · {}",
            t.meta.name.as_deref().unwrap_or(&t.meta.id),
            t.meta.format,
            t.meta.source.display()
        ))
        .into_owned()
    };
    writeln!(out, "{}", paint.verdict(d.verdict))?;
    writeln!(out, "  {:<11} {}", "baseline", side(a))?;
    writeln!(out, "  {:<11} {}", "current", side(b))?;
    for m in &d.metrics {
        writeln!(out, "  {}", metric_line(m))?;
    }
    for r in &d.regressions {
        writeln!(out, "{}", paint.wrap("31", &format!("  ✗ {}", sanitize::line(r))))?;
    }
    for n in &d.notes {
        writeln!(out, "  note: {}", sanitize::line(n))?;
    }
    if !d.run.is_empty() {
        writeln!(out)?;
        writeln!(out, "{}", paint.op(Op::Changed, "~ run"))?;
        paths(&d.run, out, paint, context)?;
    }
    writeln!(out)?;
    if d.rows.is_empty() {
        writeln!(out, "  (no calls on either side)")?;
    }
    // Each side's payloads read in file order, a window at a time, for the calls' gists.
    let (mut ra, mut rb) = (crate::diff::PayloadReader::new(a), crate::diff::PayloadReader::new(b));
    for r in &d.rows {
        let mut line = row_line(r);
        if let Some(g) = row_gist(r, a, b, &mut ra, &mut rb) {
            line.push_str("  ");
            line.push_str(&g);
        }
        writeln!(out, "{}", paint.op(r.op, &line))?;
        paths(&r.paths, out, paint, context)?;
    }
    Ok(())
}

/// What a row's call did ([`crate::formats::gist`]): the baseline's, and the current run's
/// after an arrow when it differs (`ls → ls -la`).
fn row_gist(
    r: &Row,
    a: &Trace,
    b: &Trace,
    ra: &mut crate::diff::PayloadReader,
    rb: &mut crate::diff::PayloadReader,
) -> Option<String> {
    let one = |t: &Trace, reader: &mut crate::diff::PayloadReader, c: Option<crate::diff::CallRef>| {
        let e = t.event(c?.event);
        (e.kind == crate::model::EventKind::ToolCall)
            .then(|| crate::formats::gist::from_payload(t, e, &reader.get(e)))
            .flatten()
            .map(|g| crate::report::cut(&g, crate::report::show::GIST_CHARS))
    };
    let x = one(a, ra, r.baseline);
    let y = one(b, rb, r.current);
    match (x, y) {
        (Some(x), Some(y)) if x != y => Some(format!("{x} → {y}")),
        (x, y) => x.or(y),
    }
}

/// `~ tools[1] forecast`, `! tools[1]→tools[2] events`: the label reads like the paths below.
fn row_line(r: &Row) -> String {
    let label = match (r.op, r.baseline, r.current) {
        (Op::Moved, Some(x), Some(y)) => format!("{}→{}", label_of(r, x.kind_index), label_of(r, y.kind_index)),
        _ => r.label(),
    };
    format!("{} {label} {}", r.op.sign(), sanitize::line(&r.name))
}

fn label_of(r: &Row, n: usize) -> String {
    match r.kind {
        crate::model::EventKind::LlmCall => format!("llm[{n}]"),
        _ => format!("tools[{n}]"),
    }
}

fn paths(list: &[PathChange], out: &mut dyn Write, paint: &Paint, context: usize) -> std::io::Result<()> {
    for p in list.iter().take(MAX_PATHS_SHOWN) {
        if let Some((x, y)) = crate::diff::words::strings(p.from.as_ref(), p.to.as_ref())
            && let segs = crate::diff::words::segments(x, y)
            && crate::diff::words::worth_showing(&segs)
        {
            let shown = Shown::new(&segs, context);
            let lines: Vec<String> = shown.lines.iter().map(|l| paint.words(l)).collect();
            let path = paint.wrap("1", &sanitize::line(&p.path));
            if lines.len() == 1 {
                writeln!(out, "      {path}: {}", lines[0])?;
            } else {
                writeln!(out, "      {path}:")?;
                for l in lines {
                    writeln!(out, "        {l}")?;
                }
            }
            continue;
        }
        let v = |x: &Option<Value>| x.as_ref().map_or("(absent)".to_string(), |v| short(v, VALUE_WIDTH));
        writeln!(
            out,
            "      {}: {} → {}",
            paint.wrap("1", &sanitize::line(&p.path)),
            paint.wrap("31", &v(&p.from)),
            paint.wrap("32", &v(&p.to))
        )?;
    }
    if list.len() > MAX_PATHS_SHOWN {
        writeln!(
            out,
            "      … and {} more (--format json lists all)",
            list.len() - MAX_PATHS_SHOWN
        )?;
    }
    Ok(())
}

fn metric_line(m: &crate::diff::Metric) -> String {
    let delta = m.delta_text().map(|d| format!("  {d}")).unwrap_or_default();
    format!(
        "{:<11} {} → {}{}",
        m.name.replace('_', " "),
        m.value_text(m.baseline),
        m.value_text(m.current),
        delta
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_on_lists() {
        assert_eq!(fail_on(&[]).unwrap().len(), 4);
        assert!(!fail_on(&[]).unwrap().contains(&Verdict::Passed));
        assert_eq!(fail_on(&["regression".into()]).unwrap(), vec![Verdict::Regression]);
        assert!(fail_on(&["none".into()]).unwrap().is_empty());
        assert!(fail_on(&["bogus".into()]).is_err());
    }

    #[test]
    fn metric_lines() {
        let m = crate::diff::Metric {
            name: "tool_calls",
            baseline: Some(4),
            current: Some(3),
        };
        assert_eq!(metric_line(&m), "tool calls  4 → 3  -1 (-25.0%)");
        let d = crate::diff::Metric {
            name: "duration",
            baseline: Some(2_000_000_000),
            current: None,
        };
        assert_eq!(metric_line(&d), "duration    2.00s → -");
    }

    #[test]
    fn rows_say_what_each_call_did_and_how_it_changed() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/diff");
        let a = open(&dir.join("booking.snap.json"), None).unwrap().trace;
        let b = open(&dir.join("booking.current.json"), None).unwrap().trace;
        let d = crate::diff::diff(&a, &b, &Default::default());
        let mut out = Vec::new();
        write(&d, &a, &b, &mut out, Output::Text, false).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("~ tools[0] search_restaurants  vegetarian\n"), "{out}");
        assert!(out.contains("+ tools[1] check_availability  green-table\n"), "{out}");
        // Both sides' gists, and the second when it differs.
        let (mut ra, mut rb) = (crate::diff::PayloadReader::new(&a), crate::diff::PayloadReader::new(&b));
        let r = d
            .rows
            .iter()
            .find(|r| r.baseline.is_some() && r.current.is_some())
            .unwrap();
        assert_eq!(row_gist(r, &a, &b, &mut ra, &mut rb).as_deref(), Some("vegetarian"));
        let mut b2 = b.clone();
        let ev = r.current.unwrap().event as usize;
        let mut p = crate::formats::payload(&b2, &b2.events[ev]);
        p.input = Some(json!({"cuisine": "vegan"}));
        b2.events[ev].payload = crate::model::PayloadRef::Inline(Box::new(p));
        let mut rb2 = crate::diff::PayloadReader::new(&b2);
        assert_eq!(
            row_gist(r, &a, &b2, &mut ra, &mut rb2).as_deref(),
            Some("vegetarian → vegan")
        );
    }
}
