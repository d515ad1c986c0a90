//! Goose (Block's agent): its sessions database `sessions/sessions.db` in goose's data dir
//! (`$GOOSE_PATH_ROOT/data`, else `$XDG_DATA_HOME/goose`, usually `~/.local/share/goose`, on
//! macOS too: goose picks the XDG layout there). Read from block/goose
//! `crates/goose/src/session/session_manager.rs` and `migrations.rs` (schema versions 1 to 13)
//! and `crates/goose/src/conversation/message.rs` / `tool_result_serde.rs`:
//! - table `sessions`: `id` (`YYYYMMDD_N`), `name` (else the older `description`),
//!   `session_type` (`user`, `scheduled`, `sub_agent`, `hidden`, `acp`), `working_dir`,
//!   `created_at` / `updated_at` (SQLite's `YYYY-MM-DD HH:MM:SS`, UTC), `provider_name`,
//!   `model_config_json` (`{model_name, ...}`), the last request's `input_tokens`,
//!   `output_tokens`, `total_tokens`, the session's `accumulated_*_tokens` and (schema 13)
//!   `accumulated_cost`;
//! - table `messages`: one row a message, in order of `id`: `session_id`, `role` (`user` or
//!   `assistant`), `content_json` (the message's content list), `created_timestamp` (epoch
//!   seconds), `metadata_json` (`{userVisible, agentVisible}`), later `message_id`;
//! - a content item is `{"type": "text", text}`, `image`, `toolRequest` (`{id, toolCall:
//!   {status: "success", value: {name, arguments}} | {status: "error", error}}`),
//!   `toolResponse` (`{id, toolResult: {status: "success", value: {content: [...], isError}}
//!   | {status: "error", error}}`; before rmcp's `CallToolResult`, `value` was the content
//!   list itself), `frontendToolRequest`, `toolConfirmationRequest`, `actionRequired`,
//!   `thinking`, `redactedThinking`, `systemNotification`, and from older versions
//!   `contextLengthExceeded`, `summarizationRequested`, `conversationCompacted`.
//!
//! One trace per session. The assistant's messages between two user messages answer one
//! model request each, but goose may store one response as several messages in a row (its
//! text, then its tool requests): those are one LLM call. A tool request and its response
//! (in the next user message, by `id`) are one event. A subagent runs in a session of its
//! own (`session_type` `sub_agent`), a trace of its own.
//!
//! Tokens: goose keeps per session the accumulated input, output and total tokens (the run's
//! tokens) and the last request's (given to the last LLM call); no per-message usage. Cost:
//! `accumulated_cost` as the recorded cost.
//!
//! Status: a session whose last message is the model's answer without tool requests ended; one
//! whose last message is the user's, or tool requests not yet answered, is running (goose
//! records no session failure). A message whose content cannot be read is said (session and
//! message row), and the rest loads. A content type goose did not write before is skipped
//! quietly, counted, and shown as a generic event when it carries text.
//!
//! The database is read in place, read-only, under the guards every agent database is read
//! with (formats/sqlite.rs); a database that changes is read again as a whole.

use super::sqlite::{self, Kind, SQLITE_MAGIC};
use super::{Format, LoadError, Loaded, Probe, drift_payload, drift_text, str_of};
use crate::model::*;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

pub struct Goose;

const FORMAT: &str = "goose";
const DB_NAME: &str = "sessions.db";
const DB: Kind = Kind {
    format: FORMAT,
    agent: "goose",
    tables: &["sessions", "messages"],
};

impl Format for Goose {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        FORMAT
    }
    fn describe(&self) -> &'static str {
        "goose sessions (~/.local/share/goose/sessions/sessions.db, SQLite: sessions and messages)"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return if self.is_run_dir(&p.path) { 100 } else { 0 };
        }
        if !p.head.starts_with(SQLITE_MAGIC) {
            return 0;
        }
        if has_schema(&p.head) {
            95
        } else if p.file_name() == DB_NAME && in_sessions_dir(&p.path) && !has_other_schema(&p.head) {
            // A database whose schema is still in its WAL only.
            70
        } else {
            0
        }
    }

    fn is_run_dir(&self, dir: &Path) -> bool {
        let db = dir.join(DB_NAME);
        if !db.is_file() {
            return false;
        }
        let mut head = Vec::new();
        let read = super::open_regular(&db).and_then(|f| f.take(64 << 10).read_to_end(&mut head));
        read.is_ok()
            && head.starts_with(SQLITE_MAGIC)
            && (has_schema(&head) || (in_sessions_dir(&db) && !has_other_schema(&head)))
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let db = if path.is_dir() {
            path.join(DB_NAME)
        } else {
            path.to_path_buf()
        };
        read_db(path, &db)
    }
}

