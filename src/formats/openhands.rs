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
//! - V1 events one a line (a JSONL of the objects a conversation folder keeps one a file, as
//!   the SDK's websocket streams them): one trace, named by the file; with no
//!   `base_state.json`, the status, model and usage come from the `ConversationStateUpdateEvent`s
//!   among them (`execution_status`, `stats`, a `full_state`).
//! - An evaluation's `output.jsonl` (`evaluation/utils/shared.py` `EvalOutput`, a line an
//!   instance: `instance_id`, `instruction`, `history`, `metrics`, `test_result`, `error`,
//!   `metadata`): a trace a line, named by its `instance_id`, its `history` read as a V0
//!   trajectory (the events of `event_to_dict`, or the old `[action, observation]` pairs), the
//!   patch (`test_result.git_patch`) as the run's output, `error` its failure. A damaged line
//!   is said with its line number; the other lines load.
//! - The resolver's output (`openhands/resolver` `ResolverOutput`: `issue`, `git_patch`,
//!   `history`, `success`, `result_explanation`, ...), a line each in `output.jsonl` or one
//!   pretty-printed JSON document: a trace an issue (`owner/repo#number`), the issue as the
//!   run's input, the patch as its output; `success: false` (the resolver's own verdict) or an
//!   `error` fails the run. Its history is `dataclasses.asdict` of each event: no id, source,
//!   cause or tool call metadata, so an observation answers the call before it, a command
//!   failed by its exit code, a message is the user's unless it waits for the user (the
//!   first is the task), and there are no LLM calls.
//!
//! Drift (formats/mod.rs): a V0 element with neither `action` nor `observation`, and a V1
//! event of a kind the SDK does not write ([`KNOWN_V1`]), are skipped quietly, counted (by
//! their `kind` / `type`), and shown as a generic event when they carry text. An element that
//! is not an object is a diagnostic. An unknown field is ignored.
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
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        "openhands"
    }
    fn describe(&self) -> &'static str {
        "OpenHands V0 trajectory (a JSON array of action/observation events), V1 conversation folder (~/.openhands/conversations/<id>/: base_state.json + events/) or V1 events one a line, evaluation or resolver output (output.jsonl)"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return if p.has_entry(BASE_STATE) && p.path.join(EVENTS).is_dir() {
                100
            } else {
                0
            };
        }
        if !p.is_list() {
            // An evaluation's or the resolver's output, or V1 events a line.
            return match object_shape(p) {
                Some(Objects::Outputs | Objects::V1Events) if p.first.is_some() => 95,
                Some(Objects::Output) if p.whole().is_some_and(|v| output_keys(|k| v.get(k).is_some())) => 95,
                // Too large for the head: by its first keys.
                Some(_) => 90,
                None => 0,
            };
        }
        if !(p.has_key("action") || p.has_key("observation")) {
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
    fn summarize(&self, path: &Path) -> Result<Option<Vec<Summary>>, LoadError> {
        if path.is_dir()
            && let Some(s) = summarize_v1(path)?
        {
            return Ok(Some(vec![s]));
        }
        Ok(None)
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
            .is_some_and(|(_, v)| v.as_str().is_some_and(|s| s.starts_with("V1 ")));
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
    if str_of(ev, "action").is_none() && str_of(ev, "observation").is_none() {
        return super::drift_payload(ev, &V0_ENVELOPE);
    }
    let message = field(ev, "message").cloned();
    if let Some(action) = str_of(ev, "action") {
        // A resolver's element has its arguments at the top.
        let args = match ev.get("args") {
            Some(a) => a.clone(),
            None if is_flat(ev) => without(ev, &["action"]),
            None => Value::Null,
        };
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

/// Fields every V0 event has, left out of a drift event's record.
const V0_ENVELOPE: [&str; 3] = ["id", "timestamp", "source"];

/// An object without some of its fields.
fn without(v: &Value, keys: &[&str]) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !keys.contains(&k.as_str()))
                .map(|(k, x)| (k.clone(), x.clone()))
                .collect(),
        ),
        other => other.clone(),
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
    let flat = is_flat(ev);
    let failed = if flat {
        flat_failed(ev)
    } else {
        obs == "error" || ev.get("success").and_then(Value::as_bool) == Some(false)
    };
    // A resolver's command says no more than its exit code.
    let code = flat
        .then(|| ev.get("exit_code").or_else(|| ev.get("metadata")?.get("exit_code")))
        .flatten()
        .and_then(Value::as_i64);
    let error = failed.then(|| ErrorInfo {
        kind: Some(obs.to_string()),
        message: content
            .as_ref()
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .or(message.as_ref().and_then(Value::as_str))
            .map_or_else(
                || match code {
                    Some(c) => format!("exit code {c}"),
                    None => "the observation reports a failure".to_string(),
                },
                str::to_owned,
            ),
        ..Default::default()
    });
    let mut extra = vec![("observation".to_string(), json!(obs))];
    let extras = match ev.get("extras") {
        Some(x) => x.clone(),
        None if flat => without(ev, &["observation", "content"]),
        None => Value::Null,
    };
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
        (_, k) if !KNOWN_V1.contains(&k) => super::drift_payload(ev, &V1_ENVELOPE),
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
    match whole::first_byte_of(path)? {
        Some(b'[') => return load_v0(path, watcher),
        Some(b'{') => {
            let p = Probe::open(path)?;
            // Told as detection tells it; a first line too long for the head (`--format`)
            // with a V1 event's envelope is read as V1 events.
            let envelope = ["id", "timestamp", "source"].iter().all(|k| p.has_key(k));
            match object_shape(&p).or(envelope.then_some(Objects::V1Events)) {
                Some(Objects::Outputs) => return load_output_lines(path),
                Some(Objects::Output) => return load_output_doc(path),
                Some(Objects::V1Events) => return load_v1_lines(path),
                None => {}
            }
        }
        _ => {}
    }
    // Not a list: read whole only to say what it is (JSON that is no trajectory, or not JSON).
    let buf = whole::read_checked(path, LIMIT)?;
    serde_json::from_slice::<Value>(&buf).map_err(|e| whole::invalid(path, &e))?;
    Err(LoadError::NotATrace {
        path: path.to_path_buf(),
        reason: "not a JSON array of OpenHands action/observation events, nor OpenHands output or V1 events".into(),
        tried: "openhands".into(),
    })
}

/// What a file of JSON objects holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Objects {
    /// An evaluation's or the resolver's `output.jsonl`: an output a line.
    Outputs,
    /// One output as a JSON document (pretty-printed).
    Output,
    /// V1 events, one a line.
    V1Events,
}

/// Whether an object's keys (`has`) are an evaluation's output (`EvalOutput`: `instance_id`,
/// `history`, `test_result`, ...) or the resolver's (`ResolverOutput`: `issue`, `history`,
/// `git_patch`, ...).
fn output_keys(has: impl Fn(&str) -> bool) -> bool {
    has("history")
        && ((has("instance_id")
            && ["test_result", "instruction", "metadata", "metrics"]
                .iter()
                .any(|k| has(k)))
            || (has("issue") && ["git_patch", "issue_type", "base_commit"].iter().any(|k| has(k))))
}

/// A V1 event of a kind the SDK writes, with the envelope every event has.
fn is_v1_event(v: &Value) -> bool {
    str_of(v, "kind").is_some_and(|k| KNOWN_V1.contains(&k))
        && ["id", "timestamp", "source"]
            .iter()
            .all(|k| v.get(*k).is_some_and(Value::is_string))
}

