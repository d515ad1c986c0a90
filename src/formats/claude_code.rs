//! Claude Code session transcripts: `~/.claude/projects/<project>/<session>.jsonl`, one record a
//! line (`user`, `assistant`, `system`, plus many bookkeeping types), linked by
//! `parentUuid`/`uuid`. Subagents write `<session>/subagents/agent-<id>.jsonl` beside it.
//!
//! Shapes and traps this reader handles:
//! - one API response is split over several `assistant` lines sharing `message.id`: they become
//!   ONE LLM call whose usage is the last line's (each line repeats the response's usage so far:
//!   counted once, not summed);
//! - tokens (`message.usage`): Anthropic's kinds are the normalized ones as written:
//!   `input_tokens` (not cached), `cache_creation_input_tokens` (cache write),
//!   `cache_read_input_tokens` (cache read), `output_tokens` (thinking included: Anthropic does
//!   not count reasoning apart); the top-level `costUSD` older versions wrote is the call's
//!   recorded cost;
//! - `tool_use` blocks (assistant) and `tool_result` blocks (user) are joined by `tool_use_id`
//!   into ONE tool call; older/synthetic records without ids pair through
//!   `sourceToolAssistantUUID`/`parentUuid`; a call with no result yet is Pending;
//! - API errors are synthetic assistant lines (`isApiErrorMessage`, model `<synthetic>`) or
//!   `system` lines with subtype `api_error`/`error`;
//! - record types this reader does not know are skipped with one warning per type;
//! - subagent transcripts hang under the Task/Agent tool call that started them, matched by the
//!   agent id the call's result (or a `progress` line) names, else by the prompt.
//!
//! Built for size (DESIGN §4), on the shared engine: the skim reads of each line only what the
//! index needs (ids, times, model, usage, the ids and names of tool_use blocks, tool_result ids
//! and is_error, and the byte range of each content block); every payload stays on disk
//! (`PayloadRef::Deferred`) and [`Format::decode_payload`] rebuilds it from the record(s):
//! - a block's event (text, thinking, tool_use, ...): origin = the block's own bytes;
//! - a tool call: origin = its tool_use block, origin2 = the user line of its result (the
//!   line-level `toolUseResult` and `toolDenialKind` are part of the payload; the result block
//!   is found again by its `tool_use_id`), or the result block alone when several results of
//!   that line could not be told apart by id;
//! - an LLM call spanning several lines: origin = its first line, origin2 = its last line so
//!   far; the decode also reads the lines between the two that carry the same `message.id`
//!   (usage and stop_reason are the last that any line gave, as the index does).

use super::engine::{self, Records};
use super::jsonl::{Follow, JsonlReader, LineLoc, LineParser, Sink};
use super::skim::{Seen, Skim};
use super::{Format, LoadError, Loaded, Probe, field, stem, str_of};
use crate::model::*;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

pub struct ClaudeCode;

/// Bookkeeping records that carry nothing for the event tree (or only a title): read quietly.
const QUIET_TYPES: [&str; 15] = [
    "queue-operation",
    "file-history-snapshot",
    "summary",
    "custom-title",
    "ai-title",
    "agent-name",
    "last-prompt",
    "permission-mode",
    "mode",
    "progress",
    "attachment",
    "worktree-state",
    "pr-link",
    // A message of a request, content-addressed (2.1.3xx): the conversation the tree shows.
    "api-request-blob",
    // Internal state with no text.
    "atis-latch",
];

/// Envelope fields every record repeats; left out when a record is shown generically.
const ENVELOPE: [&str; 14] = [
    "parentUuid",
    "logicalParentUuid",
    "uuid",
    "sessionId",
    "session_id",
    "cwd",
    "version",
    "gitBranch",
    "userType",
    "entrypoint",
    "isSidechain",
    "timestamp",
    "type",
    "slug",
];

/// The lines between an LLM call's first and last line are read again when it is shown, up to
/// this many bytes (a response's lines are next to each other; a hostile file may not be).
const MAX_SPAN: u64 = 64 << 20;

impl Format for ClaudeCode {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        "claude-code"
    }
    fn describe(&self) -> &'static str {
        "Claude Code session transcript, ~/.claude/projects/<project>/<session>.jsonl (subagents in <session>/subagents/)"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        for v in p.lines().take(20) {
            if looks_like_record(v) {
                return 95;
            }
        }
        // A first record too large for the probe: judge by its keys.
        if p.has_key("parentUuid") && (p.has_key("sessionId") || p.has_key("isSidechain")) {
            return 90;
        }
        0
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let mut f = self.follow(path).expect("claude-code is line-oriented");
        f.poll()?;
        f.finish("Claude Code records")
    }

    fn summary_inputs(&self, path: &Path) -> Option<Vec<PathBuf>> {
        Some([path.to_path_buf()].into_iter().chain(subagent_dir(path)).collect())
    }

    fn follow(&self, path: &Path) -> Option<Follow> {
        let path = path.to_path_buf();
        let main = path.clone();
        Some(Follow::new(
            &path,
            Box::new(move || Box::new(Parser::new(&main)) as Box<dyn LineParser>),
        ))
    }

    fn decode_payload(&self, t: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
        decode(t, ev, raw)
    }
}

/// Record types this reader knows (the rest are drift: formats/mod.rs).
fn is_known_type(ty: &str) -> bool {
    matches!(
        ty,
        "user"
            | "assistant"
            | "system"
            | "summary"
            | "custom-title"
            | "ai-title"
            | "progress"
            | "api-request-shape"
            | "api-request"
            | "cost-state"
            | "tools-used"
    ) || QUIET_TYPES.contains(&ty)
}

pub(crate) fn looks_like_record(v: &Value) -> bool {
    let has = |k: &str| v.get(k).is_some();
    let ty = str_of(v, "type");
    (has("parentUuid") && (has("sessionId") || has("uuid")))
        || (has("isSidechain") && has("sessionId"))
        || (ty == Some("summary") && has("leafUuid"))
        || (ty == Some("file-history-snapshot") && has("messageId") && has("snapshot"))
        || (ty == Some("queue-operation") && has("sessionId") && has("operation"))
}

/// `<dir>/<session>.jsonl` → `<dir>/<session>/subagents`, when this is a session file.
fn subagent_dir(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let session = name.strip_suffix(".jsonl")?;
    if session.starts_with("agent-") {
        return None; // a subagent file has no subagents of its own on disk
    }
    Some(path.parent()?.join(session).join("subagents"))
}

/// `agent-<id>.jsonl` → `<id>`; any other transcript of `subagents/` → its stem.
fn agent_id_of_file(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    Some(name.strip_prefix("agent-").unwrap_or(name).to_string())
}

/// `acompact-*` agents are Claude Code's own context compaction, not a Task's subagent.
fn is_compaction_agent(agent: &str) -> bool {
    agent.starts_with("acompact-")
}

/// Text of a message `content`: the string itself, or the text blocks joined.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            let mut out = Vec::new();
            for b in blocks {
                match b {
                    Value::String(s) => out.push(s.clone()),
                    _ => match str_of(b, "type") {
                        Some("text") => out.push(str_of(b, "text").unwrap_or("").to_string()),
                        Some("image") => out.push("[image]".to_string()),
                        _ => {}
                    },
                }
            }
            out.join("\n")
        }
        _ => String::new(),
    }
}

/// The `functionResponse` of a result content in Gemini CLI's shape (`{callId, responseParts:
/// {functionResponse}, resultDisplay}` or `{functionResponse}`), as iFlow CLI writes it.
fn function_response(v: &Value) -> Option<&Value> {
    let o = v.as_object()?;
    o.get("functionResponse")
        .or_else(|| o.get("responseParts")?.get("functionResponse"))
        .filter(|f| f.is_object())
}

/// A Gemini-shaped result's output (`response.output`, else the response) and whether it is an
/// error (`response.error`).
fn function_output(v: &Value) -> Option<(Value, bool)> {
    let resp = function_response(v)?.get("response")?;
    if let Some(e) = resp.get("error").filter(|e| !e.is_null()) {
        // `{message}` (iFlow) or a string: the message as text.
        let m = e.get("message").filter(|m| m.is_string()).unwrap_or(e);
        return Some((m.clone(), true));
    }
    Some((resp.get("output").cloned().unwrap_or_else(|| resp.clone()), false))
}

/// A tool result's content as shown: text blocks joined into one string, a Gemini-shaped
/// response its output, other shapes kept.
fn result_content(v: Option<&Value>) -> Option<Value> {
    let v = v?;
    if let Some((out, _)) = function_output(v) {
        return Some(out);
    }
    match v {
        Value::Array(blocks) if blocks.iter().all(|b| str_of(b, "type") == Some("text")) => {
            Some(Value::String(content_text(Some(v))))
        }
        other => Some(other.clone()),
    }
}

/// A record without the envelope fields every line repeats.
fn rest_of(v: &Value, skip: &[&str]) -> Value {
    let mut m = Map::new();
    if let Some(o) = v.as_object() {
        for (k, x) in o {
            if !ENVELOPE.contains(&k.as_str()) && !skip.contains(&k.as_str()) && !x.is_null() {
                m.insert(k.clone(), x.clone());
            }
        }
    }
    Value::Object(m)
}

/// `agentId: a0ad4f44` in a Task result's text.
fn agent_id_in_text(s: &str) -> Option<String> {
    let i = s.find("agentId: ")?;
    let id: String = s[i + 9..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    (!id.is_empty()).then_some(id)
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

/// Where a file's events go and what the reader remembers about that file.
struct FileState {
    file: u16,
    /// The subagent's own container event (subagent files, matched sidechains).
    container: Option<u32>,
    /// The agent id of a subagent file.
    agent: Option<String>,
    /// Time of the previous record: an API request starts when its input was written.
    prev_ts: Option<i64>,
    /// The first prompt of a subagent file (to match it to its Task call).
    first_prompt: Option<String>,
    /// The last `api-request` record not yet answered: the next response's request (its
    /// line and time).
    request: Option<(Origin, Option<i64>)>,
}

impl FileState {
    fn new(file: u16, agent: Option<String>) -> FileState {
        FileState {
            file,
            container: None,
            agent,
            prev_ts: None,
            first_prompt: None,
            request: None,
        }
    }
}

/// What a run is called: the user's own title first, then Claude Code's, then the prompt.
#[derive(Default)]
struct Titles {
    custom: Option<String>,
    summary: Option<String>,
    ai: Option<String>,
    prompt: Option<String>,
}

impl Titles {
    fn best(&self) -> Option<&str> {
        self.custom
            .as_deref()
            .or(self.summary.as_deref())
            .or(self.ai.as_deref())
            .or(self.prompt.as_deref())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    Nothing,
    Prompt,
    Reply,
    Error,
}

/// A Task/Agent tool call that may have started a subagent.
struct TaskCall {
    event: u32,
    prompt: String,
    claimed: bool,
}

/// The state of one session (main file and its subagent files).
struct Session {
    /// The format id of the trace (`claude-code`, or a format on this reader: `iflow`).
    format: &'static str,
    /// The session's run event (root of the tree).
    root: Option<u32>,
    /// LLM calls and tool calls are found by their id in the trace's own id index (message.id,
    /// tool_use id): no second map of every id. These hold only the exceptions, keys whose
    /// first event in the trace is not the call (an id given twice, or to another event).
    llm_other: HashMap<String, u32>,
    tools_other: HashMap<String, u32>,
    /// Tool calls still waiting for their result.
    pending: usize,
    /// assistant record uuid → its tool_use blocks that have no id, in order.
    idless: HashMap<String, Vec<u32>>,
    /// uuid of a record in a matched sidechain → the sidechain's container (old transcripts
    /// wrote subagent lines into the main file with `isSidechain`).
    sidechain_of: HashMap<String, u32>,
    tasks: Vec<TaskCall>,
    /// agent id → the Task call that started it.
    agent_task: HashMap<String, u32>,
    titles: Titles,
    last: Last,
    first_ts: Option<i64>,
    last_ts: Option<i64>,
    model: Option<String>,
    /// The `shapeHash`es of the request shapes stored (each once, as an event).
    shapes: HashSet<String>,
    /// The last LLM call and hashes of the text and thinking blocks read under it.
    blocks: (u32, Vec<u64>),
    /// Every run attribute read off the records' envelopes (sessionId, cwd, ...) is set.
    attrs_done: bool,
    attrs_seen: u32,
}

impl Session {
    /// The LLM call of a response key (the first made with it).
    fn llm(&self, t: &Trace, key: &str) -> Option<u32> {
        if let Some(&i) = self.llm_other.get(key) {
            return Some(i);
        }
        t.find(key).filter(|&i| t.event(i).kind == EventKind::LlmCall)
    }

    /// The tool call of a tool_use id (the last made with it).
    fn tool(&self, t: &Trace, id: &str) -> Option<u32> {
        if let Some(&i) = self.tools_other.get(id) {
            return Some(i);
        }
        t.find(id).filter(|&i| t.event(i).kind == EventKind::ToolCall)
    }

    /// Whether `block` was already read under `llm` (a record written twice). Only the blocks
    /// of the last LLM call are remembered: a copy follows its original. A block is known by
    /// its length and its two ends (hashing a long text whole on every line would cost what
    /// reading it does).
    fn repeated(&mut self, llm: u32, block: &[u8]) -> bool {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        block.len().hash(&mut h);
        block[..block.len().min(256)].hash(&mut h);
        block[block.len().saturating_sub(64)..].hash(&mut h);
        let h = h.finish();
        if self.blocks.0 != llm {
            self.blocks = (llm, Vec::new());
        }
        if self.blocks.1.contains(&h) {
            return true;
        }
        if self.blocks.1.len() < 256 {
            self.blocks.1.push(h);
        }
        false
    }

    /// A call that was pending got its answer.
    fn answered(&mut self, t: &mut Trace, call: u32, status: Status) {
        let e = t.event_mut(call);
        if e.status == Status::Pending && self.pending > 0 {
            self.pending -= 1;
        }
        e.status = status;
    }
}

/// The line parser of a session file; it also reads the session's subagent files.
pub struct Parser {
    main: FileState,
    s: Session,
    sub_dir: Option<PathBuf>,
    subs: Vec<SubFile>,
}

struct SubFile {
    path: PathBuf,
    reader: JsonlReader,
    state: FileState,
}

impl Parser {
    pub fn new(path: &Path) -> Parser {
        Parser::with_format(path, "claude-code")
    }

    /// A parser whose trace is of the format `format` (one that writes Claude-shaped records).
    pub fn with_format(path: &Path, format: &'static str) -> Parser {
        Parser {
            main: FileState::new(0, None),
            s: Session {
                format,
                root: None,
                llm_other: HashMap::new(),
                tools_other: HashMap::new(),
                pending: 0,
                idless: HashMap::new(),
                sidechain_of: HashMap::new(),
                tasks: Vec::new(),
                agent_task: HashMap::new(),
                titles: Titles::default(),
                last: Last::Nothing,
                first_ts: None,
                last_ts: None,
                model: None,
                shapes: HashSet::new(),
                blocks: (NO_PARENT, Vec::new()),
                attrs_done: false,
                attrs_seen: 0,
            },
            sub_dir: subagent_dir(path),
            subs: Vec::new(),
        }
    }

    /// Read what is new in the session's subagent files (found again at every flush, so
    /// subagents started while the session is followed appear too).
    fn read_subagents(&mut self, sink: &mut Sink) {
        let Some(dir) = self.sub_dir.as_ref().filter(|d| d.is_dir()) else {
            return;
        };
        if let Ok(rd) = std::fs::read_dir(dir) {
            let mut found: Vec<PathBuf> = rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    // Every transcript there belongs to the session, Claude Code's own
                    // context-compaction agents (`agent-acompact-*`) too: their tokens count.
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.ends_with(".jsonl") && !n.starts_with('.'))
                        && p.is_file()
                })
                .filter(|p| !self.subs.iter().any(|s| s.path == *p))
                .collect();
            found.sort();
            for p in found.into_iter().take(10_000usize.saturating_sub(self.subs.len())) {
                let Some(ti) = self.ensure_trace(sink) else { return };
                let file = sink.traces[ti].add_file(p.clone());
                let agent = agent_id_of_file(&p);
                self.subs.push(SubFile {
                    reader: JsonlReader::new(&p),
                    state: FileState::new(file, agent),
                    path: p,
                });
            }
        }
        for sub in &mut self.subs {
            if std::fs::metadata(&sub.path).is_ok_and(|m| m.len() < sub.reader.offset()) {
                continue; // a subagent file that shrank: keep what was read
            }
            // Diagnostics name the subagent file while it is read.
            let main_path = std::mem::replace(&mut sink.path, sub.path.clone());
            let mut w = InFile {
                s: &mut self.s,
                fs: &mut sub.state,
            };
            if let Err(e) = sub.reader.read_available(&mut w, sink) {
                sink.warning(None, format!("subagent transcript: {e}"));
            }
            sink.path = main_path;
        }
    }

    fn ensure_trace(&mut self, sink: &mut Sink) -> Option<usize> {
        ensure_trace(&mut self.s, sink)
    }

    /// Hang subagent containers under the Task call that started them, once it is known.
    fn match_subagents(&mut self, sink: &mut Sink) {
        let Some(t) = sink.traces.first_mut() else { return };
        for sub in &mut self.subs {
            let Some(c) = sub.state.container else { continue };
            let root = self.s.root.unwrap_or(NO_PARENT);
            if t.event(c).parent != root && t.event(c).parent != NO_PARENT {
                continue; // already under its Task call
            }
            if sub.state.agent.as_deref().is_some_and(is_compaction_agent) {
                continue; // no Task started it: it stays under the run
            }
            let by_id = sub.state.agent.as_ref().and_then(|a| self.s.agent_task.get(a)).copied();
            let task = by_id.or_else(|| {
                let prompt = sub.state.first_prompt.as_deref()?.trim();
                let tc = self
                    .s
                    .tasks
                    .iter_mut()
                    .find(|tc| !tc.claimed && !prompt.is_empty() && tc.prompt.trim() == prompt)?;
                tc.claimed = true;
                Some(tc.event)
            });
            if let Some(task) = task {
                if let Some(tc) = self.s.tasks.iter_mut().find(|tc| tc.event == task) {
                    tc.claimed = true;
                }
                t.set_parent(c, task);
            }
        }
    }

    /// Settle what the records so far say: run status, name, times.
    fn settle_run(&mut self, sink: &mut Sink) {
        let (Some(t), Some(root)) = (sink.traces.first_mut(), self.s.root) else {
            return;
        };
        let pending = self.s.pending > 0;
        // A transcript has no end marker: a tool call still waiting for its result means the
        // session is running (or was cut off there); otherwise the last record decides.
        let status = if pending {
            RunStatus::Running
        } else {
            match self.s.last {
                Last::Error => RunStatus::Error,
                Last::Reply => RunStatus::Ok,
                Last::Prompt | Last::Nothing => RunStatus::Unknown,
            }
        };
        t.meta.status = status;
        t.meta.start = self.s.first_ts;
        t.meta.end = self.s.last_ts;
        t.meta.model = self.s.model.clone();
        if let Some(name) = self.s.titles.best() {
            let name = one_line(name, 100);
            if t.meta.name.as_deref() != Some(&name) {
                t.meta.name = Some(name.clone());
                let r = t.strings.intern(&name);
                t.event_mut(root).name = r;
            }
        }
        // A subagent's container spans its file and shares the fate of its Task call.
        for sub in &self.subs {
            let Some(c) = sub.state.container else { continue };
            let parent = t.event(c).parent;
            let status = if parent != root && parent != NO_PARENT {
                t.event(parent).status
            } else {
                Status::Unknown
            };
            let e = t.event_mut(c);
            e.status = status;
            if let (Some(a), Some(b)) = (e.start.get(), sub.state.prev_ts) {
                e.duration = Some(b.saturating_sub(a).max(0)).into();
            }
        }
        let e = t.event_mut(root);
        e.start = self.s.first_ts.into();
        e.duration = match (self.s.first_ts, self.s.last_ts) {
            (Some(a), Some(b)) if b >= a => Some(b.saturating_sub(a)).into(),
            _ => None.into(),
        };
        e.status = status.event_status();
    }
}

