//! Assay trace JSONL (Rul1an/assay). One file holds several traces, in four line shapes:
//! - V2: `episode_start` / `step` / `tool_call` / `episode_end`, keyed by `episode_id`, with
//!   integer-millisecond `timestamp`s. Episodes interleave; a `tool_call` names its `step_id`
//!   and may come before that step; a missing `episode_end` means the episode is still open.
//!   One trace per episode.
//! - V1: `{"schema_version":1,"type":"assay.trace","request_id",prompt,response,model,...}`:
//!   one trace per request (Assay itself upgrades each to a one-step episode).
//! - Legacy, untyped: `{prompt, response, tool_calls:[{tool_name, args}]}` or
//!   `{id?, tool, args, result?, prompt?, response?}`: Assay reads each line as one recorded
//!   request, so each line is one trace.
//! - Documented: `{"type":"tool_call","id","tool","arguments"}` + `{"type":"tool_result","id",
//!   "result"}`: call and result joined by `id` into one event; all such lines of a file are
//!   one trace named after the file.
//!
//! Payloads stay on disk (`PayloadRef::Deferred`) and are decoded from the line(s) an event
//! came from, by each line's own type: the Run event of an episode reads its `episode_start`
//! (input) and `episode_end` (output, outcome); a joined tool call its call and result lines.
//!
//! Tokens: Assay records no token counts or costs (no usage field in any record type).

use super::engine::{self, Records};
use super::jsonl::{Follow, LineLoc, LineParser, Sink};
use super::skim::{Seen, Skim};
use super::{Format, LoadError, Loaded, Probe, decode_embedded, field, stem};
use crate::model::*;
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::path::Path;

pub struct Assay;

const V2_TYPES: [&str; 4] = ["episode_start", "step", "tool_call", "episode_end"];
/// Keys that mark another format's records (AgentDbg, OpenAI chat / Invariant, Claude Code,
/// Codex, OTLP, OTel-style span lines): a record with any of them is not claimed.
const FOREIGN_KEYS: [&str; 11] = [
    "event_type",
    "role",
    "messages",
    "parentUuid",
    "sessionId",
    "resourceSpans",
    "payload",
    "span_id",
    "spanId",
    "trace_id",
    "traceId",
];

impl Format for Assay {
    fn id(&self) -> &'static str {
        "assay"
    }
    fn describe(&self) -> &'static str {
        "Assay trace JSONL (V2 episode_start/step/tool_call/episode_end, V1 assay.trace, legacy \
         prompt/response lines, tool_call/tool_result lines), usually traces/*.jsonl"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir || p.is_gzip() {
            return 0;
        }
        let mut best = 0;
        for rec in p.lines().take(8) {
            let score = score_record(rec);
            if score == 0 && rec.is_object() && best == 0 {
                if neutral(rec) {
                    continue; // a record of a type Assay does not know (yet): no evidence
                }
                // The first readable record is some other format's: not ours.
                return 0;
            }
            best = best.max(score);
            if best >= 90 {
                break;
            }
        }
        if best == 0 && p.first.is_none() && p.has_key("type") && p.has_key("episode_id") {
            // A first record too large for the probe, with the V2 keys.
            best = 70;
        }
        best
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let mut f = self.follow(path).expect("assay is line-oriented");
        f.poll()?;
        f.finish("Assay trace records")
    }

    fn follow(&self, path: &Path) -> Option<Follow> {
        Some(Follow::new(
            path,
            Box::new(|| Box::new(Parser::new()) as Box<dyn LineParser>),
        ))
    }

    fn decode_payload(&self, t: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
        let mut out = Payload::default();
        for bytes in raw {
            let v: Value = match serde_json::from_slice(bytes) {
                Ok(v) => v,
                Err(e) => {
                    out.error = Some(ErrorInfo::unreadable(&e));
                    return out;
                }
            };
            match Shape::of_value(&v) {
                Some(Shape::Episode) | Some(Shape::Calls) => fill_typed(&mut out, &v),
                Some(Shape::Request) => fill_request(&mut out, ev, &v),
                Some(Shape::Legacy) => fill_legacy(&mut out, t, ev, &v),
                None => out = super::drift_payload(&v, &[]),
            }
        }
        out
    }
}

/// A typed record of no other format's and of no type Assay writes: a new record type
/// (drift) tells detection nothing either way.
fn neutral(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        o.get("type").is_some_and(Value::is_string) && !FOREIGN_KEYS.iter().any(|k| o.contains_key(*k))
    })
}

/// How sure detection is that one parsed record is an Assay line.
fn score_record(v: &Value) -> u8 {
    let Some(o) = v.as_object() else { return 0 };
    if FOREIGN_KEYS.iter().any(|k| o.contains_key(*k)) {
        return 0;
    }
    let ty = o.get("type").and_then(Value::as_str);
    let has = |k: &str| o.contains_key(k);
    match ty {
        Some("assay.trace") => 95,
        Some(t) if V2_TYPES.contains(&t) && has("episode_id") => 95,
        Some("tool_call") if has("id") && (has("tool") || has("arguments")) => 80,
        Some("tool_result") if has("id") && (has("result") || has("error")) => 80,
        Some(_) => 0,
        None if has("tool_calls") && o.get("tool_calls").is_some_and(Value::is_array) && has("prompt") => 70,
        None if has("prompt") && has("response") => 60,
        None if o.get("tool").is_some_and(Value::is_string) && has("args") => 60,
        None => 0,
    }
}

/// Which of the four line shapes a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Shape {
    /// V2 episode lines.
    Episode,
    /// V1 `assay.trace`.
    Request,
    /// Untyped prompt/response/tool lines.
    Legacy,
    /// Documented `tool_call` / `tool_result` lines.
    Calls,
}

impl Shape {
    fn of(ty: Option<&str>, has_episode: bool) -> Option<Shape> {
        match ty {
            Some("assay.trace") => Some(Shape::Request),
            Some("tool_call") if has_episode => Some(Shape::Episode),
            Some("tool_call" | "tool_result") => Some(Shape::Calls),
            Some(t) if V2_TYPES.contains(&t) => Some(Shape::Episode),
            Some(_) => None,
            None => Some(Shape::Legacy),
        }
    }

    fn of_value(v: &Value) -> Option<Shape> {
        let ty = match v.get("type") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => return None,
        };
        Shape::of(ty, field(v, "episode_id").is_some() || field(v, "step_id").is_some())
    }
}

// ---- payload decoding (by line type) ----

fn push_extra(out: &mut Payload, v: &Value, k: &str) {
    if let Some(x) = field(v, k) {
        let empty = match x {
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            _ => false,
        };
        if !empty {
            out.extra.push((k.into(), x.clone()));
        }
    }
}

fn fill_typed(out: &mut Payload, v: &Value) {
    match v.get("type").and_then(Value::as_str).unwrap_or("") {
        "episode_start" => {
            out.input = field(v, "input").cloned();
            push_extra(out, v, "meta");
        }
        "episode_end" => {
            out.output = field(v, "final_output").map(decode_embedded);
            push_extra(out, v, "outcome");
            if let Some(o) = field(v, "outcome").and_then(Value::as_str)
                && outcome_failed(o)
            {
                out.error = Some(ErrorInfo {
                    message: format!("episode outcome: {o}"),
                    ..Default::default()
                });
            }
        }
        "step" => {
            let content = field(v, "content").map(decode_embedded);
            // Assay's recorders may store an LLM step as JSON text {prompt, completion, model}.
            match content {
                Some(Value::Object(ref o)) if o.contains_key("completion") => {
                    out.input = o.get("prompt").cloned();
                    out.output = o.get("completion").cloned();
                }
                other => out.output = other,
            }
            for k in ["kind", "idx", "content_sha256", "truncations", "meta"] {
                push_extra(out, v, k);
            }
        }
        "tool_call" if field(v, "episode_id").is_some() || field(v, "step_id").is_some() => {
            out.input = field(v, "args").map(decode_embedded);
            out.output = field(v, "result").map(decode_embedded);
            out.error = field(v, "error").and_then(ErrorInfo::from_value);
            for k in ["step_id", "call_index", "args_sha256", "result_sha256", "truncations"] {
                push_extra(out, v, k);
            }
        }
        "tool_call" => {
            out.input = field(v, "arguments").or(field(v, "args")).map(decode_embedded);
        }
        "tool_result" => {
            out.output = field(v, "result").map(decode_embedded);
            out.error = field(v, "error").and_then(ErrorInfo::from_value).or_else(|| {
                result_is_error(v).then(|| ErrorInfo {
                    message: "the tool reported an error (isError)".into(),
                    ..Default::default()
                })
            });
        }
        _ => {}
    }
}

fn fill_request(out: &mut Payload, ev: &Event, v: &Value) {
    out.input = field(v, "prompt").cloned();
    out.output = field(v, "response").or(field(v, "text")).cloned();
    if ev.kind == EventKind::LlmCall {
        push_extra(out, v, "provider");
    } else {
        push_extra(out, v, "schema_version");
    }
    push_extra(out, v, "meta");
}

fn fill_legacy(out: &mut Payload, t: &Trace, ev: &Event, v: &Value) {
    if ev.kind != EventKind::ToolCall {
        out.input = field(v, "prompt").cloned();
        out.output = field(v, "response").or(field(v, "text")).cloned();
        push_extra(out, v, "meta");
        return;
    }
    // Which of the line's tool calls this is: its place among the tool events of that line.
    let k = t
        .events
        .iter()
        .filter(|e| e.kind == EventKind::ToolCall && e.origin == ev.origin)
        .position(|e| std::ptr::eq(e, ev))
        .unwrap_or(0);
    let calls: Vec<&Value> = legacy_calls(v).collect();
    if let Some(c) = calls.get(k) {
        let f = c.get("function");
        out.input = field(c, "args")
            .or(field(c, "arguments"))
            .or(f.and_then(|f| field(f, "arguments")))
            .map(decode_embedded);
        out.output = field(c, "result").map(decode_embedded);
        out.error = field(c, "error").and_then(ErrorInfo::from_value);
    }
}

/// A legacy line's tool calls: the line itself when it names a `tool`, then `tool_calls[]`.
fn legacy_calls(v: &Value) -> impl Iterator<Item = &Value> {
    let own = v.get("tool").filter(|t| t.is_string()).map(|_| v);
    let list = v
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|a| a.as_slice())
        .unwrap_or(&[]);
    own.into_iter().chain(list.iter().filter(|c| c.is_object()))
}

