//! Cline task folders: `tasks/<taskId>/` under VS Code's global storage
//! (`~/.config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/`) or the CLI's
//! `~/.cline/data/tasks/`. One folder is one run:
//! - `api_conversation_history.json`: the Anthropic-style messages sent to the model (a JSON
//!   list of `{role, content}`; assistant messages may carry `modelInfo` and `metrics`);
//! - `ui_messages.json` (`claude_messages.json` in old versions): what the chat showed, rows
//!   `{ts, type: say|ask, say|ask, text, conversationHistoryIndex}`; `say: api_req_started`
//!   rows hold JSON text with the request's tokens and cost;
//! - `task_metadata.json`: model and environment history (Cline's version).
//!
//! Tokens: a request's `api_req_started` row (`tokensIn`, `tokensOut`, `cacheWrites`,
//! `cacheReads`, `cost` in dollars) counts as Anthropic does, input without the cache, and its
//! `cost` is the call's recorded cost. (Cline's OpenAI-compatible providers may count the
//! cache inside `tokensIn`; the rows do not say which provider, so tokens are taken as
//! written; the recorded cost is right either way.) Without a row, the history message's
//! `metrics.tokens` (`prompt`, `completion`, `cached` = written and read together, counted as
//! read).
//!
//! Traps this reader handles:
//! - tool uses are native `tool_use` blocks (newer Cline) or XML-ish tags in the assistant's
//!   text (`<read_file><path>x</path></read_file>`, older Cline and non-native providers);
//! - results come back as `tool_result` blocks joined by id, or (Cline's fallback, and what
//!   3.x writes when it has no id mapping) as user TEXT blocks `[read_file for 'x'] Result:`
//!   followed by the result in the same block (3.x) or in the next blocks (older); these are
//!   joined by position to the open call of that name;
//! - the history has no clock: times come from the ui rows, linked by
//!   `conversationHistoryIndex` (a request row with index k is answered by message k + 2),
//!   else by order; a history without ui rows has no times (said in a diagnostic);
//! - `attempt_completion` gets no result when the user accepts it: it is done, not pending,
//!   once the task shows its completion.
//!
//! Both files are whole JSON documents, streamed with [`super::document`]; payloads stay on
//! disk (`PayloadRef::Deferred`, origin = the content block or ui row) and are decoded when
//! shown.

use super::document::{DocSink, Document, Top};
use super::jsonl::LineLoc;
use super::{Format, LoadError, Loaded, Probe, Summary, decode_embedded, field, lenient_u64, read_json_file, str_of};
use crate::model::*;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub struct Cline;

const HISTORY: &str = "api_conversation_history.json";
const UI: &str = "ui_messages.json";
const UI_OLD: &str = "claude_messages.json";
const META: &str = "task_metadata.json";
/// The largest `task_metadata.json` read (it lists files in context: small).
const META_LIMIT: u64 = 16 << 20;

/// Cline's tool names (v3.0's list and v3.5x's `ClineDefaultTool`) and its forks' (Roo Code's
/// and Kilo Code's `toolNames`), for tool uses written as XML tags in the assistant's text.
const TOOL_NAMES: [&str; 48] = [
    "execute_command",
    "read_file",
    "write_to_file",
    "replace_in_file",
    "search_files",
    "list_files",
    "list_code_definition_names",
    "browser_action",
    "use_mcp_tool",
    "access_mcp_resource",
    "ask_followup_question",
    "attempt_completion",
    "plan_mode_respond",
    "plan_mode_response",
    "act_mode_respond",
    "load_mcp_documentation",
    "new_task",
    "condense",
    "summarize_task",
    "report_bug",
    "new_rule",
    "web_fetch",
    "web_search",
    "focus_chain",
    "apply_patch",
    "apply_diff",
    "generate_explanation",
    "use_skill",
    "insert_content",
    "search_and_replace",
    // Roo Code and Kilo Code.
    "search_replace",
    "edit_file",
    "edit_file_roo",
    "edit_file_anthropic",
    "edit_file_grok",
    "edit_file_gemini",
    "edit_file_codex",
    "switch_mode",
    "fetch_instructions",
    "codebase_search",
    "update_todo_list",
    "run_slash_command",
    "generate_image",
    "custom_tool",
    "read_command_output",
    "fast_edit_file",
    "delete_file",
    "skill",
];

/// How a tool result's text begins when the tool failed or was refused (Cline's
/// `formatResponse`: toolError, toolDenied, clineIgnoreError, missingToolParameterError).
const ERROR_STARTS: [&str; 5] = [
    "The tool execution failed with the following error:",
    "The user denied this operation",
    "<error>",
    "Missing value for required parameter",
    "Access to ",
];

/// An extension (or CLI) that keeps its tasks in Cline's layout: Cline, and its forks Roo Code
/// and Kilo Code, each under its own storage id. The same reader reads them all; the storage
/// id in a folder's path says whose it is.
pub struct Flavor {
    pub id: &'static str,
    pub describe: &'static str,
    /// Directory names its task folders are below (a VS Code extension's `globalStorage` id,
    /// a CLI's data dir).
    pub storage: &'static [&'static str],
}

pub const CLINE: Flavor = Flavor {
    id: "cline",
    describe: "Cline task folder (tasks/<taskId>/ with api_conversation_history.json and ui_messages.json), under VS Code's globalStorage/saoudrizwan.claude-dev/ or ~/.cline/data/",
    storage: &["saoudrizwan.claude-dev", ".cline"],
};
pub const ROO_CODE: Flavor = Flavor {
    id: "roo-code",
    describe: "Roo Code task folder (tasks/<taskId>/ in Cline's layout) under VS Code's globalStorage/rooveterinaryinc.roo-cline/",
    storage: &["rooveterinaryinc.roo-cline"],
};
pub const KILO_CODE: Flavor = Flavor {
    id: "kilo-code",
    describe: "Kilo Code task folder (tasks/<taskId>/ in Cline's layout) under VS Code's globalStorage/kilocode.kilo-code/ or ~/.kilocode/cli/global/",
    storage: &["kilocode.kilo-code", ".kilocode"],
};
const FLAVORS: [&Flavor; 3] = [&CLINE, &ROO_CODE, &KILO_CODE];

impl Flavor {
    /// Whether `path` is below one of this flavor's storage directories.
    fn holds(&self, path: &Path) -> bool {
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        abs.components()
            .any(|c| self.storage.iter().any(|s| c.as_os_str() == *s))
    }

    /// Cline's layout, and a path of this flavor's (a folder of the layout below no flavor's
    /// storage is Cline's).
    pub(crate) fn detect(&self, p: &Probe) -> u8 {
        let layout = detect_layout(p);
        if layout == 0 || self.holds(&p.path) {
            return layout;
        }
        let others = FLAVORS.iter().any(|f| f.id != self.id && f.holds(&p.path));
        if self.id == CLINE.id && !others { layout } else { 0 }
    }

    /// Whether task folder `dir` is this flavor's ([`Flavor::detect`] for a directory).
    pub(crate) fn detect_dir(&self, dir: &Path) -> bool {
        self.holds(dir) || (self.id == CLINE.id && !FLAVORS.iter().any(|f| f.id != self.id && f.holds(dir)))
    }

    pub(crate) fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let dir = if path.is_dir() {
            path.to_path_buf()
        } else {
            path.parent().map(Path::to_path_buf).unwrap_or_default()
        };
        let history = dir.join(HISTORY);
        let ui = [UI, UI_OLD].iter().map(|n| dir.join(n)).find(|p| p.is_file());
        if !history.is_file() && ui.is_none() {
            return Err(LoadError::NotATrace {
                path: path.to_path_buf(),
                reason: format!("no {HISTORY} or {UI} in {}", dir.display()),
                tried: self.id.into(),
            });
        }
        Ok(Loaded {
            traces: vec![load_task(self.id, &dir, &history, ui.as_deref())?],
        })
    }

    /// From the ui rows' first and last bytes only (the task, its first and last times, and
    /// whether it completed or failed): the history is read when the run is opened.
    pub(crate) fn summarize(&self, path: &Path) -> Result<Option<Vec<Summary>>, LoadError> {
        let dir = if path.is_dir() {
            path.to_path_buf()
        } else {
            path.parent().map(Path::to_path_buf).unwrap_or_default()
        };
        match [UI, UI_OLD].iter().map(|n| dir.join(n)).find(|p| p.is_file()) {
            Some(ui) => Ok(Some(vec![summary(self.id, &dir, &ui)?])),
            None => Ok(None),
        }
    }
}

