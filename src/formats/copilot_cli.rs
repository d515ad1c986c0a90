//! GitHub Copilot CLI sessions: `~/.copilot/session-state/<id>/events.jsonl` (older CLIs wrote
//! `session-state/<id>.jsonl`), one event a line: `{type, data, id, timestamp, parentId}`.
//! `parentId` chains every event to the one before: it is an order, not a tree.
//!
//! Shapes and traps this reader handles:
//! - a tool call is requested in `assistant.message.data.toolRequests[]` and runs as
//!   `tool.execution_start` / `tool.execution_complete`, all three joined by `toolCallId` into
//!   ONE tool call; a completion may come without its start, a start without its request
//!   (older CLIs) or without its completion (the session stopped there: Pending);
//! - the CLI's internal tools (`report_intent`, `task_complete`) are tool calls like any other;
//! - a subagent's messages and calls name the call that started it (`parentToolCallId`) and
//!   hang under it;
//! - `assistant.turn_start` / `assistant.turn_end` become a step holding the turn's replies;
//! - usage: newer CLIs (1.0.102) write a `session.usage_record` per API call when it ends,
//!   just before its reply: `data.usage` has the call's model, tokens, duration and its
//!   `apiCallId`, which the reply (`assistant.message.data.apiCallId`) names too. The record
//!   makes the LLM call (it ran for `duration` ms up to the record) and the reply joins it
//!   (its record, the usage record its second); a record that no reply joins (a killed
//!   session, a call without reply) is still a call with its tokens. The chunks of one
//!   response share its `apiCallId`: the first is the call, later ones assistant messages
//!   under it. A repeated record of a call counts once. Older replies carry only
//!   `outputTokens`. The session's totals (input, output and cache tokens per model,
//!   premium requests) are in `session.shutdown`, which a session still running or killed
//!   does not have: those totals go on the run, not on a reply, and the run's tokens are
//!   the larger of them and its calls' sum (`Trace::counts`, `run_cost` in cost/usage.rs), so
//!   that calls and totals are never added together. Both count as OpenAI does
//!   (`inputTokens` include `cacheReadTokens` and `cacheWriteTokens`, `outputTokens`
//!   include `reasoningTokens`): taken out; `requests.cost` counts premium requests, not
//!   dollars;
//! - a shell command's completion says its exit code (`shellExecution.exitCode`): one that is
//!   not 0 is an error even with `success: true` (the tool ran, the command failed), as
//!   Codex's exit codes are read;
//! - `system.message` (the system prompt, or a developer instruction) is a system message of
//!   the run, its text the payload's input;
//! - a session folder holds more than `events.jsonl` (`workspace.yaml`, `checkpoints/`,
//!   `rewind-file-snapshots/`, `inuse.<pid>.lock`, `.workspace-fork.lock`): only
//!   `events.jsonl` is read;
//! - drift (formats/mod.rs): the record types Copilot persists are known
//!   (`SHOWN_TYPES` are shown as generic events); any other type is a newer CLI's:
//!   counted as skipped, no diagnostic, shown when it carries text.
//!
//! On the shared engine (DESIGN §4): the skim reads the envelope and the few `data` fields the
//! index needs (typed, borrowed, on every core); payloads stay on disk and
//! [`Format::decode_payload`] rebuilds them from the record(s): a tool call's origin is its
//! request (the element of `toolRequests`, or its start line when it was never requested),
//! origin2 its completion line.

use super::engine::{self, Records};
use super::jsonl::{self, Follow, LineLoc, LineParser, Sink, json_error};
use super::skim::Raw;
use super::{Format, LoadError, Loaded, Probe, Summary, decode_embedded_owned, stem};
use crate::model::*;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub struct CopilotCli;

const EVENTS: &str = "events.jsonl";
/// The namespaces of Copilot's event types (`session.start`, `tool.execution_complete`, ...).
const NAMESPACES: [&str; 12] = [
    "session.",
    "user.",
    "assistant.",
    "tool.",
    "system.",
    "subagent.",
    "hook.",
    "skill.",
    "permission.",
    "abort",
    "command.",
    "mcp.",
];

/// Record types the reader models (see `apply_rec`).
fn is_modelled_type(ty: &str) -> bool {
    matches!(
        ty,
        "session.start"
            | "session.model_change"
            | "user.message"
            | "system.message"
            | "assistant.turn_start"
            | "assistant.turn_end"
            | "assistant.message"
            | "session.usage_record"
            | "tool.execution_start"
            | "tool.execution_complete"
            | "session.error"
            | "session.shutdown"
            | "hook.start"
            | "hook.end"
            | "subagent.started"
            | "subagent.completed"
            | "subagent.failed"
    )
}

/// The other record types Copilot writes to a session log (the events its 1.0.102 schema,
/// `schemas/session-events.schema.json`, does not mark ephemeral, and `session.idle`, which
/// older CLIs wrote): each is shown as a generic event named by its type. A type in neither
/// list is a newer CLI's: drift (formats/mod.rs).
const SHOWN_TYPES: [&str; 62] = [
    "abort",
    "assistant.fusion_phase_completed",
    "assistant.fusion_phase_failed",
    "assistant.reasoning",
    "external_tool.requested",
    "human_response.recorded",
    "mcp.oauth_recovery_completed",
    "permission.assentDetected",
    "permission.carriedForward",
    "permission.completed",
    "permission.contextualAuthorization",
    "permission.messageAuthorization",
    "permission.messageAuthorizationDegraded",
    "permission.messageAuthorizationRead",
    "permission.requested",
    "session.auto_mode_resolved",
    "session.autopilot_objective_changed",
    "session.binary_asset",
    "session.canvas.recorded",
    "session.canvas.removed",
    "session.compaction_complete",
    "session.compaction_start",
    "session.completion_receipt",
    "session.context_changed",
    "session.context_cleared",
    "session.fusion_change_checkpoint",
    "session.fusion_commit_started",
    "session.fusion_completed",
    "session.fusion_handoff",
    "session.fusion_resolved",
    "session.fusion_route_failed",
    "session.handoff",
    "session.idle",
    "session.info",
    "session.mode_changed",
    "session.mode_notice_delivered",
    "session.model_deselected",
    "session.permission_recovery",
    "session.permissions_changed",
    "session.plan_changed",
    "session.remote_steerable_changed",
    "session.request_body_compression_disabled",
    "session.resume",
    "session.schedule_cancelled",
    "session.schedule_created",
    "session.schedule_rearmed",
    "session.session_limits_changed",
    "session.task_complete",
    "session.truncation",
    "session.usage_checkpoint",
    "session.warning",
    "session.workspace_file_changed",
    "skill.context_delivered",
    "skill.context_delivered_ref",
    "skill.invoked",
    "skill.invoked_ref",
    "subagent.configured",
    "subagent.deselected",
    "subagent.selected",
    "system.notification",
    "tool.user_requested",
    "tool_search.activated",
];

fn is_known_type(ty: &str) -> bool {
    is_modelled_type(ty) || SHOWN_TYPES.contains(&ty)
}

/// Fields every record repeats (left out of a drift event's payload).
const ENVELOPE: [&str; 3] = ["id", "timestamp", "parentId"];

impl Format for CopilotCli {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        "copilot-cli"
    }
    fn describe(&self) -> &'static str {
        "GitHub Copilot CLI session, ~/.copilot/session-state/<id>/events.jsonl"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return if p.has_entry(EVENTS) && is_session_dir(&p.path) {
                100
            } else {
                0
            };
        }
        let named = p.file_name() == EVENTS && in_session_state(p.path.parent());
        if p.lines().take(5).any(looks_like_event) {
            return if named { 100 } else { 97 };
        }
        // A first record too large for the probe: judge by its keys.
        let keys = ["type", "data", "id", "timestamp", "parentId"];
        if keys.iter().all(|k| p.has_key(k)) {
            return 85;
        }
        0
    }

    fn is_run_dir(&self, dir: &Path) -> bool {
        is_session_dir(dir)
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let mut f = self.follow(path).expect("copilot-cli is line-oriented");
        f.poll()?;
        if !events_file(path).is_file() && f.sink.traces.is_empty() {
            return Err(LoadError::io(
                &events_file(path),
                std::io::Error::new(std::io::ErrorKind::NotFound, "no events.jsonl"),
            ));
        }
        f.finish("Copilot CLI events")
    }

    fn follow(&self, path: &Path) -> Option<Follow> {
        let events = events_file(path);
        let id = run_id(&events);
        Some(Follow::new(
            &events,
            Box::new(move || Box::new(Parser::new(&id)) as Box<dyn LineParser>),
        ))
    }

    fn decode_payload(&self, _t: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
        decode(ev, raw)
    }

    /// Copilot keeps no metadata file with counts, so a session larger than what its two ends
    /// hold is summed up from its head (`session.start`, the first prompt) and its tail (the
    /// last events: `session.shutdown`, an open turn or call), without counts: `ls` of
    /// thousands of sessions reads little of each. A smaller one loads whole (exact counts).
    fn summarize(&self, path: &Path) -> Result<Option<Vec<Summary>>, LoadError> {
        let events = events_file(path);
        let len = std::fs::metadata(&events).map_err(|e| LoadError::io(&events, e))?.len();
        if len > SMALL
            && let Some(s) = summarize_ends(&events, len).map_err(|e| LoadError::io(&events, e))?
        {
            return Ok(Some(vec![s]));
        }
        Ok(None)
    }
}

/// Sessions up to this size load whole for their summary.
const SMALL: u64 = 16 << 10;
/// How much of the head a summary reads first (the start and the first prompt are its first
/// lines), and of the tail (its last events).
const HEAD: u64 = 4 << 10;
const TAIL: u64 = 8 << 10;
/// How far the head is read on for a first prompt further in (a long system message before
/// it) or longer than [`HEAD`].
const LONG_PROMPT: u64 = 1 << 20;

/// What a session's first lines say: its id, start and first prompt.
#[derive(Default)]
struct Head {
    id: Option<String>,
    start_time: Option<i64>,
    first_ts: Option<i64>,
    name: Option<String>,
    /// Whether any line read as a Copilot event.
    seen: bool,
}

impl Head {
    fn line(&mut self, l: &[u8]) {
        let Some(rec) = skim_rec(l) else { return };
        self.seen = true;
        if let Some(ts) = rec.ts {
            self.first_ts = Some(self.first_ts.map_or(ts, |f| f.min(ts)));
        }
        match rec.ty.as_ref() {
            "session.start" if self.id.is_none() => {
                self.id = text(rec.data.session_id).map(Cow::into_owned);
                self.start_time = time(rec.data.start_time);
            }
            "user.message" if self.name.is_none() => {
                self.name = text(rec.data.content)
                    .map(|c| one_line(&c, 100))
                    .filter(|n| !n.is_empty());
            }
            _ => {}
        }
    }
}

