//! Maida, trace spec 0.2.x: a run directory with `meta.json` (run metadata, replaced by rename
//! when the run ends) and `spans.jsonl` (OTel-style spans, one a line, usually written when
//! they end: children first, the root last — or first, or not yet at all).
//!
//! A span's type is derived from its attributes: `gen_ai.*` → LLM call, `maida.tool_name` →
//! tool call, no parent → the run, `maida.event_type` names the rest. Payloads are JSON strings
//! inside span events (`maida.tool.args`, `maida.tool.result`): parsed, falling back to the
//! string. Like agentdbg, the envelope is parsed typed and the payload is decoded from the
//! span's line on disk when it is shown (DESIGN §4).

use super::jsonl::{Follow, LineLoc, LineParser, Sink};
use super::{Format, LoadError, Loaded, Probe, Summary, decode_embedded, field, json_or_string, read_json_file, stem};
use crate::model::*;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub struct Maida;

const SPANS: &str = "spans.jsonl";
const META: &str = "meta.json";
const META_LIMIT: u64 = 16 << 20;
/// Above this size `ls` trusts meta.json of a finished run instead of reading its spans.
const SUMMARY_LOAD_LIMIT: u64 = 1 << 20;
/// Separates a span id from the index of the span event an event was derived from.
const DERIVED: char = '#';

impl Format for Maida {
    fn id(&self) -> &'static str {
        "maida"
    }
    fn describe(&self) -> &'static str {
        "Maida run directory (meta.json + spans.jsonl, spec 0.2.x)"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return if p.has_entry(SPANS) {
                100
            } else if p.has_entry(META) && is_run_dir_meta(&p.path.join(META)) {
                90
            } else {
                0
            };
        }
        if p.file_name() == META {
            return if p.record().is_some_and(is_maida_meta) { 90 } else { 0 };
        }
        // A span line: OTel-shaped ids with Maida's own ISO time fields (OTLP uses
        // `resourceSpans`, Assay's GenAI span lines use `startTimeUnixNano`).
        if p.has_key("span_id") && p.has_key("trace_id") && p.has_key("start_time") {
            return if p.has_key("parent_span_id") { 95 } else { 80 };
        }
        0
    }

    fn is_run_dir(&self, dir: &Path) -> bool {
        dir.join(SPANS).is_file() || is_run_dir_meta(&dir.join(META))
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let (_, spans) = locate(path);
        let mut f = self.follow(path).expect("maida is line-oriented");
        f.poll()?;
        if !spans.is_file() {
            if f.sink.traces.is_empty() {
                return Err(LoadError::io(
                    &spans,
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no spans.jsonl"),
                ));
            }
            f.sink
                .warning(None, "spans.jsonl is missing: the run has not written spans yet");
        }
        f.finish("Maida spans")
    }

    fn follow(&self, path: &Path) -> Option<Follow> {
        let (meta, spans) = locate(path);
        Some(Follow::new(
            &spans,
            Box::new(move || Box::new(Parser::new(meta.as_deref())) as Box<dyn LineParser>),
        ))
    }

    fn summarize(&self, path: &Path) -> Result<Vec<Summary>, LoadError> {
        let (meta, spans) = locate(path);
        let big = std::fs::metadata(&spans).is_ok_and(|m| m.len() > SUMMARY_LOAD_LIMIT);
        // Small runs are read whole (counts come from spans, never from meta.json); a large
        // finished run is listed from meta.json alone, its counts left unknown.
        if big && let Some(m) = meta.filter(|m| m.is_file()) {
            let v = read_json_file(&m, META_LIMIT)?;
            let status = RunStatus::parse(v.get("status").and_then(Value::as_str).unwrap_or(""));
            if status != RunStatus::Running {
                let start = v.get("started_at").and_then(parse_timestamp);
                let end = v.get("ended_at").and_then(parse_timestamp);
                return Ok(vec![Summary {
                    id: v
                        .get("trace_id")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .unwrap_or_else(|| stem(path)),
                    name: v.get("run_name").and_then(Value::as_str).map(str::to_owned),
                    format: "maida",
                    path: path.to_path_buf(),
                    status,
                    start,
                    duration: match (start, end) {
                        (Some(a), Some(b)) if b >= a => b.checked_sub(a),
                        _ => None,
                    },
                    events: None,
                    tool_calls: None,
                    llm_calls: None,
                    errors: None,
                    tokens: None,
                    problems: None,
                }]);
            }
        }
        Ok(self.load(path)?.traces.iter().map(Summary::of).collect())
    }

    fn decode_payload(&self, t: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
        let Some(bytes) = raw.first() else {
            return Payload::default();
        };
        let span: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => {
                return Payload {
                    error: Some(ErrorInfo {
                        kind: Some("unreadable".into()),
                        message: format!("cannot decode the span: {e}"),
                        ..Default::default()
                    }),
                    ..Default::default()
                };
            }
        };
        let derived = t
            .str(ev.source_id)
            .rsplit_once(DERIVED)
            .and_then(|(_, n)| n.parse::<usize>().ok());
        match derived {
            Some(n) => derived_payload(&span, ev.kind, n),
            None => span_payload(&span, ev.kind),
        }
    }
}

