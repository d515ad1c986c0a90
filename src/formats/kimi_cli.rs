//! Kimi Code CLI sessions (Moonshot's `kimi`): `~/.kimi-code/sessions/wd_<dir>_<hash>/<session>/`
//! holds `state.json` (title, `workDir`, the agents and their parents) and one journal a
//! agent, `agents/<agent>/wire.jsonl`: `main` is the session, the others its subagents. A
//! journal is a line a record, `{type, time (epoch ms), ...}` (protocol 1.x, as Kimi Code
//! 0.29 writes it and agent-sessions' `KimiSessionParser` and agentsview's `kimi.go` read
//! it):
//! - `turn.prompt` / `turn.steer` (`input` parts) is what the user typed, `turn.ended`
//!   (`reason`) and `turn.cancel` close a turn;
//! - `context.append_loop_event` carries the agent loop: `step.begin` opens one model call,
//!   `content.part` (`text`, `think`), `tool.call` (`toolCallId`, `name`, `args`) and
//!   `tool.result` (`toolCallId`, `result: {output, isError}`) happen in it, `step.end` closes
//!   it with its `usage` (`inputOther`, `output`, `inputCacheRead`, `inputCacheCreation`);
//! - `usage.record` repeats a step's usage (`usageScope: "turn"`) or is the usage of a
//!   compaction (`"session"`), which has no step;
//! - `config.update` / `llm.request` name the model (`modelAlias`, `model`), `metadata`
//!   the protocol; the rest is bookkeeping (tools, permissions, token counting).
//!
//! Traps this reader handles:
//! - the user's prompt is written twice (`turn.prompt` and `context.append_message`): the
//!   prompt is read, the context copy is not;
//! - a step's usage is written twice (`step.end` and `usage.record`): counted once;
//! - a tool's result comes before its step ends; a result naming no waiting call is a
//!   warning, shown on its own;
//! - subagents (the `Agent` tool) write journals of their own beside `main`: the session
//!   directory loads each as a trace of its own, which names its parent agent
//!   (`state.json` says which; the `Agent` call is the only link in the journals);
//! - drift (formats/mod.rs): a record or loop event type Kimi did not write before is
//!   skipped quietly, counted, and shown when it carries text.
//!
//! On the shared engine (DESIGN §4): the skim reads a record's envelope and its loop event's
//! index fields; payloads stay on disk and are decoded from the record(s) when shown.

use super::engine::{self, Records};
use super::jsonl::{self, Follow, LineLoc, LineParser, Sink};
use super::skim::Raw;
use super::{Format, LoadError, Loaded, Probe, raw_text, stem};
use crate::model::*;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub struct KimiCli;

const JOURNAL: &str = "wire.jsonl";
const AGENTS: &str = "agents";
const MAIN: &str = "main";
/// Fields every record repeats (left out of a generic event's payload).
const ENVELOPE: &[&str] = &["type", "time", "agentId"];
const STATE_LIMIT: u64 = 4 << 20;

/// Record types Kimi writes that carry nothing the tree shows (tools offered, permissions,
/// token counting, plugins): known, so not drift.
const BOOKKEEPING: &[&str] = &[
    "metadata",
    "config.update",
    "profile.bind",
    "tools.set_active_tools",
    "llm.tools_snapshot",
    "llm.request",
    "permission.set_mode",
    "permission.record_approval_result",
    "runtime.set_binding",
    "token_counting.measured",
    "token_counting.turn_recorded",
    "plugin.session_start",
    "full_compaction.begin",
    "full_compaction.complete",
    "context.append_message",
];

