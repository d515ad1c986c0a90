//! OpenAI Codex CLI rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`.
//! Each line is an envelope `{timestamp, type, payload}` with `type` one of `session_meta`,
//! `turn_context`, `response_item` (the model's items: messages, reasoning, tool calls and
//! their outputs), `event_msg` (UI events: user/agent messages again, token counts, task
//! start/complete) and `compacted`. Older rollouts (before the envelope) hold a first line
//! `{id, timestamp, instructions}` followed by bare response items and `{record_type: state}`.
//!
//! Traps: the user's and the agent's text exist twice (a `response_item` message and an
//! `event_msg` copy): the first copy is kept; `arguments` is a JSON string; outputs come back
//! by `call_id`; `token_count` repeats cumulative totals (deltas are taken, repeats skipped);
//! timestamps may be placeholders (`"[trimmed]"`): never needed for the tree.
//!
//! Tree: run → turns (from `turn_context` / `task_started`) → user prompt and model responses
//! (an LLM call per sampling request, closed by its `token_count` or by tool output) → the
//! response's reasoning, messages and tool calls.

use super::jsonl::{Follow, LineLoc, LineParser, Sink};
use super::{Format, LoadError, Loaded, Probe, field, lenient_u64, stem, str_of};
use crate::model::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

pub struct Codex;

const ENVELOPE_TYPES: [&str; 5] = [
    "session_meta",
    "turn_context",
    "response_item",
    "event_msg",
    "compacted",
];

/// Top-level records that carry nothing for the tree.
const QUIET_TYPES: [&str; 2] = ["world_state", "inter_agent_communication_metadata"];

/// Response items that are tool calls, and the items that answer them.
const CALL_ITEMS: [&str; 6] = [
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "tool_search_call",
    "web_search_call",
    "image_generation_call",
];
const OUTPUT_ITEMS: [&str; 4] = [
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "tool_search_output",
];

/// `event_msg` kinds shown as generic events (the rest are UI notifications).
const SHOWN_EVENTS: [&str; 8] = [
    "entered_review_mode",
    "exited_review_mode",
    "context_compacted",
    "undo_completed",
    "guardian_assessment",
    "thread_goal_updated",
    "plan_update",
    "sub_agent_activity",
];

impl Format for Codex {
    fn id(&self) -> &'static str {
        "codex"
    }
    fn describe(&self) -> &'static str {
        "OpenAI Codex CLI rollout, ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        let mut lines = p.lines().take(20).peekable();
        let Some(first) = lines.peek().cloned() else {
            return if p.has_key("payload") && p.has_key("timestamp") && p.has_key("type") {
                70 // a first record too large for the probe
            } else {
                0
            };
        };
        if is_envelope(&first) {
            return 95;
        }
        // Pre-envelope rollouts: a `{id, timestamp}` header, then bare Responses API items.
        let header = first.get("id").is_some_and(Value::is_string)
            && first.get("timestamp").is_some()
            && first.get("type").is_none()
            && first.get("role").is_none();
        let items = lines.skip(1).any(|v| {
            v.get("record_type").and_then(Value::as_str) == Some("state")
                || str_of(&v, "type").is_some_and(|t| CALL_ITEMS.contains(&t) || OUTPUT_ITEMS.contains(&t))
                || (str_of(&v, "type") == Some("message") && has_responses_parts(&v))
        });
        if header && items { 85 } else { 0 }
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let mut f = self.follow(path).expect("codex is line-oriented");
        f.poll()?;
        f.finish("Codex rollout records")
    }

    fn follow(&self, path: &Path) -> Option<Follow> {
        Some(Follow::new(
            path,
            Box::new(|| Box::new(Parser::default()) as Box<dyn LineParser>),
        ))
    }
}

fn is_envelope(v: &Value) -> bool {
    v.get("payload").is_some() && str_of(v, "type").is_some_and(|t| ENVELOPE_TYPES.contains(&t))
}

/// Content parts of the Responses API (`input_text` / `output_text`), not chat-completions.
fn has_responses_parts(v: &Value) -> bool {
    v.get("content").and_then(Value::as_array).is_some_and(|a| {
        a.iter()
            .any(|p| matches!(str_of(p, "type"), Some("input_text" | "output_text")))
    })
}

