//! Cursor agent transcripts: `~/.cursor/projects/<encoded path>/agent-transcripts/<id>/<id>.jsonl`
//! (older: `agent-transcripts/<id>.jsonl`), subagents in `<id>/subagents/<sub>.jsonl`. One
//! message a line, `{role, message: {content: [blocks]}}`, with Anthropic-style `text`,
//! `thinking`, `tool_use` and `tool_result` blocks, and `{"type":"turn_ended"}` lines.
//!
//! Shapes and traps this reader handles:
//! - no timestamps at all: events have no times (file order is the order) and the run's time
//!   is the file's modification time, said in a `note` attribute of the run;
//! - no model and no usage: an assistant line is an LLM call named `assistant`, without tokens;
//! - `tool_use` blocks carry no id: results are joined to calls by position (the first call
//!   still waiting takes the next result), even when a `tool_result` names a `tool_use_id`
//!   (fixtures name `t1`, `t2`, which no call carries); a result naming the id a waiting call
//!   carries (`id`, `toolCallId`) takes that call;
//! - blocks drift in name: calls as `tool_use`, `tool_call`, `tool-use` or `tool-call` (the
//!   tool in `name`, `toolName` or `tool`, the input in `input`, `args` or `arguments`),
//!   results as `tool_result` or `tool-result` (`content`, `output` or `result`; `is_error`
//!   or `isError`), thinking as `thinking` (its text in `thinking` or `text`), as the session
//!   viewers read them (agent-sessions' `CursorSessionParser`);
//! - drift (formats/mod.rs): a line with no role (but `turn_ended`) or a role Cursor does not
//!   write, and a block of a type it does not know, are skipped quietly, counted, and shown
//!   as a generic event when they carry text; detection ignores fields it does not know;
//! - a turn that ends (`turn_ended`) with calls still waiting: their results were not
//!   recorded, so they are settled as unknown, not left pending;
//! - a subagent's transcript (`subagents/`) is its own trace; the parent's `Agent`/`Task`
//!   tool_use is the only link, so the child names its session (`parentSession`) and a
//!   session loaded from its directory lists its subagents (`subagents`). The
//!   session directory `agent-transcripts/<id>/` is one run source that loads the session
//!   and its subagents (the directory scan skips `subagents/` folders, which Claude Code
//!   loads as part of its session files).
//!
//! On the shared engine (DESIGN §4): the skim reads each line's role and the type, name and
//! byte range of each block; payloads stay on disk and are decoded from the block(s) when shown.
//!
//! Tokens: Cursor's transcripts record none (no model, no usage): tokens and cost unknown.

use super::engine::{self, Records};
use super::jsonl::{self, Follow, LineLoc, LineParser, Sink, json_error};
use super::skim::{Raw, Seen, Skim};
use super::{Format, LoadError, Loaded, Probe, stem};
use crate::model::*;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub struct Cursor;

const TRANSCRIPTS: &str = "agent-transcripts";
const SUBAGENTS: &str = "subagents";
/// Said on every run: nothing in a Cursor transcript has a time.
const NOTE: &str = "Cursor transcripts record no times: the run's time is the file's modification time";

impl Format for Cursor {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        "cursor"
    }
    fn describe(&self) -> &'static str {
        "Cursor agent transcript, ~/.cursor/projects/<project>/agent-transcripts/<id>/<id>.jsonl (subagents in <id>/subagents/)"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return if is_session_dir(&p.path) { 100 } else { 0 };
        }
        let (mut role_lines, mut unknown, mut foreign) = (0, 0, 0);
        let own_place = under_transcripts(&p.path);
        for v in p.lines().take(20) {
            match kind_of(v) {
                Some(Line::Message) => role_lines += 1,
                Some(Line::TurnEnded) => {}
                // A record type Cursor did not write before (drift), or another format's
                // line: it settles nothing alone.
                Some(Line::Unknown) => unknown += 1,
                // Elsewhere one foreign line settles it: no need to parse on.
                None if !own_place => return 0,
                None => foreign += 1,
            }
        }
        // In its own place a damaged line or two does not make it someone else's file.
        if role_lines > 0 && own_place && role_lines >= foreign {
            return 100;
        }
        if role_lines > 0 && foreign == 0 && role_lines >= unknown {
            90
        } else {
            0
        }
    }

    fn is_run_dir(&self, dir: &Path) -> bool {
        is_session_dir(dir)
    }

    /// A session directory with everything in it (its transcript and subagents), or a file.
    fn summary_inputs(&self, path: &Path) -> Option<Vec<PathBuf>> {
        Some(vec![path.to_path_buf()])
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        if !path.is_dir() {
            return load_file(path);
        }
        // The session and its subagents, each its own trace.
        let mut traces = Vec::new();
        let mut first_error = None;
        let main = transcripts(path);
        for f in main.iter().chain(&transcripts(&path.join(SUBAGENTS))) {
            match load_file(f) {
                Ok(l) => traces.extend(l.traces),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        // The session names its subagents (each names its session): nothing else links them.
        let subs: Vec<Value> = traces
            .iter()
            .filter(|t| t.meta.attributes.iter().any(|(k, _)| k == "parentSession"))
            .map(|t| Value::String(t.meta.id.clone()))
            .collect();
        if main.len() == 1
            && !subs.is_empty()
            && let Some(t) = traces.first_mut()
        {
            t.meta.attributes.push(("subagents".into(), Value::Array(subs)));
        }
        match (traces.is_empty(), first_error) {
            (true, Some(e)) => Err(e),
            (true, None) => Err(LoadError::invalid(path, "no Cursor transcript in this directory")),
            _ => Ok(Loaded { traces }),
        }
    }

    fn follow(&self, path: &Path) -> Option<Follow> {
        // A session directory is several files: it is reloaded whole when it changes.
        if path.is_dir() {
            return None;
        }
        let main = path.to_path_buf();
        Some(Follow::new(
            path,
            Box::new(move || Box::new(Parser::new(&main)) as Box<dyn LineParser>),
        ))
    }

    fn decode_payload(&self, _t: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
        decode(ev, raw)
    }
}

fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    let mut f = Cursor.follow(path).expect("a file");
    f.poll()?;
    f.finish("Cursor transcript lines")
}

/// The `.jsonl` files directly in `dir`, sorted.
fn transcripts(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && p.is_file())
        .collect();
    out.sort();
    out
}

/// `agent-transcripts/<id>/` holding the session's transcript or its `subagents/`.
fn is_session_dir(dir: &Path) -> bool {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return false;
    };
    if parent.file_name().is_none_or(|n| n != TRANSCRIPTS) {
        return false;
    }
    let mut own = name.to_os_string();
    own.push(".jsonl");
    dir.join(own).is_file() || dir.join(SUBAGENTS).is_dir()
}

fn under_transcripts(path: &Path) -> bool {
    path.ancestors()
        .skip(1)
        .any(|a| a.file_name().is_some_and(|n| n == TRANSCRIPTS))
}

/// The session a subagent transcript belongs to: `<id>/subagents/<sub>.jsonl` → `<id>`.
fn parent_session(path: &Path) -> Option<String> {
    let dir = path.parent()?;
    if dir.file_name()? != SUBAGENTS {
        return None;
    }
    Some(dir.parent()?.file_name()?.to_string_lossy().into_owned())
}

