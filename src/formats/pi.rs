//! pi coding agent sessions (badlogic/pi-mono): `~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl`,
//! one entry a line, as `packages/coding-agent/src/core/session-manager.ts` writes them (session
//! version 3):
//! - a `session` header (`id`, `timestamp`, `cwd`, `parentSession` or `branchedFrom`);
//! - `message` entries `{id, parentId, timestamp, message}` whose `message` is one of pi-ai's
//!   messages: `user` (`content` text or parts), `assistant` (`content` of `text`,
//!   `thinking` and `toolCall` blocks, `model`, `provider`, `usage`, `stopReason`,
//!   `errorMessage`), `toolResult` (`toolCallId`, `toolName`, `content`, `isError`), and the
//!   agent's own `bashExecution` (a `!command` the user ran), `custom`, `branchSummary`,
//!   `compactionSummary`;
//! - `model_change`, `thinking_level_change`, `compaction` (`summary`), `branch_summary`,
//!   `custom` (extension state), `custom_message`, `label` and `session_info` (`name`).
//!
//! Traps this reader handles:
//! - entries form a tree (`parentId`): a session the user branched with `/tree` holds
//!   several paths; they are shown in file order, each reply with its blocks;
//! - a tool call is a block of an assistant message, its result a `toolResult` message line
//!   of its own, joined by `toolCallId`; a result naming no waiting call is a warning;
//! - usage is per reply: `input` (without cache), `output`, `cacheRead`, `cacheWrite`, and
//!   pi's own `cost.total` in dollars, kept as the recorded cost;
//! - pi skips lines that are not JSON when it reads a session: such a line is a warning
//!   naming it, not an error; a known entry of the wrong shape is an error;
//! - drift (formats/mod.rs): an entry type or message role pi did not write before is
//!   skipped quietly, counted, and shown when it carries text.
//!
//! On the shared engine (DESIGN §4): the skim reads an entry's envelope and the type, id and
//! byte range of each block; payloads stay on disk and are decoded when shown.

use super::engine::{self, Records};
use super::jsonl::{self, Follow, LineLoc, LineParser, Sink, json_error};
use super::skim::Raw;
use super::{Format, LoadError, Loaded, Probe, raw_text, stem};
use crate::model::*;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub struct Pi;

/// Fields every entry repeats (left out of a generic event's payload).
const ENVELOPE: &[&str] = &["type", "id", "parentId", "timestamp"];
/// Entry types pi writes that the tree does not show (extension state, bookmarks).
const BOOKKEEPING: &[&str] = &["thinking_level_change", "custom", "label"];

impl Format for Pi {
    fn id(&self) -> &'static str {
        "pi"
    }
    fn describe(&self) -> &'static str {
        "pi coding agent session, ~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        let (mut own, mut header) = (0, false);
        for v in p.lines().take(20) {
            let Some(o) = v.as_object() else { continue };
            match o.get("type").and_then(Value::as_str) {
                Some("session") if o.contains_key("id") && o.contains_key("cwd") => header = true,
                Some("message") => match o.get("message").and_then(|m| m.get("role")).and_then(Value::as_str) {
                    Some("toolResult" | "bashExecution" | "compactionSummary" | "branchSummary") => own += 1,
                    Some("assistant") => {
                        let blocks = o
                            .get("message")
                            .and_then(|m| m.get("content"))
                            .and_then(Value::as_array);
                        let call = blocks.is_some_and(|b| {
                            b.iter()
                                .any(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"))
                        });
                        if call || o.get("message").and_then(|m| m.get("stopReason")).is_some() {
                            own += 1;
                        }
                    }
                    _ => {}
                },
                Some("model_change" | "thinking_level_change" | "compaction" | "branch_summary" | "session_info") => {
                    own += 1
                }
                // Another agent's lines (Claude Code's, Droid's `session_start`).
                Some("user" | "assistant" | "session_start") => return 0,
                _ => {}
            }
        }
        if header {
            100
        } else if own > 0 {
            80
        } else {
            0
        }
    }

    fn summary_inputs(&self, path: &Path) -> Option<Vec<PathBuf>> {
        Some(vec![path.to_path_buf()])
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let mut f = self.follow(path).expect("a file");
        f.poll()?;
        f.finish("pi session entries")
    }

    fn follow(&self, path: &Path) -> Option<Follow> {
        let p = path.to_path_buf();
        Some(Follow::new(
            path,
            Box::new(move || Box::new(Parser::new(&p)) as Box<dyn LineParser>),
        ))
    }

    fn decode_payload(&self, _t: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
        decode(ev, raw)
    }

    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
}

