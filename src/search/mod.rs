//! The filter language (DESIGN §7) and fuzzy matching, independent of the terminal.
//!
//! A query is a list of terms, all of which must hold:
//! - free text: fuzzy on the event name, or a case-insensitive substring of its payload;
//! - `tool:NAME`, `kind:llm|tool|message|state|error|loop|step|run|other`,
//!   `status:ok|error|pending|unknown`, `model:X`, `name:X`;
//! - `!term` inverts a term; `"two words"` is one term.
//!
//! Names decide most terms at once ([`Query::eval_fast`]); free text that the name does not
//! match needs the payload, which may live on disk: [`search`] does that pass in batches so a
//! caller can run it on a background thread and show results as they stream in.

pub mod fuzzy;
pub mod grep;

use crate::model::{EventKind, Payload, PayloadRef, Status, StrRef, Trace};
use fuzzy::{Fuzzy, contains_ci};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Field {
    /// Free text (kept as typed, and lowercased for payload search).
    Text {
        text: String,
        lower: String,
    },
    /// A tool call whose name contains the value (empty: any tool call).
    Tool(String),
    Kind(KindSel),
    Status(Status),
    Model(String),
    Name(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KindSel {
    Run,
    Llm,
    Tool,
    Message,
    State,
    Error,
    Loop,
    Step,
    Other,
}

impl KindSel {
    const NAMES: &'static str = "llm, tool, message, state, error, loop, step, run, other";

    fn parse(s: &str) -> Option<KindSel> {
        Some(match s.to_ascii_lowercase().as_str() {
            "run" => KindSel::Run,
            "llm" | "llm_call" | "model" => KindSel::Llm,
            "tool" | "tool_call" => KindSel::Tool,
            "message" | "msg" => KindSel::Message,
            "state" => KindSel::State,
            "error" | "err" => KindSel::Error,
            "loop" | "loop_warning" => KindSel::Loop,
            "step" => KindSel::Step,
            "other" => KindSel::Other,
            _ => return None,
        })
    }

    fn matches(self, k: EventKind) -> bool {
        matches!(
            (self, k),
            (KindSel::Run, EventKind::Run)
                | (KindSel::Llm, EventKind::LlmCall)
                | (KindSel::Tool, EventKind::ToolCall)
                | (KindSel::Message, EventKind::Message(_))
                | (KindSel::State, EventKind::State)
                | (KindSel::Error, EventKind::Error)
                | (KindSel::Loop, EventKind::LoopWarning)
                | (KindSel::Step, EventKind::Step)
                | (KindSel::Other, EventKind::Other)
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    pub negate: bool,
    pub field: Field,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    pub terms: Vec<Term>,
}

/// What the cheap fields say about an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Yes,
    No,
    /// Only the payload can decide (free text the name did not match).
    NeedsPayload,
}

/// Split on whitespace, keeping `"quoted words"` together (quotes removed).
fn tokens(input: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in input.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Parse a filter. An unknown `kind:` or `status:` value is an error that says what is allowed;
/// an unknown `word:` prefix is plain text (URLs and paths contain colons).
pub fn parse(input: &str) -> Result<Query, String> {
    let mut terms = Vec::new();
    for tok in tokens(input) {
        let (negate, body) = match tok.strip_prefix('!') {
            Some(rest) => (true, rest.to_string()),
            None => (false, tok),
        };
        if body.is_empty() {
            continue;
        }
        let field = match body.split_once(':') {
            Some((k, v)) => match k.to_ascii_lowercase().as_str() {
                "tool" => Field::Tool(v.to_lowercase()),
                "model" => Field::Model(v.to_lowercase()),
                "name" => Field::Name(v.to_lowercase()),
                "kind" | "type" => {
                    if v.is_empty() {
                        continue; // still being typed
                    }
                    Field::Kind(
                        KindSel::parse(v).ok_or_else(|| format!("unknown kind {v:?}; one of {}", KindSel::NAMES))?,
                    )
                }
                "status" => Field::Status(match v.to_ascii_lowercase().as_str() {
                    "" => continue,
                    "ok" | "success" => Status::Ok,
                    "error" | "err" | "failed" => Status::Error,
                    "pending" | "open" => Status::Pending,
                    "unknown" => Status::Unknown,
                    _ => return Err(format!("unknown status {v:?}; one of ok, error, pending, unknown")),
                }),
                _ => text(&body),
            },
            None => text(&body),
        };
        terms.push(Term { negate, field });
    }
    Ok(Query { terms })
}

fn text(s: &str) -> Field {
    Field::Text {
        text: s.to_string(),
        lower: s.to_lowercase(),
    }
}

/// Remembers fuzzy results per interned name: a trace of a million events has few names.
#[derive(Debug, Default)]
pub struct NameCache {
    fuzzy: Fuzzy,
    seen: HashMap<(usize, StrRef), bool>,
    /// Substring tests of names and models, direct-mapped by (term, string): a million
    /// events share a few dozen names, and a slot costs less than a hash-map lookup.
    memo: Vec<(usize, StrRef, bool)>,
}

const MEMO_SLOTS: usize = 1024;

impl NameCache {
    fn memo(&mut self, term: usize, r: StrRef, test: impl FnOnce() -> bool) -> bool {
        if self.memo.is_empty() {
            self.memo = vec![(usize::MAX, StrRef::EMPTY, false); MEMO_SLOTS];
        }
        let slot = (r.id() as usize ^ term.rotate_left(13)) % MEMO_SLOTS;
        let e = self.memo[slot];
        if e.0 == term && e.1 == r {
            return e.2;
        }
        let b = test();
        self.memo[slot] = (term, r, b);
        b
    }

    fn fuzzy_name(&mut self, term: usize, t: &Trace, name: StrRef, pattern: &str) -> bool {
        if let Some(&b) = self.seen.get(&(term, name)) {
            return b;
        }
        let b = self.fuzzy.score(t.str(name), pattern).is_some();
        if self.seen.len() < 1_000_000 {
            self.seen.insert((term, name), b);
        }
        b
    }
}

impl Query {
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Free-text terms that are not inverted: what to highlight.
    pub fn highlights(&self) -> impl Iterator<Item = (&str, &str)> {
        self.terms.iter().filter(|t| !t.negate).filter_map(|t| match &t.field {
            Field::Text { text, lower } => Some((text.as_str(), lower.as_str())),
            _ => None,
        })
    }

    /// Decide from the event's kind, name, status and model alone where possible.
    pub fn eval_fast(&self, t: &Trace, i: u32, names: &mut NameCache) -> Verdict {
        let mut open = false;
        for (ti, term) in self.terms.iter().enumerate() {
            match field_fast(ti, &term.field, t, i, names).map(|b| b != term.negate) {
                Some(false) => return Verdict::No,
                Some(true) => {}
                None => open = true,
            }
        }
        if open { Verdict::NeedsPayload } else { Verdict::Yes }
    }

    /// Decide with the payload too.
    pub fn eval_full(&self, t: &Trace, i: u32, names: &mut NameCache, payload: &Payload) -> bool {
        self.terms.iter().enumerate().all(|(ti, term)| {
            let b = match field_fast(ti, &term.field, t, i, names) {
                Some(b) => b,
                None => match &term.field {
                    Field::Text { lower, .. } => payload_contains(payload, lower),
                    _ => false,
                },
            };
            b != term.negate
        })
    }
}

/// `Some(bool)` when the cheap fields decide the (un-negated) term.
fn field_fast(ti: usize, f: &Field, t: &Trace, i: u32, names: &mut NameCache) -> Option<bool> {
    let e = t.event(i);
    Some(match f {
        Field::Tool(n) => e.kind == EventKind::ToolCall && names.memo(ti, e.name, || contains_ci(t.str(e.name), n)),
        Field::Kind(k) => k.matches(e.kind),
        Field::Status(Status::Error) => e.is_error(),
        Field::Status(s) => e.status == *s,
        Field::Model(m) => !e.model.is_empty() && names.memo(ti, e.model, || contains_ci(t.str(e.model), m)),
        Field::Name(n) => names.memo(ti, e.name, || contains_ci(t.str(e.name), n)),
        Field::Text { text, .. } => {
            if names.fuzzy_name(ti, t, e.name, text) {
                true
            } else if matches!(e.payload, PayloadRef::None) {
                false
            } else {
                return None;
            }
        }
    })
}

/// Whether any key or value of the payload contains the (lowercase) needle.
pub fn payload_contains(p: &Payload, lower: &str) -> bool {
    fn value(v: &Value, n: &str, budget: &mut usize) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        match v {
            Value::String(s) => contains_ci(s, n),
            Value::Number(x) => x.to_string().contains(n),
            Value::Bool(b) => (if *b { "true" } else { "false" }).contains(n),
            Value::Null => "null".contains(n),
            Value::Array(a) => a.iter().any(|x| value(x, n, budget)),
            Value::Object(o) => o.iter().any(|(k, x)| contains_ci(k, n) || value(x, n, budget)),
        }
    }
    let mut budget = 1_000_000;
    let b = &mut budget;
    p.input.as_ref().is_some_and(|v| value(v, lower, b))
        || p.output.as_ref().is_some_and(|v| value(v, lower, b))
        || p.error.as_ref().is_some_and(|e| {
            e.kind.as_deref().is_some_and(|k| contains_ci(k, lower))
                || contains_ci(&e.message, lower)
                || e.stack.as_deref().is_some_and(|s| contains_ci(s, lower))
                || e.details.as_ref().is_some_and(|d| value(d, lower, b))
        })
        || p.extra.iter().any(|(k, v)| contains_ci(k, lower) || value(v, lower, b))
}

/// A batch of search results.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    /// Events found to match since the previous batch.
    pub hits: Vec<u32>,
    /// Work done and total work (events, then payloads to read).
    pub done: usize,
    pub total: usize,
    pub finished: bool,
}

/// Events per batch in the name pass, and payloads per batch in the payload pass.
const NAME_CHUNK: usize = 65_536;
const PAYLOAD_CHUNK: usize = 1_024;

/// Run a query over a trace: first the cheap fields of every event, then the payloads of the
/// events only they can decide. Results go to `emit` in batches; the last has `finished`.
/// Stops early (without a finished batch) when `cancel` is set.
pub fn search(t: &Trace, q: &Query, cancel: &AtomicBool, emit: impl FnMut(Batch)) {
    search_in(|| t, 0, q, cancel, emit)
}

/// [`search`] over the events from `from` on of a trace that may be growing behind a lock:
/// `read` is called for every batch, so a writer is never kept waiting for a whole search,
/// and events that arrive meanwhile are not searched (the caller searches them as they come).
pub fn search_in<G: std::ops::Deref<Target = Trace>>(
    read: impl Fn() -> G,
    from: usize,
    q: &Query,
    cancel: &AtomicBool,
    mut emit: impl FnMut(Batch),
) {
    let n = read().len().max(from);
    let mut names = NameCache::default();
    let mut undecided = Vec::new();
    let mut hits = Vec::new();
    let span = n - from;
    for start in (from..n).step_by(NAME_CHUNK) {
        if cancel.load(Ordering::Relaxed) {
            return;
        }
        {
            let t = read();
            // A trace read again from the start (truncated) may be shorter now.
            for i in start..(start + NAME_CHUNK).min(n).min(t.len()) {
                match q.eval_fast(&t, i as u32, &mut names) {
                    Verdict::Yes => hits.push(i as u32),
                    Verdict::No => {}
                    Verdict::NeedsPayload => undecided.push(i as u32),
                }
            }
        }
        let done = (start + NAME_CHUNK).min(n) - from;
        if done < span {
            emit(Batch {
                hits: std::mem::take(&mut hits),
                done,
                total: span + undecided.len(),
                finished: false,
            });
        }
    }
    let total = span + undecided.len();
    for (ci, chunk) in undecided.chunks(PAYLOAD_CHUNK).enumerate() {
        if cancel.load(Ordering::Relaxed) {
            return;
        }
        emit(Batch {
            hits: std::mem::take(&mut hits),
            done: span + ci * PAYLOAD_CHUNK,
            total,
            finished: false,
        });
        let t = read();
        for &i in chunk.iter().filter(|&&i| (i as usize) < t.len()) {
            let p = crate::formats::payload(&t, t.event(i));
            if q.eval_full(&t, i, &mut names, &p) {
                hits.push(i);
            }
        }
    }
    emit(Batch {
        hits,
        done: total,
        total,
        finished: true,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NewEvent, Usage};
    use serde_json::json;

    fn trace() -> Trace {
        let mut t = Trace::default();
        t.add(NewEvent::new(EventKind::Run, "run"));
        t.add(NewEvent {
            model: Some("gpt-4o"),
            status: Status::Ok,
            usage: Some(Usage::default()),
            ..NewEvent::new(EventKind::LlmCall, "gpt-4o")
        });
        t.add(NewEvent {
            status: Status::Error,
            payload: PayloadRef::Inline(Box::new(Payload {
                input: Some(json!({"path": "/etc/Passwd"})),
                ..Default::default()
            })),
            ..NewEvent::new(EventKind::ToolCall, "read_file")
        });
        t.add(NewEvent {
            status: Status::Pending,
            ..NewEvent::new(EventKind::ToolCall, "search_web")
        });
        t
    }

    fn all(t: &Trace, q: &str) -> Vec<u32> {
        let q = parse(q).unwrap();
        let mut out = Vec::new();
        search(t, &q, &AtomicBool::new(false), |b| out.extend(b.hits));
        out.sort();
        out
    }

    #[test]
    fn parses_fields_negation_and_quotes() {
        let q = parse(r#"tool:Read !status:ok "two words" http://x"#).unwrap();
        assert_eq!(q.terms.len(), 4);
        assert_eq!(q.terms[0].field, Field::Tool("read".into()));
        assert!(q.terms[1].negate);
        assert_eq!(q.terms[1].field, Field::Status(Status::Ok));
        assert!(matches!(&q.terms[2].field, Field::Text { text, .. } if text == "two words"));
        assert!(matches!(&q.terms[3].field, Field::Text { text, .. } if text == "http://x"));
        assert!(parse("kind:banana").unwrap_err().contains("llm, tool"));
        assert!(parse("status:meh").is_err());
        assert!(
            parse("kind: status:").unwrap().is_empty(),
            "half-typed fields are ignored"
        );
    }

    #[test]
    fn field_terms() {
        let t = trace();
        assert_eq!(all(&t, "kind:tool"), vec![2, 3]);
        assert_eq!(all(&t, "tool:read"), vec![2]);
        assert_eq!(all(&t, "status:error"), vec![2]);
        assert_eq!(all(&t, "status:pending"), vec![3]);
        assert_eq!(all(&t, "model:GPT"), vec![1]);
        assert_eq!(all(&t, "!kind:tool"), vec![0, 1]);
        assert_eq!(all(&t, "kind:tool !status:error"), vec![3]);
    }

    #[test]
    fn free_text_is_fuzzy_on_names_and_substring_in_payloads() {
        let t = trace();
        assert_eq!(all(&t, "srchweb"), vec![3], "fuzzy on the name");
        assert_eq!(all(&t, "passwd"), vec![2], "in the payload, any case");
        assert_eq!(all(&t, "!passwd"), vec![0, 1, 3]);
        assert_eq!(all(&t, "zzzz"), Vec::<u32>::new());
    }

    #[test]
    fn cancelled_search_emits_nothing_final() {
        let t = trace();
        let q = parse("passwd").unwrap();
        let mut finished = false;
        search(&t, &q, &AtomicBool::new(true), |b| finished |= b.finished);
        assert!(!finished);
    }

    #[test]
    fn progress_reaches_total() {
        let t = trace();
        let q = parse("passwd").unwrap();
        let mut last = Batch::default();
        search(&t, &q, &AtomicBool::new(false), |b| last = b);
        assert!(last.finished);
        assert_eq!(last.done, last.total);
    }
}