/// MCP results carry `isError: true`; some writers put `is_error` on the result line.
fn result_is_error(v: &Value) -> bool {
    let flag = |o: &Value| {
        ["isError", "is_error"]
            .iter()
            .any(|k| o.get(*k).and_then(Value::as_bool) == Some(true))
    };
    flag(v) || v.get("result").is_some_and(flag)
}

fn outcome_failed(o: &str) -> bool {
    matches!(
        o.to_ascii_lowercase().as_str(),
        "fail" | "failed" | "failure" | "error" | "errored" | "crashed" | "aborted"
    )
}

// ---- what the index reads of a line ----

/// The record as serde_json reads it: only what the index needs, borrowed, payloads raw. The
/// slow path (whatever the skimmer leaves), and the oracle the skimmer is tested against.
#[derive(Deserialize)]
struct RawRec<'a> {
    #[serde(borrow, default, rename = "type")]
    ty: Option<&'a RawValue>,
    #[serde(borrow, default)]
    episode_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    step_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    request_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default)]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool: Option<&'a RawValue>,
    #[serde(borrow, default)]
    call_index: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    outcome: Option<&'a RawValue>,
    #[serde(borrow, default)]
    model: Option<&'a RawValue>,
    #[serde(borrow, default)]
    prompt: Option<&'a RawValue>,
    #[serde(borrow, default)]
    response: Option<&'a RawValue>,
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_calls: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "isError")]
    is_error_camel: Option<&'a RawValue>,
    #[serde(borrow, default)]
    is_error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    meta: Option<&'a RawValue>,
}

/// Where a value's JSON text is in its line, `start..end` (`0..0`: absent or null; no value
/// ends at byte 0). Eight bytes where a borrowed string is sixteen and a `Cow` twenty-four:
/// the engine fills a slot per line, so the record's size is memory written per line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Span {
    start: u32,
    end: u32,
}

impl Span {
    /// The span of `part`, a subslice of `line` (what serde and the skimmer borrow).
    fn of(line: &[u8], part: &str) -> Span {
        let (base, at) = (line.as_ptr() as usize, part.as_ptr() as usize);
        if at < base || at + part.len() > base + line.len() || line.len() > u32::MAX as usize {
            return Span::default();
        }
        let start = (at - base) as u32;
        Span {
            start,
            end: start + part.len() as u32,
        }
    }

    fn of_opt(line: &[u8], part: Option<&str>) -> Span {
        part.map_or(Span::default(), |p| Span::of(line, p))
    }

    fn is_some(self) -> bool {
        self.end != 0
    }

    /// The value's JSON text. Ids, names and times are nearly always ASCII, checked here a
    /// word at a time: `from_utf8` on each of a line's few short values was 6% of a load.
    fn raw(self, line: &[u8]) -> Option<&str> {
        if !self.is_some() {
            return None;
        }
        let b = line.get(self.start as usize..self.end as usize)?;
        if b.is_ascii() {
            // SAFETY: ASCII is valid UTF-8.
            Some(unsafe { std::str::from_utf8_unchecked(b) })
        } else {
            std::str::from_utf8(b).ok()
        }
    }

    /// The value as a string (`raw_str`): unescaped, borrowed when it has no escapes.
    fn text(self, line: &[u8]) -> Option<Cow<'_, str>> {
        str_of(self.raw(line)?)
    }

    /// The value as an id (`raw_id`): a non-empty string, or a number's text.
    fn ident(self, line: &[u8]) -> Option<Cow<'_, str>> {
        id_of(self.raw(line)?)
    }
}

/// A line's `type`, read in the parallel half.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum LineType {
    /// Absent or null: an untyped (legacy) line.
    #[default]
    Untyped,
    /// Present but not a string: the line is skipped with an error.
    NotString,
    EpisodeStart,
    Step,
    ToolCall,
    EpisodeEnd,
    ToolResult,
    AssayTrace,
    /// Any other string (the in-order half names it in a warning).
    Other,
}

impl LineType {
    fn of(ty: Option<&str>) -> LineType {
        match ty {
            None => LineType::Untyped,
            Some("episode_start") => LineType::EpisodeStart,
            Some("step") => LineType::Step,
            Some("tool_call") => LineType::ToolCall,
            Some("episode_end") => LineType::EpisodeEnd,
            Some("tool_result") => LineType::ToolResult,
            Some("assay.trace") => LineType::AssayTrace,
            Some(_) => LineType::Other,
        }
    }
}

/// What the index needs of one line, read in the parallel half (the engine's skim) as the
/// places of its values in the line; times and the line's shape already decoded. Serde's
/// `null` is absence, as for `Option<&RawValue>`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rec {
    ty: Span,
    episode_id: Span,
    step_id: Span,
    id: Span,
    request_id: Span,
    timestamp: Span,
    kind: Span,
    name: Span,
    tool_name: Span,
    tool: Span,
    /// As written: it becomes part of the tool call's id.
    call_index: Span,
    result: Span,
    outcome: Span,
    model: Span,
    tool_calls: Span,
    meta: Span,
    /// The model where Assay's OTel import puts it (`meta["gen_ai.request.model"]`), read for
    /// steps that name none of their own.
    meta_model: Span,
    /// `timestamp` read as a time.
    start: Option<i64>,
    line_type: LineType,
    shape: Option<Shape>,
    error: bool,
    prompt: bool,
    response: bool,
    text: bool,
    /// `isError` / `is_error` is `true` on the line itself.
    flags_error: bool,
    /// An MCP `isError: true` inside `result` (read for tool_result lines only).
    result_error: bool,
}

impl Rec {
    /// The record from serde_json's reading of the line (the straightforward path).
    fn from_raw(line: &[u8], r: &RawRec<'_>) -> Rec {
        let span = |v: Option<&RawValue>| Span::of_opt(line, v.map(RawValue::get));
        let mut rec = Rec {
            ty: span(r.ty),
            episode_id: span(r.episode_id),
            step_id: span(r.step_id),
            id: span(r.id),
            request_id: span(r.request_id),
            timestamp: span(r.timestamp),
            kind: span(r.kind),
            name: span(r.name),
            tool_name: span(r.tool_name),
            tool: span(r.tool),
            call_index: span(r.call_index),
            result: span(r.result),
            outcome: span(r.outcome),
            model: span(r.model),
            tool_calls: span(r.tool_calls),
            meta: span(r.meta),
            error: r.error.is_some(),
            prompt: r.prompt.is_some(),
            response: r.response.is_some(),
            text: r.text.is_some(),
            flags_error: raw_true(r.is_error_camel) || raw_true(r.is_error),
            ..Rec::default()
        };
        rec.derive(line);
        rec
    }

    /// The fields read from other fields (both paths share this, in the parallel half).
    fn derive(&mut self, line: &[u8]) {
        self.start = self.timestamp.raw(line).and_then(ts_of_raw);
        let ty = self.ty.raw(line).map(str_of);
        self.line_type = match &ty {
            None => LineType::Untyped,
            Some(None) => LineType::NotString,
            Some(Some(t)) => LineType::of(Some(t)),
        };
        let ty = ty.flatten();
        self.shape = Shape::of(ty.as_deref(), self.episode_id.is_some() || self.step_id.is_some());
        if self.line_type == LineType::Step && !self.model.is_some() {
            self.meta_model = Span::of_opt(line, self.meta.raw(line).and_then(meta_model));
        }
        if self.line_type == LineType::ToolResult && self.shape == Some(Shape::Calls) {
            self.result_error = self.result.raw(line).is_some_and(result_flags_error);
        }
    }

    /// A step's model: its own, else the one its meta names.
    fn step_model<'l>(&self, line: &'l [u8]) -> Option<Cow<'l, str>> {
        self.model.text(line).or_else(|| self.meta_model.text(line))
    }
}

/// The model of an LLM step, where Assay's OTel import puts it.
#[derive(Deserialize)]
struct MetaModel<'a> {
    #[serde(borrow, default, rename = "gen_ai.request.model")]
    request: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "gen_ai.response.model")]
    response: Option<&'a RawValue>,
}

/// The raw JSON string of the model a `meta` object names, if it names one.
fn meta_model(meta: &str) -> Option<&str> {
    if !meta.starts_with('{') {
        return None;
    }
    let mm = serde_json::from_str::<MetaModel<'_>>(meta).ok()?;
    fn string(v: Option<&RawValue>) -> Option<&str> {
        v.map(RawValue::get).filter(|s| s.starts_with('"'))
    }
    string(mm.request).or_else(|| string(mm.response))
}

/// A raw JSON string, unescaped (borrowed when it has no escapes); None for other values.
fn str_of(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    // A byte loop: these strings are short, and a `memchr` call each cost more.
    if inner.bytes().any(|b| b == b'\\') {
        serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

/// An id that may be written as a string or a number.
fn id_of(raw: &str) -> Option<Cow<'_, str>> {
    if raw.starts_with('"') {
        str_of(raw).filter(|s| !s.is_empty())
    } else if raw.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        Some(Cow::Borrowed(raw))
    } else {
        None
    }
}

/// `str_of` on an optional raw value (serde's reading of a field).
fn raw_str(r: Option<&RawValue>) -> Option<Cow<'_, str>> {
    str_of(r?.get())
}

fn present(r: Option<&RawValue>) -> bool {
    r.is_some_and(|r| r.get() != "null")
}

/// A `timestamp` as written (integer milliseconds, or any time `parse_timestamp` reads) in
/// nanoseconds. The two common shapes are read here; anything else as a JSON value.
fn ts_of_raw(s: &str) -> Option<i64> {
    if !s.is_empty() && s.len() <= 18 && s.bytes().all(|b| b.is_ascii_digit()) {
        // What `Value::as_i64` gives for an integer that fits (18 digits always do).
        return s.parse::<i64>().ok()?.checked_mul(1_000_000);
    }
    if let Some(inner) = s.strip_prefix('"').and_then(|x| x.strip_suffix('"'))
        && !inner.contains('\\')
    {
        return parse_timestamp_str(inner);
    }
    let v: Value = serde_json::from_str(s).ok()?;
    parse_timestamp_ms(&v)
}

fn raw_true(r: Option<&RawValue>) -> bool {
    r.is_some_and(|r| r.get() == "true")
}

/// The error flags MCP results carry (`isError: true`), on a line or inside its `result`.
#[derive(Deserialize, Default)]
struct ErrorFlags<'a> {
    #[serde(borrow, default, rename = "isError")]
    is_error_camel: Option<&'a RawValue>,
    #[serde(borrow, default)]
    is_error: Option<&'a RawValue>,
}

