//! OpenAI Codex CLI rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`.
//! Each line is an envelope `{timestamp, ordinal?, type, payload}` (Codex's `RolloutItem`,
//! codex-rs/history): `session_meta`, `turn_context`, `response_item` (the model's items:
//! messages, reasoning, tool calls and their outputs), `event_msg` (UI events: user/agent
//! messages again, token counts, task start/complete, completed items), `compacted`,
//! `token_usage_record` (0.17x: the usage of one response), `world_state`,
//! `inter_agent_communication(_metadata)`, `security_risk_score`, `retained_context`,
//! `realtime_item`. Older rollouts (before the envelope) hold a first line
//! `{id, timestamp, instructions}` followed by bare response items and `{record_type: state}`.
//!
//! Traps: the user's and the agent's text exist twice (a `response_item` message and an
//! `event_msg` copy; newer ones an `item_completed` copy): the first copy is kept; `arguments`
//! is a JSON string; outputs come back by `call_id`; `token_count` repeats cumulative totals
//! (deltas are taken, repeats skipped); timestamps may be placeholders (`"[trimmed]"`): never
//! needed for the tree. A tool may have a `namespace` (`multi_agent_v1` for the sub-agent
//! tools spawn_agent / wait_agent / send_input / close_agent / resume_agent, a dynamic tool's
//! group): the call keeps the tool's own name, its payload shows the namespace. An
//! `item_completed` of a call (`CommandExecution`, `CollabAgentToolCall`, ...) has the call's
//! id: its status and exit code end the call (it comes before the output item); one of an id
//! that is no call is not made a call. Drift (formats/mod.rs): a record type, or a
//! `response_item` / `event_msg` payload type, this reader does not know is skipped quietly,
//! counted, and shown as a generic event when it carries text; the known ones that carry
//! nothing for the tree (deltas, `world_state`, `thread_settings_applied` but for its model)
//! are read quietly and not counted.
//!
//! Tokens: a call's usage is its `token_count`'s `last_token_usage`; a count with only the
//! session's running `total_token_usage` gives the difference from the previous total (the
//! first such count: the total itself, so a rollout with totals only still adds up to its
//! last total). Codex counts as OpenAI does: `input_tokens` include `cached_input_tokens`
//! (and `cache_write_input_tokens`), `output_tokens` include `reasoning_output_tokens`; both
//! are subtracted for the normalized input and output. `total_tokens` is kept as written.
//! Newer rollouts also write a `token_usage_record` per response, as it completes (before the
//! tool outputs), and its `token_count` after them, with the same numbers: whichever of the two
//! comes first gives the response's call its usage, the other is matched to it (same
//! `usage` / `last_token_usage`, or same thread total) and adds nothing. A rollout of either
//! alone reads as before. A record with no call open (a remote compaction's request) is a call
//! of its own; `compacted.latest_token_usage_record` is a copy, never counted.
//!
//! Tree: run → turns (from `turn_context` / `task_started`) → user prompt and model responses
//! (an LLM call per sampling request, closed by its usage or by tool output) → the response's
//! reasoning, messages and tool calls. `compacted` is a State event where the context was cut
//! (its summary, window and the number of items of the history that replaced it).
//!
//! Sub-agents (multi_agent_v1): a sub-agent's rollout is a thread of its own, in its own file,
//! whose `session_meta` names its parent (`parent_thread_id`, `source.subagent.thread_spawn`)
//! and its `agent_nickname`. Read alone it is a run (those are attributes). When discovery finds
//! it with its parent ([`Format::lineage`] reads the head of each rollout), it is read into the
//! parent's trace ([`Parser`], [`Format::load_nested`]) under a container event `agent
//! <nickname>` that hangs under the call that spawned it (the spawn's `item_completed`
//! `receiver_thread_ids`, or an older `collab_agent_spawn_end`'s `new_thread_id`), and is
//! listed once. A spawned thread whose rollout appears beside one already read while the run
//! is followed joins it (Codex names each rollout by its thread id).
//!
//! Loading (DESIGN §4, `engine`): the common records (messages, reasoning, calls, outputs,
//! token counts, turn records) are skimmed typed and borrowed, in parallel; serde_json reads
//! the rest. Payloads stay on disk: an event's first record is its `origin`, its second (a
//! call's output, an LLM call's usage, the record that closed a turn) its `origin2`, and
//! `decode_payload` reads them when shown. A record beyond those two (a begin event of a
//! call, an end event after its output) adds to the index (status, timing), not to the payload.

use super::engine::{self, Records};
use super::jsonl::{Follow, LineLoc, LineParser, Sink};
use super::skim::{Seen, Skim};
use super::{
    Format, LoadError, Loaded, Probe, decode_embedded, decode_embedded_owned, field, json_or_string, lenient_u64, stem,
    str_of,
};
use crate::model::*;
use rustc_hash::FxHashMap;
use serde_json::Value;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub struct Codex;

const ENVELOPE_TYPES: [&str; 5] = [
    "session_meta",
    "turn_context",
    "response_item",
    "event_msg",
    "compacted",
];

/// Top-level records that carry nothing for the tree (snapshots of the instructions, delivery
/// bookkeeping, a guardian's risk score).
const QUIET_TYPES: [&str; 3] = [
    "world_state",
    "inter_agent_communication_metadata",
    "security_risk_score",
];

/// Top-level records shown as a generic event when they carry text (a retained answer, a
/// realtime transcript segment), else quiet.
const TEXT_TYPES: [&str; 2] = ["retained_context", "realtime_item"];

/// Fields of the envelope, left out of a generic event's record (the drift rule).
const ENVELOPE_FIELDS: [&str; 3] = ["timestamp", "ordinal", "type"];

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
/// Other response items Codex persists (`should_persist_response_item`), shown as generic
/// events; `compaction_trigger` and `other` of older versions too.
const OTHER_ITEMS: [&str; 5] = [
    "ghost_snapshot",
    "additional_tools",
    "compaction_trigger",
    "other",
    "configuration_update",
];

/// `event_msg` kinds shown as generic events (the rest are UI notifications).
const SHOWN_EVENTS: [&str; 9] = [
    "warning",
    "entered_review_mode",
    "exited_review_mode",
    "context_compacted",
    "undo_completed",
    "guardian_assessment",
    "thread_goal_updated",
    "plan_update",
    "sub_agent_activity",
];

/// `event_msg` kinds Codex writes (its `EventMsg`, codex-rs/protocol; the persisted ones in
/// codex-rs/rollout/src/policy.rs, older names too) that carry nothing the tree needs beyond
/// what the reader takes from them elsewhere: known, so not counted as drift.
const QUIET_EVENTS: [&str; 49] = [
    "undo_started",
    "sub_agent_run_begin",
    "sub_agent_run_end",
    "ask_user_question_request",
    "session_configured",
    "thread_rolled_back",
    "item_started",
    "item_updated",
    "agent_message_delta",
    "agent_message_content_delta",
    "agent_reasoning_delta",
    "agent_reasoning_raw_content_delta",
    "agent_reasoning_section_break",
    "reasoning_content_delta",
    "reasoning_raw_content_delta",
    "plan_delta",
    "raw_response_item",
    "turn_diff",
    "get_history_entry_response",
    "mcp_list_tools_response",
    "list_custom_prompts_response",
    "list_skills_response",
    "list_models_response",
    "mcp_startup_update",
    "mcp_startup_complete",
    "background_event",
    "shutdown_complete",
    "deprecation_notice",
    "hook_started",
    "hook_completed",
    "realtime_conversation_started",
    "realtime_conversation_sdp",
    "realtime_conversation_realtime",
    "realtime_conversation_closed",
    "realtime_conversation_list_voices_response",
    "safety_buffering",
    "model_reroute",
    "model_verification",
    "turn_moderation_metadata",
    "guardian_warning",
    "request_user_input",
    "request_permissions",
    "elicitation_request",
    "user_message_delta",
    "conversation_path",
    "skills_update_available",
    "task_started_notification",
    "context_window_exceeded",
    "rate_limits_updated",
];

/// `event_msg` kinds about one tool call (a `call_id` names it): they complete or report it.
const CALL_EVENTS: [&str; 28] = [
    "exec_command_begin",
    "exec_command_end",
    "exec_command_output_delta",
    "exec_approval_request",
    "terminal_interaction",
    "apply_patch_approval_request",
    "patch_apply_begin",
    "patch_apply_end",
    "patch_apply_updated",
    "mcp_tool_call_begin",
    "mcp_tool_call_end",
    "web_search_begin",
    "web_search_end",
    "image_generation_begin",
    "image_generation_end",
    "view_image_tool_call",
    "dynamic_tool_call_request",
    "dynamic_tool_call_response",
    "collab_agent_spawn_begin",
    "collab_agent_spawn_end",
    "collab_agent_interaction_begin",
    "collab_agent_interaction_end",
    "collab_waiting_begin",
    "collab_waiting_end",
    "collab_close_begin",
    "collab_close_end",
    "collab_resume_begin",
    "collab_resume_end",
];

impl Format for Codex {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
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
        if is_envelope(first) {
            return 95;
        }
        // Records of types this reader does not know may come first (drift): then the first
        // known one decides, every record before it being an envelope too.
        if first.get("payload").is_some() && str_of(first, "type").is_some() {
            let head: Vec<&Value> = p.lines().take(20).collect();
            if let Some(k) = head.iter().position(|v| is_envelope(v)) {
                let all = head[..k]
                    .iter()
                    .all(|v| v.get("payload").is_some() && str_of(v, "type").is_some());
                return if all { 90 } else { 0 };
            }
        }
        // Pre-envelope rollouts: a `{id, timestamp}` header, then bare Responses API items.
        let header = first.get("id").is_some_and(Value::is_string)
            && first.get("timestamp").is_some()
            && first.get("type").is_none()
            && first.get("role").is_none();
        // Only a header makes the next lines worth reading.
        let items = header
            && lines.skip(1).any(|v| {
                v.get("record_type").and_then(Value::as_str) == Some("state")
                    || str_of(v, "type").is_some_and(|t| CALL_ITEMS.contains(&t) || OUTPUT_ITEMS.contains(&t))
                    || (str_of(v, "type") == Some("message") && has_responses_parts(v))
            });
        if header && items { 85 } else { 0 }
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        self.load_nested(path, None)
    }

    fn load_nested(&self, path: &Path, nested: Option<&[PathBuf]>) -> Result<Loaded, LoadError> {
        let mut f = self.follow_nested(path, nested).expect("codex is line-oriented");
        f.poll()?;
        f.finish("Codex rollout records")
    }

    fn summary_inputs(&self, path: &Path) -> Option<Vec<PathBuf>> {
        Some(vec![path.to_path_buf()])
    }

    fn follow(&self, path: &Path) -> Option<Follow> {
        self.follow_nested(path, None)
    }

    fn follow_nested(&self, path: &Path, nested: Option<&[PathBuf]>) -> Option<Follow> {
        let nested = nested.map(<[PathBuf]>::to_vec);
        Some(Follow::new(
            path,
            Box::new(move || Box::new(Parser::new(nested.clone())) as Box<dyn LineParser>),
        ))
    }

    fn nests(&self) -> bool {
        true
    }

    fn lineage(&self, path: &Path) -> Option<super::Lineage> {
        lineage(path)
    }

    fn decode_payload(&self, _trace: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
        decode(ev, raw)
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

/// Instructions and environment Codex injects as user messages: shown as context.
fn is_injected_context(text: &str) -> bool {
    let t = text.trim_start();
    [
        "<environment_context>",
        "<user_instructions>",
        "# AGENTS.md instructions",
        "<permissions",
        // A sub-agent's news, relayed to its parent as a user message.
        "<subagent_notification>",
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
    out.as_str().is_some_and(|s| text_failed(s.as_bytes()))
}

/// The exit code a text output reports, if any, is not 0.
fn text_failed(s: &[u8]) -> bool {
    use memchr::memmem::Finder;
    use std::sync::LazyLock;
    // Outputs are most of a rollout's bytes: searched with SIMD, not `str::find`.
    static PREFIXES: LazyLock<[Finder<'static>; 2]> =
        LazyLock::new(|| [Finder::new("Exit code: "), Finder::new("Process exited with code ")]);
    for f in PREFIXES.iter() {
        if let Some(i) = f.find(s) {
            let rest = &s[i + f.needle().len()..];
            let n = rest.iter().take_while(|c| c.is_ascii_digit() || **c == b'-').count();
            // ASCII digits and '-': valid UTF-8.
            if let Ok(n) = std::str::from_utf8(&rest[..n]).unwrap_or("").parse::<i64>() {
                return n != 0;
            }
        }
    }
    false
}

/// `output_failed(decode_embedded(output))` from the output's raw JSON text. The common output,
/// a text that is not JSON, is read where it lies: with no `\u` escape, the prefixes and the
/// digits after them read the same escaped or not. None: the raw text is not valid JSON.
fn raw_output_failed(raw: &[u8]) -> Option<bool> {
    if let [b'"', inner @ .., b'"'] = raw {
        let plain = match inner.first() {
            None => true,
            // Not JSON inside (the text starts with none of `{ [ "` or whitespace) and no `\u`.
            Some(&b) => b.is_ascii_graphic() && !matches!(b, b'{' | b'[' | b'"' | b'\\') && !has_unicode_escape(inner),
        };
        if plain {
            return Some(text_failed(inner));
        }
        let s: String = serde_json::from_slice(raw).ok()?;
        return Some(output_failed(&json_or_string(&s)));
    }
    let v: Value = serde_json::from_slice(raw).ok()?;
    Some(output_failed(&decode_embedded_owned(v)))
}

/// Whether a `\u` escape may occur in the raw text of a string (also true for an escaped
/// backslash before a `u`: then the text is decoded, which is only slower). One SIMD pass:
/// outputs are full of `\n`, and stopping at each backslash cost more.
fn has_unicode_escape(s: &[u8]) -> bool {
    use std::sync::LazyLock;
    static FINDER: LazyLock<memchr::memmem::Finder<'static>> = LazyLock::new(|| memchr::memmem::Finder::new("\\u"));
    FINDER.find(s).is_some()
}

/// Which of the two copies of a text a record is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Copy_ {
    Item,
    Event,
}

// ---------------------------------------------------------------------------------------
// The records: what one line means for the index. The skim reads them (in parallel, typed,
// borrowing from the line); `apply` adds their events in file order. Payloads stay on disk:
// `decode_payload` reads them from the event's record(s) when shown.

/// One line as the index needs it.
#[derive(Debug, PartialEq)]
pub(crate) struct Rec<'a> {
    ts: Option<i64>,
    what: What<'a>,
}

impl Rec<'_> {
    /// The record with its text's key computed (see `What::Text`).
    fn keyed(mut self) -> Self {
        if let What::Text { text, key, .. } = &mut self.what {
            *key = text_key(text);
        }
        self
    }
}

