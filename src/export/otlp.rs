//! A run as OTLP/JSON with the OpenTelemetry GenAI semantic conventions, written as the
//! OpenTelemetry file exporter does (JSON Lines, one `TracesData` a line), so the Collector's
//! `otlpjsonfile` receiver loads it. A run of up to [`SPANS_PER_LINE`] events is one line:
//! one document; a larger run is several lines of the same resource and trace id.
//!
//! Every event is one span: the run `invoke_agent`, an LLM call `chat`, a tool call
//! `execute_tool` (`gen_ai.operation.name`), anything else a plain span that names its kind in
//! `tracetui.event.kind`. Parents are `parentSpanId`; times nanosecond strings; an error is
//! status code 2 with an `exception` span event. Reading the export back gives the same
//! counts of events, calls, errors and tokens.
//!
//! Streaming (DESIGN §4): spans are written a line at a time; the payloads of a line's events
//! are read from disk in one positioned read of the range they lie in, decoded and serialized
//! on every core, and dropped once written, so memory stays the loaded index plus a few lines.

use crate::formats;
use crate::model::{ErrorInfo, Event, EventKind, NO_PARENT, Payload, PayloadRef, Status, Trace, Usage};
use rayon::prelude::*;
use serde_json::Value;
use std::io::{self, Write};

/// Spans in one line (one `TracesData`).
pub const SPANS_PER_LINE: usize = 1000;

/// A line's payload records are read in one piece when they lie within this many bytes.
const BLOCK_READ: u64 = 64 << 20;

/// Write the run.
pub fn write(t: &Trace, out: &mut dyn Write) -> io::Result<()> {
    let trace_id = trace_id(t);
    let head = head(t);
    const TAIL: &[u8] = b"]}]}]}\n";
    let n = t.len();
    if n == 0 {
        out.write_all(&head)?;
        return out.write_all(TAIL);
    }
    let lines: Vec<std::ops::Range<usize>> = (0..n)
        .step_by(SPANS_PER_LINE)
        .map(|s| s..(s + SPANS_PER_LINE).min(n))
        .collect();
    // A few lines per core at a time: enough to keep them busy, few enough to bound memory.
    let window = rayon::current_num_threads().max(1) * 2;
    for group in lines.chunks(window) {
        let bufs: Vec<Vec<u8>> = group.par_iter().map(|r| spans(t, r.clone(), &trace_id)).collect();
        for b in bufs {
            out.write_all(&head)?;
            out.write_all(&b)?;
            out.write_all(TAIL)?;
        }
    }
    Ok(())
}

/// The trace id: a digest of where the run came from and its id (stable across exports).
fn trace_id(t: &Trace) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(t.meta.format.as_bytes());
    h.update([0]);
    h.update(t.meta.source.to_string_lossy().as_bytes());
    h.update([0]);
    h.update(t.meta.id.as_bytes());
    let d = h.finalize();
    let mut s = String::with_capacity(32);
    for b in &d[..16] {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn span_id(i: u32) -> String {
    format!("{:016x}", i as u64 + 1)
}

/// `{"resourceSpans":[{"resource":{...},"scopeSpans":[{"scope":{...},"spans":[`
fn head(t: &Trace) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
    let mut a = Attrs::new(&mut b);
    a.str("service.name", &format!("tracetui-export:{}", t.meta.format));
    a.str("tracetui.source.format", t.meta.format);
    a.str("tracetui.run.id", &t.meta.id);
    if let Some(n) = &t.meta.name {
        a.str("tracetui.run.name", n);
    }
    a.str("tracetui.run.status", t.meta.status.as_str());
    a.str("tracetui.source.path", &t.meta.source.to_string_lossy());
    if let Some(m) = &t.meta.model {
        a.str("tracetui.run.model", m);
    }
    for (k, v) in t.meta.all_attributes().filter(|(k, _)| k != "tracetui.badges").take(64) {
        a.value(&format!("tracetui.run.attr.{k}"), v);
    }
    b.extend_from_slice(b"]},\"scopeSpans\":[{\"scope\":{\"name\":\"tracetui\",\"version\":\"");
    b.extend_from_slice(env!("CARGO_PKG_VERSION").as_bytes());
    b.extend_from_slice(b"\"},\"spans\":[");
    b
}

