//! `tracetui tail --no-tui`: one line per new event, text or JSON, each event exactly once;
//! a line when a call printed while it was pending ends (`tool Bash error · 3.1s · exit 1`);
//! and a line when the run ends.
//!
//! A run's status says `ok` whenever nothing in it is pending (a Claude Code session between
//! two tool calls), so an end is said only once the run has stayed ended, with no write to
//! its files, for [`END_QUIET`] (at once for a run that ended before it was read); and once
//! per end: again only after it was seen going on (running) and ended again.

use super::{Change, Tailer};
use crate::model::{NO_PARENT, RunStatus, Status, Trace, format_ts};
use crate::output::Output;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::time::Duration;

/// How long an ended run's files stay unwritten before its end is said.
pub const END_QUIET: Duration = Duration::from_secs(3);

#[derive(Default)]
struct Seen {
    count: usize,
    ids: HashSet<String>,
    /// The run's end was printed (or it had ended before tail started), and it was not seen
    /// running since.
    ended: bool,
    /// Calls printed while pending, whose outcome is still to be said: (index, id).
    pending: Vec<(u32, Box<str>)>,
}

pub struct Printer {
    fmt: Output,
    seen: HashMap<(usize, usize), Seen>,
    quiet: Duration,
}

impl Printer {
    pub fn new(fmt: Output) -> Printer {
        Printer::with_quiet(fmt, END_QUIET)
    }

    /// With another quiet time before an end is said (tests).
    pub fn with_quiet(fmt: Output, quiet: Duration) -> Printer {
        Printer {
            fmt,
            seen: HashMap::new(),
            quiet,
        }
    }

    /// Forget what was printed of a source released from memory.
    pub fn forget(&mut self, source: usize) {
        self.seen.retain(|(s, _), _| *s != source);
    }

    /// A trace was dropped from memory after it was printed: whatever of it comes later is new
    /// (printed), its end is not said again.
    pub fn dropped(&mut self, source: usize, trace: usize) {
        if let Some(s) = self.seen.get_mut(&(source, trace)) {
            s.count = 0;
            s.ids = HashSet::new();
        }
    }

    /// Treat everything already there as printed (tail without `--from-start`).
    pub fn skip_existing(&mut self, t: &Tailer) {
        for (si, ti, trace) in t.traces() {
            let s = self.seen.entry((si, ti)).or_default();
            s.count = trace.len();
            s.ended = matches!(trace.meta.status, RunStatus::Ok | RunStatus::Error);
            s.ids
                .extend((0..trace.len() as u32).map(|i| trace.str(trace.event(i).source_id).to_string()));
        }
    }

    /// Print the events that are new in the changed traces, the outcomes of calls that ended,
    /// and a line for each run that ended. Returns how many lines were printed.
    pub fn print(&mut self, t: &Tailer, changes: &[Change], out: &mut dyn Write) -> std::io::Result<usize> {
        // A file truncated or replaced was read again from the start, every trace of it
        // rebuilt: what was printed for it no longer says where the new events begin. Reset
        // once per source, before any of its traces prints (a poll reports them all).
        let mut reset: Vec<usize> = changes.iter().filter(|c| c.restarted).map(|c| c.source).collect();
        reset.dedup();
        self.seen.retain(|(s, _), _| !reset.contains(s));
        let mut n = 0;
        for c in changes {
            let Some(trace) = t.sources.get(c.source).and_then(|s| s.traces().get(c.trace)) else {
                continue;
            };
            let seen = self.seen.entry((c.source, c.trace)).or_default();
            // A whole document read again: events already printed (by id, or by place when
            // they have none) are not printed again.
            let from = if c.reloaded { 0 } else { seen.count.min(trace.len()) };
            // Children that came before their parent (spans end before their parents) name
            // the parent they wait for: printed as their parent all the same.
            let mut waiting: Option<HashMap<u32, &str>> = None;
            // Outcomes first: a call that ended in this change was printed before it.
            n += outcomes(self.fmt, trace, seen, out)?;
            for i in from..trace.len() {
                let e = trace.event(i as u32);
                let id = trace.str(e.source_id);
                if !id.is_empty() && !seen.ids.insert(id.to_string()) {
                    continue;
                }
                if c.reloaded && id.is_empty() && i < seen.count {
                    continue;
                }
                let e = trace.event(i as u32);
                let waits = if e.parent == NO_PARENT && self.fmt == Output::Json {
                    waiting
                        .get_or_insert_with(|| trace.waiting_parents().collect())
                        .get(&(i as u32))
                        .copied()
                } else {
                    None
                };
                line(self.fmt, trace, i as u32, waits, out)?;
                if e.kind.is_call() && e.status == Status::Pending {
                    seen.pending.push((i as u32, id.into()));
                }
                n += 1;
            }
            seen.count = if c.reloaded {
                seen.count.max(trace.len())
            } else {
                trace.len()
            };
        }
        n += self.ends(t, out)?;
        Ok(n)
    }

