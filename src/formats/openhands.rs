//! OpenHands event streams, in their two generations.
//!
//! - V0 trajectories (`save_trajectory_path`, the app's trajectory download): one JSON array of
//!   events `{id, timestamp, source, message, action|observation, args|extras, cause?,
//!   tool_call_metadata?}`. An observation names the action it answers by `cause` (the
//!   action's `id`). Tool calls are the agent's actions other than `message`, `system` and
//!   `recall`, so `finish` and `think` count; the `model_response` in `tool_call_metadata`
//!   gives the LLM call (several actions may share one response) with its `usage`.
//!   Timestamps are naive ISO-8601 (read as UTC).
//! - V1 conversations (`openhands-sdk`, the CLI's `~/.openhands/conversations/<id>/`): a folder
//!   with `base_state.json` (agent config, `execution_status`, `stats` with token usage and
//!   latency per LLM response) and `events/event-NNNNN-<uuid>.json`, one event a file, `kind`
//!   `SystemPromptEvent`, `MessageEvent`, `ActionEvent` (every one a tool call, `finish` and
//!   `think` included), `ObservationEvent` / `AgentErrorEvent` / `UserRejectObservation`
//!   (joined to the action by `tool_call_id`), and state events. The SDK's
//!   `.eventlog.lock` and `.eventlog-len-N.marker` files beside the events are not events.
//!
//! Tokens: both generations count as LiteLLM does (OpenAI's way): `prompt_tokens` include the
//! cache read (`prompt_tokens_details.cached_tokens` / `cache_read_input_tokens`, V1
//! `cache_read_tokens`) and the cache write (`cache_creation_input_tokens`, V1
//! `cache_write_tokens`), `completion_tokens` include the reasoning
//! (`completion_tokens_details.reasoning_tokens`, V1 `reasoning_tokens`): taken out. V1's
//! `costs` entries name no response, so they are not matched to calls: costs are computed.

use super::document::{DocSink, Document};
use super::id_map::{IdMap, KeptIds};
use super::jsonl::LineLoc;
use super::whole;
use super::{Format, LoadError, Loaded, Probe, Summary, Watcher, decode_embedded, field, read_json_file, stem, str_of};
use crate::model::*;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub struct OpenHands;

/// Largest V0 trajectory read (the whole conversation with every file the agent read).
const LIMIT: u64 = 512 << 20;
/// Largest V1 event file or `base_state.json` read.
const EVENT_LIMIT: u64 = 64 << 20;

const BASE_STATE: &str = "base_state.json";
const EVENTS: &str = "events";

/// V0 agent actions that are not tool calls.
const NOT_TOOLS: [&str; 3] = ["message", "system", "recall"];
/// V0 actions that never get an observation: done when they are recorded.
const NO_OBSERVATION: [&str; 3] = ["finish", "reject", "think"];

/// A V0 event: an object with `action` or `observation` and `source` or `id`.
fn is_v0_event(v: &Value) -> bool {
    (v.get("action").is_some_and(Value::is_string) || v.get("observation").is_some_and(Value::is_string))
        && (v.get("source").is_some() || v.get("id").is_some())
}

impl Format for OpenHands {
    fn id(&self) -> &'static str {
        "openhands"
    }
    fn describe(&self) -> &'static str {
        "OpenHands V0 trajectory (a JSON array of action/observation events) or V1 conversation folder (~/.openhands/conversations/<id>/: base_state.json + events/)"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return if p.has_entry(BASE_STATE) && p.path.join(EVENTS).is_dir() {
                100
            } else {
                0
            };
        }
        if !p.is_list() || !(p.has_key("action") || p.has_key("observation")) {
            return 0;
        }
        if p.complete {
            // The first element alone: the load parses the rest, and says where it is broken.
            return if p.first_item().is_some_and(|v| is_v0_event(&v)) {
                95
            } else {
                0
            };
        }
        if p.has_key("source") { 90 } else { 0 }
    }

    /// A finished V1 conversation is summarized from `base_state.json` and the first and last
    /// event files (a session list of thousands of conversations reads no other event);
    /// a running one, or a V0 file, is loaded.
    fn summarize(&self, path: &Path) -> Result<Vec<Summary>, LoadError> {
        if path.is_dir()
            && let Some(s) = summarize_v1(path)?
        {
            return Ok(vec![s]);
        }
        Ok(self.load(path)?.traces.iter().map(Summary::of).collect())
    }

    /// A V0 trajectory file, or a V1 conversation folder with everything in it (one of more
    /// than 512 event files is summarized afresh: from its ends, which is cheap).
    fn summary_inputs(&self, path: &Path) -> Option<Vec<std::path::PathBuf>> {
        Some(vec![path.to_path_buf()])
    }

    fn is_run_dir(&self, dir: &Path) -> bool {
        dir.join(BASE_STATE).is_file() && dir.join(EVENTS).is_dir()
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        load(self, path, None)
    }

    fn load_watched(&self, path: &Path, watcher: &mut dyn Watcher) -> Result<Loaded, LoadError> {
        load(self, path, Some(watcher))
    }
    /// An event's payload from its record(s): a V0 list element or a V1 event file, and the
    /// observation joined to a tool call (the run's is held: one a trace).
    fn decode_payload(&self, trace: &Trace, event: &Event, raw: &[&[u8]]) -> Payload {
        let Some(ev) = raw.first().and_then(|b| serde_json::from_slice::<Value>(b).ok()) else {
            return whole::unreadable();
        };
        let obs = raw.get(1).and_then(|b| serde_json::from_slice::<Value>(b).ok());
        let v1 = trace
            .meta
            .attributes
            .first()
            .is_some_and(|(_, v)| v.as_str() == Some("V1 conversation"));
        let mut p = if v1 {
            v1_payload(event.kind, &ev)
        } else {
            v0_payload(event.kind, &ev)
        };
        if event.kind == EventKind::ToolCall
            && let Some(obs) = obs
        {
            if v1 {
                v1_outcome(&obs).apply(&mut p);
            } else {
                v0_outcome(&obs).apply(&mut p);
            }
        }
        p
    }
}

/// What a V0 event's own record says, as its event's payload (a tool call's before its
/// observation).
fn v0_payload(kind: EventKind, ev: &Value) -> Payload {
    let message = field(ev, "message").cloned();
    if let Some(action) = str_of(ev, "action") {
        let args = ev.get("args").cloned().unwrap_or(Value::Null);
        return match kind {
            EventKind::LlmCall => Payload {
                output: field(&args, "thought").filter(|x| x.as_str() != Some("")).cloned(),
                ..Default::default()
            },
            EventKind::ToolCall => {
                let done = NO_OBSERVATION.contains(&action);
                Payload {
                    input: Some(args),
                    output: if done { message } else { None },
                    extra: vec![("action".to_string(), json!(action))],
                    ..Default::default()
                }
            }
            _ => Payload {
                input: field(&args, "content").cloned().or(message),
                extra: vec![("args".to_string(), args)],
                ..Default::default()
            },
        };
    }
    let extras = ev.get("extras").cloned().unwrap_or(Value::Null);
    if str_of(ev, "observation") == Some("agent_state_changed") {
        return Payload {
            output: Some(json!(str_of(&extras, "agent_state").unwrap_or("?"))),
            ..Default::default()
        };
    }
    let o = v0_outcome(ev);
    Payload {
        output: o.output,
        error: o.error,
        extra: vec![("extras".to_string(), extras)],
        ..Default::default()
    }
}

/// What an observation says of the call it answers.
struct Outcome {
    output: Option<Value>,
    error: Option<ErrorInfo>,
    /// Set on the call's payload.
    extra: Vec<(String, Value)>,
}

impl Outcome {
    fn apply(self, p: &mut Payload) {
        p.output = self.output;
        p.error = self.error;
        for (k, v) in self.extra {
            p.set_extra(&k, v);
        }
    }
}

fn v0_outcome(ev: &Value) -> Outcome {
    let obs = str_of(ev, "observation").unwrap_or("");
    let message = field(ev, "message").cloned();
    let content = field(ev, "content").cloned();
    let failed = obs == "error" || ev.get("success").and_then(Value::as_bool) == Some(false);
    let error = failed.then(|| ErrorInfo {
        kind: Some(obs.to_string()),
        message: content
            .as_ref()
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .or(message.as_ref().and_then(Value::as_str))
            .unwrap_or("the observation reports a failure")
            .to_string(),
        ..Default::default()
    });
    let mut extra = vec![("observation".to_string(), json!(obs))];
    let extras = ev.get("extras").cloned().unwrap_or(Value::Null);
    if !extras.is_null() {
        extra.push(("extras".to_string(), extras));
    }
    Outcome {
        output: content.or(message),
        error,
        extra,
    }
}

