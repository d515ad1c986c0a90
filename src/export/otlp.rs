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

use crate::formats::{self, RawText};
use crate::model::{ErrorInfo, Event, EventKind, NO_PARENT, Payload, PayloadRef, Status, Trace, Usage};
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
    // Lines are made on every core and written in order as they come; a few lines per core
    // ahead at most bounds memory.
    let lead = rayon::current_num_threads().max(1) * 2;
    let mut io = Ok(());
    crate::in_order::in_order(
        lines.len(),
        lead,
        |k| spans(t, lines[k].clone(), &trace_id),
        |_, b| {
            io = out
                .write_all(&head)
                .and_then(|_| out.write_all(&b))
                .and_then(|_| out.write_all(TAIL));
            io.is_ok()
        },
    );
    io?;
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

/// A number in decimal (what `format!` spends most of a span's small writes on).
fn decimal(b: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    b.extend_from_slice(&digits[at..]);
}

/// The span id of event `i`, as 16 hex digits.
fn span_id(b: &mut Vec<u8>, i: u32) {
    let v = i as u64 + 1;
    for k in (0..16).rev() {
        b.push(b"0123456789abcdef"[(v >> (k * 4)) as usize & 15]);
    }
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
    // The records' text and about 1 KB of span around each (measured: a span's names,
    // ids and attribute keys), so the buffer rarely grows.
    let mut b = Vec::with_capacity(block.as_ref().map_or(0, |(x, _)| x.len() + x.len() / 4) + range.len() * 1024);
    let mut sink = Sink {
        llm: false,
        kind: EventKind::Run,
        bufs: Default::default(),
    };
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
                sink.llm = e.kind == EventKind::LlmCall;
                sink.kind = e.kind;
                match fmt.decode_payload_raw(t, e, &raw, Some(&mut sink)) {
                    Some(rp) => {
                        let taken = [0, 1].map(|k| rp.taken[k].then_some(sink.bufs[k].as_slice()));
                        let texts = Texts {
                            input: rp.input,
                            output: rp.output,
                            extra: &rp.extra,
                            taken,
                        };
                        span(t, i as u32, &rp.payload, texts, trace_id, &mut b)
                    }
                    None => span(
                        t,
                        i as u32,
                        &fmt.decode_payload(t, e, &raw),
                        Texts::default(),
                        trace_id,
                        &mut b,
                    ),
                }
            }
            _ => span(t, i as u32, &formats::payload(t, e), Texts::default(), trace_id, &mut b),
        }
    }
    b
}

