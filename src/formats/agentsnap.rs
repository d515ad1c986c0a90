//! agentsnap: one JSON object per run (`*.snap.json` baselines, `*.current.json` runs) with
//! an ordered `tools[]` list of `{name, args, result_hash}` (optionally `result`, per-tool
//! `error`), the run's `input`/`output`, `error` (null, a string or `{name, message}`),
//! `model` and an environment `fingerprint`. No timestamps. Tokens: none recorded (a snapshot
//! has no usage or cost), so a run's tokens and cost are unknown.

use super::document::{DocSink, Document, Top};
use super::jsonl::LineLoc;
use super::{Format, LoadError, Loaded, Probe, Summary, field, stem};
use crate::model::*;
use rayon::prelude::*;
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub struct AgentSnap;

/// Where the tools are: the list the streaming reader hands on element by element (a
/// snapshot is small by design, but nothing caps it: issue 13 reads 4 GB documents).
const PATHS: &[&[&str]] = &[&["tools"]];

fn looks_like(v: &Value) -> bool {
    v.get("version").is_some_and(|x| x.is_u64()) && v.get("tools").is_some_and(Value::is_array)
}

impl Format for AgentSnap {
    fn id(&self) -> &'static str {
        "agentsnap"
    }
    fn describe(&self) -> &'static str {
        "agentsnap snapshot (*.snap.json baseline, *.current.json run), usually __agentsnap__/ or __snapshots__/"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        let keys = p.has_key("version") && p.has_key("tools");
        match p.complete {
            true if keys && p.whole().is_some_and(looks_like) => 100,
            true => 0,
            // Too large for the probe: judge by the keys and the name.
            false if keys => 70,
            false => 0,
        }
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        load_with(path, &Document::new(PATHS))
    }

    /// A large snapshot is summarized from its two ends (see [`summarize_ends`]): `ls` over a
    /// multi-gigabyte one must not read it all. Small ones load, for exact counts.
    fn summarize(&self, path: &Path) -> Result<Option<Vec<Summary>>, LoadError> {
        let len = std::fs::metadata(path).map_err(|e| LoadError::io(path, e))?.len();
        if len > SMALL
            && let Some(s) = summarize_ends(path, len).map_err(|e| LoadError::io(path, e))?
        {
            return Ok(Some(vec![s]));
        }
        Ok(None)
    }

    /// A tool's payload from its element of `tools` (the run's is held: one a document).
    fn decode_payload(&self, _trace: &Trace, _event: &Event, raw: &[&[u8]]) -> Payload {
        let bytes = raw.first().copied().unwrap_or_default();
        match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => tool_payload(&v),
            Err(e) => Payload {
                error: Some(ErrorInfo {
                    kind: Some("unreadable".into()),
                    message: format!("the tool's record cannot be decoded: {}", super::jsonl::json_error(&e)),
                    ..Default::default()
                }),
                ..Default::default()
            },
        }
    }
}

/// Snapshots up to this size are summarized by a full load.
const SMALL: u64 = 1 << 20;
/// How much of each end of a larger snapshot a summary reads.
const END: u64 = 64 << 10;

/// A provisional summary of a large snapshot: the head must open an agentsnap document (an
/// integer `version` before `tools`), the tail gives the values after the list (`error`, which
/// agentsnap writes after `tools`). Name and id come from the path, as in a load; the tools are
/// not counted (unknown, `ls` shows `-`); a snapshot records no times nor tokens. None when
/// either end does not read so (then the caller loads).
fn summarize_ends(path: &Path, len: u64) -> std::io::Result<Option<Summary>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = super::open_regular(path)?;
    let mut r = Reader::new(path);
    let head = Document {
        chunk: END as usize,
        ..Document::new(PATHS)
    };
    let scanned = head.read_from(&mut (&mut f).take(END), &mut r)?;
    if scanned.top != Top::Object || !r.version.as_ref().is_some_and(Value::is_u64) {
        return Ok(None);
    }
    let mut tail = Vec::new();
    f.seek(SeekFrom::Start(len.saturating_sub(END)))?;
    f.take(END).read_to_end(&mut tail)?;
    let Some(after) = after_list(&tail) else {
        return Ok(None);
    };
    let error = after.get("error").or(r.error.as_ref());
    let status = if error.and_then(ErrorInfo::from_value).is_some() {
        RunStatus::Error
    } else {
        RunStatus::Ok
    };
    let t = &r.trace.meta;
    Ok(Some(Summary {
        id: t.id.clone(),
        name: t.name.clone(),
        format: "agentsnap",
        path: path.to_path_buf(),
        status,
        start: None,
        duration: None,
        ..Default::default()
    }))
}

