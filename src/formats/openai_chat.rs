//! OpenAI-chat messages as Invariant Explorer stores them: a JSON file holding a list of
//! messages; a JSONL dataset with one trace a line (a raw list of messages, or
//! `{messages, metadata?, index?, id?, annotations?}`) and an optional first `{"metadata": ...}`
//! line describing the dataset; and Invariant's test-result wrapper
//! `{"name", "trace": {"trace": [...]}, "passed", "assertions"}`.
//!
//! A tool call and its output are one event: outputs (`role: "tool"`) find their call by
//! `tool_call_id`, else (no id, or one that names no call) take the first unanswered call of
//! the latest assistant message that still has one. Tool calls are children of the assistant
//! message that issued them: the turn reads as "said this, called that".
//!
//! Payloads are kept inline: a message is small and a dataset line is parsed whole anyway.

use super::jsonl::{Follow, LineLoc, LineParser, Sink};
use super::{Format, LoadError, Loaded, Probe, field, json_or_string, read_json_file, stem};
use crate::model::*;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

pub struct OpenAiChat;

/// Largest whole JSON document read (a message list or a test result).
const DOC_LIMIT: u64 = 256 << 20;
/// How much of a file is read to tell a whole document from a JSONL dataset.
const SNIFF: usize = 1 << 20;

impl Format for OpenAiChat {
    fn id(&self) -> &'static str {
        "openai-chat"
    }
    fn describe(&self) -> &'static str {
        "OpenAI-chat messages (Invariant Explorer): a JSON list of messages, a JSONL dataset of traces, or an Invariant test result"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        // Other formats' record shapes are never ours, whatever else they hold.
        const FOREIGN: [&str; 6] = [
            "event_type",
            "episode_id",
            "parentUuid",
            "sessionId",
            "resourceSpans",
            "span_id",
        ];
        let foreign = FOREIGN.iter().any(|k| p.has_key(k))
            || (p.has_key("payload") && p.has_key("type"))
            || (p.has_key("version") && p.has_key("tools"));
        if foreign {
            return 0;
        }
        if let Some(w) = &p.whole {
            let score = record_score(w);
            if score > 0 {
                return score;
            }
        }
        let mut lines = p.lines();
        match lines.next() {
            Some(first) if is_dataset_metadata(&first) => match lines.next() {
                Some(second) => record_score(&second),
                // The first trace is too long for the probe: a lone metadata line is still
                // Invariant's dataset header.
                None if !p.complete => 50,
                None => 0,
            },
            Some(first) => record_score(&first),
            None => {
                // A first line too long to parse here: judge by its keys.
                let list_of_messages = p.head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
                    && p.has_key("role")
                    && (p.has_key("content") || p.has_key("tool_calls"));
                if list_of_messages || (p.has_key("messages") && !p.has_key("type")) {
                    60
                } else {
                    0
                }
            }
        }
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        if looks_like_document(path)? {
            return load_document(path);
        }
        let mut f = self.follow(path).expect("a JSONL dataset is line-oriented");
        f.poll()?;
        f.finish("Invariant traces (lists of messages)")
    }

    fn follow(&self, path: &Path) -> Option<Follow> {
        // A pretty-printed document is not followed line by line.
        if looks_like_document(path).unwrap_or(false) {
            return None;
        }
        let path = path.to_path_buf();
        Some(Follow::new(
            &path.clone(),
            Box::new(move || Box::new(Parser::new(&path)) as Box<dyn LineParser>),
        ))
    }
}

/// How sure we are that one record (a line or a whole document) is one of our traces.
fn record_score(v: &Value) -> u8 {
    match v {
        Value::Array(items) => match items.first() {
            Some(m) if is_message(m) => 90,
            // A JSON file holding a list of traces.
            Some(Value::Array(inner)) if inner.first().is_some_and(is_message) => 80,
            _ => 0,
        },
        Value::Object(o) => {
            if test_result_messages(v).is_some() {
                95
            } else if o
                .get("messages")
                .and_then(Value::as_array)
                .is_some_and(|m| m.first().is_none_or(is_message))
            {
                85
            } else {
                0
            }
        }
        _ => 0,
    }
}

/// A chat message: a string `role` with `content` or `tool_calls`.
fn is_message(m: &Value) -> bool {
    m.get("role").is_some_and(Value::is_string) && (m.get("content").is_some() || m.get("tool_calls").is_some())
}

