//! Qwen Code sessions (QwenLM/qwen-code): `~/.qwen/projects/<sanitized cwd>/chats/<sessionId>.jsonl`,
//! one `ChatRecord` a line, appended as the session goes, as
//! `packages/core/src/services/chatRecordingService.ts` writes them (the directory from
//! `packages/core/src/config/storage.ts`: `QWEN_RUNTIME_DIR`, else `QWEN_HOME`, else `~/.qwen`;
//! `projects/` below it):
//! - every record has `uuid`, `parentUuid`, `sessionId`, `timestamp`, `type`, `cwd`, `version`,
//!   `gitBranch`, and a `subtype` for the records that are not plain turns;
//! - `user`: `message` is a Gemini `Content` (`{role: "user", parts: [{text}, ...]}`); a `subtype`
//!   (`notification`, `cron`, `mid_turn_user_message`, ...) marks what the agent injected;
//! - `assistant`: `message` (`{role: "model", parts}` with `text`, `thought: true` text and
//!   `functionCall {id, name, args}` parts), `model`, `usageMetadata` (Gemini's counts);
//! - `tool_result`: `message.parts` of `functionResponse {id, name, response: {output | error}}`
//!   and `toolCallResult` (`callId`, `status` `success`/`error`/`cancelled`, `error`,
//!   `resultDisplay`);
//! - `system`: `subtype` `custom_title` (`systemPayload.customTitle`: the run's name, last one
//!   wins), `chat_compression`, `slash_command`, `at_command`, `ui_telemetry` and a long list of
//!   bookkeeping subtypes;
//! - a subagent's records carry `agentId`, `agentName` and `isSidechain: true`.
//!
//! Traps this reader handles:
//! - a tool call is a `functionCall` part of an assistant record, its result a `tool_result`
//!   record of its own, joined by the call id (`toolCallResult.callId`, else the
//!   `functionResponse.id`; a call without id by its name, oldest first);
//! - tokens (`usageMetadata`): `promptTokenCount` includes `cachedContentTokenCount`;
//!   `thoughtsTokenCount` is inside `candidatesTokenCount` when Qwen converted an
//!   OpenAI-compatible response (its usual providers: `prompt + candidates = total`) and apart
//!   from it when Gemini answered (`prompt + candidates + thoughts = total`); normalized to input
//!   without cache, cache read, output without reasoning, reasoning;
//! - `ui_telemetry` records repeat each API response's tokens: not counted again;
//! - drift (formats/mod.rs): a record type, `system` subtype or part Qwen did not write before
//!   is skipped quietly, counted, and shown when it carries text.
//!
//! On the shared engine (DESIGN §4): the skim reads a record's envelope and the kind, id and
//! byte range of each part; payloads stay on disk and are decoded when shown.

use super::engine::{self, Records};
use super::jsonl::{self, Follow, LineLoc, LineParser, Sink, json_error};
use super::skim::Raw;
use super::{Format, LoadError, Loaded, Probe, raw_text, stem};
use crate::model::*;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

pub struct QwenCode;

pub const ID: &str = "qwen-code";

/// Fields every record repeats (left out of a generic event's payload).
const ENVELOPE: &[&str] = &[
    "uuid",
    "parentUuid",
    "sessionId",
    "timestamp",
    "cwd",
    "version",
    "gitBranch",
    "provenance",
    "promptId",
];

/// `system` subtypes that are the agent's bookkeeping (state to restore on resume): read quietly.
const QUIET: &[&str] = &[
    "ui_telemetry",
    "session_notes",
    "attribution_snapshot",
    "parent_session",
    "session_source",
    "session_execution_engine",
    "omni_recall",
    "session_model",
    "session_approval_mode",
    "rewind",
    "agent_bootstrap",
    "agent_launch_prompt",
    "agent_retry",
    "agent_session_ready",
    "file_history_snapshot",
    "user_text_elements",
    "session_artifact_event",
    "session_artifact_snapshot",
    "session_sources_snapshot",
    "branch_checkpoint",
    "goal_state",
    "goal_runtime",
    "goal_turn_end",
    "turn_result",
    "managed_session_header_v1",
    "managed_session_event_v1",
    "managed_session_commit_v1",
];

/// `system` subtypes shown as events.
const SHOWN: &[&str] = &[
    "chat_compression",
    "slash_command",
    "at_command",
    "notification",
    "background_task_completed",
];

