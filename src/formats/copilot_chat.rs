//! GitHub Copilot Chat in VS Code: chat sessions in the editor's workspace storage,
//! `<VS Code user dir>/workspaceStorage/<hash>/chatSessions/<sessionId>.jsonl` (the user dir is
//! `$XDG_CONFIG_HOME/Code/User` on Linux, `~/Library/Application Support/Code/User` on macOS).
//!
//! Read from microsoft/vscode `src/vs/workbench/contrib/chat/common/model/objectMutationLog.ts`
//! (the log), `chatSessionOperationLog.ts` (`storageSchema`: what a session and a request
//! serialize to), `chatService/chatService.ts` (`ResponseModelState`,
//! `IChatToolInvocationSerialized`) as of VS Code 1.10x (2026), and Copilot Chat's
//! `IToolCallRound` (microsoft/vscode-copilot-chat `toolCallingLoop.ts`), which it stores in a
//! request's `result.metadata`.
//!
//! The file is an append-only mutation log (`ObjectMutationLog`), one entry a line:
//! - `{"kind":0,"v":{...}}` the whole session (`ISerializableChatData` v3: `sessionId`,
//!   `creationDate`, `customTitle`, `requests[]`, ...), first, and again whenever VS Code
//!   compacts the log (a later kind 0 starts over);
//! - `{"kind":1,"k":[path],"v":x}` sets the value at the path (`["requests",3,"result"]` when the
//!   model finishes);
//! - `{"kind":2,"k":[path],"v":[...],"i":n}` cuts the array at the path to `n` items (when `i`
//!   is given) and appends `v` (a new request is a push on `["requests"]`);
//! - `{"kind":3,"k":[path]}` deletes the value at the path.
//!
//! The log is folded in order into the session (paths bounded in depth and index), then the
//! session is mapped to the tree: a request is the user's message, then one LLM call a tool
//! call round (`result.metadata.toolCallRounds`: `response`, `toolCalls[{id,name,arguments}]`)
//! with its tool calls below it, joined by id to the response's `toolInvocationSerialized`
//! parts (`toolId`, `invocationMessage`, `pastTenseMessage`, `isComplete`, `resultDetails`
//! `{input, output[{value}], isError}`) and to `result.metadata.toolCallResults`. A request
//! with no rounds (still running, or another participant) is one LLM call holding the
//! response's text, its tool parts below it.
//!
//! Status: a request's `modelState.value` (`ResponseModelState`: 0 pending, 1 complete,
//! 2 cancelled, 3 failed, 4 needs input); without it (older logs), a request with no `result`
//! is running and `result.errorDetails` a failure. The run is running while a request is,
//! else failed when its last request failed.
//!
//! Times: `creationDate` and each request's `timestamp` are epoch milliseconds;
//! `result.timings.totalElapsed` is the request's duration. Tokens: the session carries none
//! (Copilot's usage is not written to it); the model is the request's `modelId`.
//!
//! The older form, `chatSessions/<id>.json` (VS Code before the log), is the session as one
//! document, `ISerializableChatData` version 1 to 3 (`chatModel.ts`,
//! `normalizeSerializableChatData`: version 2's `computedTitle` is the title; versions 1 and 2
//! mark a stopped request `isCanceled`); it is mapped as the folded log is, its events' origin
//! the document.
//!
//! A session is a small document that VS Code itself folds whole: it is folded here too and
//! its payloads are held in memory (a request's final value is spread over the lines that
//! changed it); each event's origin is the last line that changed its request. A file that
//! changes is reloaded whole. A damaged line is a diagnostic naming the file and line, and
//! the rest folds; an entry of a kind VS Code does not write, and a response part of a kind
//! not known here, are skipped quietly and counted.

use super::{Format, LoadError, Loaded, Probe, drift_payload, drift_text, str_of};
use crate::model::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

pub struct CopilotChat;

const FORMAT: &str = "copilot-chat";
const SESSIONS_DIR: &str = "chatSessions";
/// The largest session read.
const LIMIT: u64 = 1 << 30;
/// The deepest path an entry may set (VS Code's schema is a few levels deep).
const MAX_DEPTH: usize = 32;
/// The largest array index a path may name or a cut may keep.
const MAX_INDEX: u64 = 1 << 20;

impl Format for CopilotChat {
    fn id(&self) -> &'static str {
        FORMAT
    }
    fn describe(&self) -> &'static str {
        "GitHub Copilot Chat session in VS Code, <Code/User>/workspaceStorage/<hash>/chatSessions/<id>.jsonl (mutation log) or <id>.json (older)"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        if p.file_name().ends_with(".json") {
            return detect_document(p);
        }
        if !p.file_name().ends_with(".jsonl") {
            return 0;
        }
        let in_dir = p
            .path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == SESSIONS_DIR);
        let session = |v: &Value| {
            v.get("kind").and_then(Value::as_u64) == Some(0)
                && v.get("v")
                    .is_some_and(|s| s.get("requests").is_some() || s.get("sessionId").is_some())
        };
        if p.lines().take(8).any(session) {
            100
        } else if contains(&p.head, br#""kind":0"#)
            && (contains(&p.head, br#""requests":"#) || contains(&p.head, br#""sessionId":"#))
        {
            // A first entry longer than the head (a compacted log holds every request).
            if in_dir { 95 } else { 70 }
        } else {
            0
        }
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        if path.extension().is_some_and(|e| e == "json") {
            return Ok(Loaded {
                traces: vec![load_document(path)?],
            });
        }
        let text = read(path)?;
        Ok(Loaded {
            traces: vec![load_text(path, &text)?],
        })
    }

    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, &super::decode_embedded(input))
    }
}