#[derive(Debug, PartialEq)]
enum What<'a> {
    /// Valid JSON, but not an object.
    NotObject,
    /// `{record_type: state}` of old rollouts: nothing for the tree.
    Skip,
    /// Neither a rollout envelope nor a response item.
    Neither,
    SessionMeta(Box<SessionMeta>),
    /// The `{id, timestamp, instructions}` header of a pre-envelope rollout (on line 1 or 2).
    Header(Box<SessionMeta>),
    TurnContext {
        turn_id: Option<Cow<'a, str>>,
        model: Option<Cow<'a, str>>,
    },
    Compacted,
    Quiet,
    /// A record (or a `response_item` / `event_msg` payload) of a type this reader does not
    /// know: skipped quietly and counted, shown as a generic event when it carries text.
    Drift {
        ty: Cow<'a, str>,
        text: bool,
    },
    /// `token_usage_record`: the usage of one model response.
    UsageRecord(Box<UsageRec>),
    /// `thread_settings_applied`: the model from here on.
    Settings(Option<String>),
    /// A message or a reasoning summary, from an item or its event copy.
    Text {
        role: &'static str,
        copy: Copy_,
        text: Cow<'a, str>,
        /// `text_key` of the text, set by [`Rec::keyed`]: hashed on the skim's cores, not on
        /// the serial apply's (half a rollout's lines carry a text).
        key: (u64, usize),
    },
    EncryptedReasoning,
    Call {
        item: &'static str,
        call_id: Option<Cow<'a, str>>,
        name: Cow<'a, str>,
        /// Web searches and image generations finish inside the response: failed or not.
        done: Option<bool>,
    },
    Output {
        item: &'static str,
        call_id: Cow<'a, str>,
        failed: bool,
    },
    AgentItem(String),
    OtherItem(Cow<'a, str>),
    TurnStart(Option<Cow<'a, str>>),
    TurnEnd {
        turn_id: Option<Cow<'a, str>>,
        aborted: bool,
        error: bool,
        duration_ms: Option<u64>,
    },
    Tokens(Option<Box<Tokens>>),
    ErrorEvent(&'static str),
    ThreadName(Option<String>),
    /// An `event_msg` about a tool call (`exec_command_end`, `mcp_tool_call_end`, an
    /// `item_completed` of a call, ...).
    CallEvent {
        ty: Cow<'a, str>,
        call_id: Cow<'a, str>,
        name: String,
        begin: bool,
        failed: bool,
        /// It may stand for a call the items do not show (an `item_completed` only reports
        /// on calls already seen: its id is not always a call id).
        create: bool,
        /// The threads a sub-agent spawn started (their rollouts nest under the call).
        spawned: Vec<String>,
    },
    Shown {
        ty: Cow<'a, str>,
        state: bool,
    },
    /// UI notifications: nothing for the tree.
    Ignored,
}

#[derive(Debug, PartialEq)]
struct SessionMeta {
    attributes: Vec<(String, Value)>,
    start: Option<i64>,
    /// Non-empty `instructions` (shown as the run's input).
    instructions: bool,
    /// The thread's id and, for a sub-agent, its nickname.
    thread: Option<String>,
    nickname: Option<String>,
}

/// A `token_usage_record`: Codex's usage of one model response.
#[derive(Debug, PartialEq)]
struct UsageRec {
    response_id: Option<String>,
    /// `usage` as `last_token_usage` is read (the numbers, Codex's inclusive counts).
    usage: Option<Usage>,
    /// `thread_token_usage`: the thread's running total after this response.
    thread: Option<Total>,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Tokens {
    total: Option<Total>,
    /// The numbers of `last_token_usage`, when there is one.
    last: Option<Usage>,
    model: Option<String>,
}

impl Tokens {
    /// `info` as `field` and `lenient_u64` read it from a Value.
    fn of_value(info: &Value) -> Tokens {
        Tokens {
            total: field(info, "total_token_usage").map(Total::of_value),
            last: field(info, "last_token_usage").map(|l| Usage {
                input: lenient_u64(l.get("input_tokens")),
                output: lenient_u64(l.get("output_tokens")),
                total: lenient_u64(l.get("total_tokens")),
                cache_read: lenient_u64(l.get("cached_input_tokens")),
                cache_write: lenient_u64(l.get("cache_write_input_tokens")),
                reasoning: lenient_u64(l.get("reasoning_output_tokens")),
                ..Default::default()
            }),
            model: str_of(info, "model").map(str::to_string),
        }
    }
}

/// The keys of a usage object the index reads, in the order of [`Total::Counts`].
const USAGE_KEYS: [&str; 6] = [
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "reasoning_output_tokens",
];

/// A token count's `total_token_usage`, kept to tell a repeated count from a new one and to
/// take the difference of two. Equal as the JSON values are equal.
#[derive(Clone, Debug, PartialEq)]
enum Total {
    /// An object of only the usage keys, each a non-negative integer (what Codex writes):
    /// the numbers, None for a key not there. Building a `Value` of each (an ordered map of
    /// owned keys) was 8% of a rollout's load.
    Counts([Option<u64>; 6]),
    /// Any other value, as it is.
    Other(Value),
}

impl Total {
    fn of_value(v: &Value) -> Total {
        let mut c = [None; 6];
        let fits = v.as_object().is_some_and(|m| {
            m.iter().all(|(k, x)| match USAGE_KEYS.iter().position(|u| u == k) {
                Some(i) => {
                    c[i] = x.as_u64();
                    c[i].is_some()
                }
                None => false,
            })
        });
        if fits {
            Total::Counts(c)
        } else {
            Total::Other(v.clone())
        }
    }

    /// From its raw JSON text: the numbers read directly when it is `Counts`, else the value.
    fn of_raw(raw: &str) -> Option<Total> {
        match serde_json::from_str::<views::Counts>(raw) {
            Ok(c) => Some(Total::Counts(c.0)),
            Err(_) => match serde_json::from_str::<Value>(raw).ok()? {
                Value::Null => None,
                v => Some(Total::of_value(&v)),
            },
        }
    }

    fn is_object(&self) -> bool {
        match self {
            Total::Counts(_) => true,
            Total::Other(v) => v.is_object(),
        }
    }

    /// `get(key).as_u64()` of the value.
    fn as_u64(&self, k: usize) -> Option<u64> {
        match self {
            Total::Counts(c) => c[k],
            Total::Other(v) => v.get(USAGE_KEYS[k]).and_then(Value::as_u64),
        }
    }

    /// `lenient_u64(get(key))` of the value.
    fn lenient(&self, k: usize) -> Option<u64> {
        match self {
            Total::Counts(c) => c[k],
            Total::Other(v) => lenient_u64(v.get(USAGE_KEYS[k])),
        }
    }
}

/// A `content` or `summary` value as the index reads it: its text parts. The skimmer reads it
/// by the visitors below, without building a Value (messages and reasoning are a third of a
/// rollout's lines). A part's flag: it is a bare string (content counts those, a summary not).
#[derive(Debug, Default, PartialEq)]
enum TextParts<'a> {
    #[default]
    Other,
    Whole(Cow<'a, str>),
    Parts(Vec<(Cow<'a, str>, bool)>),
}

impl<'a> TextParts<'a> {
    fn of_value(v: Option<&Value>) -> TextParts<'static> {
        match v {
            Some(Value::String(s)) => TextParts::Whole(Cow::Owned(s.clone())),
            Some(Value::Array(a)) => TextParts::Parts(
                a.iter()
                    .filter_map(|p| match p {
                        Value::String(s) => Some((Cow::Owned(s.clone()), true)),
                        _ => str_of(p, "text").map(|t| (Cow::Owned(t.to_string()), false)),
                    })
                    .collect(),
            ),
            _ => TextParts::Other,
        }
    }

    /// What `content_text` reads from the same value.
    fn content(&self) -> Cow<'a, str> {
        match self {
            TextParts::Whole(s) => s.clone(),
            TextParts::Parts(p) if p.len() == 1 => p[0].0.clone(),
            TextParts::Parts(p) => Cow::Owned(p.iter().map(|(s, _)| s.as_ref()).collect::<Vec<_>>().join("\n")),
            TextParts::Other => Cow::Borrowed(""),
        }
    }

    /// `content`, taking the text out (no copy of a single part or a whole string).
    fn into_content(self) -> Cow<'a, str> {
        match self {
            TextParts::Whole(s) => s,
            TextParts::Parts(mut p) if p.len() == 1 => p.swap_remove(0).0,
            other => other.content(),
        }
    }

    /// The texts of a summary's parts.
    fn summary(&self) -> Vec<&str> {
        match self {
            TextParts::Parts(p) => p.iter().filter(|(_, bare)| !bare).map(|(s, _)| s.as_ref()).collect(),
            _ => Vec::new(),
        }
    }
}

/// Visitors that read a value the way `str_of`, `content_text` and `lenient_u64` read the
/// Value serde_json would build, skipping the rest unbuilt.
mod views {
    use super::{Cow, TextParts, Tokens, Total, Usage};
    use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use std::fmt;
    use std::marker::PhantomData;

    fn drain_seq<'de, A: SeqAccess<'de>>(mut s: A) -> Result<(), A::Error> {
        while s.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn drain_map<'de, A: MapAccess<'de>>(mut m: A) -> Result<(), A::Error> {
        while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(())
    }

    /// Implements the visits of a view that reads nothing from all but some kinds of value.
    macro_rules! nothing_from_the_rest {
        ($none:expr) => {
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok($none)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok($none)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok($none)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok($none)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok($none)
            }
        };
    }

    /// A string's text; None for any other value.
    pub(super) struct Str<'a>(pub Option<Cow<'a, str>>);

    impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V<'a>(PhantomData<&'a ()>);
            impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
                type Value = Str<'a>;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a JSON value")
                }
                fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Str<'a>, E> {
                    Ok(Str(Some(Cow::Borrowed(s))))
                }
                fn visit_str<E>(self, s: &str) -> Result<Str<'a>, E> {
                    Ok(Str(Some(Cow::Owned(s.to_string()))))
                }
                fn visit_string<E>(self, s: String) -> Result<Str<'a>, E> {
                    Ok(Str(Some(Cow::Owned(s))))
                }
                fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Str<'a>, A::Error> {
                    drain_seq(s).map(|()| Str(None))
                }
                fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Str<'a>, A::Error> {
                    drain_map(m).map(|()| Str(None))
                }
                nothing_from_the_rest!(Str(None));
            }
            d.deserialize_any(V(PhantomData))
        }
    }

    /// A key: is it this one?
    struct Key(u8);

    impl<'de> Deserialize<'de> for Key {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = Key;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a key")
                }
                fn visit_str<E>(self, s: &str) -> Result<Key, E> {
                    Ok(Key(match s {
                        "text" => 1,
                        "total_token_usage" => 2,
                        "last_token_usage" => 3,
                        "model" => 4,
                        "input_tokens" => 5,
                        "output_tokens" => 6,
                        "total_tokens" => 7,
                        "cached_input_tokens" => 8,
                        "cache_write_input_tokens" => 9,
                        "reasoning_output_tokens" => 10,
                        _ => 0,
                    }))
                }
            }
            d.deserialize_str(V)
        }
    }

    /// One part of a content list: a bare string, or an object's `text`.
    struct Part<'a>(Option<(Cow<'a, str>, bool)>);

    impl<'de: 'a, 'a> Deserialize<'de> for Part<'a> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V<'a>(PhantomData<&'a ()>);
            impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
                type Value = Part<'a>;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a JSON value")
                }
                fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Part<'a>, E> {
                    Ok(Part(Some((Cow::Borrowed(s), true))))
                }
                fn visit_str<E>(self, s: &str) -> Result<Part<'a>, E> {
                    Ok(Part(Some((Cow::Owned(s.to_string()), true))))
                }
                fn visit_string<E>(self, s: String) -> Result<Part<'a>, E> {
                    Ok(Part(Some((Cow::Owned(s), true))))
                }
                fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Part<'a>, A::Error> {
                    drain_seq(s).map(|()| Part(None))
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Part<'a>, A::Error> {
                    // The last `text` of the object, as a map keeps it.
                    let mut text = None;
                    while let Some(Key(k)) = m.next_key()? {
                        if k == 1 {
                            text = m.next_value::<Str>()?.0;
                        } else {
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                    Ok(Part(text.map(|t| (t, false))))
                }
                nothing_from_the_rest!(Part(None));
            }
            d.deserialize_any(V(PhantomData))
        }
    }

    impl<'de: 'a, 'a> Deserialize<'de> for TextParts<'a> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V<'a>(PhantomData<&'a ()>);
            impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
                type Value = TextParts<'a>;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a JSON value")
                }
                fn visit_borrowed_str<E>(self, s: &'de str) -> Result<TextParts<'a>, E> {
                    Ok(TextParts::Whole(Cow::Borrowed(s)))
                }
                fn visit_str<E>(self, s: &str) -> Result<TextParts<'a>, E> {
                    Ok(TextParts::Whole(Cow::Owned(s.to_string())))
                }
                fn visit_string<E>(self, s: String) -> Result<TextParts<'a>, E> {
                    Ok(TextParts::Whole(Cow::Owned(s)))
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<TextParts<'a>, A::Error> {
                    let mut parts = Vec::new();
                    while let Some(Part(p)) = s.next_element()? {
                        parts.extend(p);
                    }
                    Ok(TextParts::Parts(parts))
                }
                fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<TextParts<'a>, A::Error> {
                    drain_map(m).map(|()| TextParts::Other)
                }
                nothing_from_the_rest!(TextParts::Other);
            }
            d.deserialize_any(V(PhantomData))
        }
    }

    /// A token number as `lenient_u64` reads it.
    struct Count(Option<u64>);

    impl<'de> Deserialize<'de> for Count {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Count;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a JSON value")
                }
                fn visit_u64<E>(self, u: u64) -> Result<Count, E> {
                    Ok(Count(Some(u)))
                }
                fn visit_i64<E>(self, i: i64) -> Result<Count, E> {
                    Ok(Count(u64::try_from(i).ok()))
                }
                fn visit_f64<E>(self, f: f64) -> Result<Count, E> {
                    Ok(Count((f >= 0.0 && f.is_finite()).then_some(f as u64)))
                }
                fn visit_str<E>(self, s: &str) -> Result<Count, E> {
                    Ok(Count(s.trim().parse().ok()))
                }
                fn visit_bool<E>(self, _: bool) -> Result<Count, E> {
                    Ok(Count(None))
                }
                fn visit_unit<E>(self) -> Result<Count, E> {
                    Ok(Count(None))
                }
                fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Count, A::Error> {
                    drain_seq(s).map(|()| Count(None))
                }
                fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Count, A::Error> {
                    drain_map(m).map(|()| Count(None))
                }
            }
            d.deserialize_any(V)
        }
    }

    /// `last_token_usage`: None when null; the three numbers of an object; none of another value.
    struct Last(Option<Usage>);

    impl<'de> Deserialize<'de> for Last {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Last;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a JSON value")
                }
                fn visit_unit<E>(self) -> Result<Last, E> {
                    Ok(Last(None))
                }
                fn visit_bool<E>(self, _: bool) -> Result<Last, E> {
                    Ok(Last(Some(Usage::default())))
                }
                fn visit_i64<E>(self, _: i64) -> Result<Last, E> {
                    Ok(Last(Some(Usage::default())))
                }
                fn visit_u64<E>(self, _: u64) -> Result<Last, E> {
                    Ok(Last(Some(Usage::default())))
                }
                fn visit_f64<E>(self, _: f64) -> Result<Last, E> {
                    Ok(Last(Some(Usage::default())))
                }
                fn visit_str<E>(self, _: &str) -> Result<Last, E> {
                    Ok(Last(Some(Usage::default())))
                }
                fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Last, A::Error> {
                    drain_seq(s).map(|()| Last(Some(Usage::default())))
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Last, A::Error> {
                    let mut u = Usage::default();
                    while let Some(Key(k)) = m.next_key()? {
                        match k {
                            5 => u.input = m.next_value::<Count>()?.0,
                            6 => u.output = m.next_value::<Count>()?.0,
                            7 => u.total = m.next_value::<Count>()?.0,
                            8 => u.cache_read = m.next_value::<Count>()?.0,
                            9 => u.cache_write = m.next_value::<Count>()?.0,
                            10 => u.reasoning = m.next_value::<Count>()?.0,
                            _ => m.next_value::<IgnoredAny>().map(drop)?,
                        }
                    }
                    Ok(Last(Some(u)))
                }
            }
            d.deserialize_any(V)
        }
    }

    /// A usage object of only the usage keys, each a non-negative integer; an error for
    /// anything else (then `Total::of_raw` reads the value).
    pub(super) struct Counts(pub [Option<u64>; 6]);

    impl<'de> Deserialize<'de> for Counts {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            use serde::de::Error;
            /// A number as a `Value` holds a non-negative integer (serde_json makes one of a
            /// non-negative i64 too); an error for anything else.
            struct N(u64);
            impl<'de> Deserialize<'de> for N {
                fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    struct V;
                    impl Visitor<'_> for V {
                        type Value = N;
                        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                            f.write_str("a non-negative integer")
                        }
                        fn visit_u64<E>(self, u: u64) -> Result<N, E> {
                            Ok(N(u))
                        }
                        fn visit_i64<E: Error>(self, i: i64) -> Result<N, E> {
                            u64::try_from(i).map(N).map_err(|_| E::custom("negative"))
                        }
                    }
                    d.deserialize_any(V)
                }
            }
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Counts;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a usage object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Counts, A::Error> {
                    let mut c = [None; 6];
                    while let Some(Key(k)) = m.next_key()? {
                        match k {
                            5..=10 => c[k as usize - 5] = Some(m.next_value::<N>()?.0),
                            _ => return Err(A::Error::custom("another key")),
                        }
                    }
                    Ok(Counts(c))
                }
            }
            d.deserialize_map(V)
        }
    }

    /// A token count's `info` (not null): what `Tokens::of_value` reads.
    pub(super) struct Info(pub Tokens);

    impl<'de> Deserialize<'de> for Info {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Info;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a JSON value")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Info, A::Error> {
                    let mut t = Tokens::default();
                    let mut total = None;
                    while let Some(Key(k)) = m.next_key()? {
                        match k {
                            2 => total = Some(m.next_value::<&'de serde_json::value::RawValue>()?),
                            3 => t.last = m.next_value::<Last>()?.0,
                            4 => t.model = m.next_value::<Str>()?.0.map(Cow::into_owned),
                            _ => m.next_value::<IgnoredAny>().map(drop)?,
                        }
                    }
                    t.total = total.and_then(|raw| Total::of_raw(raw.get()));
                    Ok(Info(t))
                }
                fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Info, A::Error> {
                    drain_seq(s).map(|()| Info(Tokens::default()))
                }
                fn visit_str<E>(self, _: &str) -> Result<Info, E> {
                    Ok(Info(Tokens::default()))
                }
                nothing_from_the_rest!(Info(Tokens::default()));
            }
            d.deserialize_any(V)
        }
    }
}

/// The straightforward reading of a line parsed by serde_json, for every record kind. The
/// skimmer's reading of the common kinds must equal it (the tests check this).
fn read_value(v: &Value) -> Rec<'static> {
    let ts = v.get("timestamp").and_then(parse_timestamp);
    let what = if !v.is_object() {
        What::NotObject
    } else {
        match (str_of(v, "type"), v.get("payload")) {
            // Any `{type, payload}` is the envelope: a type it does not know is drift.
            (Some(ty), Some(p)) => what_of(ty, p, v),
            (_, _) if v.get("record_type").is_some() => What::Skip,
            // The pre-envelope shape: a header, then bare items.
            (Some(_), None) => what_of("response_item", v, v),
            (None, None) if v.get("id").is_some() => What::Header(Box::new(session_meta(v))),
            _ => What::Neither,
        }
    };
    Rec { ts, what }.keyed()
}

/// The envelope's type and payload (`line`: the record's line, for the old header).
fn normalize(v: &Value, line: u32) -> Option<(&str, &Value)> {
    match (str_of(v, "type"), v.get("payload")) {
        (Some(ty), Some(p)) => Some((ty, p)),
        (_, _) if v.get("record_type").is_some() => None,
        (Some(_), None) => Some(("response_item", v)),
        (None, None) if v.get("id").is_some() && line <= 2 => Some(("session_meta", v)),
        _ => None,
    }
}

fn session_meta(p: &Value) -> SessionMeta {
    let mut attributes = Vec::new();
    if let Some(id) = str_of(p, "id").filter(|s| !s.is_empty()) {
        attributes.push(("session_id".into(), Value::String(id.to_string())));
    }
    for k in ["cwd", "cli_version", "originator", "source", "model_provider", "git"] {
        if let Some(x) = field(p, k) {
            attributes.push((k.to_string(), x.clone()));
        }
    }
    // A sub-agent's thread says whose it is (also in `source.subagent.thread_spawn`).
    let spawn = p
        .get("source")
        .and_then(|s| s.get("subagent"))
        .and_then(|s| s.get("thread_spawn"));
    let of = |k: &str| field(p, k).or_else(|| spawn.and_then(|s| field(s, k)));
    for k in [
        "parent_thread_id",
        "agent_nickname",
        "agent_role",
        "agent_path",
        "forked_from_id",
    ] {
        if let Some(x) = of(k) {
            attributes.push((k.to_string(), x.clone()));
        }
    }
    SessionMeta {
        attributes,
        start: p.get("timestamp").and_then(parse_timestamp),
        instructions: non_empty_instructions(p).is_some(),
        thread: str_of(p, "id").filter(|s| !s.is_empty()).map(str::to_string),
        nickname: of("agent_nickname")
            .or_else(|| of("agent_path"))
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(|s| one_line(s, 60)),
    }
}

fn non_empty_instructions(p: &Value) -> Option<&Value> {
    field(p, "instructions").filter(|x| x.as_str().is_some_and(|s| !s.is_empty()))
}

/// Record kinds of nearly every line: the skimmer reads these.
fn is_hot(ty: &str, pty: Option<&str>) -> bool {
    match ty {
        "turn_context" => true,
        "response_item" => matches!(
            pty,
            Some(
                "message"
                    | "reasoning"
                    | "function_call"
                    | "custom_tool_call"
                    | "function_call_output"
                    | "custom_tool_call_output"
            )
        ),
        "event_msg" => matches!(
            pty,
            Some(
                "user_message"
                    | "agent_message"
                    | "agent_reasoning"
                    | "token_count"
                    | "task_started"
                    | "turn_started"
                    | "task_complete"
                    | "turn_complete"
                    | "turn_aborted"
            )
        ),
        _ => false,
    }
}

/// The payload fields the common kinds need, as `str_of` / `get` read them from a Value.
#[derive(Default, Debug, PartialEq)]
struct Fields<'a> {
    ty: Option<Cow<'a, str>>,
    role: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    call_id: Option<Cow<'a, str>>,
    id: Option<Cow<'a, str>>,
    turn_id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    message: Option<Cow<'a, str>>,
    text: Option<Cow<'a, str>>,
    content: TextParts<'a>,
    summary: TextParts<'a>,
    /// A token count's `info`, when present and not null.
    info: Option<Box<Tokens>>,
    collaboration_mode: Option<Value>,
    error: Option<Value>,
    duration_ms: Option<Value>,
    output_failed: bool,
}

impl Fields<'static> {
    fn of(p: &Value) -> Fields<'static> {
        let s = |k: &str| str_of(p, k).map(|s| Cow::Owned(s.to_string()));
        let v = |k: &str| p.get(k).cloned();
        Fields {
            ty: s("type"),
            role: s("role"),
            name: s("name"),
            call_id: s("call_id"),
            id: s("id"),
            turn_id: s("turn_id"),
            model: s("model"),
            message: s("message"),
            text: s("text"),
            content: TextParts::of_value(p.get("content")),
            summary: TextParts::of_value(p.get("summary")),
            info: field(p, "info").map(|i| Box::new(Tokens::of_value(i))),
            collaboration_mode: v("collaboration_mode"),
            error: v("error"),
            duration_ms: v("duration_ms"),
            output_failed: p.get("output").map(decode_embedded).is_some_and(|o| output_failed(&o)),
        }
    }
}

