//! Claude Code session transcripts: `~/.claude/projects/<project>/<session>.jsonl`, one record a
//! line (`user`, `assistant`, `system`, plus many bookkeeping types), linked by
//! `parentUuid`/`uuid`. Subagents write `<session>/subagents/agent-<id>.jsonl` beside it.
//!
//! Shapes and traps this reader handles:
//! - one API response is split over several `assistant` lines sharing `message.id`: they become
//!   ONE LLM call whose usage is the last line's;
//! - `tool_use` blocks (assistant) and `tool_result` blocks (user) are joined by `tool_use_id`
//!   into ONE tool call; older/synthetic records without ids pair through
//!   `sourceToolAssistantUUID`/`parentUuid`; a call with no result yet is Pending;
//! - API errors are synthetic assistant lines (`isApiErrorMessage`, model `<synthetic>`) or
//!   `system` lines with subtype `api_error`/`error`;
//! - record types this reader does not know are skipped with one warning per type;
//! - subagent transcripts hang under the Task/Agent tool call that started them, matched by the
//!   agent id the call's result (or a `progress` line) names, else by the prompt.

use super::jsonl::{Follow, JsonlReader, LineLoc, LineParser, Sink};
use super::{Format, LoadError, Loaded, Probe, field, stem, str_of};
use crate::model::*;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

pub struct ClaudeCode;