fn ensure_trace(s: &mut Session, sink: &mut Sink) -> Option<usize> {
    if s.root.is_some() {
        return Some(0);
    }
    let mut t = Trace::new(RunMeta {
        id: stem(&sink.path),
        format: s.format,
        source: sink.path.clone(),
        ..Default::default()
    });
    let file = t.add_file(sink.path.clone());
    let root = t.add(NewEvent {
        status: Status::Unknown,
        origin: Origin {
            file,
            ..Default::default()
        },
        ..NewEvent::new(EventKind::Run, "session")
    });
    s.root = Some(root);
    Some(sink.push_trace(t))
}

/// A file being read for the session: the main file or one subagent file.
struct InFile<'a> {
    s: &'a mut Session,
    fs: &'a mut FileState,
}

impl LineParser for InFile<'_> {
    fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        engine::one(self, line, loc, sink);
    }
    fn lines(&mut self, batch: &[(&[u8], LineLoc)], sink: &mut Sink) {
        engine::batch(self, batch, sink);
    }
    fn flush(&mut self, _sink: &mut Sink) {}
}

impl LineParser for Parser {
    fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let mut w = InFile {
            s: &mut self.s,
            fs: &mut self.main,
        };
        engine::one(&mut w, line, loc, sink);
    }

    fn lines(&mut self, batch: &[(&[u8], LineLoc)], sink: &mut Sink) {
        let mut w = InFile {
            s: &mut self.s,
            fs: &mut self.main,
        };
        engine::batch(&mut w, batch, sink);
    }

    fn holds_itself(&self) -> bool {
        true
    }

    fn settle(&mut self, sink: &mut Sink) {
        if self.s.root.is_some() {
            self.read_subagents(sink);
            self.match_subagents(sink);
            self.settle_run(sink);
        }
    }
}

impl Records for InFile<'_> {
    type Rec<'a> = Rec<'a>;

    fn skim<'a>(line: &'a [u8], slot: &mut Option<Rec<'a>>) {
        *slot = Rec::read(line);
    }

    fn apply(&mut self, rec: Option<&Rec<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let owned;
        let r = match rec {
            Some(r) => r,
            None => {
                // Not a record the skim could read: say what is wrong with it.
                let Some(v) = sink.parse::<Value>(line, loc) else {
                    return;
                };
                if !v.is_object() {
                    sink.error(loc.line, "not a JSON object");
                    return;
                }
                owned = Rec::from_value(&v, line);
                &owned
            }
        };
        record(self.s, self.fs, r, line, loc, sink);
    }

    fn prefetch(&self, ahead: &Rec<'_>, sink: &Sink) {
        // The ids its apply looks up or adds: the response's, its tool calls' and results'
        // (a uuid is added only by a prompt, a few lines in a hundred).
        let Some(t) = sink.traces.first() else { return };
        if let Some(id) = &ahead.msg_id {
            t.prefetch_id(id);
        }
        if let Content::Blocks(bs) = &ahead.content {
            for b in bs.iter().take(2) {
                if let Some(id) = b.id.as_ref().or(b.tool_use_id.as_ref()) {
                    t.prefetch_id(id);
                }
            }
        }
    }
}

/// What the skim reads of one line: the fields the index needs, typed, borrowing from the line
/// (owned only where a string had escapes, or on the serde_json path). Every field reads as
/// `str_of`/`field` read the line's `Value` before: a string that is not one is absent.
#[derive(Debug, PartialEq)]
pub(crate) struct Rec<'a> {
    ty: Option<Cow<'a, str>>,
    uuid: Option<Cow<'a, str>>,
    parent_uuid: Option<Cow<'a, str>>,
    /// `parentUuid` missing or null.
    no_parent: bool,
    sidechain: bool,
    ts: Option<i64>,
    /// sessionId, cwd, version, gitBranch.
    attrs: [Option<Cow<'a, str>>; 4],
    is_meta: bool,
    compact: bool,
    /// `isApiErrorMessage: true`.
    api_error: bool,
    /// `error` present and not null.
    has_error: bool,
    /// `isAbortedMidStream: true` or `errorDetails` present.
    aborted: bool,
    /// `toolUseResult` present and not null, and the `agentId` it names.
    tool_use_result: bool,
    tur_agent: Option<Cow<'a, str>>,
    source_tool_use_id: Option<Cow<'a, str>>,
    source_assistant: Option<Cow<'a, str>>,
    subtype: Option<Cow<'a, str>>,
    level: Option<Cow<'a, str>>,
    summary: Option<Cow<'a, str>>,
    custom_title: Option<Cow<'a, str>>,
    ai_title: Option<Cow<'a, str>>,
    /// `data.agentId` and `parentToolUseID` (progress lines).
    data_agent: Option<Cow<'a, str>>,
    parent_tool_use_id: Option<Cow<'a, str>>,
    msg_id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    /// `message.usage`, when it is an object.
    usage: Option<Usage>,
    /// The top-level `costUSD` (older versions), microdollars.
    cost: Option<u64>,
    /// A `system` api_error that Claude Code follows with another attempt (`retryAttempt` of
    /// 1 or more, or a `retryInMs` wait): a retry notice, not the request's failure.
    retry: bool,
    content: Content<'a>,
}

/// `message.content`.
#[derive(Debug, PartialEq)]
enum Content<'a> {
    /// Missing, null or of another type.
    None,
    /// A string: its raw JSON (quotes included) and its text.
    Str {
        raw: &'a [u8],
        text: Cow<'a, str>,
    },
    Blocks(Vec<Block<'a>>),
}

/// One element of `message.content`.
#[derive(Debug, PartialEq)]
struct Block<'a> {
    /// Its raw JSON: the origin of the event it makes.
    raw: &'a [u8],
    /// A bare string in the array (its text in `text`).
    string: bool,
    ty: Option<Cow<'a, str>>,
    text: Option<Cow<'a, str>>,
    /// A non-empty `thinking` string.
    thinking: bool,
    id: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    tool_use_id: Option<Cow<'a, str>>,
    is_error: bool,
    /// `input.prompt` of a Task/Agent call.
    prompt: Option<Cow<'a, str>>,
    /// A server tool result whose `content.type` ends with `_error`.
    content_error: bool,
    /// The agent id a tool_result's text names (`agentId: ...`).
    agent_text: Option<String>,
}

impl<'a> Block<'a> {
    fn blank(raw: &'a [u8]) -> Block<'a> {
        Block {
            raw,
            string: false,
            ty: None,
            text: None,
            thinking: false,
            id: None,
            name: None,
            tool_use_id: None,
            is_error: false,
            prompt: None,
            content_error: false,
            agent_text: None,
        }
    }

    fn ty(&self) -> &str {
        self.ty.as_deref().unwrap_or("")
    }

    /// The name a tool call gets.
    fn tool_name(&self) -> &str {
        self.name.as_deref().filter(|x| !x.is_empty()).unwrap_or("tool")
    }

    /// What the skim leaves to serde_json because it is rare: a Task prompt, a server result's
    /// error type, an agent id named in a result's text.
    fn derive_from_raw(&mut self, input: Option<&[u8]>, content: Option<&[u8]>) {
        if matches!(self.tool_name(), "Task" | "Agent" | "task")
            && let Some(v) = input.and_then(|i| serde_json::from_slice::<Value>(i).ok())
        {
            self.prompt = str_of(&v, "prompt").map(|p| Cow::Owned(p.to_string()));
        }
        let ty = self.ty();
        if ty == "tool_result" && content.is_some_and(is_function_response) {
            let c = content.and_then(|c| serde_json::from_slice::<Value>(c).ok());
            self.is_error |= c.as_ref().and_then(function_output).is_some_and(|(_, e)| e);
        } else if ty == "tool_result" && content.is_some_and(may_name_agent) {
            let c = content.and_then(|c| serde_json::from_slice::<Value>(c).ok());
            self.agent_text = agent_text(c.as_ref());
        } else if ty.ends_with("_tool_result") {
            let c = content.and_then(|c| serde_json::from_slice::<Value>(c).ok());
            self.content_error = content_error(c.as_ref());
        }
    }

    fn from_value(b: &Value, raw: &'a [u8]) -> Block<'a> {
        let mut out = Block::blank(raw);
        let owned = |k: &str| str_of(b, k).map(|x| Cow::Owned(x.to_string()));
        if let Value::String(s) = b {
            out.string = true;
            out.text = Some(Cow::Owned(s.clone()));
            return out;
        }
        out.ty = owned("type");
        out.text = owned("text");
        out.thinking = str_of(b, "thinking").is_some_and(|x| !x.is_empty());
        out.id = owned("id");
        out.name = owned("name");
        out.tool_use_id = owned("tool_use_id");
        out.is_error = b.get("is_error") == Some(&Value::Bool(true));
        if matches!(out.tool_name(), "Task" | "Agent" | "task") {
            out.prompt = b
                .get("input")
                .and_then(|i| str_of(i, "prompt"))
                .map(|p| Cow::Owned(p.to_string()));
        }
        let ty = out.ty();
        if ty == "tool_result" {
            out.is_error |= b.get("content").and_then(function_output).is_some_and(|(_, e)| e);
            out.agent_text = agent_text(b.get("content"));
        } else if ty.ends_with("_tool_result") {
            out.content_error = content_error(b.get("content"));
        }
        out
    }
}

/// The agent id a tool result's content names in its text.
fn agent_text(content: Option<&Value>) -> Option<String> {
    match result_content(content) {
        Some(Value::String(x)) => agent_id_in_text(&x),
        _ => None,
    }
}

fn content_error(content: Option<&Value>) -> bool {
    content
        .and_then(|c| str_of(c, "type"))
        .is_some_and(|ty| ty.ends_with("_error"))
}

/// Whether a result's raw content may name an agent (`agentId: `) once decoded: it has the
/// words, or a `\u00XX` escape of one of their characters. Nearly every result has neither
/// and is not decoded at all.
/// Whether a result's raw content may be a Gemini-shaped response (iFlow CLI's).
fn is_function_response(raw: &[u8]) -> bool {
    raw.first() == Some(&b'{') && memchr::memmem::find(raw, b"\"functionResponse\"").is_some()
}

fn may_name_agent(raw: &[u8]) -> bool {
    if memchr::memmem::find(raw, b"agentId: ").is_some() {
        return true;
    }
    memchr::memmem::find_iter(raw, b"\\u00").any(|i| {
        let hex = raw.get(i + 4..i + 6).and_then(|h| std::str::from_utf8(h).ok());
        hex.and_then(|h| u8::from_str_radix(h, 16).ok())
            .is_some_and(|c| b"agentId: ".contains(&c))
    })
}

/// A string value's text: borrowed when it has no escapes.
fn unquote(raw: &[u8]) -> Option<Cow<'_, str>> {
    let inner = raw.get(1..raw.len().checked_sub(1)?)?;
    // Most are short (ids, times): a plain loop beats a call to memchr.
    if inner.iter().all(|&c| c != b'\\') {
        if inner.is_ascii() {
            // SAFETY: ASCII is valid UTF-8.
            return Some(Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(inner) }));
        }
        return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
    }
    serde_json::from_slice::<String>(raw).ok().map(Cow::Owned)
}

