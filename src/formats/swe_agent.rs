//! SWE-agent trajectories (`<instance>.traj`) and mini-swe-agent trajectories
//! (`<instance>.traj.json`), both whole JSON documents written by the agent at each step.
//!
//! - SWE-agent (0.x and 1.x): `{environment, trajectory[], history[], info}`. Each
//!   `trajectory[]` step is one model turn and one action: `{action, observation, response,
//!   thought, execution_time?, state, query?}`, the final `submit` included. `history[]` is the
//!   chat as sent to the model (1.x function calling adds `tool_calls` / `tool` messages): it
//!   repeats the steps, so only its first user message (the task) is taken. `info` holds
//!   `exit_status`, `submission` and run totals in `model_stats` (no per-call tokens).
//!   Tokens: only those run totals, on the run event: `tokens_sent` (the prompts as SWE-agent
//!   counted them, cache not told apart) as input, `tokens_received` as output, and
//!   `instance_cost` (dollars) as the run's recorded cost.
//!   No timestamps: steps keep file order; `execution_time` (seconds) is the action's duration.
//! - SWE-agent demonstrations (`trajectories/demonstrations/*.traj`, what `--agent.templates.
//!   demonstrations` reads): `{history}` alone, no steps, no `info`. The history is read as
//!   mini-swe-agent's messages are: an assistant item is one LLM call whose action is a tool
//!   call (named by its `tool_calls` function, or, without function calling, by the first
//!   word of the `action` SWE-agent parsed), joined to its `tool` item by `tool_call_ids` or
//!   to the next user item. Without a `.traj` name, SWE-agent's `message_type` / `agent`
//!   fields on the first item tell it from any other `{history: [...]}`. Status unknown.
//! - mini-swe-agent 1.x (old form): a JSON list of `{role, content}` messages; each assistant
//!   turn holds one ```` ```mswea_bash_command ```` block (older configs: ```` ```bash ````),
//!   and the next user message is its output (`<returncode>N</returncode><output>…`).
//! - mini-swe-agent 1.x/2.x: `{info, messages, trajectory_format}`; an assistant message may
//!   carry `extra.actions` (several in one turn), `tool_calls` joined to `role:"tool"` results
//!   by `tool_call_id`, `extra.response` (the provider's response with `usage` and `model`),
//!   `extra.timestamp` (epoch seconds); an `exit` message closes the run. Tokens: the
//!   response's LiteLLM `usage` (OpenAI's way: cache inside `prompt_tokens`, reasoning inside
//!   `completion_tokens`; taken out) and `extra.cost` (dollars) as the call's recorded cost.
//!
//! Drift (formats/mod.rs): a step or message field the reader does not know is ignored; a
//! message of a role it does not know (not system, user, assistant, tool or exit) is skipped
//! quietly, counted, and shown as a generic event when it carries text. A full trajectory's
//! `history` only gives the task, so its roles are not looked at.

use super::document::{DocSink, Document, Top};
use super::jsonl::LineLoc;
use super::whole::{self, first_byte, read_checked};
use super::{Format, LoadError, Loaded, Probe, Watcher, decode_embedded, field, str_of};
use crate::model::*;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::path::Path;

pub struct SweAgent;

/// Largest file read whole: only one that is neither a list nor an object, to say what it is
/// (trajectories are streamed, whatever their size).
const LIMIT: u64 = 512 << 20;

/// What mini-swe-agent prints to end a run (2.x; 1.x used the second).
const SUBMIT_SENTINELS: [&str; 2] = ["COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// SWE-agent: `{trajectory: [...], ...}`.
    Swe,
    /// mini-swe-agent: `{messages: [...], trajectory_format | info.mini_version}`.
    MiniDoc,
    /// mini-swe-agent's old form: a bare list of messages.
    MiniList,
    /// SWE-agent's `history` alone: a demonstration (`trajectories/demonstrations/*.traj`),
    /// no `trajectory`, no `info`.
    History,
}

/// Whether the file name has a trajectory's shape.
fn traj_name(name: &str) -> bool {
    name.ends_with(".traj") || name.ends_with(".traj.json")
}

fn is_message(m: &Value) -> bool {
    m.get("role").is_some_and(Value::is_string) && m.get("content").is_some()
}

/// A SWE-agent history item: a message with the fields SWE-agent adds (`message_type` in
/// 1.x, `agent` in 0.x and 1.x), what tells a demonstration from any `{history: [...]}` chat.
fn is_history_item(m: &Value) -> bool {
    is_message(m)
        && (m.get("message_type").is_some_and(Value::is_string) || m.get("agent").is_some_and(Value::is_string))
}

fn shape(v: &Value, traj_path: bool) -> Option<Shape> {
    match v {
        Value::Object(o) => {
            let steps = o.get("trajectory").and_then(Value::as_array);
            if let Some(steps) = steps
                && (o.contains_key("history") || o.contains_key("info") || o.contains_key("environment"))
                && steps
                    .first()
                    .is_none_or(|s| s.get("action").is_some() || s.get("observation").is_some())
            {
                return Some(Shape::Swe);
            }
            let mini_format = str_of(v, "trajectory_format").is_some_and(|f| f.starts_with("mini-swe-agent"))
                || v.get("info").and_then(|i| i.get("mini_version")).is_some();
            if o.get("messages").is_some_and(Value::is_array) && (mini_format || traj_path) {
                return Some(Shape::MiniDoc);
            }
            // A demonstration: the history alone (an OpenHands output's `history` holds
            // action/observation events, never messages).
            let history = o.get("history").and_then(Value::as_array);
            if let Some(h) = history
                && steps.is_none()
                && !o.contains_key("messages")
                && h.first()
                    .is_some_and(|m| if traj_path { is_message(m) } else { is_history_item(m) })
            {
                return Some(Shape::History);
            }
            None
        }
        Value::Array(items) => {
            if !items.first().is_some_and(is_message) {
                return None;
            }
            // Without the file name, the action block is mini-swe-agent's signature.
            let signed = items.iter().any(|m| {
                str_of(m, "role") == Some("assistant")
                    && str_of(m, "content").is_some_and(|c| c.contains("```mswea_bash_command"))
            });
            (traj_path || signed).then_some(Shape::MiniList)
        }
        _ => None,
    }
}

impl Format for SweAgent {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        "swe-agent"
    }
    fn describe(&self) -> &'static str {
        "SWE-agent trajectory (trajectories/<user>/<run>/<instance>.traj) or mini-swe-agent trajectory (*.traj.json)"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        let named = traj_name(p.file_name());
        if p.complete {
            // `shape`'s documents name one of these first.
            let whole = p.whole_naming(&["trajectory", "messages", "role", "history"]);
            // Above openai-chat's 85-95 for the same lists and `{messages}` objects.
            return match whole.and_then(|v| shape(v, named)) {
                Some(_) if named => 100,
                Some(Shape::MiniList) => 96,
                Some(_) => 97,
                None => 0, // read whole and not JSON of ours
            };
        }
        // Too large for the probe: judge by the name and the first keys.
        let swe_keys =
            p.has_key("trajectory") && (p.has_key("history") || p.has_key("info") || p.has_key("environment"));
        let mini_keys = p.has_key("trajectory_format") || (p.has_key("messages") && p.has_key("info"));
        let list = p.is_list() && p.has_key("role");
        // Under a trajectory's name, the list's key is enough (the rest may be past the head).
        let named_keys = p.has_key("trajectory") || p.has_key("messages") || p.has_key("history");
        match (named, swe_keys || mini_keys, list) {
            (true, true, _) | (true, _, true) => 100,
            (true, false, false) if named_keys => 100,
            (false, true, _) => 90,
            _ => 0,
        }
    }

    fn summary_inputs(&self, path: &Path) -> Option<Vec<std::path::PathBuf>> {
        Some(vec![path.to_path_buf()])
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        load_with(path, &Document::every_list(PATHS), None)
    }

    fn load_watched(&self, path: &Path, watcher: &mut dyn Watcher) -> Result<Loaded, LoadError> {
        load_with(path, &Document::every_list(PATHS), Some(watcher))
    }

    /// A step's or a message's payload from its bytes (the run's is held: one a file).
    fn decode_payload(&self, trace: &Trace, event: &Event, raw: &[&[u8]]) -> Payload {
        let Some(record) = raw.first().and_then(|b| serde_json::from_slice::<Value>(b).ok()) else {
            return whole::unreadable();
        };
        // A mini-swe-agent message has a role; a SWE-agent step never does.
        if str_of(&record, "role").is_none() {
            return swe_payload(event.kind, &record);
        }
        let text = record.get("content").and_then(text_of);
        match event.kind {
            EventKind::Other => super::drift_payload(&record, &[]),
            EventKind::LlmCall => Payload {
                output: text.map(Value::String),
                extra: llm_extra(&record),
                ..Default::default()
            },
            EventKind::ToolCall => {
                let id = trace.strings.get(event.source_id);
                let acts = actions(&record, text.as_deref());
                // By its place in the message first: two actions may share a `tool_call_id`.
                let at = action_place(trace, event)
                    .or_else(|| acts.iter().position(|a| a.2.as_deref() == Some(id)))
                    .or_else(|| {
                        let k = id.rsplit_once(".action[")?.1.strip_suffix(']')?;
                        k.parse::<usize>().ok()
                    });
                let Some((_, command, _, args)) = at.and_then(|k| acts.into_iter().nth(k)) else {
                    return Payload::default();
                };
                let mut p = Payload {
                    input: Some(args),
                    ..Default::default()
                };
                if let Some(result) = raw.get(1).and_then(|b| serde_json::from_slice::<Value>(b).ok()) {
                    let text = result.get("content").and_then(text_of);
                    let r = result_of(&result, text, &command);
                    p.output = r.output;
                    p.error = r.error;
                    if let Some(rc) = r.rc {
                        p.set_extra("returncode", json!(rc));
                    }
                }
                p
            }
            _ => Payload {
                input: text.map(Value::String),
                ..Default::default()
            },
        }
    }
}