/// (meta.json of the run, spans file) for a run directory, a meta.json or a spans file.
fn locate(path: &Path) -> (Option<PathBuf>, PathBuf) {
    if path.is_dir() {
        (Some(path.join(META)), path.join(SPANS))
    } else if path.file_name().is_some_and(|n| n == META) {
        let dir = path.parent().unwrap_or(Path::new("."));
        (Some(path.to_path_buf()), dir.join(SPANS))
    } else {
        let dir = path.parent().unwrap_or(Path::new("."));
        let m = dir.join(META);
        (m.is_file().then_some(m), path.to_path_buf())
    }
}

/// Maida's meta.json: a `spec_version` and a `trace_id` (AgentDbg's run.json has `run_id`).
fn is_maida_meta(v: &Value) -> bool {
    v.get("spec_version").is_some() && v.get("trace_id").is_some_and(Value::is_string) && v.get("run_id").is_none()
}

fn is_run_dir_meta(meta: &Path) -> bool {
    meta.is_file() && read_json_file(meta, 1 << 20).is_ok_and(|v| is_maida_meta(&v))
}

fn version_supported(v: &str) -> bool {
    v == "0.2" || v.strip_prefix("0.2.").is_some_and(|rest| !rest.is_empty())
}

#[derive(Deserialize)]
struct Span<'a> {
    #[serde(borrow, default)]
    trace_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    span_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    parent_span_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    start_time: Option<&'a RawValue>,
    #[serde(borrow, default)]
    end_time: Option<&'a RawValue>,
    #[serde(borrow, default)]
    duration_ms: Option<&'a RawValue>,
    #[serde(borrow, default)]
    attributes: Option<&'a RawValue>,
    #[serde(borrow, default)]
    events: Option<&'a RawValue>,
    #[serde(borrow, default)]
    status_code: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct SpanEvent<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default)]
    attributes: Option<&'a RawValue>,
}

/// A span's attributes, values left raw: only the few the index needs are decoded.
struct Attrs<'a>(HashMap<Cow<'a, str>, &'a RawValue>);

impl<'a> Attrs<'a> {
    fn parse(raw: Option<&'a RawValue>) -> Result<Attrs<'a>, serde_json::Error> {
        match raw {
            Some(r) if r.get() != "null" => serde_json::from_str(r.get()).map(Attrs),
            _ => Ok(Attrs(HashMap::new())),
        }
    }
    fn raw(&self, k: &str) -> Option<&'a RawValue> {
        self.0.get(k).copied().filter(|r| r.get() != "null")
    }
    fn str(&self, k: &str) -> Option<Cow<'a, str>> {
        let r = self.raw(k)?;
        serde_json::from_str::<Cow<'a, str>>(r.get())
            .ok()
            .filter(|s| !s.is_empty())
    }
    fn u64(&self, k: &str) -> Option<u64> {
        raw_u64(self.raw(k))
    }
    fn has_prefix(&self, prefix: &str) -> bool {
        self.0.keys().any(|k| k.starts_with(prefix))
    }
}

fn raw_u64(r: Option<&RawValue>) -> Option<u64> {
    let v: Value = serde_json::from_str(r?.get()).ok()?;
    super::lenient_u64(Some(&v))
}

fn raw_ts(r: Option<&RawValue>) -> Option<i64> {
    let v: Value = serde_json::from_str(r?.get()).ok()?;
    parse_timestamp(&v)
}

/// What a span is, from its attributes (the spec has no type field).
fn span_kind(attrs: &Attrs, is_root: bool) -> EventKind {
    match attrs.str("maida.event_type").as_deref() {
        Some("LOOP_WARNING") => return EventKind::LoopWarning,
        Some("ERROR") => return EventKind::Error,
        Some("STATE_UPDATE") => return EventKind::State,
        Some("TOOL_CALL") => return EventKind::ToolCall,
        Some("LLM_CALL") => return EventKind::LlmCall,
        _ => {}
    }
    if is_root {
        EventKind::Run
    } else if attrs.raw("maida.tool_name").is_some() {
        EventKind::ToolCall
    } else if attrs.has_prefix("gen_ai.") {
        EventKind::LlmCall
    } else {
        EventKind::Step
    }
}

/// The Maida line parser: one trace per `trace_id` (a run directory normally holds one).
pub struct Parser {
    traces: HashMap<String, usize>,
    states: Vec<RunState>,
    meta: Option<PathBuf>,
    /// (length, mtime) of meta.json when last read: it is replaced when the run ends.
    meta_stamp: Option<(u64, Option<std::time::SystemTime>)>,
    version_warned: bool,
    spans_file: u16,
}

#[derive(Default)]
struct RunState {
    /// The root span, once it has arrived.
    root: Option<u32>,
    meta_status: Option<RunStatus>,
    file: u16,
}

impl Parser {
    pub fn new(meta: Option<&Path>) -> Parser {
        Parser {
            traces: HashMap::new(),
            states: Vec::new(),
            meta: meta.map(Path::to_path_buf),
            meta_stamp: None,
            version_warned: false,
            spans_file: 0,
        }
    }

