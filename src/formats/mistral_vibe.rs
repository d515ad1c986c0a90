//! Mistral Vibe sessions (mistralai/mistral-vibe): a directory a session,
//! `~/.vibe/logs/session/session_<YYYYMMDD_HHMMSS>_<short id>/`, as `vibe/core/session/
//! session_logger.py` writes it:
//! - `messages.jsonl`: the conversation, one `LLMMessage` a line, OpenAI-shaped: `role`
//!   (`user`, `assistant`, `tool`), `content`, `reasoning_content`, `tool_calls`
//!   (`{id, index, function: {name, arguments}}`), and for a tool's answer `name` and
//!   `tool_call_id`; lines are appended after each turn (system messages are not written);
//! - `meta.json`: `session_id`, `parent_session_id`, `start_time`, `end_time`, `model`,
//!   `environment.working_directory`, `title`, and `stats` (`session_prompt_tokens`,
//!   `session_completion_tokens`), replaced (by rename) after each turn;
//! - a subagent (the `task` tool) logs a session of its own below its parent's,
//!   `agents/<agent>_<time>_<short id>/`, whose `parent_session_id` names the parent.
//!
//! Traps this reader handles:
//! - no message has a time: events have none (file order is the order); the run's start and
//!   end are `meta.json`'s;
//! - a failed tool is written as the tool's answer wrapped in `<tool_error>…</tool_error>`
//!   (`agent_loop.py`): such a result makes its call an error;
//! - tokens are the session's totals only (`stats`): the run's own usage, priced at its model;
//! - `arguments` may be a JSON string or an object;
//! - drift (formats/mod.rs): a role Vibe does not write is skipped quietly, counted, and
//!   shown when it carries text.
//!
//! On the shared engine (DESIGN §4): the skim reads each line's role, ids and the byte range of
//! each tool call; payloads stay on disk and are decoded when shown.

use super::engine::{self, Records};
use super::jsonl::{self, Follow, LineLoc, LineParser, Sink, json_error};
use super::skim::Raw;
use super::{Format, LoadError, Loaded, Probe, raw_text, stem};
use crate::model::*;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub struct MistralVibe;

const MESSAGES: &str = "messages.jsonl";
const META: &str = "meta.json";
const SUBAGENTS: &str = "agents";
const META_LIMIT: u64 = 16 << 20;
/// What a failed tool's answer starts with (`vibe/core/utils/tags.py`: `TOOL_ERROR_TAG`).
const TOOL_ERROR: &str = "<tool_error>";

impl Format for MistralVibe {
    fn id(&self) -> &'static str {
        "mistral-vibe"
    }
    fn describe(&self) -> &'static str {
        "Mistral Vibe session, ~/.vibe/logs/session/session_<time>_<id>/ (messages.jsonl + meta.json)"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return if is_session_dir(&p.path) { 100 } else { 0 };
        }
        if p.file_name() != MESSAGES {
            return 0;
        }
        let dir = p.path.parent().unwrap_or(Path::new("."));
        if is_session_dir(dir) { 100 } else { 0 }
    }

    fn is_run_dir(&self, dir: &Path) -> bool {
        is_session_dir(dir)
    }

    fn summary_inputs(&self, path: &Path) -> Option<Vec<PathBuf>> {
        Some(vec![path.to_path_buf()])
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        if !path.is_dir() {
            return load_file(path);
        }
        let mut traces = Vec::new();
        let mut first_error = None;
        for dir in std::iter::once(path.to_path_buf()).chain(subagents(path)) {
            match load_file(&dir.join(MESSAGES)) {
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
                "no Mistral Vibe messages.jsonl in this directory",
            )),
            _ => Ok(Loaded { traces }),
        }
    }

    fn follow(&self, path: &Path) -> Option<Follow> {
        // A session directory (messages and metadata) is reloaded whole when it changes.
        if path.is_dir() {
            return None;
        }
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
        tool_gist(name, &super::decode_embedded(input))
    }
}

fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    let mut f = MistralVibe.follow(path).expect("a file");
    f.poll()?;
    f.finish("Mistral Vibe messages")
}

/// A session directory: `messages.jsonl` with `meta.json` beside it.
fn is_session_dir(dir: &Path) -> bool {
    dir.join(MESSAGES).is_file() && dir.join(META).is_file()
}

/// The subagents' session directories below a session's `agents/`, by name.
fn subagents(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir.join(SUBAGENTS)) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd.flatten().map(|e| e.path()).filter(|p| is_session_dir(p)).collect();
    out.sort();
    out
}

