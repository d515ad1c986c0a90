//! Maida, trace spec 0.2.x: a run directory with `meta.json` (run metadata, replaced by rename
//! when the run ends) and `spans.jsonl` (OTel-style spans, one a line, usually written when
//! they end: children first, the root last — or first, or not yet at all).
//!
//! A span's type is derived from its attributes: `gen_ai.*` → LLM call, `maida.tool_name` →
//! tool call, no parent → the run, `maida.event_type` names the rest. Payloads are JSON strings
//! inside span events (`maida.tool.args`, `maida.tool.result`): parsed, falling back to the
//! string. Loaded by the shared engine like agentdbg (DESIGN §4): the skimmer reads what the
//! index needs of each span in parallel (a few attributes, the names of the span events),
//! spans are added in file order, and payloads are decoded from the span's line on disk when
//! shown.
//!
//! Tokens: the span's GenAI attributes (`gen_ai.usage.input_tokens` or `prompt_tokens`,
//! `output_tokens` or `completion_tokens`, `total_tokens`, `cache_read.input_tokens`,
//! `cache_creation.input_tokens`), counted as GenAI does: the cache inside the input, taken
//! out. The spec writes no reasoning count and no cost.

use super::engine::{self, Records};
use super::jsonl::{Follow, LineLoc, LineParser, Sink};
use super::skim::{Raw, Seen, Skim};
use super::{
    Format, LoadError, Loaded, Probe, Summary, decode_embedded, field, json_or_string, lenient_u64, read_json_file,
    stem,
};
use crate::model::*;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub struct Maida;

const SPANS: &str = "spans.jsonl";
const META: &str = "meta.json";
const META_LIMIT: u64 = 16 << 20;
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

    fn summarize(&self, path: &Path) -> Result<Option<Vec<Summary>>, LoadError> {
        let (meta, spans) = locate(path);
        // A finished run is listed from meta.json alone, as AgentDbg's from run.json: its
        // counts are provisional (`~` in `ls`) until the run is loaded. Reading the spans of
        // 2,000 runs of 200 spans took `ls` 0.9 s (issue 13: 150 ms). A running run (or one
        // without meta.json) counts from its spans: its meta.json counts are not final.
        if let Some(m) = meta.filter(|m| m.is_file()) {
            let v = read_json_file(&m, META_LIMIT)?;
            let status = RunStatus::parse(v.get("status").and_then(Value::as_str).unwrap_or(""));
            if status != RunStatus::Running && spans.is_file() {
                let start = v.get("started_at").and_then(parse_timestamp);
                let end = v.get("ended_at").and_then(parse_timestamp);
                let counts = v.get("counts");
                let count = |k: &str| counts.and_then(|c| lenient_u64(c.get(k))).map(|n| n as usize);
                return Ok(Some(vec![Summary {
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
                    tool_calls: count("tool_calls"),
                    llm_calls: count("llm_calls"),
                    errors: count("errors"),
                    tokens: None,
                    problems: None,
                    badges: Vec::new(),
                    cost: None,
                    resume: None,
                }]));
            }
        }
        Ok(None)
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

// ---- a span line, read in two halves (DESIGN §4, `engine`): the skim reads what the index
// needs (in parallel, borrowing from the line), the apply adds it in file order ----

/// A span line as serde_json reads it: the slow path, for what the skimmer leaves alone.
#[derive(Deserialize)]
struct SpanEnv<'a> {
    #[serde(borrow, default)]
    trace_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    span_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    parent_span_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    start_time: Option<Raw<'a>>,
    #[serde(borrow, default)]
    end_time: Option<Raw<'a>>,
    #[serde(borrow, default)]
    duration_ms: Option<Raw<'a>>,
    #[serde(borrow, default)]
    attributes: Option<Raw<'a>>,
    #[serde(borrow, default)]
    events: Option<Raw<'a>>,
    #[serde(borrow, default)]
    status_code: Option<Cow<'a, str>>,
}

/// The fields of a span: a record with none of them (absent or null) is no span.
const SPAN_FIELDS: [&str; 10] = [
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "start_time",
    "end_time",
    "duration_ms",
    "attributes",
    "events",
    "status_code",
];

/// Whether a line has none of [`SPAN_FIELDS`] (read only for a line whose skim found no ids
/// and no name: rare).
fn no_span_fields(line: &[u8]) -> bool {
    match serde_json::from_slice::<Map<String, Value>>(line) {
        Ok(o) => SPAN_FIELDS.iter().all(|k| o.get(*k).is_none_or(Value::is_null)),
        Err(_) => false,
    }
}

#[derive(Deserialize)]
struct SpanEvent<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Raw<'a>>,
    #[serde(borrow, default)]
    attributes: Option<Raw<'a>>,
}

/// The span attributes the index reads, in this order in [`Picked::vals`].
const ATTR_KEYS: [&str; 14] = [
    "maida.event_type",
    "maida.tool_name",
    "maida.run_name",
    "maida.error_type",
    "maida.status",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "gen_ai.usage.total_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_creation.input_tokens",
];
const EVENT_TYPE: usize = 0;
const TOOL_NAME: usize = 1;
const RUN_NAME: usize = 2;
const ERROR_TYPE: usize = 3;
const STATUS: usize = 4;
const REQUEST_MODEL: usize = 5;
const RESPONSE_MODEL: usize = 6;
const INPUT_TOKENS: usize = 7;
const PROMPT_TOKENS: usize = 8;
const OUTPUT_TOKENS: usize = 9;
const COMPLETION_TOKENS: usize = 10;
const TOTAL_TOKENS: usize = 11;
const CACHE_READ_TOKENS: usize = 12;
const CACHE_WRITE_TOKENS: usize = 13;