/// The older form, `chatSessions/<id>.json`: the session as one document
/// (`ISerializableChatData` version 1 to 3).
fn detect_document(p: &Probe) -> u8 {
    let in_dir = p
        .path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == SESSIONS_DIR);
    let keys = [
        "requests",
        "sessionId",
        "responderUsername",
        "requesterUsername",
        "creationDate",
    ];
    let named = keys
        .iter()
        .filter(|k| contains(&p.head, format!("\"{k}\":").as_bytes()))
        .count();
    // Parsed whole only when its first keys may be a session's (detection parses no other
    // format's document whole).
    match p.whole_naming(&keys) {
        Some(v) => {
            let session = v.get("requests").is_some_and(Value::is_array)
                && (v.get("sessionId").is_some() || v.get("responderUsername").is_some());
            if session && (in_dir || v.get("responderUsername").is_some()) {
                90
            } else {
                0
            }
        }
        // Read in part (a long session), or damaged: its keys (and place) say enough, and
        // the load says what is wrong with it.
        None if (in_dir && named >= 2 || named >= 4) && contains(&p.head, br#""requests":"#) => 80,
        None => 0,
    }
}

/// A session of the older form, normalized as VS Code's `normalizeSerializableChatData` does
/// (version 2's `computedTitle` is the title): the same tree as the log's, its events' origin
/// the document (line 0).
fn load_document(path: &Path) -> Result<Trace, LoadError> {
    let v = super::read_json_file(path, LIMIT)?;
    if !v.get("requests").is_some_and(Value::is_array) {
        return Err(LoadError::NotATrace {
            path: path.to_path_buf(),
            reason: "no \"requests\" list: not a Copilot Chat session".into(),
            tried: FORMAT.into(),
        });
    }
    let n = v["requests"].as_array().map_or(0, Vec::len);
    Ok(build(path, &v, &vec![Origin::default(); n], &[]))
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn read(path: &Path) -> Result<String, LoadError> {
    use std::io::Read;
    let f = super::open_regular(path).map_err(|e| LoadError::io(path, e))?;
    let mut buf = Vec::new();
    f.take(LIMIT + 1)
        .read_to_end(&mut buf)
        .map_err(|e| LoadError::io(path, e))?;
    if buf.len() as u64 > LIMIT {
        return Err(LoadError::invalid(
            path,
            format!("larger than {} MiB; not read", LIMIT >> 20),
        ));
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The session folded from the log, with the line each request was last changed on.
struct Folded {
    state: Option<Value>,
    /// Per request index: (line, byte offset, length) of the entry that last changed it.
    touched: Vec<Origin>,
    diagnostics: Vec<Diagnostic>,
    skipped: Skipped,
    /// Entries of kinds VS Code does not write that carry text, to show.
    drift: Vec<(String, Value, Origin)>,
    lines: u32,
}

fn fold(path: &Path, text: &str) -> Folded {
    let mut f = Folded {
        state: None,
        touched: Vec::new(),
        diagnostics: Vec::new(),
        skipped: Skipped::default(),
        drift: Vec::new(),
        lines: 0,
    };
    let mut offset = 0u64;
    for (n, raw) in text.split('\n').enumerate() {
        let line_no = n as u32 + 1;
        let here = Origin {
            file: 0,
            line: line_no,
            offset,
            len: raw.len().min(u32::MAX as usize) as u32,
        };
        offset += raw.len() as u64 + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        f.lines = line_no;
        let bad = |f: &mut Folded, msg: String| {
            f.diagnostics.push(Diagnostic::error(
                path,
                Some(line_no as u64),
                format!("line {line_no}: {msg}; skipped"),
            ));
        };
        let entry: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                bad(&mut f, format!("not JSON ({})", super::jsonl::json_error(&e)));
                continue;
            }
        };
        let kind = match entry.get("kind") {
            Some(k) if k.as_u64().is_some_and(|k| k <= 3) => k.as_u64().unwrap_or_default(),
            // An entry of a kind VS Code does not write (drift): counted, shown with its text.
            Some(k) if !k.is_null() && entry.is_object() => {
                let name = match k {
                    Value::String(s) => s.clone(),
                    k => format!("kind {k}"),
                };
                f.skipped.add(&name);
                if drift_text(&entry).is_some() {
                    f.drift.push((name, entry, here));
                }
                continue;
            }
            _ => {
                bad(&mut f, "not a mutation log entry (no \"kind\")".into());
                continue;
            }
        };
        if kind == 0 {
            match entry.get("v") {
                Some(v @ Value::Object(_)) => {
                    let n = v.get("requests").and_then(Value::as_array).map_or(0, Vec::len);
                    f.state = Some(v.clone());
                    f.touched = vec![here; n];
                }
                _ => bad(&mut f, "the session (kind 0) is not an object".into()),
            }
            continue;
        }
        let Some(state) = f.state.as_mut() else {
            bad(&mut f, format!("a change (kind {kind}) before the session (kind 0)"));
            continue;
        };
        let Some(keys) = entry.get("k").and_then(Value::as_array) else {
            bad(&mut f, format!("a change (kind {kind}) without a path \"k\""));
            continue;
        };
        if keys.is_empty()
            || keys.len() > MAX_DEPTH
            || !keys
                .iter()
                .all(|k| k.is_string() || k.as_u64().is_some_and(|i| i < MAX_INDEX))
        {
            bad(
                &mut f,
                format!("path {} is not a path into the session", Value::Array(keys.clone())),
            );
            continue;
        }
        let applied = match kind {
            1 => set(state, keys, Some(entry.get("v").cloned().unwrap_or(Value::Null))),
            3 => set(state, keys, None),
            _ => push(state, keys, entry.get("v"), entry.get("i")),
        };
        if let Err(msg) = applied {
            bad(&mut f, format!("path {}: {msg}", Value::Array(keys.clone())));
            continue;
        }
        // The request the change is in.
        if keys[0] == "requests" {
            let n = state.get("requests").and_then(Value::as_array).map_or(0, Vec::len);
            match keys.get(1).and_then(Value::as_u64) {
                Some(i) => {
                    f.touched.resize(n, here);
                    if let Some(t) = f.touched.get_mut(i as usize) {
                        *t = here;
                    }
                }
                None => {
                    // A push on the list: the new ones are of this line.
                    let before = f.touched.len().min(n);
                    let cut = entry
                        .get("i")
                        .and_then(Value::as_u64)
                        .map_or(before, |i| (i as usize).min(before));
                    f.touched.truncate(cut);
                    f.touched.resize(n, here);
                }
            }
        }
    }
    f
}

/// The container at `keys[..len-1]`, None when the path leads nowhere.
fn parent_of<'a>(state: &'a mut Value, keys: &[Value]) -> Result<&'a mut Value, String> {
    let mut cur = state;
    for k in &keys[..keys.len() - 1] {
        cur = match (cur, k) {
            (Value::Object(o), Value::String(s)) => o.get_mut(s.as_str()).ok_or("not in the session")?,
            (Value::Array(a), Value::Number(n)) => n
                .as_u64()
                .and_then(|i| a.get_mut(i as usize))
                .ok_or("not in the session")?,
            _ => return Err("not in the session".into()),
        };
    }
    Ok(cur)
}