/// The spans of events `range` (index order: file order), comma-separated. Their records are
/// read from disk in one piece when they lie close together in one file (they do: events are
/// in file order), else one read each; arguments and results that are JSON text in the record
/// are copied from it (minified and escaped), not decoded and serialized again.
fn spans(t: &Trace, range: std::ops::Range<usize>, trace_id: &str) -> Vec<u8> {
    let evs = &t.events[range.clone()];
    let block = read_block(t, evs);
    let fmt = formats::by_id(t.meta.format);
    let mut b = Vec::with_capacity(range.len() * 2048);
    for (k, (i, e)) in range.zip(evs).enumerate() {
        if k > 0 {
            b.push(b',');
        }
        match (&e.payload, &block, fmt) {
            (PayloadRef::Deferred, Some((block, lo)), Some(fmt)) => {
                let slice = |o: crate::model::Origin| {
                    let s = (o.offset - lo) as usize;
                    &block[s..s + o.len as usize]
                };
                let mut raw: Vec<&[u8]> = vec![slice(e.origin)];
                if let Some(o2) = e.origin2.as_deref() {
                    raw.push(slice(*o2));
                }
                match fmt.decode_payload_raw(t, e, &raw) {
                    Some(rp) => {
                        let texts = (rp.input.map(|r| r.get()), rp.output.map(|r| r.get()));
                        span(t, i as u32, &rp.payload, texts, trace_id, &mut b)
                    }
                    None => span(t, i as u32, &fmt.decode_payload(t, e, &raw), NO_TEXT, trace_id, &mut b),
                }
            }
            _ => span(t, i as u32, &formats::payload(t, e), NO_TEXT, trace_id, &mut b),
        }
    }
    b
}

/// Input and output as JSON text (an object or array), in place of the payload's own.
type Texts<'a> = (Option<&'a str>, Option<&'a str>);
const NO_TEXT: Texts = (None, None);

/// The bytes that the deferred payloads of `evs` lie in, and the offset they start at, when
/// that is one file and at most [`BLOCK_READ`] bytes.
fn read_block(t: &Trace, evs: &[Event]) -> Option<(Vec<u8>, u64)> {
    let deferred = || evs.iter().filter(|e| matches!(e.payload, PayloadRef::Deferred));
    let origins = deferred().flat_map(|e| std::iter::once(e.origin).chain(e.origin2.as_deref().copied()));
    let mut file = None;
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    let mut one_file = true;
    for o in origins {
        let f = o.file;
        let (off, len) = (o.offset, o.len as u64);
        if *file.get_or_insert(f) != f {
            one_file = false;
        }
        lo = lo.min(off);
        hi = hi.max(off.saturating_add(len));
    }
    match (file, formats::by_id(t.meta.format)) {
        (Some(f), Some(_)) if one_file && hi > lo && hi - lo <= BLOCK_READ => formats::read_origin(
            t,
            crate::model::Origin {
                file: f,
                line: 0,
                offset: lo,
                len: (hi - lo) as u32,
            },
        )
        .ok()
        .filter(|b| b.len() as u64 == hi - lo)
        .map(|b| (b, lo)),
        _ => None,
    }
}