/// The index fields of one message.
#[derive(Deserialize, Default)]
struct LineRec<'a> {
    #[serde(borrow, default)]
    role: Option<Raw<'a>>,
    #[serde(borrow, default)]
    content: Option<Raw<'a>>,
    #[serde(borrow, default)]
    tool_calls: Option<Raw<'a>>,
    #[serde(borrow, default)]
    tool_call_id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    message_id: Option<Raw<'a>>,
}

#[derive(Deserialize, Default)]
struct CallIdx<'a> {
    #[serde(borrow, default)]
    id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    function: Option<FunctionIdx<'a>>,
}

#[derive(Deserialize, Default)]
struct FunctionIdx<'a> {
    #[serde(borrow, default)]
    name: Option<Raw<'a>>,
}

/// What the skim reads of one line.
pub(crate) struct Rec<'a> {
    env: LineRec<'a>,
    /// Each tool call: its text in the line and its fields.
    calls: Vec<(&'a str, CallIdx<'a>)>,
    /// A tool answer's content starts with `<tool_error>`.
    failed: bool,
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
        calls: Vec::new(),
        failed: false,
        problem: None,
    };
    if let Some(c) = rec.env.tool_calls.filter(|c| c.0 != "null") {
        match serde_json::from_str::<Vec<Raw>>(c.0) {
            Ok(calls) => {
                for c in calls {
                    match serde_json::from_str::<CallIdx>(c.0) {
                        Ok(idx) => rec.calls.push((c.0, idx)),
                        Err(e) => rec.problem = Some(format!("tool call: {}", json_error(&e))),
                    }
                }
            }
            Err(e) => rec.problem = Some(format!("tool_calls: {}", json_error(&e))),
        }
    }
    if text(rec.env.role).as_deref() == Some("tool") {
        rec.failed = text(rec.env.content).is_some_and(|c| c.trim_start().starts_with(TOOL_ERROR));
    }
    Some(rec)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    Nothing,
    Prompt,
    Reply,
}

/// The Vibe line parser: one trace a `messages.jsonl`.
pub struct Parser {
    path: PathBuf,
    root: Option<u32>,
    file: u16,
    waiting: std::collections::HashMap<Box<str>, u32>,
    last: Last,
    named: bool,
}

impl Parser {
    pub fn new(path: &Path) -> Parser {
        Parser {
            path: path.to_path_buf(),
            root: None,
            file: 0,
            waiting: Default::default(),
            last: Last::Nothing,
            named: false,
        }
    }

    fn meta(&self) -> Option<Value> {
        let dir = self.path.parent()?;
        super::read_json_file(&dir.join(META), META_LIMIT).ok()
    }

