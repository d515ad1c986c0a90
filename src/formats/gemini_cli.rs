//! Gemini CLI chat recordings: `~/.gemini/tmp/<project hash>/chats/session-<time>-<id8>.jsonl`
//! (and the older whole-document `session-*.json`); a subagent's recording is its own file,
//! `chats/<parentSessionId>/<sessionId>.jsonl`, with `kind: "subagent"` (its own trace).
//!
//! A JSONL recording is a metadata line (`sessionId`, `projectHash`, `startTime`, `kind`)
//! followed by records the CLI's own loader folds in order:
//! - a message (`id`, `type`: user / gemini / info / warning / error): **upserted** by id. The
//!   CLI appends a `gemini` message again, under the same id, each time its tool calls
//!   progress; the last line of an id wins and keeps the first one's place;
//! - `{"$set": {...}}`: metadata updates; a `messages` list there **replaces** the whole list;
//! - `{"$rewindTo": id}`: drops that message and everything after it.
//!
//! A tool call and its result are one `toolCalls[]` entry of a `gemini` message (`args`,
//! `result[].functionResponse`, `status`); the CLI also appends the result as a `user`
//! message of `functionResponse` parts, which stays a message. Oct 2025 recordings hold no
//! `toolCalls` at all (a result may appear as a user text `[Function Response: …]`).
//!
//! Because records are replaced and rewound, a load keeps per-message state while it reads
//! (compact: the winning record's byte range and what the index needs, never parsed JSON) and
//! builds the trace from it once the file is read; payloads are decoded from disk when shown.
//! For the same reason there is no line-by-line follow: a live view reloads the file when it
//! changes. 1M events (1.16 GB) load in about 2.4 s of CPU at 268 MB peak RSS.
//!
//! Tokens: a `gemini` message's `tokens` are Gemini's usage metadata: `input`
//! (promptTokenCount) includes `cached` (cachedContentTokenCount), taken out to cache read;
//! `tool` (toolUsePromptTokenCount) is prompt too, added to input; `thoughts`
//! (thoughtsTokenCount) is reasoning, not part of `output`; `total` is kept as written.

use super::document::{DocSink, Document, Top};
use super::engine::{self, Records};
use super::jsonl::{self, LineLoc, LineParser, Sink};
use super::skim::{Seen, Skim};
use super::{Format, LoadError, Loaded, Probe, Summary, Watcher, lenient_u64, stem};
use crate::model::*;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::path::Path;

pub struct GeminiCli;

const ID: &str = "gemini-cli";
const WHAT: &str = "Gemini CLI records";
/// Message types the CLI records.
const TYPES: [&str; 5] = ["user", "gemini", "info", "warning", "error"];

impl Format for GeminiCli {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        ID
    }

    fn describe(&self) -> &'static str {
        "Gemini CLI chat recording, ~/.gemini/tmp/<project hash>/chats/session-*.jsonl (or older .json); subagents in chats/<parentSessionId>/"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        // The metadata record (the first line, or the top of an older whole document).
        if p.has_key("sessionId") && p.has_key("projectHash") {
            let more = ["startTime", "lastUpdated", "messages", "kind"];
            return if more.iter().any(|k| p.has_key(k)) { 100 } else { 90 };
        }
        // Records the CLI's loader passes over (no `id`, `$set`, `$rewindTo` or session: a
        // kind of record a newer CLI writes) and messages of a type it added do not decide:
        // the metadata record after them does, or (in a chats folder) a known message.
        let passed_over = |r: &Value| {
            r.as_object().is_some_and(|o| {
                !["id", "sessionId", "$set", "$rewindTo"]
                    .iter()
                    .any(|k| o.contains_key(*k))
            })
        };
        let message =
            |r: &Value| r.get("id").is_some_and(Value::is_string) && r.get("type").is_some_and(Value::is_string);
        let mut known_message = None;
        for r in p.lines().take(8) {
            if r.get("sessionId").is_some_and(Value::is_string) && r.get("projectHash").is_some() {
                return 90;
            }
            if message(r) {
                let known = r
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| TYPES.contains(&t));
                if known && r.get("timestamp").is_some() {
                    known_message.get_or_insert(r);
                }
            } else if !passed_over(r) {
                break; // some other format's record
            }
        }
        // A recording whose metadata line is gone: its place and its first record's shape.
        if in_chats_dir(&p.path) && known_message.is_some() {
            return 80;
        }
        0
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        if path.extension().is_some_and(|e| e == "json")
            && let Some(loaded) = load_document(path)?
        {
            return Ok(loaded);
        }
        load_lines(path, None)
    }

    fn load_watched(&self, path: &Path, watcher: &mut dyn Watcher) -> Result<Loaded, LoadError> {
        if path.extension().is_some_and(|e| e == "json") {
            return self.load(path);
        }
        load_lines(path, Some(watcher))
    }

    /// A session up to [`SMALL`] loads whole (exact counts, cheap); a larger one is summed up
    /// from its head (metadata, first prompt) and tail (last update, summary, last message),
    /// without counts: `ls` of thousands of sessions reads little of each.
    fn summary_inputs(&self, path: &Path) -> Option<Vec<std::path::PathBuf>> {
        Some(vec![path.to_path_buf()])
    }

    fn summarize(&self, path: &Path) -> Result<Option<Vec<Summary>>, LoadError> {
        let len = std::fs::metadata(path).map_err(|e| LoadError::io(path, e))?.len();
        if len <= SMALL || path.extension().is_some_and(|e| e == "json") {
            return Ok(None);
        }
        match summarize_ends(path, len).map_err(|e| LoadError::io(path, e))? {
            Some(s) => Ok(Some(vec![s])),
            None => Ok(None),
        }
    }

    fn decode_payload(&self, _trace: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
        let Some(bytes) = raw.first() else {
            return Payload::default();
        };
        let v: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => {
                return Payload {
                    error: Some(ErrorInfo::unreadable(&e)),
                    ..Default::default()
                };
            }
        };
        decode(ev, v)
    }
}

/// Sessions up to this size are summarized by a full load.
const SMALL: u64 = 256 << 10;
/// How much of each end of a larger session a summary reads.
const END: u64 = 64 << 10;

/// A summary from the first and last [`END`] bytes; None when the head holds no metadata line.
fn summarize_ends(path: &Path, len: u64) -> std::io::Result<Option<Summary>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = super::open_regular(path)?;
    let mut head = Vec::new();
    (&mut f).take(END).read_to_end(&mut head)?;
    let mut tail = Vec::new();
    f.seek(SeekFrom::Start(len.saturating_sub(END)))?;
    f.take(END).read_to_end(&mut tail)?;
    // Whole lines only: the head's last one and the tail's first one may be cut.
    let head_lines = head.split(|&b| b == b'\n').collect::<Vec<_>>();
    let head_lines = &head_lines[..head_lines.len().saturating_sub(1)];
    let mut p = Parser::default();
    let mut prompt = None;
    for l in head_lines {
        match skim(l) {
            Rec::Meta(m) if p.session_id.is_none() => {
                p.session_id = m.session_id.map(Cow::into_owned);
                p.start = m.start;
                p.kind = m.kind.map(Cow::into_owned);
            }
            Rec::Msg(m) if prompt.is_none() && m.ty.as_deref() == Some("user") => {
                let content = serde_json::from_slice::<Fields>(l).ok().and_then(|f| f.content);
                prompt = content
                    .and_then(|c| preview_of(c.get()))
                    .filter(|p| !p.starts_with("<session_context>"));
            }
            _ => {}
        }
    }
    let Some(id) = p.session_id.clone() else {
        return Ok(None);
    };
    let (mut last_updated, mut summary, mut last) = (None, None, None);
    for l in tail.split(|&b| b == b'\n').skip(1) {
        match skim(l) {
            Rec::Set(m) => {
                last_updated = m.last_updated.or(last_updated);
                summary = m.summary.map(Cow::into_owned).or(summary);
            }
            Rec::Msg(m) => {
                let pending = m.calls.iter().any(|c| c.status == Status::Pending);
                last_updated = last_updated.max(m.start);
                last = Some((m.ty.map(Cow::into_owned), pending));
            }
            _ => {}
        }
    }
    let subagent = p.kind.as_deref() == Some("subagent");
    let name = match summary.map(|s| one_line(&s, 100)).filter(|s| !s.is_empty()) {
        Some(s) if !subagent => Some(s),
        _ => prompt.map(|p| if subagent { format!("subagent: {p}") } else { p }),
    };
    let status = match last {
        Some((_, true)) => RunStatus::Running,
        Some((Some(t), _)) if t == "gemini" => RunStatus::Ok,
        Some((Some(t), _)) if t == "error" => RunStatus::Error,
        _ => RunStatus::Unknown,
    };
    Ok(Some(Summary {
        id,
        name,
        format: ID,
        path: path.to_path_buf(),
        status,
        start: p.start,
        duration: match (p.start, last_updated) {
            (Some(a), Some(b)) if b >= a => Some(b - a),
            _ => None,
        },
        ..Default::default()
    }))
}

/// Whether the file sits in a `chats/` directory (or a subagent directory inside one).
fn in_chats_dir(path: &Path) -> bool {
    let mut dirs = path.ancestors().skip(1).take(2);
    dirs.any(|d| d.file_name().is_some_and(|n| n == "chats"))
}