/// The members of the top-level object after its last list (`tools`), from the document's last
/// bytes: the text after some `]` and its `,`, read as the rest of an object, up to the end of
/// the file. A `]` inside a value leaves unmatched brackets or text behind and does not read,
/// nor does one inside the list (the list's own `]` follows); the first that reads is the
/// list's. An empty map when the list ends the object; None when no `]` in `tail` reads so.
fn after_list(tail: &[u8]) -> Option<serde_json::Map<String, Value>> {
    let tail = tail.trim_ascii_end();
    for (i, _) in tail.iter().enumerate().filter(|(_, b)| **b == b']') {
        let rest = tail[i + 1..].trim_ascii_start();
        if rest == b"}" {
            return Some(serde_json::Map::new());
        }
        let Some(members) = rest.strip_prefix(b",").map(<[u8]>::trim_ascii_start) else {
            continue;
        };
        if !members.starts_with(b"\"") {
            continue;
        }
        let mut text = Vec::with_capacity(members.len() + 1);
        text.push(b'{');
        text.extend_from_slice(members);
        if let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(&text) {
            return Some(m);
        }
    }
    None
}

/// Stream the document: the tools go into the index as they come (their payloads left on
/// disk), the values beside the list make the run.
fn load_with(path: &Path, doc: &Document<'_>) -> Result<Loaded, LoadError> {
    let mut r = Reader::new(path);
    let scanned = doc.read(path, &mut r)?;
    r.finish(scanned).map(|t| Loaded { traces: vec![t] })
}

/// The kind of snapshot, from the file name.
fn kind_of(path: &Path) -> &'static str {
    if path.to_string_lossy().ends_with(".snap.json") {
        "baseline"
    } else if path.to_string_lossy().ends_with(".current.json") {
        "current"
    } else {
        "snapshot"
    }
}

/// A tool's payload from its object (what the whole-document reader held before).
fn tool_payload(tool: &Value) -> Payload {
    let error = tool.get("error").and_then(ErrorInfo::from_value);
    let output = field(tool, "result").or_else(|| field(tool, "result_hash")).cloned();
    let mut extra = Vec::new();
    if field(tool, "result").is_some()
        && let Some(h) = field(tool, "result_hash")
    {
        extra.push(("result_hash".to_string(), h.clone()));
    }
    if let Some(obj) = tool.as_object() {
        for (k, x) in obj {
            if !["name", "args", "result", "result_hash", "error"].contains(&k.as_str()) {
                extra.push((k.clone(), x.clone()));
            }
        }
    }
    Payload {
        input: field(tool, "args").cloned(),
        output,
        error,
        extra,
        context: Vec::new(),
    }
}

/// What the index needs of one tool, read in parallel from its bytes.
enum Skim<'a> {
    Tool {
        name: Cow<'a, str>,
        error: bool,
        too_deep: bool,
    },
    /// Valid JSON, but not an object.
    NotObject,
    Bad(String),
}

/// The keys of a tool the index needs; the rest is skipped unparsed.
#[derive(serde::Deserialize)]
struct RawTool<'a> {
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

fn skim(bytes: &[u8]) -> Skim<'_> {
    if bytes.first() != Some(&b'{') {
        return match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
            Ok(_) => Skim::NotObject,
            Err(e) => Skim::Bad(super::jsonl::json_error(&e)),
        };
    }
    let too_deep = super::nested_too_deep(bytes);
    let fast = serde_json::from_slice::<RawTool>(bytes).ok().and_then(|t| {
        let name = match t.name {
            Some(n) if n.get().starts_with('"') => serde_json::from_str::<Cow<str>>(n.get()).ok()?,
            _ => Cow::Borrowed(""),
        };
        let error = match t.error {
            Some(e) => ErrorInfo::from_value(&serde_json::from_str::<Value>(e.get()).ok()?).is_some(),
            None => false,
        };
        Some(Skim::Tool { name, error, too_deep })
    });
    if let Some(s) = fast {
        return s;
    }
    // Whatever the typed read refuses (a repeated key, an error nested too deep for a
    // value): as the straightforward parse reads it.
    if too_deep {
        return Skim::Tool {
            name: Cow::Borrowed(""),
            error: false,
            too_deep,
        };
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => Skim::Tool {
            name: Cow::Owned(v.get("name").and_then(Value::as_str).unwrap_or("").to_string()),
            error: v.get("error").and_then(ErrorInfo::from_value).is_some(),
            too_deep,
        },
        Err(e) => Skim::Bad(super::jsonl::json_error(&e)),
    }
}