impl Format for KimiCli {
    fn id(&self) -> &'static str {
        "kimi-cli"
    }
    fn describe(&self) -> &'static str {
        "Kimi Code CLI session, ~/.kimi-code/sessions/<workdir>/<session>/ (agents/<agent>/wire.jsonl)"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return if is_session_dir(&p.path) { 100 } else { 0 };
        }
        let (mut own, mut foreign) = (0, 0);
        let mut header = false;
        for v in p.lines().take(20) {
            let Some(o) = v.as_object() else {
                foreign += 1;
                continue;
            };
            let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
            match ty {
                "metadata" if o.contains_key("protocol_version") => header = true,
                "context.append_loop_event" | "turn.prompt" | "turn.ended" | "usage.record" | "config.update" => {
                    own += 1
                }
                t if BOOKKEEPING.contains(&t) => own += 1,
                // Another format's line; a type Kimi adds (drift) settles nothing.
                "" => foreign += 1,
                _ => {}
            }
        }
        if foreign > 0 || own == 0 && !header {
            return 0;
        }
        if header || in_journal_place(&p.path) {
            100
        } else if own >= 2 {
            80
        } else {
            0
        }
    }

    fn is_run_dir(&self, dir: &Path) -> bool {
        is_session_dir(dir)
    }

    fn summary_inputs(&self, path: &Path) -> Option<Vec<PathBuf>> {
        Some(vec![path.to_path_buf()])
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        if !path.is_dir() {
            return load_file(path, None);
        }
        let state = super::read_json_file(&path.join("state.json"), STATE_LIMIT).ok();
        let mut traces = Vec::new();
        let mut first_error = None;
        for f in journals(path) {
            match load_file(&f, state.as_ref()) {
                Ok(l) => traces.extend(l.traces),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match (traces.is_empty(), first_error) {
            (true, Some(e)) => Err(e),
            (true, None) => Err(LoadError::invalid(
                path,
                "no Kimi Code journal (agents/*/wire.jsonl) in this directory",
            )),
            _ => Ok(Loaded { traces }),
        }
    }

    fn follow(&self, path: &Path) -> Option<Follow> {
        // A session directory is several journals: it is reloaded whole when it changes.
        if path.is_dir() {
            return None;
        }
        let p = path.to_path_buf();
        let state = state_of(path);
        Some(Follow::new(
            path,
            Box::new(move || Box::new(Parser::new(&p, state.clone())) as Box<dyn LineParser>),
        ))
    }

    fn decode_payload(&self, _t: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
        decode(ev, raw)
    }

    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
}

fn load_file(path: &Path, state: Option<&Value>) -> Result<Loaded, LoadError> {
    let state = state.cloned().or_else(|| state_of(path));
    let p = path.to_path_buf();
    let mut f = Follow::new(
        path,
        Box::new(move || Box::new(Parser::new(&p, state.clone())) as Box<dyn LineParser>),
    );
    f.poll()?;
    f.finish("Kimi Code journal records")
}

/// The session's `state.json` for a journal at `<session>/agents/<agent>/wire.jsonl`.
fn state_of(path: &Path) -> Option<Value> {
    let session = session_of(path)?;
    super::read_json_file(&session.join("state.json"), STATE_LIMIT).ok()
}

/// `<session>/agents/<agent>/wire.jsonl` → `<session>`.
fn session_of(path: &Path) -> Option<&Path> {
    let agent = path.parent()?;
    let agents = agent.parent()?;
    (agents.file_name()? == AGENTS).then(|| agents.parent()).flatten()
}

fn agent_of(path: &Path) -> Option<String> {
    session_of(path)?;
    Some(path.parent()?.file_name()?.to_string_lossy().into_owned())
}

fn in_journal_place(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == JOURNAL) && session_of(path).is_some()
}

/// A session directory: `agents/main/wire.jsonl` in it.
fn is_session_dir(dir: &Path) -> bool {
    dir.join(AGENTS).join(MAIN).join(JOURNAL).is_file()
}

/// The journals of a session directory: `main` first, then the others by name.
fn journals(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir.join(AGENTS)) else {
        return Vec::new();
    };
    let mut out: Vec<(String, PathBuf)> = rd
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path().join(JOURNAL)))
        .filter(|(_, p)| p.is_file())
        .collect();
    out.sort_by(|a, b| (a.0 != MAIN, &a.0).cmp(&(b.0 != MAIN, &b.0)));
    out.into_iter().map(|(_, p)| p).collect()
}

/// The envelope of one record, every field raw: what a field means depends on the type.
#[derive(Deserialize, Default)]
struct LineRec<'a> {
    #[serde(borrow, rename = "type", default)]
    ty: Option<Raw<'a>>,
    #[serde(borrow, default)]
    time: Option<Raw<'a>>,
    #[serde(borrow, default)]
    created_at: Option<Raw<'a>>,
    #[serde(borrow, default)]
    event: Option<Raw<'a>>,
    #[serde(borrow, default)]
    input: Option<Raw<'a>>,
    #[serde(borrow, rename = "modelAlias", default)]
    model_alias: Option<Raw<'a>>,
    #[serde(borrow, default)]
    model: Option<Raw<'a>>,
    #[serde(borrow, default)]
    cwd: Option<Raw<'a>>,
    #[serde(borrow, default)]
    usage: Option<Raw<'a>>,
    #[serde(borrow, rename = "usageScope", default)]
    usage_scope: Option<Raw<'a>>,
    #[serde(borrow, default)]
    reason: Option<Raw<'a>>,
    #[serde(borrow, default)]
    protocol_version: Option<Raw<'a>>,
}