/// goose's `CREATE TABLE messages` on the database's first pages.
fn has_schema(head: &[u8]) -> bool {
    let has = |s: &[u8]| memchr::memmem::find(head, s).is_some();
    has(b"CREATE TABLE sessions") && has(b"content_json") && has(b"created_timestamp")
}

/// Some other schema already on the first pages (not goose's, whose tables are there).
fn has_other_schema(head: &[u8]) -> bool {
    memchr::memmem::find(head, b"CREATE TABLE").is_some() && !has_schema(head)
}

fn in_sessions_dir(db: &Path) -> bool {
    db.parent().and_then(Path::file_name).is_some_and(|n| n == "sessions")
}

/// A row of `messages`, its content still text.
struct Msg {
    row: i64,
    role: String,
    content: String,
    created: Option<i64>,
    metadata: Option<String>,
}

fn read_db(source: &Path, db: &Path) -> Result<Loaded, LoadError> {
    let c = sqlite::open(db, &DB)?;
    let mut problems = Vec::new();
    if c.unsettled {
        problems.push(Diagnostic::warning(
            db,
            None,
            "the database changed during each copy (goose is writing): what was read may miss the latest messages",
        ));
    }
    let sessions =
        sqlite::rows(&c.conn, "SELECT * FROM sessions").map_err(|e| sqlite::sql_err(db, &DB, "sessions", e))?;
    if sessions.first().is_some_and(|s| !s.contains_key("id")) {
        return Err(LoadError::NotATrace {
            path: db.to_path_buf(),
            reason: "an SQLite database whose `sessions` table is not goose's (no id)".into(),
            tried: FORMAT.into(),
        });
    }
    let mut by_session: HashMap<String, Vec<Msg>> = HashMap::new();
    let mut shape = None;
    sqlite::each_row(&c.conn, "SELECT * FROM messages ORDER BY id", |m| {
        let s = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
        let (Some(sid), Some(content)) = (s("session_id"), s("content_json")) else {
            shape.get_or_insert(m.get("id").and_then(Value::as_i64).unwrap_or(0));
            return;
        };
        by_session.entry(sid).or_default().push(Msg {
            row: m.get("id").and_then(Value::as_i64).unwrap_or(0),
            role: s("role").unwrap_or_default(),
            content,
            created: m.get("created_timestamp").and_then(Value::as_i64),
            metadata: s("metadata_json"),
        });
    })
    .map_err(|e| sqlite::sql_err(db, &DB, "messages", e))?;
    if let Some(row) = shape {
        problems.push(Diagnostic::error(
            db,
            None,
            format!("message row {row} has no session_id or content_json; skipped"),
        ));
    }
    let mut traces = Vec::new();
    for s in &sessions {
        let Some(id) = s.get("id").and_then(|v| {
            v.as_str()
                .map(str::to_owned)
                .or_else(|| v.as_i64().map(|i| i.to_string()))
        }) else {
            problems.push(Diagnostic::error(db, None, "a session row has no id; skipped"));
            continue;
        };
        // goose lists no session without messages (one just created, or left empty).
        let Some(msgs) = by_session.remove(&id) else { continue };
        traces.push(build(source, db, &id, s, &msgs));
    }
    let mut orphans: Vec<_> = by_session.into_iter().collect();
    orphans.sort_by(|a, b| a.0.cmp(&b.0));
    for (sid, msgs) in orphans {
        problems.push(Diagnostic::warning(
            db,
            None,
            format!(
                "{} message(s) of session {sid}, which has no row in sessions; skipped",
                msgs.len()
            ),
        ));
    }
    if traces.is_empty() {
        return Err(LoadError::Invalid {
            path: source.to_path_buf(),
            message: "no goose sessions with messages in it".into(),
            diagnostics: problems,
        });
    }
    traces.sort_by(|a, b| (a.meta.start, &a.meta.id).cmp(&(b.meta.start, &b.meta.id)));
    traces[0].diagnostics.extend(problems);
    Ok(Loaded { traces })
}

fn secs(s: i64) -> Option<i64> {
    s.checked_mul(1_000_000_000)
}

fn num(s: &Map<String, Value>, k: &str) -> Option<u64> {
    s.get(k).and_then(Value::as_u64)
}

/// Where a tool call is, to give it its result.
struct Call {
    event: u32,
    start: Option<i64>,
    done: bool,
}

struct Builder {
    t: Trace,
    model: Option<String>,
    calls: HashMap<String, Call>,
}