/// The next value as `str_of` reads it: its text if a string, else nothing (the outer None:
/// the skimmer is unsure, serde_json reads the line).
fn text<'a>(k: &mut Skim<'a>) -> Option<Option<Cow<'a, str>>> {
    if k.peek_byte()? != b'"' {
        k.skip()?;
        return Some(None);
    }
    let raw = k.value()?;
    Some(Some(unquote(raw)?))
}

/// The next value is `true`.
fn is_true(k: &mut Skim) -> Option<bool> {
    Some(k.value()? == b"true")
}

/// The next value is present and not null.
fn not_null(k: &mut Skim) -> Option<bool> {
    let null = k.is_null_next();
    k.skip()?;
    Some(!null)
}

fn raw_ts(raw: &[u8]) -> Option<i64> {
    if raw.first() == Some(&b'"')
        && let Some(Cow::Borrowed(s)) = unquote(raw)
    {
        return parse_timestamp_str(s);
    }
    serde_json::from_slice::<Value>(raw)
        .ok()
        .as_ref()
        .and_then(parse_timestamp)
}

/// A token count as `lenient_u64` reads it.
fn raw_count(raw: &[u8]) -> Option<u64> {
    if let Ok(n) = std::str::from_utf8(raw).unwrap_or("").parse::<u64>() {
        return Some(n);
    }
    serde_json::from_slice::<Value>(raw)
        .ok()
        .and_then(|v| super::lenient_u64(Some(&v)))
}

/// Anthropic's counts are already the normalized kinds: `input_tokens` excludes the cache,
/// `cache_creation_input_tokens` were written to it, `cache_read_input_tokens` read from it.
/// Thinking is billed as output and not counted apart, so reasoning stays unknown. The
/// `cache_creation` object splits the writes by cache tier (`ephemeral_5m_input_tokens`,
/// `ephemeral_1h_input_tokens`: a 1-hour write costs 2x input, a 5-minute one 1.25x); without
/// it the tier is unknown. `server_tool_use.web_search_requests` are billed per request.
/// The counts in order: input, cache write, cache read, output, 5-minute write, 1-hour
/// write, web searches.
fn usage_of(n: [Option<u64>; 7]) -> Usage {
    let [input, created, read, output, w5m, w1h, searches] = n;
    // The tier split, when written: the 1-hour part of the writes (a total missing from an
    // older line is the parts' sum).
    let created = created.or_else(|| w5m.zip(w1h).map(|(a, b)| a.saturating_add(b)));
    let cache_write_1h = match (w5m, w1h) {
        (None, None) => None,
        (_, h) => Some(h.unwrap_or(0).min(created.unwrap_or(0))),
    };
    Usage {
        input,
        output,
        cache_write: created,
        cache_read: read,
        cache_write_1h,
        web_search: searches,
        ..Default::default()
    }
}

impl<'a> Rec<'a> {
    fn blank() -> Rec<'a> {
        Rec {
            ty: None,
            uuid: None,
            parent_uuid: None,
            no_parent: true,
            sidechain: false,
            ts: None,
            attrs: [None, None, None, None],
            is_meta: false,
            compact: false,
            api_error: false,
            has_error: false,
            aborted: false,
            tool_use_result: false,
            tur_agent: None,
            source_tool_use_id: None,
            source_assistant: None,
            subtype: None,
            level: None,
            summary: None,
            custom_title: None,
            ai_title: None,
            data_agent: None,
            parent_tool_use_id: None,
            msg_id: None,
            model: None,
            usage: None,
            cost: None,
            retry: false,
            content: Content::None,
        }
    }

    /// The pure half (the engine's skim): the skimmer reads nearly every line; what it is
    /// unsure of, serde_json reads (the same record, or None and the apply says why).
    fn read(line: &'a [u8]) -> Option<Rec<'a>> {
        if let Some(r) = Rec::skim(line) {
            return Some(r);
        }
        let v: Value = serde_json::from_slice(line).ok()?;
        v.is_object().then(|| Rec::from_value(&v, line))
    }

    /// The record by the skimmer; None when it leaves the line to serde_json. As with every
    /// skimmer (see `skim`'s contract), the strings it skips are not checked for UTF-8: a
    /// payload string of invalid UTF-8 shows as unreadable when decoded, the line still loads.
    fn skim(line: &'a [u8]) -> Option<Rec<'a>> {
        let mut r = Rec::blank();
        let mut k = Skim::new(line);
        let mut seen = Seen::default();
        k.object(|k, key| {
            match key {
                b"type" => {
                    seen.first(0)?;
                    r.ty = text(k)?;
                }
                b"uuid" => {
                    seen.first(1)?;
                    r.uuid = text(k)?;
                }
                b"parentUuid" => {
                    seen.first(2)?;
                    r.no_parent = k.is_null_next();
                    r.parent_uuid = text(k)?;
                }
                b"isSidechain" => {
                    seen.first(3)?;
                    r.sidechain = is_true(k)?;
                }
                b"timestamp" => {
                    seen.first(4)?;
                    r.ts = raw_ts(k.value()?);
                }
                b"sessionId" => {
                    seen.first(5)?;
                    r.attrs[0] = text(k)?;
                }
                b"cwd" => {
                    seen.first(6)?;
                    r.attrs[1] = text(k)?;
                }
                b"version" => {
                    seen.first(7)?;
                    r.attrs[2] = text(k)?;
                }
                b"gitBranch" => {
                    seen.first(8)?;
                    r.attrs[3] = text(k)?;
                }
                b"isMeta" => {
                    seen.first(9)?;
                    r.is_meta = is_true(k)?;
                }
                b"isCompactSummary" => {
                    seen.first(10)?;
                    r.compact = is_true(k)?;
                }
                b"isApiErrorMessage" => {
                    seen.first(11)?;
                    r.api_error = is_true(k)?;
                }
                b"error" => {
                    seen.first(12)?;
                    r.has_error = not_null(k)?;
                }
                b"isAbortedMidStream" => {
                    seen.first(13)?;
                    r.aborted |= is_true(k)?;
                }
                b"errorDetails" => {
                    seen.first(14)?;
                    r.aborted |= not_null(k)?;
                }
                b"toolUseResult" => {
                    seen.first(15)?;
                    r.tool_use_result = !k.is_null_next();
                    if k.peek_byte()? == b'{' {
                        r.tur_agent = agent_field(k)?;
                    } else {
                        k.skip()?;
                    }
                }
                b"sourceToolUseID" => {
                    seen.first(16)?;
                    r.source_tool_use_id = text(k)?;
                }
                b"sourceToolAssistantUUID" => {
                    seen.first(17)?;
                    r.source_assistant = text(k)?;
                }
                b"subtype" => {
                    seen.first(18)?;
                    r.subtype = text(k)?;
                }
                b"level" => {
                    seen.first(19)?;
                    r.level = text(k)?;
                }
                b"summary" => {
                    seen.first(20)?;
                    r.summary = text(k)?;
                }
                b"customTitle" => {
                    seen.first(21)?;
                    r.custom_title = text(k)?;
                }
                b"aiTitle" => {
                    seen.first(22)?;
                    r.ai_title = text(k)?;
                }
                b"data" => {
                    seen.first(23)?;
                    if k.peek_byte()? == b'{' {
                        r.data_agent = agent_field(k)?;
                    } else {
                        k.skip()?;
                    }
                }
                b"parentToolUseID" => {
                    seen.first(24)?;
                    r.parent_tool_use_id = text(k)?;
                }
                b"costUSD" => {
                    seen.first(26)?;
                    r.cost = crate::model::micros::micros_of_raw(k.value()?);
                }
                b"retryAttempt" | b"retryInMs" => {
                    seen.first(if key == b"retryAttempt" { 27 } else { 28 })?;
                    r.retry |= raw_count(k.value()?).is_some_and(|n| n > 0);
                }
                b"message" => {
                    seen.first(25)?;
                    if k.peek_byte()? == b'{' {
                        skim_message(k, line, &mut r)?;
                    } else {
                        k.skip()?;
                    }
                }
                _ => k.skip()?,
            }
            Some(())
        })?;
        k.at_end().then_some(r)
    }

    /// The record from the line's `Value` (the serde_json path), with the byte ranges of the
    /// content blocks found by serde_json too.
    fn from_value(v: &Value, line: &'a [u8]) -> Rec<'a> {
        let owned = |v: &Value, k: &str| str_of(v, k).map(|x| Cow::Owned(x.to_string()));
        let is_true = |k: &str| v.get(k) == Some(&Value::Bool(true));
        let mut r = Rec::blank();
        r.ty = owned(v, "type");
        r.uuid = owned(v, "uuid");
        r.parent_uuid = owned(v, "parentUuid");
        r.no_parent = v.get("parentUuid").is_none_or(Value::is_null);
        r.sidechain = is_true("isSidechain");
        r.ts = v.get("timestamp").and_then(parse_timestamp);
        for (i, k) in ["sessionId", "cwd", "version", "gitBranch"].into_iter().enumerate() {
            r.attrs[i] = owned(v, k);
        }
        r.is_meta = is_true("isMeta");
        r.compact = is_true("isCompactSummary");
        r.api_error = is_true("isApiErrorMessage");
        r.has_error = field(v, "error").is_some();
        r.aborted = is_true("isAbortedMidStream") || field(v, "errorDetails").is_some();
        r.tool_use_result = field(v, "toolUseResult").is_some();
        r.tur_agent = v.get("toolUseResult").and_then(|x| owned(x, "agentId"));
        r.source_tool_use_id = owned(v, "sourceToolUseID");
        r.source_assistant = owned(v, "sourceToolAssistantUUID");
        r.subtype = owned(v, "subtype");
        r.level = owned(v, "level");
        r.summary = owned(v, "summary");
        r.custom_title = owned(v, "customTitle");
        r.ai_title = owned(v, "aiTitle");
        r.data_agent = v.get("data").and_then(|d| owned(d, "agentId"));
        r.parent_tool_use_id = owned(v, "parentToolUseID");
        r.cost = v.get("costUSD").and_then(crate::model::micros::micros_of_json);
        r.retry = ["retryAttempt", "retryInMs"]
            .iter()
            .any(|k| super::lenient_u64(v.get(*k)).is_some_and(|n| n > 0));
        let msg = v.get("message");
        if let Some(m) = msg {
            r.msg_id = owned(m, "id");
            r.model = owned(m, "model");
            if let Some(u) = m.get("usage").filter(|u| u.is_object()) {
                let n = |k: &str| super::lenient_u64(u.get(k));
                let n2 = |o: &str, k: &str| super::lenient_u64(u.get(o).and_then(|o| o.get(k)));
                r.usage = Some(usage_of([
                    n("input_tokens"),
                    n("cache_creation_input_tokens"),
                    n("cache_read_input_tokens"),
                    n("output_tokens"),
                    n2("cache_creation", "ephemeral_5m_input_tokens"),
                    n2("cache_creation", "ephemeral_1h_input_tokens"),
                    n2("server_tool_use", "web_search_requests"),
                ]));
            }
        }
        let ranges = content_ranges(line);
        r.content = match msg.and_then(|m| m.get("content")) {
            Some(Value::String(s)) => Content::Str {
                raw: ranges.as_ref().and_then(|r| r.first().copied()).unwrap_or(line),
                text: Cow::Owned(s.clone()),
            },
            Some(Value::Array(a)) => Content::Blocks(
                a.iter()
                    .enumerate()
                    .map(|(i, b)| {
                        let raw = ranges.as_ref().and_then(|r| r.get(i).copied()).unwrap_or(line);
                        Block::from_value(b, raw)
                    })
                    .collect(),
            ),
            _ => Content::None,
        };
        r
    }

    fn blocks(&self) -> &[Block<'a>] {
        match &self.content {
            Content::Blocks(b) => b,
            _ => &[],
        }
    }

    /// The text of `message.content` (as `content_text` reads it).
    fn text(&self) -> Cow<'_, str> {
        match &self.content {
            Content::None => Cow::Borrowed(""),
            Content::Str { text, .. } => Cow::Borrowed(text),
            Content::Blocks(bs) => {
                let mut parts = bs.iter().filter_map(|b| match b.ty() {
                    _ if b.string => b.text.as_deref(),
                    "text" => Some(b.text.as_deref().unwrap_or("")),
                    "image" => Some("[image]"),
                    _ => None,
                });
                let Some(first) = parts.next() else {
                    return Cow::Borrowed("");
                };
                match parts.next() {
                    None => Cow::Borrowed(first),
                    Some(second) => {
                        let mut out = format!("{first}\n{second}");
                        for p in parts {
                            out.push('\n');
                            out.push_str(p);
                        }
                        Cow::Owned(out)
                    }
                }
            }
        }
    }
}

/// The raw text of each element of `message.content` (the string itself when it is one), by
/// serde_json: its maps keep the last of a repeated key, as `Value` does.
fn content_ranges(line: &[u8]) -> Option<Vec<&[u8]>> {
    use serde_json::value::RawValue;
    type Raws<'a> = HashMap<Cow<'a, str>, &'a RawValue>;
    let top: Raws = serde_json::from_slice(line).ok()?;
    let msg: Raws = serde_json::from_str(top.get("message")?.get()).ok()?;
    let content = msg.get("content")?.get();
    if content.starts_with('"') {
        return Some(vec![content.as_bytes()]);
    }
    let items: Vec<&RawValue> = serde_json::from_str(content).ok()?;
    Some(items.into_iter().map(|r| r.get().as_bytes()).collect())
}

/// An object's `agentId` string; every other field skipped.
fn agent_field<'a>(k: &mut Skim<'a>) -> Option<Option<Cow<'a, str>>> {
    let mut out = None;
    let mut seen = Seen::default();
    k.object(|k, key| {
        if key == b"agentId" {
            seen.first(0)?;
            out = text(k)?;
        } else {
            k.skip()?;
        }
        Some(())
    })?;
    Some(out)
}

fn skim_message<'a>(k: &mut Skim<'a>, line: &'a [u8], r: &mut Rec<'a>) -> Option<()> {
    let mut seen = Seen::default();
    k.object(|k, key| {
        match key {
            b"id" => {
                seen.first(0)?;
                r.msg_id = text(k)?;
            }
            b"model" => {
                seen.first(1)?;
                r.model = text(k)?;
            }
            b"usage" => {
                seen.first(2)?;
                r.usage = if k.peek_byte()? == b'{' {
                    Some(skim_usage(k)?)
                } else {
                    k.skip()?;
                    None
                };
            }
            b"content" => {
                seen.first(3)?;
                r.content = match k.peek_byte()? {
                    b'"' => {
                        let raw = k.value()?;
                        Content::Str {
                            raw,
                            text: unquote(raw)?,
                        }
                    }
                    b'[' => Content::Blocks(skim_blocks(k, line)?),
                    _ => {
                        k.skip()?;
                        Content::None
                    }
                };
            }
            _ => k.skip()?,
        }
        Some(())
    })
}

