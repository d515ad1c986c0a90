//! OpenTelemetry traces as OTLP/JSON: a whole `{"resourceSpans": [...]}` document
//! (ExportTraceServiceRequest / TracesData), or the collector file exporter's JSON Lines, one
//! such batch per line. One run per `traceId`; a file may hold many.
//!
//! A second line shape, the OTel JS SDK's file exporter (Copilot CLI's `otel-*.jsonl`), is
//! read as the same format: the same GenAI conventions in another envelope. Each line is one
//! span, `{"type": "span", traceId, spanId, parentSpanId, name, kind, startTime, endTime,
//! attributes, status, events, resource, instrumentationScope}`, times `[seconds,
//! nanoseconds]`, attributes (of the span, its events and its resource) a plain object,
//! `kind` numbered as the JS API does (INTERNAL = 0, CLIENT = 2). Its `{"type": "metric"}`
//! lines are skipped quietly, counted.
//!
//! Drift (formats/mod.rs): a line of another shape (another signal's batch such as
//! `resourceMetrics`, an exporter line of an unknown `type`) is skipped quietly and counted
//! by its name, shown as a generic event in the run being read when it carries text;
//! unknown fields and attributes are ignored. A line that is not a JSON object, or an object
//! of none of these shapes, is a diagnostic.
//!
//! Logs are not spans: log records are read only for the GenAI events among them, and a tool
//! call comes only from an event that records a tool's execution (`TOOL_EVENTS`), never
//! from a log line. A file of log records that holds neither a span nor a GenAI event (an
//! application's logs) is refused: "OTLP logs, not spans".
//!
//! A tool span whose `process.exit.code` is not 0 failed, whatever its status says (as
//! Codex's and Copilot's session files are read): Copilot's spans of shell commands.
//!
//! Traps: ids are hex (any case) or, from protobuf JSON mappers, base64; times are nanosecond
//! strings or numbers; attributes are `[{key, value: {stringValue|intValue|...}}]`; spans are
//! written when they end, so children come before their parents, and a parent may never come
//! (a remote caller): such spans stay roots.
//!
//! Spans are classified by the GenAI semantic conventions (`gen_ai.operation.name`, model,
//! usage, tool name/arguments/result, older `gen_ai.system` / `gen_ai.prompt` /
//! `gen_ai.completion`), the OpenInference aliases (`openinference.span.kind`, `llm.*`,
//! `tool.name`, `input.value`, `output.value`) and MCP (`mcp.method.name = tools/call`).
//!
//! Tokens: GenAI (`gen_ai.usage.input_tokens`, `.output_tokens`, `.cache_read.input_tokens`,
//! `.cache_creation.input_tokens`) and OpenInference (`llm.token_count.prompt`, `.completion`,
//! `.prompt_details.cache_read|cache_write`, `.completion_details.reasoning`) count as OpenAI
//! does: the cache inside the input, reasoning inside the output; both are taken out. A
//! recorded cost (`gen_ai.usage.cost`, `llm.cost.total`, dollars) is the call's cost. Claude
//! Code's spans and `api_request` log events count as Anthropic does (`input_tokens` without
//! `cache_read_tokens` / `cache_creation_tokens`) and carry `cost_usd`; Codex's `sse_event`
//! logs count `input_token_count` with `cached_token_count` and `output_token_count` with
//! `reasoning_token_count` inside. A recorded total (`llm.token_count.total`) is kept as is.
//!
//! Loading at scale (DESIGN §4) goes through the shared engine: a batch line (or, in a whole
//! document, one `resourceSpans` entry read by the streaming [`super::document`] reader) is
//! skimmed into one typed record per span (ids, name, times, status and the few attributes
//! the index needs), applied in order, and each span's payload stays on disk as the span
//! object's own byte range, decoded when shown.

use super::document::{DocSink, Document};
use super::engine::{self, Records};
use super::jsonl::{Follow, LineLoc, LineParser, MAX_LINE, Sink, json_error};
use super::skim::{Scalar, Seen, Skim};
use super::{Format, LoadError, Loaded, Probe, decode_embedded};
use crate::model::*;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

pub struct Otlp;

impl Format for Otlp {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        "otlp-json"
    }
    fn describe(&self) -> &'static str {
        "OTLP/JSON traces ({\"resourceSpans\": ...}), a whole document or the collector file exporter's JSON Lines"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        match (p.whole_naming(&["resourceSpans", "resourceLogs"]), &p.first) {
            (Some(v), _) if is_batch(v) => 100,
            (_, Some(v)) if is_batch(v) => 100,
            _ if p
                .first_keys
                .first()
                .is_some_and(|k| k == "resourceSpans" || k == "resourceLogs") =>
            {
                90
            }
            // The OTel JS SDK's file exporter (Copilot CLI's `otel-*.jsonl`).
            _ if has_exported_line(p) => 95,
            // A damaged first line: the lines after it say what the file is.
            _ if batch_per_line(p, &p.path) => 90,
            _ => 0,
        }
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let tally = std::sync::Arc::new(Tally::default());
        let probe = Probe::open(path)?;
        if batch_per_line(&probe, path) {
            let t = tally.clone();
            let mut f = Follow::new(
                path,
                Box::new(move || {
                    Box::new(Parser {
                        tally: t.clone(),
                        ..Parser::default()
                    }) as Box<dyn LineParser>
                }),
            );
            f.poll()?;
            tally.refuse_plain_logs(path)?;
            return f.finish("OTLP spans");
        }
        // One document, of any size: its `resourceSpans` entries are streamed through the
        // engine as if each were a line.
        let mut sink = Sink::new(path);
        let mut parser = Parser {
            whole: true,
            tally: tally.clone(),
            ..Parser::default()
        };
        let scanned = Document::new(&[&["resourceSpans"], &["resourceLogs"]]).read(
            path,
            &mut DocLoad {
                parser: &mut parser,
                sink: &mut sink,
                logs: false,
            },
        )?;
        if scanned.list.is_none() && sink.pending().is_empty() && sink.traces.is_empty() {
            sink.error(
                1,
                "no `resourceSpans` or `resourceLogs` array: not an OTLP/JSON trace or log document",
            );
        }
        parser.flush(&mut sink);
        tally.refuse_plain_logs(path)?;
        sink.finish("OTLP spans")
    }

    /// Only the JSON Lines layout grows; a whole document is read once.
    fn follow(&self, path: &Path) -> Option<Follow> {
        let probe = Probe::open(path).ok()?;
        batch_per_line(&probe, path)
            .then(|| Follow::new(path, Box::new(|| Box::new(Parser::default()) as Box<dyn LineParser>)))
    }

    fn decode_payload(&self, _t: &Trace, _ev: &Event, raw: &[&[u8]]) -> Payload {
        let Some(bytes) = raw.first() else {
            return Payload::default();
        };
        match serde_json::from_slice::<Value>(bytes) {
            Ok(v) if is_log_record(&v) => log_payload(&v),
            Ok(v) if is_skipped_line(&v) => super::drift_payload(&v, &[]),
            Ok(v) => span_payload(&v),
            Err(e) => Payload {
                error: Some(ErrorInfo::unreadable(&e)),
                ..Default::default()
            },
        }
    }
}

/// Follow a file of batch lines that may be empty yet (the OTLP receiver's spool): the same
/// parser as a file of the collector's file exporter, whatever its first line holds.
pub fn follow_lines(path: &Path) -> Follow {
    Follow::new(path, Box::new(|| Box::new(Parser::default()) as Box<dyn LineParser>))
}

/// Whether a file is the collector's JSON Lines (one batch a line) rather than one document,
/// whatever its first line holds (a damaged first line must not make the rest unreadable).
/// Lines: a line of the head is a whole batch, or two lines start as batches do (a pretty
/// printed document has neither), or the first line is longer than the head and ends before
/// the file does. A single line is a document either way.
/// A batch of spans or of log records.
fn is_batch(v: &Value) -> bool {
    v.get("resourceSpans").is_some_and(Value::is_array) || v.get("resourceLogs").is_some_and(Value::is_array)
}

/// A line of the OTel JS SDK's file exporter: `{"type": "span", "traceId", ...}` or
/// `{"type": "metric", "dataPoints", ...}`.
fn is_exported_line(v: &Value) -> bool {
    match v.get("type").and_then(Value::as_str) {
        Some("span") => v.get("traceId").is_some_and(Value::is_string) && v.get("spanId").is_some(),
        Some("metric") => v.get("dataPoints").is_some_and(Value::is_array),
        _ => false,
    }
}

/// Whether the head holds a line of the file exporter (lines are parsed only when a head
/// names a span or metric type: most files of other formats are not parsed here).
fn has_exported_line(p: &Probe) -> bool {
    let names = |w: &[u8]| memchr::memmem::find(&p.head, w).is_some();
    (names(b"\"span\"") || names(b"\"metric\"")) && p.lines().any(is_exported_line)
}

fn batch_per_line(p: &Probe, path: &Path) -> bool {
    if has_exported_line(p) {
        return true;
    }
    if p.first
        .as_ref()
        .is_some_and(|v| v.get("resourceSpans").is_some() || v.get("resourceLogs").is_some())
    {
        return true;
    }
    let head = &p.head;
    if memchr::memmem::find(head, b"\"resource").is_none() {
        // No line names a batch (the loop below would find none): only the first line's
        // length is left to judge, without walking every line of another format's head.
        let first_complete = head
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .map(|i| p.complete || memchr::memchr(b'\n', &head[i..]).is_some());
        return first_complete == Some(false) && long_first_line_ends(path);
    }
    let mut starts = 0;
    let mut lines = head.split(|&b| b == b'\n').peekable();
    let mut first_complete = None;
    let mut n = 0;
    while let Some(l) = lines.next() {
        let complete = lines.peek().is_some() || p.complete;
        let t = l.trim_ascii();
        if t.is_empty() {
            continue;
        }
        n += 1;
        if first_complete.is_none() {
            first_complete = Some(complete);
        }
        if t.starts_with(b"{\"resourceSpans\"") || t.starts_with(b"{\"resourceLogs\"") {
            starts += 1;
        }
        // Only a line that names a batch's key is parsed: parsing every line of another
        // format's head was most of `ls`'s time over many sessions. (A key written with
        // `\u` escapes is still found on the first line, through `p.first`.)
        let names_batch = || {
            memchr::memmem::find(t, b"\"resourceSpans\"").is_some()
                || memchr::memmem::find(t, b"\"resourceLogs\"").is_some()
        };
        if complete
            && t.starts_with(b"{")
            && names_batch()
            && serde_json::from_slice::<Value>(t).is_ok_and(|v| is_batch(&v))
        {
            return n > 1 || lines.clone().any(|l| !l.trim_ascii().is_empty());
        }
        if starts >= 2 {
            return true;
        }
        if n >= 256 {
            break;
        }
    }
    // A first line longer than the head: JSON Lines if a newline ends it and more follows.
    first_complete == Some(false) && long_first_line_ends(path)
}

/// Whether the first line of a file ends (within the longest line read) and is followed by
/// more than whitespace: read with a bounded buffer, never the whole file.
fn long_first_line_ends(path: &Path) -> bool {
    use std::io::Read;
    let Ok(mut f) = super::open_regular(path) else {
        return false;
    };
    let mut buf = vec![0u8; 1 << 20];
    let (mut read, mut ended) = (0usize, false);
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        let mut from = 0;
        if !ended {
            match buf[..n].iter().position(|&b| b == b'\n') {
                Some(i) => {
                    ended = true;
                    from = i + 1;
                }
                None => {
                    read += n;
                    if read > MAX_LINE {
                        return false;
                    }
                    continue;
                }
            }
        }
        if buf[from..n].iter().any(|b| !b.is_ascii_whitespace()) {
            return true;
        }
    }
}

/// Feeds a whole document's `resourceSpans` (or `resourceLogs`) entries to the engine.
struct DocLoad<'p> {
    parser: &'p mut Parser,
    sink: &'p mut Sink,
    /// The list is `resourceLogs`.
    logs: bool,
}

impl DocSink for DocLoad<'_> {
    fn elements(&mut self, batch: &[(&[u8], LineLoc)]) {
        if self.logs {
            engine::batch(&mut LogEntries(self.parser), batch, self.sink);
        } else {
            engine::batch(&mut Entries(self.parser), batch, self.sink);
        }
    }
    fn list(&mut self, path: usize) {
        self.logs = path == 1;
    }
    fn problem(&mut self, line: u64, message: String) {
        self.sink.error(line.max(1), message);
    }
}

/// One OTLP attribute value as plain JSON.
fn any_value(v: &Value) -> Value {
    let Some(o) = v.as_object() else {
        return v.clone(); // already plain (non-standard writers)
    };
    if let Some(s) = o.get("stringValue") {
        return s.clone();
    }
    if let Some(i) = o.get("intValue") {
        // int64 is a string in proto3 JSON.
        return match i {
            Value::String(s) => s.parse::<i64>().map(Value::from).unwrap_or_else(|_| i.clone()),
            other => other.clone(),
        };
    }
    if let Some(d) = o.get("doubleValue") {
        return match d {
            Value::String(s) => s
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map_or(d.clone(), Value::Number),
            other => other.clone(),
        };
    }
    if let Some(b) = o.get("boolValue") {
        return b.clone();
    }
    if let Some(b) = o.get("bytesValue") {
        return b.clone();
    }
    if let Some(a) = o.get("arrayValue") {
        let items = a
            .get("values")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        return Value::Array(items.iter().map(any_value).collect());
    }
    if let Some(kv) = o.get("kvlistValue") {
        return Value::Object(attributes(kv.get("values")).into_iter().collect());
    }
    if o.is_empty() {
        return Value::Null;
    }
    v.clone()
}

/// `[{key, value}]` (or a plain object) as ordered pairs.
fn attributes(v: Option<&Value>) -> Vec<(String, Value)> {
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|kv| {
                let k = kv.get("key")?.as_str()?;
                Some((k.to_string(), kv.get("value").map(any_value).unwrap_or(Value::Null)))
            })
            .collect(),
        Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => Vec::new(),
    }
}

/// A trace or span id as lower-case hex: hex of any case as is, base64 decoded.
fn norm_id(v: Option<&Value>) -> Option<String> {
    norm_id_str(v?.as_str()?).map(Cow::into_owned)
}

/// [`norm_id`] of a string, borrowed when it is already lower-case hex (nearly always).
fn norm_id_str(s: &str) -> Option<Cow<'_, str>> {
    let s = s.trim();
    if s.is_empty() || s.bytes().all(|b| b == b'0') {
        return None; // all-zero ids mean "none"
    }
    if s.len().is_multiple_of(2) && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Some(if s.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(s.to_ascii_lowercase())
        } else {
            Cow::Borrowed(s)
        });
    }
    if let Some(bytes) = base64(s).filter(|b| matches!(b.len(), 8 | 16)) {
        return Some(Cow::Owned(bytes.iter().map(|b| format!("{b:02x}")).collect()));
    }
    Some(Cow::Borrowed(s))
}

/// Standard or URL-safe base64, with or without padding.
fn base64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes().filter(|&c| c != b'=') {
        let d = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32;
        acc = (acc << 6) | d;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Nanoseconds since the epoch, as the field says (a string or a number), never rescaled.
fn nanos(v: Option<&Value>) -> Option<i64> {
    let n = match v? {
        Value::String(s) => s.trim().parse::<u64>().ok()?,
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))?,
        _ => return None,
    };
    (n > 0).then(|| n.min(i64::MAX as u64) as i64)
}

/// An OTel JS `HrTime`, `[seconds, nanoseconds]` (the SDK's file and console exporters), as
/// nanoseconds since the epoch.
fn hr_time(v: Option<&Value>) -> Option<i64> {
    match v?.as_array()?.as_slice() {
        [s, n] => hr_nanos(s.as_u64()?, n.as_u64()?),
        _ => None,
    }
}

fn hr_nanos(secs: u64, nanos: u64) -> Option<i64> {
    let n = secs.checked_mul(1_000_000_000)?.checked_add(nanos)?;
    (n > 0).then(|| n.min(i64::MAX as u64) as i64)
}

fn get<'a>(attrs: &'a [(String, Value)], key: &str) -> Option<&'a Value> {
    attrs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
        .filter(|v| !v.is_null())
}

