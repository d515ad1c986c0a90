//! Zed's agent threads: the SQLite database `threads/threads.db` in Zed's data dir
//! (`$FLATPAK_XDG_DATA_HOME/zed`, else `$XDG_DATA_HOME/zed`, usually `~/.local/share/zed`; on
//! macOS `~/Library/Application Support/Zed`). Read from Zed's own `crates/agent/src/db.rs`,
//! `thread.rs` and `legacy_thread.rs`:
//! - table `threads`: `id`, `summary` (the title), `updated_at` (RFC 3339), `data_type`
//!   (`zstd` or `json`), `data` (the thread), and, added by later migrations, `parent_id` (a
//!   subagent's parent thread), `folder_paths`, `folder_paths_order` and `created_at`;
//! - `data` is JSON (zstd-compressed when `data_type` is `zstd`, which is all Zed writes now):
//!   `{version: "0.3.0", title, messages, updated_at, model: {provider, model},
//!   request_token_usage: {<user message id>: TokenUsage}, cumulative_token_usage,
//!   subagent_context: {parent_thread_id, depth}, ...}`. A message is `{"User": {id,
//!   content: [{"Text": s} | {"Mention": {uri, content}} | {"Image": …}]}}`, `{"Agent":
//!   {content: [{"Text": s} | {"Thinking": {text, signature}} | {"RedactedThinking": s} |
//!   {"ToolUse": {id, name, input, raw_input, is_input_complete}}], tool_results: {<id>:
//!   {tool_use_id, tool_name, is_error, content, output}}}}` or `"Resume"`;
//! - threads of the first agent (versions `0.1.0`, `0.2.0` or none, which Zed still upgrades
//!   when it opens them) are `{summary, messages: [{id, role, segments: [{type: text |
//!   thinking | RedactedThinking}], tool_uses, tool_results, context}], request_token_usage:
//!   [TokenUsage by message index]}`; in `0.1.0` the results are in the next user message.
//!
//! One trace per thread; a subagent (`spawn_agent`) runs in a thread of its own whose
//! `parent_id` names its parent (a trace of its own, as OpenCode's child sessions are). An
//! `Agent` message is the response to ONE model request (Zed starts a new one for each
//! request of a turn), so it is one LLM call with its text, thinking and tool calls as
//! children; a tool call and its result (from the message's `tool_results`) are one event.
//!
//! Tokens: Zed keeps, for each user message, the usage of the LAST request of its turn (each
//! usage update of the turn replaces it), which is the usage of the turn's last LLM call; the
//! turn's other calls have no recorded usage. `input_tokens` is the input without the cache,
//! `cache_creation_input_tokens` and `cache_read_input_tokens` the cache written and read.
//! Legacy threads keep one usage per assistant message, by index. Zed records no times of
//! messages: a thread has its creation and last update times only.
//!
//! Status: a thread whose last message is the model's answer without tool calls (or with
//! calls the user cancelled: Zed gives those the result "Tool canceled by user") ended; one
//! whose last message is the user's, or tool results the model has not answered yet, is
//! running (Zed does not save a failed request: such a thread turns stale).
//!
//! Drift (formats/mod.rs): a message variant, content variant, legacy role or segment type
//! Zed did not write before is skipped quietly, counted, and shown as a generic event of
//! that type when it carries text. A thread whose data cannot be read (not zstd, not JSON, an
//! unknown `data_type`) is said, naming the thread, and the other threads load.
//!
//! The database is read in place, read-only, under the guards every agent database is read
//! with (formats/sqlite.rs); a database that changes is read again as a whole.

use super::sqlite::{self, Kind, SQLITE_MAGIC};
use super::{Format, LoadError, Loaded, Probe, drift_payload, drift_text, str_of};
use crate::model::*;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

pub struct Zed;

const FORMAT: &str = "zed";
const DB_NAME: &str = "threads.db";
const DB: Kind = Kind {
    format: FORMAT,
    agent: "Zed",
    tables: &["threads"],
};
/// The largest thread JSON read (after decompression): a thread holds every tool output of a
/// conversation, but not gigabytes of them.
const THREAD_LIMIT: u64 = 256 << 20;
/// What Zed writes as the result of a tool call the user cancelled.
const CANCELED: &str = "Tool canceled by user";

impl Format for Zed {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        FORMAT
    }
    fn describe(&self) -> &'static str {
        "Zed agent threads (~/.local/share/zed/threads/threads.db, SQLite; zstd-compressed JSON threads)"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return if self.is_run_dir(&p.path) { 100 } else { 0 };
        }
        if !p.head.starts_with(SQLITE_MAGIC) {
            // A text dump of the database (`sqlite3 threads.db .dump`), as threads are shared.
            return if p.file_name().ends_with(".sql") && has_schema(&p.head) {
                60
            } else {
                0
            };
        }
        if has_schema(&p.head) {
            95
        } else if p.file_name() == DB_NAME && in_threads_dir(&p.path) {
            // A database whose schema is still in its WAL only.
            80
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
        read.is_ok() && head.starts_with(SQLITE_MAGIC) && (has_schema(&head) || in_threads_dir(&db))
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let db = if path.is_dir() {
            path.join(DB_NAME)
        } else {
            path.to_path_buf()
        };
        if is_dump(&db) {
            return Err(LoadError::invalid(
                &db,
                "an SQL text dump of Zed's threads table, not its database: tracetui does not run SQL from a file; \
                 make it a database (`sqlite3 threads.db < FILE`) and open that",
            ));
        }
        read_db(path, &db)
    }
}

/// Zed's `CREATE TABLE threads` on the database's first pages.
fn has_schema(head: &[u8]) -> bool {
    let has = |s: &[u8]| memchr::memmem::find(head, s).is_some();
    has(b"CREATE TABLE threads") && has(b"data_type TEXT")
}

/// A text file (not SQLite) holding Zed's schema: a dump of the database.
fn is_dump(path: &Path) -> bool {
    let mut head = Vec::new();
    let read = super::open_regular(path).and_then(|f| f.take(64 << 10).read_to_end(&mut head));
    read.is_ok() && !head.starts_with(SQLITE_MAGIC) && has_schema(&head)
}

fn in_threads_dir(db: &Path) -> bool {
    db.parent().and_then(Path::file_name).is_some_and(|n| n == "threads")
}