/// What the format left as text: input and output as their text in the record, in place
/// of the payload's own; extra fields as their text, after the payload's own; and input and
/// output the sink took, as the attributes it wrote.
#[derive(Default)]
struct Texts<'a, 'b> {
    input: Option<RawText<'a>>,
    output: Option<RawText<'a>>,
    extra: &'b [(&'static str, &'a str)],
    taken: [Option<&'b [u8]>; 2],
}

/// The export's [`formats::RawSink`]: writes a taken input or output as the attribute
/// [`payload_attrs`] would write for its text, finding the value's end as it copies it.
struct Sink {
    llm: bool,
    kind: EventKind,
    bufs: [Vec<u8>; 2],
}

impl formats::RawSink for Sink {
    fn take(&mut self, output: bool, rest: &str) -> Option<usize> {
        let (key, other, role) = side_keys(self.kind, output);
        let b = &mut self.bufs[output as usize];
        b.clear();
        let mut a = Attrs::new(b);
        let r = rest.as_bytes();
        match r.first()? {
            b'"' => a.written_to_end(key, self.llm.then_some(role), r),
            &c => {
                a.key(if self.llm && c != b'[' { other } else { key });
                a.b.extend_from_slice(b"\"stringValue\":\"");
                let n = minify_escaped(a.b, r)?;
                a.b.extend_from_slice(b"\"}}");
                Some(n)
            }
        }
    }
}

/// The key of an event's input (or output), the key its JSON goes under when it is an LLM
/// call's but no message list, and the role of its text as a message.
fn side_keys(kind: EventKind, output: bool) -> (&'static str, &'static str, &'static str) {
    let (ik, ok) = match kind {
        EventKind::ToolCall => ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result"),
        EventKind::LlmCall => ("gen_ai.input.messages", "gen_ai.output.messages"),
        _ => ("input.value", "output.value"),
    };
    if output {
        (ok, "output.value", "assistant")
    } else {
        (ik, "input.value", "user")
    }
}

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
    let (op, name_rest, kind) = match e.kind {
        EventKind::Run => ("invoke_agent", name, 1),
        EventKind::LlmCall => ("chat", model.unwrap_or(name), 3),
        EventKind::ToolCall => ("execute_tool", name, 1),
        _ => ("", name, 1),
    };
    b.extend_from_slice(b"{\"traceId\":\"");
    b.extend_from_slice(trace_id.as_bytes());
    b.extend_from_slice(b"\",\"spanId\":\"");
    span_id(b, i);
    b.push(b'"');
    if e.parent != NO_PARENT {
        b.extend_from_slice(b",\"parentSpanId\":\"");
        span_id(b, e.parent);
        b.push(b'"');
    }
    // The span's name: the operation and what it acts on (`chat gpt-4o`), or the event's name.
    b.extend_from_slice(b",\"name\":\"");
    if !op.is_empty() {
        b.extend_from_slice(op.as_bytes());
        b.push(b' ');
    }
    escape_into(b, name_rest.as_bytes());
    b.extend_from_slice(b"\",\"kind\":");
    decimal(b, kind);
    // No clock is invented: a span without a recorded start has none (0 in protobuf terms).
    let end = e.end().or(if e.status == Status::Pending {
        None
    } else {
        e.start.into()
    });
    if let Some(s) = e.start.get() {
        b.extend_from_slice(b",\"startTimeUnixNano\":\"");
        decimal(b, s.max(0) as u64);
        b.push(b'"');
    }
    if let Some(x) = end {
        b.extend_from_slice(b",\"endTimeUnixNano\":\"");
        decimal(b, x.max(0) as u64);
        b.push(b'"');
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
    if let Some(u) = e.usage.get() {
        usage(&mut a, &u);
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
    let llm = e.kind == EventKind::LlmCall;
    // Text from the record is written as its value would be: an LLM call's message list
    // under its own key, its other JSON as `input.value` / `output.value`, a string as a
    // message; a string whose escapes the copy does not take is decoded after all.
    let text = |a: &mut Attrs, text: RawText, key: &'static str, other: &'static str, role: &'static str| match text {
        RawText::Json(t) => {
            a.json_text(if llm && !t.starts_with('[') { other } else { key }, t);
            None
        }
        RawText::Str(w) if llm => (!a.written_message(key, role, w)).then(|| text.value()).flatten(),
        RawText::Str(w) => (!a.written_str(key, w)).then(|| text.value()).flatten(),
    };
    let decoded = |a: &mut Attrs, v: &Value, key: &'static str, other: &'static str, role: &str| match v {
        Value::String(s) if llm => a.raw_json(key, &text_message(role, s)),
        Value::Array(_) if llm => a.json(key, v),
        _ if llm => a.json(other, v),
        _ => a.value(key, v),
    };
    let sides = [(texts.input, &p.input, false), (texts.output, &p.output, true)];
    for (raw, value, output) in sides {
        if let Some(attr) = texts.taken[output as usize] {
            a.raw_attr(attr);
            continue;
        }
        let (key, other, role) = side_keys(e.kind, output);
        match (raw, value) {
            (Some(t), _) => {
                if let Some(v) = text(a, t, key, other, role) {
                    decoded(a, &v, key, other, role);
                }
            }
            (None, Some(v)) => decoded(a, v, key, other, role),
            (None, None) => {}
        }
    }
    for (k, v) in &p.extra {
        if k == "usage" {
            continue;
        }
        a.value(&extra_key(k), v);
    }
    // Usage is written from the index above; a string as written is copied, the rest (small:
    // numbers, the odd object) decoded as before.
    for &(k, text) in texts.extra {
        if k == "usage" || (text.starts_with('"') && a.written_str(&extra_key(k), text)) {
            continue;
        }
        if let Ok(v) = serde_json::from_str::<Value>(text) {
            a.value(&extra_key(k), &v);
        }
    }
}

/// `tracetui.extra.K`, without a `format!` for the keys formats give most.
fn extra_key(k: &str) -> std::borrow::Cow<'static, str> {
    match k {
        "provider" => "tracetui.extra.provider".into(),
        "model" => "tracetui.extra.model".into(),
        "temperature" => "tracetui.extra.temperature".into(),
        "stop_reason" => "tracetui.extra.stop_reason".into(),
        "meta" => "tracetui.extra.meta".into(),
        "diff" => "tracetui.extra.diff".into(),
        _ => format!("tracetui.extra.{k}").into(),
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
    // Plain text has no escape, so this cannot fail.
    let _ = escape(b, s, false, false);
}

/// A bit for each of 16 bytes that may start something to escape ([`SPECIAL`]).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn special_mask(b: [u8; 16]) -> u32 {
    // SSE2 is part of x86_64: no runtime check needed.
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is always present on x86_64; the load is unaligned and reads 16 bytes
    // of a 16-byte array.
    unsafe {
        let v = _mm_loadu_si128(b.as_ptr() as *const __m128i);
        let eq = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
        // Unsigned v <= 0x1f: max(v, 0x1f) == 0x1f.
        let control = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
        let any = _mm_or_si128(
            _mm_or_si128(_mm_or_si128(control, eq(b'"')), _mm_or_si128(eq(b'\\'), eq(0x7f))),
            _mm_or_si128(_mm_or_si128(eq(0xc2), eq(0xd8)), eq(0xe2)),
        );
        _mm_movemask_epi8(any) as u32
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn special_mask(b: [u8; 16]) -> u32 {
    let mut m = 0;
    for (k, c) in b.iter().enumerate() {
        m |= (SPECIAL[*c as usize] as u32) << k;
    }
    m
}

/// Write `s` escaped as the contents of a JSON string, as `crate::json` escapes (C0 and C1
/// controls, DEL, bidi controls, U+2028/9 as `\u` escapes; `"`, `\\`, `\n`, `\r`, `\t` short).
/// With `written`, `s` is a JSON string as a record writes it, from after its opening quote
/// (to its closing quote, or on past it): its escapes are decoded first (the text written is
/// that of the string's value), and it ends at its closing quote. None, with `b` partly
/// written, on an escape serde would refuse. With `twice`, the escaped text is escaped again:
/// the contents of a JSON string holding JSON text that holds this string. What was read:
/// the closing quote's position, else `s.len()`.
fn escape(b: &mut Vec<u8>, s: &[u8], written: bool, twice: bool) -> Option<usize> {
    b.reserve(s.len());
    let mut start = 0;
    let mut i = 0;
    while i < s.len() {
        i = next_special(s, i);
        if i >= s.len() {
            break;
        }
        let c = s[i];
        if written {
            match c {
                // An escape written as `crate::json` writes it (most of a record's, measured)
                // is copied: alone it stays in the run, escaped twice it takes a backslash
                // before it (two before `\"` and `\\`).
                b'\\' if matches!(s.get(i + 1), Some(b'"' | b'\\' | b'n' | b'r' | b't')) => {
                    if twice {
                        b.extend_from_slice(&s[start..i]);
                        b.extend_from_slice(if matches!(s[i + 1], b'"' | b'\\') {
                            b"\\\\"
                        } else {
                            b"\\"
                        });
                        start = i;
                    }
                    i += 2;
                    continue;
                }
                b'\\' => {
                    let (cp, len) = written_escape(s, i)?;
                    b.extend_from_slice(&s[start..i]);
                    put_char(b, cp, twice);
                    i += len;
                    start = i;
                    continue;
                }
                // The closing quote: the string's end.
                b'"' => {
                    b.extend_from_slice(&s[start..i]);
                    return Some(i);
                }
                // serde refuses these raw in a string.
                0..=0x1f => return None,
                _ => {}
            }
        }
        match plain_special(s, i) {
            (Some(cp), len) => {
                b.extend_from_slice(&s[start..i]);
                put_char(b, cp, twice);
                i += len;
                start = i;
            }
            // A lead byte of a character that needs no escape: the rest of it follows as is.
            (None, len) => i += len,
        }
    }
    b.extend_from_slice(&s[start..]);
    Some(s.len())
}

/// Where the next byte at or after `i` that may start something to escape ([`SPECIAL`]) is,
/// or `s.len()`.
#[inline(always)]
fn next_special(s: &[u8], mut i: usize) -> usize {
    while let Some(block) = s.get(i..i + 16) {
        let m = special_mask(block.try_into().unwrap_or([0; 16]));
        if m != 0 {
            return i + m.trailing_zeros() as usize;
        }
        i += 16;
    }
    while i < s.len() && !SPECIAL[s[i] as usize] {
        i += 1;
    }
    i
}

/// The character at `s[i]`, a [`SPECIAL`] byte of plain text: the code point `crate::json`
/// escapes and its length, or None and 1 for a lead byte of a character it leaves as is.
#[inline(always)]
fn plain_special(s: &[u8], i: usize) -> (Option<u32>, usize) {
    let c = s[i];
    match c {
        0xc2 if matches!(s.get(i + 1), Some(0x80..=0x9f)) => (Some(s[i + 1] as u32), 2),
        0xd8 if s.get(i + 1) == Some(&0x9c) => (Some(0x061c), 2),
        0xe2 => match (s.get(i + 1), s.get(i + 2)) {
            (Some(0x80), Some(&x @ (0x8e | 0x8f | 0xa8..=0xae))) => (Some(0x2000 + (x as u32 - 0x80)), 3),
            (Some(0x81), Some(&x @ 0xa6..=0xa9)) => (Some(0x2040 + (x as u32 - 0x80)), 3),
            _ => (None, 1),
        },
        0xc2 | 0xd8 => (None, 1),
        _ => (Some(c as u32), 1),
    }
}

/// A decoded escape of a written JSON string at `s[i]` (a backslash): its code point and the
/// escape's length. None for what serde would refuse (a bad or lone surrogate, a bad letter).
fn written_escape(s: &[u8], i: usize) -> Option<(u32, usize)> {
    let hex = |at: usize| -> Option<u32> {
        let h = std::str::from_utf8(s.get(at..at + 4)?).ok()?;
        u32::from_str_radix(h, 16)
            .ok()
            .filter(|_| h.bytes().all(|c| c.is_ascii_hexdigit()))
    };
    Some(match *s.get(i + 1)? {
        b'"' => (b'"' as u32, 2),
        b'\\' => (b'\\' as u32, 2),
        b'/' => (b'/' as u32, 2),
        b'b' => (8, 2),
        b'f' => (12, 2),
        b'n' => (b'\n' as u32, 2),
        b'r' => (b'\r' as u32, 2),
        b't' => (b'\t' as u32, 2),
        b'u' => {
            let hi = hex(i + 2)?;
            match hi {
                0xd800..=0xdbff => {
                    if s.get(i + 6) != Some(&b'\\') || s.get(i + 7) != Some(&b'u') {
                        return None;
                    }
                    let lo = hex(i + 8).filter(|lo| (0xdc00..=0xdfff).contains(lo))?;
                    (0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00), 12)
                }
                0xdc00..=0xdfff => return None,
                _ => (hi, 6),
            }
        }
        _ => return None,
    })
}

/// One character as `crate::json` writes it in a string (escaped when it must be), and with
/// `twice` that text escaped once more.
fn put_char(b: &mut Vec<u8>, cp: u32, twice: bool) {
    let bs: &[u8] = if twice { b"\\\\" } else { b"\\" };
    match cp {
        0x22 => {
            b.extend_from_slice(bs);
            b.extend_from_slice(if twice { b"\\\"" } else { b"\"" });
        }
        0x5c => {
            b.extend_from_slice(bs);
            b.extend_from_slice(bs);
        }
        0x0a | 0x0d | 0x09 => {
            b.extend_from_slice(bs);
            b.push(match cp {
                0x0a => b'n',
                0x0d => b'r',
                _ => b't',
            });
        }
        0..=0x1f | 0x7f..=0x9f | 0x061c | 0x200e | 0x200f | 0x2028..=0x202e | 0x2066..=0x2069 => {
            b.extend_from_slice(bs);
            let _ = write!(b, "u{cp:04x}");
        }
        _ => {
            let mut tmp = [0u8; 4];
            let c = char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER);
            b.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
        }
    }
}