impl ErrorFlags<'_> {
    fn any(&self) -> bool {
        raw_true(self.is_error_camel) || raw_true(self.is_error)
    }
}

fn result_flags_error(result: &str) -> bool {
    result.starts_with('{') && serde_json::from_str::<ErrorFlags<'_>>(result).is_ok_and(|f| f.any())
}

/// The pure half of reading a line (the engine's skim): the skimmer reads nearly every line;
/// what it is unsure of, serde_json reads (same record, or None and the in-order half reports
/// why).
fn parse_fast_into(line: &[u8], slot: &mut Option<Rec>) {
    let rec = slot.insert(Rec::default());
    if skim_into(line, rec).is_none() {
        *slot = by_serde(line);
        return;
    }
    rec.derive(line);
}

/// serde_json's reading of a line; None where it fails, or the line is not an object (serde
/// would read a JSON array into the struct field by field).
fn by_serde(line: &[u8]) -> Option<Rec> {
    if first_byte(line) != Some(b'{') {
        return None;
    }
    let raw = serde_json::from_slice::<RawRec>(line).ok()?;
    Some(Rec::from_raw(line, &raw))
}

fn first_byte(line: &[u8]) -> Option<u8> {
    line.iter().find(|b| !b.is_ascii_whitespace()).copied()
}

/// The record as `Rec::from_raw` reads it, by the skimmer; None when the skimmer leaves the
/// line to serde_json (see `skim`'s contract). On None, what `r` holds is partial.
fn skim_into(line: &[u8], r: &mut Rec) -> Option<()> {
    let mut k = Skim::new(line);
    let mut seen = Seen::default();
    k.object(|k, key| {
        let field = match key {
            b"type" => 0,
            b"episode_id" => 1,
            b"step_id" => 2,
            b"id" => 3,
            b"request_id" => 4,
            b"timestamp" => 5,
            b"kind" => 6,
            b"name" => 7,
            b"tool_name" => 8,
            b"tool" => 9,
            b"call_index" => 10,
            b"error" => 11,
            b"result" => 12,
            b"outcome" => 13,
            b"model" => 14,
            b"prompt" => 15,
            b"response" => 16,
            b"text" => 17,
            b"tool_calls" => 18,
            b"isError" => 19,
            b"is_error" => 20,
            b"meta" => 21,
            _ => return k.skip(),
        };
        seen.first(field)?;
        // Read as serde reads a `RawValue`: UTF-8 checked, null is absence.
        let v = k.raw()?.map(|v| v.0);
        let span = Span::of_opt(line, v);
        match field {
            0 => r.ty = span,
            1 => r.episode_id = span,
            2 => r.step_id = span,
            3 => r.id = span,
            4 => r.request_id = span,
            5 => r.timestamp = span,
            6 => r.kind = span,
            7 => r.name = span,
            8 => r.tool_name = span,
            9 => r.tool = span,
            10 => r.call_index = span,
            11 => r.error = v.is_some(),
            12 => r.result = span,
            13 => r.outcome = span,
            14 => r.model = span,
            15 => r.prompt = v.is_some(),
            16 => r.response = v.is_some(),
            17 => r.text = v.is_some(),
            18 => r.tool_calls = span,
            // The two flags are one field of the record (either one true).
            19 | 20 => r.flags_error |= v == Some("true"),
            _ => r.meta = span,
        }
        Some(())
    })?;
    k.at_end().then_some(())
}

// ---- the line parser ----

/// Per-trace state.
struct State {
    shape: Shape,
    /// The Run event (episodes, requests, legacy lines).
    root: Option<u32>,
    ended: bool,
    failed: bool,
    /// Episode events that came before their `episode_start`: they join the run when it comes.
    early: Vec<u32>,
    /// The tool_call/tool_result trace's calls still waiting for a result, and its failed
    /// ones: its status without a walk over its events at every settle.
    pending: u32,
    errors: u32,
}

/// The Assay line parser. Every trace of its sink is made here, so trace index = state index.
pub struct Parser {
    episodes: FxHashMap<Box<str>, usize>,
    requests: FxHashMap<Box<str>, usize>,
    /// The trace of the documented tool_call/tool_result lines (one per file).
    calls: Option<usize>,
    states: Vec<State>,
    /// Call ids given again: results join the latest call of that id (the trace's own id
    /// index keeps the first). Ids too long for the trace's string store are kept here too.
    repeated: FxHashMap<Box<str>, u32>,
    /// Traces already reported touched since the last flush (the sink's list is searched
    /// on every touch, and interleaved episodes touch thousands of traces).
    touched: Vec<bool>,
    touched_list: Vec<usize>,
    /// A tool call's id, `step#index`, built here without an allocation a line.
    scratch: String,
}

/// Ids longer than this are stored truncated by a trace (`Strings::push`): not found by it.
const LONG_ID: usize = 64 * 1024;

impl Default for Parser {
    fn default() -> Self {
        Parser::new()
    }
}

impl Parser {
    pub fn new() -> Parser {
        Parser {
            episodes: FxHashMap::default(),
            requests: FxHashMap::default(),
            calls: None,
            states: Vec::new(),
            repeated: FxHashMap::default(),
            touched: Vec::new(),
            touched_list: Vec::new(),
            scratch: String::new(),
        }
    }

    fn touch(&mut self, i: usize, sink: &mut Sink) {
        if self.touched[i] {
            sink.current = Some(i);
        } else {
            self.touched[i] = true;
            self.touched_list.push(i);
            sink.touch(i);
        }
    }

    /// A new trace (its index is its state's).
    fn new_trace(&mut self, shape: Shape, id: &str, sink: &mut Sink) -> usize {
        let mut t = Trace::new(RunMeta {
            id: id.to_string(),
            format: "assay",
            source: sink.path.clone(),
            status: RunStatus::Unknown,
            ..Default::default()
        });
        t.add_file(sink.path.clone());
        let i = sink.push_trace(t);
        debug_assert_eq!(i, self.states.len(), "this parser makes every trace of its sink");
        self.states.push(State {
            shape,
            root: None,
            ended: false,
            failed: false,
            early: Vec::new(),
            pending: 0,
            errors: 0,
        });
        self.touched.push(true);
        self.touched_list.push(i);
        i
    }

    fn episode_trace(&mut self, eid: &str, sink: &mut Sink) -> usize {
        if let Some(&i) = self.episodes.get(eid) {
            self.touch(i, sink);
            return i;
        }
        let i = self.new_trace(Shape::Episode, eid, sink);
        self.episodes.insert(eid.into(), i);
        i
    }