    fn ensure(&mut self, loc: LineLoc, sink: &mut Sink) -> u32 {
        if let Some(r) = self.root {
            sink.touch(0);
            return r;
        }
        let dir_name = self
            .path
            .parent()
            .and_then(|d| d.file_name())
            .map(|n| n.to_string_lossy().into_owned());
        let id = dir_name.unwrap_or_else(|| stem(&self.path));
        let mut t = Trace::new(RunMeta {
            id: id.clone(),
            format: "mistral-vibe",
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

    fn apply_rec(&mut self, rec: &Rec, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let root = self.ensure(loc, sink);
        if let Some(p) = &rec.problem {
            sink.error(loc.line, p.clone());
        }
        let origin = loc.origin(self.file);
        let role = text(rec.env.role);
        let id = text(rec.env.message_id);
        match role.as_deref() {
            Some("user") => {
                sink.traces[0].add(NewEvent {
                    id: id.as_deref(),
                    parent: Parent::Index(root),
                    status: Status::Ok,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::Message(Role::User), "user")
                });
                self.last = Last::Prompt;
                if !self.named
                    && let Some(c) = text(rec.env.content).filter(|c| !c.trim().is_empty())
                {
                    sink.traces[0].meta.name = Some(one_line(&c));
                    self.named = true;
                }
            }
            Some("assistant") => {
                let llm = sink.traces[0].add(NewEvent {
                    id: id.as_deref(),
                    parent: Parent::Index(root),
                    status: Status::Ok,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::LlmCall, "assistant")
                });
                for (raw, c) in &rec.calls {
                    let o = engine::sub_origin(loc, self.file, line, raw.as_bytes());
                    let name = c
                        .function
                        .as_ref()
                        .and_then(|f| text(f.name))
                        .unwrap_or(Cow::Borrowed("tool"));
                    let cid = text(c.id).filter(|s| !s.is_empty());
                    let i = sink.traces[0].add(NewEvent {
                        id: cid.as_deref(),
                        parent: Parent::Index(llm),
                        status: Status::Pending,
                        payload: PayloadRef::Deferred,
                        origin: o,
                        ..NewEvent::new(EventKind::ToolCall, &name)
                    });
                    if let Some(cid) = cid {
                        self.waiting.insert(cid.into(), i);
                    }
                }
                self.last = if rec.calls.is_empty() {
                    Last::Reply
                } else {
                    Last::Prompt
                };
            }
            Some("tool") => match text(rec.env.tool_call_id).and_then(|id| self.waiting.remove(id.as_ref())) {
                Some(i) => {
                    let e = sink.traces[0].event_mut(i);
                    e.status = if rec.failed { Status::Error } else { Status::Ok };
                    e.origin2 = Some(Box::new(origin));
                }
                None => {
                    sink.warning(Some(loc.line), "a tool result with no call waiting for it");
                    sink.traces[0].add(NewEvent {
                        parent: Parent::Index(root),
                        status: if rec.failed { Status::Error } else { Status::Unknown },
                        payload: PayloadRef::Deferred,
                        origin,
                        ..NewEvent::new(EventKind::Other, "tool")
                    });
                }
            },
            Some("system") => {
                sink.traces[0].add(NewEvent {
                    parent: Parent::Index(root),
                    status: Status::Ok,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::Message(Role::System), "system")
                });
            }
            other => {
                // A role Vibe does not write (formats/mod.rs: drift).
                let name = other.unwrap_or("message").to_string();
                sink.skip(&name);
                let v = serde_json::from_slice::<Value>(line).ok();
                if v.as_ref().and_then(super::drift_text).is_some() {
                    sink.traces[0].add(NewEvent {
                        parent: Parent::Index(root),
                        status: Status::Ok,
                        payload: PayloadRef::Deferred,
                        origin,
                        ..NewEvent::new(EventKind::Other, &name)
                    });
                }
            }
        }
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
        let Some(root) = self.root else { return };
        // Read before the trace is borrowed: the metadata is replaced after each turn.
        let meta = self.meta();
        let Some(t) = sink.traces.first_mut() else { return };
        let status = if !self.waiting.is_empty() {
            RunStatus::Running
        } else {
            match self.last {
                Last::Reply => RunStatus::Ok,
                Last::Prompt | Last::Nothing => RunStatus::Unknown,
            }
        };
        t.meta.status = status;
        let e = t.event_mut(root);
        e.status = status.event_status();
        if let Some(m) = &meta {
            let s = |k: &str| m.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
            if let Some(id) = s("session_id") {
                t.meta.id = id.to_string();
            }
            if let Some(title) = s("title") {
                t.meta.name = Some(one_line(title));
            }
            t.meta.model = s("model")
                .or_else(|| {
                    m.get("config")
                        .and_then(|c| c.get("active_model"))
                        .and_then(Value::as_str)
                })
                .map(str::to_string);
            t.meta.start = m.get("start_time").and_then(parse_timestamp);
            t.meta.end = m.get("end_time").and_then(parse_timestamp);
            let mut attrs = Vec::new();
            if let Some(cwd) = m
                .get("environment")
                .and_then(|e| e.get("working_directory"))
                .and_then(Value::as_str)
                .or_else(|| s("working_dir"))
            {
                attrs.push(("cwd", Value::String(cwd.to_string())));
            }
            for k in ["parent_session_id", "git_branch", "git_commit"] {
                if let Some(v) = s(k) {
                    attrs.push((k, Value::String(v.to_string())));
                }
            }
            for (k, v) in attrs {
                match t.meta.attributes.iter_mut().find(|(x, _)| x == k) {
                    Some(slot) => slot.1 = v,
                    None => t.meta.attributes.push((k.to_string(), v)),
                }
            }
            // The session's totals: prompt tokens count the cached ones where Vibe says so.
            let usage = m.get("stats").map(|st| {
                let n = |k: &str| super::lenient_u64(st.get(k));
                let cached = n("session_cached_tokens").filter(|c| *c > 0);
                Usage {
                    input: n("session_prompt_tokens").map(|p| p.saturating_sub(cached.unwrap_or(0))),
                    output: n("session_completion_tokens"),
                    cache_read: cached,
                    ..Default::default()
                }
            });
            t.event_mut(root).usage = usage.filter(|u| !u.is_empty()).into();
        }
        if let Some(n) = t.meta.name.clone() {
            let r = t.strings.intern(&n);
            t.event_mut(root).name = r;
        }
    }
}

