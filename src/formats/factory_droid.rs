//! Factory Droid sessions. Two dialects, one reader (agent-sessions' `DroidSessionParser`
//! reads both; Droid itself is closed source, so its readers and its own `droid exec` output
//! are the spec):
//! - the interactive session store, `~/.factory/sessions/<encoded cwd>/<uuid>.jsonl`: a
//!   `session_start` line (`id`, `title`, `cwd`, `version`), then `message` lines
//!   `{id, parentId, timestamp, message: {role, content: [blocks]}}` with Anthropic-style
//!   `text`, `thinking`, `tool_use` and `tool_result` blocks; beside it
//!   `<uuid>.settings.json` holds the session's model and its token totals (`tokenUsage`:
//!   `inputTokens`, `outputTokens`, `thinkingTokens`, `cacheReadTokens`,
//!   `cacheCreationTokens`, as ccusage's Droid reader sums them);
//! - `droid exec --output-format stream-json` logs: `system` (init: `model`, `cwd`),
//!   `message` (`role`, `text`), `tool_call` (`toolCallId` or, in newer versions, `id`;
//!   `toolName`, `parameters`), `tool_result` (the same id, `value`, `isError`),
//!   `completion` (`finalText`, `usage` with Anthropic names) and `error` records, each with
//!   `session_id` (or `sessionId`) and a `timestamp` (ISO-8601 or epoch milliseconds).
//!
//! Traps this reader handles:
//! - an assistant `message` line is one model reply (an LLM call) whose blocks hang under it;
//!   a `tool_result` block comes back in a later *user* line and joins its call by
//!   `tool_use_id`; a result naming no waiting call is a warning, shown on its own;
//! - the store records no tokens per call: the session's totals (from the settings file,
//!   re-read as the session grows) are the run's own usage, priced at its model;
//! - a store session has no end record: a call still waiting means it is running, else the
//!   last record decides (an assistant reply: ok); a stream log ends with `completion` (ok)
//!   or `error` (error);
//! - drift (formats/mod.rs): a record or block type neither dialect knows is skipped quietly,
//!   counted, and shown when it carries text;
//! - Droid's subagents (the `Task` tool) run as sessions of their own, whose first prompt is
//!   the task; nothing in either file links them, so each is its own run.
//!
//! On the shared engine (DESIGN §4): the skim reads a line's envelope and the type, id and
//! byte range of each block; payloads stay on disk and are decoded from the record(s) when
//! shown.

use super::engine::{self, Records};
use super::jsonl::{self, Follow, LineLoc, LineParser, Sink, json_error};
use super::skim::Raw;
use super::{Format, LoadError, Loaded, Probe, raw_text, stem};
use crate::model::*;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub struct FactoryDroid;

/// Fields every record repeats (left out of a generic event's payload).
const ENVELOPE: &[&str] = &["type", "id", "parentId", "timestamp", "session_id", "sessionId"];
/// The largest settings file read (a few hundred bytes in practice).
const SETTINGS_LIMIT: u64 = 1 << 20;

impl Format for FactoryDroid {
    fn id(&self) -> &'static str {
        "factory-droid"
    }
    fn describe(&self) -> &'static str {
        "Factory Droid session, ~/.factory/sessions/<project>/<id>.jsonl (or a `droid exec --output-format stream-json` log)"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        let (mut store, mut stream, mut session_id, mut primary, mut foreign) = (0, 0, false, false, 0);
        for v in p.lines().take(20) {
            let Some(o) = v.as_object() else {
                foreign += 1;
                continue;
            };
            let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
            if o.contains_key("session_id") || o.contains_key("sessionId") {
                session_id = true;
            }
            match ty {
                "session_start" => return 100,
                "message" => match o.get("message").and_then(Value::as_object) {
                    Some(m) => match store_message_kind(m) {
                        Some(true) => store += 1,
                        Some(false) => {}
                        None => foreign += 1,
                    },
                    None if o.contains_key("role") && o.contains_key("text") => {
                        stream += 1;
                        primary = true;
                    }
                    None => foreign += 1,
                },
                "tool_call" if o.contains_key("toolName") => {
                    stream += 1;
                    primary = true;
                }
                "completion" if o.contains_key("finalText") => {
                    stream += 1;
                    primary = true;
                }
                "system" | "tool_call" | "tool_result" | "completion" => stream += 1,
                // Another format's line (Claude Code's `user`/`assistant`, pi's `session`).
                "user" | "assistant" | "session" | "" => foreign += 1,
                _ => {}
            }
        }
        if foreign > 0 {
            return 0;
        }
        let own_place = p
            .path
            .ancestors()
            .skip(1)
            .any(|a| a.ends_with(".factory/sessions") || a.ends_with(".factory/projects"));
        if stream >= 2 && session_id && primary {
            return 90;
        }
        if store > 0 {
            return if own_place { 100 } else { 80 };
        }
        0
    }

    fn summary_inputs(&self, path: &Path) -> Option<Vec<PathBuf>> {
        let mut v = vec![path.to_path_buf()];
        let s = settings_path(path);
        if s.is_file() {
            v.push(s);
        }
        Some(v)
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let mut f = self.follow(path).expect("a file");
        f.poll()?;
        f.finish("Factory Droid session records")
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

/// Whether a store `message` object is Droid's (its blocks are Anthropic's `tool_use` /
/// `tool_result`: Some(true)), says nothing either way (text only: Some(false)), or is
/// another agent's (pi's `toolCall` blocks and `toolResult` role: None).
fn store_message_kind(m: &serde_json::Map<String, Value>) -> Option<bool> {
    let role = m.get("role").and_then(Value::as_str)?;
    if !matches!(role, "user" | "assistant" | "system") {
        return None;
    }
    let blocks = m.get("content")?.as_array()?;
    let mut own = false;
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("tool_use" | "tool_result") => own = true,
            Some("toolCall") => return None,
            _ => {}
        }
    }
    Some(own)
}