/// A row of `threads`, less its data.
#[derive(Default)]
struct Row {
    id: String,
    title: Option<String>,
    created: Option<i64>,
    updated: Option<i64>,
    parent: Option<String>,
    folders: Option<String>,
}

fn read_db(source: &Path, db: &Path) -> Result<Loaded, LoadError> {
    let c = sqlite::open(db, &DB)?;
    let mut problems = Vec::new();
    if c.unsettled {
        problems.push(Diagnostic::warning(
            db,
            None,
            "the database changed during each copy (Zed is writing): what was read may miss the latest threads",
        ));
    }
    let err = |e| sqlite::sql_err(db, &DB, "threads", e);
    let mut st = c.conn.prepare("SELECT * FROM threads").map_err(err)?;
    let names: Vec<String> = st.column_names().map(str::to_owned).collect();
    let col = |n: &str| names.iter().position(|x| x == n);
    let (Some(id_c), Some(type_c), Some(data_c)) = (col("id"), col("data_type"), col("data")) else {
        return Err(LoadError::NotATrace {
            path: db.to_path_buf(),
            reason: "an SQLite database whose `threads` table is not Zed's (no id, data_type, data)".into(),
            tried: FORMAT.into(),
        });
    };
    let (summary_c, updated_c, created_c, parent_c, folders_c) = (
        col("summary"),
        col("updated_at"),
        col("created_at"),
        col("parent_id"),
        col("folder_paths"),
    );
    let mut traces = Vec::new();
    let mut q = st.query([]).map_err(err)?;
    let mut n = 0u64;
    while let Some(r) = q.next().map_err(err)? {
        n += 1;
        let text = |i: Option<usize>| -> Option<String> {
            use rusqlite::types::ValueRef;
            match r.get_ref(i?).ok()? {
                ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()).filter(|s| !s.is_empty()),
                ValueRef::Integer(i) => Some(i.to_string()),
                _ => None,
            }
        };
        let Some(id) = text(Some(id_c)) else {
            problems.push(Diagnostic::error(
                db,
                None,
                format!("thread row {n} has no id; skipped"),
            ));
            continue;
        };
        let row = Row {
            title: text(summary_c),
            created: text(created_c).and_then(|s| parse_timestamp_str(&s)),
            updated: text(updated_c).and_then(|s| parse_timestamp_str(&s)),
            parent: text(parent_c),
            folders: text(folders_c),
            id,
        };
        let data_type = text(Some(type_c)).unwrap_or_default();
        let data = match r.get_ref(data_c) {
            Ok(rusqlite::types::ValueRef::Blob(b)) | Ok(rusqlite::types::ValueRef::Text(b)) => b,
            _ => &[][..],
        };
        match decode(&data_type, data) {
            Ok(v) => traces.push(build(source, row, v)),
            Err(m) => problems.push(Diagnostic::error(db, None, format!("thread {}: {m}; skipped", row.id))),
        }
    }
    if traces.is_empty() {
        return Err(LoadError::Invalid {
            path: source.to_path_buf(),
            message: "no Zed threads in it".into(),
            diagnostics: problems,
        });
    }
    // Threads in the order they were started (the table's order is Zed's insertion order).
    traces.sort_by(|a, b| (a.meta.start, &a.meta.id).cmp(&(b.meta.start, &b.meta.id)));
    // Problems that belong to no thread that loaded are told with the first.
    traces[0].diagnostics.extend(problems);
    Ok(Loaded { traces })
}

/// A thread's `data` as its JSON object.
fn decode(data_type: &str, data: &[u8]) -> Result<Value, String> {
    let json = match data_type {
        "zstd" => {
            let mut out = Vec::new();
            zstd::stream::read::Decoder::with_buffer(data)
                .and_then(|d| d.take(THREAD_LIMIT + 1).read_to_end(&mut out))
                .map_err(|e| format!("its zstd data cannot be decompressed ({e})"))?;
            if out.len() as u64 > THREAD_LIMIT {
                return Err(format!(
                    "its data decompresses to more than {} MiB; not read",
                    THREAD_LIMIT >> 20
                ));
            }
            out
        }
        "json" => data.to_vec(),
        other => return Err(format!("data_type {other:?} is neither zstd nor json")),
    };
    match serde_json::from_slice::<Value>(&json) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err("its data is not a JSON object".into()),
        Err(e) => Err(super::jsonl::json_error(&e)),
    }
}

/// Where a tool call is, to give it its result.
struct Call {
    event: u32,
    done: bool,
}

struct Builder {
    t: Trace,
    root: u32,
    model: Option<String>,
    calls: HashMap<String, Call>,
}