    fn trace_for(&mut self, trace_id: &str, sink: &mut Sink) -> usize {
        if let Some(&i) = self.traces.get(trace_id) {
            sink.touch(i);
            return i;
        }
        // Spans that name no trace join the first one.
        if trace_id.is_empty() && !self.states.is_empty() {
            sink.touch(0);
            return 0;
        }
        let source = match &self.meta {
            Some(m) => m.parent().map(Path::to_path_buf).unwrap_or_default(),
            None => sink.path.clone(),
        };
        let mut t = Trace::new(RunMeta {
            id: if trace_id.is_empty() {
                stem(&source)
            } else {
                trace_id.to_string()
            },
            format: "maida",
            source,
            status: RunStatus::Unknown,
            ..Default::default()
        });
        let file = t.add_file(sink.path.clone());
        self.spans_file = file;
        let idx = sink.push_trace(t);
        self.states.push(RunState {
            file,
            ..Default::default()
        });
        self.traces.insert(trace_id.to_string(), idx);
        idx
    }

    /// Read meta.json (missing while a run starts; replaced under us when it ends).
    fn read_meta(&mut self, path: &Path, sink: &mut Sink) {
        let v = match read_json_file(path, META_LIMIT) {
            Ok(v) => v,
            Err(e) => {
                sink.warning(None, format!("meta.json: {e}"));
                return;
            }
        };
        let Some(obj) = v.as_object() else {
            sink.warning(None, "meta.json is not a JSON object; ignored");
            return;
        };
        let trace_id = obj.get("trace_id").and_then(Value::as_str).unwrap_or("");
        let key = if trace_id.is_empty() && self.traces.len() == 1 {
            self.traces.keys().next().cloned().unwrap_or_default()
        } else {
            trace_id.to_string()
        };
        let idx = self.trace_for(&key, sink);
        let version = obj.get("spec_version").and_then(Value::as_str).unwrap_or("");
        let t = &mut sink.traces[idx];
        if !version_supported(version) && !self.version_warned {
            self.version_warned = true;
            t.diagnostics.push(Diagnostic::warning(
                path,
                None,
                format!("spec_version {version:?} is not 0.2.x; read as 0.2 (older traces may load incompletely)"),
            ));
        }
        if let Some(n) = obj.get("run_name").and_then(Value::as_str).filter(|s| !s.is_empty()) {
            t.meta.name = Some(n.to_string());
        }
        if let Some(s) = obj.get("started_at").and_then(parse_timestamp) {
            t.meta.start = Some(s);
        }
        if let Some(e) = obj.get("ended_at").and_then(parse_timestamp) {
            t.meta.end = Some(e);
        }
        // Everything else (counts, emitter info) is shown, never trusted: counts come from spans.
        for (k, x) in obj {
            if [
                "trace_id",
                "run_name",
                "started_at",
                "ended_at",
                "status",
                "duration_ms",
            ]
            .contains(&k.as_str())
                || x.is_null()
            {
                continue;
            }
            t.meta.attributes.retain(|(a, _)| a != k);
            t.meta.attributes.push((k.clone(), x.clone()));
        }
        self.states[idx].meta_status = Some(RunStatus::parse(
            obj.get("status").and_then(Value::as_str).unwrap_or(""),
        ));
    }
}

