//! `tracetui diff A B --format html -o FILE`: one self-contained side-by-side report for a CI
//! artifact. Inline CSS only, no script, a Content-Security-Policy that allows nothing else
//! (no request to any host, no script even if some got in), `<details>` for folding, light and
//! dark by `prefers-color-scheme`.
//!
//! Everything from the traces goes through [`esc`]: controls and bidi are made visible first
//! (as in text output), then `& < > " '` become entities, so trace text is never markup.

use crate::diff::words::{Mark, Shown, segments, strings, worth_showing};
use crate::diff::{Diff, Op, PathChange, Verdict};
use crate::model::Trace;
use std::io::Write;

/// Rows of the aligned call list written; the rest are counted on the page.
const MAX_ROWS: usize = 5_000;
/// Path changes shown under one call.
const MAX_PATHS: usize = 50;
/// Characters of one value or one word-diff piece.
const VALUE_MAX: usize = 4_000;

use crate::sanitize::html as esc;

fn cut(s: &str) -> String {
    crate::report::cut(s, VALUE_MAX)
}

const CSS: &str = r#"
:root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--dim:#59636e;--line:#d1d9e0;--del:#ffebe9;--delfg:#82071e;--ins:#dafbe1;--insfg:#116329;--chg:#fff8c5;--mov:#ddf4ff;--bad:#cf222e;--ok:#1a7f37;--warn:#9a6700}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--dim:#9198a1;--line:#3d444d;--del:#4b1219;--delfg:#ffdcd7;--ins:#0f3a1e;--insfg:#aff5b4;--chg:#3b2f00;--mov:#0c2d6b;--bad:#f85149;--ok:#3fb950;--warn:#d29922}}
body{background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,sans-serif;margin:1.5em}
h1{font-size:1.3em}.v{padding:.1em .5em;border-radius:4px;font-weight:700;color:#fff}
.PASSED{background:var(--ok)}.OUTPUT_DRIFT,.TOOLS_REORDERED{background:var(--warn)}.TOOLS_CHANGED,.REGRESSION{background:var(--bad)}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid var(--line);padding:.25em .5em;vertical-align:top;text-align:left}
table.calls{width:100%;table-layout:fixed}table.calls td{overflow-wrap:anywhere}
.num{text-align:right;font-variant-numeric:tabular-nums}.dim{color:var(--dim)}.bad{color:var(--bad)}
tr.changed>td{background:var(--chg)}tr.added>td.cur,tr.removed>td.base{background:var(--chg)}tr.added>td.cur{background:var(--ins)}tr.removed>td.base{background:var(--del)}tr.moved>td{background:var(--mov)}
.op{width:1.5em;text-align:center;font-family:monospace}.path{font-family:monospace;font-weight:600}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.2em 0;font:12px/1.4 ui-monospace,monospace}
del{background:var(--del);color:var(--delfg)}ins{background:var(--ins);color:var(--insfg);text-decoration:none}
.el{color:var(--dim);font-style:italic}details>summary{cursor:pointer}
"#;

fn run_name(t: &Trace) -> String {
    t.meta.name.clone().unwrap_or_else(|| t.meta.id.clone())
}

pub fn write(d: &Diff, a: &Trace, b: &Trace, out: &mut dyn Write, context: usize) -> std::io::Result<()> {
    let title = format!(
        "tracetui diff: {} — {} vs {}",
        d.verdict.as_str(),
        run_name(a),
        run_name(b)
    );
    writeln!(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")?;
    // Nothing but the inline style may load or run, whatever the page holds.
    writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
    )?;
    writeln!(out, "<meta name=\"color-scheme\" content=\"light dark\">")?;
    writeln!(out, "<title>{}</title><style>{CSS}</style></head><body>", esc(&title))?;
    writeln!(
        out,
        "<h1>tracetui diff <span class=\"v {}\">{}</span></h1>",
        d.verdict.as_str(),
        d.verdict.as_str()
    )?;
    writeln!(
        out,
        "<table><tr><th></th><th>run</th><th>format</th><th>source</th></tr>"
    )?;
    for (label, t) in [("baseline", a), ("current", b)] {
        writeln!(
            out,
            "<tr><th>{label}</th><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&run_name(t)),
            esc(t.meta.format),
            esc(&t.meta.source.display().to_string())
        )?;
    }
    writeln!(out, "</table>")?;
    writeln!(
        out,
        "<table><tr><th>metric</th><th>baseline</th><th>current</th><th>change</th></tr>"
    )?;
    for m in &d.metrics {
        let bad = m.name == "errors" && m.delta().is_some_and(|x| x > 0);
        writeln!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num{}\">{}</td></tr>",
            esc(&m.name.replace('_', " ")),
            esc(&m.value_text(m.baseline)),
            esc(&m.value_text(m.current)),
            if bad { " bad" } else { "" },
            esc(&m.delta_text().unwrap_or_else(|| "-".into()))
        )?;
    }
    writeln!(out, "</table>")?;
    if !d.regressions.is_empty() {
        writeln!(out, "<h2>Regressions</h2><ul>")?;
        for r in &d.regressions {
            writeln!(out, "<li class=\"bad\">✗ {}</li>", esc(r))?;
        }
        writeln!(out, "</ul>")?;
    }
    for n in &d.notes {
        writeln!(out, "<p class=\"dim\">note: {}</p>", esc(n))?;
    }
    if !d.run.is_empty() {
        writeln!(out, "<h2>Run record</h2><table class=\"calls\">")?;
        paths(&d.run, out, context)?;
        writeln!(out, "</table>")?;
    }
    let same = d.rows.iter().filter(|r| r.op == Op::Same).count();
    writeln!(
        out,
        "<h2>Calls</h2><p class=\"dim\">{} aligned rows: {} differ, {same} unchanged. \
         Baseline on the left, current run on the right.</p>",
        d.rows.len(),
        d.rows.len() - same
    )?;
    writeln!(
        out,
        "<table class=\"calls\"><colgroup><col style=\"width:2em\"><col><col></colgroup>\
         <tr><th></th><th>baseline</th><th>current</th></tr>"
    )?;
    for r in d.rows.iter().take(MAX_ROWS) {
        let side = |c: Option<crate::diff::CallRef>| match c {
            Some(c) => {
                let l = match r.kind {
                    crate::model::EventKind::LlmCall => format!("llm[{}]", c.kind_index),
                    _ => format!("tools[{}]", c.kind_index),
                };
                format!("<span class=\"path\">{}</span> {}", esc(&l), esc(&r.name))
            }
            None => String::new(),
        };
        writeln!(
            out,
            "<tr class=\"{}\"><td class=\"op\">{}</td><td class=\"base\">{}</td><td class=\"cur\">{}</td></tr>",
            r.op.as_str(),
            esc(&r.op.sign().to_string()),
            side(r.baseline),
            side(r.current)
        )?;
        if !r.paths.is_empty() {
            paths(&r.paths, out, context)?;
        }
    }
    if d.rows.len() > MAX_ROWS {
        writeln!(
            out,
            "<tr><td></td><td colspan=\"2\" class=\"dim\">… {} more rows left out of this page \
             (`tracetui diff --format json` lists every change)</td></tr>",
            d.rows.len() - MAX_ROWS
        )?;
    }
    writeln!(out, "</table>")?;
    writeln!(
        out,
        "<p class=\"dim\">Written by tracetui {}. Volatile fields (ids, clocks, durations, usage) are not compared unless --strict.</p>",
        env!("CARGO_PKG_VERSION")
    )?;
    writeln!(out, "</body></html>")
}