/// A trajectory read as a stream: each list's elements parsed (a batch in parallel) into the
/// facts the index needs and dropped; the trace is built from them once the document's values
/// after the lists (`info`, `replay_config`) are in. No size limit: the document is never in
/// memory whole.
fn load_with(path: &Path, doc: &Document<'_>, watcher: Option<&mut dyn Watcher>) -> Result<Loaded, LoadError> {
    let named = traj_name(&path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
    let not_ours = || LoadError::NotATrace {
        path: path.to_path_buf(),
        reason: "neither a SWE-agent trajectory (`trajectory` steps) nor a mini-swe-agent one (`messages`)".into(),
        tried: "swe-agent".into(),
    };
    let mut s = Stream {
        watch: watcher.map(|w| Watch {
            w,
            total: std::fs::metadata(path).map_or(0, |m| m.len()),
            path,
        }),
        ..Stream::default()
    };
    let scanned = doc.read(path, &mut s)?;
    if matches!(scanned.top, Top::Empty | Top::Other) {
        // No list or object: what serde_json says of it (empty, not JSON, a bare value).
        let buf = read_checked(path, LIMIT)?;
        serde_json::from_slice::<Value>(&buf).map_err(|e| whole::invalid(path, &e))?;
        return Err(not_ours());
    }
    if scanned.elements == 0
        && let Some((line, message)) = s.problems.first()
    {
        return Err(LoadError::invalid(path, format!("line {line}: {message}")));
    }
    let mut t = if scanned.top == Top::List {
        if !(s.first_message.as_ref().is_some_and(is_message) && (named || s.signed)) {
            return Err(not_ours());
        }
        from_mini(path, &Value::Null, &s.messages, "messages")
    } else {
        let skeleton = s.skeleton();
        match shape(&skeleton, named) {
            Some(Shape::Swe) => from_swe(path, &skeleton, &s.steps, s.task.as_deref()),
            Some(Shape::MiniDoc) => from_mini(path, &skeleton, &s.messages, "messages"),
            Some(Shape::History) => {
                let messages = read_history(path, &s.history)?;
                from_history(path, &messages, s.task.as_deref())
            }
            _ => return Err(not_ours()),
        }
    };
    for (line, message) in s.problems {
        t.diagnostics.push(Diagnostic::error(path, Some(line.max(1)), message));
    }
    Ok(Loaded { traces: vec![t] })
}

/// The history items of a demonstration, read again from their byte ranges (the stream kept
/// only where they are: in a whole trajectory the history repeats the steps).
fn read_history(path: &Path, locs: &[LineLoc]) -> Result<Vec<Located<Msg>>, LoadError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = super::open_regular(path).map_err(|e| LoadError::io(path, e))?;
    let mut buf = Vec::new();
    let mut out = Vec::with_capacity(locs.len());
    for (i, loc) in locs.iter().enumerate() {
        buf.clear();
        f.seek(SeekFrom::Start(loc.offset))
            .map_err(|e| LoadError::io(path, e))?;
        (&mut f)
            .take(loc.len as u64)
            .read_to_end(&mut buf)
            .map_err(|e| LoadError::io(path, e))?;
        let msg = serde_json::from_slice::<Value>(&buf)
            .map(|m| Msg::of(&m))
            .map_err(|e| format!("history[{i}]: {}; skipped", super::jsonl::json_error(&e)));
        out.push((msg, *loc));
    }
    Ok(out)
}

/// A demonstration: its history read as mini-swe-agent's messages are (SWE-agent's history
/// items are the same chat: an assistant message per action, with `tool_calls` or, without
/// function calling, the parsed `action`; its result the next `tool` message by
/// `tool_call_ids`, or the next user message). Nothing says how it ended.
fn from_history(path: &Path, messages: &[Located<Msg>], task: Option<&str>) -> Trace {
    let mut t = from_mini(path, &Value::Null, messages, "history");
    t.meta.attributes.push((
        "trajectory_format".to_string(),
        json!("SWE-agent history only (a demonstration)"),
    ));
    if let Some(task) = task
        && let Some(&run) = t.roots.first()
    {
        t.payload_mut(run).input = Some(Value::String(task.to_string()));
    }
    t
}

/// Which action of its assistant message a tool call is: `from_mini` adds a message's actions
/// right after its LLM call, in order, so it is the distance from that parent. `None` when the
/// event is not one of `trace`'s or not laid out so (then the id decides).
fn action_place(trace: &Trace, event: &Event) -> Option<usize> {
    let base = trace.events.as_ptr() as usize;
    let i = (event as *const Event as usize).checked_sub(base)? / std::mem::size_of::<Event>();
    if !std::ptr::eq(trace.events.get(i)?, event) {
        return None;
    }
    let parent = usize::try_from(event.parent).ok().filter(|&p| p < i)?;
    let siblings = &trace.events[parent + 1..=i];
    siblings
        .iter()
        .all(|e| e.kind == EventKind::ToolCall && e.parent == event.parent && e.origin == event.origin)
        .then(|| siblings.len() - 1)
}

/// The lists a trajectory is streamed by (DESIGN §4): mini-swe-agent 1.x's bare list,
/// SWE-agent's steps and its history (as long as the steps, read up to the task), mini's
/// messages. Everything else of the document (`info`, `replay_config`, `environment`, written
/// after the steps) comes as values beside them.
const PATHS: &[&[&str]] = &[&[], &["trajectory"], &["history"], &["messages"]];
const BARE: usize = 0;
const STEPS: usize = 1;
const HISTORY: usize = 2;
const MESSAGES: usize = 3;

/// A list's element: what the index needs of it (Err: why it was not read), and where it is.
type Located<T> = (Result<T, String>, LineLoc);

/// What a trajectory's stream leaves: every element's facts, kept until the end, since the
/// status, model and shape come after the steps.
#[derive(Default)]
struct Stream<'w> {
    watch: Option<Watch<'w>>,
    list: Option<usize>,
    /// Elements of each list so far.
    count: [u64; 4],
    seen: [bool; 4],
    /// The document's other values, parsed (each under `MAX_OTHER`), in order.
    others: Vec<(String, Value)>,
    first_step: Option<Value>,
    first_message: Option<Value>,
    first_history: Option<Value>,
    /// Where each history item is: read again only when the history is all there is (a
    /// demonstration), else only its task is taken.
    history: Vec<LineLoc>,
    steps: Vec<Located<Step>>,
    messages: Vec<Located<Msg>>,
    /// The history's first user message that is not a demonstration, once found.
    task: Option<String>,
    task_found: bool,
    /// An assistant message holds mini-swe-agent's action block.
    signed: bool,
    problems: Vec<(u64, String)>,
}

/// Who follows the load, and the size of the file.
struct Watch<'w> {
    w: &'w mut dyn Watcher,
    total: u64,
    path: &'w Path,
}

impl Stream<'_> {
    /// The document without its long lists (they keep only what its shape is told by).
    fn skeleton(&self) -> Value {
        let mut skeleton = serde_json::Map::new();
        for (k, v) in &self.others {
            skeleton.insert(k.clone(), v.clone());
        }
        for (list, key, first) in [
            (STEPS, "trajectory", &self.first_step),
            (HISTORY, "history", &self.first_history),
            (MESSAGES, "messages", &None),
        ] {
            if self.seen[list] {
                skeleton.insert(key.to_string(), Value::Array(first.iter().cloned().collect()));
            }
        }
        Value::Object(skeleton)
    }

    /// The trace of what is read so far, of the shape its lists say (the status and model
    /// come at the end).
    fn partial(&self, path: &Path) -> Trace {
        if self.seen[STEPS] {
            from_swe(path, &self.skeleton(), &self.steps, self.task.as_deref())
        } else if self.seen[BARE] {
            from_mini(path, &Value::Null, &self.messages, "messages")
        } else {
            from_mini(path, &self.skeleton(), &self.messages, "messages")
        }
    }

    /// Tell the watcher how far the load is: up to the end of `batch`.
    fn watched(&mut self, batch: &[(&[u8], LineLoc)]) {
        let Some(watch) = self.watch.take() else { return };
        let read = super::jsonl::batch_end(batch);
        let path = watch.path;
        watch.w.progress(read, watch.total, &mut || self.partial(path));
        self.watch = Some(watch);
    }
}

impl DocSink for Stream<'_> {
    fn elements(&mut self, batch: &[(&[u8], LineLoc)]) {
        self.add(batch);
        self.watched(batch);
    }

    fn other(&mut self, key: &str, value: &[u8], loc: LineLoc) {
        match serde_json::from_slice::<Value>(value) {
            Ok(v) => self.others.push((key.to_string(), v)),
            Err(e) => self
                .problems
                .push((loc.line, format!("{key:?}: {}; not read", super::jsonl::json_error(&e)))),
        }
    }

    fn list(&mut self, path: usize) {
        self.list = Some(path);
        self.seen[path] = true;
    }

    fn problem(&mut self, line: u64, message: String) {
        self.problems.push((line, message));
    }
}

