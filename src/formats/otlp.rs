//! OpenTelemetry traces as OTLP/JSON: a whole `{"resourceSpans": [...]}` document
//! (ExportTraceServiceRequest / TracesData), or the collector file exporter's JSON Lines, one
//! such batch per line. One run per `traceId`; a file may hold many.
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

use super::jsonl::{Follow, LineLoc, LineParser, Sink, json_error};
use super::{Format, LoadError, Loaded, Probe, decode_embedded};
use crate::model::*;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::Path;

pub struct Otlp;

/// Largest whole document read (a batch per line has no such limit).
const DOC_LIMIT: u64 = 512 << 20;

impl Format for Otlp {
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
        let spans = |v: &Value| v.get("resourceSpans").is_some_and(Value::is_array);
        match (&p.whole, &p.first) {
            (Some(v), _) if spans(v) => 100,
            (_, Some(v)) if spans(v) => 100,
            _ if p.first_keys.first().is_some_and(|k| k == "resourceSpans") => 90,
            _ => 0,
        }
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        if let Some(mut f) = self.follow(path) {
            f.poll()?;
            return f.finish("OTLP spans");
        }
        let v = super::read_json_file(path, DOC_LIMIT)?;
        let mut sink = Sink::new(path);
        let mut parser = Parser::default();
        parser.batch(
            &v,
            LineLoc {
                line: 0,
                offset: 0,
                len: 0,
            },
            &mut sink,
        );
        parser.flush(&mut sink);
        sink.finish("OTLP spans")
    }

    /// Only the JSON Lines layout grows; a pretty-printed document is read whole.
    fn follow(&self, path: &Path) -> Option<Follow> {
        let probe = Probe::open(path).ok()?;
        let batch_per_line = probe.first.as_ref().is_some_and(|v| v.get("resourceSpans").is_some());
        batch_per_line.then(|| Follow::new(path, Box::new(|| Box::new(Parser::default()) as Box<dyn LineParser>)))
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
    let s = v?.as_str()?.trim();
    if s.is_empty() || s.bytes().all(|b| b == b'0') {
        return None; // all-zero ids mean "none"
    }
    if s.len() % 2 == 0 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Some(s.to_ascii_lowercase());
    }
    if let Some(bytes) = base64(s).filter(|b| matches!(b.len(), 8 | 16)) {
        return Some(bytes.iter().map(|b| format!("{b:02x}")).collect());
    }
    Some(s.to_string())
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