/// Bookkeeping records that carry nothing for the event tree (or only a title): read quietly.
const QUIET_TYPES: [&str; 13] = [
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

impl Format for ClaudeCode {
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
            if looks_like_record(&v) {
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

    fn follow(&self, path: &Path) -> Option<Follow> {
        let path = path.to_path_buf();
        let main = path.clone();
        Some(Follow::new(
            &path,
            Box::new(move || Box::new(Parser::new(&main)) as Box<dyn LineParser>),
        ))
    }
}

fn looks_like_record(v: &Value) -> bool {
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

/// `agent-<id>.jsonl` → `<id>`.
fn agent_id_of_file(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    Some(name.strip_prefix("agent-")?.strip_suffix(".jsonl")?.to_string())
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

/// A tool result's content as shown: text blocks joined into one string, other shapes kept.
fn result_content(v: Option<&Value>) -> Option<Value> {
    let v = v?;
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
}

impl FileState {
    fn new(file: u16, agent: Option<String>) -> FileState {
        FileState {
            file,
            container: None,
            agent,
            prev_ts: None,
            first_prompt: None,
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
    /// The session's run event (root of the tree).
    root: Option<u32>,
    /// message.id → LLM call.
    llm: HashMap<String, u32>,
    /// tool_use id → tool call.
    tools: HashMap<String, u32>,
    /// assistant record uuid → its tool_use blocks that have no id, in order.
    idless: HashMap<String, Vec<u32>>,
    /// uuid of a record in a matched sidechain → the sidechain's container (old transcripts
    /// wrote subagent lines into the main file with `isSidechain`).
    sidechain_of: HashMap<String, u32>,
    tasks: Vec<TaskCall>,
    /// agent id → the Task call that started it.
    agent_task: HashMap<String, u32>,
    warned: HashSet<String>,
    titles: Titles,
    last: Last,
    first_ts: Option<i64>,
    last_ts: Option<i64>,
    model: Option<String>,
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
        Parser {
            main: FileState::new(0, None),
            s: Session {
                root: None,
                llm: HashMap::new(),
                tools: HashMap::new(),
                idless: HashMap::new(),
                sidechain_of: HashMap::new(),
                tasks: Vec::new(),
                agent_task: HashMap::new(),
                warned: HashSet::new(),
                titles: Titles::default(),
                last: Last::Nothing,
                first_ts: None,
                last_ts: None,
                model: None,
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
                    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                        // `agent-acompact-*` are Claude Code's own context-compaction agents.
                        n.starts_with("agent-") && n.ends_with(".jsonl") && !n.starts_with("agent-acompact-")
                    })
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
        let pending = t
            .events
            .iter()
            .any(|e| e.kind == EventKind::ToolCall && e.status == Status::Pending);
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
            if let (Some(a), Some(b)) = (e.start, sub.state.prev_ts) {
                e.duration = Some(b.saturating_sub(a).max(0));
            }
        }
        let e = t.event_mut(root);
        e.start = self.s.first_ts;
        e.duration = match (self.s.first_ts, self.s.last_ts) {
            (Some(a), Some(b)) if b >= a => Some(b.saturating_sub(a)),
            _ => None,
        };
        e.status = match status {
            RunStatus::Running => Status::Pending,
            RunStatus::Ok => Status::Ok,
            RunStatus::Error => Status::Error,
            RunStatus::Unknown => Status::Unknown,
        };
    }
}

fn ensure_trace(s: &mut Session, sink: &mut Sink) -> Option<usize> {
    if s.root.is_some() {
        return Some(0);
    }
    let mut t = Trace::new(RunMeta {
        id: stem(&sink.path),
        format: "claude-code",
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
        record(self.s, self.fs, line, loc, sink);
    }
    fn flush(&mut self, _sink: &mut Sink) {}
}

impl LineParser for Parser {
    fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        record(&mut self.s, &mut self.main, line, loc, sink);
    }

    fn settle(&mut self, sink: &mut Sink) {
        if self.s.root.is_some() {
            self.read_subagents(sink);
            self.match_subagents(sink);
            self.settle_run(sink);
        }
    }
}

/// One record of a session or subagent file.
fn record(s: &mut Session, fs: &mut FileState, line: &[u8], loc: LineLoc, sink: &mut Sink) {
    let Some(v) = sink.parse::<Value>(line, loc) else {
        return;
    };
    if !v.is_object() {
        sink.error(loc.line, "not a JSON object");
        return;
    }
    let Some(ti) = ensure_trace(s, sink) else { return };
    sink.touch(ti);
    let ts = v.get("timestamp").and_then(parse_timestamp);
    if let Some(x) = ts {
        s.first_ts = Some(s.first_ts.map_or(x, |f| f.min(x)));
        s.last_ts = Some(s.last_ts.map_or(x, |l| l.max(x)));
    }
    let ty = str_of(&v, "type").unwrap_or("");
    {
        let t = &mut sink.traces[ti];
        if t.meta.attributes.is_empty() {
            for k in ["sessionId", "cwd", "version", "gitBranch"] {
                if let Some(x) = str_of(&v, k).filter(|x| !x.is_empty()) {
                    t.meta.attributes.push((k.to_string(), Value::String(x.to_string())));
                }
            }
        }
    }
    let parent = parent_of(s, fs, &v, sink, ti);
    let origin = loc.origin(fs.file);
    let mut r = Rec {
        v: &v,
        ts,
        parent,
        origin,
        line: loc.line,
    };
    match ty {
        "user" => user(s, fs, &mut r, sink, ti),
        "assistant" => assistant(s, fs, &mut r, sink, ti),
        "system" => system(s, &mut r, sink, ti),
        "summary" => {
            if let Some(x) = str_of(&v, "summary").filter(|x| !x.trim().is_empty()) {
                s.titles.summary.get_or_insert_with(|| x.to_string());
            }
        }
        "custom-title" => {
            if let Some(x) = str_of(&v, "customTitle").filter(|x| !x.trim().is_empty()) {
                s.titles.custom = Some(x.to_string());
            }
        }
        "ai-title" => {
            if let Some(x) = str_of(&v, "aiTitle").filter(|x| !x.trim().is_empty()) {
                s.titles.ai = Some(x.to_string());
            }
        }
        "progress" => {
            // A subagent's progress names its agent id and the Task call that runs it.
            let data = v.get("data");
            if let (Some(agent), Some(tool)) = (data.and_then(|d| str_of(d, "agentId")), str_of(&v, "parentToolUseID"))
                && let Some(&task) = s.tools.get(tool)
            {
                s.agent_task.entry(agent.to_string()).or_insert(task);
            }
        }
        _ if QUIET_TYPES.contains(&ty) => {}
        "" => sink.error(loc.line, "record has no `type`; skipped"),
        other => {
            if s.warned.len() < 100 && s.warned.insert(other.to_string()) {
                sink.warning(
                    Some(loc.line),
                    format!("record type {other:?} is not known to tracetui; skipped (and any more of that type)"),
                );
            }
        }
    }
    if ts.is_some() {
        fs.prev_ts = ts;
    }
}

/// What one record handler needs.
struct Rec<'a> {
    v: &'a Value,
    ts: Option<i64>,
    parent: u32,
    origin: Origin,
    line: u64,
}

/// The event a record's events hang under: the run, a subagent container, or a sidechain.
fn parent_of(s: &mut Session, fs: &mut FileState, v: &Value, sink: &mut Sink, ti: usize) -> u32 {
    let root = s.root.unwrap_or(NO_PARENT);
    let t = &mut sink.traces[ti];
    if fs.agent.is_some() {
        // A subagent file: everything goes into its container.
        if fs.container.is_none() {
            let name = format!("agent {}", fs.agent.as_deref().unwrap_or(""));
            let c = t.add(NewEvent {
                parent: Parent::Index(root),
                start: v.get("timestamp").and_then(parse_timestamp),
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
    let uuid = str_of(v, "uuid");
    if let Some(&c) = str_of(v, "parentUuid").and_then(|p| s.sidechain_of.get(p)) {
        if let Some(u) = uuid {
            s.sidechain_of.insert(u.to_string(), c);
        }
        return c;
    }
    if v.get("isSidechain") == Some(&Value::Bool(true))
        && v.get("parentUuid").is_none_or(Value::is_null)
        && str_of(v, "type") == Some("user")
    {
        let prompt = content_text(v.get("message").and_then(|m| m.get("content")));
        if let Some(tc) = s
            .tasks
            .iter_mut()
            .find(|tc| !tc.claimed && !prompt.trim().is_empty() && tc.prompt.trim() == prompt.trim())
        {
            tc.claimed = true;
            let c = t.add(NewEvent {
                parent: Parent::Index(tc.event),
                start: v.get("timestamp").and_then(parse_timestamp),
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

fn user(s: &mut Session, fs: &mut FileState, r: &mut Rec, sink: &mut Sink, ti: usize) {
    let v = r.v;
    let content = v.get("message").and_then(|m| m.get("content"));
    let blocks: &[Value] = match content {
        Some(Value::Array(a)) => a,
        _ => &[],
    };
    let results: Vec<&Value> = blocks
        .iter()
        .filter(|b| str_of(b, "type") == Some("tool_result"))
        .collect();
    let single = results.len() == 1;
    for b in &results {
        tool_result(s, r, b, single, sink, ti);
    }
    // What is left is the prompt (a string, or text/image blocks).
    let text = match content {
        Some(Value::String(x)) => x.clone(),
        _ if results.len() == blocks.len() => return,
        _ => content_text(content),
    };
    if text.trim().is_empty() && results.len() == blocks.len() {
        return;
    }
    let meta = v.get("isMeta") == Some(&Value::Bool(true));
    let compact = v.get("isCompactSummary") == Some(&Value::Bool(true));
    let name = if compact {
        "compact summary"
    } else if meta {
        "user (meta)"
    } else {
        "user"
    };
    let mut p = Payload {
        input: Some(Value::String(text.clone())),
        ..Default::default()
    };
    if let Some(x) = field(v, "toolUseResult") {
        p.extra.push(("toolUseResult".into(), x.clone()));
    }
    sink.traces[ti].add(NewEvent {
        id: str_of(v, "uuid"),
        parent: Parent::Index(r.parent),
        start: r.ts,
        status: Status::Ok,
        origin: r.origin,
        payload: PayloadRef::inline(p),
        ..NewEvent::new(EventKind::Message(Role::User), name)
    });
    let real_prompt = !meta && !compact && {
        let t = text.trim_start();
        !t.starts_with('<') && !t.starts_with('[') && !t.is_empty()
    };
    if real_prompt {
        if fs.agent.is_none() && fs.container.is_none() && s.titles.prompt.is_none() {
            s.titles.prompt = Some(text.clone());
        }
        s.last = Last::Prompt;
    }
    if fs.first_prompt.is_none() && !text.trim().is_empty() {
        fs.first_prompt = Some(text);
    }
}

/// Join a tool_result block to its call.
fn tool_result(s: &mut Session, r: &Rec, b: &Value, single: bool, sink: &mut Sink, ti: usize) {
    let v = r.v;
    let t = &mut sink.traces[ti];
    let pending = |t: &Trace, i: u32| t.event(i).status == Status::Pending;
    let by_id = str_of(b, "tool_use_id")
        .filter(|x| !x.is_empty())
        .or_else(|| str_of(v, "sourceToolUseID"))
        .and_then(|id| s.tools.get(id))
        .copied()
        .filter(|&i| pending(t, i));
    let call = by_id.or_else(|| {
        // No usable id: the first unanswered id-less call of the assistant record it answers.
        let asst = str_of(v, "sourceToolAssistantUUID").or_else(|| str_of(v, "parentUuid"))?;
        let list = s.idless.get(asst)?;
        list.iter().copied().find(|&i| pending(t, i))
    });
    let is_error = b.get("is_error") == Some(&Value::Bool(true));
    let content = result_content(b.get("content"));
    let structured = if single { field(v, "toolUseResult") } else { None };
    let error = is_error.then(|| ErrorInfo {
        message: match content.as_ref() {
            Some(Value::String(x)) => x.clone(),
            Some(other) => other.to_string(),
            None => "tool error".into(),
        },
        ..Default::default()
    });
    let Some(call) = call else {
        sink.warning(
            Some(r.line),
            format!(
                "tool_result for {} matches no unanswered tool_use; shown on its own",
                str_of(b, "tool_use_id").map_or("a call without id".to_string(), |x| format!("{x:?}"))
            ),
        );
        let t = &mut sink.traces[ti];
        t.add(NewEvent {
            parent: Parent::Index(r.parent),
            start: r.ts,
            status: if is_error { Status::Error } else { Status::Ok },
            origin: r.origin,
            payload: PayloadRef::inline(Payload {
                output: structured.cloned().or(content),
                error,
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::Message(Role::Tool), "tool_result")
        });
        return;
    };
    // The Task/Agent result names the subagent it ran.
    let agent = structured
        .and_then(|x| str_of(x, "agentId"))
        .map(str::to_string)
        .or_else(|| match content.as_ref() {
            Some(Value::String(x)) => agent_id_in_text(x),
            _ => None,
        });
    if let Some(a) = agent {
        s.agent_task.entry(a).or_insert(call);
    }
    let e = t.event_mut(call);
    e.status = if is_error { Status::Error } else { Status::Ok };
    e.origin2 = Some(Box::new(r.origin));
    if let (Some(a), Some(b)) = (e.start, r.ts) {
        e.duration = Some(b.saturating_sub(a).max(0));
    }
    let p = t.payload_mut(call);
    match structured {
        Some(x) => {
            p.output = Some(x.clone());
            if let Some(c) = content.filter(|c| c != x) {
                p.set_extra("content", c);
            }
        }
        None => p.output = content,
    }
    p.error = error;
    if let Some(k) = str_of(v, "toolDenialKind") {
        p.set_extra("denial", Value::String(k.to_string()));
    }
}

fn assistant(s: &mut Session, fs: &mut FileState, r: &mut Rec, sink: &mut Sink, ti: usize) {
    let v = r.v;
    let msg = v.get("message");
    let model = msg.and_then(|m| str_of(m, "model")).filter(|m| !m.is_empty());
    let content = msg.and_then(|m| m.get("content"));
    let api_error = v.get("isApiErrorMessage") == Some(&Value::Bool(true))
        || (model == Some("<synthetic>") && field(v, "error").is_some());
    let t = &mut sink.traces[ti];
    if api_error {
        let text = content_text(content);
        let kind = match field(v, "error") {
            Some(Value::String(x)) => Some(x.clone()),
            Some(other) => Some(other.to_string()),
            None => None,
        };
        t.add(NewEvent {
            id: str_of(v, "uuid"),
            parent: Parent::Index(r.parent),
            start: r.ts,
            status: Status::Error,
            origin: r.origin,
            payload: PayloadRef::inline(Payload {
                error: Some(ErrorInfo {
                    kind,
                    message: if text.is_empty() { "API error".into() } else { text },
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::Error, "api error")
        });
        s.last = Last::Error;
        return;
    }
    if let Some(m) = model {
        s.model = Some(m.to_string());
    }
    // One API response, several lines: they share message.id.
    let key = msg
        .and_then(|m| str_of(m, "id"))
        .filter(|x| !x.is_empty())
        .or_else(|| str_of(v, "uuid"))
        .map(str::to_string)
        .unwrap_or_else(|| format!("line {}", r.line));
    let llm = match s.llm.get(&key) {
        Some(&i) => i,
        None => {
            let start = fs.prev_ts.filter(|p| r.ts.is_none_or(|x| *p <= x)).or(r.ts);
            let mut p = Payload::default();
            if let Some(req) = str_of(v, "requestId") {
                p.extra.push(("requestId".into(), Value::String(req.to_string())));
            }
            let i = t.add(NewEvent {
                id: Some(&key),
                parent: Parent::Index(r.parent),
                start,
                status: Status::Ok,
                model,
                origin: r.origin,
                payload: PayloadRef::inline(p),
                ..NewEvent::new(EventKind::LlmCall, model.unwrap_or("assistant"))
            });
            if s.llm.len() < 1_000_000 {
                s.llm.insert(key.clone(), i);
            }
            i
        }
    };
    // The last line of a response carries the final usage and stop reason.
    let e = t.event_mut(llm);
    if let (Some(a), Some(b)) = (e.start, r.ts) {
        e.duration = Some(b.saturating_sub(a).max(0).max(e.duration.unwrap_or(0)));
    }
    if r.origin.line != e.origin.line {
        e.origin2 = Some(Box::new(r.origin));
    }
    if let Some(u) = msg.and_then(|m| m.get("usage")).filter(|u| u.is_object()) {
        let n = |k: &str| super::lenient_u64(u.get(k));
        let cached = n("cache_creation_input_tokens").unwrap_or(0) + n("cache_read_input_tokens").unwrap_or(0);
        let usage = Usage {
            // The prompt's full size: new input plus what was written to / read from cache.
            input: n("input_tokens").map(|x| x + cached),
            output: n("output_tokens"),
            total: None,
        };
        e.usage = (!usage.is_empty()).then(|| Box::new(usage));
        t.payload_mut(llm).set_extra("usage", u.clone());
    }
    if let Some(sr) = msg.and_then(|m| field(m, "stop_reason")) {
        t.payload_mut(llm).set_extra("stop_reason", sr.clone());
    }
    if v.get("isAbortedMidStream") == Some(&Value::Bool(true)) || field(v, "errorDetails").is_some() {
        t.event_mut(llm).status = Status::Error;
        let details = field(v, "errorDetails").cloned();
        t.payload_mut(llm).error = Some(ErrorInfo {
            kind: Some("aborted".into()),
            message: "the response was aborted mid-stream".into(),
            details,
            ..Default::default()
        });
    }
    let blocks: Vec<Value> = match content {
        Some(Value::Array(a)) => a.clone(),
        Some(Value::String(x)) => vec![serde_json::json!({"type": "text", "text": x})],
        _ => Vec::new(),
    };
    let uuid = str_of(v, "uuid").unwrap_or("");
    let mut replied = false;
    for b in &blocks {
        let bty = str_of(b, "type").unwrap_or("");
        let child = |kind, name: &str, id: Option<&str>, status, p: Payload, t: &mut Trace| {
            t.add(NewEvent {
                id,
                parent: Parent::Index(llm),
                start: r.ts,
                status,
                origin: r.origin,
                payload: PayloadRef::inline(p),
                ..NewEvent::new(kind, name)
            })
        };
        match bty {
            "text" => {
                let text = str_of(b, "text").unwrap_or("");
                if text.trim().is_empty() {
                    continue;
                }
                let p = Payload {
                    input: Some(Value::String(text.to_string())),
                    ..Default::default()
                };
                child(EventKind::Message(Role::Assistant), "assistant", None, Status::Ok, p, t);
                replied = true;
            }
            "thinking" | "redacted_thinking" => {
                let text = str_of(b, "thinking").unwrap_or("");
                let p = Payload {
                    input: (!text.is_empty()).then(|| Value::String(text.to_string())),
                    ..Default::default()
                };
                child(EventKind::Other, "thinking", None, Status::Ok, p, t);
            }
            "tool_use" | "server_tool_use" | "mcp_tool_use" => {
                let name = str_of(b, "name").filter(|x| !x.is_empty()).unwrap_or("tool");
                let id = str_of(b, "id").filter(|x| !x.is_empty());
                let input = b.get("input").cloned();
                let prompt = input
                    .as_ref()
                    .and_then(|i| str_of(i, "prompt"))
                    .unwrap_or("")
                    .to_string();
                let p = Payload {
                    input,
                    ..Default::default()
                };
                let i = child(EventKind::ToolCall, name, id, Status::Pending, p, t);
                match id {
                    Some(id) => {
                        s.tools.insert(id.to_string(), i);
                    }
                    None => s.idless.entry(uuid.to_string()).or_default().push(i),
                }
                if matches!(name, "Task" | "Agent") {
                    s.tasks.push(TaskCall {
                        event: i,
                        prompt,
                        claimed: false,
                    });
                }
            }
            x if x.ends_with("_tool_result") => {
                // Server-side tools answer inside the same response.
                let target = str_of(b, "tool_use_id").and_then(|id| s.tools.get(id)).copied();
                match target {
                    Some(call) => {
                        let is_error = b
                            .get("content")
                            .and_then(|c| str_of(c, "type"))
                            .is_some_and(|ty| ty.ends_with("_error"));
                        t.event_mut(call).status = if is_error { Status::Error } else { Status::Ok };
                        t.payload_mut(call).output = b.get("content").cloned();
                    }
                    None => {
                        let p = Payload {
                            output: b.get("content").cloned(),
                            ..Default::default()
                        };
                        child(EventKind::Other, x, None, Status::Ok, p, t);
                    }
                }
            }
            "" => {}
            other => {
                let p = Payload {
                    input: Some(b.clone()),
                    ..Default::default()
                };
                child(EventKind::Other, other, None, Status::Ok, p, t);
            }
        }
    }
    if replied || s.last != Last::Error {
        s.last = Last::Reply;
    }
}

fn system(s: &mut Session, r: &mut Rec, sink: &mut Sink, ti: usize) {
    let v = r.v;
    let subtype = str_of(v, "subtype").unwrap_or("");
    let level = str_of(v, "level").unwrap_or("");
    let t = &mut sink.traces[ti];
    let is_error = matches!(subtype, "api_error" | "error" | "api_refusal") || level == "error";
    if is_error {
        let err = field(v, "error");
        let mut info = err.and_then(ErrorInfo::from_value).unwrap_or_default();
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
        t.add(NewEvent {
            id: str_of(v, "uuid"),
            parent: Parent::Index(r.parent),
            start: r.ts,
            status: Status::Error,
            origin: r.origin,
            payload: PayloadRef::inline(Payload {
                error: Some(info),
                extra: vec![("record".into(), rest_of(v, &["error"]))],
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::Error, if subtype.is_empty() { "error" } else { subtype })
        });
        s.last = Last::Error;
        return;
    }
    let name = if subtype.is_empty() {
        "system".to_string()
    } else {
        format!("system {subtype}")
    };
    let state = matches!(subtype, "compact_boundary");
    t.add(NewEvent {
        id: str_of(v, "uuid"),
        parent: Parent::Index(r.parent),
        start: r.ts,
        status: Status::Ok,
        origin: r.origin,
        payload: PayloadRef::inline(Payload {
            input: field(v, "content").cloned(),
            extra: vec![("record".into(), rest_of(v, &["content", "subtype"]))],
            ..Default::default()
        }),
        ..NewEvent::new(if state { EventKind::State } else { EventKind::Other }, &name)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::outline as names;
    use std::io::Write;

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
    fn one_response_over_several_lines_is_one_llm_call_with_the_last_usage() {
        let l = ClaudeCode.load(&fixture("session.jsonl")).unwrap();
        assert_eq!(l.traces.len(), 1);
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.name.as_deref(), Some("Count the words in notes.txt"));
        let c = t.counts();
        assert_eq!((c.llm_calls, c.tool_calls), (3, 3), "{:#?}", names(t));
        let first = t.find("msg_A").unwrap();
        let u = t.event(first).usage.as_deref().unwrap();
        assert_eq!(u.output, Some(40), "the last line's usage wins");
        assert_eq!(u.input, Some(5 + 100 + 900), "input counts cache writes and reads");
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
    fn unknown_types_warn_once_and_bad_lines_name_their_line() {
        let l = ClaudeCode.load(&fixture("damaged.jsonl")).unwrap();
        let t = &l.traces[0];
        let errors: Vec<_> = t
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.line)
            .collect();
        assert_eq!(errors, vec![Some(3)]);
        let warnings: Vec<_> = t
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .map(|d| d.message.clone())
            .collect();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("\"hologram\""));
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