impl Builder {
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        parent: u32,
        kind: EventKind,
        name: &str,
        id: Option<&str>,
        start: Option<i64>,
        status: Status,
        p: Payload,
    ) -> u32 {
        self.t.add(NewEvent {
            id,
            parent: Parent::Index(parent),
            status,
            start,
            model: if kind == EventKind::LlmCall {
                self.model.as_deref()
            } else {
                None
            },
            payload: PayloadRef::inline(p),
            origin: Origin {
                file: u16::MAX,
                ..Default::default()
            },
            ..NewEvent::new(kind, name)
        })
    }

    fn text(&mut self, parent: u32, kind: EventKind, name: &str, start: Option<i64>, text: &str) {
        let p = Payload {
            output: Some(Value::String(text.to_string())),
            ..Default::default()
        };
        self.add(parent, kind, name, None, start, Status::Ok, p);
    }

    /// A content type goose did not write before (drift): counted, shown when it has text.
    fn drift(&mut self, parent: u32, ty: &str, start: Option<i64>, v: &Value) {
        self.t.skipped.add(ty);
        if drift_text(v).is_some() {
            self.add(
                parent,
                EventKind::Other,
                ty,
                None,
                start,
                Status::Unknown,
                drift_payload(v, &["type", "id"]),
            );
        }
    }

    /// A `toolRequest` (or `frontendToolRequest`): a pending call.
    fn request(&mut self, parent: u32, c: &Value, start: Option<i64>) {
        let id = str_of(c, "id");
        let call = c.get("toolCall").unwrap_or(&Value::Null);
        let (name, input, error) = match str_of(call, "status") {
            Some("error") => ("invalid tool call", None, Some(err_text(call))),
            _ => {
                let v = call.get("value").unwrap_or(call);
                (
                    str_of(v, "name").unwrap_or("?"),
                    v.get("arguments").filter(|a| !a.is_null()).cloned(),
                    None,
                )
            }
        };
        let p = Payload {
            input,
            error: error.map(|message| ErrorInfo {
                message,
                ..Default::default()
            }),
            ..Default::default()
        };
        let failed = p.error.is_some();
        let status = if failed { Status::Error } else { Status::Pending };
        let ev = self.add(parent, EventKind::ToolCall, name, id, start, status, p);
        if let Some(id) = id {
            self.calls.insert(
                id.to_string(),
                Call {
                    event: ev,
                    start,
                    done: failed,
                },
            );
        }
    }

    /// A `toolResponse`: its call's result; false when no call has its id.
    fn response(&mut self, c: &Value, at: Option<i64>) -> bool {
        let Some(call) = str_of(c, "id").and_then(|id| self.calls.get_mut(id)) else {
            return false;
        };
        call.done = true;
        let (ev, start) = (call.event, call.start);
        let r = c.get("toolResult").unwrap_or(&Value::Null);
        let (output, error) = match str_of(r, "status") {
            Some("error") => (None, Some(err_text(r))),
            _ => {
                let v = r.get("value").unwrap_or(r);
                let (content, is_error) = match v {
                    Value::Array(_) => (v, false),
                    _ => (
                        v.get("content").unwrap_or(&Value::Null),
                        v.get("isError").and_then(Value::as_bool).unwrap_or(false),
                    ),
                };
                let out = result_text(content);
                let error = is_error.then(|| {
                    out.as_ref()
                        .and_then(Value::as_str)
                        .unwrap_or("the tool failed")
                        .to_string()
                });
                (out, error)
            }
        };
        let failed = error.is_some();
        let p = self.t.payload_mut(ev);
        p.output = output;
        if let Some(message) = error {
            p.error = Some(ErrorInfo {
                message,
                ..Default::default()
            });
        }
        let e = self.t.event_mut(ev);
        e.status = if failed { Status::Error } else { Status::Ok };
        if let (Some(s), Some(a)) = (start, at)
            && a >= s
        {
            e.duration = Nanos::new(Some(a - s));
        }
        true
    }

    fn pending(&self) -> usize {
        self.calls.values().filter(|c| !c.done).count()
    }
}

fn err_text(v: &Value) -> String {
    match v.get("error") {
        Some(Value::String(s)) => s.clone(),
        Some(other) if !other.is_null() => other.to_string(),
        _ => "the tool call failed".into(),
    }
}

/// A tool result's content list as text: the parts meant for the model (goose's developer
/// tools add a copy for the user, annotated `audience: ["user"]`), joined; images and other
/// parts as their JSON when there is no text.
fn result_text(content: &Value) -> Option<Value> {
    let Value::Array(parts) = content else {
        return (!content.is_null()).then(|| content.clone());
    };
    let for_model = |p: &&Value| {
        p.get("annotations")
            .and_then(|a| a.get("audience"))
            .and_then(Value::as_array)
            .is_none_or(|a| a.iter().any(|x| x == "assistant"))
    };
    let chosen: Vec<&Value> = {
        let m: Vec<&Value> = parts.iter().filter(for_model).collect();
        if m.is_empty() { parts.iter().collect() } else { m }
    };
    let texts: Vec<String> = chosen
        .iter()
        .filter_map(|p| match str_of(p, "type") {
            Some("text") => str_of(p, "text").map(str::to_owned),
            Some("image") => Some(format!("[image {}]", str_of(p, "mimeType").unwrap_or(""))),
            Some("resource") => p
                .get("resource")
                .and_then(|r| str_of(r, "text").or_else(|| str_of(r, "uri")))
                .map(str::to_owned),
            _ => None,
        })
        .collect();
    if texts.is_empty() {
        return (!chosen.is_empty()).then(|| Value::Array(chosen.into_iter().cloned().collect()));
    }
    Some(Value::String(texts.join("\n")))
}