/// What a V1 event file says, as its event's payload (a tool call's before its observation).
fn v1_payload(kind: EventKind, ev: &Value) -> Payload {
    match (kind, str_of(ev, "kind").unwrap_or("")) {
        // The LLM call made by its first event: an action's thought (a reply has none).
        (EventKind::LlmCall, k) => Payload {
            output: (k == "ActionEvent")
                .then(|| ev.get("thought").and_then(text_of).map(Value::String))
                .flatten(),
            ..Default::default()
        },
        (_, "SystemPromptEvent") => {
            let tools = ev.get("tools").and_then(Value::as_array).map(|a| a.len());
            Payload {
                input: ev
                    .get("system_prompt")
                    .and_then(|p| str_of(p, "text"))
                    .map(|s| json!(s)),
                extra: tools.map(|n| vec![("tools".to_string(), json!(n))]).unwrap_or_default(),
                ..Default::default()
            }
        }
        (_, "MessageEvent") => {
            let msg = ev.get("llm_message").unwrap_or(&Value::Null);
            Payload {
                input: msg.get("content").and_then(text_of).map(Value::String),
                ..Default::default()
            }
        }
        (_, "ActionEvent") => Payload {
            input: ev
                .get("tool_call")
                .and_then(|c| c.get("arguments"))
                .map(decode_embedded)
                .or_else(|| field(ev, "action").cloned()),
            extra: field(ev, "security_risk")
                .map(|r| vec![("security_risk".to_string(), r.clone())])
                .unwrap_or_default(),
            ..Default::default()
        },
        (_, "ObservationEvent" | "AgentErrorEvent" | "UserRejectObservation") => {
            let o = v1_outcome(ev);
            Payload {
                output: o.output,
                error: o.error,
                ..Default::default()
            }
        }
        _ => Payload::default(),
    }
}

fn v1_outcome(ev: &Value) -> Outcome {
    let kind = str_of(ev, "kind").unwrap_or("");
    let obs = ev.get("observation").unwrap_or(&Value::Null);
    let (output, error) = match kind {
        "AgentErrorEvent" => {
            let m = str_of(ev, "error").unwrap_or("agent error").to_string();
            (
                None,
                Some(ErrorInfo {
                    kind: Some("AgentErrorEvent".into()),
                    message: m,
                    ..Default::default()
                }),
            )
        }
        "UserRejectObservation" => {
            let m = str_of(ev, "rejection_reason")
                .unwrap_or("rejected by the user")
                .to_string();
            (
                None,
                Some(ErrorInfo {
                    kind: Some("rejected".into()),
                    message: m,
                    ..Default::default()
                }),
            )
        }
        _ => {
            let text = obs.get("content").and_then(text_of);
            let error = (obs.get("is_error").and_then(Value::as_bool) == Some(true)).then(|| ErrorInfo {
                kind: str_of(obs, "kind").map(str::to_owned),
                message: text.clone().unwrap_or_else(|| "the tool reported an error".into()),
                ..Default::default()
            });
            (text.map(Value::String), error)
        }
    };
    let mut extra = Vec::new();
    for k in ["exit_code", "timeout", "command", "path"] {
        if let Some(x) = field(obs, k) {
            extra.push((k.to_string(), x.clone()));
        }
    }
    Outcome { output, error, extra }
}

fn ts_of(v: &Value) -> Option<i64> {
    v.get("timestamp").and_then(parse_timestamp)
}

/// Usage of a LiteLLM `usage` object (V0) or an SDK `token_usages` entry (V1), normalized.
fn usage_of(u: &Value) -> Option<Usage> {
    let u = super::usage_of_openai(u);
    (!u.is_empty()).then_some(u)
}

/// Text of V1 content: a list of `{type: "text", text}` parts (or a plain string).
fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let t: Vec<&str> = parts.iter().filter_map(|p| str_of(p, "text")).collect();
            (!t.is_empty()).then(|| t.join("\n"))
        }
        _ => None,
    }
}

/// A V0 event's id as the trace's source id (`cause` points at it).
#[cfg(test)]
fn v0_id(v: &Value) -> Option<String> {
    match v.get("id")? {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// A V1 conversation folder, or a V0 trajectory (streamed).
fn load(f: &OpenHands, path: &Path, watcher: Option<&mut dyn Watcher>) -> Result<Loaded, LoadError> {
    let meta = std::fs::metadata(path).map_err(|e| LoadError::io(path, e))?;
    if meta.is_dir() {
        if !f.is_run_dir(path) {
            return Err(LoadError::NotATrace {
                path: path.to_path_buf(),
                reason: "an OpenHands conversation folder holds base_state.json and events/".into(),
                tried: "openhands".into(),
            });
        }
        return Ok(Loaded {
            traces: vec![load_v1(path)?],
        });
    }
    if whole::first_byte_of(path)? == Some(b'[') {
        return load_v0(path, watcher);
    }
    // Not a list: read whole only to say what it is (JSON that is no trajectory, or not JSON).
    let buf = whole::read_checked(path, LIMIT)?;
    serde_json::from_slice::<Value>(&buf).map_err(|e| whole::invalid(path, &e))?;
    Err(LoadError::NotATrace {
        path: path.to_path_buf(),
        reason: "not a JSON array of OpenHands action/observation events".into(),
        tried: "openhands".into(),
    })
}

/// A V0 trajectory read as a stream (DESIGN §4): the top-level list's elements come with their
/// byte ranges, each is parsed for the index (a batch in parallel) and dropped, and the events
/// are folded in order. No size limit; the document is never in memory whole.
fn load_v0(path: &Path, watcher: Option<&mut dyn Watcher>) -> Result<Loaded, LoadError> {
    let mut v0 = V0::new(path, watcher);
    let scanned = Document::new(&[&[]]).read(path, &mut v0)?;
    if v0.foreign {
        return Err(LoadError::NotATrace {
            path: path.to_path_buf(),
            reason: "not a JSON array of OpenHands action/observation events".into(),
            tried: "openhands".into(),
        });
    }
    if scanned.elements == 0
        && let Some((line, message)) = v0.problem.take()
    {
        return Err(LoadError::invalid(path, format!("line {line}: {message}")));
    }
    if let Some((line, message)) = v0.problem.take() {
        v0.t.diagnostics.push(Diagnostic::error(path, Some(line), message));
    }
    Ok(Loaded {
        traces: vec![v0.finish()],
    })
}

/// What the fold needs of one V0 element, taken from its parsed value on a worker thread (the
/// value is dropped there: made and freed on one thread, where the fold's thread freeing every
/// worker's values spent most of a 1M-event load in the allocator). Its texts borrow from the
/// element where they have no escapes: seven `String`s an element were a tenth of a large
/// trajectory's load in the allocator.
#[derive(Debug, PartialEq)]
struct Facts<'a> {
    id: Option<Text<'a>>,
    ts: Option<i64>,
    source: Text<'a>,
    what: What<'a>,
}

type Text<'a> = Cow<'a, str>;

#[derive(Debug, PartialEq)]
enum What<'a> {
    /// The first element, which is no V0 event: the document is not a trajectory.
    Foreign,
    NotAnObject,
    Neither,
    Action {
        action: Text<'a>,
        /// The prompt, when this is the user's message.
        task: Option<Value>,
        function: Option<Text<'a>>,
        tool_call_id: Option<Text<'a>>,
        response: Option<Box<Response<'a>>>,
    },
    Observation {
        obs: Text<'a>,
        /// An `agent_state_changed`'s state.
        state: Option<String>,
        cause: Option<Text<'a>>,
        tool_call_id: Option<Text<'a>>,
        failed: bool,
    },
}

/// The LLM response an action's `tool_call_metadata` names (by its `id`).
#[derive(Debug, PartialEq)]
struct Response<'a> {
    id: Text<'a>,
    model: Option<Text<'a>>,
    usage: Option<Usage>,
}