/// `<id>.jsonl` → `<id>.settings.json` beside it.
fn settings_path(path: &Path) -> PathBuf {
    path.with_file_name(format!("{}.settings.json", stem(path)))
}

/// The envelope of one line, every field as its raw JSON: which fields mean what depends on
/// the record's type, and a type Droid adds may use a known name for something else.
#[derive(Deserialize, Default)]
struct LineRec<'a> {
    #[serde(borrow, rename = "type", default)]
    ty: Option<Raw<'a>>,
    #[serde(borrow, default)]
    id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    timestamp: Option<Raw<'a>>,
    #[serde(borrow, default)]
    role: Option<Raw<'a>>,
    #[serde(borrow, default)]
    message: Option<Raw<'a>>,
    #[serde(borrow, rename = "toolCallId", default)]
    tool_call_id: Option<Raw<'a>>,
    #[serde(borrow, rename = "toolName", default)]
    tool_name: Option<Raw<'a>>,
    #[serde(borrow, rename = "isError", default)]
    is_error: Option<Raw<'a>>,
    #[serde(borrow, default)]
    model: Option<Raw<'a>>,
    #[serde(borrow, default)]
    cwd: Option<Raw<'a>>,
    #[serde(borrow, default)]
    title: Option<Raw<'a>>,
    #[serde(borrow, rename = "sessionTitle", default)]
    session_title: Option<Raw<'a>>,
    #[serde(borrow, default)]
    session_id: Option<Raw<'a>>,
    #[serde(borrow, rename = "sessionId", default)]
    session_id_camel: Option<Raw<'a>>,
    #[serde(borrow, default)]
    usage: Option<Raw<'a>>,
    #[serde(borrow, default)]
    version: Option<Raw<'a>>,
}

#[derive(Deserialize)]
struct MessageRec<'a> {
    #[serde(borrow, default)]
    role: Option<Raw<'a>>,
    #[serde(borrow, default)]
    content: Option<Raw<'a>>,
}

/// The index fields of one content block.
#[derive(Deserialize, Default)]
struct BlockIdx<'a> {
    #[serde(borrow, rename = "type", default)]
    ty: Option<Raw<'a>>,
    #[serde(borrow, default)]
    id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    name: Option<Raw<'a>>,
    #[serde(borrow, default)]
    tool_use_id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    is_error: Option<Raw<'a>>,
}

/// What the skim reads of one line.
pub(crate) struct Rec<'a> {
    env: LineRec<'a>,
    /// A store message's role, and its content as one string (no blocks).
    role: Option<Cow<'a, str>>,
    text: Option<&'a str>,
    /// Each block of a store message: its raw text (a part of the line) and its index fields.
    blocks: Vec<(&'a str, BlockIdx<'a>)>,
    /// What is wrong with a known record's shape.
    problem: Option<String>,
}

fn text<'a>(r: Option<Raw<'a>>) -> Option<Cow<'a, str>> {
    raw_text(r?.0)
}