    fn episode(&mut self, rec: &Rec, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let eid = rec.episode_id.ident(line);
        let Some(eid) = eid.as_deref() else {
            let ty = rec.ty.text(line).unwrap_or_default();
            sink.error(loc.line, format!("`{ty}` record without an `episode_id`; skipped"));
            return;
        };
        let ti = self.episode_trace(eid, sink);
        let origin = loc.origin(0);
        let start = rec.start;
        if rec.timestamp.is_some() && start.is_none() {
            sink.warning(Some(loc.line), "`timestamp` is not a time; ignored");
        }
        let st = &mut self.states[ti];
        let t = &mut sink.traces[ti];
        // Where an episode's own events go: under the run, or held until it starts.
        let under_run = |st: &State| match st.root {
            Some(r) => Parent::Index(r),
            None => Parent::None,
        };
        match rec.line_type {
            LineType::EpisodeStart => {
                if st.root.is_some() {
                    let msg = if st.ended {
                        "`episode_start` after the episode ended; ignored"
                    } else {
                        "a second `episode_start` for this episode; ignored"
                    };
                    warn(t, &sink.path, loc.line, msg);
                    return;
                }
                let r = t.add(NewEvent {
                    start,
                    status: Status::Pending,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::Run, eid)
                });
                st.root = Some(r);
                t.meta.start = start;
                for e in std::mem::take(&mut st.early) {
                    t.set_parent(e, r);
                }
            }
            LineType::EpisodeEnd => {
                let failed = rec.outcome.text(line).as_deref().is_some_and(outcome_failed);
                let status = if failed { Status::Error } else { Status::Ok };
                if st.ended {
                    warn(
                        t,
                        &sink.path,
                        loc.line,
                        "a second `episode_end` for this episode; ignored",
                    );
                    return;
                }
                st.ended = true;
                st.failed = failed;
                t.meta.end = start;
                // An ended episode rarely grows again: give back what its growth reserved
                // (a quarter of its events' memory on average, most of a file's index).
                t.events.shrink_to_fit();
                match st.root {
                    Some(r) => {
                        let e = t.event_mut(r);
                        e.status = status;
                        e.origin2 = Some(Box::new(origin));
                        if let (Some(s0), Some(s1)) = (e.start.get(), start) {
                            e.duration = Some(s1.saturating_sub(s0).max(0)).into();
                        }
                    }
                    None => {
                        // The start was never written: the end stands for the run.
                        let r = t.add(NewEvent {
                            start,
                            status,
                            payload: PayloadRef::Deferred,
                            origin,
                            ..NewEvent::new(EventKind::Run, eid)
                        });
                        st.root = Some(r);
                        for e in std::mem::take(&mut st.early) {
                            t.set_parent(e, r);
                        }
                    }
                }
            }
            LineType::Step => {
                let step_id = rec.step_id.ident(line);
                let step_id = step_id.as_deref();
                let kind = rec.kind.text(line);
                let kind = kind.as_deref();
                let model = rec.step_model(line);
                let model = model.as_deref();
                let name = rec.name.text(line);
                let is_llm = kind.is_some_and(|k| {
                    let k = k.to_ascii_lowercase();
                    k == "llm" || k == "model" || k.starts_with("llm_") || k == "completion" || k == "chat"
                });
                let name = name
                    .as_deref()
                    .filter(|s| !s.is_empty())
                    .or(model)
                    .or(kind)
                    .unwrap_or("step");
                let ev = NewEvent {
                    id: step_id,
                    parent: under_run(st),
                    start,
                    status: Status::Ok,
                    model: model.filter(|s| !s.is_empty()),
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(if is_llm { EventKind::LlmCall } else { EventKind::Step }, name)
                };
                let held = st.root.is_none();
                let i = t.add(ev);
                if held {
                    st.early.push(i);
                }
                if step_id.is_none() {
                    warn(
                        t,
                        &sink.path,
                        loc.line,
                        "`step` without a `step_id`: its tool calls cannot find it",
                    );
                }
            }
            _ => {
                // tool_call: a child of the step it names, waiting for it when it has not come.
                let step_id = rec.step_id.ident(line);
                let step_id = step_id.as_deref();
                let tool = rec.tool_name.text(line).or_else(|| rec.tool.text(line));
                let tool = tool.as_deref();
                let id = step_id.map(|s| {
                    use std::fmt::Write;
                    self.scratch.clear();
                    let _ = write!(self.scratch, "{s}#{}", rec.call_index.raw(line).unwrap_or("0"));
                    self.scratch.as_str()
                });
                let parent = match step_id {
                    Some(s) => Parent::Id(s),
                    None => under_run(st),
                };
                let held = step_id.is_none() && st.root.is_none();
                let i = t.add(NewEvent {
                    id,
                    parent,
                    start,
                    status: if rec.error { Status::Error } else { Status::Ok },
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::ToolCall, tool.filter(|s| !s.is_empty()).unwrap_or("tool"))
                });
                if held {
                    st.early.push(i);
                }
                if tool.is_none() {
                    warn(t, &sink.path, loc.line, "`tool_call` without a `tool_name`");
                }
            }
        }
    }

    /// A record of a type this reader does not know (drift, formats/mod.rs): counted on its
    /// episode (when it names one already seen), and shown there when it carries text.
    fn unknown(&mut self, rec: &Rec, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let ty = rec.ty.text(line).unwrap_or_default();
        let eid = rec.episode_id.ident(line);
        let ti = eid.as_deref().and_then(|e| self.episodes.get(e).copied());
        if let Some(ti) = ti {
            self.touch(ti, sink);
        }
        sink.skip(&ty);
        let Some(ti) = ti else { return };
        let v = serde_json::from_slice::<Value>(line).ok();
        if v.as_ref().and_then(super::drift_text).is_none() {
            return;
        }
        let st = &mut self.states[ti];
        let t = &mut sink.traces[ti];
        let held = st.root.is_none();
        let i = t.add(NewEvent {
            parent: st.root.map_or(Parent::None, Parent::Index),
            start: rec.start,
            status: Status::Ok,
            payload: PayloadRef::Deferred,
            origin: loc.origin(0),
            ..NewEvent::new(EventKind::Other, &ty)
        });
        if held {
            st.early.push(i);
        }
    }

    fn request(&mut self, rec: &Rec, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let rid = rec.request_id.ident(line);
        let id = match rid.as_deref() {
            Some(r) if !self.requests.contains_key(r) => r.to_string(),
            Some(r) => {
                sink.warning(
                    Some(loc.line),
                    format!("request_id {r:?} repeats; loaded as another trace"),
                );
                format!("{r} (line {})", loc.line)
            }
            None => format!("request line {}", loc.line),
        };
        let ti = self.new_trace(Shape::Request, &id, sink);
        if let Some(r) = rid.as_deref() {
            self.requests.entry(r.into()).or_insert(ti);
        }
        let model = rec.model.text(line);
        let model = model.as_deref().filter(|s| !s.is_empty());
        let origin = loc.origin(0);
        let t = &mut sink.traces[ti];
        let r = t.add(NewEvent {
            status: Status::Ok,
            payload: PayloadRef::Deferred,
            origin,
            ..NewEvent::new(EventKind::Run, &id)
        });
        t.meta.model = model.map(str::to_owned);
        t.add(NewEvent {
            parent: Parent::Index(r),
            status: Status::Ok,
            model,
            payload: PayloadRef::Deferred,
            origin,
            ..NewEvent::new(EventKind::LlmCall, model.unwrap_or("llm"))
        });
        self.states[ti].root = Some(r);
        self.states[ti].ended = true;
        if !rec.prompt || !(rec.response || rec.text) {
            warn(
                t,
                &sink.path,
                loc.line,
                "`assay.trace` record without `prompt` or `response`",
            );
        }
    }

    fn legacy(&mut self, rec: &Rec, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let has_llm = rec.prompt || rec.response || rec.text;
        let own_tool = rec.tool.text(line);
        let own_tool = own_tool.as_deref();
        let list: Vec<LegacyCall<'_>> = match rec.tool_calls.raw(line) {
            Some(r) => match serde_json::from_str::<Vec<&RawValue>>(r) {
                Ok(items) => {
                    let mut out = Vec::new();
                    for (k, item) in items.into_iter().enumerate() {
                        match serde_json::from_str::<LegacyCall<'_>>(item.get()) {
                            Ok(c) => out.push(c),
                            Err(_) => {
                                sink.warning(Some(loc.line), format!("tool_calls[{k}] is not an object; skipped"))
                            }
                        }
                    }
                    out
                }
                Err(_) => {
                    sink.warning(Some(loc.line), "`tool_calls` is not a list; ignored");
                    Vec::new()
                }
            },
            None => Vec::new(),
        };
        if !has_llm && own_tool.is_none() && list.is_empty() {
            sink.warning(
                Some(loc.line),
                "record of no known Assay shape (no `type`, `prompt`, `response` or tool); skipped",
            );
            return;
        }
        let id = rec
            .id
            .ident(line)
            .or_else(|| rec.request_id.ident(line))
            .map(Cow::into_owned)
            .unwrap_or_else(|| format!("{}:{}", stem(&sink.path), loc.line));
        // Each legacy line is one recorded request, so one trace, whatever its id says.
        let ti = self.new_trace(Shape::Legacy, &id, sink);
        let model = rec.model.text(line);
        let model = model.as_deref().filter(|s| !s.is_empty());
        let origin = loc.origin(0);
        let t = &mut sink.traces[ti];
        t.meta.model = model.map(str::to_owned);
        let r = t.add(NewEvent {
            status: Status::Ok,
            payload: PayloadRef::Deferred,
            origin,
            ..NewEvent::new(EventKind::Run, &id)
        });
        self.states[ti].root = Some(r);
        self.states[ti].ended = true;
        if has_llm {
            t.add(NewEvent {
                parent: Parent::Index(r),
                status: Status::Ok,
                model,
                payload: PayloadRef::Deferred,
                origin,
                ..NewEvent::new(EventKind::LlmCall, model.unwrap_or("llm"))
            });
        }
        let status = |result: bool, error: bool| {
            if error {
                Status::Error
            } else if result {
                Status::Ok
            } else {
                // A legacy line records the call, not necessarily how it went.
                Status::Unknown
            }
        };
        let mut add_tool = |name: &str, st: Status| {
            t.add(NewEvent {
                parent: Parent::Index(r),
                status: st,
                payload: PayloadRef::Deferred,
                origin,
                ..NewEvent::new(EventKind::ToolCall, if name.is_empty() { "tool" } else { name })
            });
        };
        if let Some(n) = own_tool {
            add_tool(n, status(rec.result.is_some(), rec.error));
        }
        for c in &list {
            let fname = c
                .function
                .and_then(|f| serde_json::from_str::<FunctionName<'_>>(f.get()).ok())
                .and_then(|f| raw_str(f.name));
            let name = raw_str(c.tool_name)
                .or_else(|| raw_str(c.name))
                .or_else(|| raw_str(c.tool))
                .or(fname);
            add_tool(
                name.as_deref().unwrap_or("tool"),
                status(present(c.result), present(c.error)),
            );
        }
    }

    /// The event a tool_call/tool_result id names in the calls trace: the latest call given
    /// that id, found by the trace's own id index (no copy of the ids is held here).
    fn call_of(&self, t: &Trace, id: &str) -> Option<u32> {
        self.repeated.get(id).copied().or_else(|| t.find(id))
    }

    /// The documented `tool_call` / `tool_result` lines: one trace per file. Call and result
    /// are one event: the first line of the two is its `origin`, the other its `origin2`.
    fn call_or_result(&mut self, rec: &Rec, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let is_call = rec.line_type == LineType::ToolCall;
        let ti = match self.calls {
            Some(i) => {
                self.touch(i, sink);
                i
            }
            None => {
                let i = self.new_trace(Shape::Calls, &stem(&sink.path), sink);
                self.calls = Some(i);
                i
            }
        };
        let origin = loc.origin(0);
        let ts = rec.start;
        let id = rec.id.ident(line);
        let id = id.as_deref();
        let joined = id.and_then(|i| self.call_of(&sink.traces[ti], i));
        let st = &mut self.states[ti];
        let t = &mut sink.traces[ti];
        let diag = |t: &mut Trace, msg: String| {
            warn(t, &sink.path, loc.line, msg);
        };
        let result_status = if rec.error || rec.flags_error || rec.result_error {
            Status::Error
        } else {
            Status::Ok
        };
        // A new event for `id`: the trace indexes the first of an id, later ones are kept here.
        let remember = |repeated: &mut FxHashMap<Box<str>, u32>, e: u32| {
            if let Some(id) = id
                && (joined.is_some() || id.len() > LONG_ID)
            {
                repeated.insert(id.into(), e);
            }
        };
        if is_call {
            let tool = (rec.tool.text(line))
                .or_else(|| rec.tool_name.text(line))
                .or_else(|| rec.name.text(line));
            let tool = tool.as_deref().filter(|s| !s.is_empty()).unwrap_or("tool");
            if let (Some(id), Some(e)) = (id, joined) {
                let ev = t.event_mut(e);
                if is_orphan_result(ev) {
                    // Its result came first: the call completes that event.
                    let result_origin = ev.origin;
                    let end = ev.start;
                    ev.origin = origin;
                    ev.origin2 = Some(Box::new(result_origin));
                    ev.start = ts.into();
                    ev.duration = match (ts, end.get()) {
                        (Some(a), Some(b)) => Some(b.saturating_sub(a).max(0)),
                        _ => None,
                    }
                    .into();
                    let tool_ref = t.strings.intern(tool);
                    t.event_mut(e).name = tool_ref;
                    return;
                }
                diag(t, format!("tool_call id {id:?} repeats; later results join this call"));
            }
            if id.is_none() {
                diag(t, "`tool_call` without an `id`: no result can join it".into());
            }
            let e = t.add(NewEvent {
                id,
                start: ts,
                status: Status::Pending,
                payload: PayloadRef::Deferred,
                origin,
                ..NewEvent::new(EventKind::ToolCall, tool)
            });
            st.pending += 1;
            remember(&mut self.repeated, e);
            return;
        }
        match joined {
            Some(e) if t.event(e).status == Status::Pending => {
                let ev = t.event_mut(e);
                ev.origin2 = Some(Box::new(origin));
                ev.status = result_status;
                if let (Some(a), Some(b)) = (ev.start.get(), ts) {
                    ev.duration = Some(b.saturating_sub(a).max(0)).into();
                }
                st.pending -= 1;
                st.errors += (result_status == Status::Error) as u32;
            }
            Some(_) => diag(
                t,
                format!("a second tool_result for id {:?}; ignored", id.unwrap_or_default()),
            ),
            None => {
                diag(
                    t,
                    match id {
                        Some(i) => format!("tool_result for id {i:?} has no tool_call before it"),
                        None => "tool_result without an `id`: no call to join".into(),
                    },
                );
                let label = match rec.tool.text(line).or_else(|| rec.tool_name.text(line)).as_deref() {
                    Some(n) if !n.is_empty() => format!("{n} (result without call)"),
                    _ => "(result without call)".to_string(),
                };
                let e = t.add(NewEvent {
                    id,
                    start: ts,
                    status: result_status,
                    payload: PayloadRef::Deferred,
                    origin,
                    ..NewEvent::new(EventKind::ToolCall, &label)
                });
                st.errors += (result_status == Status::Error) as u32;
                remember(&mut self.repeated, e);
            }
        }
    }

    /// The in-order half: the events of one line (read again slowly, with a diagnostic,
    /// when the fast parse failed).
    fn apply(&mut self, fast: Option<&Rec>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        let slow;
        let rec = match fast {
            Some(r) => r,
            None => {
                if first_byte(line) != Some(b'{') {
                    let what = match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
                        Ok(_) => "a JSON value that is not an object".to_string(),
                        Err(e) => super::jsonl::json_error(&e),
                    };
                    sink.error(loc.line, format!("{what}; record skipped"));
                    return;
                }
                let Some(raw) = sink.parse::<RawRec<'_>>(line, loc) else {
                    return;
                };
                slow = Rec::from_raw(line, &raw);
                &slow
            }
        };
        if rec.line_type == LineType::NotString {
            sink.error(loc.line, "`type` is not a string; record skipped");
            return;
        }
        match rec.shape {
            // Shape::of gives Episode to typed lines only.
            Some(Shape::Episode) => self.episode(rec, line, loc, sink),
            Some(Shape::Request) => self.request(rec, line, loc, sink),
            Some(Shape::Calls) => self.call_or_result(rec, line, loc, sink),
            Some(Shape::Legacy) => self.legacy(rec, line, loc, sink),
            None => self.unknown(rec, line, loc, sink),
        }
    }
}