/// The envelope of one entry, every field raw: what a field means depends on the type.
#[derive(Deserialize, Default)]
struct LineRec<'a> {
    #[serde(borrow, rename = "type", default)]
    ty: Option<Raw<'a>>,
    #[serde(borrow, default)]
    id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    timestamp: Option<Raw<'a>>,
    #[serde(borrow, default)]
    message: Option<Raw<'a>>,
    #[serde(borrow, default)]
    cwd: Option<Raw<'a>>,
    #[serde(borrow, default)]
    name: Option<Raw<'a>>,
    #[serde(borrow, rename = "modelId", default)]
    model_id: Option<Raw<'a>>,
    #[serde(borrow, rename = "parentSession", default)]
    parent_session: Option<Raw<'a>>,
    #[serde(borrow, rename = "branchedFrom", default)]
    branched_from: Option<Raw<'a>>,
}

/// The index fields of a `message` entry's message.
#[derive(Deserialize, Default)]
struct MessageRec<'a> {
    #[serde(borrow, default)]
    role: Option<Raw<'a>>,
    #[serde(borrow, default)]
    content: Option<Raw<'a>>,
    #[serde(borrow, rename = "toolCallId", default)]
    tool_call_id: Option<Raw<'a>>,
    #[serde(borrow, rename = "isError", default)]
    is_error: Option<Raw<'a>>,
    #[serde(borrow, default)]
    model: Option<Raw<'a>>,
    #[serde(borrow, default)]
    usage: Option<Raw<'a>>,
    #[serde(borrow, rename = "stopReason", default)]
    stop_reason: Option<Raw<'a>>,
    #[serde(borrow, rename = "exitCode", default)]
    exit_code: Option<Raw<'a>>,
    #[serde(borrow, default)]
    cancelled: Option<Raw<'a>>,
}

#[derive(Deserialize, Default)]
struct BlockIdx<'a> {
    #[serde(borrow, rename = "type", default)]
    ty: Option<Raw<'a>>,
    #[serde(borrow, default)]
    id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    name: Option<Raw<'a>>,
}

/// What the skim reads of one line.
pub(crate) struct Rec<'a> {
    env: LineRec<'a>,
    msg: Option<MessageRec<'a>>,
    /// The blocks of an assistant message: each as its text in the line and its fields.
    blocks: Vec<(&'a str, BlockIdx<'a>)>,
    problem: Option<String>,
}

fn text<'a>(r: Option<Raw<'a>>) -> Option<Cow<'a, str>> {
    raw_text(r?.0)
}

fn skim(line: &[u8]) -> Option<Rec<'_>> {
    let line = std::str::from_utf8(line).ok()?;
    let env: LineRec = serde_json::from_str(line).ok()?;
    let mut rec = Rec {
        env,
        msg: None,
        blocks: Vec::new(),
        problem: None,
    };
    if text(rec.env.ty).as_deref() != Some("message") {
        return Some(rec);
    }
    let Some(m) = rec.env.message else {
        rec.problem = Some("a message entry without its message".into());
        return Some(rec);
    };
    let m: MessageRec = match serde_json::from_str(m.0) {
        Ok(m) => m,
        Err(e) => {
            rec.problem = Some(format!("message: {}", json_error(&e)));
            return Some(rec);
        }
    };
    if text(m.role).as_deref() == Some("assistant")
        && let Some(c) = m.content.filter(|c| c.0.starts_with('['))
    {
        match serde_json::from_str::<Vec<Raw>>(c.0) {
            Ok(blocks) => {
                for b in blocks {
                    match serde_json::from_str::<BlockIdx>(b.0) {
                        Ok(idx) => rec.blocks.push((b.0, idx)),
                        Err(e) => rec.problem = Some(format!("content block: {}", json_error(&e))),
                    }
                }
            }
            Err(e) => rec.problem = Some(format!("message.content: {}", json_error(&e))),
        }
    }
    rec.msg = Some(m);
    Some(rec)
}