/// Invariant's dataset header line: `{"metadata": {...}}` and nothing else.
fn is_dataset_metadata(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|o| o.len() == 1 && o.contains_key("metadata"))
}

/// The messages of a test-result wrapper `{"trace": {"trace": [...]}, "passed", ...}`.
fn test_result_messages(v: &Value) -> Option<&Vec<Value>> {
    let inner = v.get("trace")?;
    let msgs = inner.get("trace").or_else(|| inner.get("messages"))?.as_array()?;
    (v.get("passed").is_some() || v.get("assertions").is_some() || v.get("name").is_some()).then_some(msgs)
}

/// Whether the file is one (pretty-printed) JSON document rather than JSON lines: its first
/// non-blank line is not JSON by itself.
fn looks_like_document(path: &Path) -> Result<bool, LoadError> {
    let f = super::open_regular(path).map_err(|e| LoadError::io(path, e))?;
    let mut head = Vec::new();
    f.take(SNIFF as u64)
        .read_to_end(&mut head)
        .map_err(|e| LoadError::io(path, e))?;
    let mut rest = &head[..];
    loop {
        match memchr::memchr(b'\n', rest) {
            Some(i) if rest[..i].iter().all(u8::is_ascii_whitespace) => rest = &rest[i + 1..],
            Some(i) => return Ok(serde_json::from_slice::<serde::de::IgnoredAny>(&rest[..i]).is_err()),
            // One line (or a first line longer than the sniff): the line parser reads every
            // shape a single line can hold.
            None => return Ok(false),
        }
    }
}

fn load_document(path: &Path) -> Result<Loaded, LoadError> {
    let v = read_json_file(path, DOC_LIMIT)?;
    let mut sink = Sink::new(path);
    let mut b = Builder::new(path);
    let loc = LineLoc {
        line: 0,
        offset: 0,
        len: 0,
    };
    match &v {
        // A list of traces, each a list of messages.
        Value::Array(items) if items.first().is_some_and(Value::is_array) => {
            for (i, item) in items.iter().enumerate() {
                b.record(item, loc, Some(i), &mut sink);
            }
        }
        _ => b.record(&v, loc, None, &mut sink),
    }
    sink.finish("Invariant trace")
}

/// The line parser of JSONL datasets: every line is one trace.
pub struct Parser {
    b: Builder,
}

impl Parser {
    pub fn new(path: &Path) -> Parser {
        Parser { b: Builder::new(path) }
    }
}

impl LineParser for Parser {
    fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let Some(v) = sink.parse::<Value>(line, loc) else {
            self.b.records += 1;
            return;
        };
        self.b.record(&v, loc, None, sink);
    }
}

/// Turns records (lines or documents) into traces; shared by both loading paths.
struct Builder {
    path: PathBuf,
    stem: String,
    /// Records seen, so that only the first may be the dataset header.
    records: usize,
    dataset: Option<Value>,
    /// The shape of the first trace record, to notice a file that mixes shapes.
    shape: Option<&'static str>,
    mixed_warned: bool,
}

impl Builder {
    fn new(path: &Path) -> Builder {
        Builder {
            path: path.to_path_buf(),
            stem: stem(path),
            records: 0,
            dataset: None,
            shape: None,
            mixed_warned: false,
        }
    }