/// The text of a Responses API message's `content`: its text parts joined.
fn content_text(content: Option<&Value>) -> String {
    match content {
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

/// A common record kind (see `is_hot`) from its fields, moved out of them: a message's text
/// decoded from escapes, a token count's `info`, are not copied again (half a rollout's lines
/// carry a text, and `clone` here was an allocation and a copy of each).
fn hot<'a>(ty: &str, f: Fields<'a>) -> What<'a> {
    let pty = f.ty.as_deref().unwrap_or("");
    let text = |s: Option<Cow<'a, str>>| s.unwrap_or(Cow::Borrowed(""));
    match (ty, pty) {
        ("turn_context", _) => What::TurnContext {
            model: f.model.or_else(|| {
                f.collaboration_mode
                    .as_ref()
                    .and_then(|c| c.get("settings"))
                    .and_then(|s| str_of(s, "model"))
                    .map(|m| Cow::Owned(m.to_string()))
            }),
            turn_id: f.turn_id,
        },
        ("response_item", "message") => What::Text {
            role: match f.role.as_deref() {
                Some("assistant") => "assistant",
                Some("user") => "user",
                Some("system") => "system",
                Some("developer") => "developer",
                _ => "other",
            },
            copy: Copy_::Item,
            text: f.content.into_content(),
            key: (0, 0),
        },
        ("response_item", "reasoning") => {
            let text = match f.summary.summary().len() {
                0 => f.content.into_content(),
                1 => match f.summary {
                    TextParts::Parts(p) => p
                        .into_iter()
                        .find(|(_, bare)| !bare)
                        .map_or(Cow::Borrowed(""), |(s, _)| s),
                    _ => Cow::Borrowed(""),
                },
                _ => Cow::Owned(f.summary.summary().join("\n")),
            };
            if text.trim().is_empty() {
                What::EncryptedReasoning
            } else {
                What::Text {
                    role: "reasoning",
                    copy: Copy_::Item,
                    text,
                    key: (0, 0),
                }
            }
        }
        ("response_item", "function_call" | "custom_tool_call") => {
            let item = if pty == "function_call" {
                "function_call"
            } else {
                "custom_tool_call"
            };
            What::Call {
                item,
                call_id: f.call_id.or(f.id).filter(|s| !s.is_empty()),
                name: call_name(f.name, item),
                done: None,
            }
        }
        ("response_item", _) => What::Output {
            item: if pty == "function_call_output" {
                "function_call_output"
            } else {
                "custom_tool_call_output"
            },
            call_id: text(f.call_id),
            failed: f.output_failed,
        },
        ("event_msg", "user_message") => What::Text {
            role: "user",
            copy: Copy_::Event,
            text: text(f.message),
            key: (0, 0),
        },
        ("event_msg", "agent_message") => What::Text {
            role: "assistant",
            copy: Copy_::Event,
            text: text(f.message),
            key: (0, 0),
        },
        ("event_msg", "agent_reasoning") => What::Text {
            role: "reasoning",
            copy: Copy_::Event,
            text: text(f.text),
            key: (0, 0),
        },
        ("event_msg", "token_count") => What::Tokens(f.info),
        ("event_msg", "task_started" | "turn_started") => What::TurnStart(f.turn_id),
        _ => What::TurnEnd {
            aborted: pty == "turn_aborted",
            error: pty != "turn_aborted"
                && f.error
                    .as_ref()
                    .filter(|e| !e.is_null())
                    .and_then(ErrorInfo::from_value)
                    .is_some(),
            duration_ms: lenient_u64(f.duration_ms.as_ref()),
            turn_id: f.turn_id,
        },
    }
}

/// Any record kind, from its (normalised) type and payload; `rec` is the whole record (the
/// drift rule looks for text in it).
fn what_of(ty: &str, p: &Value, rec: &Value) -> What<'static> {
    if is_hot(ty, str_of(p, "type")) {
        return hot(ty, Fields::of(p));
    }
    match ty {
        "session_meta" => What::SessionMeta(Box::new(session_meta(p))),
        "compacted" => What::Compacted,
        "response_item" => item_of(p, rec),
        "event_msg" => event_of(p, rec),
        "token_usage_record" => What::UsageRecord(Box::new(UsageRec {
            response_id: str_of(p, "response_id").map(str::to_string),
            usage: field(p, "usage").map(usage_of),
            thread: field(p, "thread_token_usage").map(Total::of_value),
        })),
        // A message between the agents of a multi-agent session (newer rollouts).
        "inter_agent_communication" => What::AgentItem(format!(
            "agent message {} → {}",
            str_of(p, "author").unwrap_or("?"),
            str_of(p, "recipient").unwrap_or("?")
        )),
        other if QUIET_TYPES.contains(&other) => What::Quiet,
        other if TEXT_TYPES.contains(&other) => match super::drift_text(p) {
            Some(_) => What::Shown {
                ty: Cow::Owned(other.to_string()),
                state: false,
            },
            None => What::Quiet,
        },
        other => drift(other, rec),
    }
}

/// A record of a type this reader does not know (the drift rule, formats/mod.rs).
fn drift(ty: &str, rec: &Value) -> What<'static> {
    What::Drift {
        ty: Cow::Owned(if ty.is_empty() { "record" } else { ty }.to_string()),
        text: super::drift_text(rec).is_some(),
    }
}

/// A usage object's numbers, as `last_token_usage` is read.
fn usage_of(l: &Value) -> Usage {
    Usage {
        input: lenient_u64(l.get("input_tokens")),
        output: lenient_u64(l.get("output_tokens")),
        total: lenient_u64(l.get("total_tokens")),
        cache_read: lenient_u64(l.get("cached_input_tokens")),
        cache_write: lenient_u64(l.get("cache_write_input_tokens")),
        reasoning: lenient_u64(l.get("reasoning_output_tokens")),
        ..Default::default()
    }
}

/// A call's name: the tool's own. A `namespace` (`multi_agent_v1` for the sub-agent tools
/// spawn_agent, wait_agent, send_input, close_agent, resume_agent; a dynamic tool's group)
/// is shown with the call's payload, not in its name.
fn call_name<'a>(name: Option<Cow<'a, str>>, item: &'static str) -> Cow<'a, str> {
    name.filter(|n| !n.is_empty()).unwrap_or(Cow::Borrowed(item))
}

fn item_of(p: &Value, rec: &Value) -> What<'static> {
    let ty = str_of(p, "type").unwrap_or("");
    if let Some(&item) = CALL_ITEMS.iter().find(|&&c| c == ty) {
        let name = match item {
            "function_call" | "custom_tool_call" => {
                call_name(str_of(p, "name").map(|n| Cow::Owned(n.to_string())), item).into_owned()
            }
            "local_shell_call" => "local_shell".to_string(),
            "tool_search_call" => "tool_search".to_string(),
            "web_search_call" => "web_search".to_string(),
            _ => "image_generation".to_string(),
        };
        let done = matches!(item, "web_search_call" | "image_generation_call")
            .then(|| str_of(p, "status").map(|st| matches!(st, "failed" | "incomplete")))
            .flatten();
        return What::Call {
            item,
            call_id: str_of(p, "call_id")
                .or_else(|| str_of(p, "id"))
                .filter(|s| !s.is_empty())
                .map(|s| Cow::Owned(s.to_string())),
            name: Cow::Owned(name),
            done,
        };
    }
    if let Some(&item) = OUTPUT_ITEMS.iter().find(|&&c| c == ty) {
        let output = item_output(item, p);
        return What::Output {
            item,
            call_id: Cow::Owned(str_of(p, "call_id").unwrap_or("").to_string()),
            failed: output.as_ref().is_some_and(output_failed),
        };
    }
    match ty {
        // Messages between agents of a multi-agent session.
        "agent_message" => What::AgentItem(format!(
            "agent message {} → {}",
            str_of(p, "author").unwrap_or("?"),
            str_of(p, "recipient").unwrap_or("?")
        )),
        // The model's own context compaction (its summary is encrypted).
        "compaction" | "context_compaction" => What::Shown {
            ty: Cow::Borrowed("compaction"),
            state: true,
        },
        "" => What::OtherItem(Cow::Borrowed("response item")),
        other if OTHER_ITEMS.contains(&other) => What::OtherItem(Cow::Owned(other.to_string())),
        other => drift(other, rec),
    }
}

fn item_output(item: &str, p: &Value) -> Option<Value> {
    match item {
        "tool_search_output" => p.get("tools").cloned(),
        _ => p.get("output").map(decode_embedded),
    }
}

fn event_of(p: &Value, rec: &Value) -> What<'static> {
    let ty = str_of(p, "type").unwrap_or("");
    match ty {
        "agent_reasoning_raw_content" => What::Text {
            role: "reasoning",
            copy: Copy_::Event,
            text: Cow::Owned(str_of(p, "text").unwrap_or("").to_string()),
            key: (0, 0),
        },
        "error" => What::ErrorEvent("error"),
        "stream_error" => What::ErrorEvent("stream_error"),
        "thread_name_updated" => What::ThreadName(
            str_of(p, "thread_name")
                .filter(|s| !s.trim().is_empty())
                .map(|n| one_line(n, 100)),
        ),
        "thread_settings_applied" => What::Settings(
            p.get("thread_settings")
                .and_then(|t| str_of(t, "model"))
                .filter(|m| !m.is_empty())
                .map(str::to_string),
        ),
        "item_completed" => item_completed(p),
        _ if CALL_EVENTS.contains(&ty) => match str_of(p, "call_id").or_else(|| str_of(p, "callId")) {
            Some(call_id) => What::CallEvent {
                ty: Cow::Owned(ty.to_string()),
                call_id: Cow::Owned(call_id.to_string()),
                name: call_event_name(ty, p),
                // Requests and partial output report on a call; they do not end it.
                begin: ty.ends_with("_begin")
                    || ty.ends_with("_request")
                    || ty.ends_with("_delta")
                    || ty == "terminal_interaction"
                    || ty == "patch_apply_updated",
                failed: call_event_failed(p),
                create: true,
                spawned: match (ty, str_of(p, "new_thread_id")) {
                    ("collab_agent_spawn_end", Some(id)) if !id.is_empty() => vec![id.to_string()],
                    _ => Vec::new(),
                },
            },
            None => What::Ignored,
        },
        _ if SHOWN_EVENTS.contains(&ty) => What::Shown {
            ty: Cow::Owned(ty.to_string()),
            state: ty == "context_compacted",
        },
        _ if QUIET_EVENTS.contains(&ty) => What::Ignored,
        other => drift(other, rec),
    }
}

/// `item_completed` (newer rollouts write one for every item of a turn): a call's item says
/// how it ended (exit code, status) and, for a sub-agent spawn, which threads it started. Items
/// that repeat a response item (messages, reasoning) add nothing; a plan has no other record.
fn item_completed(p: &Value) -> What<'static> {
    let Some(item) = p.get("item").filter(|i| i.is_object()) else {
        return What::Ignored;
    };
    let ity = str_of(item, "type").unwrap_or("");
    let name = match ity {
        "CommandExecution" => "exec_command".to_string(),
        "FileChange" => "apply_patch".to_string(),
        "McpToolCall" => match (str_of(item, "server"), str_of(item, "tool")) {
            (Some(s), Some(t)) => format!("{s}.{t}"),
            (_, t) => t.unwrap_or("mcp_tool_call").to_string(),
        },
        "CollabAgentToolCall" | "DynamicToolCall" => str_of(item, "tool").unwrap_or(ity).to_string(),
        "Plan" => {
            return What::Shown {
                ty: Cow::Borrowed("plan"),
                state: false,
            };
        }
        _ => return What::Ignored,
    };
    let Some(id) = str_of(item, "id").filter(|s| !s.is_empty()) else {
        return What::Ignored;
    };
    let spawned = if ity == "CollabAgentToolCall" && str_of(item, "tool").is_some_and(|t| t.starts_with("spawn")) {
        item.get("receiver_thread_ids")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    What::CallEvent {
        ty: Cow::Borrowed("item_completed"),
        call_id: Cow::Owned(id.to_string()),
        name,
        begin: false,
        failed: item_failed(item),
        create: false,
        spawned,
    }
}

/// A completed item's own word on how its call ended.
fn item_failed(item: &Value) -> bool {
    matches!(
        str_of(item, "status"),
        Some("failed" | "declined" | "error" | "errored")
    ) || item.get("exit_code").and_then(Value::as_i64).is_some_and(|c| c != 0)
        || field(item, "error").is_some()
        || item.get("success") == Some(&Value::Bool(false))
}

fn call_event_name(ty: &str, p: &Value) -> String {
    match (str_of(p, "tool"), p.get("invocation")) {
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
    }
}

fn call_event_failed(p: &Value) -> bool {
    p.get("success") == Some(&Value::Bool(false))
        || p.get("exit_code").and_then(Value::as_i64).is_some_and(|c| c != 0)
        || matches!(str_of(p, "status"), Some("failed" | "error" | "errored"))
        || p.get("result").and_then(|x| x.get("Err")).is_some()
        || field(p, "error").is_some()
}

// ---------------------------------------------------------------------------------------
// The skimmer's reading of the common record kinds.

/// The common kinds read by the skimmer, borrowing from the line; None for any other kind
/// and whatever the skimmer is unsure of (serde_json then reads the line: same result, or the
/// diagnostic).
fn skim_fast(line: &[u8]) -> Option<Rec<'_>> {
    // serde_json checks the UTF-8 of every string of a Value; the skimmer only of what it
    // returns. ASCII, the usual case, is checked a word at a time.
    if !line.is_ascii() {
        std::str::from_utf8(line).ok()?;
    }
    let mut k = Skim::new(line);
    let mut seen = Seen::default();
    let mut ts: Option<&[u8]> = None;
    let mut ty: Option<Cow<str>> = None;
    let mut raw = RawFields::default();
    k.object(|k, key| {
        match key {
            b"timestamp" => (seen.first(0)?, ts = Some(k.value()?)),
            b"type" => (seen.first(1)?, ty = string(k)?),
            b"payload" => (seen.first(2)?, payload_fields(k, &mut raw)?),
            _ => ((), k.skip()?),
        };
        Some(())
    })?;
    if !k.at_end() || !seen.has(2) {
        return None;
    }
    let ty = ty?;
    if !is_hot(&ty, raw.ty.as_deref()) {
        return None;
    }
    let f = raw.into_fields()?;
    Some(
        Rec {
            ts: match ts {
                Some(t) => raw_timestamp(t)?,
                None => None,
            },
            what: hot(&ty, f),
        }
        .keyed(),
    )
}

/// `parse_timestamp` of a raw value (the outer None: not JSON).
fn raw_timestamp(raw: &[u8]) -> Option<Option<i64>> {
    if let [b'"', inner @ .., b'"'] = raw
        && !inner.contains(&b'\\')
    {
        return Some(parse_timestamp_str(utf8(inner)?));
    }
    let v: Value = serde_json::from_slice(raw).ok()?;
    Some(parse_timestamp(&v))
}

/// A field as `str_of` reads it: the text of a string (escapes decoded), None for any other
/// value. The outer None: the skimmer cannot read it.
fn string<'a>(k: &mut Skim<'a>) -> Option<Option<Cow<'a, str>>> {
    let v = k.value()?;
    let [b'"', inner @ .., b'"'] = v else {
        return Some(None);
    };
    if !inner.contains(&b'\\') {
        return Some(Some(Cow::Borrowed(utf8(inner)?)));
    }
    serde_json::from_slice::<String>(v).ok().map(|s| Some(Cow::Owned(s)))
}

/// UTF-8 checked text; ids, names and types are ASCII, checked a word at a time.
fn utf8(b: &[u8]) -> Option<&str> {
    if b.is_ascii() {
        // SAFETY: ASCII is valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(b) })
    } else {
        std::str::from_utf8(b).ok()
    }
}

/// The payload fields as the skimmer finds them: strings read, other values as raw text.
#[derive(Default)]
struct RawFields<'a> {
    ty: Option<Cow<'a, str>>,
    role: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    call_id: Option<Cow<'a, str>>,
    id: Option<Cow<'a, str>>,
    turn_id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    message: Option<Cow<'a, str>>,
    text: Option<Cow<'a, str>>,
    content: Option<&'a [u8]>,
    summary: Option<&'a [u8]>,
    info: Option<&'a [u8]>,
    collaboration_mode: Option<&'a [u8]>,
    error: Option<&'a [u8]>,
    duration_ms: Option<&'a [u8]>,
    output: Option<&'a [u8]>,
}

fn payload_fields<'a>(k: &mut Skim<'a>, r: &mut RawFields<'a>) -> Option<()> {
    let mut seen = Seen::default();
    k.object(|k, key| {
        match key {
            b"type" => (seen.first(0)?, r.ty = string(k)?),
            b"role" => (seen.first(1)?, r.role = string(k)?),
            b"name" => (seen.first(2)?, r.name = string(k)?),
            b"call_id" => (seen.first(4)?, r.call_id = string(k)?),
            b"id" => (seen.first(5)?, r.id = string(k)?),
            b"turn_id" => (seen.first(6)?, r.turn_id = string(k)?),
            b"model" => (seen.first(7)?, r.model = string(k)?),
            b"message" => (seen.first(8)?, r.message = string(k)?),
            b"text" => (seen.first(9)?, r.text = string(k)?),
            b"content" => (seen.first(10)?, r.content = Some(k.value()?)),
            b"summary" => (seen.first(11)?, r.summary = Some(k.value()?)),
            b"info" => (seen.first(12)?, r.info = Some(k.value()?)),
            b"collaboration_mode" => (seen.first(13)?, r.collaboration_mode = Some(k.value()?)),
            b"error" => (seen.first(14)?, r.error = Some(k.value()?)),
            b"duration_ms" => (seen.first(15)?, r.duration_ms = Some(k.value()?)),
            b"output" => (seen.first(16)?, r.output = Some(k.value()?)),
            _ => ((), k.skip()?),
        };
        Some(())
    })
}

impl<'a> RawFields<'a> {
    /// The fields, values parsed (None: one is not JSON serde_json reads).
    fn into_fields(self) -> Option<Fields<'a>> {
        fn view<'a, T: serde::Deserialize<'a>>(raw: Option<&'a [u8]>) -> Option<Option<T>> {
            match raw {
                None => Some(None),
                Some(b) => serde_json::from_slice(b).ok().map(Some),
            }
        }
        fn val(raw: Option<&[u8]>) -> Option<Option<Value>> {
            match raw {
                None => Some(None),
                Some(b) => serde_json::from_slice(b).ok().map(Some),
            }
        }
        Some(Fields {
            ty: self.ty,
            role: self.role,
            name: self.name,
            call_id: self.call_id,
            id: self.id,
            turn_id: self.turn_id,
            model: self.model,
            message: self.message,
            text: self.text,
            content: view(self.content)?.unwrap_or_default(),
            summary: view(self.summary)?.unwrap_or_default(),
            info: view::<Option<views::Info>>(self.info)?.flatten().map(|i| Box::new(i.0)),
            collaboration_mode: val(self.collaboration_mode)?,
            error: val(self.error)?,
            duration_ms: val(self.duration_ms)?,
            output_failed: match self.output {
                Some(o) => raw_output_failed(o)?,
                None => false,
            },
        })
    }
}

// ---------------------------------------------------------------------------------------
// The in-order half: records into the tree.

struct Turn {
    event: u32,
    id: Option<String>,
    has_context: bool,
    has_task: bool,
    /// The model has produced something in this turn.
    active: bool,
    closed: bool,
    /// A closing record with an error is the turn's second record (its error is shown).
    error_kept: bool,
}

struct Call {
    event: u32,
    /// The call itself (not only an event about it) was seen.
    requested: bool,
    answered: bool,
    /// Its output item came (an `*_end` event may have answered it before: the output item,
    /// which newer Codex writes after that event, still belongs to it).
    by_output: bool,
}

/// Calls by call_id: the id itself is not copied (the call's event holds it).
#[derive(Default)]
struct Calls(super::id_map::IdMap<Call>);

impl Calls {
    fn get_mut<'s>(&'s mut self, t: &Trace, id: &str) -> Option<&'s mut Call> {
        self.0.get_mut(id, |c| t.str(t.event(c.event).source_id))
    }

    /// A call whose event (holding the id) has been added; a call of the same id is replaced.
    fn insert(&mut self, t: &Trace, id: &str, call: Call) {
        self.0.insert(id, call, |c| t.str(t.event(c.event).source_id));
    }
}