fn detect_layout(p: &Probe) -> u8 {
    if p.is_dir {
        return if p.has_entry(HISTORY) || p.has_entry(UI) {
            100
        } else {
            0
        };
    }
    // The history is a JSON list of {role, content} that the openai-chat detector also
    // claims (at 90): Cline's file names decide.
    match p.file_name() {
        HISTORY | UI => 100,
        UI_OLD if p.path.parent().is_some_and(|d| d.join(HISTORY).is_file()) => 100,
        _ => 0,
    }
}

/// Whether `dir` is a task folder of the layout.
pub(crate) fn is_task_dir(dir: &Path) -> bool {
    dir.join(HISTORY).is_file() || dir.join(UI).is_file()
}

/// A payload of a task's event, decoded when shown.
pub(crate) fn decode_task_payload(trace: &Trace, event: &Event, raw: &[&[u8]]) -> Payload {
    decode(trace, event, raw)
}

impl Format for Cline {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        CLINE.id
    }
    fn describe(&self) -> &'static str {
        CLINE.describe
    }

    fn detect(&self, p: &Probe) -> u8 {
        CLINE.detect(p)
    }

    fn is_run_dir(&self, dir: &Path) -> bool {
        is_task_dir(dir) && CLINE.detect_dir(dir)
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        CLINE.load(path)
    }

    fn summarize(&self, path: &Path) -> Result<Option<Vec<Summary>>, LoadError> {
        CLINE.summarize(path)
    }

    fn decode_payload(&self, trace: &Trace, event: &Event, raw: &[&[u8]]) -> Payload {
        decode(trace, event, raw)
    }
}

/// How much of the ui rows' beginning and end a summary reads.
const SUMMARY_HEAD: u64 = 256 << 10;
const SUMMARY_TAIL: u64 = 64 << 10;

fn summary(format: &'static str, dir: &Path, ui: &Path) -> Result<Summary, LoadError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = super::open_regular(ui).map_err(|e| LoadError::io(ui, e))?;
    let len = f.metadata().map_err(|e| LoadError::io(ui, e))?.len();
    let mut head = Reader::new(ui, 0, true);
    let mut tail = Reader::new(ui, 0, true);
    if len <= SUMMARY_HEAD + SUMMARY_TAIL {
        Document::new(&[&[]]).read(ui, &mut head)?;
        tail.rows = std::mem::take(&mut head.rows);
    } else {
        // The first rows (a cut-off element at the end is only a problem, ignored here)...
        let mut buf = Vec::new();
        (&mut f)
            .take(SUMMARY_HEAD)
            .read_to_end(&mut buf)
            .map_err(|e| LoadError::io(ui, e))?;
        Document::new(&[&[]])
            .read_from(&mut buf.as_slice(), &mut head)
            .map_err(|e| LoadError::io(ui, e))?;
        // ...and the last: Cline writes each row as `{"ts":`, so rows are found from there.
        f.seek(SeekFrom::Start(len - SUMMARY_TAIL))
            .map_err(|e| LoadError::io(ui, e))?;
        buf.clear();
        f.take(SUMMARY_TAIL)
            .read_to_end(&mut buf)
            .map_err(|e| LoadError::io(ui, e))?;
        let mut at = 0;
        while let Some(i) = memchr::memmem::find(&buf[at..], b"{\"ts\":") {
            let s = at + i;
            let mut it = serde_json::Deserializer::from_slice(&buf[s..]).into_iter::<&RawValue>();
            match it.next() {
                Some(Ok(v)) => {
                    let n = v.get().len();
                    let loc = LineLoc {
                        line: 0,
                        offset: s as u64,
                        len: n,
                    };
                    let _ = tail.row(v.get().as_bytes(), loc);
                    at = s + n.max(1);
                }
                _ => at = s + 1,
            }
        }
    }
    let rows = &tail.rows;
    let start = head.rows.iter().chain(rows).filter_map(|r| r.ts).min();
    let end = head.rows.iter().chain(rows).filter_map(|r| r.ts).max();
    let id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "task".into());
    Ok(Summary {
        name: head.task.or_else(|| Some(id.clone())),
        id,
        format,
        path: dir.to_path_buf(),
        status: run_status(&[], rows),
        start,
        duration: start.zip(end).and_then(|(a, b)| b.checked_sub(a)),
        ..Default::default()
    })
}

// ---- reading: each message and ui row is skimmed into a small summary ----

/// What a content block is, as far as the index needs.
#[derive(Debug)]
enum BlockKind {
    Text {
        /// `[name ...] Result:` header of a tool result sent as text.
        result: Option<ResultHead>,
        /// The text begins the way a failed or refused tool's result does.
        error_text: bool,
        /// What kind of user text: "environment_details", "task", "user".
        label: &'static str,
        /// Tool uses written as XML tags (assistant text).
        xml_tools: Vec<String>,
    },
    Thinking,
    ToolUse {
        id: String,
        name: String,
    },
    ToolResult {
        id: String,
        error: bool,
    },
    Other(String),
}

#[derive(Debug)]
struct ResultHead {
    name: String,
    error: bool,
    /// Nothing follows `Result:` in this block: the result is in the next blocks (old Cline).
    split: bool,
}

#[derive(Debug)]
struct Block {
    kind: BlockKind,
    origin: Origin,
}

#[derive(Debug)]
struct Msg {
    /// Position in the history (skipped elements count: ui rows index the file's list).
    pos: usize,
    assistant: bool,
    origin: Origin,
    blocks: Vec<Block>,
    model: Option<String>,
    /// Tokens from the message's own `metrics` (newer Cline): prompt + cached, completion.
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct RawMsg<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(default, rename = "modelInfo")]
    model_info: Option<Value>,
    #[serde(default)]
    metrics: Option<Value>,
}

/// One row of `ui_messages.json`.
#[derive(Debug)]
struct Row {
    ts: Option<i64>,
    /// `say` or `ask`, and which.
    ask: bool,
    what: String,
    idx: Option<i64>,
    origin: Origin,
    /// For `api_req_started`: usage, and whether it was cancelled or failed.
    usage: Option<Usage>,
    failed: bool,
    model: Option<String>,
}

impl Row {
    fn is(&self, what: &str) -> bool {
        self.what == what
    }
    fn is_api_req(&self) -> bool {
        !self.ask && self.is("api_req_started")
    }
    fn is_error(&self) -> bool {
        if self.ask {
            matches!(self.what.as_str(), "api_req_failed" | "mistake_limit_reached")
        } else {
            matches!(self.what.as_str(), "error" | "diff_error" | "clineignore_error")
        }
    }
    fn is_completion(&self) -> bool {
        self.is("completion_result") || (self.ask && self.is("resume_completed_task"))
    }
}

/// Receives the elements of one of the two documents.
struct Reader {
    path: PathBuf,
    file: u16,
    ui: bool,
    msgs: Vec<Msg>,
    rows: Vec<Row>,
    diagnostics: Vec<Diagnostic>,
    /// Rows of kinds this reader does not know (drift): counted on the trace.
    skipped: Skipped,
    /// Elements seen so far, read or not.
    seen: usize,
    /// The task as the first ui row states it (the run's name).
    task: Option<String>,
}

impl DocSink for Reader {
    fn elements(&mut self, batch: &[(&[u8], LineLoc)]) {
        for &(bytes, loc) in batch {
            let r = if self.ui {
                self.row(bytes, loc)
            } else {
                self.message(bytes, loc)
            };
            self.seen += 1;
            if let Err(m) = r {
                let what = if self.ui { "ui row" } else { "message" };
                self.diagnostics.push(Diagnostic::error(
                    &self.path,
                    Some(loc.line),
                    format!("{what}: {m}; skipped"),
                ));
            }
        }
    }

    fn problem(&mut self, line: u64, message: String) {
        self.diagnostics
            .push(Diagnostic::error(&self.path, Some(line), message));
    }
}