fn span(t: &Trace, i: u32, p: &Payload, texts: Texts, trace_id: &str, b: &mut Vec<u8>) {
    let e = t.event(i);
    let name = t.name(i);
    let model = Some(t.str(e.model)).filter(|m| !m.is_empty()).or(t
        .meta
        .model
        .as_deref()
        .filter(|_| e.kind == EventKind::LlmCall));
    let (op, span_name, kind) = match e.kind {
        EventKind::Run => ("invoke_agent", format!("invoke_agent {name}"), 1),
        EventKind::LlmCall => ("chat", format!("chat {}", model.unwrap_or(name)), 3),
        EventKind::ToolCall => ("execute_tool", format!("execute_tool {name}"), 1),
        _ => ("", name.to_string(), 1),
    };
    b.extend_from_slice(b"{\"traceId\":\"");
    b.extend_from_slice(trace_id.as_bytes());
    b.extend_from_slice(b"\",\"spanId\":\"");
    b.extend_from_slice(span_id(i).as_bytes());
    b.push(b'"');
    if e.parent != NO_PARENT {
        b.extend_from_slice(b",\"parentSpanId\":\"");
        b.extend_from_slice(span_id(e.parent).as_bytes());
        b.push(b'"');
    }
    b.extend_from_slice(b",\"name\":");
    json_str(b, &span_name);
    b.extend_from_slice(format!(",\"kind\":{kind}").as_bytes());
    // No clock is invented: a span without a recorded start has none (0 in protobuf terms).
    let end = e.end().or(if e.status == Status::Pending {
        None
    } else {
        e.start.into()
    });
    if let Some(s) = e.start.get() {
        b.extend_from_slice(format!(",\"startTimeUnixNano\":\"{}\"", s.max(0)).as_bytes());
    }
    if let Some(x) = end {
        b.extend_from_slice(format!(",\"endTimeUnixNano\":\"{}\"", x.max(0)).as_bytes());
    }
    b.extend_from_slice(b",\"attributes\":[");
    let mut a = Attrs::new(b);
    if !op.is_empty() {
        a.str("gen_ai.operation.name", op);
    }
    match e.kind {
        EventKind::Run => a.str("gen_ai.agent.name", name),
        EventKind::LlmCall => {
            if let Some(m) = model {
                a.str("gen_ai.request.model", m);
            }
        }
        EventKind::ToolCall => {
            a.str("gen_ai.tool.name", name);
            if !e.source_id.is_empty() {
                a.str("gen_ai.tool.call.id", t.str(e.source_id));
            }
        }
        k => {
            a.str("tracetui.event.kind", k.as_str());
            if let EventKind::Message(r) = k {
                a.str("tracetui.message.role", r.as_str());
            }
            if let Some(m) = model {
                a.str("tracetui.model", m);
            }
        }
    }
    if !e.source_id.is_empty() {
        a.str("tracetui.event.id", t.str(e.source_id));
    }
    a.str("tracetui.event.status", e.status.as_str());
    if let Some(u) = e.usage.as_deref() {
        usage(&mut a, u);
    }
    payload_attrs(&mut a, e, p, texts);
    if let Some(err) = p.error.as_ref().filter(|_| !e.is_error()) {
        a.str("tracetui.error.message", &err.message);
    }
    b.push(b']');
    // An `exception` event marks a span failed to readers: only a failed event gets one (an
    // error recorded on an event that did not fail is an attribute).
    let error = p.error.as_ref();
    if let Some(err) = error.filter(|_| e.is_error()) {
        b.extend_from_slice(b",\"events\":[{\"name\":\"exception\"");
        if let Some(x) = end.or(e.start.into()) {
            b.extend_from_slice(format!(",\"timeUnixNano\":\"{}\"", x.max(0)).as_bytes());
        }
        b.extend_from_slice(b",\"attributes\":[");
        exception(&mut Attrs::new(b), err);
        b.extend_from_slice(b"]}]");
    }
    if e.is_error() {
        let msg = error.map(|x| x.message.as_str()).unwrap_or("error");
        b.extend_from_slice(b",\"status\":{\"code\":2,\"message\":");
        json_str(b, msg);
        b.push(b'}');
    } else if e.status == Status::Ok {
        b.extend_from_slice(b",\"status\":{\"code\":1}");
    } else {
        b.extend_from_slice(b",\"status\":{}");
    }
    b.push(b'}');
}

/// Usage as the conventions count it: input tokens include the prompt cache read and written
/// (each also given apart), output tokens include reasoning. A recorded total that is not the
/// sum of the parts is kept as OpenInference's total, so the run's token count reads back.
fn usage(a: &mut Attrs, u: &Usage) {
    let add = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0).saturating_add(y.unwrap_or(0))),
    };
    let input = add(add(u.input, u.cache_read), u.cache_write);
    let output = add(u.output, u.reasoning);
    if let Some(n) = input {
        a.int("gen_ai.usage.input_tokens", n);
    }
    if let Some(n) = output {
        a.int("gen_ai.usage.output_tokens", n);
    }
    if let Some(n) = u.cache_read {
        a.int("gen_ai.usage.cache_read.input_tokens", n);
    }
    if let Some(n) = u.cache_write {
        a.int("gen_ai.usage.cache_creation.input_tokens", n);
    }
    if let Some(n) = u.reasoning {
        a.int("gen_ai.usage.reasoning.output_tokens", n);
    }
    let parts = add(input, output);
    if let Some(total) = u.total
        && parts != Some(total)
    {
        a.int("llm.token_count.total", total);
    }
    if let Some(c) = u.cost {
        a.int("tracetui.usage.cost_microdollars", c);
    }
}