impl Format for QwenCode {
    fn id(&self) -> &'static str {
        ID
    }
    fn describe(&self) -> &'static str {
        "Qwen Code session, ~/.qwen/projects/<project>/chats/<sessionId>.jsonl"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        for v in p.lines().take(20) {
            let Some(o) = v.as_object() else { continue };
            if !(o.contains_key("uuid") && o.contains_key("sessionId")) {
                continue;
            }
            let ty = o.get("type").and_then(Value::as_str);
            // Gemini-style `parts` (Claude Code and iFlow write `content`), or a record type only
            // Qwen writes: above Claude Code's 95 for the same envelope.
            let parts = o.get("message").and_then(|m| m.get("parts")).is_some();
            if parts || ty == Some("tool_result") || o.contains_key("usageMetadata") {
                return 97;
            }
            if ty == Some("system") && o.contains_key("systemPayload") {
                return 96;
            }
            if o.get("message").and_then(|m| m.get("content")).is_some() {
                return 0; // Claude-shaped
            }
        }
        0
    }

    fn summary_inputs(&self, path: &Path) -> Option<Vec<PathBuf>> {
        Some(vec![path.to_path_buf()])
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let mut f = self.follow(path).expect("a file");
        f.poll()?;
        f.finish("Qwen Code chat records")
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

/// The envelope of one record, every field raw: what a field means depends on the type.
#[derive(Deserialize, Default)]
struct LineRec<'a> {
    #[serde(borrow, rename = "type", default)]
    ty: Option<Raw<'a>>,
    #[serde(borrow, default)]
    subtype: Option<Raw<'a>>,
    #[serde(borrow, default)]
    uuid: Option<Raw<'a>>,
    #[serde(borrow, default)]
    timestamp: Option<Raw<'a>>,
    #[serde(borrow, rename = "sessionId", default)]
    session_id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    cwd: Option<Raw<'a>>,
    #[serde(borrow, default)]
    version: Option<Raw<'a>>,
    #[serde(borrow, rename = "gitBranch", default)]
    git_branch: Option<Raw<'a>>,
    #[serde(borrow, default)]
    model: Option<Raw<'a>>,
    #[serde(borrow, default)]
    message: Option<Raw<'a>>,
    #[serde(borrow, rename = "usageMetadata", default)]
    usage: Option<Raw<'a>>,
    #[serde(borrow, rename = "toolCallResult", default)]
    tool_call_result: Option<Raw<'a>>,
    #[serde(borrow, rename = "systemPayload", default)]
    system_payload: Option<Raw<'a>>,
    #[serde(borrow, rename = "agentId", default)]
    agent_id: Option<Raw<'a>>,
    #[serde(borrow, rename = "agentName", default)]
    agent_name: Option<Raw<'a>>,
}

#[derive(Deserialize, Default)]
struct MessageRec<'a> {
    #[serde(borrow, default)]
    parts: Option<Raw<'a>>,
}

/// The index fields of one part.
#[derive(Deserialize, Default)]
struct PartIdx<'a> {
    #[serde(borrow, default)]
    text: Option<Raw<'a>>,
    #[serde(borrow, default)]
    thought: Option<Raw<'a>>,
    #[serde(borrow, rename = "functionCall", default)]
    function_call: Option<Raw<'a>>,
    #[serde(borrow, rename = "functionResponse", default)]
    function_response: Option<Raw<'a>>,
}

/// `functionCall` / `functionResponse`: their id and name.
#[derive(Deserialize, Default)]
struct CallIdx<'a> {
    #[serde(borrow, default)]
    id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    name: Option<Raw<'a>>,
    #[serde(borrow, default)]
    response: Option<Raw<'a>>,
}

#[derive(Deserialize, Default)]
struct ResultIdx<'a> {
    #[serde(borrow, rename = "callId", default)]
    call_id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    status: Option<Raw<'a>>,
    #[serde(borrow, default)]
    error: Option<Raw<'a>>,
}

/// What one part is.
enum Part<'a> {
    Text,
    Thought,
    Call {
        id: Option<Cow<'a, str>>,
        name: Option<Cow<'a, str>>,
    },
    Response {
        id: Option<Cow<'a, str>>,
        name: Option<Cow<'a, str>>,
        error: bool,
    },
    /// A part of a kind this reader does not know (an image, a file, ...).
    Other,
}

/// What the skim reads of one line.
pub(crate) struct Rec<'a> {
    env: LineRec<'a>,
    parts: Vec<(&'a str, Part<'a>)>,
    result: Option<ResultIdx<'a>>,
    problem: Option<String>,
}

fn text<'a>(r: Option<Raw<'a>>) -> Option<Cow<'a, str>> {
    raw_text(r?.0)
}

fn present(r: Option<Raw>) -> bool {
    r.is_some_and(|r| r.0 != "null")
}

fn skim(line: &[u8]) -> Option<Rec<'_>> {
    let line = std::str::from_utf8(line).ok()?;
    let env: LineRec = serde_json::from_str(line).ok()?;
    let mut rec = Rec {
        env,
        parts: Vec::new(),
        result: None,
        problem: None,
    };
    if let Some(m) = rec.env.message.filter(|m| m.0 != "null") {
        match serde_json::from_str::<MessageRec>(m.0) {
            Ok(MessageRec { parts: Some(p) }) if p.0.starts_with('[') => match serde_json::from_str::<Vec<Raw>>(p.0) {
                Ok(parts) => {
                    for raw in parts {
                        let part = match serde_json::from_str::<PartIdx>(raw.0) {
                            Ok(idx) => part_of(&idx),
                            Err(_) => Part::Other,
                        };
                        rec.parts.push((raw.0, part));
                    }
                }
                Err(e) => rec.problem = Some(format!("message.parts: {}", json_error(&e))),
            },
            Ok(_) => {}
            Err(e) => rec.problem = Some(format!("message: {}", json_error(&e))),
        }
    }
    if let Some(r) = rec.env.tool_call_result.filter(|r| r.0.starts_with('{')) {
        rec.result = serde_json::from_str(r.0).ok();
    }
    Some(rec)
}

