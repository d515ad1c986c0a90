//! `tracetui grep`: every event under the paths whose name, arguments, result, prompt,
//! response or error contains a pattern, one line (or JSON object) per match.

use crate::model::Trace;
use crate::output::Output;
use crate::sanitize;
use crate::search::grep::{Hit, Options, SourceResult, breadcrumb, search_source_caught};
use crate::source::{Discovery, RunRef};
use serde_json::json;
use std::io::Write;

/// What a search came to: grep's exit codes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub matches: usize,
    /// Sources that could not be read.
    pub failed: usize,
}

impl Outcome {
    /// 2 on trouble, else 0 when something matched and 1 when nothing did (grep's).
    pub fn exit_code(&self) -> u8 {
        if self.failed > 0 {
            2
        } else if self.matches > 0 {
            0
        } else {
            1
        }
    }
}

/// Sources searched at once, then printed in discovery order.
const BATCH: usize = 64;

/// Search every source found and print the matches. Diagnostics go to `err`.
pub fn run(
    d: &Discovery,
    o: &Options,
    out: &mut dyn Write,
    err: &mut dyn Write,
    fmt: Output,
    color: bool,
) -> std::io::Result<Outcome> {
    let mut outcome = Outcome::default();
    for e in &d.errors {
        writeln!(err, "{}", sanitize::line(&format!("tracetui: {e}")))?;
        outcome.failed += 1;
    }
    if d.skipped.any() {
        writeln!(err, "{}", sanitize::line(&format!("tracetui: {}", d.skipped.message())))?;
    }
    let mut io = Ok(());
    in_order(&d.runs, o, |r, res| {
        let step = match res {
            Ok(s) => {
                for f in &s.changed {
                    outcome.failed += 1;
                    let m = format!(
                        "tracetui: {}: replaced, deleted or truncated while it was searched; its matches may be incomplete",
                        f.display()
                    );
                    if writeln!(err, "{}", sanitize::line(&m)).is_err() {
                        break;
                    }
                }
                print_source(r, &s, out, fmt, color).map(|n| outcome.matches += n)
            }
            Err(e) => {
                outcome.failed += 1;
                writeln!(err, "{}", sanitize::line(&format!("tracetui: {e}")))
            }
        };
        io = step.and_then(|_| out.flush());
        io.is_ok()
    });
    io?;
    Ok(outcome)
}

/// Search the sources on every core and hand each result to `each` in discovery order, as
/// soon as it and all before it are done (`each` returns false to stop). Workers take the
/// next source as they finish one, so that one slow source holds up no other core (batches
/// waited on their slowest); they stay at most BATCH sources ahead of the printing, which
/// bounds the results held.
fn in_order(
    runs: &[RunRef],
    o: &Options,
    mut each: impl FnMut(&RunRef, Result<SourceResult, crate::formats::LoadError>) -> bool,
) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let printed = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..rayon::current_num_threads().min(runs.len()) {
            let tx = tx.clone();
            let (next, printed, stop) = (&next, &printed, &stop);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= runs.len() {
                        return;
                    }
                    while i >= printed.load(Ordering::Acquire) + BATCH && !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let res = search_source_caught(&runs[i], o);
                    if tx.send((i, res)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        let mut pending: std::collections::HashMap<usize, Result<SourceResult, crate::formats::LoadError>> =
            std::collections::HashMap::new();
        let mut at = 0;
        for (i, res) in rx {
            pending.insert(i, res);
            while let Some(res) = pending.remove(&at) {
                if !each(&runs[at], res) {
                    stop.store(true, Ordering::Relaxed);
                    return;
                }
                at += 1;
                printed.store(at, Ordering::Release);
            }
        }
    });
}

fn print_source(r: &RunRef, s: &SourceResult, out: &mut dyn Write, fmt: Output, color: bool) -> std::io::Result<usize> {
    let several = s.traces.len() > 1;
    let mut n = 0;
    for th in &s.traces {
        for h in &th.hits {
            n += 1;
            match fmt {
                Output::Json => crate::json::write_line(out, &hit_json(r, &th.trace, h))?,
                Output::Text => writeln!(out, "{}", hit_line(r, &th.trace, h, several, color))?,
            }
        }
    }
    Ok(n)
}

/// Where the event came from: the file and line of its record.
fn source_of<'a>(t: &'a Trace, h: &Hit) -> (Option<&'a std::path::Path>, u32) {
    let e = t.event(h.event);
    (t.files.get(e.origin.file as usize).map(|p| p.as_path()), e.origin.line)
}

/// The event's id: the source's own, else its index in the trace.
fn event_id(t: &Trace, h: &Hit) -> String {
    let id = t.str(t.event(h.event).source_id);
    if id.is_empty() {
        format!("#{}", h.index)
    } else {
        id.to_string()
    }
}

pub fn hit_json(r: &RunRef, t: &Trace, h: &Hit) -> serde_json::Value {
    let e = t.event(h.event);
    let (file, line) = source_of(t, h);
    let mut v = json!({
        "format": t.meta.format,
        "trace": t.meta.id,
        "event_id": event_id(t, h),
        "event_index": h.index,
        "kind": e.kind.as_str(),
        "name": t.str(e.name),
        "path": breadcrumb(t, h.event),
        "line": if line > 0 { Some(line) } else { None },
        "field": h.field,
        "snippet": h.snippet.text,
        "match": [h.snippet.text[..h.snippet.start].chars().count(), h.snippet.text[..h.snippet.end].chars().count()],
    });
    crate::json::put_path(&mut v, "run", &r.path);
    if let Some(f) = file {
        crate::json::put_path(&mut v, "file", f);
    }
    v
}

/// `run[#trace]:line: kind name (path) field: …snippet…`, the match in colour on a terminal
/// and in `[` `]` otherwise.
pub fn hit_line(r: &RunRef, t: &Trace, h: &Hit, several: bool, color: bool) -> String {
    let e = t.event(h.event);
    let (file, line) = source_of(t, h);
    // The record's file where it has lines, so that `PATH:LINE` opens in an editor.
    let shown = match file {
        Some(f) if line > 0 => f,
        _ => r.path.as_path(),
    };
    let mut s = sanitize::line(&shown.display().to_string()).into_owned();
    if several {
        s.push('#');
        s.push_str(&sanitize::line(&t.meta.id));
    }
    if line > 0 {
        s.push_str(&format!(":{line}"));
    }
    let crumbs: Vec<String> = breadcrumb(t, h.event)
        .iter()
        .map(|c| sanitize::line(&crate::report::cut(c, 40)).into_owned())
        .collect();
    s.push_str(&format!(
        ": {} {}",
        e.kind.as_str(),
        sanitize::line(&crate::report::cut(t.str(e.name), 60))
    ));
    if crumbs.len() > 1 {
        s.push_str(&format!(" ({})", crumbs.join(" › ")));
    }
    s.push_str(&format!(" {}: ", sanitize::line(&h.field)));
    let sn = &h.snippet;
    let (open, close) = if color { ("\x1b[1;31m", "\x1b[0m") } else { ("[", "]") };
    if sn.cut_before {
        s.push('…');
    }
    s.push_str(&sanitize::line(&sn.text[..sn.start]));
    s.push_str(open);
    s.push_str(&sanitize::line(&sn.text[sn.start..sn.end]));
    s.push_str(close);
    s.push_str(&sanitize::line(&sn.text[sn.end..]));
    if sn.cut_after {
        s.push('…');
    }
    s
}