/// Rebuild a payload from its record(s): a tool call (then the tool's answer line), or a
/// message line.
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
        if let Some(mut f) = take(&mut v, "function") {
            // A tool call.
            out.input = take(&mut f, "arguments").map(super::decode_embedded_owned);
            if let Some(id) = take(&mut v, "id") {
                out.extra.push(("id".into(), id));
            }
            continue;
        }
        let role = v.get("role").and_then(Value::as_str).unwrap_or("").to_string();
        match role.as_str() {
            "user" | "system" => out.input = take(&mut v, "content"),
            "assistant" => {
                out.output = take(&mut v, "content");
                if let Some(r) = take(&mut v, "reasoning_content") {
                    out.extra.push(("reasoning".into(), r));
                }
                if let Some(c) = take(&mut v, "tool_calls") {
                    out.extra.push(("tool_calls".into(), c));
                }
            }
            "tool" => {
                let content = take(&mut v, "content");
                if let Some(msg) = content
                    .as_ref()
                    .and_then(Value::as_str)
                    .and_then(|s| s.trim_start().strip_prefix(TOOL_ERROR))
                {
                    out.error = Some(ErrorInfo {
                        message: msg.trim_end().trim_end_matches("</tool_error>").to_string(),
                        ..Default::default()
                    });
                }
                out.output = content;
            }
            _ if ev.kind == EventKind::Other => return super::drift_payload(&v, &["message_id"]),
            _ => out.input = Some(v),
        }
    }
    out
}

fn take(v: &mut Value, k: &str) -> Option<Value> {
    v.get_mut(k).filter(|x| !x.is_null()).map(Value::take)
}