fn set(state: &mut Value, keys: &[Value], v: Option<Value>) -> Result<(), String> {
    let parent = parent_of(state, keys)?;
    match (parent, &keys[keys.len() - 1], v) {
        (Value::Object(o), Value::String(s), Some(v)) => {
            o.insert(s.clone(), v);
        }
        (Value::Object(o), Value::String(s), None) => {
            o.remove(s.as_str());
        }
        (Value::Array(a), Value::Number(n), v) => {
            let i = n.as_u64().unwrap_or(u64::MAX) as usize;
            if i < a.len() {
                a[i] = v.unwrap_or(Value::Null);
            } else if i == a.len() && v.is_some() {
                a.push(v.unwrap_or(Value::Null));
            } else {
                return Err("past the end of its list".into());
            }
        }
        _ => return Err("not in the session".into()),
    }
    Ok(())
}

fn push(state: &mut Value, keys: &[Value], v: Option<&Value>, cut: Option<&Value>) -> Result<(), String> {
    let parent = parent_of(state, keys)?;
    let last = &keys[keys.len() - 1];
    let slot = match (parent, last) {
        (Value::Object(o), Value::String(s)) => o.entry(s.clone()).or_insert(Value::Array(Vec::new())),
        (Value::Array(a), Value::Number(n)) => n
            .as_u64()
            .and_then(|i| a.get_mut(i as usize))
            .ok_or("not in the session")?,
        _ => return Err("not in the session".into()),
    };
    if slot.is_null() {
        *slot = Value::Array(Vec::new());
    }
    let Value::Array(arr) = slot else {
        return Err("not a list".into());
    };
    match cut {
        None | Some(Value::Null) => {}
        Some(c) => match c.as_u64() {
            Some(i) if i < MAX_INDEX => arr.truncate(i as usize),
            _ => return Err(format!("cut \"i\" {c} is not an index")),
        },
    }
    match v {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => arr.extend(items.iter().cloned()),
        Some(_) => return Err("the values pushed (\"v\") are not a list".into()),
    }
    Ok(())
}

pub(crate) fn load_text(path: &Path, text: &str) -> Result<Trace, LoadError> {
    let f = fold(path, text);
    let Some(state) = f.state else {
        if f.lines == 0 {
            return Err(LoadError::invalid(path, "empty: no Copilot Chat session in it"));
        }
        return Err(LoadError::NotATrace {
            path: path.to_path_buf(),
            reason: "no session entry ({\"kind\":0,\"v\":{...}}) in this mutation log".into(),
            tried: FORMAT.into(),
        });
    };
    let mut t = build(path, &state, &f.touched, &f.drift);
    t.diagnostics.extend(f.diagnostics);
    t.skipped.merge(&f.skipped);
    Ok(t)
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("value").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}

/// The project: the folder `workspace.json` beside `chatSessions/` names, if any.
fn workspace_folder(path: &Path) -> Option<String> {
    let ws = path.parent()?.parent()?.join("workspace.json");
    let v = super::read_json_file(&ws, 1 << 20).ok()?;
    let uri = str_of(&v, "folder").or_else(|| str_of(&v, "workspace"))?;
    Some(uri.strip_prefix("file://").unwrap_or(uri).to_string())
}

const PENDING: u64 = 0;
const COMPLETE: u64 = 1;
const CANCELLED: u64 = 2;
const FAILED: u64 = 3;
const NEEDS_INPUT: u64 = 4;

struct Builder<'a> {
    t: Trace,
    file: u16,
    model: Option<&'a str>,
}

impl Builder<'_> {
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        parent: u32,
        kind: EventKind,
        name: &str,
        id: Option<&str>,
        start: Option<i64>,
        duration: Option<i64>,
        status: Status,
        p: Payload,
        origin: Origin,
    ) -> u32 {
        self.t.add(NewEvent {
            id,
            parent: Parent::Index(parent),
            status,
            start,
            duration,
            model: if kind == EventKind::LlmCall { self.model } else { None },
            payload: PayloadRef::inline(p),
            origin: Origin {
                file: self.file,
                ..origin
            },
            ..NewEvent::new(kind, name)
        })
    }
}

fn ms(v: Option<&Value>) -> Option<i64> {
    v.and_then(Value::as_f64)
        .filter(|x| x.is_finite() && *x >= 0.0 && *x < 1e15)
        .map(|x| (x * 1e6) as i64)
}