/// pi-ai's usage: `input` (without cache), `output`, `cacheRead`, `cacheWrite`, and
/// `cost.total` in dollars (0 when pi had no price: unknown).
fn usage_of(u: &Value) -> Usage {
    let n = |k: &str| super::lenient_u64(u.get(k));
    let cost = u
        .get("cost")
        .and_then(|c| c.get("total"))
        .and_then(crate::model::micros::micros_of_json)
        .filter(|&c| c > 0);
    Usage {
        input: n("input"),
        output: n("output"),
        cache_read: n("cacheRead"),
        cache_write: n("cacheWrite"),
        cost,
        ..Default::default()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    Nothing,
    Prompt,
    Reply,
    Failed,
}

/// The pi line parser: one trace a file.
pub struct Parser {
    path: PathBuf,
    root: Option<u32>,
    file: u16,
    waiting: std::collections::HashMap<Box<str>, u32>,
    model: Option<String>,
    last: Last,
    /// The session's own name (`session_info`), which wins over the first prompt.
    named: bool,
    prompt_named: bool,
    first_ts: Option<i64>,
    last_ts: Option<i64>,
}

impl Parser {
    pub fn new(path: &Path) -> Parser {
        Parser {
            path: path.to_path_buf(),
            root: None,
            file: 0,
            waiting: Default::default(),
            model: None,
            last: Last::Nothing,
            named: false,
            prompt_named: false,
            first_ts: None,
            last_ts: None,
        }
    }

    fn ensure(&mut self, loc: LineLoc, sink: &mut Sink) -> u32 {
        if let Some(r) = self.root {
            sink.touch(0);
            return r;
        }
        // `<time>_<id>.jsonl`: the id until the header says it.
        let s = stem(&self.path);
        let id = s.split_once('_').map_or(s.as_str(), |(_, id)| id).to_string();
        let mut t = Trace::new(RunMeta {
            id: id.clone(),
            format: "pi",
            source: sink.path.clone(),
            ..Default::default()
        });
        self.file = t.add_file(sink.path.clone());
        let root = t.add(NewEvent {
            origin: loc.origin(self.file),
            ..NewEvent::new(EventKind::Run, &id)
        });
        sink.push_trace(t);
        self.root = Some(root);
        root
    }

    fn set_attr(sink: &mut Sink, k: &str, v: Option<Cow<str>>) {
        let Some(v) = v.filter(|v| !v.is_empty()) else { return };
        let attrs = &mut sink.traces[0].meta.attributes;
        match attrs.iter_mut().find(|(x, _)| x == k) {
            Some(slot) => slot.1 = Value::String(v.into_owned()),
            None => attrs.push((k.to_string(), Value::String(v.into_owned()))),
        }
    }

    fn apply_rec(&mut self, rec: &Rec, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let root = self.ensure(loc, sink);
        if let Some(p) = &rec.problem {
            sink.error(loc.line, p.clone());
        }
        let e = &rec.env;
        let ts = text(e.timestamp).and_then(|s| parse_timestamp_str(&s));
        if let Some(t) = ts {
            self.first_ts = Some(self.first_ts.map_or(t, |f| f.min(t)));
            self.last_ts = Some(self.last_ts.map_or(t, |l| l.max(t)));
        }
        let origin = loc.origin(self.file);
        let ty = text(e.ty);
        match ty.as_deref() {
            Some("session") => {
                if let Some(id) = text(e.id).filter(|s| !s.is_empty()) {
                    sink.traces[0].meta.id = id.into_owned();
                }
                Self::set_attr(sink, "cwd", text(e.cwd));
                Self::set_attr(sink, "parentSession", text(e.parent_session));
                Self::set_attr(sink, "branchedFrom", text(e.branched_from));
            }
            Some("message") => {
                if let Some(m) = &rec.msg {
                    self.message(m, rec, line, loc, ts, root, sink);
                }
            }
            Some("model_change") => {
                if let Some(m) = text(e.model_id) {
                    self.model = Some(m.into_owned());
                }
            }
            Some("session_info") => {
                if let Some(n) = text(e.name).filter(|n| !n.trim().is_empty()) {
                    sink.traces[0].meta.name = Some(one_line(&n));
                    self.named = true;
                }
            }
            Some(name @ ("compaction" | "branch_summary" | "custom_message")) => {
                let name = name.to_string();
                sink.traces[0].add(NewEvent {
                    parent: Parent::Index(root),
                    start: ts,
                    status: Status::Ok,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::Other, &name)
                });
            }
            Some(t) if BOOKKEEPING.contains(&t) => {}
            other => sink.drift(other.unwrap_or("entry"), line, root, origin, ts),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn message(
        &mut self,
        m: &MessageRec,
        rec: &Rec,
        line: &[u8],
        loc: LineLoc,
        ts: Option<i64>,
        root: u32,
        sink: &mut Sink,
    ) {
        let origin = loc.origin(self.file);
        let role = text(m.role);
        match role.as_deref() {
            Some("user") => {
                sink.traces[0].add(NewEvent {
                    id: text(rec.env.id).as_deref(),
                    parent: Parent::Index(root),
                    start: ts,
                    status: Status::Ok,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::Message(Role::User), "user")
                });
                self.last = Last::Prompt;
                if !self.named
                    && !self.prompt_named
                    && let Some(c) = m.content.and_then(|c| serde_json::from_str::<Value>(c.0).ok())
                {
                    let s = content_text(&c);
                    if !s.trim().is_empty() {
                        sink.traces[0].meta.name = Some(one_line(&s));
                        self.prompt_named = true;
                    }
                }
            }
            Some("assistant") => {
                let model = text(m.model).map(Cow::into_owned).or_else(|| self.model.clone());
                if let Some(x) = &model {
                    self.model = Some(x.clone());
                }
                let usage = m
                    .usage
                    .and_then(|u| serde_json::from_str::<Value>(u.0).ok())
                    .map(|u| usage_of(&u))
                    .filter(|u| !u.is_empty());
                let stop = text(m.stop_reason);
                let status = match stop.as_deref() {
                    Some("error") => Status::Error,
                    Some("aborted") => Status::Unknown,
                    _ => Status::Ok,
                };
                self.last = if status == Status::Error {
                    Last::Failed
                } else {
                    Last::Reply
                };
                let name = model.clone().unwrap_or_else(|| "assistant".into());
                let parent = sink.traces[0].add(NewEvent {
                    id: text(rec.env.id).as_deref(),
                    parent: Parent::Index(root),
                    start: ts,
                    status,
                    usage,
                    model: model.as_deref(),
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::LlmCall, &name)
                });
                for (raw, b) in &rec.blocks {
                    let o = engine::sub_origin(loc, self.file, line, raw.as_bytes());
                    let bty = text(b.ty);
                    let (kind, name) = match bty.as_deref() {
                        Some("text") => (EventKind::Message(Role::Assistant), Cow::Borrowed("assistant")),
                        Some("thinking") => (EventKind::Other, Cow::Borrowed("thinking")),
                        Some("image") => (EventKind::Other, Cow::Borrowed("image")),
                        Some("toolCall") => (EventKind::ToolCall, text(b.name).unwrap_or(Cow::Borrowed("tool"))),
                        other => {
                            let name = other.unwrap_or("block").to_string();
                            sink.drift(&name, raw.as_bytes(), parent, o, ts);
                            continue;
                        }
                    };
                    let call = kind == EventKind::ToolCall;
                    let id = if call {
                        text(b.id).filter(|s| !s.is_empty())
                    } else {
                        None
                    };
                    let i = sink.traces[0].add(NewEvent {
                        id: id.as_deref(),
                        parent: Parent::Index(parent),
                        start: ts,
                        status: if call { Status::Pending } else { Status::Ok },
                        payload: PayloadRef::Deferred,
                        origin: o,
                        ..NewEvent::new(kind, &name)
                    });
                    if let Some(id) = id {
                        self.waiting.insert(id.into(), i);
                    }
                }
            }
            Some("toolResult") => {
                let failed = m.is_error.is_some_and(|r| r.0 == "true");
                match text(m.tool_call_id).and_then(|id| self.waiting.remove(id.as_ref())) {
                    Some(i) => {
                        let e = sink.traces[0].event_mut(i);
                        e.status = if failed { Status::Error } else { Status::Ok };
                        if let (Some(a), Some(b)) = (e.start.get(), ts) {
                            e.duration = Some((b - a).max(0)).into();
                        }
                        e.origin2 = Some(Box::new(origin));
                    }
                    None => {
                        sink.warning(Some(loc.line), "a tool result with no call waiting for it");
                        sink.traces[0].add(NewEvent {
                            parent: Parent::Index(root),
                            start: ts,
                            status: if failed { Status::Error } else { Status::Unknown },
                            payload: PayloadRef::Deferred,
                            origin,
                            ..NewEvent::new(EventKind::Other, "toolResult")
                        });
                    }
                }
                self.last = Last::Prompt;
            }
            Some("bashExecution") => {
                // A `!command` the user ran in pi's editor: not the agent's call.
                let exit = m.exit_code.and_then(|c| c.0.parse::<i64>().ok());
                let cancelled = m.cancelled.is_some_and(|c| c.0 == "true");
                let status = match exit {
                    Some(0) => Status::Ok,
                    Some(_) => Status::Error,
                    None if cancelled => Status::Unknown,
                    None => Status::Ok,
                };
                sink.traces[0].add(NewEvent {
                    parent: Parent::Index(root),
                    start: ts,
                    status,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::Other, "bashExecution")
                });
            }
            Some(r @ ("custom" | "branchSummary" | "compactionSummary")) => {
                let r = r.to_string();
                sink.traces[0].add(NewEvent {
                    parent: Parent::Index(root),
                    start: ts,
                    status: Status::Ok,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::Other, &r)
                });
            }
            other => {
                let name = other.unwrap_or("message").to_string();
                sink.drift(&name, line, root, origin, ts);
            }
        }
    }
}