fn skim_usage(k: &mut Skim) -> Option<Usage> {
    let mut n: [Option<u64>; 7] = [None; 7];
    let mut seen = Seen::default();
    k.object(|k, key| {
        let i = match key {
            b"input_tokens" => 0,
            b"cache_creation_input_tokens" => 1,
            b"cache_read_input_tokens" => 2,
            b"output_tokens" => 3,
            // Objects whose counts serde reads with `get` (anything else: none); a key given
            // twice is left to serde (the skim gives up).
            b"cache_creation" | b"server_tool_use" => {
                let (at, inner): (u32, &[(&[u8], usize)]) = if key == b"cache_creation" {
                    (
                        7,
                        &[(b"ephemeral_5m_input_tokens", 4), (b"ephemeral_1h_input_tokens", 5)],
                    )
                } else {
                    (8, &[(b"web_search_requests", 6)])
                };
                seen.first(at)?;
                if k.peek_byte()? != b'{' {
                    return k.skip();
                }
                let mut seen_inner = Seen::default();
                return k.object(|k, key| match inner.iter().find(|(name, _)| *name == key) {
                    Some(&(_, i)) => {
                        seen_inner.first(i as u32)?;
                        n[i] = raw_count(k.value()?);
                        Some(())
                    }
                    None => k.skip(),
                });
            }
            _ => return k.skip(),
        };
        seen.first(i as u32)?;
        n[i] = raw_count(k.value()?);
        Some(())
    })?;
    Some(usage_of(n))
}

fn skim_blocks<'a>(k: &mut Skim<'a>, line: &'a [u8]) -> Option<Vec<Block<'a>>> {
    let mut out = Vec::new();
    k.array(|k, _| {
        let first = k.peek_byte()?;
        let start = k.pos();
        let mut b = Block::blank(&[]);
        let (mut input, mut content) = (None, None);
        match first {
            b'{' => {
                let mut seen = Seen::default();
                k.object(|k, key| {
                    match key {
                        b"type" => {
                            seen.first(0)?;
                            b.ty = text(k)?;
                        }
                        b"text" => {
                            seen.first(1)?;
                            b.text = text(k)?;
                        }
                        b"thinking" => {
                            seen.first(2)?;
                            let raw = k.value()?;
                            b.thinking = raw.first() == Some(&b'"') && raw.len() > 2;
                        }
                        b"id" => {
                            seen.first(3)?;
                            b.id = text(k)?;
                        }
                        b"name" => {
                            seen.first(4)?;
                            b.name = text(k)?;
                        }
                        b"tool_use_id" => {
                            seen.first(5)?;
                            b.tool_use_id = text(k)?;
                        }
                        b"is_error" => {
                            seen.first(6)?;
                            b.is_error = is_true(k)?;
                        }
                        b"input" => {
                            seen.first(7)?;
                            input = Some(k.value()?);
                        }
                        b"content" => {
                            seen.first(8)?;
                            content = Some(k.value()?);
                        }
                        _ => k.skip()?,
                    }
                    Some(())
                })?;
            }
            b'"' => {
                let raw = k.value()?;
                b.string = true;
                b.text = Some(unquote(raw)?);
            }
            _ => k.skip()?,
        }
        b.raw = line.get(start..k.pos())?;
        b.derive_from_raw(input, content);
        out.push(b);
        Some(())
    })?;
    Some(out)
}

/// Where one record's events go.
struct At {
    ti: usize,
    parent: u32,
    origin: Origin,
    loc: LineLoc,
    file: u16,
}

/// One record of a session or subagent file.
fn record(s: &mut Session, fs: &mut FileState, r: &Rec, line: &[u8], loc: LineLoc, sink: &mut Sink) {
    let Some(ti) = ensure_trace(s, sink) else { return };
    sink.touch(ti);
    let ts = r.ts;
    if let Some(x) = ts {
        s.first_ts = Some(s.first_ts.map_or(x, |f| f.min(x)));
        s.last_ts = Some(s.last_ts.map_or(x, |l| l.max(x)));
    }
    let ty = r.ty.as_deref().unwrap_or("");
    if !s.attrs_done {
        s.attrs_seen += 1;
        // Each from the first record that has it (the first records, queue operations and
        // the like, may have the session id alone).
        let t = &mut sink.traces[ti];
        let mut done = true;
        for (k, x) in ["sessionId", "cwd", "version", "gitBranch"].into_iter().zip(&r.attrs) {
            if t.meta.attributes.iter().any(|(a, _)| a == k) {
                continue;
            }
            match x.as_deref().filter(|x| !x.is_empty()) {
                Some(x) => t.meta.attributes.push((k.to_string(), Value::String(x.to_string()))),
                None => done = false,
            }
        }
        // A session outside git never says its branch: the first records are enough.
        s.attrs_done = done || s.attrs_seen >= 64;
    }
    let parent = parent_of(s, fs, r, sink, ti);
    let at = At {
        ti,
        parent,
        origin: loc.origin(fs.file),
        loc,
        file: fs.file,
    };
    match ty {
        "user" => user(s, fs, r, line, &at, sink),
        "assistant" => assistant(s, fs, r, line, &at, sink),
        "system" => system(s, r, line, &at, sink),
        "summary" => {
            if let Some(x) = r.summary.as_deref().filter(|x| !x.trim().is_empty()) {
                s.titles.summary.get_or_insert_with(|| x.to_string());
            }
        }
        "custom-title" => {
            if let Some(x) = r.custom_title.as_deref().filter(|x| !x.trim().is_empty()) {
                s.titles.custom = Some(x.to_string());
            }
        }
        "ai-title" => {
            if let Some(x) = r.ai_title.as_deref().filter(|x| !x.trim().is_empty()) {
                s.titles.ai = Some(x.to_string());
            }
        }
        "progress" => {
            // A subagent's progress names its agent id and the Task call that runs it.
            if let (Some(agent), Some(tool)) = (r.data_agent.as_deref(), r.parent_tool_use_id.as_deref())
                && let Some(task) = s.tool(&sink.traces[ti], tool)
            {
                s.agent_task.entry(agent.to_string()).or_insert(task);
            }
        }
        "api-request-shape" => request_shape(s, r, line, &at, sink),
        // Answered by the next response (an attempt retried is replaced by the next one).
        "api-request" => fs.request = Some((at.origin, r.ts)),
        "cost-state" | "tools-used" => run_record(ty, line, &mut sink.traces[ti]),
        _ if QUIET_TYPES.contains(&ty) => {}
        "" => sink.error(loc.line, "record has no `type`; skipped"),
        other => {
            // Drift (formats/mod.rs): counted, and shown when it carries text.
            sink.skip(other);
            let v = serde_json::from_slice::<Value>(line).ok();
            if v.as_ref().and_then(super::drift_text).is_some() {
                sink.traces[ti].add(NewEvent {
                    id: r.uuid.as_deref(),
                    parent: Parent::Index(at.parent),
                    start: r.ts,
                    status: Status::Ok,
                    origin: at.origin,
                    payload: PayloadRef::Deferred,
                    ..NewEvent::new(EventKind::Other, other)
                });
            }
        }
    }
    if ts.is_some() {
        fs.prev_ts = ts;
    }
}

/// The event a record's events hang under: the run, a subagent container, or a sidechain.
fn parent_of(s: &mut Session, fs: &mut FileState, r: &Rec, sink: &mut Sink, ti: usize) -> u32 {
    let root = s.root.unwrap_or(NO_PARENT);
    let t = &mut sink.traces[ti];
    if fs.agent.is_some() {
        // A subagent file: everything goes into its container.
        if fs.container.is_none() {
            let agent = fs.agent.as_deref().unwrap_or("");
            let name = if is_compaction_agent(agent) {
                format!("compaction agent {agent}")
            } else {
                format!("agent {agent}")
            };
            let c = t.add(NewEvent {
                parent: Parent::Index(root),
                start: r.ts,
                status: Status::Unknown,
                origin: Origin {
                    file: fs.file,
                    ..Default::default()
                },
                ..NewEvent::new(EventKind::Run, &name)
            });
            fs.container = Some(c);
        }
        return fs.container.unwrap_or(root);
    }
    // The main file: sidechain records follow their parentUuid into a matched sidechain.
    let uuid = r.uuid.as_deref();
    if s.sidechain_of.is_empty() && !r.sidechain {
        return root; // the common case: no sidechain anywhere
    }
    if let Some(&c) = r.parent_uuid.as_deref().and_then(|p| s.sidechain_of.get(p)) {
        if let Some(u) = uuid {
            s.sidechain_of.insert(u.to_string(), c);
        }
        return c;
    }
    // Claude Code began a sidechain with a record of no parent; iFlow CLI's follows the record
    // before it (its task's prompt still tells which call it is).
    let starts = r.no_parent || s.format != "claude-code";
    if r.sidechain && starts && r.ty.as_deref() == Some("user") {
        let prompt = r.text();
        if let Some(tc) = s
            .tasks
            .iter_mut()
            .find(|tc| !tc.claimed && !prompt.trim().is_empty() && tc.prompt.trim() == prompt.trim())
        {
            tc.claimed = true;
            let c = t.add(NewEvent {
                parent: Parent::Index(tc.event),
                start: r.ts,
                origin: Origin {
                    file: fs.file,
                    ..Default::default()
                },
                ..NewEvent::new(EventKind::Run, "sidechain")
            });
            if let Some(u) = uuid {
                s.sidechain_of.insert(u.to_string(), c);
            }
            return c;
        }
    }
    root
}

fn user(s: &mut Session, fs: &mut FileState, r: &Rec, line: &[u8], at: &At, sink: &mut Sink) {
    let blocks = r.blocks();
    let results: Vec<&Block> = blocks.iter().filter(|b| b.ty() == "tool_result").collect();
    for b in &results {
        tool_result(s, r, b, &results, line, at, sink);
    }
    // What is left is the prompt (a string, or text/image blocks).
    let text = match &r.content {
        Content::Str { text, .. } if !text.trim().is_empty() => Cow::Borrowed(text.as_ref()),
        Content::Blocks(bs) if results.len() < bs.len() => r.text(),
        _ => return,
    };
    let name = if r.compact {
        "compact summary"
    } else if r.is_meta {
        "user (meta)"
    } else {
        "user"
    };
    sink.traces[at.ti].add(NewEvent {
        id: r.uuid.as_deref(),
        parent: Parent::Index(at.parent),
        start: r.ts,
        status: Status::Ok,
        origin: at.origin,
        payload: PayloadRef::Deferred,
        ..NewEvent::new(EventKind::Message(Role::User), name)
    });
    let real_prompt = !r.is_meta && !r.compact && {
        let t = text.trim_start();
        !t.starts_with('<') && !t.starts_with('[') && !t.is_empty()
    };
    if real_prompt {
        if fs.agent.is_none() && fs.container.is_none() && s.titles.prompt.is_none() {
            s.titles.prompt = Some(text.to_string());
        }
        s.last = Last::Prompt;
    }
    if fs.first_prompt.is_none() && !text.trim().is_empty() {
        fs.first_prompt = Some(text.into_owned());
    }
}

/// Join a tool_result block to its call.
fn tool_result(s: &mut Session, r: &Rec, b: &Block, results: &[&Block], line: &[u8], at: &At, sink: &mut Sink) {
    let t = &mut sink.traces[at.ti];
    let pending = |t: &Trace, i: u32| t.event(i).status == Status::Pending;
    let by_id = b
        .tool_use_id
        .as_deref()
        .filter(|x| !x.is_empty())
        .or(r.source_tool_use_id.as_deref())
        .and_then(|id| s.tool(t, id))
        .filter(|&i| pending(t, i));
    let call = by_id.or_else(|| {
        // No usable id: the first unanswered id-less call of the assistant record it answers.
        let asst = r.source_assistant.as_deref().or(r.parent_uuid.as_deref())?;
        let list = s.idless.get(asst)?;
        list.iter().copied().find(|&i| pending(t, i))
    });
    let single = results.len() == 1;
    let status = if b.is_error { Status::Error } else { Status::Ok };
    // The result's payload is read from its whole line (the line's toolUseResult and
    // toolDenialKind are part of it) when the block can be found again in it: the only
    // result, or the only one with the call's id. Otherwise from the block alone.
    let block_origin = engine::sub_origin(at.loc, at.file, line, b.raw);
    let Some(call) = call else {
        // The result of a call already answered, written again with its record: read once.
        let again = b
            .tool_use_id
            .as_deref()
            .filter(|x| !x.is_empty())
            .and_then(|id| s.tool(t, id));
        if again.is_some_and(|i| t.event(i).status != Status::Pending) {
            return;
        }
        sink.warning(
            Some(at.loc.line),
            format!(
                "tool_result for {} matches no unanswered tool_use; shown on its own",
                b.tool_use_id
                    .as_deref()
                    .map_or("a call without id".to_string(), |x| format!("{x:?}"))
            ),
        );
        let t = &mut sink.traces[at.ti];
        t.add(NewEvent {
            parent: Parent::Index(at.parent),
            start: r.ts,
            status,
            origin: if single { at.origin } else { block_origin },
            payload: PayloadRef::Deferred,
            ..NewEvent::new(EventKind::Message(Role::Tool), "tool_result")
        });
        return;
    };
    let found_again = single || {
        let id = t.str(t.event(call).source_id);
        !id.is_empty()
            && b.tool_use_id.as_deref() == Some(id)
            && results.iter().filter(|x| x.tool_use_id.as_deref() == Some(id)).count() == 1
    };
    // The Task/Agent result names the subagent it ran.
    let agent = if single { r.tur_agent.as_deref() } else { None }
        .map(str::to_string)
        .or_else(|| b.agent_text.clone());
    if let Some(a) = agent {
        s.agent_task.entry(a).or_insert(call);
    }
    s.answered(t, call, status);
    let e = t.event_mut(call);
    e.origin2 = Some(Box::new(if found_again { at.origin } else { block_origin }));
    if let (Some(a), Some(b)) = (e.start.get(), r.ts) {
        e.duration = Some(b.saturating_sub(a).max(0)).into();
    }
}