/// Arguments and result of a tool (`gen_ai.tool.call.*`), prompt and response of an LLM call
/// (`gen_ai.input.messages` / `gen_ai.output.messages`, a plain text as one message), other
/// events' content as OpenInference's `input.value` / `output.value`.
fn payload_attrs(a: &mut Attrs, e: &Event, p: &Payload, texts: Texts) {
    let (ik, ok) = match e.kind {
        EventKind::ToolCall => ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result"),
        EventKind::LlmCall => ("gen_ai.input.messages", "gen_ai.output.messages"),
        _ => ("input.value", "output.value"),
    };
    let llm = e.kind == EventKind::LlmCall;
    // JSON text from the record is written as its value would be: an LLM call's message list
    // under its own key, its other JSON as `input.value` / `output.value`.
    let text = |a: &mut Attrs, text: &str, key: &'static str, other: &'static str| {
        a.json_text(if llm && !text.starts_with('[') { other } else { key }, text)
    };
    match (texts.0, &p.input) {
        (Some(t), _) => text(a, t, ik, "input.value"),
        (None, Some(v)) => match v {
            Value::String(s) if llm => a.raw_json(ik, &text_message("user", s)),
            Value::Array(_) if llm => a.json(ik, v),
            _ if llm => a.json("input.value", v),
            _ => a.value(ik, v),
        },
        (None, None) => {}
    }
    match (texts.1, &p.output) {
        (Some(t), _) => text(a, t, ok, "output.value"),
        (None, Some(v)) => match v {
            Value::String(s) if llm => a.raw_json(ok, &text_message("assistant", s)),
            Value::Array(_) if llm => a.json(ok, v),
            _ if llm => a.json("output.value", v),
            _ => a.value(ok, v),
        },
        (None, None) => {}
    }
    for (k, v) in &p.extra {
        if k == "usage" {
            continue;
        }
        a.value(&format!("tracetui.extra.{k}"), v);
    }
}

/// `[{"role":ROLE,"parts":[{"type":"text","content":S}]}]` as JSON text.
fn text_message(role: &str, s: &str) -> String {
    let mut b = Vec::with_capacity(s.len() + 64);
    b.extend_from_slice(b"[{\"role\":\"");
    b.extend_from_slice(role.as_bytes());
    b.extend_from_slice(b"\",\"parts\":[{\"type\":\"text\",\"content\":");
    json_str(&mut b, s);
    b.extend_from_slice(b"}]}]");
    String::from_utf8(b).unwrap_or_default()
}

fn exception(a: &mut Attrs, e: &ErrorInfo) {
    if let Some(k) = &e.kind {
        a.str("exception.type", k);
    }
    a.str("exception.message", &e.message);
    if let Some(s) = &e.stack {
        a.str("exception.stacktrace", s);
    }
    if let Some(d) = &e.details {
        a.json("tracetui.error.details", d);
    }
}

/// A JSON string with tracetui's safe escapes (as `crate::json` writes them: C1 controls,
/// DEL, bidi controls and U+2028/9 as `\u` escapes too), byte by byte: this is most of what an
/// export writes, and serde's formatter went through it a character at a time.
fn json_str(b: &mut Vec<u8>, s: &str) {
    b.push(b'"');
    escape_into(b, s.as_bytes());
    b.push(b'"');
}

/// Bytes that may start something to escape.
static SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[0x7f] = true;
    t[0xc2] = true; // U+0080..U+009F
    t[0xd8] = true; // U+061C
    t[0xe2] = true; // U+200E/F, U+2028..U+202E, U+2066..U+2069
    t
};

