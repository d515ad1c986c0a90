//! `tracetui ls`: one row per run, with its loaded numbers (`--fast`: from cheap metadata).

use crate::formats::LoadError;
use crate::formats::Summary;
use crate::output::Output;
use crate::report::{dur_or_dash, num_or_dash, ts_or_dash};
use crate::source::{Discovery, RunRef};
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

/// How `ls` gets its numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Numbers {
    /// Every run's loaded counts, tokens and cost: the summary cache's exact entries, and the
    /// runs not in it indexed ([`crate::source::index`]) before anything is printed.
    Exact,
    /// `--fast`: the cheap summaries (a finished run's metadata, a large session's ends),
    /// marked `~` where they are not the loaded values.
    Fast,
}

/// Returns the number of sources that could not be listed. `places` are the standard
/// places (a run in one of them takes its project from the place's layout).
/// `since`: only runs that started then or later (Unix nanoseconds).
pub fn run(
    d: &Discovery,
    places: &[crate::source::places::Resolved],
    out: &mut dyn Write,
    fmt: Output,
    numbers: Numbers,
    since: Option<i64>,
) -> std::io::Result<usize> {
    let mut rows = Vec::new();
    let mut failed = 0;
    let mut summaries = crate::source::summarize_all(&d.runs);
    if numbers == Numbers::Exact {
        index(&mut summaries);
    }
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
    if let Some(s) = since {
        rows.retain(|(r, ..)| r.start.is_some_and(|t| t >= s));
    }
    rows.sort_by(|(a, ..), (b, ..)| {
        b.start
            .cmp(&a.start)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.id.cmp(&b.id))
    });
    print(&rows, d.skipped.any().then_some(&d.skipped), out, fmt)?;
    Ok(failed)
}

/// The rows of `ls` (each with its project and source), in the order given.
pub fn print(
    rows: &[(Summary, String, std::sync::Arc<std::path::Path>)],
    skipped: Option<&crate::source::Skipped>,
    out: &mut dyn Write,
    fmt: Output,
) -> std::io::Result<()> {
    match fmt {
        Output::Json => {
            for (r, project, root) in rows {
                let mut v = serde_json::to_value(r).unwrap_or_default();
                if r.path.to_str().is_none() {
                    v["path_lossy"] = serde_json::Value::Bool(true);
                }
                v["project"] = serde_json::Value::String(project.clone());
                // The one rule of running / stale / ended (a running run nothing has written
                // for long is stale), as the explorer says it.
                v["status"] = crate::source::liveness::now(r.status, &r.path).as_str().into();
                // Counts from run.json/metadata, not from the events (which may say otherwise).
                v["provisional"] = serde_json::Value::Bool(r.provisional());
                if let Some(c) = &r.cost {
                    v["usage"] = super::stats::total_json(c);
                }
                crate::json::put_path(&mut v, "source", root);
                crate::json::write_line(out, &v)?;
            }
            if let Some(sk) = skipped {
                crate::json::write_line(out, &serde_json::json!({"skipped": sk.json()}))?;
            }
        }
        Output::Text => {
            writeln!(
                out,
                "{:<8} {:<28} {:<12} {:<20} {:<23} {:>9} {:>6} {:>5} {:>5} {:>8} {:>9}  ID",
                "STATUS", "NAME", "AGENT", "PROJECT", "START", "DURATION", "TOOLS", "LLM", "ERR", "TOKENS", "COST"
            )?;
            for (r, project, _) in rows {
                let name = r.name.clone().unwrap_or_else(|| r.id.clone());
                let project = if project.is_empty() { "." } else { project };
                // Metadata counts of a run not loaded are marked `~` (the loaded ones may differ).
                let n = |v: Option<usize>| provisional(num_or_dash(v), r.provisional());
                // Names and projects are cut and padded by display width (a CJK letter is two
                // cells), so that the columns after them line up.
                let mut line = format!(
                    "{:<8} {} {:<12} {} {:<23} {:>9} {:>6} {:>5} {:>5} {:>8} {:>9}  {}",
                    crate::source::liveness::now(r.status, &r.path).as_str(),
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
    Ok(())
}

/// Replace the provisional summaries among `summaries` by exact ones: each such source is
/// indexed (newest first, on every core; its summaries written to the summary cache). While
/// it runs, its progress is written to stderr when stderr is a terminal (and erased after).
fn index(summaries: &mut [(RunRef, Result<Vec<Summary>, LoadError>)]) {
    use crate::source::index::{Indexer, Progress, needs_index};
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    let todo: Vec<(RunRef, Option<i64>)> = summaries
        .iter()
        .filter_map(|(r, res)| {
            let list = res.as_ref().ok().filter(|l| needs_index(l))?;
            Some((r.clone(), list.iter().filter_map(|s| s.start).max()))
        })
        .collect();
    if todo.is_empty() {
        return;
    }
    type Got = HashMap<std::path::PathBuf, Result<Vec<Summary>, LoadError>>;
    let got: Arc<Mutex<Got>> = Arc::default();
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let g = got.clone();
    let ix = Indexer::start(
        0,
        std::time::Duration::from_millis(200),
        Box::new(move |batch, p: Progress| {
            let mut g = g.lock().unwrap_or_else(|e| e.into_inner());
            for x in batch {
                g.insert(x.run.path, x.result);
            }
            if tty {
                // `\r` and erase to the end of the line: one line, rewritten.
                let mut e = std::io::stderr().lock();
                let _ = write!(e, "\r{}\x1b[K", p.text());
                let _ = e.flush();
            }
            true
        }),
    );
    ix.push(todo);
    ix.finish();
    if tty {
        let _ = write!(std::io::stderr(), "\r\x1b[K");
    }
    let mut got = std::mem::take(&mut *got.lock().unwrap_or_else(|e| e.into_inner()));
    for (r, res) in summaries.iter_mut() {
        if let Some(exact) = got.remove(&r.path) {
            *res = exact;
        }
    }
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