fn skim(line: &[u8]) -> Option<Rec<'_>> {
    // serde skips what it ignores without checking its UTF-8; the record must be text.
    let line = std::str::from_utf8(line).ok()?;
    let env: LineRec = serde_json::from_str(line).ok()?;
    let mut rec = Rec {
        env,
        role: None,
        text: None,
        blocks: Vec::new(),
        problem: None,
    };
    let is_message = text(rec.env.ty).as_deref() == Some("message");
    let Some(m) = rec.env.message.filter(|_| is_message) else {
        return Some(rec);
    };
    let m: MessageRec = match serde_json::from_str(m.0) {
        Ok(m) => m,
        Err(e) => {
            rec.problem = Some(format!("message: {}", json_error(&e)));
            return Some(rec);
        }
    };
    rec.role = text(m.role);
    match m.content {
        Some(c) if c.0.starts_with('[') => match serde_json::from_str::<Vec<Raw>>(c.0) {
            Ok(blocks) => {
                for b in blocks {
                    match serde_json::from_str::<BlockIdx>(b.0) {
                        Ok(idx) => rec.blocks.push((b.0, idx)),
                        Err(e) => rec.problem = Some(format!("content block: {}", json_error(&e))),
                    }
                }
            }
            Err(e) => rec.problem = Some(format!("message.content: {}", json_error(&e))),
        },
        Some(c) if c.0.starts_with('"') => rec.text = Some(c.0),
        Some(c) if c.0 != "null" => rec.problem = Some("message.content is neither text nor a list of blocks".into()),
        _ => {}
    }
    Some(rec)
}

fn timestamp(r: Option<Raw>) -> Option<i64> {
    let r = r?;
    match raw_text(r.0) {
        Some(s) => parse_timestamp_str(&s),
        None => serde_json::from_str::<Value>(r.0)
            .ok()
            .as_ref()
            .and_then(parse_timestamp),
    }
}

/// Calls waiting for their result, by id.
#[derive(Default)]
struct Waiting(std::collections::HashMap<Box<str>, u32>);

/// What the last record was, for a session with no end record.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    Nothing,
    Prompt,
    Reply,
}

/// The Droid line parser: one trace a file.
pub struct Parser {
    path: PathBuf,
    root: Option<u32>,
    file: u16,
    waiting: Waiting,
    last: Last,
    /// How a stream log ended (`completion` or `error`), if it did.
    ended: Option<RunStatus>,
    /// The model a stream log's `system` record names.
    model: Option<String>,
    /// The usage a stream log's `completion` records (the run's totals).
    usage: Option<Usage>,
    named: bool,
    first_ts: Option<i64>,
    last_ts: Option<i64>,
}

impl Parser {
    pub fn new(path: &Path) -> Parser {
        Parser {
            path: path.to_path_buf(),
            root: None,
            file: 0,
            waiting: Waiting::default(),
            last: Last::Nothing,
            ended: None,
            model: None,
            usage: None,
            named: false,
            first_ts: None,
            last_ts: None,
        }
    }