fn assistant(s: &mut Session, fs: &mut FileState, r: &Rec, line: &[u8], at: &At, sink: &mut Sink) {
    let model = r.model.as_deref().filter(|m| !m.is_empty());
    let api_error = r.api_error || (model == Some("<synthetic>") && r.has_error);
    let t = &mut sink.traces[at.ti];
    if api_error {
        let e = t.add(NewEvent {
            id: r.uuid.as_deref(),
            parent: Parent::Index(at.parent),
            start: r.ts,
            status: Status::Error,
            origin: at.origin,
            payload: PayloadRef::Deferred,
            ..NewEvent::new(EventKind::Error, "api error")
        });
        // The request that failed (after its retries), when it was recorded (the error is the
        // event above: this one is not counted again).
        if let Some((origin, ts)) = fs.request.take() {
            t.add(NewEvent {
                parent: Parent::Index(e),
                start: ts,
                status: Status::Unknown,
                origin,
                payload: PayloadRef::Deferred,
                ..NewEvent::new(EventKind::Other, REQUEST)
            });
        }
        s.last = Last::Error;
        return;
    }
    if let Some(m) = model
        && s.model.as_deref() != Some(m)
    {
        s.model = Some(m.to_string());
    }
    // One API response, several lines: they share message.id.
    let line_key;
    let key: &str = match r.msg_id.as_deref().filter(|x| !x.is_empty()).or(r.uuid.as_deref()) {
        Some(k) => k,
        None => {
            line_key = format!("line {}", at.loc.line);
            &line_key
        }
    };
    let llm = match s.llm(t, key) {
        Some(i) => i,
        None => {
            let start = fs.prev_ts.filter(|p| r.ts.is_none_or(|x| *p <= x)).or(r.ts);
            let i = t.add(NewEvent {
                id: Some(key),
                parent: Parent::Index(at.parent),
                start,
                status: Status::Ok,
                model,
                origin: at.origin,
                payload: PayloadRef::Deferred,
                ..NewEvent::new(EventKind::LlmCall, model.unwrap_or("assistant"))
            });
            if t.find(key) != Some(i) && s.llm_other.len() < 1_000_000 {
                s.llm_other.entry(key.to_string()).or_insert(i);
            }
            if let Some((origin, ts)) = fs.request.take() {
                // Its request: the parameters, and the shape (system prompt and tools) sent.
                t.add(NewEvent {
                    parent: Parent::Index(i),
                    start: ts,
                    status: Status::Ok,
                    origin,
                    payload: PayloadRef::Deferred,
                    ..NewEvent::new(EventKind::Other, REQUEST)
                });
            }
            i
        }
    };
    // The last line of a response carries the final usage and stop reason.
    let e = t.event_mut(llm);
    if let (Some(a), Some(b)) = (e.start.get(), r.ts) {
        e.duration = Some(b.saturating_sub(a).max(0).max(e.duration.unwrap_or(0))).into();
    }
    if (at.origin.file, at.origin.line) != (e.origin.file, e.origin.line) {
        e.origin2 = Some(Box::new(at.origin));
    }
    let usage = match (r.usage, r.cost) {
        (Some(u), None) => Some(u),
        (u, Some(c)) => Some(Usage {
            cost: Some(c),
            ..u.unwrap_or_default()
        }),
        (None, None) => None,
    };
    if let Some(u) = usage {
        e.usage = (!u.is_empty()).then_some(u).into();
    }
    if r.aborted {
        e.status = Status::Error;
    }
    let uuid = r.uuid.as_deref().unwrap_or("");
    let mut replied = false;
    let one_text;
    let blocks: &[Block] = match &r.content {
        Content::Blocks(b) => b,
        Content::Str { raw, text } => {
            one_text = [Block {
                ty: Some(Cow::Borrowed("text")),
                text: Some(Cow::Borrowed(text.as_ref())),
                ..Block::blank(raw)
            }];
            &one_text
        }
        Content::None => &[],
    };
    for b in blocks {
        let origin = engine::sub_origin(at.loc, at.file, line, b.raw);
        let child = |kind, name: &str, id: Option<&str>, status, payload, t: &mut Trace| {
            t.add(NewEvent {
                id,
                parent: Parent::Index(llm),
                start: r.ts,
                status,
                origin,
                payload,
                ..NewEvent::new(kind, name)
            })
        };
        match b.ty() {
            "text" => {
                if b.text.as_deref().unwrap_or("").trim().is_empty() || s.repeated(llm, b.raw) {
                    continue;
                }
                let kind = EventKind::Message(Role::Assistant);
                child(kind, "assistant", None, Status::Ok, PayloadRef::Deferred, t);
                replied = true;
            }
            "thinking" | "redacted_thinking" => {
                if s.repeated(llm, b.raw) {
                    continue;
                }
                let p = if b.thinking {
                    PayloadRef::Deferred
                } else {
                    PayloadRef::None
                };
                child(EventKind::Other, "thinking", None, Status::Ok, p, t);
            }
            "tool_use" | "server_tool_use" | "mcp_tool_use" => {
                let name = b.tool_name();
                let id = b.id.as_deref().filter(|x| !x.is_empty());
                // The id's first event, looked up once: a call of it means the record was
                // written twice (Claude-shaped recorders such as iFlow write each assistant
                // record twice): one call, answered once.
                let before = id.and_then(|id| s.tools_other.get(id).copied().or_else(|| t.find(id)));
                if before.is_some_and(|e| t.event(e).kind == EventKind::ToolCall) {
                    continue;
                }
                let i = child(EventKind::ToolCall, name, id, Status::Pending, PayloadRef::Deferred, t);
                s.pending += 1;
                match id {
                    Some(id) => {
                        // Another event holds the id in the trace's index: this call is found
                        // through `tools_other`.
                        if before.is_some() {
                            s.tools_other.insert(id.to_string(), i);
                        }
                    }
                    None => s.idless.entry(uuid.to_string()).or_default().push(i),
                }
                // iFlow CLI's subagent tool is `task`.
                if matches!(name, "Task" | "Agent" | "task") {
                    s.tasks.push(TaskCall {
                        event: i,
                        prompt: b.prompt.as_deref().unwrap_or("").to_string(),
                        claimed: false,
                    });
                }
            }
            x if x.ends_with("_tool_result") => {
                // Server-side tools answer inside the same response.
                let target = b.tool_use_id.as_deref().and_then(|id| s.tool(t, id));
                match target {
                    Some(call) => {
                        let status = if b.content_error { Status::Error } else { Status::Ok };
                        s.answered(t, call, status);
                        t.event_mut(call).origin2 = Some(Box::new(origin));
                    }
                    None => {
                        child(EventKind::Other, x, None, Status::Ok, PayloadRef::Deferred, t);
                    }
                }
            }
            "" => {}
            other => {
                child(EventKind::Other, other, None, Status::Ok, PayloadRef::Deferred, t);
            }
        }
    }
    if replied || s.last != Last::Error {
        s.last = Last::Reply;
    }
}

/// The name of a request-shape event and of a request event.
const SHAPE: &str = "system prompt & tools";
const REQUEST: &str = "api request";

/// The system prompt and tool definitions sent with requests (2.1.3xx), each distinct shape
/// stored once: an event at its first appearance (searchable), which the run's detail and
/// every request that sent it show (see [`decode`]).
fn request_shape(s: &mut Session, r: &Rec, line: &[u8], at: &At, sink: &mut Sink) {
    #[derive(serde::Deserialize)]
    struct Shape<'a> {
        #[serde(borrow, rename = "shapeHash")]
        hash: Option<Cow<'a, str>>,
    }
    let Ok(Shape { hash }) = serde_json::from_slice::<Shape>(line) else {
        sink.warning(
            Some(at.loc.line),
            "api-request-shape record of an unreadable shape; skipped",
        );
        return;
    };
    let hash = hash.unwrap_or_default();
    if !s.shapes.insert(hash.to_string()) {
        return; // the same shape again (a resumed session)
    }
    let t = &mut sink.traces[at.ti];
    t.add(NewEvent {
        id: Some(hash.as_ref()).filter(|h| !h.is_empty()),
        parent: Parent::Index(at.parent),
        start: r.ts,
        status: Status::Ok,
        origin: at.origin,
        payload: PayloadRef::Deferred,
        ..NewEvent::new(EventKind::State, SHAPE)
    });
    // The run (or subagent) now has something to show in its own detail.
    if let Some(p) = t.events.get_mut(at.parent as usize)
        && p.kind == EventKind::Run
    {
        p.payload = PayloadRef::Deferred;
    }
}

/// Records about the run as a whole, the last of each kind wins: `cost-state` (Claude Code's
/// own running cost: `totalCostUSD` is kept as the run's recorded cost, beside the computed
/// one) and `tools-used` (the tools the session has used so far).
fn run_record(ty: &str, line: &[u8], t: &mut Trace) {
    let Ok(v) = serde_json::from_slice::<Value>(line) else {
        return;
    };
    let (key, value) = match ty {
        "cost-state" => {
            // Its tokens by model too, to tell where the two costs differ (`stats
            // --check-costs`) and what the transcript does not log (a compaction's call).
            if let Some(m) = v.get("modelUsage").filter(|m| m.is_object()) {
                set_attr(t, RECORDED_USAGE_ATTR, m.clone());
            }
            match v.get("totalCostUSD").filter(|c| c.is_number()) {
                Some(c) => (RECORDED_COST_ATTR, c.clone()),
                None => return,
            }
        }
        _ => match v.get("tools").filter(|x| x.is_array()) {
            Some(x) => ("toolsUsed", x.clone()),
            None => return,
        },
    };
    set_attr(t, key, value);
    if let Some(root) = t.roots.first().copied() {
        t.events[root as usize].payload = PayloadRef::Deferred;
    }
}

fn set_attr(t: &mut Trace, key: &str, value: Value) {
    match t.meta.attributes.iter_mut().find(|(k, _)| k == key) {
        Some(slot) => slot.1 = value,
        None => t.meta.attributes.push((key.to_string(), value)),
    }
}

fn system(s: &mut Session, r: &Rec, line: &[u8], at: &At, sink: &mut Sink) {
    let subtype = r.subtype.as_deref().unwrap_or("");
    let level = r.level.as_deref().unwrap_or("");
    let t = &mut sink.traces[at.ti];
    if r.retry && subtype == "api_error" {
        // Claude Code says it will try again: the attempt failed, the request has not. Its
        // error (if the retries run out) is the synthetic assistant message that follows.
        let v = serde_json::from_slice::<Value>(line).ok();
        let n = |k: &str| v.as_ref().and_then(|v| super::lenient_u64(v.get(k)));
        let name = match (n("retryAttempt"), n("maxRetries")) {
            (Some(a), Some(m)) if m > 0 => format!("api retry {a}/{m}"),
            (Some(a), _) => format!("api retry {a}"),
            _ => "api retry".to_string(),
        };
        t.add(NewEvent {
            id: r.uuid.as_deref(),
            parent: Parent::Index(at.parent),
            start: r.ts,
            status: Status::Ok,
            origin: at.origin,
            payload: PayloadRef::Deferred,
            ..NewEvent::new(EventKind::Other, &name)
        });
        return;
    }
    if system_is_error(subtype, level) {
        t.add(NewEvent {
            id: r.uuid.as_deref(),
            parent: Parent::Index(at.parent),
            start: r.ts,
            status: Status::Error,
            origin: at.origin,
            payload: PayloadRef::Deferred,
            ..NewEvent::new(EventKind::Error, if subtype.is_empty() { "error" } else { subtype })
        });
        s.last = Last::Error;
        return;
    }
    let name = if subtype == "compact_boundary" {
        // Where the context was cut: the conversation before it was summarized.
        compaction_name(line)
    } else if subtype.is_empty() {
        "system".to_string()
    } else {
        format!("system {subtype}")
    };
    let state = matches!(subtype, "compact_boundary");
    t.add(NewEvent {
        id: r.uuid.as_deref(),
        parent: Parent::Index(at.parent),
        start: r.ts,
        status: Status::Ok,
        origin: at.origin,
        payload: PayloadRef::Deferred,
        ..NewEvent::new(if state { EventKind::State } else { EventKind::Other }, &name)
    });
}

/// A compaction's name, with its trigger and the context's size before and after (tokens)
/// when `compactMetadata` gives them.
fn compaction_name(line: &[u8]) -> String {
    let v = serde_json::from_slice::<Value>(line).ok();
    let m = v.as_ref().and_then(|v| v.get("compactMetadata"));
    let get = |k: &str| m.and_then(|m| super::lenient_u64(m.get(k)));
    let trigger = m.and_then(|m| str_of(m, "trigger")).filter(|x| !x.is_empty());
    let mut name = "context compacted".to_string();
    let mut facts = Vec::new();
    if let Some(t) = trigger {
        facts.push(t.to_string());
    }
    match (get("preTokens"), get("postTokens")) {
        (Some(a), Some(b)) => facts.push(format!("{} → {} tokens", thousands(a), thousands(b))),
        (Some(a), None) => facts.push(format!("{} tokens before", thousands(a))),
        _ => {}
    }
    if !facts.is_empty() {
        name.push_str(&format!(" ({})", facts.join(", ")));
    }
    name
}

fn system_is_error(subtype: &str, level: &str) -> bool {
    matches!(subtype, "api_error" | "error" | "api_refusal") || level == "error"
}

/// A deferred payload, from the record(s) it was left in (see the module's notes).
pub(crate) fn decode(t: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
    if ev.kind == EventKind::Run {
        return run_payload(t, ev);
    }
    let mut out = Payload::default();
    let mut values = Vec::with_capacity(raw.len());
    for bytes in raw {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => values.push(v),
            Err(e) => {
                out.error = Some(ErrorInfo::unreadable(&e));
                return out;
            }
        }
    }
    let Some(v) = values.first() else { return out };
    let second = values.get(1);
    let under_llm = t
        .events
        .get(ev.parent as usize)
        .is_some_and(|p| p.kind == EventKind::LlmCall);
    match ev.kind {
        EventKind::LlmCall => {
            llm_payload(t, ev, v, second, &mut out);
            // What was sent: its request's parameters and shape.
            let req = t.index_of(ev).and_then(|i| {
                t.children(i)
                    .iter()
                    .copied()
                    .find(|&c| t.event(c).kind == EventKind::Other && t.name(c) == REQUEST)
            });
            if let Some(req) = req
                && let Ok(bytes) = super::read_origin(t, t.event(req).origin)
                && let Ok(rv) = serde_json::from_slice::<Value>(&bytes)
            {
                request_payload(t, ev, &rv, &mut out);
            }
        }
        EventKind::Other if t.str(ev.name) == REQUEST && str_of(v, "type") == Some("api-request") => {
            request_payload(t, ev, v, &mut out);
        }
        EventKind::State if t.str(ev.name) == SHAPE && str_of(v, "type") == Some("api-request-shape") => {
            shape_payload(v, &mut out.input, &mut out.extra);
        }
        EventKind::ToolCall => {
            out.input = v.get("input").cloned();
            if let Some(res) = second {
                result_payload(t, ev, res, &mut out);
            }
        }
        EventKind::Message(Role::User) => {
            out.input = Some(Value::String(match v.get("message").and_then(|m| m.get("content")) {
                Some(Value::String(x)) => x.clone(),
                c => content_text(c),
            }));
            if let Some(x) = field(v, "toolUseResult") {
                out.extra.push(("toolUseResult".into(), x.clone()));
            }
        }
        EventKind::Message(Role::Tool) => {
            // A result no call was found for: its line when it was the only one, else its block.
            let (b, structured) = match find_result(v, "") {
                Some((b, true)) => (b, field(v, "toolUseResult")),
                Some((b, false)) => (b, None),
                None => (v, None),
            };
            let (content, error) = result_parts(b);
            out.output = structured.cloned().or(content);
            out.error = error;
        }
        EventKind::Message(Role::Assistant) => {
            out.input = Some(match v {
                Value::String(x) => Value::String(x.clone()),
                b => Value::String(str_of(b, "text").unwrap_or("").to_string()),
            });
        }
        EventKind::Error if str_of(v, "type") == Some("system") => system_error_payload(v, &mut out),
        // A retry notice: what failed, shown, though the request went on.
        EventKind::Other if str_of(v, "type") == Some("system") && str_of(v, "subtype") == Some("api_error") => {
            system_error_payload(v, &mut out)
        }
        EventKind::Error => {
            let content = v.get("message").and_then(|m| m.get("content"));
            let text = content_text(content);
            let kind = match field(v, "error") {
                Some(Value::String(x)) => Some(x.clone()),
                Some(other) => Some(other.to_string()),
                None => None,
            };
            out.error = Some(ErrorInfo {
                kind,
                message: if text.is_empty() { "API error".into() } else { text },
                ..Default::default()
            });
        }
        EventKind::Other if under_llm => {
            let ty = str_of(v, "type").unwrap_or("");
            if matches!(ty, "thinking" | "redacted_thinking") {
                let text = str_of(v, "thinking").unwrap_or("");
                out.input = (!text.is_empty()).then(|| Value::String(text.to_string()));
            } else if ty.ends_with("_tool_result") {
                out.output = v.get("content").cloned();
            } else {
                out.input = Some(v.clone());
            }
        }
        EventKind::Other if !is_known_type(str_of(v, "type").unwrap_or("")) => {
            out = super::drift_payload(v, &ENVELOPE);
        }
        EventKind::State | EventKind::Other => {
            out.input = field(v, "content").cloned();
            out.extra.push(("record".into(), rest_of(v, &["content", "subtype"])));
        }
        _ => {}
    }
    out
}