    /// Say the end of every run that ended and has stayed quiet.
    fn ends(&mut self, t: &Tailer, out: &mut dyn Write) -> std::io::Result<usize> {
        let mut n = 0;
        for (si, ti, trace) in t.traces() {
            let Some(seen) = self.seen.get_mut(&(si, ti)) else {
                continue;
            };
            let ended = matches!(trace.meta.status, RunStatus::Ok | RunStatus::Error);
            if !ended {
                // The run goes on (a call pending again): its next end is said.
                seen.ended = false;
                continue;
            }
            if seen.ended || !quiet_for(trace, self.quiet) {
                continue;
            }
            end_line(self.fmt, trace, out)?;
            seen.ended = true;
            n += 1;
        }
        Ok(n)
    }
}

/// Whether nothing wrote the trace's files for `d`.
fn quiet_for(t: &Trace, d: Duration) -> bool {
    if d.is_zero() {
        return true;
    }
    let now = std::time::SystemTime::now();
    t.files.iter().all(|f| {
        std::fs::metadata(f)
            .and_then(|m| m.modified())
            .map_or(true, |m| now.duration_since(m).is_ok_and(|q| q >= d))
    })
}

/// The outcome lines of the calls printed pending that are pending no more.
fn outcomes(fmt: Output, t: &Trace, seen: &mut Seen, out: &mut dyn Write) -> std::io::Result<usize> {
    let mut n = 0;
    let mut keep = Vec::new();
    for (i, id) in std::mem::take(&mut seen.pending) {
        // By id where the call has one (a document read again may have moved it).
        let at = if id.is_empty() {
            Some(i).filter(|&i| (i as usize) < t.len())
        } else if (i as usize) < t.len() && t.str(t.event(i).source_id) == &*id {
            Some(i)
        } else {
            (0..t.len() as u32).find(|&j| t.str(t.event(j).source_id) == &*id)
        };
        match at {
            Some(i) if t.event(i).status != Status::Pending => {
                outcome_line(fmt, t, i, out)?;
                n += 1;
            }
            Some(i) => keep.push((i, id)),
            None => {}
        }
    }
    seen.pending = keep;
    Ok(n)
}

/// How a call printed pending ended: its status, time and error.
fn outcome_line(fmt: Output, t: &Trace, i: u32, out: &mut dyn Write) -> std::io::Result<()> {
    let e = t.event(i);
    let id = t.str(e.source_id);
    let error = (e.status == Status::Error)
        .then(|| crate::formats::payload(t, e).error.map(|x| x.message))
        .flatten();
    match fmt {
        Output::Json => {
            let v = json!({
                "run": t.meta.id,
                "run_name": t.meta.name,
                "format": t.meta.format,
                "id": (!id.is_empty()).then_some(id),
                "index": i,
                "kind": "call_end",
                "call": e.kind.as_str(),
                "name": t.name(i),
                "status": e.status,
                "duration_ms": e.duration.map(|d| d as f64 / 1e6),
                "error": error,
            });
            crate::json::write_line(out, &v)
        }
        Output::Text => {
            let end = e.start.get().zip(e.duration.get()).map(|(s, d)| s.saturating_add(d));
            let ts = end.or(e.start.get()).map(format_ts).unwrap_or_else(|| "-".into());
            let run = t.meta.name.as_deref().unwrap_or(&t.meta.id);
            let mut line = format!("{ts}  {run}  {} {} {}", e.kind.label(), t.name(i), e.status.as_str());
            if let Some(d) = e.duration.get() {
                line.push_str(&format!(" · {}", crate::model::format_duration(d)));
            }
            if let Some(m) = error.as_deref().and_then(|m| m.lines().find(|l| !l.trim().is_empty())) {
                line.push_str(&format!(" · {}", crate::words::cut(m.trim(), 120)));
            }
            writeln!(out, "{}", crate::sanitize::line(&line))
        }
    }
}