fn owned(t: Text<'_>) -> Text<'static> {
    Cow::Owned(t.into_owned())
}

impl Facts<'_> {
    fn bare(what: What<'_>) -> Facts<'_> {
        Facts {
            id: None,
            ts: None,
            source: Text::default(),
            what,
        }
    }

    /// The same facts, borrowing nothing.
    fn owned(self) -> Facts<'static> {
        let what = match self.what {
            What::Foreign => What::Foreign,
            What::NotAnObject => What::NotAnObject,
            What::Neither => What::Neither,
            What::Action {
                action,
                task,
                function,
                tool_call_id,
                response,
            } => What::Action {
                action: owned(action),
                task,
                function: function.map(owned),
                tool_call_id: tool_call_id.map(owned),
                response: response.map(|r| {
                    Box::new(Response {
                        id: owned(r.id),
                        model: r.model.map(owned),
                        usage: r.usage,
                    })
                }),
            },
            What::Observation {
                obs,
                state,
                cause,
                tool_call_id,
                failed,
            } => What::Observation {
                obs: owned(obs),
                state,
                cause: cause.map(owned),
                tool_call_id: tool_call_id.map(owned),
                failed,
            },
        };
        Facts {
            id: self.id.map(owned),
            ts: self.ts,
            source: owned(self.source),
            what,
        }
    }

    /// The facts of a parsed element, field by field as the reader of whole documents took
    /// them: the oracle [`Facts::read`] is checked against.
    #[cfg(test)]
    fn of(ev: &Value) -> Facts<'static> {
        if !ev.is_object() {
            return Facts::bare(What::NotAnObject);
        }
        let mut f = Facts {
            id: v0_id(ev).map(Cow::Owned),
            ts: ts_of(ev),
            source: Cow::Owned(str_of(ev, "source").unwrap_or("").to_string()),
            what: What::Neither,
        };
        let meta = ev.get("tool_call_metadata");
        let tool_call_id = meta
            .and_then(|m| str_of(m, "tool_call_id"))
            .map(|s| Cow::Owned(s.to_owned()));
        f.what = if let Some(action) = str_of(ev, "action") {
            let args = ev.get("args").unwrap_or(&Value::Null);
            let task = (action == "message" && f.source == "user")
                .then(|| field(args, "content").or(field(ev, "message")).cloned())
                .flatten();
            let response = meta.and_then(|m| m.get("model_response"));
            What::Action {
                action: Cow::Owned(action.to_string()),
                task,
                function: meta
                    .and_then(|m| str_of(m, "function_name"))
                    .filter(|s| !s.is_empty())
                    .map(|s| Cow::Owned(s.to_owned())),
                tool_call_id,
                response: response.and_then(|r| {
                    Some(Box::new(Response {
                        id: Cow::Owned(str_of(r, "id")?.to_string()),
                        model: str_of(r, "model")
                            .filter(|s| !s.is_empty())
                            .map(|s| Cow::Owned(s.to_owned())),
                        usage: r.get("usage").and_then(usage_of),
                    }))
                }),
            }
        } else if let Some(obs) = str_of(ev, "observation") {
            let extras = ev.get("extras").unwrap_or(&Value::Null);
            What::Observation {
                obs: Cow::Owned(obs.to_string()),
                state: (obs == "agent_state_changed").then(|| str_of(extras, "agent_state").unwrap_or("?").to_string()),
                cause: match ev.get("cause") {
                    Some(Value::Number(n)) => Some(Cow::Owned(n.to_string())),
                    Some(Value::String(s)) => Some(Cow::Owned(s.clone())),
                    _ => None,
                },
                tool_call_id,
                failed: obs == "error" || ev.get("success").and_then(Value::as_bool) == Some(false),
            }
        } else {
            What::Neither
        };
        f
    }
}

/// A V0 element's fields, unparsed: read without building a [`Value`] of the whole element
/// (an observation's content, a response's choices), which was most of an `ls` over 2,000
/// trajectories. Unknown fields are skipped.
#[derive(serde::Deserialize)]
struct RawEvent<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default)]
    source: Option<&'a RawValue>,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
    #[serde(borrow, default)]
    action: Option<&'a RawValue>,
    #[serde(borrow, default)]
    args: Option<&'a RawValue>,
    #[serde(borrow, default)]
    observation: Option<&'a RawValue>,
    #[serde(borrow, default)]
    extras: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cause: Option<&'a RawValue>,
    #[serde(borrow, default)]
    success: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_call_metadata: Option<&'a RawValue>,
}

#[derive(serde::Deserialize)]
struct RawMeta<'a> {
    #[serde(borrow, default)]
    function_name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_call_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    model_response: Option<&'a RawValue>,
}

#[derive(serde::Deserialize)]
struct RawResponse<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    model: Option<&'a RawValue>,
    #[serde(borrow, default)]
    usage: Option<&'a RawValue>,
}

impl<'a> Facts<'a> {
    /// The facts of one element. An element the typed read cannot take is parsed as a value,
    /// and the value written again (its keys then unique: the last of a repeated key, as a
    /// value keeps it) is read the typed way; what is not an object is said so.
    fn read(b: &'a [u8]) -> Result<Facts<'a>, serde_json::Error> {
        if let Some(f) = Facts::fast(b) {
            return Ok(f);
        }
        let v: Value = serde_json::from_slice(b)?;
        if !v.is_object() {
            return Ok(Facts::bare(What::NotAnObject));
        }
        // A value written by serde_json is read the typed way: the last arm is never taken.
        Ok(Facts::fast(v.to_string().as_bytes()).map_or(Facts::bare(What::Neither), Facts::owned))
    }

    /// [`Facts::of`] the element's parsed value, without parsing what the facts do not need.
    /// None when the typed read fails (not JSON, not an object, a field given twice, which
    /// the value keeps the last of): the caller parses the value then.
    fn fast(b: &'a [u8]) -> Option<Facts<'a>> {
        // A small part as a value, as `Facts::of` sees it.
        fn val(r: Option<&RawValue>) -> Value {
            r.and_then(|r| serde_json::from_str(r.get()).ok())
                .unwrap_or(Value::Null)
        }
        fn string(r: Option<&RawValue>) -> Option<Text<'_>> {
            super::raw_text(r?.get())
        }
        // A struct reads a JSON array too, field by field: only objects here.
        if whole::first_byte(b) != Some(b'{') {
            return None;
        }
        let ev: RawEvent<'a> = serde_json::from_slice(b).ok()?;
        let source = string(ev.source).unwrap_or_default();
        let meta: Option<RawMeta> = match ev.tool_call_metadata {
            Some(r) if r.get().starts_with('{') => Some(serde_json::from_str(r.get()).ok()?),
            _ => None,
        };
        let tool_call_id = meta.as_ref().and_then(|m| string(m.tool_call_id));
        let what = if let Some(action) = string(ev.action) {
            let task = (action == "message" && source == "user")
                .then(|| {
                    let args = val(ev.args);
                    field(&args, "content")
                        .cloned()
                        .or_else(|| ev.message.map(|m| val(Some(m))))
                })
                .flatten();
            let response: Option<RawResponse> = match meta.as_ref().and_then(|m| m.model_response) {
                Some(r) if r.get().starts_with('{') => Some(serde_json::from_str(r.get()).ok()?),
                _ => None,
            };
            What::Action {
                action,
                task,
                function: meta
                    .as_ref()
                    .and_then(|m| string(m.function_name))
                    .filter(|s| !s.is_empty()),
                tool_call_id,
                response: response.and_then(|r| {
                    Some(Box::new(Response {
                        id: string(r.id)?,
                        model: string(r.model).filter(|s| !s.is_empty()),
                        usage: r.usage.and_then(|u| usage_of(&val(Some(u)))),
                    }))
                }),
            }
        } else if let Some(obs) = string(ev.observation) {
            What::Observation {
                state: (obs == "agent_state_changed")
                    .then(|| str_of(&val(ev.extras), "agent_state").unwrap_or("?").to_string()),
                cause: match ev.cause.map(RawValue::get) {
                    Some(r) if r.starts_with('"') => super::raw_text(r),
                    Some(r) => match serde_json::from_str::<Value>(r) {
                        Ok(Value::Number(n)) => Some(Cow::Owned(n.to_string())),
                        _ => None,
                    },
                    None => None,
                },
                tool_call_id,
                failed: obs == "error" || val(ev.success).as_bool() == Some(false),
                obs,
            }
        } else {
            What::Neither
        };
        // The id and the time read from their text: a million small values built and
        // freed were a tenth of a large trajectory's load.
        let id = match ev.id.map(RawValue::get) {
            Some(r) if r.starts_with('"') => super::raw_text(r).filter(|s| !s.is_empty()),
            Some(r) => match serde_json::from_str::<Value>(r) {
                Ok(Value::Number(n)) => Some(Cow::Owned(n.to_string())),
                _ => None,
            },
            None => None,
        };
        let ts = match ev.timestamp.map(RawValue::get) {
            Some(r) if r.starts_with('"') => super::raw_text(r).and_then(|s| parse_timestamp_str(&s)),
            r => r
                .and_then(|r| serde_json::from_str::<Value>(r).ok())
                .as_ref()
                .and_then(parse_timestamp),
        };
        Some(Facts { id, ts, source, what })
    }
}

/// The fold of a V0 trajectory's events.
struct V0<'w> {
    /// Who follows the load, and the size of the file.
    watch: Option<(&'w mut dyn Watcher, u64)>,
    path: PathBuf,
    t: Trace,
    file: u16,
    run: u32,
    /// Elements seen.
    i: u64,
    /// The first element is no V0 event: the rest is not read.
    foreign: bool,
    /// The scan's structural error (it stops there).
    problem: Option<(u64, String)>,
    // LLM calls by response id; tool calls by their V0 id (the events hold both) and by
    // tool_call_id.
    llms: IdMap<u32>,
    calls: IdMap<u32>,
    by_tool_call: KeptIds<u32>,
    task: Option<Value>,
    model: Option<String>,
    agent_state: Option<String>,
    finished: bool,
}

impl DocSink for V0<'_> {
    fn elements(&mut self, batch: &[(&[u8], LineLoc)]) {
        self.fold(batch);
        if !self.foreign
            && let Some((w, total)) = self.watch.take()
        {
            let read = super::jsonl::batch_end(batch);
            w.progress(read, total, &mut || self.partial());
            self.watch = Some((w, total));
        }
    }