/// The index fields of a loop event.
#[derive(Deserialize, Default)]
struct LoopRec<'a> {
    #[serde(borrow, rename = "type", default)]
    ty: Option<Raw<'a>>,
    #[serde(borrow, default)]
    uuid: Option<Raw<'a>>,
    #[serde(borrow, rename = "toolCallId", default)]
    tool_call_id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    name: Option<Raw<'a>>,
    #[serde(borrow, default)]
    part: Option<PartRec<'a>>,
    #[serde(borrow, default)]
    result: Option<Raw<'a>>,
    #[serde(borrow, default)]
    usage: Option<Raw<'a>>,
    #[serde(borrow, default)]
    model: Option<Raw<'a>>,
    #[serde(borrow, rename = "finishReason", default)]
    finish_reason: Option<Raw<'a>>,
}

#[derive(Deserialize, Default)]
struct PartRec<'a> {
    #[serde(borrow, rename = "type", default)]
    ty: Option<Raw<'a>>,
}

/// What the skim reads of one line.
pub(crate) struct Rec<'a> {
    env: LineRec<'a>,
    /// The loop event of a `context.append_loop_event`, as its text in the line and its fields.
    ev: Option<(&'a str, LoopRec<'a>)>,
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
        ev: None,
        problem: None,
    };
    if text(rec.env.ty).as_deref() == Some("context.append_loop_event") {
        match rec.env.event {
            Some(e) => match serde_json::from_str::<LoopRec>(e.0) {
                Ok(l) => rec.ev = Some((e.0, l)),
                Err(err) => rec.problem = Some(format!("event: {}", jsonl::json_error(&err))),
            },
            None => rec.problem = Some("a loop event record without its event".into()),
        }
    }
    Some(rec)
}

fn number(r: Option<Raw>) -> Option<Value> {
    serde_json::from_str(r?.0).ok()
}