impl Builder {
    fn add(&mut self, parent: u32, kind: EventKind, name: &str, id: Option<&str>, status: Status, p: Payload) -> u32 {
        self.t.add(NewEvent {
            id,
            parent: Parent::Index(parent),
            status,
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

    fn llm_call(&mut self) -> u32 {
        let name = self.model.clone().unwrap_or_else(|| "assistant".into());
        self.add(
            self.root,
            EventKind::LlmCall,
            &name,
            None,
            Status::Ok,
            Payload::default(),
        )
    }

    fn text(&mut self, parent: u32, kind: EventKind, name: &str, text: &str) {
        let p = Payload {
            output: Some(Value::String(text.to_string())),
            ..Default::default()
        };
        self.add(parent, kind, name, None, Status::Ok, p);
    }

    /// A record of a type Zed did not write before (drift): counted, shown when it has text.
    fn drift(&mut self, parent: u32, ty: &str, v: &Value) {
        self.t.skipped.add(ty);
        if drift_text(v).is_some() {
            self.add(
                parent,
                EventKind::Other,
                ty,
                None,
                Status::Unknown,
                drift_payload(v, &["id"]),
            );
        }
    }

    fn tool_use(&mut self, parent: u32, id: Option<&str>, name: &str, input: Option<Value>) {
        let p = Payload {
            input,
            ..Default::default()
        };
        let ev = self.add(parent, EventKind::ToolCall, name, id, Status::Pending, p);
        if let Some(id) = id {
            self.calls.insert(id.to_string(), Call { event: ev, done: false });
        }
    }

    /// Give a call its result (`r`: `{tool_use_id, is_error, content, output}`); false when
    /// no call has its id.
    fn tool_result(&mut self, id: &str, r: &Value) -> bool {
        let Some(call) = self.calls.get_mut(id) else {
            return false;
        };
        call.done = true;
        let ev = call.event;
        let error = r.get("is_error").and_then(Value::as_bool).unwrap_or(false);
        let content = r.get("content").map(result_content);
        let raw = r.get("output").filter(|o| !o.is_null()).cloned();
        let p = self.t.payload_mut(ev);
        if error {
            let message = content
                .as_ref()
                .and_then(Value::as_str)
                .unwrap_or("the tool failed")
                .to_string();
            p.error = Some(ErrorInfo {
                message,
                ..Default::default()
            });
        }
        p.output = content.clone();
        if let Some(raw) = raw.filter(|o| Some(o) != content.as_ref()) {
            if let Some(s) = str_of(&raw, "session_id") {
                p.set_extra("subagent session", Value::String(s.to_string()));
            }
            p.set_extra("raw output", raw);
        }
        self.t.event_mut(ev).status = if error { Status::Error } else { Status::Ok };
        true
    }

    fn pending(&self) -> usize {
        self.calls.values().filter(|c| !c.done).count()
    }
}

/// A tool result's content as Zed's deserializer reads it: a string, `{"Text": s}`, `{"type":
/// "text", "text": s}`, `{"text": s}`, an image, or (newer Zed) a list of them.
fn result_content(v: &Value) -> Value {
    match v {
        Value::Array(a) => {
            let parts: Vec<Value> = a.iter().map(result_content).collect();
            if parts.iter().all(Value::is_string) {
                let texts: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
                Value::String(texts.join("\n"))
            } else {
                Value::Array(parts)
            }
        }
        Value::Object(o) => {
            let ci = |k: &str| o.iter().find(|(n, _)| n.eq_ignore_ascii_case(k)).map(|(_, v)| v);
            if let Some(t) = ci("text").and_then(Value::as_str) {
                Value::String(t.to_string())
            } else if ci("image").is_some() || ci("source").is_some() {
                Value::String("[image]".into())
            } else {
                v.clone()
            }
        }
        other => other.clone(),
    }
}

fn usage_of(u: &Value) -> Option<Usage> {
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    let usage = Usage {
        input: n("input_tokens"),
        output: n("output_tokens"),
        cache_write: n("cache_creation_input_tokens"),
        cache_read: n("cache_read_input_tokens"),
        ..Default::default()
    };
    // Zed writes zeros for a request it has no usage of.
    (usage.sum().unwrap_or(0) > 0).then_some(usage)
}

fn build(source: &Path, row: Row, v: Value) -> Trace {
    let title = row
        .title
        .clone()
        .or_else(|| str_of(&v, "title").or_else(|| str_of(&v, "summary")).map(str::to_owned))
        .unwrap_or_else(|| row.id.clone());
    let mut attrs = Vec::new();
    let model = v.get("model");
    if let Some(p) = model.and_then(|m| str_of(m, "provider")) {
        attrs.push(("provider".to_string(), Value::String(p.to_string())));
    }
    for k in ["version", "profile", "thinking_effort"] {
        if let Some(x) = v.get(k).filter(|x| !x.is_null()) {
            attrs.push((k.to_string(), x.clone()));
        }
    }
    if let Some(f) = &row.folders {
        // Zed's PathList: the folders, one a line.
        let dirs: Vec<Value> = f.lines().map(|l| Value::String(l.to_string())).collect();
        if dirs.len() == 1 {
            attrs.push(("directory".into(), dirs[0].clone()));
        } else {
            attrs.push(("directories".into(), Value::Array(dirs)));
        }
    }
    let parent = row.parent.clone().or_else(|| {
        v.get("subagent_context")
            .and_then(|c| str_of(c, "parent_thread_id"))
            .map(str::to_owned)
    });
    if let Some(p) = parent {
        attrs.push(("parent session".into(), Value::String(p)));
    }
    if v.get("imported").and_then(Value::as_bool) == Some(true) {
        attrs.push(("imported".into(), Value::Bool(true)));
    }
    let start = row.created.or(row.updated);
    let mut t = Trace::new(RunMeta {
        id: row.id.clone(),
        name: Some(title.clone()),
        format: FORMAT,
        source: source.to_path_buf(),
        attributes: attrs,
        start,
        end: row.updated,
        model: model.and_then(|m| str_of(m, "model")).map(str::to_owned),
        ..Default::default()
    });
    let root = t.add(NewEvent {
        id: Some(&row.id),
        start,
        duration: match (start, row.updated) {
            (Some(s), Some(e)) if e >= s => Some(e - s),
            _ => None,
        },
        origin: Origin {
            file: u16::MAX,
            ..Default::default()
        },
        ..NewEvent::new(EventKind::Run, &title)
    });
    let mut b = Builder {
        model: t.meta.model.clone(),
        t,
        root,
        calls: HashMap::new(),
    };
    let empty = Vec::new();
    let messages = match v.get("messages") {
        Some(Value::Array(a)) => a,
        Some(_) => {
            b.t.diagnostics.push(Diagnostic::error(
                source,
                None,
                format!("thread {}: messages is not a list; no messages read", row.id),
            ));
            &empty
        }
        None => &empty,
    };
    let legacy = match str_of(&v, "version") {
        None => true,
        Some(ver) => ver.starts_with("0.1.") || ver.starts_with("0.2."),
    };
    let status = if legacy {
        legacy_messages(&mut b, &row.id, source, messages, v.get("request_token_usage"))
    } else {
        messages_v3(&mut b, &row.id, source, messages, v.get("request_token_usage"))
    };
    let status = if b.pending() > 0 { RunStatus::Running } else { status };
    let mut t = b.t;
    t.meta.status = status;
    t.event_mut(root).status = status.event_status();
    t.finalize();
    t
}

/// The messages of a thread of today's agent (0.3.0); returns the thread's status.
fn messages_v3(b: &mut Builder, id: &str, source: &Path, messages: &[Value], usage: Option<&Value>) -> RunStatus {
    let usage = usage.and_then(Value::as_object);
    // The turn's user message id and its last LLM call, which gets the turn's usage.
    let mut turn: (Option<String>, Option<u32>) = (None, None);
    let mut status = RunStatus::Unknown;
    let give_usage = |b: &mut Builder, turn: &(Option<String>, Option<u32>)| {
        if let ((Some(uid), Some(ev)), Some(map)) = (turn, usage)
            && let Some(u) = map.get(uid).and_then(usage_of)
        {
            b.t.event_mut(*ev).usage = u.into();
        }
    };
    for (i, m) in messages.iter().enumerate() {
        let (ty, body) = match m {
            Value::String(s) => (s.as_str(), &Value::Null),
            Value::Object(o) if o.len() == 1 => {
                let (k, v) = o.iter().next().expect("one entry");
                (k.as_str(), v)
            }
            _ => {
                b.t.diagnostics.push(Diagnostic::warning(
                    source,
                    None,
                    format!("thread {id}: message {i} is not a Zed message; skipped"),
                ));
                continue;
            }
        };
        match ty {
            "User" => {
                give_usage(b, &turn);
                turn = (str_of(body, "id").map(str::to_owned), None);
                user_message(b, body);
                status = RunStatus::Running;
            }
            "Agent" => {
                let (ev, ended) = agent_message(b, body);
                turn.1 = Some(ev);
                status = if ended { RunStatus::Ok } else { RunStatus::Running };
            }
            "Resume" => {
                b.add(b.root, EventKind::State, "resume", None, Status::Ok, Payload::default());
                status = RunStatus::Running;
            }
            other => b.drift(b.root, other, body),
        }
    }
    give_usage(b, &turn);
    status
}

fn user_message(b: &mut Builder, body: &Value) {
    let mut texts = Vec::new();
    let mut drift = Vec::new();
    for c in body.get("content").and_then(Value::as_array).into_iter().flatten() {
        match c {
            Value::Object(o) if o.len() == 1 => {
                let (k, v) = o.iter().next().expect("one entry");
                match k.as_str() {
                    "Text" => texts.extend(v.as_str().map(str::to_owned)),
                    "Mention" => {
                        let uri = str_of(v, "uri")
                            .map(str::to_owned)
                            .unwrap_or_else(|| v.get("uri").map(|u| u.to_string()).unwrap_or_default());
                        texts.push(format!("@{uri}"));
                    }
                    "Image" => texts.push("[image]".into()),
                    other => drift.push((other.to_string(), v.clone())),
                }
            }
            Value::String(s) => texts.push(s.clone()),
            _ => {}
        }
    }
    let p = Payload {
        input: Some(Value::String(texts.join("\n"))),
        ..Default::default()
    };
    let ev = b.add(
        b.root,
        EventKind::Message(Role::User),
        "user",
        str_of(body, "id"),
        Status::Ok,
        p,
    );
    for (ty, v) in drift {
        b.drift(ev, &ty, &v);
    }
}

/// An `Agent` message: one LLM call and what it said and called. Returns the call's event
/// and whether the message ends its turn (no tool calls, or only cancelled ones).
fn agent_message(b: &mut Builder, body: &Value) -> (u32, bool) {
    let llm = b.llm_call();
    let mut called = false;
    let mut cancelled = false;
    let results = body.get("tool_results").and_then(Value::as_object);
    for c in body.get("content").and_then(Value::as_array).into_iter().flatten() {
        let Value::Object(o) = c else { continue };
        if o.len() != 1 {
            continue;
        }
        let (k, v) = o.iter().next().expect("one entry");
        match k.as_str() {
            "Text" => {
                if let Some(s) = v.as_str() {
                    b.text(llm, EventKind::Message(Role::Assistant), "assistant", s);
                }
            }
            "Thinking" => {
                if let Some(s) = str_of(v, "text") {
                    b.text(llm, EventKind::Other, "thinking", s);
                }
            }
            "RedactedThinking" => {
                b.add(
                    llm,
                    EventKind::Other,
                    "redacted thinking",
                    None,
                    Status::Ok,
                    Payload::default(),
                );
            }
            "ToolUse" => {
                called = true;
                let tid = str_of(v, "id");
                let name = str_of(v, "name").unwrap_or("?");
                let input = v
                    .get("input")
                    .filter(|i| !i.is_null())
                    .cloned()
                    .or_else(|| str_of(v, "raw_input").map(super::json_or_string));
                b.tool_use(llm, tid, name, input);
                if let Some(tid) = tid
                    && let Some(r) = results.and_then(|m| m.get(tid))
                {
                    b.tool_result(tid, r);
                    if result_content(r.get("content").unwrap_or(&Value::Null)).as_str() == Some(CANCELED) {
                        cancelled = true;
                    }
                }
            }
            other => b.drift(llm, other, v),
        }
    }
    (llm, !called || cancelled)
}

/// The messages of a first-agent thread (0.1.0, 0.2.0 or no version); returns its status.
fn legacy_messages(b: &mut Builder, id: &str, source: &Path, messages: &[Value], usage: Option<&Value>) -> RunStatus {
    let usage = usage.and_then(Value::as_array);
    let mut status = RunStatus::Unknown;
    let mut orphans = 0;
    for (i, m) in messages.iter().enumerate() {
        let Some(role) = str_of(m, "role") else {
            b.t.diagnostics.push(Diagnostic::warning(
                source,
                None,
                format!("thread {id}: message {i} has no role; skipped"),
            ));
            continue;
        };
        let mut texts: Vec<(String, String)> = Vec::new();
        let mut drift = Vec::new();
        if let Some(t) = str_of(m, "text") {
            texts.push(("text".into(), t.to_string()));
        }
        for s in m.get("segments").and_then(Value::as_array).into_iter().flatten() {
            let ty = str_of(s, "type").unwrap_or("");
            match ty {
                "text" | "thinking" => texts.extend(str_of(s, "text").map(|t| (ty.to_string(), t.to_string()))),
                "RedactedThinking" => texts.push((ty.to_string(), String::new())),
                other => drift.push((other.to_string(), s.clone())),
            }
        }
        let uses = m
            .get("tool_uses")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let results = m
            .get("tool_results")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let parent = match role {
            "user" | "system" => {
                let mut input: Vec<&str> = texts.iter().map(|(_, t)| t.as_str()).collect();
                if let Some(ctx) = str_of(m, "context").filter(|c| !c.is_empty()) {
                    input.push(ctx);
                }
                let p = Payload {
                    input: Some(Value::String(input.join("\n"))),
                    ..Default::default()
                };
                let r = if role == "user" { Role::User } else { Role::System };
                if role == "user" && results.is_empty() {
                    status = RunStatus::Running;
                }
                b.add(b.root, EventKind::Message(r), role, None, Status::Ok, p)
            }
            "assistant" => {
                let llm = b.llm_call();
                if let Some(u) = usage.and_then(|u| u.get(i)).and_then(usage_of) {
                    b.t.event_mut(llm).usage = u.into();
                }
                for (ty, t) in &texts {
                    match ty.as_str() {
                        "text" => b.text(llm, EventKind::Message(Role::Assistant), "assistant", t),
                        "thinking" => b.text(llm, EventKind::Other, "thinking", t),
                        _ => {
                            b.add(
                                llm,
                                EventKind::Other,
                                "redacted thinking",
                                None,
                                Status::Ok,
                                Payload::default(),
                            );
                        }
                    }
                }
                for u in uses {
                    let input = u.get("input").filter(|i| !i.is_null()).cloned();
                    b.tool_use(llm, str_of(u, "id"), str_of(u, "name").unwrap_or("?"), input);
                }
                status = if uses.is_empty() {
                    RunStatus::Ok
                } else {
                    RunStatus::Running
                };
                llm
            }
            other => {
                b.drift(b.root, other, m);
                continue;
            }
        };
        for (ty, v) in drift {
            b.drift(parent, &ty, &v);
        }
        // 0.2.0 keeps an answer's results with it; 0.1.0 in the next user message.
        for r in results {
            let Some(tid) = str_of(r, "tool_use_id") else { continue };
            if !b.tool_result(tid, r) {
                orphans += 1;
            }
        }
    }
    if orphans > 0 {
        b.t.diagnostics.push(Diagnostic::warning(
            source,
            None,
            format!("thread {id}: {orphans} tool results answer no tool call of the thread"),
        ));
    }
    status
}

/// Zed's own tools (crates/agent/src/tools) and the argument that says what a call did.
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::key_or_generic;
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "terminal" => by(&["command"]),
        "read_file"
        | "edit_file"
        | "streaming_edit_file"
        | "list_directory"
        | "create_directory"
        | "delete_path"
        | "diagnostics" => by(&["path"]),
        "copy_path" | "move_path" => {
            let (from, to) = (str_of(input, "source_path"), str_of(input, "destination_path"));
            match (from, to) {
                (Some(f), Some(t)) => Some(format!("{f} → {t}")),
                _ => by(&["source_path", "destination_path"]),
            }
        }
        "find_path" => by(&["glob"]),
        "grep" => by(&["regex"]),
        "fetch" => by(&["url"]),
        "web_search" => by(&["query"]),
        "open" => by(&["path_or_url"]),
        "spawn_agent" | "subagent" => by(&["label", "message", "task_prompt"]),
        "thinking" => by(&["content"]),
        _ => super::gist::generic(name, input),
    }
}

/// The thread's JSON as it was before tracetui read it (tests: fixtures are written as Zed
/// writes them).
#[cfg(test)]
pub(crate) fn encode_zstd(v: &Value) -> Vec<u8> {
    zstd::encode_all(serde_json::to_vec(v).unwrap().as_slice(), 3).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;

    /// A threads.db as Zed creates and migrates it, in `dir/threads/`.
    pub(crate) fn zed_db(dir: &Path) -> (PathBuf, rusqlite::Connection) {
        let tdir = dir.join("threads");
        std::fs::create_dir_all(&tdir).unwrap();
        let db = tdir.join(DB_NAME);
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    summary TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    data_type TEXT NOT NULL,
    data BLOB NOT NULL
);
ALTER TABLE threads ADD COLUMN parent_id TEXT;
ALTER TABLE threads ADD COLUMN folder_paths TEXT;
ALTER TABLE threads ADD COLUMN folder_paths_order TEXT;
ALTER TABLE threads ADD COLUMN created_at TEXT;",
        )
        .unwrap();
        (db, conn)
    }

    pub(crate) fn insert(conn: &rusqlite::Connection, id: &str, parent: Option<&str>, thread: &Value) {
        let title = thread["title"].as_str().unwrap_or("").to_string();
        let updated = thread["updated_at"]
            .as_str()
            .unwrap_or("2026-05-01T10:00:00Z")
            .to_string();
        conn.execute(
            "INSERT INTO threads (id, parent_id, folder_paths, folder_paths_order, summary, updated_at, data_type, data, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'zstd', ?7, ?8)",
            rusqlite::params![id, parent, "/home/ada/weather", "0", title, updated, encode_zstd(thread), "2026-05-01T09:58:00Z"],
        )
        .unwrap();
    }

    fn tool_use(id: &str, name: &str, input: Value) -> Value {
        json!({"ToolUse": {"id": id, "name": name, "raw_input": input.to_string(), "input": input, "is_input_complete": true}})
    }

    fn result(id: &str, name: &str, error: bool, text: &str, output: Value) -> Value {
        json!({"tool_use_id": id, "tool_name": name, "is_error": error, "content": {"Text": text}, "output": output})
    }

    fn usage(i: u64, o: u64, cw: u64, cr: u64) -> Value {
        json!({"input_tokens": i, "output_tokens": o, "cache_creation_input_tokens": cw, "cache_read_input_tokens": cr})
    }

    /// A finished thread: two requests in one turn (a read, a failed edit), then the answer.
    pub(crate) fn finished() -> Value {
        json!({
            "version": "0.3.0",
            "title": "Fix the forecast rounding",
            "updated_at": "2026-05-01T10:04:00Z",
            "model": {"provider": "anthropic", "model": "claude-sonnet-4-5"},
            "profile": "write",
            "cumulative_token_usage": usage(0, 0, 0, 0),
            "request_token_usage": {"u-1": usage(2100, 180, 0, 1900)},
            "messages": [
                {"User": {"id": "u-1", "content": [{"Text": "Round the forecast to one decimal"}, {"Mention": {"uri": {"File": {"abs_path": "/home/ada/weather/src/forecast.rs"}}, "content": "fn round() {}"}}]}},
                {"Agent": {"content": [
                    {"Thinking": {"text": "Read the file first.", "signature": "sig"}},
                    {"Text": "Let me look."},
                    tool_use("t1", "read_file", json!({"path": "weather/src/forecast.rs"}))
                ], "tool_results": {"t1": result("t1", "read_file", false, "fn round(x: f64) -> f64 { x }", json!("fn round(x: f64) -> f64 { x }"))}, "reasoning_details": null}},
                {"Agent": {"content": [
                    tool_use("t2", "edit_file", json!({"path": "weather/src/forecast.rs", "display_description": "Round to one decimal", "mode": "edit"}))
                ], "tool_results": {"t2": result("t2", "edit_file", true, "Some edits were produced but none of them could be applied.", json!("Some edits were produced but none of them could be applied."))}, "reasoning_details": null}},
                {"Agent": {"content": [{"Text": "The edit did not apply; the file is unchanged."}], "tool_results": {}, "reasoning_details": null}}
            ]
        })
    }

    /// A running thread: the model asked for a command, which ran; the next request is out.
    pub(crate) fn running() -> Value {
        json!({
            "version": "0.3.0",
            "title": "Run the tests",
            "updated_at": "2026-05-01T11:00:00Z",
            "model": {"provider": "zed.dev", "model": "claude-sonnet-4-5"},
            "request_token_usage": {"u-9": usage(900, 40, 800, 0)},
            "messages": [
                {"User": {"id": "u-9", "content": [{"Text": "Run the tests"}]}},
                {"Agent": {"content": [
                    tool_use("t9", "terminal", json!({"command": "cargo test", "cd": "weather"}))
                ], "tool_results": {"t9": result("t9", "terminal", false, "test result: ok. 12 passed", json!("test result: ok. 12 passed"))}}}
            ]
        })
    }

    /// A parent that spawned a subagent, and the subagent's own thread.
    pub(crate) fn parent_and_child() -> (Value, Value) {
        let parent = json!({
            "version": "0.3.0",
            "title": "Survey the crate",
            "updated_at": "2026-05-01T12:05:00Z",
            "model": {"provider": "anthropic", "model": "claude-opus-4-1"},
            "messages": [
                {"User": {"id": "u-p", "content": [{"Text": "Survey the crate in parallel"}]}},
                {"Agent": {"content": [
                    tool_use("s1", "spawn_agent", json!({"label": "List the modules", "message": "List every module of weather/src"}))
                ], "tool_results": {"s1": result("s1", "spawn_agent", false, "forecast, units, cli", json!({"session_id": "child-1", "output": "forecast, units, cli"}))}}},
                {"Agent": {"content": [{"Text": "Three modules: forecast, units, cli."}], "tool_results": {}}}
            ]
        });
        let child = json!({
            "version": "0.3.0",
            "title": "List the modules",
            "updated_at": "2026-05-01T12:04:00Z",
            "model": {"provider": "anthropic", "model": "claude-opus-4-1"},
            "subagent_context": {"parent_thread_id": "parent-1", "depth": 1},
            "messages": [
                {"User": {"id": "u-c", "content": [{"Text": "List every module of weather/src"}]}},
                {"Agent": {"content": [tool_use("c1", "list_directory", json!({"path": "weather/src"}))],
                 "tool_results": {"c1": result("c1", "list_directory", false, "forecast.rs\nunits.rs\ncli.rs", Value::Null)}}},
                {"Agent": {"content": [{"Text": "forecast, units, cli"}], "tool_results": {}}}
            ]
        });
        (parent, child)
    }

    /// A first-agent (0.2.0) thread, as older Zed versions left them.
    pub(crate) fn legacy() -> Value {
        json!({
            "version": "0.2.0",
            "summary": "Explain the units module",
            "updated_at": "2025-06-01T08:00:00Z",
            "model": {"provider": "anthropic", "model": "claude-3-7-sonnet-latest"},
            "cumulative_token_usage": usage(3000, 300, 0, 0),
            "request_token_usage": [usage(0, 0, 0, 0), usage(1500, 120, 0, 0), usage(0, 0, 0, 0), usage(1500, 180, 0, 0)],
            "messages": [
                {"id": 0, "role": "user", "segments": [{"type": "text", "text": "What does units.rs do?"}], "tool_uses": [], "tool_results": [], "context": "", "creases": [], "is_hidden": false},
                {"id": 1, "role": "assistant", "segments": [{"type": "thinking", "text": "Open it.", "signature": "s"}, {"type": "text", "text": "Reading it."}],
                 "tool_uses": [{"id": "l1", "name": "read_file", "input": {"path": "weather/src/units.rs"}}],
                 "tool_results": [{"tool_use_id": "l1", "is_error": false, "content": "pub fn c_to_f() {}", "output": null}], "context": "", "creases": [], "is_hidden": false},
                {"id": 2, "role": "user", "segments": [], "tool_uses": [], "tool_results": [], "context": "", "creases": [], "is_hidden": true},
                {"id": 3, "role": "assistant", "segments": [{"type": "text", "text": "It converts temperatures."}], "tool_uses": [], "tool_results": [], "context": "", "creases": [], "is_hidden": false}
            ]
        })
    }

    /// Every fixture thread in one database (the sample's content).
    pub(crate) fn fixture_db(dir: &Path) -> PathBuf {
        let (db, conn) = zed_db(dir);
        insert(&conn, "thread-finished", None, &finished());
        insert(&conn, "thread-running", None, &running());
        let (p, c) = parent_and_child();
        insert(&conn, "parent-1", None, &p);
        insert(&conn, "child-1", Some("parent-1"), &c);
        insert(&conn, "legacy-1", None, &legacy());
        drop(conn);
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

    #[test]
    fn threads_load_with_calls_results_tokens_and_status() {
        let dir = tempfile::tempdir().unwrap();
        let db = fixture_db(dir.path());
        let l = Zed.load(&db).unwrap();
        assert_eq!(l.traces.len(), 5);
        let t = by_id(&l, "thread-finished");
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.name.as_deref(), Some("Fix the forecast rounding"));
        assert_eq!(t.meta.model.as_deref(), Some("claude-sonnet-4-5"));
        let c = t.counts();
        assert_eq!((c.tool_calls, c.llm_calls, c.errors), (2, 3, 1));
        assert_eq!(
            tools(t),
            vec![("read_file".into(), Status::Ok), ("edit_file".into(), Status::Error)]
        );
        // The turn's usage is its last request's.
        assert_eq!(c.tokens, 2100 + 180 + 1900);
        let last_llm = t.events.iter().rposition(|e| e.kind == EventKind::LlmCall).unwrap();
        let u = t.events[last_llm].usage.get().unwrap();
        assert_eq!((u.input, u.output, u.cache_read), (Some(2100), Some(180), Some(1900)));
        let edit = t.events.iter().position(|e| t.str(e.name) == "edit_file").unwrap();
        let p = crate::formats::payload(t, &t.events[edit]);
        assert_eq!(p.input.unwrap()["display_description"], "Round to one decimal");
        assert!(p.error.unwrap().message.contains("none of them could be applied"));
        assert_eq!(t.meta.start, parse_timestamp_str("2026-05-01T09:58:00Z"));
        assert!(
            t.meta
                .attributes
                .contains(&("directory".into(), json!("/home/ada/weather"))),
            "{:?}",
            t.meta.attributes
        );

        let r = by_id(&l, "thread-running");
        assert_eq!(r.meta.status, RunStatus::Running);
        assert_eq!(tools(r), vec![("terminal".into(), Status::Ok)]);
        assert_eq!(r.counts().tokens, 900 + 40 + 800);

        let child = by_id(&l, "child-1");
        assert!(
            child
                .meta
                .attributes
                .contains(&("parent session".into(), json!("parent-1"))),
            "{:?}",
            child.meta.attributes
        );
        assert_eq!(child.meta.status, RunStatus::Ok);
        let parent = by_id(&l, "parent-1");
        let spawn = parent
            .events
            .iter()
            .position(|e| parent.str(e.name) == "spawn_agent")
            .unwrap();
        let p = crate::formats::payload(parent, &parent.events[spawn]);
        assert!(
            p.extra.contains(&("subagent session".into(), json!("child-1"))),
            "{:?}",
            p.extra
        );

        let old = by_id(&l, "legacy-1");
        assert!(old.diagnostics.is_empty(), "{:?}", old.diagnostics);
        assert_eq!(old.meta.name.as_deref(), Some("Explain the units module"));
        let c = old.counts();
        assert_eq!((c.tool_calls, c.llm_calls), (1, 2));
        assert_eq!(c.tokens, 1500 + 120 + 1500 + 180);
        assert_eq!(old.meta.status, RunStatus::Ok);
    }

    #[test]
    fn a_user_message_without_an_answer_is_running_and_a_cancelled_call_ends_the_turn() {
        let dir = tempfile::tempdir().unwrap();
        let (db, conn) = zed_db(dir.path());
        insert(
            &conn,
            "asked",
            None,
            &json!({"version": "0.3.0", "title": "q", "updated_at": "2026-05-01T10:00:00Z", "messages": [
                {"User": {"id": "u", "content": [{"Text": "hi"}]}}
            ]}),
        );
        insert(
            &conn,
            "cancelled",
            None,
            &json!({"version": "0.3.0", "title": "c", "updated_at": "2026-05-01T10:00:00Z", "messages": [
                {"User": {"id": "u", "content": [{"Text": "run it"}]}},
                {"Agent": {"content": [tool_use("x", "terminal", json!({"command": "sleep 100"}))],
                 "tool_results": {"x": result("x", "terminal", true, CANCELED, Value::Null)}}}
            ]}),
        );
        drop(conn);
        let l = Zed.load(&db).unwrap();
        assert_eq!(by_id(&l, "asked").meta.status, RunStatus::Running);
        let c = by_id(&l, "cancelled");
        assert_eq!(c.meta.status, RunStatus::Ok);
        assert_eq!(tools(c), vec![("terminal".into(), Status::Error)]);
    }

    #[test]
    fn damaged_threads_are_said_by_id_and_the_others_load() {
        let dir = tempfile::tempdir().unwrap();
        let (db, conn) = zed_db(dir.path());
        insert(&conn, "good", None, &finished());
        let ins = |id: &str, ty: &str, data: &[u8]| {
            conn.execute(
                "INSERT INTO threads (id, summary, updated_at, data_type, data) VALUES (?1, 's', '2026-05-01T10:00:00Z', ?2, ?3)",
                rusqlite::params![id, ty, data],
            )
            .unwrap();
        };
        ins("not-zstd", "zstd", b"\x28\xb5\x2f\xfdgarbage");
        ins("cut-json", "json", b"{\"version\": \"0.3.0\", \"messages\": [");
        ins("new-encoding", "brotli", b"...");
        ins("a-list", "json", b"[1, 2]");
        drop(conn);
        let l = Zed.load(&db).unwrap();
        assert_eq!(l.traces.len(), 1);
        let msgs: Vec<&str> = l.traces[0].diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(msgs.len(), 4, "{msgs:?}");
        for id in ["not-zstd", "cut-json", "new-encoding", "a-list"] {
            assert!(
                msgs.iter().any(|m| m.starts_with(&format!("thread {id}:"))),
                "{id}: {msgs:?}"
            );
        }
        assert!(l.traces[0].diagnostics.iter().all(|d| d.path == db));
    }

    #[test]
    fn other_databases_and_files_are_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other.db");
        rusqlite::Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE notes (id TEXT); CREATE VIEW threads AS SELECT 1 AS id, 'json' AS data_type, '{}' AS data;")
            .unwrap();
        let e = Zed.load(&other).unwrap_err().to_string();
        assert!(e.contains("not a table"), "{e}");
        let empty = dir.path().join("empty");
        let (db, conn) = zed_db(&empty);
        drop(conn);
        let e = Zed.load(&db).unwrap_err().to_string();
        assert!(e.contains("no Zed threads"), "{e}");
        let text = dir.path().join("threads.sql");
        std::fs::write(
            &text,
            "CREATE TABLE threads (\n  id TEXT PRIMARY KEY,\n  data_type TEXT NOT NULL\n);",
        )
        .unwrap();
        // A dump of the database is Zed's, refused with what to do (no SQL from a file is run).
        assert_eq!(crate::formats::detect(&text).unwrap().id(), FORMAT);
        let e = Zed.load(&text).unwrap_err();
        assert!(matches!(e, LoadError::Invalid { .. }), "{e}");
        assert!(e.to_string().contains("sqlite3 threads.db < FILE"), "{e}");
        let notes = dir.path().join("notes.sql");
        std::fs::write(&notes, "CREATE TABLE notes (id TEXT);").unwrap();
        assert!(crate::formats::detect(&notes).is_err());
        // Detected by its schema whatever its name, and as its place's directory.
        assert_eq!(crate::formats::detect(&db).unwrap().id(), FORMAT);
        assert_eq!(crate::formats::detect(db.parent().unwrap()).unwrap().id(), FORMAT);
    }

    #[test]
    fn unknown_variants_are_counted_quietly_and_shown_when_they_carry_text() {
        let dir = tempfile::tempdir().unwrap();
        let (db, conn) = zed_db(dir.path());
        insert(
            &conn,
            "drift",
            None,
            &json!({"version": "0.3.0", "title": "d", "updated_at": "2026-05-01T10:00:00Z", "brand_new": 1, "messages": [
                {"User": {"id": "u", "content": [{"Text": "hi"}, {"Audio": {"text": "hello there"}}]}},
                {"Checkpoint": {"summary": "saved the state"}},
                {"Agent": {"content": [{"Text": "ok"}, {"Citation": {"n": 1}}], "tool_results": {}, "new": true}}
            ]}),
        );
        drop(conn);
        let l = Zed.load(&db).unwrap();
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.skipped.total(), 3);
        let others: Vec<&str> = t
            .events
            .iter()
            .filter(|e| e.kind == EventKind::Other && t.str(e.name) != "thinking")
            .map(|e| t.str(e.name))
            .collect();
        assert_eq!(others, vec!["Audio", "Checkpoint"]);
        assert_eq!(t.meta.status, RunStatus::Ok);
    }

    /// Drift in a threads.db: each thread's JSON gets messages and content of variants Zed
    /// does not write yet and unknown fields in known ones; written back as Zed writes it.
    fn drift_db(f: &Path, rng: &mut crate::formats::testing::Rng) -> usize {
        if f.file_name().and_then(|n| n.to_str()) != Some(DB_NAME) {
            return 0;
        }
        let conn = rusqlite::Connection::open(f).unwrap();
        let rows: Vec<(String, String, Vec<u8>)> = conn
            .prepare("SELECT id, data_type, data FROM threads")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut inserted = 0;
        for (id, ty, data) in rows {
            let mut v = decode(&ty, &data).unwrap();
            let legacy = v.get("version").and_then(Value::as_str) != Some("0.3.0");
            let msgs = v["messages"].as_array_mut().unwrap();
            let mut out = Vec::new();
            for mut m in std::mem::take(msgs) {
                // Legacy threads are frozen (no Zed writes them any more) and keep their usage
                // by message index: new messages are drift of today's threads only.
                if !legacy && rng.one_in(4) {
                    let mut body = serde_json::Map::new();
                    body.insert(rng.type_name(), rng.value());
                    if rng.one_in(2) {
                        body.insert("text".into(), json!("drifted text"));
                    }
                    out.push(json!({ format!("V{}", rng.type_name()): body }));
                    inserted += 1;
                }
                // An unknown field in the message, and a content of a new variant.
                let target = if legacy {
                    Some(&mut m)
                } else {
                    m.as_object_mut().and_then(|o| o.values_mut().next())
                };
                if let Some(Value::Object(o)) = target {
                    if rng.one_in(3) {
                        o.insert(rng.type_name(), rng.value());
                    }
                    let list = if legacy { "segments" } else { "content" };
                    if rng.one_in(3)
                        && let Some(Value::Array(c)) = o.get_mut(list)
                    {
                        let text = if rng.one_in(2) {
                            json!("more drifted text")
                        } else {
                            rng.value()
                        };
                        if legacy {
                            c.push(json!({"type": format!("t{}", rng.type_name()), "text": text}));
                        } else {
                            c.push(json!({ format!("C{}", rng.type_name()): {"text": text} }));
                        }
                        inserted += 1;
                    }
                }
                out.push(m);
            }
            *v["messages"].as_array_mut().unwrap() = out;
            v.as_object_mut().unwrap().insert(rng.type_name(), rng.value());
            conn.execute(
                "UPDATE threads SET data_type = 'zstd', data = ?1 WHERE id = ?2",
                rusqlite::params![encode_zstd(&v), id],
            )
            .unwrap();
        }
        inserted
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 12, ..Default::default() })]
        #[test]
        fn drift_is_skipped_quietly(seed in proptest::prelude::any::<u64>()) {
            let dir = tempfile::tempdir().unwrap();
            let db = fixture_db(dir.path());
            let mut sources = crate::formats::testing::drift_sources(FORMAT, &["sample-traces/zed/threads"]);
            sources.push(db.parent().unwrap().to_path_buf());
            crate::formats::testing::drift_check(&sources, seed, &drift_db);
        }
    }

    #[test]
    fn the_sample_loads() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/zed/threads");
        let l = crate::formats::load(&root, None).unwrap();
        assert_eq!(l.traces.len(), 5);
        assert!(l.traces.iter().all(|t| t.diagnostics.is_empty()));
        let tools: usize = l.traces.iter().map(|t| t.counts().tool_calls).sum();
        assert_eq!(tools, 6);
    }

    /// Writes the sample (`cargo test --lib zed::tests::write_sample -- --ignored`): the
    /// fixtures' threads, compressed as Zed compresses them.
    #[test]
    #[ignore]
    fn write_sample() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/zed");
        let _ = std::fs::remove_dir_all(root.join("threads"));
        let db = fixture_db(&root);
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("VACUUM").unwrap();
    }

    #[test]
    fn each_tool_says_what_it_did() {
        let g = |n: &str, i: Value| tool_gist(n, &i);
        assert_eq!(
            g("terminal", json!({"command": "cargo test", "cd": "x"})).as_deref(),
            Some("cargo test")
        );
        assert_eq!(
            g("read_file", json!({"path": "a/b.rs", "start_line": 3})).as_deref(),
            Some("a/b.rs")
        );
        assert_eq!(
            g("move_path", json!({"source_path": "a", "destination_path": "b"})).as_deref(),
            Some("a → b")
        );
        assert_eq!(
            g("grep", json!({"regex": "fn main", "include_pattern": "*.rs"})).as_deref(),
            Some("fn main")
        );
        assert_eq!(
            g("find_path", json!({"glob": "**/*.toml"})).as_deref(),
            Some("**/*.toml")
        );
        assert_eq!(
            g("spawn_agent", json!({"label": "Scan", "message": "long"})).as_deref(),
            Some("Scan")
        );
        assert_eq!(
            g("fetch", json!({"url": "https://zed.dev"})).as_deref(),
            Some("https://zed.dev")
        );
    }
}