    fn problem(&mut self, line: u64, message: String) {
        self.problem.get_or_insert((line.max(1), message));
    }
}

impl V0<'_> {
    /// A batch of elements, in order.
    fn fold(&mut self, batch: &[(&[u8], LineLoc)]) {
        use rayon::prelude::*;
        if self.foreign {
            return;
        }
        let first = self.i == 0;
        let parsed: Vec<Result<Facts, serde_json::Error>> = batch
            .par_iter()
            .enumerate()
            .map(|(k, (b, _))| {
                // The first element says whether this is a V0 trajectory at all.
                if first && k == 0 && !is_v0_event(&serde_json::from_slice(b)?) {
                    return Ok(Facts::bare(What::Foreign));
                }
                Facts::read(b)
            })
            .collect();
        for (ev, (_, loc)) in parsed.into_iter().zip(batch) {
            let i = self.i;
            self.i += 1;
            match ev {
                Ok(ev) => {
                    if matches!(ev.what, What::Foreign) {
                        self.foreign = true;
                        return;
                    }
                    self.event(i, loc.line, ev, loc.element_origin(self.file));
                }
                Err(e) => self.t.diagnostics.push(Diagnostic::error(
                    &self.path,
                    Some(loc.line),
                    format!("event [{i}]: {}; skipped", super::jsonl::json_error(&e)),
                )),
            }
        }
    }
}

impl<'w> V0<'w> {
    fn new(path: &Path, watch: Option<&'w mut dyn Watcher>) -> V0<'w> {
        let name = stem(path);
        let mut t = Trace::new(RunMeta {
            id: name.clone(),
            name: Some(name.clone()),
            format: "openhands",
            source: path.to_path_buf(),
            status: RunStatus::Unknown,
            attributes: vec![("openhands".to_string(), json!("V0 trajectory"))],
            ..Default::default()
        });
        let file = t.add_file(path);
        let origin = Origin {
            file,
            line: 0,
            offset: 0,
            len: 0,
        };
        let run = t.add(NewEvent {
            origin,
            ..NewEvent::new(EventKind::Run, &name)
        });
        V0 {
            watch: watch.map(|w| (w, std::fs::metadata(path).map_or(0, |m| m.len()))),
            path: path.to_path_buf(),
            t,
            file,
            run,
            i: 0,
            foreign: false,
            problem: None,
            llms: IdMap::default(),
            calls: IdMap::default(),
            by_tool_call: KeptIds::default(),
            task: None,
            model: None,
            agent_state: None,
            finished: false,
        }
    }

    /// One element of the list, in order.
    fn event(&mut self, i: u64, line: u64, ev: Facts<'_>, origin: Origin) {
        let V0 {
            path,
            t,
            run,
            llms,
            calls,
            by_tool_call,
            task,
            model,
            agent_state,
            finished,
            ..
        } = self;
        let path = path.as_path();
        let run = *run;
        let Facts { id, ts, source, what } = ev;
        let source = &*source;
        match what {
            // Stopped at in `elements`.
            What::Foreign => {}
            What::NotAnObject => t.diagnostics.push(Diagnostic::error(
                path,
                Some(line),
                format!("event [{i}] is not an object; skipped"),
            )),
            What::Neither => t.diagnostics.push(Diagnostic::warning(
                path,
                Some(line),
                format!("event [{i}] has neither `action` nor `observation`; skipped"),
            )),
            What::Action {
                action,
                task: first_prompt,
                function,
                tool_call_id,
                response,
            } => {
                let action = &*action;
                if NOT_TOOLS.contains(&action) || source != "agent" {
                    let (kind, label) = match action {
                        "message" | "system" => {
                            let role = match (action, source) {
                                ("system", _) => "system",
                                (_, "agent") => "assistant",
                                (_, s) => s,
                            };
                            (EventKind::Message(Role::parse(role)), role.to_string())
                        }
                        _ if source == "agent" => (EventKind::Other, action.to_string()),
                        // The environment's or the user's own actions (change_agent_state, ...).
                        _ => (EventKind::State, action.to_string()),
                    };
                    if action == "message" && source == "user" && task.is_none() {
                        *task = first_prompt;
                    }
                    t.add(NewEvent {
                        id: id.as_deref(),
                        parent: Parent::Index(run),
                        start: ts,
                        status: Status::Ok,
                        origin,
                        payload: PayloadRef::Deferred,
                        ..NewEvent::new(kind, &label)
                    });
                    return;
                }
                // An agent action: a tool call, under the LLM response that asked for it.
                let parent = match response {
                    Some(r) => match llms.get(&r.id, |&e| t.str(t.event(e).source_id)) {
                        Some(&l) => l,
                        None => {
                            let m = r.model.as_deref();
                            if model.is_none() {
                                *model = r.model.as_deref().map(str::to_owned);
                            }
                            let l = t.add(NewEvent {
                                id: Some(&r.id),
                                parent: Parent::Index(run),
                                start: ts,
                                status: Status::Ok,
                                usage: r.usage,
                                model: m,
                                origin,
                                payload: PayloadRef::Deferred,
                                ..NewEvent::new(EventKind::LlmCall, m.unwrap_or("llm"))
                            });
                            llms.insert(&r.id, l, |&e| t.str(t.event(e).source_id));
                            l
                        }
                    },
                    None => run,
                };
                if action == "finish" {
                    *finished = true;
                }
                let done = NO_OBSERVATION.contains(&action);
                let c = t.add(NewEvent {
                    id: id.as_deref(),
                    parent: Parent::Index(parent),
                    start: ts,
                    status: if done { Status::Ok } else { Status::Pending },
                    origin,
                    payload: PayloadRef::Deferred,
                    ..NewEvent::new(EventKind::ToolCall, function.as_deref().unwrap_or(action))
                });
                if let Some(id) = &id {
                    calls.insert(id, c, |&e| t.str(t.event(e).source_id));
                }
                if let Some(tc) = &tool_call_id {
                    by_tool_call.insert(tc, c);
                }
            }
            What::Observation {
                obs,
                state,
                cause,
                tool_call_id,
                failed,
            } => {
                let obs = &*obs;
                if let Some(state) = state {
                    t.add(NewEvent {
                        id: id.as_deref(),
                        parent: Parent::Index(run),
                        start: ts,
                        status: if state == "error" { Status::Error } else { Status::Ok },
                        origin,
                        payload: PayloadRef::Deferred,
                        ..NewEvent::new(EventKind::State, &format!("agent state: {state}"))
                    });
                    *agent_state = Some(state);
                    return;
                }
                let call = cause
                    .as_deref()
                    .and_then(|c| calls.get(c, |&e| t.str(t.event(e).source_id)))
                    .or_else(|| tool_call_id.as_deref().and_then(|tc| by_tool_call.get(tc)))
                    .copied();
                match call {
                    Some(c) if t.event(c).kind == EventKind::ToolCall => {
                        let e = t.event_mut(c);
                        e.status = if failed { Status::Error } else { Status::Ok };
                        if let (Some(s), Some(end)) = (e.start.get(), ts)
                            && end >= s
                        {
                            e.duration = end.checked_sub(s).into();
                        }
                        // The observation's record: its output, read when shown.
                        e.origin2 = Some(Box::new(origin));
                    }
                    // `null` observations answer messages and state changes: nothing to show.
                    _ if obs == "null" => {}
                    _ => {
                        if cause.is_some() && call.is_none() {
                            t.diagnostics.push(Diagnostic::warning(
                                path,
                                Some(line),
                                format!(
                                    "event [{i}]: a `{obs}` observation caused by event {}, which is not in the file",
                                    cause.as_deref().unwrap_or("")
                                ),
                            ));
                        }
                        t.add(NewEvent {
                            id: id.as_deref(),
                            parent: Parent::Index(run),
                            start: ts,
                            status: if failed { Status::Error } else { Status::Ok },
                            origin,
                            payload: PayloadRef::Deferred,
                            ..NewEvent::new(if failed { EventKind::Error } else { EventKind::Other }, obs)
                        });
                    }
                }
            }
        }
    }

    /// The run's status and task, once every event is in.
    fn finish(mut self) -> Trace {
        let t = std::mem::take(&mut self.t);
        self.close(t)
    }

    /// The trace of the events read so far, closed as [`V0::finish`] closes it.
    fn partial(&self) -> Trace {
        self.close(self.t.clone())
    }

    fn close(&self, mut t: Trace) -> Trace {
        let V0 {
            run,
            task,
            model,
            agent_state,
            finished,
            ..
        } = self;
        let (run, finished) = (*run, *finished);
        // The last agent state says how the run stands; a trajectory without state events
        // (the tests' and downloads') is finished when the agent called `finish`.
        let status = match agent_state.as_deref() {
            Some("error") => RunStatus::Error,
            Some("finished" | "awaiting_user_input" | "stopped" | "paused" | "rejected" | "user_rejected") => {
                RunStatus::Ok
            }
            Some("running" | "loading" | "init") => RunStatus::Running,
            _ if finished => RunStatus::Ok,
            _ => RunStatus::Unknown,
        };
        t.meta.status = status;
        t.meta.model = model.clone();
        if let Some(s) = agent_state {
            t.meta.attributes.push(("agent_state".to_string(), json!(s)));
        }
        {
            let e = t.event_mut(run);
            e.status = status.event_status();
        }
        if let Some(task) = task {
            t.payload_mut(run).input = Some(task.clone());
        }
        t.finalize();
        t
    }
}

/// The event files of a V1 conversation, in the SDK's order (`event-NNNNN-…`).
fn event_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>, LoadError> {
    let rd = std::fs::read_dir(dir).map_err(|e| LoadError::io(dir, e))?;
    let mut files = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // The SDK's lock and length markers (`.eventlog.lock`, `.eventlog-len-N.marker`) and
        // anything else that is not an event file are not events.
        let Some(rest) = name.strip_prefix("event-").filter(|_| name.ends_with(".json")) else {
            continue;
        };
        let n = rest
            .split('-')
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(u64::MAX);
        files.push((n, e.path()));
    }
    files.sort();
    Ok(files)
}