/// Kimi's usage names: `inputOther` (input without cache), `output`, `inputCacheRead`,
/// `inputCacheCreation`.
fn usage_of(u: &Value) -> Usage {
    let n = |k: &str| super::lenient_u64(u.get(k));
    Usage {
        input: n("inputOther"),
        output: n("output"),
        cache_read: n("inputCacheRead"),
        cache_write: n("inputCacheCreation"),
        ..Default::default()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    Nothing,
    Prompt,
    Reply,
    Cancelled,
}

/// The Kimi journal parser: one trace a journal.
pub struct Parser {
    path: PathBuf,
    state: Option<Value>,
    root: Option<u32>,
    file: u16,
    /// Calls waiting for their result, by `toolCallId`.
    waiting: std::collections::HashMap<Box<str>, u32>,
    /// The step (model call) open now, and its `uuid`.
    step: Option<(u32, Option<Box<str>>)>,
    /// The last step closed, and whether its usage is known.
    closed: Option<(u32, bool)>,
    model: Option<String>,
    last: Last,
    ended: Option<RunStatus>,
    named: bool,
    first_ts: Option<i64>,
    last_ts: Option<i64>,
}

impl Parser {
    fn new(path: &Path, state: Option<Value>) -> Parser {
        Parser {
            path: path.to_path_buf(),
            state,
            root: None,
            file: 0,
            waiting: Default::default(),
            step: None,
            closed: None,
            model: None,
            last: Last::Nothing,
            ended: None,
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
        let agent = agent_of(&self.path);
        let session = session_of(&self.path)
            .and_then(|s| s.file_name())
            .map(|s| s.to_string_lossy().into_owned());
        let id = match (&session, agent.as_deref()) {
            (Some(s), Some(MAIN)) => s.clone(),
            (Some(s), Some(a)) => format!("{s}/{a}"),
            _ => stem(&self.path),
        };
        let mut attributes = Vec::new();
        if let Some(s) = &session {
            attributes.push(("session".to_string(), Value::String(s.clone())));
        }
        if let Some(a) = &agent {
            attributes.push(("agent".to_string(), Value::String(a.clone())));
            let own = self.state.as_ref().and_then(|s| s.get("agents")).and_then(|x| x.get(a));
            if let Some(p) = own.and_then(|o| o.get("parentAgentId")).and_then(Value::as_str) {
                attributes.push(("parentAgent".to_string(), Value::String(p.to_string())));
            }
        }
        if let Some(w) = self
            .state
            .as_ref()
            .and_then(|s| s.get("workDir"))
            .and_then(Value::as_str)
        {
            attributes.push(("cwd".to_string(), Value::String(w.to_string())));
        }
        let mut t = Trace::new(RunMeta {
            id: id.clone(),
            format: "kimi-cli",
            source: sink.path.clone(),
            attributes,
            ..Default::default()
        });
        // The session's own title names the main agent's run.
        if agent.as_deref().is_none_or(|a| a == MAIN)
            && let Some(title) = self.state.as_ref().and_then(|s| s.get("title")).and_then(Value::as_str)
            && !title.trim().is_empty()
        {
            t.meta.name = Some(one_line(title));
            self.named = true;
        }
        self.file = t.add_file(sink.path.clone());
        let root = t.add(NewEvent {
            origin: loc.origin(self.file),
            ..NewEvent::new(EventKind::Run, &id)
        });
        sink.push_trace(t);
        self.root = Some(root);
        root
    }

    fn set_attr(sink: &mut Sink, k: &str, v: Value) {
        let attrs = &mut sink.traces[0].meta.attributes;
        match attrs.iter_mut().find(|(x, _)| x == k) {
            Some(slot) => slot.1 = v,
            None => attrs.push((k.to_string(), v)),
        }
    }

    fn apply_rec(&mut self, rec: &Rec, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let root = self.ensure(loc, sink);
        if let Some(p) = &rec.problem {
            sink.error(loc.line, p.clone());
            return;
        }
        let e = &rec.env;
        let ts = number(e.time)
            .or_else(|| number(e.created_at))
            .as_ref()
            .and_then(parse_timestamp);
        if let Some(t) = ts {
            self.first_ts = Some(self.first_ts.map_or(t, |f| f.min(t)));
            self.last_ts = Some(self.last_ts.map_or(t, |l| l.max(t)));
        }
        let origin = loc.origin(self.file);
        let ty = text(e.ty);
        match ty.as_deref() {
            Some("context.append_loop_event") => {
                if let Some((raw, ev)) = &rec.ev {
                    let o = engine::sub_origin(loc, self.file, line, raw.as_bytes());
                    self.loop_event(ev, raw, o, ts, root, loc, sink);
                }
            }
            Some("turn.prompt" | "turn.steer") => {
                sink.traces[0].add(NewEvent {
                    parent: Parent::Index(root),
                    start: ts,
                    status: Status::Ok,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::Message(Role::User), "user")
                });
                self.last = Last::Prompt;
                self.ended = None;
                if !self.named
                    && let Some(s) = e
                        .input
                        .and_then(|i| serde_json::from_str::<Value>(i.0).ok())
                        .map(|v| parts_text(&v))
                    && !s.trim().is_empty()
                {
                    sink.traces[0].meta.name = Some(one_line(&s));
                    self.named = true;
                }
            }
            Some("turn.ended") => {
                let reason = text(e.reason).unwrap_or(Cow::Borrowed("completed"));
                let failed = reason.contains("error") || reason.contains("fail");
                self.ended = Some(if failed { RunStatus::Error } else { RunStatus::Ok });
                if failed {
                    sink.traces[0].add(NewEvent {
                        parent: Parent::Index(root),
                        start: ts,
                        status: Status::Error,
                        payload: PayloadRef::Deferred,
                        origin,
                        ..NewEvent::new(EventKind::Error, "turn ended")
                    });
                }
                self.close_open(sink);
            }
            Some("turn.cancel") => {
                sink.traces[0].add(NewEvent {
                    parent: Parent::Index(root),
                    start: ts,
                    status: Status::Unknown,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::Step, "turn cancelled")
                });
                self.close_open(sink);
                self.last = Last::Cancelled;
                self.ended = None;
            }
            Some("usage.record") => {
                let usage = e
                    .usage
                    .and_then(|u| serde_json::from_str::<Value>(u.0).ok())
                    .map(|u| usage_of(&u));
                // Its `model` is the alias (`moonshot-ai/…`); `llm.request` names the model.
                if self.model.is_none()
                    && let Some(m) = text(e.model)
                {
                    self.model = Some(m.into_owned());
                }
                let scope = text(e.usage_scope);
                match (scope.as_deref(), usage.filter(|u| !u.is_empty())) {
                    // A compaction's model call: no step was written for it.
                    (Some("session"), Some(u)) => {
                        sink.traces[0].add(NewEvent {
                            parent: Parent::Index(root),
                            start: ts,
                            status: Status::Ok,
                            usage: Some(u),
                            model: self.model.as_deref(),
                            payload: PayloadRef::Deferred,
                            origin,
                            ..NewEvent::new(EventKind::LlmCall, "compaction")
                        });
                    }
                    // The usage of the step just closed, when its `step.end` had none.
                    (_, Some(u)) => {
                        if let Some((i, false)) = self.closed {
                            let model = self.model.clone();
                            let t = &mut sink.traces[0];
                            t.event_mut(i).usage = Some(u).into();
                            if let Some(m) = model {
                                let r = t.strings.intern(&m);
                                t.event_mut(i).model = r;
                            }
                            self.closed = Some((i, true));
                        }
                    }
                    _ => {}
                }
            }
            Some("context.apply_compaction") => {
                sink.traces[0].add(NewEvent {
                    parent: Parent::Index(root),
                    start: ts,
                    status: Status::Ok,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::Other, "compaction")
                });
            }
            Some("metadata") => {
                if let Some(v) = number(e.protocol_version) {
                    Self::set_attr(sink, "protocol_version", v);
                }
            }
            Some("config.update" | "profile.bind" | "llm.request") => {
                // `llm.request` names the concrete model; the others the alias chosen.
                let m = if ty.as_deref() == Some("llm.request") {
                    text(e.model).or_else(|| text(e.model_alias))
                } else {
                    text(e.model_alias).or_else(|| text(e.model))
                };
                if let Some(m) = m.filter(|m| !m.is_empty())
                    && (self.model.is_none() || ty.as_deref() == Some("llm.request"))
                {
                    self.model = Some(m.into_owned());
                }
                if let Some(c) = text(e.cwd) {
                    Self::set_attr(sink, "cwd", Value::String(c.into_owned()));
                }
            }
            Some(t) if BOOKKEEPING.contains(&t) => {}
            other => sink.drift(other.unwrap_or("record"), line, root, origin, ts),
        }
    }

    /// One event of the agent loop.
    #[allow(clippy::too_many_arguments)]
    fn loop_event(
        &mut self,
        ev: &LoopRec,
        raw: &str,
        o: Origin,
        ts: Option<i64>,
        root: u32,
        loc: LineLoc,
        sink: &mut Sink,
    ) {
        let parent = self.step.as_ref().map_or(root, |(i, _)| *i);
        let ty = text(ev.ty);
        match ty.as_deref() {
            Some("step.begin") => {
                self.close_open(sink);
                let name = self.model.clone().unwrap_or_else(|| "step".into());
                let uuid = text(ev.uuid);
                let i = sink.traces[0].add(NewEvent {
                    id: uuid.as_deref(),
                    parent: Parent::Index(root),
                    start: ts,
                    status: Status::Pending,
                    model: self.model.as_deref(),
                    payload: PayloadRef::Deferred,
                    origin: o,
                    ..NewEvent::new(EventKind::LlmCall, &name)
                });
                self.step = Some((i, uuid.map(|u| u.into())));
            }
            Some("step.end") => {
                let usage = ev
                    .usage
                    .and_then(|u| serde_json::from_str::<Value>(u.0).ok())
                    .map(|u| usage_of(&u))
                    .filter(|u| !u.is_empty());
                let model = text(ev.model).map(Cow::into_owned).or_else(|| self.model.clone());
                let Some((i, _)) = self.step.take() else {
                    sink.warning(Some(loc.line), "a step ends that did not begin");
                    return;
                };
                let known = usage.is_some();
                let t = &mut sink.traces[0];
                if let Some(m) = model {
                    let r = t.strings.intern(&m);
                    t.event_mut(i).model = r;
                }
                let e = t.event_mut(i);
                e.status = Status::Ok;
                e.usage = usage.into();
                if let (Some(a), Some(b)) = (e.start.get(), ts) {
                    e.duration = Some((b - a).max(0)).into();
                }
                e.origin2 = Some(Box::new(o));
                self.closed = Some((i, known));
                let reason = text(ev.finish_reason);
                if reason.as_deref() != Some("tool_use") {
                    self.last = Last::Reply;
                }
            }
            Some("content.part") => {
                let part = ev.part.as_ref().and_then(|p| text(p.ty));
                let (kind, name) = match part.as_deref() {
                    Some("text") => (EventKind::Message(Role::Assistant), "assistant"),
                    Some("think") => (EventKind::Other, "thinking"),
                    Some(other) => {
                        let name = other.to_string();
                        return sink.drift(&name, raw.as_bytes(), parent, o, ts);
                    }
                    None => return sink.drift("content.part", raw.as_bytes(), parent, o, ts),
                };
                sink.traces[0].add(NewEvent {
                    parent: Parent::Index(parent),
                    start: ts,
                    status: Status::Ok,
                    payload: PayloadRef::Deferred,
                    origin: o,
                    ..NewEvent::new(kind, name)
                });
            }
            Some("tool.call") => {
                let name = text(ev.name).unwrap_or(Cow::Borrowed("tool"));
                let id = text(ev.tool_call_id)
                    .or_else(|| text(ev.uuid))
                    .filter(|s| !s.is_empty());
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
                    self.waiting.insert(id.into(), i);
                }
            }
            Some("tool.result") => {
                let failed = ev
                    .result
                    .and_then(|r| serde_json::from_str::<Value>(r.0).ok())
                    .is_some_and(|r| r.get("isError") == Some(&Value::Bool(true)));
                let id = text(ev.tool_call_id);
                match id.as_deref().and_then(|id| self.waiting.remove(id)) {
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
                            ..NewEvent::new(EventKind::Other, "tool.result")
                        });
                    }
                }
            }
            other => {
                let name = other.unwrap_or("loop event").to_string();
                sink.drift(&name, raw.as_bytes(), parent, o, ts);
            }
        }
    }

    /// A turn ended or was cancelled: its open step and calls get no more records.
    fn close_open(&mut self, sink: &mut Sink) {
        let t = &mut sink.traces[0];
        if let Some((i, _)) = self.step.take()
            && t.event(i).status == Status::Pending
        {
            t.event_mut(i).status = Status::Unknown;
        }
        for (_, i) in self.waiting.drain() {
            t.event_mut(i).status = Status::Unknown;
        }
    }
}

