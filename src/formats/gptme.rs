//! gptme conversations: `~/.local/share/gptme/logs/<conversation>/conversation.jsonl` (branches
//! in `branches/<name>.jsonl` beside it), one `Message` a line as `gptme/message.py`
//! `to_dict` writes it: `role` (`system`, `user`, `assistant`), `content`, `timestamp` (naive
//! ISO-8601, local time), and optionally `files`, `pinned`, `hide`, `call_id` and `metadata`
//! (`model`, `usage` with `input_tokens`, `output_tokens`, `cache_read_tokens`,
//! `cache_creation_tokens`, `cost` in dollars, and on a tool's answer `tool`).
//!
//! Traps this reader handles:
//! - gptme has no tool-call records: a call is a fenced code block of the assistant's text
//!   whose info string names a tool's block type (```` ```shell ````, ```` ```save path ````,
//!   ```` ```ipython ````, …; `gptme/tools/*.py` `block_types`), or, in the `tool` format, a
//!   line `@tool(call_id): {json}`; plain ```` ```python ```` is no call (gptme's ipython tool
//!   does not claim it). Each is a call under its reply, left on disk as the reply's line and
//!   its position in it;
//! - a tool's answer is a `system` message after the reply: it answers the call it names by
//!   `call_id`, else the oldest call still waiting; `Error executing tool '…'` (`tools/base.py`)
//!   and a shell's `Return code: N` (`tools/shell.py`, written only when N is not 0) make the
//!   call an error; other system messages are shown as such;
//! - the timestamps carry no zone: read as UTC (gptme writes the machine's local time);
//! - drift (formats/mod.rs): a role gptme does not write is skipped quietly, counted, and
//!   shown when it carries text.
//!
//! On the shared engine (DESIGN §4): the skim reads each line's role, time, model and usage;
//! the calls of a reply are found when it is applied, payloads stay on disk.

use super::engine::{self, Records};
use super::jsonl::{self, Follow, LineLoc, LineParser, Sink};
use super::skim::Raw;
use super::{Format, LoadError, Loaded, Probe, raw_text};
use crate::model::*;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub struct Gptme;

const CONVERSATION: &str = "conversation.jsonl";

/// Code block types that are tool calls, by gptme's tools (`block_types` in
/// `gptme/tools/*.py`), and the tool each belongs to.
const BLOCK_TOOLS: &[(&str, &str)] = &[
    ("shell", "shell"),
    ("ipython", "ipython"),
    ("py", "ipython"),
    ("save", "save"),
    ("append", "append"),
    ("patch", "patch"),
    ("patch_many", "patch_many"),
    ("patch_anchored", "patch_anchored"),
    ("view_anchored", "view_anchored"),
    ("hashline_edit", "hashline_edit"),
    ("morph", "morph"),
    ("read", "read"),
    ("tmux", "tmux"),
    ("gh", "gh"),
    ("todo", "todo"),
    ("mcp", "mcp"),
    ("choice", "choice"),
    ("clarify", "clarify"),
    ("elicit", "elicit"),
    ("form", "form"),
    ("complete", "complete"),
    ("progress", "progress"),
    ("restart", "restart"),
    ("vent", "vent"),
];

impl Format for Gptme {
    fn id(&self) -> &'static str {
        "gptme"
    }
    fn describe(&self) -> &'static str {
        "gptme conversation, ~/.local/share/gptme/logs/<conversation>/conversation.jsonl"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        let in_place = p.file_name() == CONVERSATION || p.path.ancestors().skip(1).any(|a| a.ends_with("gptme/logs"));
        if !in_place {
            return 0;
        }
        let mut own = 0;
        for v in p.lines().take(20) {
            let Some(o) = v.as_object() else { return 0 };
            let role = o.get("role").and_then(Value::as_str);
            let ts = o.get("timestamp").and_then(Value::as_str);
            match (role, ts) {
                (Some(_), Some(_)) if o.contains_key("content") => own += 1,
                // A line of another shape: not a gptme log.
                (Some(_), _) => return 0,
                _ => {}
            }
        }
        if own > 0 { 100 } else { 0 }
    }

    fn summary_inputs(&self, path: &Path) -> Option<Vec<PathBuf>> {
        Some(vec![path.to_path_buf()])
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let mut f = self.follow(path).expect("a file");
        f.poll()?;
        f.finish("gptme messages")
    }

    fn follow(&self, path: &Path) -> Option<Follow> {
        let p = path.to_path_buf();
        Some(Follow::new(
            path,
            Box::new(move || Box::new(Parser::new(&p)) as Box<dyn LineParser>),
        ))
    }

    fn decode_payload(&self, t: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
        decode(t, ev, raw)
    }

    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
}