fn escape_into(b: &mut Vec<u8>, s: &[u8]) {
    b.reserve(s.len());
    let mut start = 0;
    let mut i = 0;
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    while i < s.len() {
        // Eight plain ASCII bytes at a time (no control, quote, backslash, DEL or non-ASCII).
        if let Some(word) = s.get(i..i + 8) {
            let w = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
            let control = w.wrapping_sub(0x20 * ONES) & !w & HIGH;
            let odd = zero_byte(w ^ (b'"' as u64 * ONES))
                | zero_byte(w ^ (b'\\' as u64 * ONES))
                | zero_byte(w ^ (0x7f * ONES));
            if (w & HIGH) | control | odd == 0 {
                i += 8;
                continue;
            }
        }
        let c = s[i];
        if !SPECIAL[c as usize] {
            i += 1;
            continue;
        }
        // The code point to escape and its length in bytes, if this is one.
        let esc: Option<(u32, usize)> = match c {
            b'"' | b'\\' => {
                b.extend_from_slice(&s[start..i]);
                b.push(b'\\');
                b.push(c);
                i += 1;
                start = i;
                continue;
            }
            b'\n' | b'\r' | b'\t' => {
                b.extend_from_slice(&s[start..i]);
                b.extend_from_slice(match c {
                    b'\n' => b"\\n",
                    b'\r' => b"\\r",
                    _ => b"\\t",
                });
                i += 1;
                start = i;
                continue;
            }
            0..=0x1f | 0x7f => Some((c as u32, 1)),
            0xc2 if matches!(s.get(i + 1), Some(0x80..=0x9f)) => Some((s[i + 1] as u32, 2)),
            0xd8 if s.get(i + 1) == Some(&0x9c) => Some((0x061c, 2)),
            0xe2 => match (s.get(i + 1), s.get(i + 2)) {
                (Some(0x80), Some(&x @ (0x8e | 0x8f | 0xa8..=0xae))) => Some((0x2000 + (x as u32 - 0x80), 3)),
                (Some(0x81), Some(&x @ 0xa6..=0xa9)) => Some((0x2040 + (x as u32 - 0x80), 3)),
                _ => None,
            },
            _ => None,
        };
        match esc {
            Some((cp, len)) => {
                b.extend_from_slice(&s[start..i]);
                b.extend_from_slice(format!("\\u{cp:04x}").as_bytes());
                i += len;
                start = i;
            }
            None => i += 1,
        }
    }
    b.extend_from_slice(&s[start..]);
}

/// Valid JSON text without the whitespace between its tokens, escaped as the contents of a
/// JSON string: what serde's compact writer and [`escape_into`] make of the parsed value, but
/// for how string escapes and numbers are spelled (the same JSON values).
fn minify_escaped(b: &mut Vec<u8>, s: &[u8]) {
    b.reserve(s.len() + s.len() / 8);
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        i += 1;
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => {}
            b'"' => {
                b.extend_from_slice(b"\\\"");
                // Inside the string: plain runs are escaped as text; `\x` and the closing
                // quote are written escaped once more.
                loop {
                    let Some(k) = memchr::memchr2(b'"', b'\\', &s[i..]) else {
                        escape_into(b, &s[i..]);
                        return;
                    };
                    escape_into(b, &s[i..i + k]);
                    i += k;
                    if s[i] == b'"' {
                        b.extend_from_slice(b"\\\"");
                        i += 1;
                        break;
                    }
                    b.extend_from_slice(b"\\\\");
                    match s.get(i + 1) {
                        Some(b'"') => b.extend_from_slice(b"\\\""),
                        Some(b'\\') => b.extend_from_slice(b"\\\\"),
                        Some(&x) => b.push(x),
                        None => {}
                    }
                    i += 2;
                }
            }
            _ => b.push(c),
        }
    }
}

/// Writes what it is given JSON-escaped: a value serialized through it lands as the contents
/// of a JSON string, without a copy of its text first.
struct Escaping<'a>(&'a mut Vec<u8>);