/// The attributes of a span event that names an event of its own (loop warning, exception).
const EVENT_ATTR_KEYS: [&str; 3] = ["pattern", "maida.error_type", "exception.type"];
const PATTERN: usize = 0;
const EV_ERROR_TYPE: usize = 1;
const EXCEPTION_TYPE: usize = 2;

/// The values of a few keys of an attribute map, raw (null as absent); a key given twice
/// counts as a map reads it: the last one.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Picked<'a, const N: usize> {
    vals: [Option<Raw<'a>>; N],
    /// Some key starts with `gen_ai.` (a GenAI span).
    gen_ai: bool,
}

impl<'a, const N: usize> Picked<'a, N> {
    fn empty() -> Self {
        Picked {
            vals: [None; N],
            gen_ai: false,
        }
    }

    /// A string value, as `Option<Cow<str>>` reads it, empty as absent.
    fn str(&self, i: usize) -> Option<Cow<'a, str>> {
        raw_str(self.vals[i]?).filter(|s| !s.is_empty())
    }
}

/// A span event that makes an event of its own: its index among the span's events.
#[derive(Clone, Debug, PartialEq)]
struct Marked<'a> {
    n: u32,
    /// `maida.loop.warning`, else `exception`.
    loop_warning: bool,
    timestamp: Option<Raw<'a>>,
    /// Empty when the event's attributes are not a map.
    attrs: Picked<'a, 3>,
}

/// What the index reads of a span line, by either path (the skimmer's oracle is serde's).
#[derive(Debug, PartialEq)]
struct RawSpan<'a> {
    trace_id: Option<Cow<'a, str>>,
    span_id: Option<Cow<'a, str>>,
    parent_span_id: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    start_time: Option<Raw<'a>>,
    end_time: Option<Raw<'a>>,
    duration_ms: Option<Raw<'a>>,
    status_code: Option<Cow<'a, str>>,
    /// Err: why the attributes cannot be read (the span still loads, without them).
    attrs: Result<Picked<'a, 14>, String>,
    events: Result<Vec<Marked<'a>>, String>,
}

impl<'a> RawSpan<'a> {
    fn blank() -> Self {
        RawSpan {
            trace_id: None,
            span_id: None,
            parent_span_id: None,
            name: None,
            start_time: None,
            end_time: None,
            duration_ms: None,
            status_code: None,
            attrs: Ok(Picked::empty()),
            events: Ok(Vec::new()),
        }
    }

    /// The slow path: serde_json reads the line (None: it is not a span; apply says why).
    fn by_serde(line: &'a [u8]) -> Option<RawSpan<'a>> {
        let env = serde_json::from_slice::<SpanEnv>(line).ok()?;
        Some(RawSpan::of_env(env))
    }

    fn of_env(env: SpanEnv<'a>) -> RawSpan<'a> {
        let why = |what: &str, e: serde_json::Error| format!("{what}: {}", super::jsonl::json_error(&e));
        RawSpan {
            attrs: match env.attributes {
                Some(r) => pick_serde(r.0, &ATTR_KEYS).map_err(|e| why("attributes", e)),
                None => Ok(Picked::empty()),
            },
            events: match env.events {
                Some(r) => serde_json::from_str::<Vec<SpanEvent>>(r.0)
                    .map(|evs| mark_events(&evs))
                    .map_err(|e| why("events", e)),
                None => Ok(Vec::new()),
            },
            trace_id: env.trace_id,
            span_id: env.span_id,
            parent_span_id: env.parent_span_id,
            name: env.name,
            start_time: env.start_time,
            end_time: env.end_time,
            duration_ms: env.duration_ms,
            status_code: env.status_code,
        }
    }
}

fn mark_events<'a>(evs: &[SpanEvent<'a>]) -> Vec<Marked<'a>> {
    let mut out = Vec::new();
    for (n, e) in evs.iter().enumerate() {
        let loop_warning = match e.name.as_deref() {
            Some("maida.loop.warning") => true,
            Some("exception") => false,
            _ => continue,
        };
        let attrs = e
            .attributes
            .and_then(|r| pick_serde(r.0, &EVENT_ATTR_KEYS).ok())
            .unwrap_or_else(Picked::empty);
        out.push(Marked {
            n: n as u32,
            loop_warning,
            timestamp: e.timestamp,
            attrs,
        });
    }
    out
}

/// `keys` of the attribute map `raw`, by serde_json (as a map of raw values).
fn pick_serde<'a, const N: usize>(raw: &'a str, keys: &[&str; N]) -> Result<Picked<'a, N>, serde_json::Error> {
    use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Seed<'k, const N: usize>(&'k [&'k str; N]);
    impl<'de, const N: usize> DeserializeSeed<'de> for Seed<'_, N> {
        type Value = Picked<'de, N>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de, const N: usize> Visitor<'de> for Seed<'_, N> {
        type Value = Picked<'de, N>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
            let mut p = Picked::empty();
            while let Some(key) = m.next_key::<String>()? {
                p.gen_ai |= key.starts_with("gen_ai.");
                match self.0.iter().position(|k| *k == key) {
                    Some(i) => p.vals[i] = m.next_value::<Option<Raw<'de>>>()?,
                    None => {
                        m.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(p)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw);
    let p = Seed(keys).deserialize(&mut de)?;
    de.end()?;
    Ok(p)
}

/// The fast path: the skimmer reads the line into `r`; None when it leaves the line to
/// serde_json (see `skim`'s contract), and then what `r` holds is partial.
fn skim_span<'a>(line: &'a [u8], r: &mut RawSpan<'a>) -> Option<()> {
    // serde_json checks the UTF-8 of the raw attributes and events, which the skimmer
    // mostly skips: checked here once, for the whole line (stricter is allowed).
    std::str::from_utf8(line).ok()?;
    let mut k = Skim::new(line);
    let mut seen = Seen::default();
    k.object(|k, key| {
        match key {
            b"trace_id" => (seen.first(0)?, r.trace_id = k.opt_cow()?),
            b"span_id" => (seen.first(1)?, r.span_id = k.opt_cow()?),
            b"parent_span_id" => (seen.first(2)?, r.parent_span_id = k.opt_cow()?),
            b"name" => (seen.first(3)?, r.name = k.opt_cow()?),
            b"start_time" => (seen.first(4)?, r.start_time = k.raw()?),
            b"end_time" => (seen.first(5)?, r.end_time = k.raw()?),
            b"duration_ms" => (seen.first(6)?, r.duration_ms = k.raw()?),
            b"attributes" => (seen.first(7)?, r.attrs = Ok(pick_skim(k, &ATTR_KEYS)?)),
            b"events" => (seen.first(8)?, skim_events(k, r)?),
            b"status_code" => (seen.first(9)?, r.status_code = k.opt_cow()?),
            _ => ((), k.skip()?),
        };
        Some(())
    })?;
    k.at_end().then_some(())
}

/// `pick_serde` by the skimmer (null: no attributes; a key given twice: left to serde).
fn pick_skim<'a, const N: usize>(k: &mut Skim<'a>, keys: &[&str; N]) -> Option<Picked<'a, N>> {
    let mut p = Picked::empty();
    if k.is_null_next() {
        k.skip()?;
        return Some(p);
    }
    let mut seen = Seen::default();
    k.object(|k, key| {
        p.gen_ai |= key.starts_with(b"gen_ai.");
        match keys.iter().position(|w| w.as_bytes() == key) {
            Some(i) => {
                seen.first(i as u32)?;
                p.vals[i] = k.raw()?;
            }
            None => k.skip()?,
        }
        Some(())
    })?;
    Some(p)
}