/// One row per path change: the baseline's value on the left, the current one on the right;
/// a string change as its word diff (deleted words on the left, inserted on the right).
fn paths(list: &[PathChange], out: &mut dyn Write, context: usize) -> std::io::Result<()> {
    for p in list.iter().take(MAX_PATHS) {
        let (left, right) = match strings(p.from.as_ref(), p.to.as_ref()) {
            Some((x, y)) if worth_showing(&segments(x, y)) => {
                let shown = Shown::new(&segments(x, y), context);
                (side(&shown, Mark::Delete), side(&shown, Mark::Insert))
            }
            _ => {
                let v = |x: &Option<serde_json::Value>, tag: &str| match x {
                    None => "<span class=\"el\">(absent)</span>".to_string(),
                    Some(serde_json::Value::String(s)) => format!("<{tag}>{}</{tag}>", esc(&cut(s))),
                    Some(v) => format!(
                        "<{tag}>{}</{tag}>",
                        esc(&cut(&serde_json::to_string_pretty(v).unwrap_or_default()))
                    ),
                };
                (v(&p.from, "del"), v(&p.to, "ins"))
            }
        };
        writeln!(
            out,
            "<tr><td></td><td colspan=\"2\"><details open><summary class=\"path\">{}</summary>\
             <table class=\"calls\"><tr><td><pre>{left}</pre></td><td><pre>{right}</pre></td></tr></table>\
             </details></td></tr>",
            esc(&p.path)
        )?;
    }
    if list.len() > MAX_PATHS {
        writeln!(
            out,
            "<tr><td></td><td colspan=\"2\" class=\"dim\">… and {} more path changes</td></tr>",
            list.len() - MAX_PATHS
        )?;
    }
    Ok(())
}

/// One side of a word diff: equal text, this side's changes marked, the other side's left out.
fn side(shown: &Shown, mine: Mark) -> String {
    let mut s = String::new();
    for (i, l) in shown.lines.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        for (m, t) in l {
            let t = esc(&cut(t));
            match m {
                Mark::Equal => s.push_str(&t),
                Mark::Elided => s.push_str(&format!("<span class=\"el\">{t}</span>")),
                m if *m == mine && mine == Mark::Delete => s.push_str(&format!("<del>{t}</del>")),
                m if *m == mine => s.push_str(&format!("<ins>{t}</ins>")),
                _ => {}
            }
        }
    }
    s
}

/// The verdict class names used by the CSS (a test checks every verdict has one).
pub fn verdict_classes() -> Vec<&'static str> {
    Verdict::ALL.iter().map(|v| v.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup_and_no_raw_controls() {
        let e = esc("<script>alert(1)</script>\"><img src=x onerror=alert(1)> \x1b[2J \u{202e}evil & 'q'");
        assert!(!e.contains('<') && !e.contains('>') && !e.contains('"') && !e.contains('\''));
        assert!(!e.contains('\x1b') && !e.contains('\u{202e}'));
        assert!(e.contains("&lt;script&gt;") && e.contains("\\x1b[2J") && e.contains("&amp;"));
        for v in verdict_classes() {
            assert!(CSS.contains(&format!(".{v}")), "{v}");
        }
    }
}