#[derive(Deserialize, Default)]
struct LineRec<'a> {
    #[serde(borrow, default)]
    role: Option<Raw<'a>>,
    #[serde(borrow, default)]
    content: Option<Raw<'a>>,
    #[serde(borrow, default)]
    timestamp: Option<Raw<'a>>,
    #[serde(borrow, default)]
    call_id: Option<Raw<'a>>,
    #[serde(borrow, default)]
    hide: Option<Raw<'a>>,
    #[serde(borrow, default)]
    metadata: Option<Raw<'a>>,
}

/// What the skim reads of one line.
pub(crate) struct Rec<'a> {
    env: LineRec<'a>,
    role: Option<Cow<'a, str>>,
    ts: Option<i64>,
    /// The reply's model, usage and cost (`metadata`).
    model: Option<String>,
    usage: Option<Usage>,
    /// The content as text.
    text: Option<Cow<'a, str>>,
}

fn skim(line: &[u8]) -> Option<Rec<'_>> {
    let line = std::str::from_utf8(line).ok()?;
    let env: LineRec = serde_json::from_str(line).ok()?;
    let role = env.role.and_then(|r| raw_text(r.0));
    let ts = env
        .timestamp
        .and_then(|t| raw_text(t.0))
        .and_then(|t| parse_timestamp_str(&t));
    let text = env.content.and_then(|c| raw_text(c.0));
    let (mut model, mut usage) = (None, None);
    if let Some(m) = env.metadata.and_then(|m| serde_json::from_str::<Value>(m.0).ok()) {
        model = m.get("model").and_then(Value::as_str).map(str::to_string);
        let u = m.get("usage").unwrap_or(&m);
        let n = |k: &str| super::lenient_u64(u.get(k));
        // Exactly as written (no float on the way): `0.0051` is 5,100 microdollars.
        let cost = m
            .get("cost")
            .and_then(crate::model::micros::micros_of_json)
            .filter(|&c| c > 0);
        usage = Some(Usage {
            input: n("input_tokens"),
            output: n("output_tokens"),
            cache_read: n("cache_read_tokens"),
            cache_write: n("cache_creation_tokens"),
            cost,
            ..Default::default()
        })
        .filter(|u: &Usage| !u.is_empty());
    }
    Some(Rec {
        env,
        role,
        ts,
        model,
        usage,
        text,
    })
}

/// One tool use in a reply: the tool, its arguments (the info string after the block type, or
/// the JSON of a `@tool(id):` line), the block's body, and the call id the line names.
#[derive(Debug, PartialEq)]
struct ToolUse {
    tool: String,
    args: Vec<String>,
    kwargs: Option<Value>,
    content: Option<String>,
    call_id: Option<String>,
}