    fn ensure(&mut self, loc: LineLoc, sink: &mut Sink) -> u32 {
        if let Some(r) = self.root {
            sink.touch(0);
            return r;
        }
        let id = stem(&self.path);
        let mut t = Trace::new(RunMeta {
            id: id.clone(),
            format: "factory-droid",
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

    fn attr(sink: &mut Sink, k: &str, v: Option<Cow<str>>) {
        let Some(v) = v.filter(|v| !v.is_empty()) else { return };
        let attrs = &mut sink.traces[0].meta.attributes;
        match attrs.iter_mut().find(|(x, _)| x == k) {
            Some(slot) => slot.1 = Value::String(v.into_owned()),
            None => attrs.push((k.to_string(), Value::String(v.into_owned()))),
        }
    }

    fn name(&mut self, sink: &mut Sink, name: &str, strong: bool) {
        if self.named && !strong {
            return;
        }
        let first = name.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
        if first.is_empty() {
            return;
        }
        let mut n: String = first.chars().take(99).collect();
        if first.chars().count() > 99 {
            n.push('…');
        }
        self.named = true;
        sink.traces[0].meta.name = Some(n);
    }

    fn apply_rec(&mut self, rec: &Rec, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let root = self.ensure(loc, sink);
        let e = &rec.env;
        let ts = timestamp(e.timestamp);
        if let Some(t) = ts {
            self.first_ts = Some(self.first_ts.map_or(t, |f| f.min(t)));
            self.last_ts = Some(self.last_ts.map_or(t, |l| l.max(t)));
        }
        if let Some(sid) = text(e.session_id).or_else(|| text(e.session_id_camel)) {
            Self::attr(sink, "session_id", Some(sid.clone()));
            sink.traces[0].meta.id = sid.into_owned();
        }
        let origin = loc.origin(self.file);
        let ty = text(e.ty);
        match ty.as_deref() {
            Some("session_start") => {
                if let Some(id) = text(e.id).filter(|s| !s.is_empty()) {
                    sink.traces[0].meta.id = id.into_owned();
                }
                Self::attr(sink, "cwd", text(e.cwd));
                if let Some(v) = e.version {
                    Self::attr(sink, "version", Some(raw_text(v.0).unwrap_or(Cow::Borrowed(v.0))));
                }
                if let Some(t) = text(e.session_title).or_else(|| text(e.title)) {
                    self.name(sink, &t, true);
                }
            }
            Some("message") if e.message.is_some() => self.store_message(rec, line, loc, ts, root, sink),
            Some("message") => {
                // A stream log's message: the prompt, or a reply (an LLM call).
                let role = text(e.role);
                let role_s = role.as_deref().unwrap_or("");
                match Role::parse(role_s) {
                    Role::Assistant => {
                        sink.traces[0].add(NewEvent {
                            parent: Parent::Index(root),
                            start: ts,
                            status: Status::Ok,
                            model: self.model.as_deref(),
                            payload: PayloadRef::Deferred,
                            origin,
                            ..NewEvent::new(EventKind::LlmCall, "assistant")
                        });
                        self.last = Last::Reply;
                    }
                    Role::Other => sink.drift(role_s, line, root, origin, ts),
                    r => {
                        sink.traces[0].add(NewEvent {
                            parent: Parent::Index(root),
                            start: ts,
                            status: Status::Ok,
                            payload: PayloadRef::Deferred,
                            origin,
                            ..NewEvent::new(EventKind::Message(r), role_s)
                        });
                        if r == Role::User {
                            self.last = Last::Prompt;
                            if let Ok(v) = serde_json::from_slice::<Value>(line)
                                && let Some(s) = v.get("text").and_then(Value::as_str)
                            {
                                self.name(sink, strip_reminders(s), false);
                            }
                        }
                    }
                }
            }
            Some("system") => {
                if let Some(m) = text(e.model) {
                    self.model = Some(m.into_owned());
                }
                Self::attr(sink, "cwd", text(e.cwd));
            }
            Some("tool_call") => {
                let name = text(e.tool_name).unwrap_or(Cow::Borrowed("tool"));
                let id = text(e.tool_call_id).or_else(|| text(e.id)).filter(|s| !s.is_empty());
                let i = sink.traces[0].add(NewEvent {
                    id: id.as_deref(),
                    parent: Parent::Index(root),
                    start: ts,
                    status: Status::Pending,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::ToolCall, &name)
                });
                if let Some(id) = id {
                    self.waiting.0.insert(id.into(), i);
                }
            }
            Some("tool_result") => {
                let id = text(e.tool_call_id).or_else(|| text(e.id));
                let failed = e.is_error.is_some_and(|r| r.0 == "true");
                self.result(id.as_deref(), failed, ts, origin, root, loc, sink);
            }
            Some("completion") => {
                if let Some(u) = e.usage.and_then(|u| serde_json::from_str::<Value>(u.0).ok()) {
                    self.usage = Some(anthropic_usage(&u)).filter(|u| !u.is_empty());
                }
                sink.traces[0].add(NewEvent {
                    parent: Parent::Index(root),
                    start: ts,
                    status: Status::Ok,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::Message(Role::Assistant), "completion")
                });
                self.ended = Some(RunStatus::Ok);
                self.last = Last::Reply;
            }
            Some("error") => {
                sink.traces[0].add(NewEvent {
                    parent: Parent::Index(root),
                    start: ts,
                    status: Status::Error,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::Error, "error")
                });
                self.ended = Some(RunStatus::Error);
            }
            other => sink.drift(other.unwrap_or("record"), line, root, origin, ts),
        }
    }

    /// A tool's result: the waiting call it names takes it (its status and second record).
    #[allow(clippy::too_many_arguments)]
    fn result(
        &mut self,
        id: Option<&str>,
        failed: bool,
        ts: Option<i64>,
        o: Origin,
        parent: u32,
        loc: LineLoc,
        sink: &mut Sink,
    ) {
        match id.and_then(|id| self.waiting.0.remove(id)) {
            Some(i) => {
                let e = sink.traces[0].event_mut(i);
                e.status = if failed { Status::Error } else { Status::Ok };
                if let (Some(a), Some(b)) = (e.start.get(), ts) {
                    e.duration = Some((b - a).max(0)).into();
                }
                e.origin2 = Some(Box::new(o));
            }
            None => {
                sink.warning(Some(loc.line), "a tool result with no call waiting for it");
                sink.traces[0].add(NewEvent {
                    parent: Parent::Index(parent),
                    start: ts,
                    status: if failed { Status::Error } else { Status::Unknown },
                    payload: PayloadRef::Deferred,
                    origin: o,
                    ..NewEvent::new(EventKind::Other, "tool_result")
                });
            }
        }
    }