fn get_str<'a>(attrs: &'a [(String, Value)], key: &str) -> Option<&'a str> {
    get(attrs, key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// `gen_ai.prompt.0.role`, `gen_ai.prompt.0.content`, ... (older instrumentations) as a list.
fn indexed(attrs: &[(String, Value)], prefix: &str) -> Option<Value> {
    let mut items: Vec<(usize, Map<String, Value>)> = Vec::new();
    for (k, v) in attrs {
        let Some(rest) = k.strip_prefix(prefix).and_then(|r| r.strip_prefix('.')) else {
            continue;
        };
        let Some((idx, field)) = rest.split_once('.') else {
            continue;
        };
        let Ok(i) = idx.parse::<usize>() else { continue };
        if let Some(pos) = items.iter().position(|(j, _)| *j == i) {
            items[pos].1.insert(field.to_string(), v.clone());
        } else if items.len() < 10_000 {
            let mut m = Map::new();
            m.insert(field.to_string(), v.clone());
            items.push((i, m));
        }
    }
    if items.is_empty() {
        return None;
    }
    items.sort_by_key(|(i, _)| *i);
    Some(Value::Array(items.into_iter().map(|(_, m)| Value::Object(m)).collect()))
}

/// Attribute keys the event shows in its own fields; the rest are shown as attributes.
const MAPPED: [&str; 26] = [
    "gen_ai.operation.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.prompt_tokens",
    "gen_ai.usage.completion_tokens",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.prompt",
    "gen_ai.completion",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "openinference.span.kind",
    "llm.model_name",
    "llm.token_count.prompt",
    "llm.token_count.completion",
    "llm.token_count.total",
    "tool.name",
    "input.value",
    "output.value",
    "gen_ai.tool.args",
    "gen_ai.tool.result",
    "mcp.tool.name",
];

/// The attributes the index reads, by position in [`Attrs`].
const INDEX_KEYS: [&str; 32] = [
    "gen_ai.operation.name",
    "openinference.span.kind",
    "mcp.method.name",
    "gen_ai.system",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "llm.model_name",
    "gen_ai.tool.name",
    "tool.name",
    "mcp.tool.name",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
    "llm.token_count.total",
    // Claude Code's own spans (`claude_code.*`) name them so; read on those spans only.
    "model",
    "tool_name",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    // Cache and reasoning parts (counted inside the input and output above), recorded costs.
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_creation.input_tokens",
    "llm.token_count.prompt_details.cache_read",
    "llm.token_count.prompt_details.cache_write",
    "llm.token_count.completion_details.reasoning",
    "llm.cost.total",
    "gen_ai.usage.cost",
    // Claude Code's spans.
    "cost_usd",
    // A tool's process (Copilot's `execute_tool` spans of shell commands).
    "process.exit.code",
];
const K_OP: usize = 0;
const K_OI: usize = 1;
const K_MCP: usize = 2;
const K_SYSTEM: usize = 3;
const K_REQ_MODEL: usize = 4;
const K_RESP_MODEL: usize = 5;
const K_LLM_MODEL: usize = 6;
const K_TOOLS: [usize; 3] = [7, 8, 9];
const K_INPUT: [usize; 3] = [10, 11, 12];
const K_OUTPUT: [usize; 3] = [13, 14, 15];
const K_TOTAL: [usize; 1] = [16];
const K_CC_MODEL: usize = 17;
const K_CC_TOOL: usize = 18;
const K_CC_INPUT: usize = 19;
const K_CC_OUTPUT: usize = 20;
const K_CC_CACHE_READ: usize = 21;
const K_CC_CACHE_WRITE: usize = 22;
const K_CACHE_READ: [usize; 2] = [23, 25];
const K_CACHE_WRITE: [usize; 2] = [24, 26];
const K_REASONING: [usize; 1] = [27];
const K_COST: [usize; 2] = [28, 29];
const K_CC_COST: usize = 30;
const K_EXIT: usize = 31;

fn index_key(k: &[u8]) -> Option<usize> {
    // Most attributes are not among them: a cheap first test on the length and first byte.
    if !(5..=44).contains(&k.len()) || !matches!(k[0], b'g' | b'o' | b'm' | b'l' | b't' | b'i' | b'c' | b'p') {
        return None;
    }
    INDEX_KEYS.iter().position(|x| x.as_bytes() == k)
}

/// An attribute value the index reads: a plain `stringValue` or `intValue` as read by the
/// skimmer, anything else as [`any_value`] makes it.
#[derive(Clone, Debug, PartialEq)]
enum Av<'a> {
    Str(&'a str),
    Int(i64),
    V(Value),
}

impl Av<'_> {
    fn is_null(&self) -> bool {
        matches!(self, Av::V(Value::Null))
    }
    fn as_str(&self) -> Option<&str> {
        match self {
            Av::Str(s) => Some(s),
            Av::V(v) => v.as_str(),
            Av::Int(_) => None,
        }
    }
    /// An integer, written as a number or as a string of one.
    fn as_i64(&self) -> Option<i64> {
        match self {
            Av::Str(s) => s.trim().parse().ok(),
            Av::Int(n) => Some(*n),
            Av::V(Value::String(s)) => s.trim().parse().ok(),
            Av::V(v) => v.as_i64(),
        }
    }
    /// As [`super::lenient_u64`] reads the plain value.
    fn as_u64(&self) -> Option<u64> {
        match self {
            Av::Str(s) => s.trim().parse().ok(),
            Av::Int(n) => u64::try_from(*n).ok(),
            Av::V(v) => super::lenient_u64(Some(v)),
        }
    }
}

/// The first value of each index attribute (a repeated key: the first counts, as `get` reads).
#[derive(Clone, Debug, Default, PartialEq)]
struct Attrs<'a>([Option<Av<'a>>; 32]);

impl<'a> Attrs<'a> {
    fn from_pairs(pairs: &[(String, Value)]) -> Attrs<'a> {
        let mut a = Attrs::default();
        for (k, v) in pairs {
            if let Some(i) = index_key(k.as_bytes())
                && a.0[i].is_none()
            {
                a.0[i] = Some(Av::V(v.clone()));
            }
        }
        a
    }
    fn get(&self, k: usize) -> Option<&Av<'a>> {
        self.0[k].as_ref().filter(|v| !v.is_null())
    }
    fn str(&self, k: usize) -> Option<&str> {
        self.get(k).and_then(Av::as_str).filter(|s| !s.is_empty())
    }
    fn cow(&self, k: usize) -> Option<Cow<'a, str>> {
        match self.get(k)? {
            Av::Str(s) if !s.is_empty() => Some(Cow::Borrowed(*s)),
            Av::V(Value::String(s)) if !s.is_empty() => Some(Cow::Owned(s.clone())),
            _ => None,
        }
    }
    fn u64(&self, keys: &[usize]) -> Option<u64> {
        keys.iter().find_map(|&k| self.get(k)?.as_u64())
    }
    /// A recorded cost in dollars → microdollars, exactly as written.
    fn micros(&self, keys: &[usize]) -> Option<u64> {
        keys.iter().find_map(|&k| match self.get(k)? {
            Av::Str(s) => crate::model::micros::micros_of_decimal(s),
            Av::Int(n) => u64::try_from(*n).ok()?.checked_mul(1_000_000),
            Av::V(v) => crate::model::micros::micros_of_json(v),
        })
    }

    /// What a span is, by the conventions it follows.
    fn classify(&self) -> EventKind {
        match self.str(K_OP).unwrap_or("") {
            "chat" | "text_completion" | "generate_content" | "completion" | "embeddings" => return EventKind::LlmCall,
            "execute_tool" => return EventKind::ToolCall,
            "invoke_agent" | "create_agent" => return EventKind::Run,
            _ => {}
        }
        match self.str(K_OI).map(str::to_ascii_uppercase).as_deref() {
            Some("LLM" | "EMBEDDING") => return EventKind::LlmCall,
            Some("TOOL") => return EventKind::ToolCall,
            Some("AGENT") => return EventKind::Run,
            Some("CHAIN") => return EventKind::Step,
            _ => {}
        }
        if self.str(K_MCP) == Some("tools/call") {
            return EventKind::ToolCall;
        }
        if self.get(K_SYSTEM).is_some() || self.get(K_REQ_MODEL).is_some() || self.get(K_LLM_MODEL).is_some() {
            return EventKind::LlmCall;
        }
        EventKind::Step
    }
}

/// What a span says about itself, before it is turned into an index record.
#[derive(Default)]
struct Fields<'a> {
    trace_id: Option<Cow<'a, str>>,
    span_id: Option<Cow<'a, str>>,
    parent_id: Option<Cow<'a, str>>,
    /// The span's `name` when it is a string.
    name: Option<Cow<'a, str>>,
    start: Option<i64>,
    end: Option<i64>,
    status_error: bool,
    exception: bool,
    attrs: Attrs<'a>,
}

/// One span as the index needs it; its payload stays in `bytes` (on disk).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SpanRec<'a> {
    /// The span object's own bytes: a part of the line (or document entry).
    bytes: &'a [u8],
    /// Index into the batch's scopes.
    scope: u32,
    /// Why the span is skipped.
    bad: Option<&'static str>,
    trace_id: Option<Cow<'a, str>>,
    span_id: Option<Cow<'a, str>>,
    parent_id: Option<Cow<'a, str>>,
    kind: EventKind,
    name: Cow<'a, str>,
    model: Option<Cow<'a, str>>,
    usage: Option<Usage>,
    start: Option<i64>,
    end: Option<i64>,
    error: bool,
}

impl<'a> SpanRec<'a> {
    fn bad(bytes: &'a [u8], scope: u32, why: &'static str) -> SpanRec<'a> {
        SpanRec {
            bytes,
            scope,
            bad: Some(why),
            trace_id: None,
            span_id: None,
            parent_id: None,
            kind: EventKind::Step,
            name: Cow::Borrowed(""),
            model: None,
            usage: None,
            start: None,
            end: None,
            error: false,
        }
    }

    /// The index fields of a span (the pure part, done while skimming).
    fn of(bytes: &'a [u8], scope: u32, f: Fields<'a>) -> SpanRec<'a> {
        if f.trace_id.is_none() {
            return SpanRec::bad(bytes, scope, "a span without `traceId`; skipped");
        }
        let a = &f.attrs;
        let mut kind = a.classify();
        let span_name = f.name.unwrap_or(Cow::Borrowed("span"));
        // Claude Code's own spans: a tool span per call (its execution and permission wait
        // are steps inside it) and an LLM request span with flat token attributes.
        let cc = match span_name.as_ref() {
            "claude_code.llm_request" => Some(EventKind::LlmCall),
            "claude_code.tool" => Some(EventKind::ToolCall),
            _ => None,
        };
        if let Some(k) = cc {
            kind = k;
        }
        let model = a
            .cow(K_RESP_MODEL)
            .or_else(|| a.cow(K_REQ_MODEL))
            .or_else(|| a.cow(K_LLM_MODEL))
            .or_else(|| cc.and_then(|_| a.cow(K_CC_MODEL)));
        let tool = K_TOOLS
            .iter()
            .find_map(|&k| a.cow(k))
            .or_else(|| cc.and_then(|_| a.cow(K_CC_TOOL)))
            .or_else(|| match &span_name {
                _ if kind != EventKind::ToolCall => None,
                Cow::Borrowed(s) => s.strip_prefix("tools/call ").map(Cow::Borrowed),
                Cow::Owned(s) => s.strip_prefix("tools/call ").map(|t| Cow::Owned(t.to_string())),
            });
        // A tool's process that exited non-zero failed, whatever the span's status says (as
        // Codex's and Copilot's session files are read).
        let exited = kind == EventKind::ToolCall && a.get(K_EXIT).and_then(Av::as_i64).is_some_and(|c| c != 0);
        let error = f.status_error || f.exception || exited;
        let name = match kind {
            EventKind::ToolCall => tool.unwrap_or(span_name),
            EventKind::LlmCall => model.clone().unwrap_or(span_name),
            _ => span_name,
        };
        if kind == EventKind::Step && error && name == "exception" {
            kind = EventKind::Error;
        }
        // GenAI and OpenInference count the cache inside the input and reasoning inside the
        // output, as OpenAI does.
        let mut usage = super::usage_openai(Usage {
            input: a.u64(&K_INPUT),
            output: a.u64(&K_OUTPUT),
            total: a.u64(&K_TOTAL),
            cache_read: a.u64(&K_CACHE_READ),
            cache_write: a.u64(&K_CACHE_WRITE),
            reasoning: a.u64(&K_REASONING),
            cost: a.micros(&K_COST),
            ..Default::default()
        });
        if cc == Some(EventKind::LlmCall) && usage.is_empty() {
            // Claude Code counts as Anthropic does: input without the cache.
            usage = Usage {
                input: a.u64(&[K_CC_INPUT]),
                output: a.u64(&[K_CC_OUTPUT]),
                cache_read: a.u64(&[K_CC_CACHE_READ]),
                cache_write: a.u64(&[K_CC_CACHE_WRITE]),
                cost: a.micros(&[K_CC_COST]),
                ..Default::default()
            };
        }
        SpanRec {
            bytes,
            scope,
            bad: None,
            trace_id: f.trace_id,
            span_id: f.span_id,
            parent_id: f.parent_id,
            kind,
            name,
            model,
            usage: (!usage.is_empty()).then_some(usage),
            start: f.start,
            end: f.end,
            error,
        }
    }
}

/// One batch line (or one `resourceSpans` entry of a document): its spans, in order.
#[derive(Default, Debug, PartialEq)]
pub(crate) struct Batch<'a> {
    /// Each resource's attributes, as raw JSON (read when a trace is first met).
    resources: Vec<Option<&'a str>>,
    /// Each scope: (its resource, its name).
    scopes: Vec<(u32, Option<Cow<'a, str>>)>,
    spans: Vec<SpanRec<'a>>,
    /// Log records (a `resourceLogs` batch), in order.
    logs: Vec<LogRec<'a>>,
    /// A line of another kind, skipped quietly and counted by its name (formats/mod.rs,
    /// drift): a `metric` line of the OTel JS file exporter, a `resourceMetrics` batch, a
    /// line shape newer than this reader; true: it carries text, shown as a generic event.
    skipped: Option<(Cow<'a, str>, bool)>,
}

// ---- The straightforward reading: serde_json values (the fallback, and the tests' oracle).

/// A span read from a parsed value.
fn span_slow<'a>(bytes: &'a [u8], scope: u32) -> SpanRec<'a> {
    let s = match serde_json::from_slice::<Value>(bytes) {
        Ok(v) if v.is_object() => v,
        Ok(_) => return SpanRec::bad(bytes, scope, "a span is not a JSON object; skipped"),
        Err(_) => return SpanRec::bad(bytes, scope, "a span is not valid JSON; skipped"),
    };
    SpanRec::of(bytes, scope, fields_of(&s))
}

fn fields_of<'a>(s: &Value) -> Fields<'a> {
    let id = |a: &str, b: &str| norm_id(s.get(a).or_else(|| s.get(b))).map(Cow::Owned);
    let status_code = s.get("status").and_then(|x| x.get("code"));
    Fields {
        trace_id: id("traceId", "trace_id"),
        span_id: id("spanId", "span_id"),
        parent_id: id("parentSpanId", "parent_span_id"),
        name: s.get("name").and_then(Value::as_str).map(|n| Cow::Owned(n.to_string())),
        start: nanos(s.get("startTimeUnixNano")).or_else(|| hr_time(s.get("startTime"))),
        end: nanos(s.get("endTimeUnixNano")).or_else(|| hr_time(s.get("endTime"))),
        status_error: status_is_error(status_code),
        exception: s.get("events").and_then(Value::as_array).is_some_and(|evs| {
            evs.iter()
                .any(|e| e.get("name").and_then(Value::as_str) == Some("exception"))
        }),
        attrs: Attrs::from_pairs(&attributes(s.get("attributes"))),
    }
}

/// Status code 2 (or its enum name) is an error.
fn status_is_error(code: Option<&Value>) -> bool {
    matches!(code, Some(Value::Number(n)) if n.as_u64() == Some(2))
        || matches!(code, Some(Value::String(c)) if c == "STATUS_CODE_ERROR" || c == "2")
}

type RawMap<'a> = HashMap<String, &'a RawValue>;

/// A batch line by serde_json, keeping each span's bytes; None: not a batch (apply says why).
fn line_slow<'a>(line: &'a [u8], b: &mut Batch<'a>) -> Option<()> {
    let top: RawMap = serde_json::from_slice(line).ok()?;
    if let Some(logs) = top.get("resourceLogs").filter(|_| !top.contains_key("resourceSpans")) {
        let list: Vec<&RawValue> = serde_json::from_str(logs.get()).ok()?;
        for r in list {
            resource_logs(r.get(), b);
        }
        return Some(());
    }
    if let Some(spans) = top.get("resourceSpans") {
        let list: Vec<&RawValue> = serde_json::from_str(spans.get()).ok()?;
        for r in list {
            resource_slow(r.get(), b);
        }
        return Some(());
    }
    match top.get("type").map(|t| serde_json::from_str::<String>(t.get())) {
        Some(Ok(t)) if t == "span" => {
            exported_slow(line, &top, b);
            Some(())
        }
        Some(Ok(t)) => {
            // The file exporter's metrics are not a trace's; any other type is a newer one.
            let show = t != "metric" && drift_shown(line);
            b.skipped = Some((Cow::Owned(t), show));
            Some(())
        }
        Some(Err(_)) => None,
        None => {
            // Another OTLP signal's batch (`resourceMetrics`, `resourceProfiles`, ...).
            let mut keys: Vec<&String> = top.keys().filter(|k| k.starts_with("resource")).collect();
            keys.sort();
            let k = keys.first()?;
            b.skipped = Some((Cow::Owned(k.to_string()), drift_shown(line)));
            Some(())
        }
    }
}

/// Whether a skipped line carries text (then it is shown as a generic event).
fn drift_shown(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line)
        .ok()
        .as_ref()
        .and_then(super::drift_text)
        .is_some()
}

/// Whether a record is a line that was skipped (shown for its text): not a span, not a log
/// record, not a batch.
fn is_skipped_line(v: &Value) -> bool {
    match v.get("type") {
        Some(t) => t.as_str() != Some("span"),
        None => {
            v.get("traceId").is_none()
                && v.as_object().is_some_and(|m| {
                    m.keys()
                        .any(|k| k.starts_with("resource") && k != "resourceSpans" && k != "resourceLogs")
                })
        }
    }
}

/// A line of the OTel JS SDK's file exporter, `{"type": "span", ...}`: a span object with its
/// `resource` and `instrumentationScope` beside its fields, by serde_json.
fn exported_slow<'a>(line: &'a [u8], top: &RawMap<'a>, b: &mut Batch<'a>) {
    let res = top
        .get("resource")
        .and_then(|x| serde_json::from_str::<RawMap>(x.get()).ok())
        .and_then(|m| m.get("attributes").map(|a| a.get()));
    b.resources.push(res.filter(|a| *a != "null"));
    let scope = top
        .get("instrumentationScope")
        .and_then(|x| serde_json::from_str::<Value>(x.get()).ok())
        .and_then(|x| x.get("name").and_then(Value::as_str).map(|n| Cow::Owned(n.to_string())));
    b.scopes.push((0, scope));
    b.spans.push(span_slow(line, 0));
}