fn build(source: &Path, db: &Path, id: &str, s: &Map<String, Value>, msgs: &[Msg]) -> Trace {
    let text = |k: &str| s.get(k).and_then(Value::as_str).filter(|x| !x.is_empty());
    let name = text("name").or(text("description")).unwrap_or(id).to_string();
    let model_cfg = text("model_config_json").and_then(|j| serde_json::from_str::<Value>(j).ok());
    let model = model_cfg
        .as_ref()
        .and_then(|m| str_of(m, "model_name"))
        .map(str::to_owned);
    let mut attrs = Vec::new();
    for (k, as_) in [
        ("working_dir", "working_dir"),
        ("session_type", "session_type"),
        ("provider_name", "provider"),
        ("schedule_id", "schedule_id"),
        ("goose_mode", "goose_mode"),
        ("project_id", "project_id"),
        ("thread_id", "thread_id"),
    ] {
        if let Some(v) = text(k) {
            attrs.push((as_.to_string(), Value::String(v.to_string())));
        }
    }
    if let Some(r) = text("recipe_json").and_then(|j| serde_json::from_str::<Value>(j).ok())
        && let Some(t) = str_of(&r, "title")
    {
        attrs.push(("recipe".into(), Value::String(t.to_string())));
    }
    if let Some(c) = s.get("accumulated_cost").filter(|c| c.is_number()) {
        attrs.push((RECORDED_COST_ATTR.into(), c.clone()));
    }
    let start = text("created_at").and_then(parse_timestamp_str);
    let end = text("updated_at").and_then(parse_timestamp_str);
    let first = msgs.iter().find_map(|m| m.created).and_then(secs);
    let last = msgs.iter().rev().find_map(|m| m.created).and_then(secs);
    let start = start.or(first);
    let end = match (end, last) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let mut t = Trace::new(RunMeta {
        id: id.to_string(),
        name: Some(name.clone()),
        format: FORMAT,
        source: source.to_path_buf(),
        attributes: attrs,
        start,
        end,
        model: model.clone(),
        ..Default::default()
    });
    let total = Usage {
        input: num(s, "accumulated_input_tokens").or(num(s, "input_tokens")),
        output: num(s, "accumulated_output_tokens").or(num(s, "output_tokens")),
        total: num(s, "accumulated_total_tokens").or(num(s, "total_tokens")),
        ..Default::default()
    };
    let root = t.add(NewEvent {
        id: Some(id),
        start,
        duration: match (start, end) {
            (Some(s), Some(e)) if e >= s => Some(e - s),
            _ => None,
        },
        usage: (total.sum().unwrap_or(0) > 0).then_some(total),
        origin: Origin {
            file: u16::MAX,
            ..Default::default()
        },
        ..NewEvent::new(EventKind::Run, &name)
    });
    let mut b = Builder {
        model,
        t,
        calls: HashMap::new(),
    };
    let mut status = RunStatus::Unknown;
    // The LLM call the assistant's messages in a row belong to, and whether it called tools.
    let mut llm: Option<(u32, bool)> = None;
    let mut last_at = None;
    for m in msgs {
        let at = m.created.and_then(secs);
        let prev_at = last_at;
        last_at = at.or(last_at);
        let content = match serde_json::from_str::<Value>(&m.content) {
            Ok(Value::Array(a)) => a,
            Ok(_) => {
                b.t.diagnostics.push(Diagnostic::error(
                    db,
                    None,
                    format!(
                        "session {id}, message row {}: content_json is not a list; skipped",
                        m.row
                    ),
                ));
                continue;
            }
            Err(e) => {
                b.t.diagnostics.push(Diagnostic::error(
                    db,
                    None,
                    format!(
                        "session {id}, message row {}: content_json {}; skipped",
                        m.row,
                        super::jsonl::json_error(&e)
                    ),
                ));
                continue;
            }
        };
        let hidden = m
            .metadata
            .as_deref()
            .and_then(|j| serde_json::from_str::<Value>(j).ok())
            .is_some_and(|v| v.get("userVisible") == Some(&Value::Bool(false)));
        match m.role.as_str() {
            "assistant" => {
                let (ev, mut called) = match llm {
                    Some(x) => x,
                    None => {
                        let name = b.model.clone().unwrap_or_else(|| "assistant".into());
                        // The request went out with the message before; the answer is stamped
                        // when it came.
                        let ev = b.add(
                            root,
                            EventKind::LlmCall,
                            &name,
                            None,
                            prev_at.or(at),
                            Status::Ok,
                            Payload::default(),
                        );
                        (ev, false)
                    }
                };
                for c in &content {
                    called |= assistant_content(&mut b, ev, c, at);
                }
                if let Some(a) = at {
                    let e = b.t.event_mut(ev);
                    if let Some(s) = e.start.get()
                        && a > s
                    {
                        e.duration = Nanos::new(Some(a - s));
                    }
                }
                llm = Some((ev, called));
                status = if called { RunStatus::Running } else { RunStatus::Ok };
            }
            "user" => {
                llm = None;
                let mut texts = Vec::new();
                let mut only_results = true;
                for c in &content {
                    match str_of(c, "type").unwrap_or("") {
                        "toolResponse" => {
                            if !b.response(c, at) {
                                b.add(
                                    root,
                                    EventKind::Other,
                                    "tool response",
                                    str_of(c, "id"),
                                    at,
                                    Status::Unknown,
                                    Payload {
                                        output: c.get("toolResult").cloned(),
                                        ..Default::default()
                                    },
                                );
                            }
                        }
                        "text" => {
                            only_results = false;
                            texts.extend(str_of(c, "text").map(str::to_owned));
                        }
                        "image" => {
                            only_results = false;
                            texts.push("[image]".into());
                        }
                        ty => {
                            only_results = false;
                            if !other_content(&mut b, root, ty, c, at) {
                                b.drift(root, ty, at, c);
                            }
                        }
                    }
                }
                if !texts.is_empty() {
                    let name = if hidden { "user (hidden)" } else { "user" };
                    let p = Payload {
                        input: Some(Value::String(texts.join("\n"))),
                        ..Default::default()
                    };
                    b.add(root, EventKind::Message(Role::User), name, None, at, Status::Ok, p);
                }
                if !(only_results && content.is_empty()) {
                    status = RunStatus::Running;
                }
            }
            other => {
                b.t.skipped.add(other);
            }
        }
    }
    // The last request's usage is the last LLM call's.
    let last = Usage {
        input: num(s, "input_tokens"),
        output: num(s, "output_tokens"),
        total: num(s, "total_tokens"),
        ..Default::default()
    };
    if last.sum().unwrap_or(0) > 0
        && let Some(ev) = b.t.events.iter().rposition(|e| e.kind == EventKind::LlmCall)
    {
        b.t.event_mut(ev as u32).usage = last.into();
    }
    let status = if b.pending() > 0 { RunStatus::Running } else { status };
    let mut t = b.t;
    t.meta.status = status;
    t.event_mut(root).status = status.event_status();
    t.finalize();
    t
}