/// A summary from the first lines (up to the first prompt) and the last [`TAIL`] bytes, as
/// the full load would say it when those hold what decides it (the first prompt is the name;
/// the run's status is the shutdown's, else running with a turn or call left open, else an
/// error when the last event is one); None when the head holds no Copilot event (the caller
/// loads the file whole).
fn summarize_ends(events: &Path, len: u64) -> std::io::Result<Option<Summary>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = super::open_regular(events)?;
    let mut head = Vec::with_capacity(HEAD as usize);
    (&mut f).take(HEAD).read_to_end(&mut head)?;
    let mut h = Head::default();
    // The start of the first line not read yet.
    let mut at = 0;
    loop {
        let whole = head[at..].iter().rposition(|&b| b == b'\n').map_or(at, |n| at + n + 1);
        for l in head[at..whole].split(|&b| b == b'\n') {
            if h.name.is_some() {
                break;
            }
            h.line(l);
        }
        at = whole;
        let read = head.len() as u64;
        if h.name.is_some() || read >= LONG_PROMPT.min(len - TAIL) {
            break;
        }
        // The first prompt is further in, or longer than what was read.
        if (&mut f).take(read).read_to_end(&mut head)? == 0 {
            break;
        }
    }
    if !h.seen {
        return Ok(None);
    }
    let mut tail = Vec::with_capacity(TAIL as usize);
    f.seek(SeekFrom::Start(len - TAIL))?;
    f.take(TAIL).read_to_end(&mut tail)?;
    let (mut shutdown, mut turn_open, mut errored_last, mut last_ts) = (None, false, false, None);
    let mut open_calls = rustc_hash::FxHashSet::default();
    // The first line may be cut.
    for l in tail.split(|&b| b == b'\n').skip(1) {
        let Some(rec) = skim_rec(l) else { continue };
        last_ts = last_ts.max(rec.ts);
        let ty = rec.ty.as_ref();
        // A record of a type this reader does not know says nothing of how the session ended.
        if ty != "session.shutdown" && ty != "session.idle" && is_known_type(ty) {
            errored_last = false;
        }
        let call = || text(rec.data.tool_call_id).map(Cow::into_owned);
        match ty {
            "session.shutdown" => {
                let error = text(rec.data.shutdown_type).is_some_and(|s| s == "error");
                shutdown = Some(if error { RunStatus::Error } else { RunStatus::Ok });
            }
            "session.error" => errored_last = true,
            "assistant.turn_start" => turn_open = true,
            "assistant.turn_end" => turn_open = false,
            "assistant.message" => {
                open_calls.extend(
                    rec.requests
                        .iter()
                        .filter_map(|(_, r)| text(r.tool_call_id).map(Cow::into_owned)),
                );
            }
            "tool.execution_start" => open_calls.extend(call()),
            "tool.execution_complete" => {
                if let Some(c) = call() {
                    open_calls.remove(&c);
                }
            }
            _ => {}
        }
    }
    let status = match shutdown {
        Some(s) => s,
        None if turn_open || !open_calls.is_empty() => RunStatus::Running,
        None if errored_last => RunStatus::Error,
        None => RunStatus::Unknown,
    };
    let start = h.start_time.or(h.first_ts);
    Ok(Some(Summary {
        id: h.id.unwrap_or_else(|| run_id(events)),
        name: h.name,
        format: "copilot-cli",
        path: events.to_path_buf(),
        status,
        start,
        duration: match (start, last_ts) {
            (Some(a), Some(b)) if b >= a => b.checked_sub(a),
            _ => None,
        },
        ..Default::default()
    }))
}

/// A session directory: `events.jsonl` inside `session-state/`, or one whose first line is a
/// Copilot event (a session copied elsewhere). AgentDbg run directories hold an
/// `events.jsonl` too: the first line tells them apart.
fn is_session_dir(dir: &Path) -> bool {
    let events = dir.join(EVENTS);
    if !events.is_file() {
        return false;
    }
    in_session_state(Some(dir)) || head_is_copilot(&events)
}

fn in_session_state(dir: Option<&Path>) -> bool {
    dir.and_then(Path::parent)
        .and_then(Path::file_name)
        .is_some_and(|n| n == "session-state")
}

/// Whether one of the first lines of a file (up to 5, in at most 16 KiB) is a Copilot event:
/// a record of a type newer than this reader may come first.
fn head_is_copilot(path: &Path) -> bool {
    use std::io::Read;
    let Ok(f) = super::open_regular(path) else { return false };
    let mut head = Vec::with_capacity(4096);
    if f.take(16 << 10).read_to_end(&mut head).is_err() {
        return false;
    }
    for line in head
        .split(|&b| b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty())
        .take(5)
    {
        match serde_json::from_slice::<Value>(line) {
            Ok(v) if looks_like_event(&v) => return true,
            Ok(_) => {}
            // A line longer than what was read: its start must say it.
            Err(_) => {
                let t = String::from_utf8_lossy(&line[..line.len().min(64)]).replace(' ', "");
                return NAMESPACES.iter().any(|ns| t.starts_with(&format!("{{\"type\":\"{ns}")));
            }
        }
    }
    false
}

fn looks_like_event(v: &Value) -> bool {
    let Some(ty) = v.get("type").and_then(Value::as_str) else {
        return false;
    };
    NAMESPACES.iter().any(|ns| ty.starts_with(ns))
        && v.get("data").is_some_and(Value::is_object)
        && v.get("timestamp").is_some()
        && (v.get("id").is_some() || v.get("parentId").is_some())
}

fn events_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join(EVENTS)
    } else {
        path.to_path_buf()
    }
}

/// `session-state/<id>/events.jsonl` → `<id>`; a file of another name → its stem.
fn run_id(events: &Path) -> String {
    if events.file_name().is_some_and(|n| n == EVENTS)
        && let Some(dir) = events.parent().and_then(Path::file_name)
    {
        return dir.to_string_lossy().into_owned();
    }
    stem(events)
}

/// The envelope, with `data` read as `D`: its index fields on the fast path, or its raw
/// text when those do not read (then the event still loads and the problem is said).
#[derive(Deserialize)]
struct Envelope<'a, D> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(borrow, default)]
    id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    timestamp: Option<Raw<'a>>,
    #[serde(default = "none")]
    data: Option<D>,
}

fn none<D>() -> Option<D> {
    None
}

/// The `data` fields the index reads; everything else stays on disk. Raw, so that a field of
/// an unexpected type never loses the record.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Data<'a> {
    #[serde(borrow, default)]
    tool_call_id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    tool_name: Option<Raw<'a>>,
    #[serde(borrow, default)]
    parent_tool_call_id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    success: Option<Raw<'a>>,
    #[serde(borrow, default)]
    error: Option<Raw<'a>>,
    #[serde(borrow, default)]
    tool_requests: Option<Vec<Raw<'a>>>,
    #[serde(borrow, default)]
    model: Option<Raw<'a>>,
    #[serde(borrow, default)]
    new_model: Option<Raw<'a>>,
    #[serde(borrow, default)]
    output_tokens: Option<Raw<'a>>,
    #[serde(borrow, default)]
    session_id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    start_time: Option<Raw<'a>>,
    #[serde(borrow, default)]
    copilot_version: Option<Raw<'a>>,
    #[serde(borrow, default)]
    context: Option<Raw<'a>>,
    #[serde(borrow, default)]
    content: Option<Raw<'a>>,
    #[serde(borrow, default)]
    turn_id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    hook_invocation_id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    hook_type: Option<Raw<'a>>,
    #[serde(borrow, default)]
    error_type: Option<Raw<'a>>,
    #[serde(borrow, default)]
    agent_name: Option<Raw<'a>>,
    #[serde(borrow, default)]
    shutdown_type: Option<Raw<'a>>,
    #[serde(borrow, default)]
    model_metrics: Option<Raw<'a>>,
    #[serde(borrow, default)]
    total_premium_requests: Option<Raw<'a>>,
    #[serde(borrow, default)]
    total_api_duration_ms: Option<Raw<'a>>,
    /// `session.usage_record`: one LLM call's usage.
    #[serde(borrow, default)]
    usage: Option<Raw<'a>>,
    /// `assistant.message`: the API call it answers (shared by the chunks of one response).
    #[serde(borrow, default)]
    api_call_id: Option<Raw<'a>>,
    /// `tool.execution_complete` of a shell command: `{exitCode}`.
    #[serde(borrow, default)]
    shell_execution: Option<Raw<'a>>,
    /// `system.message`: `system` or `developer`.
    #[serde(borrow, default)]
    role: Option<Raw<'a>>,
}

/// One element of `toolRequests`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RequestIdx<'a> {
    #[serde(borrow, default)]
    tool_call_id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    name: Option<Raw<'a>>,
}

/// What the skim reads of one line.
pub(crate) struct Rec<'a> {
    ty: Cow<'a, str>,
    id: Option<Cow<'a, str>>,
    ts: Option<i64>,
    data: Data<'a>,
    /// Each tool request: its raw text (a part of the line) and its index fields.
    requests: Vec<(&'a str, RequestIdx<'a>)>,
    /// Why `data` (or a tool request) did not read, when it did not.
    problem: Option<String>,
}

/// A string value's text: borrowed when it has no escapes. None for any other type.
fn text<'a>(r: Option<Raw<'a>>) -> Option<Cow<'a, str>> {
    let s = r?.0;
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(s).ok().map(Cow::Owned)
}

fn number(r: Option<Raw>) -> Option<u64> {
    let s = r?.0;
    s.parse::<u64>().ok().or_else(|| {
        s.parse::<f64>()
            .ok()
            .filter(|f| *f >= 0.0 && f.is_finite())
            .map(|f| f as u64)
    })
}