/// The run's (or a subagent's) own detail: the system prompt and tools of its first request
/// shape (held by that shape's event, so shown here but not searched again) and the tools
/// used.
fn run_payload(t: &Trace, ev: &Event) -> Payload {
    let mut out = Payload::default();
    let Some(i) = t.index_of(ev) else { return out };
    let shape = t
        .children(i)
        .iter()
        .copied()
        .find(|&c| t.event(c).kind == EventKind::State && t.name(c) == SHAPE);
    if let Some(c) = shape
        && let Ok(bytes) = super::read_origin(t, t.event(c).origin)
        && let Ok(v) = serde_json::from_slice::<Value>(&bytes)
    {
        let mut input = None;
        shape_payload(&v, &mut input, &mut out.context);
        if let Some(sys) = input {
            out.context.insert(0, ("system prompt".into(), sys));
        }
    }
    if ev.parent == NO_PARENT {
        // (The recorded cost is shown by the run's header, beside the computed one.)
        if let Some((_, v)) = t.meta.attributes.iter().find(|(x, _)| x == "toolsUsed") {
            out.extra.push(("tools used".into(), v.clone()));
        }
    }
    out
}

/// A request shape's system prompt (its text blocks joined) and tool definitions.
fn shape_payload(v: &Value, input: &mut Option<Value>, extra: &mut Vec<(String, Value)>) {
    let shape = v.get("shape");
    if let Some(sys) = shape.and_then(|s| field(s, "system")) {
        *input = Some(match sys {
            Value::String(x) => Value::String(x.clone()),
            other => Value::String(content_text(Some(other))),
        });
    }
    if let Some(tools) = shape.and_then(|s| field(s, "tools")) {
        extra.push(("tools".into(), tools.clone()));
    }
    if let Some(h) = field(v, "shapeHash") {
        extra.push(("shapeHash".into(), h.clone()));
    }
}

/// A request's parameters (model, max_tokens, thinking, ...) and, held once by its shape's
/// event, the system prompt and tools it sent.
fn request_payload(t: &Trace, ev: &Event, v: &Value, out: &mut Payload) {
    out.set_extra("request", rest_of(v, &["tail", "cacheControl", "requestDigest"]));
    let Some(hash) = str_of(v, "shapeHash").filter(|h| !h.is_empty()) else {
        return;
    };
    // The shape is an event under the run or the subagent the request is in.
    let mut at = t.index_of(ev);
    while let Some(i) = at {
        let found = t.children(i).iter().copied().find(|&c| {
            let e = t.event(c);
            e.kind == EventKind::State && t.str(e.source_id) == hash && t.name(c) == SHAPE
        });
        if let Some(c) = found {
            if let Ok(bytes) = super::read_origin(t, t.event(c).origin)
                && let Ok(sv) = serde_json::from_slice::<Value>(&bytes)
            {
                let mut input = None;
                let mut ctx = Vec::new();
                shape_payload(&sv, &mut input, &mut ctx);
                if let Some(sys) = input {
                    out.context.push(("system prompt".into(), sys));
                }
                out.context.extend(ctx.into_iter().filter(|(k, _)| k == "tools"));
            }
            return;
        }
        let p = t.event(i).parent;
        at = (p != NO_PARENT).then_some(p);
    }
}

/// The tool_result block of a user line: the only one (true: the line's own fields belong to
/// it), else the only one answering `id`. A block given on its own is itself.
fn find_result<'v>(v: &'v Value, id: &str) -> Option<(&'v Value, bool)> {
    if str_of(v, "type") == Some("tool_result") {
        return Some((v, false));
    }
    let blocks = v.get("message")?.get("content")?.as_array()?;
    let results: Vec<&Value> = blocks
        .iter()
        .filter(|b| str_of(b, "type") == Some("tool_result"))
        .collect();
    if results.len() == 1 {
        return Some((results[0], true));
    }
    let mut by_id = results
        .iter()
        .filter(|b| !id.is_empty() && str_of(b, "tool_use_id") == Some(id));
    match (by_id.next(), by_id.next()) {
        (Some(b), None) => Some((b, false)),
        _ => None,
    }
}

/// A tool_result block's content as shown, and its error.
fn result_parts(b: &Value) -> (Option<Value>, Option<ErrorInfo>) {
    let is_error = b.get("is_error") == Some(&Value::Bool(true))
        || b.get("content").and_then(function_output).is_some_and(|(_, e)| e);
    let content = result_content(b.get("content"));
    let error = is_error.then(|| ErrorInfo {
        message: match content.as_ref() {
            Some(Value::String(x)) => x.clone(),
            Some(other) => other.to_string(),
            None => "tool error".into(),
        },
        ..Default::default()
    });
    (content, error)
}

/// A tool call's result: a user line (or one of its blocks), or a server tool's result block.
fn result_payload(t: &Trace, ev: &Event, v: &Value, out: &mut Payload) {
    let ty = str_of(v, "type").unwrap_or("");
    if ty != "tool_result" && ty.ends_with("_tool_result") {
        out.output = v.get("content").cloned();
        return;
    }
    let Some((b, single)) = find_result(v, t.str(ev.source_id)) else {
        return;
    };
    let (content, error) = result_parts(b);
    // A Gemini-shaped response (iFlow CLI): its output is the result; the line's
    // `toolUseResult` is only its tool name and status, the `resultDisplay` what the user saw.
    if let Some(c) = b.get("content").filter(|c| function_response(c).is_some()) {
        out.output = content;
        out.error = error;
        if let Some(d) = c
            .get("resultDisplay")
            .filter(|d| !d.is_null() && d.as_str() != Some(""))
        {
            out.set_extra("display", d.clone());
        }
        if let Some(x) = if single { field(v, "toolUseResult") } else { None } {
            out.set_extra("toolUseResult", x.clone());
        }
        return;
    }
    match if single { field(v, "toolUseResult") } else { None } {
        Some(x) => {
            out.output = Some(x.clone());
            if let Some(c) = content.filter(|c| c != x) {
                out.set_extra("content", c);
            }
        }
        None => out.output = content,
    }
    out.error = error;
    // The line's own denial (a block given alone has none).
    if ty != "tool_result"
        && let Some(k) = str_of(v, "toolDenialKind")
    {
        out.set_extra("denial", Value::String(k.to_string()));
    }
}

/// An LLM call: its first line, the lines of the same response between, and its last line.
fn llm_payload(t: &Trace, ev: &Event, first: &Value, last: Option<&Value>, out: &mut Payload) {
    if let Some(req) = str_of(first, "requestId") {
        out.extra.push(("requestId".into(), Value::String(req.to_string())));
    }
    let key = t.str(ev.source_id);
    let mut between = Vec::new();
    if let Some(o2) = ev.origin2.as_deref() {
        let from = ev.origin.offset + ev.origin.len as u64;
        if o2.file == ev.origin.file && o2.offset > from && o2.offset - from <= MAX_SPAN {
            let gap = Origin {
                file: o2.file,
                line: 0,
                offset: from,
                len: (o2.offset - from) as u32,
            };
            if let Ok(bytes) = super::read_origin(t, gap) {
                let finder = memchr::memmem::Finder::new(key.as_bytes());
                for l in bytes.split(|&c| c == b'\n') {
                    if key.is_empty() || finder.find(l).is_none() {
                        continue;
                    }
                    if let Ok(v) = serde_json::from_slice::<Value>(l)
                        && same_response(&v, key)
                    {
                        between.push(v);
                    }
                }
            }
        }
    }
    for v in std::iter::once(first).chain(between.iter()).chain(last) {
        let msg = v.get("message");
        if let Some(u) = msg.and_then(|m| m.get("usage")).filter(|u| u.is_object()) {
            out.set_extra("usage", u.clone());
        }
        if let Some(sr) = msg.and_then(|m| field(m, "stop_reason")) {
            out.set_extra("stop_reason", sr.clone());
        }
        if v.get("isAbortedMidStream") == Some(&Value::Bool(true)) || field(v, "errorDetails").is_some() {
            out.error = Some(ErrorInfo {
                kind: Some("aborted".into()),
                message: "the response was aborted mid-stream".into(),
                details: field(v, "errorDetails").cloned(),
                ..Default::default()
            });
        }
    }
}

/// Whether a line between an LLM call's first and last is a part of the same response (an
/// assistant line, not an API error, with the same key).
fn same_response(v: &Value, key: &str) -> bool {
    if str_of(v, "type") != Some("assistant") {
        return false;
    }
    let msg = v.get("message");
    let model = msg.and_then(|m| str_of(m, "model")).filter(|m| !m.is_empty());
    let api_error = v.get("isApiErrorMessage") == Some(&Value::Bool(true))
        || (model == Some("<synthetic>") && field(v, "error").is_some());
    let k = msg
        .and_then(|m| str_of(m, "id"))
        .filter(|x| !x.is_empty())
        .or_else(|| str_of(v, "uuid"));
    !api_error && k == Some(key)
}

fn system_error_payload(v: &Value, out: &mut Payload) {
    let subtype = str_of(v, "subtype").unwrap_or("");
    let err = field(v, "error");
    // The API's own error sits one or two levels down (`error.error.error`: the HTTP
    // error, its body, the body's error object): its type and message say the most.
    let api = err
        .and_then(|e| e.get("error"))
        .map(|e| e.get("error").filter(|x| x.is_object()).unwrap_or(e))
        .filter(|x| str_of(x, "message").is_some());
    let mut info = api.or(err).and_then(ErrorInfo::from_value).unwrap_or_default();
    if info.message.is_empty() {
        info.message = str_of(v, "apiRefusalExplanation")
            .or_else(|| str_of(v, "content"))
            .unwrap_or(subtype)
            .to_string();
    }
    if info.kind.is_none()
        && let Some(status) = err.and_then(|e| field(e, "status"))
    {
        info.kind = Some(format!("status {status}"));
    }
    out.error = Some(info);
    out.extra.push(("record".into(), rest_of(v, &["error"])));
}