/// The usage of one response as its two records give it, to tell a `token_count` that repeats
/// a `token_usage_record` from one of a response of its own: the numbers of the response
/// (`last_token_usage` / `usage`) and the thread's total after it.
#[derive(Clone, Debug, PartialEq)]
struct Counted {
    last: Option<Usage>,
    total: Option<Total>,
}

impl Counted {
    /// Whether the two records are of the same response.
    fn same(&self, o: &Counted) -> bool {
        match (&self.last, &o.last) {
            (Some(a), Some(b)) => a == b,
            _ => self.total.is_some() && self.total == o.total,
        }
    }
}

/// Responses whose usage one of the two records gave, waiting for the other (a few at most).
const UNMATCHED: usize = 8;

/// One rollout read into a trace: the run's own, or a sub-agent's read into its parent's trace
/// under a container event (see [`Parser`]).
#[derive(Default)]
struct Thread {
    ti: Option<usize>,
    /// The run event, or the sub-agent's container.
    root: u32,
    file: u16,
    /// The rollout (diagnostics name it).
    path: PathBuf,
    /// A sub-agent's rollout read into its parent's trace: the trace's metadata is not its.
    sub: bool,
    /// From its session_meta: the thread's id and a sub-agent's nickname.
    thread_id: Option<String>,
    nickname: Option<String>,
    /// Threads a sub-agent call of this thread started, and the call.
    spawned: Vec<(String, u32)>,
    turns: Vec<Turn>,
    /// Turn id → the last turn of that id: a turn's records find it without a scan of every
    /// turn before (that scan made a long session's load quadratic).
    turn_ids: FxHashMap<Box<str>, usize>,
    /// Prompts written before the turn they start (the turn context comes after them).
    loose_prompts: Vec<u32>,
    llm: Option<u32>,
    /// The current LLM call may still receive items (no tool output or usage since).
    llm_open: bool,
    calls: Calls,
    /// Tool calls still waiting for their result (the run is running while there are any).
    pending_calls: usize,
    /// Text copies seen once, waiting for their twin: (role, hash and length of the trimmed
    /// text, which copy).
    unpaired: Vec<(&'static str, u64, usize, Copy_)>,
    model: Option<String>,
    last_total: Option<Total>,
    /// Responses counted from their `token_usage_record` whose `token_count` has not come
    /// yet, and the reverse: the other record of each adds nothing.
    by_record: std::collections::VecDeque<Counted>,
    by_count: std::collections::VecDeque<Counted>,
    /// Time of the previous record, and of the first.
    prev_ts: Option<i64>,
    first_ts: Option<i64>,
    named: bool,
    /// The run's own record (session_meta) was seen.
    root_record: bool,
    aborted_last: bool,
    errored_last: bool,
    /// Turns before this one are settled for good (see `settle`).
    turns_settled: usize,
}

/// Where a record is, and when.
struct At {
    ts: Option<i64>,
    origin: Origin,
}

fn text_key(text: &str) -> (u64, usize) {
    use std::hash::{Hash, Hasher};
    let t = text.trim();
    let mut h = rustc_hash::FxHasher::default();
    t.hash(&mut h);
    (h.finish(), t.len())
}

impl Thread {
    fn ensure_trace(&mut self, sink: &mut Sink) -> usize {
        if let Some(i) = self.ti {
            sink.touch(i);
            return i;
        }
        self.path = sink.path.clone();
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

    /// An event of one record, under the current parent, its payload left in the record.
    fn add_here(&self, t: &mut Trace, r: &At, kind: EventKind, name: &str, status: Status) -> u32 {
        t.add(NewEvent {
            parent: Parent::Index(self.parent()),
            start: r.ts,
            status,
            origin: r.origin,
            payload: PayloadRef::Deferred,
            ..NewEvent::new(kind, name)
        })
    }

    fn find_turn(&self, id: &str) -> Option<usize> {
        self.turn_ids.get(id).copied()
    }

    fn start_turn(&mut self, t: &mut Trace, id: Option<&str>, r: &At) -> usize {
        let n = self.turns.len() + 1;
        let first_prompt = self.loose_prompts.first().map(|&p| t.event(p).start.get());
        let event = t.add(NewEvent {
            id: None,
            parent: Parent::Index(self.root),
            start: first_prompt.flatten().or(r.ts),
            status: Status::Pending,
            origin: r.origin,
            payload: PayloadRef::Deferred,
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
            error_kept: false,
        });
        if let Some(id) = id {
            self.turn_ids.insert(id.into(), self.turns.len() - 1);
        }
        self.llm = None;
        self.llm_open = false;
        self.turns.len() - 1
    }

    /// The turn a `turn_context` or `task_started` belongs to (made if new).
    fn turn_for(&mut self, t: &mut Trace, id: Option<&str>, r: &At, task: bool) -> usize {
        if let Some(i) = id.and_then(|id| self.find_turn(id)) {
            return i;
        }
        let last = self.turns.len().wrapping_sub(1);
        if let Some(cur) = self.turns.last_mut() {
            let free = if task { !cur.has_task } else { !cur.has_context };
            let same_id = id.is_none() || cur.id.is_none();
            if free && same_id && !cur.closed && !cur.active && self.loose_prompts.is_empty() {
                if cur.id.is_none()
                    && let Some(id) = id
                {
                    cur.id = Some(id.to_string());
                    self.turn_ids.insert(id.into(), last);
                }
                return last;
            }
        }
        self.start_turn(t, id, r)
    }

    /// The LLM call model items go to: the open one, else a new one.
    fn llm_for(&mut self, t: &mut Trace, r: &At) -> u32 {
        if let (Some(l), true) = (self.llm, self.llm_open) {
            return l;
        }
        // A request starts when its input was complete: at the record before its first item.
        let start = self.prev_ts.filter(|p| r.ts.is_none_or(|x| *p <= x)).or(r.ts);
        let l = t.add(NewEvent {
            parent: Parent::Index(self.parent()),
            start,
            status: Status::Ok,
            model: self.model.as_deref(),
            origin: r.origin,
            // Its payload is the usage of its token count, when one comes.
            payload: PayloadRef::None,
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
    fn is_twin(&mut self, role: &'static str, key: (u64, usize), copy: Copy_) -> bool {
        if let Some(i) = self
            .unpaired
            .iter()
            .position(|&(r, h, n, c)| r == role && c != copy && (h, n) == key)
        {
            self.unpaired.remove(i);
            return true;
        }
        false
    }

    fn remember(&mut self, role: &'static str, key: (u64, usize), copy: Copy_) {
        self.unpaired.push((role, key.0, key.1, copy));
        if self.unpaired.len() > 32 {
            self.unpaired.remove(0);
        }
    }

    fn message(&mut self, t: &mut Trace, role: &'static str, text: &str, key: (u64, usize), copy: Copy_, r: &At) {
        if text.trim().is_empty() {
            return;
        }
        if self.is_twin(role, key, copy) {
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
                let l = self.llm_for(t, r);
                (EventKind::Message(Role::Assistant), "assistant", l)
            }
            "reasoning" => {
                let l = self.llm_for(t, r);
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
            payload: PayloadRef::Deferred,
            ..NewEvent::new(kind, name)
        });
        if kind == EventKind::Message(Role::User) {
            let fresh = self.turns.last().is_some_and(|x| !x.active && !x.closed);
            if !fresh {
                self.loose_prompts.push(i);
            }
            // A sub-agent's prompt does not name its parent's run.
            if !self.named && !self.sub {
                self.named = true;
                t.meta.name = Some(one_line(text, 100));
            }
        }
        self.remember(role, key, copy);
    }

    /// A tool call item (or an event that reports one): ONE event per call_id.
    fn call(&mut self, t: &mut Trace, call_id: Option<&str>, name: &str, r: &At) -> u32 {
        if let Some(id) = call_id
            && let Some(c) = self.calls.get_mut(t, id)
            && !c.requested
        {
            // An event about this call arrived first: the call itself fills it in, and
            // becomes its first record (the event stays the second when it answered).
            c.requested = true;
            let (e, answered) = (c.event, c.answered);
            let name = t.strings.intern(name);
            let ev = t.event_mut(e);
            ev.name = name;
            if answered && ev.origin2.is_none() && ev.origin.line != r.origin.line {
                ev.origin2 = Some(Box::new(ev.origin));
            }
            ev.origin = r.origin;
            return e;
        }
        let l = self.llm_for(t, r);
        let e = t.add(NewEvent {
            id: call_id,
            parent: Parent::Index(l),
            start: r.ts,
            status: Status::Pending,
            origin: r.origin,
            payload: PayloadRef::Deferred,
            ..NewEvent::new(EventKind::ToolCall, name)
        });
        self.pending_calls += 1;
        if let Some(id) = call_id {
            self.calls.insert(
                t,
                id,
                Call {
                    event: e,
                    requested: true,
                    answered: false,
                    by_output: false,
                },
            );
        }
        e
    }

    /// A call's result arrived in record `r` (its output is read from there when shown).
    fn answer(&mut self, t: &mut Trace, e: u32, failed: bool, r: &At) {
        let ev = t.event_mut(e);
        if ev.status == Status::Pending {
            self.pending_calls -= 1;
        }
        ev.status = if failed { Status::Error } else { Status::Ok };
        if ev.origin.line != r.origin.line {
            ev.origin2 = Some(Box::new(r.origin));
        }
        if let (Some(a), Some(b)) = (ev.start.get(), r.ts) {
            ev.duration = Some(b.saturating_sub(a).max(0)).into();
        }
    }

    fn apply_rec(&mut self, rec: Option<&Rec<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let slow;
        let rec = match rec {
            Some(rec) => rec,
            None => match sink.parse::<Value>(line, loc) {
                Some(v) => {
                    slow = read_value(&v);
                    &slow
                }
                None => return,
            },
        };
        if rec.what == What::NotObject {
            sink.error(loc.line, "not a JSON object");
            return;
        }
        let ti = self.ensure_trace(sink);
        let r = At {
            ts: rec.ts,
            origin: loc.origin(self.file),
        };
        match &rec.what {
            What::Skip => return,
            What::Header(_) if loc.line > 2 => {
                sink.error(loc.line, "neither a rollout envelope nor a response item");
                return;
            }
            What::Neither => {
                sink.error(loc.line, "neither a rollout envelope nor a response item");
                return;
            }
            What::Drift { ty, text } => {
                // Drift (formats/mod.rs): counted, and shown when it carries text.
                sink.skip(ty);
                if *text {
                    self.add_here(&mut sink.traces[ti], &r, EventKind::Other, ty, Status::Ok);
                }
            }
            what => self.apply_what(&mut sink.traces[ti], what, &r),
        }
        if r.ts.is_some() {
            self.prev_ts = r.ts;
            self.first_ts = self.first_ts.or(r.ts);
        }
    }

    fn apply_what(&mut self, t: &mut Trace, what: &What<'_>, r: &At) {
        match what {
            What::SessionMeta(m) | What::Header(m) => {
                if self.sub {
                    // A sub-agent's own record is its container's.
                    if !self.root_record {
                        self.root_record = true;
                        self.thread_id = m.thread.clone().or(self.thread_id.take());
                        self.nickname = m.nickname.clone();
                        let name = format!(
                            "agent {}",
                            self.nickname.as_deref().or(self.thread_id.as_deref()).unwrap_or("?")
                        );
                        let name = t.strings.intern(&name);
                        let c = t.event_mut(self.root);
                        c.origin = r.origin;
                        c.name = name;
                        // Its session_meta says who it is (and its instructions, if any).
                        c.payload = PayloadRef::Deferred;
                    }
                } else if t.meta.attributes.is_empty() {
                    self.thread_id = m.thread.clone();
                    self.nickname = m.nickname.clone();
                    t.meta.attributes.extend(m.attributes.iter().cloned());
                    if let Some(ts) = m.start {
                        t.meta.start = Some(ts);
                    }
                    // The run's record: its instructions are the run's input.
                    if m.instructions || !self.root_record {
                        self.root_record = true;
                        let root = t.event_mut(self.root);
                        root.origin = r.origin;
                        // A sub-agent's rollout read alone also shows whose thread it is.
                        if m.instructions || m.attributes.iter().any(|(k, _)| k == "parent_thread_id") {
                            root.payload = PayloadRef::Deferred;
                        }
                    }
                }
            }
            What::TurnContext { turn_id, model } => {
                if let Some(m) = model.as_deref().filter(|m| !m.is_empty()) {
                    self.model = Some(m.to_string());
                }
                let i = self.turn_for(t, turn_id.as_deref(), r, false);
                self.turns[i].has_context = true;
                let e = self.turns[i].event;
                let mr = self.model.as_deref().map(|m| t.strings.intern(m));
                let ev = t.event_mut(e);
                if let Some(mr) = mr {
                    ev.model = mr;
                }
                // The turn context is what the turn shows: the turn's first record now.
                if ev.origin2.as_deref().is_some_and(|o| o.line == r.origin.line) {
                    ev.origin2 = None;
                }
                ev.origin = r.origin;
            }
            What::Compacted => {
                self.add_here(t, r, EventKind::State, "compacted", Status::Ok);
            }
            What::Quiet | What::Ignored => {}
            What::Settings(model) => {
                if let Some(m) = model {
                    self.model = Some(m.clone());
                }
            }
            What::UsageRecord(u) => self.usage_record(t, u, r),
            What::Text { role, copy, text, key } => self.message(t, role, text, *key, *copy, r),
            What::EncryptedReasoning => {
                // Encrypted reasoning only: still a step of the response.
                let l = self.llm_for(t, r);
                t.add(NewEvent {
                    parent: Parent::Index(l),
                    start: r.ts,
                    status: Status::Ok,
                    origin: r.origin,
                    ..NewEvent::new(EventKind::Other, "reasoning (encrypted)")
                });
            }
            What::Call {
                call_id, name, done, ..
            } => {
                let call_id = call_id.as_deref();
                let e = self.call(t, call_id, name, r);
                if let Some(failed) = *done {
                    self.answer(t, e, failed, r);
                    if let Some(c) = call_id.and_then(|id| self.calls.get_mut(t, id)) {
                        c.answered = true;
                    }
                }
            }
            What::Output { item, call_id, failed } => {
                // Tool output goes back to the model: the next item is a new request.
                self.llm_open = false;
                match self.calls.get_mut(t, call_id).filter(|c| !c.by_output) {
                    Some(c) => {
                        let by_event = std::mem::replace(&mut c.answered, true);
                        c.by_output = true;
                        let e = c.event;
                        // A failure its end event reported stays.
                        let failed = *failed || (by_event && t.event(e).status == Status::Error);
                        self.answer(t, e, failed, r);
                    }
                    None => {
                        t.diagnostics.push(Diagnostic::warning(
                            self.path.clone(),
                            Some(r.origin.line as u64),
                            format!("{item} for call_id {call_id:?} matches no open call; shown on its own"),
                        ));
                        let status = if *failed { Status::Error } else { Status::Ok };
                        self.add_here(t, r, EventKind::Message(Role::Tool), item, status);
                    }
                }
            }
            What::AgentItem(who) => {
                self.add_here(t, r, EventKind::Message(Role::Other), who, Status::Ok);
            }
            What::OtherItem(name) => {
                self.add_here(t, r, EventKind::Other, name, Status::Ok);
            }
            What::TurnStart(id) => {
                let i = self.turn_for(t, id.as_deref(), r, true);
                self.turns[i].has_task = true;
            }
            What::TurnEnd {
                turn_id,
                aborted,
                error,
                duration_ms,
            } => {
                let i = match turn_id.as_deref().and_then(|id| self.find_turn(id)) {
                    Some(i) => i,
                    None if !self.turns.is_empty() => self.turns.len() - 1,
                    None => self.start_turn(t, turn_id.as_deref(), r),
                };
                let turn = &mut self.turns[i];
                turn.closed = true;
                let e = turn.event;
                let error = *aborted || *error;
                // The record whose error is shown; else the last that closed the turn.
                let second = error || !turn.error_kept;
                turn.error_kept |= error;
                let ev = t.event_mut(e);
                // A turn aborted first and completed after stays aborted.
                if ev.status != Status::Error {
                    ev.status = if error { Status::Error } else { Status::Ok };
                }
                if second && ev.origin.line != r.origin.line {
                    ev.origin2 = Some(Box::new(r.origin));
                }
                if let Some(ms) = *duration_ms {
                    ev.duration = Some((ms.min(i64::MAX as u64 / 1_000_000) as i64) * 1_000_000).into();
                } else if let (Some(a), Some(b)) = (ev.start.get(), r.ts) {
                    ev.duration = Some(b.saturating_sub(a).max(0)).into();
                }
                self.aborted_last = t.event(e).status == Status::Error;
                self.llm_open = false;
            }
            What::Tokens(Some(info)) => self.token_count(t, info, r),
            What::Tokens(None) => {}
            What::ErrorEvent(ty) => {
                self.errored_last = *ty == "error";
                self.add_here(t, r, EventKind::Error, ty, Status::Error);
            }
            What::ThreadName(name) => {
                if let Some(n) = name.as_ref().filter(|_| !self.sub) {
                    self.named = true;
                    t.meta.name = Some(n.clone());
                }
            }
            What::CallEvent {
                ty: _,
                call_id,
                name,
                begin,
                failed,
                create,
                spawned,
            } => {
                if let Some(e) = self.call_event(t, call_id, name, *begin, *failed, *create, r) {
                    for id in spawned {
                        if self.spawned.len() < 10_000 && !self.spawned.iter().any(|(s, _)| s == id) {
                            self.spawned.push((id.clone(), e));
                        }
                    }
                }
            }
            What::Shown { ty, state } => {
                let kind = if *state { EventKind::State } else { EventKind::Other };
                self.add_here(t, r, kind, ty, Status::Ok);
            }
            What::NotObject | What::Skip | What::Neither | What::Drift { .. } => {}
        }
    }

    /// An `event_msg` about a tool call: it completes the call of the same `call_id`, or
    /// stands for a call the items do not show (when `create`). Returns the call.
    #[allow(clippy::too_many_arguments)]
    fn call_event(
        &mut self,
        t: &mut Trace,
        call_id: &str,
        name: &str,
        begin: bool,
        failed: bool,
        create: bool,
        r: &At,
    ) -> Option<u32> {
        let e = match self.calls.get_mut(t, call_id) {
            Some(c) => c.event,
            None if !create => return None,
            None => {
                let l = self.llm_for(t, r);
                let e = t.add(NewEvent {
                    id: Some(call_id),
                    parent: Parent::Index(l),
                    start: r.ts,
                    status: Status::Pending,
                    origin: r.origin,
                    payload: PayloadRef::Deferred,
                    ..NewEvent::new(EventKind::ToolCall, name)
                });
                self.pending_calls += 1;
                self.calls.insert(
                    t,
                    call_id,
                    Call {
                        event: e,
                        requested: false,
                        answered: false,
                        by_output: false,
                    },
                );
                e
            }
        };
        if begin {
            return Some(e);
        }
        let answered = self.calls.get_mut(t, call_id).is_some_and(|c| c.answered);
        if !answered {
            self.answer(t, e, failed, r);
        } else if failed {
            t.event_mut(e).status = Status::Error;
        }
        if let Some(c) = self.calls.get_mut(t, call_id) {
            c.answered = true;
        }
        Some(e)
    }

    fn token_count(&mut self, t: &mut Trace, info: &Tokens, r: &At) {
        let total = info.total.as_ref();
        // Codex repeats a count when only the rate limits changed: same total, no new call.
        if let (Some(tot), Some(prev)) = (total, self.last_total.as_ref())
            && tot == prev
        {
            return;
        }
        // Indices into USAGE_KEYS.
        let usage = |f: &dyn Fn(usize) -> Option<u64>| Usage {
            input: f(0),
            output: f(1),
            total: f(2),
            cache_read: f(3),
            cache_write: f(4),
            reasoning: f(5),
            ..Default::default()
        };
        let delta = match (info.last, total, self.last_total.as_ref()) {
            (Some(last), _, _) => last,
            (None, Some(tot), Some(prev)) => usage(&|k| match (tot.as_u64(k), prev.as_u64(k)) {
                (Some(a), Some(b)) if tot.is_object() && prev.is_object() => Some(a.saturating_sub(b)),
                _ => None,
            }),
            (None, Some(tot), None) => usage(&|k| tot.lenient(k)),
            (None, None, _) => return,
        };
        if let Some(tot) = total {
            self.last_total = Some(tot.clone());
        }
        if let Some(m) = info.model.as_deref().filter(|m| !m.is_empty()) {
            self.model = Some(m.to_string());
        }
        let c = Counted {
            last: info.last,
            total: total.cloned(),
        };
        // The response's `token_usage_record` came first and counted it.
        if let Some(i) = self.by_record.iter().position(|x| x.same(&c)) {
            self.by_record.remove(i);
            return;
        }
        self.give_usage(t, delta, r);
        remember(&mut self.by_count, c);
    }

    /// A `token_usage_record`: the usage of the response it closes (newer rollouts write it as
    /// the response completes, and its `token_count` after the tool outputs: the first of
    /// the two to come counts the response, the other adds nothing).
    fn usage_record(&mut self, t: &mut Trace, u: &UsageRec, r: &At) {
        let c = Counted {
            last: u.usage,
            total: u.thread.clone(),
        };
        if let Some(i) = self.by_count.iter().position(|x| x.same(&c)) {
            self.by_count.remove(i);
            return;
        }
        match u.usage {
            Some(raw) => self.give_usage(t, raw, r),
            None => self.llm_open = false,
        }
        remember(&mut self.by_record, c);
    }

    /// Codex's counts of one response (`last_token_usage`, `usage`) to its LLM call.
    fn give_usage(&mut self, t: &mut Trace, raw: Usage, r: &At) {
        let delta = super::usage_openai(raw);
        // The usage belongs to the latest call of this turn that has none; a count with no
        // call before it (usage-only rollouts, a compaction's request) is a call of its own.
        let parent = self.parent();
        let target = self
            .llm
            .filter(|&l| t.event(l).usage.is_none() && t.event(l).parent == parent);
        let l = match target {
            Some(l) => l,
            None => {
                self.llm_open = false;
                self.llm_for(t, r)
            }
        };
        let mr = self.model.as_deref().map(|m| t.strings.intern(m));
        let ev = t.event_mut(l);
        ev.usage = (!delta.is_empty()).then_some(delta).into();
        if let (Some(a), Some(b)) = (ev.start.get(), r.ts) {
            ev.duration = Some(b.saturating_sub(a).max(0)).into();
        }
        // The count is the call's second record: its usage is shown from there.
        if ev.origin.line != r.origin.line {
            ev.origin2 = Some(Box::new(r.origin));
        }
        ev.payload = PayloadRef::Deferred;
        if ev.model.is_empty()
            && let Some(mr) = mr
        {
            ev.model = mr;
            ev.name = mr;
        }
        self.llm_open = false;
    }
}

/// Keep a response counted by one of its records until the other comes (a few at most).
fn remember(q: &mut std::collections::VecDeque<Counted>, c: Counted) {
    if q.len() >= UNMATCHED {
        q.pop_front();
    }
    q.push_back(c);
}

impl Records for Thread {
    type Rec<'a> = Rec<'a>;

    fn skim<'a>(line: &'a [u8], slot: &mut Option<Rec<'a>>) {
        *slot = skim_fast(line).or_else(|| serde_json::from_slice::<Value>(line).ok().map(|v| read_value(&v)));
    }

    fn apply(&mut self, rec: Option<&Rec<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        self.apply_rec(rec, line, loc, sink);
    }
}

/// A sub-agent's rollout is read line by line like the run's own; [`Parser`] settles it.
impl LineParser for Thread {
    fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        engine::one(self, line, loc, sink);
    }

    fn lines(&mut self, batch: &[(&[u8], LineLoc)], sink: &mut Sink) {
        engine::batch(self, batch, sink);
    }

    fn holds_itself(&self) -> bool {
        true
    }

    fn flush(&mut self, _sink: &mut Sink) {}
}

impl Thread {
    /// The thread's status as its records say, its turns settled.
    fn settle_turns(&mut self, t: &mut Trace) -> RunStatus {
        let pending = self.pending_calls > 0;
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
        // Turns without their task events end when the next one starts. Every turn but the
        // last is final once looked at here: settle runs after each slice a viewer reads, so
        // it starts where it left off.
        let n = self.turns.len();
        for (i, turn) in self.turns.iter().enumerate().skip(self.turns_settled) {
            let e = t.event(turn.event);
            if !turn.has_task && e.status == Status::Pending && (i + 1 < n || status != RunStatus::Running) {
                t.event_mut(turn.event).status = Status::Ok;
            }
        }
        self.turns_settled = n.saturating_sub(1);
        status
    }