impl Stream<'_> {
    /// The facts of a batch of the current list's elements.
    fn add(&mut self, batch: &[(&[u8], LineLoc)]) {
        use rayon::prelude::*;
        let Some(list) = self.list else { return };
        let first = self.count[list] == 0;
        self.count[list] += batch.len() as u64;
        let at = |k: usize| self.count[list] - batch.len() as u64 + k as u64;
        let error = |name: &str, i: u64, e: &serde_json::Error| {
            format!("{name}[{i}]: {}; skipped", super::jsonl::json_error(e))
        };
        match list {
            STEPS => {
                if first && let Some((b, _)) = batch.first() {
                    self.first_step = serde_json::from_slice(b).ok();
                }
                let facts: Vec<Result<Step, serde_json::Error>> =
                    batch.par_iter().map(|(b, _)| Step::read(b)).collect();
                for (k, (f, (_, loc))) in facts.into_iter().zip(batch).enumerate() {
                    self.steps.push((f.map_err(|e| error("trajectory", at(k), &e)), *loc));
                }
            }
            HISTORY => {
                if first && let Some((b, _)) = batch.first() {
                    self.first_history = serde_json::from_slice(b).ok();
                }
                self.history.extend(batch.iter().map(|(_, loc)| *loc));
                for (b, _) in batch {
                    if self.task_found {
                        break;
                    }
                    let Ok(m) = serde_json::from_slice::<Value>(b) else {
                        continue;
                    };
                    if str_of(&m, "role") == Some("user") && !m.get("is_demo").and_then(Value::as_bool).unwrap_or(false)
                    {
                        self.task = m.get("content").and_then(text_of);
                        self.task_found = true;
                    }
                }
            }
            _ => {
                let name = if list == BARE { "" } else { "messages" };
                let facts: Vec<Result<(Msg, Option<Value>), serde_json::Error>> = batch
                    .par_iter()
                    .enumerate()
                    .map(|(k, (b, _))| {
                        let m: Value = serde_json::from_slice(b)?;
                        let msg = Msg::of(&m);
                        Ok((msg, (first && k == 0).then_some(m)))
                    })
                    .collect();
                if first && facts.first().is_none_or(Result::is_err) {
                    self.first_message = None;
                }
                for (k, (f, (_, loc))) in facts.into_iter().zip(batch).enumerate() {
                    let f = match f {
                        Ok((msg, m)) => {
                            if m.is_some() {
                                self.first_message = m;
                            }
                            self.signed |= msg.signed;
                            Ok(msg)
                        }
                        Err(e) => Err(error(name, at(k), &e)),
                    };
                    self.messages.push((f, *loc));
                }
            }
        }
    }
}

/// What the index needs of one SWE-agent step.
#[derive(Debug, PartialEq)]
enum Step {
    NotAnObject,
    Step {
        /// The action's first word (`open`, `edit`, `submit`); None: no action string.
        tool: Option<String>,
        observed: bool,
        duration: Option<i64>,
    },
}

impl Step {
    /// The facts of a step's value.
    fn of(v: &Value) -> Step {
        if !v.is_object() {
            return Step::NotAnObject;
        }
        Step::Step {
            tool: str_of(v, "action").map(first_word),
            observed: field(v, "observation").is_some(),
            duration: seconds_ns(v.get("execution_time")),
        }
    }

    /// [`Step::of`] a step's bytes, reading only its three fields (a step's observation,
    /// response, thought and state are most of a trajectory): a typed read, else (a field
    /// given twice, not an object) the value.
    fn read(b: &[u8]) -> Result<Step, serde_json::Error> {
        #[derive(serde::Deserialize)]
        struct Raw<'a> {
            #[serde(borrow, default)]
            action: Option<&'a RawValue>,
            #[serde(borrow, default)]
            observation: Option<&'a RawValue>,
            #[serde(borrow, default)]
            execution_time: Option<&'a RawValue>,
        }
        // A struct reads a JSON list too, field by field: objects only.
        if first_byte(b) == Some(b'{')
            && let Ok(r) = serde_json::from_slice::<Raw>(b)
        {
            let action = r.action.and_then(|a| Some(first_word(&super::raw_text(a.get())?)));
            let time = r
                .execution_time
                .and_then(|t| serde_json::from_str::<Value>(t.get()).ok());
            return Ok(Step::Step {
                tool: action,
                // `null` is read as None, as `field` takes it to be absent.
                observed: r.observation.is_some(),
                duration: seconds_ns(time.as_ref()),
            });
        }
        Ok(Step::of(&serde_json::from_slice::<Value>(b)?))
    }
}

/// The tool of a SWE-agent action: its command's name (`open f`, `edit 1:2`, `submit`; bash
/// otherwise), `?` when there is none.
fn first_word(action: &str) -> String {
    action.split_whitespace().next().unwrap_or("?").to_string()
}

/// What the index needs of one mini-swe-agent message.
#[derive(Debug, PartialEq)]
struct Msg {
    /// None: the message has no role.
    role: Option<String>,
    ts: Option<i64>,
    /// An assistant's call: its usage, model and actions.
    usage: Option<Usage>,
    model: Option<String>,
    actions: Vec<Act>,
    /// A result's call id, and whether it failed (unless its call was the submission).
    tool_call_id: Option<String>,
    failed: bool,
    /// An exit message's `extra` (status, submission).
    exit: Option<Value>,
    /// An assistant message with mini-swe-agent's action block.
    signed: bool,
    /// A message of a role the reader does not know carries text ([`super::drift_text`]).
    text: bool,
}

/// The roles of mini-swe-agent's messages and SWE-agent's history items. Another role is
/// drift: skipped quietly, counted, shown when it carries text.
const ROLES: [&str; 5] = ["system", "user", "assistant", "tool", "exit"];

/// One action of an assistant message.
#[derive(Debug, PartialEq)]
struct Act {
    tool: String,
    call_id: Option<String>,
    /// The command submits (the run's last): its result is never a failure.
    submit: bool,
}

impl Msg {
    fn of(m: &Value) -> Msg {
        let role = str_of(m, "role");
        let text = m.get("content").and_then(text_of);
        let extra = m.get("extra");
        let mut msg = Msg {
            role: role.map(str::to_owned),
            ts: extra.and_then(|e| e.get("timestamp")).and_then(parse_timestamp),
            usage: None,
            model: None,
            actions: Vec::new(),
            tool_call_id: None,
            failed: false,
            exit: None,
            signed: role == Some("assistant")
                && str_of(m, "content").is_some_and(|c| c.contains("```mswea_bash_command")),
            text: false,
        };
        match role {
            Some("assistant") => {
                let response = extra.and_then(|e| e.get("response"));
                // LiteLLM's usage (OpenAI's way of counting), and the cost LiteLLM computed for
                // the call (`extra.cost`, dollars).
                // A cost of 0 is what it writes when LiteLLM could not price the model: unknown.
                let cost = extra
                    .and_then(|e| e.get("cost"))
                    .and_then(crate::model::micros::micros_of_json)
                    .filter(|&c| c > 0);
                msg.usage = match (response.and_then(|r| r.get("usage")).map(super::usage_of_openai), cost) {
                    (Some(u), c) => Some(Usage { cost: c, ..u }),
                    (None, Some(c)) => Some(Usage {
                        cost: Some(c),
                        ..Default::default()
                    }),
                    (None, None) => None,
                };
                msg.model = response
                    .and_then(|r| str_of(r, "model"))
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned);
                msg.actions = actions(m, text.as_deref())
                    .into_iter()
                    .map(|(tool, command, call_id, _)| Act {
                        tool,
                        call_id,
                        submit: SUBMIT_SENTINELS.iter().any(|s| command.contains(s)),
                    })
                    .collect();
            }
            Some("tool" | "user") => {
                msg.tool_call_id = tool_call_id(m).map(str::to_owned);
                let (rc, exception) = failure(m, text.as_deref());
                msg.failed = rc.is_some_and(|rc| rc != 0) || exception.is_some();
            }
            Some("exit") => msg.exit = Some(extra.cloned().unwrap_or(Value::Null)),
            Some(r) if !ROLES.contains(&r) => msg.text = super::drift_text(m).is_some(),
            _ => {}
        }
        msg
    }
}

/// The call a result answers: mini's `tool_call_id`, or SWE-agent's `tool_call_ids` (a list
/// of one: SWE-agent parses one call a turn).
fn tool_call_id(m: &Value) -> Option<&str> {
    str_of(m, "tool_call_id").or_else(|| {
        m.get("tool_call_ids")
            .and_then(Value::as_array)
            .and_then(|ids| ids.first())
            .and_then(Value::as_str)
    })
}

/// The payload of a SWE-agent step's events: the model's response (and its thought, when
/// they differ) for the LLM call, the action and what it observed for the tool call.
fn swe_payload(kind: EventKind, step: &Value) -> Payload {
    let get = |k: &str| field(step, k).cloned();
    if kind == EventKind::LlmCall {
        let mut extra = Vec::new();
        let response = match (get("response"), get("thought")) {
            (Some(r), Some(th)) if r != th => {
                extra.push(("thought".to_string(), th));
                Some(r)
            }
            (r, th) => r.or(th),
        };
        return Payload {
            output: response,
            extra,
            ..Default::default()
        };
    }
    let mut extra = Vec::new();
    if let Some(s) = get("state") {
        extra.push(("state".to_string(), super::decode_embedded_owned(s)));
    }
    Payload {
        input: Some(Value::String(str_of(step, "action").unwrap_or("").to_string())),
        output: get("observation"),
        error: None,
        extra,
        context: Vec::new(),
    }
}

/// An assistant message's recorded cost, as the LLM call's extra.
fn llm_extra(m: &Value) -> Vec<(String, Value)> {
    match m.get("extra").and_then(|e| field(e, "cost")) {
        Some(c) => vec![("cost".to_string(), c.clone())],
        None => Vec::new(),
    }
}

/// The run's name: the file name without `.traj` / `.traj.json` (the instance id).
fn run_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for suffix in [".traj.json", ".traj", ".json"] {
        if let Some(s) = name.strip_suffix(suffix)
            && !s.is_empty()
        {
            return s.to_string();
        }
    }
    if name.is_empty() { "trajectory".into() } else { name }
}