/// Receives the document: tools into the trace as they come, the run's values aside.
struct Reader {
    path: PathBuf,
    trace: Trace,
    run: u32,
    file: u16,
    /// Tools seen so far (their ids are their positions), read or not.
    seen: usize,
    version: Option<Value>,
    model: Option<Value>,
    input: Option<Value>,
    output: Option<Value>,
    error: Option<Value>,
    fingerprint: Option<Value>,
}

impl Reader {
    fn new(path: &Path) -> Reader {
        let name = stem(path);
        let kind = kind_of(path);
        let mut trace = Trace::new(RunMeta {
            id: format!("{name}.{kind}"),
            name: Some(name.clone()),
            format: "agentsnap",
            source: path.to_path_buf(),
            ..Default::default()
        });
        let file = trace.add_file(path);
        // The run comes first (the tools are its children); what it says is set at the end,
        // as the values beside the list may follow it.
        let run = trace.add(NewEvent {
            origin: Origin {
                file,
                ..Default::default()
            },
            ..NewEvent::new(EventKind::Run, &name)
        });
        Reader {
            path: path.to_path_buf(),
            trace,
            run,
            file,
            seen: 0,
            version: None,
            model: None,
            input: None,
            output: None,
            error: None,
            fingerprint: None,
        }
    }

    fn finish(mut self, scanned: super::document::Scanned) -> Result<Trace, LoadError> {
        let integer_version = self.version.as_ref().is_some_and(Value::is_u64);
        if scanned.top != Top::Object || scanned.list.is_none() || !integer_version {
            let mut reason = "no integer `version` with a `tools` array".to_string();
            if let Some(d) = self.trace.diagnostics.iter().find(|d| d.severity == Severity::Error) {
                reason.push_str(&format!(" ({})", d.message));
            }
            return Err(LoadError::NotATrace {
                path: self.path,
                reason,
                tried: "agentsnap".into(),
            });
        }
        let t = &mut self.trace;
        let model = self.model.as_ref().and_then(Value::as_str).filter(|s| !s.is_empty());
        let run_error = self.error.as_ref().and_then(ErrorInfo::from_value);
        let mut attributes = vec![("snapshot".to_string(), Value::String(kind_of(&self.path).into()))];
        for (k, x) in [("version", &self.version), ("fingerprint", &self.fingerprint)] {
            if let Some(x) = x.as_ref().filter(|x| !x.is_null()) {
                attributes.push((k.to_string(), x.clone()));
            }
        }
        t.meta.status = if run_error.is_some() {
            RunStatus::Error
        } else {
            RunStatus::Ok
        };
        t.meta.model = model.map(str::to_owned);
        t.meta.attributes = attributes;
        let model_ref = model.map(|m| t.strings.intern(m)).unwrap_or_default();
        let nonnull = |v: Option<Value>| v.filter(|x| !x.is_null());
        let fingerprint = nonnull(self.fingerprint);
        let ev = t.event_mut(self.run);
        ev.model = model_ref;
        ev.status = if run_error.is_some() { Status::Error } else { Status::Ok };
        ev.payload = PayloadRef::Inline(Box::new(Payload {
            input: nonnull(self.input),
            output: nonnull(self.output),
            error: run_error,
            extra: fingerprint
                .map(|f| vec![("fingerprint".to_string(), f)])
                .unwrap_or_default(),
            context: Vec::new(),
        }));
        t.finalize();
        Ok(self.trace)
    }