/// The text of a message's content: a string, or its `text` parts.
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn one_line(s: &str) -> String {
    let first = s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let mut n: String = first.chars().take(99).collect();
    if first.chars().count() > 99 {
        n.push('…');
    }
    n
}

impl Records for Parser {
    type Rec<'a> = Rec<'a>;

    fn skim<'a>(line: &'a [u8], slot: &mut Option<Rec<'a>>) {
        *slot = skim(line);
    }

    fn apply(&mut self, rec: Option<&Rec<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        match rec {
            Some(r) => self.apply_rec(r, line, loc, sink),
            None => {
                self.ensure(loc, sink);
                // pi's own reader skips a line it cannot parse and reads on: said, not an error.
                let why = jsonl::why_unreadable::<LineRec>(line, "not a JSON object");
                sink.warning(Some(loc.line), format!("{why}; skipped, as pi skips it"));
            }
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

    fn settle(&mut self, sink: &mut Sink) {
        let (Some(root), Some(t)) = (self.root, sink.traces.first_mut()) else {
            return;
        };
        let status = if !self.waiting.is_empty() {
            RunStatus::Running
        } else {
            match self.last {
                Last::Reply => RunStatus::Ok,
                Last::Failed => RunStatus::Error,
                Last::Prompt | Last::Nothing => RunStatus::Unknown,
            }
        };
        t.meta.status = status;
        t.meta.start = self.first_ts;
        t.meta.end = self.last_ts;
        t.meta.model = self.model.clone();
        let name = t.meta.name.clone();
        t.event_mut(root).status = status.event_status();
        if let Some(n) = name {
            let r = t.strings.intern(&n);
            t.event_mut(root).name = r;
        }
    }
}

/// Rebuild a payload from its record(s): a block (a call's `toolCall`, then its
/// `toolResult` line), or an entry.
fn decode(ev: &Event, raw: &[&[u8]]) -> Payload {
    let mut out = Payload::default();
    for bytes in raw {
        let mut v: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => {
                out.error = Some(ErrorInfo::unreadable(&e));
                return out;
            }
        };
        if ev.kind == EventKind::Other && is_drift(&v) {
            return super::drift_payload(&v, ENVELOPE);
        }
        let ty = v.get("type").and_then(Value::as_str).unwrap_or("").to_string();
        match ty.as_str() {
            "toolCall" => {
                out.input = take(&mut v, "arguments");
                if let Some(id) = take(&mut v, "id") {
                    out.extra.push(("id".into(), id));
                }
            }
            "text" => out.output = take(&mut v, "text"),
            "thinking" => out.output = take(&mut v, "thinking"),
            "message" => {
                let mut m = take(&mut v, "message").unwrap_or(Value::Null);
                match m.get("role").and_then(Value::as_str).unwrap_or("") {
                    "user" => out.input = take(&mut m, "content").map(|c| Value::String(content_text(&c))),
                    "toolResult" => {
                        out.output = take(&mut m, "content").map(|c| match c {
                            Value::Array(_) => Value::String(content_text(&c)),
                            other => other,
                        });
                        if m.get("isError") == Some(&Value::Bool(true)) {
                            out.error = Some(ErrorInfo {
                                message: "the tool reported an error".into(),
                                ..Default::default()
                            });
                        }
                        if let Some(d) = take(&mut m, "details") {
                            out.extra.push(("details".into(), d));
                        }
                    }
                    "assistant" => {
                        if let Some(msg) = m.get("errorMessage").and_then(Value::as_str) {
                            out.error = Some(ErrorInfo {
                                message: msg.to_string(),
                                ..Default::default()
                            });
                        }
                        for k in ["stopReason", "usage", "provider", "api"] {
                            if let Some(x) = take(&mut m, k) {
                                out.extra.push((k.into(), x));
                            }
                        }
                        out.output = take(&mut m, "content");
                    }
                    "bashExecution" => {
                        out.input = take(&mut m, "command");
                        out.output = take(&mut m, "output");
                        if let Some(c) = take(&mut m, "exitCode") {
                            out.extra.push(("exitCode".into(), c));
                        }
                    }
                    _ => {
                        out.output = take(&mut m, "summary")
                            .or_else(|| take(&mut m, "content").map(|c| Value::String(content_text(&c))));
                    }
                }
            }
            "compaction" | "branch_summary" => out.output = take(&mut v, "summary"),
            "custom_message" => out.output = take(&mut v, "content").map(|c| Value::String(content_text(&c))),
            _ => out.input = Some(v),
        }
    }
    out
}