/// Text of a message `content`: a string, or the text parts of a list.
fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let t: Vec<&str> = parts
                .iter()
                .filter_map(|p| p.as_str().or_else(|| str_of(p, "text")))
                .collect();
            (!t.is_empty()).then(|| t.join("\n"))
        }
        _ => None,
    }
}

/// A run status from an `exit_status`: SWE-agent writes `submitted`, `submitted (exit_cost)`,
/// `exit_cost`, `exit_context`, `exit_format`, `exit_error`, ...; mini-swe-agent `Submitted`,
/// `LimitsExceeded`, `FormatError`, an exception's name. Only a submission is a success.
fn exit_status(s: Option<&str>) -> RunStatus {
    match s.map(str::trim) {
        // SWE-agent 1.x and mini write the trajectory at every step, `exit_status` last.
        None | Some("") => RunStatus::Running,
        Some(s) if s.to_ascii_lowercase().starts_with("submitted") => RunStatus::Ok,
        Some(_) => RunStatus::Error,
    }
}

fn run_error(status: RunStatus, exit: Option<&str>) -> Option<ErrorInfo> {
    (status == RunStatus::Error).then(|| ErrorInfo {
        kind: Some("exit_status".into()),
        message: format!("the run ended with exit status {:?}", exit.unwrap_or("")),
        ..Default::default()
    })
}

/// Seconds (a number or a numeric string, as SWE-agent 1.x writes `execution_time`) to ns.
fn seconds_ns(v: Option<&Value>) -> Option<i64> {
    let s = match v? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    (0.0..1e9).contains(&s).then_some((s * 1e9) as i64)
}

/// A trajectory's trace (both SWE-agent shapes), and the origin of its whole file.
fn new_trace(
    path: &Path,
    name: &str,
    status: RunStatus,
    model: &Option<String>,
    attributes: Vec<(String, Value)>,
) -> (Trace, Origin) {
    let mut t = Trace::new(RunMeta {
        id: name.to_string(),
        name: Some(name.to_string()),
        format: "swe-agent",
        source: path.to_path_buf(),
        status,
        model: model.clone(),
        attributes,
        ..Default::default()
    });
    let file = t.add_file(path);
    (t, whole_file(file))
}

fn whole_file(file: u16) -> Origin {
    // A whole document: no line, no byte range of its own (the raw view shows the payload).
    Origin {
        file,
        line: 0,
        offset: 0,
        len: 0,
    }
}