fn build(path: &Path, s: &Value, touched: &[Origin], drift: &[(String, Value, Origin)]) -> Trace {
    let empty = Vec::new();
    let requests = s.get("requests").and_then(Value::as_array).unwrap_or(&empty);
    let id = str_of(s, "sessionId")
        .map(str::to_owned)
        .unwrap_or_else(|| super::stem(path));
    let first_text = requests.iter().find_map(|r| {
        r.get("message")
            .and_then(|m| str_of(m, "text"))
            .filter(|t| !t.trim().is_empty())
    });
    let name = str_of(s, "customTitle")
        .or(str_of(s, "computedTitle"))
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .or_else(|| first_text.map(|t| t.lines().next().unwrap_or(t).chars().take(80).collect()))
        .unwrap_or_else(|| id.clone());
    let start = ms(s.get("creationDate")).or_else(|| requests.iter().find_map(|r| ms(r.get("timestamp"))));
    let mut end = ms(s.get("lastMessageDate"));
    for r in requests {
        if let Some(at) = ms(r.get("timestamp")) {
            let took = ms(r
                .get("result")
                .and_then(|x| x.get("timings"))
                .and_then(|x| x.get("totalElapsed")));
            let e = at + took.unwrap_or(0);
            end = Some(end.map_or(e, |x: i64| x.max(e)));
        }
    }
    let model = requests
        .iter()
        .rev()
        .find_map(|r| str_of(r, "modelId"))
        .map(str::to_owned);
    let mut attrs = Vec::new();
    if let Some(w) = workspace_folder(path) {
        attrs.push(("workspace".to_string(), Value::String(w)));
    }
    for (k, as_) in [("responderUsername", "responder"), ("initialLocation", "location")] {
        if let Some(v) = s.get(k).filter(|v| !v.is_null()) {
            attrs.push((as_.to_string(), v.clone()));
        }
    }
    let mut t = Trace::new(RunMeta {
        id: id.clone(),
        name: Some(name.clone()),
        format: FORMAT,
        source: path.to_path_buf(),
        attributes: attrs,
        start,
        end,
        model: model.clone(),
        ..Default::default()
    });
    let file = t.add_file(path);
    let root = t.add(NewEvent {
        id: Some(&id),
        start,
        duration: match (start, end) {
            (Some(a), Some(b)) if b >= a => Some(b - a),
            _ => None,
        },
        origin: Origin {
            file,
            line: if path.extension().is_some_and(|e| e == "json") {
                0
            } else {
                1
            },
            ..Default::default()
        },
        ..NewEvent::new(EventKind::Run, &name)
    });
    let mut b = Builder { t, file, model: None };
    let mut running = false;
    let mut last_failed = false;
    for (i, r) in requests.iter().enumerate() {
        let origin = touched.get(i).copied().unwrap_or_default();
        let (run, failed) = request(&mut b, root, r, origin);
        running |= run;
        last_failed = failed;
    }
    for (name, v, origin) in drift {
        let p = drift_payload(v, &["kind"]);
        b.add(
            root,
            EventKind::Other,
            name,
            None,
            None,
            None,
            Status::Unknown,
            p,
            *origin,
        );
    }
    let status = if running {
        RunStatus::Running
    } else if last_failed {
        RunStatus::Error
    } else if requests.is_empty() {
        RunStatus::Unknown
    } else {
        RunStatus::Ok
    };
    let mut t = b.t;
    t.meta.status = status;
    t.event_mut(root).status = status.event_status();
    t.finalize();
    t
}