impl LineParser for Parser {
    fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let Some(span) = sink.parse::<Span>(line, loc) else {
            return;
        };
        let ti = self.trace_for(span.trace_id.as_deref().unwrap_or(""), sink);
        let attrs = match Attrs::parse(span.attributes) {
            Ok(a) => a,
            Err(e) => {
                sink.error(loc.line, format!("attributes: {}", super::jsonl::json_error(&e)));
                Attrs(HashMap::new())
            }
        };
        let events: Vec<SpanEvent> = match span.events {
            Some(r) if r.get() != "null" => match serde_json::from_str(r.get()) {
                Ok(v) => v,
                Err(e) => {
                    sink.error(loc.line, format!("events: {}", super::jsonl::json_error(&e)));
                    Vec::new()
                }
            },
            _ => Vec::new(),
        };
        let span_id = span.span_id.as_deref().unwrap_or("");
        if span_id.is_empty() {
            sink.warning(Some(loc.line), "span without span_id: its children cannot find it");
        }
        let parent_id = span.parent_span_id.as_deref().filter(|p| !p.is_empty());
        let kind = span_kind(&attrs, parent_id.is_none());
        let start = raw_ts(span.start_time);
        let end = raw_ts(span.end_time);
        let duration = match (start, end) {
            (Some(s), Some(e)) if e >= s => e.checked_sub(s),
            _ => raw_u64(span.duration_ms).map(|ms| (ms.min(i64::MAX as u64 / 1_000_000) as i64) * 1_000_000),
        };
        let failed = span
            .status_code
            .as_deref()
            .is_some_and(|c| c.eq_ignore_ascii_case("error"))
            || attrs
                .str("maida.status")
                .is_some_and(|s| s.eq_ignore_ascii_case("error"))
            || attrs.raw("maida.error_type").is_some();
        let open = end.is_none() && span.duration_ms.is_none_or(|d| d.get() == "null");
        let status = if failed {
            Status::Error
        } else if open {
            // Not ended yet (a run still being written).
            Status::Pending
        } else {
            Status::Ok
        };
        let span_name = span.name.as_deref().unwrap_or("");
        let warning_pattern = || {
            events
                .iter()
                .find(|e| e.name.as_deref() == Some("maida.loop.warning"))
                .and_then(|e| Attrs::parse(e.attributes).ok())
                .and_then(|a| a.str("pattern"))
        };
        let model = attrs
            .str("gen_ai.request.model")
            .or_else(|| attrs.str("gen_ai.response.model"))
            .or_else(|| (kind == EventKind::LlmCall && !span_name.is_empty()).then_some(Cow::Borrowed(span_name)));
        let name: Cow<str> = match kind {
            EventKind::ToolCall => attrs.str("maida.tool_name").unwrap_or(Cow::Borrowed(span_name)),
            EventKind::LlmCall if span_name.is_empty() => model.clone().unwrap_or(Cow::Borrowed("llm")),
            EventKind::Run => attrs.str("maida.run_name").unwrap_or(Cow::Borrowed(span_name)),
            EventKind::Error => attrs.str("maida.error_type").unwrap_or(Cow::Borrowed(span_name)),
            EventKind::LoopWarning => warning_pattern().unwrap_or(Cow::Borrowed(span_name)),
            _ => Cow::Borrowed(span_name),
        };
        let usage = (kind == EventKind::LlmCall).then(|| Usage {
            input: attrs
                .u64("gen_ai.usage.input_tokens")
                .or_else(|| attrs.u64("gen_ai.usage.prompt_tokens")),
            output: attrs
                .u64("gen_ai.usage.output_tokens")
                .or_else(|| attrs.u64("gen_ai.usage.completion_tokens")),
            total: attrs.u64("gen_ai.usage.total_tokens"),
        });
        let rs = &mut self.states[ti];
        let origin = loc.origin(rs.file);
        let t = &mut sink.traces[ti];
        if kind == EventKind::Run && rs.root.is_some() {
            t.diagnostics.push(Diagnostic::warning(
                sink.path.clone(),
                Some(loc.line),
                "a second root span in the same trace",
            ));
        }
        let idx = t.add(NewEvent {
            id: Some(span_id).filter(|s| !s.is_empty()),
            parent: parent_id.map_or(Parent::None, Parent::Id),
            start,
            duration,
            status,
            usage,
            model: model.as_deref(),
            origin,
            payload: PayloadRef::Deferred,
            ..NewEvent::new(kind, &name)
        });
        if kind == EventKind::Run && rs.root.is_none() {
            rs.root = Some(idx);
            if t.meta.name.is_none() && !name.is_empty() {
                t.meta.name = Some(name.to_string());
            }
            if t.meta.model.is_none()
                && let Some(m) = &model
            {
                t.meta.model = Some(m.to_string());
            }
        }
        // Span events that are events of their own: loop warnings, and exceptions of spans
        // that are not calls (a failed call is one event carrying its error).
        for (n, se) in events.iter().enumerate() {
            let se_name = se.name.as_deref().unwrap_or("");
            let derived_kind = match se_name {
                "maida.loop.warning" if kind != EventKind::LoopWarning => EventKind::LoopWarning,
                "exception" if !kind.is_call() && kind != EventKind::Error => EventKind::Error,
                _ => continue,
            };
            let se_attrs = Attrs::parse(se.attributes).unwrap_or(Attrs(HashMap::new()));
            let dname: Cow<str> = match derived_kind {
                EventKind::LoopWarning => se_attrs.str("pattern").unwrap_or(Cow::Borrowed("loop warning")),
                _ => se_attrs
                    .str("maida.error_type")
                    .or_else(|| se_attrs.str("exception.type"))
                    .unwrap_or(Cow::Borrowed("exception")),
            };
            let id = format!("{span_id}{DERIVED}{n}");
            t.add(NewEvent {
                id: Some(&id),
                parent: Parent::Index(idx),
                start: raw_ts(se.timestamp),
                status: if derived_kind == EventKind::Error {
                    Status::Error
                } else {
                    Status::Ok
                },
                origin,
                payload: PayloadRef::Deferred,
                ..NewEvent::new(derived_kind, &dname)
            });
        }
    }

    fn refresh(&mut self, sink: &mut Sink) {
        let Some(m) = self.meta.clone() else { return };
        let stamp = std::fs::metadata(&m).ok().map(|x| (x.len(), x.modified().ok()));
        if stamp.is_none() || stamp == self.meta_stamp {
            return;
        }
        self.meta_stamp = stamp;
        self.read_meta(&m, sink);
    }

    /// Derive run status and times from the root span and meta.json, as they stand now.
    fn settle(&mut self, sink: &mut Sink) {
        for (i, rs) in self.states.iter().enumerate() {
            let Some(t) = sink.traces.get_mut(i) else { continue };
            let root = rs.root.map(|r| {
                let e = &t.events[r as usize];
                (e.status, e.start, e.end())
            });
            let root_done = root.is_some_and(|(s, _, _)| s != Status::Pending);
            t.meta.status = match (rs.meta_status, root) {
                (Some(RunStatus::Error), _) => RunStatus::Error,
                (_, Some((status, _, _))) if root_done => {
                    if status == Status::Error {
                        RunStatus::Error
                    } else {
                        RunStatus::Ok
                    }
                }
                (_, Some(_)) => RunStatus::Running,
                // No root span yet: meta.json says what it says ("running" is provisional).
                (Some(s), None) => s,
                (None, None) if t.events.is_empty() => RunStatus::Unknown,
                // The root is written last: a run without one is still going.
                (None, None) => RunStatus::Running,
            };
            if let Some((_, start, end)) = root {
                t.meta.start = t.meta.start.or(start);
                if root_done {
                    t.meta.end = t.meta.end.or(end);
                }
            }
        }
    }
}

// ---- payloads, decoded from the span's line when shown ----