    fn store_message(&mut self, rec: &Rec, line: &[u8], loc: LineLoc, ts: Option<i64>, root: u32, sink: &mut Sink) {
        let origin = loc.origin(self.file);
        if let Some(p) = &rec.problem {
            sink.error(loc.line, p.clone());
        }
        let role_s = rec.role.as_deref().unwrap_or("");
        let role = Role::parse(role_s);
        if role == Role::Other {
            return sink.drift(
                if role_s.is_empty() { "message" } else { role_s },
                line,
                root,
                origin,
                ts,
            );
        }
        let t = &mut sink.traces[0];
        let parent = if role == Role::Assistant {
            self.last = Last::Reply;
            t.add(NewEvent {
                id: text(rec.env.id).as_deref(),
                parent: Parent::Index(root),
                start: ts,
                status: Status::Ok,
                origin,
                ..NewEvent::new(EventKind::LlmCall, "assistant")
            })
        } else {
            root
        };
        let message = |o: Origin| NewEvent {
            parent: Parent::Index(parent),
            start: ts,
            status: Status::Ok,
            payload: PayloadRef::Deferred,
            origin: o,
            ..NewEvent::new(EventKind::Message(role), role_s)
        };
        if let Some(s) = rec.text {
            t.add(message(engine::sub_origin(loc, self.file, line, s.as_bytes())));
            if role == Role::User {
                self.last = Last::Prompt;
                if let Some(s) = raw_text(s) {
                    self.name(sink, strip_reminders(&s), false);
                }
            }
            return;
        }
        for (raw, b) in &rec.blocks {
            let o = engine::sub_origin(loc, self.file, line, raw.as_bytes());
            let ty = text(b.ty);
            match ty.as_deref() {
                Some("text") => {
                    sink.traces[0].add(message(o));
                    if role == Role::User {
                        self.last = Last::Prompt;
                        if !self.named
                            && let Ok(v) = serde_json::from_str::<Value>(raw)
                            && let Some(s) = v.get("text").and_then(Value::as_str)
                        {
                            self.name(sink, strip_reminders(s), false);
                        }
                    }
                }
                Some("thinking" | "redacted_thinking") => {
                    sink.traces[0].add(NewEvent {
                        parent: Parent::Index(parent),
                        start: ts,
                        status: Status::Ok,
                        payload: PayloadRef::Deferred,
                        origin: o,
                        ..NewEvent::new(EventKind::Other, "thinking")
                    });
                }
                Some("tool_use") => {
                    let name = text(b.name).unwrap_or(Cow::Borrowed("tool"));
                    let id = text(b.id).filter(|s| !s.is_empty());
                    let i = sink.traces[0].add(NewEvent {
                        id: id.as_deref(),
                        parent: Parent::Index(parent),
                        start: ts,
                        status: Status::Pending,
                        payload: PayloadRef::Deferred,
                        origin: o,
                        ..NewEvent::new(EventKind::ToolCall, &name)
                    });
                    if let Some(id) = id {
                        self.waiting.0.insert(id.into(), i);
                    }
                }
                Some("tool_result") => {
                    let failed = b.is_error.is_some_and(|r| r.0 == "true");
                    self.result(text(b.tool_use_id).as_deref(), failed, ts, o, parent, loc, sink);
                    // A result is the agent's to answer: the session goes on.
                    self.last = Last::Prompt;
                }
                Some("image") => {
                    sink.traces[0].add(NewEvent {
                        parent: Parent::Index(parent),
                        start: ts,
                        payload: PayloadRef::Deferred,
                        origin: o,
                        ..NewEvent::new(EventKind::Other, "image")
                    });
                }
                other => {
                    let name = other.unwrap_or("block").to_string();
                    sink.drift(&name, raw.as_bytes(), parent, o, ts);
                }
            }
        }
    }

    /// The model and token totals of a store session's settings file, if it has one.
    fn read_settings(&self) -> (Option<String>, Option<Usage>) {
        let Ok(v) = super::read_json_file(&settings_path(&self.path), SETTINGS_LIMIT) else {
            return (None, None);
        };
        let model = v.get("model").and_then(Value::as_str).map(str::to_string);
        let usage = v.get("tokenUsage").map(|u| {
            let n = |k: &str| super::lenient_u64(u.get(k));
            Usage {
                input: n("inputTokens"),
                output: n("outputTokens"),
                reasoning: n("thinkingTokens"),
                cache_read: n("cacheReadTokens"),
                cache_write: n("cacheCreationTokens"),
                ..Default::default()
            }
        });
        (model, usage.filter(|u| !u.is_empty()))
    }
}

/// Anthropic's usage names, as `completion` writes them.
fn anthropic_usage(u: &Value) -> Usage {
    let n = |k: &str| super::lenient_u64(u.get(k));
    Usage {
        input: n("input_tokens"),
        output: n("output_tokens"),
        cache_read: n("cache_read_input_tokens"),
        cache_write: n("cache_creation_input_tokens"),
        ..Default::default()
    }
}