/// The tool uses of an assistant message, in order, as gptme finds them: fenced blocks whose
/// type is a tool's, and `@tool(call_id): {…}` lines outside blocks.
fn tool_uses(content: &str) -> Vec<ToolUse> {
    let mut out = Vec::new();
    let lines: Vec<&str> = content.split('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let ticks = l.len() - l.trim_start_matches('`').len();
        if ticks >= 3 {
            let fence = &l[..ticks];
            let info = l[ticks..].trim();
            // The block's end: a bare fence of the same length.
            let end = (i + 1..lines.len()).find(|&j| lines[j].trim_end() == fence);
            let Some(end) = end else {
                break; // an unclosed block: gptme does not run it
            };
            let mut words = info.split_whitespace();
            if let Some(ty) = words.next()
                && let Some((_, tool)) = BLOCK_TOOLS.iter().find(|(b, _)| *b == ty)
            {
                out.push(ToolUse {
                    tool: tool.to_string(),
                    args: words.map(str::to_string).collect(),
                    kwargs: None,
                    content: Some(lines[i + 1..end].join("\n")),
                    call_id: None,
                });
            }
            i = end + 1;
            continue;
        }
        if let Some(rest) = l.strip_prefix('@')
            && let Some((name, after)) = rest.split_once('(')
            && !name.is_empty()
            && name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.')
            && let Some((id, json)) = after.split_once("):")
        {
            // The JSON may go on over the next lines: take the shortest prefix that parses.
            let rest_text = std::iter::once(json.trim_start())
                .chain(lines[i + 1..].iter().copied())
                .collect::<Vec<_>>()
                .join("\n");
            let mut de = serde_json::Deserializer::from_str(&rest_text).into_iter::<Value>();
            if let Some(Ok(v)) = de.next() {
                let used = rest_text[..de.byte_offset()].matches('\n').count();
                out.push(ToolUse {
                    tool: name.to_string(),
                    args: Vec::new(),
                    kwargs: Some(v),
                    content: None,
                    call_id: Some(id.to_string()).filter(|s| !s.is_empty()),
                });
                i += 1 + used;
                continue;
            }
        }
        i += 1;
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    Nothing,
    Prompt,
    Reply,
}

/// The gptme line parser: one trace a file.
pub struct Parser {
    path: PathBuf,
    root: Option<u32>,
    file: u16,
    /// Calls waiting for their answer, oldest first, with the id they carry.
    waiting: std::collections::VecDeque<(u32, Option<String>)>,
    model: Option<String>,
    last: Last,
    named: bool,
    first_ts: Option<i64>,
    last_ts: Option<i64>,
}

impl Parser {
    pub fn new(path: &Path) -> Parser {
        Parser {
            path: path.to_path_buf(),
            root: None,
            file: 0,
            waiting: Default::default(),
            model: None,
            last: Last::Nothing,
            named: false,
            first_ts: None,
            last_ts: None,
        }
    }

    fn ensure(&mut self, loc: LineLoc, sink: &mut Sink) -> u32 {
        if let Some(r) = self.root {
            sink.touch(0);
            return r;
        }
        // `<conversation>/conversation.jsonl`: the conversation's directory names it.
        let stem = super::stem(&self.path);
        let id = match self.path.parent().and_then(|d| d.file_name()) {
            Some(d) if stem == "conversation" => d.to_string_lossy().into_owned(),
            _ => stem,
        };
        let mut t = Trace::new(RunMeta {
            id: id.clone(),
            format: "gptme",
            source: sink.path.clone(),
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
        let ts = rec.ts;
        if let Some(t) = ts {
            self.first_ts = Some(self.first_ts.map_or(t, |f| f.min(t)));
            self.last_ts = Some(self.last_ts.map_or(t, |l| l.max(t)));
        }
        let origin = loc.origin(self.file);
        if rec.env.content.is_some_and(|c| !c.0.starts_with('"') && c.0 != "null") {
            sink.error(loc.line, "content is not text");
            return;
        }
        match rec.role.as_deref() {
            Some("user") => {
                sink.traces[0].add(NewEvent {
                    parent: Parent::Index(root),
                    start: ts,
                    status: Status::Ok,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::Message(Role::User), "user")
                });
                self.last = Last::Prompt;
                if !self.named
                    && let Some(c) = rec.text.as_deref().filter(|c| !c.trim().is_empty())
                {
                    sink.traces[0].meta.name = Some(one_line(c));
                    self.named = true;
                }
            }
            Some("assistant") => {
                if let Some(m) = &rec.model {
                    self.model = Some(m.clone());
                }
                let model = rec.model.clone().or_else(|| self.model.clone());
                let name = model.clone().unwrap_or_else(|| "assistant".into());
                let llm = sink.traces[0].add(NewEvent {
                    parent: Parent::Index(root),
                    start: ts,
                    status: Status::Ok,
                    usage: rec.usage,
                    model: model.as_deref(),
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::LlmCall, &name)
                });
                let uses = rec.text.as_deref().map(tool_uses).unwrap_or_default();
                for (k, u) in uses.iter().enumerate() {
                    // The id says which use of the reply it is (the payload is found by it).
                    let id = format!("{}#{k}", u.call_id.as_deref().unwrap_or(""));
                    let i = sink.traces[0].add(NewEvent {
                        id: Some(&id),
                        parent: Parent::Index(llm),
                        start: ts,
                        status: Status::Pending,
                        payload: PayloadRef::Deferred,
                        origin,
                        ..NewEvent::new(EventKind::ToolCall, &u.tool)
                    });
                    self.waiting.push_back((i, u.call_id.clone()));
                }
                self.last = if uses.is_empty() { Last::Reply } else { Last::Prompt };
            }
            Some("system") => {
                let call_id = rec.env.call_id.and_then(|c| raw_text(c.0));
                let by_id = call_id
                    .as_deref()
                    .and_then(|id| self.waiting.iter().position(|(_, c)| c.as_deref() == Some(id)));
                // An answer comes after the reply: the call it names, else the oldest waiting
                // (a hidden system message before any reply is the prompt's own).
                let at = by_id.or_else(|| (!self.waiting.is_empty()).then_some(0));
                match at.and_then(|k| self.waiting.remove(k)) {
                    Some((i, _)) => {
                        let failed = rec.text.as_deref().is_some_and(failed_answer);
                        let e = sink.traces[0].event_mut(i);
                        e.status = if failed { Status::Error } else { Status::Ok };
                        if let (Some(a), Some(b)) = (e.start.get(), ts) {
                            e.duration = Some((b - a).max(0)).into();
                        }
                        e.origin2 = Some(Box::new(origin));
                        if self.waiting.is_empty() {
                            self.last = Last::Prompt;
                        }
                    }
                    None => {
                        let hidden = rec.env.hide.is_some_and(|h| h.0 == "true");
                        sink.traces[0].add(NewEvent {
                            parent: Parent::Index(root),
                            start: ts,
                            status: Status::Ok,
                            payload: PayloadRef::Deferred,
                            origin,
                            ..NewEvent::new(
                                EventKind::Message(Role::System),
                                if hidden { "system prompt" } else { "system" },
                            )
                        });
                    }
                }
            }
            other => {
                // A role gptme does not write (formats/mod.rs: drift).
                let name = other.unwrap_or("message").to_string();
                sink.skip(&name);
                let v = serde_json::from_slice::<Value>(line).ok();
                if v.as_ref().and_then(super::drift_text).is_some() {
                    sink.traces[0].add(NewEvent {
                        parent: Parent::Index(root),
                        start: ts,
                        status: Status::Ok,
                        payload: PayloadRef::Deferred,
                        origin,
                        ..NewEvent::new(EventKind::Other, &name)
                    });
                }
            }
        }
    }
}

/// Whether a tool's answer says it failed: gptme's own error message for a tool that raised
/// (`tools/base.py`), or a shell's non-zero return code (`tools/shell.py`).
fn failed_answer(s: &str) -> bool {
    s.starts_with("Error executing tool '")
        || s.lines().any(|l| {
            l.trim()
                .strip_prefix("Return code: ")
                .is_some_and(|n| n.parse::<i64>().is_ok_and(|n| n != 0))
        })
}

fn one_line(s: &str) -> String {
    let first = s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let mut n: String = first.chars().take(99).collect();
    if first.chars().count() > 99 {
        n.push('…');
    }
    n
}

impl Records for Parser {
    type Rec<'a> = Rec<'a>;

    fn skim<'a>(line: &'a [u8], slot: &mut Option<Rec<'a>>) {
        *slot = skim(line);
    }

    fn apply(&mut self, rec: Option<&Rec<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        match rec {
            Some(r) => self.apply_rec(r, line, loc, sink),
            None => {
                self.ensure(loc, sink);
                sink.error(loc.line, jsonl::why_unreadable::<LineRec>(line, "not a JSON object"));
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
        let status = if !self.waiting.is_empty() {
            RunStatus::Running
        } else {
            match self.last {
                Last::Reply => RunStatus::Ok,
                Last::Prompt | Last::Nothing => RunStatus::Unknown,
            }
        };
        t.meta.status = status;
        t.meta.start = self.first_ts;
        t.meta.end = self.last_ts;
        t.meta.model = self.model.clone();
        let name = t.meta.name.clone();
        t.event_mut(root).status = status.event_status();
        if let Some(n) = name {
            let r = t.strings.intern(&n);
            t.event_mut(root).name = r;
        }
    }
}

/// Rebuild a payload from its record(s): a message line, or for a call the reply's line (the
/// use its id names) and then its answer.
fn decode(t: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
    let mut out = Payload::default();
    for (n, bytes) in raw.iter().enumerate() {
        let mut v: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => {
                out.error = Some(ErrorInfo::unreadable(&e));
                return out;
            }
        };
        let content = take(&mut v, "content");
        let role = v.get("role").and_then(Value::as_str).unwrap_or("").to_string();
        match (ev.kind, n) {
            (EventKind::ToolCall, 0) => {
                let Some(text) = content.as_ref().and_then(Value::as_str) else {
                    continue;
                };
                // Which use: the number after `#` in the event's id (set when it was read).
                out.input = call_index(t, ev)
                    .and_then(|k| tool_uses(text).into_iter().nth(k))
                    .map(|u| match u.kwargs {
                        Some(kw) => kw,
                        None => serde_json::json!({"args": u.args, "content": u.content}),
                    });
            }
            (EventKind::ToolCall, _) => {
                if let Some(s) = content.as_ref().and_then(Value::as_str)
                    && failed_answer(s)
                {
                    out.error = Some(ErrorInfo {
                        message: s.lines().next().unwrap_or("").to_string(),
                        ..Default::default()
                    });
                }
                out.output = content;
            }
            _ if role == "user" || role == "system" => out.input = content,
            _ if role == "assistant" => {
                out.output = content;
                if let Some(m) = take(&mut v, "metadata") {
                    out.extra.push(("metadata".into(), m));
                }
            }
            _ => {
                if let Some(c) = content {
                    v["content"] = c;
                }
                return super::drift_payload(&v, &["timestamp"]);
            }
        }
    }
    out
}