enum Line {
    Message,
    TurnEnded,
    /// An object of neither shape that bears no other format's marks.
    Unknown,
}

/// Keys that mark another format's line: Claude Code lines carry `uuid`, `parentUuid` and
/// `sessionId`; OpenAI chat has `content` or `tool_calls` beside its `role` (ROLE_FOREIGN).
const FOREIGN_KEYS: [&str; 3] = ["uuid", "parentUuid", "sessionId"];
const ROLE_FOREIGN: [&str; 2] = ["content", "tool_calls"];

/// What a line is, for detection: Cursor's own shapes (`{role, message}`, `turn_ended`),
/// with fields Cursor did not write before ignored, or a line of no known shape.
fn kind_of(v: &Value) -> Option<Line> {
    let o = v.as_object()?;
    if FOREIGN_KEYS.iter().any(|k| o.contains_key(*k)) {
        return None;
    }
    if o.get("type").and_then(Value::as_str) == Some("turn_ended") {
        return Some(Line::TurnEnded);
    }
    match o.get("role") {
        Some(role) => {
            if ROLE_FOREIGN.iter().any(|k| o.contains_key(*k)) {
                return None;
            }
            role.as_str().filter(|r| !r.is_empty())?;
            o.get("message")?.as_object()?;
            Some(Line::Message)
        }
        None => Some(Line::Unknown),
    }
}

#[derive(Deserialize)]
struct LineRec<'a> {
    #[serde(borrow, default)]
    role: Option<Raw<'a>>,
    #[serde(borrow, rename = "type", default)]
    ty: Option<Raw<'a>>,
    #[serde(borrow, default)]
    status: Option<Raw<'a>>,
    #[serde(borrow, default)]
    message: Option<MessageRec<'a>>,
}

#[derive(Deserialize)]
struct MessageRec<'a> {
    #[serde(borrow, default)]
    content: Option<Raw<'a>>,
}

/// The index fields of one content block. Besides Anthropic's `tool_use`/`tool_result`
/// (`name`, `is_error`, `tool_use_id`), the drifted shapes name the same things otherwise:
/// `tool`/`toolName`, `id`/`toolCallId`/`tool_call_id`, `isError`.
#[derive(Deserialize, Default)]
struct BlockIdx<'a> {
    #[serde(borrow, rename = "type", default)]
    ty: Option<Raw<'a>>,
    #[serde(borrow, default)]
    name: Option<Raw<'a>>,
    #[serde(borrow, default)]
    is_error: Option<Raw<'a>>,
    #[serde(borrow, default)]
    id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    tool_use_id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    tool_call_id: Option<Raw<'a>>,
    #[serde(borrow, rename = "toolCallId", default)]
    tool_call_id_camel: Option<Raw<'a>>,
    #[serde(borrow, default)]
    tool: Option<Raw<'a>>,
    #[serde(borrow, rename = "toolName", default)]
    tool_name: Option<Raw<'a>>,
    #[serde(borrow, rename = "isError", default)]
    is_error_camel: Option<Raw<'a>>,
}

impl BlockIdx<'_> {
    /// The tool a call block names.
    fn tool_name(&self) -> Option<Cow<'_, str>> {
        text(self.name)
            .or_else(|| text(self.tool_name))
            .or_else(|| text(self.tool))
    }
    /// The id a call block carries, or the call a result block names.
    fn call_id(&self, result: bool) -> Option<Cow<'_, str>> {
        let own = if result { self.tool_use_id } else { self.id };
        own.or(self.tool_call_id_camel)
            .or(self.tool_call_id)
            .and_then(|r| text(Some(r)))
            .filter(|s| !s.is_empty())
    }
    fn failed(&self) -> bool {
        [self.is_error, self.is_error_camel]
            .iter()
            .flatten()
            .any(|e| e.0 == "true")
    }
}

/// What a content block is, by its type: Anthropic's names and the drifted ones that
/// session viewers read as the same (agent-sessions' `CursorSessionParser`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Block {
    Text,
    Thinking,
    Call,
    Result,
    Image,
}

fn block_kind(ty: &str) -> Option<Block> {
    Some(match ty {
        "text" => Block::Text,
        "thinking" | "redacted_thinking" => Block::Thinking,
        "tool_use" | "tool-use" | "tool_call" | "tool-call" => Block::Call,
        "tool_result" | "tool-result" => Block::Result,
        "image" => Block::Image,
        _ => return None,
    })
}

/// What the skim reads of one line.
pub(crate) struct Rec<'a> {
    role: Option<Cow<'a, str>>,
    ty: Option<Cow<'a, str>>,
    status: Option<Cow<'a, str>>,
    /// The message content as one string (no blocks).
    text: Option<&'a str>,
    /// Each block: its raw text (a part of the line) and its index fields.
    blocks: Vec<(&'a str, BlockIdx<'a>)>,
    problem: Option<String>,
}

fn text<'a>(r: Option<Raw<'a>>) -> Option<Cow<'a, str>> {
    let s = r?.0;
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(s).ok().map(Cow::Owned)
}

fn skim_rec(line: &[u8]) -> Option<Rec<'_>> {
    // The whole line is UTF-8 checked: serde skips the fields it ignores unchecked, and the
    // fast path must never read what serde_json::Value refuses.
    let line = std::str::from_utf8(line).ok()?;
    skim_fast(line).or_else(|| skim_serde(line))
}

/// The skimmer's reading of a line, in one pass that builds no value; None whenever it is
/// unsure (duplicate fields, a key with escapes, a block that is not an object, anything
/// malformed), and serde reads the line. Three serde passes over each line (the line, its
/// content list, each block) were most of `ls`'s time over 2,000 transcripts.
fn skim_fast(line: &str) -> Option<Rec<'_>> {
    let mut k = Skim::new(line.as_bytes());
    let (mut role, mut ty, mut status) = (None, None, None);
    let mut blocks = Vec::new();
    let (mut text, mut problem) = (None, None);
    let mut seen = Seen::default();
    k.object(|k, key| {
        match key {
            b"role" => {
                seen.first(0)?;
                role = k.raw()?;
            }
            b"type" => {
                seen.first(1)?;
                ty = k.raw()?;
            }
            b"status" => {
                seen.first(2)?;
                status = k.raw()?;
            }
            b"message" => {
                seen.first(3)?;
                match k.peek_byte()? {
                    b'n' => k.skip()?,
                    b'{' => {
                        let mut seen = Seen::default();
                        k.object(|k, key| {
                            if key != b"content" {
                                return k.skip();
                            }
                            seen.first(0)?;
                            match k.peek_byte()? {
                                b'[' => skim_blocks(k, line, &mut blocks),
                                b'"' => {
                                    text = Some(k.raw()??.0);
                                    Some(())
                                }
                                b'n' => k.skip(),
                                _ => {
                                    problem = Some("message.content is neither text nor a list of blocks");
                                    k.skip()
                                }
                            }
                        })?
                    }
                    _ => return None,
                }
            }
            _ => k.skip()?,
        }
        Some(())
    })?;
    if !k.at_end() {
        return None;
    }
    Some(Rec {
        role: self::text(role),
        ty: self::text(ty),
        status: self::text(status),
        text,
        blocks,
        problem: problem.map(String::from),
    })
}