/// One legacy `tool_calls[]` entry: just what names it and decides its status.
#[derive(Deserialize)]
struct LegacyCall<'a> {
    #[serde(borrow, default)]
    tool_name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool: Option<&'a RawValue>,
    #[serde(borrow, default)]
    function: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct FunctionName<'a> {
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
}

/// A warning on a trace built here, bounded as the sink bounds its own (hostile input).
fn warn(t: &mut Trace, path: &Path, line: u64, msg: impl Into<String>) {
    if t.diagnostics.len() < 1000 {
        t.diagnostics.push(Diagnostic::warning(path, Some(line), msg));
    }
}

/// An event made from a result line alone (its name says so until the call turns up).
fn is_orphan_result(ev: &Event) -> bool {
    ev.origin2.is_none() && ev.status != Status::Pending
}

impl Records for Parser {
    type Rec<'a> = Rec;

    fn skim(line: &[u8], slot: &mut Option<Rec>) {
        parse_fast_into(line, slot);
    }

    fn apply(&mut self, rec: Option<&Rec>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        Parser::apply(self, rec, line, loc, sink);
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

    /// Statuses as far as the file goes now (may be called many times while it grows).
    fn settle(&mut self, sink: &mut Sink) {
        for (st, t) in self.states.iter().zip(&mut sink.traces) {
            t.meta.status = st.status();
        }
    }

    /// Only the traces lines went to since the last flush: a file holds thousands of episodes,
    /// and the explorer flushes after every slice of a megabyte (settling and sorting each
    /// trace there, every time, touched each one's memory a thousand times in a load).
    fn flush(&mut self, sink: &mut Sink) {
        // The caller takes the sink's touched list now (`Follow::poll_some`): start anew.
        for i in self.touched_list.drain(..) {
            self.touched[i] = false;
            let t = &mut sink.traces[i];
            t.meta.status = self.states[i].status();
            t.finalize();
        }
    }
}

impl State {
    /// The trace's status as far as the file goes now.
    fn status(&self) -> RunStatus {
        match self.shape {
            Shape::Calls if self.errors > 0 => RunStatus::Error,
            Shape::Calls if self.pending > 0 => RunStatus::Running,
            Shape::Calls => RunStatus::Ok,
            _ if !self.ended => RunStatus::Running,
            _ if self.failed => RunStatus::Error,
            _ => RunStatus::Ok,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::jsonl::JsonlReader;
    use crate::formats::payload;
    use proptest::prelude::*;
    use serde_json::json;
    use std::io::Write;
    use std::path::PathBuf;

    /// A typed record of a type Assay does not write yet, in the episode of the line it goes
    /// before (when it has one) and sometimes with text.
    fn unknown_record(rng: &mut crate::formats::testing::Rng, near: &Value) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("type".into(), Value::String(rng.type_name()));
        for k in ["episode_id", "timestamp"] {
            if let Some(x) = near.get(k) {
                m.insert(k.into(), x.clone());
            }
        }
        if let Some(text) = rng.maybe_text() {
            m.insert(["content", "message"][rng.below(2)].into(), Value::String(text));
        }
        Value::Object(m)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on our fixtures and the corpus' Assay traces.
        #[test]
        fn drift_is_skipped_quietly(seed in any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "assay",
                &[
                    "tests/fixtures/assay/calls.jsonl",
                    "tests/fixtures/assay/interleaved.jsonl",
                    "tests/fixtures/assay/legacy.jsonl",
                    "tests/fixtures/assay/v1.jsonl",
                    "sample-traces/assay/support-episodes.jsonl",
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
        crate::formats::testing::fixture("assay", name)
    }

    fn load(name: &str) -> Vec<Trace> {
        Assay.load(&fixture(name)).unwrap().traces
    }

    fn by_name(t: &Trace, name: &str) -> u32 {
        (0..t.len() as u32)
            .find(|&i| t.name(i) == name)
            .unwrap_or_else(|| panic!("no event named {name}"))
    }

    fn names_under(t: &Trace, i: u32) -> Vec<&str> {
        t.children(i).iter().map(|&c| t.name(c)).collect()
    }

    fn diag_lines(t: &Trace) -> Vec<(Option<u64>, Severity)> {
        t.diagnostics.iter().map(|d| (d.line, d.severity)).collect()
    }

    fn probe(text: &str) -> Probe {
        Probe::from_bytes(Path::new("x.jsonl"), text.as_bytes().to_vec(), true)
    }

    #[test]
    fn interleaved_episodes_become_one_trace_each() {
        let ts = load("interleaved.jsonl");
        assert_eq!(ts.len(), 2);
        let (w, r) = (&ts[0], &ts[1]);
        assert_eq!((w.meta.id.as_str(), r.meta.id.as_str()), ("ep-weather", "ep-refund"));
        assert!(
            w.diagnostics.is_empty() && r.diagnostics.is_empty(),
            "{:?}",
            w.diagnostics
        );
        assert_eq!(w.meta.status, RunStatus::Ok);
        assert_eq!(r.meta.status, RunStatus::Running, "no episode_end: still open");
        assert_eq!(r.event(r.roots[0]).status, Status::Pending);

        // Weather: run → [planner → (forecast, alerts), llm]; integer ms stay ms.
        assert_eq!(w.roots.len(), 1);
        let run = w.roots[0];
        assert_eq!(w.event(run).kind, EventKind::Run);
        assert_eq!(w.event(run).duration, Some(300_000_000));
        assert_eq!(names_under(w, run), vec!["planner", "llm"]);
        let planner = by_name(w, "planner");
        assert_eq!(w.event(planner).kind, EventKind::LlmCall);
        assert_eq!(names_under(w, planner), vec!["forecast", "alerts"]);
        let c = w.counts();
        assert_eq!((c.events, c.tool_calls, c.llm_calls, c.errors), (5, 2, 2, 1));

        let alerts = w.event(by_name(w, "alerts"));
        assert_eq!(alerts.status, Status::Error);
        assert_eq!(payload(w, alerts).error.unwrap().message, "upstream timeout");
        let p = payload(w, w.event(run));
        assert_eq!(p.input, Some(json!({"prompt": "weather in Oslo?"})));
        assert_eq!(p.output, Some(json!("Cold, -3C.")));
        assert!(p.extra.iter().any(|(k, _)| k == "meta"), "episode_start meta shown");
        // An LLM step recorded as JSON text {prompt, completion}.
        let s2 = w.children(run)[1];
        let p = payload(w, w.event(s2));
        assert_eq!(p.input, Some(json!("summarise")));
        assert_eq!(p.output, Some(json!("Cold, -3C.")));
        assert!(p.extra.iter().any(|(k, _)| k == "truncations"));

        // Refund: its tool call came before its step and was adopted when the step arrived.
        let rr = r.roots[0];
        assert_eq!(r.roots.len(), 1);
        let step = r.find("r1").unwrap();
        assert_eq!(r.name(step), "lookup_order");
        assert_eq!(r.event(step).kind, EventKind::Step);
        assert_eq!(r.event(step).parent, rr);
        let tool = r.children(step)[0];
        assert_eq!(r.event(tool).kind, EventKind::ToolCall);
        assert_eq!(payload(r, r.event(tool)).output, Some(json!({"status": "shipped"})));
    }

    #[test]
    fn v1_lines_are_one_request_each_with_an_llm_call() {
        let ts = load("v1.jsonl");
        assert_eq!(ts.len(), 3);
        let ids: Vec<_> = ts.iter().map(|t| t.meta.id.as_str()).collect();
        assert_eq!(ids, vec!["q1", "q2", "q1 (line 3)"]);
        for t in &ts {
            let c = t.counts();
            assert_eq!((c.events, c.tool_calls, c.llm_calls), (2, 0, 1));
            assert_eq!(t.meta.status, RunStatus::Ok);
        }
        let t = &ts[0];
        let llm = t.children(t.roots[0])[0];
        assert_eq!(t.str(t.event(llm).model), "gpt-x");
        let p = payload(t, t.event(llm));
        assert_eq!(p.input, Some(json!("capital of France?")));
        assert_eq!(p.output, Some(json!("Paris")));
        assert!(p.extra.iter().any(|(k, v)| k == "provider" && v == "openai"));
        assert_eq!(
            diag_lines(&ts[1]),
            vec![(Some(3), Severity::Warning)],
            "repeated request_id"
        );
    }

    #[test]
    fn legacy_lines_are_one_trace_each_with_their_tool_calls() {
        let ts = load("legacy.jsonl");
        let ids: Vec<_> = ts.iter().map(|t| t.meta.id.as_str()).collect();
        assert_eq!(ids, vec!["legacy:1", "lg-2", "legacy:3"]);
        let tools: Vec<_> = ts.iter().map(|t| t.counts().tool_calls).collect();
        assert_eq!(tools, vec![3, 1, 1]);
        let t = &ts[0];
        assert_eq!(names_under(t, t.roots[0]), vec!["llm", "exec", "notify", "audit"]);
        let st: Vec<_> = ["exec", "notify", "audit"]
            .iter()
            .map(|n| t.event(by_name(t, n)).status)
            .collect();
        assert_eq!(st, vec![Status::Unknown, Status::Ok, Status::Error]);
        // Each tool event decodes its own entry of the line.
        let audit = payload(t, t.event(by_name(t, "audit")));
        assert_eq!(
            audit.input,
            Some(json!({"level": 2})),
            "JSON-string arguments shown as JSON"
        );
        assert_eq!(audit.error.unwrap().message, "denied");
        assert_eq!(payload(t, t.event(by_name(t, "notify"))).output, Some(json!("sent")));
        let calc = &ts[2];
        assert_eq!(calc.counts().llm_calls, 0, "no prompt or response: no LLM call");
        assert_eq!(
            payload(calc, calc.event(by_name(calc, "Calculate"))).output,
            Some(json!(3))
        );
    }

    #[test]
    fn tool_call_and_tool_result_are_one_event() {
        let ts = load("calls.jsonl");
        assert_eq!(ts.len(), 1);
        let t = &ts[0];
        assert_eq!(t.meta.id, "calls");
        assert_eq!(t.counts().tool_calls, 4);
        let c1 = t.event(t.find("c1").unwrap());
        assert_eq!(
            (c1.status, c1.origin.line, c1.origin2.as_ref().map(|o| o.line)),
            (Status::Ok, 1, Some(2))
        );
        assert_eq!(c1.duration, Some(1_000_000_000));
        let p = payload(t, c1);
        assert_eq!(
            (p.input, p.output),
            (Some(json!({"id": "cust_1"})), Some(json!({"name": "Alice"})))
        );
        let c2 = t.event(t.find("c2").unwrap());
        assert_eq!(c2.status, Status::Pending, "a call with no result yet");
        assert_eq!(c2.origin2, None);
        let c9 = t.find("c9").unwrap();
        assert_eq!(t.name(c9), "(result without call)");
        assert_eq!(payload(t, t.event(c9)).output, Some(json!({"ok": true})));
        let c3 = t.event(t.find("c3").unwrap());
        assert_eq!(c3.status, Status::Error, "isError inside the MCP result");
        assert_eq!(c3.duration, Some(500_000_000));
        assert_eq!(diag_lines(t), vec![(Some(4), Severity::Warning)]);
        assert!(t.diagnostics[0].message.contains("c9"));
        assert_eq!(t.meta.status, RunStatus::Error);
    }

    #[test]
    fn a_result_before_its_call_is_completed_by_the_call() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("late.jsonl");
        std::fs::write(
            &p,
            concat!(
                "{\"type\":\"tool_result\",\"id\":\"x\",\"result\":\"r\",\"timestamp\":\"2025-01-01T00:00:02Z\"}\n",
                "{\"type\":\"tool_call\",\"id\":\"x\",\"tool\":\"t\",\"arguments\":{\"a\":1},\"timestamp\":\"2025-01-01T00:00:00Z\"}\n",
            ),
        )
        .unwrap();
        let t = &Assay.load(&p).unwrap().traces[0];
        assert_eq!(t.len(), 1);
        let e = t.event(0);
        assert_eq!((t.name(0), e.status), ("t", Status::Ok));
        assert_eq!((e.origin.line, e.origin2.as_ref().map(|o| o.line)), (2, Some(1)));
        assert_eq!(e.duration, Some(2_000_000_000));
        let pl = payload(t, e);
        assert_eq!((pl.input, pl.output), (Some(json!({"a": 1})), Some(json!("r"))));
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(diag_lines(t), vec![(Some(1), Severity::Warning)]);
    }

    #[test]
    fn damaged_lines_are_diagnostics_and_the_rest_loads() {
        let ts = load("damaged.jsonl");
        assert_eq!(ts.len(), 1, "the cut last line starts no episode");
        let t = &ts[0];
        assert_eq!(
            diag_lines(t),
            vec![
                (Some(2), Severity::Error),
                (Some(4), Severity::Error),
                (Some(6), Severity::Warning)
            ]
        );
        assert!(
            t.diagnostics[1].message.contains("not an object"),
            "{}",
            t.diagnostics[1].message
        );
        assert!(t.diagnostics[2].message.contains("incomplete last line"));
        assert_eq!(t.meta.status, RunStatus::Error, "outcome fail");
        assert_eq!(t.counts().tool_calls, 1, "its step was lost, the call is still there");
        let run = t.event(t.roots[0]);
        assert_eq!(payload(t, run).error.unwrap().message, "episode outcome: fail");
    }

    #[test]
    fn events_before_episode_start_and_an_end_without_start() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("early.jsonl");
        std::fs::write(
            &p,
            concat!(
                "{\"type\":\"step\",\"episode_id\":\"a\",\"step_id\":\"s\",\"timestamp\":110,\"kind\":\"tool\",\"name\":\"n\"}\n",
                "{\"type\":\"episode_start\",\"episode_id\":\"a\",\"timestamp\":100}\n",
                "{\"type\":\"episode_end\",\"episode_id\":\"b\",\"timestamp\":500,\"outcome\":\"error\"}\n",
                "{\"type\":\"episode_end\",\"episode_id\":\"a\",\"timestamp\":200}\n",
                "{\"type\":\"episode_end\",\"episode_id\":\"a\",\"timestamp\":210}\n",
                "{\"type\":\"step\",\"step_id\":\"z\"}\n",
                "{\"type\":\"mystery\"}\n",
            ),
        )
        .unwrap();
        let ts = Assay.load(&p).unwrap().traces;
        assert_eq!(ts.len(), 2);
        let a = &ts[0];
        assert_eq!(a.roots.len(), 1);
        assert_eq!(a.children(a.roots[0]).len(), 1, "the early step joined its run");
        assert_eq!(a.meta.status, RunStatus::Ok);
        assert_eq!(a.event(a.roots[0]).duration, Some(100_000_000));
        let b = &ts[1];
        assert_eq!(b.meta.status, RunStatus::Error);
        assert_eq!(b.event(b.roots[0]).kind, EventKind::Run);
        // The repeated end and the step with no episode are reported; the unknown type is
        // drift: counted, not reported.
        let all: Vec<_> = ts.iter().flat_map(diag_lines).collect();
        assert_eq!(all, vec![(Some(5), Severity::Warning), (Some(6), Severity::Error)]);
        let skipped: Vec<_> = ts.iter().flat_map(|t| t.skipped.iter()).collect();
        assert_eq!(skipped, [("mystery", 1)]);
    }

    #[test]
    fn following_a_growing_file_and_flushing_again() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("live.jsonl");
        let lines = std::fs::read_to_string(fixture("interleaved.jsonl")).unwrap();
        let lines: Vec<&str> = lines.split_inclusive('\n').collect();
        std::fs::write(&p, lines[..4].concat()).unwrap();
        let mut f = Assay.follow(&p).unwrap();
        f.poll().unwrap();
        assert_eq!(f.sink.traces.len(), 2);
        assert!(f.sink.traces.iter().all(|t| t.meta.status == RunStatus::Running));
        let refund_tool = f.sink.traces[1].find("r1#0").unwrap();
        assert_eq!(
            f.sink.traces[1].event(refund_tool).parent,
            NO_PARENT,
            "its step is not there yet"
        );
        // Half a line: held until its newline.
        let (a, b) = lines[4].split_at(30);
        let mut w = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        w.write_all(a.as_bytes()).unwrap();
        f.poll().unwrap();
        assert!(f.has_partial());
        w.write_all(b.as_bytes()).unwrap();
        for l in &lines[5..] {
            w.write_all(l.as_bytes()).unwrap();
        }
        drop(w);
        let polled = f.poll().unwrap();
        assert_eq!(polled.touched, vec![1, 0]);
        // Polling with nothing new changes nothing (flush is safe to repeat).
        let before: Vec<_> = f
            .sink
            .traces
            .iter()
            .map(|t| (t.counts(), t.meta.status, t.roots.clone()))
            .collect();
        f.poll().unwrap();
        f.poll().unwrap();
        let after: Vec<_> = f
            .sink
            .traces
            .iter()
            .map(|t| (t.counts(), t.meta.status, t.roots.clone()))
            .collect();
        assert_eq!(before, after);
        let r = &f.sink.traces[1];
        assert_ne!(
            r.event(r.find("r1#0").unwrap()).parent,
            NO_PARENT,
            "adopted by its step"
        );
        assert_eq!(f.sink.traces[0].meta.status, RunStatus::Ok);
        assert_eq!(r.meta.status, RunStatus::Running);
        let full = Assay.load(&fixture("interleaved.jsonl")).unwrap().traces;
        for (x, y) in f.sink.traces.iter().zip(&full) {
            assert_eq!(x.counts(), y.counts());
            assert_eq!(x.walk().len(), y.walk().len());
        }
    }