/// One content item of an assistant message under its LLM call; true when it is a tool call.
fn assistant_content(b: &mut Builder, llm: u32, c: &Value, at: Option<i64>) -> bool {
    match str_of(c, "type").unwrap_or("") {
        "text" => {
            if let Some(s) = str_of(c, "text") {
                b.text(llm, EventKind::Message(Role::Assistant), "assistant", at, s);
            }
        }
        "toolRequest" | "frontendToolRequest" => {
            b.request(llm, c, at);
            return true;
        }
        "thinking" => {
            if let Some(s) = str_of(c, "thinking") {
                b.text(llm, EventKind::Other, "thinking", at, s);
            }
        }
        "redactedThinking" => {
            b.add(
                llm,
                EventKind::Other,
                "redacted thinking",
                None,
                at,
                Status::Ok,
                Payload::default(),
            );
        }
        "image" => b.text(llm, EventKind::Message(Role::Assistant), "assistant", at, "[image]"),
        ty => {
            if !other_content(b, llm, ty, c, at) {
                b.drift(llm, ty, at, c);
            }
        }
    }
    false
}

/// Content goose writes that is neither text nor a tool call: shown as a state event. False
/// for a type goose does not write (drift).
fn other_content(b: &mut Builder, parent: u32, ty: &str, c: &Value, at: Option<i64>) -> bool {
    let (name, text) = match ty {
        "toolConfirmationRequest" => (
            format!("confirm {}", str_of(c, "toolName").unwrap_or("?")),
            str_of(c, "prompt").map(str::to_owned),
        ),
        "actionRequired" => {
            let d = c.get("data").unwrap_or(&Value::Null);
            let kind = str_of(d, "actionType").unwrap_or("action");
            let text = str_of(d, "message")
                .or_else(|| str_of(d, "toolName"))
                .map(str::to_owned);
            (format!("action required: {kind}"), text)
        }
        "systemNotification" => ("notification".into(), str_of(c, "msg").map(str::to_owned)),
        "contextLengthExceeded" | "summarizationRequested" | "conversationCompacted" => {
            (ty.to_string(), str_of(c, "msg").map(str::to_owned))
        }
        _ => return false,
    };
    let p = Payload {
        output: text.map(Value::String),
        ..Default::default()
    };
    b.add(parent, EventKind::State, &name, str_of(c, "id"), at, Status::Ok, p);
    true
}