    /// The run's metadata and its root event.
    fn settle_run(&mut self, t: &mut Trace) {
        let status = self.settle_turns(t);
        t.meta.status = status;
        t.meta.model = self.model.clone();
        let (lo, hi) = t.events_span();
        t.meta.start = t.meta.start.or(lo);
        let start = t.meta.start.or(lo);
        let root = t.event_mut(self.root);
        root.start = start.into();
        if let (Some(a), Some(b)) = (root.start.get(), hi) {
            root.duration = Some(b.saturating_sub(a).max(0)).into();
        }
        root.status = status.event_status();
        if let Some(name) = t.meta.name.clone() {
            let r = t.strings.intern(&name);
            t.event_mut(self.root).name = r;
        }
    }

    /// A sub-agent's container: its span and its status.
    fn settle_container(&mut self, t: &mut Trace) {
        let status = self.settle_turns(t);
        let model = self.model.as_deref().map(|m| t.strings.intern(m));
        let c = t.event_mut(self.root);
        c.status = status.event_status();
        c.start = self.first_ts.into();
        if let (Some(a), Some(b)) = (self.first_ts, self.prev_ts) {
            c.duration = Some(b.saturating_sub(a).max(0)).into();
        }
        if let Some(m) = model {
            c.model = m;
        }
    }
}

/// The Codex line parser: one trace per rollout file. A rollout read with its sub-agents'
/// rollouts ([`Format::load_nested`]: discovery found them beside it) reads theirs into its
/// trace too, each under a container event that hangs under the call that spawned it (as
/// Claude Code's subagents hang under their Task call).
pub struct Parser {
    main: Thread,
    /// None: the rollout alone.
    nest: Option<Nest>,
}

/// The sub-agents' rollouts of a run.
struct Nest {
    /// Given by discovery, or found while following (a rollout named by a spawned thread's id
    /// in the directory of one already read).
    files: Vec<PathBuf>,
    subs: Vec<Sub>,
}

struct Sub {
    reader: super::jsonl::JsonlReader,
    thread: Thread,
}

/// Sub-agent rollouts read into one run, at most.
const MAX_SUBS: usize = 1000;

impl Parser {
    fn new(nested: Option<Vec<PathBuf>>) -> Parser {
        Parser {
            main: Thread::default(),
            nest: nested.map(|files| Nest {
                files,
                subs: Vec::new(),
            }),
        }
    }
}

impl Nest {
    /// Open the rollouts not read yet (and look for those of spawned threads that appeared
    /// since), then read what is new in each.
    fn read(&mut self, main: &Thread, ti: usize, sink: &mut Sink) {
        self.look_for_spawned(main);
        for p in &self.files {
            if self.subs.len() >= MAX_SUBS {
                break;
            }
            let name = p.file_name();
            if self.subs.iter().any(|s| s.thread.path.file_name() == name) || main.path.file_name() == name {
                continue;
            }
            let t = &mut sink.traces[ti];
            let file = t.add_file(p.clone());
            let id = thread_id_of_name(p);
            let container = t.add(NewEvent {
                parent: Parent::Index(main.root),
                status: Status::Unknown,
                origin: Origin {
                    file,
                    ..Default::default()
                },
                ..NewEvent::new(EventKind::Run, &format!("agent {}", id.as_deref().unwrap_or("?")))
            });
            self.subs.push(Sub {
                reader: super::jsonl::JsonlReader::new(p),
                thread: Thread {
                    ti: Some(ti),
                    root: container,
                    file,
                    path: p.clone(),
                    sub: true,
                    thread_id: id,
                    ..Default::default()
                },
            });
        }
        for sub in &mut self.subs {
            if std::fs::metadata(&sub.thread.path).is_ok_and(|m| m.len() < sub.reader.offset()) {
                continue; // a rollout that shrank: keep what was read
            }
            // Diagnostics name the sub-agent's rollout while it is read.
            let main_path = std::mem::replace(&mut sink.path, sub.thread.path.clone());
            if let Err(e) = sub.reader.read_available(&mut sub.thread, sink) {
                sink.warning(None, format!("sub-agent rollout: {e}"));
            }
            sink.path = main_path;
        }
    }

    /// Threads spawned (by the run or a sub-agent) whose rollout is not read yet: one that
    /// appeared beside a rollout already read joins (a sub-agent started while the run is
    /// followed). Codex names a rollout `rollout-<time>-<thread id>.jsonl`.
    fn look_for_spawned(&mut self, main: &Thread) {
        let read = |id: &str| self.subs.iter().any(|s| s.thread.thread_id.as_deref() == Some(id));
        let wanted: Vec<String> = std::iter::once(main)
            .chain(self.subs.iter().map(|s| &s.thread))
            .flat_map(|th| th.spawned.iter().map(|(id, _)| id.clone()))
            .filter(|id| !read(id) && !self.files.iter().any(|f| thread_id_of_name(f).as_deref() == Some(id)))
            .collect();
        if wanted.is_empty() || self.files.len() >= MAX_SUBS {
            return;
        }
        let mut dirs: Vec<&Path> = std::iter::once(main.path.as_path())
            .chain(self.files.iter().map(|f| f.as_path()))
            .filter_map(Path::parent)
            .collect();
        dirs.dedup();
        let mut found = Vec::new();
        for d in dirs {
            let Ok(rd) = std::fs::read_dir(if d.as_os_str().is_empty() { Path::new(".") } else { d }) else {
                continue;
            };
            for e in rd.flatten().take(100_000) {
                let p = d.join(e.file_name());
                if thread_id_of_name(&p).is_some_and(|id| wanted.contains(&id)) && !found.contains(&p) {
                    found.push(p);
                }
            }
        }
        found.sort();
        self.files.extend(found);
    }

    /// Hang each sub-agent's container under the call that spawned it, once that is known.
    fn attach(&self, main: &Thread, t: &mut Trace) {
        let spawns: Vec<&(String, u32)> = std::iter::once(main)
            .chain(self.subs.iter().map(|s| &s.thread))
            .flat_map(|th| th.spawned.iter())
            .collect();
        for sub in &self.subs {
            let c = sub.thread.root;
            if t.event(c).parent != main.root {
                continue; // already under its call
            }
            let Some(id) = sub.thread.thread_id.as_deref() else {
                continue;
            };
            let Some(&&(_, call)) = spawns.iter().find(|(s, _)| s == id) else {
                continue;
            };
            // Never under itself (a rollout that says it spawned its own ancestor).
            let mut up = call;
            let mut inside = false;
            for _ in 0..10_000 {
                if up == c {
                    inside = true;
                    break;
                }
                let p = t.event(up).parent;
                if p == NO_PARENT || p == up {
                    break;
                }
                up = p;
            }
            if !inside {
                t.set_parent(c, call);
            }
        }
    }
}

/// How much of a rollout's start is read to learn whose thread it is: its session_meta's keys
/// come before its instructions (tens of KB), which are not read. Most heads say it in their
/// first 2 KB (discovery reads one of every rollout: the less, the faster a first `ls`).
const HEAD: [usize; 2] = [2 << 10, 8 << 10];

/// A rollout's thread and, for a sub-agent's, its parent thread, from the first session_meta
/// in the head of the file ([`Format::lineage`]). None: not a rollout of threads (an older
/// one, or not readable).
fn lineage(path: &Path) -> Option<super::Lineage> {
    use std::io::Read;
    let mut f = super::open_regular(path).ok()?;
    let mut buf = Vec::with_capacity(HEAD[0]);
    (&mut f).take(HEAD[0] as u64).read_to_end(&mut buf).ok()?;
    let mut found = head_lineage(&buf);
    // Read on when the head said nothing, or was cut before its instructions (the keys
    // that name a parent come before them).
    let cut_early = !buf.contains(&b'\n') && memchr::memmem::find(&buf, b"instructions\"").is_none();
    let incomplete = match &found {
        None | Some((None, _)) => true,
        Some((_, parent)) => parent.is_none() && cut_early,
    };
    if incomplete && buf.len() == HEAD[0] {
        f.take((HEAD[1] - HEAD[0]) as u64).read_to_end(&mut buf).ok()?;
        found = head_lineage(&buf);
    }
    let (id, parent) = found?;
    Some(super::Lineage {
        id: id.or_else(|| thread_id_of_name(path))?,
        parent,
    })
}

/// (thread id, parent thread id) from the first session_meta among the lines of `head` (the
/// last may be cut short: what comes before the cut is read). Records before it (of types
/// this reader does not know, say) are passed over.
fn head_lineage(head: &[u8]) -> Option<(Option<String>, Option<String>)> {
    for line in head.split(|&b| b == b'\n').take(64) {
        let mut ty: Option<String> = None;
        let (mut id, mut parent, mut meta_keys) = (None, None, false);
        let mut k = Skim::new(line);
        let _ = k.object(|k, key| {
            match key {
                b"type" => ty = string(k)?.map(Cow::into_owned),
                b"payload" => k.object(|k, key| {
                    match key {
                        b"id" => id = string(k)?.map(Cow::into_owned),
                        b"parent_thread_id" => {
                            if let Some(p) = string(k)? {
                                parent = Some(p.into_owned());
                            }
                        }
                        b"source" => {
                            let v: Value = serde_json::from_slice(k.value()?).ok()?;
                            let spawn = v.get("subagent").and_then(|s| s.get("thread_spawn"));
                            if let Some(p) = spawn.and_then(|s| str_of(s, "parent_thread_id")) {
                                parent = parent.take().or(Some(p.to_string()));
                            }
                        }
                        b"originator" | b"cli_version" => {
                            meta_keys = true;
                            k.skip()?
                        }
                        _ => k.skip()?,
                    }
                    Some(())
                })?,
                _ => k.skip()?,
            }
            Some(())
        });
        match ty.as_deref() {
            Some("session_meta") => {}
            // Cut before its type: a session_meta by its keys.
            None if meta_keys && id.is_some() => {}
            _ => continue,
        }
        let parent = parent.filter(|p| !p.is_empty());
        return Some((id.filter(|i| !i.is_empty()), parent));
    }
    None
}

/// `rollout-<time>-<thread id>.jsonl` → the thread id (a UUID).
fn thread_id_of_name(p: &Path) -> Option<String> {
    let stem = p
        .file_name()?
        .to_str()?
        .strip_prefix("rollout-")?
        .strip_suffix(".jsonl")?;
    let id = stem.get(stem.len().checked_sub(36)?..)?;
    let uuid = id.len() == 36
        && id.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        });
    uuid.then(|| id.to_ascii_lowercase())
}

impl LineParser for Parser {
    fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        engine::one(&mut self.main, line, loc, sink);
    }

    fn lines(&mut self, batch: &[(&[u8], LineLoc)], sink: &mut Sink) {
        engine::batch(&mut self.main, batch, sink);
    }

    fn holds_itself(&self) -> bool {
        true
    }

    fn settle(&mut self, sink: &mut Sink) {
        let Some(ti) = self.main.ti else { return };
        if let Some(n) = &mut self.nest {
            n.read(&self.main, ti, sink);
            let t = &mut sink.traces[ti];
            n.attach(&self.main, t);
            for sub in &mut n.subs {
                sub.thread.settle_container(t);
            }
        }
        self.main.settle_run(&mut sink.traces[ti]);
    }
}

// ---------------------------------------------------------------------------------------
// Payloads, decoded from the event's record(s) when shown.

/// The payload of a Codex event from its first record and, if any, its second.
fn decode(ev: &Event, raw: &[&[u8]]) -> Payload {
    let mut out = Payload::default();
    let lines = [Some(ev.origin.line), ev.origin2.as_deref().map(|o| o.line)];
    let mut answered = false;
    for (i, bytes) in raw.iter().enumerate() {
        let v: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => {
                out.error = Some(ErrorInfo::unreadable(&e));
                return out;
            }
        };
        let line = lines.get(i).copied().flatten().unwrap_or(0);
        let Some((ty, p)) = normalize(&v, line) else {
            continue;
        };
        let pty = str_of(p, "type").unwrap_or("");
        match ev.kind {
            EventKind::Run if ty == "session_meta" => {
                if let Some(x) = non_empty_instructions(p) {
                    out.input = Some(x.clone());
                }
                // A sub-agent's thread: who it is and whose.
                let m = session_meta(p);
                let agent: serde_json::Map<String, Value> = m
                    .attributes
                    .into_iter()
                    .filter(|(k, _)| {
                        matches!(
                            k.as_str(),
                            "parent_thread_id" | "agent_nickname" | "agent_role" | "agent_path"
                        )
                    })
                    .collect();
                if !agent.is_empty() {
                    let mut agent = agent;
                    if let Some(id) = m.thread {
                        agent.insert("thread_id".into(), Value::String(id));
                    }
                    out.set_extra("sub_agent", Value::Object(agent));
                }
            }
            EventKind::Run => {}
            EventKind::Step => match (ty, pty) {
                ("turn_context", _) => {
                    let keep: serde_json::Map<String, Value> =
                        ["model", "effort", "approval_policy", "sandbox_policy", "cwd"]
                            .iter()
                            .filter_map(|k| field(p, k).map(|x| (k.to_string(), x.clone())))
                            .collect();
                    out.set_extra("turn_context", Value::Object(keep));
                }
                ("event_msg", "turn_aborted") => {
                    out.error = Some(ErrorInfo {
                        kind: Some("aborted".into()),
                        message: format!("turn aborted: {}", str_of(p, "reason").unwrap_or("unknown reason")),
                        ..Default::default()
                    });
                }
                ("event_msg", "task_complete" | "turn_complete") => {
                    if let Some(e) = field(p, "error").and_then(ErrorInfo::from_value) {
                        out.error = Some(e);
                    }
                }
                _ => {}
            },
            EventKind::LlmCall => {
                if ty == "token_usage_record" {
                    // Codex's own counts of the response (inclusive, as it writes them).
                    for k in ["usage", "response_id", "turn_token_usage"] {
                        if let Some(x) = field(p, k) {
                            out.set_extra(k, x.clone());
                        }
                    }
                } else if (ty, pty) == ("event_msg", "token_count")
                    && let Some(info) = field(p, "info")
                {
                    // The call's usage: the count's last usage, else what the index took
                    // from the difference of two totals.
                    let usage = field(info, "last_token_usage").cloned().unwrap_or_else(|| {
                        // The index's normalized kinds back to Codex's inclusive counts.
                        let u = ev.usage.get().unwrap_or_default();
                        let add = |a: Option<u64>, b: [Option<u64>; 2]| {
                            a.map(|a| b.iter().flatten().fold(a, |s, &x| s.saturating_add(x)))
                        };
                        let mut m = serde_json::Map::new();
                        for (k, x) in [
                            ("input_tokens", add(u.input, [u.cache_read, u.cache_write])),
                            ("cached_input_tokens", u.cache_read),
                            ("cache_write_input_tokens", u.cache_write),
                            ("output_tokens", add(u.output, [u.reasoning, None])),
                            ("reasoning_output_tokens", u.reasoning),
                            ("total_tokens", u.total),
                        ] {
                            if let Some(x) = x {
                                m.insert(k.into(), Value::from(x));
                            }
                        }
                        Value::Object(m)
                    });
                    out.set_extra("usage", usage);
                }
            }
            EventKind::ToolCall => call_payload(&mut out, ty, pty, p, &mut answered),
            _ if i == 0 => record_payload(&mut out, ty, pty, p, &v),
            _ => {}
        }
    }
    out
}