fn events_of(span: &Value) -> &[Value] {
    span.get("events")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn attrs_of(v: &Value) -> Option<&Map<String, Value>> {
    v.get("attributes").and_then(Value::as_object)
}

fn event_named<'a>(span: &'a Value, name: &str) -> Option<&'a Value> {
    events_of(span).iter().find(|e| str_field(e, "name") == Some(name))
}

fn str_field<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

/// The value a span event carries: its `key` attribute (a JSON string, parsed), else all of
/// its attributes.
fn event_value(ev: &Value, key: &str) -> Option<Value> {
    let a = attrs_of(ev)?;
    match a.get(key) {
        Some(Value::Null) => None,
        Some(v) => Some(decode_embedded(v)),
        None if a.is_empty() => None,
        None => Some(Value::Object(a.clone())),
    }
}

/// All attributes of a span event.
fn event_attrs(ev: &Value) -> Option<Value> {
    attrs_of(ev).filter(|a| !a.is_empty()).map(|a| Value::Object(a.clone()))
}

/// Error details: an `exception` span event, else `maida.error_*` attributes, else the
/// status description of an ERROR span.
fn span_error(span: &Value) -> Option<ErrorInfo> {
    if let Some(ex) = event_named(span, "exception").and_then(attrs_of) {
        return Some(error_from_attrs(ex));
    }
    if let Some(a) = attrs_of(span)
        && a.get("maida.error_type").is_some_and(|x| !x.is_null())
    {
        return Some(error_from_attrs(a));
    }
    let failed = str_field(span, "status_code").is_some_and(|c| c.eq_ignore_ascii_case("error"));
    failed.then(|| ErrorInfo {
        message: str_field(span, "status_description")
            .filter(|s| !s.is_empty())
            .unwrap_or("error")
            .to_string(),
        ..Default::default()
    })
}

fn error_from_attrs(a: &Map<String, Value>) -> ErrorInfo {
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| a.get(*k).and_then(Value::as_str))
            .map(str::to_owned)
    };
    ErrorInfo {
        kind: text(&["maida.error_type", "exception.type"]),
        message: text(&["maida.error_message", "exception.message"]).unwrap_or_else(|| "error".into()),
        stack: text(&["maida.error_stack", "exception.stacktrace"]),
        details: None,
    }
}

/// The prompt and completion of an LLM span: GenAI message events, or the older
/// `gen_ai.prompt` / `gen_ai.completion` attributes.
fn llm_io(span: &Value) -> (Option<Value>, Option<Value>) {
    let mut prompt = Vec::new();
    let mut completion = Vec::new();
    for e in events_of(span) {
        let name = str_field(e, "name").unwrap_or("");
        let Some(role) = name.strip_prefix("gen_ai.").and_then(|r| r.strip_suffix(".message")) else {
            if name == "gen_ai.choice" {
                completion.extend(event_value(e, "content").or_else(|| event_value(e, "message")));
            }
            continue;
        };
        let Some(content) = event_value(e, "content") else {
            continue;
        };
        let item = serde_json::json!({"role": role, "content": content});
        if role == "assistant" {
            completion.push(item);
        } else {
            prompt.push(item);
        }
    }
    let a = attrs_of(span);
    let attr = |k: &str| a.and_then(|a| a.get(k)).filter(|v| !v.is_null()).map(decode_embedded);
    // A single message reads best as its content alone.
    let collapse = |mut list: Vec<Value>| match list.len() {
        0 => None,
        1 => {
            let v = list.pop().unwrap_or(Value::Null);
            Some(v.get("content").cloned().unwrap_or(v))
        }
        _ => Some(Value::Array(list)),
    };
    (
        collapse(prompt)
            .or_else(|| attr("gen_ai.prompt"))
            .or_else(|| attr("gen_ai.input.messages")),
        collapse(completion)
            .or_else(|| attr("gen_ai.completion"))
            .or_else(|| attr("gen_ai.output.messages")),
    )
}

/// Span attributes for the detail view, embedded JSON strings (`maida.meta`) parsed.
fn shown_attributes(span: &Value) -> Option<Value> {
    let a = attrs_of(span)?;
    if a.is_empty() {
        return None;
    }
    Some(Value::Object(
        a.iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) if k == "maida.meta" => json_or_string(s),
                    other => other.clone(),
                };
                (k.clone(), v)
            })
            .collect(),
    ))
}

const ENVELOPE: [&str; 12] = [
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "kind",
    "start_time",
    "end_time",
    "duration_ms",
    "attributes",
    "events",
    "status_code",
    "status_description",
];

