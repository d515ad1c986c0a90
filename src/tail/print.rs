//! `tracetui tail --no-tui`: one line per new event, text or JSON, each event exactly once.

use super::{Change, Tailer};
use crate::cli::Output;
use crate::model::{NO_PARENT, RunStatus, Trace, format_ts};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::io::Write;

#[derive(Default)]
struct Seen {
    count: usize,
    ids: HashSet<String>,
    /// The run's end was printed (or it had ended before tail started).
    ended: bool,
}

pub struct Printer {
    fmt: Output,
    seen: HashMap<(usize, usize), Seen>,
}

impl Printer {
    pub fn new(fmt: Output) -> Printer {
        Printer {
            fmt,
            seen: HashMap::new(),
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

    /// Print the events that are new in the changed traces, and a line for each run that
    /// ended. Returns how many lines were printed.
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
                n += 1;
            }
            seen.count = if c.reloaded {
                seen.count.max(trace.len())
            } else {
                trace.len()
            };
            let ended = matches!(trace.meta.status, RunStatus::Ok | RunStatus::Error);
            if ended && !seen.ended {
                end_line(self.fmt, trace, out)?;
                n += 1;
            }
            seen.ended = ended;
        }
        Ok(n)
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
                crate::report::count(c.events, "event"),
                crate::report::count(c.tool_calls, "tool call"),
                crate::report::count(c.llm_calls, "LLM call"),
                crate::report::count(c.errors, "error"),
            );
            writeln!(out, "{}", crate::sanitize::line(&line))
        }
    }
}

/// `waits`: the id of the parent an event waits for (it arrived first).
fn line(fmt: Output, t: &Trace, i: u32, waits: Option<&str>, out: &mut dyn Write) -> std::io::Result<()> {
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
            let mut line = format!(
                "{ts}  {run}  {} {} [{}]",
                crate::report::show::kind_label(e),
                t.name(i),
                e.status.as_str()
            );
            // What the call did (its record is on disk: read back by its byte range).
            if let Some(g) = crate::formats::gist::of(t, e) {
                line.push_str("  ");
                line.push_str(&crate::report::cut(&g, crate::report::show::GIST_CHARS));
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