/// A prompt without the `<system-reminder>` blocks Droid puts before it (the run's name is
/// what the user asked).
fn strip_reminders(s: &str) -> &str {
    let mut rest = s.trim_start();
    while let Some(after) = rest.strip_prefix("<system-reminder>") {
        match after.find("</system-reminder>") {
            Some(end) => rest = after[end + "</system-reminder>".len()..].trim_start(),
            None => break,
        }
    }
    if rest.is_empty() { s } else { rest }
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
                sink.error(loc.line, jsonl::why_unreadable::<LineRec>(line, "not a JSON object"));
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
        let Some(root) = self.root else { return };
        // Read before the trace is borrowed: the settings file changes as the session goes on.
        let (settings_model, settings_usage) = self.read_settings();
        let Some(t) = sink.traces.first_mut() else { return };
        let status = match self.ended {
            Some(s) => s,
            None if !self.waiting.0.is_empty() => RunStatus::Running,
            None if self.last == Last::Reply => RunStatus::Ok,
            None => RunStatus::Unknown,
        };
        t.meta.status = status;
        t.meta.start = self.first_ts;
        t.meta.end = self.last_ts;
        t.meta.model = settings_model.or_else(|| self.model.clone());
        let usage = settings_usage.or(self.usage);
        let name = t.meta.name.clone();
        let e = t.event_mut(root);
        e.status = status.event_status();
        e.usage = usage.into();
        if let Some(n) = name {
            let r = t.strings.intern(&n);
            t.event_mut(root).name = r;
        }
    }
}

/// Rebuild a payload from its record(s): a content block (a call's `tool_use`, then its
/// `tool_result`), a stream record (a `tool_call`, then its `tool_result`), or a line.
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
        let ty = v.get("type").and_then(Value::as_str).unwrap_or("").to_string();
        if ev.kind == EventKind::Other && is_drift(&v) {
            return super::drift_payload(&v, ENVELOPE);
        }
        match ty.as_str() {
            "text" if ev.kind == EventKind::Message(Role::User) => out.input = take(&mut v, "text"),
            "text" => out.output = take(&mut v, "text"),
            "thinking" => out.output = take(&mut v, "thinking").or_else(|| take(&mut v, "text")),
            "tool_use" => {
                out.input = take(&mut v, "input");
                if let Some(id) = take(&mut v, "id") {
                    out.extra.push(("id".into(), id));
                }
            }
            "tool_call" => {
                out.input = take(&mut v, "parameters");
                for k in ["toolCallId", "id", "messageId"] {
                    if let Some(x) = take(&mut v, k) {
                        out.extra.push((k.into(), x));
                    }
                }
            }
            "tool_result" => {
                // A block's `content` (text or a list of text blocks) or a record's `value`.
                out.output = take(&mut v, "content")
                    .or_else(|| take(&mut v, "value"))
                    .map(flatten_text);
                if ["is_error", "isError"]
                    .iter()
                    .any(|k| v.get(*k) == Some(&Value::Bool(true)))
                {
                    out.error = Some(ErrorInfo {
                        message: "the tool reported an error".into(),
                        ..Default::default()
                    });
                }
            }
            "message" if v.get("message").is_some() => out.output = take(&mut v, "message"),
            "message" if ev.kind == EventKind::Message(Role::User) => out.input = take(&mut v, "text"),
            "message" => out.output = take(&mut v, "text"),
            "completion" => {
                out.output = take(&mut v, "finalText");
                for k in ["usage", "numTurns", "durationMs"] {
                    if let Some(x) = take(&mut v, k) {
                        out.extra.push((k.into(), x));
                    }
                }
            }
            "error" => {
                let msg = v.get("message").and_then(Value::as_str).unwrap_or("error").to_string();
                out.error = Some(ErrorInfo {
                    kind: v.get("source").and_then(Value::as_str).map(str::to_string),
                    message: msg,
                    ..Default::default()
                });
            }
            _ if v.is_string() && ev.kind == EventKind::Message(Role::User) => out.input = Some(v),
            _ if v.is_string() => out.output = Some(v),
            _ => out.input = Some(v),
        }
    }
    out
}

/// A record or block of a kind Droid did not write before (see `Parser::drift`).
fn is_drift(v: &Value) -> bool {
    const KNOWN: [&str; 13] = [
        "session_start",
        "message",
        "system",
        "tool_call",
        "tool_result",
        "completion",
        "error",
        "text",
        "thinking",
        "redacted_thinking",
        "tool_use",
        "image",
        "",
    ];
    let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
    if ty == "message" {
        // A message of a role Droid does not write.
        let role = v
            .get("message")
            .and_then(|m| m.get("role"))
            .or_else(|| v.get("role"))
            .and_then(Value::as_str)
            .unwrap_or("");
        return Role::parse(role) == Role::Other;
    }
    v.is_object() && !KNOWN.contains(&ty)
}