/// The blocks of `message.content`, each as its text in the line and its index fields.
fn skim_blocks<'a>(k: &mut Skim<'a>, line: &'a str, out: &mut Vec<(&'a str, BlockIdx<'a>)>) -> Option<()> {
    k.array(|k, _| {
        let start = k.value_start();
        let mut idx = BlockIdx::default();
        let mut seen = Seen::default();
        k.object(|k, key| {
            let (n, slot) = match key {
                b"type" => (0, &mut idx.ty),
                b"name" => (1, &mut idx.name),
                b"is_error" => (2, &mut idx.is_error),
                b"id" => (3, &mut idx.id),
                b"tool_use_id" => (4, &mut idx.tool_use_id),
                b"tool_call_id" => (5, &mut idx.tool_call_id),
                b"toolCallId" => (6, &mut idx.tool_call_id_camel),
                b"tool" => (7, &mut idx.tool),
                b"toolName" => (8, &mut idx.tool_name),
                b"isError" => (9, &mut idx.is_error_camel),
                _ => return k.skip(),
            };
            seen.first(n)?;
            *slot = k.raw()?;
            Some(())
        })?;
        out.push((line.get(start..k.pos())?, idx));
        Some(())
    })
}

fn skim_serde(line: &str) -> Option<Rec<'_>> {
    let l: LineRec = serde_json::from_str(line).ok()?;
    let mut rec = Rec {
        role: text(l.role),
        ty: text(l.ty),
        status: text(l.status),
        text: None,
        blocks: Vec::new(),
        problem: None,
    };
    match l.message.and_then(|m| m.content) {
        Some(c) if c.0.starts_with('[') => match serde_json::from_str::<Vec<Raw>>(c.0) {
            Ok(blocks) => {
                for b in blocks {
                    match serde_json::from_str::<BlockIdx>(b.0) {
                        Ok(idx) => rec.blocks.push((b.0, idx)),
                        Err(e) => {
                            rec.blocks.push((b.0, BlockIdx::default()));
                            rec.problem = Some(format!("content block: {}", json_error(&e)));
                        }
                    }
                }
            }
            Err(e) => rec.problem = Some(format!("message.content: {}", json_error(&e))),
        },
        Some(c) if c.0.starts_with('"') => rec.text = Some(c.0),
        Some(c) if c.0 != "null" => rec.problem = Some("message.content is neither text nor a list of blocks".into()),
        _ => {}
    }
    Some(rec)
}

/// Calls waiting for their result: in call order (results come back in order) and by the id
/// a call carries. Each step is constant time: a file of many calls answered in reverse
/// order by id must not cost their square.
#[derive(Default)]
struct Waiting {
    order: std::collections::VecDeque<(u32, Option<Box<str>>)>,
    by_id: std::collections::HashMap<Box<str>, u32>,
    /// Taken by id, still in `order` (skipped when reached).
    taken: std::collections::HashSet<u32>,
}

impl Waiting {
    fn push(&mut self, call: u32, id: Option<Box<str>>) {
        if let Some(id) = &id {
            self.by_id.entry(id.clone()).or_insert(call);
        }
        self.order.push_back((call, id));
    }

    /// The call a result belongs to: the waiting call with the id it names, else (no id, or
    /// one no waiting call carries) the oldest waiting call.
    fn take(&mut self, id: Option<&str>) -> Option<u32> {
        if let Some(call) = id.and_then(|id| self.by_id.remove(id)) {
            self.taken.insert(call);
            return Some(call);
        }
        while let Some((call, id)) = self.order.pop_front() {
            if self.taken.remove(&call) {
                continue;
            }
            if let Some(id) = id
                && self.by_id.get(&id) == Some(&call)
            {
                self.by_id.remove(&id);
            }
            return Some(call);
        }
        None
    }

    /// Every call still waiting, oldest first; none waits after.
    fn drain(&mut self) -> Vec<u32> {
        let taken = std::mem::take(&mut self.taken);
        self.by_id.clear();
        self.order
            .drain(..)
            .map(|(c, _)| c)
            .filter(|c| !taken.contains(c))
            .collect()
    }

    fn is_empty(&self) -> bool {
        self.order.len() == self.taken.len()
    }
}

/// The Cursor line parser: one trace a file.
pub struct Parser {
    path: PathBuf,
    root: Option<u32>,
    file: u16,
    /// Calls waiting for a result.
    waiting: Waiting,
    named: bool,
    /// How the last turn ended, if the last record ended one.
    ended: Option<RunStatus>,
}

impl Parser {
    pub fn new(path: &Path) -> Parser {
        Parser {
            path: path.to_path_buf(),
            root: None,
            file: 0,
            waiting: Default::default(),
            named: false,
            ended: None,
        }
    }

    fn ensure(&mut self, loc: LineLoc, sink: &mut Sink) -> u32 {
        if let Some(r) = self.root {
            sink.touch(0);
            return r;
        }
        let id = stem(&self.path);
        let mut attributes = vec![("note".to_string(), Value::String(NOTE.into()))];
        if let Some(p) = parent_session(&self.path) {
            attributes.push(("parentSession".into(), Value::String(p)));
        }
        let mut t = Trace::new(RunMeta {
            id: id.clone(),
            format: "cursor",
            source: sink.path.clone(),
            attributes,
            ..Default::default()
        });
        self.file = t.add_file(sink.path.clone());
        let root = t.add(NewEvent {
            origin: loc.origin(self.file),
            ..NewEvent::new(EventKind::Run, &id)
        });
        sink.push_trace(t);
        self.root = Some(root);
        root
    }