    fn apply(&mut self, s: Skim<'_>, loc: LineLoc) {
        let id = format!("tools[{}]", self.seen);
        self.seen += 1;
        let t = &mut self.trace;
        let (name, error, too_deep) = match s {
            Skim::Tool { name, error, too_deep } => (name, error, too_deep),
            Skim::NotObject => {
                t.diagnostics.push(Diagnostic::error(
                    &self.path,
                    None,
                    format!("{id} is not an object; skipped"),
                ));
                return;
            }
            Skim::Bad(m) => {
                t.diagnostics.push(Diagnostic::error(
                    &self.path,
                    Some(loc.line),
                    format!("{id}: {m}; skipped"),
                ));
                return;
            }
        };
        if too_deep {
            t.diagnostics.push(Diagnostic::error(
                &self.path,
                Some(loc.line),
                format!(
                    "{id}: nested deeper than {} levels (recursion limit exceeded): the tool loads, its arguments and result cannot be decoded",
                    super::JSON_DEPTH_LIMIT
                ),
            ));
        } else if name.is_empty() {
            t.diagnostics
                .push(Diagnostic::warning(&self.path, None, format!("{id} has no name")));
        }
        t.add(NewEvent {
            id: Some(&id),
            parent: Parent::Index(self.run),
            status: if error { Status::Error } else { Status::Ok },
            // Line 0: a snapshot is one document, its tools were never placed by line (and
            // `show` says so as before); the byte range is what the payload is read from.
            origin: Origin {
                file: self.file,
                line: 0,
                offset: loc.offset,
                len: loc.len.min(u32::MAX as usize) as u32,
            },
            payload: PayloadRef::Deferred,
            ..NewEvent::new(EventKind::ToolCall, if name.is_empty() { "?" } else { &name })
        });
    }
}

impl DocSink for Reader {
    fn elements(&mut self, batch: &[(&[u8], LineLoc)]) {
        let skims: Vec<Skim<'_>> = batch.par_iter().map(|&(b, _)| skim(b)).collect();
        for (s, &(_, loc)) in skims.into_iter().zip(batch) {
            self.apply(s, loc);
        }
    }

    fn other(&mut self, key: &str, value: &[u8], loc: LineLoc) {
        let slot = match key {
            "version" => &mut self.version,
            "model" => &mut self.model,
            "input" => &mut self.input,
            "output" => &mut self.output,
            "error" => &mut self.error,
            "fingerprint" => &mut self.fingerprint,
            _ => return,
        };
        match serde_json::from_slice::<Value>(value) {
            Ok(v) => *slot = Some(v),
            Err(e) => self.trace.diagnostics.push(Diagnostic::error(
                &self.path,
                Some(loc.line),
                format!("{key:?}: {}", super::jsonl::json_error(&e)),
            )),
        }
    }