fn span_payload(span: &Value, kind: EventKind) -> Payload {
    let mut out = Payload {
        error: span_error(span),
        ..Default::default()
    };
    let mut used = vec!["exception"];
    match kind {
        EventKind::ToolCall => {
            out.input = event_named(span, "maida.tool.args").and_then(|e| event_value(e, "args"));
            out.output = event_named(span, "maida.tool.result").and_then(|e| event_value(e, "result"));
            used.extend(["maida.tool.args", "maida.tool.result"]);
        }
        EventKind::LlmCall => {
            (out.input, out.output) = llm_io(span);
        }
        EventKind::LoopWarning => {
            out.input = event_named(span, "maida.loop.warning").and_then(event_attrs);
            used.push("maida.loop.warning");
        }
        _ => {}
    }
    if let Some(a) = shown_attributes(span) {
        out.extra.push(("attributes".into(), a));
    }
    let other: Vec<Value> = events_of(span)
        .iter()
        .filter(|e| {
            let n = str_field(e, "name").unwrap_or("");
            let llm_message = kind == EventKind::LlmCall && n.starts_with("gen_ai.");
            !(used.contains(&n) || llm_message)
        })
        .cloned()
        .collect();
    if !other.is_empty() {
        out.extra.push(("events".into(), Value::Array(other)));
    }
    if let Some(k) = field(span, "kind") {
        out.extra.push(("span_kind".into(), k.clone()));
    }
    // Additive fields from other emitters are shown as they are.
    if let Some(obj) = span.as_object() {
        for (k, v) in obj {
            if !ENVELOPE.contains(&k.as_str()) {
                out.extra.push((k.clone(), v.clone()));
            }
        }
    }
    out
}

