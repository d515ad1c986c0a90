//! `tracetui diff A B --format markdown`: the diff as a pull-request comment: verdict, metric
//! deltas, regressions, and each changed call with its JSON-path changes and word diffs.
//!
//! Trace text only ever appears inside code spans and fenced blocks whose fence is longer than
//! any backtick run in it, so it cannot open HTML, links or images; controls and bidi are
//! escaped visibly first (as in text output).

use crate::diff::words::{Shown, segments, strings, worth_showing};
use crate::diff::{Diff, Op, PathChange, Verdict};
use crate::model::Trace;
use crate::sanitize;
use std::io::Write;

/// Path changes listed under one call; the rest are counted.
const MAX_PATHS: usize = 20;
/// Changed calls listed; the rest are counted.
const MAX_CALLS: usize = 50;
/// Characters of a value shown (`from → to`).
const VALUE_MAX: usize = 200;

/// An inline code span of one line of trace text (controls escaped, newlines shown as `\n`).
pub fn code(s: &str) -> String {
    let s = sanitize::line(s);
    let ticks = "`".repeat(crate::words::longest_backtick_run(&s) + 1);
    // A space inside the fence when the text touches a backtick (CommonMark strips one).
    let pad = if s.starts_with('`') || s.ends_with('`') || s.is_empty() {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{s}{pad}{ticks}")
}

/// A table cell: `|` escaped (GitHub honours `\|` inside code spans in tables too).
pub fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// A fenced block of multi-line trace text.
pub fn fenced(s: &str, info: &str) -> String {
    let s = sanitize::file_text(s);
    let n = (crate::words::longest_backtick_run(&s) + 1).max(3);
    let fence = "`".repeat(n);
    format!("{fence}{info}\n{s}\n{fence}")
}

fn verdict_mark(v: Verdict) -> &'static str {
    match v {
        Verdict::Passed => "✅",
        Verdict::OutputDrift | Verdict::ToolsReordered => "⚠️",
        Verdict::ToolsChanged | Verdict::Regression => "❌",
    }
}

fn run_name(t: &Trace) -> String {
    t.meta.name.clone().unwrap_or_else(|| t.meta.id.clone())
}

pub fn write(d: &Diff, a: &Trace, b: &Trace, out: &mut dyn Write, context: usize) -> std::io::Result<()> {
    writeln!(
        out,
        "## {} tracetui diff: **{}**\n",
        verdict_mark(d.verdict),
        d.verdict.as_str()
    )?;
    writeln!(
        out,
        "Baseline {} ({}) · current {} ({})\n",
        code(&run_name(a)),
        a.meta.format,
        code(&run_name(b)),
        b.meta.format
    )?;
    writeln!(out, "| metric | baseline | current | change |")?;
    writeln!(out, "|---|---:|---:|---:|")?;
    for m in &d.metrics {
        let name = match m.name {
            "llm_calls" => "LLM calls".to_string(),
            n => n.replace('_', " "),
        };
        writeln!(
            out,
            "| {name} | {} | {} | {} |",
            m.value_text(m.baseline),
            m.value_text(m.current),
            m.delta_text().unwrap_or_else(|| "-".into())
        )?;
    }
    if !d.regressions.is_empty() {
        writeln!(out, "\n**Regressions**\n")?;
        for r in &d.regressions {
            writeln!(out, "- ✗ {}", code(r))?;
        }
    }
    if !d.notes.is_empty() {
        writeln!(out)?;
        for n in &d.notes {
            writeln!(out, "> note: {}", code(n))?;
        }
    }
    let changed: Vec<_> = d.changes().collect();
    let total = changed.len() + usize::from(!d.run.is_empty());
    let same = d.rows.iter().filter(|r| r.op == Op::Same).count();
    writeln!(
        out,
        "\n### Changed calls: {total} ({same} unchanged of {})\n",
        d.rows.len()
    )?;
    if total == 0 {
        writeln!(out, "No call differs.")?;
        return Ok(());
    }
    if !d.run.is_empty() {
        writeln!(out, "#### `~` run record\n")?;
        paths(&d.run, out, context)?;
    }
    for r in changed.iter().take(MAX_CALLS) {
        let label = match (r.op, r.baseline, r.current) {
            (Op::Moved, Some(x), Some(y)) => {
                format!("{}→{}", label_n(r.kind, x.kind_index), label_n(r.kind, y.kind_index))
            }
            _ => r.label(),
        };
        writeln!(
            out,
            "#### `{}` {} {}\n",
            r.op.sign(),
            code(&format!("{label} {}", r.name)),
            r.op.as_str()
        )?;
        match r.op {
            Op::Added => writeln!(out, "Only the current run makes this call.\n")?,
            Op::Removed => writeln!(out, "Only the baseline makes this call.\n")?,
            Op::Moved if r.paths.is_empty() => writeln!(out, "The same call, at another place.\n")?,
            _ => {}
        }
        if !r.paths.is_empty() {
            paths(&r.paths, out, context)?;
        }
    }
    if changed.len() > MAX_CALLS {
        writeln!(
            out,
            "… and {} more changed calls (`--format json` lists all).",
            changed.len() - MAX_CALLS
        )?;
    }
    Ok(())
}

fn label_n(kind: crate::model::EventKind, n: usize) -> String {
    match kind {
        crate::model::EventKind::LlmCall => format!("llm[{n}]"),
        _ => format!("tools[{n}]"),
    }
}

fn value(v: &Option<serde_json::Value>) -> String {
    match v {
        None => "(absent)".into(),
        Some(serde_json::Value::String(s)) => crate::report::cut(s, VALUE_MAX),
        Some(other) => crate::report::cut(&other.to_string(), VALUE_MAX),
    }
}

fn paths(list: &[PathChange], out: &mut dyn Write, context: usize) -> std::io::Result<()> {
    for p in list.iter().take(MAX_PATHS) {
        if let Some((x, y)) = strings(p.from.as_ref(), p.to.as_ref())
            && let segs = segments(x, y)
            && worth_showing(&segs)
        {
            let shown = Shown::new(&segs, context);
            let text: String = shown
                .lines
                .iter()
                .map(|l| {
                    let one = Shown { lines: vec![l.clone()] };
                    let m = one.marked();
                    crate::report::cut(&m, super::diff::WORD_PIECE_MAX)
                })
                .collect::<Vec<_>>()
                .join("\n");
            writeln!(out, "- {} (word diff: `[-deleted-]{{+inserted+}}`)\n", code(&p.path))?;
            writeln!(out, "{}\n", indent(&fenced(&text, "text")))?;
        } else {
            writeln!(
                out,
                "- {}: {} → {}",
                code(&p.path),
                code(&value(&p.from)),
                code(&value(&p.to))
            )?;
        }
    }
    if list.len() > MAX_PATHS {
        writeln!(
            out,
            "- … and {} more (`--format json` lists all)",
            list.len() - MAX_PATHS
        )?;
    }
    writeln!(out)
}

/// Indent a block under a list item.
fn indent(s: &str) -> String {
    s.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_and_fences_cannot_be_broken_out_of() {
        assert_eq!(code("a"), "`a`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x`"), "`` `x` ``");
        assert_eq!(code("<img src=x onerror=alert(1)>"), "`<img src=x onerror=alert(1)>`");
        assert_eq!(code("a\x1b[2Jb\nc"), "`a\\x1b[2Jb\\nc`");
        let f = fenced("x\n```\ny", "text");
        assert!(f.starts_with("````text\n") && f.ends_with("\n````"));
        assert_eq!(cell("a|b"), "a\\|b");
    }
}
