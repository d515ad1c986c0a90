//! Small helpers the formats share.

use serde_json::Value;
use std::path::Path;

/// A payload that may be JSON inside a string (Maida span events, OpenAI `arguments`):
/// the parsed value, else the string itself (DESIGN §3: parse, fall back to the string).
pub fn json_or_string(s: &str) -> Value {
    embedded_json(s).unwrap_or_else(|| Value::String(s.to_string()))
}

fn embedded_json(s: &str) -> Option<Value> {
    let t = s.trim_start();
    if t.starts_with('{') || t.starts_with('[') || t.starts_with('"') {
        serde_json::from_str::<Value>(s).ok()
    } else {
        None
    }
}

/// Like [`json_or_string`] for a value that may or may not be a string.
pub fn decode_embedded(v: &Value) -> Value {
    match v {
        Value::String(s) => json_or_string(s),
        other => other.clone(),
    }
}

/// [`decode_embedded`] taking the value: a string that is not JSON is moved, not copied.
pub fn decode_embedded_owned(v: Value) -> Value {
    match v {
        Value::String(s) => embedded_json(&s).unwrap_or(Value::String(s)),
        other => other,
    }
}

pub fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The text of a raw JSON string (borrowed when it has no escapes); None for any other value.
pub fn raw_text(raw: &str) -> Option<std::borrow::Cow<'_, str>> {
    if !raw.starts_with('"') {
        return None;
    }
    match serde_json::from_str::<&str>(raw) {
        Ok(s) => Some(std::borrow::Cow::Borrowed(s)),
        Err(_) => serde_json::from_str::<String>(raw).ok().map(std::borrow::Cow::Owned),
    }
}

/// A present, non-null field.
pub fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// A count or token number that may be redacted (`"__REDACTED__"`), a string, or a float.
pub fn lenient_u64(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0 && f.is_finite()).map(|f| f as u64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A run name from a file or directory name: `runs/abc/` → `abc`, `x.snap.json` → `x`.
pub fn stem(path: &Path) -> String {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("run");
    for suffix in [".snap.json", ".current.json", ".tar.gz", ".jsonl", ".ndjson", ".json"] {
        if let Some(s) = name.strip_suffix(suffix)
            && !s.is_empty()
        {
            return s.to_string();
        }
    }
    name.to_string()
}

/// Open a file for reading, refusing anything but a regular file: opening a FIFO blocks until
/// a writer appears (forever, for a stray pipe in a runs directory), and a device or socket
/// is no trace. Every trace file tracetui reads is opened through here.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    std::fs::File::open(path)
}

/// The error for a path that is neither a regular file nor a directory.
pub fn not_regular(meta: &std::fs::Metadata) -> std::io::Error {
    let ft = meta.file_type();
    let what = if ft.is_dir() { "a directory" } else { special_kind(&ft) };
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("not a regular file but {what}; tracetui reads trace files and directories"),
    )
}

#[cfg(unix)]
fn special_kind(ft: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn special_kind(_: &std::fs::FileType) -> &'static str {
    "a special file"
}

/// Read a small JSON file (metadata), bounded so a hostile file cannot exhaust memory.
pub fn read_json_file(path: &Path, limit: u64) -> Result<Value, super::LoadError> {
    use std::io::Read;
    let f = open_regular(path).map_err(|e| super::LoadError::io(path, e))?;
    // The size is checked before anything is read (a 267 MB file was read, then refused).
    let too_large = || super::LoadError::invalid(path, format!("larger than {} MiB; not read", limit >> 20));
    if f.metadata().is_ok_and(|m| m.len() > limit) {
        return Err(too_large());
    }
    let mut buf = Vec::new();
    // Bounded all the same: the file may grow between the look and the read.
    f.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| super::LoadError::io(path, e))?;
    if buf.len() as u64 > limit {
        return Err(too_large());
    }
    serde_json::from_slice(&buf).map_err(|e| super::LoadError::invalid(path, super::jsonl::json_error(&e)))
}

/// How deep serde_json nests before it gives up (its recursion limit).
pub const JSON_DEPTH_LIMIT: usize = 128;