/// The payload of an event derived from the `n`th event of a span.
fn derived_payload(span: &Value, kind: EventKind, n: usize) -> Payload {
    let Some(ev) = events_of(span).get(n) else {
        return Payload::default();
    };
    match kind {
        EventKind::Error => Payload {
            error: Some(attrs_of(ev).map(error_from_attrs).unwrap_or(ErrorInfo {
                message: "exception".into(),
                ..Default::default()
            })),
            ..Default::default()
        },
        _ => Payload {
            input: event_attrs(ev),
            ..Default::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Write;

    fn fixture(name: &str) -> PathBuf {
        crate::formats::testing::fixture("maida", name)
    }

    fn load(name: &str) -> Trace {
        let mut l = Maida.load(&fixture(name)).unwrap();
        assert_eq!(l.traces.len(), 1);
        l.traces.remove(0)
    }

    fn named(t: &Trace, name: &str) -> u32 {
        (0..t.len() as u32)
            .find(|&i| t.name(i) == name)
            .unwrap_or_else(|| panic!("no event {name}"))
    }

    fn payload(t: &Trace, i: u32) -> Payload {
        super::super::payload(t, t.event(i))
    }

    #[test]
    fn children_written_first_hang_under_the_root_written_last() {
        let t = load("children-first");
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.id, "a1000000000000000000000000000001");
        assert_eq!(t.meta.name.as_deref(), Some("planner"));
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.roots.len(), 1);
        let walk: Vec<_> = t
            .walk()
            .iter()
            .map(|&(i, d)| (t.event(i).kind, t.name(i).to_string(), d))
            .collect();
        assert_eq!(
            walk,
            vec![
                (EventKind::Run, "planner".into(), 0),
                (EventKind::LlmCall, "main-model".into(), 1),
                (EventKind::ToolCall, "delegate".into(), 1),
                (EventKind::LlmCall, "sub-model".into(), 2),
                (EventKind::ToolCall, "read_notes".into(), 3),
            ],
            "sorted by start time, sub-agent nested under its delegate call"
        );
        let main = named(&t, "main-model");
        assert_eq!(t.str(t.event(main).model), "acme-large", "request model first");
        let u = t.event(main).usage.as_deref().unwrap();
        assert_eq!((u.input, u.output, u.total), (Some(100), Some(20), Some(120)));
        let c = t.counts();
        assert_eq!(
            (c.tool_calls, c.llm_calls, c.tokens),
            (2, 2, 162),
            "30 + 12 without a total"
        );
        let p = payload(&t, main);
        assert_eq!(p.input, Some(json!("plan the work")));
        assert_eq!(p.output, Some(json!("delegate it")));
        let sub = payload(&t, named(&t, "sub-model"));
        assert_eq!(sub.input.as_ref().and_then(|v| v.as_array()).map(Vec::len), Some(2));
        assert_eq!(sub.output, Some(json!({"summary": "three points"})));
        let read = payload(&t, named(&t, "read_notes"));
        assert_eq!(read.input, Some(json!({"path": "notes.md"})), "JSON-string args parsed");
        assert_eq!(read.output, Some(json!("plain text, not JSON")), "non-JSON result kept");
        let delegate = payload(&t, named(&t, "delegate"));
        let attrs = &delegate.extra.iter().find(|(k, _)| k == "attributes").unwrap().1;
        assert_eq!(attrs["maida.meta"], json!({"thread": "sub"}));
        // meta.json's other fields are shown as attributes, its counts never used.
        assert!(t.meta.attributes.iter().any(|(k, _)| k == "emitter"));
    }

    #[test]
    fn root_first_with_loop_warnings_from_a_span_and_a_span_event() {
        let t = load("loop-root-first");
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let c = t.counts();
        assert_eq!((c.events, c.tool_calls), (6, 3));
        let warnings: Vec<u32> = (0..t.len() as u32)
            .filter(|&i| t.event(i).kind == EventKind::LoopWarning)
            .collect();
        assert_eq!(warnings.len(), 2, "the LOOP_WARNING span is one event, not two");
        let root = t.roots[0];
        assert!(warnings.iter().all(|&w| t.event(w).parent == root));
        let from_event = named(&t, "TOOL_CALL:fetch");
        let p = payload(&t, from_event);
        assert_eq!(p.input.unwrap()["window_size"], json!(3));
        let from_span = named(&t, "TOOL_CALL:fetch x3");
        assert_eq!(payload(&t, from_span).input.unwrap()["repetitions"], json!(3));
        let fetch = payload(&t, named(&t, "fetch"));
        assert_eq!(fetch.output, Some(json!("timeout")), "a JSON string result is its text");
    }

    #[test]
    fn guardrail_exception_is_an_error_event_and_a_failed_tool_carries_its_error() {
        let t = load("guardrail");
        assert_eq!(t.meta.status, RunStatus::Error);
        let err = named(&t, "GuardrailExceeded");
        assert_eq!(t.event(err).kind, EventKind::Error);
        assert_eq!(t.event(err).parent, t.roots[0]);
        let e = payload(&t, err).error.unwrap();
        assert_eq!(e.message, "policy stopped the run");
        let tool = named(&t, "delete_all");
        assert_eq!(t.event(tool).status, Status::Error);
        let e = payload(&t, tool).error.unwrap();
        assert_eq!(
            (e.kind.as_deref(), e.message.as_str()),
            (Some("PolicyViolation"), "refused")
        );
        assert_eq!(t.counts().tool_calls, 1);
    }

    #[test]
    fn a_running_run_without_root_keeps_its_spans_and_ignores_meta_counts() {
        let t = load("running");
        assert_eq!(t.meta.status, RunStatus::Running);
        assert_eq!(t.roots.len(), 2, "orphans of the missing root stay roots");
        assert_eq!(t.event(named(&t, "long_job")).status, Status::Pending);
        assert_eq!(t.counts().tool_calls, 1, "meta.json claims 7");
        let s = Maida.summarize(&fixture("running")).unwrap();
        assert_eq!((s[0].status, s[0].tool_calls), (RunStatus::Running, Some(1)));
    }

    #[test]
    fn spans_without_meta_json_load_as_a_running_run() {
        let t = load("spans-only");
        assert_eq!(t.meta.status, RunStatus::Running);
        assert_eq!(t.event(t.roots[0]).kind, EventKind::Step);
        assert!(t.diagnostics.is_empty());
    }

    #[test]
    fn damaged_lines_are_diagnostics_and_the_rest_loads() {
        let t = load("damaged");
        let got: Vec<_> = t.diagnostics.iter().map(|d| (d.line, d.severity)).collect();
        assert_eq!(
            got,
            vec![
                (Some(2), Severity::Error),
                (Some(3), Severity::Error),
                (Some(5), Severity::Warning)
            ]
        );
        assert!(t.diagnostics[0].path.ends_with("spans.jsonl"));
        assert!(t.diagnostics[1].message.contains("attributes"));
        assert_eq!(t.len(), 3, "lookup, the span with bad attributes, and the root");
        assert_eq!(t.roots.len(), 1);
        assert_eq!(t.meta.status, RunStatus::Ok);
    }

    #[test]
    fn an_older_spec_version_loads_with_a_warning() {
        let t = load("old-version");
        assert_eq!(t.len(), 1);
        assert_eq!(t.diagnostics.len(), 1);
        assert_eq!(t.diagnostics[0].severity, Severity::Warning);
        assert!(t.diagnostics[0].message.contains("0.1"));
        assert!(version_supported("0.2") && version_supported("0.2.7"));
        assert!(!version_supported("0.20") && !version_supported("0.2.") && !version_supported("1.0"));
    }

    #[test]
    fn detection_claims_maida_and_nothing_else() {
        let dir = |entries: &[&str], path: &Path| Probe {
            entries: entries.iter().map(|s| s.to_string()).collect(),
            is_dir: true,
            ..Probe::from_bytes(path, Vec::new(), true)
        };
        assert_eq!(
            Maida.detect(&dir(&["meta.json", "spans.jsonl"], &fixture("guardrail"))),
            100
        );
        assert_eq!(Maida.detect(&dir(&["events.jsonl", "run.json"], Path::new("x"))), 0);
        assert!(Maida.is_run_dir(&fixture("children-first")));
        assert!(!Maida.is_run_dir(Path::new(env!("CARGO_MANIFEST_DIR"))));
        let file = |name: &str, v: Value| Probe::from_bytes(Path::new(name), serde_json::to_vec(&v).unwrap(), true);
        let span = json!({"trace_id": "t", "span_id": "s", "parent_span_id": null, "name": "x", "start_time": "2026-01-01T00:00:00Z"});
        assert_eq!(Maida.detect(&file("spans.jsonl", span)), 95);
        let meta = json!({"spec_version": "0.2", "trace_id": "t", "status": "ok"});
        assert_eq!(Maida.detect(&file("meta.json", meta)), 90);
        // AgentDbg's run.json, Assay's GenAI span lines, OTLP batches.
        let run_json = json!({"spec_version": "0.1", "run_id": "r", "trace_id": "t"});
        assert_eq!(Maida.detect(&file("meta.json", run_json)), 0);
        let assay = json!({"trace_id": "t", "span_id": "s", "startTimeUnixNano": "1", "attributes": {}});
        assert_eq!(Maida.detect(&file("x.jsonl", assay)), 0);
        assert_eq!(Maida.detect(&file("x.json", json!({"resourceSpans": []}))), 0);
    }

    fn span_line(id: &str, parent: Option<&str>, attrs: Value, end: Option<&str>) -> String {
        format!(
            "{}\n",
            json!({"trace_id": "t1", "span_id": id, "parent_span_id": parent, "name": id,
                   "start_time": "2026-01-01T00:00:00.100Z", "end_time": end, "attributes": attrs,
                   "events": [], "status_code": if end.is_some() { "OK" } else { "UNSET" }})
        )
    }

    fn write_meta(dir: &Path, status: &str) {
        let m = json!({"spec_version": "0.2.0", "trace_id": "t1", "run_name": "live", "status": status,
                       "started_at": "2026-01-01T00:00:00Z", "counts": {"tool_calls": 0}});
        // Replaced by rename, as Maida does.
        std::fs::write(dir.join("meta.json.tmp"), m.to_string()).unwrap();
        std::fs::rename(dir.join("meta.json.tmp"), dir.join("meta.json")).unwrap();
    }

    #[test]
    fn following_a_live_run_reads_children_then_the_root_and_the_replaced_meta() {
        let d = tempfile::tempdir().unwrap();
        write_meta(d.path(), "running");
        let mut f = Maida.follow(d.path()).unwrap();
        f.poll().unwrap();
        assert_eq!(f.sink.traces.len(), 1, "meta.json alone makes the run visible");
        assert_eq!(f.sink.traces[0].meta.status, RunStatus::Running);
        let spans = d.path().join("spans.jsonl");
        let tool = span_line(
            "c1",
            Some("r"),
            json!({"maida.tool_name": "grep"}),
            Some("2026-01-01T00:00:00.200Z"),
        );
        std::fs::write(&spans, &tool).unwrap();
        let p = f.poll().unwrap();
        assert_eq!(p.touched, vec![0]);
        assert_eq!(f.sink.traces[0].roots.len(), 1);
        assert_eq!(f.sink.traces[0].meta.status, RunStatus::Running);
        // The root arrives in two writes: the first half waits for its newline.
        let root = span_line("r", None, json!({}), Some("2026-01-01T00:00:01Z"));
        let (a, b) = root.split_at(30);
        let mut w = std::fs::OpenOptions::new().append(true).open(&spans).unwrap();
        w.write_all(a.as_bytes()).unwrap();
        f.poll().unwrap();
        assert!(f.has_partial());
        assert_eq!(f.sink.traces[0].len(), 1);
        w.write_all(b.as_bytes()).unwrap();
        drop(w);
        write_meta(d.path(), "ok");
        f.poll().unwrap();
        let t = &f.sink.traces[0];
        assert_eq!(t.len(), 2);
        assert_eq!(t.roots.len(), 1, "the child was adopted by the late root");
        assert_eq!(t.event(t.roots[0]).kind, EventKind::Run);
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.name.as_deref(), Some("live"));
        // Truncated: read again from the start.
        std::fs::write(&spans, &tool).unwrap();
        assert!(f.poll().unwrap().restarted);
        assert_eq!(f.sink.traces[0].len(), 1);
    }

    /// Load `bytes` as a spans file and decode every payload from its own line.
    fn load_bytes(bytes: &[u8]) -> Vec<Trace> {
        let mut reader = super::super::jsonl::JsonlReader::new(Path::new("spans.jsonl"));
        let mut parser = Parser::new(None);
        let mut sink = Sink::new(Path::new("spans.jsonl"));
        reader
            .read_stream(&mut std::io::Cursor::new(bytes), &mut parser, &mut sink)
            .unwrap();
        reader.finish(&mut parser, &mut sink);
        for t in &sink.traces {
            for e in &t.events {
                let o = e.origin;
                let raw = &bytes[o.offset as usize..o.offset as usize + o.len as usize];
                let _ = Maida.decode_payload(t, e, &[raw]);
            }
            let _ = t.walk();
        }
        sink.traces
    }

    fn arb_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let key = prop_oneof![
            Just("trace_id".to_string()),
            Just("span_id".to_string()),
            Just("parent_span_id".to_string()),
            Just("attributes".to_string()),
            Just("events".to_string()),
            Just("name".to_string()),
            Just("start_time".to_string()),
            Just("end_time".to_string()),
            Just("duration_ms".to_string()),
            Just("status_code".to_string()),
            Just("maida.tool_name".to_string()),
            Just("maida.event_type".to_string()),
            Just("gen_ai.usage.input_tokens".to_string()),
            Just("maida.tool.args".to_string()),
            Just("args".to_string()),
            Just("exception".to_string()),
            Just("maida.loop.warning".to_string()),
            "[a-z._]{0,12}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(|f| serde_json::Number::from_f64(f)
                .map(Value::Number)
                .unwrap_or(Value::Null)),
            prop_oneof![
                Just("LOOP_WARNING".to_string()),
                Just("ERROR".to_string()),
                Just("s1".to_string()),
                Just("2026-01-01T00:00:00Z".to_string()),
                "\\PC{0,16}",
            ]
            .prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::vec((key.clone(), inner), 0..8)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048)) {
            load_bytes(&bytes);
        }

        #[test]
        fn arbitrary_json_lines_never_panic(lines in proptest::collection::vec(arb_json(), 0..12)) {
            let mut bytes = Vec::new();
            for l in &lines {
                bytes.extend_from_slice(l.to_string().as_bytes());
                bytes.push(b'\n');
            }
            load_bytes(&bytes);
            for l in &lines {
                let _ = Maida.detect(&Probe::from_bytes(Path::new("spans.jsonl"), l.to_string().into_bytes(), true));
            }
        }
    }
}