/// One request: the user's message, its LLM calls and tools. Gives (running, failed).
fn request<'a>(b: &mut Builder<'a>, root: u32, r: &'a Value, origin: Origin) -> (bool, bool) {
    let Value::Object(_) = r else {
        b.t.diagnostics.push(Diagnostic::error(
            b.t.meta.source.clone(),
            Some(origin.line as u64),
            format!("line {}: a request that is not an object; skipped", origin.line),
        ));
        return (false, false);
    };
    let at = ms(r.get("timestamp"));
    let result = r.get("result").filter(|x| x.is_object());
    let took = ms(result
        .and_then(|x| x.get("timings"))
        .and_then(|x| x.get("totalElapsed")));
    let error = result.and_then(|x| x.get("errorDetails")).filter(|e| !e.is_null());
    let state = r.get("modelState").and_then(|m| m.get("value")).and_then(Value::as_u64);
    let (running, failed, cancelled) = match state {
        Some(PENDING) | Some(NEEDS_INPUT) => (true, false, false),
        Some(FAILED) => (false, true, false),
        Some(CANCELLED) => (false, false, true),
        Some(COMPLETE) => (false, error.is_some(), false),
        // Older sessions: no state; `isCanceled` (versions 1 and 2) says a stopped request.
        _ if r.get("isCanceled").and_then(Value::as_bool) == Some(true) => (false, false, true),
        _ => (result.is_none(), error.is_some(), false),
    };
    let model = str_of(r, "modelId");
    b.model = model;
    if let Some(text) = r.get("message").and_then(|m| str_of(m, "text")) {
        let p = Payload {
            input: Some(Value::String(text.to_string())),
            ..Default::default()
        };
        let rid = str_of(r, "requestId");
        b.add(
            root,
            EventKind::Message(Role::User),
            "user",
            rid,
            at,
            None,
            Status::Ok,
            p,
            origin,
        );
    }
    // The response's parts: its text, and its tool invocations by call id.
    let empty = Vec::new();
    let parts = r.get("response").and_then(Value::as_array).unwrap_or(&empty);
    let meta = result.and_then(|x| x.get("metadata"));
    let rounds = meta.and_then(|m| m.get("toolCallRounds")).and_then(Value::as_array);
    let results = meta.and_then(|m| m.get("toolCallResults")).and_then(Value::as_object);
    let mut invocations: HashMap<&str, &Value> = HashMap::new();
    let mut text = String::new();
    let mut thinking = String::new();
    let mut drift: Vec<(&str, &Value)> = Vec::new();
    for p in parts {
        match str_of(p, "kind") {
            None => {
                if let Some(v) = str_of(p, "value") {
                    text.push_str(v);
                }
            }
            Some("markdownContent") => {
                if let Some(v) = p.get("content").and_then(text_of) {
                    text.push_str(&v);
                }
            }
            Some("toolInvocationSerialized") => {
                let id = str_of(p, "toolCallId").unwrap_or_default();
                invocations.insert(id, p);
            }
            Some("thinking") => match p.get("value") {
                Some(Value::String(s)) => thinking.push_str(s),
                Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).for_each(|s| thinking.push_str(s)),
                _ => {}
            },
            Some(
                "clearToPreviousToolInvocation"
                | "codeblockUri"
                | "command"
                | "confirmation"
                | "extensions"
                | "hook"
                | "inlineReference"
                | "markdownVuln"
                | "notebookEditGroup"
                | "progressMessage"
                | "pullRequest"
                | "questionCarousel"
                | "undoStop"
                | "warning"
                | "treeData"
                | "workspaceEdit"
                | "disabledClaudeHooks"
                | "elicitationSerialized"
                | "progressTaskSerialized"
                | "textEditGroup"
                | "multiDiffData"
                | "mcpServersStarting",
            ) => {}
            Some(other) => drift.push((other, p)),
        }
    }
    let call_status = if running {
        Status::Pending
    } else if failed {
        Status::Error
    } else {
        Status::Ok
    };
    let err_info = |e: &Value| ErrorInfo {
        kind: str_of(e, "code").map(str::to_owned),
        message: str_of(e, "message").unwrap_or("the request failed").to_string(),
        details: Some(e.clone()),
        ..Default::default()
    };
    let name = model.unwrap_or("copilot");
    let mut used: Vec<&str> = Vec::new();
    let mut llms = Vec::new();
    match rounds {
        Some(rounds) if !rounds.is_empty() => {
            let n = rounds.len();
            for (k, round) in rounds.iter().enumerate() {
                let last = k + 1 == n;
                let mut p = Payload::default();
                if let Some(resp) = str_of(round, "response").filter(|x| !x.is_empty()) {
                    p.output = Some(Value::String(resp.to_string()));
                }
                if let Some(th) = round.get("thinking").filter(|x| !x.is_null()) {
                    p.extra.push(("thinking".into(), th.clone()));
                }
                if last && let Some(e) = error {
                    p.error = Some(err_info(e));
                }
                let st = if last { call_status } else { Status::Ok };
                let llm = b.add(
                    root,
                    EventKind::LlmCall,
                    name,
                    str_of(round, "id"),
                    at,
                    None,
                    st,
                    p,
                    origin,
                );
                llms.push(llm);
                for c in round.get("toolCalls").and_then(Value::as_array).unwrap_or(&empty) {
                    let cid = str_of(c, "id").unwrap_or_default();
                    used.push(cid);
                    let inv = invocations.get(cid).copied();
                    let tname = str_of(c, "name")
                        .or(inv.and_then(|i| str_of(i, "toolId")))
                        .unwrap_or("?");
                    let args = c.get("arguments").map(super::decode_embedded);
                    tool(
                        b,
                        llm,
                        tname,
                        cid,
                        args,
                        inv,
                        results.and_then(|m| m.get(cid)),
                        running,
                        at,
                        origin,
                    );
                }
            }
        }
        _ => {
            let mut p = Payload::default();
            if !text.is_empty() {
                p.output = Some(Value::String(text.clone()));
            }
            if let Some(e) = error {
                p.error = Some(err_info(e));
            }
            if cancelled {
                p.extra.push(("cancelled".into(), Value::Bool(true)));
            }
            if parts.is_empty() && result.is_none() && !running {
                // Nothing was answered and nothing says why.
            }
            let llm = b.add(
                root,
                EventKind::LlmCall,
                name,
                str_of(r, "responseId"),
                at,
                took,
                call_status,
                p,
                origin,
            );
            llms.push(llm);
        }
    }
    // Tool invocations no round names (no rounds yet: running, or another participant).
    let owner = *llms.last().unwrap_or(&root);
    for p in parts {
        if str_of(p, "kind") != Some("toolInvocationSerialized") {
            continue;
        }
        let cid = str_of(p, "toolCallId").unwrap_or_default();
        if used.contains(&cid) {
            continue;
        }
        let tname = str_of(p, "toolId").unwrap_or("?");
        tool(
            b,
            owner,
            tname,
            cid,
            None,
            Some(p),
            results.and_then(|m| m.get(cid)),
            running,
            at,
            origin,
        );
    }
    if !thinking.is_empty()
        && let Some(&first) = llms.first()
    {
        b.t.payload_mut(first)
            .extra
            .push(("thinking".into(), Value::String(thinking)));
    }
    if let Some(&last) = llms.last() {
        if let Some(d) = took {
            let ev = b.t.event_mut(last);
            if ev.duration.get().is_none() {
                ev.duration = Some(d).into();
            }
        }
        if cancelled {
            b.t.payload_mut(last)
                .extra
                .push(("cancelled".into(), Value::Bool(true)));
        }
    }
    for (ty, p) in drift {
        b.t.skipped.add(ty);
        if drift_text(p).is_some() {
            b.add(
                owner,
                EventKind::Other,
                ty,
                None,
                at,
                None,
                Status::Unknown,
                drift_payload(p, &["kind"]),
                origin,
            );
        }
    }
    (running, failed)
}