/// [`exported_slow`] by the skimmer; None: unsure, or not a `span` line.
fn exported_fast<'a>(line: &'a [u8], b: &mut Batch<'a>) -> Option<()> {
    let mut k = Skim::new(line);
    if k.next_byte()? != b'{' {
        return None;
    }
    let mut f = Fields::default();
    let mut seen = Seen::default();
    let (mut ty, mut res, mut scope) = (None, None, None);
    span_fast_with(&mut k, &mut f, &mut |k, key| {
        match key {
            b"type" => {
                seen.first(0)?;
                ty = k.opt_str()?;
            }
            b"resource" | b"instrumentationScope" => {
                let is_res = key == b"resource";
                seen.first(if is_res { 1 } else { 2 })?;
                if k.is_null_next() {
                    k.skip()?;
                    return Some(true);
                }
                let mut inner = Seen::default();
                k.object(|k, key| match key {
                    b"attributes" if is_res => {
                        inner.first(0)?;
                        res = k.raw()?.map(|r| r.0);
                        Some(())
                    }
                    b"name" if !is_res => {
                        inner.first(0)?;
                        scope = k.opt_cow()?;
                        Some(())
                    }
                    _ => k.skip(),
                })?;
            }
            _ => return Some(false),
        }
        Some(true)
    })?;
    if !k.at_end() || ty != Some("span") {
        return None;
    }
    b.resources.push(res.filter(|a| *a != "null"));
    b.scopes.push((0, scope));
    b.spans.push(SpanRec::of(line, 0, f));
    Some(())
}

/// One `resourceSpans` entry by serde_json (anything but an object holds no spans).
fn resource_slow<'a>(entry: &'a str, b: &mut Batch<'a>) {
    let Ok(r) = serde_json::from_str::<RawMap>(entry) else {
        return;
    };
    let res = b.resources.len() as u32;
    let attrs = r
        .get("resource")
        .and_then(|x| serde_json::from_str::<RawMap>(x.get()).ok())
        .and_then(|m| m.get("attributes").map(|a| a.get()));
    b.resources.push(attrs.filter(|a| *a != "null"));
    let scopes = r.get("scopeSpans").or_else(|| r.get("instrumentationLibrarySpans"));
    let scopes: Vec<&RawValue> = scopes
        .and_then(|s| serde_json::from_str(s.get()).ok())
        .unwrap_or_default();
    for s in scopes {
        let Ok(s) = serde_json::from_str::<RawMap>(s.get()) else {
            continue;
        };
        let scope = b.scopes.len() as u32;
        let name = s
            .get("scope")
            .or_else(|| s.get("instrumentationLibrary"))
            .and_then(|x| serde_json::from_str::<Value>(x.get()).ok())
            .and_then(|x| x.get("name").and_then(Value::as_str).map(|n| Cow::Owned(n.to_string())));
        b.scopes.push((res, name));
        let spans: Vec<&RawValue> = s
            .get("spans")
            .and_then(|x| serde_json::from_str(x.get()).ok())
            .unwrap_or_default();
        for sp in spans {
            let bytes = sp.get().as_bytes();
            let mut f = Fields::default();
            let rec = if bytes.first() == Some(&b'{') && span_fast(&mut Skim::new(bytes), &mut f).is_some() {
                SpanRec::of(bytes, scope, f)
            } else {
                span_slow(bytes, scope)
            };
            b.spans.push(rec);
        }
    }
}

// ---- Log records (`resourceLogs`): GenAI events of Claude Code, Codex, Copilot and the OTel
// GenAI conventions, read by serde_json (logs are far fewer than spans).

/// One log record as the index needs it; its payload stays in `bytes` (on disk).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LogRec<'a> {
    bytes: &'a [u8],
    /// Index into the batch's resources.
    resource: u32,
    /// Why the record is skipped.
    bad: Option<&'static str>,
    /// A streaming notification that carries nothing for the tree (Codex's `sse_event`s
    /// without token counts): no event.
    quiet: bool,
    trace_id: Option<String>,
    span_id: Option<String>,
    /// The session or conversation the record names (runs without trace ids group by it).
    session: Option<String>,
    id: Option<String>,
    kind: EventKind,
    name: String,
    model: Option<String>,
    usage: Option<Usage>,
    start: Option<i64>,
    duration: Option<i64>,
    error: bool,
    /// A GenAI event (of the OTel GenAI conventions or an agent's own), not a generic log line.
    genai: bool,
}

/// Log events that record a tool's execution: the only log records that are tool calls.
const TOOL_EVENTS: [&str; 3] = ["claude_code.tool_result", "codex.tool_result", "copilot_chat.tool.call"];

/// The namespaces of GenAI events: the OTel GenAI conventions' and the agents' own.
const GENAI_EVENTS: [&str; 5] = ["gen_ai.", "claude_code.", "codex.", "copilot_chat.", "github.copilot."];

/// Attributes naming the session a log record belongs to, in order of preference.
const SESSION_KEYS: [&str; 4] = ["session.id", "conversation.id", "gen_ai.conversation.id", "thread.id"];

/// One `resourceLogs` entry by serde_json.
fn resource_logs<'a>(entry: &'a str, b: &mut Batch<'a>) {
    let Ok(r) = serde_json::from_str::<RawMap>(entry) else {
        return;
    };
    let res = b.resources.len() as u32;
    let attrs = r
        .get("resource")
        .and_then(|x| serde_json::from_str::<RawMap>(x.get()).ok())
        .and_then(|m| m.get("attributes").map(|a| a.get()));
    b.resources.push(attrs.filter(|a| *a != "null"));
    let scopes: Vec<&RawValue> = r
        .get("scopeLogs")
        .or_else(|| r.get("instrumentationLibraryLogs"))
        .and_then(|s| serde_json::from_str(s.get()).ok())
        .unwrap_or_default();
    for s in scopes {
        let Ok(s) = serde_json::from_str::<RawMap>(s.get()) else {
            continue;
        };
        let records: Vec<&RawValue> = s
            .get("logRecords")
            .and_then(|x| serde_json::from_str(x.get()).ok())
            .unwrap_or_default();
        for lr in records {
            b.logs.push(log_rec(lr.get().as_bytes(), res));
        }
    }
}

fn attr_u64(attrs: &[(String, Value)], key: &str) -> Option<u64> {
    get(attrs, key).and_then(|v| super::lenient_u64(Some(v)))
}

/// A boolean attribute that may be written as a string.
fn attr_false(attrs: &[(String, Value)], key: &str) -> bool {
    match get(attrs, key) {
        Some(Value::Bool(b)) => !b,
        Some(Value::String(s)) => s.eq_ignore_ascii_case("false"),
        _ => false,
    }
}

/// The event a log record names: `eventName`, a dotted body (Claude Code writes the event's
/// name there), else the `event.name` attribute.
fn log_event_name(v: &Value, attrs: &[(String, Value)]) -> Option<String> {
    let named = v.get("eventName").and_then(Value::as_str).filter(|s| !s.is_empty());
    let body = v
        .get("body")
        .map(any_value)
        .and_then(|b| b.as_str().map(str::to_string))
        .filter(|b| b.len() < 100 && b.contains('.') && !b.contains(char::is_whitespace));
    named.map(str::to_string).or(body).or_else(|| {
        get_str(attrs, "event.name")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    })
}

fn log_rec(bytes: &[u8], resource: u32) -> LogRec<'_> {
    let mut r = LogRec {
        bytes,
        resource,
        bad: None,
        quiet: false,
        trace_id: None,
        span_id: None,
        session: None,
        id: None,
        kind: EventKind::Other,
        name: String::new(),
        model: None,
        usage: None,
        start: None,
        duration: None,
        error: false,
        genai: false,
    };
    let v: Value = match serde_json::from_slice::<Value>(bytes) {
        Ok(v) if v.is_object() => v,
        _ => {
            r.bad = Some("a log record is not a JSON object; skipped");
            return r;
        }
    };
    let attrs = attributes(v.get("attributes"));
    let id = |a: &str, b: &str| norm_id(v.get(a).or_else(|| v.get(b)));
    r.trace_id = id("traceId", "trace_id");
    r.span_id = id("spanId", "span_id");
    r.session = SESSION_KEYS
        .iter()
        .find_map(|k| get_str(&attrs, k).filter(|s| !s.is_empty()))
        .map(str::to_string);
    let time = [v.get("timeUnixNano"), v.get("observedTimeUnixNano")]
        .into_iter()
        .find_map(|t| nanos(t).filter(|&n| n > 0))
        .or_else(|| get(&attrs, "event.timestamp").and_then(parse_timestamp));
    let name = log_event_name(&v, &attrs).unwrap_or_else(|| "log".to_string());
    r.genai = GENAI_EVENTS.iter().any(|p| name.starts_with(p)) || attrs.iter().any(|(k, _)| k.starts_with("gen_ai."));
    let bare = name.rsplit('.').next().unwrap_or(&name).to_string();
    let codex = name.starts_with("codex.");
    let model = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| get_str(&attrs, k).filter(|s| !s.is_empty()).map(str::to_string))
    };
    let severe = v
        .get("severityNumber")
        .and_then(|n| super::lenient_u64(Some(n)))
        .is_some_and(|n| n >= 17);
    r.error = severe;
    r.name.clone_from(&name);
    match (name.as_str(), bare.as_str()) {
        ("gen_ai.client.inference.operation.details", _) => {
            r.kind = EventKind::LlmCall;
            r.model = model(&["gen_ai.response.model", "gen_ai.request.model"]);
            r.usage = Some(super::usage_openai(Usage {
                input: attr_u64(&attrs, "gen_ai.usage.input_tokens"),
                output: attr_u64(&attrs, "gen_ai.usage.output_tokens"),
                cache_read: attr_u64(&attrs, "gen_ai.usage.cache_read.input_tokens"),
                cache_write: attr_u64(&attrs, "gen_ai.usage.cache_creation.input_tokens"),
                ..Default::default()
            }));
        }
        (_, "sse_event") if codex => {
            let input = attr_u64(&attrs, "input_token_count");
            let output = attr_u64(&attrs, "output_token_count");
            if input.is_none() && output.is_none() {
                r.quiet = !r.error;
            } else {
                r.kind = EventKind::LlmCall;
                r.model = model(&["model", "slug"]);
                // Codex's counts: cached inside input, reasoning inside output.
                r.usage = Some(super::usage_openai(Usage {
                    input,
                    output,
                    cache_read: attr_u64(&attrs, "cached_token_count"),
                    reasoning: attr_u64(&attrs, "reasoning_token_count"),
                    ..Default::default()
                }));
            }
        }
        (_, "api_request") if !codex => {
            // Claude Code: the request's usage as Anthropic counts it (input without the
            // cache) and the cost it computed.
            r.kind = EventKind::LlmCall;
            r.model = model(&["model", "gen_ai.request.model"]);
            r.usage = Some(Usage {
                input: attr_u64(&attrs, "input_tokens"),
                output: attr_u64(&attrs, "output_tokens"),
                cache_read: attr_u64(&attrs, "cache_read_tokens"),
                cache_write: attr_u64(&attrs, "cache_creation_tokens"),
                cost: get(&attrs, "cost_usd").and_then(crate::model::micros::micros_of_json),
                ..Default::default()
            });
        }
        (_, "api_request") => {
            r.kind = EventKind::Step;
            r.error |= get_str(&attrs, "error.message").is_some_and(|m| !m.is_empty())
                || attr_u64(&attrs, "http.response.status_code").is_some_and(|c| c >= 400);
        }
        (_, "api_error") => {
            r.kind = EventKind::Error;
            r.model = model(&["model"]);
            r.error = true;
        }
        // Only an event that records a tool's execution is a tool call, never a log line.
        (n, _) if TOOL_EVENTS.contains(&n) => {
            r.kind = EventKind::ToolCall;
            r.name = model(&["tool_name", "gen_ai.tool.name", "tool.name"]).unwrap_or_else(|| "tool".into());
            r.id = model(&["tool_use_id", "call_id", "gen_ai.tool.call.id"]);
            r.error |= attr_false(&attrs, "success") || get_str(&attrs, "error").is_some_and(|e| !e.is_empty());
        }
        ("gen_ai.user.message", _) | (_, "user_prompt") => r.kind = EventKind::Message(Role::User),
        ("gen_ai.system.message", _) => r.kind = EventKind::Message(Role::System),
        ("gen_ai.assistant.message" | "gen_ai.choice", _) => r.kind = EventKind::Message(Role::Assistant),
        ("gen_ai.tool.message", _) => r.kind = EventKind::Message(Role::Tool),
        _ if r.error => r.kind = EventKind::Error,
        _ => {}
    }
    if r.usage.as_ref().is_some_and(Usage::is_empty) {
        r.usage = None;
    }
    // An LLM call is named by its model, as LLM spans are.
    if r.kind == EventKind::LlmCall
        && let Some(m) = &r.model
    {
        r.name.clone_from(m);
    }
    // Events are written when what they tell of ended: it started its duration before.
    r.duration = attr_u64(&attrs, "duration_ms")
        .filter(|_| matches!(r.kind, EventKind::LlmCall | EventKind::ToolCall | EventKind::Step))
        .map(|ms| (ms.min(i64::MAX as u64 / 1_000_000) as i64) * 1_000_000);
    r.start = match (time, r.duration) {
        (Some(t), Some(d)) => Some(t.saturating_sub(d)),
        (t, _) => t,
    };
    r
}

/// A log record's payload from its own JSON: what it says, by the conventions it follows.
fn log_payload(v: &Value) -> Payload {
    let attrs = attributes(v.get("attributes"));
    let pick = |keys: &[&str]| keys.iter().find_map(|k| get(&attrs, k)).map(decode_embedded);
    let mut p = Payload {
        input: pick(&[
            "prompt",
            "tool_parameters",
            "tool_input",
            "arguments",
            "gen_ai.tool.call.arguments",
            "gen_ai.input.messages",
        ]),
        output: pick(&["output", "gen_ai.tool.call.result", "gen_ai.output.messages"]),
        ..Default::default()
    };
    let body = v.get("body").map(any_value).filter(|b| !b.is_null());
    if p.input.is_none() {
        // A GenAI message event carries the message as its body.
        p.input = body
            .clone()
            .filter(|b| !b.is_string() || b.as_str().is_some_and(|s| s.contains(char::is_whitespace)));
    }
    let failed = attr_false(&attrs, "success") || get_str(&attrs, "error").is_some_and(|e| !e.is_empty());
    let message = get_str(&attrs, "error")
        .or_else(|| get_str(&attrs, "error.message"))
        .filter(|m| !m.is_empty());
    if failed || message.is_some() {
        p.error = Some(ErrorInfo {
            kind: get_str(&attrs, "status_code").map(str::to_string),
            message: message.unwrap_or("the tool reported a failure").to_string(),
            ..Default::default()
        });
    }
    const SHOWN: [&str; 9] = [
        "prompt",
        "tool_parameters",
        "tool_input",
        "arguments",
        "output",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
    ];
    let rest: Map<String, Value> = attrs
        .iter()
        .filter(|(k, _)| !SHOWN.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !rest.is_empty() {
        p.extra.push(("attributes".into(), Value::Object(rest)));
    }
    for k in ["severityText", "eventName"] {
        if let Some(x) = v.get(k).filter(|x| !x.is_null()) {
            p.extra.push((k.into(), x.clone()));
        }
    }
    if let Some(b) = body {
        p.extra.push(("body".into(), b));
    }
    p
}

/// Whether a record is a log record (else a span): spans have a start time and a name.
fn is_log_record(v: &Value) -> bool {
    v.get("startTimeUnixNano").is_none()
        && [
            "timeUnixNano",
            "observedTimeUnixNano",
            "body",
            "severityNumber",
            "eventName",
        ]
        .iter()
        .any(|k| v.get(k).is_some())
}

// ---- The fast reading: the skimmer (never more lenient than serde_json; unsure: None).

/// A batch line by the skimmer.
fn line_fast<'a>(line: &'a [u8], b: &mut Batch<'a>) -> Option<()> {
    let mut k = Skim::new(line);
    let mut seen = Seen::default();
    k.object(|k, key| match key {
        b"resourceSpans" => {
            seen.first(0)?;
            k.array(|k, _| resource_fast(k, line, b))
        }
        _ => k.skip(),
    })?;
    (k.at_end() && seen.has(0)).then_some(())
}

/// One `resourceSpans` entry by the skimmer; `src` is what the skimmer reads.
fn resource_fast<'a>(k: &mut Skim<'a>, src: &'a [u8], b: &mut Batch<'a>) -> Option<()> {
    let res = b.resources.len() as u32;
    b.resources.push(None);
    let mut seen = Seen::default();
    k.object(|k, key| match key {
        b"resource" => {
            seen.first(0)?;
            let mut inner = Seen::default();
            k.object(|k, key| match key {
                b"attributes" => {
                    inner.first(0)?;
                    b.resources[res as usize] = k.raw()?.map(|r| r.0);
                    Some(())
                }
                _ => k.skip(),
            })
        }
        b"scopeSpans" | b"instrumentationLibrarySpans" => {
            // Both (which one counts depends on more than order): left to serde_json.
            seen.first(1)?;
            if k.is_null_next() {
                return k.skip();
            }
            k.array(|k, _| scope_fast(k, src, res, b))
        }
        _ => k.skip(),
    })
}

fn scope_fast<'a>(k: &mut Skim<'a>, src: &'a [u8], res: u32, b: &mut Batch<'a>) -> Option<()> {
    let scope = b.scopes.len() as u32;
    b.scopes.push((res, None));
    let mut seen = Seen::default();
    k.object(|k, key| match key {
        b"scope" | b"instrumentationLibrary" => {
            seen.first(0)?;
            if k.is_null_next() {
                return k.skip();
            }
            let mut inner = Seen::default();
            k.object(|k, key| match key {
                b"name" => {
                    inner.first(0)?;
                    b.scopes[scope as usize].1 = k.opt_cow()?;
                    Some(())
                }
                _ => k.skip(),
            })
        }
        b"spans" => {
            seen.first(1)?;
            if k.is_null_next() {
                return k.skip();
            }
            k.array(|k, _| {
                let at = k.value_start();
                if k.next_byte()? != b'{' {
                    k.skip()?;
                    b.spans.push(SpanRec::bad(
                        &src[at..k.at()],
                        scope,
                        "a span is not a JSON object; skipped",
                    ));
                    return Some(());
                }
                let mut f = Fields::default();
                span_fast(k, &mut f)?;
                b.spans.push(SpanRec::of(&src[at..k.at()], scope, f));
                Some(())
            })
        }
        _ => k.skip(),
    })
}