fn v1_status(exec: Option<&str>) -> RunStatus {
    match exec {
        Some("finished" | "idle" | "paused" | "waiting_for_confirmation") => RunStatus::Ok,
        Some("error" | "stuck") => RunStatus::Error,
        Some("running") => RunStatus::Running,
        _ => RunStatus::Unknown,
    }
}

/// The summary of a finished V1 conversation without reading its events (None: load it).
fn summarize_v1(dir: &Path) -> Result<Option<Summary>, LoadError> {
    if !OpenHands.is_run_dir(dir) {
        return Ok(None);
    }
    let Ok(state) = read_json_file(&dir.join(BASE_STATE), EVENT_LIMIT) else {
        return Ok(None); // the load says what is wrong with it
    };
    let status = v1_status(str_of(&state, "execution_status"));
    if matches!(status, RunStatus::Running | RunStatus::Unknown) {
        return Ok(None);
    }
    let files = event_files(&dir.join(EVENTS))?;
    let time = |f: Option<&(u64, PathBuf)>| {
        f.and_then(|(_, p)| read_json_file(p, EVENT_LIMIT).ok())
            .and_then(|v| ts_of(&v))
    };
    let (start, end) = (time(files.first()), time(files.last()));
    // Every LLM response the conversation paid for (the load shows those its events name).
    let stats = response_stats(&state);
    let tokens = stats
        .values()
        .filter_map(|(u, _)| u.as_ref().and_then(Usage::sum))
        .fold(0u64, u64::saturating_add);
    Ok(Some(Summary {
        id: str_of(&state, "id").map(str::to_owned).unwrap_or_else(|| stem(dir)),
        name: Some(stem(dir)),
        format: "openhands",
        path: dir.to_path_buf(),
        status,
        start,
        duration: match (start, end) {
            (Some(a), Some(b)) if b >= a => b.checked_sub(a),
            _ => None,
        },
        events: None,
        tool_calls: None,
        llm_calls: Some(stats.len()),
        errors: None,
        tokens: Some(tokens),
        problems: None,
        badges: Vec::new(),
        cost: None,
    }))
}

/// Usage and latency of each LLM response, from `base_state.json`'s `stats`.
fn response_stats(state: &Value) -> HashMap<String, (Option<Usage>, Option<i64>)> {
    let mut out: HashMap<String, (Option<Usage>, Option<i64>)> = HashMap::new();
    let Some(metrics) = state
        .get("stats")
        .and_then(|s| s.get("usage_to_metrics"))
        .and_then(Value::as_object)
    else {
        return out;
    };
    for m in metrics.values() {
        for u in m.get("token_usages").and_then(Value::as_array).into_iter().flatten() {
            if let Some(rid) = str_of(u, "response_id").filter(|s| !s.is_empty()) {
                out.entry(rid.to_string()).or_default().0 = usage_of(u);
            }
        }
        for l in m
            .get("response_latencies")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let secs = l
                .get("latency")
                .and_then(Value::as_f64)
                .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e9);
            if let (Some(rid), Some(s)) = (str_of(l, "response_id").filter(|s| !s.is_empty()), secs) {
                out.entry(rid.to_string()).or_default().1 = Some((s * 1e9) as i64);
            }
        }
    }
    out
}

/// What the LLM calls of a V1 conversation share.
struct Llm {
    run: u32,
    /// Usage and latency by response id.
    stats: HashMap<String, (Option<Usage>, Option<i64>)>,
    model: Option<String>,
}

/// The LLM call of response `rid`, made when its first event (an action, or the agent's
/// reply) arrives.
fn llm_call(
    t: &mut Trace,
    llms: &mut HashMap<String, u32>,
    llm: &Llm,
    rid: &str,
    ev: &Value,
    ts: Option<i64>,
    origin: Origin,
) -> u32 {
    if let Some(&l) = llms.get(rid) {
        return l;
    }
    let (usage, latency) = llm.stats.get(rid).cloned().unwrap_or_default();
    // The response arrived before its first event was recorded.
    let start = match (ts, latency) {
        (Some(t), Some(d)) => Some(t.saturating_sub(d)),
        _ => ts,
    };
    let l = t.add(NewEvent {
        id: Some(rid),
        parent: Parent::Index(llm.run),
        start,
        duration: latency,
        status: Status::Ok,
        usage,
        model: llm.model.as_deref(),
        origin,
        payload: v1_ref(EventKind::LlmCall, ev, origin),
        ..NewEvent::new(EventKind::LlmCall, llm.model.as_deref().unwrap_or("llm"))
    });
    llms.insert(rid.to_string(), l);
    l
}

/// A V1 event's payload: left in its file, or held when it has none (an origin of length 0:
/// past the u16 of origins).
fn v1_ref(kind: EventKind, ev: &Value, origin: Origin) -> PayloadRef {
    if origin.len > 0 {
        PayloadRef::Deferred
    } else {
        let p = v1_payload(kind, ev);
        if p == Payload::default() {
            PayloadRef::None
        } else {
            PayloadRef::inline(p)
        }
    }
}