impl Reader {
    fn new(path: &Path, file: u16, ui: bool) -> Reader {
        Reader {
            path: path.to_path_buf(),
            file,
            ui,
            msgs: Vec::new(),
            rows: Vec::new(),
            diagnostics: Vec::new(),
            skipped: Skipped::default(),
            seen: 0,
            task: None,
        }
    }

    fn warn(&mut self, loc: LineLoc, m: String) {
        self.diagnostics
            .push(Diagnostic::warning(&self.path, Some(loc.line), m));
    }

    fn message(&mut self, bytes: &[u8], loc: LineLoc) -> Result<(), String> {
        let m: RawMsg = serde_json::from_slice(bytes).map_err(|e| super::jsonl::json_error(&e))?;
        let assistant = match m.role.as_deref() {
            Some("assistant") => true,
            Some("user") => false,
            Some(other) => return Err(format!("unknown role {other:?}")),
            None => return Err("no `role`".into()),
        };
        let origin = loc.origin(self.file);
        let mut blocks = Vec::new();
        match m.content {
            None => self.warn(loc, "message has no `content`".into()),
            Some(c) => {
                let text = c.get().trim_start();
                let part = |raw: &str| super::engine::sub_origin(loc, self.file, bytes, raw.as_bytes());
                if text.starts_with('"') {
                    let s: String = serde_json::from_str(c.get()).map_err(|e| super::jsonl::json_error(&e))?;
                    blocks.push(Block {
                        kind: text_kind(&s, assistant),
                        origin: part(c.get()),
                    });
                } else if text.starts_with('[') {
                    let list: Vec<&RawValue> =
                        serde_json::from_str(c.get()).map_err(|e| super::jsonl::json_error(&e))?;
                    for b in list {
                        let v: Value = serde_json::from_str(b.get()).map_err(|e| super::jsonl::json_error(&e))?;
                        blocks.push(Block {
                            kind: block_kind(&v, assistant),
                            origin: part(b.get()),
                        });
                    }
                } else if text != "null" {
                    return Err("`content` is neither a string nor a list of blocks".into());
                }
            }
        }
        let model = m
            .model_info
            .as_ref()
            .and_then(|i| str_of(i, "modelId"))
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        let usage = m.metrics.as_ref().and_then(|x| x.get("tokens")).map(|t| {
            let n = |k: &str| lenient_u64(t.get(k));
            // `cached` is the cache written and read together: counted as read (the request's
            // ui row, when there is one, tells them apart and wins).
            Usage {
                input: n("prompt"),
                cache_read: n("cached"),
                output: n("completion"),
                cost: t
                    .get("cost")
                    .or_else(|| m.metrics.as_ref()?.get("cost"))
                    .and_then(crate::model::micros::micros_of_json),
                ..Default::default()
            }
        });
        self.msgs.push(Msg {
            pos: self.seen,
            assistant,
            origin,
            blocks,
            model,
            usage: usage.filter(|u| !u.is_empty()),
        });
        Ok(())
    }

    fn row(&mut self, bytes: &[u8], loc: LineLoc) -> Result<(), String> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| super::jsonl::json_error(&e))?;
        if !v.is_object() {
            return Err("not an object".into());
        }
        let ty = str_of(&v, "type");
        if let Some(other) = ty.filter(|t| !matches!(*t, "say" | "ask")) {
            // A row of a kind a newer Cline writes (drift): counted, not read.
            self.skipped.add(other);
            return Ok(());
        }
        let ask = ty == Some("ask");
        let what = str_of(&v, if ask { "ask" } else { "say" }).unwrap_or("").to_string();
        if what.is_empty() {
            self.warn(loc, "ui row with no `say` or `ask`".into());
        }
        let ts = field(&v, "ts").and_then(parse_timestamp_ms);
        let idx = match field(&v, "conversationHistoryIndex") {
            Some(Value::Number(n)) => n.as_i64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        };
        let mut row = Row {
            ts,
            ask,
            what,
            idx,
            origin: loc.origin(self.file),
            usage: None,
            failed: false,
            model: v
                .get("modelInfo")
                .and_then(|i| str_of(i, "modelId"))
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        };
        if row.is_api_req() {
            match str_of(&v, "text").map(serde_json::from_str::<Value>) {
                Some(Ok(info)) => {
                    let n = |k: &str| lenient_u64(info.get(k));
                    let u = Usage {
                        input: n("tokensIn"),
                        output: n("tokensOut"),
                        cache_write: n("cacheWrites"),
                        cache_read: n("cacheReads"),
                        cost: info.get("cost").and_then(crate::model::micros::micros_of_json),
                        ..Default::default()
                    };
                    row.usage = Some(u).filter(|u| !u.is_empty());
                    // A request the user cancelled is no failure; a failed stream or exhausted
                    // retries are.
                    let cancelled = match field(&info, "cancelReason") {
                        Some(Value::String(r)) => r != "user_cancelled",
                        Some(_) => true,
                        None => false,
                    };
                    row.failed = cancelled || field(&info, "streamingFailedMessage").is_some();
                }
                Some(Err(e)) => self.warn(loc, format!("api_req_started text is not JSON ({e})")),
                None => {}
            }
        }
        if self.rows.is_empty() && matches!(row.what.as_str(), "task" | "text") {
            self.task = str_of(&v, "text").and_then(task_name);
        }
        self.rows.push(row);
        Ok(())
    }
}

fn block_kind(v: &Value, assistant: bool) -> BlockKind {
    let s = |k: &str| str_of(v, k).unwrap_or("").to_string();
    match str_of(v, "type").unwrap_or("") {
        "text" => text_kind(str_of(v, "text").unwrap_or(""), assistant),
        "thinking" | "redacted_thinking" | "reasoning" => BlockKind::Thinking,
        "tool_use" => BlockKind::ToolUse {
            id: s("id"),
            name: s("name"),
        },
        "tool_result" => BlockKind::ToolResult {
            id: s("tool_use_id"),
            error: v.get("is_error").and_then(Value::as_bool) == Some(true)
                || result_text(v.get("content")).is_some_and(|t| is_error_text(&t)),
        },
        "" => BlockKind::Other("block".into()),
        other => BlockKind::Other(other.to_string()),
    }
}

fn text_kind(text: &str, assistant: bool) -> BlockKind {
    let t = text.trim_start();
    let label = if t.starts_with("<environment_details>") {
        "environment_details"
    } else if t.starts_with("<task>") {
        "task"
    } else if assistant {
        "assistant"
    } else {
        "user"
    };
    BlockKind::Text {
        result: if assistant { None } else { result_head(text) },
        error_text: !assistant && is_error_text(t),
        label,
        xml_tools: if assistant {
            xml_tool_uses(text).into_iter().map(|(n, _)| n.to_string()).collect()
        } else {
            Vec::new()
        },
    }
}

/// A run name from the task's text: its first line, at most 80 characters.
fn task_name(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut name: String = line.chars().take(80).collect();
    if name.len() < line.len() {
        name.push('…');
    }
    Some(name)
}

fn is_error_text(t: &str) -> bool {
    let t = t.trim_start();
    ERROR_STARTS[..4].iter().any(|p| t.starts_with(p)) || (t.starts_with(ERROR_STARTS[4]) && t.contains(".clineignore"))
}

/// `[read_file for 'a.rs'] Result:...`, `[attempt_completion] Result: Done`: the tool's name,
/// and what follows the header.
fn result_head(text: &str) -> Option<ResultHead> {
    let rest = text.strip_prefix('[')?;
    let n = rest
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
        .count();
    if n == 0 || !matches!(rest.as_bytes().get(n), Some(b']' | b' ')) {
        return None;
    }
    let at = rest.find("] Result:")?;
    let after = &rest[at + "] Result:".len()..];
    Some(ResultHead {
        name: rest[..n].to_string(),
        error: is_error_text(after),
        split: after.trim().is_empty(),
    })
}