/// A tool call's share of one of its records: the call (input), its output, or an event
/// about it.
fn call_payload(out: &mut Payload, ty: &str, pty: &str, p: &Value, answered: &mut bool) {
    let mut answer = |out: &mut Payload, output: Option<Value>, failed: bool| {
        if std::mem::replace(answered, true) {
            return;
        }
        if failed && out.error.is_none() {
            out.error = Some(ErrorInfo {
                message: match output.as_ref() {
                    Some(Value::String(s)) => one_line(s, 200),
                    Some(o) if str_of(o, "output").is_some() => one_line(str_of(o, "output").unwrap_or(""), 200),
                    _ => "the tool reported a failure".into(),
                },
                ..Default::default()
            });
        }
        if output.is_some() {
            out.output = output;
        }
    };
    match ty {
        "response_item" if CALL_ITEMS.contains(&pty) => {
            // The tool's group (`multi_agent_v1`: a sub-agent tool); the name is the tool's.
            if let Some(ns) = field(p, "namespace") {
                out.set_extra("namespace", ns.clone());
            }
            let input = match pty {
                "function_call" | "tool_search_call" => p.get("arguments").map(decode_embedded),
                "custom_tool_call" => p.get("input").map(decode_embedded),
                "local_shell_call" | "web_search_call" => p.get("action").cloned(),
                _ => p.get("revised_prompt").cloned(),
            };
            if input.is_some() {
                out.input = input;
            }
            if matches!(pty, "web_search_call" | "image_generation_call")
                && let Some(st) = str_of(p, "status")
            {
                answer(out, field(p, "result").cloned(), matches!(st, "failed" | "incomplete"));
            }
        }
        "response_item" if OUTPUT_ITEMS.contains(&pty) => {
            let output = item_output(pty, p);
            let failed = output.as_ref().is_some_and(output_failed);
            answer(out, output, failed);
        }
        // A completed item: how the call ended (exit code, duration, the threads it started).
        "event_msg" if pty == "item_completed" => {
            let item = p.get("item").cloned().unwrap_or(Value::Null);
            let output = item
                .get("aggregated_output")
                .or_else(|| item.get("result"))
                .or_else(|| item.get("agents_states"))
                .cloned();
            out.set_extra(pty, item.clone());
            answer(out, output, item_failed(&item));
        }
        "event_msg" => {
            out.set_extra(pty, p.clone());
            if out.input.is_none() {
                out.input = p
                    .get("arguments")
                    .or_else(|| p.get("invocation").and_then(|i| i.get("arguments")))
                    .or_else(|| p.get("command"))
                    .cloned();
            }
            if !(pty.ends_with("_begin") || pty.ends_with("_request")) {
                let output = p
                    .get("result")
                    .or_else(|| p.get("aggregated_output"))
                    .or_else(|| p.get("formatted_output"))
                    .or_else(|| p.get("content_items"))
                    .cloned();
                answer(out, output, call_event_failed(p));
            }
        }
        _ => {}
    }
}

/// The payload of an event that is one record (`v`, of type `ty` and payload `p`): a message,
/// reasoning, an error, ...
fn record_payload(out: &mut Payload, ty: &str, pty: &str, p: &Value, v: &Value) {
    // A record of a type this reader does not know, or one that is only shown for its text.
    if TEXT_TYPES.contains(&ty) || matches!(what_of(ty, p, v), What::Drift { .. }) {
        *out = super::drift_payload(v, &ENVELOPE_FIELDS);
        return;
    }
    let text = |s: String| Some(Value::String(s));
    let phase = |out: &mut Payload| {
        if let Some(x) = field(p, "phase") {
            out.extra.push(("phase".into(), x.clone()));
        }
    };
    match (ty, pty) {
        ("compacted", _) => {
            // Where the context was cut: the summary that replaced it, and the window it
            // starts (the replacement history itself is the model's context, often large).
            out.input = field(p, "message").cloned();
            let mut m: serde_json::Map<String, Value> = [
                "window_number",
                "window_id",
                "previous_window_id",
                "first_window_id",
                "compaction_response_id",
            ]
            .iter()
            .filter_map(|k| field(p, k).map(|x| (k.to_string(), x.clone())))
            .collect();
            if let Some(h) = p.get("replacement_history").and_then(Value::as_array) {
                m.insert("replacement_history_items".into(), Value::from(h.len()));
            }
            if !m.is_empty() {
                out.set_extra("compaction", Value::Object(m));
            }
        }
        ("event_msg", "item_completed") => {
            let item = p.get("item");
            out.input = item.and_then(|i| field(i, "text")).or(item).cloned();
        }
        ("inter_agent_communication", _) => out.input = field(p, "content").cloned().or_else(|| Some(p.clone())),
        ("response_item", "message") => {
            out.input = text(content_text(p.get("content")));
            phase(out);
        }
        ("response_item", "reasoning") => {
            let summary: Vec<&str> = p
                .get("summary")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|s| str_of(s, "text")).collect())
                .unwrap_or_default();
            let t = if summary.is_empty() {
                content_text(p.get("content"))
            } else {
                summary.join("\n")
            };
            if !t.trim().is_empty() {
                out.input = text(t);
            }
        }
        ("response_item", "agent_message") => out.input = p.get("content").cloned(),
        ("response_item", x) if OUTPUT_ITEMS.contains(&x) => out.output = item_output(x, p),
        ("response_item", _) => out.input = Some(p.clone()),
        ("event_msg", "user_message") => out.input = text(str_of(p, "message").unwrap_or("").to_string()),
        ("event_msg", "agent_message") => {
            out.input = text(str_of(p, "message").unwrap_or("").to_string());
            phase(out);
        }
        ("event_msg", "agent_reasoning" | "agent_reasoning_raw_content") => {
            out.input = text(str_of(p, "text").unwrap_or("").to_string())
        }
        ("event_msg", "error" | "stream_error") => {
            out.error = Some(ErrorInfo {
                kind: field(p, "codex_error_info").map(|c| match c {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                }),
                message: str_of(p, "message").unwrap_or("error").to_string(),
                ..Default::default()
            });
        }
        ("event_msg", x) if SHOWN_EVENTS.contains(&x) => out.input = Some(p.clone()),
        _ => {}
    }
}