/// The line that says a run ended: its status and counts.
fn end_line(fmt: Output, t: &Trace, out: &mut dyn Write) -> std::io::Result<()> {
    let c = t.counts();
    let (_, end) = t.time_span();
    match fmt {
        Output::Json => {
            let v = json!({
                "run": t.meta.id,
                "run_name": t.meta.name,
                "format": t.meta.format,
                "kind": "run_end",
                "status": t.meta.status,
                "ts": end.map(crate::json::ts),
                "events": c.events,
                "tool_calls": c.tool_calls,
                "llm_calls": c.llm_calls,
                "errors": c.errors,
                "tokens": c.tokens,
            });
            crate::json::write_line(out, &v)
        }
        Output::Text => {
            let ts = end.map(format_ts).unwrap_or_else(|| "-".into());
            let run = t.meta.name.as_deref().unwrap_or(&t.meta.id);
            let line = format!(
                "{ts}  {run}  run ended [{}] · {}, {}, {}, {}",
                t.meta.status.as_str(),
                crate::words::count(c.events, "event"),
                crate::words::count(c.tool_calls, "tool call"),
                crate::words::count(c.llm_calls, "LLM call"),
                crate::words::count(c.errors, "error"),
            );
            writeln!(out, "{}", crate::sanitize::line(&line))
        }
    }
}

/// One event as `tail` prints it (also a store run's: [`crate::source::clickhouse::tail`]).
/// `waits`: the id of the parent an event waits for (it arrived first).
pub fn line(fmt: Output, t: &Trace, i: u32, waits: Option<&str>, out: &mut dyn Write) -> std::io::Result<()> {
    let e = t.event(i);
    let id = t.str(e.source_id);
    match fmt {
        Output::Json => {
            let parent = (e.parent != NO_PARENT)
                .then(|| t.str(t.event(e.parent).source_id))
                .or(waits)
                .filter(|s| !s.is_empty());
            let v = json!({
                "run": t.meta.id,
                "run_name": t.meta.name,
                "format": t.meta.format,
                "id": (!id.is_empty()).then_some(id),
                "index": i,
                "parent": parent,
                "kind": e.kind.as_str(),
                "name": t.name(i),
                "status": e.status,
                "ts": e.start.map(crate::json::ts),
                "line": (e.origin.line > 0).then_some(e.origin.line),
            });
            crate::json::write_line(out, &v)
        }
        Output::Text => {
            let ts = e.start.map(format_ts).unwrap_or_else(|| "-".into());
            let run = t.meta.name.as_deref().unwrap_or(&t.meta.id);
            let mut line = format!("{ts}  {run}  {} {} [{}]", e.kind.label(), t.name(i), e.status.as_str());
            // What the call did (its record is on disk: read back by its byte range).
            if let Some(g) = crate::formats::gist::of(t, e) {
                line.push_str("  ");
                line.push_str(&crate::words::cut(&g, crate::report::show::GIST_CHARS));
            }
            writeln!(out, "{}", crate::sanitize::line(&line))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_call_s_line_says_what_it_did() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/session.jsonl");
        let t = crate::formats::load(&path, None).unwrap().traces.remove(0);
        let mut out = Vec::new();
        for i in 0..t.len() as u32 {
            line(Output::Text, &t, i, None, &mut out).unwrap();
        }
        let out = String::from_utf8(out).unwrap();
        let tools: Vec<&str> = out.lines().filter(|l| l.contains("  tool ")).collect();
        assert_eq!(tools.len(), 3, "{out}");
        assert!(tools[0].ends_with("tool Read [ok]  /home/dev/proj/notes.txt"), "{out}");
        assert!(tools[1].ends_with("tool Bash [error]  ls missing/"), "{out}");
        assert!(tools[2].ends_with("tool Bash [ok]  wc -w notes.txt"), "{out}");
    }
}