/// The text of a `tool_result` block's content (a string or text blocks).
fn result_text(c: Option<&Value>) -> Option<String> {
    match c? {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => Some(
            a.iter()
                .filter_map(|b| str_of(b, "text"))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

/// Tool uses written as XML-ish tags in assistant text, as Cline's own parser reads them:
/// `<tool>` of a known tool opens one, `<param>value</param>` pairs inside it (`content` and
/// `diff` end at their LAST closing tag: file contents may hold the tag), `</tool>` closes it.
/// A tool left open at the end of the text counts: Cline runs it once the stream ends.
fn xml_tool_uses(text: &str) -> Vec<(&str, Vec<(&str, &str)>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let mut found = None;
        let mut i = 0;
        while let Some(lt) = rest[i..].find('<') {
            let s = i + lt;
            let after = &rest[s + 1..];
            if let Some(name) = TOOL_NAMES
                .iter()
                .find(|n| after.starts_with(**n) && after.as_bytes().get(n.len()) == Some(&b'>'))
            {
                found = Some((s, *name));
                break;
            }
            i = s + 1;
        }
        let Some((s, name)) = found else { break };
        let body_start = s + name.len() + 2;
        let close = format!("</{name}>");
        let (body, next) = match rest[body_start..].find(&close) {
            Some(e) => (&rest[body_start..body_start + e], body_start + e + close.len()),
            None => (&rest[body_start..], rest.len()),
        };
        out.push((name, xml_params(body)));
        at += next;
    }
    out
}

fn xml_params(body: &str) -> Vec<(&str, &str)> {
    let mut params = Vec::new();
    let mut i = 0;
    while let Some(lt) = body[i..].find('<') {
        let s = i + lt;
        let after = &body[s + 1..];
        let n = after
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        if n == 0 || after.as_bytes().get(n) != Some(&b'>') {
            i = s + 1;
            continue;
        }
        let p = &after[..n];
        let vstart = s + n + 2;
        let close = format!("</{p}>");
        let end = if p == "content" || p == "diff" {
            body[vstart..].rfind(&close)
        } else {
            body[vstart..].find(&close)
        };
        match end {
            Some(e) => {
                params.push((p, body[vstart..vstart + e].trim()));
                i = vstart + e + close.len();
            }
            None => {
                params.push((p, body[vstart..].trim()));
                break;
            }
        }
    }
    params
}

// ---- building the trace ----

fn load_task(format: &'static str, dir: &Path, history: &Path, ui: Option<&Path>) -> Result<Trace, LoadError> {
    let task_id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "task".into());
    let mut t = Trace::new(RunMeta {
        id: task_id.clone(),
        name: Some(task_id.clone()),
        format,
        source: dir.to_path_buf(),
        ..Default::default()
    });
    let mut msgs = Vec::new();
    if history.is_file() {
        let file = t.add_file(history);
        let mut r = Reader::new(history, file, false);
        let scanned = Document::new(&[&[]]).read(history, &mut r)?;
        if scanned.list.is_none() && scanned.top != Top::Empty {
            r.diagnostics.push(Diagnostic::error(
                history,
                None,
                "not a JSON list of messages; the history is not read",
            ));
        }
        t.diagnostics.append(&mut r.diagnostics);
        msgs = r.msgs;
    } else {
        t.diagnostics.push(Diagnostic::warning(
            dir,
            None,
            format!("no {HISTORY}: requests and errors only, no messages or tool calls"),
        ));
    }
    let mut rows = Vec::new();
    if let Some(ui) = ui {
        let file = t.add_file(ui);
        let mut r = Reader::new(ui, file, true);
        let scanned = Document::new(&[&[]]).read(ui, &mut r)?;
        if scanned.list.is_none() && scanned.top != Top::Empty {
            r.diagnostics.push(Diagnostic::error(
                ui,
                None,
                "not a JSON list of ui rows; times and costs are not read",
            ));
        }
        t.diagnostics.append(&mut r.diagnostics);
        t.skipped.merge(&r.skipped);
        rows = r.rows;
        if r.task.is_some() {
            t.meta.name = r.task;
        }
    } else {
        t.diagnostics.push(Diagnostic::warning(
            dir,
            None,
            format!("no {UI}: the history has no times, so events are in file order"),
        ));
    }
    read_metadata(&dir.join(META), &mut t);
    build(&mut t, &msgs, &rows);
    t.finalize();
    Ok(t)
}

fn read_metadata(path: &Path, t: &mut Trace) {
    if !path.is_file() {
        return;
    }
    match read_json_file(path, META_LIMIT) {
        Ok(v) => {
            if let Some(env) = v
                .get("environment_history")
                .and_then(Value::as_array)
                .and_then(|a| a.last())
            {
                for (k, name) in [
                    ("cline_version", "cline_version"),
                    ("host_name", "host"),
                    ("os_name", "os"),
                ] {
                    if let Some(x) = field(env, k) {
                        t.meta.attributes.push((name.to_string(), x.clone()));
                    }
                }
            }
            if t.meta.model.is_none()
                && let Some(m) = v
                    .get("model_usage")
                    .and_then(Value::as_array)
                    .and_then(|a| a.last())
                    .and_then(|u| str_of(u, "model_id"))
            {
                t.meta.model = Some(m.to_string());
            }
        }
        Err(e) => t
            .diagnostics
            .push(Diagnostic::warning(path, None, format!("{META} not read: {e}"))),
    }
}

/// A tool call waiting for its result.
struct Open {
    event: u32,
    name: String,
    id: String,
}

fn build(t: &mut Trace, msgs: &[Msg], rows: &[Row]) {
    let task_id = t.meta.id.clone();
    let (start, end) = (
        rows.iter().filter_map(|r| r.ts).min(),
        rows.iter().filter_map(|r| r.ts).max(),
    );
    t.meta.start = start;
    t.meta.end = end;
    let run = t.add(NewEvent {
        status: Status::Ok,
        start,
        duration: start.zip(end).map(|(a, b)| b.saturating_sub(a)),
        ..NewEvent::new(EventKind::Run, &task_id)
    });

    // Which request row answered each assistant message: by conversationHistoryIndex (k + 2),
    // the last such row (earlier ones were retried), else the n-th request for the n-th answer.
    let reqs: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].is_api_req()).collect();
    let by_idx = reqs.iter().any(|&i| rows[i].idx.is_some());
    let mut req_of: Vec<Option<usize>> = vec![None; msgs.len()];
    if by_idx {
        let mut last: HashMap<i64, usize> = HashMap::new();
        for &i in &reqs {
            if let Some(k) = rows[i].idx {
                last.insert(k, i);
            }
        }
        for (h, m) in msgs.iter().enumerate() {
            if m.assistant {
                req_of[h] = last.get(&(m.pos as i64 - 2)).copied();
            }
        }
    } else {
        let mut it = reqs.iter();
        for (h, m) in msgs.iter().enumerate() {
            if m.assistant {
                req_of[h] = it.next().copied();
            }
        }
    }
    // When each answer's stream ended: the last row shown while it streamed (index k + 1).
    let mut last_ts: HashMap<i64, i64> = HashMap::new();
    for r in rows {
        if let (Some(k), Some(ts)) = (r.idx, r.ts) {
            let e = last_ts.entry(k).or_insert(ts);
            *e = (*e).max(ts);
        }
    }
    let used: std::collections::HashSet<usize> = req_of.iter().flatten().copied().collect();

    let mut open: Vec<Open> = Vec::new();
    let mut model: Option<String> = None;
    let path = t.files.first().cloned().unwrap_or_else(|| t.meta.source.clone());
    for (h, m) in msgs.iter().enumerate() {
        if m.assistant {
            let req = req_of[h].map(|i| &rows[i]);
            let start = req.and_then(|r| r.ts);
            let end = last_ts.get(&(m.pos as i64 - 1)).copied();
            let mdl = m.model.clone().or_else(|| req.and_then(|r| r.model.clone()));
            if mdl.is_some() {
                model.clone_from(&mdl);
            }
            let failed = req.is_some_and(|r| r.failed);
            let llm = t.add(NewEvent {
                parent: Parent::Index(run),
                start,
                duration: start.zip(end).and_then(|(a, b)| (b >= a).then(|| b - a)),
                status: if failed { Status::Error } else { Status::Ok },
                usage: req.and_then(|r| r.usage).or(m.usage),
                model: mdl.as_deref(),
                payload: PayloadRef::Deferred,
                origin: m.origin,
                ..NewEvent::new(EventKind::LlmCall, mdl.as_deref().unwrap_or("assistant"))
            });
            if let Some(r) = req {
                t.event_mut(llm).origin2 = Some(Box::new(r.origin));
            }
            let native = m.blocks.iter().any(|b| matches!(b.kind, BlockKind::ToolUse { .. }));
            for b in &m.blocks {
                let child = |t: &mut Trace, kind: EventKind, name: &str, id: Option<&str>, status: Status| {
                    t.add(NewEvent {
                        parent: Parent::Index(llm),
                        id,
                        status,
                        payload: PayloadRef::Deferred,
                        origin: b.origin,
                        ..NewEvent::new(kind, name)
                    })
                };
                match &b.kind {
                    BlockKind::Text { xml_tools, .. } => {
                        child(t, EventKind::Message(Role::Assistant), "assistant", None, Status::Ok);
                        if !native {
                            for name in xml_tools {
                                let e = child(t, EventKind::ToolCall, name, None, Status::Pending);
                                open.push(Open {
                                    event: e,
                                    name: name.clone(),
                                    id: String::new(),
                                });
                            }
                        }
                    }
                    BlockKind::Thinking => {
                        child(t, EventKind::Other, "thinking", None, Status::Ok);
                    }
                    BlockKind::ToolUse { id, name } => {
                        let shown = if name.is_empty() { "?" } else { name.as_str() };
                        let e = child(t, EventKind::ToolCall, shown, Some(id), Status::Pending);
                        open.push(Open {
                            event: e,
                            name: name.clone(),
                            id: id.clone(),
                        });
                    }
                    BlockKind::ToolResult { .. } => {
                        child(t, EventKind::Other, "tool_result", None, Status::Ok);
                    }
                    BlockKind::Other(kind) => {
                        // A block type this reader does not know (drift): shown, and counted.
                        t.skipped.add(kind);
                        child(t, EventKind::Other, kind, None, Status::Ok);
                    }
                }
            }
            continue;
        }
        // A user message: results of the open calls, and what the user (or Cline) said.
        let start = msgs
            .get(h + 1)
            .filter(|n| n.assistant)
            .and_then(|_| req_of[h + 1])
            .and_then(|i| rows[i].ts);
        let mut i = 0;
        while i < m.blocks.len() {
            let b = &m.blocks[i];
            i += 1;
            let (joined, error, origin2) = match &b.kind {
                BlockKind::ToolResult { id, error } => {
                    let at = open.iter().position(|o| !id.is_empty() && o.id == *id);
                    (at, *error, b.origin)
                }
                BlockKind::Text { result: Some(head), .. } => {
                    let at = open
                        .iter()
                        .position(|o| o.name == head.name)
                        .or_else(|| (!open.is_empty()).then_some(0));
                    let mut o2 = b.origin;
                    let mut error = head.error;
                    if head.split {
                        // Old Cline: the result is in the blocks that follow the header.
                        let mut first = true;
                        while let Some(n) = m.blocks.get(i) {
                            let stop = match &n.kind {
                                BlockKind::Text { result, label, .. } => result.is_some() || *label != "user",
                                BlockKind::ToolResult { .. } => true,
                                _ => false,
                            };
                            if stop {
                                break;
                            }
                            if first && let BlockKind::Text { error_text: true, .. } = n.kind {
                                error = true;
                            }
                            first = false;
                            o2.len = (n.origin.offset + n.origin.len as u64)
                                .saturating_sub(o2.offset)
                                .min(u32::MAX as u64) as u32;
                            i += 1;
                        }
                    }
                    (at, error, o2)
                }
                BlockKind::Text { label, .. } => {
                    t.add(NewEvent {
                        parent: Parent::Index(run),
                        start,
                        status: Status::Ok,
                        payload: PayloadRef::Deferred,
                        origin: b.origin,
                        ..NewEvent::new(EventKind::Message(Role::User), label)
                    });
                    continue;
                }
                BlockKind::Thinking | BlockKind::ToolUse { .. } | BlockKind::Other(_) => {
                    let name = match &b.kind {
                        BlockKind::Other(k) => {
                            t.skipped.add(k);
                            k.as_str()
                        }
                        BlockKind::Thinking => "thinking",
                        _ => "tool_use",
                    };
                    t.add(NewEvent {
                        parent: Parent::Index(run),
                        start,
                        status: Status::Ok,
                        payload: PayloadRef::Deferred,
                        origin: b.origin,
                        ..NewEvent::new(EventKind::Message(Role::User), name)
                    });
                    continue;
                }
            };
            match joined {
                Some(k) => {
                    let o = open.remove(k);
                    let ev = t.event_mut(o.event);
                    ev.status = if error { Status::Error } else { Status::Ok };
                    ev.origin2 = Some(Box::new(origin2));
                }
                None => {
                    t.diagnostics.push(Diagnostic::warning(
                        &path,
                        Some(b.origin.line as u64),
                        format!("a tool result in message {h} has no open tool call; shown as a message"),
                    ));
                    t.add(NewEvent {
                        parent: Parent::Index(run),
                        start,
                        status: if error { Status::Error } else { Status::Ok },
                        payload: PayloadRef::Deferred,
                        origin: origin2,
                        ..NewEvent::new(EventKind::Message(Role::Tool), "tool_result")
                    });
                }
            }
        }
    }

    // Requests that answered no message (cancelled, failed, or the history lacks them), and
    // the errors the chat showed.
    for (i, r) in rows.iter().enumerate() {
        if r.is_api_req() && !used.contains(&i) {
            if r.model.is_some() {
                model.clone_from(&r.model);
            }
            t.add(NewEvent {
                parent: Parent::Index(run),
                start: r.ts,
                status: if r.failed { Status::Error } else { Status::Unknown },
                usage: r.usage,
                model: r.model.as_deref(),
                payload: PayloadRef::Deferred,
                origin: r.origin,
                ..NewEvent::new(EventKind::LlmCall, r.model.as_deref().unwrap_or("api request"))
            });
        } else if r.is_error() {
            t.add(NewEvent {
                parent: Parent::Index(run),
                start: r.ts,
                status: Status::Error,
                payload: PayloadRef::Deferred,
                origin: r.origin,
                ..NewEvent::new(EventKind::Error, &r.what)
            });
        }
    }

    let status = run_status(msgs, rows);
    t.meta.status = status;
    if model.is_some() {
        t.meta.model = model;
    }
    // A completed task's attempt_completion gets no result when the user accepts it.
    if status == RunStatus::Ok {
        for o in open.iter().filter(|o| o.name == "attempt_completion") {
            t.event_mut(o.event).status = Status::Ok;
        }
    }
    t.event_mut(run).status = match status {
        RunStatus::Error => Status::Error,
        RunStatus::Ok => Status::Ok,
        _ => Status::Unknown,
    };
}