/// What a file that starts with an object holds, from its head (None: none of ours). A
/// pretty-printed document starts with `{` on a line of its own; a JSONL file with a whole
/// object (whose first line may be too long for the head: then its first keys say).
fn object_shape(p: &Probe) -> Option<Objects> {
    let first_line = p
        .head
        .split(|&b| b == b'\n')
        .find(|l| !l.iter().all(u8::is_ascii_whitespace))?;
    if first_line.trim_ascii() == b"{" {
        return output_keys(|k| p.has_key(k)).then_some(Objects::Output);
    }
    match &p.first {
        Some(v) if v.is_object() => {
            if output_keys(|k| v.get(k).is_some()) {
                Some(Objects::Outputs)
            } else {
                v1_lines(p).then_some(Objects::V1Events)
            }
        }
        Some(_) => None,
        // A first line too long for the head: its first keys (a V1 event's `kind` comes
        // last, so a V1 file is told by its complete lines only).
        None => output_keys(|k| p.has_key(k)).then_some(Objects::Outputs),
    }
}

/// Whether the first lines are V1 events: each with the envelope of one (an event of a
/// kind a newer SDK writes among them), one at least of a kind the SDK writes.
fn v1_lines(p: &Probe) -> bool {
    let envelope = |v: &Value| {
        v.get("kind").is_some_and(Value::is_string)
            && ["id", "timestamp", "source"]
                .iter()
                .all(|k| v.get(*k).is_some_and(Value::is_string))
    };
    // The first line alone rules out the other formats' files (more lines are parsed only
    // for a file that may be ours).
    if !p.first.as_ref().is_some_and(envelope) {
        return false;
    }
    let lines: Vec<&Value> = p.lines().take(5).collect();
    lines.iter().all(|v| envelope(v)) && lines.iter().any(|v| is_v1_event(v))
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

/// An evaluation's or the resolver's `output.jsonl`: a trace a line, its history read as a
/// V0 trajectory. A damaged line is said with its line; the others load.
fn load_output_lines(path: &Path) -> Result<Loaded, LoadError> {
    struct Lines {
        path: PathBuf,
        ids: std::collections::HashSet<String>,
    }
    impl super::jsonl::LineParser for Lines {
        fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut super::jsonl::Sink) {
            match output(&self.path, line, line.len() as u64, Some(loc)) {
                Ok((mut t, None)) => {
                    // An instance run twice (a retry appended) keeps both, told apart.
                    let base = t.meta.id.clone();
                    let mut k = 2;
                    while !self.ids.insert(t.meta.id.clone()) {
                        t.meta.id = format!("{base}#{k}");
                        k += 1;
                    }
                    sink.push_trace(t);
                }
                Ok((_, Some((_, message)))) | Err(message) => {
                    sink.error(loc.line, format!("this output is damaged and not read: {message}"))
                }
            }
        }
    }
    let mut parser = Lines {
        path: path.to_path_buf(),
        ids: Default::default(),
    };
    let mut sink = super::jsonl::Sink::new(path);
    super::jsonl::load_lines(path, &mut parser, &mut sink)?;
    sink.finish("OpenHands output")
}

/// One output as a JSON document (an `output.jsonl` line saved pretty-printed): streamed as
/// a V0 trajectory is.
fn load_output_doc(path: &Path) -> Result<Loaded, LoadError> {
    let f = super::open_regular(path).map_err(|e| LoadError::io(path, e))?;
    let size = f.metadata().map_or(u64::MAX, |m| m.len());
    let (mut t, problem) = output(path, f, size, None).map_err(|m| LoadError::invalid(path, m))?;
    if let Some((line, message)) = problem {
        t.diagnostics.push(Diagnostic::error(path, Some(line), message));
    }
    Ok(Loaded { traces: vec![t] })
}

/// What an output's stream leaves: its history folded, its other values.
struct OutputSink<'w> {
    v0: V0<'w>,
    /// The line the output is on (JSONL), which its elements' places are within.
    at: Option<LineLoc>,
    others: Vec<(String, Value)>,
    problem: Option<(u64, String)>,
}

impl OutputSink<'_> {
    /// A place in the output as a place in the file.
    fn place(&self, loc: LineLoc) -> LineLoc {
        match self.at {
            Some(at) => LineLoc {
                line: at.line + loc.line.saturating_sub(1),
                offset: at.offset + loc.offset,
                len: loc.len,
            },
            None => loc,
        }
    }
}

impl DocSink for OutputSink<'_> {
    fn elements(&mut self, batch: &[(&[u8], LineLoc)]) {
        let placed: Vec<(&[u8], LineLoc)> = batch.iter().map(|(b, loc)| (*b, self.place(*loc))).collect();
        self.v0.fold(&placed);
    }

    fn other(&mut self, key: &str, value: &[u8], loc: LineLoc) {
        match serde_json::from_slice::<Value>(value) {
            Ok(v) => self.others.push((key.to_string(), v)),
            Err(e) => {
                let line = self.place(loc).line;
                self.problem
                    .get_or_insert((line, format!("{key:?}: {}", super::jsonl::json_error(&e))));
            }
        }
    }

    fn problem(&mut self, line: u64, message: String) {
        let line = self
            .place(LineLoc {
                line,
                offset: 0,
                len: 0,
            })
            .line;
        self.problem.get_or_insert((line.max(1), message));
    }
}