/// A call's gist by Claude Code's own tools (the `tools` it sends with each request): the
/// command, the file, the pattern, the URL or query, a Task's description, the to-do in
/// progress; an MCP tool's (`mcp__<server>__<tool>`) first argument.
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{first_arg, generic, key_or_generic, todos};
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "Bash" | "bash" | "PowerShell" => by(&["command"]),
        "Read" | "Write" | "Edit" | "MultiEdit" => by(&["file_path"]),
        "NotebookEdit" | "NotebookRead" => by(&["notebook_path"]),
        "Grep" | "Glob" => by(&["pattern"]),
        "LS" => by(&["path"]),
        "WebFetch" => by(&["url"]),
        "WebSearch" => by(&["query"]),
        "Task" | "Agent" => by(&["description", "prompt"]),
        "TodoWrite" => input
            .get("todos")
            .and_then(|t| todos(t, &["activeForm", "content"], "status"))
            .or_else(|| generic(name, input)),
        "BashOutput" | "KillShell" | "KillBash" => by(&["bash_id", "shell_id"]),
        "Skill" => by(&["skill", "command"]),
        "SlashCommand" => by(&["command"]),
        n if n.starts_with("mcp__") => first_arg(input),
        _ => generic(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::outline as names;
    use std::io::Write;

    /// A record of a type no Claude Code writes yet, with the envelope of the line it goes
    /// before and, sometimes, text.
    fn unknown_record(rng: &mut crate::formats::testing::Rng, near: &Value) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::String(rng.type_name()));
        for k in ["sessionId", "timestamp", "cwd", "version"] {
            if let Some(x) = near.get(k) {
                m.insert(k.into(), x.clone());
            }
        }
        if rng.one_in(2) {
            m.insert("uuid".into(), Value::String(format!("drift-{}", rng.next())));
        }
        if let Some(text) = rng.maybe_text() {
            let key = ["content", "summary", "message"][rng.below(3)];
            m.insert(key.into(), Value::String(text));
        }
        m.insert("zz".into(), rng.value());
        Value::Object(m)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on our fixtures and the corpus' sessions.
        #[test]
        fn drift_is_skipped_quietly(seed in proptest::prelude::any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "claude-code",
                &[
                    "tests/fixtures/claude-code/session.jsonl",
                    "tests/fixtures/claude-code/sess-sub.jsonl",
                    "tests/fixtures/claude-code/sess-compact.jsonl",
                    "tests/fixtures/claude-code/recorder-2.1.3xx.jsonl",
                    "sample-traces/claude-code/7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f.jsonl",
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

    fn fixture(name: &str) -> PathBuf {
        crate::formats::testing::fixture("claude-code", name)
    }

    /// Events below `i`.
    fn subtree(t: &Trace, i: u32) -> usize {
        t.children(i).iter().map(|&c| 1 + subtree(t, c)).sum()
    }

    #[test]
    fn detection_is_precise() {
        let p = |s: &str| Probe::from_bytes(Path::new("x.jsonl"), s.as_bytes().to_vec(), true);
        assert_eq!(
            ClaudeCode.detect(&p(&std::fs::read_to_string(fixture("session.jsonl")).unwrap())),
            95
        );
        for other in [
            r#"{"event_type":"RUN_START","event_id":"a","payload":{}}"#,
            r#"{"type":"episode_start","episode_id":"e","timestamp":1}"#,
            r#"[{"role":"user","content":"hi"}]"#,
            r#"{"messages":[{"role":"user","content":"hi"}]}"#,
            r#"{"version":1,"tools":[]}"#,
            r#"{"span_id":"a","name":"x","attributes":{"maida.kind":"tool"}}"#,
            r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}"#,
        ] {
            assert_eq!(ClaudeCode.detect(&p(other)), 0, "{other}");
        }
    }

    #[test]
    fn a_recorded_cost_usd_is_the_calls_cost_and_wins_over_the_price() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("c.jsonl");
        let line = |uuid: &str, parent: &str, msg: &str, usage: &str, cost: &str| {
            format!(
                r#"{{"parentUuid":{parent},"isSidechain":false,"sessionId":"s1","type":"assistant","uuid":"{uuid}","timestamp":"2026-03-01T10:00:0{}.000Z","message":{{"model":"claude-sonnet-4-5-20250929","id":"{msg}","role":"assistant","content":[{{"type":"text","text":"hi"}}],"usage":{usage}}}{cost}}}"#,
                uuid.len()
            )
        };
        let usage = r#"{"input_tokens":3,"cache_creation_input_tokens":2000,"cache_read_input_tokens":10000,"output_tokens":500}"#;
        let src = [
            line("a", "null", "m1", usage, r#","costUSD":0.0123"#),
            line("bb", "\"a\"", "m2", usage, ""),
        ]
        .join("\n");
        std::fs::write(&path, src + "\n").unwrap();
        let l = ClaudeCode.load(&path).unwrap();
        let t = &l.traces[0];
        let u1 = t.event(t.find("m1").unwrap()).usage.get().unwrap();
        assert_eq!(u1.cost, Some(12_300));
        assert_eq!(
            (u1.input, u1.cache_write, u1.cache_read, u1.output),
            (Some(3), Some(2000), Some(10000), Some(500))
        );
        let u2 = t.event(t.find("m2").unwrap()).usage.get().unwrap();
        assert_eq!(u2.cost, None, "priced above formats/ (tests/cost.rs: the run's cost)");
    }

    #[test]
    fn one_response_over_several_lines_is_one_llm_call_with_the_last_usage() {
        let l = ClaudeCode.load(&fixture("session.jsonl")).unwrap();
        assert_eq!(l.traces.len(), 1);
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.name.as_deref(), Some("Count the words in notes.txt"));
        let c = t.counts();
        assert_eq!((c.llm_calls, c.tool_calls), (3, 3), "{:#?}", names(t));
        let first = t.find("msg_A").unwrap();
        let u = t.event(first).usage.get().unwrap();
        assert_eq!(u.output, Some(40), "the last line's usage wins");
        // Anthropic's kinds as written: input without the cache, cache write and read apart.
        assert_eq!(
            (u.input, u.cache_write, u.cache_read, u.reasoning, u.cost),
            (Some(5), Some(100), Some(900), None, None)
        );
        // Four lines repeat msg_A's usage: the run counts it once (msg_A, msg_B, msg_C; the
        // error line's zeros add nothing): 3 x 5 in, 3 x 900 read, 3 x 100 written, 40+2+2 out.
        let mut got = crate::model::usage::Tokens::default();
        for e in t.events.iter().filter(|e| e.kind == crate::model::EventKind::LlmCall) {
            if let Some(u) = e.usage.get() {
                got.add(&crate::model::usage::tokens_of(&u));
            }
        }
        let want = crate::model::usage::Tokens {
            input: 15,
            cache_read: 2700,
            cache_write: 300,
            output: 44,
            // The fixture's lines have no `cache_creation` split: tier unknown.
            cache_write_untiered: 300,
            ..Default::default()
        };
        assert_eq!(got, want);
        // The split response holds its text, both tool calls and nothing else.
        let kids: Vec<_> = t.children(first).iter().map(|&i| t.name(i).to_string()).collect();
        assert_eq!(kids, vec!["thinking", "assistant", "Read", "Bash"]);
        // The Read result joined its call; the Bash call failed.
        let read = t.find("toolu_1").unwrap();
        assert_eq!(t.event(read).status, Status::Ok);
        let p = super::super::payload(t, t.event(read));
        assert_eq!(
            p.output.unwrap()["type"],
            "text",
            "toolUseResult is the structured output"
        );
        let bash = t.find("toolu_2").unwrap();
        assert_eq!(t.event(bash).status, Status::Error);
        assert!(
            super::super::payload(t, t.event(bash))
                .error
                .unwrap()
                .message
                .contains("No such")
        );
        // The API error line is an error event, and the run ends with a reply.
        assert!(t.events.iter().any(|e| e.kind == EventKind::Error));
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.model.as_deref(), Some("claude-test-1"));
    }

    #[test]
    fn subagent_hangs_under_its_task_call_and_loads_alone() {
        let l = ClaudeCode.load(&fixture("sess-sub.jsonl")).unwrap();
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let task = t.find("toolu_task").unwrap();
        assert_eq!(t.event(task).status, Status::Ok);
        let agent = t.children(task)[0];
        assert_eq!(t.name(agent), "agent a1b2c3");
        assert_eq!(t.event(agent).kind, EventKind::Run);
        assert_eq!(subtree(t, agent), 5, "{:#?}", names(t));
        assert_eq!(t.counts().tool_calls, 2);
        // The subagent file on its own is a session too.
        let alone = ClaudeCode
            .load(&fixture("sess-sub/subagents/agent-a1b2c3.jsonl"))
            .unwrap();
        assert_eq!(alone.traces[0].counts().tool_calls, 1);
        assert_eq!(alone.traces[0].meta.name.as_deref(), Some("Find TODO comments"));
    }

    #[test]
    fn every_subagent_transcript_counts_compaction_agents_too() {
        let l = ClaudeCode.load(&fixture("sess-compact.jsonl")).unwrap();
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let root = t.roots[0];
        let kids: Vec<&str> = t.children(root).iter().map(|&c| t.name(c)).collect();
        // No Task started either: both hang under the run.
        assert!(kids.contains(&"compaction agent acompact-7f3e91"), "{kids:?}");
        assert!(kids.contains(&"agent b4d5e6"), "{kids:?}");
        let compaction = t.children(root)[kids.iter().position(|k| k.starts_with("compaction")).unwrap()];
        assert_eq!(t.event(compaction).kind, EventKind::Run);
        assert_eq!(subtree(t, compaction), 3, "{:#?}", names(t));
        let c = t.counts();
        // Main file 110 + 220, compaction 150 800, the other subagent 45.
        assert_eq!(c.tokens, 110 + 220 + 150_800 + 45);
        assert_eq!(c.llm_calls, 4);
        assert_eq!(c.tool_calls, 1);
    }

    #[test]
    fn a_2_1_3xx_session_reads_its_new_records() {
        let l = ClaudeCode.load(&fixture("recorder-2.1.3xx.jsonl")).unwrap();
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let c = t.counts();
        // The assistant records written twice are read once; three retries and the final
        // failure are one error (the other is the failed test run).
        assert_eq!((c.tool_calls, c.llm_calls, c.errors), (1, 2, 2));
        assert_eq!(
            t.skipped.iter().collect::<Vec<_>>(),
            [("zz-future-note", 1), ("zz-future-flag", 1)]
        );
        let tree = names(t);
        for want in [
            "state system prompt & tools",
            "other api retry 1/3",
            "other api retry 3/3",
            "state context compacted (manual, 10,844 → 2,691 tokens)",
            "other zz-future-note",
        ] {
            assert!(tree.iter().any(|l| l.trim() == want), "{want} in {tree:#?}");
        }
        assert!(!tree.iter().any(|l| l.contains("zz-future-flag")), "no text: not shown");
        assert_eq!(tree.iter().filter(|l| l.trim() == "message assistant").count(), 1);
        assert_eq!(tree.iter().filter(|l| l.trim() == "other thinking").count(), 1);
        // Claude Code's own cost and the tools used belong to the run.
        let attr = |k: &str| t.meta.attributes.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
        assert_eq!(attr(RECORDED_COST_ATTR), Some(serde_json::json!(0.0123)));
        assert_eq!(attr("toolsUsed"), Some(serde_json::json!(["Bash"])));
        // The run shows the system prompt and tools; each LLM call its request and them.
        let root = t.roots[0];
        let rp = crate::formats::payload(t, t.event(root));
        let ctx = |p: &Payload, k: &str| p.context.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
        let sys = ctx(&rp, "system prompt").unwrap();
        assert!(sys.as_str().unwrap().starts_with("You are a coding agent."), "{sys}");
        assert_eq!(ctx(&rp, "tools").unwrap().as_array().unwrap().len(), 2);
        let llm = t.find("msg_1").unwrap();
        let lp = crate::formats::payload(t, t.event(llm));
        let req = lp
            .extra
            .iter()
            .find(|(k, _)| k == "request")
            .map(|(_, v)| v.clone())
            .unwrap();
        assert_eq!(req["id"], "req-1");
        assert_eq!(req["params"]["max_tokens"], 32000);
        assert_eq!(ctx(&lp, "system prompt"), Some(sys.clone()));
        // Not searched on every call: the shape's own event holds the text.
        assert!(lp.extra.iter().all(|(_, v)| !v.to_string().contains("coding agent")));
        // The retry shows the API's own error; the final failure keeps its request.
        let retry = (0..t.len() as u32).find(|&i| t.name(i) == "api retry 2/3").unwrap();
        let e = crate::formats::payload(t, t.event(retry)).error.unwrap();
        assert_eq!(
            (e.kind.as_deref(), e.message.as_str()),
            (Some("overloaded_error"), "Overloaded")
        );
        let failed = (0..t.len() as u32)
            .find(|&i| t.event(i).kind == EventKind::Error)
            .unwrap();
        let kid = t.children(failed)[0];
        let kp = crate::formats::payload(t, t.event(kid));
        let req = kp
            .extra
            .iter()
            .find(|(k, _)| k == "request")
            .map(|(_, v)| v.clone())
            .unwrap();
        assert_eq!(req["id"], "req-3");
    }

    #[test]
    fn unknown_types_are_counted_quietly_and_bad_lines_name_their_line() {
        let l = ClaudeCode.load(&fixture("damaged.jsonl")).unwrap();
        let t = &l.traces[0];
        let errors: Vec<_> = t
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.line)
            .collect();
        assert_eq!(errors, vec![Some(3)]);
        // A record type of a newer Claude Code is drift, not a problem: no warning.
        assert!(
            t.diagnostics.iter().all(|d| d.severity == Severity::Error),
            "{:?}",
            t.diagnostics
        );
        assert_eq!(t.skipped.iter().collect::<Vec<_>>(), [("hologram", 2)]);
        // It carries no text: nothing in the tree.
        assert!(!names(t).iter().any(|l| l.contains("hologram")));
        assert_eq!(t.counts().tool_calls, 1);
        // The call's result never came: the session is still running.
        assert_eq!(t.meta.status, RunStatus::Running);
        assert_eq!(t.event(t.find("toolu_x").unwrap()).status, Status::Pending);
    }

    #[test]
    fn following_a_session_pairs_results_that_arrive_later() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("live.jsonl");
        let src = std::fs::read_to_string(fixture("session.jsonl")).unwrap();
        let lines: Vec<&str> = src.lines().collect();
        let cut = lines.iter().position(|l| l.contains("\"tool_result\"")).unwrap();
        std::fs::write(&path, lines[..cut].join("\n") + "\n").unwrap();
        let mut f = ClaudeCode.follow(&path).unwrap();
        f.poll().unwrap();
        f.poll().unwrap(); // flush twice: nothing changes
        let t = &f.sink.traces[0];
        assert_eq!(t.event(t.find("toolu_1").unwrap()).status, Status::Pending);
        assert_eq!(t.meta.status, RunStatus::Running);
        let mut w = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        for l in &lines[cut..] {
            writeln!(w, "{l}").unwrap();
        }
        drop(w);
        let p = f.poll().unwrap();
        assert_eq!(p.touched, vec![0]);
        let t = &f.sink.traces[0];
        assert_eq!(t.event(t.find("toolu_1").unwrap()).status, Status::Ok);
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.counts().tool_calls, 3);
    }

    #[test]
    fn a_subagent_file_that_appears_while_following_joins_its_task() {
        let d = tempfile::tempdir().unwrap();
        let main = d.path().join("s.jsonl");
        std::fs::copy(fixture("sess-sub.jsonl"), &main).unwrap();
        let mut f = ClaudeCode.follow(&main).unwrap();
        f.poll().unwrap();
        assert_eq!(f.sink.traces[0].counts().tool_calls, 1);
        let sub = d.path().join("s/subagents");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::copy(
            fixture("sess-sub/subagents/agent-a1b2c3.jsonl"),
            sub.join("agent-a1b2c3.jsonl"),
        )
        .unwrap();
        let p = f.poll().unwrap();
        assert_eq!(p.touched, vec![0]);
        let t = &f.sink.traces[0];
        assert_eq!(t.counts().tool_calls, 2);
        let task = t.find("toolu_task").unwrap();
        assert_eq!(t.name(t.children(task)[0]), "agent a1b2c3");
        f.poll().unwrap();
        assert_eq!(
            f.sink.traces[0].counts().tool_calls,
            2,
            "polling again reads nothing twice"
        );
    }

    /// The cache-write tiers and web searches of a current line (Claude Code 2.1.3xx), read
    /// alike by the skimmer and serde_json; a line without the split has no tier.
    #[test]
    fn cache_tiers_and_web_searches_are_read() {
        let line = br#"{"type":"assistant","message":{"id":"m","model":"claude-sonnet-4-5","usage":{"input_tokens":3,"cache_creation_input_tokens":1500,"cache_read_input_tokens":9000,"output_tokens":40,"server_tool_use":{"web_search_requests":2,"web_fetch_requests":0},"cache_creation":{"ephemeral_1h_input_tokens":1000,"ephemeral_5m_input_tokens":500}}}}"#;
        let fast = Rec::skim(line).expect("skimmed");
        let v: Value = serde_json::from_slice(line).unwrap();
        assert_eq!(fast, Rec::from_value(&v, line));
        let u = fast.usage.unwrap();
        assert_eq!(
            (u.cache_write, u.cache_write_1h, u.web_search, u.input, u.cache_read),
            (Some(1500), Some(1000), Some(2), Some(3), Some(9000))
        );
        let old = br#"{"type":"assistant","message":{"id":"m","usage":{"input_tokens":3,"cache_creation_input_tokens":1500}}}"#;
        let u = Rec::skim(old).unwrap().usage.unwrap();
        assert_eq!(
            (u.cache_write, u.cache_write_1h, u.web_search),
            (Some(1500), None, None)
        );
    }

    /// Every line of every fixture: read by the skimmer (not left to serde_json), and the
    /// same record as serde_json's `Value` gives.
    #[test]
    fn fixture_lines_take_the_fast_path() {
        let files = [
            "session.jsonl",
            "sess-sub.jsonl",
            "sess-sub/subagents/agent-a1b2c3.jsonl",
            "sess-compact.jsonl",
            "sess-compact/subagents/agent-acompact-7f3e91.jsonl",
            "sess-compact/subagents/agent-b4d5e6.jsonl",
            "damaged.jsonl",
            "edge-cases.jsonl",
        ];
        let mut read = 0;
        for f in files {
            let src = std::fs::read(fixture(f)).unwrap();
            for (i, line) in src.split(|&c| c == b'\n').enumerate() {
                let Ok(v) = serde_json::from_slice::<Value>(line) else {
                    continue;
                };
                if !v.is_object() {
                    continue;
                }
                let fast = Rec::skim(line);
                assert!(fast.is_some(), "{f} line {}: left to serde_json", i + 1);
                assert_eq!(fast.unwrap(), Rec::from_value(&v, line), "{f} line {}", i + 1);
                read += 1;
            }
        }
        assert!(read > 30, "{read}");
        // And nothing of them is held in memory: every payload is decoded when shown.
        for f in ["session.jsonl", "sess-sub.jsonl", "damaged.jsonl", "edge-cases.jsonl"] {
            let l = ClaudeCode.load(&fixture(f)).unwrap();
            let t = &l.traces[0];
            assert!(
                t.events.iter().all(|e| !matches!(e.payload, PayloadRef::Inline(_))),
                "{f}"
            );
            let deferred = t
                .events
                .iter()
                .filter(|e| matches!(e.payload, PayloadRef::Deferred))
                .count();
            assert!(deferred * 2 > t.len(), "{f}: {deferred} of {}", t.len());
        }
    }

    /// The edge-case fixture: several results in one line, an id-less call, a server tool, a
    /// denied call, escapes, a response with lines between its first and last: its payloads.
    #[test]
    fn payloads_are_decoded_from_their_blocks_and_lines() {
        let l = ClaudeCode.load(&fixture("edge-cases.jsonl")).unwrap();
        let t = &l.traces[0];
        let inline = t
            .events
            .iter()
            .filter(|e| matches!(e.payload, PayloadRef::Inline(_)))
            .count();
        assert_eq!(inline, 0, "every payload is left on disk");
        let p = |id: &str| super::super::payload(t, t.event(t.find(id).unwrap()));
        // Two results in one user line, each found again by its id; the line's denial applies.
        let a = p("toolu_a");
        assert_eq!(a.input.unwrap()["pattern"], "a\"b");
        assert_eq!(a.output, Some(Value::String("found a".into())));
        assert_eq!(a.extra, vec![("denial".to_string(), Value::String("user".into()))]);
        let b = p("toolu_b");
        assert_eq!(b.error.unwrap().message, "line 1\nline 2");
        assert_eq!(t.event(t.find("toolu_b").unwrap()).status, Status::Error);
        // A server tool answered inside the response.
        let w = p("srvtoolu_1");
        assert_eq!(w.output.unwrap()[0]["url"], "https://example.com");
        // The id-less call, answered through sourceToolAssistantUUID.
        let llm = t.find("msg_E2").unwrap();
        let idless = t.children(llm).iter().copied().find(|&c| t.name(c) == "Glob").unwrap();
        assert_eq!(t.event(idless).status, Status::Ok);
        let g = super::super::payload(t, t.event(idless));
        assert_eq!(g.output, Some(Value::String("src/a.rs".into())));
        // The response's usage and stop reason are the last any of its lines gave, even when
        // that was not its last line; the lines between are read again.
        let r = p("msg_E1");
        let extra: HashMap<_, _> = r.extra.into_iter().collect();
        assert_eq!(extra["requestId"], "req_1");
        assert_eq!(extra["usage"]["output_tokens"], 7);
        assert_eq!(extra["stop_reason"], "tool_use");
        let e = t.event(t.find("msg_E1").unwrap());
        assert_eq!(e.usage.get().unwrap().output, Some(7));
        // A prompt with escapes and a text block with only blanks.
        let u = p("e1");
        assert_eq!(u.input, Some(Value::String("Fix \"it\"\n\tnow".into())));
        assert_eq!(t.meta.name.as_deref(), Some("Fix \"it\""));
    }

    /// Lines read the fast way (skim, serde_json when unsure) and the straightforward way
    /// (serde_json's `Value` for every line), into a trace and every event's decoded payload.
    fn load_both(lines: &[String]) -> [(Vec<String>, Vec<Payload>, Vec<String>); 2] {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("s.jsonl");
        std::fs::write(&path, lines.join("\n")).unwrap();
        [false, true].map(|slow| {
            let mut p = Parser::new(&path);
            let mut sink = Sink::new(&path);
            let mut offset = 0;
            for (i, l) in lines.iter().enumerate() {
                let loc = LineLoc {
                    line: i as u64 + 1,
                    offset,
                    len: l.len(),
                };
                offset += l.len() as u64 + 1;
                if l.trim().is_empty() {
                    continue;
                }
                let mut w = InFile {
                    s: &mut p.s,
                    fs: &mut p.main,
                };
                if slow {
                    let v = serde_json::from_slice::<Value>(l.as_bytes())
                        .ok()
                        .filter(Value::is_object);
                    let rec = v.as_ref().map(|v| Rec::from_value(v, l.as_bytes()));
                    w.apply(rec.as_ref(), l.as_bytes(), loc, &mut sink);
                } else {
                    engine::one(&mut w, l.as_bytes(), loc, &mut sink);
                }
            }
            p.flush(&mut sink);
            let Some(t) = sink.traces.first() else {
                return (Vec::new(), Vec::new(), Vec::new());
            };
            let events = t
                .events
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    format!(
                        "{i} {:?} {} id={} model={} parent={} kids={:?} {:?} {:?} {:?} {:?} {:?} {:?}",
                        e.kind,
                        t.str(e.name),
                        t.str(e.source_id),
                        t.str(e.model),
                        e.parent,
                        t.children(i as u32),
                        e.start,
                        e.duration,
                        e.status,
                        e.usage,
                        e.origin,
                        e.origin2
                    )
                })
                .collect();
            let payloads = t.events.iter().map(|e| super::super::payload(t, e)).collect();
            let diags = t
                .diagnostics
                .iter()
                .map(|d| format!("{:?} {}", d.line, d.message))
                .collect();
            (events, payloads, diags)
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        /// The fast path reads what serde_json reads: record by record, and as events and
        /// decoded payloads.
        #[test]
        fn the_fast_path_equals_a_serde_json_parse(lines in proptest::collection::vec(claude_line(), 1..10)) {
            for l in &lines {
                if let Some(fast) = Rec::skim(l.as_bytes()) {
                    let v = serde_json::from_slice::<Value>(l.as_bytes());
                    proptest::prop_assert!(v.is_ok(), "skimmed a line serde_json rejects: {}", l);
                    let v = v.unwrap();
                    proptest::prop_assert!(v.is_object());
                    proptest::prop_assert_eq!(&fast, &Rec::from_value(&v, l.as_bytes()), "{}", l);
                }
            }
            let [fast, slow] = load_both(&lines);
            proptest::prop_assert_eq!(&fast.0, &slow.0, "events");
            proptest::prop_assert_eq!(&fast.1, &slow.1, "payloads");
            proptest::prop_assert_eq!(&fast.2, &slow.2, "diagnostics");
        }
    }

    /// Claude Code lines: every field the reader looks at, values of the right and wrong
    /// types, ids from small pools (so that calls, results and responses meet), then text
    /// edits serde_json must agree on (a key given twice, escapes where plain text was,
    /// spaces, a byte changed).
    fn claude_line() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        use serde_json::json;
        let text = || {
            prop_oneof![
                "[a-z ]{0,8}".prop_map(Value::String),
                "[a-z<\\[ \n\t\"\\\\é\u{1}\u{a0}]{0,12}".prop_map(Value::String),
                Just(json!("see agentId: ag-1 (done)")),
                Just(json!(7)),
                Just(Value::Null),
            ]
        };
        let id = || prop::sample::select(vec![json!("t1"), json!("t2"), json!(""), Value::Null, json!(3)]);
        let block = prop_oneof![
            text().prop_map(|t| json!({"type": "text", "text": t})),
            text().prop_map(|t| json!({"type": "thinking", "thinking": t, "signature": "s"})),
            Just(json!({"type": "redacted_thinking", "data": "x"})),
            (id(), prop::sample::select(vec!["Task", "Agent", "Read", ""]), text())
                .prop_map(|(i, n, t)| json!({"type": "tool_use", "id": i, "name": n, "input": {"prompt": t}})),
            id().prop_map(|i| json!({"type": "server_tool_use", "id": i, "name": "web_search", "input": {}})),
            (id(), any::<bool>(), text()).prop_map(|(i, e, t)| json!({"type": "tool_result", "tool_use_id": i, "is_error": e, "content": t})),
            (id(), text()).prop_map(|(i, t)| json!({"type": "tool_result", "tool_use_id": i, "content": [{"type": "text", "text": t}, {"type": "text", "text": "agentId: b2"}]})),
            (id(), any::<bool>()).prop_map(|(i, e)| json!({"type": "web_search_tool_result", "tool_use_id": i, "content": if e { json!({"type": "web_search_tool_result_error"}) } else { json!([{"url": "u"}]) }})),
            Just(json!({"type": "image", "source": {}})),
            text(),
            Just(json!({"type": "document"})),
        ];
        let content = prop_oneof![
            2 => proptest::collection::vec(block, 0..4).prop_map(Value::Array),
            1 => text(),
        ];
        let ty = prop::sample::select(vec![
            json!("user"),
            json!("assistant"),
            json!("system"),
            json!("progress"),
            json!("summary"),
            json!("custom-title"),
            json!("ai-title"),
            json!("zzz"),
            Value::Null,
        ]);
        let uuid = || prop::sample::select(vec![json!("u1"), json!("u2"), json!("m1"), Value::Null]);
        let ts = prop::sample::select(vec![
            json!("2026-03-01T10:00:01.000Z"),
            json!("2026-03-01T10:00:00.500Z"),
            json!(1772359200000i64),
            json!("soon"),
            Value::Null,
        ]);
        let usage = prop_oneof![
            (
                any::<u32>(),
                prop::sample::select(vec![json!(5), json!("9"), json!(-1), json!(2.5), Value::Null])
            )
                .prop_map(|(a, b)| json!({"input_tokens": a, "output_tokens": b, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 7})),
            // The cache tiers and web searches, in the shapes they come in and some they do not.
            (
                prop::sample::select(vec![
                    json!({"ephemeral_5m_input_tokens": 3, "ephemeral_1h_input_tokens": 4}),
                    json!({"ephemeral_1h_input_tokens": "9"}),
                    json!({"ephemeral_5m_input_tokens": null}),
                    json!([1]),
                    json!(7),
                    Value::Null,
                ]),
                prop::sample::select(vec![json!({"web_search_requests": 2, "web_fetch_requests": 1}), json!({}), json!("x")]),
            )
                .prop_map(|(cc, st)| json!({"input_tokens": 1, "cache_creation_input_tokens": 7, "cache_creation": cc, "server_tool_use": st})),
            Just(json!(5)),
            Just(Value::Null),
        ];
        let message = (prop::sample::select(vec![json!("m1"), json!("m2"), json!(""), Value::Null]),
            prop::sample::select(vec![json!("claude-x"), json!("<synthetic>"), json!("")]), content, usage,
            prop::sample::select(vec![Value::Null, json!("end_turn")]))
            .prop_map(|(id, model, content, usage, stop)| json!({"id": id, "model": model, "content": content, "usage": usage, "stop_reason": stop}));
        let flags = (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>(), any::<u8>());
        let extra = prop::sample::select(vec![
            json!({}),
            json!({"toolUseResult": {"agentId": "ag-2", "status": "completed"}}),
            json!({"toolUseResult": "Error: no"}),
            json!({"sourceToolAssistantUUID": "u1", "toolDenialKind": "user"}),
            json!({"sourceToolUseID": "t1"}),
            json!({"isApiErrorMessage": true, "error": "overloaded"}),
            json!({"error": {"message": "boom", "status": 529}, "subtype": "api_error"}),
            json!({"isAbortedMidStream": true, "errorDetails": {"x": 1}}),
            json!({"subtype": "compact_boundary", "content": "c", "level": "info"}),
            json!({"level": "error"}),
            json!({"summary": "A title", "customTitle": " ", "aiTitle": "AI"}),
            json!({"data": {"agentId": "ag-3"}, "parentToolUseID": "t2"}),
            json!({"isMeta": true}),
            json!({"isCompactSummary": true}),
            json!({"costUSD": 0.0123}),
            json!({"costUSD": "1.5e-05"}),
            json!({"costUSD": null}),
        ]);
        (ty, uuid(), uuid(), ts, message, flags, extra).prop_map(|(ty, u, p, ts, m, (side, meta, has_msg, dup, edit), extra)| {
            let mut v = json!({"type": ty, "uuid": u, "parentUuid": p, "isSidechain": side, "sessionId": "s", "timestamp": ts});
            if has_msg {
                v["message"] = m;
            }
            if meta {
                v["cwd"] = json!("/w");
            }
            if let (Some(o), Some(x)) = (v.as_object_mut(), extra.as_object()) {
                for (k, x) in x {
                    o.insert(k.clone(), x.clone());
                }
            }
            let mut line = v.to_string();
            if dup {
                line = line.replacen('{', "{\"type\":\"assistant\",", 1);
            }
            match edit % 8 {
                0 => line = line.replace("agentId", "agent\\u0049d"),
                1 => line = line.replace("\":", "\": "),
                2 => line = line.replacen("t1", "t\\u0031", 1),
                3 => {
                    let mut b = line.into_bytes();
                    let i = (edit as usize * 7) % b.len();
                    let set = b"{}[]\",:\\ a0";
                    b[i] = set[edit as usize % set.len()];
                    line = String::from_utf8_lossy(&b).into_owned();
                }
                _ => {}
            }
            line
        })
    }

    // Arbitrary bytes: tests/parsers_never_panic.rs feeds them to every format.
    proptest::proptest! {
        #[test]
        fn arbitrary_records_never_panic(lines in proptest::collection::vec(record_strategy(), 0..12)) {
            let d = tempfile::tempdir().unwrap();
            let p = d.path().join("s.jsonl");
            std::fs::write(&p, lines.join("\n")).unwrap();
            let _ = ClaudeCode.load(&p);
        }
    }

    /// Records built from the fields the parser looks at, with random values.
    fn record_strategy() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let val = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            "[a-z_]{0,6}".prop_map(Value::String),
            any::<i64>().prop_map(Value::from),
            Just(serde_json::json!([{"type": "tool_use", "id": "t1", "name": "Task", "input": {"prompt": "p"}}])),
            Just(
                serde_json::json!([{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "agentId: x"}]}])
            ),
            Just(
                serde_json::json!([{"type": "text", "text": "p"}, {"type": "web_search_tool_result", "tool_use_id": "t1"}])
            ),
        ];
        let ty = prop_oneof![
            Just("user"),
            Just("assistant"),
            Just("system"),
            Just("progress"),
            Just("summary"),
            Just("zzz")
        ];
        (ty, val.clone(), val.clone(), val.clone(), val).prop_map(|(ty, a, b, c, d)| {
            serde_json::json!({
                "type": ty, "uuid": a, "parentUuid": b, "isSidechain": true, "sessionId": "s",
                "timestamp": c, "message": {"id": "m", "model": "x", "content": d.clone(), "usage": {"input_tokens": c}},
                "toolUseResult": d, "subtype": "error", "error": a, "data": {"agentId": "x"}, "parentToolUseID": "t1"
            })
            .to_string()
        })
    }
}