    fn record(&mut self, v: &Value, loc: LineLoc, doc_index: Option<usize>, sink: &mut Sink) {
        let first = self.records == 0;
        self.records += 1;
        let at = (loc.line > 0).then_some(loc.line);
        if is_dataset_metadata(v) {
            if !first {
                sink.warning(
                    at,
                    "a dataset metadata line after the first line; kept as the dataset's metadata",
                );
            }
            self.dataset = v.get("metadata").cloned();
            return;
        }
        let (shape, msgs) = match v {
            Value::Array(m) => ("list of messages", m),
            Value::Object(_) => match test_result_messages(v) {
                Some(m) => ("test result", m),
                None => match v.get("messages").and_then(Value::as_array) {
                    Some(m) => ("{messages} object", m),
                    None => {
                        let msg = "not an Invariant trace: expected a list of messages, a {\"messages\": [...]} object, a test result or the {\"metadata\"} line";
                        match at {
                            Some(l) => sink.error(l, msg),
                            None => sink.diag(Diagnostic::error(self.path.clone(), None, msg)),
                        }
                        return;
                    }
                },
            },
            other => {
                let msg = format!("not an Invariant trace: a JSON {}", type_name(other));
                match at {
                    Some(l) => sink.error(l, msg),
                    None => sink.diag(Diagnostic::error(self.path.clone(), None, msg)),
                }
                return;
            }
        };
        match self.shape {
            None => self.shape = Some(shape),
            Some(s) if s != shape && !self.mixed_warned => {
                self.mixed_warned = true;
                sink.warning(
                    at,
                    format!("this file mixes trace shapes ({s} and {shape}); each line is read as it is"),
                );
            }
            Some(_) => {}
        }
        let obj = v.as_object();
        let get = |k: &str| obj.and_then(|o| o.get(k)).filter(|x| !x.is_null());
        let index = get("index").map(|i| match i {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        // Ids must tell the traces of one file apart: datasets repeat `id` across lines.
        let base = get("id").and_then(Value::as_str).unwrap_or(&self.stem).to_string();
        let id = match (index, at, doc_index) {
            (Some(i), _, _) => format!("{base}#{i}"),
            (None, Some(l), _) => format!("{base}:{l}"),
            (None, None, Some(i)) => format!("{base}#{i}"),
            (None, None, None) => base,
        };
        let metadata = get("metadata");
        let text = |k: &str| {
            metadata
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let mut attributes = Vec::new();
        if let Some(d) = &self.dataset {
            attributes.push(("dataset_metadata".to_string(), d.clone()));
        }
        if let Some(o) = obj {
            for (k, x) in o {
                if ["messages", "trace", "id", "index", "name", "passed"].contains(&k.as_str())
                    || x.is_null()
                    || x.as_array().is_some_and(Vec::is_empty)
                {
                    continue;
                }
                attributes.push((k.clone(), x.clone()));
            }
        }
        let passed = get("passed").and_then(Value::as_bool);
        let success = metadata.and_then(|m| m.get("success")).and_then(Value::as_bool);
        let status = match passed.or(success) {
            Some(true) => RunStatus::Ok,
            Some(false) => RunStatus::Error,
            None => RunStatus::Unknown,
        };
        let name = get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| text("name"));
        let mut t = Trace::new(RunMeta {
            id,
            name: name.clone(),
            format: "openai-chat",
            source: self.path.clone(),
            status,
            start: get("time_created").and_then(parse_timestamp),
            model: text("model"),
            attributes,
            ..Default::default()
        });
        let file = t.add_file(self.path.clone());
        let origin = loc.origin(file);
        // The test-result wrapper is a run with a verdict: its messages hang under it.
        let run = (shape == "test result").then(|| {
            let failed: Vec<&str> = get("assertions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|a| a.get("passed").and_then(Value::as_bool) == Some(false))
                .map(|a| a.get("message").and_then(Value::as_str).unwrap_or("assertion failed"))
                .collect();
            let error = (passed == Some(false)).then(|| ErrorInfo {
                kind: Some("test failed".into()),
                message: if failed.is_empty() {
                    "the test failed".into()
                } else {
                    failed.join("; ").trim().to_string()
                },
                ..Default::default()
            });
            t.add(NewEvent {
                status: match passed {
                    Some(true) => Status::Ok,
                    Some(false) => Status::Error,
                    None => Status::Unknown,
                },
                origin,
                payload: PayloadRef::Inline(Box::new(Payload {
                    error,
                    extra: get("assertions")
                        .map(|a| vec![("assertions".to_string(), a.clone())])
                        .unwrap_or_default(),
                    ..Default::default()
                })),
                ..NewEvent::new(EventKind::Run, name.as_deref().unwrap_or(&self.stem))
            })
        });
        let mut diags = Vec::new();
        add_messages(&mut t, msgs, run, origin, &mut diags);
        for (i, msg) in diags {
            let d = Diagnostic::warning(self.path.clone(), at, format!("messages[{i}]: {msg}"));
            t.diagnostics.push(d);
        }
        t.finalize();
        sink.push_trace(t);
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Message content for display: a string as it is, a list of text parts as their text, other
/// part lists as they are; null and empty are nothing.
fn content_of(m: &Value) -> Option<Value> {
    match m.get("content")? {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(parts) if parts.is_empty() => None,
        Value::Array(parts) => {
            let texts: Option<Vec<&str>> = parts
                .iter()
                .map(|p| match p {
                    Value::String(s) => Some(s.as_str()),
                    p if p.get("type").and_then(Value::as_str) == Some("text") => p.get("text").and_then(Value::as_str),
                    _ => None,
                })
                .collect();
            match texts {
                Some(t) => Some(Value::String(t.join("\n"))),
                None => Some(Value::Array(parts.clone())),
            }
        }
        other => Some(other.clone()),
    }
}

/// `function.arguments`: an object as it is, a JSON string parsed, any other string kept.
fn arguments_of(call: &Value) -> Option<Value> {
    let f = call.get("function").unwrap_or(call);
    match f.get("arguments").or_else(|| f.get("args"))? {
        Value::Null => None,
        Value::String(s) => Some(json_or_string(s)),
        other => Some(other.clone()),
    }
}

/// Extra fields of a message worth showing (everything but what the event already says).
fn message_extra(m: &Map<String, Value>, skip: &[&str]) -> Vec<(String, Value)> {
    m.iter()
        .filter(|(k, v)| !skip.contains(&k.as_str()) && !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A tool call waiting for its output.
struct Open {
    event: u32,
    id: Option<String>,
    /// Index of the assistant message that made the call.
    turn: usize,
}

fn add_messages(t: &mut Trace, msgs: &[Value], parent: Option<u32>, origin: Origin, diags: &mut Vec<(usize, String)>) {
    let under = |p: Option<u32>| p.map_or(Parent::None, Parent::Index);
    let mut open: Vec<Open> = Vec::new();
    let mut by_id: HashMap<String, u32> = HashMap::new();
    for (i, m) in msgs.iter().enumerate() {
        let Some(obj) = m.as_object() else {
            diags.push((i, format!("a JSON {}, not a message object; skipped", type_name(m))));
            continue;
        };
        let role_text = obj.get("role").and_then(Value::as_str).unwrap_or("");
        let tool_call_id = obj
            .get("tool_call_id")
            .filter(|v| !v.is_null())
            .map(|v| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()));
        let role = if role_text.is_empty() && tool_call_id.is_some() {
            Role::Tool
        } else {
            Role::parse(role_text)
        };
        if role == Role::Tool {
            // By id first; otherwise the first open call of the latest turn that has one.
            let by_named = tool_call_id
                .as_deref()
                .and_then(|id| open.iter().position(|o| o.id.as_deref() == Some(id)));
            let pick = by_named.or_else(|| {
                let turn = open.iter().map(|o| o.turn).max()?;
                open.iter().position(|o| o.turn == turn)
            });
            if let Some(k) = pick {
                let call = open.remove(k);
                let failed = obj.get("error").filter(|e| !e.is_null());
                let e = t.event_mut(call.event);
                e.status = if failed.is_some() { Status::Error } else { Status::Ok };
                e.origin2 = Some(Box::new(origin));
                if let PayloadRef::Inline(p) = &mut e.payload {
                    p.output = content_of(m);
                    p.error = failed.and_then(ErrorInfo::from_value);
                    if by_named.is_none()
                        && let Some(id) = &tool_call_id
                    {
                        // Say so when the id named no call and the output was linked by order.
                        p.extra
                            .push(("tool_call_id (matched no call)".into(), Value::String(id.clone())));
                    }
                    p.extra.extend(message_extra(
                        obj,
                        &["role", "content", "tool_call_id", "error", "tool_call"],
                    ));
                }
                continue;
            }
            let mut extra = message_extra(obj, &["role", "content"]);
            if let Some(id) = &tool_call_id
                && !by_id.contains_key(id)
            {
                extra.push(("note".into(), Value::String("no tool call precedes this output".into())));
            }
            t.add(NewEvent {
                parent: under(parent),
                status: Status::Ok,
                origin,
                payload: PayloadRef::Inline(Box::new(Payload {
                    input: content_of(m),
                    extra,
                    ..Default::default()
                })),
                ..NewEvent::new(EventKind::Message(Role::Tool), "tool")
            });
            continue;
        }
        let name = if role == Role::Other && !role_text.is_empty() {
            role_text
        } else {
            role.as_str()
        };
        let msg_event = t.add(NewEvent {
            parent: under(parent),
            status: Status::Ok,
            origin,
            payload: PayloadRef::Inline(Box::new(Payload {
                input: content_of(m),
                extra: message_extra(obj, &["role", "content", "tool_calls"]),
                ..Default::default()
            })),
            ..NewEvent::new(EventKind::Message(role), name)
        });
        let calls = match obj.get("tool_calls") {
            None | Some(Value::Null) => continue,
            Some(Value::Array(c)) => c,
            Some(other) => {
                diags.push((
                    i,
                    format!("tool_calls is a JSON {}, not a list; ignored", type_name(other)),
                ));
                continue;
            }
        };
        for (j, c) in calls.iter().enumerate() {
            if !c.is_object() {
                diags.push((i, format!("tool_calls[{j}] is not an object; skipped")));
                continue;
            }
            let f = c.get("function").unwrap_or(c);
            let tool = f
                .get("name")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or("?");
            let id = field(c, "id").map(|v| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()));
            let extra = c
                .get("type")
                .filter(|ty| ty.as_str() != Some("function"))
                .map(|ty| vec![("type".to_string(), ty.clone())])
                .unwrap_or_default();
            let ev = t.add(NewEvent {
                id: id.as_deref(),
                parent: Parent::Index(msg_event),
                status: Status::Pending,
                origin,
                payload: PayloadRef::Inline(Box::new(Payload {
                    input: arguments_of(c),
                    extra,
                    ..Default::default()
                })),
                ..NewEvent::new(EventKind::ToolCall, tool)
            });
            if let Some(id) = &id {
                by_id.insert(id.clone(), ev);
            }
            open.push(Open { event: ev, id, turn: i });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Write;

    fn fixture(name: &str) -> PathBuf {
        crate::formats::testing::fixture("openai-chat", name)
    }

    fn load(name: &str) -> Vec<Trace> {
        OpenAiChat.load(&fixture(name)).unwrap().traces
    }

    fn payload(t: &Trace, i: u32) -> Payload {
        super::super::payload(t, t.event(i))
    }

    /// (kind label, name, depth) of the walk.
    fn shape(t: &Trace) -> Vec<(String, String, usize)> {
        t.walk()
            .iter()
            .map(|&(i, d)| (crate::report::show::kind_label(t.event(i)), t.name(i).to_string(), d))
            .collect()
    }

    fn tool(t: &Trace, name: &str) -> u32 {
        (0..t.len() as u32)
            .find(|&i| t.event(i).kind == EventKind::ToolCall && t.name(i) == name)
            .unwrap_or_else(|| panic!("no tool {name}"))
    }

    #[test]
    fn a_message_list_document_pairs_calls_with_outputs() {
        let ts = load("messages.json");
        assert_eq!(ts.len(), 1);
        let t = &ts[0];
        assert_eq!(t.meta.id, "messages");
        let s = shape(t);
        assert_eq!(s.len(), 11);
        assert_eq!(s[2], ("assistant".into(), "assistant".into(), 0));
        assert_eq!(
            s[3],
            ("tool".into(), "timetable".into(), 1),
            "calls are children of their turn"
        );
        assert_eq!(
            s[7],
            ("tool".into(), "tool".into(), 0),
            "an output with no call stays a message"
        );
        assert_eq!(t.counts().tool_calls, 4, "a call and its output are one event");
        // Content as a list of text parts reads as text.
        assert_eq!(payload(t, 1).input, Some(json!("Two tickets to Lyon\non Friday.")));
        // Arguments: an object, a JSON string, a non-JSON string.
        let tt = tool(t, "timetable");
        assert_eq!(payload(t, tt).input, Some(json!({"to": "Lyon", "day": "friday"})));
        assert_eq!(
            payload(t, tt).output,
            Some(json!("08:10, 12:40")),
            "linked by id, out of order"
        );
        let pr = tool(t, "prices");
        assert_eq!(payload(t, pr).input, Some(json!({"to": "Lyon", "adults": 2})));
        assert_eq!(payload(t, pr).output, Some(json!("{\"eur\": 58}")));
        let book = tool(t, "book");
        assert_eq!(payload(t, book).input, Some(json!("seat 12A, seat 12B")));
        assert_eq!(
            payload(t, book).output,
            Some(json!("booked: PNR XK42")),
            "no tool_call_id: by order"
        );
        assert_eq!(t.event(book).status, Status::Ok);
        assert_eq!(t.event(tool(t, "send_email")).status, Status::Pending);
        // The stray string is reported, not fatal.
        assert_eq!(t.diagnostics.len(), 1);
        assert_eq!(t.diagnostics[0].severity, Severity::Warning);
        assert!(t.diagnostics[0].message.starts_with("messages[10]"));
    }

    #[test]
    fn a_dataset_skips_its_metadata_line_and_reports_bad_lines() {
        let ts = load("dataset.jsonl");
        let ids: Vec<&str> = ts.iter().map(|t| t.meta.id.as_str()).collect();
        assert_eq!(
            ids,
            vec!["dataset:2", "same#7", "same#8"],
            "the metadata line is no trace"
        );
        let lines: Vec<_> = ts
            .iter()
            .flat_map(|t| &t.diagnostics)
            .map(|d| (d.line, d.severity))
            .collect();
        assert_eq!(lines, vec![(Some(3), Severity::Error), (Some(5), Severity::Error)]);
        let w = &ts[1];
        assert_eq!(w.meta.name.as_deref(), Some("weather-task"));
        assert_eq!(w.meta.status, RunStatus::Error, "metadata.success false");
        assert_eq!(w.meta.model.as_deref(), Some("gpt-x"));
        assert!(w.meta.attributes.iter().any(|(k, _)| k == "annotations"));
        assert!(
            w.meta
                .attributes
                .iter()
                .any(|(k, v)| k == "dataset_metadata" && v["description"] == "fixture dataset")
        );
        let weather = tool(w, "weather");
        assert_eq!(
            w.event(weather).status,
            Status::Ok,
            "a call with id null takes the next output"
        );
        assert!(w.event(weather).source_id.is_empty());
        assert_eq!(ts[2].meta.status, RunStatus::Ok);
    }

    #[test]
    fn a_test_result_is_a_run_with_its_verdict() {
        let ts = load("test_result.json");
        assert_eq!(ts.len(), 1);
        let t = &ts[0];
        assert_eq!(t.meta.status, RunStatus::Error);
        assert_eq!(t.meta.name.as_deref(), Some("test_refund_flow"));
        assert!(t.meta.attributes.iter().any(|(k, _)| k == "assertions"));
        let run = t.roots[0];
        assert_eq!(t.event(run).kind, EventKind::Run);
        assert_eq!(t.children(run).len(), 2, "user and assistant; the call under its turn");
        let e = payload(t, run).error.unwrap();
        assert_eq!(e.message, "expected 2 refunds, got 1");
        assert_eq!(t.counts().tool_calls, 1);
        assert_eq!(payload(t, tool(t, "refund")).input, Some(json!({"order": 17})));
    }

    #[test]
    fn a_file_mixing_shapes_loads_with_a_warning() {
        let ts = load("mixed.jsonl");
        assert_eq!(ts.len(), 2);
        let d: Vec<_> = ts.iter().flat_map(|t| &t.diagnostics).collect();
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].line, d[0].severity), (Some(2), Severity::Warning));
    }

    #[test]
    fn outputs_without_a_matching_id_take_the_latest_open_turn_in_order() {
        let t = &load("order.jsonl")[0];
        for (call, out) in [
            ("a", "out-a"),
            ("b", "out-b"),
            ("inner", "out-inner"),
            ("outer", "out-outer"),
        ] {
            assert_eq!(payload(t, tool(t, call)).output, Some(json!(out)), "{call}");
        }
        let p = payload(t, tool(t, "inner"));
        assert!(p.extra.iter().any(|(k, v)| k.contains("matched no call") && v == "0"));
    }

    fn probe(bytes: &[u8]) -> Probe {
        Probe::from_bytes(Path::new("x.jsonl"), bytes.to_vec(), true)
    }

    #[test]
    fn detection_claims_chat_shapes_and_no_other_format() {
        let ours: [&[u8]; 5] = [
            br#"[{"role": "user", "content": "hi"}]"#,
            b"{\"metadata\": {}}\n[{\"role\": \"user\", \"content\": \"hi\"}]\n",
            b"{\"messages\": [{\"role\": \"user\", \"content\": null}], \"index\": 1}\n",
            br#"{"name": "t", "trace": {"trace": []}, "passed": true, "assertions": []}"#,
            b"[\n  {\n    \"role\": \"assistant\",\n    \"tool_calls\": []\n  }\n]\n",
        ];
        for b in ours {
            assert!(OpenAiChat.detect(&probe(b)) >= 80, "{}", String::from_utf8_lossy(b));
        }
        let theirs: [&[u8]; 7] = [
            br#"{"event_type": "RUN_START", "event_id": "e", "payload": {}}"#,
            br#"{"type": "episode_start", "episode_id": "e", "timestamp": 1}"#,
            br#"{"parentUuid": null, "sessionId": "s", "type": "user", "message": {"role": "user", "content": "hi"}}"#,
            br#"{"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "user", "content": []}}"#,
            br#"{"version": 1, "tools": [], "messages": []}"#,
            br#"{"resourceSpans": []}"#,
            br#"{"role": "user", "content": "one message is not a trace"}"#,
        ];
        for b in theirs {
            assert_eq!(OpenAiChat.detect(&probe(b)), 0, "{}", String::from_utf8_lossy(b));
        }
    }

    #[test]
    fn following_a_dataset_adds_a_trace_per_appended_line() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("live.jsonl");
        std::fs::write(
            &path,
            "{\"metadata\": {\"a\": 1}}\n[{\"role\": \"user\", \"content\": \"1\"}]\n",
        )
        .unwrap();
        let mut f = OpenAiChat.follow(&path).unwrap();
        f.poll().unwrap();
        assert_eq!(f.sink.traces.len(), 1);
        let mut w = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        w.write_all(b"[{\"role\": \"user\", \"con").unwrap();
        f.poll().unwrap();
        assert_eq!(f.sink.traces.len(), 1, "a partial line waits");
        w.write_all(b"tent\": \"2\"}]\n").unwrap();
        let p = f.poll().unwrap();
        assert_eq!(p.touched, vec![1]);
        assert_eq!(f.sink.traces[1].meta.id, "live:3");
        // A pretty-printed document is not followed line by line.
        assert!(OpenAiChat.follow(&fixture("messages.json")).is_none());
    }

    #[test]
    fn nothing_of_ours_is_a_clear_error() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("meta-only.jsonl");
        std::fs::write(&path, "{\"metadata\": {}}\n{\"x\": 1}\n").unwrap();
        let e = OpenAiChat.load(&path).unwrap_err().to_string();
        assert!(e.contains("no Invariant traces") && e.contains("line 2"), "{e}");
    }

    fn load_bytes(bytes: &[u8]) {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("t.jsonl");
        std::fs::write(&path, bytes).unwrap();
        if let Ok(l) = OpenAiChat.load(&path) {
            for t in &l.traces {
                let _ = t.walk();
                let _ = t.counts();
            }
        }
        let _ = OpenAiChat.detect(&Probe::from_bytes(&path, bytes.to_vec(), true));
    }

    fn arb_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let key = prop_oneof![
            Just("role".to_string()),
            Just("content".to_string()),
            Just("tool_calls".to_string()),
            Just("tool_call_id".to_string()),
            Just("id".to_string()),
            Just("function".to_string()),
            Just("name".to_string()),
            Just("arguments".to_string()),
            Just("messages".to_string()),
            Just("metadata".to_string()),
            Just("trace".to_string()),
            Just("passed".to_string()),
            Just("assertions".to_string()),
            Just("index".to_string()),
            Just("error".to_string()),
            "[a-z_]{0,8}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            prop_oneof![
                Just("user".to_string()),
                Just("assistant".to_string()),
                Just("tool".to_string()),
                Just("{\"a\": 1}".to_string()),
                Just("c1".to_string()),
                "\\PC{0,12}",
            ]
            .prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::vec((key.clone(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..1024)) {
            load_bytes(&bytes);
        }

        #[test]
        fn arbitrary_json_never_panics(docs in proptest::collection::vec(arb_json(), 1..6), pretty in proptest::prelude::any::<bool>()) {
            // As JSONL lines, and the first as a whole (maybe pretty-printed) document.
            let mut lines = Vec::new();
            for d in &docs {
                lines.extend_from_slice(d.to_string().as_bytes());
                lines.push(b'\n');
            }
            load_bytes(&lines);
            let doc = if pretty { serde_json::to_vec_pretty(&docs[0]) } else { serde_json::to_vec(&docs[0]) };
            load_bytes(&doc.unwrap_or_default());
        }
    }
}