/// One evaluation or resolver output (a line of `output.jsonl` at `at`, or a whole file): its
/// trace, and the first thing wrong with it that the stream could not read past (the
/// elements before it are in the trace). Err: not an output at all.
fn output<R: std::io::Read + Send>(
    path: &Path,
    mut r: R,
    size: u64,
    at: Option<LineLoc>,
) -> Result<(Trace, Option<(u64, String)>), String> {
    let mut v0 = V0::new(path, None);
    v0.embedded = true;
    v0.lined = at.is_some();
    let mut sink = OutputSink {
        v0,
        at,
        others: Vec::new(),
        problem: None,
    };
    let doc = Document {
        // Buffers of the output's size, not two chunks of 4 MiB a line.
        chunk: usize::try_from(size.saturating_add(1))
            .map_or(super::document::CHUNK, |n| n.min(super::document::CHUNK)),
        ..Document::new(&[&["history"]])
    };
    let scanned = doc.read_from(&mut r, &mut sink).map_err(|e| e.to_string())?;
    if scanned.top != super::document::Top::Object {
        return Err(sink.problem.map_or_else(|| "not a JSON object".to_string(), |(_, m)| m));
    }
    let get = |k: &str| sink.others.iter().find(|(key, _)| key == k).map(|(_, v)| v);
    let resolver = get("issue").is_some_and(Value::is_object);
    if !resolver && get("instance_id").is_none() {
        return Err("neither an evaluation output (`instance_id`) nor a resolver output (`issue`)".into());
    }
    let mut t = sink.v0.finish();
    let text = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
    };
    let error = text(get("error"));
    let mut attributes = Vec::new();
    let mut extra: Vec<(String, Value)> = Vec::new();
    let (id, name, input, output);
    if resolver {
        let issue = get("issue").unwrap_or(&Value::Null);
        let number = issue.get("number").map(|n| match n {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        let repo = match (str_of(issue, "owner"), str_of(issue, "repo")) {
            (Some(o), Some(r)) => format!("{o}/{r}"),
            (None, Some(r)) => r.to_string(),
            _ => String::new(),
        };
        id = format!("{repo}#{}", number.as_deref().unwrap_or("?"));
        let title = str_of(issue, "title").unwrap_or("");
        name = if title.is_empty() {
            id.clone()
        } else {
            format!("{id} {title}")
        };
        let body = str_of(issue, "body").unwrap_or("");
        input = Some(Value::String(
            [title, body]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join("\n\n"),
        ));
        output = get("git_patch").filter(|p| text(Some(p)).is_some()).cloned();
        attributes.push(("openhands".to_string(), json!("resolver output")));
        for k in ["issue_type", "success", "base_commit"] {
            if let Some(v) = get(k).filter(|v| !v.is_null()) {
                attributes.push((k.to_string(), v.clone()));
            }
        }
        extra.push(("issue".to_string(), issue.clone()));
        for k in ["result_explanation", "comment_success"] {
            if let Some(v) = get(k).filter(|v| !v.is_null()) {
                extra.push((k.to_string(), v.clone()));
            }
        }
    } else {
        id = match get("instance_id") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        name = id.clone();
        input = text(get("instruction")).map(Value::String);
        let test_result = get("test_result").filter(|v| !v.is_null());
        output = test_result
            .and_then(|r| r.get("git_patch"))
            .filter(|p| text(Some(p)).is_some())
            .cloned();
        // What the benchmark kept beside the patch (a verdict, the final answer), if any.
        let rest = test_result.map(|r| without(r, &["git_patch"]));
        if let Some(r) = rest.filter(|r| r.as_object().is_none_or(|o| !o.is_empty())) {
            extra.push(("test_result".to_string(), r));
        }
        attributes.push(("openhands".to_string(), json!("evaluation output")));
        let meta = get("metadata");
        for k in ["agent_class", "dataset", "max_iterations"] {
            if let Some(v) = meta.and_then(|m| field(m, k)) {
                attributes.push((k.to_string(), v.clone()));
            }
        }
        if t.meta.model.is_none() {
            t.meta.model = meta
                .and_then(|m| m.get("llm_config"))
                .and_then(|c| str_of(c, "model"))
                .filter(|s| !s.is_empty())
                .map(str::to_owned);
        }
    }
    if let Some(c) = get("metrics").and_then(|m| field(m, "accumulated_cost")) {
        attributes.push(("accumulated_cost".to_string(), c.clone()));
    }
    // The trajectory's own: its last agent state, if any.
    attributes.extend(t.meta.attributes.drain(..).skip(1));
    t.meta.attributes = attributes;
    t.meta.id = id;
    t.meta.name = Some(name.clone());
    let failed = match (&error, resolver) {
        (Some(e), _) => Some(ErrorInfo {
            kind: Some("error".into()),
            message: e.clone(),
            ..Default::default()
        }),
        // The resolver's own verdict: the issue was not resolved.
        (None, true) if get("success").and_then(Value::as_bool) == Some(false) => Some(ErrorInfo {
            kind: Some("success".into()),
            message: text(get("result_explanation")).unwrap_or_else(|| "the resolver did not resolve the issue".into()),
            ..Default::default()
        }),
        _ => None,
    };
    if failed.is_some() {
        t.meta.status = RunStatus::Error;
    } else if resolver && get("success").and_then(Value::as_bool) == Some(true) {
        t.meta.status = RunStatus::Ok;
    }
    let run = t.roots[0];
    let status = t.meta.status.event_status();
    let name_ref = t.strings.intern(&name);
    {
        let e = t.event_mut(run);
        e.status = status;
        e.name = name_ref;
    }
    let p = t.payload_mut(run);
    if input.is_some() {
        p.input = input;
    }
    p.output = output;
    p.error = failed;
    for (k, v) in extra {
        p.set_extra(&k, v);
    }
    Ok((t, sink.problem))
}

/// OpenHands V1 events written one a line (the objects a conversation folder keeps one a
/// file): one trace. With no `base_state.json`, the status, model and usage come from the
/// state updates among the events (`execution_status`, a `full_state`).
fn load_v1_lines(path: &Path) -> Result<Loaded, LoadError> {
    struct Lines {
        path: PathBuf,
        fold: Option<V1>,
        /// The last execution status, model and stats the state updates gave.
        exec: Option<String>,
        model: Option<String>,
        stats: Option<Value>,
    }
    impl super::jsonl::LineParser for Lines {
        fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut super::jsonl::Sink) {
            let ev = match serde_json::from_slice::<Value>(line) {
                Ok(v) if v.is_object() => v,
                Ok(_) => return sink.error(loc.line, "not a JSON object; skipped"),
                Err(e) => return sink.error(loc.line, format!("{}; skipped", super::jsonl::json_error(&e))),
            };
            if self.fold.is_none() {
                let name = stem(&self.path);
                let mut t = Trace::new(RunMeta {
                    id: name.clone(),
                    name: Some(name.clone()),
                    format: "openhands",
                    source: self.path.clone(),
                    status: RunStatus::Unknown,
                    attributes: vec![("openhands".to_string(), json!("V1 events (JSONL)"))],
                    ..Default::default()
                });
                let file = t.add_file(&self.path);
                let run = t.add(NewEvent {
                    origin: Origin {
                        file,
                        ..Origin::default()
                    },
                    ..NewEvent::new(EventKind::Run, &name)
                });
                sink.push_trace(t);
                self.fold = Some(V1::new(Llm {
                    run,
                    stats: HashMap::new(),
                    model: None,
                }));
            }
            if str_of(&ev, "kind") == Some("ConversationStateUpdateEvent") {
                match (str_of(&ev, "key"), ev.get("value")) {
                    (Some("execution_status"), Some(Value::String(s))) => self.exec = Some(s.clone()),
                    (Some("stats"), Some(v)) => self.stats = Some(v.clone()),
                    (Some("full_state"), Some(v)) if v.is_object() => {
                        if let Some(s) = str_of(v, "execution_status") {
                            self.exec = Some(s.to_string());
                        }
                        if let Some(m) = v
                            .get("agent")
                            .and_then(|a| a.get("llm"))
                            .and_then(|l| str_of(l, "model"))
                            .filter(|s| !s.is_empty())
                        {
                            self.model = Some(m.to_string());
                            // Calls made from here on are named by it.
                            if let Some(f) = self.fold.as_mut() {
                                f.llm.model = Some(m.to_string());
                            }
                        }
                        if let Some(st) = v.get("stats") {
                            self.stats = Some(st.clone());
                        }
                    }
                    _ => {}
                }
            }
            let (Some(fold), Some(t)) = (self.fold.as_mut(), sink.traces.get_mut(0)) else {
                return;
            };
            fold.event(t, &ev, loc.origin(0), &self.path, Some(loc.line));
        }
    }
    let mut parser = Lines {
        path: path.to_path_buf(),
        fold: None,
        exec: None,
        model: None,
        stats: None,
    };
    let mut sink = super::jsonl::Sink::new(path);
    super::jsonl::load_lines(path, &mut parser, &mut sink)?;
    if let (Some(mut fold), Some(t)) = (parser.fold.take(), sink.traces.get_mut(0)) {
        fold.finish(t);
        let status = v1_status(parser.exec.as_deref());
        t.meta.status = status;
        if let Some(e) = &parser.exec {
            t.meta.attributes.push(("execution_status".to_string(), json!(e)));
        }
        t.meta.model = parser.model.clone();
        let run = fold.llm.run;
        t.event_mut(run).status = status.event_status();
        if status == RunStatus::Error {
            t.payload_mut(run).error = Some(ErrorInfo {
                kind: Some("execution_status".into()),
                message: format!(
                    "the conversation ended with execution status {:?}",
                    parser.exec.as_deref().unwrap_or("")
                ),
                ..Default::default()
            });
        }
        // The stats' usage and latency, on the calls of the responses they name; the model
        // on the calls made before the state named it.
        let stats = response_stats(&json!({ "stats": parser.stats.take().unwrap_or(Value::Null) }));
        let model = t.meta.model.as_deref().map(|m| t.strings.intern(m));
        for i in 0..t.events.len() as u32 {
            if t.event(i).kind != EventKind::LlmCall {
                continue;
            }
            let found = stats.get(t.str(t.event(i).source_id)).cloned();
            let e = t.event_mut(i);
            if let Some(m) = model {
                e.model = m;
            }
            let Some((usage, latency)) = found else {
                continue;
            };
            if let Some(u) = usage {
                e.usage = u.into();
            }
            if let Some(d) = latency {
                e.start = e.start.get().map(|s| s.saturating_sub(d)).into();
                e.duration = Some(d).into();
            }
        }
    }
    sink.finish("OpenHands V1 event")
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
    /// The history of an evaluation or resolver output: no first-element check, `[action,
    /// observation]` pairs (the evaluation's old form) read as their two events, and a
    /// resolver's elements (`dataclasses.asdict`: no id, source, cause, args or extras) read
    /// by their place.
    embedded: bool,
    /// Elements are on the lines of a JSONL file (their origins name the line).
    lined: bool,
    /// A resolver's tool calls waiting for the observation that follows them.
    positional: std::collections::VecDeque<u32>,
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
        let embedded = self.embedded;
        let items: Vec<Vec<Item>> = batch
            .par_iter()
            .enumerate()
            .map(|(k, (b, loc))| {
                // The first element of a trajectory file says whether it is one at all.
                if first && k == 0 && !embedded {
                    match serde_json::from_slice::<Value>(b) {
                        Err(e) => return vec![Item::new(Err(e), *loc)],
                        Ok(v) if !is_v0_event(&v) => return vec![Item::new(Ok(Facts::bare(What::Foreign)), *loc)],
                        Ok(_) => {}
                    }
                }
                if embedded && let Some(pair) = pair(b, *loc) {
                    return pair.into_iter().map(|(b, loc)| Item::read(b, loc, true)).collect();
                }
                vec![Item::read(b, *loc, embedded)]
            })
            .collect();
        for item in items.into_iter().flatten() {
            let i = self.i;
            self.i += 1;
            let loc = item.loc;
            match item.facts {
                Ok(ev) => {
                    if matches!(ev.what, What::Foreign) {
                        self.foreign = true;
                        return;
                    }
                    let origin = if self.lined {
                        loc.origin(self.file)
                    } else {
                        loc.element_origin(self.file)
                    };
                    self.event(i, loc.line, ev, origin, item.flat, item.drift);
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

/// One element of a V0 list, read on a worker thread.
struct Item<'a> {
    facts: Result<Facts<'a>, serde_json::Error>,
    loc: LineLoc,
    /// A resolver history's element ([`is_flat`]): what its facts do not say.
    flat: Option<Flat>,
    /// An element with neither `action` nor `observation`: its type and whether it carries
    /// text (drift).
    drift: Option<(String, bool)>,
}

impl<'a> Item<'a> {
    fn new(facts: Result<Facts<'a>, serde_json::Error>, loc: LineLoc) -> Item<'a> {
        Item {
            facts,
            loc,
            flat: None,
            drift: None,
        }
    }

    /// The facts of an element, and, for the rare elements that need it (drift, a
    /// resolver's), what its value says beside them.
    fn read(b: &'a [u8], loc: LineLoc, embedded: bool) -> Item<'a> {
        let mut item = Item::new(Facts::read(b), loc);
        match &item.facts {
            Ok(f) if matches!(f.what, What::Neither) => {
                let v: Value = serde_json::from_slice(b).unwrap_or(Value::Null);
                item.drift = Some((neither_type(&v).to_string(), super::drift_text(&v).is_some()));
            }
            Ok(f) if embedded && f.id.is_none() && f.source.is_empty() && !matches!(f.what, What::NotAnObject) => {
                let v: Value = serde_json::from_slice(b).unwrap_or(Value::Null);
                item.flat = is_flat(&v).then(|| Flat {
                    failed: flat_failed(&v),
                    agent_message: v.get("wait_for_response").and_then(Value::as_bool) == Some(true),
                    content: field(&v, "content").cloned(),
                });
            }
            _ => {}
        }
        item
    }
}

/// What a resolver history's element says that its facts do not: its own fields are at the
/// top (`dataclasses.asdict` of the event), with no source to tell whose a message is.
#[derive(Debug)]
struct Flat {
    /// An observation's failure: an `error` observation, or a command's exit code.
    failed: bool,
    /// A message that waits for the user's answer: the agent's.
    agent_message: bool,
    content: Option<Value>,
}

/// A resolver history's element: an action or observation with its fields at the top, and
/// none of the envelope an event written by `event_to_dict` has.
fn is_flat(v: &Value) -> bool {
    v.is_object()
        && ["id", "source", "args", "extras", "cause"]
            .iter()
            .all(|k| v.get(*k).is_none())
}

/// Whether a resolver's observation failed: an `error` observation, or a command's exit code
/// other than 0 (-1 is "none": the command did not end).
fn flat_failed(v: &Value) -> bool {
    let code = v
        .get("exit_code")
        .or_else(|| v.get("metadata").and_then(|m| m.get("exit_code")))
        .and_then(Value::as_i64);
    str_of(v, "observation") == Some("error") || code.is_some_and(|c| c != 0 && c != -1)
}

/// The type an element of neither kind is counted under: its own `kind` / `type` / `event`.
fn neither_type(v: &Value) -> &str {
    ["kind", "type", "event"]
        .iter()
        .find_map(|k| str_of(v, k).filter(|s| !s.is_empty()))
        .unwrap_or("(neither action nor observation)")
}

/// An evaluation's old `[action, observation]` pair: its two objects and where each is.
fn pair(b: &[u8], loc: LineLoc) -> Option<Vec<(&[u8], LineLoc)>> {
    if whole::first_byte(b) != Some(b'[') {
        return None;
    }
    let parts: Vec<&RawValue> = serde_json::from_slice(b).ok()?;
    if parts.is_empty() || !parts.iter().all(|p| p.get().starts_with('{')) {
        return None;
    }
    let base = b.as_ptr() as usize;
    Some(
        parts
            .into_iter()
            .map(|p| {
                let at = p.get().as_ptr() as usize - base;
                let bytes = &b[at..at + p.get().len()];
                let lines = b[..at].iter().filter(|&&c| c == b'\n').count() as u64;
                (
                    bytes,
                    LineLoc {
                        line: loc.line + lines,
                        offset: loc.offset + at as u64,
                        len: bytes.len(),
                    },
                )
            })
            .collect(),
    )
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
            embedded: false,
            lined: false,
            positional: Default::default(),
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
    fn event(
        &mut self,
        i: u64,
        line: u64,
        ev: Facts<'_>,
        origin: Origin,
        flat: Option<Flat>,
        drift: Option<(String, bool)>,
    ) {
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
            positional,
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
            What::Neither => {
                // Drift (formats/mod.rs): an event of a kind this reader does not know,
                // counted, shown when it carries text.
                let (ty, text) = drift.unwrap_or_else(|| ("(neither action nor observation)".to_string(), false));
                t.skipped.add(&ty);
                if text {
                    t.add(NewEvent {
                        id: id.as_deref(),
                        parent: Parent::Index(run),
                        start: ts,
                        status: Status::Ok,
                        origin,
                        payload: PayloadRef::Deferred,
                        ..NewEvent::new(EventKind::Other, &ty)
                    });
                }
            }
            What::Action {
                action,
                task: first_prompt,
                function,
                tool_call_id,
                response,
            } => {
                let action = &*action;
                if let Some(flat) = flat {
                    // A resolver's element: no source, so a message's author is told by its
                    // place (the first is the task) and by whether it waits for the user.
                    let (kind, label) = match action {
                        "message" => {
                            let role = if task.is_none() {
                                *task = flat.content;
                                "user"
                            } else if flat.agent_message {
                                "assistant"
                            } else {
                                "user"
                            };
                            (EventKind::Message(Role::parse(role)), role)
                        }
                        "system" => (EventKind::Message(Role::System), "system"),
                        "recall" => (EventKind::Other, "recall"),
                        "change_agent_state" | "null" => (EventKind::State, action),
                        _ => {
                            if action == "finish" {
                                *finished = true;
                            }
                            let done = NO_OBSERVATION.contains(&action);
                            let c = t.add(NewEvent {
                                parent: Parent::Index(run),
                                status: if done { Status::Ok } else { Status::Pending },
                                origin,
                                payload: PayloadRef::Deferred,
                                ..NewEvent::new(EventKind::ToolCall, action)
                            });
                            if !done {
                                positional.push_back(c);
                            }
                            return;
                        }
                    };
                    t.add(NewEvent {
                        parent: Parent::Index(run),
                        status: Status::Ok,
                        origin,
                        payload: PayloadRef::Deferred,
                        ..NewEvent::new(kind, label)
                    });
                    return;
                }
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
                    let e = t.add(NewEvent {
                        id: id.as_deref(),
                        parent: Parent::Index(run),
                        start: ts,
                        status: Status::Ok,
                        origin,
                        payload: PayloadRef::Deferred,
                        ..NewEvent::new(kind, &label)
                    });
                    // A message may cause an observation too (the recall of a user's
                    // message): it is in the file, though no call.
                    if let Some(id) = &id {
                        calls.insert(id, e, |&e| t.str(t.event(e).source_id));
                    }
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
                // A resolver's observation answers the oldest call still waiting.
                let failed = flat.as_ref().map_or(failed, |f| f.failed);
                let call = match &flat {
                    Some(_) if obs != "null" => positional.pop_front(),
                    Some(_) => None,
                    None => cause
                        .as_deref()
                        .and_then(|c| calls.get(c, |&e| t.str(t.event(e).source_id)))
                        .or_else(|| tool_call_id.as_deref().and_then(|tc| by_tool_call.get(tc)))
                        .copied(),
                };
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
        resume: None,
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
    let mut fold = V1::new(Llm {
        run,
        stats: response_stats(&state),
        model: model.clone(),
    });
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
        fold.event(&mut t, &ev, origin, &path, None);
    }
    fold.finish(&mut t);
    t.finalize();
    Ok(t)
}

/// The V1 event kinds of the SDK (`openhands.sdk.event`): another kind is drift.
const KNOWN_V1: [&str; 18] = [
    "SystemPromptEvent",
    "MessageEvent",
    "ActionEvent",
    "ObservationEvent",
    "AgentErrorEvent",
    "UserRejectObservation",
    "ConversationStateUpdateEvent",
    "ConversationErrorEvent",
    "CondensationRequest",
    "Condensation",
    "CondensationSummaryEvent",
    "PauseEvent",
    "InterruptEvent",
    "TokenEvent",
    "StreamingDeltaEvent",
    "HookExecutionEvent",
    "LLMCompletionLogEvent",
    "ACPToolCallEvent",
];

/// Fields every V1 event has, left out of a drift event's record.
const V1_ENVELOPE: [&str; 3] = ["id", "timestamp", "source"];

/// The fold of V1 events, in order: a conversation folder's event files, or the lines of a
/// JSONL of events.
struct V1 {
    llm: Llm,
    /// LLM calls by response id; tool calls by `tool_call_id` and by event id.
    llms: HashMap<String, u32>,
    calls: HashMap<String, u32>,
    task: Option<Value>,
}

impl V1 {
    fn new(llm: Llm) -> V1 {
        V1 {
            llm,
            llms: HashMap::new(),
            calls: HashMap::new(),
            task: None,
        }
    }

    /// One event; what is wrong with it is said with `path` and `line`.
    fn event(&mut self, t: &mut Trace, ev: &Value, origin: Origin, path: &Path, line: Option<u64>) {
        let ts = ts_of(ev);
        let id = str_of(ev, "id");
        let kind = str_of(ev, "kind").unwrap_or("");
        // Left in its file when the event has one (the origin reads the whole file).
        let payload = |k: EventKind| v1_ref(k, ev, origin);
        let source = str_of(ev, "source").unwrap_or("");
        match kind {
            "SystemPromptEvent" => {
                t.add(NewEvent {
                    id,
                    parent: Parent::Index(self.llm.run),
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
                if role == "user" && self.task.is_none() {
                    self.task = text.clone();
                }
                // An agent's reply is the output of the LLM response it came in.
                let parent = match str_of(ev, "llm_response_id").filter(|s| !s.is_empty()) {
                    Some(rid) if source == "agent" => llm_call(t, &mut self.llms, &self.llm, rid, ev, ts, origin),
                    _ => self.llm.run,
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
                let parent = match str_of(ev, "llm_response_id").filter(|s| !s.is_empty()) {
                    Some(rid) => llm_call(t, &mut self.llms, &self.llm, rid, ev, ts, origin),
                    None => self.llm.run,
                };
                let tool = str_of(ev, "tool_name").filter(|s| !s.is_empty()).unwrap_or("?");
                let tool_call_id = str_of(ev, "tool_call_id");
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
                    self.calls.insert(tc.to_string(), c);
                }
                if let Some(id) = id {
                    self.calls.insert(id.to_string(), c);
                }
            }
            "ObservationEvent" | "AgentErrorEvent" | "UserRejectObservation" => {
                let call = str_of(ev, "tool_call_id")
                    .and_then(|tc| self.calls.get(tc))
                    .or_else(|| str_of(ev, "action_id").and_then(|a| self.calls.get(a)))
                    .copied();
                let failed = v1_outcome(ev).error.is_some();
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
                                PayloadRef::Deferred => super::payload(t, t.event(c)),
                                _ => std::mem::take(t.payload_mut(c)),
                            };
                            v1_outcome(ev).apply(&mut p);
                            t.event_mut(c).payload = PayloadRef::inline(p);
                        }
                    }
                    None => {
                        t.diagnostics.push(Diagnostic::warning(
                            path,
                            line,
                            format!(
                                "{kind} for a tool call no ActionEvent made ({})",
                                str_of(ev, "tool_call_id").unwrap_or("no tool_call_id")
                            ),
                        ));
                        t.add(NewEvent {
                            id,
                            parent: Parent::Index(self.llm.run),
                            start: ts,
                            status: if failed { Status::Error } else { Status::Ok },
                            origin,
                            payload: payload(EventKind::Other),
                            ..NewEvent::new(if failed { EventKind::Error } else { EventKind::Other }, kind)
                        });
                    }
                }
            }
            k if KNOWN_V1.contains(&k) => {
                // State updates, condensations, pauses, tokens: shown by kind, not interpreted.
                let state_like = kind.contains("State") || kind == "PauseEvent";
                t.add(NewEvent {
                    id,
                    parent: Parent::Index(self.llm.run),
                    start: ts,
                    status: Status::Ok,
                    origin,
                    ..NewEvent::new(if state_like { EventKind::State } else { EventKind::Other }, kind)
                });
            }
            _ => {
                // Drift (formats/mod.rs): a kind of a newer SDK, counted, shown when it
                // carries text.
                let ty = if kind.is_empty() { "(no kind)" } else { kind };
                t.skipped.add(ty);
                if super::drift_text(ev).is_some() {
                    t.add(NewEvent {
                        id,
                        parent: Parent::Index(self.llm.run),
                        start: ts,
                        status: Status::Ok,
                        origin,
                        payload: payload(EventKind::Other),
                        ..NewEvent::new(EventKind::Other, ty)
                    });
                }
            }
        }
    }

    /// The task (the first user message) on the run.
    fn finish(&mut self, t: &mut Trace) {
        if let Some(task) = self.task.take() {
            t.payload_mut(self.llm.run).input = Some(task);
        }
    }
}

#[cfg(test)]
#[path = "openhands_oracle.rs"]
mod oracle;

/// A call's gist by OpenHands' tools and actions: the command (`execute_bash`, `terminal`,
/// V0 `run`), the file (`str_replace_editor`, `file_editor`, V0 `read` / `write` / `edit`),
/// the code of an IPython cell, the URL browsed, a thought or a message.
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{generic, key_or_generic};
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "execute_bash" | "terminal" | "bash" | "run" | "execute_powershell" | "CmdRunAction" => by(&["command"]),
        "str_replace_editor" | "file_editor" | "edit" | "read" | "write" | "FileEditAction" | "FileReadAction"
        | "FileWriteAction" => by(&["path"]),
        "execute_ipython_cell" | "run_ipython" | "ipython" => by(&["code"]),
        "browser" | "browse" | "web_read" | "fetch" => by(&["url", "code"]),
        "browse_interactive" => by(&["browser_actions", "url"]),
        "think" => by(&["thought"]),
        "finish" => by(&["message", "final_thought", "thought"]),
        "task_tracker" => by(&["command"]),
        _ => generic(name, input),
    }
}

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
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        assert!(msgs[0].contains("event [1] is not an object"));
        assert!(msgs[1].contains("caused by event 99"));
        // Each names the line its element starts on.
        let lines: Vec<Option<u64>> = t.diagnostics.iter().map(|d| d.line).collect();
        assert_eq!(lines, [Some(12), Some(47)]);
        // The element of neither kind is drift: counted, not said (it carries no text).
        assert_eq!(
            t.skipped.iter().collect::<Vec<_>>(),
            [("(neither action nor observation)", 1)]
        );
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
        let s = crate::formats::testing::summaries(&OpenHands, &fixture("openhands", "conversation"))
            .unwrap()
            .remove(0);
        assert_eq!(s.id, "0f9c4e2a-1111-4222-8333-944455556666");
        assert_eq!(s.status, RunStatus::Ok);
        assert_eq!((s.llm_calls, s.tokens), (Some(2), Some(330 + 440)));
        assert_eq!(s.duration, Some(2_200_000_000));
        assert_eq!(s.tool_calls, None);
        // A V0 file is loaded.
        let s = crate::formats::testing::summaries(&OpenHands, &fixture("openhands", "v0.json"))
            .unwrap()
            .remove(0);
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

    fn load_all(name: &str) -> Vec<Trace> {
        OpenHands.load(&fixture("openhands", name)).unwrap().traces
    }

    fn calls(t: &Trace) -> Vec<u32> {
        t.walk()
            .into_iter()
            .map(|(i, _)| i)
            .filter(|&i| t.event(i).kind == EventKind::ToolCall)
            .collect()
    }

    /// An evaluation's `output.jsonl`: a trace an instance, named by its id, its history
    /// counted as a V0 trajectory; the damaged line is said with its line, the rest loads.
    #[test]
    fn evaluation_output_a_trace_a_line() {
        let ts = load_all("eval-output.jsonl");
        let ids: Vec<&str> = ts.iter().map(|t| t.meta.id.as_str()).collect();
        assert_eq!(ids, ["acme__timeparse-101", "acme__timeparse-103"]);
        let t = &ts[0];
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.model.as_deref(), Some("claude-sonnet-4-20250514"));
        assert_eq!((t.counts().tool_calls, t.counts().llm_calls), (3, 3));
        // The cut line is the only diagnostic (the recall answering the user's message is
        // no orphan).
        assert_eq!(t.diagnostics.len(), 1, "{:?}", t.diagnostics);
        assert_eq!(t.diagnostics[0].line, Some(2));
        assert_eq!(t.diagnostics[0].severity, Severity::Error);
        assert!(t.diagnostics[0].message.contains("damaged"));
        let run = crate::formats::payload(t, t.event(t.roots[0]));
        assert!(run.input.unwrap().as_str().unwrap().starts_with("Fix `parse_duration"));
        assert!(run.output.unwrap().as_str().unwrap().starts_with("diff --git"));
        // The test result held only the patch: nothing more to show.
        assert!(run.extra.iter().all(|(k, _)| k != "test_result"));
        assert_eq!(t.name(t.roots[0]), "acme__timeparse-101");
        // Each event is its element's bytes on line 1.
        let bash = t.find("3").unwrap();
        assert_eq!((t.name(bash), t.event(bash).origin.line), ("execute_bash", 1));
        let p = crate::formats::payload(t, t.event(bash));
        assert_eq!(p.input.unwrap()["command"], json!("grep -rn 'def parse_duration' src/"));
        assert_eq!(p.output, Some(json!("src/timeparse.py:12:def parse_duration(value):")));
        assert_eq!(t.event(bash).duration, Some(600_000_000));
        assert!(outline(t).contains(&"  other recall".to_string()));
        let t = &ts[1];
        assert_eq!(t.meta.status, RunStatus::Error);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let run = crate::formats::payload(t, t.event(t.roots[0]));
        assert_eq!(run.error.unwrap().message, "Agent got stuck in a loop");
        assert_eq!(t.event(t.find("3").unwrap()).origin.line, 3);
    }

    /// The evaluation's old form: `history` as `[action, observation]` pairs.
    #[test]
    fn evaluation_output_of_pairs() {
        let ts = load_all("eval-output-pairs.jsonl");
        assert_eq!(ts.len(), 1);
        let t = &ts[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.id, "17");
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.model.as_deref(), Some("gpt-4o-2024-05-13"));
        assert_eq!(
            outline(t),
            [
                "run 17",
                "  message user",
                "  tool run_ipython",
                "  message assistant",
                "  tool finish",
            ]
        );
        let run = crate::formats::payload(t, t.event(t.roots[0]));
        assert_eq!(run.output, None);
        let result = run.extra.iter().find(|(k, _)| k == "test_result").map(|(_, v)| v);
        assert_eq!(result.map(|r| &r["result"]["correct"]), Some(&json!(true)));
        let ipy = t.find("3").unwrap();
        assert_eq!(t.event(ipy).status, Status::Ok);
        let p = crate::formats::payload(t, t.event(ipy));
        assert_eq!(p.input.unwrap()["code"], json!("print(17 * 23)"));
        assert!(p.output.unwrap().as_str().unwrap().starts_with("391"));
    }

    /// The resolver's output: its history (`dataclasses.asdict` of each event: no id, source
    /// or cause) read by place, the issue and the patch on the run, its verdict the status.
    #[test]
    fn resolver_output_lines_and_document() {
        let ts = load_all("resolver-output.jsonl");
        let ids: Vec<&str> = ts.iter().map(|t| t.meta.id.as_str()).collect();
        assert_eq!(ids, ["example-org/widgets#12", "example-org/widgets#15"]);
        let t = &ts[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.status, RunStatus::Ok);
        let c = calls(t);
        let names: Vec<&str> = c.iter().map(|&i| t.name(i)).collect();
        assert_eq!(names, ["run", "run", "edit", "finish"]);
        let status: Vec<Status> = c.iter().map(|&i| t.event(i).status).collect();
        assert_eq!(status, [Status::Ok, Status::Error, Status::Ok, Status::Ok]);
        let grep = crate::formats::payload(t, t.event(c[1]));
        assert_eq!(grep.input.unwrap()["command"], json!("grep -n 'Copyright' LICENSE.md"));
        assert_eq!(grep.error.unwrap().message, "exit code 1");
        let run = crate::formats::payload(t, t.event(t.roots[0]));
        assert_eq!(
            run.input,
            Some(json!(
                "Add a copyright line to the license\n\nThe license has no copyright holder."
            ))
        );
        assert!(
            run.output
                .unwrap()
                .as_str()
                .unwrap()
                .contains("+Copyright (c) 2025 Example Org")
        );
        assert!(run.extra.iter().any(|(k, v)| k == "issue" && v["number"] == json!(12)));
        let t = &ts[1];
        assert_eq!(t.meta.status, RunStatus::Error);
        let run = crate::formats::payload(t, t.event(t.roots[0]));
        assert_eq!(
            run.error.unwrap().message,
            "The agent asked a question and made no change."
        );
        assert_eq!(run.output, None);
        // The agent's question waits for the user; the answer after it is the user's.
        assert_eq!(
            outline(t)[4..],
            ["  message assistant".to_string(), "  message user".to_string()]
        );
        // The same output as a pretty-printed document.
        let doc = load_all("resolver-output.json");
        assert_eq!(doc.len(), 1);
        assert_eq!(doc[0].meta.id, ts_id(&load_all("resolver-output.jsonl")[0]));
        assert_eq!(outline(&doc[0]), outline(&load_all("resolver-output.jsonl")[0]));
        assert_eq!(
            format!("{:?}", doc[0].counts()),
            format!("{:?}", load_all("resolver-output.jsonl")[0].counts())
        );
        assert!(doc[0].diagnostics.is_empty());
    }

    fn ts_id(t: &Trace) -> String {
        t.meta.id.clone()
    }

    /// V1 events one a line: one trace, the status, model and usage from the state updates.
    #[test]
    fn v1_events_as_jsonl() {
        let ts = load_all("v1-events.jsonl");
        assert_eq!(ts.len(), 1);
        let t = &ts[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.model.as_deref(), Some("anthropic/claude-sonnet-4-5-20250929"));
        assert_eq!((t.counts().tool_calls, t.counts().llm_calls), (2, 2));
        let find = t.find("toolu_01Ab").unwrap();
        assert_eq!(t.event(find).status, Status::Ok);
        assert_eq!(t.event(find).origin.line, 5);
        let p = crate::formats::payload(t, t.event(find));
        assert_eq!(p.input, Some(json!({"command": "find src -name '*.py' | wc -l"})));
        assert_eq!(p.output, Some(json!("7")));
        // msg_01XyZ: 4,100 prompt tokens of which 4,000 written to the cache; 2.2 s.
        let llm = t.event(t.event(find).parent);
        let u = llm.usage.get().unwrap();
        assert_eq!((u.input, u.cache_write, u.output), (Some(100), Some(4000), Some(85)));
        assert_eq!(llm.duration, Some(2_200_000_000));
        let run = crate::formats::payload(t, t.event(t.roots[0]));
        assert_eq!(run.input, Some(json!("How many Python files are in src/?")));
    }

    #[test]
    fn detection_of_outputs_and_v1_lines() {
        let probe = |name: &str, b: &[u8], complete: bool| Probe::from_bytes(Path::new(name), b.to_vec(), complete);
        let file = |name: &str| std::fs::read(fixture("openhands", name)).unwrap();
        for name in [
            "eval-output.jsonl",
            "eval-output-pairs.jsonl",
            "resolver-output.jsonl",
            "resolver-output.json",
            "v1-events.jsonl",
        ] {
            assert_eq!(OpenHands.detect(&probe(name, &file(name), true)), 95, "{name}");
            assert!(crate::formats::detect(&fixture("openhands", name)).is_ok_and(|f| f.id() == "openhands"));
        }
        // A line longer than the head: its first keys.
        let eval = file("eval-output.jsonl");
        assert_eq!(OpenHands.detect(&probe("o.jsonl", &eval[..3000], false)), 90);
        // V1 events whose first is of a kind a newer SDK writes.
        let mut v1 =
            br#"{"id": "n", "timestamp": "2026-02-14T09:29:59", "source": "agent", "kind": "ZzNewEvent"}"#.to_vec();
        v1.push(b'\n');
        v1.extend_from_slice(&file("v1-events.jsonl"));
        assert_eq!(OpenHands.detect(&probe("e.jsonl", &v1, true)), 95);
        // SWE-bench predictions, other agents' JSONL, an unknown kind first: not ours.
        for other in [
            &br#"{"instance_id": "a__b-1", "model_patch": "diff", "model_name_or_path": "m"}"#[..],
            br#"{"type": "session.start", "data": {}, "id": "1", "timestamp": "t", "parentId": null}"#,
            br#"{"id": "e", "timestamp": "t", "source": "agent", "kind": "zzNewEvent"}"#,
            br#"{"history": [], "note": "x"}"#,
        ] {
            assert_eq!(
                OpenHands.detect(&probe("x.jsonl", other, true)),
                0,
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }

    /// Drift (formats/mod.rs): a V0 element of neither kind and a V1 event of an unknown
    /// kind are counted, shown when they carry text, and said nowhere.
    #[test]
    fn unknown_kinds_are_skipped_quietly() {
        let d = tempfile::tempdir().unwrap();
        let v0 = d.path().join("t.json");
        std::fs::write(
            &v0,
            br#"[{"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}},
                {"id": 1, "source": "agent", "kind": "plan_update", "message": "1. look 2. fix"},
                {"id": 2, "source": "agent", "kind": "heartbeat"}]"#,
        )
        .unwrap();
        let t = OpenHands.load(&v0).unwrap().traces.remove(0);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(
            t.skipped.iter().collect::<Vec<_>>(),
            [("plan_update", 1), ("heartbeat", 1)]
        );
        let e = t.find("1").unwrap();
        assert_eq!((t.event(e).kind, t.name(e)), (EventKind::Other, "plan_update"));
        let p = crate::formats::payload(&t, t.event(e));
        assert_eq!(p.input, Some(json!("1. look 2. fix")));
        assert!(t.find("2").is_none());

        let lines = d.path().join("e.jsonl");
        std::fs::write(
            &lines,
            concat!(
                r#"{"id": "a", "timestamp": "2026-01-01T00:00:00", "source": "user", "llm_message": {"role": "user", "content": [{"type": "text", "text": "go"}]}, "kind": "MessageEvent"}"#,
                "\n",
                r#"{"id": "b", "timestamp": "2026-01-01T00:00:01", "source": "agent", "summary": "Planning the next step", "kind": "PlanEvent"}"#,
                "\n",
                r#"{"id": "c", "timestamp": "2026-01-01T00:00:02", "source": "environment", "kind": "MetricsTick", "n": 3}"#,
                "\n"
            ),
        )
        .unwrap();
        let t = OpenHands.load(&lines).unwrap().traces.remove(0);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(
            t.skipped.iter().collect::<Vec<_>>(),
            [("PlanEvent", 1), ("MetricsTick", 1)]
        );
        let e = t.find("b").unwrap();
        let p = crate::formats::payload(&t, t.event(e));
        assert_eq!(p.input, Some(json!("Planning the next step")));
        assert_eq!(
            p.extra[0].1,
            json!({"summary": "Planning the next step", "kind": "PlanEvent"})
        );
    }

    /// An element of neither kind: no action or observation, the envelope of `near`, a kind
    /// of its own, text or not.
    fn unknown_element(rng: &mut crate::formats::testing::Rng, near: &Value) -> Value {
        let mut m = serde_json::Map::new();
        for k in ["timestamp", "source"] {
            if let Some(x) = near.get(k) {
                m.insert(k.into(), x.clone());
            }
        }
        m.insert("kind".into(), Value::String(rng.type_name()));
        if let Some(text) = rng.maybe_text() {
            m.insert(
                ["message", "content", "summary"][rng.below(3)].into(),
                Value::String(text),
            );
        }
        m.insert(rng.type_name(), rng.value());
        Value::Object(m)
    }

    fn with_unknown_field(v: &mut Value, rng: &mut crate::formats::testing::Rng) {
        if let Value::Object(m) = v {
            let (k, x) = (rng.type_name(), rng.value());
            if rng.one_in(2) {
                m.insert(k, x);
            } else {
                m.shift_insert(0, k, x);
            }
        }
    }

    /// A V0 list with drift: elements of neither kind before one element in four (never
    /// first: the first says what the file is), unknown fields in one object in three (in a
    /// pair's objects too). Returns the elements inserted.
    fn drift_v0_list(list: &mut Vec<Value>, rng: &mut crate::formats::testing::Rng) -> usize {
        let mut out = Vec::with_capacity(list.len() + list.len() / 3);
        let mut inserted = 0;
        for (k, mut e) in list.drain(..).enumerate() {
            let near = match &e {
                Value::Array(pair) => pair.first().cloned().unwrap_or(Value::Null),
                other => other.clone(),
            };
            if k > 0 && rng.one_in(4) {
                out.push(unknown_element(rng, &near));
                inserted += 1;
            }
            match &mut e {
                Value::Array(pair) => {
                    for x in pair {
                        if rng.one_in(3) {
                            with_unknown_field(x, rng);
                        }
                    }
                }
                x if rng.one_in(3) => with_unknown_field(x, rng),
                _ => {}
            }
            out.push(e);
        }
        *list = out;
        inserted
    }

    /// An output (a JSONL line's or a document's) with drift in its history and at its top.
    fn drift_output(v: &mut Value, rng: &mut crate::formats::testing::Rng) -> usize {
        let inserted = match v.get_mut("history") {
            Some(Value::Array(h)) => drift_v0_list(h, rng),
            _ => 0,
        };
        with_unknown_field(v, rng);
        inserted
    }

    /// A V1 event of a kind the SDK does not write, with the envelope of `near`.
    fn unknown_v1(rng: &mut crate::formats::testing::Rng, near: &Value) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("id".into(), Value::String(format!("drift-{}", rng.next())));
        for k in ["timestamp", "source"] {
            if let Some(x) = near.get(k) {
                m.insert(k.into(), x.clone());
            }
        }
        if let Some(text) = rng.maybe_text() {
            m.insert(
                ["summary", "message", "content"][rng.below(3)].into(),
                Value::String(text),
            );
        }
        m.insert(rng.type_name(), rng.value());
        m.insert("kind".into(), Value::String(format!("Zz{}", rng.type_name())));
        Value::Object(m)
    }

    /// The drift mutator of every OpenHands shape. V0 trajectories (a JSON list) and the
    /// histories of outputs (a JSONL line's or a pretty document's): elements of neither kind
    /// and unknown fields ([`drift_v0_list`]). V1 events one a line: [`testing::drift_jsonl`]
    /// with events of unknown kinds. A V1 folder's event files: unknown fields into one in
    /// three, and an event file of an unknown kind beside one in four (numbered as it, so it
    /// sorts next to it). Returns the records that must be counted as skipped.
    fn drift_file(f: &Path, rng: &mut crate::formats::testing::Rng) -> usize {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read(f).unwrap();
        let in_events = f.parent().is_some_and(|p| p.ends_with(EVENTS));
        if in_events && name.starts_with("event-") && name.ends_with(".json") {
            let Ok(mut v) = serde_json::from_slice::<Value>(&text) else {
                return 0;
            };
            let mut inserted = 0;
            if rng.one_in(4) {
                let n = name
                    .trim_start_matches("event-")
                    .split('-')
                    .next()
                    .unwrap_or("0")
                    .to_string();
                let new = f.with_file_name(format!("event-{n}-zz{}.json", rng.next() % 100_000));
                std::fs::write(new, serde_json::to_vec(&unknown_v1(rng, &v)).unwrap()).unwrap();
                inserted += 1;
            }
            if rng.one_in(3) {
                with_unknown_field(&mut v, rng);
                std::fs::write(f, serde_json::to_vec(&v).unwrap()).unwrap();
            }
            return inserted;
        }
        if name == BASE_STATE {
            let Ok(mut v) = serde_json::from_slice::<Value>(&text) else {
                return 0;
            };
            with_unknown_field(&mut v, rng);
            std::fs::write(f, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
            return 0;
        }
        if name.ends_with(".jsonl") {
            let first: Option<Value> = text
                .split(|&b| b == b'\n')
                .next()
                .and_then(|l| serde_json::from_slice(l).ok());
            if first.as_ref().is_some_and(|v| v.get("kind").is_some()) {
                return crate::formats::testing::drift_jsonl(f, rng, &unknown_v1);
            }
            let mut out = Vec::with_capacity(text.len() * 2);
            let mut inserted = 0;
            for line in text.split_inclusive(|&b| b == b'\n') {
                match serde_json::from_slice::<Value>(line) {
                    Ok(mut v) if v.is_object() => {
                        inserted += drift_output(&mut v, rng);
                        out.extend_from_slice(&serde_json::to_vec(&v).unwrap());
                        out.push(b'\n');
                    }
                    _ => out.extend_from_slice(line),
                }
            }
            std::fs::write(f, out).unwrap();
            return inserted;
        }
        if name.ends_with(".json") {
            let inserted = match serde_json::from_slice::<Value>(&text) {
                Ok(Value::Array(mut list)) => {
                    let n = drift_v0_list(&mut list, rng);
                    std::fs::write(f, serde_json::to_vec_pretty(&list).unwrap()).unwrap();
                    n
                }
                Ok(mut v @ Value::Object(_)) => {
                    let n = drift_output(&mut v, rng);
                    std::fs::write(f, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
                    n
                }
                _ => 0,
            };
            return inserted;
        }
        0
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on our fixtures of every shape, the sample and
        /// the corpus' trajectories and conversation.
        #[test]
        fn drift_is_skipped_quietly(seed in any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "openhands",
                &[
                    "tests/fixtures/openhands/v0.json",
                    "tests/fixtures/openhands/v0-damaged.json",
                    "tests/fixtures/openhands/conversation",
                    "tests/fixtures/openhands/eval-output.jsonl",
                    "tests/fixtures/openhands/eval-output-pairs.jsonl",
                    "tests/fixtures/openhands/resolver-output.jsonl",
                    "tests/fixtures/openhands/resolver-output.json",
                    "tests/fixtures/openhands/v1-events.jsonl",
                    "sample-traces/openhands/conversations/5b1d0c7e9a2f4e61b3c8d4f0a6e2b917",
                ],
            );
            crate::formats::testing::drift_check(&sources, seed, &drift_file);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// The new shapes with bytes changed, removed or inserted anywhere: loaded, every
        /// payload decoded, or refused with an error; never a panic.
        #[test]
        fn damaged_outputs_and_v1_lines_never_panic(
            (name, bytes) in prop::sample::select(vec![
                "eval-output.jsonl",
                "eval-output-pairs.jsonl",
                "resolver-output.jsonl",
                "resolver-output.json",
                "v1-events.jsonl",
            ])
            .prop_flat_map(|name| {
                let text = std::fs::read(fixture("openhands", name)).unwrap();
                (Just(name), crate::formats::testing::with_byte_edits(Just(text), 1))
            }),
        ) {
            let d = tempfile::tempdir().unwrap();
            let p = d.path().join(name);
            std::fs::write(&p, &bytes).unwrap();
            if let Ok(l) = OpenHands.load(&p) {
                for t in &l.traces {
                    for e in &t.events {
                        let _ = crate::formats::payload(t, e);
                    }
                }
            }
        }
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

#[cfg(test)]
mod gist_tests {
    use super::*;
    use serde_json::json;

    fn g(name: &str, input: Value) -> Option<String> {
        OpenHands.gist(name, &input)
    }

    #[test]
    fn each_tool_says_what_it_did() {
        // V0 `args` (with the thought and the flags beside the command) and V1 actions.
        let run = json!({"command": "mkdir -p /workspace/todo-app", "is_input": false, "thought": "First, ...", "blocking": false});
        assert_eq!(
            g("execute_bash", run.clone()).as_deref(),
            Some("mkdir -p /workspace/todo-app")
        );
        assert_eq!(g("run", run).as_deref(), Some("mkdir -p /workspace/todo-app"));
        let ed = json!({"path": "/workspace/game.py", "content": "", "start": 1, "end": -1, "thought": "I'll create the file."});
        assert_eq!(g("str_replace_editor", ed).as_deref(), Some("/workspace/game.py"));
        let fe =
            json!({"command": "create", "path": "/ws/config.toml", "file_text": "[app]", "security_risk": "MEDIUM"});
        assert_eq!(g("file_editor", fe).as_deref(), Some("/ws/config.toml"));
        let t = json!({"command": "ls -la", "security_risk": "LOW"});
        assert_eq!(g("terminal", t).as_deref(), Some("ls -la"));
        assert_eq!(
            g("run_ipython", json!({"code": "print(1)", "thought": ""})).as_deref(),
            Some("print(1)")
        );
        assert_eq!(
            g("browse", json!({"url": "http://localhost:8000"})).as_deref(),
            Some("http://localhost:8000")
        );
        let f = json!({"message": "Created config.toml."});
        assert_eq!(g("finish", f).as_deref(), Some("Created config.toml."));
    }
}