/// The position of a call among its reply's tool uses: its id is `<call id>#<k>`.
fn call_index(t: &Trace, ev: &Event) -> Option<usize> {
    t.str(ev.source_id).rsplit_once('#')?.1.parse().ok()
}

fn take(v: &mut Value, k: &str) -> Option<Value> {
    v.get_mut(k).filter(|x| !x.is_null()).map(Value::take)
}

/// A call's gist by gptme's tools: the command, the code's first line, the path saved or
/// patched, the file read.
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{first_arg, generic};
    let args = input.get("args").and_then(Value::as_array);
    let first_arg_word = args.and_then(|a| a.first()).and_then(Value::as_str).map(str::to_string);
    let body = input.get("content").and_then(Value::as_str);
    match name {
        "shell" | "ipython" | "tmux" | "gh" => body
            .and_then(|b| b.lines().find(|l| !l.trim().is_empty()))
            .map(str::to_string)
            .or_else(|| first_arg(input)),
        "save" | "append" | "patch" | "read" | "morph" | "hashline_edit" | "patch_anchored" | "view_anchored" => {
            first_arg_word.or_else(|| first_arg(input))
        }
        _ => generic(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::fixture;
    use proptest::prelude::*;

    fn load(name: &str) -> Trace {
        let l = Gptme
            .load(&fixture("gptme", &format!("{name}/conversation.jsonl")))
            .unwrap();
        assert_eq!(l.traces.len(), 1);
        l.traces.into_iter().next().unwrap()
    }

    fn calls(t: &Trace) -> Vec<(String, Status)> {
        (0..t.len() as u32)
            .filter(|&i| t.event(i).kind == EventKind::ToolCall)
            .map(|i| (t.name(i).to_string(), t.event(i).status))
            .collect()
    }

    #[test]
    fn code_blocks_of_tools_are_calls_answered_by_the_system_messages_after_them() {
        let t = load("2026-11-20-fix-the-csv-export");
        assert_eq!(t.meta.id, "2026-11-20-fix-the-csv-export");
        assert_eq!(t.meta.name.as_deref(), Some("The CSV export drops the header row"));
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.model.as_deref(), Some("anthropic/claude-sonnet-4-5"));
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        // The last reply's ```python block is no call: gptme's ipython tool does not claim it.
        assert_eq!(
            calls(&t),
            vec![
                ("shell".to_string(), Status::Ok),
                ("shell".to_string(), Status::Error),
                ("patch".to_string(), Status::Ok)
            ]
        );
        let c = t.counts();
        assert_eq!(c.llm_calls, 4);
        assert_eq!(
            c.tokens,
            (1200 + 40 + 800) + (300 + 30 + 2000) + (250 + 70 + 2300) + (320 + 60 + 2400)
        );
        let llm = (0..t.len() as u32)
            .find(|&i| t.event(i).kind == EventKind::LlmCall)
            .unwrap();
        assert_eq!(t.event(llm).usage.get().unwrap().cost, Some(5100));
        let shells: Vec<u32> = (0..t.len() as u32).filter(|&i| t.name(i) == "shell").collect();
        let p = crate::formats::payload(&t, t.event(shells[1]));
        assert_eq!(
            p.input.as_ref().unwrap()["content"],
            "python -m pytest tests/test_export.py -q"
        );
        assert!(p.error.is_some());
        assert!(p.output.unwrap().as_str().unwrap().contains("Return code: 1"));
        let patch = (0..t.len() as u32).find(|&i| t.name(i) == "patch").unwrap();
        let p = crate::formats::payload(&t, t.event(patch));
        assert_eq!(p.input.as_ref().unwrap()["args"], serde_json::json!(["export.py"]));
        assert_eq!(
            crate::formats::gist::of(&t, t.event(patch)).as_deref(),
            Some("export.py")
        );
        assert_eq!(
            crate::formats::gist::of(&t, t.event(shells[0])).as_deref(),
            Some("grep -n header export.py")
        );
    }

    #[test]
    fn tool_format_calls_join_by_call_id_and_an_error_answer_is_shown() {
        let t = load("tool-format");
        assert_eq!(calls(&t), vec![("save".to_string(), Status::Ok)]);
        let save = (0..t.len() as u32).find(|&i| t.name(i) == "save").unwrap();
        let p = crate::formats::payload(&t, t.event(save));
        assert_eq!(p.input.unwrap(), serde_json::json!({"path": "a.txt", "content": "hi"}));
        assert_eq!(p.output.unwrap(), "Saved to a.txt");
        assert_eq!(t.meta.status, RunStatus::Ok);
    }

    #[test]
    fn a_running_conversation_and_a_damaged_line() {
        let t = load("running");
        assert_eq!(t.meta.status, RunStatus::Running);
        assert_eq!(calls(&t), vec![("shell".to_string(), Status::Pending)]);
        let t = load("damaged");
        let errs: Vec<_> = t.diagnostics.iter().filter(|d| d.severity == Severity::Error).collect();
        assert_eq!(errs.len(), 1, "{:?}", t.diagnostics);
        assert_eq!(errs[0].line, Some(3));
        assert!(errs[0].path.ends_with("damaged/conversation.jsonl"));
        assert_eq!(calls(&t), vec![("shell".to_string(), Status::Ok)]);
    }

    #[test]
    fn tool_uses_are_found_as_gptme_finds_them() {
        let u = tool_uses(
            "a\n```shell\nls\n```\n```python\nx\n```\n````save a.md\n```\ninner\n```\n````\n@read(c1): {\"path\": \"b\"}\n```shell\nunclosed",
        );
        let got: Vec<(&str, Option<&str>)> = u.iter().map(|u| (u.tool.as_str(), u.call_id.as_deref())).collect();
        assert_eq!(got, vec![("shell", None), ("save", None), ("read", Some("c1"))]);
        assert_eq!(u[1].content.as_deref(), Some("```\ninner\n```"));
        assert!(failed_answer("x\nReturn code: 2\n"));
        assert!(!failed_answer("Return code: 0"));
    }

    #[test]
    fn detection_claims_gptme_logs_only() {
        let det = |p: &Path| Gptme.detect(&Probe::open(p).unwrap());
        let p = fixture("gptme", "running/conversation.jsonl");
        assert_eq!(det(&p), 100);
        assert_eq!(crate::formats::detect(&p).unwrap().id(), "gptme");
        let other = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/session.jsonl");
        if other.exists() {
            assert_eq!(det(&other), 0);
        }
    }

    #[test]
    fn live_follow_answers_the_call_when_it_arrives() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(CONVERSATION);
        let text = std::fs::read_to_string(fixture("gptme", "running/conversation.jsonl")).unwrap();
        std::fs::write(&p, &text).unwrap();
        let mut f = Gptme.follow(&p).unwrap();
        f.poll().unwrap();
        assert_eq!(f.sink.traces[0].meta.status, RunStatus::Running);
        let more = "{\"role\": \"system\", \"content\": \"Ran command: `make build`\\n\\nNo output\\n\", \"timestamp\": \"2026-11-22T10:00:09.000000\"}\n{\"role\": \"assistant\", \"content\": \"Built.\", \"timestamp\": \"2026-11-22T10:00:11.000000\"}\n";
        std::fs::write(&p, format!("{text}{more}")).unwrap();
        f.poll().unwrap();
        let t = &f.sink.traces[0];
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(calls(t), vec![("shell".to_string(), Status::Ok)]);
    }

    fn unknown_record(rng: &mut crate::formats::testing::Rng, near: &Value) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("role".into(), Value::String(rng.type_name()));
        m.insert("content".into(), Value::String(rng.maybe_text().unwrap_or_default()));
        if let Some(t) = near.get("timestamp") {
            m.insert("timestamp".into(), t.clone());
        }
        m.insert(rng.type_name(), rng.value());
        Value::Object(m)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn drift_is_skipped_quietly(seed in any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "gptme",
                &[
                    "tests/fixtures/gptme/2026-11-20-fix-the-csv-export",
                    "tests/fixtures/gptme/running",
                    "tests/fixtures/gptme/tool-format",
                    "sample-traces/gptme/logs/2026-11-24-count-the-lines",
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
}