/// goose's tools (an extension's tools are named `<extension>__<tool>`: the developer
/// extension's `shell`, `text_editor`, ...) and the argument that says what a call did.
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::key_or_generic;
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    let tool = name.rsplit("__").next().unwrap_or(name);
    match tool {
        "shell" => by(&["command"]),
        "text_editor" => {
            let path = str_of(input, "path");
            match (str_of(input, "command"), path) {
                (Some(c), Some(p)) => Some(format!("{c} {p}")),
                _ => by(&["path"]),
            }
        }
        "image_processor" | "read" | "write" | "edit" | "tree" => by(&["path"]),
        "web_scrape" | "fetch" => by(&["url"]),
        "automation_script" => by(&["language", "script"]),
        "computer_control" => by(&["script"]),
        "search_available_extensions" | "manage_extensions" => by(&["extension_name", "action"]),
        "read_resource" | "list_resources" => by(&["uri", "extension_name"]),
        "create_task" | "execute_task" | "subagent" | "delegate" => by(&["instructions", "task", "prompt"]),
        "todo_write" | "write_todo" => by(&["content"]),
        _ => super::gist::generic(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/goose")
                .join(name),
        )
        .unwrap()
    }

    /// The fixture database (tests/fixtures/goose/sessions.sql), in `dir/sessions/`.
    pub(crate) fn fixture_db(dir: &Path) -> PathBuf {
        let sdir = dir.join("sessions");
        std::fs::create_dir_all(&sdir).unwrap();
        let db = sdir.join(DB_NAME);
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(&fixture("sessions.sql")).unwrap();
        db
    }

    fn by_id<'a>(l: &'a Loaded, id: &str) -> &'a Trace {
        l.traces.iter().find(|t| t.meta.id == id).unwrap()
    }

    fn tools(t: &Trace) -> Vec<(String, Status)> {
        t.events
            .iter()
            .filter(|e| e.kind == EventKind::ToolCall)
            .map(|e| (t.str(e.name).to_string(), e.status))
            .collect()
    }

    fn attr<'a>(t: &'a Trace, k: &str) -> Option<&'a Value> {
        t.meta.attributes.iter().find(|(x, _)| x == k).map(|(_, v)| v)
    }

    #[test]
    fn sessions_load_with_calls_results_tokens_and_status() {
        let dir = tempfile::tempdir().unwrap();
        let db = fixture_db(dir.path());
        let l = Goose.load(&db).unwrap();
        // The session without messages is not a run.
        assert_eq!(l.traces.len(), 4);
        let t = by_id(&l, "20261120_1");
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.name.as_deref(), Some("Fix the forecast rounding"));
        assert_eq!(t.meta.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(attr(t, "working_dir"), Some(&json!("/home/ada/weather")));
        assert_eq!(attr(t, "provider"), Some(&json!("anthropic")));
        assert_eq!(attr(t, RECORDED_COST_ATTR), Some(&json!(0.0384)));
        let c = t.counts();
        // The text and the tool request stored as two messages are one LLM call.
        assert_eq!((c.tool_calls, c.llm_calls, c.errors), (2, 3, 1));
        assert_eq!(
            tools(t),
            vec![
                ("developer__shell".into(), Status::Ok),
                ("developer__text_editor".into(), Status::Error)
            ]
        );
        // The run's tokens are the session's accumulated ones; the last call has the last request's.
        assert_eq!(c.tokens, 11040);
        let last_llm = t.events.iter().rposition(|e| e.kind == EventKind::LlmCall).unwrap();
        let u = t.events[last_llm].usage.get().unwrap();
        assert_eq!((u.input, u.output), (Some(4200), Some(150)));
        let shell = t
            .events
            .iter()
            .position(|e| t.str(e.name) == "developer__shell")
            .unwrap();
        let p = crate::formats::payload(t, &t.events[shell]);
        assert_eq!(p.input.unwrap()["command"], "rg -n round src/");
        // The copy of the output meant for the user is not repeated.
        assert_eq!(p.output, Some(json!("src/forecast.rs:12:    round(x)")));
        assert_eq!(t.events[shell].duration.get(), Some(2_000_000_000));
        let edit = t
            .events
            .iter()
            .position(|e| t.str(e.name) == "developer__text_editor")
            .unwrap();
        let p = crate::formats::payload(t, &t.events[edit]);
        assert!(p.error.unwrap().message.contains("No match found"));
        assert_eq!(t.meta.start, parse_timestamp_str("2026-11-20 09:00:00"));
        assert!(t.events.iter().any(|e| t.str(e.name) == "thinking"));

        let r = by_id(&l, "20261120_2");
        assert_eq!(r.meta.status, RunStatus::Running);
        assert_eq!(tools(r), vec![("developer__shell".into(), Status::Pending)]);
        assert_eq!(r.counts().tokens, 2140);

        let child = by_id(&l, "20261121_2");
        assert_eq!(attr(child, "session_type"), Some(&json!("sub_agent")));
        assert_eq!(child.meta.status, RunStatus::Ok);
        // A result of the older form: the content list itself.
        let ls = child.events.iter().position(|e| e.kind == EventKind::ToolCall).unwrap();
        let p = crate::formats::payload(child, &child.events[ls]);
        assert_eq!(p.output, Some(json!("cli.rs\nforecast.rs\nunits.rs")));
        let parent = by_id(&l, "20261121_1");
        assert_eq!(tools(parent), vec![("subagent__execute_task".into(), Status::Ok)]);
    }

    #[test]
    fn damaged_messages_are_said_by_session_and_row_and_the_rest_loads() {
        let dir = tempfile::tempdir().unwrap();
        let db = fixture_db(dir.path());
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch(&fixture("damaged.sql"))
            .unwrap();
        let l = Goose.load(&db).unwrap();
        let t = by_id(&l, "20261120_1");
        let msgs: Vec<&str> = t.diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        assert!(
            msgs[0].starts_with("session 20261120_1, message row 900: content_json"),
            "{msgs:?}"
        );
        assert!(
            msgs[1].contains("message row 901: content_json is not a list"),
            "{msgs:?}"
        );
        assert!(t.diagnostics.iter().all(|d| d.path == db));
        assert_eq!(t.counts().tool_calls, 2);
        assert_eq!(t.meta.status, RunStatus::Ok);
    }

    #[test]
    fn a_user_message_without_an_answer_is_running_and_failed_requests_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let db = fixture_db(dir.path());
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch(
                r#"INSERT INTO sessions (id, name, working_dir, created_at) VALUES ('s', 'q', '/w', '2025-10-01T12:00:00.25+00:00'), ('bad', 'b', '/w', '2025-10-01 12:00:00.5+00:00');
                INSERT INTO messages (session_id, role, content_json, created_timestamp) VALUES
                ('s', 'user', '[{"type":"text","text":"hi"}]', 1795165200),
                ('bad', 'user', '[{"type":"text","text":"do it"}]', 1795165200),
                ('bad', 'assistant', '[{"type":"toolRequest","id":"x","toolCall":{"status":"error","error":"-32602: invalid JSON in arguments"}}]', 1795165201),
                ('bad', 'user', '[{"type":"toolResponse","id":"x","toolResult":{"status":"success","value":{"content":[{"type":"text","text":"boom"}],"isError":true}}}]', 1795165202),
                ('bad', 'assistant', '[{"type":"text","text":"That failed."}]', 1795165203);"#,
            )
            .unwrap();
        let l = Goose.load(&db).unwrap();
        assert_eq!(by_id(&l, "s").meta.status, RunStatus::Running);
        // Times as sqlx binds them (imported sessions) as well as SQLite's own.
        assert_eq!(
            by_id(&l, "s").meta.start,
            parse_timestamp_str("2025-10-01T12:00:00.250Z")
        );
        assert_eq!(
            by_id(&l, "bad").meta.start,
            parse_timestamp_str("2025-10-01T12:00:00.500Z")
        );
        let b = by_id(&l, "bad");
        assert_eq!(b.meta.status, RunStatus::Ok);
        assert_eq!(tools(b), vec![("invalid tool call".into(), Status::Error)]);
    }

    #[test]
    fn other_databases_and_files_are_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other.db");
        rusqlite::Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE notes (id TEXT);")
            .unwrap();
        assert!(crate::formats::detect(&other).is_err());
        let e = Goose.load(&other).unwrap_err().to_string();
        assert!(e.contains("goose"), "{e}");
        let views = dir.path().join("views.db");
        rusqlite::Connection::open(&views)
            .unwrap()
            .execute_batch("CREATE TABLE sessions (id TEXT); CREATE VIEW messages AS SELECT 1 AS id;")
            .unwrap();
        let e = Goose.load(&views).unwrap_err().to_string();
        assert!(e.contains("not a table"), "{e}");
        let empty = dir.path().join("empty");
        let db = fixture_db(&empty);
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch("DELETE FROM messages;")
            .unwrap();
        let e = Goose.load(&db).unwrap_err().to_string();
        assert!(e.contains("no goose sessions"), "{e}");
        // Detected by its schema whatever its name, and as its place's directory.
        assert_eq!(crate::formats::detect(&db).unwrap().id(), FORMAT);
        assert_eq!(crate::formats::detect(db.parent().unwrap()).unwrap().id(), FORMAT);
    }

    #[test]
    fn unknown_content_is_counted_quietly_and_shown_when_it_carries_text() {
        let dir = tempfile::tempdir().unwrap();
        let db = fixture_db(dir.path());
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch(
                r#"INSERT INTO sessions (id, name, working_dir) VALUES ('d', 'd', '/w');
                INSERT INTO messages (session_id, role, content_json, created_timestamp) VALUES
                ('d', 'user', '[{"type":"text","text":"hi"},{"type":"audio","text":"hello there"}]', 1795165200),
                ('d', 'assistant', '[{"type":"text","text":"ok"},{"type":"citation","n":1},{"type":"systemNotification","notificationType":"inlineMessage","msg":"Compacted"}]', 1795165201);"#,
            )
            .unwrap();
        let l = Goose.load(&db).unwrap();
        let t = by_id(&l, "d");
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.skipped.total(), 2);
        let others: Vec<&str> = t
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Other | EventKind::State))
            .map(|e| t.str(e.name))
            .collect();
        assert_eq!(others, vec!["audio", "notification"]);
        assert_eq!(t.meta.status, RunStatus::Ok);
    }

    /// Drift in a sessions.db: content items of types goose does not write yet, unknown
    /// fields in known ones and in the tables (a column goose adds later).
    fn drift_db(f: &Path, rng: &mut crate::formats::testing::Rng) -> usize {
        if f.file_name().and_then(|n| n.to_str()) != Some(DB_NAME) {
            return 0;
        }
        let conn = rusqlite::Connection::open(f).unwrap();
        let rows: Vec<(i64, String)> = conn
            .prepare("SELECT id, content_json FROM messages")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut inserted = 0;
        for (id, content) in rows {
            let Ok(Value::Array(mut items)) = serde_json::from_str::<Value>(&content) else {
                continue;
            };
            for it in items.iter_mut() {
                if rng.one_in(3)
                    && let Value::Object(o) = it
                {
                    o.insert(rng.type_name(), rng.value());
                }
            }
            if rng.one_in(3) {
                let text = if rng.one_in(2) {
                    json!("drifted text")
                } else {
                    rng.value()
                };
                items.push(json!({"type": format!("t{}", rng.type_name()), "text": text}));
                inserted += 1;
            }
            conn.execute(
                "UPDATE messages SET content_json = ?1 WHERE id = ?2",
                rusqlite::params![Value::Array(items).to_string(), id],
            )
            .unwrap();
        }
        let col = format!("c{}", rng.type_name());
        conn.execute_batch(&format!("ALTER TABLE sessions ADD COLUMN \"{col}\" TEXT DEFAULT 'x'"))
            .unwrap();
        inserted
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 12, ..Default::default() })]
        #[test]
        fn drift_is_skipped_quietly(seed in proptest::prelude::any::<u64>()) {
            let dir = tempfile::tempdir().unwrap();
            let db = fixture_db(dir.path());
            let mut sources = crate::formats::testing::drift_sources(FORMAT, &["sample-traces/goose/sessions"]);
            sources.push(db.parent().unwrap().to_path_buf());
            crate::formats::testing::drift_check(&sources, seed, &drift_db);
        }
    }

    #[test]
    fn the_sample_loads() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/goose/sessions");
        let l = crate::formats::load(&root, None).unwrap();
        assert_eq!(l.traces.len(), 4);
        assert!(l.traces.iter().all(|t| t.diagnostics.is_empty()));
        let tools: usize = l.traces.iter().map(|t| t.counts().tool_calls).sum();
        assert_eq!(tools, 5);
    }

    /// Writes the sample (`cargo test --lib goose::tests::write_sample -- --ignored`): the
    /// fixture database.
    #[test]
    #[ignore]
    fn write_sample() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/goose");
        let _ = std::fs::remove_dir_all(root.join("sessions"));
        let db = fixture_db(&root);
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("VACUUM").unwrap();
    }

    #[test]
    fn each_tool_says_what_it_did() {
        let g = |n: &str, i: Value| tool_gist(n, &i);
        assert_eq!(
            g("developer__shell", json!({"command": "cargo test"})).as_deref(),
            Some("cargo test")
        );
        assert_eq!(
            g("developer__text_editor", json!({"command": "view", "path": "/a/b.rs"})).as_deref(),
            Some("view /a/b.rs")
        );
        assert_eq!(
            g(
                "computercontroller__web_scrape",
                json!({"url": "https://block.xyz", "save_as": "text"})
            )
            .as_deref(),
            Some("https://block.xyz")
        );
        assert_eq!(
            g("subagent__execute_task", json!({"instructions": "List the modules"})).as_deref(),
            Some("List the modules")
        );
    }
}