fn load_v1(dir: &Path) -> Result<Trace, LoadError> {
    let state_path = dir.join(BASE_STATE);
    let mut diagnostics = Vec::new();
    let state = match read_json_file(&state_path, EVENT_LIMIT) {
        Ok(v) => v,
        Err(e) => {
            // The events still load: the state only adds status, model and tokens.
            diagnostics.push(Diagnostic::error(
                &state_path,
                None,
                format!("{e}; status, model and tokens unknown"),
            ));
            Value::Null
        }
    };
    let name = stem(dir);
    let exec = str_of(&state, "execution_status");
    let status = v1_status(exec);
    let model = state
        .get("agent")
        .and_then(|a| a.get("llm"))
        .and_then(|l| str_of(l, "model"))
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let mut attributes = vec![("openhands".to_string(), json!("V1 conversation"))];
    if let Some(e) = exec {
        attributes.push(("execution_status".to_string(), json!(e)));
    }
    if let Some(w) = state.get("workspace").and_then(|w| field(w, "working_dir")) {
        attributes.push(("working_dir".to_string(), w.clone()));
    }
    let mut t = Trace::new(RunMeta {
        id: str_of(&state, "id").map(str::to_owned).unwrap_or_else(|| name.clone()),
        name: Some(name.clone()),
        format: "openhands",
        source: dir.to_path_buf(),
        status,
        model: model.clone(),
        attributes,
        ..Default::default()
    });
    t.diagnostics = diagnostics;
    let state_file = t.add_file(&state_path);
    let run = t.add(NewEvent {
        status: status.event_status(),
        model: model.as_deref(),
        origin: Origin {
            file: state_file,
            line: 0,
            offset: 0,
            len: 0,
        },
        payload: PayloadRef::inline(Payload {
            error: (status == RunStatus::Error).then(|| ErrorInfo {
                kind: Some("execution_status".into()),
                message: format!("the conversation ended with execution status {:?}", exec.unwrap_or("")),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..NewEvent::new(EventKind::Run, &name)
    });
    let llm = Llm {
        run,
        stats: response_stats(&state),
        model: model.clone(),
    };
    let mut llms: HashMap<String, u32> = HashMap::new();
    let mut calls: HashMap<String, u32> = HashMap::new();
    let mut task = None;
    let mut raw_limit_said = false;
    let events_dir = dir.join(EVENTS);
    for (_, path) in event_files(&events_dir)? {
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let ev = match read_json_file(&path, EVENT_LIMIT) {
            Ok(v) if v.is_object() => v,
            Ok(_) => {
                t.diagnostics
                    .push(Diagnostic::error(&path, None, "not a JSON object; skipped"));
                continue;
            }
            Err(e) => {
                t.diagnostics
                    .push(Diagnostic::error(&path, None, format!("{e}; skipped")));
                continue;
            }
        };
        // Each event file is new: pushed, not looked up (`add_file` searches the list, which
        // made 20,000 events take a minute). Origins index files by u16: past that, an
        // event has no raw record (said once).
        let origin = if t.files.len() < u16::MAX as usize {
            t.files.push(path.clone());
            Origin {
                file: (t.files.len() - 1) as u16,
                line: 0,
                offset: 0,
                len: len.min(u32::MAX as u64) as u32,
            }
        } else {
            if !raw_limit_said {
                raw_limit_said = true;
                t.diagnostics.push(Diagnostic::warning(
                    &path,
                    None,
                    format!(
                        "more than {} event files: this and later events show no raw record",
                        u16::MAX - 1
                    ),
                ));
            }
            Origin {
                file: state_file,
                ..Origin::default()
            }
        };
        let ts = ts_of(&ev);
        let id = str_of(&ev, "id");
        let kind = str_of(&ev, "kind").unwrap_or("");
        // Left in its file when the event has one (the origin reads the whole file).
        let payload = |k: EventKind| v1_ref(k, &ev, origin);
        let source = str_of(&ev, "source").unwrap_or("");
        match kind {
            "SystemPromptEvent" => {
                t.add(NewEvent {
                    id,
                    parent: Parent::Index(run),
                    start: ts,
                    status: Status::Ok,
                    origin,
                    payload: payload(EventKind::Message(Role::System)),
                    ..NewEvent::new(EventKind::Message(Role::System), "system")
                });
            }
            "MessageEvent" => {
                let msg = ev.get("llm_message").unwrap_or(&Value::Null);
                let role = str_of(msg, "role").unwrap_or(source);
                let text = msg.get("content").and_then(text_of).map(Value::String);
                if role == "user" && task.is_none() {
                    task = text.clone();
                }
                // An agent's reply is the output of the LLM response it came in.
                let parent = match str_of(&ev, "llm_response_id").filter(|s| !s.is_empty()) {
                    Some(rid) if source == "agent" => llm_call(&mut t, &mut llms, &llm, rid, &ev, ts, origin),
                    _ => run,
                };
                t.add(NewEvent {
                    id,
                    parent: Parent::Index(parent),
                    start: ts,
                    status: Status::Ok,
                    origin,
                    payload: payload(EventKind::Message(Role::parse(role))),
                    ..NewEvent::new(EventKind::Message(Role::parse(role)), role)
                });
            }
            "ActionEvent" => {
                let parent = match str_of(&ev, "llm_response_id").filter(|s| !s.is_empty()) {
                    Some(rid) => llm_call(&mut t, &mut llms, &llm, rid, &ev, ts, origin),
                    None => run,
                };
                let tool = str_of(&ev, "tool_name").filter(|s| !s.is_empty()).unwrap_or("?");
                let tool_call_id = str_of(&ev, "tool_call_id");
                let c = t.add(NewEvent {
                    id: tool_call_id.or(id),
                    parent: Parent::Index(parent),
                    start: ts,
                    status: Status::Pending,
                    origin,
                    payload: payload(EventKind::ToolCall),
                    ..NewEvent::new(EventKind::ToolCall, tool)
                });
                if let Some(tc) = tool_call_id {
                    calls.insert(tc.to_string(), c);
                }
                if let Some(id) = id {
                    calls.insert(id.to_string(), c);
                }
            }
            "ObservationEvent" | "AgentErrorEvent" | "UserRejectObservation" => {
                let call = str_of(&ev, "tool_call_id")
                    .and_then(|tc| calls.get(tc))
                    .or_else(|| str_of(&ev, "action_id").and_then(|a| calls.get(a)))
                    .copied();
                let failed = v1_outcome(&ev).error.is_some();
                match call {
                    Some(c) => {
                        {
                            let e = t.event_mut(c);
                            e.status = if failed { Status::Error } else { Status::Ok };
                            if let (Some(s), Some(end)) = (e.start.get(), ts)
                                && end >= s
                            {
                                e.duration = end.checked_sub(s).into();
                            }
                            e.origin2 = Some(Box::new(origin));
                        }
                        // The output is read from the observation's file when shown, unless
                        // one of the two has no file of its own (past the u16 of origins):
                        // then the payload is held, as it was before.
                        if origin.len == 0 || !matches!(t.event(c).payload, PayloadRef::Deferred) {
                            let mut p = match &t.event(c).payload {
                                PayloadRef::Deferred => super::payload(&t, t.event(c)),
                                _ => std::mem::take(t.payload_mut(c)),
                            };
                            v1_outcome(&ev).apply(&mut p);
                            t.event_mut(c).payload = PayloadRef::inline(p);
                        }
                    }
                    None => {
                        t.diagnostics.push(Diagnostic::warning(
                            &path,
                            None,
                            format!(
                                "{kind} for a tool call no ActionEvent made ({})",
                                str_of(&ev, "tool_call_id").unwrap_or("no tool_call_id")
                            ),
                        ));
                        t.add(NewEvent {
                            id,
                            parent: Parent::Index(run),
                            start: ts,
                            status: if failed { Status::Error } else { Status::Ok },
                            origin,
                            payload: payload(EventKind::Other),
                            ..NewEvent::new(if failed { EventKind::Error } else { EventKind::Other }, kind)
                        });
                    }
                }
            }
            _ => {
                // State updates, condensations, pauses, tokens: shown by kind, not interpreted.
                let label = if kind.is_empty() { "event" } else { kind };
                let state_like = kind.contains("State") || kind == "PauseEvent";
                t.add(NewEvent {
                    id,
                    parent: Parent::Index(run),
                    start: ts,
                    status: Status::Ok,
                    origin,
                    ..NewEvent::new(if state_like { EventKind::State } else { EventKind::Other }, label)
                });
            }
        }
    }
    if let Some(task) = task {
        t.payload_mut(run).input = Some(task);
    }
    t.finalize();
    Ok(t)
}

#[cfg(test)]
#[path = "openhands_oracle.rs"]
mod oracle;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::{decoded, fixture, outline};
    use proptest::prelude::*;

    /// Every fixture and sample (V0 files, V1 folders) loads as the old reader loaded it,
    /// each payload decoded from its record(s) equal to the payload the old reader held.
    #[test]
    fn payloads_read_from_disk_equal_the_held_ones() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut sources = vec![
            root.join("tests/fixtures/openhands/v0.json"),
            root.join("tests/fixtures/openhands/v0-damaged.json"),
            root.join("tests/fixtures/openhands/conversation"),
        ];
        for e in std::fs::read_dir(root.join("sample-traces/openhands/conversations")).unwrap() {
            sources.push(e.unwrap().path());
        }
        for f in &sources {
            let mut new = OpenHands.load(f).unwrap();
            let old = super::oracle::load(f).unwrap();
            // The streamed V0 reader names the line of a damaged event; the old one could not.
            for d in &mut new.traces[0].diagnostics {
                d.line = None;
            }
            let new = &new.traces[0];
            let deferred = new
                .events
                .iter()
                .filter(|e| matches!(e.payload, PayloadRef::Deferred))
                .count();
            assert!(deferred > 0, "{}", f.display());
            assert!(
                new.events
                    .iter()
                    .skip(1)
                    .all(|e| !matches!(e.payload, PayloadRef::Inline(_))),
                "{}",
                f.display()
            );
            assert_eq!(decoded(new), decoded(&old), "{}", f.display());
        }
    }

    /// Past the u16 of origins a V1 event has no file of its own: its payload is held.
    #[test]
    fn v1_payloads_without_a_file_are_held() {
        let ev = json!({"kind": "ActionEvent", "tool_call": {"arguments": "{\"x\": 1}"}});
        assert!(matches!(
            v1_ref(EventKind::ToolCall, &ev, Origin::default()),
            PayloadRef::Inline(_)
        ));
        let o = Origin {
            len: 9,
            ..Default::default()
        };
        assert!(matches!(v1_ref(EventKind::ToolCall, &ev, o), PayloadRef::Deferred));
    }

    fn load(name: &str) -> Trace {
        let mut l = OpenHands.load(&fixture("openhands", name)).unwrap();
        assert_eq!(l.traces.len(), 1);
        l.traces.remove(0)
    }

    #[test]
    fn detection() {
        let v0 = br#"[{"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}}]"#;
        assert_eq!(
            OpenHands.detect(&Probe::from_bytes(Path::new("t.json"), v0.to_vec(), true)),
            95
        );
        // Broken after its first element: ours, and the load says where (see below).
        let broken = br#"[{"id": 0, "source": "user", "action": "message"}, {"id": 1, "x": tru}]"#;
        assert_eq!(
            OpenHands.detect(&Probe::from_bytes(Path::new("t.json"), broken.to_vec(), true)),
            95
        );
        let chat = br#"[{"role": "user", "content": "hi"}]"#;
        assert_eq!(
            OpenHands.detect(&Probe::from_bytes(Path::new("t.json"), chat.to_vec(), true)),
            0
        );
        let cut = br#"[{"id": 0, "timestamp": "2025-01-01T00:00:00", "source": "user", "action": "message", "args": {"content": "aaaa"#;
        assert_eq!(
            OpenHands.detect(&Probe::from_bytes(Path::new("t.json"), cut.to_vec(), false)),
            90
        );
        let dir = fixture("openhands", "conversation");
        assert!(OpenHands.is_run_dir(&dir));
        assert_eq!(OpenHands.detect(&Probe::open(&dir).unwrap()), 100);
        assert!(!OpenHands.is_run_dir(&fixture("openhands", "")));
    }

    #[test]
    fn v0_agent_actions_are_tool_calls_joined_by_cause() {
        let t = load("v0.json");
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.model.as_deref(), Some("claude-x"));
        // run, think and finish; not the messages, the recall or the environment's actions.
        assert_eq!(t.counts().tool_calls, 3);
        assert_eq!(t.counts().llm_calls, 2);
        assert_eq!(t.counts().tokens, 120 + 60);
        // LiteLLM's prompt_tokens 100 include 60 read from and 10 written to the cache; the
        // 20 completion tokens include 5 of reasoning. The recorded total stays.
        let r1 = t
            .events
            .iter()
            .find_map(|e| e.usage.get().filter(|u| u.reasoning.is_some()));
        let want = Usage {
            input: Some(30),
            cache_read: Some(60),
            cache_write: Some(10),
            output: Some(15),
            reasoning: Some(5),
            total: Some(120),
            ..Default::default()
        };
        assert_eq!(r1, Some(want));
        let run = t.find("3").unwrap();
        assert_eq!(t.event(run).status, Status::Error); // success: false
        assert_eq!(t.event(run).duration, Some(500_000_000));
        assert_eq!(t.name(run), "execute_bash");
        let think = t.find("5").unwrap();
        assert_eq!(t.event(think).status, Status::Ok);
        // The think and finish actions share one LLM response.
        assert_eq!(t.event(think).parent, t.event(t.find("7").unwrap()).parent);
        let p = crate::formats::payload(&t, t.event(t.roots[0]));
        assert_eq!(p.input, Some(json!("Count the files")));
        assert!(outline(&t).contains(&"  state agent state: finished".to_string()));
    }

    #[test]
    fn v0_damaged_events_become_diagnostics() {
        let t = load("v0-damaged.json");
        assert_eq!(t.meta.status, RunStatus::Unknown);
        assert_eq!(t.counts().tool_calls, 2);
        let msgs: Vec<&str> = t.diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(msgs.len(), 3, "{msgs:?}");
        assert!(msgs[0].contains("event [1] is not an object"));
        assert!(msgs[1].contains("neither `action` nor `observation`"));
        assert!(msgs[2].contains("caused by event 99"));
        // Each names the line its element starts on.
        let lines: Vec<Option<u64>> = t.diagnostics.iter().map(|d| d.line).collect();
        assert_eq!(lines, [Some(12), Some(23), Some(47)]);
        // A call whose observation never came stays pending.
        assert_eq!(t.event(t.find("2").unwrap()).status, Status::Pending);
    }

    #[test]
    fn v1_conversation_folder() {
        let t = load("conversation");
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.model.as_deref(), Some("openai/test-model"));
        assert_eq!(t.counts().tool_calls, 3);
        assert_eq!(t.counts().llm_calls, 2);
        assert_eq!(t.counts().tokens, 330 + 440);
        // r1: 300 prompt of which 100 read and 50 written to the cache, 30 completion of
        // which 10 reasoning.
        let r1 = t
            .events
            .iter()
            .find_map(|e| e.usage.get().filter(|u| u.reasoning.is_some()));
        let want = Usage {
            input: Some(150),
            cache_read: Some(100),
            cache_write: Some(50),
            output: Some(20),
            reasoning: Some(10),
            ..Default::default()
        };
        assert_eq!(r1, Some(want));
        let bad = t.find("call_2").unwrap();
        assert_eq!(t.event(bad).status, Status::Error);
        let p = crate::formats::payload(&t, t.event(bad));
        assert!(p.error.unwrap().message.contains("does not exist"));
        let finish = t.find("call_3").unwrap();
        assert_eq!(t.name(finish), "finish");
        assert_eq!(t.event(finish).status, Status::Ok);
        let llm = t.event(t.event(t.find("call_1").unwrap()).parent);
        assert_eq!(llm.duration, Some(250_000_000));
        // The agent's reply sits under the response it came in, beside that response's finish.
        let reply = t.find("e11").unwrap();
        assert_eq!(t.event(reply).kind, EventKind::Message(Role::Assistant));
        assert_eq!(t.event(reply).parent, t.event(finish).parent);
        // The unreadable event file and the orphan observation are said; the markers are not.
        let msgs: Vec<&str> = t.diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        assert!(t.diagnostics.iter().any(|d| d.path.ends_with("event-00006-bad.json")));
        assert!(msgs.iter().any(|m| m.contains("call_zz")));
        let p = crate::formats::payload(&t, t.event(t.roots[0]));
        assert_eq!(p.input, Some(json!("List the workspace")));
    }

    #[test]
    fn v1_summary_reads_the_state_and_the_first_and_last_events_only() {
        let s = OpenHands
            .summarize(&fixture("openhands", "conversation"))
            .unwrap()
            .remove(0);
        assert_eq!(s.id, "0f9c4e2a-1111-4222-8333-944455556666");
        assert_eq!(s.status, RunStatus::Ok);
        assert_eq!((s.llm_calls, s.tokens), (Some(2), Some(330 + 440)));
        assert_eq!(s.duration, Some(2_200_000_000));
        assert_eq!(s.tool_calls, None);
        // A V0 file is loaded.
        let s = OpenHands.summarize(&fixture("openhands", "v0.json")).unwrap().remove(0);
        assert_eq!(s.tool_calls, Some(3));
    }

    #[test]
    fn v1_folder_without_state_still_loads_its_events() {
        let d = tempfile::tempdir().unwrap();
        let conv = d.path().join("abc");
        std::fs::create_dir_all(conv.join("events")).unwrap();
        std::fs::write(conv.join("base_state.json"), b"{ cut").unwrap();
        std::fs::write(
            conv.join("events/event-00000-x.json"),
            br#"{"id": "a", "kind": "ActionEvent", "source": "agent", "tool_name": "terminal", "tool_call_id": "c1", "action": {"command": "ls"}}"#,
        )
        .unwrap();
        let t = OpenHands.load(&conv).unwrap().traces.remove(0);
        assert_eq!(t.counts().tool_calls, 1);
        assert_eq!(t.meta.status, RunStatus::Unknown);
        assert!(t.diagnostics[0].message.contains("status, model and tokens unknown"));
    }

    /// An element that is not JSON is skipped with its line; a document cut short keeps what
    /// came before the cut, and says where; one with no element at all is refused.
    #[test]
    fn broken_v0_documents_keep_what_they_can() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.json");
        let ok = r#"{"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}}"#;
        std::fs::write(&p, format!("[\n{ok},\n{{\"id\": 1, \"x\": tru}},\n{ok}\n]")).unwrap();
        let t = OpenHands.load(&p).unwrap().traces.remove(0);
        assert_eq!(t.counts().events, 3);
        assert_eq!(t.diagnostics.len(), 1, "{:?}", t.diagnostics);
        assert_eq!(t.diagnostics[0].line, Some(3));
        assert!(
            t.diagnostics[0].message.starts_with("event [1]: "),
            "{}",
            t.diagnostics[0].message
        );

        std::fs::write(&p, format!("[\n{ok},\n{ok},\n{{\"id\": 2, ")).unwrap();
        let t = OpenHands.load(&p).unwrap().traces.remove(0);
        assert_eq!(t.counts().events, 3);
        assert_eq!(t.diagnostics.len(), 1, "{:?}", t.diagnostics);
        assert!(t.diagnostics[0].line.is_some());

        std::fs::write(&p, "[\n  ").unwrap();
        assert!(matches!(OpenHands.load(&p), Err(LoadError::Invalid { .. })));
        std::fs::write(&p, "[]").unwrap();
        assert_eq!(OpenHands.load(&p).unwrap().traces[0].counts().events, 1);
    }

    /// A trajectory whose elements cross the reader's chunks loads as when it is read whole.
    #[test]
    fn v0_streams_across_chunks() {
        let f = fixture("openhands", "v0.json");
        let whole = load("v0.json");
        for chunk in [1, 7, 64, 4096] {
            let mut v0 = V0::new(&f, None);
            let doc = Document {
                chunk,
                ..Document::new(&[&[]])
            };
            doc.read_from(&mut std::fs::File::open(&f).unwrap(), &mut v0).unwrap();
            assert_eq!(decoded(&v0.finish()), decoded(&whole), "chunk {chunk}");
        }
    }

    /// A JSON value for a V0 element's fields: scalars of the words the reader looks for, and
    /// the objects it looks into.
    fn v0_value() -> impl Strategy<Value = String> {
        let word = prop::sample::select(vec![
            "message",
            "user",
            "agent",
            "run",
            "finish",
            "think",
            "system",
            "recall",
            "agent_state_changed",
            "error",
            "null",
            "",
            "r1",
            "c1",
            "7",
            "2025-03-01T10:00:00",
            "gpt-x",
        ]);
        let scalar = prop_oneof![
            Just("null".to_string()),
            any::<bool>().prop_map(|b| b.to_string()),
            (-3i64..12).prop_map(|n| n.to_string()),
            Just("1.5".to_string()),
            Just("1e3".to_string()),
            word.prop_map(|w| format!("{w:?}")),
        ];
        let nested = scalar.clone().prop_recursive(3, 24, 5, |inner| {
            let key = prop::sample::select(vec![
                "id",
                "model",
                "usage",
                "prompt_tokens",
                "completion_tokens",
                "content",
                "agent_state",
                "function_name",
                "tool_call_id",
                "model_response",
                "x",
            ]);
            prop_oneof![
                prop::collection::vec((key, inner.clone()), 0..4).prop_map(|kv| {
                    let body: Vec<String> = kv.iter().map(|(k, v)| format!("{k:?}: {v}")).collect();
                    format!("{{{}}}", body.join(", "))
                }),
                prop::collection::vec(inner, 0..3).prop_map(|v| format!("[{}]", v.join(", "))),
            ]
        });
        // Mostly scalars, as a trajectory's fields mostly are.
        prop_oneof![3 => scalar, 2 => nested]
    }

    proptest! {
        // Cheap cases, and a field must meet the kind it matters to: many of them.
        #![proptest_config(ProptestConfig::with_cases(4096))]
        /// The typed read of an element gives the facts its parsed value gives, or gives way
        /// to it (fields given twice, arrays, anything it cannot read).
        #[test]
        fn fast_facts_are_the_value_facts(
            fields in prop::collection::vec((prop::sample::select(vec![
                "id", "timestamp", "message", "args", "extras", "cause", "success", "tool_call_metadata",
                "content", "other", "action", "observation", "source",
            ]), v0_value()), 0..7),
            kind in prop::sample::select(vec!["action", "observation", "neither"]),
            word in prop::sample::select(vec!["run", "message", "finish", "error", "null", "agent_state_changed"]),
            source in prop::sample::select(vec!["agent", "user", "environment"]),
            array in prop::bool::weighted(0.1),
        ) {
            // Most elements are an action or an observation, as in a trajectory; the random
            // fields come after (a repeated key is then given twice).
            let mut fields = fields;
            if kind != "neither" {
                fields.insert(0, (kind, format!("{word:?}")));
                fields.insert(1, ("source", format!("{source:?}")));
            }
            let body: Vec<String> = fields.iter().map(|(k, v)| format!("{k:?}: {v}")).collect();
            let text = if array { format!("[{}]", fields.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>().join(", ")) }
                else { format!("{{{}}}", body.join(", ")) };
            let value: Value = serde_json::from_str(&text).unwrap();
            if let Some(f) = Facts::fast(text.as_bytes()) {
                prop_assert_eq!(f, Facts::of(&value), "{}", text);
            }
            // And every element, the typed read's or the value's, reads as the value does.
            prop_assert_eq!(Facts::read(text.as_bytes()).unwrap(), Facts::of(&value), "{}", text);
        }
    }

    /// The fast read is taken for plain elements (the proptest above would pass if it never were).
    #[test]
    fn fast_facts_read_plain_elements() {
        let e = br#"{"id": 3, "timestamp": "2025-03-01T10:00:00", "source": "agent", "action": "run",
            "args": {"command": "ls"}, "tool_call_metadata": {"function_name": "bash", "tool_call_id": "t1",
            "model_response": {"id": "r1", "model": "m", "usage": {"prompt_tokens": 5, "completion_tokens": 2},
            "choices": [{"message": {"content": "long"}}]}}}"#;
        let f = Facts::fast(e).expect("typed read");
        assert_eq!(f, Facts::of(&serde_json::from_slice(e).unwrap()));
        assert!(matches!(f.what, What::Action { response: Some(_), .. }));
        assert!(Facts::fast(br#"{"id": 1, "id": 2}"#).is_none());
        // The value keeps the last of a repeated key; so does the reader.
        assert_eq!(Facts::read(br#"{"id": 1, "id": 2}"#).unwrap().id.as_deref(), Some("2"));
        assert!(Facts::fast(br#"["run", "agent"]"#).is_none());
    }

    #[test]
    fn foreign_documents_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.json");
        std::fs::write(&p, br#"[{"role": "user", "content": "hi"}]"#).unwrap();
        assert!(matches!(OpenHands.load(&p), Err(LoadError::NotATrace { .. })));
        assert!(matches!(OpenHands.load(d.path()), Err(LoadError::NotATrace { .. })));
    }
}