fn flag(r: Option<Raw>) -> Option<bool> {
    match r?.0 {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

fn time(r: Option<Raw>) -> Option<i64> {
    let r = r?;
    if let Some(s) = text(Some(r)) {
        return parse_timestamp_str(&s);
    }
    serde_json::from_str::<Value>(r.0)
        .ok()
        .as_ref()
        .and_then(parse_timestamp)
}

fn skim_rec(line: &[u8]) -> Option<Rec<'_>> {
    // The whole line is UTF-8 checked: serde skips the fields it ignores unchecked, and the
    // fast path must never read what serde_json::Value refuses.
    let line = std::str::from_utf8(line).ok()?;
    let (env, problem) = match serde_json::from_str::<Envelope<Data>>(line) {
        Ok(e) => (e, None),
        Err(e) => {
            // The envelope may still read with `data` left raw: load the event, say why.
            let raw: Envelope<Raw> = serde_json::from_str(line).ok()?;
            let env = Envelope {
                ty: raw.ty,
                id: raw.id,
                timestamp: raw.timestamp,
                data: Some(Data::default()),
            };
            (env, Some(format!("data: {}", json_error(&e))))
        }
    };
    let mut rec = Rec {
        ts: time(env.timestamp),
        id: text(env.id),
        ty: env.ty,
        data: env.data.unwrap_or_default(),
        requests: Vec::new(),
        problem,
    };
    for r in rec.data.tool_requests.take().unwrap_or_default() {
        match serde_json::from_str::<RequestIdx>(r.0) {
            Ok(idx) => rec.requests.push((r.0, idx)),
            Err(e) => {
                rec.requests.push((r.0, RequestIdx::default()));
                rec.problem = Some(format!("toolRequests: {}", json_error(&e)));
            }
        }
    }
    Some(rec)
}

/// One tool call being joined.
struct Call {
    event: u32,
    started: bool,
    done: bool,
}

/// One LLM call (an API call, `apiCallId`) being joined: its usage record and its reply.
struct Llm {
    event: u32,
    /// Its first `assistant.message` came (a later one is another chunk of the response).
    message: bool,
    /// Its `session.usage_record` came (a repeat is the same call's receipt again).
    record: bool,
}

/// What a `session.usage_record` says of its call.
struct RecordUsage {
    usage: Usage,
    model: Option<String>,
    /// The API call (`apiCallId`, else the accounting's `usageId`, which is that id when
    /// there is one).
    key: Option<String>,
    /// How long the call took, in nanoseconds.
    duration: Option<i64>,
    /// The subagent's call when a subagent made it.
    parent_call: Option<String>,
}

/// A usage record's `data.usage`, counted as OpenAI does (the cache inside `inputTokens`,
/// reasoning inside `outputTokens`: taken out), as `session.shutdown`'s totals are.
fn record_usage(raw: &str) -> Option<RecordUsage> {
    let v: Value = serde_json::from_str(raw).ok()?;
    let v = v.as_object()?;
    let get = |k: &str| super::lenient_u64(v.get(k));
    let s = |x: Option<&Value>| x.and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
    let usage = super::usage_openai(Usage {
        input: get("inputTokens"),
        output: get("outputTokens"),
        cache_read: get("cacheReadTokens"),
        cache_write: get("cacheWriteTokens"),
        reasoning: get("reasoningTokens"),
        ..Default::default()
    });
    Some(RecordUsage {
        usage,
        model: s(v.get("model")),
        key: s(v.get("apiCallId")).or_else(|| s(v.get("accounting").and_then(|a| a.get("usageId")))),
        duration: get("duration").map(|ms| ms.min(i64::MAX as u64 / 1_000_000) as i64 * 1_000_000),
        parent_call: s(v.get("parentToolCallId")),
    })
}

/// A shell command's exit code, from `tool.execution_complete`'s `shellExecution`.
fn exit_code(raw: Option<Raw>) -> Option<i64> {
    serde_json::from_str::<Value>(raw?.0).ok()?.get("exitCode")?.as_i64()
}

/// The Copilot CLI line parser: one trace a file.
pub struct Parser {
    id: String,
    root: Option<u32>,
    file: u16,
    model: Option<String>,
    /// The open turn's step event.
    turn: Option<u32>,
    calls: rustc_hash::FxHashMap<String, Call>,
    /// LLM calls by `apiCallId`.
    llms: rustc_hash::FxHashMap<String, Llm>,
    hooks: rustc_hash::FxHashMap<String, u32>,
    pending: usize,
    first_ts: Option<i64>,
    last_ts: Option<i64>,
    start_time: Option<i64>,
    shutdown: Option<RunStatus>,
    errored_last: bool,
    named: bool,
}

impl Parser {
    pub fn new(id: &str) -> Parser {
        Parser {
            id: id.to_string(),
            root: None,
            file: 0,
            model: None,
            turn: None,
            calls: Default::default(),
            llms: Default::default(),
            hooks: Default::default(),
            pending: 0,
            first_ts: None,
            last_ts: None,
            start_time: None,
            shutdown: None,
            errored_last: false,
            named: false,
        }
    }

    /// The trace and its root, made at the first line (whatever it is).
    fn ensure(&mut self, loc: LineLoc, sink: &mut Sink) -> u32 {
        if let Some(r) = self.root {
            sink.touch(0);
            return r;
        }
        let mut t = Trace::new(RunMeta {
            id: self.id.clone(),
            format: "copilot-cli",
            source: sink.path.clone(),
            ..Default::default()
        });
        self.file = t.add_file(sink.path.clone());
        let root = t.add(NewEvent {
            payload: PayloadRef::Deferred,
            origin: loc.origin(self.file),
            ..NewEvent::new(EventKind::Run, &self.id)
        });
        sink.push_trace(t);
        self.root = Some(root);
        root
    }

    /// Where an event of this record goes: under the subagent call that made it, else the
    /// open turn, else the run.
    fn parent_of(&self, rec: &Rec, sink: &Sink) -> u32 {
        let root = self.root.unwrap_or(0);
        if let Some(p) = text(rec.data.parent_tool_call_id).and_then(|id| self.calls.get(id.as_ref()))
            && (p.event as usize) < sink.traces[0].len()
        {
            return p.event;
        }
        self.turn.unwrap_or(root)
    }

    fn apply_rec(&mut self, rec: &Rec, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let root = self.ensure(loc, sink);
        if let Some(ts) = rec.ts {
            self.first_ts = Some(self.first_ts.map_or(ts, |f| f.min(ts)));
            self.last_ts = Some(self.last_ts.map_or(ts, |l| l.max(ts)));
        }
        let origin = loc.origin(self.file);
        let parent = self.parent_of(rec, sink);
        let d = &rec.data;
        let ty = rec.ty.as_ref();
        if !is_known_type(ty) {
            // Drift (formats/mod.rs): a newer CLI's record, whatever its `data` holds, is
            // counted and shown when it carries text; never a problem.
            sink.skip(ty);
            let v = serde_json::from_slice::<Value>(line).ok();
            if v.as_ref().and_then(super::drift_text).is_some() {
                sink.traces[0].add(new_event(rec, parent, origin, EventKind::Other, ty));
            }
            return;
        }
        if let Some(p) = &rec.problem {
            sink.error(loc.line, p.clone());
        }
        let base = |kind, name| new_event(rec, parent, origin, kind, name);
        if ty != "session.shutdown" && ty != "session.idle" {
            self.errored_last = false;
        }
        match ty {
            "session.start" => {
                let t = &mut sink.traces[0];
                if let Some(id) = text(d.session_id) {
                    t.meta.id = id.into_owned();
                }
                self.start_time = time(d.start_time);
                if let Some(v) = text(d.copilot_version) {
                    t.meta
                        .attributes
                        .push(("copilotVersion".into(), Value::String(v.into_owned())));
                }
                if let Some(cwd) = d
                    .context
                    .and_then(|c| serde_json::from_str::<Value>(c.0).ok())
                    .and_then(|c| c.get("cwd").and_then(Value::as_str).map(str::to_owned))
                {
                    t.meta.attributes.push(("cwd".into(), Value::String(cwd)));
                }
                // The root is the session: its record is this one.
                t.event_mut(root).origin = origin;
            }
            "session.model_change" => {
                let m = text(d.new_model).map(Cow::into_owned);
                let name = format!("model {}", m.as_deref().unwrap_or("?"));
                sink.traces[0].add(base(EventKind::State, &name));
                if m.is_some() {
                    self.model = m;
                }
            }
            "user.message" => {
                sink.traces[0].add(base(EventKind::Message(Role::User), "user"));
                if !self.named
                    && let Some(c) = text(d.content)
                {
                    let name = one_line(&c, 100);
                    if !name.is_empty() {
                        self.named = true;
                        sink.traces[0].meta.name = Some(name);
                    }
                }
            }
            "system.message" => {
                // The system prompt (or a developer instruction): a message of the run, its
                // text the payload's input (searched as any payload is).
                let role = text(d.role).filter(|r| r == "developer");
                let name = role.as_deref().unwrap_or("system");
                sink.traces[0].add(base(EventKind::Message(Role::System), name));
            }
            "assistant.turn_start" => {
                let name = match text(d.turn_id) {
                    Some(id) => format!("turn {id}"),
                    None => "turn".into(),
                };
                let i = sink.traces[0].add(NewEvent {
                    status: Status::Pending,
                    parent: Parent::Index(root),
                    ..base(EventKind::Step, &name)
                });
                self.turn = Some(i);
            }
            "assistant.turn_end" => match self.turn.take() {
                Some(i) => {
                    let t = &mut sink.traces[0];
                    t.event_mut(i).origin2 = Some(Box::new(origin));
                    let e = t.event_mut(i);
                    e.status = Status::Ok;
                    if let (Some(a), Some(b)) = (e.start.get(), rec.ts) {
                        e.duration = Some(b.saturating_sub(a).max(0)).into();
                    }
                }
                None => {
                    sink.traces[0].add(base(EventKind::Other, ty));
                }
            },
            "assistant.message" => {
                let llm = self.reply(rec, parent, origin, sink);
                for (raw, req) in &rec.requests {
                    let name = text(req.name).unwrap_or(Cow::Borrowed("tool"));
                    let o = engine::sub_origin(loc, self.file, line, raw.as_bytes());
                    match text(req.tool_call_id) {
                        Some(id) => self.request(&id, &name, llm, rec.ts, o, sink),
                        None => {
                            // No id: nothing can join it; shown as asked, never answered.
                            sink.traces[0].add(NewEvent {
                                id: None,
                                parent: Parent::Index(llm),
                                status: Status::Pending,
                                origin: o,
                                ..new_event(rec, parent, origin, EventKind::ToolCall, &name)
                            });
                            sink.warning(Some(loc.line), format!("a tool request for {name} has no toolCallId"));
                        }
                    }
                }
            }
            "session.usage_record" => match d.usage.and_then(|u| record_usage(u.0)) {
                Some(u) => self.usage_record(u, rec, parent, origin, sink),
                None => {
                    sink.error(loc.line, "session.usage_record without a readable data.usage");
                    sink.traces[0].add(base(EventKind::Other, ty));
                }
            },
            "tool.execution_start" => {
                let Some(id) = text(d.tool_call_id) else {
                    sink.error(loc.line, "tool.execution_start without data.toolCallId");
                    sink.traces[0].add(base(EventKind::Other, ty));
                    return;
                };
                match self.calls.get_mut(id.as_ref()) {
                    Some(c) if !c.started => {
                        c.started = true;
                        // The call runs from here; it was asked for earlier.
                        if let Some(ts) = rec.ts {
                            sink.traces[0].event_mut(c.event).start = Some(ts).into();
                        }
                    }
                    Some(_) => {
                        sink.warning(Some(loc.line), format!("tool call {id} started twice"));
                    }
                    None => {
                        let name = text(d.tool_name).unwrap_or(Cow::Borrowed("tool"));
                        let i = sink.traces[0].add(NewEvent {
                            id: Some(&id),
                            status: Status::Pending,
                            ..base(EventKind::ToolCall, &name)
                        });
                        self.pending += 1;
                        self.calls.insert(
                            id.into_owned(),
                            Call {
                                event: i,
                                started: true,
                                done: false,
                            },
                        );
                    }
                }
            }
            "tool.execution_complete" => {
                let Some(id) = text(d.tool_call_id) else {
                    sink.error(loc.line, "tool.execution_complete without data.toolCallId");
                    sink.traces[0].add(base(EventKind::Other, ty));
                    return;
                };
                // A shell command that exited non-zero failed, whatever `success` says (as
                // Codex's calls are read).
                let failed = flag(d.success) == Some(false)
                    || d.error.is_some_and(|e| e.0 != "null")
                    || exit_code(d.shell_execution).is_some_and(|c| c != 0);
                let status = if failed { Status::Error } else { Status::Ok };
                match self.calls.get_mut(id.as_ref()) {
                    Some(c) if !c.done => {
                        c.done = true;
                        self.pending = self.pending.saturating_sub(1);
                        let t = &mut sink.traces[0];
                        let e = t.event_mut(c.event);
                        e.status = status;
                        if let (Some(a), Some(b)) = (e.start.get(), rec.ts) {
                            e.duration = Some(b.saturating_sub(a).max(0)).into();
                        }
                        e.origin2 = Some(Box::new(origin));
                        if let Some(m) = text(d.model) {
                            let m = t.strings.intern(&m);
                            t.event_mut(c.event).model = m;
                        }
                    }
                    Some(_) => {
                        sink.warning(
                            Some(loc.line),
                            format!("tool call {id} completed twice; the first is kept"),
                        );
                    }
                    None => {
                        // A result whose call was never asked for nor started: still a call.
                        sink.warning(
                            Some(loc.line),
                            format!("tool call {id} completed without a request or start"),
                        );
                        let i = sink.traces[0].add(NewEvent {
                            id: Some(&id),
                            status,
                            ..base(EventKind::ToolCall, "tool")
                        });
                        self.calls.insert(
                            id.into_owned(),
                            Call {
                                event: i,
                                started: false,
                                done: true,
                            },
                        );
                    }
                }
            }
            "session.error" => {
                let kind = text(d.error_type);
                sink.traces[0].add(NewEvent {
                    status: Status::Error,
                    ..base(EventKind::Error, kind.as_deref().unwrap_or("error"))
                });
                self.errored_last = true;
            }
            "session.shutdown" => {
                let error = text(d.shutdown_type).is_some_and(|s| s == "error");
                self.shutdown = Some(if error { RunStatus::Error } else { RunStatus::Ok });
                sink.traces[0].add(NewEvent {
                    status: if error { Status::Error } else { Status::Ok },
                    ..base(EventKind::Other, ty)
                });
                let t = &mut sink.traces[0];
                if let Some(u) = d.model_metrics.and_then(|m| shutdown_usage(m.0)) {
                    t.event_mut(root).usage = u.into();
                }
                for (k, v) in [
                    ("modelMetrics", d.model_metrics),
                    ("totalPremiumRequests", d.total_premium_requests),
                    ("totalApiDurationMs", d.total_api_duration_ms),
                ] {
                    if let Some(v) = v.and_then(|r| serde_json::from_str::<Value>(r.0).ok()) {
                        t.meta.attributes.retain(|(a, _)| a != k);
                        t.meta.attributes.push((k.into(), v));
                    }
                }
            }
            "hook.start" => {
                let name = format!("hook {}", text(d.hook_type).as_deref().unwrap_or("?"));
                let i = sink.traces[0].add(NewEvent {
                    status: Status::Pending,
                    ..base(EventKind::Step, &name)
                });
                if let Some(id) = text(d.hook_invocation_id) {
                    self.hooks.insert(id.into_owned(), i);
                }
            }
            "hook.end" => match text(d.hook_invocation_id).and_then(|id| self.hooks.remove(id.as_ref())) {
                Some(i) => {
                    let t = &mut sink.traces[0];
                    let e = t.event_mut(i);
                    e.status = if flag(d.success) == Some(false) {
                        Status::Error
                    } else {
                        Status::Ok
                    };
                    if let (Some(a), Some(b)) = (e.start.get(), rec.ts) {
                        e.duration = Some(b.saturating_sub(a).max(0)).into();
                    }
                    e.origin2 = Some(Box::new(origin));
                }
                None => {
                    sink.traces[0].add(base(EventKind::Other, ty));
                }
            },
            "subagent.started" | "subagent.completed" | "subagent.failed" => {
                let name = format!("{ty} {}", text(d.agent_name).as_deref().unwrap_or(""));
                let under = text(d.tool_call_id)
                    .and_then(|id| self.calls.get(id.as_ref()).map(|c| c.event))
                    .unwrap_or(parent);
                sink.traces[0].add(NewEvent {
                    parent: Parent::Index(under),
                    status: if ty == "subagent.failed" {
                        Status::Error
                    } else {
                        Status::Ok
                    },
                    ..base(EventKind::Other, name.trim_end())
                });
            }
            _ => {
                sink.traces[0].add(base(EventKind::Other, ty));
            }
        }
    }

    /// The event of an `assistant.message`, and the LLM call its tool requests hang under:
    /// a new call, or the call of its `apiCallId` that a usage record made (it takes this
    /// reply as its record), or, for a later chunk of one response, an assistant message
    /// under that call.
    fn reply(&mut self, rec: &Rec, parent: u32, origin: Origin, sink: &mut Sink) -> u32 {
        let d = &rec.data;
        let key = text(d.api_call_id);
        let t = &mut sink.traces[0];
        if let Some(l) = key.as_deref().and_then(|k| self.llms.get_mut(k)) {
            let i = l.event;
            if l.message {
                // Another chunk of the same response: one call, one more message.
                t.add(NewEvent {
                    parent: Parent::Index(i),
                    ..new_event(rec, parent, origin, EventKind::Message(Role::Assistant), "assistant")
                });
                return i;
            }
            l.message = true;
            let e = t.event_mut(i);
            let was = std::mem::replace(&mut e.origin, origin);
            e.origin2 = Some(Box::new(was));
            if e.model.is_empty()
                && let Some(m) = text(d.model)
            {
                let m = t.strings.intern(&m);
                t.event_mut(i).model = m;
            }
            t.set_parent(i, parent);
            return i;
        }
        let model = text(d.model).map(Cow::into_owned).or_else(|| self.model.clone());
        let name = model.as_deref().unwrap_or("assistant");
        let usage = number(d.output_tokens).map(|n| Usage {
            output: Some(n),
            ..Default::default()
        });
        let i = t.add(NewEvent {
            id: key.as_deref().or(rec.id.as_deref()),
            usage,
            model: model.as_deref(),
            ..new_event(rec, parent, origin, EventKind::LlmCall, name)
        });
        if let Some(k) = key {
            self.llms.insert(
                k.into_owned(),
                Llm {
                    event: i,
                    message: true,
                    record: false,
                },
            );
        }
        i
    }

    /// A `session.usage_record`: the usage of one LLM call, written when the call ends,
    /// before its reply. It makes the call (which its reply then joins), or gives its usage
    /// to the call its reply made; a call without a reply (the session was killed, or the
    /// call had none) still counts with its tokens.
    fn usage_record(&mut self, u: RecordUsage, rec: &Rec, parent: u32, origin: Origin, sink: &mut Sink) {
        let t = &mut sink.traces[0];
        if let Some(l) = u.key.as_deref().and_then(|k| self.llms.get_mut(k)) {
            // The same call's receipt again counts once.
            if !l.record {
                l.record = true;
                let e = t.event_mut(l.event);
                e.usage = Some(u.usage).into();
                if e.origin2.is_none() {
                    e.origin2 = Some(Box::new(origin));
                }
            }
            return;
        }
        let parent = u
            .parent_call
            .as_deref()
            .and_then(|c| self.calls.get(c))
            .map_or(parent, |c| c.event);
        let (start, duration) = match (rec.ts, u.duration) {
            (Some(ts), Some(d)) => (Some(ts.saturating_sub(d)), Some(d)),
            (ts, _) => (ts, None),
        };
        let model = u.model.clone().or_else(|| self.model.clone());
        let i = t.add(NewEvent {
            id: u.key.as_deref().or(rec.id.as_deref()),
            start,
            duration,
            usage: Some(u.usage),
            model: model.as_deref(),
            ..new_event(
                rec,
                parent,
                origin,
                EventKind::LlmCall,
                model.as_deref().unwrap_or("llm"),
            )
        });
        if let Some(k) = u.key {
            self.llms.insert(
                k,
                Llm {
                    event: i,
                    message: false,
                    record: true,
                },
            );
        }
    }

    /// A tool request: a new call, or the call an earlier start or completion made (older
    /// CLIs, or lines out of order), which takes its name and place.
    fn request(&mut self, id: &str, name: &str, llm: u32, ts: Option<i64>, o: Origin, sink: &mut Sink) {
        let t = &mut sink.traces[0];
        match self.calls.get(id) {
            Some(c) => {
                let n = t.strings.intern(name);
                let i = c.event;
                let was = t.event(i).origin;
                let e = t.event_mut(i);
                e.name = n;
                if e.origin2.is_none() {
                    e.origin2 = Some(Box::new(was));
                }
                e.origin = o;
                t.set_parent(i, llm);
            }
            None => {
                let i = t.add(NewEvent {
                    id: Some(id),
                    parent: Parent::Index(llm),
                    start: ts,
                    status: Status::Pending,
                    payload: PayloadRef::Deferred,
                    origin: o,
                    ..NewEvent::new(EventKind::ToolCall, name)
                });
                self.pending += 1;
                self.calls.insert(
                    id.to_string(),
                    Call {
                        event: i,
                        started: false,
                        done: false,
                    },
                );
            }
        }
    }
}

/// An event of one record, under `parent`, with its payload on disk.
fn new_event<'r>(rec: &'r Rec, parent: u32, origin: Origin, kind: EventKind, name: &'r str) -> NewEvent<'r> {
    NewEvent {
        id: rec.id.as_deref(),
        parent: Parent::Index(parent),
        start: rec.ts,
        status: Status::Ok,
        payload: PayloadRef::Deferred,
        origin,
        ..NewEvent::new(kind, name)
    }
}

/// The session's token totals from `session.shutdown`'s `modelMetrics` (summed over models).
fn shutdown_usage(raw: &str) -> Option<Usage> {
    let v: Value = serde_json::from_str(raw).ok()?;
    let mut u = Usage::default();
    for m in v.as_object()?.values() {
        let usage = m.get("usage");
        let get = |k: &str| super::lenient_u64(usage.and_then(|u| u.get(k)));
        let add = |acc: &mut Option<u64>, n: Option<u64>| {
            if let Some(n) = n {
                *acc = Some(acc.unwrap_or(0).saturating_add(n));
            }
        };
        // OpenAI's way of counting: the cache inside `inputTokens`, reasoning inside
        // `outputTokens`.
        let one = super::usage_openai(Usage {
            input: get("inputTokens"),
            output: get("outputTokens"),
            cache_read: get("cacheReadTokens"),
            cache_write: get("cacheWriteTokens"),
            reasoning: get("reasoningTokens"),
            ..Default::default()
        });
        add(&mut u.input, one.input);
        add(&mut u.output, one.output);
        add(&mut u.cache_read, one.cache_read);
        add(&mut u.cache_write, one.cache_write);
        add(&mut u.reasoning, one.reasoning);
    }
    (!u.is_empty()).then_some(u)
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

impl Records for Parser {
    type Rec<'a> = Rec<'a>;

    fn skim<'a>(line: &'a [u8], slot: &mut Option<Rec<'a>>) {
        *slot = skim_rec(line);
    }

    fn apply(&mut self, rec: Option<&Rec<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        match rec {
            Some(r) => self.apply_rec(r, line, loc, sink),
            None => {
                // Say what is wrong, on the trace when there is one.
                self.ensure(loc, sink);
                sink.error(
                    loc.line,
                    jsonl::why_unreadable::<Envelope<Raw>>(line, "unreadable record"),
                );
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
        // Without `session.shutdown` the session is still running (or was killed): an open
        // turn or an unanswered call says running; otherwise nothing says how it ended.
        let status = match self.shutdown {
            Some(s) => s,
            None if self.pending > 0 || self.turn.is_some() => RunStatus::Running,
            None if self.errored_last => RunStatus::Error,
            None => RunStatus::Unknown,
        };
        t.meta.status = status;
        t.meta.model = self.model.clone();
        let start = self.start_time.or(self.first_ts);
        t.meta.start = start;
        t.meta.end = self.last_ts;
        let e = t.event_mut(root);
        e.start = start.into();
        e.duration = match (start, self.last_ts) {
            // Checked: times from a trace may span more than i64.
            (Some(a), Some(b)) if b >= a => b.checked_sub(a).into(),
            _ => None.into(),
        };
        e.status = status.event_status();
        if let Some(n) = t.meta.name.clone() {
            let r = t.strings.intern(&n);
            t.event_mut(root).name = r;
        }
    }
}

/// Rebuild a payload from its record(s): an event line, or a tool request (an element of
/// `toolRequests`) followed by the lines joined to it.
fn decode(ev: &Event, raw: &[&[u8]]) -> Payload {
    let mut out = Payload::default();
    for (i, bytes) in raw.iter().enumerate() {
        let mut v: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => {
                out.error = Some(ErrorInfo::unreadable(&e));
                return out;
            }
        };
        // A tool request has its own `type` ("function"), no `data`.
        if v.get("data").is_none() && v.get("toolCallId").is_some() {
            // A tool request.
            out.input = take(&mut v, "arguments").map(decode_embedded_owned);
            for k in ["intentionSummary", "mcpServerName", "toolTitle"] {
                if let Some(x) = take(&mut v, k) {
                    out.extra.push((k.into(), x));
                }
            }
            continue;
        }
        let ty = match v.get("type") {
            Some(Value::String(s)) => s.clone(),
            _ => String::new(),
        };
        if !is_known_type(&ty) {
            // A newer CLI's record (drift): its text, and the record beside it.
            let p = super::drift_payload(&v, &ENVELOPE);
            out.input = out.input.or(p.input);
            out.extra.extend(p.extra);
            continue;
        }
        let mut d = take(&mut v, "data").unwrap_or(Value::Null);
        match ty.as_str() {
            "user.message" | "system.message" => {
                out.input = take(&mut d, "content");
                if let Some(a) = take(&mut d, "attachments").filter(|a| a.as_array().is_none_or(|x| !x.is_empty())) {
                    out.extra.push(("attachments".into(), a));
                }
                if ty == "system.message" {
                    for k in ["role", "name", "metadata"] {
                        if let Some(x) = take(&mut d, k) {
                            out.extra.push((k.into(), x));
                        }
                    }
                }
            }
            "session.usage_record" => {
                if let Some(u) = take(&mut d, "usage") {
                    out.extra.push(("usage".into(), u));
                }
            }
            "assistant.message" => {
                out.output = take(&mut d, "content").filter(|c| c.as_str() != Some(""));
                for k in ["reasoningText", "outputTokens", "model"] {
                    if let Some(x) = take(&mut d, k) {
                        out.extra.push((k.into(), x));
                    }
                }
            }
            "tool.execution_start" => {
                if out.input.is_none() {
                    out.input = take(&mut d, "arguments").map(decode_embedded_owned);
                }
            }
            "tool.execution_complete" => {
                let mut result = take(&mut d, "result");
                out.output = match result.as_mut().and_then(|r| take(r, "content")) {
                    Some(c) => Some(c),
                    None => result.take(),
                };
                if let Some(det) = result.as_mut().and_then(|r| take(r, "detailedContent"))
                    && Some(&det) != out.output.as_ref()
                {
                    out.extra.push(("detailedContent".into(), det));
                }
                out.error = take(&mut d, "error").as_ref().and_then(ErrorInfo::from_value);
                let code = d
                    .get("shellExecution")
                    .and_then(|s| s.get("exitCode"))
                    .and_then(Value::as_i64)
                    .filter(|&c| c != 0);
                if out.error.is_none()
                    && let Some(c) = code
                {
                    out.error = Some(ErrorInfo {
                        kind: Some("exit code".into()),
                        message: format!("the command exited with code {c}"),
                        ..Default::default()
                    });
                }
                if out.error.is_none() && d.get("success") == Some(&Value::Bool(false)) {
                    out.error = Some(ErrorInfo {
                        message: "the tool failed".into(),
                        ..Default::default()
                    });
                }
            }
            "session.error" => {
                out.error = Some(ErrorInfo {
                    kind: take(&mut d, "errorType").and_then(|k| k.as_str().map(str::to_owned)),
                    message: take(&mut d, "message")
                        .and_then(|m| m.as_str().map(str::to_owned))
                        .unwrap_or_else(|| "error".into()),
                    stack: take(&mut d, "stack").and_then(|m| m.as_str().map(str::to_owned)),
                    details: None,
                });
            }
            _ if i > 0 => out.output = Some(d),
            _ => out.input = Some(d),
        }
    }
    if ev.kind == EventKind::Error && out.error.is_none() {
        out.error = Some(ErrorInfo {
            message: "error".into(),
            ..Default::default()
        });
    }
    out
}

fn take(v: &mut Value, k: &str) -> Option<Value> {
    v.get_mut(k).filter(|x| !x.is_null()).map(Value::take)
}

/// A call's gist by Copilot CLI's tools: the command (`bash`, `powershell`), the file
/// (`view`, `edit`, `create`, `str_replace_editor`), the pattern, the URL or query, the
/// intent it reports.
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{first_arg, generic, key_or_generic};
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "bash" | "powershell" | "shell" => by(&["command"]),
        "view" | "edit" | "create" | "str_replace_editor" | "str_replace" | "insert" | "undo_edit" => {
            by(&["path", "file_path"])
        }
        "grep" | "glob" | "rg" => by(&["pattern"]),
        "web_fetch" | "fetch" => by(&["url"]),
        "web_search" => by(&["query"]),
        "report_intent" => by(&["intent"]),
        "task" => by(&["description", "prompt"]),
        n if n.starts_with("mcp__") || n.starts_with("github-mcp-server-") => first_arg(input),
        _ => generic(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::{fixture, outline, with_byte_edits};
    use proptest::prelude::*;

    const SESSION: &str = "session-state/5f0c2d4e-0000-4000-8000-000000000001";

    fn load(path: &Path) -> Trace {
        let mut l = CopilotCli.load(path).unwrap();
        assert_eq!(l.traces.len(), 1);
        l.traces.remove(0)
    }

    #[test]
    fn a_session_loads_into_one_tree_with_calls_joined_by_id() {
        let t = load(&fixture("copilot-cli", SESSION));
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.id, "5f0c2d4e-0000-4000-8000-000000000001");
        assert_eq!(t.meta.name.as_deref(), Some("Count the rows in data.csv"));
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.model.as_deref(), Some("gpt-5.2"));
        let c = t.counts();
        assert_eq!((c.tool_calls, c.llm_calls, c.errors), (4, 4, 1));
        assert_eq!(c.tokens, 9000 + 95, "the session's totals, more than the replies' 95");
        assert_eq!(
            outline(&t),
            [
                "run Count the rows in data.csv",
                "  state model gpt-5.2",
                "  message user",
                "  step turn 0",
                "    llm gpt-5.2",
                "      tool report_intent",
                "      tool bash",
                "    llm gpt-5.2",
                "      tool task",
                "        other subagent.started explore",
                "        llm gpt-5.2",
                "          tool glob",
                "        other subagent.completed explore",
                "    llm gpt-5.2",
                "  other session.shutdown",
            ]
        );
        // The session's totals from session.shutdown are on the run.
        let root = t.event(t.roots[0]);
        // 9,000 input tokens of which 4,000 read from the cache.
        assert_eq!(
            root.usage
                .get()
                .map(|u| (u.input, u.cache_read, u.cache_write, u.output)),
            Some((Some(5000), Some(4000), Some(0), Some(95)))
        );

        assert_eq!(root.duration, Some(60_000_000_000));
        assert!(t.meta.attributes.iter().any(|(k, _)| k == "modelMetrics"));
        assert!(
            t.meta
                .attributes
                .iter()
                .any(|(k, v)| k == "cwd" && v == "/home/ada/csv-tools")
        );
        // A call: input from its request, output or error from its completion; it runs from
        // its start to its completion.
        let bash = t.find("call_b").unwrap();
        let e = t.event(bash);
        assert_eq!(e.status, Status::Error);
        assert_eq!(e.duration, Some(500_000_000));
        let p = crate::formats::payload(&t, e);
        assert_eq!(
            p.input,
            Some(serde_json::json!({"command": "wc -l data.csv", "description": "Count lines"}))
        );
        assert_eq!(p.error.unwrap().message, "wc: data.csv: No such file or directory");
        let intent = t.find("call_a").unwrap();
        let p = crate::formats::payload(&t, t.event(intent));
        assert_eq!(p.output, Some(Value::String("Intent logged".into())));
        let user = t.walk()[2].0;
        let p = crate::formats::payload(&t, t.event(user));
        assert_eq!(
            p.input,
            Some(Value::String(
                "Count the rows in data.csv\nand say how many failed".into()
            ))
        );
    }

    const NEW_SESSION: &str = "session-state/7c1e5a90-0000-4000-8000-000000000102";

    /// An event's usage as (input, cache read, output).
    fn usage_of(t: &Trace, i: u32) -> Option<(Option<u64>, Option<u64>, Option<u64>)> {
        t.event(i).usage.get().map(|u| (u.input, u.cache_read, u.output))
    }

    #[test]
    fn usage_records_give_each_llm_call_its_tokens_in_a_session_that_was_killed() {
        let t = load(&fixture("copilot-cli", NEW_SESSION));
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert!(t.skipped.is_empty(), "{:?}", t.skipped);
        assert_eq!(
            outline(&t),
            [
                "run Run the ledger tests",
                "  message user",
                "  message system",
                "  step turn 0",
                "    llm claude-sonnet-4.5",
                "      tool bash",
                "      tool view",
                "  step turn 1",
                "    llm claude-sonnet-4.5",
                "      message assistant",
                "  step turn 2",
                "    llm claude-sonnet-4.5",
            ]
        );
        // Three API calls: one with two tool calls, one whose response came in two chunks,
        // one whose reply was never written (the session was killed). Each has its own
        // tokens; the cache read is taken out of the input.
        let c = t.counts();
        assert_eq!((c.tool_calls, c.llm_calls, c.errors), (2, 3, 1));
        assert_eq!(c.tokens, (5000 + 60) + (5400 + 45) + (5500 + 30));
        let first = t.find("msg_aa01").unwrap();
        assert_eq!(usage_of(&t, first), Some((Some(1000), Some(4000), Some(60))));
        assert_eq!(
            usage_of(&t, t.find("msg_aa02").unwrap()),
            Some((Some(1304), Some(4096), Some(45)))
        );
        let killed = t.find("msg_aa03").unwrap();
        assert_eq!(usage_of(&t, killed), Some((Some(1404), Some(4096), Some(30))));
        // No shutdown: no totals on the run; the calls' tokens are the run's.
        assert!(t.event(t.roots[0]).usage.get().is_none());
        assert_eq!(t.meta.status, RunStatus::Running, "turn 2 never ended");
        // The call ran for its `duration` up to its usage record.
        let e = t.event(first);
        assert_eq!(
            (e.start.get(), e.duration.get()),
            (parse_timestamp_str("2026-11-28T09:00:01.100Z"), Some(800_000_000))
        );
        // Its reply is its record, the usage record beside it.
        let p = crate::formats::payload(&t, e);
        assert_eq!(p.output, None, "no text, only tool requests");
        assert_eq!(
            p.extra.iter().find(|(k, _)| k == "usage").unwrap().1["apiCallId"],
            "msg_aa01"
        );
        let chunks: Vec<_> = t
            .walk()
            .into_iter()
            .filter(|&(i, _)| t.event(i).kind == EventKind::Message(Role::Assistant))
            .collect();
        let p = crate::formats::payload(&t, t.event(t.find("msg_aa02").unwrap()));
        assert_eq!(p.output, Some(Value::String("Let me read the failure.".into())));
        let p = crate::formats::payload(&t, t.event(chunks[0].0));
        assert_eq!(
            p.output,
            Some(Value::String("One test fails: make test exited with code 2.".into()))
        );
        // The unanswered call shows its usage record.
        let p = crate::formats::payload(&t, t.event(killed));
        assert_eq!(
            p.extra.iter().find(|(k, _)| k == "usage").unwrap().1["outputTokens"],
            30
        );
    }

    #[test]
    fn a_command_that_exits_non_zero_is_an_error_even_when_the_tool_succeeded() {
        let t = load(&fixture("copilot-cli", NEW_SESSION));
        let bash = t.event(t.find("toolu_01").unwrap());
        assert_eq!(bash.status, Status::Error);
        let p = crate::formats::payload(&t, bash);
        let err = p.error.unwrap();
        assert_eq!(
            (err.kind.as_deref(), err.message.as_str()),
            (Some("exit code"), "the command exited with code 2")
        );
        assert!(p.output.unwrap().as_str().unwrap().contains("1 test failed"));
        assert_eq!(t.event(t.find("toolu_02").unwrap()).status, Status::Ok);
        // Exit code 0: fine.
        let d = tempfile::tempdir().unwrap();
        let p = write(
            d.path(),
            &[
                r#"{"type":"tool.execution_start","data":{"toolCallId":"c1","toolName":"bash"},"id":"e1","timestamp":"2026-01-01T00:00:01Z","parentId":null}"#,
                r#"{"type":"tool.execution_complete","data":{"toolCallId":"c1","shellExecution":{"exitCode":0},"success":true,"result":{"content":"ok"}},"id":"e2","timestamp":"2026-01-01T00:00:02Z","parentId":"e1"}"#,
            ],
        );
        let t = load(&p);
        let e = t.event(t.find("c1").unwrap());
        assert_eq!(e.status, Status::Ok);
        assert!(crate::formats::payload(&t, e).error.is_none());
    }

    #[test]
    fn the_system_prompt_is_a_message_of_the_run_found_by_its_text() {
        let t = load(&fixture("copilot-cli", NEW_SESSION));
        let (sys, _) = t
            .walk()
            .into_iter()
            .find(|&(i, _)| t.event(i).kind == EventKind::Message(Role::System))
            .unwrap();
        let p = crate::formats::payload(&t, t.event(sys));
        assert!(p.input.unwrap().as_str().unwrap().contains("ledger-quartz workflow"));
        assert_eq!(
            p.extra.iter().find(|(k, _)| k == "metadata").unwrap().1["promptVersion"],
            "2026-11"
        );
        let pattern = crate::search::grep::Pattern::new("ledger-quartz", false, false).unwrap();
        let hits =
            crate::search::grep::payload_hits(&pattern, t.event(sys).kind, &crate::formats::payload(&t, t.event(sys)));
        assert_eq!(hits.len(), 1, "searched as any payload is");
    }

    /// The fixture session's lines, with `more` after them.
    fn new_session_with(dir: &Path, more: &[&str]) -> PathBuf {
        let text = std::fs::read_to_string(fixture("copilot-cli", &format!("{NEW_SESSION}/events.jsonl"))).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines.extend(more);
        write(dir, &lines)
    }

    #[test]
    fn shutdown_totals_and_usage_records_are_never_counted_twice() {
        let calls = (5000 + 60) + (5400 + 45) + (5500 + 30);
        let shutdown = |input: u64, output: u64| {
            format!(
                r#"{{"type":"session.shutdown","data":{{"shutdownType":"routine","modelMetrics":{{"claude-sonnet-4.5":{{"requests":{{"count":3,"cost":0}},"usage":{{"inputTokens":{input},"outputTokens":{output},"cacheReadTokens":12192,"cacheWriteTokens":0}}}}}}}},"id":"z1","timestamp":"2026-11-28T09:00:06Z","parentId":null}}"#
            )
        };
        let d = tempfile::tempdir().unwrap();
        // Totals equal to the calls' sum (as Copilot writes them): the calls count, once.
        let same = shutdown(5000 + 5400 + 5500, 60 + 45 + 30);
        let t = load(&new_session_with(&d.path().join("same"), &[&same]));
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.counts().tokens, calls);
        // (and priced per call, not per call plus totals: tests/cost.rs)
        assert_eq!(t.event(t.roots[0]).usage.get().and_then(|u| u.sum()), Some(calls));
        // Totals above the calls (calls of an older CLI before a resume): the totals.
        let more = shutdown(30_000, 500);
        let t = load(&new_session_with(&d.path().join("more"), &[&more]));
        assert_eq!(t.counts().tokens, 30_500);
        // A repeated receipt of a call counts once.
        let again = r#"{"type":"session.usage_record","data":{"usage":{"model":"claude-sonnet-4.5","inputTokens":5000,"outputTokens":60,"cacheReadTokens":4000,"apiCallId":"msg_aa01"}},"id":"z2","timestamp":"2026-11-28T09:00:06Z","parentId":null}"#;
        let t = load(&new_session_with(&d.path().join("again"), &[again]));
        assert_eq!((t.counts().tokens, t.counts().llm_calls), (calls, 3));
    }

    #[test]
    fn a_usage_record_after_its_reply_gives_the_reply_its_tokens() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            d.path(),
            &[
                r#"{"type":"assistant.message","data":{"content":"hi","outputTokens":7,"apiCallId":"r1","model":"gpt-5.2"},"id":"e1","timestamp":"2026-01-01T00:00:01Z","parentId":null}"#,
                r#"{"type":"session.usage_record","data":{"usage":{"model":"gpt-5.2","inputTokens":100,"outputTokens":7,"cacheReadTokens":0,"apiCallId":"r1"}},"id":"e2","timestamp":"2026-01-01T00:00:02Z","parentId":"e1"}"#,
                r#"{"type":"assistant.message","data":{"content":"old reply, no call id","outputTokens":5},"id":"e3","timestamp":"2026-01-01T00:00:03Z","parentId":"e2"}"#,
            ],
        );
        let t = load(&p);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.counts().llm_calls, 2);
        assert_eq!(usage_of(&t, t.find("r1").unwrap()), Some((Some(100), Some(0), Some(7))));
        // A reply of an older CLI: its output tokens, as before.
        assert_eq!(usage_of(&t, t.find("e3").unwrap()), Some((None, None, Some(5))));
        assert_eq!(t.counts().tokens, 107 + 5);
    }

    #[test]
    fn the_files_beside_events_jsonl_change_neither_detection_nor_loading() {
        let dir = fixture("copilot-cli", NEW_SESSION);
        for f in [
            "workspace.yaml",
            "checkpoints/index.md",
            "rewind-file-snapshots/tracking.json",
            "inuse.4242.lock",
            ".workspace-fork.lock",
        ] {
            assert!(dir.join(f).exists(), "{f}");
        }
        assert_eq!(CopilotCli.detect(&Probe::open(&dir).unwrap()), 100);
        assert_eq!(crate::formats::detect(&dir).unwrap().id(), "copilot-cli");
        // The session, its session-state, and a copy elsewhere: one run each, nothing else.
        let d = tempfile::tempdir().unwrap();
        let copy = d.path().join("elsewhere").join("s1");
        copy_dir(&dir, &copy);
        let state = fixture("copilot-cli", "session-state");
        for (at, runs) in [
            (dir.clone(), 1),
            (state, 2),
            (copy.clone(), 1),
            (d.path().to_path_buf(), 1),
        ] {
            let found = crate::source::discover(std::slice::from_ref(&at), None);
            assert!(found.errors.is_empty(), "{}: {:?}", at.display(), found.errors);
            let ids: Vec<_> = found.runs.iter().map(|r| r.format.id()).collect();
            assert_eq!(ids, vec!["copilot-cli"; runs], "{}", at.display());
            for (r, res) in crate::source::load_all(&found.runs) {
                let l = res.unwrap_or_else(|e| panic!("{}: {e}", r.path.display()));
                for t in &l.traces {
                    assert!(t.diagnostics.is_empty(), "{}: {:?}", r.path.display(), t.diagnostics);
                }
            }
        }
        assert_eq!(load(&copy).counts().tool_calls, 2);
    }

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            if e.path().is_dir() {
                copy_dir(&e.path(), &to.join(e.file_name()));
            } else {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }

    /// A record of a type no Copilot CLI writes yet, in Copilot's envelope (the time of the
    /// line it goes before), sometimes with text.
    fn unknown_record(rng: &mut crate::formats::testing::Rng, near: &Value) -> Value {
        let name = rng.type_name();
        // A new namespace, or a new type in a known one.
        let ty = match rng.below(3) {
            0 => name,
            1 => format!("session.{name}"),
            _ => format!("assistant.{name}"),
        };
        let mut data = serde_json::Map::new();
        if let Some(text) = rng.maybe_text() {
            let key = ["content", "message", "summary"][rng.below(3)];
            data.insert(key.into(), Value::String(text));
        }
        // Fields the reader reads on known records, of other shapes: still nothing to say.
        if rng.one_in(3) {
            data.insert("toolRequests".into(), Value::String("not a list".into()));
        }
        if rng.one_in(3) {
            data.insert("toolCallId".into(), Value::String("toolu_01".into()));
        }
        data.insert("zz".into(), rng.value());
        serde_json::json!({
            "type": ty,
            "data": data,
            "id": format!("drift-{}", rng.next()),
            "timestamp": near.get("timestamp").cloned().unwrap_or(Value::Null),
            "parentId": near.get("id").cloned().unwrap_or(Value::Null),
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on our fixtures, the sample session and the
        /// corpus' sessions.
        #[test]
        fn drift_is_skipped_quietly(seed in any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "copilot-cli",
                &[
                    "tests/fixtures/copilot-cli/session-state/5f0c2d4e-0000-4000-8000-000000000001",
                    "tests/fixtures/copilot-cli/session-state/7c1e5a90-0000-4000-8000-000000000102",
                    "tests/fixtures/copilot-cli/damaged.jsonl",
                    "sample-traces/copilot-cli/session-state/0d9e4c21-7a55-4e0b-9c1f-3b2a6d8e5f10",
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

    #[test]
    fn a_record_of_an_unknown_type_is_counted_and_shown_only_with_text() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            d.path(),
            &[
                r#"{"type":"session.start","data":{"sessionId":"s"},"id":"e1","timestamp":"2026-01-01T00:00:00Z","parentId":null}"#,
                r#"{"type":"session.error","data":{"errorType":"quota","message":"out of quota"},"id":"e2","timestamp":"2026-01-01T00:00:01Z","parentId":"e1"}"#,
                r#"{"type":"session.hologram","data":{"summary":"a newer CLI's note"},"id":"e3","timestamp":"2026-01-01T00:00:02Z","parentId":"e2"}"#,
                r#"{"type":"session.hologram","data":{"toolRequests":"odd","n":1},"id":"e4","timestamp":"2026-01-01T00:00:03Z","parentId":"e3"}"#,
                r#"{"type":"zeitgeist.shift","data":"not an object","id":"e5","timestamp":"2026-01-01T00:00:04Z","parentId":"e4"}"#,
                r#"{"type":"session.info","data":{"infoType":"x"},"id":"e6","timestamp":"2026-01-01T00:00:05Z","parentId":"e5"}"#,
            ],
        );
        let t = load(&p);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(
            t.skipped.iter().collect::<Vec<_>>(),
            [("session.hologram", 2), ("zeitgeist.shift", 1)]
        );
        // Those with text are shown (a `data` that is a string is text); a known type is
        // shown as before.
        assert_eq!(
            outline(&t)[1..],
            [
                "  error quota",
                "  other session.hologram",
                "  other zeitgeist.shift",
                "  other session.info"
            ]
        );
        let e = t.find("e3").unwrap();
        let pl = crate::formats::payload(&t, t.event(e));
        assert_eq!(pl.input, Some(Value::String("a newer CLI's note".into())));
        assert_eq!(pl.extra[0].1["type"], "session.hologram");
        // The error was the last thing the session did that this reader knows.
        let d2 = tempfile::tempdir().unwrap();
        let p = write(
            d2.path(),
            &[
                r#"{"type":"session.error","data":{"errorType":"quota"},"id":"e2","timestamp":"2026-01-01T00:00:01Z","parentId":null}"#,
                r#"{"type":"session.hologram","data":{},"id":"e3","timestamp":"2026-01-01T00:00:02Z","parentId":"e2"}"#,
            ],
        );
        assert_eq!(load(&p).meta.status, RunStatus::Error);
    }

    #[test]
    fn a_damaged_file_loads_what_it_can_and_says_what_was_wrong() {
        let t = load(&fixture("copilot-cli", "damaged.jsonl"));
        let lines: Vec<_> = t.diagnostics.iter().map(|d| (d.line, d.severity)).collect();
        assert_eq!(
            lines,
            [
                (Some(2), Severity::Error),
                (Some(3), Severity::Error),
                (Some(4), Severity::Error),
                (Some(5), Severity::Error),
                (Some(6), Severity::Error),
                (Some(7), Severity::Warning),
                (Some(10), Severity::Warning),
            ]
        );
        assert!(
            t.diagnostics[2].message.contains("type"),
            "{}",
            t.diagnostics[2].message
        );
        // The result with no call is still a call; the start that never completed is pending.
        let ghost = t.find("ghost").unwrap();
        assert_eq!(t.event(ghost).status, Status::Ok);
        assert_eq!(t.event(t.find("call_x").unwrap()).status, Status::Pending);
        assert_eq!(t.meta.status, RunStatus::Running);
        assert_eq!(t.counts().errors, 1, "session.error");
        let err = t
            .walk()
            .into_iter()
            .find(|&(i, _)| t.event(i).kind == EventKind::Error)
            .unwrap()
            .0;
        let p = crate::formats::payload(&t, t.event(err));
        assert_eq!(p.error.unwrap().kind.as_deref(), Some("rate_limit"));
    }

    fn write(dir: &Path, lines: &[&str]) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join(EVENTS);
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        p
    }

    #[test]
    fn a_completion_without_start_and_a_start_without_request_still_make_one_call_each() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            d.path(),
            &[
                r#"{"type":"assistant.message","data":{"content":"","toolRequests":[{"toolCallId":"c1","name":"bash","arguments":{"command":"ls"}}]},"id":"e1","timestamp":"2026-01-01T00:00:01Z","parentId":null}"#,
                r#"{"type":"tool.execution_complete","data":{"toolCallId":"c1","success":true,"result":{"content":"a\nb"}},"id":"e2","timestamp":"2026-01-01T00:00:02Z","parentId":"e1"}"#,
                r#"{"type":"tool.execution_start","data":{"toolCallId":"c2","toolName":"bash","arguments":{"command":"echo hi"}},"id":"e3","timestamp":"2026-01-01T00:00:03Z","parentId":"e2"}"#,
            ],
        );
        let t = load(&p);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.counts().tool_calls, 2);
        let c1 = t.event(t.find("c1").unwrap());
        assert_eq!((c1.status, c1.duration.get()), (Status::Ok, Some(1_000_000_000)));
        assert_eq!(t.event(t.find("c2").unwrap()).status, Status::Pending);
        assert_eq!(t.meta.status, RunStatus::Running, "no shutdown and a call unanswered");
        assert_eq!(
            t.meta.id,
            d.path().file_name().unwrap().to_string_lossy(),
            "the session dir names it"
        );
    }

    /// A session of `turns` turns padded past what a summary reads, then `end`.
    /// A system message of `system` bytes comes before the prompt when not 0.
    fn big_session(dir: &Path, system: usize, prompt: &str, end: &[&str]) -> PathBuf {
        let ev = |i: usize, ty: &str, data: Value| {
            serde_json::json!({"type": ty, "data": data, "id": format!("e{i}"),
                "timestamp": format!("2026-01-01T00:{:02}:{:02}Z", i / 60 % 60, i % 60), "parentId": null})
            .to_string()
        };
        let mut lines = vec![
            ev(
                0,
                "session.start",
                serde_json::json!({"sessionId": "s-big", "startTime": "2025-12-31T23:59:59Z"}),
            ),
            match system {
                0 => ev(1, "user.message", serde_json::json!({"content": "   "})),
                n => ev(1, "system.message", serde_json::json!({"content": "s".repeat(n)})),
            },
            ev(2, "user.message", serde_json::json!({"content": prompt})),
        ];
        for i in 3..200 {
            let data = match i % 4 {
                0 => serde_json::json!({"turnId": i.to_string()}),
                1 => {
                    serde_json::json!({"content": "x".repeat(300), "toolRequests": [{"toolCallId": format!("c{i}"), "name": "bash"}]})
                }
                2 => serde_json::json!({"toolCallId": format!("c{}", i - 1), "success": true}),
                _ => serde_json::json!({"turnId": (i - 3).to_string()}),
            };
            let ty = [
                "assistant.turn_start",
                "assistant.message",
                "tool.execution_complete",
                "assistant.turn_end",
            ][i % 4];
            lines.push(ev(i, ty, data));
        }
        lines.extend(end.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        write(dir, &refs)
    }

    #[test]
    fn a_large_session_is_summarized_from_its_ends_as_the_full_load_says_it() {
        let d = tempfile::tempdir().unwrap();
        let line = |ty: &str, data: &str, ts: &str| {
            format!(
                r#"{{"type":"{ty}","data":{data},"id":"x{ts}","timestamp":"2026-01-01T01:00:{ts}Z","parentId":null}}"#
            )
        };
        let long = format!("Fix the build\n{}", "y".repeat(40 << 10));
        let cases: Vec<(&str, &str, Vec<String>, RunStatus)> = vec![
            (
                "after a long system message",
                "Count the rows",
                vec![line("session.shutdown", r#"{"shutdownType":"routine"}"#, "01")],
                RunStatus::Ok,
            ),
            (
                "shutdown",
                "Count the rows",
                vec![line("session.shutdown", r#"{"shutdownType":"routine"}"#, "01")],
                RunStatus::Ok,
            ),
            (
                "failed",
                &long,
                vec![line("session.shutdown", r#"{"shutdownType":"error"}"#, "01")],
                RunStatus::Error,
            ),
            (
                "open turn",
                "p",
                vec![line("assistant.turn_start", r#"{"turnId":"9"}"#, "01")],
                RunStatus::Running,
            ),
            (
                "open call",
                "p",
                vec![line(
                    "assistant.message",
                    r#"{"toolRequests":[{"toolCallId":"z","name":"bash"}]}"#,
                    "01",
                )],
                RunStatus::Running,
            ),
            (
                "error last",
                "p",
                vec![
                    line("session.error", r#"{"errorType":"quota"}"#, "01"),
                    line("session.idle", "{}", "02"),
                ],
                RunStatus::Error,
            ),
            ("killed", "p", vec![], RunStatus::Unknown),
        ];
        for (what, prompt, end, status) in cases {
            let dir = d.path().join(what.replace(' ', "-"));
            let end: Vec<&str> = end.iter().map(String::as_str).collect();
            let system = if what.contains("system") { 30 << 10 } else { 0 };
            let p = big_session(&dir, system, prompt, &end);
            assert!(std::fs::metadata(&p).unwrap().len() > SMALL, "{what}");
            let s = crate::formats::testing::summaries(&CopilotCli, &dir).unwrap().remove(0);
            let full = Summary::unpriced(&load(&dir));
            assert_eq!(s.status, status, "{what}");
            assert_eq!(
                (&s.id, &s.name, s.status, s.start, s.duration, &s.path),
                (&full.id, &full.name, full.status, full.start, full.duration, &full.path),
                "{what}"
            );
            assert!(
                s.provisional() && s.events.is_none() && s.tokens.is_none(),
                "{what}: counts left unknown"
            );
        }
        // A session no larger than its two ends loads whole: exact counts.
        let small = d.path().join("small");
        write(&small, &[&line("session.start", r#"{"sessionId":"s-small"}"#, "00")]);
        let s = crate::formats::testing::summaries(&CopilotCli, &small)
            .unwrap()
            .remove(0);
        assert_eq!((s.id.as_str(), s.events, s.provisional()), ("s-small", Some(1), false));
    }

    #[test]
    fn detection_claims_copilot_files_and_nothing_else() {
        let probe = |p: &Path| Probe::open(p).unwrap();
        let events = fixture("copilot-cli", &format!("{SESSION}/events.jsonl"));
        assert_eq!(CopilotCli.detect(&probe(&events)), 100);
        assert_eq!(CopilotCli.detect(&probe(&fixture("copilot-cli", SESSION))), 100);
        assert_eq!(CopilotCli.detect(&probe(&fixture("copilot-cli", "damaged.jsonl"))), 97);
        assert_eq!(
            crate::formats::detect(&fixture("copilot-cli", "damaged.jsonl"))
                .unwrap()
                .id(),
            "copilot-cli"
        );
        for (format, name) in [
            ("claude-code", "session.jsonl"),
            ("codex", "rollout-turns.jsonl"),
            ("openai-chat", "dataset.jsonl"),
            ("assay", "v2.jsonl"),
        ] {
            let p = fixture(format, name);
            if p.exists() {
                assert_eq!(CopilotCli.detect(&probe(&p)), 0, "{format}/{name}");
            }
        }
        // An AgentDbg run directory holds an events.jsonl too: not a Copilot session.
        let d = tempfile::tempdir().unwrap();
        let run = d.path().join("runs/r1");
        write(
            &run,
            &[r#"{"event_type":"RUN_START","event_id":"a","run_id":"r1","ts":"2026-01-01T00:00:00Z","payload":{}}"#],
        );
        assert!(!CopilotCli.is_run_dir(&run));
        assert_eq!(CopilotCli.detect(&probe(&run)), 0);
        // A Copilot session copied out of session-state is still one.
        let copied = d.path().join("elsewhere/s1");
        std::fs::create_dir_all(&copied).unwrap();
        std::fs::copy(&events, copied.join(EVENTS)).unwrap();
        assert!(CopilotCli.is_run_dir(&copied));
        let found = crate::source::discover(&[d.path().to_path_buf()], None);
        let mut formats: Vec<_> = found
            .runs
            .iter()
            .map(|r| (r.path.file_name().unwrap().to_owned(), r.format.id()))
            .collect();
        formats.sort();
        assert_eq!(formats, [("r1".into(), "agentdbg"), ("s1".into(), "copilot-cli")]);
    }

    #[test]
    fn parallel_batches_build_the_same_tree_as_one_line_at_a_time() {
        let d = tempfile::tempdir().unwrap();
        let mut lines = vec![r#"{"type":"session.start","data":{"sessionId":"s"},"id":"s0","timestamp":"2026-01-01T00:00:00Z","parentId":null}"#.to_string()];
        for i in 0..600 {
            lines.push(format!(
                r#"{{"type":"assistant.message","data":{{"content":"","toolRequests":[{{"toolCallId":"c{i}","name":"t{}","arguments":{{}}}}],"outputTokens":3}},"id":"m{i}","timestamp":"2026-01-01T00:00:{:02}Z","parentId":null}}"#,
                i % 7,
                i % 60
            ));
            if i % 3 != 0 {
                lines.push(format!(
                    r#"{{"type":"tool.execution_complete","data":{{"toolCallId":"c{i}","success":{}}},"id":"r{i}","timestamp":"2026-01-01T00:00:{:02}Z","parentId":null}}"#,
                    i % 5 != 0,
                    i % 60
                ));
            }
        }
        lines.push("{broken".into());
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let p = write(d.path(), &refs);
        let batched = load(&p);
        let mut parser = Parser::new(&run_id(&p));
        let mut sink = Sink::new(&p);
        let bytes = std::fs::read(&p).unwrap();
        let mut off = 0u64;
        for (n, l) in bytes.split(|&b| b == b'\n').enumerate() {
            if !l.is_empty() {
                let loc = LineLoc {
                    line: n as u64 + 1,
                    offset: off,
                    len: l.len(),
                };
                parser.line(l, loc, &mut sink);
            }
            off += l.len() as u64 + 1;
        }
        parser.flush(&mut sink);
        let single = sink.finish("x").unwrap().traces.remove(0);
        assert_eq!(batched.counts(), single.counts());
        assert_eq!(batched.counts().tool_calls, 600);
        let shape = |t: &Trace| {
            t.walk()
                .iter()
                .map(|&(i, d)| {
                    (
                        t.name(i).to_string(),
                        d,
                        t.event(i).status,
                        t.event(i).origin,
                        t.event(i).origin2.clone(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(shape(&batched), shape(&single));
        assert_eq!(batched.diagnostics, single.diagnostics);
    }

    /// (type, id, time, tool requests' (id, name), data.toolCallId).
    type Slow = (
        String,
        Option<String>,
        Option<i64>,
        Vec<(Option<String>, Option<String>)>,
        Option<String>,
    );

    /// What the index reads of a line, the slow way: serde_json::Value.
    fn by_value(line: &[u8]) -> Option<Slow> {
        let v: Value = serde_json::from_slice(line).ok()?;
        let ty = v.get("type")?.as_str()?.to_string();
        let s = |x: Option<&Value>| x.and_then(Value::as_str).map(str::to_owned);
        let d = v.get("data").filter(|d| !d.is_null());
        let reqs = match d.and_then(|d| d.get("toolRequests")).filter(|r| !r.is_null()) {
            Some(Value::Array(a)) => a.iter().map(|r| (s(r.get("toolCallId")), s(r.get("name")))).collect(),
            _ => Vec::new(),
        };
        Some((
            ty,
            s(v.get("id")),
            v.get("timestamp").and_then(parse_timestamp),
            reqs,
            s(d.and_then(|d| d.get("toolCallId"))),
        ))
    }

    fn line_strategy() -> impl Strategy<Value = Vec<u8>> {
        let ty = prop::sample::select(vec![
            "session.start",
            "assistant.message",
            "tool.execution_start",
            "tool.execution_complete",
            "user.message",
            "x\\u002ey",
        ]);
        let word = "[a-z0-9_\\\\\"é ]{0,6}";
        let base = (ty, word, word, word, 0..3usize, any::<bool>()).prop_map(|(ty, id, call, name, n, ts)| {
            let reqs: Vec<String> = (0..n)
                .map(|k| format!(r#"{{"toolCallId":"{call}{k}","name":"{name}","arguments":{{"a":[1,"{id}"]}}}}"#))
                .collect();
            let time = if ts { r#""2026-01-01T00:00:01.5Z""# } else { "1767225600000" };
            format!(
                r#"{{"type":"{ty}","data":{{"toolCallId":"{call}","toolName":"{name}","toolRequests":[{}],"success":true}},"id":"{id}","timestamp":{time},"parentId":null}}"#,
                reqs.join(",")
            )
            .into_bytes()
        });
        with_byte_edits(base, 3)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

        /// The skim agrees with serde_json::Value on every field the index reads, and reads
        /// every record serde_json reads whole.
        #[test]
        fn the_skim_reads_what_serde_json_reads(line in line_strategy()) {
            let slow = by_value(&line);
            match skim_rec(&line) {
                Some(r) => {
                    let slow = slow.expect("the skim read a line serde_json does not");
                    prop_assert_eq!(r.ty.as_ref(), slow.0.as_str());
                    prop_assert_eq!(r.id.map(Cow::into_owned), slow.1);
                    prop_assert_eq!(r.ts, slow.2);
                    if r.problem.is_none() {
                        let reqs: Vec<_> = r
                            .requests
                            .iter()
                            .map(|(_, q)| (text(q.tool_call_id).map(Cow::into_owned), text(q.name).map(Cow::into_owned)))
                            .collect();
                        prop_assert_eq!(reqs, slow.3);
                        prop_assert_eq!(text(r.data.tool_call_id).map(Cow::into_owned), slow.4);
                    }
                }
                None => {
                    // Only what serde_json cannot read, or a record with no `type` string,
                    // is left unread.
                    let v: Option<Value> = serde_json::from_slice(&line).ok();
                    let typed = v.as_ref().and_then(|v| v.get("type")).is_some_and(Value::is_string);
                    prop_assert!(!typed, "unread: {}", String::from_utf8_lossy(&line));
                }
            }
        }
    }
}

#[cfg(test)]
mod gist_tests {
    use super::*;
    use serde_json::json;

    fn g(name: &str, input: Value) -> Option<String> {
        CopilotCli.gist(name, &input)
    }

    #[test]
    fn each_tool_says_what_it_did() {
        // `toolRequests[].arguments` as the sessions hold them.
        assert_eq!(
            g("bash", json!({"command": "ls", "description": "List files"})).as_deref(),
            Some("ls")
        );
        assert_eq!(
            g("view", json!({"path": "/repo/Cargo.toml"})).as_deref(),
            Some("/repo/Cargo.toml")
        );
        let e = json!({"path": "/repo/a.rs", "old_str": "x", "new_str": "y"});
        assert_eq!(g("edit", e).as_deref(), Some("/repo/a.rs"));
        let c = json!({"file_text": "fn main() {}", "path": "/repo/b.rs"});
        assert_eq!(g("create", c).as_deref(), Some("/repo/b.rs"));
        let s = json!({"command": "view", "path": "/repo"});
        assert_eq!(g("str_replace_editor", s).as_deref(), Some("/repo"));
        assert_eq!(
            g("grep", json!({"pattern": "fn main", "path": "src"})).as_deref(),
            Some("fn main")
        );
        assert_eq!(
            g("web_fetch", json!({"url": "https://docs.rs", "max_length": 5000})).as_deref(),
            Some("https://docs.rs")
        );
        let q = json!({"query": "best Rust documentation generation tools"});
        assert_eq!(
            g("web_search", q).as_deref(),
            Some("best Rust documentation generation tools")
        );
        let r = json!({"intent": "Investigating Rust doc tools"});
        assert_eq!(g("report_intent", r).as_deref(), Some("Investigating Rust doc tools"));
        assert_eq!(
            g("task_complete", json!({"summary": "Done."})).as_deref(),
            Some("Done.")
        );
    }
}