#[cfg(test)]
mod gist_tests {
    use super::*;
    use serde_json::json;

    fn g(name: &str, input: Value) -> Option<String> {
        ClaudeCode.gist(name, &input)
    }

    #[test]
    fn each_tool_says_what_it_did() {
        // Inputs as Claude Code 2.1 writes them in `tool_use` blocks.
        let cmd = json!({"command": "git status --short", "description": "Check git status"});
        assert_eq!(g("Bash", cmd).as_deref(), Some("git status --short"));
        assert_eq!(
            g("Read", json!({"file_path": "/src/main.rs", "offset": 10})).as_deref(),
            Some("/src/main.rs")
        );
        let write = json!({"file_path": "/tmp/hello.sh", "content": "#!/bin/bash\necho hi\n"});
        assert_eq!(g("Write", write).as_deref(), Some("/tmp/hello.sh"));
        let edit = json!({"replace_all": false, "file_path": "/a.py", "old_string": "x", "new_string": "y"});
        assert_eq!(g("Edit", edit).as_deref(), Some("/a.py"));
        assert_eq!(
            g("MultiEdit", json!({"file_path": "/b.py", "edits": []})).as_deref(),
            Some("/b.py")
        );
        let nb = json!({"notebook_path": "/n.ipynb", "new_source": "print(1)"});
        assert_eq!(g("NotebookEdit", nb).as_deref(), Some("/n.ipynb"));
        let grep = json!({"pattern": "fn main", "path": "/src", "output_mode": "content"});
        assert_eq!(g("Grep", grep).as_deref(), Some("fn main"));
        assert_eq!(g("Glob", json!({"pattern": "**/*.rs"})).as_deref(), Some("**/*.rs"));
        let fetch = json!({"url": "https://example.com/x", "prompt": "Summarize"});
        assert_eq!(g("WebFetch", fetch).as_deref(), Some("https://example.com/x"));
        assert_eq!(
            g("WebSearch", json!({"query": "rust tui"})).as_deref(),
            Some("rust tui")
        );
        let task = json!({"description": "Count lines", "prompt": "S3-SUB: count", "subagent_type": "general-purpose"});
        assert_eq!(g("Agent", task.clone()).as_deref(), Some("Count lines"));
        assert_eq!(g("Task", task).as_deref(), Some("Count lines"));
        let todos = json!({"todos": [
            {"content": "Read the loader", "status": "completed", "activeForm": "Reading the loader"},
            {"content": "Fix it", "status": "in_progress", "activeForm": "Fixing it"}
        ]});
        assert_eq!(g("TodoWrite", todos).as_deref(), Some("1/2 done · Fixing it"));
        let mcp = json!({"owner": "acme", "repo": "app", "issue_number": 7});
        assert_eq!(g("mcp__github__get_issue", mcp).as_deref(), Some("acme"));
        assert_eq!(g("mcp__x__ping", json!({"n": 3})).as_deref(), Some("3"));
        // Tools it does not name: the first short string argument.
        assert_eq!(
            g("ExitPlanMode", json!({"plan": "1. Do it"})).as_deref(),
            Some("1. Do it")
        );
        assert_eq!(g("Bash", json!({})), None);
    }
}