fn get_u64(attrs: &[(String, Value)], keys: &[&str]) -> Option<u64> {
    keys.iter().find_map(|k| super::lenient_u64(get(attrs, k)))
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

/// What a span is, by the conventions it follows.
fn classify(attrs: &[(String, Value)]) -> EventKind {
    let op = get_str(attrs, "gen_ai.operation.name").unwrap_or("");
    match op {
        "chat" | "text_completion" | "generate_content" | "completion" | "embeddings" => return EventKind::LlmCall,
        "execute_tool" => return EventKind::ToolCall,
        "invoke_agent" | "create_agent" => return EventKind::Run,
        _ => {}
    }
    match get_str(attrs, "openinference.span.kind")
        .map(str::to_ascii_uppercase)
        .as_deref()
    {
        Some("LLM" | "EMBEDDING") => return EventKind::LlmCall,
        Some("TOOL") => return EventKind::ToolCall,
        Some("AGENT") => return EventKind::Run,
        Some("CHAIN") => return EventKind::Step,
        _ => {}
    }
    if get_str(attrs, "mcp.method.name") == Some("tools/call") {
        return EventKind::ToolCall;
    }
    if get(attrs, "gen_ai.system").is_some()
        || get(attrs, "gen_ai.request.model").is_some()
        || get(attrs, "llm.model_name").is_some()
    {
        return EventKind::LlmCall;
    }
    EventKind::Step
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

/// The OTLP line parser; a whole document is fed to it as one batch.
#[derive(Default)]
pub struct Parser {
    /// traceId → index of its trace in the sink.
    traces: HashMap<String, usize>,
}

impl Parser {
    /// One `{"resourceSpans": [...]}` batch.
    pub fn batch(&mut self, v: &Value, loc: LineLoc, sink: &mut Sink) {
        let Some(rs) = v.get("resourceSpans").and_then(Value::as_array) else {
            let line = loc.line.max(1);
            sink.error(line, "no `resourceSpans` array: not an OTLP/JSON trace batch");
            return;
        };
        for r in rs {
            let resource = attributes(r.get("resource").and_then(|x| x.get("attributes")));
            let scopes = r
                .get("scopeSpans")
                .or_else(|| r.get("instrumentationLibrarySpans"))
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            for s in scopes {
                let scope = s
                    .get("scope")
                    .or_else(|| s.get("instrumentationLibrary"))
                    .and_then(|x| x.get("name"))
                    .and_then(Value::as_str);
                for span in s
                    .get("spans")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
                {
                    self.span(span, &resource, scope, loc, sink);
                }
            }
        }
    }

    fn trace_for(&mut self, trace_id: &str, resource: &[(String, Value)], sink: &mut Sink) -> usize {
        if let Some(&i) = self.traces.get(trace_id) {
            sink.touch(i);
            return i;
        }
        let mut t = Trace::new(RunMeta {
            id: trace_id.to_string(),
            format: "otlp-json",
            source: sink.path.clone(),
            attributes: resource.to_vec(),
            ..Default::default()
        });
        t.add_file(sink.path.clone());
        let i = sink.push_trace(t);
        self.traces.insert(trace_id.to_string(), i);
        i
    }

    fn span(&mut self, s: &Value, resource: &[(String, Value)], scope: Option<&str>, loc: LineLoc, sink: &mut Sink) {
        let at = |line: u64| line.max(1);
        if !s.is_object() {
            sink.error(at(loc.line), "a span is not a JSON object; skipped");
            return;
        }
        let Some(trace_id) = norm_id(s.get("traceId").or_else(|| s.get("trace_id"))) else {
            sink.error(at(loc.line), "a span without `traceId`; skipped");
            return;
        };
        let span_id = norm_id(s.get("spanId").or_else(|| s.get("span_id")));
        let parent_id = norm_id(s.get("parentSpanId").or_else(|| s.get("parent_span_id")));
        let ti = self.trace_for(&trace_id, resource, sink);
        let t = &mut sink.traces[ti];
        if let Some(id) = span_id.as_deref()
            && t.find(id).is_some()
        {
            t.diagnostics.push(Diagnostic::warning(
                sink.path.clone(),
                (loc.line > 0).then_some(loc.line),
                format!("span {id} appears again; the repeat is skipped"),
            ));
            return;
        }
        let attrs = attributes(s.get("attributes"));
        let span_name = s.get("name").and_then(Value::as_str).unwrap_or("span");
        let start = nanos(s.get("startTimeUnixNano"));
        let end = nanos(s.get("endTimeUnixNano"));
        let mut kind = classify(&attrs);
        let model = get_str(&attrs, "gen_ai.response.model")
            .or_else(|| get_str(&attrs, "gen_ai.request.model"))
            .or_else(|| get_str(&attrs, "llm.model_name"));
        let tool = get_str(&attrs, "gen_ai.tool.name")
            .or_else(|| get_str(&attrs, "tool.name"))
            .or_else(|| get_str(&attrs, "mcp.tool.name"))
            .or_else(|| {
                span_name
                    .strip_prefix("tools/call ")
                    .filter(|_| kind == EventKind::ToolCall)
            });
        let name = match kind {
            EventKind::ToolCall => tool.unwrap_or(span_name),
            EventKind::LlmCall => model.unwrap_or(span_name),
            _ => span_name,
        };
        let usage = Usage {
            input: get_u64(
                &attrs,
                &[
                    "gen_ai.usage.input_tokens",
                    "gen_ai.usage.prompt_tokens",
                    "llm.token_count.prompt",
                ],
            ),
            output: get_u64(
                &attrs,
                &[
                    "gen_ai.usage.output_tokens",
                    "gen_ai.usage.completion_tokens",
                    "llm.token_count.completion",
                ],
            ),
            total: get_u64(&attrs, &["llm.token_count.total"]),
        };
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
        // Status: code 2 (or its enum name) is an error; exception events are errors too.
        let status_v = s.get("status");
        let code = status_v.and_then(|x| x.get("code"));
        let mut error = matches!(code, Some(Value::Number(n)) if n.as_u64() == Some(2))
            || matches!(code, Some(Value::String(c)) if c == "STATUS_CODE_ERROR" || c == "2");
        if error {
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
        for ev in s
            .get("events")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            let ev_name = ev.get("name").and_then(Value::as_str).unwrap_or("");
            let ea = attributes(ev.get("attributes"));
            match ev_name {
                "exception" => {
                    error = true;
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
                    if let Some(ts) = nanos(ev.get("timeUnixNano")) {
                        m.insert("time".into(), Value::String(format_ts(ts)));
                    }
                    if !ea.is_empty() {
                        m.insert("attributes".into(), Value::Object(ea.into_iter().collect()));
                    }
                    other_events.push(Value::Object(m));
                }
            }
        }
        if kind == EventKind::Step && error && name == "exception" {
            kind = EventKind::Error;
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
        if let Some(sc) = scope {
            p.extra.push(("scope".into(), Value::String(sc.to_string())));
        }
        if let Some(k) = s.get("kind").filter(|k| !k.is_null()) {
            p.extra.push(("span_kind".into(), k.clone()));
        }
        let duration = match (start, end) {
            (Some(a), Some(b)) if b >= a => Some(b - a),
            _ => None,
        };
        t.add(NewEvent {
            id: span_id.as_deref(),
            parent: match parent_id.as_deref() {
                Some(pid) => Parent::Id(pid),
                None => Parent::None,
            },
            start,
            duration,
            status: if error {
                Status::Error
            } else if end.is_some() {
                Status::Ok
            } else {
                Status::Unknown
            },
            usage: (!usage.is_empty()).then_some(usage),
            model,
            payload: PayloadRef::Inline(Box::new(p)),
            origin: Origin {
                file: 0,
                line: loc.line.min(u32::MAX as u64) as u32,
                offset: loc.offset,
                len: loc.len.min(u32::MAX as usize) as u32,
            },
            ..NewEvent::new(kind, name)
        });
    }
}

impl LineParser for Parser {
    fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        match serde_json::from_slice::<Value>(line) {
            Ok(v) => self.batch(&v, loc, sink),
            Err(e) => sink.error(loc.line, json_error(&e)),
        }
    }

    fn flush(&mut self, sink: &mut Sink) {
        for t in &mut sink.traces {
            t.finalize();
            // An MCP `tools/call` client span inside the `execute_tool` span of the same tool is
            // the same call seen one layer down: count it once.
            for i in 0..t.events.len() {
                let e = &t.events[i];
                if e.kind == EventKind::ToolCall
                    && e.parent != NO_PARENT
                    && t.events[e.parent as usize].kind == EventKind::ToolCall
                    && t.events[e.parent as usize].name == e.name
                {
                    t.events[i].kind = EventKind::Step;
                }
            }
            // The run: named by its first root span (else the service), failed if a span failed.
            let root = t.roots.first().copied();
            let service = t
                .meta
                .attributes
                .iter()
                .find(|(k, _)| k == "service.name")
                .and_then(|(_, v)| v.as_str())
                .map(str::to_string);
            t.meta.name = root.map(|r| t.name(r).to_string()).or(service);
            t.meta.status = if t.events.iter().any(|e| e.status == Status::Error) {
                RunStatus::Error
            } else {
                RunStatus::Ok
            };
            t.meta.model = t
                .events
                .iter()
                .find(|e| e.kind == EventKind::LlmCall && !e.model.is_empty())
                .map(|e| t.str(e.model).to_string());
        }
    }
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
        assert_eq!(t.meta.status, RunStatus::Error);
        let c = t.counts();
        assert_eq!((c.llm_calls, c.tool_calls, c.tokens), (2, 1, 30 + 45));
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
        for other in [
            r#"{"resourceLogs":[]}"#,
            r#"{"trace_id":"t","span_id":"s","name":"chat","attributes":{}}"#,
            r#"{"span_id":"a","name":"x","attributes":{"maida.kind":"tool"}}"#,
            r#"{"type":"assay.trace","episode_id":"e"}"#,
        ] {
            assert_eq!(Otlp.detect(&p(other)), 0, "{other}");
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