/// Whether JSON text nests arrays and objects deeper than serde_json reads into a value.
/// Readers that skip a value (RawValue, IgnoredAny) accept any depth; the payload decoded
/// later would fail, so a load says so at once.
pub fn nested_too_deep(json: &[u8]) -> bool {
    let mut depth = 0usize;
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            // Most of a document is strings: jump from quote to quote (a byte at a time, this
            // was a third of `ls` over 2,000 SWE-agent trajectories).
            b'"' => {
                i += 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', &json[i..]) {
                        None => return false,
                        Some(k) if json[i + k] == b'\\' => i += k + 2,
                        Some(k) => {
                            i += k + 1;
                            break;
                        }
                    }
                    if i >= json.len() {
                        return false;
                    }
                }
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > JSON_DEPTH_LIMIT {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    false
}

/// Token counts as OpenAI's APIs write them (chat completions, Responses, Codex, OTel GenAI,
/// LiteLLM): the prompt count includes the tokens read from (and, where counted, written to)
/// the cache, and the output count includes the reasoning tokens. Put in `Usage` as written,
/// this makes them the normalized kinds: input without the cache, output without reasoning
/// (saturating: inconsistent counts in a trace never wrap).
pub fn usage_openai(u: crate::model::Usage) -> crate::model::Usage {
    usage_input_with_cache(usage_output_with_reasoning(u))
}

/// Only the prompt count includes the cache (Gemini: `promptTokenCount` includes
/// `cachedContentTokenCount`, while `thoughtsTokenCount` is apart from the output).
pub fn usage_input_with_cache(mut u: crate::model::Usage) -> crate::model::Usage {
    if let Some(i) = u.input.as_mut() {
        *i = i
            .saturating_sub(u.cache_read.unwrap_or(0))
            .saturating_sub(u.cache_write.unwrap_or(0));
    }
    u
}

/// Only the output count includes the reasoning tokens.
pub fn usage_output_with_reasoning(mut u: crate::model::Usage) -> crate::model::Usage {
    if let Some(o) = u.output.as_mut() {
        *o = o.saturating_sub(u.reasoning.unwrap_or(0));
    }
    u
}