/// One span object's index fields by the skimmer.
fn span_fast<'a>(k: &mut Skim<'a>, f: &mut Fields<'a>) -> Option<()> {
    span_fast_with(k, f, &mut |_, _| Some(false))
}

/// [`span_fast`], `other` reading the keys a span does not have (true: it read the value).
fn span_fast_with<'a>(
    k: &mut Skim<'a>,
    f: &mut Fields<'a>,
    other: &mut dyn FnMut(&mut Skim<'a>, &'a [u8]) -> Option<bool>,
) -> Option<()> {
    let mut seen = Seen::default();
    // `[seconds, nanoseconds]` times (the OTel JS exporters' shape), used without the
    // nanosecond fields.
    let mut hr: [Option<i64>; 2] = [None; 2];
    // Both spellings of an id may be there: the camelCase one counts when present.
    let mut ids: [Option<Option<&'a str>>; 6] = [None; 6];
    k.object(|k, key| {
        let id: Option<usize> = match key {
            b"traceId" => Some(0),
            b"trace_id" => Some(1),
            b"spanId" => Some(2),
            b"span_id" => Some(3),
            b"parentSpanId" => Some(4),
            b"parent_span_id" => Some(5),
            _ => None,
        };
        if let Some(i) = id {
            seen.first(i as u32)?;
            ids[i] = Some(k.opt_str()?);
            return Some(());
        }
        match key {
            b"name" => {
                seen.first(6)?;
                f.name = k.opt_cow()?;
            }
            b"startTimeUnixNano" => {
                seen.first(7)?;
                f.start = nanos_scalar(k.scalar()?)?;
            }
            b"endTimeUnixNano" => {
                seen.first(8)?;
                f.end = nanos_scalar(k.scalar()?)?;
            }
            b"status" => {
                seen.first(9)?;
                f.status_error = status_fast(k)?;
            }
            b"events" => {
                seen.first(10)?;
                f.exception = events_fast(k)?;
            }
            b"attributes" => {
                seen.first(11)?;
                attrs_fast(k, &mut f.attrs)?;
            }
            b"startTime" | b"endTime" => {
                let i = usize::from(key == b"endTime");
                seen.first(12 + i as u32)?;
                hr[i] = hr_fast(k)?;
            }
            _ => {
                if !other(k, key)? {
                    k.skip()?;
                }
            }
        }
        Some(())
    })?;
    f.start = f.start.or(hr[0]);
    f.end = f.end.or(hr[1]);
    let pick = |a: usize| -> Option<Cow<'a, str>> {
        let v = if ids[a].is_some() { ids[a] } else { ids[a + 1] };
        norm_id_str(v??)
    };
    f.trace_id = pick(0);
    f.span_id = pick(2);
    f.parent_id = pick(4);
    Some(())
}

/// [`nanos`] of a skimmed value; the outer None: left to serde_json.
fn nanos_scalar(v: Scalar) -> Option<Option<i64>> {
    let n = match v {
        Scalar::Null => return Some(None),
        Scalar::Str(s) => s.trim().parse::<u64>().ok(),
        Scalar::Other(raw) => match raw.first()? {
            b'-' | b'0'..=b'9' => {
                let s = std::str::from_utf8(raw).ok()?;
                // serde_json reads an integer beyond u64 or with a fraction as f64.
                s.parse::<u64>()
                    .ok()
                    .or_else(|| s.parse::<f64>().ok().filter(|f| *f >= 0.0).map(|f| f as u64))
            }
            _ => None,
        },
    };
    Some(n.filter(|&n| n > 0).map(|n| n.min(i64::MAX as u64) as i64))
}

fn status_fast(k: &mut Skim) -> Option<bool> {
    if k.next_byte()? != b'{' {
        k.skip()?;
        return Some(false);
    }
    let mut error = false;
    let mut seen = Seen::default();
    k.object(|k, key| match key {
        b"code" => {
            seen.first(0)?;
            error = match k.scalar()? {
                Scalar::Str(c) => c == "STATUS_CODE_ERROR" || c == "2",
                Scalar::Other(raw) => raw == b"2",
                Scalar::Null => false,
            };
            Some(())
        }
        _ => k.skip(),
    })?;
    Some(error)
}

/// Whether a span's events hold an `exception`.
fn events_fast(k: &mut Skim) -> Option<bool> {
    if k.next_byte()? != b'[' {
        k.skip()?;
        return Some(false);
    }
    let mut exception = false;
    k.array(|k, _| {
        if k.next_byte()? != b'{' {
            return k.skip();
        }
        let mut seen = Seen::default();
        k.object(|k, key| match key {
            b"name" => {
                seen.first(0)?;
                // A string with an escape is unsure (and so is a name of another type).
                exception |= k.opt_str()? == Some("exception");
                Some(())
            }
            _ => k.skip(),
        })
    })?;
    Some(exception)
}

/// [`hr_time`] of a skimmed value; the outer None: left to serde_json.
fn hr_fast(k: &mut Skim) -> Option<Option<i64>> {
    if k.next_byte()? != b'[' {
        k.skip()?;
        return Some(None);
    }
    let mut parts: Vec<Option<u64>> = Vec::with_capacity(2);
    k.array(|k, _| {
        parts.push(match k.scalar()? {
            // Digits only: what serde_json reads as a u64 or not at all (too large).
            Scalar::Other(raw) if raw.iter().all(u8::is_ascii_digit) => std::str::from_utf8(raw).ok()?.parse().ok(),
            // Another number (a sign, a fraction, an exponent): left to serde_json.
            Scalar::Other([b'-' | b'0'..=b'9', ..]) => return None,
            _ => None,
        });
        Some(())
    })?;
    Some(match parts.as_slice() {
        [Some(s), Some(n)] => hr_nanos(*s, *n),
        _ => None,
    })
}

/// Attributes as a plain object (the OTel JS exporters' shape): each value as it is. A
/// repeated index key is left to serde_json (whose map keeps the last).
fn attrs_object_fast<'a>(k: &mut Skim<'a>, a: &mut Attrs<'a>) -> Option<()> {
    k.object(|k, key| {
        let Some(i) = index_key(key) else {
            return k.skip();
        };
        if a.0[i].is_some() {
            return None;
        }
        a.0[i] = Some(match k.scalar()? {
            Scalar::Str(s) => Av::Str(s),
            Scalar::Null => Av::V(Value::Null),
            Scalar::Other(raw) => Av::V(serde_json::from_slice(raw).ok()?),
        });
        Some(())
    })
}

fn attrs_fast<'a>(k: &mut Skim<'a>, a: &mut Attrs<'a>) -> Option<()> {
    match k.next_byte()? {
        b'n' => return k.skip(),
        b'[' => {}
        b'{' => return attrs_object_fast(k, a),
        _ => return None,
    }
    k.array(|k, _| {
        if k.next_byte()? != b'{' {
            return k.skip();
        }
        let mut key_of: Option<Option<&'a str>> = None;
        let mut value: Option<&'a [u8]> = None;
        k.object(|k, key| match key {
            b"key" => {
                if key_of.is_some() {
                    return None;
                }
                key_of = Some(match k.scalar()? {
                    Scalar::Str(s) => Some(s),
                    Scalar::Null | Scalar::Other(_) => None,
                });
                Some(())
            }
            b"value" => {
                if value.is_some() {
                    return None;
                }
                value = Some(k.value()?);
                Some(())
            }
            _ => k.skip(),
        })?;
        if let Some(Some(name)) = key_of
            && let Some(i) = index_key(name.as_bytes())
            && a.0[i].is_none()
        {
            a.0[i] = Some(match value {
                Some(raw) => av(raw)?,
                None => Av::V(Value::Null),
            });
        }
        Some(())
    })
}

/// An attribute value: the plain cases by the skimmer, the rest as `any_value` reads it.
fn av(raw: &[u8]) -> Option<Av<'_>> {
    let mut k = Skim::new(raw);
    let mut one: Option<(&[u8], Scalar)> = None;
    let mut count = 0;
    let fast = k.object(|k, key| {
        count += 1;
        one = Some((key, k.scalar()?));
        Some(())
    });
    if fast.is_some() && count == 1 {
        match one {
            Some((b"stringValue", Scalar::Str(s))) => return Some(Av::Str(s)),
            Some((b"intValue", Scalar::Str(s))) => {
                return Some(match s.parse::<i64>() {
                    Ok(n) => Av::Int(n),
                    Err(_) => Av::V(Value::String(s.to_string())),
                });
            }
            _ => {}
        }
    }
    serde_json::from_slice::<Value>(raw).ok().map(|v| Av::V(any_value(&v)))
}

/// A batch line (or a file exporter's span line): by the skimmer, else by serde_json; None
/// when it is neither.
fn skim_line<'a>(line: &'a [u8], slot: &mut Option<Batch<'a>>) {
    let b = slot.insert(Batch::default());
    // The file exporter writes `type` first; a batch has none.
    let typed = memchr::memmem::find(&line[..line.len().min(32)], b"\"type\"").is_some();
    let fast = if typed {
        exported_fast(line, b).is_some() || {
            *b = Batch::default();
            line_fast(line, b).is_some()
        }
    } else {
        line_fast(line, b).is_some() || {
            *b = Batch::default();
            exported_fast(line, b).is_some()
        }
    };
    if !fast {
        *b = Batch::default();
        if line_slow(line, b).is_none() {
            *slot = None;
        }
    }
}

/// A document's `resourceSpans` entry: by the skimmer, else by serde_json.
fn skim_entry<'a>(entry: &'a [u8], slot: &mut Option<Batch<'a>>) {
    let b = slot.insert(Batch::default());
    let mut k = Skim::new(entry);
    if resource_fast(&mut k, entry, b).is_some() && k.at_end() {
        return;
    }
    *b = Batch::default();
    match std::str::from_utf8(entry) {
        Ok(s) if serde_json::from_str::<&RawValue>(s).is_ok() => resource_slow(s, b),
        _ => *slot = None,
    }
}

/// What a load met: an OTLP file of log records that holds no span and no GenAI event is
/// not a trace (an application's logs), and is refused whole.
#[derive(Default)]
struct Tally {
    spans: std::sync::atomic::AtomicU64,
    logs: std::sync::atomic::AtomicU64,
    genai: std::sync::atomic::AtomicU64,
}

impl Tally {
    fn add(n: &std::sync::atomic::AtomicU64, by: u64) {
        n.fetch_add(by, std::sync::atomic::Ordering::Relaxed);
    }

    fn refuse_plain_logs(&self, path: &Path) -> Result<(), LoadError> {
        let get = |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Relaxed);
        let logs = get(&self.logs);
        if logs == 0 || get(&self.spans) > 0 || get(&self.genai) > 0 {
            return Ok(());
        }
        Err(LoadError::invalid(
            path,
            format!(
                "OTLP logs, not spans: {logs} log record(s) and none is a GenAI event \
                 (gen_ai.*, Claude Code's, Codex's or Copilot's events); tracetui reads traces"
            ),
        ))
    }
}

/// The OTLP parser: one trace per `traceId`, from batch lines or document entries.
#[derive(Default)]
pub struct Parser {
    /// Spans, log records and GenAI events met (shared with the load that made the parser).
    tally: std::sync::Arc<Tally>,
    /// traceId → index of its trace in the sink.
    traces: rustc_hash::FxHashMap<String, usize>,
    /// The instrumentation scopes met in each trace (few), for its metadata: indices into
    /// `scope_names` (a copy of the names in each of 67k runs was 18 MB of 4M spans).
    scopes: Vec<Vec<u32>>,
    scope_names: Vec<Box<str>>,
    scope_index: rustc_hash::FxHashMap<Box<str>, u32>,
    /// Each trace's resource attributes (kept here too, so that the address of a shared
    /// list names its resource for as long as the parser lives).
    resource_of: Vec<Option<SharedAttrs>>,
    /// A resource's attributes with a list of scope names, shared by the runs that have both
    /// (keyed by the resource list's address and the scopes).
    metas: rustc_hash::FxHashMap<(usize, Vec<u32>), SharedAttrs>,
    /// Whether each trace's root span (the last a trace writes) has come.
    rooted: Vec<bool>,
    /// Each trace's root span (the first span without a parent): its status is the run's.
    root_span: Vec<Option<u32>>,
    /// Whether each trace has spans (else it is made of log records only).
    has_spans: Vec<bool>,
    /// A whole document does not grow: a trace whose spans all have a parent elsewhere (a
    /// remote caller) has its first top-level span as its root.
    whole: bool,
    /// Traces that received spans since the last flush: only they are settled again (the
    /// explorer flushes after every slice, and settling all of 17k traces each time made its
    /// load of 1M spans take 24 s).
    dirty: Vec<usize>,
    is_dirty: Vec<bool>,
    /// Resources' attributes by the resource's raw JSON, shared by the runs of each.
    resources: rustc_hash::FxHashMap<Box<str>, SharedAttrs>,
}

/// Scopes listed in a trace's metadata, at most.
const MAX_SCOPES: usize = 32;
/// A list of run attributes shared by the runs that have the same.
type SharedAttrs = std::sync::Arc<Vec<(String, Value)>>;

/// Distinct resources whose attributes are remembered for sharing, at most.
const MAX_RESOURCES: usize = 4096;
/// Distinct scope names remembered, at most (a run's list is a summary).
const MAX_SCOPE_NAMES: usize = 4096;

impl Parser {
    fn mark(&mut self, i: usize) {
        if self.is_dirty.len() <= i {
            self.is_dirty.resize(i + 1, false);
        }
        if !self.is_dirty[i] {
            self.is_dirty[i] = true;
            self.dirty.push(i);
        }
    }

    /// A resource's attributes, read once per distinct resource (a file names few).
    fn resource_attrs(&mut self, raw: &str) -> Option<SharedAttrs> {
        if let Some(a) = self.resources.get(raw) {
            return Some(a.clone());
        }
        let v = serde_json::from_str::<Value>(raw).ok()?;
        let attrs = std::sync::Arc::new(attributes(Some(&v)));
        if attrs.is_empty() {
            return None;
        }
        // Bounded: a file of a new resource per run keeps no more than it did before.
        if self.resources.len() < MAX_RESOURCES {
            self.resources.insert(raw.into(), attrs.clone());
        }
        Some(attrs)
    }

    fn trace_for(&mut self, trace_id: &str, resource: Option<&str>, sink: &mut Sink) -> usize {
        if let Some(&i) = self.traces.get(trace_id) {
            self.mark(i);
            sink.touch(i);
            return i;
        }
        // The resource (service name, SDK, host) belongs to the run, not to each span. Runs of
        // one service share its attributes (`RunMeta::shared`): a copy in each of 67k runs was
        // 52 MB of 4M spans.
        let shared = resource.and_then(|r| self.resource_attrs(r));
        let mut t = Trace::new(RunMeta {
            id: trace_id.to_string(),
            format: "otlp-json",
            source: sink.path.clone(),
            shared: shared.clone(),
            ..Default::default()
        });
        t.add_file(sink.path.clone());
        let i = sink.push_trace(t);
        self.traces.insert(trace_id.to_string(), i);
        if self.scopes.len() <= i {
            self.scopes.resize_with(i + 1, Vec::new);
            self.resource_of.resize(i + 1, None);
            self.rooted.resize(i + 1, false);
            self.root_span.resize(i + 1, None);
            self.has_spans.resize(i + 1, false);
        }
        self.resource_of[i] = shared;
        self.mark(i);
        i
    }

    /// The index of a scope name (interned; a file names few).
    fn scope_id(&mut self, name: &str) -> Option<u32> {
        if let Some(&k) = self.scope_index.get(name) {
            return Some(k);
        }
        if self.scope_names.len() >= MAX_SCOPE_NAMES {
            return None;
        }
        let k = self.scope_names.len() as u32;
        self.scope_names.push(name.into());
        self.scope_index.insert(name.into(), k);
        Some(k)
    }

    /// A run's metadata attributes: its resource's, then the names of its scopes, shared
    /// with the runs that have the same.
    fn run_attrs(&mut self, ti: usize) -> Option<SharedAttrs> {
        let res = self.resource_of.get(ti).cloned().flatten();
        let scopes = self.scopes.get(ti).filter(|s| !s.is_empty())?;
        let key = (
            res.as_ref().map_or(0, |r| std::sync::Arc::as_ptr(r) as usize),
            scopes.clone(),
        );
        if let Some(a) = self.metas.get(&key) {
            return Some(a.clone());
        }
        let mut attrs: Vec<(String, Value)> = res.as_deref().cloned().unwrap_or_default();
        let names = scopes
            .iter()
            .map(|&k| Value::String(self.scope_names[k as usize].to_string()))
            .collect();
        attrs.push(("otel.scope.names".into(), Value::Array(names)));
        let attrs = std::sync::Arc::new(attrs);
        if self.metas.len() < MAX_RESOURCES {
            self.metas.insert(key, attrs.clone());
        }
        Some(attrs)
    }