/// Completed when the chat shows a completion after the last request; failed when it shows
/// an error after it; otherwise unknown (interrupted, or still running: nothing says which).
fn run_status(msgs: &[Msg], rows: &[Row]) -> RunStatus {
    if rows.is_empty() {
        let done = msgs.last().is_some_and(|m| {
            m.assistant
                && m.blocks.iter().any(|b| match &b.kind {
                    BlockKind::ToolUse { name, .. } => name == "attempt_completion",
                    BlockKind::Text { xml_tools, .. } => xml_tools.iter().any(|n| n == "attempt_completion"),
                    _ => false,
                })
        });
        return if done { RunStatus::Ok } else { RunStatus::Unknown };
    }
    let after = rows.iter().rposition(Row::is_api_req).map_or(0, |i| i + 1);
    let tail = &rows[after..];
    if tail.iter().any(Row::is_completion) {
        RunStatus::Ok
    } else if tail.iter().any(Row::is_error) || rows.get(after.wrapping_sub(1)).is_some_and(|r| r.failed) {
        RunStatus::Error
    } else {
        RunStatus::Unknown
    }
}

// ---- payloads, decoded when shown ----

fn decode(trace: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
    let mut p = Payload::default();
    let Some(first) = raw.first() else {
        return p;
    };
    let v = match serde_json::from_slice::<Value>(first) {
        Ok(v) => v,
        Err(e) => {
            p.error = Some(ErrorInfo::unreadable(&e));
            return p;
        }
    };
    match ev.kind {
        EventKind::LlmCall => {
            let row = if v.get("role").is_some() {
                p.output = v.get("content").cloned();
                for k in ["modelInfo", "metrics"] {
                    if let Some(x) = field(&v, k) {
                        p.extra.push((k.to_string(), x.clone()));
                    }
                }
                raw.get(1).and_then(|r| serde_json::from_slice::<Value>(r).ok())
            } else {
                Some(v)
            };
            if let Some(Value::Object(o)) = row
                .as_ref()
                .and_then(|r| str_of(r, "text"))
                .and_then(|s| serde_json::from_str::<Value>(s).ok())
            {
                for (k, x) in &o {
                    match k.as_str() {
                        "request" => p.input = Some(x.clone()),
                        "cancelReason" if x.as_str() == Some("user_cancelled") => {
                            p.extra.push((k.clone(), x.clone()));
                        }
                        "cancelReason" | "streamingFailedMessage" => {
                            p.error = Some(ErrorInfo {
                                kind: Some(k.clone()),
                                message: x.as_str().map(str::to_owned).unwrap_or_else(|| x.to_string()),
                                ..Default::default()
                            });
                        }
                        _ => p.extra.push((k.clone(), x.clone())),
                    }
                }
            }
        }
        EventKind::ToolCall => {
            match str_of(&v, "type") {
                Some("tool_use") => p.input = v.get("input").map(decode_embedded),
                Some("text") => {
                    // The n-th XML tool use of this text: n counts the calls read from it before.
                    let n = trace
                        .events
                        .iter()
                        .take_while(|e| !std::ptr::eq(*e, ev))
                        .filter(|e| e.kind == EventKind::ToolCall && same_origin(e.origin, ev.origin))
                        .count();
                    let text = str_of(&v, "text").unwrap_or("");
                    if let Some((_, params)) = xml_tool_uses(text).into_iter().nth(n) {
                        let obj = params
                            .into_iter()
                            .map(|(k, x)| (k.to_string(), Value::String(x.to_string())))
                            .collect();
                        p.input = Some(Value::Object(obj));
                    }
                }
                _ => p.input = Some(v.clone()),
            }
            if let Some(r) = raw.get(1) {
                result_payload(r, ev.status == Status::Error, &mut p);
            }
        }
        EventKind::Message(Role::Tool) => result_payload(first, ev.status == Status::Error, &mut p),
        EventKind::Error => {
            p.error = Some(ErrorInfo {
                kind: Some(ev_name(trace, ev).to_string()),
                message: str_of(&v, "text").unwrap_or("").to_string(),
                ..Default::default()
            });
        }
        EventKind::Message(role) => {
            let text = match &v {
                Value::String(_) => Some(v.clone()),
                _ => v.get("text").cloned(),
            };
            let body = text.unwrap_or_else(|| v.clone());
            if role == Role::Assistant {
                p.output = Some(body);
            } else {
                p.input = Some(body);
            }
        }
        _ => {
            p.output = Some(match str_of(&v, "type") {
                Some("thinking") => v.get("thinking").cloned().unwrap_or(v),
                Some("reasoning") => v.get("reasoning").or_else(|| v.get("text")).cloned().unwrap_or(v),
                _ => v,
            });
        }
    }
    p
}