/// An OpenAI-style `usage` object as the chat completions and Responses APIs, LiteLLM and
/// OpenRouter write it, normalized: `prompt_tokens` / `input_tokens` include the cache read
/// (`prompt_tokens_details.cached_tokens`, `input_tokens_details.cached_tokens`, LiteLLM's
/// `cache_read_input_tokens`) and the cache write (LiteLLM's `cache_creation_input_tokens`);
/// `completion_tokens` / `output_tokens` include `*_tokens_details.reasoning_tokens`. A `cost`
/// (OpenRouter, dollars) is the recorded cost.
pub fn usage_of_openai(u: &Value) -> crate::model::Usage {
    let n = |keys: &[&str]| keys.iter().find_map(|k| lenient_u64(u.get(*k)));
    let nested = |outer: &str, k: &str| lenient_u64(u.get(outer).and_then(|d| d.get(k)));
    usage_openai(crate::model::Usage {
        input: n(&["prompt_tokens", "input_tokens"]),
        output: n(&["completion_tokens", "output_tokens"]),
        total: n(&["total_tokens"]),
        cache_read: n(&["cache_read_input_tokens", "cache_read_tokens"])
            .or_else(|| nested("prompt_tokens_details", "cached_tokens"))
            .or_else(|| nested("input_tokens_details", "cached_tokens")),
        cache_write: n(&["cache_creation_input_tokens", "cache_write_tokens"]),
        reasoning: n(&["reasoning_tokens"])
            .or_else(|| nested("completion_tokens_details", "reasoning_tokens"))
            .or_else(|| nested("output_tokens_details", "reasoning_tokens")),
        cost: u.get("cost").and_then(crate::model::micros::micros_of_json),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    /// The byte-at-a-time scan `nested_too_deep` was, kept as its oracle.
    fn nested_too_deep_bytewise(json: &[u8]) -> bool {
        let (mut depth, mut in_str, mut esc) = (0usize, false, false);
        for &b in json {
            if in_str {
                match b {
                    _ if esc => esc = false,
                    b'\\' => esc = true,
                    b'"' => in_str = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_str = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > JSON_DEPTH_LIMIT {
                        return true;
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        false
    }

    proptest::proptest! {
        /// Any bytes of JSON's structural characters, quotes and escapes (deep nesting,
        /// brackets inside strings, escaped quotes, a trailing backslash) get the oracle's answer.
        #[test]
        fn nested_too_deep_agrees_with_the_bytewise_scan(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just(&b"["[..]),
                    proptest::strategy::Just(&b"{"[..]),
                    proptest::strategy::Just(&b"]"[..]),
                    proptest::strategy::Just(&b"}"[..]),
                    proptest::strategy::Just(&b"\""[..]),
                    proptest::strategy::Just(&b"\\"[..]),
                    proptest::strategy::Just(&b"a"[..]),
                    proptest::strategy::Just(&b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["[..]),
                ],
                0..200,
            )
        ) {
            let json: Vec<u8> = parts.concat();
            proptest::prop_assert_eq!(nested_too_deep(&json), nested_too_deep_bytewise(&json));
        }
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn embedded_json_is_parsed_with_fallback() {
        assert_eq!(json_or_string("{\"q\":1}"), json!({"q": 1}));
        assert_eq!(json_or_string("\"no results\""), json!("no results"));
        assert_eq!(json_or_string("[\"a\"], [\"b\"]"), json!("[\"a\"], [\"b\"]"));
        assert_eq!(json_or_string("plain"), json!("plain"));
    }

    #[test]
    fn lenient_numbers() {
        assert_eq!(lenient_u64(Some(&json!(5))), Some(5));
        assert_eq!(lenient_u64(Some(&json!("__REDACTED__"))), None);
        assert_eq!(lenient_u64(Some(&json!("12"))), Some(12));
        assert_eq!(lenient_u64(None), None);
    }

    #[test]
    fn stems() {
        assert_eq!(stem(Path::new("a/search_flow.snap.json")), "search_flow");
        assert_eq!(stem(Path::new("runs/abc")), "abc");
        assert_eq!(stem(Path::new("x.jsonl")), "x");
    }
}

/// The text a record of a type the reader does not know carries (a message, content, a
/// summary), if any. Such a record is shown as a generic event; one without text is only
/// counted (the drift rule in [`super`]). Looks a few levels down (`payload`, `data`,
/// `message` wrappers, a list's first element), no further.
pub fn drift_text(v: &Value) -> Option<&str> {
    drift_text_in(v, 0)
}

const TEXT_KEYS: [&str; 9] = [
    "text",
    "content",
    "message",
    "summary",
    "title",
    "description",
    "prompt",
    "output",
    "result",
];

fn drift_text_in(v: &Value, depth: u8) -> Option<&str> {
    if depth > 5 {
        return None;
    }
    match v {
        Value::String(s) if depth > 0 && !s.trim().is_empty() => Some(s),
        Value::Array(items) => items.iter().take(8).find_map(|x| drift_text_in(x, depth + 1)),
        Value::Object(m) => TEXT_KEYS
            .iter()
            .chain(&["payload", "data"])
            .filter_map(|k| m.get(*k))
            .find_map(|x| drift_text_in(x, depth + 1)),
        _ => None,
    }
}

/// The payload of a generic event made of a record the reader does not know: its text as
/// the input, and the record without `envelope` (fields every record repeats) beside it.
pub fn drift_payload(v: &Value, envelope: &[&str]) -> crate::model::Payload {
    let mut out = crate::model::Payload {
        input: drift_text(v).map(|t| Value::String(t.to_string())),
        ..Default::default()
    };
    let rest = match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !envelope.contains(&k.as_str()))
                .map(|(k, x)| (k.clone(), x.clone()))
                .collect(),
        ),
        other => other.clone(),
    };
    out.extra.push(("record".into(), rest));
    out
}

#[cfg(test)]
mod drift_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drift_text_finds_a_message_a_few_levels_down_and_nothing_in_bookkeeping() {
        assert_eq!(drift_text(&json!({"type": "x", "summary": "did it"})), Some("did it"));
        let v = json!({"type": "x", "payload": {"message": {"content": [{"type": "t", "text": "hi"}]}}});
        assert_eq!(drift_text(&v), Some("hi"));
        assert_eq!(
            drift_text(&json!({"type": "atis-latch", "atis": "", "sessionId": "s"})),
            None
        );
        assert_eq!(drift_text(&json!({"type": "x", "content": "  "})), None);
        assert_eq!(drift_text(&json!("top-level string")), None);
        let deep = json!({"data": {"data": {"data": {"data": {"data": {"text": "too deep"}}}}}});
        assert_eq!(drift_text(&deep), None);
    }

    #[test]
    fn drift_payload_keeps_the_record_without_its_envelope() {
        let v = json!({"type": "x", "sessionId": "s", "summary": "did it", "n": 1});
        let p = drift_payload(&v, &["sessionId"]);
        assert_eq!(p.input, Some(json!("did it")));
        assert_eq!(
            p.extra,
            vec![("record".to_string(), json!({"type": "x", "summary": "did it", "n": 1}))]
        );
    }
}