fn part_of<'a>(p: &PartIdx<'a>) -> Part<'a> {
    let call = |r: Raw<'a>| serde_json::from_str::<CallIdx<'a>>(r.0).unwrap_or_default();
    if let Some(c) = p.function_call.filter(|r| r.0.starts_with('{')) {
        let c = call(c);
        return Part::Call {
            id: text(c.id).filter(|s| !s.is_empty()),
            name: text(c.name),
        };
    }
    if let Some(c) = p.function_response.filter(|r| r.0.starts_with('{')) {
        let c = call(c);
        let error = c
            .response
            .and_then(|r| serde_json::from_str::<HashMap<&str, Raw>>(r.0).ok())
            .is_some_and(|m| m.get("error").is_some_and(|e| e.0 != "null"));
        return Part::Response {
            id: text(c.id).filter(|s| !s.is_empty()),
            name: text(c.name),
            error,
        };
    }
    if present(p.text) {
        return if p.thought.is_some_and(|t| t.0 == "true") {
            Part::Thought
        } else {
            Part::Text
        };
    }
    Part::Other
}

/// Gemini's `usageMetadata`, normalized (see the module's note on thoughts).
fn usage_of(u: &Value) -> Usage {
    let n = |k: &str| super::lenient_u64(u.get(k));
    let (prompt, cand, thoughts, cached, total) = (
        n("promptTokenCount"),
        n("candidatesTokenCount"),
        n("thoughtsTokenCount").filter(|&t| t > 0),
        n("cachedContentTokenCount").filter(|&c| c > 0),
        n("totalTokenCount"),
    );
    let apart = match (prompt, cand, thoughts, total) {
        (Some(p), Some(c), Some(th), Some(t)) => p + c + th == t && p + c != t,
        _ => false,
    };
    let output = match (cand, thoughts) {
        (Some(c), Some(th)) if !apart => Some(c.saturating_sub(th)),
        (c, _) => c,
    };
    Usage {
        input: prompt.map(|p| p.saturating_sub(cached.unwrap_or(0))),
        output,
        cache_read: cached,
        reasoning: thoughts,
        total: if prompt.is_none() && cand.is_none() {
            total
        } else {
            None
        },
        ..Default::default()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    Nothing,
    Prompt,
    Reply,
}

/// The Qwen Code line parser: one trace a file.
pub struct Parser {
    path: PathBuf,
    root: Option<u32>,
    file: u16,
    /// Calls waiting for their result, by id; id-less calls by name, oldest first.
    waiting: HashMap<Box<str>, u32>,
    idless: HashMap<Box<str>, VecDeque<u32>>,
    /// A subagent's container event, by agent id.
    agents: HashMap<Box<str>, u32>,
    /// Subagent calls (`agent`, `task`) not yet matched to a subagent, with their prompt.
    launches: Vec<(String, u32)>,
    model: Option<String>,
    last: Last,
    titled: bool,
    prompt_named: bool,
    attrs_done: bool,
    first_ts: Option<i64>,
    last_ts: Option<i64>,
    /// The time of the record before: when an assistant record's request was sent.
    prev_ts: Option<i64>,
}

impl Parser {
    pub fn new(path: &Path) -> Parser {
        Parser {
            path: path.to_path_buf(),
            root: None,
            file: 0,
            waiting: HashMap::new(),
            idless: HashMap::new(),
            agents: HashMap::new(),
            launches: Vec::new(),
            model: None,
            last: Last::Nothing,
            titled: false,
            prompt_named: false,
            attrs_done: false,
            first_ts: None,
            last_ts: None,
            prev_ts: None,
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
            format: ID,
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

    fn set_attrs(&mut self, e: &LineRec, sink: &mut Sink) {
        if self.attrs_done {
            return;
        }
        let attrs = &mut sink.traces[0].meta.attributes;
        let mut done = true;
        for (k, v) in [
            ("sessionId", e.session_id),
            ("cwd", e.cwd),
            ("version", e.version),
            ("gitBranch", e.git_branch),
        ] {
            if attrs.iter().any(|(x, _)| x == k) {
                continue;
            }
            match text(v).filter(|v| !v.is_empty()) {
                Some(v) => attrs.push((k.to_string(), Value::String(v.into_owned()))),
                None => done = false,
            }
        }
        self.attrs_done = done;
    }

    /// Where a record's events go: the run, or its subagent's container (under the call that
    /// launched it when the subagent's first prompt is that call's).
    fn parent_of(
        &mut self,
        e: &LineRec,
        line: &[u8],
        root: u32,
        ts: Option<i64>,
        origin: Origin,
        sink: &mut Sink,
    ) -> u32 {
        let Some(agent) = text(e.agent_id).filter(|a| !a.is_empty()) else {
            return root;
        };
        if let Some(&c) = self.agents.get(agent.as_ref()) {
            return c;
        }
        let name = format!("agent {}", text(e.agent_name).as_deref().unwrap_or(&agent));
        let mut under = root;
        if text(e.ty).as_deref() == Some("user") {
            let prompt = user_text(line);
            let prompt = prompt.trim();
            if let Some(k) = self
                .launches
                .iter()
                .position(|(p, _)| !p.is_empty() && p.trim() == prompt)
            {
                under = self.launches.remove(k).1;
            }
        }
        let c = sink.traces[0].add(NewEvent {
            id: Some(&agent),
            parent: Parent::Index(under),
            start: ts,
            status: Status::Ok,
            origin,
            ..NewEvent::new(EventKind::Run, &name)
        });
        self.agents.insert(agent.as_ref().into(), c);
        c
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
        self.set_attrs(e, sink);
        let origin = loc.origin(self.file);
        let ty = text(e.ty);
        let subtype = text(e.subtype);
        match ty.as_deref() {
            Some("user") => {
                let parent = self.parent_of(e, line, root, ts, origin, sink);
                let (kind, name) = match subtype.as_deref() {
                    None => (EventKind::Message(Role::User), "user".to_string()),
                    Some(s) => (EventKind::Other, s.to_string()),
                };
                sink.traces[0].add(NewEvent {
                    id: text(e.uuid).as_deref(),
                    parent: Parent::Index(parent),
                    start: ts,
                    status: Status::Ok,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(kind, &name)
                });
                // A result given in a user record (older recorders) still answers its call.
                self.responses(rec, loc, ts, origin, line, sink);
                if subtype.is_none() && parent == root {
                    self.last = Last::Prompt;
                    if !self.titled && !self.prompt_named {
                        let text = user_text(line);
                        if !text.trim().is_empty() {
                            sink.traces[0].meta.name = Some(one_line(&text));
                            self.prompt_named = true;
                        }
                    }
                }
            }
            Some("assistant") => self.assistant(rec, line, loc, ts, root, sink),
            Some("tool_result") => {
                self.responses(rec, loc, ts, origin, line, sink);
                // The model answers a result next: until it does, the session is not done.
                if text(e.agent_id).is_none_or(|a| a.is_empty()) {
                    self.last = Last::Prompt;
                }
            }
            Some("system") => match subtype.as_deref() {
                Some("custom_title") => {
                    let title = e
                        .system_payload
                        .and_then(|p| serde_json::from_str::<Value>(p.0).ok())
                        .and_then(|p| p.get("customTitle").and_then(Value::as_str).map(str::to_string));
                    if let Some(t) = title.filter(|t| !t.trim().is_empty()) {
                        sink.traces[0].meta.name = Some(one_line(&t));
                        self.titled = true;
                    }
                }
                Some(s) if QUIET.contains(&s) => {}
                Some(s) if SHOWN.contains(&s) => {
                    let parent = self.parent_of(e, line, root, ts, origin, sink);
                    let s = s.to_string();
                    sink.traces[0].add(NewEvent {
                        id: text(e.uuid).as_deref(),
                        parent: Parent::Index(parent),
                        start: ts,
                        status: Status::Ok,
                        payload: PayloadRef::Deferred,
                        origin,
                        ..NewEvent::new(EventKind::Other, &s)
                    });
                }
                other => {
                    let name = format!("system {}", other.unwrap_or("record"));
                    sink.drift(&name, line, root, origin, ts);
                }
            },
            Some(other) => {
                let other = other.to_string();
                sink.drift(&other, line, root, origin, ts);
            }
            None => sink.error(loc.line, "record has no `type`; skipped"),
        }
        if ts.is_some() {
            self.prev_ts = ts;
        }
    }

    fn assistant(&mut self, rec: &Rec, line: &[u8], loc: LineLoc, ts: Option<i64>, root: u32, sink: &mut Sink) {
        let e = &rec.env;
        let origin = loc.origin(self.file);
        let parent = self.parent_of(e, line, root, ts, origin, sink);
        let model = text(e.model).filter(|m| !m.is_empty()).map(Cow::into_owned);
        if parent == root
            && let Some(m) = &model
        {
            self.model = Some(m.clone());
        }
        let usage = e
            .usage
            .and_then(|u| serde_json::from_str::<Value>(u.0).ok())
            .map(|u| usage_of(&u))
            .filter(|u| !u.is_empty());
        if parent == root {
            self.last = Last::Reply;
        }
        let name = model.clone().unwrap_or_else(|| "assistant".into());
        // Recorded when the response is complete: the call ran since the record before.
        let start = self.prev_ts.filter(|p| ts.is_none_or(|x| *p <= x)).or(ts);
        let llm = sink.traces[0].add(NewEvent {
            id: text(e.uuid).as_deref(),
            parent: Parent::Index(parent),
            start,
            duration: match (start, ts) {
                (Some(a), Some(b)) => Some(b - a),
                _ => None,
            },
            status: Status::Ok,
            usage,
            model: model.as_deref(),
            payload: PayloadRef::Deferred,
            origin,
            ..NewEvent::new(EventKind::LlmCall, &name)
        });
        for (raw, part) in &rec.parts {
            let o = engine::sub_origin(loc, self.file, line, raw.as_bytes());
            let (kind, name, id) = match part {
                Part::Text => (EventKind::Message(Role::Assistant), Cow::Borrowed("assistant"), None),
                Part::Thought => (EventKind::Other, Cow::Borrowed("thinking"), None),
                Part::Call { id, name } => (
                    EventKind::ToolCall,
                    name.clone().unwrap_or(Cow::Borrowed("tool")),
                    id.clone(),
                ),
                Part::Response { .. } => continue,
                Part::Other => {
                    sink.drift("part", raw.as_bytes(), llm, o, ts);
                    continue;
                }
            };
            let call = kind == EventKind::ToolCall;
            let i = sink.traces[0].add(NewEvent {
                id: id.as_deref(),
                parent: Parent::Index(llm),
                start: ts,
                status: if call { Status::Pending } else { Status::Ok },
                payload: PayloadRef::Deferred,
                origin: o,
                ..NewEvent::new(kind, &name)
            });
            if call && matches!(name.as_ref(), "agent" | "task") && self.launches.len() < 4096 {
                let prompt = serde_json::from_str::<Value>(raw).ok().and_then(|v| {
                    v.get("functionCall")?
                        .get("args")?
                        .get("prompt")?
                        .as_str()
                        .map(str::to_string)
                });
                if let Some(p) = prompt {
                    self.launches.push((p, i));
                }
            }
            if call {
                match id {
                    Some(id) => {
                        self.waiting.insert(id.as_ref().into(), i);
                    }
                    None => self.idless.entry(name.as_ref().into()).or_default().push_back(i),
                }
            }
        }
    }

    /// The `functionResponse` parts of a record: each answers its call.
    fn responses(&mut self, rec: &Rec, loc: LineLoc, ts: Option<i64>, origin: Origin, line: &[u8], sink: &mut Sink) {
        let responses: Vec<_> = rec
            .parts
            .iter()
            .filter_map(|(raw, p)| match p {
                Part::Response { id, name, error } => Some((*raw, id, name, *error)),
                _ => None,
            })
            .collect();
        let result = rec.result.as_ref();
        let status_of = |error: bool| {
            let st = result.and_then(|r| text(r.status));
            let failed = error
                || matches!(st.as_deref(), Some("error" | "cancelled"))
                || result.is_some_and(|r| present(r.error));
            if failed { Status::Error } else { Status::Ok }
        };
        if responses.is_empty() {
            // A result record with no response part: its toolCallResult alone names the call.
            if let Some(id) = result.and_then(|r| text(r.call_id))
                && let Some(i) = self.waiting.remove(id.as_ref())
            {
                self.answer(i, status_of(false), ts, origin, sink);
            } else if text(rec.env.ty).as_deref() == Some("tool_result") {
                sink.warning(Some(loc.line), "a tool result with no call waiting for it");
            }
            return;
        }
        let single = responses.len() == 1;
        for (raw, id, name, error) in responses {
            let id = id.clone().or_else(|| {
                if single {
                    result.and_then(|r| text(r.call_id))
                } else {
                    None
                }
            });
            let call = match &id {
                Some(id) => self.waiting.remove(id.as_ref()),
                None => name
                    .as_deref()
                    .and_then(|n| self.idless.get_mut(n))
                    .and_then(VecDeque::pop_front),
            };
            // The whole record when it answers one call (its toolCallResult is part of the
            // payload), else the part alone.
            let o = if single {
                origin
            } else {
                engine::sub_origin(loc, self.file, line, raw.as_bytes())
            };
            match call {
                Some(i) => self.answer(i, status_of(error), ts, o, sink),
                None => {
                    sink.warning(Some(loc.line), "a tool result with no call waiting for it");
                    let root = self.root.unwrap_or(NO_PARENT);
                    sink.traces[0].add(NewEvent {
                        parent: Parent::Index(root),
                        start: ts,
                        status: status_of(error),
                        payload: PayloadRef::Deferred,
                        origin: o,
                        ..NewEvent::new(EventKind::Message(Role::Tool), "tool_result")
                    });
                }
            }
        }
    }

    fn answer(&mut self, i: u32, status: Status, ts: Option<i64>, origin: Origin, sink: &mut Sink) {
        let e = sink.traces[0].event_mut(i);
        e.status = status;
        if let (Some(a), Some(b)) = (e.start.get(), ts) {
            e.duration = Some((b - a).max(0)).into();
        }
        e.origin2 = Some(Box::new(origin));
    }
}

/// The text parts of a record's message.
fn parts_text(parts: &Value) -> String {
    parts
        .as_array()
        .map(|ps| {
            ps.iter()
                .filter(|p| p.get("thought") != Some(&Value::Bool(true)))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// A user record's text (what the user typed: `systemPayload.displayText` when Qwen expanded
/// the prompt, else the message's text parts).
fn user_text(line: &[u8]) -> String {
    let Ok(v) = serde_json::from_slice::<Value>(line) else {
        return String::new();
    };
    if let Some(d) = v
        .get("systemPayload")
        .and_then(|p| p.get("displayText"))
        .and_then(Value::as_str)
        .filter(|d| !d.trim().is_empty())
    {
        return d.to_string();
    }
    v.get("message")
        .and_then(|m| m.get("parts"))
        .map(parts_text)
        .unwrap_or_default()
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
                let why = jsonl::why_unreadable::<LineRec>(line, "not a JSON object");
                sink.error(loc.line, why);
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
        // A session has no end marker: a call still waiting means it is running (or was cut
        // off there); otherwise the last turn decides.
        let waiting = !self.waiting.is_empty() || self.idless.values().any(|q| !q.is_empty());
        let status = if waiting {
            RunStatus::Running
        } else {
            match self.last {
                Last::Reply => RunStatus::Ok,
                Last::Prompt | Last::Nothing => RunStatus::Unknown,
            }
        };
        t.meta.status = status;
        t.meta.start = self.first_ts;
        t.meta.end = self.last_ts;
        t.meta.model = self.model.clone();
        let name = t.meta.name.clone();
        let e = t.event_mut(root);
        e.status = status.event_status();
        e.start = self.first_ts.into();
        e.duration = match (self.first_ts, self.last_ts) {
            (Some(a), Some(b)) if b >= a => Some(b - a).into(),
            _ => None.into(),
        };
        if let Some(n) = name {
            let r = t.strings.intern(&n);
            t.event_mut(root).name = r;
        }
    }
}

/// Rebuild a payload from its record(s): a part (a call's `functionCall`, then its
/// `tool_result` record or `functionResponse` part), or a record.
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
        if let Some(c) = take(&mut v, "functionCall") {
            let mut c = c;
            out.input = take(&mut c, "args");
            if let Some(id) = take(&mut c, "id") {
                out.extra.push(("id".into(), id));
            }
            continue;
        }
        if let Some(r) = take(&mut v, "functionResponse") {
            response_payload(&r, &mut out);
            continue;
        }
        if v.get("text").is_some() && v.get("type").is_none() {
            out.output = take(&mut v, "text");
            continue;
        }
        let ty = v.get("type").and_then(Value::as_str).unwrap_or("").to_string();
        let parts = v.get("message").and_then(|m| m.get("parts")).cloned();
        match ty.as_str() {
            "user" => {
                let text = user_text(bytes);
                out.input = Some(Value::String(text));
            }
            "assistant" => {
                if let Some(u) = take(&mut v, "usageMetadata") {
                    out.extra.push(("usageMetadata".into(), u));
                }
                if let Some(w) = take(&mut v, "contextWindowSize") {
                    out.extra.push(("contextWindowSize".into(), w));
                }
                // The reply's text; its thoughts and calls are events of their own.
                let text = parts.as_ref().map(parts_text).unwrap_or_default();
                out.output = (!text.is_empty()).then_some(Value::String(text));
            }
            "tool_result" => {
                let responses: Vec<Value> = parts
                    .as_ref()
                    .and_then(Value::as_array)
                    .map(|ps| ps.iter().filter_map(|p| p.get("functionResponse").cloned()).collect())
                    .unwrap_or_default();
                if let [r] = responses.as_slice() {
                    response_payload(r, &mut out);
                }
                if let Some(mut r) = take(&mut v, "toolCallResult") {
                    if let Some(d) = take(&mut r, "resultDisplay") {
                        out.extra.push(("display".into(), d));
                    }
                    if out.error.is_none()
                        && let Some(e) = r.get("error").filter(|e| !e.is_null())
                    {
                        out.error = Some(ErrorInfo {
                            message: e
                                .get("message")
                                .and_then(Value::as_str)
                                .map_or_else(|| e.to_string(), str::to_string),
                            ..Default::default()
                        });
                    }
                    if out.error.is_none() && r.get("status").and_then(Value::as_str) == Some("cancelled") {
                        out.error = Some(ErrorInfo {
                            message: "cancelled".into(),
                            ..Default::default()
                        });
                    }
                    out.extra.push(("toolCallResult".into(), r));
                }
            }
            _ => {
                out.output = take(&mut v, "systemPayload").or(parts);
            }
        }
    }
    out
}

/// A `functionResponse`: its output, or its error.
fn response_payload(r: &Value, out: &mut Payload) {
    let resp = r.get("response");
    match resp.and_then(|x| x.get("error")).filter(|e| !e.is_null()) {
        Some(e) => {
            out.error = Some(ErrorInfo {
                message: e
                    .as_str()
                    .or_else(|| e.get("message").and_then(Value::as_str))
                    .map_or_else(|| e.to_string(), str::to_string),
                ..Default::default()
            });
        }
        None => out.output = resp.map(|x| x.get("output").cloned().unwrap_or_else(|| x.clone())),
    }
}

/// A record, subtype or part of a kind Qwen Code did not write before (see `Parser::drift`).
fn is_drift(v: &Value) -> bool {
    const TYPES: [&str; 4] = ["user", "assistant", "tool_result", "system"];
    match v.get("type").and_then(Value::as_str) {
        Some("system") => {
            let s = v.get("subtype").and_then(Value::as_str).unwrap_or("");
            !QUIET.contains(&s) && !SHOWN.contains(&s) && s != "custom_title"
        }
        Some(t) => !TYPES.contains(&t),
        // A part: known when it is text, a call or a response.
        None => !["text", "functionCall", "functionResponse"]
            .iter()
            .any(|k| v.get(k).is_some()),
    }
}

fn take(v: &mut Value, k: &str) -> Option<Value> {
    v.get_mut(k).filter(|x| !x.is_null()).map(Value::take)
}

/// A call's gist by Qwen Code's tools (Gemini CLI's, renamed in places: `read_file`,
/// `write_file`, `edit`, `run_shell_command`, `grep_search`, `glob`, `list_directory`,
/// `todo_write`, `task`/`agent`, `skill`, `web_fetch`, `web_search`).
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{key_or_generic, todos};
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "edit" => by(&["file_path", "path"]),
        "task" | "agent" => by(&["description", "prompt"]),
        "todo_write" => input
            .get("todos")
            .and_then(|t| todos(t, &["content"], "status"))
            .or_else(|| super::gist::generic(name, input)),
        "skill" => by(&["skill", "name"]),
        "web_search" => by(&["query"]),
        _ => super::gemini_cli::tool_gist(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::{Rng, fixture, outline};
    use serde_json::json;

    fn load(name: &str) -> Trace {
        let l = crate::formats::load(&fixture(ID, name), None).unwrap();
        assert_eq!(l.traces.len(), 1);
        l.traces.into_iter().next().unwrap()
    }

    fn of(t: &Trace, kind: EventKind) -> Vec<u32> {
        t.walk()
            .into_iter()
            .map(|(i, _)| i)
            .filter(|&i| t.event(i).kind == kind)
            .collect()
    }

    #[test]
    fn detection_tells_qwen_from_claude_code_iflow_and_gemini() {
        for name in ["finished.jsonl", "running.jsonl", "subagent.jsonl"] {
            assert_eq!(crate::formats::detect(&fixture(ID, name)).unwrap().id(), ID, "{name}");
        }
        for (fmt, name) in [("claude-code", "session.jsonl"), ("iflow", "session-finished.jsonl")] {
            let f = crate::formats::detect(&crate::formats::testing::fixture(fmt, name)).unwrap();
            assert_eq!(f.id(), fmt);
        }
        let gemini = crate::formats::testing::fixture("gemini-cli", "");
        if let Some(first) = std::fs::read_dir(&gemini).ok().and_then(|mut d| d.next()) {
            let p = first.unwrap().path();
            if p.is_file() {
                assert_ne!(crate::formats::detect(&p).map(|f| f.id()).ok(), Some(ID));
            }
        }
    }

    #[test]
    fn a_finished_session_joins_results_normalizes_tokens_and_takes_its_title() {
        let t = load("finished.jsonl");
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.format, ID);
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.name.as_deref(), Some("Fix the Celsius conversion"));
        assert_eq!(t.meta.model.as_deref(), Some("qwen3-coder-plus"));
        let attr = |k: &str| t.meta.all_attributes().find(|(x, _)| x == k).map(|(_, v)| v.clone());
        assert_eq!(attr("cwd"), Some(json!("/home/ada/weather-app")));
        let llm = of(&t, EventKind::LlmCall);
        assert_eq!(llm.len(), 4, "{:#?}", outline(&t));
        // 12000 prompt of which 8000 cached, 300 candidates of which 100 thoughts (total 12300).
        let u = t.event(llm[0]).usage.get().unwrap();
        assert_eq!(
            (u.input, u.cache_read, u.output, u.reasoning),
            (Some(4000), Some(8000), Some(200), Some(100))
        );
        let tools = of(&t, EventKind::ToolCall);
        let got: Vec<(&str, Status)> = tools.iter().map(|&i| (t.name(i), t.event(i).status)).collect();
        assert_eq!(
            got,
            [
                ("read_file", Status::Ok),
                ("run_shell_command", Status::Error),
                ("edit", Status::Ok)
            ]
        );
        let p = crate::formats::payload(&t, t.event(tools[0]));
        assert_eq!(
            p.input.unwrap()["absolute_path"],
            "/home/ada/weather-app/tests/test_forecast.py"
        );
        assert!(p.output.unwrap().to_string().contains("def test_forecast"));
        let failed = crate::formats::payload(&t, t.event(tools[1]));
        assert!(failed.error.unwrap().message.contains("exit code 1"));
        let gist = QwenCode.gist(
            "run_shell_command",
            &crate::formats::payload(&t, t.event(tools[1])).input.unwrap(),
        );
        assert_eq!(gist.as_deref(), Some("pytest -q"));
        // ui_telemetry repeats the tokens: not counted again; the compression is shown.
        assert!(t.skipped.total() == 0);
        assert_eq!(
            of(&t, EventKind::Other)
                .iter()
                .filter(|&&i| t.name(i) == "chat_compression")
                .count(),
            1
        );
    }

    #[test]
    fn a_call_without_result_is_pending_and_the_session_running() {
        let t = load("running.jsonl");
        assert_eq!(t.meta.status, RunStatus::Running);
        let tools = of(&t, EventKind::ToolCall);
        assert_eq!(t.event(*tools.last().unwrap()).status, Status::Pending);
        // A thought part is its own event.
        assert!(of(&t, EventKind::Other).iter().any(|&i| t.name(i) == "thinking"));
    }

    #[test]
    fn a_subagents_records_hang_under_its_container() {
        let t = load("subagent.jsonl");
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let agents: Vec<u32> = of(&t, EventKind::Run).into_iter().filter(|&i| i != 0).collect();
        assert_eq!(agents.len(), 1, "{:#?}", outline(&t));
        assert_eq!(t.name(agents[0]), "agent Explore");
        let tools = of(&t, EventKind::ToolCall);
        let under = tools.iter().filter(|&&i| {
            let mut up = t.event(i).parent;
            while up != NO_PARENT && up != agents[0] {
                up = t.event(up).parent;
            }
            up == agents[0]
        });
        assert_eq!(under.count(), 1);
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert!(tools.iter().all(|&i| t.event(i).status == Status::Ok));
        // Under the `agent` call that launched it.
        assert_eq!(t.event(agents[0]).parent, tools[0]);
        assert_eq!(t.name(tools[0]), "agent");
    }

    #[test]
    fn a_damaged_line_is_named_and_unknown_records_are_counted_quietly() {
        let t = load("damaged.jsonl");
        assert_eq!(t.diagnostics.len(), 1, "{:?}", t.diagnostics);
        assert_eq!(t.diagnostics[0].line, Some(2));
        assert_eq!(t.skipped.total(), 2, "{:?}", t.skipped);
        assert_eq!(of(&t, EventKind::LlmCall).len(), 1);
    }

    #[test]
    fn following_a_session_pairs_a_result_that_arrives_later() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let text = std::fs::read_to_string(fixture(ID, "finished.jsonl")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        std::fs::write(&path, lines[..3].join("\n") + "\n").unwrap();
        let mut f = QwenCode.follow(&path).unwrap();
        f.poll().unwrap();
        assert_eq!(f.sink.traces[0].meta.status, RunStatus::Running);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        f.poll().unwrap();
        let t = &f.sink.traces[0];
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(of(t, EventKind::ToolCall).len(), 3);
    }

    #[test]
    fn usage_tells_thoughts_inside_from_thoughts_apart() {
        let inside = usage_of(
            &json!({"promptTokenCount": 100, "candidatesTokenCount": 30, "thoughtsTokenCount": 10, "totalTokenCount": 130}),
        );
        assert_eq!((inside.output, inside.reasoning), (Some(20), Some(10)));
        let apart = usage_of(
            &json!({"promptTokenCount": 100, "candidatesTokenCount": 30, "thoughtsTokenCount": 10, "totalTokenCount": 140}),
        );
        assert_eq!((apart.output, apart.reasoning), (Some(30), Some(10)));
    }

    /// A record of a type no Qwen Code writes yet, sometimes with text.
    fn unknown_record(rng: &mut Rng, near: &Value) -> Value {
        let mut m = json!({"type": rng.type_name(), "zz": rng.value()});
        for k in ["sessionId", "timestamp", "cwd"] {
            if let Some(x) = near.get(k) {
                m[k] = x.clone();
            }
        }
        if rng.one_in(2) {
            m["uuid"] = Value::String(format!("drift-{}", rng.next()));
        }
        if let Some(text) = rng.maybe_text() {
            m["content"] = Value::String(text);
        }
        m
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on our fixtures and sample.
        #[test]
        fn drift_is_skipped_quietly(seed in proptest::prelude::any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                ID,
                &[
                    "tests/fixtures/qwen-code/finished.jsonl",
                    "tests/fixtures/qwen-code/running.jsonl",
                    "tests/fixtures/qwen-code/subagent.jsonl",
                    "sample-traces/qwen-code/4f6a8c0e-2b3d-4e5f-8a9b-0c1d2e3f4a5b.jsonl",
                ],
            );
            crate::formats::testing::drift_check(&sources, seed, &|f, rng| {
                crate::formats::testing::drift_jsonl(f, rng, &unknown_record)
            });
        }
    }
}