    /// The in-order half: the spans of one batch line or document entry.
    fn apply_batch(&mut self, rec: Option<&Batch<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink, entry: bool) {
        let at = loc.line.max(1);
        let Some(b) = rec else {
            match serde_json::from_slice::<Value>(line) {
                Err(e) => sink.error(at, json_error(&e)),
                Ok(_) if entry => sink.error(at, "a `resourceSpans` entry is not an object; skipped"),
                Ok(_) => sink.error(
                    at,
                    "no `resourceSpans` or `resourceLogs` array: not an OTLP/JSON trace or log batch",
                ),
            }
            return;
        };
        if let Some((ty, show)) = &b.skipped {
            // Drift (formats/mod.rs): counted on the run being read; shown there when it
            // carries text (a line before any run is only counted).
            sink.skip(ty);
            if *show && let Some(ti) = sink.current.filter(|&i| i < sink.traces.len()) {
                self.mark(ti);
                sink.traces[ti].add(NewEvent {
                    status: Status::Ok,
                    payload: PayloadRef::Deferred,
                    origin: engine::sub_origin(loc, 0, line, line),
                    ..NewEvent::new(EventKind::Other, ty)
                });
            }
            return;
        }
        let good = |bad: Option<&str>| u64::from(bad.is_none());
        Tally::add(&self.tally.spans, b.spans.iter().map(|s| good(s.bad)).sum());
        Tally::add(&self.tally.logs, b.logs.iter().map(|r| good(r.bad)).sum());
        Tally::add(
            &self.tally.genai,
            b.logs.iter().map(|r| u64::from(r.bad.is_none() && r.genai)).sum(),
        );
        for s in &b.spans {
            if let Some(why) = s.bad {
                sink.error(at, why);
                continue;
            }
            let Some(trace_id) = s.trace_id.as_deref() else {
                continue;
            };
            let (res, scope) = b.scopes.get(s.scope as usize).map_or((None, None), |(r, n)| {
                (b.resources.get(*r as usize).copied().flatten(), n.as_deref())
            });
            let ti = self.trace_for(trace_id, res, sink);
            self.has_spans[ti] = true;
            if let Some(sc) = scope
                && self.scopes[ti].len() < MAX_SCOPES
                && let Some(k) = self.scope_id(sc)
                && !self.scopes[ti].contains(&k)
            {
                self.scopes[ti].push(k);
            }
            let origin = engine::sub_origin(loc, 0, line, s.bytes);
            let t = &mut sink.traces[ti];
            if let Some(id) = s.span_id.as_deref()
                && t.find(id).is_some()
            {
                t.diagnostics.push(Diagnostic::warning(
                    sink.path.clone(),
                    (loc.line > 0).then_some(loc.line),
                    format!("span {id} appears again; the repeat is skipped"),
                ));
                continue;
            }
            let e = t.add(NewEvent {
                id: s.span_id.as_deref(),
                parent: match s.parent_id.as_deref() {
                    Some(pid) => Parent::Id(pid),
                    None => Parent::None,
                },
                start: s.start,
                duration: match (s.start, s.end) {
                    (Some(a), Some(b)) if b >= a => Some(b - a),
                    _ => None,
                },
                status: if s.error {
                    Status::Error
                } else if s.end.is_some() {
                    Status::Ok
                } else {
                    Status::Unknown
                },
                usage: s.usage,
                model: s.model.as_deref(),
                payload: PayloadRef::Deferred,
                origin,
                ..NewEvent::new(s.kind, &s.name)
            });
            // Spans are written when they end, so the root comes last: the trace is most
            // likely whole. Its vectors grew by doubling; with thousands of traces that slack
            // was a third of the index (1M spans in 17k traces: 382 MB peak). Once a trace.
            if s.parent_id.is_none() && !self.rooted[ti] {
                self.rooted[ti] = true;
                self.root_span[ti] = Some(e);
                t.shrink_to_fit();
            }
        }
        for r in &b.logs {
            if let Some(why) = r.bad {
                sink.error(at, why);
                continue;
            }
            if r.quiet {
                continue;
            }
            // A run per trace id (the spans' run when there are spans), else per session, else
            // the file's.
            let key = match r.trace_id.as_deref().or(r.session.as_deref()) {
                Some(k) => Cow::Borrowed(k),
                None => Cow::Owned(super::stem(&sink.path)),
            };
            let res = b.resources.get(r.resource as usize).copied().flatten();
            let ti = self.trace_for(&key, res, sink);
            let origin = engine::sub_origin(loc, 0, line, r.bytes);
            let t = &mut sink.traces[ti];
            t.add(NewEvent {
                id: r.id.as_deref(),
                parent: match (&r.trace_id, r.span_id.as_deref()) {
                    (Some(_), Some(sid)) => Parent::Id(sid),
                    _ => Parent::None,
                },
                start: r.start,
                duration: r.duration,
                status: if r.error { Status::Error } else { Status::Ok },
                usage: r.usage,
                model: r.model.as_deref(),
                payload: PayloadRef::Deferred,
                origin,
                ..NewEvent::new(r.kind, &r.name)
            });
        }
    }
}

impl Records for Parser {
    type Rec<'a> = Batch<'a>;

    fn skim<'a>(line: &'a [u8], slot: &mut Option<Batch<'a>>) {
        skim_line(line, slot);
    }

    fn apply(&mut self, rec: Option<&Batch<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        self.apply_batch(rec, line, loc, sink, false);
    }
}

/// The parser reading a document's `resourceSpans` entries (each read as a line is).
struct Entries<'p>(&'p mut Parser);

impl Records for Entries<'_> {
    type Rec<'a> = Batch<'a>;

    fn skim<'a>(entry: &'a [u8], slot: &mut Option<Batch<'a>>) {
        skim_entry(entry, slot);
    }

    fn apply(&mut self, rec: Option<&Batch<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        self.0.apply_batch(rec, line, loc, sink, true);
    }
}

/// The parser reading a document's `resourceLogs` entries.
struct LogEntries<'p>(&'p mut Parser);

impl Records for LogEntries<'_> {
    type Rec<'a> = Batch<'a>;

    fn skim<'a>(entry: &'a [u8], slot: &mut Option<Batch<'a>>) {
        let b = slot.insert(Batch::default());
        match std::str::from_utf8(entry) {
            Ok(s) if serde_json::from_str::<&RawValue>(s).is_ok() => resource_logs(s, b),
            _ => *slot = None,
        }
    }

    fn apply(&mut self, rec: Option<&Batch<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        self.0.apply_batch(rec, line, loc, sink, true);
    }
}

/// A span's payload from its own JSON (the event's `origin`): what the index does not hold.
fn span_payload(s: &Value) -> Payload {
    let attrs = attributes(s.get("attributes"));
    let mut p = Payload {
        input: get(&attrs, "gen_ai.tool.call.arguments")
            .or_else(|| get(&attrs, "gen_ai.tool.args"))
            .or_else(|| get(&attrs, "input.value"))
            .or_else(|| get(&attrs, "gen_ai.input.messages"))
            .or_else(|| get(&attrs, "gen_ai.prompt"))
            .map(decode_embedded)
            .or_else(|| indexed(&attrs, "gen_ai.prompt")),
        output: get(&attrs, "gen_ai.tool.call.result")
            .or_else(|| get(&attrs, "gen_ai.tool.result"))
            .or_else(|| get(&attrs, "output.value"))
            .or_else(|| get(&attrs, "gen_ai.output.messages"))
            .or_else(|| get(&attrs, "gen_ai.completion"))
            .map(decode_embedded)
            .or_else(|| indexed(&attrs, "gen_ai.completion")),
        ..Default::default()
    };
    let status_v = s.get("status");
    if status_is_error(status_v.and_then(|x| x.get("code"))) {
        p.error = Some(ErrorInfo {
            message: status_v
                .and_then(|x| x.get("message"))
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .unwrap_or("span status: error")
                .to_string(),
            ..Default::default()
        });
    }
    let mut other_events = Vec::new();
    for e in s
        .get("events")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        let ev_name = e.get("name").and_then(Value::as_str).unwrap_or("");
        let ea = attributes(e.get("attributes"));
        match ev_name {
            "exception" => {
                p.error = Some(ErrorInfo {
                    kind: get_str(&ea, "exception.type").map(str::to_string),
                    message: get_str(&ea, "exception.message").unwrap_or("exception").to_string(),
                    stack: get_str(&ea, "exception.stacktrace").map(str::to_string),
                    details: None,
                });
            }
            "gen_ai.content.prompt" if p.input.is_none() => {
                p.input = get(&ea, "gen_ai.prompt").map(decode_embedded);
            }
            "gen_ai.content.completion" if p.output.is_none() => {
                p.output = get(&ea, "gen_ai.completion").map(decode_embedded);
            }
            _ => {
                let mut m = Map::new();
                m.insert("name".into(), Value::String(ev_name.to_string()));
                if let Some(ts) = nanos(e.get("timeUnixNano")).or_else(|| hr_time(e.get("time"))) {
                    m.insert("time".into(), Value::String(format_ts(ts)));
                }
                if !ea.is_empty() {
                    m.insert("attributes".into(), Value::Object(ea.into_iter().collect()));
                }
                other_events.push(Value::Object(m));
            }
        }
    }
    let rest: Map<String, Value> = attrs
        .iter()
        .filter(|(k, _)| !MAPPED.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !rest.is_empty() {
        p.extra.push(("attributes".into(), Value::Object(rest)));
    }
    if !other_events.is_empty() {
        p.extra.push(("events".into(), Value::Array(other_events)));
    }
    if p.error.is_none()
        && let Some(c) = get(&attrs, "process.exit.code")
            .and_then(|c| c.as_i64().or_else(|| c.as_str()?.trim().parse().ok()))
            .filter(|&c| c != 0)
        && (Attrs::from_pairs(&attrs).classify() == EventKind::ToolCall
            || s.get("name").and_then(Value::as_str) == Some("claude_code.tool"))
    {
        p.error = Some(ErrorInfo {
            kind: Some("exit code".into()),
            message: format!("the command exited with code {c}"),
            ..Default::default()
        });
    }
    if let Some(k) = s.get("kind").filter(|k| !k.is_null()) {
        // The OTel JS exporters number kinds as the JS API does, from INTERNAL = 0.
        let js = s.get("type").and_then(Value::as_str) == Some("span");
        p.extra.push(("span_kind".into(), span_kind_name(k, js)));
    }
    p
}

/// OTLP's `kind` by name: the enum's number or its `SPAN_KIND_*` name as `client`, `server`...
/// Anything else is shown as written.
fn span_kind_name(k: &Value, js: bool) -> Value {
    const NAMES: [&str; 6] = ["unspecified", "internal", "server", "client", "producer", "consumer"];
    let name = match k {
        Value::Number(n) => n
            .as_u64()
            .and_then(|i| NAMES.get(i as usize + usize::from(js)).copied()),
        Value::String(s) => s
            .strip_prefix("SPAN_KIND_")
            .map(str::to_ascii_lowercase)
            .and_then(|l| NAMES.iter().find(|n| **n == l).copied())
            .or_else(|| s.parse::<usize>().ok().and_then(|i| NAMES.get(i).copied())),
        _ => None,
    };
    name.map_or_else(|| k.clone(), |n| Value::String(n.to_string()))
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

    fn forget(&mut self, trace: usize) {
        if let Some(r) = self.root_span.get_mut(trace) {
            *r = None;
        }
    }

    fn flush(&mut self, sink: &mut Sink) {
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable();
        for ti in dirty {
            self.is_dirty[ti] = false;
            let Some(t) = sink.traces.get_mut(ti) else { continue };
            t.finalize();
            // An MCP `tools/call` client span inside the `execute_tool` span of the same tool is
            // the same call seen one layer down: count it once.
            // So is a GenAI log event under the span of the same call (Copilot writes both
            // an inference span and its details event): its tokens go to the span if it has
            // none.
            for i in 0..t.events.len() {
                let e = &t.events[i];
                if e.parent == NO_PARENT {
                    continue;
                }
                let parent = &t.events[e.parent as usize];
                let same_tool =
                    e.kind == EventKind::ToolCall && parent.kind == EventKind::ToolCall && parent.name == e.name;
                let same_llm = e.kind == EventKind::LlmCall && parent.kind == EventKind::LlmCall;
                if same_llm && parent.usage.is_none() {
                    let (p, u) = (e.parent as usize, e.usage.clone());
                    t.events[p].usage = u;
                    t.events[i].usage = UsageCell::NONE;
                }
                if same_tool || same_llm {
                    t.events[i].kind = EventKind::Step;
                }
            }
            // The run: named by its first root span (else the service), failed if a span failed.
            let root = t.roots.first().copied();
            let service = t
                .meta
                .all_attributes()
                .find(|(k, _)| k == "service.name")
                .and_then(|(_, v)| v.as_str())
                .map(str::to_string);
            t.meta.name = if self.has_spans.get(ti).copied().unwrap_or(false) {
                root.map(|r| t.name(r).to_string()).or(service)
            } else {
                // A run of log records: the service that wrote them (its events are all roots).
                service.or_else(|| root.map(|r| t.name(r).to_string()))
            };
            // The run's status is its root span's: a child's error the root handled is an
            // error event, not a failed run. Spans are written when they end and the root
            // last, so a trace without its root yet is still running.
            let root_span = self
                .root_span
                .get(ti)
                .copied()
                .flatten()
                .or(if self.whole { root } else { None });
            let spans = self.has_spans.get(ti).copied().unwrap_or(false);
            t.meta.status = match root_span {
                // Log records alone say nothing of how the run ended.
                _ if !spans => RunStatus::Unknown,
                Some(r) if t.event(r).status == Status::Error => RunStatus::Error,
                Some(_) => RunStatus::Ok,
                // Dropped from memory after its root came (`forget`): it ended as it did.
                None if self.rooted.get(ti).copied().unwrap_or(false) => t.meta.status,
                None => RunStatus::Running,
            };
            t.meta.model = t
                .events
                .iter()
                .find(|e| e.kind == EventKind::LlmCall && !e.model.is_empty())
                .map(|e| t.str(e.model).to_string());
            // The instrumentation scopes its spans came from (a span's own is in its raw view).
            // Held with the resource's attributes, shared by the runs with the same.
            if let Some(a) = self.run_attrs(ti) {
                t.meta.shared = Some(a);
            }
        }
    }
}