/// The model name of a SWE-agent run: 1.x keeps its config as a JSON string in
/// `replay_config` (`agent.model.name`); 0.x has none in the file.
fn swe_model(v: &Value) -> Option<String> {
    let cfg = match field(v, "replay_config")? {
        Value::String(s) => serde_json::from_str::<Value>(s).ok()?,
        other => other.clone(),
    };
    let m = cfg.get("agent")?.get("model")?;
    str_of(m, "name")
        .or_else(|| str_of(m, "model_name"))
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn from_swe(path: &Path, v: &Value, steps: &[Located<Step>], task: Option<&str>) -> Trace {
    let name = run_name(path);
    let info = v.get("info").unwrap_or(&Value::Null);
    let exit = str_of(info, "exit_status");
    let status = exit_status(exit);
    let model = swe_model(v);
    let mut attributes = Vec::new();
    for k in [
        "exit_status",
        "model_stats",
        "swe_agent_version",
        "swe_rex_version",
        "environment",
    ] {
        if let Some(x) = field(info, k).or_else(|| field(v, k)) {
            attributes.push((k.to_string(), x.clone()));
        }
    }
    let (mut t, origin) = new_trace(path, &name, status, &model, attributes);
    // Only run totals: `model_stats` (`tokens_sent`, `tokens_received`, `instance_cost` in
    // dollars), on the run event; all zero when the model was not a paid one.
    let stats = info.get("model_stats");
    let stat = |k: &str| super::lenient_u64(stats.and_then(|s| s.get(k))).filter(|&n| n > 0);
    let cost = stats
        .and_then(|s| s.get("instance_cost"))
        .and_then(crate::model::micros::micros_of_json)
        .filter(|&c| c > 0);
    let usage = Usage {
        input: stat("tokens_sent"),
        output: stat("tokens_received"),
        cost,
        ..Default::default()
    };
    let run = t.add(NewEvent {
        status: status.event_status(),
        model: model.as_deref(),
        usage: (!usage.is_empty()).then_some(usage),
        origin,
        payload: PayloadRef::inline(Payload {
            input: task.map(|t| Value::String(t.to_string())),
            output: field(info, "submission").filter(|s| s.as_str() != Some("")).cloned(),
            error: run_error(status, exit),
            extra: Vec::new(),
            context: Vec::new(),
        }),
        ..NewEvent::new(EventKind::Run, &name)
    });
    let llm_name = model.as_deref().unwrap_or("model");
    for (i, (step, loc)) in steps.iter().enumerate() {
        let id = format!("trajectory[{i}]");
        let (tool, observed, duration) = match step {
            Ok(Step::Step {
                tool,
                observed,
                duration,
            }) => (tool, *observed, *duration),
            Ok(Step::NotAnObject) => {
                t.diagnostics.push(Diagnostic::error(
                    path,
                    Some(loc.line),
                    format!("{id} is not an object; skipped"),
                ));
                continue;
            }
            Err(message) => {
                t.diagnostics
                    .push(Diagnostic::error(path, Some(loc.line), message.clone()));
                continue;
            }
        };
        let at = loc.element_origin(origin.file);
        let llm = t.add(NewEvent {
            id: Some(&format!("{id}.response")),
            parent: Parent::Index(run),
            status: Status::Ok,
            model: model.as_deref(),
            origin: at,
            payload: PayloadRef::Deferred,
            ..NewEvent::new(EventKind::LlmCall, llm_name)
        });
        if tool.is_none() {
            t.diagnostics.push(Diagnostic::warning(
                path,
                Some(loc.line),
                format!("{id} has no `action` string; its tool call is named `?`"),
            ));
        }
        t.add(NewEvent {
            id: Some(&id),
            parent: Parent::Index(llm),
            duration,
            status: if observed { Status::Ok } else { Status::Pending },
            origin: at,
            payload: PayloadRef::Deferred,
            ..NewEvent::new(EventKind::ToolCall, tool.as_deref().unwrap_or("?"))
        });
    }
    t.finalize();
    t
}

/// The one command of a mini-swe-agent 1.x assistant turn: its ```` ```mswea_bash_command ````
/// block, else (older configs) its ```` ```bash ```` block. Zero or several blocks were a
/// format error that mini answered without running anything.
fn command_block(content: &str) -> Option<String> {
    for fence in ["```mswea_bash_command", "```bash"] {
        let blocks: Vec<&str> = content
            .split(fence)
            .skip(1)
            .filter_map(|rest| {
                // The fence's line ends; the block runs to the next closing fence.
                let body = rest
                    .strip_prefix(|c: char| c == '\n' || c == '\r' || c == ' ')
                    .unwrap_or(rest);
                body.find("```").map(|end| &body[..end])
            })
            .collect();
        match blocks.as_slice() {
            [] => continue,
            [one] => return Some(one.trim().to_string()),
            _ => return None,
        }
    }
    None
}

/// An action's exit code: `extra.returncode` (2.x), `{"returncode": N}` content (2.x), or
/// `<returncode>N</returncode>` in the text (1.x).
fn returncode(m: &Value, text: Option<&str>) -> Option<i64> {
    if let Some(rc) = m.get("extra").and_then(|e| e.get("returncode")).and_then(Value::as_i64) {
        return Some(rc);
    }
    let text = text?;
    if let Some(rest) = text.split("<returncode>").nth(1) {
        return rest.split("</returncode>").next()?.trim().parse().ok();
    }
    if text.trim_start().starts_with('{') {
        return serde_json::from_str::<Value>(text).ok()?.get("returncode")?.as_i64();
    }
    None
}

/// A tool call waiting for its result.
struct Waiting {
    event: u32,
    /// The call submits: its result is never a failure.
    submit: bool,
    start: Option<i64>,
}

/// A mini-swe-agent trajectory, or the history of a SWE-agent demonstration: the messages of
/// `list`.
fn from_mini(path: &Path, doc: &Value, messages: &[Located<Msg>], list: &str) -> Trace {
    let name = run_name(path);
    let info = doc.get("info").unwrap_or(&Value::Null);
    // The exit message (2.x) carries the exit status when `info` lacks it.
    let exit_msg = messages
        .iter()
        .rev()
        .find_map(|(m, _)| m.as_ref().ok()?.exit.as_ref())
        .filter(|e| !e.is_null());
    let exit = str_of(info, "exit_status").or_else(|| exit_msg.and_then(|e| str_of(e, "exit_status")));
    // The old list form has no metadata at all: nothing says whether it finished.
    let status = if doc.is_null() && exit.is_none() {
        RunStatus::Unknown
    } else {
        exit_status(exit)
    };
    let model = info
        .get("config")
        .and_then(|c| c.get("model"))
        .and_then(|m| str_of(m, "model_name"))
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let mut attributes = Vec::new();
    for k in ["exit_status", "model_stats", "mini_version"] {
        if let Some(x) = field(info, k) {
            attributes.push((k.to_string(), x.clone()));
        }
    }
    if let Some(f) = field(doc, "trajectory_format") {
        attributes.push(("trajectory_format".to_string(), f.clone()));
    }
    let (mut t, origin) = new_trace(path, &name, status, &model, attributes);
    let submission = field(info, "submission")
        .or_else(|| exit_msg.and_then(|e| field(e, "submission")))
        .filter(|s| s.as_str() != Some(""))
        .cloned();
    let run = t.add(NewEvent {
        status: status.event_status(),
        model: model.as_deref(),
        origin,
        payload: PayloadRef::inline(Payload {
            output: submission,
            error: run_error(status, exit),
            ..Default::default()
        }),
        ..NewEvent::new(EventKind::Run, &name)
    });
    // Calls joined by `tool_call_id`, and calls whose output is the next message (1.x, text
    // actions of 2.x).
    let mut by_id: HashMap<String, Waiting> = HashMap::new();
    let mut by_position: VecDeque<Waiting> = VecDeque::new();
    for (i, (m, loc)) in messages.iter().enumerate() {
        let at = format!("{list}[{i}]");
        let here = loc.element_origin(origin.file);
        let m = match m {
            Ok(m) => m,
            Err(message) => {
                t.diagnostics.push(Diagnostic::error(path, Some(loc.line), message));
                continue;
            }
        };
        let ts = m.ts;
        let Some(role) = m.role.as_deref() else {
            t.diagnostics.push(Diagnostic::error(
                path,
                Some(loc.line),
                format!("{at} has no `role`; skipped"),
            ));
            continue;
        };
        match role {
            "assistant" => {
                // Calls left waiting for a positional result got none.
                by_position.clear();
                let call_model = m.model.as_deref().or(model.as_deref());
                let llm = t.add(NewEvent {
                    id: Some(&at),
                    parent: Parent::Index(run),
                    start: ts,
                    status: Status::Ok,
                    usage: m.usage.filter(|u| !u.is_empty()),
                    model: call_model,
                    origin: here,
                    payload: PayloadRef::Deferred,
                    ..NewEvent::new(EventKind::LlmCall, call_model.unwrap_or("assistant"))
                });
                for (k, act) in m.actions.iter().enumerate() {
                    let ev = t.add(NewEvent {
                        id: Some(&act.call_id.clone().unwrap_or_else(|| format!("{at}.action[{k}]"))),
                        parent: Parent::Index(llm),
                        start: ts,
                        status: Status::Pending,
                        origin: here,
                        payload: PayloadRef::Deferred,
                        ..NewEvent::new(EventKind::ToolCall, &act.tool)
                    });
                    let w = Waiting {
                        event: ev,
                        submit: act.submit,
                        start: ts,
                    };
                    match &act.call_id {
                        Some(id) => {
                            by_id.insert(id.clone(), w);
                        }
                        None => by_position.push_back(w),
                    }
                }
            }
            "tool" | "user" => {
                let waiting = match m.tool_call_id.as_deref() {
                    Some(id) => by_id.remove(id).or_else(|| {
                        t.diagnostics.push(Diagnostic::warning(
                            path,
                            Some(loc.line),
                            format!("{at}: a tool result for `{id}`, which no assistant message called"),
                        ));
                        None
                    }),
                    None => by_position.pop_front(),
                };
                match waiting {
                    Some(w) => complete(&mut t, w, m.failed, ts, here),
                    None => {
                        if role == "tool" && m.tool_call_id.is_none() {
                            t.diagnostics.push(Diagnostic::warning(
                                path,
                                Some(loc.line),
                                format!("{at}: a tool result with no `tool_call_id` and no call waiting for it"),
                            ));
                        }
                        t.add(NewEvent {
                            id: Some(&at),
                            parent: Parent::Index(run),
                            start: ts,
                            status: Status::Ok,
                            origin: here,
                            payload: PayloadRef::Deferred,
                            ..NewEvent::new(EventKind::Message(Role::parse(role)), role)
                        });
                    }
                }
            }
            "exit" => {}
            "system" => {
                t.add(NewEvent {
                    id: Some(&at),
                    parent: Parent::Index(run),
                    start: ts,
                    status: Status::Ok,
                    origin: here,
                    payload: PayloadRef::Deferred,
                    ..NewEvent::new(EventKind::Message(Role::System), role)
                });
            }
            _ => {
                // Drift (formats/mod.rs): a role of a newer version, counted, shown when it
                // carries text.
                t.skipped.add(role);
                if m.text {
                    t.add(NewEvent {
                        id: Some(&at),
                        parent: Parent::Index(run),
                        start: ts,
                        status: Status::Ok,
                        origin: here,
                        payload: PayloadRef::Deferred,
                        ..NewEvent::new(EventKind::Other, role)
                    });
                }
            }
        }
    }
    t.finalize();
    t
}

/// The actions of an assistant message: (tool name, command, call id, arguments).
fn actions(m: &Value, text: Option<&str>) -> Vec<(String, String, Option<String>, Value)> {
    let extra_actions = m.get("extra").and_then(|e| e.get("actions")).and_then(Value::as_array);
    let tool_calls = m.get("tool_calls").and_then(Value::as_array);
    if let Some(list) = extra_actions {
        // 2.x: `extra.actions` is what mini ran; the tool call of the same id names the tool.
        return list
            .iter()
            .map(|a| {
                let id = str_of(a, "tool_call_id").map(str::to_owned);
                let function = id
                    .as_deref()
                    .and_then(|id| tool_calls?.iter().find(|c| str_of(c, "id") == Some(id)))
                    .and_then(|c| c.get("function"));
                let tool = function.and_then(|f| str_of(f, "name")).unwrap_or("bash");
                let command = str_of(a, "command").unwrap_or("").to_string();
                // The model's own arguments where it made a tool call, else the action.
                let args = match function.and_then(|f| f.get("arguments")) {
                    Some(x) => decode_embedded(x),
                    None if a.is_object() => a.clone(),
                    None => json!({ "command": a }),
                };
                (tool.to_string(), command, id, args)
            })
            .collect();
    }
    if let Some(calls) = tool_calls {
        return calls
            .iter()
            .map(|c| {
                let f = c.get("function").unwrap_or(&Value::Null);
                let args = f.get("arguments").map(decode_embedded).unwrap_or(Value::Null);
                let command = str_of(&args, "command").unwrap_or("").to_string();
                let tool = str_of(f, "name").filter(|s| !s.is_empty()).unwrap_or("bash");
                (tool.to_string(), command, str_of(c, "id").map(str::to_owned), args)
            })
            .collect();
    }
    // SWE-agent's history without function calling: the action it parsed from the reply
    // (mini's messages have no `action`).
    if let Some(action) = str_of(m, "action").filter(|a| !a.trim().is_empty()) {
        let a = action.to_string();
        return vec![(first_word(action), a.clone(), None, Value::String(a))];
    }
    match text.and_then(command_block) {
        Some(cmd) => vec![("bash".to_string(), cmd.clone(), None, json!({ "command": cmd }))],
        None => Vec::new(),
    }
}

/// What a result message says of its call.
struct Outcome {
    rc: Option<i64>,
    output: Option<Value>,
    error: Option<ErrorInfo>,
}

/// Read a result message for the call that ran `command`.
fn result_of(m: &Value, text: Option<String>, command: &str) -> Outcome {
    let (rc, exception) = failure(m, text.as_deref());
    // The submit command ends the run: mini 2.x records it as "not executed" (-1), 1.x prints
    // the submission without a return code. Neither is a failure.
    let submit = SUBMIT_SENTINELS.iter().any(|s| command.contains(s));
    let failed = !submit && (rc.is_some_and(|rc| rc != 0) || exception.is_some());
    let output = m
        .get("extra")
        .and_then(|e| e.get("raw_output"))
        .cloned()
        .or_else(|| text.map(|s| super::json_or_string(&s)));
    let error = failed.then(|| ErrorInfo {
        kind: Some("returncode".into()),
        message: match (rc, exception) {
            (_, Some(e)) => e.to_string(),
            (Some(rc), None) => format!("exit code {rc}"),
            (None, None) => "failed".into(),
        },
        ..Default::default()
    });
    Outcome { rc, output, error }
}

/// A result's exit code and exception, if any.
fn failure<'m>(m: &'m Value, text: Option<&str>) -> (Option<i64>, Option<&'m str>) {
    let exception = m
        .get("extra")
        .and_then(|e| str_of(e, "exception_info"))
        .filter(|s| !s.is_empty());
    (returncode(m, text), exception)
}

/// Join a result message to its call: its status and time now, its output from the
/// message's bytes (the call's second origin) when shown.
fn complete(t: &mut Trace, w: Waiting, failed: bool, ts: Option<i64>, at: Origin) {
    let e = t.event_mut(w.event);
    e.status = if failed && !w.submit { Status::Error } else { Status::Ok };
    if let (Some(s), Some(end)) = (w.start, ts)
        && end >= s
    {
        e.duration = end.checked_sub(s).into();
    }
    e.origin2 = Some(Box::new(at));
}

#[cfg(test)]
#[path = "swe_agent_oracle.rs"]
mod oracle;