/// The payload of an event from its record: a message, a tool call entry, or the metadata.
fn decode(ev: &Event, mut v: Value) -> Payload {
    let mut out = Payload::default();
    let mut take = |k: &str| v.get_mut(k).filter(|x| !x.is_null()).map(Value::take);
    match ev.kind {
        EventKind::ToolCall => {
            out.input = take("args");
            let status = take("status");
            if let Some(result) = take("result") {
                let (output, error) = function_response(result);
                out.output = output;
                out.error = error;
            }
            let display = take("resultDisplay");
            if ev.status == Status::Error && out.error.is_none() {
                let message = match &display {
                    Some(Value::String(s)) if !s.is_empty() => s.clone(),
                    _ => "the tool call failed".into(),
                };
                out.error = Some(ErrorInfo {
                    message,
                    ..Default::default()
                });
            }
            for (k, x) in [("status", status), ("resultDisplay", display)] {
                if let Some(x) = x {
                    out.extra.push((k.into(), x));
                }
            }
            for k in ["displayName", "description", "agentId", "timestamp"] {
                if let Some(x) = take(k) {
                    out.extra.push((k.into(), x));
                }
            }
        }
        EventKind::Run => {
            out.input = Some(v);
        }
        _ => {
            let content = take("content").map(content_text);
            match ev.kind {
                EventKind::Message(Role::User) => out.input = content,
                EventKind::Error => {
                    out.error = Some(ErrorInfo {
                        message: match &content {
                            Some(Value::String(s)) => s.clone(),
                            Some(other) => other.to_string(),
                            None => "error".into(),
                        },
                        ..Default::default()
                    })
                }
                _ => out.output = content,
            }
            for k in ["displayContent", "thoughts", "tokens", "model", "timestamp"] {
                match take(k) {
                    Some(Value::Array(a)) if a.is_empty() => {}
                    Some(x) => out.extra.push((k.into(), x)),
                    None => {}
                }
            }
        }
    }
    out
}

/// A content of text parts as one string; anything else (function calls and responses,
/// inline data) as it is.
fn content_text(c: Value) -> Value {
    match &c {
        Value::Array(parts)
            if !parts.is_empty() && parts.iter().all(|p| p.get("text").is_some_and(Value::is_string)) =>
        {
            let text: Vec<&str> = parts.iter().filter_map(|p| p.get("text")?.as_str()).collect();
            Value::String(text.join(""))
        }
        _ => c,
    }
}

/// A tool call's `result` (a list of `functionResponse` parts): its output and its error.
fn function_response(result: Value) -> (Option<Value>, Option<ErrorInfo>) {
    let responses: Vec<&Value> = match &result {
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("functionResponse")?.get("response"))
            .collect(),
        _ => Vec::new(),
    };
    match responses.as_slice() {
        [one] => {
            let error = one.get("error").and_then(ErrorInfo::from_value);
            let output = match one.get("output") {
                Some(o) if one.as_object().is_some_and(|m| m.len() == 1) => Some(o.clone()),
                _ if error.is_some() && one.as_object().is_some_and(|m| m.len() == 1) => None,
                _ => Some((*one).clone()),
            };
            (output, error)
        }
        _ => (Some(result), None),
    }
}

// ---------------------------------------------------------------------------------------
// The skim: what one record (a line, or an element of a whole document) says.

/// Every field the loader reads, raw: the type of each is checked when it is read, so that a
/// record with one odd field still loads (with a diagnostic) rather than failing whole.
#[derive(Deserialize, Default)]
struct Fields<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "type")]
    ty: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default)]
    model: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tokens: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "toolCalls")]
    tool_calls: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "$set")]
    set: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "$rewindTo")]
    rewind_to: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "sessionId")]
    session_id: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "projectHash")]
    project_hash: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "startTime")]
    start_time: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "lastUpdated")]
    last_updated: Option<&'a RawValue>,
    #[serde(borrow, default)]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    summary: Option<&'a RawValue>,
    #[serde(borrow, default)]
    messages: Option<&'a RawValue>,
}

/// The fields of a tool call entry the index needs.
#[derive(Deserialize, Default)]
struct CallFields<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    status: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
}

/// Whether JSON text is an object (serde reads a struct from a list too, field by field).
fn is_object(bytes: &[u8]) -> bool {
    bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// Why a record that is no object was skipped: serde's reason when it is no JSON either.
fn not_an_object(bytes: &[u8]) -> String {
    match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        Err(e) => jsonl::json_error(&e),
        Ok(_) => "not a JSON object; skipped".into(),
    }
}

/// A JSON string, borrowed when it has no escapes; None for any other JSON value.
fn raw_str(r: Option<&RawValue>) -> Option<Cow<'_, str>> {
    super::raw_text(r?.get())
}

fn raw_ts(r: Option<&RawValue>) -> Option<i64> {
    ts_text(r?.get())
}

/// A time from raw JSON text: an ISO string, epoch milliseconds, ...
fn ts_text(g: &str) -> Option<i64> {
    match super::raw_text(g) {
        Some(s) => parse_timestamp_str(&s),
        None => serde_json::from_str::<Value>(g).ok().as_ref().and_then(parse_timestamp),
    }
}

/// One record, as the skim read it.
#[derive(Debug, PartialEq)]
enum Rec<'a> {
    /// Not JSON, or not an object: serde's reason.
    Bad(String),
    /// The first line's metadata (or a whole legacy document on one line).
    Meta(MetaRec<'a>),
    /// `{"$set": {...}}`.
    Set(MetaRec<'a>),
    /// `{"$rewindTo": id}`.
    Rewind(Cow<'a, str>),
    Msg(MsgRec<'a>),
    /// A JSON object of none of these shapes.
    Unknown,
}

#[derive(Debug, PartialEq, Default)]
struct MetaRec<'a> {
    session_id: Option<Cow<'a, str>>,
    project_hash: Option<Cow<'a, str>>,
    start: Option<i64>,
    last_updated: Option<i64>,
    kind: Option<Cow<'a, str>>,
    summary: Option<Cow<'a, str>>,
    /// A `messages` list: it replaces the messages so far.
    messages: Option<Vec<MsgRec<'a>>>,
    problems: Vec<String>,
}

#[derive(Debug, PartialEq)]
struct MsgRec<'a> {
    /// The message object's bytes (a part of the line for a message inside `$set`).
    part: &'a [u8],
    id: Cow<'a, str>,
    ty: Option<Cow<'a, str>>,
    start: Option<i64>,
    model: Option<Cow<'a, str>>,
    usage: Option<Usage>,
    calls: Vec<CallRec<'a>>,
    problems: Vec<String>,
}

#[derive(Debug, PartialEq)]
struct CallRec<'a> {
    part: &'a [u8],
    id: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    status: Status,
    start: Option<i64>,
}

fn skim(bytes: &[u8]) -> Rec<'_> {
    match skim_message(bytes) {
        Some(m) => Rec::Msg(m),
        None => skim_slow(bytes),
    }
}

/// Any record, by serde_json.
fn skim_slow(bytes: &[u8]) -> Rec<'_> {
    if !is_object(bytes) {
        return Rec::Bad(not_an_object(bytes));
    }
    let f: Fields = match serde_json::from_slice(bytes) {
        Ok(f) => f,
        Err(e) => return Rec::Bad(jsonl::json_error(&e)),
    };
    // In the order the CLI's loader tells records apart.
    if let Some(id) = raw_str(f.rewind_to) {
        return Rec::Rewind(id);
    }
    if let Some(id) = raw_str(f.id) {
        return Rec::Msg(message(bytes, id, &f));
    }
    if let Some(set) = f.set.filter(|s| is_object(s.get().as_bytes())) {
        return match serde_json::from_str::<Fields>(set.get()) {
            Ok(s) => Rec::Set(meta(&s)),
            Err(e) => Rec::Bad(format!("`$set`: {}", jsonl::json_error(&e))),
        };
    }
    if raw_str(f.session_id).is_some() && (raw_str(f.project_hash).is_some() || f.messages.is_some()) {
        return Rec::Meta(meta(&f));
    }
    Rec::Unknown
}

fn meta<'a>(f: &Fields<'a>) -> MetaRec<'a> {
    let mut m = MetaRec {
        session_id: raw_str(f.session_id),
        project_hash: raw_str(f.project_hash),
        start: raw_ts(f.start_time),
        last_updated: raw_ts(f.last_updated),
        kind: raw_str(f.kind),
        summary: raw_str(f.summary),
        ..Default::default()
    };
    if let Some(list) = f.messages {
        match serde_json::from_str::<Vec<&RawValue>>(list.get()) {
            Ok(items) => {
                let mut msgs = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let part = item.get().as_bytes();
                    if !is_object(part) {
                        m.problems
                            .push(format!("`messages[{i}]` is not a JSON object; skipped"));
                        continue;
                    }
                    match serde_json::from_slice::<Fields>(part) {
                        Ok(mf) => match raw_str(mf.id) {
                            Some(id) => msgs.push(message(part, id, &mf)),
                            None => m.problems.push(format!("`messages[{i}]` has no string `id`; skipped")),
                        },
                        Err(e) => m
                            .problems
                            .push(format!("`messages[{i}]`: {}; skipped", jsonl::json_error(&e))),
                    }
                }
                m.messages = Some(msgs);
            }
            Err(_) => m.problems.push("`messages` is not a list; ignored".into()),
        }
    }
    m
}

fn message<'a>(part: &'a [u8], id: Cow<'a, str>, f: &Fields<'a>) -> MsgRec<'a> {
    let mut problems = Vec::new();
    let mut calls = Vec::new();
    if let Some(list) = f.tool_calls {
        match serde_json::from_str::<Vec<&RawValue>>(list.get()) {
            Ok(items) => {
                for (i, item) in items.into_iter().enumerate() {
                    let cpart = item.get().as_bytes();
                    if !is_object(cpart) {
                        problems.push(format!(
                            "message {id:?}: `toolCalls[{i}]` is not a JSON object; skipped"
                        ));
                        continue;
                    }
                    match serde_json::from_slice::<CallFields>(cpart) {
                        Ok(c) => calls.push(CallRec {
                            part: cpart,
                            id: raw_str(c.id),
                            name: raw_str(c.name),
                            status: call_status(raw_str(c.status).as_deref()),
                            start: raw_ts(c.timestamp),
                        }),
                        Err(e) => problems.push(format!(
                            "message {id:?}: `toolCalls[{i}]`: {}; skipped",
                            jsonl::json_error(&e)
                        )),
                    }
                }
            }
            Err(_) => problems.push(format!("message {id:?}: `toolCalls` is not a list; ignored")),
        }
    }
    let text = |r: Option<&'a RawValue>| r.map(RawValue::get);
    let fields = MsgFields {
        ty: raw_str(f.ty),
        timestamp: text(f.timestamp),
        model: raw_str(f.model),
        tokens: text(f.tokens),
    };
    finish_message(part, id, fields, calls, problems)
}

/// What a message record says besides its id and tool calls (values as raw JSON text).
struct MsgFields<'a> {
    ty: Option<Cow<'a, str>>,
    timestamp: Option<&'a str>,
    model: Option<Cow<'a, str>>,
    tokens: Option<&'a str>,
}