/// A call's gist from `gen_ai.tool.call.arguments` (or OpenInference's `input.value`): the
/// agents that export OTLP name their tools as in their own files, so their tools' arguments
/// say it (`command`, a path, a pattern, a URL, a query), else the generic rule.
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{first_arg, generic, key};
    if name.starts_with("mcp__") {
        return first_arg(input);
    }
    key(
        input,
        &[
            "command",
            "cmd",
            "file_path",
            "filePath",
            "path",
            "pattern",
            "url",
            "query",
        ],
    )
    .or_else(|| generic(name, input))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        crate::formats::testing::fixture("otlp", name)
    }

    fn tree(t: &Trace) -> Vec<String> {
        t.walk()
            .iter()
            .map(|&(i, d)| {
                format!(
                    "{}{} {} [{}]",
                    "  ".repeat(d),
                    t.event(i).kind.as_str(),
                    t.name(i),
                    t.event(i).status.as_str()
                )
            })
            .collect()
    }

    #[test]
    fn ids_times_and_values() {
        assert_eq!(
            norm_id(Some(&Value::from("5B8EFFF798038103"))).as_deref(),
            Some("5b8efff798038103")
        );
        // base64 of bytes 01..08
        assert_eq!(
            norm_id(Some(&Value::from("AQIDBAUGBwg="))).as_deref(),
            Some("0102030405060708")
        );
        assert_eq!(norm_id(Some(&Value::from("0000000000000000"))), None);
        assert_eq!(
            nanos(Some(&Value::from("1544712660000000000"))),
            Some(1_544_712_660_000_000_000)
        );
        assert_eq!(
            nanos(Some(&Value::from(1000u64))),
            Some(1000),
            "documented nanoseconds are never rescaled"
        );
        let v: Value = serde_json::json!({"arrayValue": {"values": [{"intValue": "3"}, {"kvlistValue": {"values": [{"key": "a", "value": {"boolValue": true}}]}}]}});
        assert_eq!(any_value(&v), serde_json::json!([3, {"a": true}]));
    }

    #[test]
    fn genai_document_children_first_many_traces() {
        let l = Otlp.load(&fixture("genai-document.json")).unwrap();
        assert_eq!(l.traces.len(), 2, "one run per traceId");
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let tr = tree(t);
        assert_eq!(
            tr,
            vec![
                "run weather-agent [ok]",
                "  llm gpt-test [ok]",
                "  tool get_weather [error]",
                "  llm gpt-test [ok]",
            ],
            "{tr:#?}"
        );
        // The agent handled the tool's error and answered: the run is ok, the error is one
        // error event in it.
        assert_eq!(t.meta.status, RunStatus::Ok);
        let c = t.counts();
        assert_eq!((c.llm_calls, c.tool_calls, c.tokens, c.errors), (2, 1, 30 + 45, 1));
        let tool = t.find("00f067aa0ba902b7").unwrap();
        let p = super::super::payload(t, t.event(tool));
        assert_eq!(p.input.unwrap()["city"], "Oslo", "arguments JSON string parsed");
        assert_eq!(p.error.unwrap().kind.as_deref(), Some("TimeoutError"));
        // The second trace: OpenInference names, base64 ids, an orphan that stays a root.
        let t2 = &l.traces[1];
        let tr2 = tree(t2);
        assert_eq!(
            tr2,
            vec!["step retrieve [ok]", "llm gpt-oi [ok]", "  tool lookup [ok]"],
            "{tr2:#?}"
        );
        assert_eq!(t2.counts().tokens, 12);
    }

    #[test]
    fn claude_code_spans_are_tool_and_llm_calls_and_the_root_decides_the_status() {
        let l = Otlp.load(&fixture("claude-code-spans.jsonl")).unwrap();
        assert_eq!(l.traces.len(), 2);
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let tr = tree(t);
        assert_eq!(
            tr,
            vec![
                "step claude_code.interaction [ok]",
                "  llm claude-test-1 [ok]",
                "  tool Bash [error]",
                "    step claude_code.tool.execution [error]",
                "  llm claude-test-1 [ok]",
            ],
            "{tr:#?}"
        );
        let c = t.counts();
        // input + cache read + cache written, then output; the second request's flat
        // attributes count too (its gen_ai.* name no tokens).
        assert_eq!(c.tokens, (12 + 1000 + 200) + 40 + (30 + 8));
        assert_eq!((c.llm_calls, c.tool_calls), (2, 1));
        let llm = t.find("1000000000000002").unwrap();
        assert_eq!(t.str(t.event(llm).model), "claude-test-1");
        // The failed Bash call is two error events; the interaction itself ended fine.
        assert_eq!(c.errors, 2);
        assert_eq!(t.meta.status, RunStatus::Ok);
        // The second trace's root span has not been written yet: it is still running.
        let u = &l.traces[1];
        assert_eq!(u.meta.status, RunStatus::Running);
        assert_eq!(u.counts().tokens, 6);
    }

    #[test]
    fn span_usage_takes_cache_and_reasoning_out_and_keeps_a_recorded_cost() {
        let attr = |k: &str, v: &str| format!(r#"{{"key":"{k}","value":{v}}}"#);
        let span = |id: &str, attrs: Vec<String>| {
            format!(
                r#"{{"traceId":"{t}","spanId":"{id}","name":"chat","startTimeUnixNano":"1767000000000000000","endTimeUnixNano":"1767000001000000000","attributes":[{}]}}"#,
                attrs.join(","),
                t = "ab".repeat(16)
            )
        };
        let genai = span(
            &"01".repeat(8),
            vec![
                attr("gen_ai.operation.name", r#"{"stringValue":"chat"}"#),
                attr("gen_ai.request.model", r#"{"stringValue":"gpt-4o"}"#),
                attr("gen_ai.usage.input_tokens", r#"{"intValue":"1000"}"#),
                attr("gen_ai.usage.cache_read.input_tokens", r#"{"intValue":"600"}"#),
                attr("gen_ai.usage.cache_creation.input_tokens", r#"{"intValue":"100"}"#),
                attr("gen_ai.usage.output_tokens", r#"{"intValue":"300"}"#),
                attr("gen_ai.usage.cost", r#"{"doubleValue":0.00425}"#),
            ],
        );
        let oi = span(
            &"02".repeat(8),
            vec![
                attr("openinference.span.kind", r#"{"stringValue":"LLM"}"#),
                attr("llm.model_name", r#"{"stringValue":"o3-mini"}"#),
                attr("llm.token_count.prompt", r#"{"intValue":"500"}"#),
                attr("llm.token_count.prompt_details.cache_read", r#"{"intValue":"200"}"#),
                attr("llm.token_count.completion", r#"{"intValue":"900"}"#),
                attr("llm.token_count.completion_details.reasoning", r#"{"intValue":"700"}"#),
                attr("llm.token_count.total", r#"{"intValue":"1400"}"#),
                attr("llm.cost.total", r#"{"stringValue":"0.0042"}"#),
            ],
        );
        let line = format!(r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{genai},{oi}]}}]}}]}}"#);
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("u.jsonl");
        std::fs::write(&path, line + "\n").unwrap();
        let l = Otlp.load(&path).unwrap();
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let u = |id: &str| t.event(t.find(&id.repeat(8)).unwrap()).usage.get().unwrap();
        assert_eq!(
            u("01"),
            Usage {
                input: Some(300),
                cache_read: Some(600),
                cache_write: Some(100),
                output: Some(300),
                cost: Some(4_250),
                ..Default::default()
            }
        );
        assert_eq!(
            u("02"),
            Usage {
                input: Some(300),
                cache_read: Some(200),
                output: Some(200),
                reasoning: Some(700),
                total: Some(1400),
                cost: Some(4_200),
                ..Default::default()
            }
        );
    }

    #[test]
    fn log_records_of_genai_events_load_grouped_into_runs() {
        let l = Otlp.load(&fixture("genai-logs.jsonl")).unwrap();
        let ids: Vec<&str> = l.traces.iter().map(|t| t.meta.id.as_str()).collect();
        // By trace id, else by session / conversation id, else the file's run.
        assert_eq!(ids, ["sess-a", "sess-b", "conv-1", &"d4".repeat(16), "genai-logs"]);
        for t in &l.traces {
            assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        }
        // Claude Code's events: prompt, requests with their tokens (cache apart from input, the
        // cost it computed), tool results (a failed one is an error), an API error.
        let a = &l.traces[0];
        assert_eq!(
            tree(a),
            vec![
                "message claude_code.user_prompt [ok]",
                "llm claude-test-1 [ok]",
                "tool Bash [ok]",
                "tool Read [error]",
                "error claude_code.api_error [error]",
                "llm claude-test-1 [ok]",
            ]
        );
        assert_eq!(a.event(a.roots[0]).kind, EventKind::Message(Role::User));
        let c = a.counts();
        assert_eq!((c.llm_calls, c.tool_calls, c.errors), (2, 2, 2));
        assert_eq!(c.tokens, (12 + 1000 + 200 + 40) + (30 + 8));
        let u = a.event(a.roots[1]).usage.get().unwrap();
        assert_eq!(
            (u.input, u.cache_read, u.cache_write, u.output, u.cost),
            (Some(12), Some(1000), Some(200), Some(40), Some(10_000))
        );
        assert_eq!(a.meta.status, RunStatus::Unknown, "log records say nothing of the end");
        let bash = a.find("toolu_a1").unwrap();
        assert_eq!(a.event(bash).duration, Some(1_500_000_000));
        let p = super::super::payload(a, a.event(bash));
        assert_eq!(p.input.unwrap()["command"], "du -sh *");
        let read = super::super::payload(a, a.event(a.find("toolu_a2").unwrap()));
        assert_eq!(read.error.unwrap().message, "File does not exist.");
        // Codex: streaming notifications without tokens add nothing; the completed response
        // is the LLM call.
        let codex = &l.traces[2];
        assert_eq!(
            tree(codex),
            vec![
                "other codex.conversation_starts [ok]",
                "message codex.user_prompt [ok]",
                "llm gpt-test-5 [ok]",
                "tool shell [error]",
            ]
        );
        assert_eq!(codex.counts().tokens, 325);
        // Codex's counts include the cached input and the reasoning: taken out.
        let llm = codex.events.iter().find(|e| e.kind == EventKind::LlmCall).unwrap();
        let u = llm.usage.get().unwrap();
        assert_eq!(
            (u.input, u.cache_read, u.output, u.reasoning),
            (Some(200), Some(100), Some(15), Some(10))
        );
        let shell = super::super::payload(codex, codex.event(codex.find("call_9").unwrap()));
        assert_eq!(shell.output, Some(Value::String("make: *** [all] Error 2".into())));
        // GenAI events with a trace id join its spans, under their span; the inference
        // details of a chat span are that call, not a second one.
        let copilot = &l.traces[3];
        assert_eq!(
            tree(copilot),
            vec![
                "run invoke_agent copilot [ok]",
                "  llm gpt-test-4 [ok]",
                "    step gpt-test-4 [ok]",
                "  tool readFile [ok]",
            ]
        );
        assert_eq!((copilot.counts().llm_calls, copilot.counts().tokens), (1, 79));
        assert_eq!(copilot.meta.status, RunStatus::Ok);
        // Neither trace nor session: the file's run; an ERROR severity is an error event.
        assert_eq!(tree(&l.traces[4]), vec!["error log [error]"]);
    }

    #[test]
    fn a_log_document_streams_through_the_engine() {
        let l = Otlp.load(&fixture("genai-logs-document.json")).unwrap();
        assert_eq!(l.traces.len(), 1);
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.id, "conv-doc");
        assert_eq!(
            tree(t),
            vec![
                "message gen_ai.user.message [ok]",
                "llm gpt-test [ok]",
                "message gen_ai.choice [ok]",
            ]
        );
        assert_eq!(t.counts().tokens, 15);
        let first = t.roots[0];
        let p = super::super::payload(t, t.event(first));
        assert_eq!(p.input.unwrap()["content"], "What is the weather in Oslo?");
        assert!(matches!(t.event(first).payload, PayloadRef::Deferred));
    }

    #[test]
    fn copilots_otel_file_exporter_lines_are_a_trace() {
        let path = fixture("copilot-otel.jsonl");
        let probe = Probe::open(&path).unwrap();
        assert_eq!(Otlp.detect(&probe), 95);
        assert_eq!(crate::formats::detect(&path).unwrap().id(), "otlp-json");
        assert!(Otlp.follow(&path).is_some(), "a line a span: followed as it grows");
        let l = Otlp.load(&path).unwrap();
        assert_eq!(l.traces.len(), 1);
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(
            tree(t),
            vec![
                "run invoke_agent [ok]",
                "  llm claude-sonnet-4.5 [ok]",
                "  tool bash [ok]",
                "  tool bash [error]",
                "  tool view [ok]",
                "  llm claude-sonnet-4.5 [ok]",
            ]
        );
        // Its metric lines are not the trace's: skipped quietly, counted.
        assert_eq!(t.skipped.iter().collect::<Vec<_>>(), [("metric", 2)]);
        let c = t.counts();
        assert_eq!((c.tool_calls, c.llm_calls, c.errors), (3, 2, 1));
        // Each chat span's tokens, the cache read taken out of the input; the agent span's
        // totals are the same tokens again, not more.
        assert_eq!(c.tokens, (6000 + 80) + (6200 + 40));
        let chat = t.event(t.find("b0b0b0b0b0b0b0b1").unwrap());
        let u = chat.usage.get().unwrap();
        assert_eq!((u.input, u.cache_read, u.output), (Some(1904), Some(4096), Some(80)));
        // `[seconds, nanoseconds]` times.
        assert_eq!(
            (chat.start.get(), chat.duration.get()),
            (Some(1_795_900_001_100_000_000), Some(200_000_000))
        );
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.model.as_deref(), Some("claude-sonnet-4.5"));
        assert!(
            t.meta
                .all_attributes()
                .any(|(k, v)| k == "service.name" && v == "github-copilot")
        );
        // The command that exited 2 failed (its span's status says nothing); the exporter's
        // kind numbering is the JS API's (2 is a client).
        let failed = t.event(t.find("c0c0c0c0c0c0c0c2").unwrap());
        let p = super::super::payload(t, failed);
        assert_eq!(p.error.unwrap().message, "the command exited with code 2");
        let attrs = &p.extra.iter().find(|(k, _)| k == "attributes").unwrap().1;
        assert_eq!(attrs["process.exit.code"], 2);
        let events = &p.extra.iter().find(|(k, _)| k == "events").unwrap().1;
        assert_eq!(events[0]["time"], Value::String(format_ts(1_795_900_001_400_000_000)));
        let p = super::super::payload(t, chat);
        assert_eq!(p.extra.iter().find(|(k, _)| k == "span_kind").unwrap().1, "client");
        assert!(
            super::super::payload(t, t.event(t.find("c0c0c0c0c0c0c0c1").unwrap()))
                .error
                .is_none()
        );
    }

    fn refused(r: Result<Loaded, LoadError>) -> String {
        match r {
            Ok(_) => panic!("loaded; refusal expected"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_file_of_plain_logs_is_refused_and_no_log_line_is_a_tool_call() {
        // An application's logs: no span, no GenAI event. One of its lines is named like a
        // tool result; it is a log line all the same.
        let path = fixture("plain-logs.jsonl");
        for loaded in [
            Otlp.load(&path),
            crate::formats::load(&path, Some(&Otlp)),
            crate::formats::load(&path, None),
        ] {
            let e = refused(loaded);
            assert!(e.starts_with(&path.display().to_string()), "{e}");
            assert!(e.contains("OTLP logs, not spans: 4 log record(s)"), "{e}");
        }
        // The same as one document.
        let text = std::fs::read_to_string(&path).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let d = tempfile::tempdir().unwrap();
        let doc = write(d.path(), "logs.json", &serde_json::to_string_pretty(&first).unwrap());
        let e = refused(Otlp.load(&doc));
        assert!(e.contains("OTLP logs, not spans: 2 log record(s)"), "{e}");
        // Beside GenAI events a log line is an event of the run, never a tool call.
        let genai = std::fs::read_to_string(fixture("genai-logs.jsonl")).unwrap();
        let mixed = write(d.path(), "mixed.jsonl", &format!("{genai}{text}"));
        let l = Otlp.load(&mixed).unwrap();
        let tools: usize = l.traces.iter().map(|t| t.counts().tool_calls).sum();
        let before: usize = Otlp
            .load(&fixture("genai-logs.jsonl"))
            .unwrap()
            .traces
            .iter()
            .map(|t| t.counts().tool_calls)
            .sum();
        assert_eq!(tools, before);
        let names: Vec<String> = l.traces.iter().flat_map(tree).collect();
        assert!(names.iter().any(|n| n == "other retry.tool_result [ok]"), "{names:#?}");
        assert!(names.iter().any(|n| n == "other log [ok]"), "{names:#?}");
    }

    #[test]
    fn lines_of_other_shapes_are_skipped_quietly_and_counted() {
        let good = std::fs::read_to_string(fixture("genai-batches.jsonl")).unwrap();
        let d = tempfile::tempdir().unwrap();
        let metrics = r#"{"resourceMetrics":[{"resource":{"attributes":[]},"scopeMetrics":[]}]}"#;
        let newer = r#"{"type":"zz.note","content":"a newer exporter's note","traceId":"x"}"#;
        let p = write(
            d.path(),
            "t.jsonl",
            &format!(
                "{metrics}
{good}{newer}
{metrics}
"
            ),
        );
        for loaded in [Otlp.load(&p), crate::formats::load(&p, None)] {
            let l = loaded.unwrap();
            assert_eq!(l.traces.len(), 2);
            // Counted on the run being read when the line came.
            let mut skipped = std::collections::BTreeMap::new();
            for t in &l.traces {
                assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
                for (k, n) in t.skipped.iter() {
                    *skipped.entry(k.to_string()).or_insert(0) += n;
                }
            }
            let skipped: Vec<(String, u64)> = skipped.into_iter().collect();
            assert_eq!(
                skipped,
                [("resourceMetrics".to_string(), 2), ("zz.note".to_string(), 1)]
            );
            // The one with text is shown, in the run being read.
            let shown: Vec<(usize, u32)> = l
                .traces
                .iter()
                .enumerate()
                .flat_map(|(k, t)| {
                    t.walk()
                        .into_iter()
                        .filter(|&(i, _)| t.name(i) == "zz.note")
                        .map(move |(i, _)| (k, i))
                })
                .collect();
            assert_eq!(shown.len(), 1);
            let (k, i) = shown[0];
            let p = super::super::payload(&l.traces[k], l.traces[k].event(i));
            assert_eq!(p.input, Some(Value::String("a newer exporter's note".into())));
        }
    }

    /// A line of a kind no OTLP writer this reader knows writes: another signal's batch, or
    /// an exporter line of another type, sometimes with text.
    fn unknown_line(rng: &mut crate::formats::testing::Rng, near: &Value) -> Value {
        let mut m = Map::new();
        if near.get("type").is_some() && rng.one_in(2) {
            let ty = if rng.one_in(3) {
                "metric".to_string()
            } else {
                rng.type_name()
            };
            m.insert("type".into(), Value::String(ty));
            m.insert("dataPoints".into(), serde_json::json!([{"value": {"count": 1}}]));
            if let Some(r) = near.get("resource") {
                m.insert("resource".into(), r.clone());
            }
        } else {
            let name = rng.type_name();
            let key = if rng.one_in(2) {
                "resourceMetrics".to_string()
            } else {
                format!("resource{name}")
            };
            m.insert(
                key,
                serde_json::json!([{"resource": {"attributes": []}, "scopeMetrics": []}]),
            );
        }
        if let Some(text) = rng.maybe_text() {
            m.insert(
                ["content", "message", "description"][rng.below(3)].into(),
                Value::String(text),
            );
        }
        Value::Object(m)
    }

    /// Unknown fields in a document's objects, anywhere (a newer writer's): returns 0, no
    /// record is added.
    fn drift_document(path: &Path, rng: &mut crate::formats::testing::Rng) -> usize {
        fn walk(v: &mut Value, rng: &mut crate::formats::testing::Rng, depth: u32) {
            match v {
                Value::Object(m) => {
                    for x in m.values_mut() {
                        walk(x, rng, depth + 1);
                    }
                    if depth < 12 && rng.one_in(3) {
                        m.insert(rng.type_name(), rng.value());
                    }
                }
                Value::Array(items) => {
                    for x in items {
                        walk(x, rng, depth + 1);
                    }
                }
                _ => {}
            }
        }
        let Ok(mut v) = serde_json::from_slice::<Value>(&std::fs::read(path).unwrap()) else {
            return 0;
        };
        walk(&mut v, rng, 0);
        std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        0
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on our fixtures, the sample traces and the
        /// corpus' OTLP files.
        #[test]
        fn drift_is_skipped_quietly(seed in proptest::prelude::any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "otlp-json",
                &[
                    "tests/fixtures/otlp/genai-batches.jsonl",
                    "tests/fixtures/otlp/genai-document.json",
                    "tests/fixtures/otlp/genai-logs.jsonl",
                    "tests/fixtures/otlp/genai-logs-document.json",
                    "tests/fixtures/otlp/claude-code-spans.jsonl",
                    "tests/fixtures/otlp/collector.jsonl",
                    "tests/fixtures/otlp/copilot-otel.jsonl",
                    "sample-traces/otlp/claude-code-events.jsonl",
                    "sample-traces/otlp/genai-trace.json",
                ],
            );
            crate::formats::testing::drift_check(&sources, seed, &|f, rng| {
                match f.extension().and_then(|x| x.to_str()) {
                    Some("jsonl") => crate::formats::testing::drift_jsonl(f, rng, &unknown_line),
                    Some("json") => drift_document(f, rng),
                    _ => 0,
                }
            });
        }
    }

    #[test]
    fn a_failed_root_span_fails_the_run() {
        let d = tempfile::tempdir().unwrap();
        let line = |sid: &str, parent: Option<&str>, code: u8| {
            let parent = parent.map_or(String::new(), |p| format!(",\"parentSpanId\":\"{p}\""));
            format!(
                "{{\"resourceSpans\":[{{\"scopeSpans\":[{{\"spans\":[{{\"traceId\":\"{}\",\"spanId\":\"{sid}\"{parent},\"name\":\"s{sid}\",\"startTimeUnixNano\":\"1\",\"endTimeUnixNano\":\"2\",\"status\":{{\"code\":{code}}}}}]}}]}}]}}",
                "c3".repeat(16)
            )
        };
        let text = [
            line("0000000000000002", Some("0000000000000001"), 0),
            line("0000000000000001", None, 2),
        ]
        .join("\n");
        let p = write(d.path(), "failed.jsonl", &(text + "\n"));
        let l = Otlp.load(&p).unwrap();
        assert_eq!(l.traces[0].meta.status, RunStatus::Error);
        // Only the child, no root yet: running, whatever the child says.
        let text = line("0000000000000002", Some("0000000000000001"), 2);
        let p = write(d.path(), "open.jsonl", &(text + "\n"));
        assert_eq!(Otlp.load(&p).unwrap().traces[0].meta.status, RunStatus::Running);
    }

    #[test]
    fn batch_per_line_with_a_damaged_line() {
        let l = Otlp.load(&fixture("collector.jsonl")).unwrap();
        assert_eq!(l.traces.len(), 1);
        let t = &l.traces[0];
        let d: Vec<_> = t.diagnostics.iter().map(|d| (d.line, d.severity)).collect();
        assert_eq!(d, vec![(Some(2), Severity::Error)], "{:?}", t.diagnostics);
        // The parent arrived on line 3, after its child on line 1.
        assert_eq!(tree(t), vec!["run agent [ok]", "  tool search [ok]"]);
        assert_eq!(t.counts().tool_calls, 1);
        let f = Otlp.follow(&fixture("collector.jsonl"));
        assert!(f.is_some(), "a batch per line is followed");
        assert!(Otlp.follow(&fixture("genai-document.json")).is_none());
    }

    #[test]
    fn detection() {
        let p = |s: &str| Probe::from_bytes(Path::new("x.json"), s.as_bytes().to_vec(), true);
        assert_eq!(Otlp.detect(&p(r#"{"resourceSpans":[]}"#)), 100);
        assert_eq!(Otlp.detect(&p("{\"resourceSpans\":[]}\n{\"resourceSpans\":[]}\n")), 100);
        // Log records are read too.
        assert_eq!(Otlp.detect(&p(r#"{"resourceLogs":[]}"#)), 100);
        // The OTel JS SDK's file exporter (Copilot CLI's OTel file).
        let exported = r#"{"type":"span","traceId":"ab","spanId":"01","name":"chat","startTime":[1,0],"endTime":[2,0],"attributes":{}}"#;
        assert_eq!(Otlp.detect(&p(exported)), 95);
        for other in [
            r#"{"resourceMetrics":[]}"#,
            r#"{"type":"span","name":"x"}"#,
            r#"{"trace_id":"t","span_id":"s","name":"chat","attributes":{}}"#,
            r#"{"span_id":"a","name":"x","attributes":{"maida.kind":"tool"}}"#,
            r#"{"type":"assay.trace","episode_id":"e"}"#,
        ] {
            assert_eq!(Otlp.detect(&p(other)), 0, "{other}");
        }
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn runs_of_one_resource_share_its_attributes_and_scope_names() {
        let span = |t: &str, scope: &str| {
            format!(
                r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"svc"}}}}]}},"scopeSpans":[{{"scope":{{"name":"{scope}"}},"spans":[{{"traceId":"{t}","spanId":"{t}01","name":"root"}}]}}]}}]}}"#
            )
        };
        let d = tempfile::tempdir().unwrap();
        let text = [span("aa", "s1"), span("bb", "s1"), span("cc", "s2")].join("\n");
        let l = Otlp.load(&write(d.path(), "t.jsonl", &text)).unwrap();
        let attrs: Vec<Vec<(String, Value)>> = l
            .traces
            .iter()
            .map(|t| t.meta.all_attributes().cloned().collect())
            .collect();
        let want = |scope: &str| {
            vec![
                ("service.name".to_string(), Value::from("svc")),
                ("otel.scope.names".to_string(), serde_json::json!([scope])),
            ]
        };
        assert_eq!(attrs, vec![want("s1"), want("s1"), want("s2")]);
        // One list for the first two runs, held once.
        let shared: Vec<_> = l.traces.iter().map(|t| t.meta.shared.clone().unwrap()).collect();
        assert!(std::sync::Arc::ptr_eq(&shared[0], &shared[1]));
        assert!(!std::sync::Arc::ptr_eq(&shared[0], &shared[2]));
        assert!(l.traces.iter().all(|t| t.meta.attributes.is_empty()));
    }

    #[test]
    fn batches_load_through_the_engine_with_payloads_left_on_disk() {
        let path = fixture("genai-batches.jsonl");
        let l = Otlp.load(&path).unwrap();
        assert_eq!(l.traces.len(), 2);
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(
            tree(t),
            vec![
                "run invoke_agent travel [ok]",
                "  llm gpt-4o-2024-08-06 [ok]",
                "  tool search_hotels [error]",
                "    step http.get [ok]",
            ]
        );
        // Upper-case hex ids are the same span as their lower-case references.
        assert!(t.find("b7ad6b7169203332").is_some());
        assert_eq!(t.meta.name.as_deref(), Some("invoke_agent travel"));
        let service = t.meta.all_attributes().find(|(k, _)| k == "service.name");
        assert_eq!(service.map(|(_, v)| v.clone()), Some(Value::from("travel-agent")));
        let scopes = t.meta.all_attributes().find(|(k, _)| k == "otel.scope.names").unwrap();
        assert_eq!(
            scopes.1,
            serde_json::json!([
                "opentelemetry.instrumentation.openai_v2",
                "agent.tools",
                "agent.framework"
            ])
        );
        let bytes = std::fs::read(&path).unwrap();
        for i in 0..t.len() as u32 {
            let e = t.event(i);
            assert!(matches!(e.payload, PayloadRef::Deferred), "{}", t.name(i));
            // The origin is the span object itself, inside its batch line.
            let part = &bytes[e.origin.offset as usize..][..e.origin.len as usize];
            let v: Value = serde_json::from_slice(part).unwrap();
            assert_eq!(norm_id(v.get("spanId")).as_deref(), Some(t.str(e.source_id)));
        }
        let chat = t.find("b7ad6b7169203331").unwrap();
        assert_eq!(
            t.event(chat).usage.get().map(|u| (u.input, u.output)),
            Some((Some(120), Some(35)))
        );
        let p = crate::formats::payload(t, t.event(chat));
        assert_eq!(
            p.input.unwrap()[0]["content"],
            "Book a \"quiet\" hotel in Zürich\nfor 2 nights"
        );
        assert!(
            p.extra.iter().any(|(k, v)| k == "span_kind" && v == "client"),
            "{:?}",
            p.extra
        );
        let tool = t.find("b7ad6b7169203332").unwrap();
        let p = crate::formats::payload(t, t.event(tool));
        assert_eq!(p.input.unwrap()["city"], "Zürich");
        assert_eq!(p.error.unwrap().kind.as_deref(), Some("HTTPError"));
        assert!(
            p.extra.iter().any(|(k, v)| k == "span_kind" && v == "internal"),
            "{:?}",
            p.extra
        );
        let events = p.extra.iter().find(|(k, _)| k == "events").unwrap();
        assert_eq!(events.1[0]["name"], "retry");
        // OpenInference, base64 ids, numbers where strings are usual.
        let t2 = &l.traces[1];
        assert_eq!(t2.meta.id, "0102030405060708090a0b0c0d0e0f10");
        assert_eq!(tree(t2), vec!["llm claude-x [ok]"]);
        assert_eq!(t2.counts().tokens, 12);
        let p = crate::formats::payload(t2, t2.event(0));
        assert_eq!(p.input, Some(serde_json::json!([{"role": "user", "content": "hi"}])));
    }

    #[test]
    fn following_reports_the_traces_each_poll_touched() {
        let span = |t: &str, s: &str| {
            format!(
                "{{\"resourceSpans\":[{{\"scopeSpans\":[{{\"spans\":[{{\"traceId\":\"{t}\",\"spanId\":\"{s}\",\"name\":\"x\"}}]}}]}}]}}\n"
            )
        };
        let d = tempfile::tempdir().unwrap();
        let (a, b) = ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
        let p = write(d.path(), "t.jsonl", &(span(a, "01") + &span(b, "02") + &span(a, "03")));
        let mut f = Otlp.follow(&p).unwrap();
        assert_eq!(f.poll().unwrap().touched, vec![0, 1]);
        let mut w = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut w, span(b, "04").as_bytes()).unwrap();
        assert_eq!(f.poll().unwrap().touched, vec![1]);
        std::io::Write::write_all(&mut w, (span(a, "05") + &span(b, "06") + &span(a, "07")).as_bytes()).unwrap();
        let mut touched = f.poll().unwrap().touched;
        touched.sort();
        assert_eq!(touched, vec![0, 1]);
        assert_eq!((f.sink.traces[0].len(), f.sink.traces[1].len()), (4, 3));
    }

    #[test]
    fn span_kinds_are_shown_by_name() {
        for (k, want) in [
            (Value::from(0), Value::from("unspecified")),
            (Value::from(1), Value::from("internal")),
            (Value::from(2), Value::from("server")),
            (Value::from(3), Value::from("client")),
            (Value::from(4), Value::from("producer")),
            (Value::from(5), Value::from("consumer")),
            (Value::from("SPAN_KIND_CLIENT"), Value::from("client")),
            (Value::from("SPAN_KIND_SERVER"), Value::from("server")),
            (Value::from("3"), Value::from("client")),
            (Value::from(9), Value::from(9)),
            (Value::from("weird"), Value::from("weird")),
        ] {
            assert_eq!(span_kind_name(&k, false), want, "{k}");
        }
    }

    #[test]
    fn a_bad_first_line_is_a_diagnostic_and_the_rest_loads() {
        let good = std::fs::read_to_string(fixture("genai-batches.jsonl")).unwrap();
        let d = tempfile::tempdir().unwrap();
        for first in [
            "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"traceId\":\"5b8e",
            "not json at all",
            "{\"traces\":[]}",
            "{",
        ] {
            let p = write(d.path(), "t.jsonl", &format!("{first}\n{good}"));
            for loaded in [
                Otlp.load(&p),
                crate::formats::load(&p, Some(&Otlp)),
                crate::formats::load(&p, None),
            ] {
                let l = loaded.unwrap_or_else(|e| panic!("{first:?}: {e}"));
                assert_eq!(l.traces.len(), 2, "{first:?}");
                let diags: Vec<_> = l.traces[0].diagnostics.iter().map(|d| (d.line, d.severity)).collect();
                assert_eq!(diags, vec![(Some(1), Severity::Error)], "{first:?}");
                assert_eq!(l.traces[0].len(), 4);
            }
            assert!(Otlp.follow(&p).is_some(), "{first:?}: read as lines");
        }
    }

    #[test]
    fn a_whole_document_streams_through_the_engine() {
        // Minified, several resourceSpans entries, one of them broken: the others load.
        let l = std::fs::read_to_string(fixture("genai-batches.jsonl")).unwrap();
        let entries: Vec<String> = l
            .lines()
            .map(|line| {
                let v: Value = serde_json::from_str(line).unwrap();
                v["resourceSpans"][0].to_string()
            })
            .collect();
        let doc = format!(
            "{{\"resourceSpans\":[{},{{\"scopeSpans\":[{{\"spans\":[{{\"traceId\" 1}}]}}]}},{},{}]}}",
            entries[0], entries[1], entries[2]
        );
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "doc.json", &doc);
        assert!(Otlp.follow(&p).is_none(), "one line holding one document: a document");
        let loaded = Otlp.load(&p).unwrap();
        assert_eq!(loaded.traces.len(), 2);
        let t = &loaded.traces[0];
        assert_eq!(t.len(), 4);
        assert_eq!(t.diagnostics.len(), 1, "{:?}", t.diagnostics);
        let tool = t.find("b7ad6b7169203332").unwrap();
        assert!(matches!(t.event(tool).payload, PayloadRef::Deferred));
        let p = crate::formats::payload(t, t.event(tool));
        assert_eq!(p.input.unwrap()["city"], "Zürich");
        // Not a trace document at all: one clear error.
        let p = write(d.path(), "other.json", "{\"resourceMetrics\": []}");
        let e = Otlp.load(&p).unwrap_err().to_string();
        assert!(e.contains("resourceSpans"), "{e}");
    }

    /// The straightforward reading of a line: serde_json values all the way; None when the
    /// line is not a batch. Each span: (resource attributes, scope name, span value, index).
    #[allow(clippy::type_complexity)]
    fn by_serde(line: &[u8]) -> Option<Vec<(Vec<(String, Value)>, Option<String>, Value, SpanRec<'static>)>> {
        let v: Value = serde_json::from_slice(line).ok()?;
        let batch = v.get("resourceSpans").is_some() || v.get("resourceLogs").is_some();
        if !batch && v.get("type").and_then(Value::as_str) == Some("span") {
            // A line of the OTel JS file exporter: the line is the span.
            let resource = attributes(v.get("resource").and_then(|x| x.get("attributes")));
            let scope = v
                .get("instrumentationScope")
                .and_then(|x| x.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string);
            return Some(vec![(resource, scope, v.clone(), SpanRec::of(b"", 0, fields_of(&v)))]);
        }
        let mut out = Vec::new();
        for r in v.get("resourceSpans")?.as_array()? {
            let resource = attributes(r.get("resource").and_then(|x| x.get("attributes")));
            let scopes = r.get("scopeSpans").or_else(|| r.get("instrumentationLibrarySpans"));
            for s in scopes.and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
                let scope = s
                    .get("scope")
                    .or_else(|| s.get("instrumentationLibrary"))
                    .and_then(|x| x.get("name"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
                if !s.is_object() {
                    continue;
                }
                for span in s
                    .get("spans")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
                {
                    let rec = if span.is_object() {
                        SpanRec::of(b"", 0, fields_of(span))
                    } else {
                        SpanRec::bad(b"", 0, "a span is not a JSON object; skipped")
                    };
                    out.push((resource.clone(), scope.clone(), span.clone(), rec));
                }
            }
        }
        Some(out)
    }

    /// The fast path's contract on one line: it reads what serde_json reads. Ok(true): the
    /// skimmer read the whole line itself.
    fn fast_agrees(line: &[u8]) -> Result<bool, String> {
        let text = || String::from_utf8_lossy(line).into_owned();
        let mut slot = None;
        skim_line(line, &mut slot);
        let mut probe = Batch::default();
        let skimmed = line_fast(line, &mut probe).is_some();
        let Some(oracle) = by_serde(line) else {
            if let Ok(v) = serde_json::from_slice::<Value>(line)
                && v.get("resourceLogs").is_none()
                && let Some(b) = &slot
            {
                // Only a line of another shape, skipped by the name the drift rule gives it.
                let name = b.skipped.as_ref().map(|(n, _)| n.to_string());
                if !b.spans.is_empty() || name.is_none() || name != skipped_as(&v) {
                    return Err(format!("read a line that is not a batch: {}", text()));
                }
            }
            return Ok(false);
        };
        let b = slot.ok_or_else(|| format!("no batch from a line serde reads: {}", text()))?;
        if b.spans.len() != oracle.len() {
            return Err(format!("{} spans, serde {}: {}", b.spans.len(), oracle.len(), text()));
        }
        for (s, (resource, scope, span, want)) in b.spans.iter().zip(&oracle) {
            let (res, name) = &b.scopes[s.scope as usize];
            let got_res = b.resources[*res as usize]
                .and_then(|r| serde_json::from_str::<Value>(r).ok())
                .map(|v| attributes(Some(&v)))
                .unwrap_or_default();
            if &got_res != resource || name.as_deref() != scope.as_deref() {
                return Err(format!("resource or scope differ: {}", text()));
            }
            let got_span: Value =
                serde_json::from_slice(s.bytes).map_err(|e| format!("span bytes: {e}: {}", text()))?;
            if &got_span != span {
                return Err(format!("span bytes {got_span} != {span}: {}", text()));
            }
            let mut got = s.clone();
            got.bytes = b"";
            got.scope = 0;
            if &got != want {
                return Err(format!("fast {got:?} != serde {want:?}: {}", text()));
            }
            // The payload decoded from the span's bytes is the one of the span read whole.
            let mut t = Trace::default();
            let i = t.add(NewEvent::new(EventKind::Step, "e"));
            let ev = t.event(i).clone();
            if want.bad.is_none() && Otlp.decode_payload(&t, &ev, &[s.bytes]) != span_payload(span) {
                return Err(format!("payloads differ: {}", text()));
            }
        }
        Ok(skimmed)
    }

    /// The name a line of another shape is skipped by: its `type`, else its first
    /// `resource*` key (another signal's batch); None: not skipped.
    fn skipped_as(v: &Value) -> Option<String> {
        let m = v.as_object()?;
        match m.get("type") {
            Some(Value::String(t)) if t != "span" => Some(t.clone()),
            Some(_) => None,
            None => m.keys().filter(|k| k.starts_with("resource")).min().cloned(),
        }
    }

    fn json_str(s: &str) -> String {
        serde_json::to_string(s).unwrap()
    }

    /// A line of the OTel JS file exporter: a span's fields (`span_text`) with the exporter's
    /// own (`type`, `[seconds, nanoseconds]` times, plain attributes, resource, scope).
    fn exported_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let plain = prop_oneof![
            "[a-z0-9_/ -]{0,10}".prop_map(|s| json_str(&s)),
            Just("\"chat\"".to_string()),
            Just("\"execute_tool\"".to_string()),
            Just("\"a\\u0062c\"".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            Just("2.5".to_string()),
            Just("true".to_string()),
            Just("null".to_string()),
            Just("[\"tool_calls\"]".to_string()),
            Just("{\"stringValue\":\"x\"}".to_string()),
        ];
        let attrs = proptest::collection::vec((attr_key(), plain), 0..6).prop_map(|kv| {
            let kv: Vec<String> = kv.iter().map(|(k, v)| format!("{}:{v}", json_str(k))).collect();
            format!("{{{}}}", kv.join(","))
        });
        let hr = prop_oneof![
            (any::<u32>(), 0..1_000_000_000u32).prop_map(|(s, n)| format!("[{s},{n}]")),
            Just("[1795868915,271000000]".to_string()),
            Just("[0,0]".to_string()),
            Just("[1,-1]".to_string()),
            Just("[-0,5]".to_string()),
            Just("[1.5,0]".to_string()),
            Just("[1e3,0]".to_string()),
            Just("[\"1\",2]".to_string()),
            Just("[1]".to_string()),
            Just("[1,2,3]".to_string()),
            Just("[18446744073709551615,5]".to_string()),
            Just("[]".to_string()),
            Just("null".to_string()),
        ];
        let extra = prop_oneof![
            attrs.prop_map(|a| format!("\"attributes\":{a}")),
            hr.clone().prop_map(|t| format!("\"startTime\":{t}")),
            hr.prop_map(|t| format!("\"endTime\":{t}")),
            Just("\"resource\":{\"attributes\":{\"service.name\":\"github-copilot\"}}".to_string()),
            Just("\"resource\":null".to_string()),
            Just("\"resource\":{\"attributes\":null}".to_string()),
            Just("\"instrumentationScope\":{\"name\":\"github.copilot\",\"version\":\"1\"}".to_string()),
            Just("\"instrumentationScope\":{\"name\":7}".to_string()),
            Just("\"kind\":2".to_string()),
            Just("\"type\":\"metric\"".to_string()),
        ];
        (span_text(), proptest::collection::vec(extra, 0..6), any::<bool>()).prop_map(|(span, extra, dups)| {
            let inner = &span[1..span.len() - 1];
            let mut fields = vec!["\"type\":\"span\"".to_string()];
            fields.extend(extra);
            // Mostly one of each key (the skimmer declines a repeated one: serde_json decides).
            if !dups {
                let mut keys = std::collections::HashSet::new();
                fields.retain(|x| keys.insert(x.split(':').next().unwrap_or("").to_string()));
            }
            if !inner.is_empty() {
                fields.push(inner.to_string());
            }
            format!("{{{}}}", fields.join(","))
        })
    }

    fn attr_value() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            "[a-z0-9_/ -]{0,10}".prop_map(|s| format!("{{\"stringValue\":{}}}", json_str(&s))),
            Just("{\"stringValue\":\"chat\"}".to_string()),
            Just("{\"stringValue\":\"execute_tool\"}".to_string()),
            Just("{\"stringValue\":\"tools/call\"}".to_string()),
            Just("{\"stringValue\":\"llm\"}".to_string()),
            Just("{\"stringValue\":\"\"}".to_string()),
            Just("{\"stringValue\":\"a\\u0062c\"}".to_string()),
            any::<i64>().prop_map(|n| format!("{{\"intValue\":\"{n}\"}}")),
            any::<u32>().prop_map(|n| format!("{{\"intValue\":{n}}}")),
            Just("{\"intValue\":\" 12\"}".to_string()),
            Just("{\"intValue\":\"18446744073709551615\"}".to_string()),
            Just("{\"doubleValue\":2.5}".to_string()),
            Just("{\"boolValue\":true}".to_string()),
            Just("{}".to_string()),
            Just("null".to_string()),
            Just("\"plain\"".to_string()),
            Just("7".to_string()),
            Just("{\"stringValue\":\"x\",\"intValue\":\"3\"}".to_string()),
            Just("{\"stringValue\":null}".to_string()),
            Just("{\"arrayValue\":{\"values\":[{\"stringValue\":\"a\"}]}}".to_string()),
            Just("{\"kvlistValue\":{\"values\":[{\"key\":\"k\",\"value\":{\"intValue\":\"1\"}}]}}".to_string()),
        ]
    }

    fn attr_key() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            3 => proptest::sample::select(INDEX_KEYS.to_vec()).prop_map(str::to_string),
            1 => proptest::sample::select(vec!["gen_ai.tool.call.arguments", "input.value", "gen_ai.prompt.0.content", "other.key", "gen_ai.completion"]).prop_map(str::to_string),
            1 => "[a-z.]{1,12}",
        ]
    }

    fn scalar() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| format!("\"{n}\"")),
            Just("1.5".to_string()),
            Just("2".to_string()),
            Just("\"2\"".to_string()),
            Just("\"STATUS_CODE_ERROR\"".to_string()),
            Just("\"exception\"".to_string()),
            Just("\"exc\\u0065ption\"".to_string()),
            Just("\"5B8EFFF798038103\"".to_string()),
            Just("\"AQIDBAUGBwg=\"".to_string()),
            Just("\"0000000000000000\"".to_string()),
            Just("\"a1b2c3d4e5f60718\"".to_string()),
            Just("\" 1767225600000000000 \"".to_string()),
            Just("\"SPAN_KIND_CLIENT\"".to_string()),
            "[a-z ]{0,8}".prop_map(|s| json_str(&s)),
            Just("{}".to_string()),
            Just("[]".to_string()),
        ]
    }

    fn id_or_time() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            Just("\"5B8EFFF798038103\"".to_string()),
            Just("\"AQIDBAUGBwg=\"".to_string()),
            Just("\"0000000000000000\"".to_string()),
            Just("\"a1b2c3d4e5f60718\"".to_string()),
            Just("\"tools/call search\"".to_string()),
            Just("\"exception\"".to_string()),
            Just("\" 1767225600000000000 \"".to_string()),
            Just("null".to_string()),
            any::<u64>().prop_map(|n| format!("\"{n}\"")),
            any::<u64>().prop_map(|n| n.to_string()),
            Just("-3".to_string()),
            Just("1.5e3".to_string()),
            "[0-9a-f]{0,16}".prop_map(|s| format!("\"{s}\"")),
        ]
    }

    /// Span-shaped text: known keys (both id spellings, repeats), attributes, events, status.
    fn span_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let attrs = proptest::collection::vec(
            prop_oneof![
                6 => (attr_key(), attr_value()).prop_map(|(k, v)| format!("{{\"key\":{},\"value\":{v}}}", json_str(&k))),
                1 => attr_key().prop_map(|k| format!("{{\"key\":{}}}", json_str(&k))),
                1 => attr_value().prop_map(|v| format!("{{\"value\":{v},\"key\":\"gen_ai.system\"}}")),
                1 => scalar(),
            ],
            0..6,
        )
        .prop_map(|a| format!("[{}]", a.join(",")));
        let events = proptest::collection::vec(
            prop_oneof![
                scalar().prop_map(|n| format!("{{\"name\":{n},\"attributes\":[{{\"key\":\"exception.message\",\"value\":{{\"stringValue\":\"m\"}}}}]}}")),
                Just("{\"name\":\"gen_ai.content.prompt\",\"attributes\":[{\"key\":\"gen_ai.prompt\",\"value\":{\"stringValue\":\"[1]\"}}]}".to_string()),
                scalar(),
            ],
            0..3,
        )
        .prop_map(|e| format!("[{}]", e.join(",")));
        let field = prop_oneof![
            4 => (proptest::sample::select(vec!["traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id", "name", "startTimeUnixNano", "endTimeUnixNano"]), id_or_time())
                .prop_map(|(k, v)| format!("\"{k}\":{v}")),
            1 => (proptest::sample::select(vec!["traceId", "spanId", "name", "startTimeUnixNano", "kind", "other"]), scalar())
                .prop_map(|(k, v)| format!("\"{k}\":{v}")),
            1 => scalar().prop_map(|c| format!("\"status\":{{\"code\":{c},\"message\":\"why\"}}")),
            1 => scalar().prop_map(|c| format!("\"status\":{c}")),
            3 => attrs.prop_map(|a| format!("\"attributes\":{a}")),
            1 => events.prop_map(|e| format!("\"events\":{e}")),
        ];
        (proptest::collection::vec(field, 0..7), any::<bool>(), 0..6u8).prop_map(|(f, spaced, dups)| {
            let sep = if spaced { ", " } else { "," };
            let mut f = f;
            f.insert(0, "\"traceId\":\"4bf92f3577b34da6a3ce929d0e0e4736\"".to_string());
            // Repeated keys now and then (serde_json keeps the last; the skimmer declines them).
            if dups != 0 {
                let mut keys = std::collections::HashSet::new();
                f.retain(|x| keys.insert(x.split(':').next().unwrap_or("").to_string()));
            }
            format!("{{{}}}", f.join(sep))
        })
    }

    /// Batch lines: several resources, scopes and spans; then sometimes a byte changed.
    fn line_text() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let scope = (
            prop_oneof![
                Just(String::new()),
                Just("\"scope\":{\"name\":\"lib\",\"version\":\"1\"},".to_string()),
                Just("\"scope\":null,".to_string()),
                Just("\"instrumentationLibrary\":{\"name\":\"old\"},".to_string())
            ],
            proptest::collection::vec(prop_oneof![6 => span_text(), 1 => scalar()], 0..4),
        )
            .prop_map(|(sc, spans)| format!("{{{sc}\"spans\":[{}]}}", spans.join(",")));
        let resource = (
            prop_oneof![
                Just(String::new()),
                Just(
                    "\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":\"svc\"}}]},"
                        .to_string()
                ),
                Just("\"resource\":{},".to_string())
            ],
            proptest::collection::vec(scope, 0..3),
            proptest::sample::select(vec!["scopeSpans", "instrumentationLibrarySpans"]),
        )
            .prop_map(|(r, scopes, key)| format!("{{{r}\"{key}\":[{}]}}", scopes.join(",")));
        let base = prop_oneof![
            3 => proptest::collection::vec(resource, 0..3)
                .prop_map(|rs| format!("{{\"resourceSpans\":[{}]}}", rs.join(",")).into_bytes()),
            1 => exported_text().prop_map(String::into_bytes),
        ];
        crate::formats::testing::with_byte_edits(base, 3)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1500))]
        #[test]
        fn the_fast_path_reads_what_serde_reads(line in line_text()) {
            fast_agrees(&line).map_err(proptest::test_runner::TestCaseError::fail)?;
        }

        #[test]
        fn the_fast_path_on_arbitrary_bytes(line in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            fast_agrees(&line).map_err(proptest::test_runner::TestCaseError::fail)?;
        }
    }

    #[test]
    fn the_differential_test_is_not_vacuous() {
        // Enough generated spans are read by the skimmer (and so compared) to mean something.
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let (mut lines, mut spans, mut exported) = (0, 0, 0);
        for _ in 0..500 {
            let line = line_text().new_tree(&mut runner).unwrap().current();
            lines += fast_agrees(&line).unwrap() as u32;
            let mut slot = None;
            skim_line(&line, &mut slot);
            for s in slot.iter().flat_map(|b| &b.spans) {
                let mut k = Skim::new(s.bytes);
                spans += (span_fast(&mut k, &mut Fields::default()).is_some() && k.at_end()) as u32;
            }
            exported += exported_fast(&line, &mut Batch::default()).is_some() as u32;
        }
        assert!(
            lines > 100 && spans > 250 && exported > 30,
            "only {lines} of 500 lines, {spans} spans and {exported} file exporter lines skimmed"
        );
    }

    #[test]
    fn fixture_lines_take_the_fast_path() {
        for name in ["genai-batches.jsonl", "collector.jsonl", "claude-code-spans.jsonl"] {
            let text = std::fs::read(fixture(name)).unwrap();
            for (i, l) in text.split(|&b| b == b'\n').enumerate().filter(|(_, l)| !l.is_empty()) {
                let damaged = name == "collector.jsonl" && i == 1;
                assert_eq!(fast_agrees(l), Ok(!damaged), "{name} line {}", i + 1);
            }
        }
        // A minified document's entries too.
        let doc = std::fs::read_to_string(fixture("genai-document.json")).unwrap();
        let v: Value = serde_json::from_str(&doc).unwrap();
        for entry in v["resourceSpans"].as_array().unwrap() {
            let text = entry.to_string();
            let mut b = Batch::default();
            let mut k = Skim::new(text.as_bytes());
            assert!(
                resource_fast(&mut k, text.as_bytes(), &mut b).is_some() && k.at_end(),
                "{text}"
            );
            assert!(!b.spans.is_empty());
        }
    }

    // Arbitrary bytes: tests/parsers_never_panic.rs feeds them to every format.
    proptest::proptest! {
        #[test]
        fn arbitrary_spans_never_panic(spans in proptest::collection::vec(span_strategy(), 0..10)) {
            let d = tempfile::tempdir().unwrap();
            let p = d.path().join("t.jsonl");
            let lines: Vec<String> = spans.iter().map(|s| serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [s]}]}]}).to_string()).collect();
            std::fs::write(&p, lines.join("\n")).unwrap();
            let _ = Otlp.load(&p);
        }

        #[test]
        fn arbitrary_log_records_never_panic(records in proptest::collection::vec(log_strategy(), 0..10)) {
            let d = tempfile::tempdir().unwrap();
            let p = d.path().join("l.jsonl");
            let lines: Vec<String> = records.iter().map(|r| serde_json::json!({"resourceLogs": [{"scopeLogs": [{"logRecords": [r]}]}]}).to_string()).collect();
            std::fs::write(&p, lines.join("\n")).unwrap();
            if let Ok(l) = Otlp.load(&p) {
                for t in &l.traces {
                    for e in &t.events {
                        let _ = crate::formats::payload(t, e);
                    }
                }
            }
            // And as one document.
            let doc = d.path().join("l.json");
            std::fs::write(&doc, serde_json::json!({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}).to_string()).unwrap();
            let _ = Otlp.load(&doc);
        }
    }

    fn log_strategy() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let name = prop::sample::select(vec![
            "claude_code.api_request",
            "claude_code.tool_result",
            "claude_code.api_error",
            "codex.sse_event",
            "codex.tool_result",
            "gen_ai.client.inference.operation.details",
            "gen_ai.choice",
            "copilot_chat.tool.call",
            "x",
            "",
        ]);
        let val = prop_oneof![
            Just(Value::Null),
            "[a-z0-9_ .]{0,6}".prop_map(Value::from),
            any::<i64>().prop_map(|n| serde_json::json!({"intValue": n.to_string()})),
            any::<i64>().prop_map(Value::from),
            Just(serde_json::json!({"boolValue": false})),
            Just(serde_json::json!({"kvlistValue": {"values": [{"key": "a", "value": {"stringValue": "b"}}]}})),
        ];
        let id = prop_oneof![
            Just(Value::Null),
            "[0-9a-f]{0,32}".prop_map(Value::from),
            any::<i64>().prop_map(Value::from)
        ];
        (name, val.clone(), val.clone(), val, id.clone(), id).prop_map(|(n, a, b, c, t, s)| {
            serde_json::json!({
                "eventName": n, "timeUnixNano": a, "severityNumber": b, "body": c, "traceId": t, "spanId": s,
                "attributes": [{"key": "input_tokens", "value": a}, {"key": "duration_ms", "value": b},
                    {"key": "session.id", "value": c}, {"key": "success", "value": b}, {"key": "input_token_count", "value": a},
                    {"key": "gen_ai.usage.input_tokens", "value": c}, {"key": "tool_name", "value": a}]
            })
        })
    }

    fn span_strategy() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let id = prop_oneof![
            Just(Value::from("a1")),
            Just(Value::from("AQIDBAUGBwg=")),
            Just(Value::Null),
            "[0-9a-f]{0,16}".prop_map(Value::from),
            any::<i64>().prop_map(Value::from)
        ];
        let val = prop_oneof![
            Just(Value::Null),
            "[a-z_ ]{0,6}".prop_map(Value::from),
            any::<i64>().prop_map(|n| serde_json::json!({"intValue": n.to_string()})),
            Just(serde_json::json!({"stringValue": "execute_tool"})),
            Just(serde_json::json!({"arrayValue": {"values": [{"doubleValue": "x"}]}})),
            any::<u64>().prop_map(Value::from),
        ];
        (id.clone(), id.clone(), id, val.clone(), val.clone(), val).prop_map(|(t, s, p, a, b, c)| {
            serde_json::json!({
                "traceId": t, "spanId": s, "parentSpanId": p, "name": a,
                "startTimeUnixNano": b, "endTimeUnixNano": c, "status": {"code": b},
                "attributes": [{"key": "gen_ai.operation.name", "value": a}, {"key": "gen_ai.usage.input_tokens", "value": c},
                    {"key": "gen_ai.prompt.0.content", "value": b}],
                "events": [{"name": "exception", "attributes": [{"key": "exception.message", "value": a}]}]
            })
        })
    }
}

#[cfg(test)]
mod gist_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_arguments_first() {
        // `gen_ai.tool.call.arguments` of Claude Code's and Copilot's exports.
        let bash = json!({"description": "List", "command": "ls -la"});
        assert_eq!(Otlp.gist("Bash", &bash).as_deref(), Some("ls -la"));
        let view = json!({"view_range": [1, 5], "path": "/r/a.rs"});
        assert_eq!(Otlp.gist("view", &view).as_deref(), Some("/r/a.rs"));
        assert_eq!(Otlp.gist("lookup", &json!({"city": "Oslo"})).as_deref(), Some("Oslo"));
        assert_eq!(Otlp.gist("mcp__x__y", &json!({"n": 1})).as_deref(), Some("1"));
    }
}