    fn apply_rec(&mut self, rec: &Rec, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let root = self.ensure(loc, sink);
        if let Some(p) = &rec.problem {
            sink.error(loc.line, p.clone());
        }
        let origin = loc.origin(self.file);
        if rec.role.is_none() {
            match rec.ty.as_deref() {
                Some("turn_ended") => {
                    // Calls of the turn with no result: none was recorded, none will come.
                    let t = &mut sink.traces[0];
                    for i in self.waiting.drain() {
                        t.event_mut(i).status = Status::Unknown;
                    }
                    let ok = rec.status.as_deref().is_none_or(|s| s == "success");
                    self.ended = Some(if ok { RunStatus::Ok } else { RunStatus::Error });
                    t.add(NewEvent {
                        parent: Parent::Index(root),
                        status: if ok { Status::Ok } else { Status::Error },
                        payload: PayloadRef::Deferred,
                        origin,
                        ..NewEvent::new(EventKind::Step, "turn ended")
                    });
                }
                other => {
                    // A record Cursor did not write before: drift (formats/mod.rs).
                    self.drift(other.unwrap_or("record"), line, root, origin, sink);
                }
            }
            return;
        }
        let role_s = rec.role.as_deref().unwrap_or("");
        let role = Role::parse(role_s);
        if role == Role::Other {
            // A role Cursor does not write: drift too, named by its role.
            self.drift(role_s, line, root, origin, sink);
            return;
        }
        self.ended = None;
        let t = &mut sink.traces[0];
        // An assistant line is one model reply: its blocks hang under it.
        let parent = if role == Role::Assistant {
            t.add(NewEvent {
                parent: Parent::Index(root),
                status: Status::Ok,
                origin,
                ..NewEvent::new(EventKind::LlmCall, "assistant")
            })
        } else {
            root
        };
        let message = |o: Origin| NewEvent {
            parent: Parent::Index(parent),
            status: Status::Ok,
            payload: PayloadRef::Deferred,
            origin: o,
            ..NewEvent::new(EventKind::Message(role), role_s)
        };
        if let Some(s) = rec.text {
            let o = engine::sub_origin(loc, self.file, line, s.as_bytes());
            t.add(message(o));
            if role == Role::User
                && let Ok(s) = serde_json::from_str::<String>(s)
            {
                self.name_from(&s, sink);
            }
            return;
        }
        for (raw, b) in &rec.blocks {
            let o = engine::sub_origin(loc, self.file, line, raw.as_bytes());
            let t = &mut sink.traces[0];
            let ty = text(b.ty);
            match ty.as_deref().map(block_kind) {
                Some(Some(Block::Text)) => {
                    t.add(message(o));
                    if role == Role::User && !self.named {
                        let v: Option<Value> = serde_json::from_str(raw).ok();
                        let s = v
                            .as_ref()
                            .and_then(|v| v.get("text"))
                            .and_then(Value::as_str)
                            .map(str::to_owned);
                        if let Some(s) = s {
                            self.name_from(&s, sink);
                        }
                    }
                }
                Some(Some(Block::Thinking)) => {
                    t.add(NewEvent {
                        parent: Parent::Index(parent),
                        status: Status::Ok,
                        payload: PayloadRef::Deferred,
                        origin: o,
                        ..NewEvent::new(EventKind::Other, "thinking")
                    });
                }
                Some(Some(Block::Call)) => {
                    let name = b.tool_name().unwrap_or(Cow::Borrowed("tool"));
                    let id = b.call_id(false);
                    let i = t.add(NewEvent {
                        id: id.as_deref(),
                        parent: Parent::Index(parent),
                        status: Status::Pending,
                        payload: PayloadRef::Deferred,
                        origin: o,
                        ..NewEvent::new(EventKind::ToolCall, &name)
                    });
                    self.waiting.push(i, id.map(|s| s.into()));
                }
                Some(Some(Block::Result)) => match self.waiting.take(b.call_id(true).as_deref()) {
                    Some(i) => {
                        let e = t.event_mut(i);
                        e.status = if b.failed() { Status::Error } else { Status::Ok };
                        e.origin2 = Some(Box::new(o));
                    }
                    None => {
                        sink.warning(Some(loc.line), "a tool result with no call waiting for it");
                        sink.traces[0].add(NewEvent {
                            parent: Parent::Index(parent),
                            status: Status::Unknown,
                            payload: PayloadRef::Deferred,
                            origin: o,
                            ..NewEvent::new(EventKind::Other, ty.as_deref().unwrap_or("tool_result"))
                        });
                    }
                },
                Some(Some(Block::Image)) => {
                    t.add(NewEvent {
                        parent: Parent::Index(parent),
                        payload: PayloadRef::Deferred,
                        origin: o,
                        ..NewEvent::new(EventKind::Other, "image")
                    });
                }
                Some(None) | None => {
                    // A block type Cursor did not write before (or none): drift.
                    let ty = ty.as_deref().unwrap_or("block");
                    self.drift(ty, raw.as_bytes(), parent, o, sink);
                }
            }
        }
    }

    /// A line or block of a kind Cursor did not write before (formats/mod.rs: drift):
    /// counted as skipped, and shown under `parent` when it carries text.
    fn drift(&mut self, name: &str, record: &[u8], parent: u32, origin: Origin, sink: &mut Sink) {
        sink.skip(name);
        let v = serde_json::from_slice::<Value>(record).ok();
        if v.as_ref().and_then(super::drift_text).is_some() {
            sink.traces[0].add(NewEvent {
                parent: Parent::Index(parent),
                status: Status::Ok,
                payload: PayloadRef::Deferred,
                origin,
                ..NewEvent::new(EventKind::Other, name)
            });
        }
    }

    /// Name the run after the first user text, without Cursor's `<user_query>` wrapper.
    fn name_from(&mut self, s: &str, sink: &mut Sink) {
        if self.named {
            return;
        }
        let s = s.replace("<user_query>", "").replace("</user_query>", "");
        let first = s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
        if first.is_empty() {
            return;
        }
        let mut name: String = first.chars().take(99).collect();
        if first.chars().count() > 99 {
            name.push('…');
        }
        self.named = true;
        sink.traces[0].meta.name = Some(name);
    }
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
                self.ensure(loc, sink);
                sink.error(loc.line, jsonl::why_unreadable::<LineRec>(line, "unreadable line"));
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
        // A transcript has no end record but `turn_ended`: a call still waiting means the
        // agent is at work (or stopped there).
        let status = match self.ended {
            Some(s) => s,
            None if !self.waiting.is_empty() => RunStatus::Running,
            None => RunStatus::Unknown,
        };
        t.meta.status = status;
        // The file's modification time places the run; no duration is claimed.
        t.meta.start = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_nanos()).ok());
        t.meta.end = None;
        let e = t.event_mut(root);
        e.status = status.event_status();
        if let Some(n) = t.meta.name.clone() {
            let r = t.strings.intern(&n);
            t.event_mut(root).name = r;
        }
    }
}

/// Rebuild a payload from its record(s): a content block (a tool call's `tool_use`, then its
/// `tool_result`), or a whole line.
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
        let ty = v.get("type").and_then(Value::as_str).unwrap_or("").to_string();
        if ev.kind == EventKind::Other && is_drift(&v) {
            return super::drift_payload(&v, &[]);
        }
        match block_kind(&ty) {
            Some(Block::Text) if ev.kind == EventKind::Message(Role::User) => out.input = take(&mut v, "text"),
            Some(Block::Text) => out.output = take(&mut v, "text"),
            Some(Block::Thinking) if v.get("thinking").is_some() => out.output = take(&mut v, "thinking"),
            Some(Block::Thinking) if v.get("text").is_some() => out.output = take(&mut v, "text"),
            Some(Block::Call) => {
                out.input = ["input", "args", "arguments"].iter().find_map(|k| take(&mut v, k));
                if let Some(id) = ["id", "toolCallId", "tool_call_id"]
                    .iter()
                    .find_map(|k| take(&mut v, k))
                {
                    out.extra.push(("id".into(), id));
                }
            }
            Some(Block::Result) => {
                out.output = ["content", "output", "result"]
                    .iter()
                    .find_map(|k| take(&mut v, k))
                    .map(flatten_text);
                if ["is_error", "isError"]
                    .iter()
                    .any(|k| v.get(*k) == Some(&Value::Bool(true)))
                {
                    out.error = Some(ErrorInfo {
                        message: "the tool reported an error".into(),
                        ..Default::default()
                    });
                }
                for k in ["tool_use_id", "toolCallId", "tool_call_id"] {
                    if let Some(id) = take(&mut v, k) {
                        out.extra.push((k.into(), id));
                    }
                }
            }
            _ if v.get("role").is_some() => {
                // A whole line (an LLM call): its message.
                out.output = v.get_mut("message").map(Value::take);
            }
            _ if v.is_string() && ev.kind == EventKind::Message(Role::User) => out.input = Some(v),
            _ if v.is_string() => out.output = Some(v),
            _ if i > 0 => out.output = Some(v),
            _ => out.input = Some(v),
        }
    }
    out
}