/// A result's `[{type:"text", text}]` list as its text, when that is all it holds.
fn flatten_text(v: Value) -> Value {
    if let Value::Array(items) = &v {
        let texts: Option<Vec<&str>> = items
            .iter()
            .map(|b| {
                (b.get("type").and_then(Value::as_str) == Some("text"))
                    .then(|| b.get("text").and_then(Value::as_str))
                    .flatten()
            })
            .collect();
        if let Some(t) = texts {
            return Value::String(t.join("\n"));
        }
    }
    v
}

fn take(v: &mut Value, k: &str) -> Option<Value> {
    v.get_mut(k).filter(|x| !x.is_null()).map(Value::take)
}

/// A call's gist by Droid's tools (`Execute`, `Read`, `LS`, `Create`, `Edit`, `MultiEdit`,
/// `ApplyPatch`, `Grep`, `Glob`, `FetchUrl`, `WebSearch`, `TodoWrite`, `Task`; `Shell` in
/// stream logs).
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{first_arg, generic, key_or_generic, patch_files, todos};
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "Execute" | "Shell" | "Bash" => by(&["command"]),
        "Read" | "Create" | "Edit" | "MultiEdit" | "Write" => by(&["file_path", "path"]),
        "LS" => by(&["directory_path", "path"]),
        "Grep" | "Glob" => by(&["pattern", "patterns", "query", "folder"]),
        "ApplyPatch" => input
            .get("input")
            .or_else(|| input.get("patch"))
            .and_then(Value::as_str)
            .and_then(patch_files)
            .or_else(|| generic(name, input)),
        "FetchUrl" => by(&["url"]),
        "WebSearch" => by(&["query"]),
        "TodoWrite" => input
            .get("todos")
            .and_then(|t| todos(t, &["content", "description"], "status"))
            .or_else(|| generic(name, input)),
        "Task" => by(&["description", "prompt"]),
        n if n.starts_with("mcp__") || n.contains("___") => first_arg(input),
        _ => generic(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::{fixture, outline};
    use proptest::prelude::*;

    fn load(name: &str) -> Trace {
        let l = FactoryDroid.load(&fixture("factory-droid", name)).unwrap();
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
    fn a_finished_store_session_joins_calls_to_results_and_takes_its_totals_from_the_settings() {
        let t = load("sessions/-home-dev-shop/finished.jsonl");
        assert_eq!(t.meta.id, "6c1f0a52-8d3e-4b7a-9f21-0e5d4c3b2a10");
        assert_eq!(t.meta.name.as_deref(), Some("Fix the failing price test"));
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(
            calls(&t),
            vec![
                ("Read".to_string(), Status::Ok),
                ("Execute".to_string(), Status::Ok),
                ("Edit".to_string(), Status::Ok),
                ("Execute".to_string(), Status::Ok)
            ]
        );
        let c = t.counts();
        assert_eq!(c.llm_calls, 5);
        assert_eq!(c.tokens, 5210 + 812 + 140 + 30400 + 2900);
        let root = t.roots[0];
        let u = t.event(root).usage.get().expect("the settings' totals");
        assert_eq!(
            (u.input, u.output, u.reasoning, u.cache_read, u.cache_write),
            (Some(5210), Some(812), Some(140), Some(30400), Some(2900))
        );
        // Payloads come back from disk: the call's input and its result.
        let read = (0..t.len() as u32).find(|&i| t.name(i) == "Read").unwrap();
        let p = crate::formats::payload(&t, t.event(read));
        assert_eq!(p.input.unwrap()["file_path"], "/home/dev/shop/tests/test_price.py");
        assert!(p.output.unwrap().as_str().unwrap().contains("def test_discount"));
        assert_eq!(
            FactoryDroid.gist("Execute", &serde_json::json!({"command": "pytest -q"})),
            Some("pytest -q".into())
        );
        // The tree: each reply with its blocks under it.
        let o = outline(&t);
        assert_eq!(o[0], "run Fix the failing price test");
        assert!(o.iter().any(|l| l == "    tool Read"), "{o:#?}");
    }

    #[test]
    fn a_failed_call_is_an_error_and_a_running_session_says_so() {
        let t = load("sessions/-home-dev-shop/failed-call.jsonl");
        assert_eq!(calls(&t), vec![("Execute".to_string(), Status::Error)]);
        assert_eq!(t.counts().errors, 1);
        let call = (0..t.len() as u32).find(|&i| t.name(i) == "Execute").unwrap();
        let p = crate::formats::payload(&t, t.event(call));
        assert!(p.error.is_some());
        assert_eq!(t.meta.status, RunStatus::Ok);

        let t = load("sessions/-home-dev-shop/running.jsonl");
        assert_eq!(t.meta.status, RunStatus::Running);
        assert_eq!(calls(&t), vec![("Execute".to_string(), Status::Pending)]);
        assert!(t.event(t.roots[0]).usage.get().is_none(), "no settings file: no totals");
    }

    #[test]
    fn a_stream_log_reads_its_calls_end_and_usage() {
        let t = load("exec-stream.jsonl");
        assert_eq!(t.meta.id, "2f9c1e7a-4b3d-4a8e-b5c6-7d8e9f0a1b2c");
        assert_eq!(t.meta.model.as_deref(), Some("gpt-5-codex"));
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(
            calls(&t),
            vec![("LS".to_string(), Status::Ok), ("Execute".to_string(), Status::Error)]
        );
        let u = t.event(t.roots[0]).usage.get().unwrap();
        assert_eq!((u.input, u.output, u.cache_read), (Some(1830), Some(96), Some(1024)));
        assert_eq!(t.meta.name.as_deref(), Some("List the files and run the linter"));
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
    }

    #[test]
    fn a_damaged_line_is_named_and_the_rest_loads() {
        let t = load("sessions/-home-dev-shop/damaged.jsonl");
        let errs: Vec<_> = t.diagnostics.iter().filter(|d| d.severity == Severity::Error).collect();
        assert_eq!(errs.len(), 1, "{:?}", t.diagnostics);
        assert_eq!(errs[0].line, Some(3));
        assert!(errs[0].path.ends_with("damaged.jsonl"));
        assert_eq!(calls(&t), vec![("Read".to_string(), Status::Ok)]);
    }

    #[test]
    fn detection_claims_both_dialects_and_not_its_neighbours() {
        let det = |p: &Path| FactoryDroid.detect(&Probe::open(p).unwrap());
        assert_eq!(
            det(&fixture("factory-droid", "sessions/-home-dev-shop/finished.jsonl")),
            100
        );
        assert_eq!(det(&fixture("factory-droid", "exec-stream.jsonl")), 90);
        for other in [
            "tests/fixtures/claude-code/session.jsonl",
            "tests/fixtures/codex/rollout-basic.jsonl",
        ] {
            let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(other);
            if p.exists() {
                assert_eq!(det(&p), 0, "{other}");
            }
        }
        let p = fixture("factory-droid", "exec-stream.jsonl");
        assert_eq!(crate::formats::detect(&p).unwrap().id(), "factory-droid");
    }

    #[test]
    fn live_follow_reads_appended_records_and_settles_the_call() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        let text = std::fs::read_to_string(fixture("factory-droid", "sessions/-home-dev-shop/running.jsonl")).unwrap();
        std::fs::write(&p, &text).unwrap();
        let mut f = FactoryDroid.follow(&p).unwrap();
        f.poll().unwrap();
        assert_eq!(f.sink.traces[0].meta.status, RunStatus::Running);
        let more = concat!(
            r#"{"type":"message","id":"m4","parentId":"m3","timestamp":"2026-11-20T09:15:09.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_r1","content":"ok"}]}}"#,
            "\n",
            r#"{"type":"message","id":"m5","parentId":"m4","timestamp":"2026-11-20T09:15:10.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Done."}]}}"#,
            "\n"
        );
        std::fs::write(&p, format!("{text}{more}")).unwrap();
        let polled = f.poll().unwrap();
        assert_eq!(polled.touched, vec![0]);
        let t = &f.sink.traces[0];
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(calls(t), vec![("Execute".to_string(), Status::Ok)]);
    }

    fn unknown_record(rng: &mut crate::formats::testing::Rng, near: &Value) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("type".into(), Value::String(rng.type_name()));
        for k in ["timestamp", "session_id", "sessionId", "parentId"] {
            if let Some(v) = near.get(k) {
                m.insert(k.into(), v.clone());
            }
        }
        m.insert("id".into(), Value::String(format!("drift-{}", rng.next() % 1000)));
        if let Some(t) = rng.maybe_text() {
            m.insert("text".into(), Value::String(t));
        }
        m.insert(rng.type_name(), rng.value());
        Value::Object(m)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn drift_is_skipped_quietly(seed in any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "factory-droid",
                &[
                    // Directories: a session's settings file (its totals) is copied with it.
                    "tests/fixtures/factory-droid/sessions/-home-dev-shop",
                    "tests/fixtures/factory-droid/exec-stream.jsonl",
                    "sample-traces/factory-droid/-home-dev-inventory",
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