/// Valid JSON text (an object or array) without the whitespace between its tokens, escaped as
/// the contents of a JSON string: what serde's compact writer and [`escape_into`] make of the
/// parsed value, but for how string escapes and numbers are spelled (the same JSON values).
/// It stops where the value ends (`s` may go on past it): the value's length, or None (`b`
/// partly written) when `s` ends first.
fn minify_escaped(b: &mut Vec<u8>, s: &[u8]) -> Option<usize> {
    b.reserve(s.len() + s.len() / 8);
    let mut i = 0;
    let mut depth = 0usize;
    while i < s.len() {
        let c = s[i];
        i += 1;
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => {}
            b'{' | b'[' => {
                depth += 1;
                b.push(c);
            }
            b'}' | b']' => {
                b.push(c);
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i);
                }
            }
            b'"' => {
                b.extend_from_slice(b"\\\"");
                // Inside the string, in one scan: plain runs are escaped as text; `\x` and
                // the closing quote are written escaped once more.
                let mut start = i;
                loop {
                    i = next_special(s, i);
                    let Some(&c) = s.get(i) else {
                        b.extend_from_slice(&s[start..]);
                        return None;
                    };
                    match c {
                        b'"' => {
                            b.extend_from_slice(&s[start..i]);
                            b.extend_from_slice(b"\\\"");
                            i += 1;
                            break;
                        }
                        b'\\' => {
                            b.extend_from_slice(&s[start..i]);
                            b.extend_from_slice(b"\\\\");
                            match s.get(i + 1) {
                                Some(b'"') => b.extend_from_slice(b"\\\""),
                                Some(b'\\') => b.extend_from_slice(b"\\\\"),
                                Some(&x) => b.push(x),
                                None => {}
                            }
                            i += 2;
                            start = i.min(s.len());
                        }
                        _ => match plain_special(s, i) {
                            (Some(cp), len) => {
                                b.extend_from_slice(&s[start..i]);
                                put_char(b, cp, false);
                                i += len;
                                start = i;
                            }
                            (None, len) => i += len,
                        },
                    }
                }
            }
            _ => b.push(c),
        }
    }
    None
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
        self.b.extend_from_slice(b"\"intValue\":\"");
        decimal(self.b, v);
        self.b.extend_from_slice(b"\"}}");
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
    /// A string attribute from a string as a record writes it (quotes included), its escapes
    /// decoded and written as [`json_str`] would write the value. False, with nothing
    /// written, on an escape that needs the decoded value.
    fn written_str(&mut self, k: &str, w: &str) -> bool {
        self.written(k, None, w)
    }
    /// [`text_message`] of a string as a record writes it, as a string attribute (what
    /// `raw_json(k, &text_message(role, value))` writes, without decoding the value).
    fn written_message(&mut self, k: &str, role: &'static str, w: &str) -> bool {
        self.written(k, Some(role), w)
    }
    /// [`Attrs::written_str`], or [`Attrs::written_message`] with a role, of the whole `w`.
    fn written(&mut self, k: &str, role: Option<&'static str>, w: &str) -> bool {
        let (mark, first) = (self.b.len(), self.first);
        let whole = w.len().checked_sub(2);
        if whole.is_none() || self.written_to_end(k, role, w.as_bytes()) != whole.map(|n| n + 2) {
            self.b.truncate(mark);
            self.first = first;
            return false;
        }
        true
    }
    /// [`Attrs::written`] of the string that starts `r` (at its opening quote), up to its
    /// closing quote: the string's length with its quotes, or None (`b` partly written) on an
    /// escape [`escape`] leaves to a decoder or no closing quote. The head and tail of a
    /// message are this module's own words (its roles too), which need no escape.
    fn written_to_end(&mut self, k: &str, role: Option<&'static str>, r: &[u8]) -> Option<usize> {
        self.key(k);
        self.b.extend_from_slice(b"\"stringValue\":\"");
        if let Some(role) = role {
            self.b.extend_from_slice(b"[{\\\"role\\\":\\\"");
            self.b.extend_from_slice(role.as_bytes());
            self.b
                .extend_from_slice(b"\\\",\\\"parts\\\":[{\\\"type\\\":\\\"text\\\",\\\"content\\\":\\\"");
        }
        let inner = r.get(1..)?;
        let n = escape(self.b, inner, true, role.is_some())?;
        if inner.get(n) != Some(&b'"') {
            return None;
        }
        if role.is_some() {
            self.b.extend_from_slice(b"\\\"}]}]");
        }
        self.b.extend_from_slice(b"\"}}");
        Some(n + 2)
    }
    /// An attribute written elsewhere (by [`Sink`]), complete.
    fn raw_attr(&mut self, attr: &[u8]) {
        if !self.first {
            self.b.push(b',');
        }
        self.first = false;
        self.b.extend_from_slice(attr);
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

    #[test]
    fn the_vector_test_matches_the_table() {
        for c in 0..=255u8 {
            for at in 0..16 {
                let mut b = [b'a'; 16];
                b[at] = c;
                let want = if SPECIAL[c as usize] { 1 << at } else { 0 };
                assert_eq!(special_mask(b), want, "byte {c:#x} at {at}");
            }
        }
    }

    /// A string as a record may write it: any character may be a `\u` escape (astral ones
    /// as a surrogate pair), `/` may be `\/`, and what JSON allows raw may stay raw.
    fn written(s: &str, how: &[u8]) -> String {
        let mut w = String::from("\"");
        for (k, c) in s.chars().enumerate() {
            let h = how.get(k % how.len().max(1)).copied().unwrap_or(0) % 4;
            match c {
                _ if h == 0 => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        w.push_str(&format!("\\u{u:04X}"));
                    }
                }
                '/' if h == 1 => w.push_str("\\/"),
                '"' | '\\' | '\u{0}'..='\u{1f}' => {
                    let e = serde_json::to_string(&c.to_string()).unwrap();
                    w.push_str(&e[1..e.len() - 1]);
                }
                _ => w.push(c),
            }
        }
        w.push('"');
        w
    }

    proptest::proptest! {
        /// A string copied from its written form is the bytes the decoded string gives,
        /// alone and as a message (escaped twice).
        #[test]
        fn written_strings_export_as_decoded_ones(
            s in "(\\PC|[\"\\\\/\n\r\t\u{0}-\u{1f}\u{7f}-\u{9f}\u{61c}\u{200e}\u{2028}-\u{202e}\u{2066}-\u{2069}é🚀])*",
            how in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..8),
        ) {
            let w = written(&s, &how);
            proptest::prop_assert_eq!(serde_json::from_str::<String>(&w).unwrap(), s.clone());
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            proptest::prop_assert!(Attrs::new(&mut fast).written_str("k", &w));
            Attrs::new(&mut slow).str("k", &s);
            proptest::prop_assert_eq!(String::from_utf8(fast).unwrap(), String::from_utf8(slow).unwrap());
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            proptest::prop_assert!(Attrs::new(&mut fast).written_message("k", "user", &w));
            Attrs::new(&mut slow).raw_json("k", &text_message("user", &s));
            proptest::prop_assert_eq!(String::from_utf8(fast).unwrap(), String::from_utf8(slow).unwrap());
        }
    }

    /// The two-pass copy the one-scan [`minify_escaped`] replaced (memchr for the quote or
    /// backslash, then the run escaped as text): the oracle of the proptest below.
    fn minify_two_pass(b: &mut Vec<u8>, s: &[u8]) {
        let mut i = 0;
        while i < s.len() {
            let c = s[i];
            i += 1;
            match c {
                b' ' | b'\t' | b'\n' | b'\r' => {}
                b'"' => {
                    b.extend_from_slice(b"\\\"");
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

    proptest::proptest! {
        /// JSON text with written strings (any escapes) and whitespace between its tokens
        /// copies as the two-pass copy did, and parses back to the same value.
        #[test]
        fn json_text_copies_as_two_passes_did(
            strs in proptest::collection::vec(
                "(\\PC|[\"\\\\/\n\r\t\u{0}-\u{1f}\u{7f}-\u{9f}\u{61c}\u{200e}\u{2028}-\u{202e}\u{2066}-\u{2069}é🚀])*",
                0..5,
            ),
            how in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..8),
            ws in proptest::collection::vec(0usize..4, 1..6),
        ) {
            let sp = |k: usize| [" ", "", "\n  ", "\t"][ws[k % ws.len()]];
            let mut text = format!("{}{{", sp(0));
            for (k, s) in strs.iter().enumerate() {
                if k > 0 {
                    text.push(',');
                }
                let w = written(s, &how);
                text.push_str(&format!("{}{}{}:{}[{}, 1.5e3,{}true , null]", sp(k + 1), written(&format!("k{k}{s}"), &how), sp(k), sp(k + 2), w, sp(k + 3)));
            }
            text.push_str(&format!("{}}}{}", sp(7), sp(8)));
            let want: Value = serde_json::from_str(&text).unwrap();
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            minify_escaped(&mut fast, text.as_bytes());
            minify_two_pass(&mut slow, text.as_bytes());
            proptest::prop_assert_eq!(String::from_utf8(fast.clone()).unwrap(), String::from_utf8(slow).unwrap());
            let inner: String = serde_json::from_slice(&[b"\"".as_slice(), &fast, b"\""].concat()).unwrap();
            proptest::prop_assert_eq!(serde_json::from_str::<Value>(&inner).unwrap(), want);
        }
    }

    #[test]
    fn an_escape_serde_refuses_writes_nothing() {
        for w in [
            r#""lone \ud800 surrogate""#,
            r#""bad \x escape""#,
            r#""low \udc00 first""#,
            r#""short \u12""#,
        ] {
            let mut b = b"[".to_vec();
            let mut a = Attrs::new(&mut b);
            assert!(!a.written_str("k", w), "{w}");
            assert!(!a.written_message("k", "user", w), "{w}");
            a.str("after", "x");
            assert_eq!(
                String::from_utf8(b).unwrap(),
                r#"[{"key":"after","value":{"stringValue":"x"}}"#
            );
        }
    }
}