    fn problem(&mut self, line: u64, message: String) {
        self.trace
            .diagnostics
            .push(Diagnostic::error(&self.path, Some(line), message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::decoded;
    use serde_json::json;

    /// Drift in a snapshot: fields no agentsnap writes yet, at the top and in each tool (a
    /// snapshot has no record types: a new entry in `tools` is a new call, not drift).
    fn drift_snapshot(f: &Path, rng: &mut crate::formats::testing::Rng) -> usize {
        let Ok(mut v) = serde_json::from_slice::<Value>(&std::fs::read(f).unwrap()) else {
            return 0;
        };
        if let Some(o) = v.as_object_mut() {
            o.insert(rng.type_name(), rng.value());
            if let Some(Value::Array(tools)) = o.get_mut("tools") {
                for t in tools.iter_mut().filter_map(Value::as_object_mut) {
                    if rng.one_in(2) {
                        t.insert(rng.type_name(), rng.value());
                    }
                }
            }
        }
        std::fs::write(f, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
        0
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on our snapshots and the corpus'.
        #[test]
        fn drift_is_skipped_quietly(seed in proptest::prelude::any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "agentsnap",
                &[
                    "sample-traces/diff/booking.snap.json",
                    "sample-traces/diff/booking.current.json",
                    "tests/fixtures/diff/agentsnap/trip.snap.json",
                    "tests/fixtures/diff/agentsnap/regression.current.json",
                ],
            );
            crate::formats::testing::drift_check(&sources, seed, &drift_snapshot);
        }
    }

    /// The whole-document reader this format had before it streamed (kept as the oracle).
    fn from_value(path: &Path, v: &Value) -> Trace {
        let name = stem(path);
        let kind = if path.to_string_lossy().ends_with(".snap.json") {
            "baseline"
        } else if path.to_string_lossy().ends_with(".current.json") {
            "current"
        } else {
            "snapshot"
        };
        let model = v.get("model").and_then(Value::as_str).filter(|s| !s.is_empty());
        let run_error = field(v, "error").and_then(ErrorInfo::from_value);
        let mut attributes = vec![("snapshot".to_string(), Value::String(kind.into()))];
        for k in ["version", "fingerprint"] {
            if let Some(x) = field(v, k) {
                attributes.push((k.to_string(), x.clone()));
            }
        }
        let mut t = Trace::new(RunMeta {
            id: format!("{name}.{kind}"),
            name: Some(name.clone()),
            format: "agentsnap",
            source: path.to_path_buf(),
            status: if run_error.is_some() {
                RunStatus::Error
            } else {
                RunStatus::Ok
            },
            model: model.map(str::to_owned),
            attributes,
            ..Default::default()
        });
        let file = t.add_file(path);
        let origin = Origin {
            file,
            line: 0,
            offset: 0,
            len: 0,
        };
        let run = t.add(NewEvent {
            model,
            status: if run_error.is_some() { Status::Error } else { Status::Ok },
            origin,
            payload: PayloadRef::Inline(Box::new(Payload {
                input: field(v, "input").cloned(),
                output: field(v, "output").cloned(),
                error: run_error,
                extra: field(v, "fingerprint")
                    .map(|f| vec![("fingerprint".to_string(), f.clone())])
                    .unwrap_or_default(),
                context: Vec::new(),
            })),
            ..NewEvent::new(EventKind::Run, &name)
        });
        let tools = v
            .get("tools")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for (i, tool) in tools.iter().enumerate() {
            let id = format!("tools[{i}]");
            let Some(obj) = tool.as_object() else {
                t.diagnostics
                    .push(Diagnostic::error(path, None, format!("{id} is not an object; skipped")));
                continue;
            };
            let name = obj.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                t.diagnostics
                    .push(Diagnostic::warning(path, None, format!("{id} has no name")));
            }
            let error = obj.get("error").and_then(ErrorInfo::from_value);
            let output = field(tool, "result").or_else(|| field(tool, "result_hash")).cloned();
            let mut extra = Vec::new();
            if field(tool, "result").is_some()
                && let Some(h) = field(tool, "result_hash")
            {
                extra.push(("result_hash".to_string(), h.clone()));
            }
            for (k, x) in obj {
                if !["name", "args", "result", "result_hash", "error"].contains(&k.as_str()) {
                    extra.push((k.clone(), x.clone()));
                }
            }
            t.add(NewEvent {
                id: Some(&id),
                parent: Parent::Index(run),
                status: if error.is_some() { Status::Error } else { Status::Ok },
                origin,
                payload: PayloadRef::Inline(Box::new(Payload {
                    input: field(tool, "args").cloned(),
                    output,
                    error,
                    extra,
                    context: Vec::new(),
                })),
                ..NewEvent::new(EventKind::ToolCall, if name.is_empty() { "?" } else { name })
            });
        }
        t.finalize();
        t
    }

    fn probe(v: &Value) -> Probe {
        Probe::from_bytes(Path::new("x.json"), serde_json::to_vec(v).unwrap(), true)
    }

    #[test]
    fn detects_the_recorder_shape_but_not_the_lookalike() {
        assert_eq!(AgentSnap.detect(&probe(&json!({"version": 1, "tools": []}))), 100);
        // iamfaham/AgentSnap: string version and `trace`, a different format of the same name.
        assert_eq!(AgentSnap.detect(&probe(&json!({"version": "1.0", "trace": []}))), 0);
    }

    /// Load `text` as the file `name` through the streaming reader, in chunks of `chunk`.
    fn load_text(dir: &Path, name: &str, text: &[u8], chunk: usize) -> Result<Trace, LoadError> {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let doc = Document {
            chunk,
            ..Document::new(PATHS)
        };
        load_with(&path, &doc).map(|mut l| l.traces.remove(0))
    }

    #[test]
    fn tools_errors_results_and_hashes() {
        let v = json!({
            "version": 1, "model": "m", "input": "q", "output": "a",
            "tools": [
                {"name": "search", "args": {"limit": 10}, "result_hash": "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
                {"name": "fetch", "args": {}, "result": {"ok": true}, "result_hash": "sha256:bbbbbbbbbbbbbbbbbbbb"},
                {"name": "book", "args": {}, "error": {"name": "TimeoutError", "message": "slow"}},
                "garbage"
            ],
            "error": "run failed",
            "fingerprint": {"node": "v20"}
        });
        let d = tempfile::tempdir().unwrap();
        let t = load_text(d.path(), "flow.snap.json", &serde_json::to_vec(&v).unwrap(), CHUNK_TEST).unwrap();
        assert_eq!(t.meta.name.as_deref(), Some("flow"));
        assert_eq!(t.meta.status, RunStatus::Error);
        assert_eq!(t.meta.model.as_deref(), Some("m"));
        assert_eq!(t.counts().tool_calls, 3);
        assert_eq!(t.diagnostics.len(), 1);
        let walk = t.walk();
        assert_eq!(walk.len(), 4);
        let book = t.find("tools[2]").unwrap();
        assert_eq!(t.event(book).status, Status::Error);
        let p = super::super::payload(&t, t.event(t.find("tools[0]").unwrap()));
        assert_eq!(p.output, Some(json!("sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")));
        let p = super::super::payload(&t, t.event(t.find("tools[1]").unwrap()));
        assert_eq!(p.output, Some(json!({"ok": true})));
        // The tools' payloads stay on disk; the run's (one a document) is held.
        assert!(matches!(t.event(book).payload, PayloadRef::Deferred));
        assert_eq!(decoded(&t), decoded(&from_value(&d.path().join("flow.snap.json"), &v)));
    }

    const CHUNK_TEST: usize = 7;

    #[test]
    fn a_large_snapshot_streams_into_the_same_trace_as_the_whole_document() {
        // About 4 MB, 20,000 tools, read in 64 KiB chunks (elements cut everywhere).
        let tools: Vec<Value> = (0..20_000)
            .map(|i| {
                let mut t = json!({"name": format!("tool{}", i % 37), "args": {"i": i, "q": "x".repeat(i % 300)}, "result_hash": format!("sha256:{i:064x}")});
                if i % 101 == 0 {
                    t["error"] = json!({"name": "E", "message": format!("failed {i}")});
                }
                if i % 7 == 0 {
                    t["result"] = json!({"rows": [i, i + 1]});
                }
                t
            })
            .collect();
        let v = json!({"version": 1, "model": "m", "input": "go", "tools": tools, "output": "done", "fingerprint": {"a": 1}});
        let text = serde_json::to_vec_pretty(&v).unwrap();
        assert!(text.len() > 4 << 20, "{}", text.len());
        let d = tempfile::tempdir().unwrap();
        let t = load_text(d.path(), "big.current.json", &text, 64 << 10).unwrap();
        assert_eq!(t.counts().tool_calls, 20_000);
        assert_eq!(t.counts().errors, 199);
        assert_eq!(
            decoded(&t),
            decoded(&from_value(&d.path().join("big.current.json"), &v))
        );
    }

    #[test]
    fn a_damaged_document_keeps_what_came_before_and_says_where() {
        let d = tempfile::tempdir().unwrap();
        // Cut short inside the third tool.
        let text = b"{\"version\": 1,\n \"tools\": [{\"name\": \"a\"},\n {\"name\": \"b\"},\n {\"name\": \"c\", \"args\": {\"x\":";
        let t = load_text(d.path(), "cut.snap.json", text, CHUNK_TEST).unwrap();
        assert_eq!(t.counts().tool_calls, 2);
        assert_eq!(t.diagnostics.len(), 1, "{:?}", t.diagnostics);
        assert_eq!(t.diagnostics[0].line, Some(4));
        assert!(t.diagnostics[0].message.contains("cut short"), "{:?}", t.diagnostics);
        // A tool that is not JSON: skipped, named with its line; the others load.
        let text = b"{\"version\": 1, \"tools\": [\n{\"name\": \"a\"},\n{\"name\": tru},\n{\"name\": \"c\"}]}";
        let t = load_text(d.path(), "bad.snap.json", text, CHUNK_TEST).unwrap();
        assert_eq!(t.counts().tool_calls, 2);
        assert_eq!(t.diagnostics.len(), 1, "{:?}", t.diagnostics);
        assert_eq!(t.diagnostics[0].line, Some(3));
        assert!(
            t.diagnostics[0].message.starts_with("tools[1]: invalid JSON"),
            "{:?}",
            t.diagnostics
        );
        // Not a snapshot at all.
        for text in [
            &b"{\"version\": \"1\", \"tools\": []}"[..],
            b"{\"version\": 1}",
            b"[1]",
            b"",
        ] {
            let e = load_text(d.path(), "no.json", text, CHUNK_TEST).unwrap_err();
            assert!(matches!(e, LoadError::NotATrace { .. }), "{e}");
        }
        // Arguments nested past serde_json's limit: the tool loads, with a diagnostic, and
        // its payload says why it cannot be shown.
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let text = format!(r#"{{"version":1,"tools":[{{"name":"t","args":{deep}}}]}}"#);
        let t = load_text(d.path(), "deep.snap.json", text.as_bytes(), CHUNK_TEST).unwrap();
        assert_eq!(t.counts().tool_calls, 1);
        assert!(
            t.diagnostics[0].message.contains("recursion limit exceeded"),
            "{:?}",
            t.diagnostics
        );
        let p = super::super::payload(&t, t.event(t.find("tools[0]").unwrap()));
        assert!(p.error.unwrap().message.contains("recursion limit"));
    }

    /// A snapshot of `n` tools, each carrying brackets and braces in its strings and values
    /// (what the tail reader must not take for the end of the list), then `after`.
    fn big_snapshot(n: usize, error_first: bool, after: &str) -> String {
        let tool = r#"{"name": "search", "args": {"q": "a ], \"b\": [1]} c", "k": [[1], [2]]}, "result": "x]}", "result_hash": "h"}"#;
        let tools = vec![tool; n].join(",\n    ");
        let before = if error_first {
            r#""error": "boom ], \"x\": 1}", "#
        } else {
            ""
        };
        format!(
            "{{\"version\": 1, \"model\": \"m\", {before}\"input\": \"hi\", \"tools\": [\n    {tools}\n  ]{after}\n}}\n"
        )
    }

    /// Over [`SMALL`], `ls` reads both ends only: the loaded run's id, name and status, counts
    /// unknown (provisional); at or under it, the full load's summary, counts and all.
    #[test]
    fn a_large_snapshot_is_summarized_from_its_ends() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                "ok.snap.json",
                false,
                r#", "error": null, "fingerprint": {"os": ["linux", "x]"], "n": {"a": [1]}}"#,
                RunStatus::Ok,
            ),
            (
                "bad.current.json",
                false,
                r#", "error": {"name": "E", "message": "m ], \"q\": [2]}"}, "fingerprint": null"#,
                RunStatus::Error,
            ),
            ("last.json", false, "", RunStatus::Ok),
            ("first.json", true, r#", "fingerprint": {}"#, RunStatus::Error),
        ];
        for (name, error_first, after, status) in cases {
            let path = dir.path().join(name);
            let text = big_snapshot(12_000, error_first, after);
            assert!(text.len() as u64 > SMALL);
            std::fs::write(&path, &text).unwrap();
            let loaded = Summary::unpriced(&AgentSnap.load(&path).unwrap().traces[0]);
            let s = crate::formats::testing::summaries(&AgentSnap, &path).unwrap().remove(0);
            assert_eq!((&s.id, &s.name, s.status), (&loaded.id, &loaded.name, status), "{name}");
            assert_eq!(loaded.status, status, "{name}");
            assert!(s.provisional(), "{name}");
            assert_eq!(
                (s.events, s.tool_calls, s.errors, s.start),
                (None, None, None, None),
                "{name}"
            );
            assert_eq!(loaded.tool_calls, Some(12_000));
        }
        // Small: the full load's summary.
        let path = dir.path().join("small.snap.json");
        std::fs::write(&path, big_snapshot(3, false, r#", "error": "e""#)).unwrap();
        let s = crate::formats::testing::summaries(&AgentSnap, &path).unwrap().remove(0);
        assert!(!s.provisional());
        assert_eq!((s.tool_calls, s.status), (Some(3), RunStatus::Error));
    }

    /// When an end does not read as agentsnap (values after the list longer than the tail, no
    /// `version` first, a cut-off document), the summary is the full load's, as before.
    #[test]
    fn a_large_snapshot_whose_ends_do_not_read_is_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!(r#", "error": null, "fingerprint": "{}""#, "f".repeat(2 * END as usize));
        let cut = big_snapshot(12_000, false, r#", "error": "e""#);
        let cut = cut[..cut.len() - 3].to_string();
        let no_version = big_snapshot(12_000, false, "").replacen(r#""version": 1"#, r#""version": "1""#, 1);
        for (name, text) in [
            ("long.json", big_snapshot(12_000, false, &long)),
            ("cut.json", cut),
            ("nov.json", no_version),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, &text).unwrap();
            match (
                crate::formats::testing::summaries(&AgentSnap, &path),
                AgentSnap.load(&path),
            ) {
                (Ok(s), Ok(l)) => assert_eq!(s[0].tool_calls, Summary::unpriced(&l.traces[0]).tool_calls, "{name}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{name}"),
                (a, b) => panic!("{name}: summarize {:?}, load {:?}", a.is_ok(), b.is_ok()),
            }
        }
    }

    #[test]
    fn the_members_after_the_list() {
        let m = |t: &str| after_list(t.as_bytes()).map(Value::Object);
        assert_eq!(
            m(r#"[1], [2]], "a": [3], "b": {"c": "]"}}"#),
            Some(json!({"a": [3], "b": {"c": "]"}}))
        );
        assert_eq!(m("{\"x\": [1]}]\n}\n"), Some(json!({})));
        assert_eq!(
            m(r#"1]}, {"e": "], \"z\": 1}"}], "error": "y"}"#),
            Some(json!({"error": "y"}))
        );
        assert_eq!(m(r#"], "a": 1"#), None);
        assert_eq!(m(r#""no list here"}"#), None);
    }

    #[test]
    fn error_may_be_null_string_or_object() {
        let d = tempfile::tempdir().unwrap();
        for (e, status) in [
            (json!(null), RunStatus::Ok),
            (json!("x"), RunStatus::Error),
            (json!({"name": "E", "message": "m"}), RunStatus::Error),
        ] {
            let text = serde_json::to_vec(&json!({"version": 1, "tools": [], "error": e})).unwrap();
            let t = load_text(d.path(), "a.json", &text, CHUNK_TEST).unwrap();
            assert_eq!(t.meta.status, status);
        }
    }

    use proptest::prelude::*;

    fn arb_leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            "[a-z\\[\\]{}\",:\\\\ \n✓]{0,10}".prop_map(Value::String),
        ]
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        arb_leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-z\"\\\\]{0,5}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// A tool as agentsnap writes it, or damaged: fields missing, of the wrong type, extra
    /// keys, errors of every shape, or not an object at all.
    fn arb_tool() -> impl Strategy<Value = Value> {
        let error = prop_oneof![
            Just(None),
            Just(Some(Value::Null)),
            Just(Some(json!(false))),
            Just(Some(json!(""))),
            "[a-z ]{1,8}".prop_map(|s| Some(Value::String(s))),
            ("[A-Za-z]{0,6}", "[a-z ]{0,8}").prop_map(|(n, m)| Some(json!({"name": n, "message": m}))),
            arb_value().prop_map(Some),
        ];
        let name = prop_oneof![
            3 => "[a-z_\"\\\\é]{0,8}".prop_map(|s| Some(Value::String(s))),
            1 => Just(None),
            1 => arb_leaf().prop_map(Some),
        ];
        let obj = (
            name,
            prop::option::of(arb_value()),
            prop::option::of(arb_value()),
            prop::option::of(arb_leaf()),
            error,
            prop::collection::vec(("[a-z_]{1,6}", arb_value()), 0..2),
        )
            .prop_map(|(name, args, result, hash, error, extra)| {
                let mut m = serde_json::Map::new();
                for (k, v) in extra {
                    m.insert(k, v);
                }
                for (k, v) in [
                    ("name", name),
                    ("args", args),
                    ("result", result),
                    ("result_hash", hash),
                    ("error", error),
                ] {
                    if let Some(v) = v {
                        m.insert(k.into(), v);
                    }
                }
                Value::Object(m)
            });
        prop_oneof![8 => obj, 1 => arb_value()]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The streaming reader builds the trace the whole-document reader built: events,
        /// statuses, diagnostics, and each tool's payload decoded from its byte range equal
        /// to the payload the old reader held, whatever the chunks cut, compact or pretty.
        #[test]
        fn streaming_equals_the_whole_document_reader(
            tools in prop::collection::vec(arb_tool(), 0..8),
            run in prop::collection::vec((prop_oneof![Just("model"), Just("input"), Just("output"), Just("error"), Just("fingerprint"), Just("other")], arb_value()), 0..5),
            tools_first in any::<bool>(),
            pretty in any::<bool>(),
            chunk in 1usize..64,
            name in prop_oneof![Just("r.snap.json"), Just("r.current.json"), Just("r.json")],
        ) {
            let mut m = serde_json::Map::new();
            if tools_first {
                m.insert("tools".into(), Value::Array(tools.clone()));
            }
            m.insert("version".into(), json!(1));
            for (k, v) in run {
                m.insert(k.to_string(), v);
            }
            m.insert("tools".into(), Value::Array(tools));
            let v = Value::Object(m);
            let text = if pretty { serde_json::to_vec_pretty(&v).unwrap() } else { serde_json::to_vec(&v).unwrap() };
            let d = tempfile::tempdir().unwrap();
            let t = load_text(d.path(), name, &text, chunk).unwrap();
            let want = from_value(&d.path().join(name), &serde_json::from_slice(&text).unwrap());
            prop_assert_eq!(decoded(&t), decoded(&want));
        }
    }
}