/// A message's `tokens` counts.
#[derive(Debug, Default, PartialEq)]
struct Counts {
    input: Option<u64>,
    output: Option<u64>,
    total: Option<u64>,
    cached: Option<u64>,
    thoughts: Option<u64>,
    tool: Option<u64>,
}

impl Counts {
    fn slot(&mut self, key: &[u8]) -> Option<&mut Option<u64>> {
        Some(match key {
            b"input" => &mut self.input,
            b"output" => &mut self.output,
            b"total" => &mut self.total,
            b"cached" => &mut self.cached,
            b"thoughts" => &mut self.thoughts,
            b"tool" => &mut self.tool,
            _ => return None,
        })
    }

    /// The quick way, for what Gemini writes: an object of counts in plain digits (or
    /// null), keys without escapes. None for anything else, which [`Counts::of_value`]
    /// reads (a `Value` of every message's counts was 12% of a load's samples).
    fn plain(raw: &str) -> Option<Counts> {
        let mut c = Counts::default();
        let mut k = Skim::new(raw.as_bytes());
        k.object(|k, key| {
            let v = k.value()?;
            let n = match v {
                b"null" => None,
                [b'0'] => Some(0),
                [b'1'..=b'9', rest @ ..] if rest.len() < 19 && rest.iter().all(u8::is_ascii_digit) => {
                    Some(std::str::from_utf8(v).ok()?.parse().ok()?)
                }
                _ => return None,
            };
            if key.contains(&b'\\') {
                return None;
            }
            if let Some(slot) = c.slot(key) {
                *slot = n;
            }
            Some(())
        })?;
        raw[k.pos()..].trim_ascii().is_empty().then_some(c)
    }

    /// The counts of any JSON: an object's, each number or numeric string lenient.
    fn of_value(raw: &str) -> Option<Counts> {
        let t = serde_json::from_str::<Value>(raw).ok().filter(Value::is_object)?;
        let mut c = Counts::default();
        for (key, v) in t.as_object()? {
            if let Some(slot) = c.slot(key.as_bytes()) {
                *slot = lenient_u64(Some(v));
            }
        }
        Some(c)
    }
}

/// The message as the index needs it; the same whichever reader read the record.
fn finish_message<'a>(
    part: &'a [u8],
    id: Cow<'a, str>,
    f: MsgFields<'a>,
    calls: Vec<CallRec<'a>>,
    mut problems: Vec<String>,
) -> MsgRec<'a> {
    if f.ty.is_none() {
        problems.insert(
            0,
            format!("message {id:?} has no `type`; shown as a message of unknown type"),
        );
    }
    let usage = f
        .tokens
        .and_then(|t| Counts::plain(t).or_else(|| Counts::of_value(t)))
        .map(|t| {
            // Gemini's counts: `input` (promptTokenCount) includes `cached`, `tool`
            // (toolUsePromptTokenCount) is more prompt, `thoughts` are apart from `output`.
            let input = match (t.input, t.tool) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
            };
            super::usage_input_with_cache(Usage {
                input,
                output: t.output,
                total: t.total,
                cache_read: t.cached,
                reasoning: t.thoughts,
                ..Default::default()
            })
        });
    MsgRec {
        part,
        id,
        ty: f.ty,
        start: f.timestamp.and_then(ts_text),
        model: f.model.filter(|m| !m.is_empty()),
        usage: usage.filter(|u| !u.is_empty()),
        calls,
        problems,
    }
}

/// The fast path for message records, nearly every line of a recording: one pass of the
/// skimmer over the record, tool call entries cut out on the way. None for anything else
/// (metadata, `$set`, `$rewindTo`) and whatever the skimmer is unsure of (see its contract):
/// serde_json reads those, to the same result or a diagnostic.
fn skim_message(line: &[u8]) -> Option<MsgRec<'_>> {
    fn raw<'a>(k: &mut Skim<'a>) -> Option<Option<&'a str>> {
        k.raw().map(|r| r.map(|r| r.0))
    }
    let mut k = Skim::new(line);
    let mut seen = Seen::default();
    let mut id = None;
    let mut f = MsgFields {
        ty: None,
        timestamp: None,
        model: None,
        tokens: None,
    };
    let mut calls = Vec::new();
    k.object(|k, key| {
        match key {
            b"id" => (seen.first(0)?, id = Some(k.opt_str()??)),
            b"type" => (seen.first(1)?, f.ty = k.opt_cow()?),
            b"timestamp" => (seen.first(2)?, f.timestamp = raw(k)?),
            b"model" => (seen.first(3)?, f.model = k.opt_cow()?),
            b"tokens" => (seen.first(4)?, f.tokens = raw(k)?),
            // Not used here, but serde reads it as raw text, which checks its UTF-8.
            b"content" => (seen.first(6)?, {
                k.raw()?;
            }),
            b"toolCalls" => (seen.first(5)?, {
                if k.is_null_next() {
                    k.skip()?
                } else {
                    k.array(|k, _| {
                        let at = k.value_start();
                        calls.push(skim_call(k, line, at)?);
                        Some(())
                    })?
                }
            }),
            // Records of other kinds, and fields serde reads too: left to it.
            b"$set" | b"$rewindTo" | b"sessionId" | b"projectHash" | b"startTime" | b"lastUpdated" | b"kind"
            | b"summary" | b"messages" => return None,
            _ => ((), k.skip()?),
        };
        Some(())
    })?;
    if !k.at_end() {
        return None;
    }
    Some(finish_message(line, Cow::Borrowed(id?), f, calls, Vec::new()))
}

fn skim_call<'a>(k: &mut Skim<'a>, line: &'a [u8], at: usize) -> Option<CallRec<'a>> {
    if k.peek_byte()? != b'{' {
        return None;
    }
    let mut seen = Seen::default();
    let (mut id, mut name, mut status, mut ts) = (None, None, None, None);
    k.object(|k, key| {
        match key {
            b"id" => (seen.first(0)?, id = k.opt_cow()?),
            b"name" => (seen.first(1)?, name = k.opt_cow()?),
            b"status" => (seen.first(2)?, status = k.opt_str()?),
            b"timestamp" => (seen.first(3)?, ts = k.raw()?),
            _ => ((), k.skip()?),
        };
        Some(())
    })?;
    let part = &line[at..k.at()];
    // serde reads each entry as raw text first, which checks the UTF-8 of all of it.
    std::str::from_utf8(part).ok()?;
    Some(CallRec {
        part,
        id,
        name,
        status: call_status(status),
        start: ts.and_then(|r| ts_text(r.0)),
    })
}

/// The first line of a user message's text (a string, or text parts).
fn preview_of(content: &str) -> Option<String> {
    // A list of parts that starts with no text part (the results of tool calls, often large)
    // is not read: only prompts name a run.
    let c = content.trim_start();
    if !(c.starts_with('"')
        || c.strip_prefix('[')
            .is_some_and(|p| p.trim_start().starts_with("{\"text\"")))
    {
        return None;
    }
    let text = match serde_json::from_str::<Value>(content).ok()? {
        Value::String(s) => s,
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text")?.as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => return None,
    };
    let line = one_line(&text, 100);
    (!line.is_empty()).then_some(line)
}