/// The text of Kimi's content parts (`[{type: "text", text}]`).
fn parts_text(v: &Value) -> String {
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
        let (Some(root), Some(t)) = (self.root, sink.traces.first_mut()) else {
            return;
        };
        let status = if self.step.is_some() || !self.waiting.is_empty() {
            RunStatus::Running
        } else {
            match (self.ended, self.last) {
                (Some(s), _) => s,
                (None, Last::Reply) => RunStatus::Ok,
                (None, Last::Prompt | Last::Cancelled | Last::Nothing) => RunStatus::Unknown,
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

/// Rebuild a payload from its record(s): a loop event (a call's `tool.call`, then its
/// `tool.result`; a step's `step.begin`, then its `step.end`), or a whole record.
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
            "tool.call" => {
                out.input = take(&mut v, "args");
                if let Some(d) = take(&mut v, "description") {
                    out.extra.push(("description".into(), d));
                }
            }
            "tool.result" => {
                let mut r = take(&mut v, "result").unwrap_or(Value::Null);
                out.output = take(&mut r, "output").map(flatten_text);
                if r.get("isError") == Some(&Value::Bool(true)) {
                    out.error = Some(ErrorInfo {
                        message: "the tool reported an error".into(),
                        ..Default::default()
                    });
                }
            }
            "step.begin" => {}
            "step.end" => {
                for k in ["finishReason", "usage", "messageId"] {
                    if let Some(x) = take(&mut v, k) {
                        out.extra.push((k.into(), x));
                    }
                }
            }
            "content.part" => {
                let mut p = take(&mut v, "part").unwrap_or(Value::Null);
                out.output = take(&mut p, "text").or_else(|| take(&mut p, "think"));
            }
            "turn.prompt" | "turn.steer" => out.input = take(&mut v, "input").map(|i| Value::String(parts_text(&i))),
            "turn.ended" | "turn.cancel" => out.output = take(&mut v, "reason"),
            "context.apply_compaction" => out.output = take(&mut v, "summary"),
            "usage.record" => {
                if let Some(u) = take(&mut v, "usage") {
                    out.extra.push(("usage".into(), u));
                }
            }
            _ => out.input = Some(v),
        }
    }
    out
}