fn ev_name<'a>(trace: &'a Trace, ev: &Event) -> &'a str {
    trace.str(ev.name)
}

fn same_origin(a: Origin, b: Origin) -> bool {
    let (af, ao, bf, bo) = (a.file, a.offset, b.file, b.offset);
    af == bf && ao == bo
}

/// A result: a `tool_result` block, a `[name] Result:` text block, or (old Cline) the header
/// block and the blocks after it, which are not one JSON value: read as a list.
fn result_payload(raw: &[u8], error: bool, p: &mut Payload) {
    let blocks: Vec<Value> = match serde_json::from_slice::<Value>(raw) {
        Ok(v) => vec![v],
        Err(_) => {
            let mut list = Vec::with_capacity(raw.len() + 2);
            list.push(b'[');
            list.extend_from_slice(raw);
            list.push(b']');
            match serde_json::from_slice::<Vec<Value>>(&list) {
                Ok(v) => v,
                Err(e) => {
                    p.error = Some(ErrorInfo::unreadable(&e));
                    return;
                }
            }
        }
    };
    let out = match blocks.as_slice() {
        [b] if str_of(b, "type") == Some("tool_result") => {
            let c = b.get("content").cloned().unwrap_or(Value::Null);
            match result_text(Some(&c)) {
                Some(s)
                    if c.is_string()
                        || c.as_array()
                            .is_some_and(|a| a.iter().all(|x| str_of(x, "type") == Some("text"))) =>
                {
                    Value::String(s)
                }
                _ => c,
            }
        }
        _ => {
            let mut parts = Vec::new();
            for (i, b) in blocks.iter().enumerate() {
                match str_of(b, "text") {
                    Some(s) if i == 0 => {
                        let body = s.find("] Result:").map_or(s, |at| &s[at + "] Result:".len()..]);
                        let body = body.strip_prefix('\n').unwrap_or(body);
                        if !body.trim().is_empty() {
                            parts.push(body.to_string());
                        }
                    }
                    Some(s) => parts.push(s.to_string()),
                    None => parts.push(b.to_string()),
                }
            }
            Value::String(parts.join("\n"))
        }
    };
    if error {
        p.error = Some(ErrorInfo {
            kind: Some("tool error".into()),
            message: out.as_str().map(str::to_owned).unwrap_or_else(|| out.to_string()),
            ..Default::default()
        });
    }
    p.output = Some(out);
}