fn one_line(s: &str, max: usize) -> String {
    let first = s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if first.chars().count() <= max {
        return first.to_string();
    }
    let mut out: String = first.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// The CLI's tool call states (`success`, `error`, `cancelled`, and those of a call under way).
fn call_status(s: Option<&str>) -> Status {
    match s {
        Some("success") => Status::Ok,
        Some("error" | "cancelled") => Status::Error,
        Some("validating" | "scheduled" | "awaiting_approval" | "executing") => Status::Pending,
        _ => Status::Unknown,
    }
}

// ---------------------------------------------------------------------------------------
// The in-order half: the messages as the CLI's loader would hold them, compactly.

/// A message: where its winning record is and what the index shows of it. Names (types,
/// models, tools) are interned: a session has a handful of each.
#[derive(Debug)]
struct Msg {
    id: Box<str>,
    origin: Origin,
    start: Time,
    usage: Tokens,
    calls: Box<[Call]>,
    /// Index into `Parser::names` (the first ones are [`TYPES`]).
    ty: u32,
    /// Index into `Parser::names`, or [`NONE`].
    model: u32,
}

#[derive(Debug)]
struct Call {
    id: Option<Box<str>>,
    start: Time,
    origin: Origin,
    name: u32,
    status: Status,
}

const NONE: u32 = u32::MAX;

/// `Option<i64>` in 8 bytes (a million messages and calls are held while a file loads).
#[derive(Clone, Copy, Debug)]
struct Time(i64);

impl Time {
    fn of(t: Option<i64>) -> Time {
        Time(t.unwrap_or(i64::MIN))
    }
    fn get(self) -> Option<i64> {
        (self.0 != i64::MIN).then_some(self.0)
    }
}

/// The kinds a Gemini `Option<Usage>` has, in 40 bytes rather than 72 (`u64::MAX`: unknown).
#[derive(Clone, Copy, Debug)]
struct Tokens([u64; 5]);

impl Tokens {
    fn of(u: Option<Usage>) -> Tokens {
        let u = u.unwrap_or_default();
        let v = |x: Option<u64>| x.unwrap_or(u64::MAX);
        Tokens([v(u.input), v(u.output), v(u.total), v(u.cache_read), v(u.reasoning)])
    }
    fn get(self) -> Option<Usage> {
        let v = |x: u64| (x != u64::MAX).then_some(x);
        let u = Usage {
            input: v(self.0[0]),
            output: v(self.0[1]),
            total: v(self.0[2]),
            cache_read: v(self.0[3]),
            reasoning: v(self.0[4]),
            ..Default::default()
        };
        (!u.is_empty()).then_some(u)
    }
}

#[derive(Default)]
struct Parser {
    session_id: Option<String>,
    project_hash: Option<String>,
    start: Option<i64>,
    last_updated: Option<i64>,
    kind: Option<String>,
    summary: Option<String>,
    /// The metadata line (the run event's record).
    meta_origin: Option<Origin>,
    msgs: Vec<Msg>,
    /// Message id → its place in `msgs`, by the id's hash (the id itself is in `msgs`); ids
    /// whose hash another id has go to `collided`.
    by_hash: rustc_hash::FxHashMap<u64, u32>,
    collided: rustc_hash::FxHashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
    name_index: rustc_hash::FxHashMap<Box<str>, u32>,
    /// Anything of the format was read (else there is no trace).
    seen: bool,
}

fn hash_id(id: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    id.hash(&mut h);
    h.finish()
}

impl Parser {
    fn intern(&mut self, name: &str) -> u32 {
        if self.names.is_empty() {
            for t in TYPES {
                self.name_index.insert(Box::from(t), self.names.len() as u32);
                self.names.push(Box::from(t));
            }
        }
        if let Some(&i) = self.name_index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(Box::from(name));
        self.name_index.insert(Box::from(name), i);
        i
    }

    fn name(&self, i: u32) -> &str {
        self.names.get(i as usize).map_or("", |n| n)
    }

    fn find(&self, id: &str) -> Option<u32> {
        match self.by_hash.get(&hash_id(id)) {
            Some(&i) if &*self.msgs[i as usize].id == id => Some(i),
            _ => self.collided.get(id).copied(),
        }
    }

    fn clear_messages(&mut self) {
        self.msgs.clear();
        self.by_hash.clear();
        self.collided.clear();
    }

    fn set_meta(&mut self, m: &MetaRec<'_>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let own = |s: &Option<Cow<str>>| s.as_deref().map(str::to_owned);
        if let Some(s) = own(&m.session_id) {
            self.session_id = Some(s);
        }
        if let Some(s) = own(&m.project_hash) {
            self.project_hash = Some(s);
        }
        if let Some(s) = own(&m.kind) {
            self.kind = Some(s);
        }
        if let Some(s) = own(&m.summary) {
            self.summary = Some(s);
        }
        self.start = m.start.or(self.start);
        self.last_updated = m.last_updated.or(self.last_updated);
        for p in &m.problems {
            sink.error(loc.line, p.clone());
        }
        if let Some(list) = &m.messages {
            // The CLI replaces its whole list with this one (a history sync after masking or
            // compression); later records upsert into it.
            self.clear_messages();
            for r in list {
                self.upsert(r, line, loc, sink);
            }
        }
    }

    fn upsert(&mut self, r: &MsgRec<'_>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        for p in &r.problems {
            sink.error(loc.line, p.clone());
        }
        let origin = engine::sub_origin(loc, 0, line, r.part);
        let calls = r
            .calls
            .iter()
            .map(|c| Call {
                id: c.id.as_deref().filter(|s| !s.is_empty()).map(Box::from),
                name: self.intern(c.name.as_deref().filter(|s| !s.is_empty()).unwrap_or("tool")),
                status: c.status,
                start: Time::of(c.start),
                origin: engine::sub_origin(loc, 0, line, c.part),
            })
            .collect();
        let m = Msg {
            id: Box::from(r.id.as_ref()),
            origin,
            start: Time::of(r.start),
            usage: Tokens::of(r.usage),
            calls,
            ty: self.intern(r.ty.as_deref().unwrap_or("message")),
            model: r.model.as_deref().map_or(NONE, |m| self.intern(m)),
        };
        match self.find(&r.id) {
            // The last record of an id wins and keeps the first one's place.
            Some(i) => self.msgs[i as usize] = m,
            None => {
                let i = self.msgs.len() as u32;
                match self.by_hash.entry(hash_id(&r.id)) {
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert(i);
                    }
                    std::collections::hash_map::Entry::Occupied(_) => {
                        self.collided.insert(Box::from(r.id.as_ref()), i);
                    }
                }
                self.msgs.push(m);
            }
        }
    }

    fn rewind(&mut self, id: &str, loc: LineLoc, sink: &mut Sink) {
        match self.find(id) {
            Some(i) => {
                for (k, m) in self.msgs.drain(i as usize..).enumerate() {
                    let at = i + k as u32;
                    match self.by_hash.get(&hash_id(&m.id)) {
                        Some(&j) if j == at => {
                            self.by_hash.remove(&hash_id(&m.id));
                        }
                        _ => {
                            self.collided.remove(&m.id);
                        }
                    }
                }
            }
            None => {
                // The CLI's loader empties the conversation then; its writer never does this.
                sink.warning(
                    Some(loc.line),
                    format!("`$rewindTo` names message {id:?}, which is not there: every message so far is dropped, as Gemini CLI does"),
                );
                self.clear_messages();
            }
        }
    }

    fn apply_rec(&mut self, rec: &Rec<'_>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        match rec {
            Rec::Bad(msg) => {
                sink.error(loc.line, msg.clone());
                return;
            }
            Rec::Unknown => {
                // A record of a kind a newer Gemini CLI writes (drift, formats/mod.rs): the
                // CLI's own loader passes over what has no `id`, and so does this one,
                // counting it by its `type` (or its first key, `$newOp`).
                let v = serde_json::from_slice::<serde_json::Value>(line).ok();
                let ty = v.as_ref().and_then(|v| {
                    v.get("type")
                        .and_then(|t| t.as_str())
                        .or_else(|| v.as_object().and_then(|o| o.keys().next()).map(String::as_str))
                });
                sink.skip(ty.unwrap_or("(empty record)"));
                return;
            }
            Rec::Meta(m) => {
                if self.meta_origin.is_none() {
                    self.meta_origin = Some(loc.origin(0));
                }
                self.set_meta(m, line, loc, sink);
            }
            Rec::Set(m) => self.set_meta(m, line, loc, sink),
            Rec::Rewind(id) => self.rewind(id, loc, sink),
            Rec::Msg(r) => self.upsert(r, line, loc, sink),
        }
        self.seen = true;
    }

    /// The first line of the first prompt the user typed (not the context the CLI sends
    /// first), read from disk: only a run's name needs it.
    fn first_prompt(&self, path: &Path) -> Option<String> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = super::open_regular(path).ok()?;
        let users = self.msgs.iter().filter(|m| self.name(m.ty) == "user");
        for m in users.take(16) {
            let mut buf = Vec::new();
            f.seek(SeekFrom::Start(m.origin.offset)).ok()?;
            (&mut f)
                .take(u64::from(m.origin.len).min(1 << 20))
                .read_to_end(&mut buf)
                .ok()?;
            let content = serde_json::from_slice::<Fields>(&buf).ok().and_then(|v| v.content);
            if let Some(p) = content.and_then(|c| preview_of(c.get()))
                && !p.starts_with("<session_context>")
            {
                return Some(p);
            }
        }
        None
    }

    /// The trace, built once the whole file is read (records before may have been replaced
    /// or rewound). The messages are consumed as their events are made: the peak of a load
    /// is the index, not the index and the messages.
    fn build_into(&mut self, sink: &mut Sink) {
        if !self.seen {
            return;
        }
        let t = self.build(&sink.path.clone());
        sink.push_trace(t);
    }

    fn build(&mut self, path: &Path) -> Trace {
        let (mut t, root, start, end) = self.head(path);
        let last = self.msgs.last().map(|m| self.name(m.ty).to_string());
        self.by_hash = Default::default();
        self.collided = Default::default();
        self.name_index = Default::default();
        let mut msgs = std::mem::take(&mut self.msgs);
        t.events
            .reserve_exact(msgs.len() + msgs.iter().map(|m| m.calls.len()).sum::<usize>());
        // Taken from the end in slices, the list giving back its memory as the index grows.
        msgs.reverse();
        let mut pending = false;
        let mut model = None;
        while !msgs.is_empty() {
            let slice = msgs.split_off(msgs.len().saturating_sub(1 << 16));
            msgs.shrink_to_fit();
            for m in slice.into_iter().rev() {
                self.add_message(&mut t, root, &m, &mut pending, &mut model);
            }
        }
        self.close(t, root, (start, end), pending, last, model)
    }

    /// The trace of the messages read so far, built as [`Parser::build`] builds it, the
    /// messages kept (a later record may still replace or rewind them).
    fn partial(&self, path: &Path) -> Trace {
        let (mut t, root, start, end) = self.head(path);
        let last = self.msgs.last().map(|m| self.name(m.ty).to_string());
        let (mut pending, mut model) = (false, None);
        for m in &self.msgs {
            self.add_message(&mut t, root, m, &mut pending, &mut model);
        }
        let mut t = self.close(t, root, (start, end), pending, last, model);
        t.finalize();
        t
    }

    /// The trace with its run event, and the run's start and end.
    fn head(&self, path: &Path) -> (Trace, u32, Option<i64>, Option<i64>) {
        let id = self.session_id.clone().unwrap_or_else(|| stem(path));
        let subagent = self.kind.as_deref() == Some("subagent");
        let summary = self
            .summary
            .as_deref()
            .map(|s| one_line(s, 100))
            .filter(|s| !s.is_empty());
        let name = match summary {
            Some(s) if !subagent => Some(s),
            _ => self
                .first_prompt(path)
                .map(|p| if subagent { format!("subagent: {p}") } else { p }),
        };
        let mut attributes = Vec::new();
        for (k, v) in [("projectHash", &self.project_hash), ("kind", &self.kind)] {
            if let Some(v) = v {
                attributes.push((k.to_string(), Value::String(v.clone())));
            }
        }
        let mut t = Trace::new(RunMeta {
            id: id.clone(),
            name: name.clone(),
            format: ID,
            source: path.to_path_buf(),
            status: RunStatus::Unknown,
            attributes,
            ..Default::default()
        });
        t.add_file(path);
        let first_ts = self.msgs.iter().filter_map(|m| m.start.get()).min();
        let last_ts = self
            .msgs
            .iter()
            .flat_map(|m| std::iter::once(m.start).chain(m.calls.iter().map(|c| c.start)))
            .filter_map(Time::get)
            .max();
        let start = self.start.or(first_ts);
        let end = match (last_ts, self.last_updated) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let root = t.add(NewEvent {
            id: self.session_id.as_deref(),
            start,
            duration: match (start, end) {
                (Some(a), Some(b)) if b >= a => Some(b - a),
                _ => None,
            },
            origin: self.meta_origin.unwrap_or_default(),
            payload: if self.meta_origin.is_some() {
                PayloadRef::Deferred
            } else {
                PayloadRef::None
            },
            ..NewEvent::new(EventKind::Run, name.as_deref().unwrap_or(&id))
        });
        (t, root, start, end)
    }

    /// One message's event and its tool calls'.
    fn add_message<'p>(&'p self, t: &mut Trace, root: u32, m: &Msg, pending: &mut bool, model: &mut Option<&'p str>) {
        let m_model = (m.model != NONE).then(|| self.name(m.model));
        let (kind, name, status) = match self.name(m.ty) {
            "user" => (EventKind::Message(Role::User), "user", Status::Ok),
            "gemini" => (EventKind::LlmCall, m_model.unwrap_or("gemini"), Status::Ok),
            "info" => (EventKind::Message(Role::System), "info", Status::Ok),
            "warning" => (EventKind::Message(Role::System), "warning", Status::Ok),
            "error" => (EventKind::Error, "error", Status::Error),
            // A message type of a newer Gemini CLI (drift): shown as it is, and counted.
            other => {
                // ("message" stands for a message with no type, which has its diagnostic.)
                if other != "message" {
                    t.skipped.add(other);
                }
                (EventKind::Other, other, Status::Unknown)
            }
        };
        if m_model.is_some() {
            *model = m_model;
        }
        let e = t.add(NewEvent {
            id: Some(&m.id),
            parent: Parent::Index(root),
            start: m.start.get(),
            status,
            usage: m.usage.get(),
            model: m_model,
            payload: PayloadRef::Deferred,
            origin: m.origin,
            ..NewEvent::new(kind, name)
        });
        for c in &m.calls {
            *pending |= c.status == Status::Pending;
            t.add(NewEvent {
                id: c.id.as_deref(),
                parent: Parent::Index(e),
                start: c.start.get(),
                status: c.status,
                payload: PayloadRef::Deferred,
                origin: c.origin,
                ..NewEvent::new(EventKind::ToolCall, self.name(c.name))
            });
        }
    }

    /// The run's status, times and model, once its messages are in.
    fn close(
        &self,
        mut t: Trace,
        root: u32,
        (start, end): (Option<i64>, Option<i64>),
        pending: bool,
        last: Option<String>,
        model: Option<&str>,
    ) -> Trace {
        // No end marker: a call under way means the session is running (or was cut off
        // there); otherwise the last message says how it ended.
        let status = if pending {
            RunStatus::Running
        } else {
            match last.as_deref() {
                Some("gemini") => RunStatus::Ok,
                Some("error") => RunStatus::Error,
                _ => RunStatus::Unknown,
            }
        };
        t.event_mut(root).status = status.event_status();
        t.meta.status = status;
        t.meta.start = start;
        t.meta.end = end;
        t.meta.model = model.map(str::to_owned);
        t
    }
}