#[allow(clippy::too_many_arguments)]
fn tool(
    b: &mut Builder,
    parent: u32,
    name: &str,
    id: &str,
    args: Option<Value>,
    inv: Option<&Value>,
    result: Option<&Value>,
    running: bool,
    at: Option<i64>,
    origin: Origin,
) {
    let mut p = Payload {
        input: args,
        ..Default::default()
    };
    let details = inv.and_then(|i| i.get("resultDetails")).filter(|d| d.is_object());
    if p.input.is_none()
        && let Some(input) = details.and_then(|d| d.get("input"))
    {
        p.input = Some(super::decode_embedded(input));
    }
    // The result: the tool's output as the chat kept it, else as Copilot stored it.
    let out_text = |parts: &Value| -> Option<String> {
        let a = parts.as_array()?;
        let t: Vec<String> = a.iter().filter_map(|x| str_of(x, "value").map(str::to_owned)).collect();
        (!t.is_empty()).then(|| t.join("\n"))
    };
    // Or the files and places it found (`resultDetails` as a list of URIs and locations).
    let places = || {
        let a = inv?.get("resultDetails")?.as_array()?;
        let t: Vec<&str> = a
            .iter()
            .filter_map(|u| str_of(u, "path").or_else(|| u.get("uri").and_then(|x| str_of(x, "path"))))
            .collect();
        (!t.is_empty()).then(|| t.join("\n"))
    };
    let output = details
        .and_then(|d| d.get("output"))
        .and_then(out_text)
        .or_else(|| result.and_then(|r| r.get("content")).and_then(out_text))
        .or_else(places);
    if let Some(o) = output {
        p.output = Some(Value::String(o));
    }
    if let Some(i) = inv {
        for (k, as_) in [("invocationMessage", "invocation"), ("pastTenseMessage", "done")] {
            if let Some(m) = i.get(k).and_then(text_of) {
                p.extra.push((as_.into(), Value::String(m)));
            }
        }
        if let Some(d) = i.get("toolSpecificData").filter(|d| !d.is_null()) {
            p.extra.push(("toolSpecificData".into(), d.clone()));
        }
    }
    let is_error = details.and_then(|d| d.get("isError")).and_then(Value::as_bool) == Some(true);
    let complete = inv.and_then(|i| i.get("isComplete")).and_then(Value::as_bool);
    let status = if is_error {
        p.error = Some(ErrorInfo {
            kind: Some("tool error".into()),
            message: p
                .output
                .as_ref()
                .and_then(Value::as_str)
                .unwrap_or("the tool failed")
                .chars()
                .take(500)
                .collect(),
            ..Default::default()
        });
        Status::Error
    } else if complete == Some(true) || (!running && (p.output.is_some() || complete.is_none())) {
        Status::Ok
    } else if running {
        Status::Pending
    } else {
        // Not complete in a finished request: cancelled or never run.
        Status::Unknown
    };
    let id = (!id.is_empty()).then_some(id);
    b.add(parent, EventKind::ToolCall, name, id, at, None, status, p, origin);
}