/// A call's gist by Codex's tools: the command of `shell` / `shell_command` / `local_shell`
/// (a list of words, or `bash -lc <script>`: the script) and `exec_command` (`cmd`), the files
/// an `apply_patch` touches (its input is the patch), a web search's query or page, the plan
/// step in progress, the sub-agent tools' message or targets (`multi_agent_v1`), an MCP
/// tool's (`mcp__<server>__<tool>`, `<server>.<tool>`) first argument.
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{first_arg, generic, key, key_or_generic, patch_files, todos};
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "shell" | "container.exec" | "shell_command" | "local_shell" => by(&["command", "cmd"]),
        "exec_command" | "unified_exec" => by(&["cmd", "command"]),
        "write_stdin" => by(&["chars", "session_id"]),
        "apply_patch" => {
            let patch = match input {
                Value::String(s) => Some(s.as_str()),
                _ => input
                    .get("input")
                    .or_else(|| input.get("patch"))
                    .and_then(Value::as_str),
            };
            patch.and_then(patch_files).or_else(|| generic(name, input))
        }
        "web_search" => key(input, &["query", "url", "pattern"])
            .or_else(|| {
                input
                    .get("queries")
                    .and_then(|q| q.get(0))
                    .and_then(|q| q.as_str().map(str::to_string))
            })
            .or_else(|| generic(name, input)),
        "update_plan" => input
            .get("plan")
            .and_then(|p| todos(p, &["step"], "status"))
            .or_else(|| generic(name, input)),
        "view_image" => by(&["path"]),
        "tool_search" => by(&["query"]),
        "spawn_agent" => by(&["message", "prompt", "task"]),
        "send_input" | "send_message" => by(&["message", "prompt"]),
        "wait_agent" | "wait" => by(&["targets", "ids", "id"]),
        n if n.starts_with("mcp__") || (n.contains('.') && n != "container.exec") => first_arg(input),
        _ => generic(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::outline as tree;
    use PathBuf;
    use std::io::Write;

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
    fn a_total_read_from_its_text_equals_the_value_read_by_serde() {
        let texts = [
            r#"{"input_tokens":5,"output_tokens":7,"total_tokens":12}"#,
            r#"{"total_tokens":12,"output_tokens":7,"input_tokens":5}"#,
            r#"{"input_tokens":5,"output_tokens":7,"total_tokens":12,"cached_input_tokens":0,"cache_write_input_tokens":1,"reasoning_output_tokens":2}"#,
            r#"{"input_tokens":5,"input_tokens":6}"#,
            r#"{"input_tokens":6}"#,
            r#"{}"#,
            r#"{"input_tokens":-5}"#,
            r#"{"input_tokens":5.0}"#,
            r#"{"input_tokens":"5"}"#,
            r#"{"input_tokens":null}"#,
            r#"{"input_tokens":5,"other":1}"#,
            r#"{"input_tokens":5}"#,
            r#"[5]"#,
            r#""5""#,
            r#"18446744073709551615"#,
            r#"null"#,
        ];
        let by_serde = |s: &str| match serde_json::from_str::<Value>(s).unwrap() {
            Value::Null => None,
            v => Some(Total::of_value(&v)),
        };
        for s in texts {
            assert_eq!(Total::of_raw(s), by_serde(s), "{s}");
        }
        // Equal exactly when the JSON values are equal (a repeated count is told by it).
        for a in texts {
            for b in texts {
                let (va, vb) = (
                    serde_json::from_str::<Value>(a).unwrap(),
                    serde_json::from_str::<Value>(b).unwrap(),
                );
                assert_eq!(Total::of_raw(a) == Total::of_raw(b), va == vb, "{a} vs {b}");
            }
        }
        assert!(matches!(Total::of_raw(texts[2]), Some(Total::Counts(_))));
        assert!(matches!(Total::of_raw(texts[7]), Some(Total::Other(_))));
    }

    #[test]
    fn usage_is_normalized_from_codex_inclusive_counts() {
        let l = Codex.load(&fixture("rollout-usage.jsonl")).unwrap();
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let calls: Vec<Usage> = t
            .events
            .iter()
            .filter(|e| e.kind == EventKind::LlmCall)
            .map(|e| e.usage.get().unwrap())
            .collect();
        // Codex's input_tokens include cached_input_tokens, output_tokens include
        // reasoning_output_tokens: 16,341 - 3,584 = 12,757 new input, 81 - 63 = 18 output.
        let first = Usage {
            input: Some(12_757),
            cache_read: Some(3_584),
            output: Some(18),
            reasoning: Some(63),
            total: Some(16_422),
            ..Default::default()
        };
        // The second count has totals only: the difference of the two totals, normalized
        // the same way (20,000 in of which 16,000 cached; 200 out of which 100 reasoning).
        let second = Usage {
            input: Some(4_000),
            cache_read: Some(16_000),
            output: Some(100),
            reasoning: Some(100),
            total: Some(20_200),
            ..Default::default()
        };
        assert_eq!(calls, [first, second]);
        // The shown payload gives Codex's own counts back.
        let l1 = t.events.iter().rposition(|e| e.kind == EventKind::LlmCall).unwrap();
        let p = super::super::payload(t, t.event(l1 as u32));
        let u = &p.extra.iter().find(|(k, _)| k == "usage").unwrap().1;
        assert_eq!(
            (u["input_tokens"].as_u64(), u["output_tokens"].as_u64()),
            (Some(20_000), Some(200))
        );
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
            vec![(Some(3), Severity::Error), (Some(6), Severity::Warning)],
            "{:?}",
            t.diagnostics
        );
        assert_eq!(t.counts().tool_calls, 1);
        // Lines 4 and 7 are of a type no Codex wrote: drift, counted, no diagnostic.
        assert_eq!(t.skipped.iter().collect::<Vec<_>>(), [("mystery_record", 2)]);
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

    /// The skimmer's contract: what it reads, the serde_json reading reads the same.
    /// Ok(true): the line took the fast path.
    fn skim_agrees(line: &[u8]) -> Result<bool, String> {
        let text = || String::from_utf8_lossy(line).into_owned();
        let Some(fast) = skim_fast(line) else { return Ok(false) };
        let v: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            // The skimmer is as strict as serde_json's own skipping (skim.rs), which lets a lone
            // surrogate or a huge number in a skipped value pass where a Value does not.
            Err(e) if serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok() => {
                let _ = e;
                return Ok(true);
            }
            Err(e) => return Err(format!("skimmed a line serde rejects ({e}): {}", text())),
        };
        let slow = read_value(&v);
        if fast != slow {
            return Err(format!("skim {fast:?} != serde {slow:?}: {}", text()));
        }
        Ok(true)
    }

    fn json_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            "[a-z ]{0,12}",
            Just("Exit code: 0\nOutput:\nok".to_string()),
            Just("Exit code: 1\nOutput:\nno".to_string()),
            Just("Chunk ID: a\nProcess exited with code 2\nOutput:\n".to_string()),
            Just("Process exited with code 0 then Exit code: 3".to_string()),
            Just("  {\"output\": \"x\", \"metadata\": {\"exit_code\": 1}}".to_string()),
            Just("[1, 2]".to_string()),
            Just("\"quoted\"".to_string()),
            Just("<environment_context>\n  <cwd>/a</cwd>".to_string()),
            Just("é ✓ Exit code: 4".to_string()),
            "[a-z\n\t\"\\\\é]{0,16}",
        ]
    }

    /// A JSON string of `s`, sometimes with every character written as a `\u` escape.
    fn quoted(s: &str, escape_all: bool) -> String {
        if escape_all {
            let mut out = String::from("\"");
            for u in s.encode_utf16() {
                out.push_str(&format!("\\u{u:04x}"));
            }
            out.push('"');
            out
        } else {
            serde_json::to_string(s).unwrap()
        }
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            any::<i32>().prop_map(|n| n.to_string()),
            Just("1.5e3".to_string()),
            (json_text(), any::<bool>()).prop_map(|(s, e)| quoted(&s, e)),
        ];
        leaf.prop_recursive(2, 12, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec((payload_key(), inner), 0..4).prop_map(|kv| {
                    let f: Vec<String> = kv.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                    format!("{{{}}}", f.join(","))
                }),
            ]
        })
    }

    fn payload_key() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            prop::sample::select(vec![
                "type",
                "role",
                "name",
                "namespace",
                "call_id",
                "id",
                "turn_id",
                "model",
                "message",
                "text",
                "content",
                "summary",
                "info",
                "collaboration_mode",
                "error",
                "duration_ms",
                "output",
                "total_token_usage",
                "last_token_usage",
                "input_tokens",
                "output_tokens",
                "total_tokens",
                "cached_input_tokens",
                "reasoning_output_tokens",
                "settings",
                "metadata",
                "exit_code",
                "success",
                "phase",
            ])
            .prop_map(str::to_string),
            "[a-z_]{1,6}",
        ]
    }

    /// Rollout-shaped lines of the common kinds (and a few others), fields of every type,
    /// repeated keys sometimes; then a byte or two changed.
    fn hot_line() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let kinds = prop::sample::select(vec![
            ("response_item", "message"),
            ("response_item", "reasoning"),
            ("response_item", "function_call"),
            ("response_item", "custom_tool_call"),
            ("response_item", "function_call_output"),
            ("response_item", "custom_tool_call_output"),
            ("response_item", "web_search_call"),
            ("event_msg", "user_message"),
            ("event_msg", "agent_message"),
            ("event_msg", "agent_reasoning"),
            ("event_msg", "token_count"),
            ("event_msg", "task_started"),
            ("event_msg", "task_complete"),
            ("event_msg", "turn_aborted"),
            ("event_msg", "exec_command_end"),
            ("turn_context", ""),
            ("session_meta", ""),
        ]);
        let fields = prop::collection::vec((payload_key(), json_value()), 0..7);
        let ts = prop_oneof![
            Just("\"2026-05-01T10:00:00.123Z\"".to_string()),
            Just("\"[trimmed]\"".to_string()),
            Just("1777629600123".to_string()),
            Just("null".to_string()),
            Just("\"2026-05-01T10:00:0\\u0030Z\"".to_string()),
        ];
        let base = (kinds, fields, ts, any::<bool>()).prop_map(|((ty, pty), fields, ts, ty_first)| {
            let mut f: Vec<String> = fields.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            let t = format!("\"type\":\"{pty}\"");
            if ty_first {
                f.insert(0, t);
            } else {
                f.push(t);
            }
            format!(
                "{{\"timestamp\":{ts},\"type\":\"{ty}\",\"payload\":{{{}}}}}",
                f.join(",")
            )
            .into_bytes()
        });
        crate::formats::testing::with_byte_edits(base, 3)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        #[test]
        fn skimmer_reads_as_serde_json_does(line in hot_line()) {
            skim_agrees(&line).map_err(proptest::test_runner::TestCaseError::fail)?;
        }

        #[test]
        fn skimmer_on_arbitrary_bytes(line in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            skim_agrees(&line).map_err(proptest::test_runner::TestCaseError::fail)?;
        }
    }

    #[test]
    fn the_differential_test_is_not_vacuous() {
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let mut skimmed = 0;
        for _ in 0..1000 {
            let line = hot_line().new_tree(&mut runner).unwrap().current();
            skimmed += skim_agrees(&line).unwrap() as u32;
        }
        assert!(skimmed > 300, "only {skimmed} of 1000 generated records skimmed");
    }

    /// Every line of the fixtures and samples: the common kinds take the fast path, and every
    /// line reads as serde_json reads it.
    #[test]
    fn fixture_lines_take_the_fast_path() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<PathBuf> = Vec::new();
        for dir in [
            "tests/fixtures/codex",
            "tests/fixtures/codex/nested",
            "sample-traces/codex",
        ] {
            for e in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
                if e.path().is_file() {
                    files.push(e.path());
                }
            }
        }
        let (mut hot_lines, mut fast) = (0, 0);
        for f in files {
            let text = std::fs::read(&f).unwrap();
            for l in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                let took = skim_agrees(l).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                let Ok(v) = serde_json::from_slice::<Value>(l) else {
                    continue;
                };
                let hot = v.get("payload").is_some_and(Value::is_object)
                    && str_of(&v, "type")
                        .is_some_and(|ty| is_hot(ty, v["payload"].get("type").and_then(Value::as_str)));
                if hot {
                    hot_lines += 1;
                    fast += took as usize;
                    assert!(took, "{}: not skimmed: {}", f.display(), String::from_utf8_lossy(l));
                }
            }
        }
        assert!(hot_lines >= 30 && fast == hot_lines, "{fast} of {hot_lines}");
    }

    /// A load where every line is read by serde_json (the oracle of the skimmer).
    fn load_by_serde(path: &Path) -> Result<Loaded, LoadError> {
        let mut p = Parser::new(None);
        let mut sink = Sink::new(path);
        let bytes = std::fs::read(path).unwrap();
        let mut off = 0u64;
        for (n, l) in bytes.split(|&b| b == b'\n').enumerate() {
            let loc = LineLoc {
                line: n as u64 + 1,
                offset: off,
                len: l.len(),
            };
            off += l.len() as u64 + 1;
            if l.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let rec = serde_json::from_slice::<Value>(l).ok().map(|v| read_value(&v));
            p.main.apply_rec(rec.as_ref(), l, loc, &mut sink);
        }
        p.flush(&mut sink);
        sink.finish("Codex rollout records")
    }

    /// Everything a view shows of a trace: the tree, each event's index fields and origin,
    /// and its payload as decoded from disk.
    fn shown(t: &Trace) -> Vec<String> {
        let mut out: Vec<String> = t
            .walk()
            .iter()
            .map(|&(i, d)| {
                let e = t.event(i);
                format!(
                    "{d} {:?} {} id={} model={} {:?} {:?} {:?} {:?} {:?} {:?} {:?} payload={:?}",
                    e.kind,
                    t.name(i),
                    t.str(e.source_id),
                    t.str(e.model),
                    e.start,
                    e.duration,
                    e.status,
                    e.usage,
                    e.origin,
                    e.origin2,
                    std::mem::discriminant(&e.payload),
                    super::super::payload(t, e)
                )
            })
            .collect();
        out.push(format!("{:?} {:?} {:?}", t.meta, t.diagnostics, t.counts()));
        out
    }

    /// Rollouts of records sharing call and turn ids, in any order, some lines broken.
    fn rollout_lines() -> impl proptest::strategy::Strategy<Value = Vec<String>> {
        use proptest::prelude::*;
        let id = prop::sample::select(vec!["c1", "c2", "c3", ""]);
        let turn = prop::sample::select(vec!["t1", "t2", ""]);
        let text = prop::sample::select(vec!["hi", "Fix it\nplease", "<environment_context>x", " ", "é ✓"]);
        let out = prop::sample::select(vec![
            "\"Exit code: 1\\nOutput:\\nno\"",
            "\"Process exited with code 0\"",
            "\"{\\\"output\\\": \\\"a\\\", \\\"metadata\\\": {\\\"exit_code\\\": 0}}\"",
            "{\"type\":\"input_text\",\"text\":\"a\"}",
            "\"plain\"",
        ]);
        let usage = prop::sample::select(vec![
            "{\"total_token_usage\":{\"input_tokens\":10,\"output_tokens\":2,\"total_tokens\":12},\"last_token_usage\":{\"input_tokens\":10,\"output_tokens\":2,\"total_tokens\":12}}",
            "{\"total_token_usage\":{\"input_tokens\":30,\"output_tokens\":5,\"total_tokens\":35}}",
            "{\"total_token_usage\":{\"input_tokens\":30,\"output_tokens\":5,\"total_tokens\":35},\"model\":\"m2\"}",
            "{\"last_token_usage\":{\"input_tokens\":50,\"cached_input_tokens\":20,\"output_tokens\":9,\"reasoning_output_tokens\":\"4\",\"total_tokens\":59}}",
            "{\"total_token_usage\":{\"input_tokens\":90,\"cached_input_tokens\":40,\"cache_write_input_tokens\":5,\"output_tokens\":12,\"reasoning_output_tokens\":30,\"total_tokens\":102}}",
            "null",
        ]);
        let rec = (0..23u8, id, turn, text, out, usage, 0..60u32).prop_map(|(k, id, turn, text, out, usage, s)| {
            let ts = format!("\"2026-05-01T10:00:{:02}.000Z\"", s);
            let text = serde_json::to_string(text).unwrap();
            let p = match k {
                0 => format!("\"type\":\"session_meta\",\"payload\":{{\"id\":\"s\",\"cwd\":\"/a\",\"instructions\":{text}}}"),
                1 => format!("\"type\":\"turn_context\",\"payload\":{{\"turn_id\":\"{turn}\",\"model\":\"m\",\"cwd\":\"/a\",\"effort\":\"high\"}}"),
                2 => format!("\"type\":\"event_msg\",\"payload\":{{\"type\":\"task_started\",\"turn_id\":\"{turn}\"}}"),
                3 => format!("\"type\":\"event_msg\",\"payload\":{{\"type\":\"task_complete\",\"turn_id\":\"{turn}\",\"duration_ms\":5}}"),
                4 => format!("\"type\":\"event_msg\",\"payload\":{{\"type\":\"turn_aborted\",\"turn_id\":\"{turn}\",\"reason\":\"interrupted\"}}"),
                5 => format!("\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":{text}}}]}}"),
                6 => format!("\"type\":\"event_msg\",\"payload\":{{\"type\":\"user_message\",\"message\":{text}}}"),
                7 => format!("\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"role\":\"assistant\",\"phase\":\"final\",\"content\":[{{\"type\":\"output_text\",\"text\":{text}}}]}}"),
                8 => format!("\"type\":\"event_msg\",\"payload\":{{\"type\":\"agent_message\",\"message\":{text},\"phase\":\"final\"}}"),
                9 => format!("\"type\":\"response_item\",\"payload\":{{\"type\":\"reasoning\",\"summary\":[{{\"type\":\"summary_text\",\"text\":{text}}}],\"encrypted_content\":\"gAAA\"}}"),
                10 => format!("\"type\":\"response_item\",\"payload\":{{\"type\":\"function_call\",\"name\":\"shell\",\"arguments\":\"{{\\\"cmd\\\":[\\\"ls\\\"]}}\",\"call_id\":\"{id}\"}}"),
                11 => format!("\"type\":\"response_item\",\"payload\":{{\"type\":\"custom_tool_call\",\"name\":\"apply_patch\",\"input\":{text},\"call_id\":\"{id}\"}}"),
                12 => format!("\"type\":\"response_item\",\"payload\":{{\"type\":\"function_call_output\",\"call_id\":\"{id}\",\"output\":{out}}}"),
                13 => format!("\"type\":\"event_msg\",\"payload\":{{\"type\":\"token_count\",\"info\":{usage}}}"),
                14 => format!("\"type\":\"event_msg\",\"payload\":{{\"type\":\"exec_command_end\",\"call_id\":\"{id}\",\"exit_code\":1,\"aggregated_output\":\"boom\"}}"),
                15 => format!("\"type\":\"event_msg\",\"payload\":{{\"type\":\"mcp_tool_call_begin\",\"call_id\":\"{id}\",\"invocation\":{{\"server\":\"s\",\"tool\":\"t\",\"arguments\":{{\"q\":1}}}}}}"),
                16 => format!("\"type\":\"response_item\",\"payload\":{{\"type\":\"web_search_call\",\"id\":\"{id}\",\"status\":\"failed\",\"action\":{{\"query\":\"q\"}}}}"),
                17 => format!("\"type\":\"event_msg\",\"payload\":{{\"type\":\"error\",\"message\":{text}}}"),
                18 => "\"type\":\"compacted\",\"payload\":{\"message\":\"summary\"}".to_string(),
                19 => "\"type\":\"response_item\",\"payload\":{\"type\":\"compaction\",\"encrypted_content\":\"gA\"}".to_string(),
                20 => format!("\"type\":\"inter_agent_communication\",\"payload\":{{\"author\":\"/root\",\"recipient\":\"/root/w\",\"content\":{text}}}"),
                21 => format!("\"type\":\"response_item\",\"payload\":{{\"type\":\"custom_tool_call_output\",\"call_id\":\"{id}\",\"output\":{out}}}"),
                _ => "\"type\":\"response_item\",\"payload\":{\"type\":\"ghost_snapshot\",\"ghost_commit\":{\"id\":\"g\"}}".to_string(),
            };
            format!("{{\"timestamp\":{ts},{p}}}")
        });
        let line = prop_oneof![12 => rec, 1 => Just("{broken".to_string()), 1 => Just("[1]".to_string())];
        prop::collection::vec(line, 0..40)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// The fast path's events and decoded payloads are those of a serde_json reading of the
        /// same lines.
        #[test]
        fn fast_loads_equal_serde_loads(lines in rollout_lines(), copies in 1usize..3) {
            let d = tempfile::tempdir().unwrap();
            let p = d.path().join("rollout.jsonl");
            // Repeated, a rollout is long enough for the engine's parallel batches.
            let mut text = String::new();
            for _ in 0..copies {
                for _ in 0..(if copies > 1 { 300 / lines.len().max(1) + 1 } else { 1 }) {
                    for l in &lines {
                        text.push_str(l);
                        text.push('\n');
                    }
                }
            }
            std::fs::write(&p, &text).unwrap();
            match (Codex.load(&p), load_by_serde(&p)) {
                (Ok(fast), Ok(slow)) => {
                    proptest::prop_assert_eq!(fast.traces.len(), slow.traces.len());
                    for (a, b) in fast.traces.iter().zip(&slow.traces) {
                        proptest::prop_assert_eq!(shown(a), shown(b));
                    }
                }
                (Err(a), Err(b)) => proptest::prop_assert_eq!(a.to_string(), b.to_string()),
                (a, b) => proptest::prop_assert!(false, "{:?} vs {:?}", a.map(|_| ()), b.map(|_| ())),
            }
        }
    }

    #[test]
    fn payloads_are_read_from_their_records() {
        let l = Codex.load(&fixture("rollout-turns.jsonl")).unwrap();
        let t = &l.traces[0];
        assert!(
            t.events.iter().all(|e| !matches!(e.payload, PayloadRef::Inline(_))),
            "nothing is held in memory"
        );
        let p = |i: u32| super::super::payload(t, t.event(i));
        let by_name = |n: &'static str| (0..t.len() as u32).filter(move |&i| t.name(i) == n);
        let turn1 = by_name("turn 1").next().unwrap();
        assert_eq!(
            p(turn1).extra,
            vec![(
                "turn_context".to_string(),
                serde_json::json!({"model": "gpt-test-codex", "effort": "medium", "approval_policy": "on-request", "cwd": "/src/app"})
            )]
        );
        let llms: Vec<u32> = (0..t.len() as u32)
            .filter(|&i| t.event(i).kind == EventKind::LlmCall)
            .collect();
        assert_eq!(
            p(llms[0]).extra,
            vec![(
                "usage".to_string(),
                serde_json::json!({"input_tokens": 100, "cached_input_tokens": 0, "output_tokens": 20, "total_tokens": 120})
            )]
        );
        // No last usage: the difference of the totals.
        assert_eq!(
            p(llms[1]).extra,
            vec![(
                "usage".to_string(),
                serde_json::json!({"input_tokens": 300, "output_tokens": 30, "total_tokens": 330})
            )]
        );
        assert!(p(llms[3]).is_empty(), "no count yet");
        let patch = p(t.find("call_b").unwrap());
        assert_eq!(
            patch.output,
            Some(Value::String("Exit code: 1\nOutput:\npatch does not apply".into()))
        );
        assert_eq!(patch.error.unwrap().message, "Exit code: 1");
        let shell = p(t.find("call_a").unwrap());
        assert_eq!(shell.output.unwrap()["metadata"]["exit_code"], 0);
        let ctx = by_name("context").next().unwrap();
        assert_eq!(
            p(ctx).input,
            Some(Value::String(
                "<environment_context>\n  <cwd>/src/app</cwd>\n</environment_context>".into()
            ))
        );
        let reasoning = by_name("reasoning").next().unwrap();
        assert_eq!(p(reasoning).input, Some(Value::String("Looking for the loader".into())));
        let legacy = Codex.load(&fixture("rollout-legacy.jsonl")).unwrap();
        let t = &legacy.traces[0];
        let root = super::super::payload(t, t.event(t.roots[0]));
        assert_eq!(
            root.input,
            Some(Value::String("Be brief.".into())),
            "the header's instructions"
        );
    }

    #[test]
    fn a_long_session_finds_its_turns_by_id() {
        // Each turn's records name it: many turns load in linear time, each call in its turn.
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("rollout-long.jsonl");
        let mut text = String::new();
        let n = 3000;
        for i in 0..n {
            for (ty, p) in [
                ("turn_context", format!(r#"{{"turn_id":"t{i}","model":"m"}}"#)),
                ("event_msg", format!(r#"{{"type":"task_started","turn_id":"t{i}"}}"#)),
                (
                    "response_item",
                    format!(r#"{{"type":"function_call","name":"f","arguments":"{{}}","call_id":"c{i}"}}"#),
                ),
                (
                    "response_item",
                    format!(
                        r#"{{"type":"function_call_output","call_id":"c{i}","output":"Exit code: {}"}}"#,
                        i % 2
                    ),
                ),
                ("event_msg", format!(r#"{{"type":"task_complete","turn_id":"t{i}"}}"#)),
            ] {
                text.push_str(&format!(
                    "{{\"timestamp\":\"2026-05-01T10:00:00Z\",\"type\":\"{ty}\",\"payload\":{p}}}\n"
                ));
            }
        }
        std::fs::write(&path, text).unwrap();
        let t = &Codex.load(&path).unwrap().traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", &t.diagnostics[..1]);
        let turns: Vec<u32> = t.children(t.roots[0]).to_vec();
        assert_eq!(turns.len(), n);
        assert!(turns.iter().all(|&e| t.event(e).status == Status::Ok));
        let c = t.find("c2999").unwrap();
        assert_eq!(t.event(c).status, Status::Error);
        assert_eq!(t.depth(c), 3, "run → turn → llm → call");
        assert_eq!(t.name(t.event(t.event(c).parent).parent), "turn 3000");
    }

    /// Record types of newer Codex versions (codex-rs/protocol: RolloutItem, ResponseItem,
    /// EventMsg): known, mapped where they mean something, accepted silently otherwise.
    #[test]
    fn newer_record_types_load_without_warnings() {
        let l = Codex.load(&fixture("rollout-newer-types.jsonl")).unwrap();
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let c = t.counts();
        assert_eq!((c.tool_calls, c.tokens), (5, 150));
        let call = |id: &str| {
            let i = t.find(id).unwrap();
            (t.name(i).to_string(), t.event(i).status)
        };
        // The output item after the end event that answered first is the same call.
        assert_eq!(call("c1"), ("apply_patch".into(), Status::Ok));
        assert_eq!(call("ls1"), ("local_shell".into(), Status::Ok));
        assert_eq!(call("ws1"), ("web_search".into(), Status::Ok));
        assert_eq!(call("m1"), ("fs.read_file".into(), Status::Error));
        assert_eq!(call("vi1").1, Status::Ok);
        let p = super::super::payload(t, t.event(t.find("ls1").unwrap()));
        assert_eq!(p.output.unwrap()["metadata"]["exit_code"], 0, "from the output item");
        let names: Vec<(EventKind, &str)> = t
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| (e.kind, t.name(i as u32)))
            .collect();
        for want in [
            (EventKind::Other, "warning"),
            (EventKind::Error, "stream_error"),
            (EventKind::Error, "error"),
            (EventKind::State, "compaction"),
            (EventKind::State, "compacted"),
            (EventKind::Message(Role::Other), "agent message /root → /root/worker"),
        ] {
            assert!(names.contains(&want), "{want:?} in {names:?}");
        }
        // The aborted turn fails the run; UI-only events (deltas, item_started, ...) add nothing.
        assert_eq!(t.meta.status, RunStatus::Error);
        assert_eq!(c.events, 22, "{:#?}", tree(t));
    }

    #[test]
    fn calls_reported_by_events_read_their_payload_from_both_records() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("rollout-events.jsonl");
        let lines = [
            r#"{"timestamp":"2026-05-01T10:00:00Z","type":"session_meta","payload":{"id":"s"}}"#,
            // An MCP call seen only through its events: begin, then end.
            r#"{"timestamp":"2026-05-01T10:00:01Z","type":"event_msg","payload":{"type":"mcp_tool_call_begin","call_id":"m1","invocation":{"server":"fs","tool":"read","arguments":{"path":"a"}}}}"#,
            r#"{"timestamp":"2026-05-01T10:00:02Z","type":"event_msg","payload":{"type":"mcp_tool_call_end","call_id":"m1","invocation":{"server":"fs","tool":"read"},"result":{"Ok":{"content":"text"}}}}"#,
            // The end event first, the call item after it: the item is the call's first record.
            r#"{"timestamp":"2026-05-01T10:00:03Z","type":"event_msg","payload":{"type":"exec_command_end","call_id":"e1","exit_code":2,"aggregated_output":"boom"}}"#,
            r#"{"timestamp":"2026-05-01T10:00:04Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"cmd\":\"make\"}","call_id":"e1"}}"#,
        ];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let t = &Codex.load(&path).unwrap().traces[0];
        let p = |id: &str| super::super::payload(t, t.event(t.find(id).unwrap()));
        let m1 = t.event(t.find("m1").unwrap());
        assert_eq!((t.name(t.find("m1").unwrap()), m1.status), ("fs.read", Status::Ok));
        let m = p("m1");
        assert_eq!(m.input, Some(serde_json::json!({"path": "a"})), "from the begin event");
        assert_eq!(
            m.output,
            Some(serde_json::json!({"Ok": {"content": "text"}})),
            "from the end event"
        );
        let keys: Vec<&str> = m.extra.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["mcp_tool_call_begin", "mcp_tool_call_end"]);
        let e1 = t.find("e1").unwrap();
        assert_eq!((t.name(e1), t.event(e1).status), ("shell", Status::Error));
        assert_eq!(t.event(e1).origin.line, 5, "the call item");
        assert_eq!(
            t.event(e1).origin2.as_deref().map(|o| o.line),
            Some(4),
            "the end event that answered"
        );
        let e = p("e1");
        assert_eq!(e.input, Some(serde_json::json!({"cmd": "make"})));
        assert_eq!(e.output, Some(Value::String("boom".into())));
        assert_eq!(e.error.unwrap().message, "boom");
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
    }

    /// A record in Codex's envelope of a type no Codex writes (top level, or inside
    /// `response_item` / `event_msg`), with text or without.
    fn unknown_record(rng: &mut crate::formats::testing::Rng, near: &Value) -> Value {
        let ty = rng.type_name();
        let mut payload = serde_json::Map::new();
        if let Some(text) = rng.maybe_text() {
            let key = ["message", "text", "content", "summary"][rng.below(4)];
            payload.insert(key.into(), Value::String(text));
        }
        payload.insert("zz".into(), rng.value());
        let (outer, payload) = match rng.below(3) {
            0 => (ty, payload),
            k => {
                payload.insert("type".into(), Value::String(ty));
                (["response_item", "event_msg"][k - 1].to_string(), payload)
            }
        };
        let mut m = serde_json::Map::new();
        if let Some(ts) = near.get("timestamp") {
            m.insert("timestamp".into(), ts.clone());
        }
        m.insert("type".into(), Value::String(outer));
        m.insert("payload".into(), Value::Object(payload));
        Value::Object(m)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on our fixtures and the corpus' rollouts: unknown
        /// record types, unknown payload types and unknown fields change no count and add no
        /// diagnostic (the nested pair is read as a directory: the sub-agent stays nested).
        #[test]
        fn drift_is_skipped_quietly(seed in proptest::prelude::any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "codex",
                &[
                    "tests/fixtures/codex/rollout-turns.jsonl",
                    "tests/fixtures/codex/rollout-usage.jsonl",
                    "tests/fixtures/codex/rollout-newer-types.jsonl",
                    "tests/fixtures/codex/rollout-compacted.jsonl",
                    "tests/fixtures/codex/nested",
                ],
            );
            crate::formats::testing::drift_check(&sources, seed, &|f, rng| {
                crate::formats::testing::drift_jsonl(f, rng, &unknown_record)
            });
        }
    }

    #[test]
    fn unknown_types_are_counted_and_shown_when_they_carry_text() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("rollout-drift.jsonl");
        let lines = [
            r#"{"timestamp":"2026-05-01T10:00:00Z","type":"session_meta","payload":{"id":"s","cwd":"/a"}}"#,
            r#"{"timestamp":"2026-05-01T10:00:01Z","type":"brand_new_record","payload":{"message":"a note"}}"#,
            r#"{"timestamp":"2026-05-01T10:00:02Z","type":"brand_new_record","payload":{"n":1}}"#,
            r#"{"timestamp":"2026-05-01T10:00:03Z","type":"event_msg","payload":{"type":"brand_new_event","call_id":"c9"}}"#,
            r#"{"timestamp":"2026-05-01T10:00:04Z","type":"response_item","payload":{"type":"brand_new_item","text":"said"}}"#,
            r#"{"timestamp":"2026-05-01T10:00:05Z","type":"world_state","payload":{"full":true,"state":{}}}"#,
            r#"{"timestamp":"2026-05-01T10:00:06Z","type":"event_msg","payload":{"type":"item_started","item":{"type":"Reasoning"}}}"#,
        ];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let t = &Codex.load(&path).unwrap().traces[0];
        assert!(t.diagnostics.is_empty(), "drift is no problem: {:?}", t.diagnostics);
        let skipped: Vec<(&str, u64)> = t.skipped.iter().collect();
        assert_eq!(
            skipped,
            [("brand_new_record", 2), ("brand_new_event", 1), ("brand_new_item", 1)],
            "known quiet records are not drift"
        );
        assert_eq!(t.counts().tool_calls, 0, "an unknown event is no call, call_id or not");
        assert_eq!(
            tree(t),
            ["run session", "  other brand_new_record", "  other brand_new_item"],
            "only records with text are shown"
        );
        let note = t.events.iter().position(|e| e.kind == EventKind::Other).unwrap();
        let p = super::super::payload(t, t.event(note as u32));
        assert_eq!(p.input, Some(Value::String("a note".into())));
        assert_eq!(
            p.extra,
            vec![(
                "record".to_string(),
                serde_json::json!({"payload": {"message": "a note"}})
            )]
        );
    }

    /// A response's usage: input, cache read, output, reasoning, total.
    type Tokens5 = (Option<u64>, Option<u64>, Option<u64>, Option<u64>, Option<u64>);

    /// Each response's usage.
    fn llm_usage(t: &Trace) -> Vec<Tokens5> {
        t.events
            .iter()
            .filter(|e| e.kind == EventKind::LlmCall)
            .map(|e| {
                let u = e.usage.get().unwrap_or_default();
                (u.input, u.cache_read, u.output, u.reasoning, u.total)
            })
            .collect()
    }

    /// The rollout without the lines that contain `drop`.
    fn without(path: &Path, drop: &str, dir: &Path) -> PathBuf {
        let text = std::fs::read_to_string(path).unwrap();
        let kept: Vec<&str> = text.lines().filter(|l| !l.contains(drop)).collect();
        let p = dir.join(path.file_name().unwrap());
        std::fs::write(&p, kept.join("\n") + "\n").unwrap();
        p
    }

    #[test]
    fn usage_records_and_token_counts_agree_and_count_each_response_once() {
        let d = tempfile::tempdir().unwrap();
        let mut sources = vec![fixture("rollout-compacted.jsonl")];
        let nested = fixture("nested");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&nested).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        sources.extend(files);
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/codex-rollout/generated-0.171.0");
        if let Ok(rd) = std::fs::read_dir(&corpus) {
            sources.extend(rd.map(|e| e.unwrap().path()));
        }
        for src in sources {
            let both = Codex.load(&src).unwrap();
            let t = &both.traces[0];
            assert!(t.diagnostics.is_empty(), "{}: {:?}", src.display(), t.diagnostics);
            // As before the records existed: from the counts alone.
            let counts = d.path().join("counts");
            let records = d.path().join("records");
            std::fs::create_dir_all(&counts).unwrap();
            std::fs::create_dir_all(&records).unwrap();
            let by_counts = Codex.load(&without(&src, "\"token_usage_record\"", &counts)).unwrap();
            let by_records = Codex.load(&without(&src, "\"token_count\"", &records)).unwrap();
            let u = llm_usage(t);
            assert!(!u.is_empty());
            assert_eq!(
                u,
                llm_usage(&by_counts.traces[0]),
                "{}: records change nothing",
                src.display()
            );
            assert_eq!(u, llm_usage(&by_records.traces[0]), "{}: records alone", src.display());
            assert_eq!(t.counts().tokens, by_counts.traces[0].counts().tokens);
        }
        // The compaction's own request is a call of its own (the context it read is cut).
        let t = &Codex.load(&fixture("rollout-compacted.jsonl")).unwrap().traces[0];
        assert_eq!(t.counts().llm_calls, 3);
        assert_eq!(t.counts().tokens, 388_600, "the thread's last total");
    }

    #[test]
    fn a_count_before_its_record_is_counted_once() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("rollout-order.jsonl");
        let u = r#"{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10,"reasoning_output_tokens":0,"total_tokens":110}"#;
        let lines = [
            r#"{"timestamp":"2026-05-01T10:00:00Z","type":"session_meta","payload":{"id":"s"}}"#.to_string(),
            r#"{"timestamp":"2026-05-01T10:00:01Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}}"#.to_string(),
            format!(r#"{{"timestamp":"2026-05-01T10:00:02Z","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{u},"last_token_usage":{u}}}}}}}"#),
            r#"{"timestamp":"2026-05-01T10:00:03Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"more"}]}}"#.to_string(),
            format!(r#"{{"timestamp":"2026-05-01T10:00:04Z","type":"token_usage_record","payload":{{"response_id":"r1","usage":{u},"thread_token_usage":{u}}}}}"#),
        ];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let t = &Codex.load(&path).unwrap().traces[0];
        assert_eq!(t.counts().tokens, 110, "{:?}", llm_usage(t));
        // The record closed nothing new: the second message's call has no usage of its own.
        assert_eq!(llm_usage(t).iter().filter(|u| u.4.is_some()).count(), 1);
    }

    #[test]
    fn namespaced_calls_keep_their_tool_name_and_show_their_namespace() {
        let path = fixture("nested/rollout-2026-11-20T10-00-00-0196f3a0-1c2d-7e10-9a11-5b0c7d2e4f01.jsonl");
        let t = &Codex.load(&path).unwrap().traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let names: Vec<&str> = (0..t.len() as u32)
            .filter(|&i| t.event(i).kind == EventKind::ToolCall)
            .map(|i| t.name(i))
            .collect();
        assert_eq!(names, ["spawn_agent", "exec_command", "wait_agent", "close_agent"]);
        let spawn = super::super::payload(t, t.event(t.find("call_spawn").unwrap()));
        assert_eq!(
            spawn.extra[0],
            ("namespace".to_string(), Value::String("multi_agent_v1".into()))
        );
        assert_eq!(
            spawn.input.unwrap()["message"],
            "Run the parser tests and report the failures"
        );
        // The command's item says it failed (exit code 101) before its output does.
        let exec = t.find("call_exec").unwrap();
        assert_eq!(t.event(exec).status, Status::Error);
        // Alone, the parent's own four calls; the sub-agent's thread is only named.
        assert_eq!(t.counts().tool_calls, 4);
        assert_eq!(t.counts().tokens, 9_650);
        assert_eq!(t.meta.model.as_deref(), Some("gpt-5.1-codex"));
    }

    #[test]
    fn a_sub_agent_rollout_nests_under_its_spawn_call_when_both_are_listed() {
        let dir = fixture("nested");
        let d = crate::source::discover(std::slice::from_ref(&dir), None);
        assert_eq!(
            d.runs.len(),
            1,
            "the sub-agent is listed once, inside its parent: {:?}",
            d.runs
        );
        let run = &d.runs[0];
        assert_eq!(run.nested.as_ref().map(|n| n.len()), Some(1));
        let l = run.load().unwrap();
        assert_eq!(l.traces.len(), 1);
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let c = t.counts();
        assert_eq!((c.tool_calls, c.llm_calls, c.tokens), (5, 6, 9_650 + 3_320));
        let spawn = t.find("call_spawn").unwrap();
        let agent = t.children(spawn)[0];
        assert_eq!((t.event(agent).kind, t.name(agent)), (EventKind::Run, "agent Hopper"));
        assert_eq!(t.event(agent).status, Status::Ok);
        let sub_call = t.find("call_sub_exec").unwrap();
        assert_eq!(t.depth(sub_call), t.depth(agent) + 3, "container → turn → llm → call");
        assert_eq!(t.event(sub_call).origin.file, t.event(agent).origin.file);
        let p = super::super::payload(t, t.event(agent));
        let sub = &p.extra.iter().find(|(k, _)| k == "sub_agent").unwrap().1;
        assert_eq!(sub["agent_nickname"], "Hopper");
        assert_eq!(sub["parent_thread_id"], "0196f3a0-1c2d-7e10-9a11-5b0c7d2e4f01");
        assert_eq!(
            t.meta.name.as_deref(),
            Some("Find out why the loader tests fail; let a sub-agent run the parser tests meanwhile.")
        );
        // The sub-agent's rollout alone is a run of its own, and says whose it is.
        let sub_path = fixture("nested/rollout-2026-11-20T10-00-01-0196f3a0-2e4f-7a20-8b22-6c1d8e3f5a02.jsonl");
        let alone = crate::source::discover(std::slice::from_ref(&sub_path), None);
        assert!(alone.runs[0].nested.is_none());
        let s = &alone.runs[0].load().unwrap().traces[0];
        assert_eq!(s.counts().tool_calls, 1);
        let attr = |k: &str| s.meta.attributes.iter().find(|(a, _)| a == k).map(|(_, v)| v.clone());
        assert_eq!(attr("agent_nickname"), Some(Value::String("Hopper".into())));
        assert_eq!(
            attr("parent_thread_id"),
            Some(Value::String("0196f3a0-1c2d-7e10-9a11-5b0c7d2e4f01".into()))
        );
        // Both named: one run again.
        let parent = fixture("nested/rollout-2026-11-20T10-00-00-0196f3a0-1c2d-7e10-9a11-5b0c7d2e4f01.jsonl");
        let both = crate::source::discover(&[parent.clone(), sub_path.clone()], None);
        assert_eq!(both.runs.len(), 1);
        assert_eq!(both.runs[0].path, parent);
        assert_eq!(both.runs[0].load().unwrap().traces[0].counts().tool_calls, 5);
    }

    #[test]
    fn a_sub_agent_rollout_that_appears_while_following_joins_its_spawn_call() {
        let d = tempfile::tempdir().unwrap();
        let name = |f: &str| fixture(&format!("nested/{f}"));
        let parent = "rollout-2026-11-20T10-00-00-0196f3a0-1c2d-7e10-9a11-5b0c7d2e4f01.jsonl";
        let sub = "rollout-2026-11-20T10-00-01-0196f3a0-2e4f-7a20-8b22-6c1d8e3f5a02.jsonl";
        std::fs::copy(name(parent), d.path().join(parent)).unwrap();
        // Listed before the sub-agent's rollout exists: read as a run that nests (none yet).
        let found = crate::source::discover(&[d.path().to_path_buf()], None);
        assert_eq!(found.runs[0].nested.as_deref().map(<[PathBuf]>::len), Some(0));
        let mut f = found.runs[0].follow().unwrap();
        f.poll().unwrap();
        assert_eq!(f.sink.traces[0].counts().tool_calls, 4);
        let src = std::fs::read_to_string(name(sub)).unwrap();
        let (head, rest) = src.split_at(
            src.find("\"function_call_output\"")
                .map(|i| src[..i].rfind('\n').unwrap() + 1)
                .unwrap(),
        );
        std::fs::write(d.path().join(sub), head).unwrap();
        f.poll().unwrap();
        let t = &f.sink.traces[0];
        let agent = t.children(t.find("call_spawn").unwrap())[0];
        assert_eq!(t.name(agent), "agent Hopper");
        assert_eq!(
            t.event(t.find("call_sub_exec").unwrap()).status,
            Status::Error,
            "its item said so"
        );
        assert_eq!(t.event(agent).status, Status::Pending, "running");
        let mut w = std::fs::OpenOptions::new()
            .append(true)
            .open(d.path().join(sub))
            .unwrap();
        w.write_all(rest.as_bytes()).unwrap();
        drop(w);
        f.poll().unwrap();
        let t = &f.sink.traces[0];
        assert_eq!(t.counts().tool_calls, 5);
        assert_eq!(t.event(agent).status, Status::Ok);
        let full = crate::source::discover(&[fixture("nested")], None).runs[0]
            .load()
            .unwrap();
        assert_eq!(tree(t), tree(&full.traces[0]), "a followed pair reads as a full load");
    }

    #[test]
    fn the_lineage_of_a_rollout_is_read_from_its_head() {
        let l = |f: &str| lineage(&fixture(f));
        let sub = l("nested/rollout-2026-11-20T10-00-01-0196f3a0-2e4f-7a20-8b22-6c1d8e3f5a02.jsonl").unwrap();
        assert_eq!(sub.id, "0196f3a0-2e4f-7a20-8b22-6c1d8e3f5a02");
        assert_eq!(sub.parent.as_deref(), Some("0196f3a0-1c2d-7e10-9a11-5b0c7d2e4f01"));
        let parent = l("nested/rollout-2026-11-20T10-00-00-0196f3a0-1c2d-7e10-9a11-5b0c7d2e4f01.jsonl").unwrap();
        assert_eq!(parent.parent, None);
        assert!(l("rollout-legacy.jsonl").is_none(), "before threads");
        // The parent id only in `source`, a record of an unknown type first, the line cut in
        // the instructions: still read.
        let head = br#"{"type":"zz_new","payload":{"k":1}}
{"timestamp":"t","type":"session_meta","payload":{"id":"c1","cwd":"/a","originator":"x","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p1","depth":1}}},"base_instructions":{"text":"You are"#;
        assert_eq!(head_lineage(head), Some((Some("c1".into()), Some("p1".into()))));
        // Keys that name the parent past the first read: read on.
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("rollout-long-head.jsonl");
        let long = format!(
            r#"{{"timestamp":"t","type":"session_meta","payload":{{"id":"c2","cwd":"/{}","source":{{"subagent":{{"thread_spawn":{{"parent_thread_id":"p2"}}}}}},"base_instructions":{{"text":"{}"}}}}}}"#,
            "a".repeat(3000),
            "b".repeat(20_000)
        );
        std::fs::write(&p, long + "\n").unwrap();
        assert_eq!(lineage(&p).and_then(|l| l.parent).as_deref(), Some("p2"));
        assert_eq!(
            head_lineage(br#"{"timestamp":"t","type":"response_item","payload":{"type":"message"}}"#),
            None
        );
        assert_eq!(
            thread_id_of_name(Path::new(
                "/x/rollout-2026-11-28T12-27-04-01a2221f-9259-7142-9254-9149d4b69be9.jsonl"
            ))
            .as_deref(),
            Some("01a2221f-9259-7142-9254-9149d4b69be9")
        );
        assert_eq!(thread_id_of_name(Path::new("rollout-x.jsonl")), None);
    }

    #[test]
    fn a_compaction_is_a_state_event_that_shows_where_the_context_was_cut() {
        let t = &Codex.load(&fixture("rollout-compacted.jsonl")).unwrap().traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let c = t
            .events
            .iter()
            .position(|e| e.kind == EventKind::State && t.strings.get(e.name) == "compacted")
            .unwrap() as u32;
        let p = super::super::payload(t, t.event(c));
        assert_eq!(
            p.input,
            Some(Value::String(
                "Summary: the user wants the loader to stream; src/loader.rs:12 defines load.".into()
            ))
        );
        let m = &p.extra.iter().find(|(k, _)| k == "compaction").unwrap().1;
        assert_eq!(m["window_number"], 2);
        assert_eq!(m["replacement_history_items"], 2);
        assert_eq!(m["compaction_response_id"], "resp_compact");
        // The compaction's request: an LLM call before it, with its usage from its record.
        let llms: Vec<u32> = (0..t.len() as u32)
            .filter(|&i| t.event(i).kind == EventKind::LlmCall)
            .collect();
        let compaction_call = super::super::payload(t, t.event(llms[1]));
        let get = |k: &str| {
            compaction_call
                .extra
                .iter()
                .find(|(x, _)| x == k)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get("response_id"), Some(Value::String("resp_compact".into())));
        assert_eq!(get("usage").unwrap()["output_tokens"], 2400);
        assert!(t.event(llms[1]).start.get() < t.event(c).start.get());
    }
}

#[cfg(test)]
mod gist_tests {
    use super::*;
    use serde_json::json;

    fn g(name: &str, input: Value) -> Option<String> {
        Codex.gist(name, &input)
    }

    #[test]
    fn each_tool_says_what_it_did() {
        // `arguments` as the rollouts hold them (decoded from their JSON string).
        assert_eq!(g("shell", json!({"command": ["ls"]})).as_deref(), Some("ls"));
        let sh = json!({"command": ["bash", "-lc", "cargo test -q"], "workdir": "/w", "timeout_ms": 120000});
        assert_eq!(g("shell", sh).as_deref(), Some("cargo test -q"));
        assert_eq!(
            g("shell_command", json!({"command": "rg -n foo", "workdir": "/w"})).as_deref(),
            Some("rg -n foo")
        );
        assert_eq!(
            g("exec_command", json!({"cmd": "pytest -q", "workdir": "/workspace"})).as_deref(),
            Some("pytest -q")
        );
        // local_shell_call: its `action`.
        let ls = json!({"type": "exec", "command": ["git", "diff"], "timeout_ms": null});
        assert_eq!(g("local_shell", ls).as_deref(), Some("git diff"));
        // custom_tool_call apply_patch: the input is the patch text.
        let patch = json!(
            "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-a\n+b\n*** Add File: notes.txt\n+hi\n*** End Patch"
        );
        assert_eq!(g("apply_patch", patch).as_deref(), Some("src/lib.rs, +notes.txt"));
        let fpatch = json!({"input": "*** Begin Patch\n*** Delete File: old.rs\n*** End Patch"});
        assert_eq!(g("apply_patch", fpatch).as_deref(), Some("-old.rs"));
        // web_search_call: its `action`.
        let ws = json!({"type": "search", "query": "example", "queries": ["example"], "url": null, "pattern": null});
        assert_eq!(g("web_search", ws).as_deref(), Some("example"));
        let open = json!({"type": "open_page", "url": "https://example.com"});
        assert_eq!(g("web_search", open).as_deref(), Some("https://example.com"));
        let plan = json!({"explanation": "x", "plan": [
            {"step": "Read code", "status": "completed"},
            {"step": "Write tests", "status": "in_progress"},
            {"step": "Ship", "status": "pending"}
        ]});
        assert_eq!(g("update_plan", plan).as_deref(), Some("1/3 done · Write tests"));
        let spawn = json!({"message": "S3-CODEX-SUB: count the lines of notes.txt"});
        assert_eq!(
            g("spawn_agent", spawn).as_deref(),
            Some("S3-CODEX-SUB: count the lines of notes.txt")
        );
        let wait = json!({"targets": ["01a2221f-9259"], "timeout_ms": 20000});
        assert_eq!(g("wait_agent", wait).as_deref(), Some("01a2221f-9259"));
        assert_eq!(
            g("example.example_tool", json!({"title": "example"})).as_deref(),
            Some("example")
        );
        assert_eq!(g("mcp__fs__read", json!({"n": 2, "path": "a"})).as_deref(), Some("2"));
        assert_eq!(
            g("tool_search", json!({"query": "example"})).as_deref(),
            Some("example")
        );
        assert_eq!(
            g("view_image", json!({"path": "/tmp/a.png"})).as_deref(),
            Some("/tmp/a.png")
        );
        assert_eq!(g("image_generation", json!("a red fox")).as_deref(), Some("a red fox"));
    }
}