impl Records for Parser {
    type Rec<'a> = Rec<'a>;

    fn skim<'a>(line: &'a [u8], slot: &mut Option<Rec<'a>>) {
        *slot = Some(skim(line));
    }

    fn apply(&mut self, rec: Option<&Rec<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        match rec {
            Some(r) => self.apply_rec(r, line, loc, sink),
            None => self.apply_rec(&skim(line), line, loc, sink),
        }
    }
}

impl LineParser for Parser {
    fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        engine::one(self, line, loc, sink);
    }

    fn lines(&mut self, batch: &[(&[u8], LineLoc)], sink: &mut Sink) {
        engine::batch(self, batch, sink);
    }

    fn holds_itself(&self) -> bool {
        true
    }
}

/// A JSON Lines session: the trace is built once every record is read (a later record may
/// replace or rewind earlier ones); a watcher is shown the messages read so far.
fn load_lines(path: &Path, watcher: Option<&mut dyn Watcher>) -> Result<Loaded, LoadError> {
    let mut parser = Parser::default();
    let mut sink = Sink::new(path);
    match watcher {
        Some(w) => {
            let total = std::fs::metadata(path).map_or(0, |m| m.len());
            let mut watched = Watched {
                parser: &mut parser,
                w,
                total,
            };
            jsonl::load_lines(path, &mut watched, &mut sink)?;
        }
        None => jsonl::load_lines(path, &mut parser, &mut sink)?,
    }
    parser.build_into(&mut sink);
    sink.finish(WHAT)
}

/// The parser, telling a watcher how far it is after each batch of lines.
struct Watched<'a> {
    parser: &'a mut Parser,
    w: &'a mut dyn Watcher,
    total: u64,
}

impl LineParser for Watched<'_> {
    fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        self.parser.line(line, loc, sink);
    }

    fn lines(&mut self, batch: &[(&[u8], LineLoc)], sink: &mut Sink) {
        self.parser.lines(batch, sink);
        let read = super::jsonl::batch_end(batch);
        let parser = &*self.parser;
        self.w.progress(read, self.total, &mut || parser.partial(&sink.path));
    }

    fn holds_itself(&self) -> bool {
        self.parser.holds_itself()
    }
}

// ---------------------------------------------------------------------------------------
// The older whole-document recordings: `{sessionId, projectHash, startTime, lastUpdated,
// messages: [...]}`, the messages streamed as if each were a line.

struct DocLoader {
    parser: Parser,
    sink: Sink,
}

impl DocSink for DocLoader {
    fn elements(&mut self, batch: &[(&[u8], LineLoc)]) {
        engine::batch(&mut self.parser, batch, &mut self.sink);
    }

    fn other(&mut self, key: &str, value: &[u8], _loc: LineLoc) {
        let Ok(raw) = serde_json::from_slice::<&RawValue>(value) else {
            return;
        };
        let p = &mut self.parser;
        let s = || raw_str(Some(raw)).map(Cow::into_owned);
        match key {
            "sessionId" => p.session_id = s().or(p.session_id.take()),
            "projectHash" => p.project_hash = s().or(p.project_hash.take()),
            "kind" => p.kind = s().or(p.kind.take()),
            "summary" => p.summary = s().or(p.summary.take()),
            "startTime" => p.start = raw_ts(Some(raw)).or(p.start),
            "lastUpdated" => p.last_updated = raw_ts(Some(raw)).or(p.last_updated),
            _ => return,
        }
        p.seen = true;
    }

    fn problem(&mut self, line: u64, message: String) {
        self.sink.error(line, message);
    }
}

/// Load an older whole-document recording; None when the `.json` file holds JSON Lines.
fn load_document(path: &Path) -> Result<Option<Loaded>, LoadError> {
    const PATHS: &[&[&str]] = &[&["messages"]];
    let mut d = DocLoader {
        parser: Parser::default(),
        sink: Sink::new(path),
    };
    let scanned = Document::new(PATHS).read(path, &mut d)?;
    if scanned.trailing {
        return Ok(None);
    }
    if scanned.top != Top::Object {
        return Err(LoadError::invalid(
            path,
            "not a Gemini CLI recording: expected a JSON object with `sessionId` and `messages`",
        ));
    }
    if scanned.list.is_none() && d.parser.session_id.is_none() {
        return Err(LoadError::invalid(
            path,
            "not a Gemini CLI recording: a JSON object without `sessionId` or `messages`",
        ));
    }
    d.parser.seen = true;
    d.parser.build_into(&mut d.sink);
    d.sink.finish(WHAT).map(Some)
}