/// What a tool call did, from its arguments (Copilot's built-in tools' parameters).
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{first_arg, generic, key_or_generic};
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "run_in_terminal" | "copilot_runInTerminal" | "runInTerminal" => by(&["command"]),
        "read_file"
        | "copilot_readFile"
        | "create_file"
        | "copilot_createFile"
        | "insert_edit_into_file"
        | "replace_string_in_file"
        | "copilot_replaceString"
        | "copilot_insertEdit"
        | "edit_notebook_file" => by(&["filePath", "path"]),
        "list_dir" | "copilot_listDirectory" => by(&["path"]),
        "file_search"
        | "copilot_findFiles"
        | "grep_search"
        | "copilot_findTextInFiles"
        | "semantic_search"
        | "copilot_searchCodebase" => by(&["query", "pattern"]),
        "fetch_webpage" | "copilot_fetchWebPage" => by(&["urls", "url"]),
        "runSubagent" | "search_subagent" => by(&["description", "prompt"]),
        n if n.starts_with("mcp_") => first_arg(input),
        _ => generic(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::{fixture, outline};
    use serde_json::json;

    fn load(name: &str) -> Trace {
        let mut l = CopilotChat.load(&fixture(FORMAT, name)).unwrap();
        assert_eq!(l.traces.len(), 1);
        l.traces.remove(0)
    }

    fn tools(t: &Trace) -> Vec<(String, Status)> {
        (0..t.len() as u32)
            .filter(|&i| t.event(i).kind == EventKind::ToolCall)
            .map(|i| (t.name(i).to_string(), t.event(i).status))
            .collect()
    }

    fn payload(t: &Trace, i: u32) -> Payload {
        crate::formats::payload(t, t.event(i))
    }

    fn find(t: &Trace, name: &str) -> u32 {
        (0..t.len() as u32).find(|&i| t.name(i) == name).unwrap()
    }

    fn log(lines: &[Value]) -> Trace {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        load_text(Path::new("s.jsonl"), &text).unwrap()
    }

    #[test]
    fn a_finished_session_folds_into_turns_rounds_and_tools() {
        let t = load("finished.jsonl");
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.id, "3f0e6a52-8a41-4c55-9d1e-0c2b7f9a1e11");
        assert_eq!(t.meta.name.as_deref(), Some("Parser test failure"));
        assert_eq!(t.meta.model.as_deref(), Some("copilot/claude-sonnet-4.5"));
        assert_eq!(
            outline(&t),
            vec![
                "run Parser test failure",
                "  message user",
                "  llm copilot/claude-sonnet-4.5",
                "    tool run_in_terminal",
                "    tool read_file",
                "  llm copilot/claude-sonnet-4.5",
                "  message user",
                "  llm copilot/claude-sonnet-4.5",
            ]
        );
        assert_eq!(
            tools(&t),
            vec![("run_in_terminal".into(), Status::Ok), ("read_file".into(), Status::Ok)]
        );
        // Arguments from the round, result from the chat's part or from Copilot's results.
        let run = payload(&t, find(&t, "run_in_terminal"));
        assert_eq!(run.input.as_ref().unwrap()["command"], "cargo test parser");
        assert!(run.output.unwrap().as_str().unwrap().contains("FAILED"));
        assert!(
            run.extra
                .iter()
                .any(|(k, v)| k == "done" && v == "Ran `cargo test parser`")
        );
        let read = payload(&t, find(&t, "read_file"));
        assert!(read.output.unwrap().as_str().unwrap().starts_with("fn parse"));
        assert_eq!(
            CopilotChat.gist("read_file", read.input.as_ref().unwrap()).as_deref(),
            Some("/home/ada/proj/src/parser.rs")
        );
        // Times: the session's creation, the requests' timestamps and elapsed times.
        assert_eq!(t.meta.start, Some(1_767_261_600_000 * 1_000_000));
        assert_eq!(t.meta.end, Some((1_767_261_600_000 + 60_000 + 900) * 1_000_000));
        let last = (0..t.len() as u32)
            .rfind(|&i| t.event(i).kind == EventKind::LlmCall)
            .unwrap();
        assert_eq!(t.event(last).duration.get(), Some(900 * 1_000_000));
        assert_eq!(payload(&t, last).output, Some(json!("Glad it works!")));
        // No tokens are written.
        assert_eq!(t.counts().tokens, 0);
    }

    #[test]
    fn a_request_without_a_result_is_running_and_its_tool_pending() {
        let t = load("running.jsonl");
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.status, RunStatus::Running);
        assert_eq!(tools(&t), vec![("replace_string_in_file".into(), Status::Pending)]);
        let llm = (0..t.len() as u32)
            .rfind(|&i| t.event(i).kind == EventKind::LlmCall)
            .unwrap();
        assert_eq!(t.event(llm).status, Status::Pending);
        assert_eq!(payload(&t, llm).output, Some(json!("Adding a test.")));
    }

    #[test]
    fn failed_tools_and_requests_are_errors() {
        let t = load("failed.jsonl");
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.status, RunStatus::Error);
        assert_eq!(tools(&t), vec![("run_in_terminal".into(), Status::Error)]);
        let llm = (0..t.len() as u32)
            .rfind(|&i| t.event(i).kind == EventKind::LlmCall)
            .unwrap();
        assert_eq!(t.event(llm).status, Status::Error);
        let e = payload(&t, llm).error.unwrap();
        assert_eq!(e.kind.as_deref(), Some("rate_limited"));
        assert!(e.message.contains("Rate limit exceeded"));
        assert_eq!(t.counts().errors, 2);
    }

    #[test]
    fn a_damaged_line_is_said_by_file_and_line_and_the_rest_folds() {
        let t = load("damaged.jsonl");
        assert_eq!(t.diagnostics.len(), 1);
        let d = &t.diagnostics[0];
        assert_eq!(d.line, Some(8));
        assert!(
            d.path.ends_with("damaged.jsonl") && d.message.contains("not JSON"),
            "{d:?}"
        );
        let f = load("finished.jsonl");
        assert_eq!(outline(&t), outline(&f));
        assert_eq!(t.meta.status, RunStatus::Ok);
    }

    #[test]
    fn the_fold_cuts_deletes_restarts_and_refuses_paths_into_nothing() {
        let req = |id: &str, text: &str| json!({"requestId": id, "timestamp": 1000, "message": {"text": text}, "response": []});
        let t = log(&[
            json!({"kind": 0, "v": {"sessionId": "s", "requests": [req("a", "one")]}}),
            json!({"kind": 2, "k": ["requests"], "v": [req("b", "two"), req("c", "three")]}),
            // Cut after the first and push another: "two" and "three" go.
            json!({"kind": 2, "k": ["requests"], "v": [req("d", "four")], "i": 1}),
            json!({"kind": 1, "k": ["requests", 1, "result"], "v": {"timings": {"totalElapsed": 5}}}),
            json!({"kind": 3, "k": ["requests", 1, "result"]}),
            json!({"kind": 1, "k": ["requests", 7, "result"], "v": {}}),
            json!({"kind": 1, "k": [], "v": {}}),
        ]);
        let users: Vec<Value> = (0..t.len() as u32)
            .filter(|&i| t.event(i).kind == EventKind::Message(Role::User))
            .map(|i| payload(&t, i).input.unwrap())
            .collect();
        assert_eq!(users, vec![json!("one"), json!("four")]);
        // The deleted result leaves "four" running.
        assert_eq!(t.meta.status, RunStatus::Running);
        let lines: Vec<Option<u64>> = t.diagnostics.iter().map(|d| d.line).collect();
        assert_eq!(lines, vec![Some(6), Some(7)]);
        // A later session entry starts over (VS Code compacts the log so).
        let t = log(&[
            json!({"kind": 1, "k": ["requests", 0, "result"], "v": {}}),
            json!({"kind": 0, "v": {"sessionId": "s", "requests": [req("a", "one")]}}),
            json!({"kind": 0, "v": {"sessionId": "s", "requests": [req("x", "again")]}}),
        ]);
        assert_eq!(t.diagnostics.len(), 1, "a change before the session is said");
        assert_eq!(t.counts().events, 3);
        assert_eq!(payload(&t, find(&t, "user")).input, Some(json!("again")));
    }

    #[test]
    fn not_a_log_is_refused_and_detection_wants_a_session_entry() {
        assert!(load_text(Path::new("x.jsonl"), "").is_err());
        assert!(load_text(Path::new("x.jsonl"), "{\"kind\":1,\"k\":[\"a\"],\"v\":1}\n").is_err());
        let p = |path: &str, head: &str| Probe::from_bytes(Path::new(path), head.as_bytes().to_vec(), true);
        let head = "{\"kind\":0,\"v\":{\"version\":3,\"sessionId\":\"s\",\"requests\":[]}}\n";
        assert_eq!(CopilotChat.detect(&p("a/chatSessions/s.jsonl", head)), 100);
        assert_eq!(CopilotChat.detect(&p("s.jsonl", head)), 100);
        assert_eq!(CopilotChat.detect(&p("s.json", head)), 0);
        assert_eq!(CopilotChat.detect(&p("s.jsonl", "{\"kind\":0,\"v\":{\"a\":1}}\n")), 0);
        assert_eq!(CopilotChat.detect(&p("s.jsonl", "{\"type\":\"user\"}\n")), 0);
    }

    #[test]
    fn unknown_entries_and_parts_are_counted_quietly_and_shown_with_text() {
        let t = log(&[
            json!({"kind": 0, "v": {"sessionId": "s", "requests": [{"requestId": "a", "message": {"text": "hi"},
                "response": [{"kind": "newPart", "content": "a new part's text"}, {"kind": "otherPart"}],
                "result": {}, "modelState": {"value": 1}}]}}),
            json!({"kind": 9, "text": "a new entry"}),
            json!({"kind": "snapshot", "v": 1}),
        ]);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.skipped.total(), 4);
        let others: Vec<&str> = (0..t.len() as u32)
            .filter(|&i| t.event(i).kind == EventKind::Other)
            .map(|i| t.name(i))
            .collect();
        assert_eq!(others, vec!["newPart", "kind 9"]);
        assert_eq!(t.meta.status, RunStatus::Ok);
    }

    #[test]
    fn the_older_whole_documents_load_as_the_log_does() {
        // Version 3: the finished log's session, saved whole.
        let doc = load("finished-v3.json");
        let log = load("finished.jsonl");
        assert!(doc.diagnostics.is_empty(), "{:?}", doc.diagnostics);
        assert_eq!(outline(&doc), outline(&log));
        assert_eq!(tools(&doc), tools(&log));
        assert_eq!(doc.meta.status, RunStatus::Ok);
        // Version 2: `computedTitle`, a stopped request (`isCanceled`), a failed one.
        let t = load("failed-v2.json");
        assert_eq!(t.meta.name.as_deref(), Some("Rename the config key"));
        assert_eq!(t.meta.status, RunStatus::Error);
        let found = payload(&t, find(&t, "copilot_findTextInFiles"));
        assert_eq!(found.output, Some(json!("/home/ada/proj/src/config.rs")));
        let llm = (0..t.len() as u32)
            .find(|&i| t.event(i).kind == EventKind::LlmCall)
            .unwrap();
        assert!(payload(&t, llm).extra.iter().any(|(k, _)| k == "cancelled"));
        // Version 1: no version, no state; a request without a result is running.
        let t = load("running-v1.json");
        assert_eq!(t.meta.status, RunStatus::Running);
        assert_eq!(t.meta.name.as_deref(), Some("What does this regex match?"));
        // A damaged document is refused, naming the file.
        let e = CopilotChat
            .load(&fixture(FORMAT, "damaged.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("damaged.json") && e.contains("JSON"), "{e}");
        let p = |path: &str, head: &str| Probe::from_bytes(Path::new(path), head.as_bytes().to_vec(), true);
        let v3 = std::fs::read_to_string(fixture(FORMAT, "finished-v3.json")).unwrap();
        assert_eq!(CopilotChat.detect(&p("w/chatSessions/a.json", &v3)), 90);
        assert_eq!(CopilotChat.detect(&p("a.json", &v3)), 90);
        assert_eq!(CopilotChat.detect(&p("a.json", "{\"requests\": []}")), 0);
        let damaged = std::fs::read_to_string(fixture(FORMAT, "damaged.json")).unwrap();
        assert_eq!(CopilotChat.detect(&p("w/chatSessions/a.json", &damaged)), 80);
    }

    /// Drift in a whole document: unknown fields in the session and its requests, response
    /// parts of kinds not known here.
    fn drift_doc(f: &Path, rng: &mut crate::formats::testing::Rng) -> usize {
        let Ok(Value::Object(mut s)) = serde_json::from_slice::<Value>(&std::fs::read(f).unwrap()) else {
            return 0;
        };
        s.insert(rng.type_name(), rng.value());
        let mut inserted = 0;
        if let Some(Value::Array(reqs)) = s.get_mut("requests") {
            for r in reqs.iter_mut().filter_map(Value::as_object_mut) {
                if rng.one_in(3) {
                    r.insert(rng.type_name(), rng.value());
                }
                if rng.one_in(2)
                    && let Some(Value::Array(parts)) = r.get_mut("response")
                {
                    let mut part = serde_json::Map::new();
                    part.insert("kind".into(), json!(format!("t{}", rng.type_name())));
                    if let Some(t) = rng.maybe_text() {
                        part.insert("content".into(), json!(t));
                    }
                    parts.push(Value::Object(part));
                    inserted += 1;
                }
            }
        }
        std::fs::write(f, serde_json::to_vec_pretty(&Value::Object(s)).unwrap()).unwrap();
        inserted
    }

    fn drift(f: &Path, rng: &mut crate::formats::testing::Rng) -> usize {
        if f.extension().is_some_and(|e| e == "json") && f.file_name().is_some_and(|n| n != "workspace.json") {
            return drift_doc(f, rng);
        }
        if f.extension().is_none_or(|e| e != "jsonl") {
            return 0;
        }
        crate::formats::testing::drift_jsonl(f, rng, &|rng, _| {
            let mut o = serde_json::Map::new();
            o.insert("kind".into(), json!(4 + rng.below(1000)));
            if let Some(t) = rng.maybe_text() {
                o.insert("text".into(), json!(t));
            }
            o.insert(rng.type_name(), rng.value());
            Value::Object(o)
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 16, ..Default::default() })]
        #[test]
        fn drift_is_skipped_quietly(seed in proptest::prelude::any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(FORMAT, &[
                "tests/fixtures/copilot-chat/finished.jsonl",
                "tests/fixtures/copilot-chat/running.jsonl",
                "tests/fixtures/copilot-chat/failed.jsonl",
                "tests/fixtures/copilot-chat/damaged.jsonl",
                "tests/fixtures/copilot-chat/finished-v3.json",
                "tests/fixtures/copilot-chat/failed-v2.json",
                "tests/fixtures/copilot-chat/running-v1.json",
                "sample-traces/copilot-chat/workspaceStorage",
            ]);
            crate::formats::testing::drift_check(&sources, seed, &drift);
        }
    }

    #[test]
    fn the_sample_loads_with_its_workspace() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/copilot-chat/workspaceStorage");
        let d = crate::source::discover(&[root], None);
        let mut traces = Vec::new();
        for (r, res) in crate::source::load_all(&d.runs) {
            assert_eq!(r.format.id(), FORMAT);
            traces.extend(res.unwrap().traces);
        }
        assert_eq!(traces.len(), 3, "two logs and an older whole document");
        for t in &traces {
            assert!(t.diagnostics.is_empty());
            let ws = t.meta.attributes.iter().find(|(k, _)| k == "workspace").map(|(_, v)| v);
            assert_eq!(ws, Some(&json!("/home/ada/proj")));
        }
    }

    #[test]
    fn each_tool_says_what_it_did() {
        let g = |n: &str, i: Value| tool_gist(n, &i);
        assert_eq!(
            g("run_in_terminal", json!({"command": "ls -la"})).as_deref(),
            Some("ls -la")
        );
        assert_eq!(
            g("create_file", json!({"filePath": "/a/b.rs", "content": "x"})).as_deref(),
            Some("/a/b.rs")
        );
        assert_eq!(
            g("grep_search", json!({"query": "fn main", "isRegexp": false})).as_deref(),
            Some("fn main")
        );
    }
}
