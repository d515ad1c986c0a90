//! `tracetui ls`: one row per run, from cheap metadata.

use crate::cli::Output;
use crate::formats::Summary;
use crate::report::{dur_or_dash, num_or_dash, ts_or_dash};
use crate::source::Discovery;
use std::io::Write;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Newest first; runs without a start time last, by name.
pub fn sort(rows: &mut [Summary]) {
    rows.sort_by(|a, b| {
        b.start
            .cmp(&a.start)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.id.cmp(&b.id))
    });
}

/// Returns the number of sources that could not be listed. `places` are the standard
/// places (a run in one of them takes its project from the place's layout).
pub fn run(
    d: &Discovery,
    places: &[crate::source::places::Resolved],
    out: &mut dyn Write,
    fmt: Output,
    load: bool,
) -> std::io::Result<usize> {
    let mut rows = Vec::new();
    let mut failed = 0;
    // `--load`: every run loaded, so that its counts, tokens and cost are the loaded ones.
    let summaries = if load {
        crate::source::load_each(&d.runs, |r, res| {
            (
                r.clone(),
                res.map(|l| l.traces.iter().map(Summary::of).collect::<Vec<_>>()),
            )
        })
    } else {
        crate::source::summarize_all(&d.runs)
    };
    for (r, res) in summaries {
        match res {
            Ok(s) => {
                let project = r.project(places);
                rows.extend(s.into_iter().map(|s| (s, project.clone(), r.root.clone())));
            }
            Err(e) => {
                failed += 1;
                eprintln!("{}", crate::sanitize::line(&format!("tracetui: {e}")));
            }
        }
    }
    for e in &d.errors {
        failed += 1;
        eprintln!("{}", crate::sanitize::line(&format!("tracetui: {e}")));
    }
    if d.skipped.any() {
        eprintln!(
            "{}",
            crate::sanitize::line(&format!("tracetui: {}", d.skipped.message()))
        );
    }
    rows.sort_by(|(a, ..), (b, ..)| {
        b.start
            .cmp(&a.start)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.id.cmp(&b.id))
    });
    match fmt {
        Output::Json => {
            for (r, project, root) in &rows {
                let mut v = serde_json::to_value(r).unwrap_or_default();
                if r.path.to_str().is_none() {
                    v["path_lossy"] = serde_json::Value::Bool(true);
                }
                v["project"] = serde_json::Value::String(project.clone());
                // Counts from run.json/metadata, not from the events (which may say otherwise).
                v["provisional"] = serde_json::Value::Bool(r.provisional());
                if let Some(c) = &r.cost {
                    v["usage"] = super::stats::total_json(c);
                }
                crate::json::put_path(&mut v, "source", root);
                crate::json::write_line(out, &v)?;
            }
            if d.skipped.any() {
                crate::json::write_line(out, &serde_json::json!({"skipped": d.skipped.json()}))?;
            }
        }
        Output::Text => {
            writeln!(
                out,
                "{:<8} {:<28} {:<12} {:<20} {:<23} {:>9} {:>6} {:>5} {:>5} {:>8} {:>9}  ID",
                "STATUS", "NAME", "AGENT", "PROJECT", "START", "DURATION", "TOOLS", "LLM", "ERR", "TOKENS", "COST"
            )?;
            for (r, project, _) in &rows {
                let name = r.name.clone().unwrap_or_else(|| r.id.clone());
                let project = if project.is_empty() { "." } else { project };
                // Metadata counts of a run not loaded are marked `~` (the loaded ones may differ).
                let n = |v: Option<usize>| provisional(num_or_dash(v), r.provisional());
                // Names and projects are cut and padded by display width (a CJK letter is two
                // cells), so that the columns after them line up.
                let mut line = format!(
                    "{:<8} {} {:<12} {} {:<23} {:>9} {:>6} {:>5} {:>5} {:>8} {:>9}  {}",
                    r.status.as_str(),
                    pad(&cut_width(&crate::sanitize::line(&name), 28), 28),
                    r.format,
                    // The end of a long project says most (`…-src-tracetui`).
                    pad(&cut_front(&crate::sanitize::line(project), 20), 20),
                    ts_or_dash(r.start),
                    dur_or_dash(r.duration),
                    n(r.tool_calls),
                    n(r.llm_calls),
                    n(r.errors),
                    provisional(num_or_dash(r.tokens.filter(|t| *t > 0)), r.provisional()),
                    r.cost
                        .as_ref()
                        .map(super::stats::cost_cell)
                        .unwrap_or_else(|| "-".into()),
                    r.id
                );
                // A badge (what is wrong with the run as a whole) ends its row.
                for b in &r.badges {
                    line.push_str(&format!("  ⚠ {b}"));
                }
                writeln!(out, "{}", crate::sanitize::line(&line))?;
            }
        }
    }
    Ok(failed)
}

/// A count as `ls` writes it: `~3` when it is a provisional (metadata) value.
pub fn provisional(n: String, provisional: bool) -> String {
    if provisional && n != "-" { format!("~{n}") } else { n }
}

/// Cut to `max` display cells from the front, with an ellipsis.
pub fn cut_front(s: &str, max: usize) -> String {
    if s.width() <= max {
        return s.to_string();
    }
    let mut tail = Vec::new();
    let mut w = 1; // the ellipsis
    for c in s.chars().rev() {
        let cw = c.width().unwrap_or(0);
        if w + cw > max {
            break;
        }
        tail.push(c);
        w += cw;
    }
    std::iter::once('…').chain(tail.into_iter().rev()).collect()
}

/// Cut to `max` display cells, with an ellipsis.
fn cut_width(s: &str, max: usize) -> String {
    if s.width() <= max {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 1; // the ellipsis
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw > max {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

/// Spaces after `s` up to `w` display cells.
fn pad(s: &str, w: usize) -> String {
    format!("{s}{}", " ".repeat(w.saturating_sub(s.width())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_cut_and_padded_by_display_width() {
        // Two cells a letter: 4 letters fill 8 cells, the 5th would make 10.
        assert_eq!(pad(&cut_width("ログ解析ツール", 10), 10), "ログ解析… ");
        assert_eq!(pad(&cut_width("ログ", 9), 9).width(), 9);
        assert_eq!(cut_front("ログ解析ツール", 7), "…ツール");
        assert_eq!(cut_front("-src-tracetui", 8), "…racetui");
        assert_eq!(cut_front("abc", 8), "abc");
    }
}