/// The span events: each one's name, and the attributes of those that make events of their
/// own. Every event's attributes are read (the name may come after them).
fn skim_events<'a>(k: &mut Skim<'a>, r: &mut RawSpan<'a>) -> Option<()> {
    if k.is_null_next() {
        return k.skip();
    }
    let out = r.events.as_mut().ok()?;
    k.array(|k, n| {
        let (mut name, mut timestamp, mut attrs) = (None, None, Picked::empty());
        let mut seen = Seen::default();
        k.object(|k, key| {
            match key {
                b"name" => (seen.first(0)?, name = k.opt_str()?),
                b"timestamp" => (seen.first(1)?, timestamp = k.raw()?),
                b"attributes" => (seen.first(2)?, attrs = pick_skim(k, &EVENT_ATTR_KEYS)?),
                _ => ((), k.skip()?),
            };
            Some(())
        })?;
        let loop_warning = match name {
            Some("maida.loop.warning") => true,
            Some("exception") => false,
            _ => return Some(()),
        };
        out.push(Marked {
            n: n as u32,
            loop_warning,
            timestamp,
            attrs,
        });
        Some(())
    })
}

/// A raw JSON string's text (what `Cow<str>` reads); None for any other value.
fn raw_str(r: Raw<'_>) -> Option<Cow<'_, str>> {
    let s = r.0;
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(s).ok().map(Cow::Owned)
}

/// A count as `lenient_u64` reads the JSON value.
fn raw_u64(r: Option<Raw>) -> Option<u64> {
    let s = r?.0;
    if !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_digit())
        && let Ok(n) = s.parse::<u64>()
    {
        return Some(n);
    }
    let v: Value = serde_json::from_str(s).ok()?;
    super::lenient_u64(Some(&v))
}

/// A time as `parse_timestamp` reads the JSON value.
fn raw_ts(r: Option<Raw>) -> Option<i64> {
    let s = r?.0;
    if let Some(inner) = s.strip_prefix('"').and_then(|x| x.strip_suffix('"'))
        && !inner.contains('\\')
    {
        return parse_timestamp_str(inner);
    }
    serde_json::from_str::<Value>(s).ok().as_ref().and_then(parse_timestamp)
}

/// What a span is, from its attributes (the spec has no type field).
fn span_kind(attrs: &Picked<14>, is_root: bool) -> EventKind {
    match attrs.str(EVENT_TYPE).as_deref() {
        Some("LOOP_WARNING") => return EventKind::LoopWarning,
        Some("ERROR") => return EventKind::Error,
        Some("STATE_UPDATE") => return EventKind::State,
        Some("TOOL_CALL") => return EventKind::ToolCall,
        Some("LLM_CALL") => return EventKind::LlmCall,
        _ => {}
    }
    if is_root {
        EventKind::Run
    } else if attrs.vals[TOOL_NAME].is_some() {
        EventKind::ToolCall
    } else if attrs.gen_ai {
        EventKind::LlmCall
    } else {
        EventKind::Step
    }
}

/// One span line, ready to add: everything but what needs the trace (ids resolved, the
/// root) is worked out in the parallel half.
#[derive(Debug, PartialEq)]
pub(crate) struct SpanRec<'a> {
    trace_id: Cow<'a, str>,
    span_id: Cow<'a, str>,
    /// Non-empty.
    parent: Option<Cow<'a, str>>,
    kind: EventKind,
    name: Cow<'a, str>,
    model: Option<Cow<'a, str>>,
    start: Option<i64>,
    duration: Option<i64>,
    status: Status,
    usage: Option<Usage>,
    /// Events of their own made from span events (loop warnings, exceptions).
    derived: Vec<Derived<'a>>,
    /// Diagnostics: unreadable attributes, unreadable events.
    problems: Vec<String>,
}

#[derive(Debug, PartialEq)]
struct Derived<'a> {
    /// The span event's index (the event's id is `span_id#n`, its payload that span event).
    n: u32,
    kind: EventKind,
    name: Cow<'a, str>,
    start: Option<i64>,
}