/// A call's gist: the action line SWE-agent ran (`open "src/a.py" 293`, `edit 1:1`), its
/// first line (an edit's replacement text follows it); of a function call, its command.
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{generic, key_or_generic};
    match input {
        Value::String(s) => s.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_string),
        _ => match name {
            "bash" | "str_replace_editor" => key_or_generic(name, input, &["command", "path"]),
            _ => generic(name, input),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::{decoded, fixture, outline};
    use proptest::prelude::*;

    fn load(name: &str) -> Trace {
        let mut l = SweAgent.load(&fixture("swe-agent", name)).unwrap();
        assert_eq!(l.traces.len(), 1);
        l.traces.remove(0)
    }

    fn probe(name: &str, b: &[u8]) -> Probe {
        Probe::from_bytes(Path::new(name), b.to_vec(), true)
    }

    #[test]
    fn detection_by_name_then_shape() {
        let swe =
            br#"{"environment": "x", "trajectory": [{"action": "ls", "observation": ""}], "history": [], "info": {}}"#;
        assert_eq!(SweAgent.detect(&probe("a.traj", swe)), 100);
        assert_eq!(SweAgent.detect(&probe("a.json", swe)), 97);
        let list = br#"[{"role": "system", "content": "s"}, {"role": "assistant", "content": "x"}]"#;
        assert_eq!(SweAgent.detect(&probe("a.traj.json", list)), 100);
        // A plain chat list elsewhere is openai-chat's, not ours.
        assert_eq!(SweAgent.detect(&probe("a.json", list)), 0);
        let signed = b"[{\"role\": \"assistant\", \"content\": \"```mswea_bash_command\\nls\\n```\"}]";
        assert_eq!(SweAgent.detect(&probe("a.json", signed)), 96);
        let v2 = br#"{"info": {}, "messages": [], "trajectory_format": "mini-swe-agent-1.1"}"#;
        assert_eq!(SweAgent.detect(&probe("a.json", v2)), 97);
        assert_eq!(SweAgent.detect(&probe("a.json", br#"{"messages": []}"#)), 0);
        assert_eq!(SweAgent.detect(&probe("a.traj", b"not json")), 0);
        // Cut by the probe: the name and the first keys.
        let cut = Probe::from_bytes(
            Path::new("a.traj"),
            br#"{"environment": "e", "trajectory": [{"action": "ls"#.to_vec(),
            false,
        );
        assert_eq!(SweAgent.detect(&cut), 100);
        let cut = Probe::from_bytes(
            Path::new("a.traj"),
            br#"{"trajectory": [{"action": "ls"#.to_vec(),
            false,
        );
        assert_eq!(SweAgent.detect(&cut), 100);
        let cut = Probe::from_bytes(
            Path::new("a.json"),
            br#"{"trajectory": [{"action": "ls"#.to_vec(),
            false,
        );
        assert_eq!(SweAgent.detect(&cut), 0);
    }

    #[test]
    fn swe_agent_steps_are_tool_calls_submit_included() {
        let t = load("fix-typo.traj");
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.model.as_deref(), Some("gpt-4o"));
        assert_eq!(t.counts().tool_calls, 3);
        assert_eq!(t.counts().llm_calls, 3);
        assert_eq!(
            outline(&t),
            [
                "run fix-typo",
                "  llm gpt-4o",
                "    tool find_file",
                "  llm gpt-4o",
                "    tool edit",
                "  llm gpt-4o",
                "    tool submit",
            ]
        );
        let edit = t.find("trajectory[1]").unwrap();
        assert_eq!(t.event(edit).duration, Some(250_000_000));
        let p = crate::formats::payload(&t, t.event(edit));
        assert_eq!(p.input, Some(json!("edit 3:3\n    return a / b\nend_of_edit")));
        assert_eq!(p.output, Some(json!("File updated.")));
        let run = crate::formats::payload(&t, t.event(t.roots[0]));
        assert_eq!(run.input, Some(json!("Fix the typo in calc.py")));
        assert!(run.output.unwrap().as_str().unwrap().starts_with("diff --git"));
        assert!(t.diagnostics.is_empty());
        // Run totals only (`model_stats`): the run's tokens and its recorded $0.02 (the run's
        // cost from them: tests/cost.rs).
        assert_eq!(t.counts().tokens, 1200 + 90);
        let u = t.event(t.roots[0]).usage.get().unwrap();
        assert_eq!((u.input, u.output, u.cost), (Some(1200), Some(90), Some(20_000)));
    }

    #[test]
    fn damaged_swe_trajectory_loads_what_it_can() {
        let t = load("damaged.traj");
        // A step that is not an object, a step with no action; no exit status yet.
        assert_eq!(t.meta.status, RunStatus::Running);
        assert_eq!(t.counts().tool_calls, 2);
        assert_eq!(t.diagnostics.len(), 2, "{:?}", t.diagnostics);
        assert!(t.diagnostics[0].message.contains("trajectory[1] is not an object"));
        assert!(t.diagnostics[1].message.contains("trajectory[2] has no `action`"));
        let pending = t.find("trajectory[2]").unwrap();
        assert_eq!(t.event(pending).status, Status::Pending);
    }

    #[test]
    fn mini_list_one_block_per_turn_output_in_next_message() {
        let t = load("mini-v1.traj.json");
        assert_eq!(t.meta.status, RunStatus::Unknown);
        assert_eq!(t.counts().tool_calls, 3);
        let calls: Vec<u32> = t
            .walk()
            .into_iter()
            .map(|(i, _)| i)
            .filter(|&i| t.event(i).kind == EventKind::ToolCall)
            .collect();
        let p = crate::formats::payload(&t, t.event(calls[0]));
        assert_eq!(p.input, Some(json!({"command": "cat calc.py"})));
        assert_eq!(t.event(calls[0]).status, Status::Error); // returncode 1
        assert_eq!(t.event(calls[1]).status, Status::Ok);
        assert_eq!(t.event(calls[2]).status, Status::Ok); // the submission
        // The turn with two blocks was a format error: no call, and its reply is a message.
        assert!(outline(&t).iter().filter(|l| l.trim() == "message user").count() >= 2);
    }

    #[test]
    fn mini_v2_parallel_actions_joined_by_id_with_usage_and_times() {
        let t = load("mini-v2.traj.json");
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.counts().tool_calls, 3);
        assert_eq!(t.counts().llm_calls, 2);
        assert_eq!(t.counts().tokens, 430 + 530);
        // r2: 500 prompt of which 200 cached, 30 completion of which 10 reasoning, and the
        // cost LiteLLM computed; r1's recorded cost of 0 means unpriced, not free.
        let u: Vec<Usage> = t.events.iter().filter_map(|e| e.usage.get()).collect();
        assert_eq!(u[0].cost, None);
        let want = Usage {
            input: Some(300),
            cache_read: Some(200),
            output: Some(20),
            reasoning: Some(10),
            total: Some(530),
            cost: Some(1_230),
            ..Default::default()
        };
        assert_eq!(u[1], want);
        let p = crate::formats::payload(&t, t.event(t.find("call_a").unwrap()));
        assert_eq!(p.input, Some(json!({"command": "echo hi > notes.txt"})));
        let a = t.find("call_b").unwrap();
        assert_eq!(t.event(a).status, Status::Error);
        assert_eq!(t.event(a).duration, Some(500_000_000));
        assert_eq!(t.event(t.event(a).parent).kind, EventKind::LlmCall);
        let submit = t.find("call_c").unwrap();
        assert_eq!(t.event(submit).status, Status::Ok);
        // The result for an id nobody called is kept as a message and said.
        assert_eq!(t.diagnostics.len(), 1);
        assert!(t.diagnostics[0].message.contains("call_zz"));
        let run = crate::formats::payload(&t, t.event(t.roots[0]));
        assert_eq!(run.output, Some(json!("diff")));
    }

    #[test]
    fn unreadable_and_foreign_documents_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let bad = d.path().join("cut.traj");
        std::fs::write(&bad, br#"{"trajectory": [{"action": "ls""#).unwrap();
        assert!(SweAgent.load(&bad).is_err());
        let other = d.path().join("x.json");
        std::fs::write(&other, br#"{"version": 1, "tools": []}"#).unwrap();
        assert!(matches!(SweAgent.load(&other), Err(LoadError::NotATrace { .. })));
    }

    /// Every fixture and sample loads as the old reader loaded it, each payload decoded from
    /// its byte range equal to the payload the old reader held.
    #[test]
    fn payloads_read_from_disk_equal_the_held_ones() {
        let mut files: Vec<std::path::PathBuf> = Vec::new();
        for dir in ["tests/fixtures/swe-agent", "sample-traces/swe-agent"] {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
            for e in std::fs::read_dir(&dir).unwrap() {
                files.push(e.unwrap().path());
            }
        }
        files.sort();
        let mut compared = 0;
        for f in &files {
            let (Ok(new), Ok(old)) = (SweAgent.load(f), super::oracle::load(f)) else {
                continue;
            };
            let new = &new.traces[0];
            assert!(
                new.events
                    .iter()
                    .skip(1)
                    .all(|e| matches!(e.payload, PayloadRef::Deferred))
            );
            assert_eq!(unlined(decoded(new)), decoded(&old), "{}", f.display());
            compared += 1;
        }
        assert!(compared >= 5, "{compared} of {} files compared", files.len());
    }

    /// A trace as the old reader gave it: it named no line in its diagnostics (the streamed
    /// one names the element's).
    fn unlined(mut d: Value) -> Value {
        for diag in d["diagnostics"].as_array_mut().into_iter().flatten() {
            assert!(diag[1].is_u64(), "a diagnostic names its line: {diag}");
            diag[1] = Value::Null;
        }
        d
    }

    /// A JSON text of one of `words`, or another kind of value.
    fn text(words: &'static [&'static str]) -> impl Strategy<Value = String> {
        prop_oneof![
            6 => prop::sample::select(words).prop_map(|w| serde_json::to_string(w).unwrap()),
            1 => Just("null".to_string()),
            1 => (-2i64..3).prop_map(|n| n.to_string()),
            1 => Just("[\"a b\", 1]".to_string()),
            1 => Just("{\"text\": \"t\"}".to_string()),
        ]
    }

    /// An object's text from (key, value text) pairs: a key may come twice.
    fn object(fields: Vec<(&str, String)>) -> String {
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("{k:?}: {v}")).collect();
        format!("{{{}}}", body.join(", "))
    }

    fn step() -> impl Strategy<Value = String> {
        let action = text(&[
            "open a.py 3",
            "",
            "  edit 1:2\nx\nend_of_edit",
            "submit",
            "ls\t-la",
            "été x",
        ]);
        let field = prop_oneof![
            (Just("action"), action),
            (Just("observation"), text(&["out", ""])),
            (
                Just("execution_time"),
                prop::sample::select(vec!["0.25", "\"1.5\"", "\"x\"", "-1", "null", "1e12"]).prop_map(str::to_string)
            ),
            (Just("response"), text(&["I will", "same"])),
            (Just("thought"), text(&["I will", "same"])),
            (Just("state"), text(&["{\"open_file\": \"a\"}", "not json"])),
            (Just("query"), text(&["q"])),
        ];
        prop_oneof![
            8 => prop::collection::vec(field, 0..6).prop_map(object),
            1 => prop::sample::select(vec!["3", "[1, {\"action\": \"ls\"}]", "\"s\"", "null"]).prop_map(str::to_string),
        ]
    }

    fn message() -> impl Strategy<Value = String> {
        let role = prop::sample::select(vec![
            "assistant",
            "assistant",
            "user",
            "tool",
            "exit",
            "system",
            "critic",
        ]);
        let content = text(&[
            "Task: fix it",
            "run\n```mswea_bash_command\nls -la\n```",
            "```bash\necho hi\n```",
            "<returncode>1</returncode><output>no</output>",
            "<returncode>0</returncode>",
            "MINI_SWE_AGENT_FINAL_OUTPUT\ndiff",
            "```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```",
        ]);
        let call = prop::sample::select(vec!["c1", "c2", "c3"]);
        let tool_calls = prop::collection::vec((call.clone(), prop::sample::select(vec!["bash", "edit", ""])), 0..3).prop_map(|cs| {
            let cs: Vec<String> = cs
                .iter()
                .map(|(id, name)| format!("{{\"id\": {id:?}, \"function\": {{\"name\": {name:?}, \"arguments\": \"{{\\\"command\\\": \\\"ls\\\"}}\"}}}}"))
                .collect();
            format!("[{}]", cs.join(", "))
        });
        let extra = prop::collection::vec(
            prop_oneof![
                (
                    Just("timestamp"),
                    prop::sample::select(vec!["1700000000.5", "1700000003", "\"2025-01-01T00:00:00Z\"", "null"])
                        .prop_map(str::to_string)
                ),
                (
                    Just("cost"),
                    prop::sample::select(vec!["0", "0.0012", "\"x\""]).prop_map(str::to_string)
                ),
                (
                    Just("response"),
                    prop::sample::select(vec![
                        "{\"model\": \"gpt-x\", \"usage\": {\"prompt_tokens\": 50, \"completion_tokens\": 7}}",
                        "{\"model\": \"\"}",
                        "3",
                    ])
                    .prop_map(str::to_string)
                ),
                (
                    Just("actions"),
                    prop::collection::vec(
                        (
                            call.clone(),
                            prop::sample::select(vec!["ls", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"])
                        ),
                        0..3
                    )
                    .prop_map(|a| {
                        let a: Vec<String> = a
                            .iter()
                            .map(|(id, c)| format!("{{\"command\": {c:?}, \"tool_call_id\": {id:?}}}"))
                            .collect();
                        format!("[{}]", a.join(", "))
                    })
                ),
                (
                    Just("returncode"),
                    prop::sample::select(vec!["0", "2", "-1"]).prop_map(str::to_string)
                ),
                (Just("exception_info"), text(&["Timeout", ""])),
                (Just("exit_status"), text(&["Submitted", "LimitsExceeded"])),
                (Just("submission"), text(&["diff", ""])),
            ],
            0..4,
        )
        .prop_map(object);
        let field = prop_oneof![
            3 => (Just("role"), role.prop_map(|r| format!("{r:?}"))),
            3 => (Just("content"), content),
            1 => (Just("tool_call_id"), call.clone().prop_map(|c| format!("{c:?}"))),
            1 => (Just("tool_call_ids"), call.prop_map(|c| format!("[{c:?}]"))),
            1 => (Just("action"), text(&["ls -la\n", "submit", "", "edit 1:1\nx\nend_of_edit"])),
            1 => (Just("tool_calls"), tool_calls),
            2 => (Just("extra"), extra),
            1 => (Just("is_demo"), prop::sample::select(vec!["true", "false"]).prop_map(str::to_string)),
        ];
        prop_oneof![
            12 => prop::collection::vec(field, 0..6).prop_map(object),
            1 => Just("7".to_string()),
        ]
    }

    /// A trajectory of each shape: (file name, text).
    fn trajectory() -> impl Strategy<Value = (String, String)> {
        let info = || {
            (text(&["submitted", "submitted (exit_cost)", "exit_format", "", "Submitted"]), text(&["diff --git a", ""]))
            .prop_map(|(exit, sub)| {
                format!("{{\"exit_status\": {exit}, \"submission\": {sub}, \"model_stats\": {{\"tokens_sent\": 120, \"tokens_received\": \"9\", \"instance_cost\": 0.02}}, \"config\": {{\"model\": {{\"model_name\": \"mini-model\"}}}}}}")
            })
        };
        let list = |items: Vec<String>| format!("[{}]", items.join(",\n"));
        let swe = (
            prop::collection::vec(step(), 0..6),
            prop::collection::vec(message(), 0..4),
            info(),
            prop::sample::subsequence(
                vec!["environment", "trajectory", "history", "info", "replay_config"],
                1..=5,
            ),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(move |(mut steps, history, info, mut keys, shuffle, plain)| {
                // Mostly documents of the shape, where the most is compared.
                if plain {
                    steps.insert(0, r#"{"action": "ls", "observation": "a.py"}"#.to_string());
                    if !keys.iter().any(|k| matches!(*k, "history" | "info" | "environment")) {
                        keys.push("info");
                    }
                }
                if !keys.contains(&"trajectory") {
                    keys.push("trajectory");
                }
                if shuffle {
                    keys.reverse();
                }
                let fields: Vec<(&str, String)> = keys
                    .into_iter()
                    .map(|k| {
                        let v = match k {
                            "environment" => "\"swe_main\"".to_string(),
                            "trajectory" => list(steps.clone()),
                            "history" => list(history.clone()),
                            "info" => info.clone(),
                            _ => "\"{\\\"agent\\\": {\\\"model\\\": {\\\"name\\\": \\\"gpt-4o\\\"}}}\"".to_string(),
                        };
                        (k, v)
                    })
                    .collect();
                ("run.traj".to_string(), object(fields))
            });
        let mini = (prop::collection::vec(message(), 0..8), info(), any::<bool>()).prop_map(
            move |(messages, info, info_last)| {
                let mut fields = vec![
                    ("messages", list(messages)),
                    ("trajectory_format", "\"mini-swe-agent-1.1\"".to_string()),
                ];
                let at = if info_last { fields.len() } else { 0 };
                fields.insert(at, ("info", info));
                ("run.traj.json".to_string(), object(fields))
            },
        );
        let bare = (prop::collection::vec(message(), 0..8), any::<bool>()).prop_map(move |(mut m, plain)| {
            if plain {
                m.insert(0, r#"{"role": "system", "content": "s"}"#.to_string());
            }
            ("run.traj.json".to_string(), list(m))
        });
        // A SWE-agent demonstration: the history alone.
        let demo = (prop::collection::vec(message(), 0..8), any::<bool>()).prop_map(move |(mut m, plain)| {
            if plain {
                m.insert(
                    0,
                    r#"{"role": "system", "content": "s", "agent": "main", "message_type": "system_prompt"}"#
                        .to_string(),
                );
            }
            ("demo.traj".to_string(), object(vec![("history", list(m))]))
        });
        prop_oneof![swe, mini, bare, demo]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// The streamed reader, cut in chunks anywhere, loads every shape as the old reader
        /// (serde_json on the whole document) loaded it, payloads decoded from disk included.
        #[test]
        fn streamed_trajectories_load_as_the_whole_document_did(
            (name, doc) in trajectory(),
            chunk in prop_oneof![1usize..64, Just(1 << 20)],
            pretty in any::<bool>(),
        ) {
            let doc = if pretty {
                serde_json::from_str::<Value>(&doc).map(|v| serde_json::to_string_pretty(&v).unwrap()).unwrap_or(doc)
            } else {
                doc
            };
            let d = tempfile::tempdir().unwrap();
            let path = d.path().join(&name);
            std::fs::write(&path, &doc).unwrap();
            let new = load_with(&path, &Document { chunk, ..Document::every_list(PATHS) }, None);
            let old = super::oracle::load(&path);
            match (new, old) {
                (Ok(new), Ok(old)) => {
                    prop_assert_eq!(unlined(decoded(&new.traces[0])), decoded(&old), "{}", doc);
                }
                (Err(_), Err(_)) => {}
                (new, old) => prop_assert!(false, "{doc}\nstreamed: {:?}\nwhole: {:?}", new.map(|_| ()), old.map(|_| ())),
            }
        }
    }

    /// Two actions of one message under one `tool_call_id`: each shows its own arguments.
    #[test]
    fn actions_sharing_an_id_decode_their_own_arguments() {
        let t = load("mini-dup-ids.traj.json");
        let calls: Vec<u32> = (0..t.events.len() as u32)
            .filter(|&i| t.event(i).kind == EventKind::ToolCall)
            .collect();
        let inputs: Vec<Value> = calls
            .iter()
            .map(|&i| crate::formats::payload(&t, t.event(i)).input.unwrap_or_default())
            .collect();
        assert_eq!(
            inputs,
            [
                json!({"command": "ls first"}),
                json!({"command": "ls second"}),
                json!({"command": "echo one", "tool_call_id": "call_same"}),
                json!({"command": "echo two", "tool_call_id": "call_same"}),
            ]
        );
    }

    /// A demonstration with function calling: each assistant action is a tool call, joined
    /// to its `tool` message by `tool_call_ids`; nothing says how it ended.
    #[test]
    fn demonstration_history_with_function_calls() {
        let t = load("demo-function-calling.traj");
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.status, RunStatus::Unknown);
        assert_eq!((t.counts().tool_calls, t.counts().llm_calls), (5, 5));
        assert_eq!(
            outline(&t),
            [
                "run demo-function-calling",
                "  message system",
                "  message user",
                "  llm assistant",
                "    tool find_file",
                "  llm assistant",
                "    tool open",
                "  llm assistant",
                "    tool edit",
                "  llm assistant",
                "    tool bash",
                "  llm assistant",
                "    tool submit",
            ]
        );
        let run = crate::formats::payload(&t, t.event(t.roots[0]));
        assert!(run.input.unwrap().as_str().unwrap().contains("ZeroDivisionError"));
        let edit = t.find("call_9fQm2VbLr4Zt").unwrap();
        assert_eq!(t.event(edit).status, Status::Ok);
        let p = crate::formats::payload(&t, t.event(edit));
        assert_eq!(
            p.input,
            Some(json!({"search": "return sum(xs) / len(xs)", "replace": "return sum(xs) / len(xs) if xs else 0.0"}))
        );
        assert!(p.output.unwrap().as_str().unwrap().starts_with("Text replaced."));
        let submit = t.find("call_submit").unwrap();
        assert_eq!(t.event(submit).status, Status::Ok);
        let llm = crate::formats::payload(&t, t.event(t.event(submit).parent));
        assert_eq!(llm.output, Some(json!("The fix works; submitting.")));
        // Detection: by name, or by SWE-agent's own fields without it.
        let text = std::fs::read(fixture("swe-agent", "demo-function-calling.traj")).unwrap();
        assert_eq!(SweAgent.detect(&probe("x.traj", &text)), 100);
        assert_eq!(SweAgent.detect(&probe("x.json", &text)), 97);
        let chat = br#"{"history": [{"role": "user", "content": "hi"}]}"#;
        assert_eq!(SweAgent.detect(&probe("x.json", chat)), 0);
        assert_eq!(SweAgent.detect(&probe("x.traj", chat)), 100);
    }

    /// A demonstration without function calling (0.x): the action SWE-agent parsed is the
    /// call, the next user message its output; the last `submit` got none.
    #[test]
    fn demonstration_history_with_parsed_actions() {
        let t = load("demo-ctf.traj");
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let calls: Vec<u32> = t
            .walk()
            .into_iter()
            .map(|(i, _)| i)
            .filter(|&i| t.event(i).kind == EventKind::ToolCall)
            .collect();
        let names: Vec<&str> = calls.iter().map(|&i| t.name(i)).collect();
        assert_eq!(names, ["ls", "cat", "echo", "submit"]);
        let status: Vec<Status> = calls.iter().map(|&i| t.event(i).status).collect();
        assert_eq!(status, [Status::Ok, Status::Ok, Status::Ok, Status::Pending]);
        let p = crate::formats::payload(&t, t.event(calls[1]));
        assert_eq!(p.input, Some(json!("cat rotten.txt\n")));
        assert!(p.output.unwrap().as_str().unwrap().starts_with("synt{"));
        assert_eq!(t.counts().llm_calls, 4);
        let users = outline(&t).iter().filter(|l| l.trim() == "message user").count();
        assert_eq!(users, 1, "the task; the outputs are the calls'");
    }

    /// A role a newer version writes is drift: skipped quietly and counted, shown when it
    /// carries text.
    #[test]
    fn unknown_roles_are_skipped_quietly() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.traj.json");
        std::fs::write(
            &p,
            br#"{"info": {"exit_status": "Submitted"}, "trajectory_format": "mini-swe-agent-1.1", "messages": [
                {"role": "user", "content": "Task"},
                {"role": "critic", "content": "Looks wrong to me."},
                {"role": "assistant", "content": "```mswea_bash_command\nls\n```"},
                {"role": "critic", "content": ""},
                {"role": "user", "content": "<returncode>0</returncode><output>a</output>"}
            ]}"#,
        )
        .unwrap();
        let t = SweAgent.load(&p).unwrap().traces.remove(0);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.skipped.iter().collect::<Vec<_>>(), [("critic", 2)]);
        assert_eq!(t.counts().tool_calls, 1);
        let other = t.find("messages[1]").unwrap();
        assert_eq!(t.event(other).kind, EventKind::Other);
        assert_eq!(t.name(other), "critic");
        assert_eq!(
            crate::formats::payload(&t, t.event(other)).input,
            Some(json!("Looks wrong to me."))
        );
        assert!(t.find("messages[3]").is_none());
        // The call's output is still the next user message.
        let call = t.find("messages[2].action[0]").unwrap();
        assert_eq!(t.event(call).status, Status::Ok);
    }

    /// A message of a role no version writes, with the envelope of `near` (SWE-agent's
    /// `agent` and `message_type`), text or not.
    fn unknown_message(rng: &mut crate::formats::testing::Rng, near: Option<&Value>) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("role".into(), Value::String(rng.type_name()));
        m.insert("content".into(), Value::String(rng.maybe_text().unwrap_or_default()));
        for k in ["agent", "message_type"] {
            if let Some(x) = near.and_then(|n| n.get(k)) {
                m.insert(k.into(), x.clone());
            }
        }
        m.insert(rng.type_name(), rng.value());
        Value::Object(m)
    }

    /// An unknown field into an object, at the front or the end.
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

    /// The drift mutator of a trajectory (a JSON document): unknown fields into the document,
    /// `info`, the steps and the messages (one object in three), and messages of unknown roles
    /// before one message in four of the lists read as messages (mini's `messages`, the bare
    /// list, a demonstration's `history`). A full trajectory's `history` is not read as
    /// events (only its task): unknown roles go there too, and count for nothing.
    /// Returns the records that must be counted as skipped.
    fn drift_trajectory(f: &Path, rng: &mut crate::formats::testing::Rng) -> usize {
        let Ok(mut doc) = serde_json::from_slice::<Value>(&std::fs::read(f).unwrap()) else {
            return 0;
        };
        let mut counted = 0;
        let mut messages = |list: &mut Vec<Value>, rng: &mut crate::formats::testing::Rng, read: bool| {
            let mut out = Vec::with_capacity(list.len() + list.len() / 3);
            for mut m in list.drain(..) {
                if rng.one_in(4) {
                    out.push(unknown_message(rng, Some(&m)));
                    counted += usize::from(read);
                }
                if rng.one_in(3) {
                    with_unknown_field(&mut m, rng);
                }
                out.push(m);
            }
            *list = out;
        };
        match &mut doc {
            Value::Array(list) => messages(list, rng, true),
            Value::Object(o) => {
                let steps = o.contains_key("trajectory");
                for (k, v) in o.iter_mut() {
                    match (k.as_str(), v) {
                        ("trajectory", Value::Array(list)) => {
                            for s in list {
                                if rng.one_in(3) {
                                    with_unknown_field(s, rng);
                                }
                            }
                        }
                        ("messages", Value::Array(list)) => messages(list, rng, true),
                        ("history", Value::Array(list)) => messages(list, rng, !steps),
                        ("info", v) => with_unknown_field(v, rng),
                        _ => {}
                    }
                }
                with_unknown_field(&mut doc, rng);
            }
            _ => return 0,
        }
        std::fs::write(f, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        counted
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on our fixtures, samples and the corpus'
        /// trajectories: unknown step fields change nothing, unknown roles are counted.
        #[test]
        fn drift_is_skipped_quietly(seed in any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "swe-agent",
                &[
                    "tests/fixtures/swe-agent/fix-typo.traj",
                    "tests/fixtures/swe-agent/damaged.traj",
                    "tests/fixtures/swe-agent/mini-v1.traj.json",
                    "tests/fixtures/swe-agent/mini-v2.traj.json",
                    "tests/fixtures/swe-agent/mini-dup-ids.traj.json",
                    "tests/fixtures/swe-agent/demo-function-calling.traj",
                    "tests/fixtures/swe-agent/demo-ctf.traj",
                    "sample-traces/swe-agent/stats-mean-empty.traj",
                    "sample-traces/swe-agent/weather-kelvin.traj.json",
                ],
            );
            crate::formats::testing::drift_check(&sources, seed, &drift_trajectory);
        }
    }

    #[test]
    fn command_blocks() {
        assert_eq!(
            command_block("T\n```mswea_bash_command\nls -la\n```"),
            Some("ls -la".into())
        );
        assert_eq!(command_block("```bash\necho hi\n```"), Some("echo hi".into()));
        assert_eq!(command_block("```bash\na\n```\n```bash\nb\n```"), None);
        assert_eq!(command_block("no block"), None);
        assert_eq!(command_block("```mswea_bash_command\nunclosed"), None);
    }
}

#[cfg(test)]
mod gist_tests {
    use super::*;
    use serde_json::json;

    fn g(name: &str, input: Value) -> Option<String> {
        SweAgent.gist(name, &input)
    }

    #[test]
    fn the_action_line_is_the_gist() {
        // A step's `action` string, and mini-swe-agent's function calls.
        assert_eq!(
            g("open", json!("open pydicom/handler.py 293\n")).as_deref(),
            Some("open pydicom/handler.py 293")
        );
        let edit = json!("edit 1:1\nimport numpy as np\nfrom pydicom.dataset import Dataset\nend_of_edit");
        assert_eq!(g("edit", edit).as_deref(), Some("edit 1:1"));
        assert_eq!(g("submit", json!("submit\n")).as_deref(), Some("submit"));
        assert_eq!(g("bash", json!({"command": "ls -la"})).as_deref(), Some("ls -la"));
        assert_eq!(g("ls", json!("\n\n")), None);
    }
}