/// The text of a Responses API message: its text parts joined.
fn message_text(v: &Value) -> String {
    match v.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                _ => str_of(p, "text"),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Instructions and environment Codex injects as user messages: shown as context.
fn is_injected_context(text: &str) -> bool {
    let t = text.trim_start();
    [
        "<environment_context>",
        "<user_instructions>",
        "# AGENTS.md instructions",
        "<permissions",
    ]
    .iter()
    .any(|p| t.starts_with(p))
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

/// Is a tool output a failure? Exit codes in the structured (older) or text (newer) output.
fn output_failed(out: &Value) -> bool {
    let code = |v: &Value| {
        v.get("metadata")
            .and_then(|m| m.get("exit_code"))
            .and_then(Value::as_i64)
    };
    if let Some(c) = code(out) {
        return c != 0;
    }
    if out.get("success") == Some(&Value::Bool(false)) {
        return true;
    }
    if let Some(s) = out.as_str() {
        for prefix in ["Exit code: ", "Process exited with code "] {
            if let Some(rest) = s.find(prefix).map(|i| &s[i + prefix.len()..]) {
                let n: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
                if let Ok(n) = n.parse::<i64>() {
                    return n != 0;
                }
            }
        }
    }
    false
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Copy_ {
    Item,
    Event,
}

struct Turn {
    event: u32,
    id: Option<String>,
    has_context: bool,
    has_task: bool,
    /// The model has produced something in this turn.
    active: bool,
    closed: bool,
}

struct Call {
    event: u32,
    /// The call itself (not only an event about it) was seen.
    requested: bool,
    answered: bool,
}

/// The Codex line parser: one trace per rollout file.
#[derive(Default)]
pub struct Parser {
    ti: Option<usize>,
    root: u32,
    file: u16,
    turns: Vec<Turn>,
    /// Prompts written before the turn they start (the turn context comes after them).
    loose_prompts: Vec<u32>,
    llm: Option<u32>,
    /// The current LLM call may still receive items (no tool output or usage since).
    llm_open: bool,
    calls: HashMap<String, Call>,
    /// Text copies seen once, waiting for their twin: (role, text, which copy, event).
    unpaired: Vec<(&'static str, String, Copy_, u32)>,
    model: Option<String>,
    last_total: Option<Value>,
    warned: Vec<String>,
    /// Time of the previous record.
    prev_ts: Option<i64>,
    named: bool,
    aborted_last: bool,
    errored_last: bool,
}

impl Parser {
    fn ensure_trace(&mut self, sink: &mut Sink) -> usize {
        if let Some(i) = self.ti {
            sink.touch(i);
            return i;
        }
        let mut t = Trace::new(RunMeta {
            id: stem(&sink.path),
            format: "codex",
            source: sink.path.clone(),
            ..Default::default()
        });
        self.file = t.add_file(sink.path.clone());
        self.root = t.add(NewEvent {
            origin: Origin {
                file: self.file,
                ..Default::default()
            },
            ..NewEvent::new(EventKind::Run, "session")
        });
        let i = sink.push_trace(t);
        self.ti = Some(i);
        i
    }

    /// Where conversation events go now: the current turn, else the run.
    fn parent(&self) -> u32 {
        self.turns.last().map_or(self.root, |t| t.event)
    }

    /// An event of one record, under the current parent, its payload kept inline.
    fn add_here(&self, t: &mut Trace, r: &Rec, kind: EventKind, name: &str, status: Status, payload: Payload) -> u32 {
        t.add(NewEvent {
            parent: Parent::Index(self.parent()),
            start: r.ts,
            status,
            origin: r.origin,
            payload: PayloadRef::inline(payload),
            ..NewEvent::new(kind, name)
        })
    }

    fn start_turn(&mut self, t: &mut Trace, id: Option<&str>, ts: Option<i64>, origin: Origin) -> usize {
        let n = self.turns.len() + 1;
        let first_prompt = self.loose_prompts.first().map(|&p| t.event(p).start);
        let event = t.add(NewEvent {
            id: None,
            parent: Parent::Index(self.root),
            start: first_prompt.flatten().or(ts),
            status: Status::Pending,
            origin,
            ..NewEvent::new(EventKind::Step, &format!("turn {n}"))
        });
        for p in std::mem::take(&mut self.loose_prompts) {
            t.set_parent(p, event);
        }
        self.turns.push(Turn {
            event,
            id: id.map(str::to_string),
            has_context: false,
            has_task: false,
            active: false,
            closed: false,
        });
        self.llm = None;
        self.llm_open = false;
        self.turns.len() - 1
    }

    /// The turn a `turn_context` or `task_started` belongs to (made if new).
    fn turn_for(&mut self, t: &mut Trace, id: Option<&str>, ts: Option<i64>, origin: Origin, task: bool) -> usize {
        if let Some(id) = id
            && let Some(i) = self.turns.iter().rposition(|x| x.id.as_deref() == Some(id))
        {
            return i;
        }
        if let Some(cur) = self.turns.last_mut() {
            let free = if task { !cur.has_task } else { !cur.has_context };
            let same_id = id.is_none() || cur.id.is_none();
            if free && same_id && !cur.closed && !cur.active && self.loose_prompts.is_empty() {
                if cur.id.is_none() {
                    cur.id = id.map(str::to_string);
                }
                return self.turns.len() - 1;
            }
        }
        self.start_turn(t, id, ts, origin)
    }

    /// The LLM call model items go to: the open one, else a new one.
    fn llm_for(&mut self, t: &mut Trace, ts: Option<i64>, origin: Origin) -> u32 {
        if let (Some(l), true) = (self.llm, self.llm_open) {
            return l;
        }
        // A request starts when its input was complete: at the record before its first item.
        let start = self.prev_ts.filter(|p| ts.is_none_or(|x| *p <= x)).or(ts);
        let l = t.add(NewEvent {
            parent: Parent::Index(self.parent()),
            start,
            status: Status::Ok,
            model: self.model.as_deref(),
            origin,
            ..NewEvent::new(EventKind::LlmCall, self.model.as_deref().unwrap_or("model"))
        });
        if let Some(turn) = self.turns.last_mut() {
            turn.active = true;
        }
        self.llm = Some(l);
        self.llm_open = true;
        l
    }

    /// Keep one of the two copies of a message: true when this copy is the second one.
    fn is_twin(&mut self, role: &'static str, text: &str, copy: Copy_) -> bool {
        let text = text.trim();
        if let Some(i) = self
            .unpaired
            .iter()
            .position(|(r, x, c, _)| *r == role && *c != copy && x == text)
        {
            self.unpaired.remove(i);
            return true;
        }
        false
    }

    fn remember(&mut self, role: &'static str, text: &str, copy: Copy_, event: u32) {
        self.unpaired.push((role, text.trim().to_string(), copy, event));
        if self.unpaired.len() > 32 {
            self.unpaired.remove(0);
        }
    }

    fn message(
        &mut self,
        t: &mut Trace,
        role: &'static str,
        text: &str,
        copy: Copy_,
        r: &Rec,
        extra: Vec<(String, Value)>,
    ) {
        if text.trim().is_empty() || self.is_twin(role, text, copy) {
            return;
        }
        let (kind, name, parent) = match role {
            "user" if is_injected_context(text) => (EventKind::Message(Role::System), "context", self.parent()),
            "user" => {
                // A prompt closes the current response; it opens the next turn when the
                // current one has already run.
                self.llm_open = false;
                (EventKind::Message(Role::User), "user", self.parent())
            }
            "assistant" => {
                let l = self.llm_for(t, r.ts, r.origin);
                (EventKind::Message(Role::Assistant), "assistant", l)
            }
            "reasoning" => {
                let l = self.llm_for(t, r.ts, r.origin);
                (EventKind::Other, "reasoning", l)
            }
            "system" | "developer" => (EventKind::Message(Role::System), role, self.parent()),
            _ => (EventKind::Message(Role::Other), role, self.parent()),
        };
        let i = t.add(NewEvent {
            parent: Parent::Index(parent),
            start: r.ts,
            status: Status::Ok,
            origin: r.origin,
            payload: PayloadRef::inline(Payload {
                input: Some(Value::String(text.to_string())),
                extra,
                ..Default::default()
            }),
            ..NewEvent::new(kind, name)
        });
        if kind == EventKind::Message(Role::User) {
            let fresh = self.turns.last().is_some_and(|x| !x.active && !x.closed);
            if !fresh {
                self.loose_prompts.push(i);
            }
            if !self.named {
                self.named = true;
                t.meta.name = Some(one_line(text, 100));
            }
        }
        self.remember(role, text, copy, i);
    }

    /// A tool call item (or an event that reports one): ONE event per call_id.
    fn call(&mut self, t: &mut Trace, call_id: Option<&str>, name: &str, input: Option<Value>, r: &Rec) -> u32 {
        if let Some(id) = call_id
            && let Some(c) = self.calls.get_mut(id)
            && !c.requested
        {
            // An event about this call arrived first: the call itself fills it in.
            c.requested = true;
            let e = c.event;
            let r2 = t.strings.intern(name);
            t.event_mut(e).name = r2;
            if input.is_some() {
                t.payload_mut(e).input = input;
            }
            return e;
        }
        let l = self.llm_for(t, r.ts, r.origin);
        let e = t.add(NewEvent {
            id: call_id,
            parent: Parent::Index(l),
            start: r.ts,
            status: Status::Pending,
            origin: r.origin,
            payload: PayloadRef::inline(Payload {
                input,
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::ToolCall, name)
        });
        if let Some(id) = call_id {
            self.calls.insert(
                id.to_string(),
                Call {
                    event: e,
                    requested: true,
                    answered: false,
                },
            );
        }
        e
    }

    fn answer(t: &mut Trace, e: u32, output: Option<Value>, failed: bool, r: &Rec) {
        let ev = t.event_mut(e);
        ev.status = if failed { Status::Error } else { Status::Ok };
        if ev.origin.line != r.origin.line {
            ev.origin2 = Some(Box::new(r.origin));
        }
        if let (Some(a), Some(b)) = (ev.start, r.ts) {
            ev.duration = Some(b.saturating_sub(a).max(0));
        }
        let p = t.payload_mut(e);
        if failed && p.error.is_none() {
            p.error = Some(ErrorInfo {
                message: match output.as_ref() {
                    Some(Value::String(s)) => one_line(s, 200),
                    Some(o) if str_of(o, "output").is_some() => one_line(str_of(o, "output").unwrap_or(""), 200),
                    _ => "the tool reported a failure".into(),
                },
                ..Default::default()
            });
        }
        if output.is_some() {
            p.output = output;
        }
    }

    fn response_item(&mut self, t: &mut Trace, p: &Value, r: &Rec) {
        let ty = str_of(p, "type").unwrap_or("");
        match ty {
            "message" => {
                let role = match str_of(p, "role") {
                    Some("assistant") => "assistant",
                    Some("user") => "user",
                    Some("system") => "system",
                    Some("developer") => "developer",
                    _ => "other",
                };
                let extra = field(p, "phase")
                    .map(|x| vec![("phase".to_string(), x.clone())])
                    .unwrap_or_default();
                self.message(t, role, &message_text(p), Copy_::Item, r, extra);
            }
            "reasoning" => {
                let summary: Vec<&str> = p
                    .get("summary")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(|s| str_of(s, "text")).collect())
                    .unwrap_or_default();
                let text = if summary.is_empty() {
                    message_text(p)
                } else {
                    summary.join("\n")
                };
                if text.trim().is_empty() {
                    // Encrypted reasoning only: still a step of the response.
                    let l = self.llm_for(t, r.ts, r.origin);
                    t.add(NewEvent {
                        parent: Parent::Index(l),
                        start: r.ts,
                        status: Status::Ok,
                        origin: r.origin,
                        ..NewEvent::new(EventKind::Other, "reasoning (encrypted)")
                    });
                } else {
                    self.message(t, "reasoning", &text, Copy_::Item, r, Vec::new());
                }
            }
            x if CALL_ITEMS.contains(&x) => {
                let call_id = str_of(p, "call_id")
                    .or_else(|| str_of(p, "id"))
                    .filter(|s| !s.is_empty());
                let name = match x {
                    "function_call" | "custom_tool_call" => {
                        let n = str_of(p, "name").unwrap_or(x);
                        match str_of(p, "namespace").filter(|s| !s.is_empty()) {
                            Some(ns) => format!("{ns}.{n}"),
                            None => n.to_string(),
                        }
                    }
                    "local_shell_call" => "local_shell".to_string(),
                    "tool_search_call" => "tool_search".to_string(),
                    "web_search_call" => "web_search".to_string(),
                    _ => "image_generation".to_string(),
                };
                let input = match x {
                    "function_call" | "tool_search_call" => p.get("arguments").map(super::decode_embedded),
                    "custom_tool_call" => p.get("input").map(super::decode_embedded),
                    "local_shell_call" | "web_search_call" => p.get("action").cloned(),
                    _ => p.get("revised_prompt").cloned(),
                };
                let e = self.call(t, call_id, &name, input, r);
                // Web searches and image generations finish inside the response.
                if matches!(x, "web_search_call" | "image_generation_call")
                    && let Some(st) = str_of(p, "status")
                {
                    let out = field(p, "result").cloned();
                    Self::answer(t, e, out, matches!(st, "failed" | "incomplete"), r);
                    if let Some(id) = call_id
                        && let Some(c) = self.calls.get_mut(id)
                    {
                        c.answered = true;
                    }
                }
            }
            x if OUTPUT_ITEMS.contains(&x) => {
                let call_id = str_of(p, "call_id").unwrap_or("");
                let output = match x {
                    "tool_search_output" => p.get("tools").cloned(),
                    _ => p.get("output").map(super::decode_embedded),
                };
                let failed = output.as_ref().is_some_and(output_failed);
                // Tool output goes back to the model: the next item is a new request.
                self.llm_open = false;
                match self.calls.get_mut(call_id).filter(|c| !c.answered) {
                    Some(c) => {
                        c.answered = true;
                        let e = c.event;
                        Self::answer(t, e, output, failed, r);
                    }
                    None => {
                        t.diagnostics.push(Diagnostic::warning(
                            t.meta.source.clone(),
                            Some(r.line),
                            format!("{x} for call_id {call_id:?} matches no open call; shown on its own"),
                        ));
                        self.add_here(
                            t,
                            r,
                            EventKind::Message(Role::Tool),
                            x,
                            if failed { Status::Error } else { Status::Ok },
                            Payload {
                                output,
                                ..Default::default()
                            },
                        );
                    }
                }
            }
            "agent_message" => {
                // Messages between agents of a multi-agent session.
                let who = format!(
                    "agent message {} → {}",
                    str_of(p, "author").unwrap_or("?"),
                    str_of(p, "recipient").unwrap_or("?")
                );
                self.add_here(
                    t,
                    r,
                    EventKind::Message(Role::Other),
                    &who,
                    Status::Ok,
                    Payload {
                        input: p.get("content").cloned(),
                        ..Default::default()
                    },
                );
            }
            _ => {
                let name = if ty.is_empty() { "response item" } else { ty };
                self.add_here(
                    t,
                    r,
                    EventKind::Other,
                    name,
                    Status::Ok,
                    Payload {
                        input: Some(p.clone()),
                        ..Default::default()
                    },
                );
            }
        }
    }

    fn event_msg(&mut self, t: &mut Trace, p: &Value, r: &Rec) {
        let ty = str_of(p, "type").unwrap_or("");
        match ty {
            "user_message" => {
                let text = str_of(p, "message").unwrap_or("");
                self.message(t, "user", text, Copy_::Event, r, Vec::new());
            }
            "agent_message" => {
                let text = str_of(p, "message").unwrap_or("");
                let extra = field(p, "phase")
                    .map(|x| vec![("phase".to_string(), x.clone())])
                    .unwrap_or_default();
                self.message(t, "assistant", text, Copy_::Event, r, extra);
            }
            "agent_reasoning" | "agent_reasoning_raw_content" => {
                let text = str_of(p, "text").unwrap_or("");
                self.message(t, "reasoning", text, Copy_::Event, r, Vec::new());
            }
            "task_started" | "turn_started" => {
                let id = str_of(p, "turn_id");
                let i = self.turn_for(t, id, r.ts, r.origin, true);
                self.turns[i].has_task = true;
            }
            "task_complete" | "turn_complete" | "turn_aborted" => {
                let id = str_of(p, "turn_id");
                let i = match id.and_then(|id| self.turns.iter().rposition(|x| x.id.as_deref() == Some(id))) {
                    Some(i) => i,
                    None if !self.turns.is_empty() => self.turns.len() - 1,
                    None => self.start_turn(t, id, r.ts, r.origin),
                };
                let turn = &mut self.turns[i];
                turn.closed = true;
                let e = turn.event;
                let error = if ty == "turn_aborted" {
                    Some(ErrorInfo {
                        kind: Some("aborted".into()),
                        message: format!("turn aborted: {}", str_of(p, "reason").unwrap_or("unknown reason")),
                        ..Default::default()
                    })
                } else {
                    field(p, "error").and_then(ErrorInfo::from_value)
                };
                let ev = t.event_mut(e);
                // A turn aborted first and completed after stays aborted.
                if ev.status != Status::Error {
                    ev.status = if error.is_some() { Status::Error } else { Status::Ok };
                }
                ev.origin2 = Some(Box::new(r.origin));
                if let Some(ms) = lenient_u64(p.get("duration_ms")) {
                    ev.duration = Some((ms.min(i64::MAX as u64 / 1_000_000) as i64) * 1_000_000);
                } else if let (Some(a), Some(b)) = (ev.start, r.ts) {
                    ev.duration = Some(b.saturating_sub(a).max(0));
                }
                if error.is_some() {
                    t.payload_mut(e).error = error;
                }
                self.aborted_last = t.event(e).status == Status::Error;
                self.llm_open = false;
            }
            "token_count" => self.token_count(t, p, r),
            "error" | "stream_error" => {
                self.errored_last = ty == "error";
                self.add_here(
                    t,
                    r,
                    EventKind::Error,
                    ty,
                    Status::Error,
                    Payload {
                        error: Some(ErrorInfo {
                            kind: field(p, "codex_error_info").map(|c| match c {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            }),
                            message: str_of(p, "message").unwrap_or("error").to_string(),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                );
            }
            "thread_name_updated" => {
                if let Some(n) = str_of(p, "thread_name").filter(|s| !s.trim().is_empty()) {
                    self.named = true;
                    t.meta.name = Some(one_line(n, 100));
                }
            }
            _ => {
                let call_id = str_of(p, "call_id").or_else(|| str_of(p, "callId"));
                if let Some(id) = call_id {
                    self.call_event(t, ty, id, p, r);
                } else if SHOWN_EVENTS.contains(&ty) {
                    let kind = if ty == "context_compacted" {
                        EventKind::State
                    } else {
                        EventKind::Other
                    };
                    let input = Payload {
                        input: Some(p.clone()),
                        ..Default::default()
                    };
                    self.add_here(t, r, kind, ty, Status::Ok, input);
                }
            }
        }
    }

    /// An `event_msg` about a tool call (`exec_command_end`, `mcp_tool_call_end`, ...): it
    /// completes the call of the same `call_id`, or stands for a call the items do not show.
    fn call_event(&mut self, t: &mut Trace, ty: &str, call_id: &str, p: &Value, r: &Rec) {
        let begin = ty.ends_with("_begin") || ty.ends_with("_request");
        let name = match (str_of(p, "tool"), p.get("invocation")) {
            (Some(tool), _) => tool.to_string(),
            (None, Some(inv)) => match (str_of(inv, "server"), str_of(inv, "tool")) {
                (Some(s), Some(tl)) => format!("{s}.{tl}"),
                (_, Some(tl)) => tl.to_string(),
                _ => ty.to_string(),
            },
            _ => ty
                .trim_end_matches("_end")
                .trim_end_matches("_begin")
                .trim_end_matches("_request")
                .trim_end_matches("_response")
                .to_string(),
        };
        let e = match self.calls.get(call_id) {
            Some(c) => c.event,
            None => {
                let input = p
                    .get("arguments")
                    .or_else(|| p.get("invocation").and_then(|i| i.get("arguments")))
                    .or_else(|| p.get("command"))
                    .cloned();
                let l = self.llm_for(t, r.ts, r.origin);
                let e = t.add(NewEvent {
                    id: Some(call_id),
                    parent: Parent::Index(l),
                    start: r.ts,
                    status: Status::Pending,
                    origin: r.origin,
                    payload: PayloadRef::inline(Payload {
                        input,
                        ..Default::default()
                    }),
                    ..NewEvent::new(EventKind::ToolCall, &name)
                });
                self.calls.insert(
                    call_id.to_string(),
                    Call {
                        event: e,
                        requested: false,
                        answered: false,
                    },
                );
                e
            }
        };
        t.payload_mut(e).set_extra(ty, p.clone());
        if begin {
            return;
        }
        let failed = p.get("success") == Some(&Value::Bool(false))
            || p.get("exit_code").and_then(Value::as_i64).is_some_and(|c| c != 0)
            || matches!(str_of(p, "status"), Some("failed" | "error" | "errored"))
            || p.get("result").and_then(|x| x.get("Err")).is_some()
            || field(p, "error").is_some();
        let answered = self.calls.get(call_id).is_some_and(|c| c.answered);
        if !answered {
            let output = p
                .get("result")
                .or_else(|| p.get("aggregated_output"))
                .or_else(|| p.get("formatted_output"))
                .or_else(|| p.get("content_items"))
                .cloned();
            Self::answer(t, e, output, failed, r);
        } else if failed {
            t.event_mut(e).status = Status::Error;
        }
        if let Some(c) = self.calls.get_mut(call_id) {
            c.answered = true;
        }
    }

    fn token_count(&mut self, t: &mut Trace, p: &Value, r: &Rec) {
        let Some(info) = field(p, "info") else { return };
        let total = field(info, "total_token_usage");
        // Codex repeats a count when only the rate limits changed: same total, no new call.
        if let (Some(tot), Some(prev)) = (total, self.last_total.as_ref())
            && tot == prev
        {
            return;
        }
        let n = |v: Option<&Value>, k: &str| v.and_then(|v| lenient_u64(v.get(k)));
        let delta = match (field(info, "last_token_usage"), total, self.last_total.as_ref()) {
            (Some(last), _, _) => last.clone(),
            (None, Some(tot), Some(prev)) => {
                let mut m = serde_json::Map::new();
                if let (Some(o), Some(_)) = (tot.as_object(), prev.as_object()) {
                    for (k, v) in o {
                        if let (Some(a), Some(b)) = (v.as_u64(), prev.get(k).and_then(Value::as_u64)) {
                            m.insert(k.clone(), Value::from(a.saturating_sub(b)));
                        }
                    }
                }
                Value::Object(m)
            }
            (None, Some(tot), None) => tot.clone(),
            (None, None, _) => return,
        };
        if let Some(tot) = total {
            self.last_total = Some(tot.clone());
        }
        if let Some(m) = str_of(info, "model").filter(|m| !m.is_empty()) {
            self.model = Some(m.to_string());
        }
        let usage = Usage {
            input: n(Some(&delta), "input_tokens"),
            output: n(Some(&delta), "output_tokens"),
            total: n(Some(&delta), "total_tokens"),
        };
        // The usage belongs to the latest call of this turn that has none; a count with no
        // call before it (usage-only rollouts) is a call of its own.
        let parent = self.parent();
        let target = self
            .llm
            .filter(|&l| t.event(l).usage.is_none() && t.event(l).parent == parent);
        let l = match target {
            Some(l) => l,
            None => {
                self.llm_open = false;
                self.llm_for(t, r.ts, r.origin)
            }
        };
        let model = self.model.clone();
        let ev = t.event_mut(l);
        ev.usage = (!usage.is_empty()).then(|| Box::new(usage));
        if let (Some(a), Some(b)) = (ev.start, r.ts) {
            ev.duration = Some(b.saturating_sub(a).max(0));
        }
        if ev.origin2.is_none() && ev.origin.line != r.origin.line {
            ev.origin2 = Some(Box::new(r.origin));
        }
        if ev.model.is_empty()
            && let Some(m) = model.as_deref()
        {
            let mr = t.strings.intern(m);
            let ev = t.event_mut(l);
            ev.model = mr;
            ev.name = mr;
        }
        t.payload_mut(l).set_extra("usage", delta);
        self.llm_open = false;
    }
}

struct Rec {
    ts: Option<i64>,
    origin: Origin,
    line: u64,
}

impl LineParser for Parser {
    fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let Some(v) = sink.parse::<Value>(line, loc) else {
            return;
        };
        if !v.is_object() {
            sink.error(loc.line, "not a JSON object");
            return;
        }
        let ti = self.ensure_trace(sink);
        let r = Rec {
            ts: v.get("timestamp").and_then(parse_timestamp),
            origin: loc.origin(self.file),
            line: loc.line,
        };
        let t = &mut sink.traces[ti];
        // Normalise the pre-envelope shape: a header, then bare items.
        let (ty, payload) = match (str_of(&v, "type"), v.get("payload")) {
            (Some(ty), Some(p)) if ENVELOPE_TYPES.contains(&ty) || p.is_object() => (ty.to_string(), p),
            (_, _) if v.get("record_type").is_some() => return,
            (Some(_), None) => ("response_item".to_string(), &v),
            (None, None) if v.get("id").is_some() && loc.line <= 2 => ("session_meta".to_string(), &v),
            _ => {
                sink.error(loc.line, "neither a rollout envelope nor a response item");
                return;
            }
        };
        match ty.as_str() {
            "session_meta" => {
                if t.meta.attributes.is_empty() {
                    if let Some(id) = str_of(payload, "id").filter(|s| !s.is_empty()) {
                        t.meta
                            .attributes
                            .push(("session_id".into(), Value::String(id.to_string())));
                    }
                    for k in ["cwd", "cli_version", "originator", "source", "model_provider", "git"] {
                        if let Some(x) = field(payload, k) {
                            t.meta.attributes.push((k.to_string(), x.clone()));
                        }
                    }
                    if let Some(ts) = payload.get("timestamp").and_then(parse_timestamp) {
                        t.meta.start = Some(ts);
                    }
                    if let Some(x) =
                        field(payload, "instructions").filter(|x| x.as_str().is_some_and(|s| !s.is_empty()))
                    {
                        let root = self.root;
                        t.payload_mut(root).input = Some(x.clone());
                    }
                }
            }
            "turn_context" => {
                let model = str_of(payload, "model").or_else(|| {
                    payload
                        .get("collaboration_mode")
                        .and_then(|c| c.get("settings"))
                        .and_then(|s| str_of(s, "model"))
                });
                if let Some(m) = model.filter(|m| !m.is_empty()) {
                    self.model = Some(m.to_string());
                }
                let i = self.turn_for(t, str_of(payload, "turn_id"), r.ts, r.origin, false);
                self.turns[i].has_context = true;
                let e = self.turns[i].event;
                if let Some(m) = self.model.as_deref() {
                    let mr = t.strings.intern(m);
                    t.event_mut(e).model = mr;
                }
                let keep: serde_json::Map<String, Value> =
                    ["model", "effort", "approval_policy", "sandbox_policy", "cwd"]
                        .iter()
                        .filter_map(|k| field(payload, k).map(|x| (k.to_string(), x.clone())))
                        .collect();
                t.payload_mut(e).set_extra("turn_context", Value::Object(keep));
            }
            "response_item" => self.response_item(t, payload, &r),
            "event_msg" => self.event_msg(t, payload, &r),
            "compacted" => {
                self.add_here(
                    t,
                    &r,
                    EventKind::State,
                    "compacted",
                    Status::Ok,
                    Payload {
                        input: field(payload, "message").cloned(),
                        ..Default::default()
                    },
                );
            }
            other if QUIET_TYPES.contains(&other) => {}
            other => {
                if self.warned.len() < 100 && !self.warned.iter().any(|w| w == other) {
                    self.warned.push(other.to_string());
                    sink.warning(
                        Some(loc.line),
                        format!("record type {other:?} is not known to tracetui; skipped (and any more of that type)"),
                    );
                }
            }
        }
        if r.ts.is_some() {
            self.prev_ts = r.ts;
        }
    }

    fn settle(&mut self, sink: &mut Sink) {
        let Some(ti) = self.ti else { return };
        let t = &mut sink.traces[ti];
        let pending = t
            .events
            .iter()
            .any(|e| e.kind == EventKind::ToolCall && e.status == Status::Pending);
        let last_turn = self.turns.last();
        // A rollout has no end marker of its own: an open turn or an unanswered call means
        // the session is running (or stopped there); a finished last turn decides otherwise.
        let status = if self.aborted_last && last_turn.is_some_and(|x| x.closed) {
            RunStatus::Error
        } else if pending || last_turn.is_some_and(|x| !x.closed && x.has_task) {
            RunStatus::Running
        } else if self.errored_last {
            RunStatus::Error
        } else if last_turn.is_some_and(|x| x.closed) || self.llm.is_some() {
            RunStatus::Ok
        } else {
            RunStatus::Unknown
        };
        t.meta.status = status;
        t.meta.model = self.model.clone();
        let (lo, hi) = t.events_span();
        t.meta.start = t.meta.start.or(lo);
        let start = t.meta.start.or(lo);
        let root = t.event_mut(self.root);
        root.start = start;
        if let (Some(a), Some(b)) = (root.start, hi) {
            root.duration = Some(b.saturating_sub(a).max(0));
        }
        root.status = match status {
            RunStatus::Running => Status::Pending,
            RunStatus::Ok => Status::Ok,
            RunStatus::Error => Status::Error,
            RunStatus::Unknown => Status::Unknown,
        };
        // Turns without their task events end when the next one starts.
        let n = self.turns.len();
        for (i, turn) in self.turns.iter().enumerate() {
            let e = t.event(turn.event);
            if !turn.has_task && e.status == Status::Pending && (i + 1 < n || status != RunStatus::Running) {
                t.event_mut(turn.event).status = Status::Ok;
            }
        }
        if let Some(name) = t.meta.name.clone() {
            let r = t.strings.intern(&name);
            t.event_mut(self.root).name = r;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::outline as tree;
    use std::io::Write;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        crate::formats::testing::fixture("codex", name)
    }

    #[test]
    fn detection_is_precise() {
        let p = |s: &str| Probe::from_bytes(Path::new("x.jsonl"), s.as_bytes().to_vec(), true);
        for f in ["rollout-turns.jsonl", "rollout-legacy.jsonl"] {
            let text = std::fs::read_to_string(fixture(f)).unwrap();
            assert!(Codex.detect(&p(&text)) >= 85, "{f}");
        }
        for other in [
            r#"{"event_type":"RUN_START","event_id":"a","payload":{}}"#,
            r#"{"type":"episode_start","episode_id":"e","timestamp":1}"#,
            "{\"id\":\"x\",\"timestamp\":1}\n{\"role\":\"user\",\"content\":\"hi\"}",
            r#"[{"role":"user","content":"hi"}]"#,
            r#"{"messages":[{"role":"user","content":"hi"}]}"#,
            r#"{"version":1,"tools":[]}"#,
            r#"{"parentUuid":null,"sessionId":"s","type":"user","uuid":"u"}"#,
        ] {
            assert_eq!(Codex.detect(&p(other)), 0, "{other}");
        }
    }

    #[test]
    fn turns_calls_tokens_and_text_taken_once() {
        let l = Codex.load(&fixture("rollout-turns.jsonl")).unwrap();
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let tr = tree(t);
        let expect = [
            "run Rename the config loader",
            "  message context",
            "  step turn 1",
            "    message user",
            "    llm gpt-test-codex",
            "      other reasoning",
            "      message assistant",
            "      tool shell",
            "    llm gpt-test-codex",
            "      tool apply_patch",
            "    llm gpt-test-codex",
            "      message assistant",
            "  step turn 2",
            "    message user",
            "    llm gpt-test-codex",
            "      tool exec_command",
        ];
        assert_eq!(tr, expect, "{tr:#?}");
        let c = t.counts();
        assert_eq!(c.tool_calls, 3);
        // Tokens: 100+20 then a repeated count (skipped), then deltas 300+30 and 50+5.
        assert_eq!(c.tokens, 120 + 330 + 55);
        let shell = t.find("call_a").unwrap();
        let p = super::super::payload(t, t.event(shell));
        assert_eq!(p.input.unwrap()["command"][0], "rg", "arguments JSON string parsed");
        assert_eq!(t.event(shell).status, Status::Ok);
        let patch = t.find("call_b").unwrap();
        assert_eq!(t.event(patch).status, Status::Error, "exit code 1");
        // The last turn's call never got its output: still running.
        assert_eq!(t.event(t.find("call_c").unwrap()).status, Status::Pending);
        assert_eq!(t.meta.status, RunStatus::Running);
        assert_eq!(t.meta.model.as_deref(), Some("gpt-test-codex"));
    }

    #[test]
    fn legacy_rollouts_and_placeholder_times_load() {
        let l = Codex.load(&fixture("rollout-legacy.jsonl")).unwrap();
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.counts().tool_calls, 1);
        assert_eq!(t.meta.name.as_deref(), Some("List the files"));
        let call = t.find("c1").unwrap();
        assert_eq!(t.event(call).status, Status::Ok);
        assert!(t.events.iter().all(|e| e.start.is_none()), "no clock is invented");
    }

    #[test]
    fn damaged_lines_are_diagnosed_and_the_rest_loads() {
        let l = Codex.load(&fixture("rollout-damaged.jsonl")).unwrap();
        let t = &l.traces[0];
        let lines: Vec<_> = t.diagnostics.iter().map(|d| (d.line, d.severity)).collect();
        assert_eq!(
            lines,
            vec![
                (Some(3), Severity::Error),
                (Some(4), Severity::Warning),
                (Some(6), Severity::Warning)
            ],
            "{:?}",
            t.diagnostics
        );
        assert_eq!(t.counts().tool_calls, 1);
    }

    #[test]
    fn following_a_rollout_answers_calls_as_outputs_arrive() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("rollout-live.jsonl");
        let src = std::fs::read_to_string(fixture("rollout-turns.jsonl")).unwrap();
        let lines: Vec<&str> = src.lines().collect();
        let cut = lines.iter().position(|l| l.contains("function_call_output")).unwrap();
        std::fs::write(&path, lines[..cut].join("\n") + "\n").unwrap();
        let mut f = Codex.follow(&path).unwrap();
        f.poll().unwrap();
        f.poll().unwrap();
        let t = &f.sink.traces[0];
        assert_eq!(t.event(t.find("call_a").unwrap()).status, Status::Pending);
        assert_eq!(t.meta.status, RunStatus::Running);
        let mut w = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        for l in &lines[cut..] {
            writeln!(w, "{l}").unwrap();
        }
        drop(w);
        f.poll().unwrap();
        let t = &f.sink.traces[0];
        assert_eq!(t.event(t.find("call_a").unwrap()).status, Status::Ok);
        let full = Codex.load(&fixture("rollout-turns.jsonl")).unwrap();
        assert_eq!(tree(t), tree(&full.traces[0]), "a followed file reads as a full load");
    }

    // Arbitrary bytes: tests/parsers_never_panic.rs feeds them to every format.
    proptest::proptest! {
        #[test]
        fn arbitrary_records_never_panic(lines in proptest::collection::vec(record_strategy(), 0..14)) {
            let d = tempfile::tempdir().unwrap();
            let p = d.path().join("r.jsonl");
            std::fs::write(&p, lines.join("\n")).unwrap();
            let _ = Codex.load(&p);
        }
    }

    fn record_strategy() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let outer = prop_oneof![
            Just("session_meta"),
            Just("turn_context"),
            Just("response_item"),
            Just("event_msg"),
            Just("compacted"),
            Just("zzz")
        ];
        let inner = prop_oneof![
            Just("message"),
            Just("function_call"),
            Just("function_call_output"),
            Just("web_search_call"),
            Just("reasoning"),
            Just("token_count"),
            Just("task_started"),
            Just("task_complete"),
            Just("turn_aborted"),
            Just("exec_command_end"),
            Just("user_message"),
            Just("agent_message"),
        ];
        let val = prop_oneof![
            Just(Value::Null),
            "[a-z_ ]{0,6}".prop_map(Value::String),
            any::<i64>().prop_map(Value::from),
            Just(serde_json::json!({"input_tokens": 5, "output_tokens": 2})),
            Just(serde_json::json!([{"type": "input_text", "text": "hi"}])),
        ];
        (outer, inner, val.clone(), val.clone(), val).prop_map(|(o, i, a, b, c)| {
            serde_json::json!({
                "timestamp": a, "type": o,
                "payload": {"type": i, "call_id": "c", "turn_id": b, "role": "user", "content": c,
                    "arguments": a, "output": b, "message": a, "model": b,
                    "info": {"total_token_usage": c, "last_token_usage": a}}
            })
            .to_string()
        })
    }
}