impl<'a> SpanRec<'a> {
    fn of(raw: RawSpan<'a>) -> SpanRec<'a> {
        let mut problems = Vec::new();
        let attrs = raw.attrs.unwrap_or_else(|e| {
            problems.push(e);
            Picked::empty()
        });
        let events = raw.events.unwrap_or_else(|e| {
            problems.push(e);
            Vec::new()
        });
        let parent = raw.parent_span_id.filter(|p| !p.is_empty());
        let kind = span_kind(&attrs, parent.is_none());
        let start = raw_ts(raw.start_time);
        let end = raw_ts(raw.end_time);
        let duration = match (start, end) {
            (Some(s), Some(e)) if e >= s => e.checked_sub(s),
            _ => raw_u64(raw.duration_ms).map(|ms| (ms.min(i64::MAX as u64 / 1_000_000) as i64) * 1_000_000),
        };
        let failed = raw
            .status_code
            .as_deref()
            .is_some_and(|c| c.eq_ignore_ascii_case("error"))
            || attrs.str(STATUS).is_some_and(|s| s.eq_ignore_ascii_case("error"))
            || attrs.vals[ERROR_TYPE].is_some();
        let open = end.is_none() && raw.duration_ms.is_none();
        let status = if failed {
            Status::Error
        } else if open {
            // Not ended yet (a run still being written).
            Status::Pending
        } else {
            Status::Ok
        };
        let span_name = raw.name.unwrap_or(Cow::Borrowed(""));
        let model = attrs
            .str(REQUEST_MODEL)
            .or_else(|| attrs.str(RESPONSE_MODEL))
            .or_else(|| (kind == EventKind::LlmCall && !span_name.is_empty()).then(|| span_name.clone()));
        let name = match kind {
            EventKind::ToolCall => attrs.str(TOOL_NAME),
            EventKind::LlmCall if span_name.is_empty() => Some(model.clone().unwrap_or(Cow::Borrowed("llm"))),
            EventKind::Run => attrs.str(RUN_NAME),
            EventKind::Error => attrs.str(ERROR_TYPE),
            // The first loop warning's pattern (its attributes unreadable: none).
            EventKind::LoopWarning => events
                .iter()
                .find(|m| m.loop_warning)
                .and_then(|m| m.attrs.str(PATTERN)),
            _ => None,
        }
        .unwrap_or(span_name);
        // GenAI's way of counting: the cache inside the input.
        let usage = (kind == EventKind::LlmCall).then(|| {
            super::usage_input_with_cache(Usage {
                input: raw_u64(attrs.vals[INPUT_TOKENS]).or_else(|| raw_u64(attrs.vals[PROMPT_TOKENS])),
                output: raw_u64(attrs.vals[OUTPUT_TOKENS]).or_else(|| raw_u64(attrs.vals[COMPLETION_TOKENS])),
                total: raw_u64(attrs.vals[TOTAL_TOKENS]),
                cache_read: raw_u64(attrs.vals[CACHE_READ_TOKENS]),
                cache_write: raw_u64(attrs.vals[CACHE_WRITE_TOKENS]),
                ..Default::default()
            })
        });
        // Span events that are events of their own: loop warnings, and exceptions of spans
        // that are not calls (a failed call is one event carrying its error).
        let derived = events
            .iter()
            .filter_map(|m| {
                let (kind, name) = if m.loop_warning {
                    if kind == EventKind::LoopWarning {
                        return None;
                    }
                    let name = m.attrs.str(PATTERN).unwrap_or(Cow::Borrowed("loop warning"));
                    (EventKind::LoopWarning, name)
                } else {
                    if kind.is_call() || kind == EventKind::Error {
                        return None;
                    }
                    let name = m
                        .attrs
                        .str(EV_ERROR_TYPE)
                        .or_else(|| m.attrs.str(EXCEPTION_TYPE))
                        .unwrap_or(Cow::Borrowed("exception"));
                    (EventKind::Error, name)
                };
                Some(Derived {
                    n: m.n,
                    kind,
                    name,
                    start: raw_ts(m.timestamp),
                })
            })
            .collect();
        SpanRec {
            trace_id: raw.trace_id.unwrap_or(Cow::Borrowed("")),
            span_id: raw.span_id.unwrap_or(Cow::Borrowed("")),
            parent,
            kind,
            name,
            model,
            start,
            duration,
            status,
            usage,
            derived,
            problems,
        }
    }
}

/// The engine's skim: the skimmer reads nearly every line; what it is unsure of, serde_json
/// reads (the same record, or None and apply reports why).
fn skim_into<'a>(line: &'a [u8], slot: &mut Option<SpanRec<'a>>) {
    let mut raw = RawSpan::blank();
    let raw = match skim_span(line, &mut raw) {
        Some(()) => Some(raw),
        None => RawSpan::by_serde(line),
    };
    *slot = raw.map(SpanRec::of);
}

/// The Maida line parser: one trace per `trace_id` (a run directory normally holds one).
pub struct Parser {
    traces: rustc_hash::FxHashMap<String, usize>,
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
            traces: Default::default(),
            states: Vec::new(),
            meta: meta.map(Path::to_path_buf),
            meta_stamp: None,
            version_warned: false,
            spans_file: 0,
        }
    }

    /// A record that is no span: counted by its `type` (skipped quietly), and shown in the
    /// current trace when it carries text.
    fn unknown(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let v = serde_json::from_slice::<Value>(line).ok();
        let ty = v
            .as_ref()
            .and_then(|v| v.get("type"))
            .and_then(Value::as_str)
            .map(str::to_string);
        sink.skip(ty.as_deref().unwrap_or("(record with no span fields)"));
        let (Some(v), Some(ti)) = (v, sink.current) else { return };
        if super::drift_text(&v).is_none() {
            return;
        }
        let file = self.states.get(ti).map_or(0, |rs| rs.file);
        let root = self.states.get(ti).and_then(|rs| rs.root);
        sink.traces[ti].add(NewEvent {
            parent: root.map_or(Parent::None, Parent::Index),
            status: Status::Ok,
            origin: loc.origin(file),
            payload: PayloadRef::inline(super::drift_payload(&v, &[])),
            ..NewEvent::new(EventKind::Other, ty.as_deref().unwrap_or("record"))
        });
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

impl Records for Parser {
    type Rec<'a> = SpanRec<'a>;

    fn skim<'a>(line: &'a [u8], slot: &mut Option<SpanRec<'a>>) {
        skim_into(line, slot);
    }

    fn apply(&mut self, rec: Option<&SpanRec<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        Parser::apply(self, rec, line, loc, sink);
    }

    fn prefetch(&self, ahead: &SpanRec<'_>, sink: &Sink) {
        if let Some(t) = sink.current.and_then(|i| sink.traces.get(i)) {
            // Its own slot (to add it) and its parent's (to find it).
            t.prefetch_id(&ahead.span_id);
            if let Some(p) = &ahead.parent {
                t.prefetch_id(p);
            }
        }
    }
}