/// A call's gist by Vibe's tools (`bash`, `read_file`, `write_file`, `search_replace`, `grep`,
/// `web_fetch`, `web_search`, `task`, `todo`).
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{first_arg, generic, key_or_generic};
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "bash" => by(&["command"]),
        "read_file" | "write_file" | "search_replace" => by(&["path", "file_path"]),
        "grep" => by(&["pattern", "path"]),
        "web_fetch" => by(&["url"]),
        "web_search" => by(&["query"]),
        "task" => by(&["task"]),
        n if n.contains("__") => first_arg(input),
        _ => generic(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::fixture;
    use proptest::prelude::*;

    const SESSION: &str = "session/session_20261120_090000_7c1d2e3f";

    fn calls(t: &Trace) -> Vec<(String, Status)> {
        (0..t.len() as u32)
            .filter(|&i| t.event(i).kind == EventKind::ToolCall)
            .map(|i| (t.name(i).to_string(), t.event(i).status))
            .collect()
    }

    #[test]
    fn a_session_directory_loads_the_session_and_its_subagent() {
        let dir = fixture("mistral-vibe", SESSION);
        assert!(MistralVibe.is_run_dir(&dir));
        let l = MistralVibe.load(&dir).unwrap();
        assert_eq!(l.traces.len(), 2);
        let t = &l.traces[0];
        assert_eq!(t.meta.id, "7c1d2e3f-5a6b-4c7d-8e9f-0a1b2c3d4e5f");
        assert_eq!(t.meta.name.as_deref(), Some("Fix the flaky date test"));
        assert_eq!(t.meta.model.as_deref(), Some("mistral-medium-3.5"));
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(
            calls(t),
            vec![
                ("task".to_string(), Status::Ok),
                ("bash".to_string(), Status::Error),
                ("search_replace".to_string(), Status::Ok)
            ]
        );
        let c = t.counts();
        assert_eq!(c.llm_calls, 4);
        assert_eq!(c.tokens, 8200 + 640);
        let bash = (0..t.len() as u32).find(|&i| t.name(i) == "bash").unwrap();
        let p = crate::formats::payload(t, t.event(bash));
        assert_eq!(p.input.unwrap()["command"], "pytest tests/test_dates.py -q");
        assert_eq!(p.error.unwrap().message, "bash: Command timed out after 30s");
        let sub = &l.traces[1];
        let attr = |t: &Trace, k: &str| t.meta.attributes.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
        assert_eq!(
            attr(sub, "parent_session_id"),
            Some(serde_json::json!("7c1d2e3f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"))
        );
        assert_eq!(calls(sub), vec![("grep".to_string(), Status::Ok)]);
        assert_eq!(
            super::super::resume::command(&t.meta).as_deref(),
            Some("cd '/home/dev/shop' && vibe --resume 7c1d2e3f-5a6b-4c7d-8e9f-0a1b2c3d4e5f")
        );
        assert_eq!(super::super::resume::command(&sub.meta), None);
        assert_eq!(
            MistralVibe.gist("bash", &serde_json::json!("{\"command\": \"ls\"}")),
            Some("ls".into())
        );
    }

    #[test]
    fn a_running_session_and_a_damaged_line() {
        let t = MistralVibe
            .load(&fixture("mistral-vibe", "running/messages.jsonl"))
            .unwrap()
            .traces
            .remove(0);
        assert_eq!(t.meta.status, RunStatus::Running);
        assert_eq!(calls(&t), vec![("bash".to_string(), Status::Pending)]);
        let t = MistralVibe
            .load(&fixture("mistral-vibe", "damaged/messages.jsonl"))
            .unwrap()
            .traces
            .remove(0);
        let errs: Vec<_> = t.diagnostics.iter().filter(|d| d.severity == Severity::Error).collect();
        assert_eq!(errs.len(), 1, "{:?}", t.diagnostics);
        assert_eq!(errs[0].line, Some(2));
        assert!(errs[0].path.ends_with("damaged/messages.jsonl"));
        assert_eq!(calls(&t), vec![("read_file".to_string(), Status::Ok)]);
    }

    #[test]
    fn detection_claims_session_directories_and_their_messages() {
        let det = |p: &Path| MistralVibe.detect(&Probe::open(p).unwrap());
        assert_eq!(det(&fixture("mistral-vibe", SESSION)), 100);
        let m = fixture("mistral-vibe", &format!("{SESSION}/messages.jsonl"));
        assert_eq!(det(&m), 100);
        assert_eq!(crate::formats::detect(&m).unwrap().id(), "mistral-vibe");
        let other = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/session.jsonl");
        if other.exists() {
            assert_eq!(det(&other), 0);
        }
    }

    #[test]
    fn live_follow_joins_the_answer_when_it_is_appended() {
        let d = tempfile::tempdir().unwrap();
        for f in [MESSAGES, META] {
            std::fs::copy(fixture("mistral-vibe", &format!("running/{f}")), d.path().join(f)).unwrap();
        }
        let p = d.path().join(MESSAGES);
        let mut f = MistralVibe.follow(&p).unwrap();
        f.poll().unwrap();
        assert_eq!(f.sink.traces[0].meta.status, RunStatus::Running);
        let mut text = std::fs::read_to_string(&p).unwrap();
        text.push_str(
            "{\"role\": \"tool\", \"content\": \"ok\", \"name\": \"bash\", \"tool_call_id\": \"call_r1\"}\n{\"role\": \"assistant\", \"content\": \"Built.\", \"message_id\": \"m9\"}\n",
        );
        std::fs::write(&p, text).unwrap();
        f.poll().unwrap();
        let t = &f.sink.traces[0];
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(calls(t), vec![("bash".to_string(), Status::Ok)]);
    }

    fn unknown_record(rng: &mut crate::formats::testing::Rng, _near: &Value) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("role".into(), Value::String(rng.type_name()));
        if let Some(t) = rng.maybe_text() {
            m.insert("content".into(), Value::String(t));
        }
        m.insert(
            "message_id".into(),
            Value::String(format!("drift-{}", rng.next() % 1000)),
        );
        m.insert(rng.type_name(), rng.value());
        Value::Object(m)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn drift_is_skipped_quietly(seed in any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "mistral-vibe",
                &[
                    "tests/fixtures/mistral-vibe/session/session_20261120_090000_7c1d2e3f",
                    "tests/fixtures/mistral-vibe/running",
                    "sample-traces/mistral-vibe/session/session_20261124_141500_4e5f6a7b",
                ],
            );
            crate::formats::testing::drift_check(&sources, seed, &|f, rng| {
                if f.file_name().is_some_and(|x| x == MESSAGES) {
                    crate::formats::testing::drift_jsonl(f, rng, &unknown_record)
                } else {
                    0
                }
            });
        }
    }
}