/// A call's gist by Cline's tools (`src/core/prompts`, `ClineDefaultTool`): the command, the
/// file (`path`, newer `absolutePath`), the search's regex, the browser's URL or action, an
/// MCP call's tool and first argument.
pub(crate) fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{first_arg, generic, key, key_or_generic};
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "execute_command" => by(&["command"]),
        "read_file"
        | "write_to_file"
        | "replace_in_file"
        | "list_files"
        | "list_code_definition_names"
        | "new_rule" => by(&["path", "absolutePath"]),
        "search_files" => by(&["regex"]),
        "browser_action" => by(&["url", "action"]),
        "web_fetch" => by(&["url"]),
        "web_search" => by(&["query"]),
        "use_mcp_tool" => {
            let tool = key(input, &["tool_name"]);
            let args = input.get("arguments").map(super::decode_embedded);
            match (tool, args.as_ref().and_then(first_arg)) {
                (Some(t), Some(a)) => Some(format!("{t} {a}")),
                (t, a) => t.or(a).or_else(|| generic(name, input)),
            }
        }
        "access_mcp_resource" => by(&["uri"]),
        "ask_followup_question" => by(&["question"]),
        "attempt_completion" => by(&["result"]),
        "new_task" => by(&["context"]),
        _ => generic(name, input),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::formats::testing::Rng;
    use serde_json::json;

    /// Drift in a task folder's two documents: ui rows of a kind no Cline writes yet and
    /// unknown fields in rows; blocks of a new type in the assistant's messages and unknown
    /// fields in messages. Returns the records inserted.
    pub(crate) fn drift_task_file(f: &Path, rng: &mut Rng) -> usize {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name != UI && name != HISTORY {
            return 0;
        }
        let Ok(Value::Array(mut items)) = serde_json::from_slice::<Value>(&std::fs::read(f).unwrap()) else {
            return 0;
        };
        let mut added = 0;
        for it in items.iter_mut().filter_map(Value::as_object_mut) {
            if rng.one_in(3) {
                it.insert(rng.type_name(), rng.value());
            }
            let assistant = it.get("role").and_then(Value::as_str) == Some("assistant");
            if name == HISTORY
                && assistant
                && rng.one_in(3)
                && let Some(Value::Array(blocks)) = it.get_mut("content")
            {
                let mut b = json!({"type": rng.type_name()});
                if let Some(t) = rng.maybe_text() {
                    b["text"] = json!(t);
                }
                blocks.insert(rng.below(blocks.len() + 1), b);
                added += 1;
            }
        }
        if name == UI {
            for _ in 0..rng.below(4) {
                let at = rng.below(items.len() + 1);
                let ts = items.get(at).and_then(|r| r.get("ts")).cloned().unwrap_or(json!(0));
                let mut row = json!({"ts": ts, "type": rng.type_name()});
                if let Some(t) = rng.maybe_text() {
                    row["text"] = json!(t);
                }
                items.insert(at, row);
                added += 1;
            }
        }
        std::fs::write(f, serde_json::to_vec(&Value::Array(items)).unwrap()).unwrap();
        added
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on our task and the corpus' Cline task.
        #[test]
        fn drift_is_skipped_quietly(seed in proptest::prelude::any::<u64>()) {
            let sources = crate::formats::testing::drift_sources("cline", &["sample-traces/cline/tasks/1767225600000"]);
            crate::formats::testing::drift_check(&sources, seed, &drift_task_file);
        }
    }

    fn task(history: Option<&Value>, ui: Option<&Value>) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("tasks").join("1700000000000");
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(h) = history {
            std::fs::write(dir.join(HISTORY), serde_json::to_vec(h).unwrap()).unwrap();
        }
        if let Some(u) = ui {
            std::fs::write(dir.join(UI), serde_json::to_vec(u).unwrap()).unwrap();
        }
        (d, dir)
    }

    fn load(dir: &Path) -> Trace {
        Cline.load(dir).unwrap().traces.remove(0)
    }

    fn tools(t: &Trace) -> Vec<(String, Status)> {
        t.walk()
            .into_iter()
            .map(|(i, _)| t.event(i))
            .filter(|e| e.kind == EventKind::ToolCall)
            .map(|e| (t.str(e.name).to_string(), e.status))
            .collect()
    }

    fn payload_of(t: &Trace, name: &str) -> Payload {
        let i = t.walk().into_iter().find(|(i, _)| t.name(*i) == name).unwrap().0;
        super::super::payload(t, t.event(i))
    }

    fn ui_req(ts: i64, idx: i64, tokens_in: u64) -> Value {
        let text = json!({"request": "r", "tokensIn": tokens_in, "tokensOut": 5, "cacheWrites": 100, "cacheReads": 2000, "cost": 0.01});
        json!({"ts": ts, "type": "say", "say": "api_req_started", "text": text.to_string(), "conversationHistoryIndex": idx})
    }

    /// Cline 3.5x: native tool_use blocks, results as `[name for 'x'] Result:` text blocks.
    fn native_history() -> Value {
        json!([
            {"role": "user", "content": [{"type": "text", "text": "<task>\nfix it\n</task>"}, {"type": "text", "text": "<environment_details>\nx\n</environment_details>"}]},
            {"role": "assistant", "modelInfo": {"modelId": "claude-x"}, "metrics": {"tokens": {"prompt": 1, "completion": 2, "cached": 3}},
             "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "text", "text": "Reading."},
                         {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.rs"}}]},
            {"role": "user", "content": [{"type": "text", "text": "[read_file for 'a.rs'] Result:\nfn main() {}"}, {"type": "text", "text": "<environment_details>\ny\n</environment_details>"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2", "name": "execute_command", "input": {"command": "false"}}]},
            {"role": "user", "content": [{"type": "text", "text": "[execute_command for 'false'] Result:\nThe tool execution failed with the following error:\n<error>\nexit 1\n</error>"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_3", "name": "attempt_completion", "input": {"result": "done"}}]}
        ])
    }

    fn native_ui() -> Value {
        json!([
            {"ts": 1000, "type": "say", "say": "text", "text": "fix it", "conversationHistoryIndex": -1},
            ui_req(1100, -1, 10),
            {"ts": 1500, "type": "say", "say": "tool", "text": "{}", "conversationHistoryIndex": 0},
            ui_req(2000, 1, 20),
            {"ts": 2500, "type": "say", "say": "command", "text": "false", "conversationHistoryIndex": 2},
            ui_req(3000, 3, 30),
            {"ts": 3500, "type": "say", "say": "completion_result", "text": "done", "conversationHistoryIndex": 4},
            {"ts": 3600, "type": "ask", "ask": "completion_result", "text": "", "conversationHistoryIndex": 5}
        ])
    }

    #[test]
    fn native_tool_uses_join_text_results_by_name_and_take_times_from_the_ui() {
        let (_d, dir) = task(Some(&native_history()), Some(&native_ui()));
        let t = load(&dir);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.model.as_deref(), Some("claude-x"));
        assert_eq!(
            tools(&t),
            vec![
                ("read_file".into(), Status::Ok),
                ("execute_command".into(), Status::Error),
                // Accepted completion: no result, done all the same.
                ("attempt_completion".into(), Status::Ok),
            ]
        );
        let c = t.counts();
        assert_eq!((c.llm_calls, c.tool_calls), (3, 3));
        // Usage from the ui row, cache apart as Cline writes it, with its recorded cost; not
        // the message's metrics.
        let llm = t.events.iter().find(|e| e.kind == EventKind::LlmCall).unwrap();
        let want = Usage {
            input: Some(10),
            cache_write: Some(100),
            cache_read: Some(2000),
            output: Some(5),
            cost: Some(10_000),
            ..Default::default()
        };
        assert_eq!(llm.usage.get(), Some(want));
        assert_eq!(llm.start, Some(1100 * 1_000_000));
        assert_eq!(llm.duration, Some(400 * 1_000_000));
        assert_eq!(t.meta.start, Some(1000 * 1_000_000));
        let p = payload_of(&t, "read_file");
        assert_eq!(p.input, Some(json!({"path": "a.rs"})));
        assert_eq!(p.output, Some(json!("fn main() {}")));
        let p = payload_of(&t, "execute_command");
        assert!(p.error.unwrap().message.contains("exit 1"));
        let p = payload_of(&t, "thinking");
        assert_eq!(p.output, Some(json!("hmm")));
        let p = payload_of(&t, "task");
        assert_eq!(p.input, Some(json!("<task>\nfix it\n</task>")));
        let llm = t
            .walk()
            .into_iter()
            .find(|(i, _)| t.event(*i).kind == EventKind::LlmCall)
            .unwrap()
            .0;
        let p = super::super::payload(&t, t.event(llm));
        assert_eq!(p.input, Some(json!("r")));
        assert!(p.extra.iter().any(|(k, v)| k == "cost" && *v == json!(0.01)));
    }

    #[test]
    fn xml_tool_tags_and_split_results_of_old_cline() {
        let h = json!([
            {"role": "user", "content": [{"type": "text", "text": "<task>\nlist\n</task>"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "I'll look.\n<list_files>\n<path>src</path>\n<recursive>true</recursive>\n</list_files>"}]},
            {"role": "user", "content": [
                {"type": "text", "text": "[list_files for 'src'] Result:"},
                {"type": "text", "text": "a.rs\nb.rs"},
                {"type": "text", "text": "<environment_details>\nz\n</environment_details>"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "<write_to_file>\n<path>c.rs</path>\n<content>\nlet s = \"</content>\";\n</content>\n</write_to_file>"}]},
            {"role": "user", "content": [{"type": "text", "text": "[write_to_file for 'c.rs'] Result:"}, {"type": "text", "text": "The user denied this operation."}]},
            {"role": "assistant", "content": "<attempt_completion>\n<result>\nDone\n</result>"}
        ]);
        let (_d, dir) = task(Some(&h), None);
        let t = load(&dir);
        // No ui file: said once, as a warning.
        assert_eq!(t.diagnostics.len(), 1, "{:?}", t.diagnostics);
        assert_eq!(t.diagnostics[0].severity, Severity::Warning);
        assert_eq!(
            tools(&t),
            vec![
                ("list_files".into(), Status::Ok),
                ("write_to_file".into(), Status::Error),
                ("attempt_completion".into(), Status::Ok),
            ]
        );
        assert_eq!(t.meta.status, RunStatus::Ok);
        let p = payload_of(&t, "list_files");
        assert_eq!(p.input, Some(json!({"path": "src", "recursive": "true"})));
        assert_eq!(p.output, Some(json!("a.rs\nb.rs")));
        let p = payload_of(&t, "write_to_file");
        assert_eq!(p.input.unwrap()["content"], json!("let s = \"</content>\";"));
        assert!(p.error.is_some());
    }

    #[test]
    fn tool_result_blocks_join_by_id() {
        let h = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "a", "name": "read_file", "input": "{\"path\": \"x\"}"},
                {"type": "tool_use", "id": "b", "name": "read_file", "input": {"path": "y"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "Y"}]},
                {"type": "tool_result", "tool_use_id": "a", "content": "X", "is_error": true}]}
        ]);
        let (_d, dir) = task(Some(&h), Some(&json!([])));
        let t = load(&dir);
        assert_eq!(
            tools(&t),
            vec![("read_file".into(), Status::Error), ("read_file".into(), Status::Ok)]
        );
        let a = t.find("a").unwrap();
        let p = super::super::payload(&t, t.event(a));
        assert_eq!(p.input, Some(json!({"path": "x"})));
        assert_eq!(p.output, Some(json!("X")));
        let b = t.find("b").unwrap();
        assert_eq!(super::super::payload(&t, t.event(b)).output, Some(json!("Y")));
        assert_eq!(t.meta.status, RunStatus::Unknown);
    }

    #[test]
    fn damaged_input_is_diagnosed_and_the_rest_loads() {
        let dir_h = json!([
            {"role": "user", "content": [{"type": "text", "text": "[read_file for 'q'] Result:\norphan"}]},
            {"role": 5, "content": "bad role"},
            {"content": "no role"},
            {"role": "assistant"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}]}
        ]);
        let (_d, dir) = task(Some(&dir_h), None);
        // A truncated ui file: the rows before the cut load.
        let ui = br#"[{"ts": 1000, "type": "say", "say": "api_req_started", "text": "not json", "conversationHistoryIndex": 2}, {"ts": 2000, "type": "ask", "ask": "api_req_failed", "text": "boom"}, {"ts": 3"#;
        std::fs::write(dir.join(UI), ui).unwrap();
        let t = load(&dir);
        let errors = t.diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
        assert!(errors >= 3, "{:?}", t.diagnostics);
        assert!(t.diagnostics.iter().any(|d| d.message.contains("no open tool call")));
        // The call with no result yet is pending; the failure after the last request is the run's.
        assert_eq!(tools(&t), vec![("read_file".into(), Status::Pending)]);
        assert_eq!(t.meta.status, RunStatus::Error);
        assert!(t.events.iter().any(|e| e.kind == EventKind::Error));
        let p = payload_of(&t, "api_req_failed");
        assert_eq!(p.error.unwrap().message, "boom");
        for (i, _) in t.walk() {
            let _ = super::super::payload(&t, t.event(i));
        }
    }

    #[test]
    fn not_a_list_and_missing_files() {
        let (_d, dir) = task(None, None);
        assert!(matches!(Cline.load(&dir), Err(LoadError::NotATrace { .. })));
        std::fs::write(dir.join(HISTORY), b"{\"role\": \"user\"}").unwrap();
        let t = load(&dir);
        assert!(t.has_error_diagnostics());
    }

    #[test]
    fn detection_by_path_shape_wins_over_openai_chat() {
        let (_d, dir) = task(Some(&native_history()), Some(&native_ui()));
        let f = super::super::detect(&dir.join(HISTORY)).unwrap();
        assert_eq!(f.id(), "cline");
        assert_eq!(super::super::detect(&dir).unwrap().id(), "cline");
        assert!(Cline.is_run_dir(&dir));
        // The same list under another name is not Cline's.
        let other = dir.parent().unwrap().join("chat.json");
        std::fs::write(&other, serde_json::to_vec(&native_history()).unwrap()).unwrap();
        assert_eq!(Cline.detect(&Probe::open(&other).unwrap()), 0);
        // Loading a file of the folder loads the folder.
        assert_eq!(Cline.load(&dir.join(UI)).unwrap().traces[0].counts().tool_calls, 3);
    }

    #[test]
    fn summaries_read_only_the_ends_of_the_ui_rows_and_agree_with_a_load() {
        let (_d, dir) = task(Some(&native_history()), Some(&native_ui()));
        let t = load(&dir);
        assert_eq!(t.meta.name.as_deref(), Some("fix it"));
        let s = crate::formats::testing::summaries(&Cline, &dir).unwrap().remove(0);
        assert_eq!(
            (s.name.as_deref(), s.status, s.start),
            (Some("fix it"), RunStatus::Ok, t.meta.start)
        );
        assert_eq!(s.duration, t.duration());
        // A large ui file: the head gives the task and start, the tail the end and status.
        let mut rows = native_ui().as_array().unwrap().clone();
        let filler =
            json!({"ts": 1200, "type": "say", "say": "text", "text": "x".repeat(1000), "conversationHistoryIndex": 0});
        for _ in 0..400 {
            rows.insert(2, filler.clone());
        }
        rows.push(json!({"ts": 9000, "type": "ask", "ask": "api_req_failed", "text": "boom"}));
        std::fs::write(dir.join(UI), serde_json::to_vec(&rows).unwrap()).unwrap();
        assert!(std::fs::metadata(dir.join(UI)).unwrap().len() > SUMMARY_HEAD + SUMMARY_TAIL);
        let t = load(&dir);
        let s = crate::formats::testing::summaries(&Cline, &dir).unwrap().remove(0);
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!((s.name.as_deref(), s.status), (Some("fix it"), RunStatus::Ok));
        assert_eq!((s.start, s.duration), (t.meta.start, t.duration()));
    }

    #[test]
    fn cancelled_requests_are_no_failures_failed_streams_are() {
        let h = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "text", "text": "[Response interrupted by user]"}]}
        ]);
        let req = |ts: i64, idx: i64, reason: &str| {
            let text = json!({"request": "r", "tokensIn": 1, "tokensOut": 1, "cancelReason": reason});
            json!({"ts": ts, "type": "say", "say": "api_req_started", "text": text.to_string(), "conversationHistoryIndex": idx})
        };
        let ui = json!([req(1000, -1, "user_cancelled"), req(2000, 1, "streaming_failed")]);
        let (_d, dir) = task(Some(&h), Some(&ui));
        let t = load(&dir);
        let llm: Vec<Status> = t
            .events
            .iter()
            .filter(|e| e.kind == EventKind::LlmCall)
            .map(|e| e.status)
            .collect();
        // The answered request was cancelled by the user; the unanswered one failed.
        assert_eq!(llm, vec![Status::Ok, Status::Error]);
        assert_eq!(t.meta.status, RunStatus::Error);
    }

    #[test]
    fn xml_parsing_follows_clines_parser() {
        let uses = xml_tool_uses("a <read_file><path>x</path></read_file> b <execute_command>\n<command>ls</command>");
        assert_eq!(uses.len(), 2);
        assert_eq!(uses[0], ("read_file", vec![("path", "x")]));
        assert_eq!(uses[1], ("execute_command", vec![("command", "ls")]));
        assert!(xml_tool_uses("<read_files> <p> < read_file>").is_empty());
        assert_eq!(
            result_head("[attempt_completion] Result: Done").unwrap().name,
            "attempt_completion"
        );
        assert!(result_head("[note] something").is_none());
        assert!(result_head("plain").is_none());
    }
}