/// A call's gist by Gemini CLI's tools (`packages/core/src/tools`): the command, the file
/// (`file_path`, older `absolute_path`), the pattern, the first URL of a `web_fetch` prompt,
/// the query, the directory listed, the to-do in progress.
pub(crate) fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{first_url, generic, key, key_or_generic, todos};
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "run_shell_command" => by(&["command"]),
        "read_file" | "write_file" | "replace" | "edit" => by(&["file_path", "absolute_path", "path"]),
        "read_many_files" => by(&["paths", "include"]),
        "list_directory" | "ls" => by(&["dir_path", "path"]),
        "glob" | "search_file_content" | "grep_search" | "grep" => by(&["pattern"]),
        "web_fetch" => key(input, &["url"])
            .or_else(|| input.get("prompt").and_then(Value::as_str).and_then(first_url))
            .or_else(|| generic(name, input)),
        "google_web_search" | "web_search" => by(&["query"]),
        "save_memory" => by(&["fact"]),
        "write_todos" => input
            .get("todos")
            .and_then(|t| todos(t, &["description"], "status"))
            .or_else(|| generic(name, input)),
        "invoke_agent" | "delegate_to_agent" => by(&["agent_name", "prompt"]),
        _ => generic(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::{Rng, fixture, outline};
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// A message of a `type` a newer Gemini CLI may write (shown as it is), sometimes with text.
    fn unknown_message(rng: &mut Rng, near: &Value) -> Value {
        let mut m = json!({"id": format!("drift-{}", rng.next()), "type": rng.type_name()});
        if let Some(ts) = near.get("timestamp") {
            m["timestamp"] = ts.clone();
        }
        if let Some(t) = rng.maybe_text() {
            m["content"] = json!([{"text": t}]);
        }
        m
    }

    /// A record a newer Gemini CLI may write: a message of a new type, or a record with no
    /// `id` (passed over, as the CLI's loader does), sometimes with text.
    fn unknown_record(rng: &mut Rng, near: &Value, messages: bool) -> Value {
        if messages && rng.one_in(2) {
            return unknown_message(rng, near);
        }
        let mut m = if rng.one_in(2) {
            json!({"type": rng.type_name()})
        } else {
            json!({format!("${}", rng.type_name()): {"n": 1}})
        };
        if let Some(t) = rng.maybe_text() {
            m["summary"] = json!(t);
        }
        m
    }

    /// Drift in a whole legacy session: unknown fields, and messages of new types.
    fn drift_document(path: &Path, rng: &mut Rng) -> usize {
        let Ok(mut v) = serde_json::from_slice::<Value>(&std::fs::read(path).unwrap()) else {
            return 0;
        };
        let Some(o) = v.as_object_mut() else { return 0 };
        o.insert(rng.type_name(), rng.value());
        let mut inserted = 0;
        if let Some(Value::Array(msgs)) = o.get_mut("messages") {
            for m in msgs.iter_mut().filter_map(Value::as_object_mut) {
                if rng.one_in(3) {
                    m.insert(rng.type_name(), rng.value());
                }
            }
            for _ in 0..rng.below(3) {
                let at = rng.below(msgs.len() + 1);
                let near = msgs.get(at).cloned().unwrap_or(Value::Null);
                msgs.insert(at, unknown_message(rng, &near));
                inserted += 1;
            }
        }
        std::fs::write(path, serde_json::to_vec(&v).unwrap()).unwrap();
        inserted
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on our sessions and the corpus' Gemini CLI files.
        #[test]
        fn drift_is_skipped_quietly(seed in any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "gemini-cli",
                &[
                    "tests/fixtures/gemini-cli/chats/session-2026-05-02T09-15-1a2b3c4d.jsonl",
                    "tests/fixtures/gemini-cli/replaced.jsonl",
                    "tests/fixtures/gemini-cli/session-2025-10-06T14-20-0c0ffee0.json",
                    "sample-traces/gemini-cli/chats/session-2026-06-10T08-30-9c1d2e3f.jsonl",
                ],
            );
            crate::formats::testing::drift_check(&sources, seed, &|f, rng| {
                let text = std::fs::read_to_string(f).unwrap_or_default();
                // Where a later record replaces the message list, a message put before it is
                // dropped by it (as the CLI drops it): only id-less records go there.
                let messages = !text.contains("\"$set\":{\"messages\"") && !text.contains("$rewindTo");
                match f.extension().and_then(|x| x.to_str()) {
                    Some("jsonl") => {
                        crate::formats::testing::drift_jsonl(f, rng, &|rng, near| unknown_record(rng, near, messages))
                    }
                    Some("json") => drift_document(f, rng),
                    _ => 0,
                }
            });
        }
    }

    const MAIN: &str = "chats/session-2026-05-02T09-15-1a2b3c4d.jsonl";
    const SUB: &str = "chats/1a2b3c4d-0000-4000-8000-00000000c0de/5e6f7a8b-0000-4000-8000-0000000a9e47.jsonl";
    const LEGACY: &str = "session-2025-10-06T14-20-0c0ffee0.json";

    fn load(name: &str) -> Trace {
        let mut l = GeminiCli.load(&fixture(ID, name)).unwrap();
        assert_eq!(l.traces.len(), 1, "{name}");
        l.traces.remove(0)
    }

    fn find(t: &Trace, id: &str) -> u32 {
        t.find(id).unwrap_or_else(|| panic!("no event {id}"))
    }

    fn payload(t: &Trace, id: &str) -> Payload {
        crate::formats::payload(t, t.event(find(t, id)))
    }

    #[test]
    fn tokens_are_normalized_cached_out_of_input_thoughts_as_reasoning() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("session-2026-05-05T10-00-usage0001.jsonl");
        let lines = [
            r#"{"sessionId":"use-0001","projectHash":"ab","startTime":"2026-05-05T10:00:00.000Z","kind":"main"}"#,
            r#"{"id":"u1","timestamp":"2026-05-05T10:00:01.000Z","type":"user","content":[{"text":"hi"}]}"#,
            r#"{"id":"g1","timestamp":"2026-05-05T10:00:02.000Z","type":"gemini","content":"hello","model":"gemini-2.5-pro","tokens":{"input":3050,"output":25,"cached":1525,"thoughts":40,"tool":10,"total":3125}}"#,
        ];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let l = GeminiCli.load(&path).unwrap();
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        // promptTokenCount 3,050 includes the 1,525 cached; the 10 tool-use prompt tokens are
        // input too; thoughts are apart from the 25 output: 1,535 + 1,525 + 25 + 40 = 3,125.
        let u = t.event(find(t, "g1")).usage.get();
        let want = Usage {
            input: Some(1_535),
            cache_read: Some(1_525),
            output: Some(25),
            reasoning: Some(40),
            total: Some(3_125),
            ..Default::default()
        };
        assert_eq!(u, Some(want));
        assert_eq!(u.and_then(|u| u.sum()), Some(3_125));
    }

    #[test]
    fn upserts_keep_the_first_place_and_the_last_record() {
        let t = load(MAIN);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(
            outline(&t),
            [
                "run Fix the first TODO in src/",
                "  message user",
                "  llm gemini-2.5-pro",
                "    tool search_file_content",
                "    tool read_file",
                "  message user",
                "  llm gemini-2.5-pro",
                "    tool replace",
                "    tool invoke_agent",
                "  message info",
                "  message user",
                "  llm gemini-2.5-flash",
            ]
        );
        // The gemini message was written three times: the last record (two calls, the
        // first one finished) is the one shown, in the first one's place.
        let g1 = t.event(find(&t, "m-g1"));
        assert_eq!(g1.origin.line, 7);
        assert_eq!(
            g1.usage.get().map(|u| (u.input, u.output, u.total)),
            Some((Some(1200), Some(40), Some(1252)))
        );
        let grep = t.event(find(&t, "grep-1"));
        assert_eq!((grep.status, grep.parent), (Status::Ok, find(&t, "m-g1")));
        assert_eq!(t.event(find(&t, "read-1")).status, Status::Error);
        // The rewound turn is gone.
        assert!(t.find("m-u3").is_none() && t.find("m-g3").is_none());
        let c = t.counts();
        assert_eq!(
            (c.tool_calls, c.llm_calls, c.errors, c.tokens),
            (4, 3, 1, 1252 + 1560 + 1730)
        );
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.id, "1a2b3c4d-0000-4000-8000-00000000c0de");
        assert_eq!(t.meta.model.as_deref(), Some("gemini-2.5-flash"));
        assert_eq!(t.meta.start, parse_timestamp_str("2026-05-02T09:15:00.000Z"));
        assert_eq!(t.meta.end, parse_timestamp_str("2026-05-02T09:15:09.000Z"));
    }

    #[test]
    fn a_tool_call_is_its_entry_with_arguments_result_and_error() {
        let t = load(MAIN);
        let p = payload(&t, "grep-1");
        assert_eq!(p.input, Some(serde_json::json!({"pattern": "TODO", "path": "src"})));
        assert_eq!(
            p.output,
            Some(serde_json::json!("src/main.rs:12: // TODO: handle empty input"))
        );
        assert!(p.error.is_none());
        let p = payload(&t, "read-1");
        assert_eq!(
            p.error.map(|e| e.message).as_deref(),
            Some("File not found: src/missing.rs")
        );
        let p = payload(&t, "agent-1");
        let agent = p.extra.iter().find(|(k, _)| k == "agentId").map(|(_, v)| v.clone());
        assert_eq!(agent, Some(serde_json::json!("5e6f7a8b-0000-4000-8000-0000000a9e47")));
        // Messages: the user's text, the model's reply with its thoughts, the session's metadata.
        let p = payload(&t, "m-u1");
        assert_eq!(
            p.input,
            Some(serde_json::json!("Find the TODOs in src/ and fix the first one."))
        );
        let p = payload(&t, "m-g1");
        assert_eq!(p.output, Some(serde_json::json!("Let me search first.")));
        assert!(p.extra.iter().any(|(k, _)| k == "thoughts"));
        let root = crate::formats::payload(&t, t.event(t.roots[0]));
        assert_eq!(
            root.input.as_ref().and_then(|v| v.get("kind")),
            Some(&serde_json::json!("main"))
        );
    }

    #[test]
    fn a_subagent_file_is_its_own_trace() {
        let t = load(SUB);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.name.as_deref(), Some("subagent: Run the tests"));
        assert!(t.meta.attributes.iter().any(|(k, v)| k == "kind" && v == "subagent"));
        assert_eq!(t.counts().tool_calls, 2);
    }

    #[test]
    fn a_set_messages_record_replaces_the_list() {
        let t = load("replaced.jsonl");
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(
            outline(&t),
            [
                format!("run {}", t.meta.name.as_deref().unwrap_or("")),
                "  llm gemini-2.5-pro".into(),
                "    tool glob".into(),
                "  message user".into(),
                "  message user".into(),
                "  llm gemini-2.5-pro".into(),
            ]
        );
        assert!(t.find("r-u1").is_none(), "replaced away");
        // The messages of the `$set` line point at their own part of it.
        let sum = t.event(find(&t, "r-sum"));
        assert_eq!(sum.origin.line, 4);
        let raw = crate::formats::read_origin(&t, sum.origin).unwrap();
        assert!(raw.starts_with(b"{\"id\":\"r-sum\"") && raw.ends_with(b"}"));
        assert_eq!(payload(&t, "old-call").output, Some(serde_json::json!("[masked]")));
    }

    #[test]
    fn the_older_whole_document_loads_without_tool_calls() {
        let t = load(LEGACY);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(
            outline(&t),
            [
                "run Why does the build fail?",
                "  message user",
                "  llm gemini-2.5-pro",
                "  message user",
                "  llm gemini-2.5-pro",
                "  error error",
            ]
        );
        assert_eq!(t.counts().tool_calls, 0);
        assert_eq!(t.meta.status, RunStatus::Error);
        assert_eq!(t.meta.id, "0c0ffee0-0000-4000-8000-000000000001");
        let p = payload(&t, "l-u2");
        assert!(
            p.input
                .unwrap()
                .as_str()
                .unwrap()
                .starts_with("[Function Response: read_file]")
        );
        assert_eq!(
            payload(&t, "l-e1").error.map(|e| e.message).as_deref(),
            Some("API Error: quota exceeded")
        );
    }

    #[test]
    fn damaged_records_are_diagnostics_and_the_rest_loads() {
        let t = load("damaged.jsonl");
        let d: Vec<(Option<u64>, Severity)> = t.diagnostics.iter().map(|d| (d.line, d.severity)).collect();
        use Severity::*;
        assert_eq!(
            d,
            [
                (Some(2), Warning),  // $rewindTo an id that is not there
                (Some(4), Error),    // toolCalls not a list
                (Some(5), Error),    // a line cut in the middle of the file
                (Some(6), Error),    // no type
                (Some(7), Error),    // toolCalls[0] not an object
                (Some(10), Error),   // not an object
                (Some(11), Warning)  // the last line, cut
            ]
        );
        assert!(t.diagnostics.iter().all(|d| d.path.ends_with("damaged.jsonl")));
        assert_eq!(
            outline(&t),
            [
                "run do it",
                "  message user",
                "  llm gemini-2.5-pro",
                "  other message",
                "  llm gemini-2.5-pro",
                "    tool read_file",
                "  message user",
            ]
        );
        // A record of no known kind is drift: counted, not reported.
        assert_eq!(t.skipped.iter().collect::<Vec<_>>(), [("hello", 1)]);
        // A redacted token count is unknown, not zero; a call still executing is pending and
        // so is the run; a result whose call was never recorded stays a message.
        let u = t.event(find(&t, "d-g1")).usage.get();
        assert_eq!(
            u,
            Some(Usage {
                input: None,
                output: Some(7),
                total: Some(17),
                ..Default::default()
            })
        );
        assert_eq!(t.event(find(&t, "c1")).status, Status::Pending);
        assert_eq!(t.meta.status, RunStatus::Running);
        assert_eq!(t.counts().tool_calls, 1);
    }

    #[test]
    fn a_rewind_drops_the_message_and_what_follows() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("session-x.jsonl");
        let lines = [
            r#"{"sessionId":"s","projectHash":"h","startTime":"2026-01-01T00:00:00Z","kind":"main"}"#,
            r#"{"id":"a","type":"user","content":"one"}"#,
            r#"{"id":"b","type":"gemini","content":"two","toolCalls":[{"id":"t1","name":"ls","status":"success"}]}"#,
            r#"{"id":"c","type":"user","content":"three"}"#,
            r#"{"$rewindTo":"b"}"#,
            r#"{"id":"d","type":"user","content":"four"}"#,
            r#"{"id":"b","type":"gemini","content":"again"}"#,
        ];
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        let t = GeminiCli.load(&p).unwrap().traces.remove(0);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let ids: Vec<&str> = t
            .walk()
            .iter()
            .skip(1)
            .map(|&(i, _)| t.str(t.event(i).source_id))
            .collect();
        assert_eq!(ids, ["a", "d", "b"], "b came back after the rewind, so it is last");
        assert_eq!(t.counts().tool_calls, 0);
    }

    #[test]
    fn a_json_file_of_lines_is_read_as_lines_and_junk_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("session-y.json");
        std::fs::write(
            &p,
            "{\"sessionId\":\"s\",\"projectHash\":\"h\"}\n{\"id\":\"a\",\"type\":\"user\",\"content\":\"hi\"}\n",
        )
        .unwrap();
        let t = GeminiCli.load(&p).unwrap().traces.remove(0);
        assert_eq!(t.len(), 2);
        for junk in ["[1,2]", "{\"a\":1}", "", "\"text\""] {
            let p = d.path().join("junk.json");
            std::fs::write(&p, junk).unwrap();
            assert!(GeminiCli.load(&p).is_err(), "{junk:?}");
            let p = d.path().join("junk.jsonl");
            std::fs::write(&p, junk).unwrap();
            assert!(GeminiCli.load(&p).is_err(), "{junk:?}");
        }
    }

    #[test]
    fn a_large_session_is_summed_up_from_its_ends_as_a_load_would() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("session-big.jsonl");
        let mut text = String::from(
            "{\"sessionId\":\"big\",\"projectHash\":\"h\",\"startTime\":\"2026-01-01T00:00:00Z\",\"kind\":\"main\"}\n\
             {\"id\":\"u0\",\"timestamp\":\"2026-01-01T00:00:01Z\",\"type\":\"user\",\"content\":[{\"text\":\"<session_context>\\nctx\"}]}\n\
             {\"id\":\"u1\",\"timestamp\":\"2026-01-01T00:00:02Z\",\"type\":\"user\",\"content\":[{\"text\":\"Tidy the docs\"}]}\n",
        );
        for i in 0..400 {
            text.push_str(&format!(
                "{{\"id\":\"g{i}\",\"timestamp\":\"2026-01-01T00:{:02}:{:02}Z\",\"type\":\"gemini\",\"content\":\"{}\",\"model\":\"m\"}}\n",
                i / 60 + 1,
                i % 60,
                "x".repeat(1000)
            ));
        }
        text.push_str(
            "{\"$set\":{\"lastUpdated\":\"2026-01-01T00:07:39Z\"}}\n{\"$set\":{\"summary\":\"Docs tidied\"}}\n",
        );
        std::fs::write(&p, &text).unwrap();
        assert!(text.len() as u64 > SMALL);
        let s = crate::formats::testing::summaries(&GeminiCli, &p).unwrap().remove(0);
        let full = Summary::unpriced(&GeminiCli.load(&p).unwrap().traces[0]);
        assert_eq!(s.events, None, "summed up, not loaded");
        assert_eq!(
            (&s.id, &s.name, s.status, s.start, s.duration),
            (&full.id, &full.name, full.status, full.start, full.duration)
        );
        assert_eq!(s.name.as_deref(), Some("Docs tidied"));
        // Without a summary, the first prompt the user typed names it.
        std::fs::write(&p, text.rsplit_once("{\"$set\":{\"summary").unwrap().0).unwrap();
        let s = crate::formats::testing::summaries(&GeminiCli, &p).unwrap().remove(0);
        assert_eq!(s.name.as_deref(), Some("Tidy the docs"));
    }

    #[test]
    fn detection_is_precise() {
        for f in [MAIN, SUB, LEGACY, "replaced.jsonl", "damaged.jsonl"] {
            let path = fixture(ID, f);
            let probe = Probe::open(&path).unwrap();
            assert_eq!(GeminiCli.detect(&probe), 100, "{f}");
            assert_eq!(crate::formats::detect(&path).unwrap().id(), ID, "{f}");
        }
        let p = |name: &str, s: &str| Probe::from_bytes(Path::new(name), s.as_bytes().to_vec(), true);
        // A recording whose metadata line is gone is known by its place.
        let msg = r#"{"id":"a","timestamp":"2026-01-01T00:00:00Z","type":"user","content":"hi"}"#;
        assert_eq!(GeminiCli.detect(&p("tmp/h/chats/session-1.jsonl", msg)), 80);
        assert_eq!(GeminiCli.detect(&p("tmp/h/chats/parent/sub.jsonl", msg)), 80);
        assert_eq!(GeminiCli.detect(&p("elsewhere/session-1.jsonl", msg)), 0);
        for other in [
            r#"{"event_type":"RUN_START","event_id":"a","payload":{}}"#,
            r#"{"type":"episode_start","episode_id":"e","timestamp":1}"#,
            r#"[{"role":"user","content":"hi"}]"#,
            r#"{"messages":[{"role":"user","content":"hi"}]}"#,
            r#"{"version":1,"tools":[]}"#,
            r#"{"parentUuid":null,"sessionId":"s","type":"user","uuid":"u"}"#,
            r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}"#,
            r#"[{"sessionId":"s","messageId":0,"type":"user","message":"hi","timestamp":"2026-01-01T00:00:00Z"}]"#,
        ] {
            assert_eq!(GeminiCli.detect(&p("x.jsonl", other)), 0, "{other}");
        }
    }

    #[test]
    fn a_chats_directory_lists_sessions_and_subagents_as_runs() {
        let d = crate::source::discover(&[fixture(ID, "chats")], None);
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let mut runs: Vec<String> = d
            .runs
            .iter()
            .map(|r| format!("{} {}", r.format.id(), r.path.file_name().unwrap().to_string_lossy()))
            .collect();
        runs.sort();
        assert_eq!(
            runs,
            [
                "gemini-cli 5e6f7a8b-0000-4000-8000-0000000a9e47.jsonl",
                "gemini-cli session-2026-05-02T09-15-1a2b3c4d.jsonl"
            ]
        );
    }

    // -----------------------------------------------------------------------------------
    // The load against a straightforward fold of the same lines over serde_json values, as
    // Gemini CLI's own loader does it.

    fn reference(text: &[u8]) -> Option<Vec<String>> {
        let mut msgs: Vec<Value> = Vec::new();
        let mut seen = false;
        let upsert = |msgs: &mut Vec<Value>, m: Value| {
            let id = m["id"].as_str().unwrap_or_default().to_string();
            match msgs.iter().position(|x| x["id"] == id.as_str()) {
                Some(i) => msgs[i] = m,
                None => msgs.push(m),
            }
        };
        let replace = |msgs: &mut Vec<Value>, list: &Value| {
            if let Some(list) = list.as_array() {
                msgs.clear();
                for m in list.iter().filter(|m| m.is_object() && m["id"].is_string()) {
                    upsert(msgs, m.clone());
                }
            }
        };
        for line in text.split(|&b| b == b'\n') {
            let Ok(v) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            if !v.is_object() {
                continue;
            }
            if let Some(to) = v["$rewindTo"].as_str() {
                match msgs.iter().position(|m| m["id"] == to) {
                    Some(i) => msgs.truncate(i),
                    None => msgs.clear(),
                }
            } else if v["id"].is_string() {
                upsert(&mut msgs, v);
            } else if v["$set"].is_object() {
                replace(&mut msgs, &v["$set"]["messages"]);
            } else if v["sessionId"].is_string() && (v["projectHash"].is_string() || v.get("messages").is_some()) {
                replace(&mut msgs, &v["messages"]);
            } else {
                continue;
            }
            seen = true;
        }
        if !seen {
            return None;
        }
        let mut out = vec!["run".to_string()];
        for m in &msgs {
            let (kind, name) = match m["type"].as_str() {
                Some("user") => ("message", "user".to_string()),
                Some("gemini") => (
                    "llm",
                    m["model"].as_str().filter(|s| !s.is_empty()).unwrap_or("gemini").into(),
                ),
                Some("info") => ("message", "info".into()),
                Some("warning") => ("message", "warning".into()),
                Some("error") => ("error", "error".into()),
                Some(other) => ("other", other.into()),
                None => ("other", "message".into()),
            };
            out.push(format!("  {kind} {name}"));
            for c in m["toolCalls"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|c| c.is_object())
            {
                let name = c["name"].as_str().filter(|s| !s.is_empty()).unwrap_or("tool");
                let status = call_status(c["status"].as_str()).as_str();
                out.push(format!("    tool {name} {status}"));
            }
        }
        Some(out)
    }

    fn ours(text: &[u8]) -> Option<Vec<String>> {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("session-p.jsonl");
        std::fs::write(&p, text).unwrap();
        let t = GeminiCli.load(&p).ok()?.traces.remove(0);
        Some(
            t.walk()
                .iter()
                .map(|&(i, depth)| {
                    let e = t.event(i);
                    match (depth, e.kind) {
                        (0, _) => "run".to_string(),
                        (_, EventKind::ToolCall) => format!("    tool {} {}", t.name(i), e.status.as_str()),
                        _ => format!("  {} {}", e.kind.as_str(), t.name(i)),
                    }
                })
                .collect(),
        )
    }

    /// Records of every kind, without timestamps (so that file order is the tree's order),
    /// over a few ids (so that upserts and rewinds hit), with odd values now and then.
    fn record() -> impl Strategy<Value = String> {
        let id = prop::sample::select(vec!["a", "b", "c", "d"]);
        let odd = prop::sample::select(vec!["null", "1", "[]", "{}", "\"\"", "\"x\\n\""]);
        let ty = prop_oneof![
            4 => prop::sample::select(vec!["user", "gemini", "info", "warning", "error", "compress"])
                .prop_map(|t| format!(",\"type\":\"{t}\"")),
            1 => odd.clone().prop_map(|v| format!(",\"type\":{v}")),
            1 => Just(String::new()),
        ];
        let status = prop::sample::select(vec!["success", "error", "cancelled", "executing", "weird"]);
        let call = prop_oneof![
            4 => (id.clone(), prop::sample::select(vec!["ls", "read_file", ""]), status)
                .prop_map(|(i, n, s)| format!("{{\"id\":\"t{i}\",\"name\":\"{n}\",\"status\":\"{s}\",\"args\":{{}}}}")),
            1 => odd.clone().prop_map(str::to_string),
        ];
        let calls = prop_oneof![
            2 => Just(String::new()),
            3 => prop::collection::vec(call, 0..3).prop_map(|c| format!(",\"toolCalls\":[{}]", c.join(","))),
            1 => odd.clone().prop_map(|v| format!(",\"toolCalls\":{v}")),
        ];
        let model = prop::sample::select(vec!["", ",\"model\":\"m1\"", ",\"model\":\"\"", ",\"model\":3"]);
        let msg = (id.clone(), ty, model, calls)
            .prop_map(|(i, t, m, c)| format!("{{\"id\":\"{i}\"{t}{m}{c},\"content\":\"x\"}}"));
        let list = prop::collection::vec(msg.clone(), 0..3).prop_map(|l| l.join(","));
        prop_oneof![
            8 => msg,
            1 => list.clone().prop_map(|l| format!("{{\"$set\":{{\"messages\":[{l}],\"lastUpdated\":\"2026-01-01T00:00:00Z\"}}}}")),
            1 => Just("{\"$set\":{\"lastUpdated\":\"2026-01-01T00:00:00Z\"}}".to_string()),
            1 => id.clone().prop_map(|i| format!("{{\"$rewindTo\":\"{i}\"}}")),
            1 => odd.prop_map(|v| format!("{{\"$rewindTo\":{v},\"id\":\"a\",\"type\":\"user\"}}")),
            1 => Just("{\"sessionId\":\"s\",\"projectHash\":\"h\",\"kind\":\"main\"}".to_string()),
            1 => list.prop_map(|l| format!("{{\"sessionId\":\"s\",\"messages\":[{l}]}}")),
            1 => Just("{\"other\":1}".to_string()),
            1 => Just("[\"a\",\"user\"]".to_string()),
            1 => Just("{\"id\":\"a\",".to_string()),
        ]
    }

    /// The skimmer's contract: a message it reads, serde_json reads the same. Ok(true): skimmed.
    fn skim_agrees(line: &[u8]) -> Result<bool, String> {
        let Some(fast) = skim_message(line) else {
            return Ok(false);
        };
        match skim_slow(line) {
            Rec::Msg(slow) if slow == fast => Ok(true),
            slow => Err(format!(
                "skim {fast:?} != serde {slow:?}: {}",
                String::from_utf8_lossy(line)
            )),
        }
    }

    #[test]
    fn the_skimmer_reads_every_message_of_the_samples() {
        let mut n = 0;
        for f in [MAIN, SUB, "replaced.jsonl"] {
            let text = std::fs::read(fixture(ID, f)).unwrap();
            for l in text.split(|&b| b == b'\n').filter(|l| l.starts_with(b"{\"id\"")) {
                n += 1;
                assert_eq!(skim_agrees(l), Ok(true), "{}", String::from_utf8_lossy(l));
            }
        }
        assert!(n >= 15, "{n}");
    }

    #[test]
    fn gemini_counts_are_read_the_quick_way() {
        let raw = r#"{"input":30048,"output":373,"cached":1283,"thoughts":114,"tool":0,"total":30535}"#;
        let c = Counts::plain(raw).expect("the quick way");
        assert_eq!(
            (c.input, c.cached, c.tool, c.total),
            (Some(30048), Some(1283), Some(0), Some(30535))
        );
        assert_eq!(Some(c), Counts::of_value(raw));
        // A count as a string is read the other way, to the same lenient result.
        assert_eq!(Counts::plain(r#"{"input": "12"}"#), None);
        assert_eq!(Counts::of_value(r#"{"input": "12"}"#).unwrap().input, Some(12));
    }

    /// A `tokens` object: Gemini's keys and others, counts as Gemini writes them and in
    /// every other JSON shape a writer might use.
    fn tokens_text() -> impl Strategy<Value = String> {
        let key = prop::sample::select(vec![
            "input",
            "output",
            "total",
            "cached",
            "thoughts",
            "tool",
            "other",
            "in\\u0070ut",
        ]);
        let value = prop_oneof![
            (0u64..100_000).prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            Just("18446744073709551616".to_string()),
            Just("null".to_string()),
            Just("-3".to_string()),
            Just("1.5e3".to_string()),
            Just("007".to_string()),
            (0u64..1000).prop_map(|n| format!("\" {n} \"")),
            Just("[1]".to_string()),
        ];
        prop::collection::vec((key, value), 0..8).prop_map(|kv| {
            let body: Vec<String> = kv.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
            format!("{{{}}}", body.join(", "))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        /// The quick reading of `tokens` reads what it reads as the `Value` one does.
        #[test]
        fn plain_counts_are_the_counts_of_the_value(raw in tokens_text()) {
            if let Some(c) = Counts::plain(&raw) {
                prop_assert_eq!(Some(c), Counts::of_value(&raw), "{}", raw);
            }
        }

        #[test]
        fn the_load_agrees_with_a_plain_fold_of_the_records(lines in prop::collection::vec(record(), 0..14)) {
            let text = lines.join("\n") + "\n";
            prop_assert_eq!(ours(text.as_bytes()), reference(text.as_bytes()), "{}", text);
        }

        #[test]
        fn the_skimmer_never_disagrees_with_serde(line in crate::formats::testing::with_byte_edits(record().prop_map(String::into_bytes), 2)) {
            skim_agrees(&line).map_err(TestCaseError::fail)?;
        }

        #[test]
        fn the_skimmer_on_arbitrary_bytes(line in prop::collection::vec(any::<u8>(), 0..300)) {
            skim_agrees(&line).map_err(TestCaseError::fail)?;
        }
    }

    #[test]
    fn the_differential_test_is_not_vacuous() {
        // Enough generated sessions hold messages, tool calls, upserts and rewinds.
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let (mut calls, mut rewinds, mut sets, mut skimmed) = (0, 0, 0, 0);
        for _ in 0..300 {
            let lines = prop::collection::vec(record(), 0..14)
                .new_tree(&mut runner)
                .unwrap()
                .current();
            let text = lines.join("\n");
            calls += text.contains("\"toolCalls\":[{") as u32;
            rewinds += text.contains("$rewindTo\":\"") as u32;
            sets += text.contains("\"messages\":[{") as u32;
            let out = reference(text.as_bytes()).unwrap_or_default();
            calls += out.iter().any(|l| l.contains("tool ")) as u32;
            for l in &lines {
                skimmed += skim_agrees(l.as_bytes()).unwrap() as u32;
            }
        }
        assert!(calls > 150 && rewinds > 50 && sets > 50, "{calls} {rewinds} {sets}");
        assert!(skimmed > 300, "only {skimmed} records skimmed");
    }
}

#[cfg(test)]
mod gist_tests {
    use super::*;
    use serde_json::json;

    fn g(name: &str, input: Value) -> Option<String> {
        GeminiCli.gist(name, &input)
    }

    #[test]
    fn each_tool_says_what_it_did() {
        // `toolCalls[].args` as the recordings hold them.
        let sh = json!({"command": "ls -F", "description": "List files in the current directory."});
        assert_eq!(g("run_shell_command", sh).as_deref(), Some("ls -F"));
        assert_eq!(
            g("read_file", json!({"file_path": "README.md"})).as_deref(),
            Some("README.md")
        );
        assert_eq!(
            g("read_file", json!({"absolute_path": "/p/a.md"})).as_deref(),
            Some("/p/a.md")
        );
        let w = json!({"content": "# GEMINI.md\nlong text", "file_path": "GEMINI.md"});
        assert_eq!(g("write_file", w).as_deref(), Some("GEMINI.md"));
        let r = json!({"old_string": "a", "file_path": "GEMINI.md", "allow_multiple": false, "new_string": "b"});
        assert_eq!(g("replace", r).as_deref(), Some("GEMINI.md"));
        assert_eq!(
            g("glob", json!({"pattern": "**/*.py", "dir_path": "src"})).as_deref(),
            Some("**/*.py")
        );
        let s = json!({"pattern": "TODO", "include": "*.rs"});
        assert_eq!(g("search_file_content", s).as_deref(), Some("TODO"));
        let f = json!({"prompt": "Summarize https://example.com/news and list the points"});
        assert_eq!(g("web_fetch", f).as_deref(), Some("https://example.com/news"));
        assert_eq!(
            g("google_web_search", json!({"query": "gemini cli"})).as_deref(),
            Some("gemini cli")
        );
        assert_eq!(g("list_directory", json!({"dir_path": "/p"})).as_deref(), Some("/p"));
        let t = json!({"todos": [{"description": "Analyze", "status": "in_progress"}]});
        assert_eq!(g("write_todos", t).as_deref(), Some("0/1 done · Analyze"));
        let a = json!({"agent_name": "generalist", "prompt": "Count the lines"});
        assert_eq!(g("invoke_agent", a).as_deref(), Some("generalist"));
        let c = json!({"result": {"response": "done"}});
        assert_eq!(g("complete_task", c), None);
    }
}