    #[test]
    fn detects_its_shapes() {
        for f in [
            "interleaved.jsonl",
            "v1.jsonl",
            "legacy.jsonl",
            "calls.jsonl",
            "damaged.jsonl",
        ] {
            let p = Probe::open(&fixture(f)).unwrap();
            assert!(Assay.detect(&p) >= 60, "{f}");
            assert_eq!(crate::formats::detect(&fixture(f)).unwrap().id(), "assay", "{f}");
        }
        assert_eq!(Assay.detect(&probe("{\"type\":\"step\",\"episode_id\":\"e\"}\n")), 95);
        // A first record too large for the probe: its keys still tell.
        let cut = Probe::from_bytes(
            Path::new("x.jsonl"),
            b"{\"type\":\"step\",\"episode_id\":\"e\",\"content\":\"aaaa".to_vec(),
            false,
        );
        assert_eq!(Assay.detect(&cut), 70);
    }

    #[test]
    fn does_not_claim_other_formats() {
        let others = [
            // AgentDbg
            r#"{"spec_version":"0.1","event_id":"e","run_id":"r","event_type":"TOOL_CALL","ts":"2026-01-01T00:00:00Z","name":"x","payload":{"tool_name":"x"}}"#,
            // OpenAI chat message lines and Invariant dataset lines
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]}"#,
            r#"{"messages":[{"role":"user","content":"hi"}],"metadata":{}}"#,
            r#"[{"role":"user","content":"hi"}]"#,
            // Claude Code
            r#"{"parentUuid":null,"isSidechain":false,"sessionId":"s","type":"user","message":{"role":"user","content":"hi"}}"#,
            // Codex
            r#"{"timestamp":"2025-01-01T00:00:00Z","type":"response_item","payload":{"type":"function_call","call_id":"c"}}"#,
            // OTLP and OTel-style span lines
            r#"{"resourceSpans":[]}"#,
            r#"{"trace_id":"t","span_id":"s","name":"tool-call","attributes":{"gen_ai.tool.name":"search"}}"#,
            // agentsnap
            r#"{"version":1,"tools":[{"name":"x","args":{}}]}"#,
            // Something else that happens to have a `type`
            r#"{"type":"message","id":"m1","text":"hi"}"#,
        ];
        for o in others {
            assert_eq!(Assay.detect(&probe(&format!("{o}\n"))), 0, "{o}");
        }
        assert_eq!(Assay.detect(&probe("")), 0);
        assert_eq!(Assay.detect(&probe("not json\n")), 0);
    }

    /// Parse `bytes` as one source without touching the disk.
    fn parse_bytes(bytes: &[u8]) -> Vec<Trace> {
        let path = Path::new("mem.jsonl");
        let mut r = JsonlReader::new(path);
        let mut p = Parser::new();
        let mut s = Sink::new(path);
        r.read_stream(&mut std::io::Cursor::new(bytes), &mut p, &mut s).unwrap();
        r.finish(&mut p, &mut s);
        p.flush(&mut s);
        s.traces
    }

    fn json_leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|f| serde_json::Number::from_f64(f)
                .map(Value::Number)
                .unwrap_or(Value::Null)),
            prop_oneof![
                Just("episode_start"),
                Just("step"),
                Just("tool_call"),
                Just("tool_result"),
                Just("episode_end"),
                Just("assay.trace"),
                Just("e1"),
                Just("s1"),
                Just("llm"),
                Just("fail"),
                Just("2025-12-27T10:00:00Z"),
            ]
            .prop_map(|s| json!(s)),
            ".{0,12}".prop_map(Value::String),
        ]
    }

    fn json_value() -> impl Strategy<Value = Value> {
        json_leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((key(), inner), 0..4).prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "type",
                "episode_id",
                "step_id",
                "id",
                "request_id",
                "timestamp",
                "kind",
                "name",
                "tool_name",
                "tool",
                "call_index",
                "args",
                "arguments",
                "result",
                "error",
                "outcome",
                "final_output",
                "input",
                "content",
                "prompt",
                "response",
                "model",
                "tool_calls",
                "function",
                "isError",
                "meta",
                "truncations",
            ])
            .prop_map(str::to_string),
            "[a-z]{1,6}",
        ]
    }

    /// A record shaped like the Assay lines, with any values in its fields.
    fn assay_line() -> impl Strategy<Value = String> {
        prop::collection::vec((key(), json_value()), 0..8)
            .prop_map(|kv| Value::Object(kv.into_iter().collect::<serde_json::Map<_, _>>()).to_string())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
            let _ = Assay.detect(&Probe::from_bytes(Path::new("x.jsonl"), bytes.clone(), true));
            let _ = Assay.detect(&Probe::from_bytes(Path::new("x.jsonl"), bytes.clone(), false));
            for t in parse_bytes(&bytes) {
                let _ = t.walk();
            }
        }

        #[test]
        fn arbitrary_assay_like_lines_never_panic(
            lines in prop::collection::vec(prop_oneof![assay_line(), json_value().prop_map(|v| v.to_string())], 0..12),
            cut in any::<bool>(),
        ) {
            let mut text = lines.join("\n");
            if !cut {
                text.push('\n');
            }
            let _ = Assay.detect(&Probe::from_bytes(Path::new("x.jsonl"), text.clone().into_bytes(), true));
            let traces = parse_bytes(text.as_bytes());
            let raws: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
            for t in &traces {
                prop_assert_eq!(t.walk().len(), t.len(), "every event is in the tree once");
                for e in &t.events {
                    // Decode against every line, in pairs too, as a merged event would.
                    for w in raws.windows(2.min(raws.len()).max(1)) {
                        let _ = Assay.decode_payload(t, e, w);
                    }
                }
            }
        }
    }

    // ---- the fast path against serde_json ----

    /// The skimmer's reading of a line, or None where it leaves the line to serde_json.
    fn skim(line: &[u8]) -> Option<Rec> {
        let mut r = Rec::default();
        skim_into(line, &mut r)?;
        r.derive(line);
        Some(r)
    }

    /// The skimmer's contract: what it reads, serde_json reads the same. Ok(true): skimmed.
    fn skim_agrees(line: &[u8]) -> Result<bool, String> {
        let text = || String::from_utf8_lossy(line).into_owned();
        let Some(fast) = skim(line) else { return Ok(false) };
        match by_serde(line) {
            None => Err(format!("skimmed a line serde rejects: {}", text())),
            Some(slow) if slow != fast => Err(format!("skim {fast:?} != serde {slow:?}: {}", text())),
            Some(_) => Ok(true),
        }
    }

    /// The same parser, reading every line with serde_json (the straightforward path).
    struct SerdeOnly(Parser);

    impl Records for SerdeOnly {
        type Rec<'a> = Rec;
        fn skim(line: &[u8], slot: &mut Option<Rec>) {
            *slot = by_serde(line);
        }
        fn apply(&mut self, rec: Option<&Rec>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
            self.0.apply(rec, line, loc, sink);
        }
    }

    /// The traces of `lines` read by `R` through the engine, in batches of `batch` lines and
    /// flushed after each (as the explorer's slices are), as their full debug text.
    fn traces_by<R: Records + LineParser>(mut p: R, lines: &[Vec<u8>], batch: usize) -> Vec<String> {
        let mut sink = Sink::new(Path::new("mem.jsonl"));
        let mut offset = 0u64;
        let locs: Vec<(&[u8], LineLoc)> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let loc = LineLoc {
                    line: i as u64 + 1,
                    offset,
                    len: l.len(),
                };
                offset += l.len() as u64 + 1;
                (l.as_slice(), loc)
            })
            .filter(|(l, _)| !l.iter().all(u8::is_ascii_whitespace))
            .collect();
        for part in locs.chunks(batch.max(1)) {
            engine::batch(&mut p, part, &mut sink);
            p.flush(&mut sink);
            sink.take_touched();
        }
        sink.traces.iter().map(|t| format!("{t:?}")).collect()
    }

    /// A trace's debug text without its history of moves (which follows the flushes).
    fn without_moves(t: &str) -> &str {
        t.rfind(", moves: ").map_or(t, |i| &t[..i])
    }

    impl LineParser for SerdeOnly {
        fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink) {
            engine::one(self, line, loc, sink);
        }
        fn flush(&mut self, sink: &mut Sink) {
            self.0.flush(sink);
        }
    }

    /// A JSON scalar as text, with the shapes the index reads (and escapes, which the skimmer
    /// leaves to serde_json).
    fn scalar() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            Just("false".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            (0u64..2_000_000_000_000).prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|f| serde_json::to_string(&f).unwrap()),
            "[0-9eE.+-]{1,6}",
            prop::sample::select(vec![
                "\"episode_start\"",
                "\"step\"",
                "\"tool_call\"",
                "\"tool_result\"",
                "\"episode_end\"",
                "\"assay.trace\"",
                "\"e1\"",
                "\"s1\"",
                "\"llm\"",
                "\"LLM_chat\"",
                "\"fail\"",
                "\"\"",
                "\"2025-12-27T10:00:00Z\"",
                "\"2025-12-27T10:00:00.500Z\"",
                "\"1766601666050\"",
                "\"st\\u0065p\"",
                "\"e\\\"1\"",
            ])
            .prop_map(str::to_string),
            ".{0,12}".prop_map(|s| serde_json::to_string(&s).unwrap()),
            "[a-z\\\\\"\u{1}\t é✓]{0,40}".prop_map(|s| format!("\"{s}\"")),
        ]
    }

    fn text_value() -> impl Strategy<Value = String> {
        scalar().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec((text_key(), inner), 0..4).prop_map(|kv| {
                    let f: Vec<String> = kv.into_iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
                    format!("{{{}}}", f.join(", "))
                }),
            ]
        })
    }

    fn text_key() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => prop::sample::select(vec![
                "type", "episode_id", "step_id", "id", "request_id", "timestamp", "kind", "name",
                "tool_name", "tool", "call_index", "error", "result", "outcome", "model", "prompt",
                "response", "text", "tool_calls", "isError", "is_error", "meta", "args", "content",
                "gen_ai.request.model", "gen_ai.response.model", "typ\\u0065",
            ])
            .prop_map(str::to_string),
            1 => "[a-z_]{1,8}",
        ]
    }

    /// Assay-shaped records as text: known and unknown keys (repeated sometimes), values of
    /// every type, `type` and an episode id most of the time; then a byte or two changed.
    fn text_record() -> impl Strategy<Value = Vec<u8>> {
        let base = (
            prop::collection::vec((text_key(), text_value()), 0..9),
            prop::option::of(prop::sample::select(vec![
                "episode_start",
                "step",
                "tool_call",
                "tool_result",
                "episode_end",
                "assay.trace",
            ])),
            prop::option::of(prop::sample::select(vec!["e1", "e2", "7"])),
        )
            .prop_map(|(fields, ty, ep)| {
                let mut f: Vec<String> = fields.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                if let Some(t) = ty {
                    f.insert(0, format!("\"type\":\"{t}\""));
                }
                if let Some(e) = ep {
                    f.push(format!("\"episode_id\":\"{e}\""));
                }
                format!("{{{}}}", f.join(",")).into_bytes()
            });
        crate::formats::testing::with_byte_edits(base, 3)
    }

    /// Lines of one file: episode lines over a few episodes, steps and their tool calls in
    /// any order, documented call/result lines sharing a few ids, V1 and legacy lines.
    fn file_line() -> impl Strategy<Value = Vec<u8>> {
        let ep = prop::sample::select(vec!["a", "b", "c"]);
        let step = prop::sample::select(vec!["s1", "s2", "s3"]);
        let ts = prop_oneof![
            (1000u64..1100).prop_map(|n| n.to_string()),
            Just("\"2025-12-27T10:00:01Z\"".to_string()),
            Just("\"soon\"".to_string()),
            Just("null".to_string()),
        ];
        let v2 = (
            prop::sample::select(vec!["episode_start", "step", "tool_call", "episode_end"]),
            ep,
            step,
            ts.clone(),
            prop::sample::select(vec!["llm", "tool", "chat"]),
            prop::option::of(prop::sample::select(vec!["search", "", "gpt-x"])),
            prop::sample::select(vec!["null", "\"timeout\""]),
            prop::sample::select(vec!["\"pass\"", "\"fail\"", "null"]),
            prop::sample::select(vec![
                "{}",
                "{\"gen_ai.request.model\":\"m1\"}",
                "{\"gen_ai.response.model\":\"m2\",\"x\":[1]}",
            ]),
        )
            .prop_map(|(ty, ep, step, ts, kind, name, error, outcome, meta)| {
                let name = name.map(|n| format!(",\"name\":\"{n}\",\"tool_name\":\"{n}\"")).unwrap_or_default();
                format!(
                    "{{\"type\":\"{ty}\",\"episode_id\":\"{ep}\",\"step_id\":\"{step}\",\"timestamp\":{ts},\"kind\":\"{kind}\"{name},\"call_index\":0,\"args\":{{\"q\":\"x\\ny\"}},\"error\":{error},\"outcome\":{outcome},\"meta\":{meta},\"content\":\"t\\\"x\"}}"
                )
            });
        let calls = (
            any::<bool>(),
            prop::sample::select(vec!["c1", "c2", "c3"]),
            ts,
            prop::sample::select(vec![
                "{\"ok\":true}",
                "{\"content\":[],\"isError\":true}",
                "\"plain\"",
                "null",
            ]),
            any::<bool>(),
        )
            .prop_map(|(call, id, ts, result, flag)| {
                if call {
                    format!("{{\"type\":\"tool_call\",\"id\":\"{id}\",\"tool\":\"t_{id}\",\"arguments\":{{}},\"timestamp\":{ts}}}")
                } else {
                    let flag = if flag { ",\"is_error\":true" } else { "" };
                    format!("{{\"type\":\"tool_result\",\"id\":\"{id}\",\"result\":{result},\"timestamp\":{ts}{flag}}}")
                }
            });
        prop_oneof![
            6 => v2.prop_map(String::into_bytes),
            3 => calls.prop_map(String::into_bytes),
            1 => prop::sample::select(vec![
                r#"{"schema_version":1,"type":"assay.trace","request_id":"q1","prompt":"p","response":"r","model":"gpt-x"}"#,
                r#"{"schema_version":1,"type":"assay.trace","request_id":7,"prompt":"p"}"#,
                r#"{"prompt":"p","response":"r","tool_calls":[{"tool_name":"exec","args":{}},{"function":{"name":"f"},"error":"x"},3]}"#,
                r#"{"id":"lg","tool":"Search","args":{},"result":1}"#,
                r#"{"type":"mystery","episode_id":"a"}"#,
                r#"{"type":5}"#,
                r#"[1,2]"#,
                r#"{"type":"step","episode_id":"a","step_id":"s9","type":"step"}"#,
                "",
                "{broken",
            ])
            .prop_map(|s| s.as_bytes().to_vec()),
            1 => text_record(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn skimmer_never_disagrees_with_serde(line in text_record()) {
            skim_agrees(&line).map_err(TestCaseError::fail)?;
        }

        #[test]
        fn skimmer_on_arbitrary_bytes(line in prop::collection::vec(any::<u8>(), 0..300)) {
            skim_agrees(&line).map_err(TestCaseError::fail)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The events (every field, the tree, statuses, diagnostics) of the fast path are
        /// those of reading every line with serde_json, in any batching.
        #[test]
        fn fast_path_events_are_serde_events(
            lines in prop::collection::vec(file_line(), 0..40),
            batch in 1usize..400,
        ) {
            let fast = traces_by(Parser::new(), &lines, batch);
            // Same batches: the trees' history of moves (a view's hint) follows the flushes.
            let slow = traces_by(SerdeOnly(Parser::new()), &lines, batch);
            prop_assert_eq!(&fast, &slow);
            // Flushing only what changed since the last flush ends where one flush does.
            let once = traces_by(Parser::new(), &lines, lines.len().max(1));
            prop_assert_eq!(fast.iter().map(|t| without_moves(t)).collect::<Vec<_>>(),
                once.iter().map(|t| without_moves(t)).collect::<Vec<_>>());
        }
    }

    #[test]
    fn the_differential_tests_are_not_vacuous() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let (mut skimmed, mut slow, mut file_fast) = (0, 0, 0);
        for _ in 0..1000 {
            let line = text_record().new_tree(&mut runner).unwrap().current();
            skimmed += skim_agrees(&line).unwrap() as u32;
            slow += (skim(&line).is_none() && by_serde(&line).is_some()) as u32;
            let line = file_line().new_tree(&mut runner).unwrap().current();
            file_fast += skim(&line).is_some() as u32;
        }
        assert!(skimmed > 200, "only {skimmed} of 1000 generated records skimmed");
        assert!(slow > 10, "only {slow} of 1000 generated records read by the fallback");
        assert!(file_fast > 500, "only {file_fast} of 1000 file lines skimmed");
    }

    #[test]
    fn fixture_lines_take_the_fast_path() {
        let mut lines = 0;
        for f in [
            "interleaved.jsonl",
            "v1.jsonl",
            "legacy.jsonl",
            "calls.jsonl",
            "damaged.jsonl",
        ] {
            let text = std::fs::read(fixture(f)).unwrap();
            for l in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                if by_serde(l).is_none() {
                    continue; // damaged on purpose
                }
                lines += 1;
                assert_eq!(skim_agrees(l), Ok(true), "{f}: {}", String::from_utf8_lossy(l));
            }
        }
        assert!(lines >= 20, "{lines}");
        // And the lines Assay's own recorders write (shapes of its MCP import and golden trace).
        for l in [
            r#"{"type":"episode_start","episode_id":"edge_case","timestamp":1766601666050,"input":{"prompt":"<mcp:session>"},"meta":{"episode_id":"edge_case","source":"mcp_import"}}"#,
            r#"{"type":"step","episode_id":"edge_case","step_id":"step_000","idx":0,"timestamp":1766601666050,"kind":"tool","name":"valid_tool","content":null,"content_sha256":null,"truncations":[],"meta":{"jsonrpc_id":"1"}}"#,
            r#"{"type":"tool_call","episode_id":"edge_case","step_id":"step_001","timestamp":1766601666050,"tool_name":"orphan_request","call_index":0,"args":{"reason":"timeout"},"args_sha256":null,"result":null,"result_sha256":null,"error":"timeout/no_response","truncations":[]}"#,
            r#"{"type":"episode_end","episode_id":"edge_case","timestamp":1766601666050,"outcome":null,"final_output":"{\"content\":[{\"text\":\"Done\",\"type\":\"text\"}]}"}"#,
        ] {
            assert_eq!(skim_agrees(l.as_bytes()), Ok(true), "{l}");
        }
    }

    #[test]
    fn what_the_skimmer_reads_of_a_line() {
        let line = br#"{"type":"step","episode_id":"e","step_id":12,"timestamp":1000,"kind":"llm","meta":{"gen_ai.request.model":"m"},"content":"a\nb"}"#;
        let r = skim(line).unwrap();
        assert_eq!((r.line_type, r.shape), (LineType::Step, Some(Shape::Episode)));
        assert_eq!(r.episode_id.ident(line).as_deref(), Some("e"));
        assert_eq!(r.step_id.ident(line).as_deref(), Some("12"), "a number id is its text");
        assert_eq!(r.start, Some(1_000_000_000), "integer milliseconds");
        assert_eq!(
            r.step_model(line).as_deref(),
            Some("m"),
            "the model of the OTel import's meta"
        );
        let line = br#"{"type":"tool_result","id":"c","result":{"isError":true},"timestamp":"2025-12-27T10:00:01Z"}"#;
        let r = skim(line).unwrap();
        assert!(r.result_error);
        assert_eq!(r.start, parse_timestamp_str("2025-12-27T10:00:01Z"));
        // Escapes are read where the value is used; a repeated field is left to serde_json.
        let line = br#"{"type":"st\u0065p","episode_id":"e\"1"}"#;
        let r = skim(line).unwrap();
        assert_eq!(r.line_type, LineType::Step);
        assert_eq!(r.episode_id.ident(line).as_deref(), Some("e\"1"));
        assert_eq!(skim(br#"{"type":"step","type":"step"}"#), None);
        assert_eq!(skim(b"{\"type\":\t\"step\"}"), None, "a tab: left to serde_json");
        assert_eq!(by_serde(b"{\"type\":\t\"step\"}").unwrap().line_type, LineType::Step);
    }

    #[test]
    fn a_skimmed_record_stays_small() {
        // The engine writes one slot per line: its size is memory written per line.
        assert!(
            std::mem::size_of::<Option<Rec>>() <= 160,
            "{}",
            std::mem::size_of::<Option<Rec>>()
        );
    }

    #[test]
    fn a_repeated_call_id_joins_later_results_to_the_latest_call() {
        let lines = concat!(
            "{\"type\":\"tool_call\",\"id\":\"x\",\"tool\":\"first\"}\n",
            "{\"type\":\"tool_call\",\"id\":\"x\",\"tool\":\"second\"}\n",
            "{\"type\":\"tool_result\",\"id\":\"x\",\"result\":1}\n",
        );
        let t = &parse_bytes(lines.as_bytes())[0];
        let st: Vec<_> = t.events.iter().map(|e| e.status).collect();
        assert_eq!(st, vec![Status::Pending, Status::Ok]);
        assert_eq!(t.meta.status, RunStatus::Running, "the first call still waits");
        assert_eq!(diag_lines(t), vec![(Some(2), Severity::Warning)]);
    }
}