/// A record or loop event of a kind Kimi did not write before (see `Parser::drift`).
fn is_drift(v: &Value) -> bool {
    const KNOWN: [&str; 13] = [
        "context.append_loop_event",
        "turn.prompt",
        "turn.steer",
        "turn.ended",
        "turn.cancel",
        "usage.record",
        "context.apply_compaction",
        "step.begin",
        "step.end",
        "tool.call",
        "tool.result",
        "content.part",
        "",
    ];
    let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
    if ty == "content.part" {
        let part = v.get("part").and_then(|p| p.get("type")).and_then(Value::as_str);
        return !matches!(part, Some("text" | "think"));
    }
    v.is_object() && !KNOWN.contains(&ty) && !BOOKKEEPING.contains(&ty)
}

/// An output's `[{type:"text", text}]` list as its text, when that is all it holds.
fn flatten_text(v: Value) -> Value {
    if let Value::Array(items) = &v {
        let texts: Option<Vec<&str>> = items.iter().map(|b| b.get("text").and_then(Value::as_str)).collect();
        if let Some(t) = texts {
            return Value::String(t.join("\n"));
        }
    }
    v
}

fn take(v: &mut Value, k: &str) -> Option<Value> {
    v.get_mut(k).filter(|x| !x.is_null()).map(Value::take)
}