/// An entry, role or block of a kind pi did not write before (see `Parser::drift`).
fn is_drift(v: &Value) -> bool {
    const ENTRIES: [&str; 10] = [
        "session",
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    ];
    const BLOCKS: [&str; 4] = ["text", "thinking", "image", "toolCall"];
    const ROLES: [&str; 7] = [
        "user",
        "assistant",
        "toolResult",
        "bashExecution",
        "custom",
        "branchSummary",
        "compactionSummary",
    ];
    let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
    if ty == "message" {
        let role = v
            .get("message")
            .and_then(|m| m.get("role"))
            .and_then(Value::as_str)
            .unwrap_or("");
        return !ROLES.contains(&role);
    }
    v.is_object() && !ENTRIES.contains(&ty) && !BLOCKS.contains(&ty)
}

fn take(v: &mut Value, k: &str) -> Option<Value> {
    v.get_mut(k).filter(|x| !x.is_null()).map(Value::take)
}

/// A call's gist by pi's tools (`read`, `bash`, `edit`, `write`, `grep`, `find`, `ls`).
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{generic, key_or_generic};
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "bash" => by(&["command"]),
        "read" | "edit" | "write" => by(&["path", "file_path"]),
        "grep" | "find" => by(&["pattern", "path"]),
        "ls" => by(&["path"]),
        _ => generic(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::fixture;
    use proptest::prelude::*;

    const FINISHED: &str = "--home-dev-shop--/2026-11-20T09-00-00-000Z_8a1c2e3f-4b5d-4e6f-9a0b-1c2d3e4f5a6b.jsonl";

    fn load(name: &str) -> Trace {
        let l = Pi.load(&fixture("pi", name)).unwrap();
        assert_eq!(l.traces.len(), 1);
        l.traces.into_iter().next().unwrap()
    }

    fn calls(t: &Trace) -> Vec<(String, Status)> {
        (0..t.len() as u32)
            .filter(|&i| t.event(i).kind == EventKind::ToolCall)
            .map(|i| (t.name(i).to_string(), t.event(i).status))
            .collect()
    }

    #[test]
    fn a_finished_session_joins_results_and_keeps_usage_and_cost() {
        let t = load(FINISHED);
        assert_eq!(t.meta.id, "8a1c2e3f-4b5d-4e6f-9a0b-1c2d3e4f5a6b");
        assert_eq!(t.meta.name.as_deref(), Some("Price rounding"));
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.model.as_deref(), Some("claude-sonnet-4-5"));
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(
            calls(&t),
            vec![
                ("read".to_string(), Status::Ok),
                ("bash".to_string(), Status::Error),
                ("edit".to_string(), Status::Ok)
            ]
        );
        let c = t.counts();
        assert_eq!(c.llm_calls, 4);
        assert_eq!(
            c.tokens,
            (12 + 95 + 3800 + 1200) + (40 + 60 + 5000) + (30 + 80 + 5040) + (25 + 70 + 5120)
        );
        let llm = (0..t.len() as u32)
            .find(|&i| t.event(i).kind == EventKind::LlmCall)
            .unwrap();
        assert_eq!(t.event(llm).usage.get().unwrap().cost, Some(9410));
        let bash = (0..t.len() as u32).find(|&i| t.name(i) == "bash").unwrap();
        let p = crate::formats::payload(&t, t.event(bash));
        assert_eq!(p.input.unwrap()["command"], "python -m pytest -q");
        assert!(p.error.is_some());
        assert!(p.output.unwrap().as_str().unwrap().contains("No module named pytest"));
        assert_eq!(
            super::super::resume::command(&t.meta).as_deref(),
            Some("cd '/home/dev/shop' && pi --session 8a1c2e3f-4b5d-4e6f-9a0b-1c2d3e4f5a6b")
        );
        assert_eq!(
            Pi.gist("bash", &serde_json::json!({"command": "ls"})),
            Some("ls".into())
        );
    }

    #[test]
    fn a_running_session_and_a_failed_reply() {
        let t = load("running.jsonl");
        assert_eq!(t.meta.status, RunStatus::Running);
        assert_eq!(calls(&t), vec![("bash".to_string(), Status::Pending)]);
        let t = load("failed-reply.jsonl");
        assert_eq!(t.meta.status, RunStatus::Error);
        let llm = (0..t.len() as u32)
            .rev()
            .find(|&i| t.event(i).kind == EventKind::LlmCall)
            .unwrap();
        let p = crate::formats::payload(&t, t.event(llm));
        assert_eq!(p.error.unwrap().message, "429 rate_limit_error: slow down");
    }

    #[test]
    fn a_damaged_line_is_named_and_the_rest_loads() {
        let t = load("damaged.jsonl");
        assert_eq!(t.diagnostics.len(), 1, "{:?}", t.diagnostics);
        let d = &t.diagnostics[0];
        assert_eq!(d.line, Some(3));
        assert_eq!(d.severity, Severity::Warning);
        assert!(d.path.ends_with("damaged.jsonl"));
        assert_eq!(calls(&t), vec![("read".to_string(), Status::Ok)]);
        // A known entry of the wrong shape is an error.
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        std::fs::write(
            &p,
            concat!(
                r#"{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00Z","cwd":"/"}"#,
                "\n",
                r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":"oops"}"#,
                "\n"
            ),
        )
        .unwrap();
        let t = Pi.load(&p).unwrap().traces.remove(0);
        assert_eq!(t.diagnostics.len(), 1);
        assert_eq!(
            (t.diagnostics[0].severity, t.diagnostics[0].line),
            (Severity::Error, Some(2))
        );
    }

    #[test]
    fn detection_claims_pi_sessions_and_not_droids() {
        let det = |p: &Path| Pi.detect(&Probe::open(p).unwrap());
        assert_eq!(det(&fixture("pi", FINISHED)), 100);
        assert_eq!(det(&fixture("pi", "running.jsonl")), 100);
        let droid = fixture("factory-droid", "sessions/-home-dev-shop/finished.jsonl");
        assert_eq!(det(&droid), 0);
        assert_eq!(crate::formats::detect(&droid).unwrap().id(), "factory-droid");
        assert_eq!(crate::formats::detect(&fixture("pi", FINISHED)).unwrap().id(), "pi");
    }

    #[test]
    fn live_follow_joins_the_result_when_it_arrives() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        let text = std::fs::read_to_string(fixture("pi", "running.jsonl")).unwrap();
        std::fs::write(&p, &text).unwrap();
        let mut f = Pi.follow(&p).unwrap();
        f.poll().unwrap();
        assert_eq!(f.sink.traces[0].meta.status, RunStatus::Running);
        let more = concat!(
            r#"{"type":"message","id":"r4","parentId":"r3","timestamp":"2026-11-22T10:00:09.000Z","message":{"role":"toolResult","toolCallId":"toolu_r1","toolName":"bash","content":[{"type":"text","text":"ok"}],"isError":false,"timestamp":1795341609000}}"#,
            "\n",
            r#"{"type":"message","id":"r5","parentId":"r4","timestamp":"2026-11-22T10:00:11.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Built."}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1795341611000}}"#,
            "\n"
        );
        std::fs::write(&p, format!("{text}{more}")).unwrap();
        f.poll().unwrap();
        let t = &f.sink.traces[0];
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(calls(t), vec![("bash".to_string(), Status::Ok)]);
    }

    fn unknown_record(rng: &mut crate::formats::testing::Rng, near: &Value) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("type".into(), Value::String(rng.type_name()));
        m.insert("id".into(), Value::String(format!("drift{}", rng.next() % 10_000)));
        for k in ["parentId", "timestamp"] {
            if let Some(v) = near.get(k) {
                m.insert(k.into(), v.clone());
            }
        }
        if let Some(t) = rng.maybe_text() {
            m.insert("summary".into(), Value::String(t));
        }
        m.insert(rng.type_name(), rng.value());
        Value::Object(m)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn drift_is_skipped_quietly(seed in any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "pi",
                &[
                    "tests/fixtures/pi/--home-dev-shop--/2026-11-20T09-00-00-000Z_8a1c2e3f-4b5d-4e6f-9a0b-1c2d3e4f5a6b.jsonl",
                    "tests/fixtures/pi/running.jsonl",
                    "tests/fixtures/pi/failed-reply.jsonl",
                    "sample-traces/pi/--home-dev-inventory--/2026-11-23T15-20-00-000Z_2c3d4e5f-6a7b-4c8d-9e0f-a1b2c3d4e5f6.jsonl",
                ],
            );
            crate::formats::testing::drift_check(&sources, seed, &|f, rng| {
                if f.extension().is_some_and(|x| x == "jsonl") {
                    crate::formats::testing::drift_jsonl(f, rng, &unknown_record)
                } else {
                    0
                }
            });
        }
    }
}