/// A line or block of a kind Cursor did not write before (see `Parser::drift`): a line with
/// a role it does not know, or with neither role nor a type it knows; a block whose type is
/// not one it knows (or that has none).
fn is_drift(v: &Value) -> bool {
    match v.get("role") {
        Some(r) => Role::parse(r.as_str().unwrap_or("")) == Role::Other,
        None => {
            let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
            v.is_object() && ty != "turn_ended" && block_kind(ty).is_none()
        }
    }
}

/// A result's `[{type:"text", text}]` list as its text, when that is all it holds.
fn flatten_text(v: Value) -> Value {
    if let Value::Array(items) = &v {
        let texts: Option<Vec<&str>> = items
            .iter()
            .map(|b| {
                (b.get("type").and_then(Value::as_str) == Some("text"))
                    .then(|| b.get("text").and_then(Value::as_str))
                    .flatten()
            })
            .collect();
        if let Some(t) = texts {
            return Value::String(t.join("\n"));
        }
    }
    v
}

fn take(v: &mut Value, k: &str) -> Option<Value> {
    v.get_mut(k).filter(|x| !x.is_null()).map(Value::take)
}

/// A call's gist by Cursor's agent tools (Claude Code's names in its transcripts, and
/// Cursor's own): the command, the file, the pattern, the URL or query, a subagent's prompt.
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{first_arg, generic, key_or_generic};
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "Bash" | "Shell" | "run_terminal_cmd" | "run_terminal_command" => by(&["command"]),
        "Read" | "Write" | "Edit" | "MultiEdit" | "StrReplace" | "Delete" | "read_file" | "edit_file"
        | "delete_file" => by(&["file_path", "path", "target_file"]),
        "Grep" | "Glob" | "grep_search" | "file_search" | "glob_file_search" => {
            by(&["pattern", "query", "glob_pattern"])
        }
        "codebase_search" | "WebSearch" | "web_search" => by(&["query", "search_term"]),
        "WebFetch" => by(&["url"]),
        "LS" | "list_dir" => by(&["path", "target_directory"]),
        "Agent" | "Task" => by(&["description", "prompt"]),
        n if n.starts_with("mcp__") || n.starts_with("mcp_") => first_arg(input),
        _ => generic(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::{fixture, outline, with_byte_edits};
    use proptest::prelude::*;

    const SESSION: &str = "agent-transcripts/1b2c3d4e-aaaa-4bbb-8ccc-000000000002";

    #[test]
    fn a_session_directory_loads_the_session_and_its_subagent_as_two_traces() {
        let dir = fixture("cursor", SESSION);
        assert!(Cursor.is_run_dir(&dir));
        let l = Cursor.load(&dir).unwrap();
        assert_eq!(l.traces.len(), 2);
        let (t, sub) = (&l.traces[0], &l.traces[1]);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.id, "1b2c3d4e-aaaa-4bbb-8ccc-000000000002");
        assert_eq!(t.meta.name.as_deref(), Some("Why does the csv test fail?"));
        assert_eq!(t.meta.status, RunStatus::Ok, "the turn ended with success");
        assert_eq!(
            outline(t),
            [
                "run Why does the csv test fail?",
                "  message user",
                "  llm assistant",
                "    other thinking",
                "    message assistant",
                "    tool Shell",
                "    tool Read",
                "  llm assistant",
                "    message assistant",
                "    tool Task",
                "  llm assistant",
                "    message assistant",
                "  step turn ended",
            ]
        );
        let c = t.counts();
        assert_eq!((c.tool_calls, c.llm_calls, c.errors, c.tokens), (3, 3, 1, 0));
        // No times anywhere: the run is placed by the file's modification time, said so.
        assert!(t.events.iter().all(|e| e.start.is_none() && e.duration.is_none()));
        let mtime = std::fs::metadata(dir.join("1b2c3d4e-aaaa-4bbb-8ccc-000000000002.jsonl"))
            .unwrap()
            .modified()
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i64;
        assert_eq!(t.meta.start, Some(mtime));
        assert_eq!(t.duration(), None);
        assert!(t.meta.attributes.iter().any(|(k, v)| k == "note" && v == NOTE));
        // Results joined by position: the first waiting call takes the first result.
        let shell = t.walk().into_iter().find(|&(i, _)| t.name(i) == "Shell").unwrap().0;
        let p = crate::formats::payload(t, t.event(shell));
        assert_eq!(t.event(shell).status, Status::Error);
        assert_eq!(
            p.input,
            Some(serde_json::json!({"command": "pytest -q tests/test_csv.py"}))
        );
        assert_eq!(p.output, Some(Value::String("1 failed".into())));
        let task = t.walk().into_iter().find(|&(i, _)| t.name(i) == "Task").unwrap().0;
        let p = crate::formats::payload(t, t.event(task));
        assert_eq!(p.output, Some(Value::String("fixtures/data.csv".into())));
        assert!(
            t.meta
                .attributes
                .iter()
                .any(|(k, v)| k == "subagents" && v == &serde_json::json!(["9f8e7d6c-1111-4222-8333-000000000003"]))
        );
        // The subagent is its own trace, naming its session.
        assert_eq!(sub.meta.id, "9f8e7d6c-1111-4222-8333-000000000003");
        assert_eq!(sub.counts().tool_calls, 1);
        assert!(
            sub.meta
                .attributes
                .iter()
                .any(|(k, v)| k == "parentSession" && v == "1b2c3d4e-aaaa-4bbb-8ccc-000000000002")
        );
        // The directory scan finds the session directory (and through it the subagent).
        let d = crate::source::discover(&[fixture("cursor", "agent-transcripts")], None);
        let mut found: Vec<_> = d
            .runs
            .iter()
            .map(|r| {
                (
                    r.path.file_name().unwrap().to_string_lossy().into_owned(),
                    r.format.id(),
                )
            })
            .collect();
        found.sort();
        assert_eq!(
            found,
            [
                ("1b2c3d4e-aaaa-4bbb-8ccc-000000000002".to_string(), "cursor"),
                ("5c6d7e8f-bbbb-4ccc-8ddd-000000000004".to_string(), "cursor"),
                ("damaged.jsonl".to_string(), "cursor"),
                ("drift.jsonl".to_string(), "cursor")
            ]
        );
    }

    #[test]
    fn results_join_by_position_even_when_they_name_ids_no_call_has() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.jsonl");
        std::fs::write(
            &p,
            [
                r#"{"role":"assistant","message":{"content":[{"type":"tool_use","name":"A","input":{}},{"type":"tool_use","name":"B","input":{}}]}}"#,
                r#"{"role":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a"}]}}"#,
                r#"{"role":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"b"}]}}"#,
                r#"{"role":"assistant","message":{"content":[{"type":"tool_use","name":"C","input":{}}]}}"#,
            ]
            .join("\n")
                + "\n",
        )
        .unwrap();
        let t = &Cursor.load(&p).unwrap().traces[0];
        let out = |name: &str| {
            let i = t.walk().into_iter().find(|&(i, _)| t.name(i) == name).unwrap().0;
            (t.event(i).status, crate::formats::payload(t, t.event(i)).output)
        };
        assert_eq!(out("A"), (Status::Ok, Some(Value::String("a".into()))));
        assert_eq!(out("B"), (Status::Ok, Some(Value::String("b".into()))));
        assert_eq!(out("C"), (Status::Pending, None));
        assert_eq!(t.meta.status, RunStatus::Running);
    }

    const DRIFTED: &str = "agent-transcripts/5c6d7e8f-bbbb-4ccc-8ddd-000000000004";

    /// The output and status of the tool call named `name`.
    fn result_of(t: &Trace, name: &str) -> (Status, Option<Value>) {
        let i = t.walk().into_iter().find(|&(i, _)| t.name(i) == name).unwrap().0;
        (t.event(i).status, crate::formats::payload(t, t.event(i)).output)
    }

    #[test]
    fn drifted_block_names_are_the_same_calls_results_and_thinking() {
        let l = Cursor.load(&fixture("cursor", DRIFTED)).unwrap();
        assert_eq!(l.traces.len(), 1);
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert!(t.skipped.is_empty(), "{:?}", t.skipped.iter().collect::<Vec<_>>());
        assert_eq!(
            outline(t),
            [
                "run Add a --dry-run flag to scripts/deploy.sh",
                "  message user",
                "  llm assistant",
                "    other thinking",
                "    message assistant",
                "    tool Read",
                "    tool Grep",
                "  llm assistant",
                "    other thinking",
                "    tool Edit",
                "  llm assistant",
                "    message assistant",
                "    tool Write",
                "  llm assistant",
                "    tool Shell",
                "  llm assistant",
                "    message assistant",
                "  step turn ended",
            ]
        );
        let c = t.counts();
        assert_eq!((c.tool_calls, c.llm_calls, c.errors, c.tokens), (5, 5, 1, 0));
        assert_eq!(t.meta.status, RunStatus::Ok);
        // Results come back in another order than the calls: joined by the id they name.
        assert_eq!(
            result_of(t, "Read"),
            (
                Status::Ok,
                Some(Value::String(
                    "#!/bin/sh\nset -eu\nrsync -a build/ \"$DEPLOY_HOST:/srv/app/\"\n".into()
                ))
            )
        );
        assert_eq!(
            result_of(t, "Grep"),
            (Status::Ok, Some(Value::String("No matches found".into())))
        );
        // `tool-call`'s `toolName`/`args`, `tool-result`'s `output`/`isError`.
        let edit = t.find("call_3").unwrap();
        let p = crate::formats::payload(t, t.event(edit));
        assert_eq!(t.event(edit).status, Status::Error);
        assert_eq!(p.input.unwrap()["old_string"], "rsync -a build/");
        assert_eq!(
            p.output,
            Some(Value::String("old_string not found in scripts/deploy.sh".into()))
        );
        assert!(p.error.is_some());
        // A call without id is joined by position, as before.
        let (st, out) = result_of(t, "Shell");
        assert_eq!(st, Status::Ok);
        assert!(
            out.unwrap()
                .as_str()
                .unwrap()
                .starts_with("sending incremental file list")
        );
        // Thinking, its text under `thinking` or `text`.
        let thinking: Vec<Value> = t
            .walk()
            .into_iter()
            .filter(|&(i, _)| t.name(i) == "thinking")
            .filter_map(|(i, _)| crate::formats::payload(t, t.event(i)).output)
            .collect();
        assert_eq!(
            thinking,
            [
                Value::String("Read the script, and check whether a dry-run switch exists already.".into()),
                Value::String("No flag parsing yet: add a case over \"$1\".".into())
            ]
        );
    }

    #[test]
    fn drift_lines_roles_and_blocks_are_counted_quietly_and_shown_when_they_carry_text() {
        let t = &Cursor
            .load(&fixture("cursor", "agent-transcripts/drift.jsonl"))
            .unwrap()
            .traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let mut skipped: Vec<(String, u64)> = t.skipped.iter().map(|(k, n)| (k.to_string(), n)).collect();
        skipped.sort();
        assert_eq!(
            skipped,
            [
                ("checkpoint".to_string(), 1),
                ("citation".to_string(), 1),
                ("context_usage".to_string(), 1),
                ("reviewer".to_string(), 1)
            ]
        );
        assert_eq!(
            outline(t),
            [
                "run Why is the build slow?",
                "  message user",
                "  llm assistant",
                "    message assistant",
                "    tool Shell",
                "  other reviewer",
                "  llm assistant",
                "    message assistant",
                "    other citation",
                "  step turn ended",
            ]
        );
        let c = t.counts();
        assert_eq!((c.tool_calls, c.llm_calls, c.errors), (1, 2, 0));
        assert_eq!(t.meta.status, RunStatus::Ok);
        // The generic events show their text and the record.
        let rev = t.walk().into_iter().find(|&(i, _)| t.name(i) == "reviewer").unwrap().0;
        let p = crate::formats::payload(t, t.event(rev));
        assert_eq!(
            p.input,
            Some(Value::String("Consider sccache before changing the profile.".into()))
        );
        assert_eq!(p.extra[0].0, "record");
        assert_eq!(p.extra[0].1["role"], "reviewer");
        let cit = t.walk().into_iter().find(|&(i, _)| t.name(i) == "citation").unwrap().0;
        let p = crate::formats::payload(t, t.event(cit));
        assert_eq!(
            p.input,
            Some(Value::String("target/cargo-timings/cargo-timing.html".into()))
        );
        // A role line after the turn ended does not reopen it.
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("x.jsonl");
        std::fs::write(
            &f,
            "{\"role\":\"user\",\"message\":{\"content\":\"hi\"}}\n{\"type\":\"turn_ended\",\"status\":\"success\"}\n{\"role\":\"observer\",\"message\":{}}\n",
        )
        .unwrap();
        let t = &Cursor.load(&f).unwrap().traces[0];
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.skipped.total(), 1);
    }

    /// A record of a kind no Cursor writes yet: a line with a `type` and no role, or one with
    /// a role Cursor does not use; sometimes with text.
    fn unknown_line(rng: &mut crate::formats::testing::Rng, _near: &Value) -> Value {
        let mut m = serde_json::Map::new();
        let name = rng.type_name();
        let text = rng.maybe_text();
        if rng.one_in(2) {
            m.insert("type".into(), Value::String(name));
            if let Some(t) = text {
                m.insert(["text", "summary", "content"][rng.below(3)].into(), Value::String(t));
            }
        } else {
            m.insert("role".into(), Value::String(name));
            let blocks: Vec<Value> = text
                .map(|t| serde_json::json!({"type": "text", "text": t}))
                .into_iter()
                .collect();
            m.insert("message".into(), serde_json::json!({"content": blocks}));
        }
        m.insert("zz".into(), rng.value());
        Value::Object(m)
    }

    /// Drift inside the lines: a block of an unknown type into some `message.content` lists.
    /// Returns the blocks inserted.
    fn drift_blocks(path: &Path, rng: &mut crate::formats::testing::Rng) -> usize {
        let Ok(text) = std::fs::read_to_string(path) else {
            return 0;
        };
        let mut inserted = 0;
        let mut out = String::new();
        for line in text.lines() {
            let mut v: Value = match serde_json::from_str(line) {
                Ok(v) => v,
                Err(_) => {
                    out.push_str(line);
                    out.push('\n');
                    continue;
                }
            };
            // Into lines of the roles Cursor writes: a line of another role is drift whole.
            let known = v
                .get("role")
                .and_then(Value::as_str)
                .is_some_and(|r| Role::parse(r) != Role::Other);
            if let Some(Value::Array(blocks)) = v.pointer_mut("/message/content")
                && known
                && rng.one_in(3)
            {
                let mut b = serde_json::json!({"type": rng.type_name(), "zz": rng.value()});
                if let Some(t) = rng.maybe_text() {
                    b["text"] = Value::String(t);
                }
                let at = rng.below(blocks.len() + 1);
                blocks.insert(at, b);
                inserted += 1;
            }
            out.push_str(&v.to_string());
            out.push('\n');
        }
        std::fs::write(path, out).unwrap();
        inserted
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on our fixtures, the sample trace and the corpus'
        /// transcripts: unknown lines, roles, blocks and fields change no count and add no
        /// diagnostic. (Files, not session directories: a copy out of `agent-transcripts/`
        /// is no session directory; out of its place a transcript is detected by its lines.)
        #[test]
        fn drift_is_skipped_quietly(seed in any::<u64>()) {
            let mut sources = crate::formats::testing::drift_sources(
                "cursor",
                &[
                    "tests/fixtures/cursor/agent-transcripts/1b2c3d4e-aaaa-4bbb-8ccc-000000000002/1b2c3d4e-aaaa-4bbb-8ccc-000000000002.jsonl",
                    "tests/fixtures/cursor/agent-transcripts/1b2c3d4e-aaaa-4bbb-8ccc-000000000002/subagents/9f8e7d6c-1111-4222-8333-000000000003.jsonl",
                    "tests/fixtures/cursor/agent-transcripts/5c6d7e8f-bbbb-4ccc-8ddd-000000000004/5c6d7e8f-bbbb-4ccc-8ddd-000000000004.jsonl",
                    "tests/fixtures/cursor/agent-transcripts/drift.jsonl",
                    "sample-traces/cursor/agent-transcripts/4a7b1c2d-3e4f-4a5b-9c6d-7e8f9a0b1c2d/4a7b1c2d-3e4f-4a5b-9c6d-7e8f9a0b1c2d.jsonl",
                ],
            );
            sources.retain(|p| p.is_file());
            crate::formats::testing::drift_check(&sources, seed, &|f, rng| {
                if f.extension().is_none_or(|x| x != "jsonl") {
                    return 0;
                }
                drift_blocks(f, rng) + crate::formats::testing::drift_jsonl(f, rng, &unknown_line)
            });
        }
    }

    #[test]
    fn waiting_calls_are_taken_by_id_else_oldest_first() {
        let mut w = Waiting::default();
        w.push(1, Some("x".into()));
        w.push(2, None);
        w.push(3, Some("z".into()));
        assert_eq!(w.take(Some("z")), Some(3));
        assert!(!w.is_empty());
        // No id: the oldest still waiting.
        assert_eq!(w.take(None), Some(1));
        // Its id was taken with it: a result naming it takes the oldest left.
        assert_eq!(w.take(Some("x")), Some(2));
        assert!(w.is_empty());
        assert_eq!(w.take(None), None);
        w.push(4, Some("y".into()));
        w.push(5, Some("v".into()));
        assert_eq!(w.take(Some("v")), Some(5));
        assert_eq!(w.drain(), [4]);
        assert!(w.is_empty());
        // Many calls answered by id in reverse order: each joined to its own call.
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("many.jsonl");
        let n = 20_000;
        let calls: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"type":"tool_call","id":"c{i}","name":"T","input":{{"i":{i}}}}}"#))
            .collect();
        let results: Vec<String> = (0..n)
            .rev()
            .map(|i| format!(r#"{{"type":"tool-result","toolCallId":"c{i}","content":"r{i}"}}"#))
            .collect();
        std::fs::write(
            &p,
            format!(
                "{{\"role\":\"assistant\",\"message\":{{\"content\":[{}]}}}}\n{{\"role\":\"user\",\"message\":{{\"content\":[{}]}}}}\n",
                calls.join(","),
                results.join(",")
            ),
        )
        .unwrap();
        let t = &Cursor.load(&p).unwrap().traces[0];
        assert_eq!(t.counts().tool_calls, n);
        for i in [0, n / 2, n - 1] {
            let e = t.event(t.find(&format!("c{i}")).unwrap());
            let out = crate::formats::payload(t, e).output;
            assert_eq!(out, Some(Value::String(format!("r{i}"))));
        }
    }

    #[test]
    fn a_damaged_transcript_loads_what_it_can_and_says_what_was_wrong() {
        let l = Cursor
            .load(&fixture("cursor", "agent-transcripts/damaged.jsonl"))
            .unwrap();
        let t = &l.traces[0];
        let lines: Vec<_> = t.diagnostics.iter().map(|d| (d.line, d.severity)).collect();
        assert_eq!(
            lines,
            [
                (Some(2), Severity::Error),
                (Some(3), Severity::Error),
                (Some(4), Severity::Warning),
                (Some(5), Severity::Error),
                (Some(10), Severity::Warning),
            ]
        );
        // Line 7 (`{"kind":"mystery"}`, no role) is drift: counted, no warning, nothing shown.
        assert_eq!(t.skipped.iter().collect::<Vec<_>>(), [("record", 1)]);
        assert_eq!(t.counts().tool_calls, 1, "Edit; the Shell call's line was cut");
        assert_eq!(t.meta.name.as_deref(), Some("Fix it."));
    }

    #[test]
    fn detection_claims_cursor_transcripts_and_nothing_else() {
        let probe = |p: &Path| Probe::open(p).unwrap();
        let main = fixture(
            "cursor",
            &format!("{SESSION}/1b2c3d4e-aaaa-4bbb-8ccc-000000000002.jsonl"),
        );
        assert_eq!(Cursor.detect(&probe(&main)), 100);
        assert_eq!(crate::formats::detect(&main).unwrap().id(), "cursor");
        assert_eq!(Cursor.detect(&probe(&fixture("cursor", SESSION))), 100);
        // Out of its place, a clean transcript is still recognised by its lines.
        let d = tempfile::tempdir().unwrap();
        let copy = d.path().join("x.jsonl");
        std::fs::copy(&main, &copy).unwrap();
        assert_eq!(crate::formats::detect(&copy).unwrap().id(), "cursor");
        for (format, name) in [
            ("claude-code", "session.jsonl"),
            ("claude-code", "sess-sub/subagents/agent-a1b2c3.jsonl"),
            ("codex", "rollout-turns.jsonl"),
            ("openai-chat", "dataset.jsonl"),
            ("openai-chat", "messages.json"),
            ("copilot-cli", "damaged.jsonl"),
        ] {
            assert_eq!(Cursor.detect(&probe(&fixture(format, name))), 0, "{format}/{name}");
        }
        // Claude Code's session directory holds `subagents/` too: not a Cursor session.
        assert!(!Cursor.is_run_dir(&fixture("claude-code", "sess-sub")));
    }

    #[test]
    fn parallel_batches_build_the_same_tree_as_one_line_at_a_time() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.jsonl");
        let mut lines = Vec::new();
        for i in 0..700 {
            lines.push(format!(
                r#"{{"role":"assistant","message":{{"content":[{{"type":"text","text":"step {i}"}},{{"type":"tool_use","name":"T{}","input":{{"i":{i}}}}}]}}}}"#,
                i % 4
            ));
            if i % 3 != 0 {
                lines.push(format!(
                    r#"{{"role":"user","message":{{"content":[{{"type":"tool_result","content":"r{i}","is_error":{}}}]}}}}"#,
                    i % 5 == 0
                ));
            }
        }
        lines.push("{cut".into());
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        let batched = Cursor.load(&p).unwrap().traces.remove(0);
        let mut parser = Parser::new(&p);
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
        assert_eq!(batched.counts().tool_calls, 700);
        let shape = |t: &Trace| {
            t.walk()
                .iter()
                .map(|&(i, d)| {
                    let e = t.event(i);
                    (t.name(i).to_string(), d, e.status, e.origin, e.origin2.clone())
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(shape(&batched), shape(&single));
        assert_eq!(batched.diagnostics, single.diagnostics);
    }

    /// Everything a `Rec` holds, comparable.
    fn rec_shape(r: &Rec) -> String {
        let raw = |x: &Option<Raw>| x.as_ref().map(|r| r.0.to_string());
        let blocks: Vec<_> = r
            .blocks
            .iter()
            .map(|(b, i)| {
                let ids = [&i.id, &i.tool_use_id, &i.tool_call_id, &i.tool_call_id_camel].map(raw);
                let more = [&i.tool, &i.tool_name, &i.is_error_camel].map(raw);
                (b.to_string(), raw(&i.ty), raw(&i.name), raw(&i.is_error), ids, more)
            })
            .collect();
        format!(
            "{:?} {:?} {:?} {:?} {:?} {:?}",
            r.role,
            r.ty,
            r.status,
            r.text,
            blocks,
            r.problem.is_some()
        )
    }

    /// (role, type, blocks' (type, name)) the slow way, with serde_json::Value.
    type Slow = (Option<String>, Option<String>, Vec<(Option<String>, Option<String>)>);

    fn by_value(line: &[u8]) -> Option<Slow> {
        let v: Value = serde_json::from_slice(line).ok()?;
        let s = |x: Option<&Value>| x.and_then(Value::as_str).map(str::to_owned);
        let blocks = match v.get("message").and_then(|m| m.get("content")) {
            Some(Value::Array(a)) => a.iter().map(|b| (s(b.get("type")), s(b.get("name")))).collect(),
            _ => Vec::new(),
        };
        Some((s(v.get("role")), s(v.get("type")), blocks))
    }

    fn line_strategy() -> impl Strategy<Value = Vec<u8>> {
        let word = "[a-z0-9_\\\\\"é ]{0,6}";
        let role = prop::sample::select(vec!["user", "assistant", "system", "us\\u0065r"]);
        let block = prop::sample::select(vec![
            "text",
            "thinking",
            "tool_use",
            "tool_result",
            "image",
            "tool-call",
            "tool-result",
        ]);
        // The fields a drifted call or result block names its id, tool and failure by.
        let more = prop::sample::select(vec![
            "",
            r#","id":"c1""#,
            r#","tool_use_id":"c1","toolCallId":"c2""#,
            r#","tool_call_id":null,"toolName":"R","isError":true"#,
            r#","tool":{"k":1},"id":3"#,
        ]);
        // Beside the blocks: a top-level extra (status, type, nested keys of the same names), and the
        // message's other shapes (text content, null content, null message, no message).
        let extra = prop::sample::select(vec![
            "",
            r#","status":"error""#,
            r#","type":"turn_ended""#,
            r#","x":{"role":1,"message":2}"#,
            r#","status":null"#,
        ]);
        let shape = 0..5u8;
        let base = (
            role,
            prop::collection::vec((block, word, any::<bool>(), more), 0..4),
            extra,
            shape,
        )
            .prop_map(|(role, blocks, extra, shape)| {
                let b: Vec<String> = blocks
                    .iter()
                    .map(|(ty, w, err, more)| {
                        let err = if *err { r#","is_error":true"# } else { "" };
                        format!(r#"{{"type":"{ty}","name":"{w}","text":"{w}"{err}{more},"input":{{"x":[1,"{w}"]}}}}"#)
                    })
                    .collect();
                let message = match shape {
                    0 => r#","message":{"content":"hi \"there\""}"#.to_string(),
                    1 => r#","message":{"content":null,"id":3}"#.to_string(),
                    2 => r#","message":null"#.to_string(),
                    3 => String::new(),
                    _ => format!(r#","message":{{"content":[{}]}}"#, b.join(",")),
                };
                format!(r#"{{"role":"{role}"{message}{extra}}}"#).into_bytes()
            });
        with_byte_edits(base, 3)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

        /// The one-pass skim reads a line as the serde structs do, whenever it reads it.
        #[test]
        fn the_fast_skim_reads_what_the_serde_skim_reads(line in line_strategy()) {
            let text_line = std::str::from_utf8(&line);
            prop_assume!(text_line.is_ok());
            let text_line = text_line.unwrap();
            if let Some(fast) = skim_fast(text_line) {
                let slow = skim_serde(text_line);
                prop_assert!(slow.is_some(), "the fast skim read what serde refuses: {}", String::from_utf8_lossy(&line));
                prop_assert_eq!(rec_shape(&fast), rec_shape(&slow.unwrap()));
            }
        }

        /// The skim agrees with serde_json::Value on what the index reads.
        #[test]
        fn the_skim_reads_what_serde_json_reads(line in line_strategy()) {
            let slow = by_value(&line);
            if let Some(r) = skim_rec(&line) {
                let slow = slow.expect("the skim read a line serde_json does not");
                prop_assert_eq!(r.role.map(Cow::into_owned), slow.0);
                prop_assert_eq!(r.ty.map(Cow::into_owned), slow.1);
                if r.problem.is_none() {
                    let blocks: Vec<_> = r
                        .blocks
                        .iter()
                        .map(|(_, b)| (text(b.ty).map(Cow::into_owned), text(b.name).map(Cow::into_owned)))
                        .collect();
                    prop_assert_eq!(blocks, slow.2);
                }
            } else if let Ok(v) = serde_json::from_slice::<Value>(&line) {
                // serde_json reads it: only a record that is not an object, or whose
                // `message` is not one, is left unread.
                let message_ok = v.get("message").is_none_or(|m| m.is_object() || m.is_null());
                prop_assert!(!v.is_object() || !message_ok, "unread: {}", String::from_utf8_lossy(&line));
            }
        }
    }
}

#[cfg(test)]
mod gist_tests {
    use super::*;
    use serde_json::json;

    fn g(name: &str, input: Value) -> Option<String> {
        Cursor.gist(name, &input)
    }

    #[test]
    fn each_tool_says_what_it_did() {
        // `tool_use` blocks' `input` as the transcripts hold them.
        assert_eq!(g("Bash", json!({"command": "ls -la"})).as_deref(), Some("ls -la"));
        assert_eq!(
            g("Read", json!({"file_path": "file1.txt"})).as_deref(),
            Some("file1.txt")
        );
        assert_eq!(
            g("Agent", json!({"prompt": "List files"})).as_deref(),
            Some("List files")
        );
        assert_eq!(
            g("Grep", json!({"pattern": "TODO", "path": "src"})).as_deref(),
            Some("TODO")
        );
        let e = json!({"target_file": "src/a.ts", "instructions": "fix", "code_edit": "..."});
        assert_eq!(g("edit_file", e).as_deref(), Some("src/a.ts"));
        assert_eq!(g("mcp__fs__stat", json!({"path": "/x"})).as_deref(), Some("/x"));
    }
}