impl Parser {
    /// The in-order half: add the events of one span (read again slowly, with a diagnostic,
    /// when the skim found no span).
    fn apply(&mut self, rec: Option<&SpanRec<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let slow;
        let span = match rec {
            Some(s) => s,
            None => {
                let Some(env) = sink.parse::<SpanEnv>(line, loc) else {
                    return;
                };
                slow = SpanRec::of(RawSpan::of_env(env));
                &slow
            }
        };
        if span.trace_id.is_empty() && span.span_id.is_empty() && span.name.is_empty() && no_span_fields(line) {
            // No span at all: a record of a kind a newer Maida writes (drift, formats/mod.rs).
            self.unknown(line, loc, sink);
            return;
        }
        let ti = self.trace_for(&span.trace_id, sink);
        for p in &span.problems {
            sink.error(loc.line, p.clone());
        }
        let span_id = span.span_id.as_ref();
        if span_id.is_empty() {
            sink.warning(Some(loc.line), "span without span_id: its children cannot find it");
        }
        let kind = span.kind;
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
            parent: span.parent.as_deref().map_or(Parent::None, Parent::Id),
            start: span.start,
            duration: span.duration,
            status: span.status,
            usage: span.usage,
            model: span.model.as_deref(),
            origin,
            payload: PayloadRef::Deferred,
            ..NewEvent::new(kind, &span.name)
        });
        if kind == EventKind::Run && rs.root.is_none() {
            rs.root = Some(idx);
            if t.meta.name.is_none() && !span.name.is_empty() {
                t.meta.name = Some(span.name.to_string());
            }
            if t.meta.model.is_none()
                && let Some(m) = &span.model
            {
                t.meta.model = Some(m.to_string());
            }
        }
        for d in &span.derived {
            let id = format!("{span_id}{DERIVED}{}", d.n);
            t.add(NewEvent {
                id: Some(&id),
                parent: Parent::Index(idx),
                start: d.start,
                status: if d.kind == EventKind::Error {
                    Status::Error
                } else {
                    Status::Ok
                },
                origin,
                payload: PayloadRef::Deferred,
                ..NewEvent::new(d.kind, &d.name)
            });
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
                t.meta.start = t.meta.start.or(start.into());
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

    /// A record that is no span, of a kind a newer Maida may write, sometimes with text.
    fn unknown_record(rng: &mut crate::formats::testing::Rng, _near: &Value) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("type".into(), Value::String(rng.type_name()));
        if let Some(t) = rng.maybe_text() {
            m.insert("message".into(), Value::String(t));
        }
        m.insert(rng.type_name(), rng.value());
        Value::Object(m)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on our Maida runs and the corpus'.
        #[test]
        fn drift_is_skipped_quietly(seed in proptest::prelude::any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "maida",
                &[
                    "sample-traces/runs/maida-research-ok",
                    "sample-traces/runs/maida-triage-running",
                    "tests/fixtures/maida/children-first",
                    "tests/fixtures/maida/loop-root-first",
                    "tests/fixtures/maida/guardrail",
                ],
            );
            crate::formats::testing::drift_check(&sources, seed, &|f, rng| {
                if f.file_name().is_some_and(|x| x == "spans.jsonl") {
                    crate::formats::testing::drift_jsonl(f, rng, &unknown_record)
                } else {
                    0
                }
            });
        }
    }

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
        // GenAI's input_tokens 100 include 60 read from and 15 written to the cache.
        let main = t.events.iter().find(|e| t.str(e.name) == "main-model").unwrap();
        let u = main.usage.get().unwrap();
        assert_eq!(
            (u.input, u.cache_read, u.cache_write, u.output, u.total),
            (Some(25), Some(60), Some(15), Some(20), Some(120))
        );
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
        let u = t.event(main).usage.get().unwrap();
        assert_eq!(
            (u.input, u.output, u.total),
            (Some(25), Some(20), Some(120)),
            "100 less the cache"
        );
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
        let s = crate::formats::testing::summaries(&Maida, &fixture("running")).unwrap();
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

    // ---- the fast path against serde_json ----

    /// The skimmer's contract: what it reads, serde_json reads the same. Ok(true): skimmed.
    fn skim_agrees(line: &[u8]) -> Result<bool, String> {
        let text = || String::from_utf8_lossy(line).into_owned();
        let mut fast = RawSpan::blank();
        if skim_span(line, &mut fast).is_none() {
            return Ok(false);
        }
        let slow = RawSpan::by_serde(line).ok_or_else(|| format!("skimmed a line serde rejects: {}", text()))?;
        if fast != slow {
            return Err(format!("skim {fast:?} != serde {slow:?}: {}", text()));
        }
        Ok(true)
    }

    fn json_scalar() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (0u32..100_000).prop_map(Value::from),
            any::<f64>().prop_map(|f| serde_json::Number::from_f64(f)
                .map(Value::Number)
                .unwrap_or(Value::Null)),
            prop::sample::select(vec![
                "",
                "error",
                "ERROR",
                "ok",
                "OK",
                "LOOP_WARNING",
                "ERROR",
                "STATE_UPDATE",
                "TOOL_CALL",
                "LLM_CALL",
                "s1",
                "s2",
                "root",
                "gpt-4o",
                " 12 ",
                "7",
                "2026-01-01T00:00:00Z",
                "2026-01-01T00:00:01.250000Z",
                "2026-01-01 00:00:02",
                "1767225600000",
                "a\"b",
                "tab\there",
                "ünï ✓",
                "maida.loop.warning",
                "exception",
            ])
            .prop_map(Value::from),
            "\\PC{0,12}".prop_map(Value::String),
        ]
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        json_scalar().prop_recursive(2, 12, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-z._]{1,8}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn object_of(keys: Vec<&'static str>) -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let key = prop_oneof![4 => prop::sample::select(keys).prop_map(str::to_string), 1 => "[a-z_.]{1,10}"];
        prop::collection::vec((key, json_value()), 0..7).prop_map(|kv| Value::Object(kv.into_iter().collect()))
    }

    /// Span-shaped lines: the fields the index reads, with values of every type, attribute
    /// maps with the keys it reads, span events named as it looks for.
    fn span_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let mut attr_keys: Vec<&'static str> = ATTR_KEYS.to_vec();
        attr_keys.extend(["gen_ai.system", "gen_ai.", "maida.meta"]);
        let attributes = prop_oneof![6 => object_of(attr_keys), 1 => json_scalar()];
        let event = prop_oneof![
            6 => (
                prop::option::of(prop_oneof![
                    3 => prop::sample::select(vec!["maida.loop.warning", "exception", "maida.tool.args", "gen_ai.user.message"])
                        .prop_map(Value::from),
                    1 => json_scalar(),
                ]),
                prop::option::of(json_scalar()),
                prop::option::of(prop_oneof![4 => object_of(EVENT_ATTR_KEYS.to_vec()), 1 => json_scalar()]),
            )
                .prop_map(|(name, ts, attrs)| {
                    let mut m = Map::new();
                    name.map(|v| m.insert("name".into(), v));
                    ts.map(|v| m.insert("timestamp".into(), v));
                    attrs.map(|v| m.insert("attributes".into(), v));
                    Value::Object(m)
                }),
            1 => json_scalar(),
        ];
        let events = prop_oneof![6 => prop::collection::vec(event, 0..4).prop_map(Value::Array), 1 => json_scalar()];
        let string = || {
            prop_oneof![
                6 => prop::sample::select(vec!["", "t1", "s1", "s2", "s3", "root", "x"]).prop_map(Value::from),
                1 => json_scalar(),
            ]
        };
        (
            prop::collection::vec(prop::option::of(string()), 5),
            prop::collection::vec(prop::option::of(json_scalar()), 3),
            prop::option::of(attributes),
            prop::option::of(events),
            prop::collection::vec(("[a-z_]{1,8}", json_value()), 0..3),
        )
            .prop_map(|(strings, raws, attributes, events, extra)| {
                let mut m = Map::new();
                for (k, v) in extra {
                    m.insert(k, v);
                }
                for (k, v) in ["trace_id", "span_id", "parent_span_id", "name", "status_code"]
                    .iter()
                    .zip(strings)
                {
                    v.map(|v| m.insert(k.to_string(), v));
                }
                for (k, v) in ["start_time", "end_time", "duration_ms"].iter().zip(raws) {
                    v.map(|v| m.insert(k.to_string(), v));
                }
                attributes.map(|v| m.insert("attributes".into(), v));
                events.map(|v| m.insert("events".into(), v));
                Value::Object(m)
            })
    }

    /// Span lines as JSON text: compact or spaced like Maida, sometimes with a byte or two
    /// changed, a key repeated or a string escaped.
    fn raw_line() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let edit = (any::<prop::sample::Index>(), any::<u8>(), 0..5u8);
        let edits = prop_oneof![3 => Just(Vec::new()), 1 => prop::collection::vec(edit, 1..3)];
        (span_value(), any::<bool>(), edits).prop_map(|(v, spaced, edits)| {
            let mut b = if spaced {
                spaced_json(&v).into_bytes()
            } else {
                serde_json::to_vec(&v).unwrap()
            };
            for (at, byte, op) in edits {
                let i = at.index(b.len() + 1);
                match op {
                    0 if i < b.len() => b[i] = byte,
                    1 if i < b.len() => {
                        b.remove(i);
                    }
                    2 => {
                        // Repeat the object's first field.
                        // (After an earlier edit a comma may come first: nothing to repeat.)
                        if let Some(end) = b.iter().skip(1).position(|&c| c == b',').map(|p| p + 1) {
                            let field = b[1..end].to_vec();
                            b.splice(1..1, field.into_iter().chain([b',']));
                        }
                    }
                    3 => {
                        // Escape an underscore (same text, escaped).
                        if let Some(p) = b[i.min(b.len())..].iter().position(|&c| c == b'_') {
                            let p = p + i.min(b.len());
                            b.splice(p..p + 1, b"\\u005f".iter().copied());
                        }
                    }
                    _ => b.insert(i, byte),
                }
            }
            b
        })
    }

    /// JSON as Maida writes it (Python's `json.dumps`: `", "` and `": "`).
    fn spaced_json(v: &Value) -> String {
        match v {
            Value::Array(a) => format!("[{}]", a.iter().map(spaced_json).collect::<Vec<_>>().join(", ")),
            Value::Object(o) => format!(
                "{{{}}}",
                o.iter()
                    .map(|(k, v)| format!("{}: {}", Value::from(k.as_str()), spaced_json(v)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            other => other.to_string(),
        }
    }

    /// What a span line should load as, read the straightforward way (serde_json::Value):
    /// (kind, name, id, parent id, start, duration, status, usage, model) of the span and of
    /// the events made from its span events, or None when the line is no span at all.
    type Expect = (
        EventKind,
        String,
        String,
        Option<String>,
        Option<i64>,
        Option<i64>,
        Status,
        Option<Usage>,
        String,
    );

    /// A span event: (name, timestamp, attributes).
    type OracleEvent<'a> = (String, Option<&'a Value>, Option<&'a Map<String, Value>>);

    fn oracle(v: &Value) -> Option<Vec<Expect>> {
        let o = v.as_object()?;
        let text = |k: &str| match o.get(k) {
            None | Some(Value::Null) => Some(None),
            Some(Value::String(s)) => Some(Some(s.as_str())),
            Some(_) => None,
        };
        let (trace_id, span_id, parent, name, code) = (
            text("trace_id")?,
            text("span_id")?,
            text("parent_span_id")?,
            text("name")?,
            text("status_code")?,
        );
        let _ = (trace_id, span_id, name);
        if SPAN_FIELDS.iter().all(|k| o.get(*k).is_none_or(Value::is_null)) {
            return None; // no span: a record of another kind (drift), skipped
        }
        let empty = Map::new();
        let attrs = o.get("attributes").and_then(Value::as_object).unwrap_or(&empty);
        let s = |a: &Map<String, Value>, k: &str| {
            a.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let has = |k: &str| attrs.get(k).is_some_and(|v| !v.is_null());
        // The span events, if they are a list of event records (name a string or null).
        let events: Vec<OracleEvent> = match o.get("events") {
            Some(Value::Array(list))
                if list.iter().all(|e| {
                    e.as_object()
                        .is_some_and(|e| e.get("name").is_none_or(|n| n.is_null() || n.is_string()))
                }) =>
            {
                list.iter()
                    .map(|e| {
                        (
                            e.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
                            e.get("timestamp").filter(|t| !t.is_null()),
                            e.get("attributes").and_then(Value::as_object),
                        )
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        let parent = parent.filter(|p| !p.is_empty());
        let kind = match s(attrs, "maida.event_type").as_deref() {
            Some("LOOP_WARNING") => EventKind::LoopWarning,
            Some("ERROR") => EventKind::Error,
            Some("STATE_UPDATE") => EventKind::State,
            Some("TOOL_CALL") => EventKind::ToolCall,
            Some("LLM_CALL") => EventKind::LlmCall,
            _ if parent.is_none() => EventKind::Run,
            _ if has("maida.tool_name") => EventKind::ToolCall,
            _ if attrs.keys().any(|k| k.starts_with("gen_ai.")) => EventKind::LlmCall,
            _ => EventKind::Step,
        };
        let ts = |v: Option<&Value>| v.and_then(parse_timestamp);
        let start = ts(o.get("start_time"));
        let end = ts(o.get("end_time"));
        let duration_ms = o.get("duration_ms").filter(|d| !d.is_null());
        let duration = match (start, end) {
            (Some(s), Some(e)) if e >= s => e.checked_sub(s),
            _ => crate::formats::lenient_u64(duration_ms)
                .map(|ms| (ms.min(i64::MAX as u64 / 1_000_000) as i64) * 1_000_000),
        };
        let failed = code.is_some_and(|c| c.eq_ignore_ascii_case("error"))
            || s(attrs, "maida.status").is_some_and(|x| x.eq_ignore_ascii_case("error"))
            || has("maida.error_type");
        let status = if failed {
            Status::Error
        } else if end.is_none() && duration_ms.is_none() {
            Status::Pending
        } else {
            Status::Ok
        };
        let span_name = name.unwrap_or("").to_string();
        let model = s(attrs, "gen_ai.request.model")
            .or_else(|| s(attrs, "gen_ai.response.model"))
            .or_else(|| (kind == EventKind::LlmCall && !span_name.is_empty()).then(|| span_name.clone()));
        let first_pattern = events
            .iter()
            .find(|e| e.0 == "maida.loop.warning")
            .and_then(|e| e.2)
            .and_then(|a| s(a, "pattern"));
        let name = match kind {
            EventKind::ToolCall => s(attrs, "maida.tool_name"),
            EventKind::LlmCall if span_name.is_empty() => Some(model.clone().unwrap_or("llm".into())),
            EventKind::Run => s(attrs, "maida.run_name"),
            EventKind::Error => s(attrs, "maida.error_type"),
            EventKind::LoopWarning => first_pattern,
            _ => None,
        }
        .unwrap_or(span_name);
        let n = |k: &str| crate::formats::lenient_u64(attrs.get(k));
        let usage = (kind == EventKind::LlmCall)
            .then(|| {
                crate::formats::usage_input_with_cache(Usage {
                    input: n("gen_ai.usage.input_tokens").or(n("gen_ai.usage.prompt_tokens")),
                    output: n("gen_ai.usage.output_tokens").or(n("gen_ai.usage.completion_tokens")),
                    total: n("gen_ai.usage.total_tokens"),
                    cache_read: n("gen_ai.usage.cache_read.input_tokens"),
                    cache_write: n("gen_ai.usage.cache_creation.input_tokens"),
                    ..Default::default()
                })
            })
            .filter(|u| !u.is_empty());
        let id = span_id.unwrap_or("").to_string();
        let mut out = vec![(
            kind,
            name,
            id.clone(),
            parent.map(str::to_owned),
            start,
            duration,
            status,
            usage,
            model.unwrap_or_default(),
        )];
        for (i, (ename, ets, eattrs)) in events.iter().enumerate() {
            let a = eattrs.unwrap_or(&empty);
            let (k, nm) = match ename.as_str() {
                "maida.loop.warning" if kind != EventKind::LoopWarning => {
                    (EventKind::LoopWarning, s(a, "pattern").unwrap_or("loop warning".into()))
                }
                "exception" if !kind.is_call() && kind != EventKind::Error => (
                    EventKind::Error,
                    s(a, "maida.error_type")
                        .or_else(|| s(a, "exception.type"))
                        .unwrap_or("exception".into()),
                ),
                _ => continue,
            };
            let status = if k == EventKind::Error {
                Status::Error
            } else {
                Status::Ok
            };
            out.push((
                k,
                nm,
                format!("{id}#{i}"),
                Some(id.clone()),
                ts(*ets),
                None,
                status,
                None,
                String::new(),
            ));
        }
        Some(out)
    }

    /// Load `lines` and compare every event with the oracle's, trace by trace in file order.
    fn agrees_with_oracle(lines: &[Value]) -> Result<(), String> {
        let mut bytes = Vec::new();
        // One trace a trace_id, in order of appearance; spans naming none join the first.
        let mut keys: Vec<String> = Vec::new();
        let mut want: Vec<Vec<Expect>> = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            let text = if i % 2 == 0 { spaced_json(l) } else { l.to_string() };
            bytes.extend_from_slice(text.as_bytes());
            bytes.push(b'\n');
            // The oracle reads the text too (a float read back may differ in its last bit).
            let l: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
            let Some(events) = oracle(&l) else { continue };
            let tid = l.get("trace_id").and_then(Value::as_str).unwrap_or("");
            let ti = match keys.iter().position(|k| k == tid) {
                Some(ti) => ti,
                None if tid.is_empty() && !keys.is_empty() => 0,
                None => {
                    keys.push(tid.to_string());
                    want.push(Vec::new());
                    keys.len() - 1
                }
            };
            want[ti].extend(events);
        }
        let traces = load_bytes(&bytes);
        if traces.len() != want.len() {
            return Err(format!("{} traces, the oracle says {}", traces.len(), want.len()));
        }
        for (t, want) in traces.iter().zip(&want) {
            if t.len() != want.len() {
                return Err(format!("{} events, the oracle says {}", t.len(), want.len()));
            }
            for (i, w) in want.iter().enumerate() {
                let i = i as u32;
                let e = t.event(i);
                let parent = (e.parent != NO_PARENT).then(|| t.str(t.event(e.parent).source_id).to_string());
                let got: Expect = (
                    e.kind,
                    t.name(i).to_string(),
                    t.str(e.source_id).to_string(),
                    parent.clone(),
                    e.start.into(),
                    e.duration.into(),
                    e.status,
                    e.usage.get(),
                    t.str(e.model).to_string(),
                );
                // A parent that never arrives, or would make a cycle, leaves its child a root.
                let orphan = |p: &str| match t.find(p) {
                    None => true,
                    Some(mut x) => loop {
                        if x == i {
                            break true;
                        }
                        x = t.event(x).parent;
                        if x == NO_PARENT {
                            break false;
                        }
                    },
                };
                let parent_ok = parent == w.3 || (parent.is_none() && w.3.as_deref().is_some_and(orphan));
                let (mut a, mut b) = (got.clone(), w.clone());
                a.3 = None;
                b.3 = None;
                if a != b || !parent_ok {
                    return Err(format!("event {i}: loaded {got:?}, the oracle says {w:?}"));
                }
            }
        }
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1500))]
        #[test]
        fn skimmer_never_disagrees_with_serde(line in raw_line()) {
            skim_agrees(&line).map_err(proptest::test_runner::TestCaseError::fail)?;
        }

        #[test]
        fn skimmer_on_arbitrary_bytes(line in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            skim_agrees(&line).map_err(proptest::test_runner::TestCaseError::fail)?;
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        #[test]
        fn loaded_events_are_what_serde_json_reads(lines in proptest::collection::vec(span_value(), 1..30)) {
            agrees_with_oracle(&lines).map_err(proptest::test_runner::TestCaseError::fail)?;
        }
    }

    #[test]
    fn the_differential_tests_are_not_vacuous() {
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let (mut skimmed, mut marked, mut attrs) = (0, 0, 0);
        for _ in 0..1000 {
            let line = raw_line().new_tree(&mut runner).unwrap().current();
            if skim_agrees(&line).unwrap() {
                skimmed += 1;
                let mut r = RawSpan::blank();
                skim_span(&line, &mut r).unwrap();
                marked += r.events.as_ref().is_ok_and(|e| !e.is_empty()) as u32;
                attrs += r.attrs.as_ref().is_ok_and(|a| a.vals.iter().any(Option::is_some)) as u32;
            }
        }
        assert!(
            skimmed > 200 && marked > 20 && attrs > 50,
            "{skimmed} skimmed, {marked} with span events, {attrs} with attributes"
        );
    }

    #[test]
    fn batches_agree_with_serde_json_too() {
        // Enough lines for the parallel skim and the pipelined apply.
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let lines: Vec<Value> = (0..3000)
            .map(|_| span_value().new_tree(&mut runner).unwrap().current())
            .collect();
        agrees_with_oracle(&lines).unwrap();
    }

    #[test]
    fn skimmer_reads_the_common_lines() {
        // The fast path must be the path: every span of the fixtures and samples skims.
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("tests/fixtures/maida"))
            .unwrap()
            .flatten()
            .map(|d| d.path().join(SPANS))
            .collect();
        files.push(root.join("sample-traces/runs/maida-research-ok").join(SPANS));
        let mut lines = 0;
        for f in files {
            let text = std::fs::read(&f).unwrap();
            for l in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                if f.to_string_lossy().contains("damaged") && serde_json::from_slice::<Value>(l).is_err() {
                    continue; // broken on purpose
                }
                let name = f.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
                if name == "damaged" && l.windows(13).any(|w| w == b"not an object") {
                    continue; // attributes that are not a map: serde says why
                }
                lines += 1;
                assert_eq!(skim_agrees(l), Ok(true), "{name}: {}", String::from_utf8_lossy(l));
            }
        }
        assert!(lines >= 20, "{lines}");
    }
}