impl Write for Escaping<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        escape_into(self.0, buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An OTLP attribute list being written: `{"key":..,"value":{"stringValue":..}}`, ...
struct Attrs<'a> {
    b: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Attrs<'a> {
    fn new(b: &'a mut Vec<u8>) -> Self {
        Attrs { b, first: true }
    }
    fn key(&mut self, k: &str) {
        if !self.first {
            self.b.push(b',');
        }
        self.first = false;
        self.b.extend_from_slice(b"{\"key\":");
        json_str(self.b, k);
        self.b.extend_from_slice(b",\"value\":{");
    }
    fn str(&mut self, k: &str, v: &str) {
        self.key(k);
        self.b.extend_from_slice(b"\"stringValue\":");
        json_str(self.b, v);
        self.b.extend_from_slice(b"}}");
    }
    fn int(&mut self, k: &str, v: u64) {
        self.key(k);
        // int64 is a decimal string in the protobuf JSON mapping.
        let v = v.min(i64::MAX as u64);
        self.b.extend_from_slice(format!("\"intValue\":\"{v}\"}}}}").as_bytes());
    }
    /// Compact JSON of any value as a string attribute.
    fn json(&mut self, k: &str, v: &Value) {
        self.key(k);
        self.b.extend_from_slice(b"\"stringValue\":\"");
        // serde_json writes a string's UTF-8 in pieces, never splitting a character, and
        // escapes only `"`, `\` and C0: what it leaves raw is escaped on the way through.
        let _ = serde_json::to_writer(Escaping(self.b), v);
        self.b.extend_from_slice(b"\"}}");
    }
    /// JSON text from a record (valid: the record was parsed) as a string attribute, compact.
    fn json_text(&mut self, k: &str, text: &str) {
        self.key(k);
        self.b.extend_from_slice(b"\"stringValue\":\"");
        minify_escaped(self.b, text.as_bytes());
        self.b.extend_from_slice(b"\"}}");
    }
    fn raw_json(&mut self, k: &str, s: &str) {
        self.str(k, s);
    }
    /// A scalar as its own type, a string as is, a list or object as JSON text.
    fn value(&mut self, k: &str, v: &Value) {
        match v {
            Value::String(s) => self.str(k, s),
            Value::Bool(x) => {
                self.key(k);
                self.b.extend_from_slice(format!("\"boolValue\":{x}}}}}").as_bytes());
            }
            Value::Number(n) if n.is_i64() => {
                self.key(k);
                self.b.extend_from_slice(format!("\"intValue\":\"{n}\"}}}}").as_bytes());
            }
            Value::Number(n) if n.as_f64().is_some_and(f64::is_finite) => {
                self.key(k);
                self.b
                    .extend_from_slice(format!("\"doubleValue\":{}}}}}", n.as_f64().unwrap_or(0.0)).as_bytes());
            }
            Value::Null => {}
            other => self.json(k, other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NewEvent, Parent, RunMeta, RunStatus};

    fn sample() -> Trace {
        let mut t = Trace::new(RunMeta {
            id: "r1".into(),
            name: Some("demo".into()),
            format: "test",
            status: RunStatus::Error,
            ..Default::default()
        });
        let run = t.add(NewEvent {
            start: Some(1_000),
            duration: Some(9_000),
            status: Status::Error,
            ..NewEvent::new(EventKind::Run, "agent")
        });
        t.add(NewEvent {
            parent: Parent::Index(run),
            start: Some(2_000),
            duration: Some(1_000),
            status: Status::Ok,
            model: Some("gpt-4o"),
            usage: Some(Usage {
                input: Some(10),
                cache_read: Some(5),
                output: Some(7),
                ..Default::default()
            }),
            payload: PayloadRef::inline(Payload {
                input: Some(Value::String("hi \u{202e}".into())),
                output: Some(Value::String("hello".into())),
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::LlmCall, "gpt-4o")
        });
        t.add(NewEvent {
            parent: Parent::Index(run),
            id: Some("call_1"),
            start: Some(4_000),
            duration: Some(1_000),
            status: Status::Error,
            payload: PayloadRef::inline(Payload {
                input: Some(serde_json::json!({"q": "x"})),
                error: Some(ErrorInfo {
                    kind: Some("Timeout".into()),
                    message: "too slow".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::ToolCall, "search")
        });
        t.finalize();
        t
    }

    #[test]
    fn spans_follow_the_genai_conventions() {
        let t = sample();
        let mut out = Vec::new();
        write(&t, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1);
        let v: Value = serde_json::from_str(&text).unwrap();
        let spans = v["resourceSpans"][0]["scopeSpans"][0]["spans"].as_array().unwrap();
        assert_eq!(spans.len(), 3);
        let attr = |s: &Value, k: &str| {
            s["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["key"] == k)
                .map(|a| a["value"].clone())
        };
        assert_eq!(spans[0]["name"], "invoke_agent agent");
        assert!(spans[0].get("parentSpanId").is_none());
        assert_eq!(spans[1]["parentSpanId"], spans[0]["spanId"]);
        assert_eq!(attr(&spans[1], "gen_ai.operation.name").unwrap()["stringValue"], "chat");
        assert_eq!(
            attr(&spans[1], "gen_ai.request.model").unwrap()["stringValue"],
            "gpt-4o"
        );
        assert_eq!(attr(&spans[1], "gen_ai.usage.input_tokens").unwrap()["intValue"], "15");
        assert_eq!(attr(&spans[1], "gen_ai.usage.output_tokens").unwrap()["intValue"], "7");
        assert_eq!(
            attr(&spans[1], "gen_ai.usage.cache_read.input_tokens").unwrap()["intValue"],
            "5"
        );
        assert_eq!(spans[1]["startTimeUnixNano"], "2000");
        assert_eq!(spans[1]["endTimeUnixNano"], "3000");
        assert_eq!(attr(&spans[2], "gen_ai.tool.name").unwrap()["stringValue"], "search");
        assert_eq!(attr(&spans[2], "gen_ai.tool.call.id").unwrap()["stringValue"], "call_1");
        assert_eq!(
            attr(&spans[2], "gen_ai.tool.call.arguments").unwrap()["stringValue"],
            "{\"q\":\"x\"}"
        );
        assert_eq!(spans[2]["status"]["code"], 2);
        assert_eq!(spans[2]["status"]["message"], "too slow");
        assert_eq!(spans[2]["events"][0]["name"], "exception");
        // The bidi override is a \u escape in the file, the same text once parsed.
        assert!(text.contains("\\u202e"));
        assert!(!text.contains('\u{202e}'));
    }

    #[test]
    fn strings_are_escaped_as_crate_json_does() {
        for s in [
            "plain",
            "q\"b\\s\n\r\t\x01\x1b[2J\x7f",
            "c1 \u{80}\u{9b}\u{9f} \u{a0} é",
            "bidi \u{61c}\u{200e}\u{200f}\u{2028}\u{2029}\u{202a}\u{202e}\u{2066}\u{2069} \u{2013}\u{2030}\u{2070}",
            "日本語 🚀",
        ] {
            let mut ours = Vec::new();
            json_str(&mut ours, s);
            let mut theirs = Vec::new();
            crate::json::write(&mut theirs, s).unwrap();
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                String::from_utf8(theirs).unwrap(),
                "{s:?}"
            );
        }
        let v = serde_json::json!({"a": "x\u{202e}\"y", "n": [1, 2.5, null]});
        let mut b = Vec::new();
        Attrs::new(&mut b).json("k", &v);
        let parsed: Value = serde_json::from_slice(&[b"[".as_slice(), &b, b"]"].concat()).unwrap();
        let inner: Value = serde_json::from_str(parsed[0]["value"]["stringValue"].as_str().unwrap()).unwrap();
        assert_eq!(inner, v);
        assert!(!String::from_utf8(b).unwrap().contains('\u{202e}'));
    }

    #[test]
    fn json_text_is_copied_compact_and_escaped() {
        for text in [
            r#"{"a": [1, 2.5e3, -0, true, null], "b" : {"c":"d"}}"#,
            "{\"q\": \"say \\\"hi\\\" \\\\ \\/ \\n \\u00e9 \\u202e\"}",
            "[\"raw \u{202e} \u{2028} \u{85} \u{61c} é 🚀\", \"tab\\there\"]",
            " [ ] ",
            r#"{"k\"ey": "v\\"}"#,
        ] {
            let mut b = Vec::new();
            Attrs::new(&mut b).json_text("k", text);
            let out = String::from_utf8(b.clone()).unwrap();
            for bad in ['\u{202e}', '\u{2028}', '\u{85}', '\u{61c}', '\n', '\t'] {
                assert!(!out.contains(bad), "{bad:?} left raw in {out}");
            }
            let parsed: Value = serde_json::from_slice(&[b"[".as_slice(), &b, b"]"].concat()).unwrap();
            let inner = parsed[0]["value"]["stringValue"].as_str().unwrap();
            let want: Value = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::from_str::<Value>(inner).unwrap(), want, "{text}");
            // Compact, as serde writes the value (whose spelling of escapes may differ).
            let mut via_value = Vec::new();
            Attrs::new(&mut via_value).json("k", &want);
            if !text.contains("\\u") && !text.contains("\\/") && !text.contains("e3") && !text.contains("-0") {
                assert_eq!(out, String::from_utf8(via_value).unwrap(), "{text}");
            }
        }
    }

    #[test]
    fn a_large_run_is_several_lines_of_one_trace() {
        let mut t = Trace::new(RunMeta {
            id: "big".into(),
            format: "test",
            ..Default::default()
        });
        for k in 0..(SPANS_PER_LINE * 2 + 5) {
            t.add(NewEvent {
                start: Some(k as i64),
                ..NewEvent::new(EventKind::Step, "s")
            });
        }
        t.finalize();
        let mut out = Vec::new();
        write(&t, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let ids: std::collections::HashSet<String> = lines
            .iter()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(ids.len(), 1);
    }
}