/// A call's gist by Kimi Code's tools (`Bash`, `Read`, `Write`, `Edit`, `Grep`, `Glob`,
/// `FetchURL`, `WebSearch`, `Agent`, `TodoList`, `mcp__*`).
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{first_arg, generic, key_or_generic, todos};
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "Bash" => by(&["command"]),
        "Read" | "Write" | "Edit" | "ReadMediaFile" => by(&["file_path", "path"]),
        "Grep" | "Glob" => by(&["pattern", "path"]),
        "FetchURL" => by(&["url"]),
        "WebSearch" => by(&["query"]),
        "Agent" | "AgentSwarm" => by(&["description", "prompt"]),
        "TodoList" => input
            .get("todos")
            .and_then(|t| todos(t, &["title", "content"], "status"))
            .or_else(|| generic(name, input)),
        n if n.starts_with("mcp__") => first_arg(input),
        _ => generic(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::fixture;
    use proptest::prelude::*;

    const SESSION: &str = "sessions/wd_shop_0a1b2c3d4e5f/session_3b9f2c44-1d7e-4c55-9a61-6f0e2d8c7b10";

    fn calls(t: &Trace) -> Vec<(String, Status)> {
        (0..t.len() as u32)
            .filter(|&i| t.event(i).kind == EventKind::ToolCall)
            .map(|i| (t.name(i).to_string(), t.event(i).status))
            .collect()
    }

    fn load_one(name: &str) -> Trace {
        let l = KimiCli.load(&fixture("kimi-cli", name)).unwrap();
        assert_eq!(l.traces.len(), 1);
        l.traces.into_iter().next().unwrap()
    }

    #[test]
    fn a_session_directory_loads_main_and_its_subagent_with_steps_calls_and_usage() {
        let dir = fixture("kimi-cli", SESSION);
        assert!(KimiCli.is_run_dir(&dir));
        let l = KimiCli.load(&dir).unwrap();
        assert_eq!(l.traces.len(), 2);
        let main = &l.traces[0];
        assert_eq!(main.meta.id, "session_3b9f2c44-1d7e-4c55-9a61-6f0e2d8c7b10");
        assert_eq!(main.meta.name.as_deref(), Some("Count the TODOs in src"));
        assert_eq!(main.meta.status, RunStatus::Ok);
        assert_eq!(main.meta.model.as_deref(), Some("kimi-k2.7-code"));
        assert!(main.diagnostics.is_empty(), "{:?}", main.diagnostics);
        assert_eq!(
            calls(main),
            vec![
                ("Agent".to_string(), Status::Ok),
                ("Bash".to_string(), Status::Error),
                ("Bash".to_string(), Status::Ok)
            ]
        );
        let c = main.counts();
        // Three steps and one compaction; each step's usage once (not again from usage.record).
        assert_eq!(c.llm_calls, 4);
        assert_eq!(
            c.tokens,
            (3100 + 60 + 1024) + (240 + 45 + 4096) + (310 + 120 + 4096) + (900 + 400 + 2048)
        );
        let sub = &l.traces[1];
        assert_eq!(sub.meta.id, "session_3b9f2c44-1d7e-4c55-9a61-6f0e2d8c7b10/agent-0");
        let attr = |t: &Trace, k: &str| t.meta.attributes.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
        assert_eq!(attr(sub, "parentAgent"), Some(serde_json::json!("main")));
        assert_eq!(calls(sub), vec![("Grep".to_string(), Status::Ok)]);
        // Payloads from disk: the failed call's command and its error.
        let bash = (0..main.len() as u32).find(|&i| main.name(i) == "Bash").unwrap();
        let p = crate::formats::payload(main, main.event(bash));
        assert_eq!(p.input.unwrap()["command"], "grep -rc TODO src/nope");
        assert!(p.error.is_some());
        assert!(p.output.unwrap().as_str().unwrap().contains("No such file"));
        assert_eq!(
            KimiCli.gist("Bash", &serde_json::json!({"command": "ls -la"})),
            Some("ls -la".into())
        );
        let cmd = super::super::resume::command(&main.meta);
        assert_eq!(
            cmd.as_deref(),
            Some("cd '/home/dev/shop' && kimi --session session_3b9f2c44-1d7e-4c55-9a61-6f0e2d8c7b10")
        );
        assert_eq!(
            super::super::resume::command(&sub.meta),
            None,
            "a subagent resumes through its session"
        );
    }

    #[test]
    fn a_running_journal_says_so_and_a_damaged_line_is_named() {
        let t = load_one("running.wire.jsonl");
        assert_eq!(t.meta.status, RunStatus::Running);
        assert_eq!(calls(&t), vec![("Bash".to_string(), Status::Pending)]);

        let t = load_one("damaged.wire.jsonl");
        let errs: Vec<_> = t.diagnostics.iter().filter(|d| d.severity == Severity::Error).collect();
        assert_eq!(errs.len(), 1, "{:?}", t.diagnostics);
        assert_eq!(errs[0].line, Some(4));
        assert!(errs[0].path.ends_with("damaged.wire.jsonl"));
        assert_eq!(calls(&t), vec![("Read".to_string(), Status::Ok)]);
    }

    #[test]
    fn detection_claims_journals_and_session_directories() {
        let det = |p: &Path| KimiCli.detect(&Probe::open(p).unwrap());
        assert_eq!(det(&fixture("kimi-cli", "running.wire.jsonl")), 100);
        assert_eq!(det(&fixture("kimi-cli", SESSION)), 100);
        let other = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/session.jsonl");
        if other.exists() {
            assert_eq!(det(&other), 0);
        }
        let p = fixture("kimi-cli", &format!("{SESSION}/agents/main/wire.jsonl"));
        assert_eq!(crate::formats::detect(&p).unwrap().id(), "kimi-cli");
    }

    #[test]
    fn live_follow_closes_the_step_as_records_arrive() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("wire.jsonl");
        let text = std::fs::read_to_string(fixture("kimi-cli", "running.wire.jsonl")).unwrap();
        std::fs::write(&p, &text).unwrap();
        let mut f = KimiCli.follow(&p).unwrap();
        f.poll().unwrap();
        assert_eq!(f.sink.traces[0].meta.status, RunStatus::Running);
        let more = concat!(
            r#"{"type":"context.append_loop_event","event":{"type":"tool.result","parentUuid":"Bash_0","toolCallId":"Bash_0","result":{"output":"ok"}},"time":1795165260500}"#,
            "\n",
            r#"{"type":"context.append_loop_event","event":{"type":"step.end","uuid":"st-r1","turnId":"0","step":1,"usage":{"inputOther":100,"output":20,"inputCacheRead":0,"inputCacheCreation":0},"finishReason":"end_turn"},"time":1795165261000}"#,
            "\n"
        );
        std::fs::write(&p, format!("{text}{more}")).unwrap();
        f.poll().unwrap();
        let t = &f.sink.traces[0];
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(calls(t), vec![("Bash".to_string(), Status::Ok)]);
        assert_eq!(t.counts().tokens, 120);
    }

    fn unknown_record(rng: &mut crate::formats::testing::Rng, near: &Value) -> Value {
        let mut m = serde_json::Map::new();
        let ty = format!("{}.{}", rng.type_name(), rng.type_name());
        if rng.one_in(2) && near.get("event").is_some() {
            // An unknown loop event.
            let mut ev = serde_json::Map::new();
            ev.insert("type".into(), Value::String(ty));
            if let Some(t) = rng.maybe_text() {
                ev.insert("text".into(), Value::String(t));
            }
            m.insert("type".into(), Value::String("context.append_loop_event".into()));
            m.insert("event".into(), Value::Object(ev));
        } else {
            m.insert("type".into(), Value::String(ty));
            if let Some(t) = rng.maybe_text() {
                m.insert("summary".into(), Value::String(t));
            }
        }
        if let Some(t) = near.get("time") {
            m.insert("time".into(), t.clone());
        }
        m.insert(rng.type_name(), rng.value());
        Value::Object(m)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn drift_is_skipped_quietly(seed in any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "kimi-cli",
                &[
                    "tests/fixtures/kimi-cli/sessions/wd_shop_0a1b2c3d4e5f/session_3b9f2c44-1d7e-4c55-9a61-6f0e2d8c7b10",
                    "tests/fixtures/kimi-cli/running.wire.jsonl",
                    "sample-traces/kimi-cli/wd_inventory_9f8e7d6c5b4a/session_5d6e7f80-9a1b-4c2d-8e3f-405162738495",
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