#[cfg(test)]
mod gist_tests {
    use super::*;
    use serde_json::json;

    fn g(name: &str, input: Value) -> Option<String> {
        Cline.gist(name, &input)
    }

    #[test]
    fn each_tool_says_what_it_did() {
        // `tool_use` inputs as Cline 3.51 writes them (and the XML tags' parameters).
        let r = json!({"path": "ActionSystem.cs", "task_progress": "- [ ] Analyze"});
        assert_eq!(g("read_file", r).as_deref(), Some("ActionSystem.cs"));
        let w = json!({"absolutePath": "/w/BeginTurnGA.cs", "content": "using UnityEngine;"});
        assert_eq!(g("write_to_file", w).as_deref(), Some("/w/BeginTurnGA.cs"));
        let s = json!({"path": ".", "regex": "ServerRpc|ClientRpc", "file_pattern": "*.cs"});
        assert_eq!(g("search_files", s).as_deref(), Some("ServerRpc|ClientRpc"));
        let c = json!({"command": "cd /w && dotnet run", "requires_approval": false});
        assert_eq!(g("execute_command", c).as_deref(), Some("cd /w && dotnet run"));
        let m = json!({"server_name": "github", "tool_name": "get_issue", "arguments": "{\"number\": 7}"});
        assert_eq!(g("use_mcp_tool", m).as_deref(), Some("get_issue 7"));
        let b = json!({"action": "launch", "url": "http://localhost:3000"});
        assert_eq!(g("browser_action", b).as_deref(), Some("http://localhost:3000"));
        assert_eq!(
            g("attempt_completion", json!({"result": "Done.\n\nAll good"})).as_deref(),
            Some("Done.\n\nAll good")
        );
    }
}
