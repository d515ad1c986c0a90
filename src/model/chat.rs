//! Conversations inside payloads: recognise the message lists that LLM APIs and agents write
//! (OpenAI chat `messages`, Anthropic messages with content blocks, Gemini `contents`/`parts`,
//! OpenAI Responses `input` items, OpenTelemetry GenAI `parts`, Claude Code's
//! `{type, message}` records) and read them into one shape: messages of a role, each a list of
//! parts (text, thinking, tool call, tool result, media). Pure: views and exports render it.

use serde_json::{Map, Value};

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// `system`, `user`, `assistant`, `tool`, `developer`, ... (Gemini's `model` reads as
    /// `assistant`).
    pub role: String,
    /// Who spoke, when the message names it (`name` of an OpenAI message, a tool's name).
    pub name: Option<String>,
    pub parts: Vec<Part>,
    /// RFC 6901 pointer of the message inside the value it was read from.
    pub pointer: String,
}

/// A piece of a message.
#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    Text(String),
    /// Reasoning the model showed (Anthropic `thinking`, Responses `reasoning` summaries).
    Thinking(String),
    ToolCall {
        id: Option<String>,
        name: String,
        /// Arguments: JSON kept in a string is parsed; a string that is not JSON stays one.
        args: Value,
    },
    ToolResult {
        id: Option<String>,
        name: Option<String>,
        content: Vec<Part>,
        error: bool,
    },
    /// An image, audio clip, document or file: shown as a placeholder, never inline.
    Media {
        kind: &'static str,
        mime: Option<String>,
        /// Decoded size of inline data.
        bytes: Option<usize>,
        /// A file name or a (non-data) URL.
        source: Option<String>,
    },
    /// A block of a type this reader does not know (its `type`).
    Other(String),
}

impl Message {
    /// The text parts joined (what a search or a summary reads).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.parts {
            if let Part::Text(t) = p {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(t);
            }
        }
        out
    }

    /// A key that says whether two messages are the same turn, whichever API shape they came
    /// in (a prompt repeats the history: a transcript shows each turn once).
    pub fn fingerprint(&self) -> String {
        let mut f = format!("{}\u{1}", self.role);
        for p in &self.parts {
            match p {
                Part::Text(t) | Part::Thinking(t) => f.push_str(t.trim()),
                Part::ToolCall { name, args, .. } => {
                    f.push_str(&format!("\u{2}{name}{}", canonical(args)));
                }
                Part::ToolResult { id, content, .. } => {
                    f.push('\u{3}');
                    f.push_str(id.as_deref().unwrap_or(""));
                    for c in content {
                        if let Part::Text(t) = c {
                            f.push_str(t.trim());
                        }
                    }
                }
                Part::Media { kind, bytes, .. } => f.push_str(&format!("\u{4}{kind}{bytes:?}")),
                Part::Other(k) => f.push_str(k),
            }
            f.push('\u{5}');
        }
        f
    }
}

/// Arguments compared by value: a JSON string and the object it holds are the same call.
fn canonical(v: &Value) -> String {
    match v {
        Value::String(s) => serde_json::from_str::<Value>(s)
            .map(|x| x.to_string())
            .unwrap_or_else(|_| s.clone()),
        other => other.to_string(),
    }
}

/// The conversation in a prompt: a list of messages, or a request object holding one
/// (`messages`, `contents`, `input`, with `system` / `instructions` / `systemInstruction`
/// first). None when the value is not shaped like a conversation.
pub fn conversation(v: &Value) -> Option<Vec<Message>> {
    match v {
        Value::Array(a) => list(a, ""),
        Value::Object(m) => {
            let mut out = Vec::new();
            if let Some(s) = m.get("system").or_else(|| m.get("instructions")) {
                let parts = content_parts(s);
                if !parts.is_empty() {
                    let key = if m.contains_key("system") {
                        "system"
                    } else {
                        "instructions"
                    };
                    out.push(message("system", None, parts, format!("/{key}")));
                }
            }
            if let Some(s) = m.get("systemInstruction").or_else(|| m.get("system_instruction")) {
                let parts = s.get("parts").map(gemini_parts).unwrap_or_else(|| content_parts(s));
                if !parts.is_empty() {
                    out.push(message("system", None, parts, "/systemInstruction".into()));
                }
            }
            for key in ["messages", "contents", "input"] {
                match m.get(key) {
                    Some(Value::Array(a)) => {
                        out.extend(list(a, &format!("/{key}"))?);
                        return Some(out);
                    }
                    Some(Value::String(s)) if key == "input" => {
                        out.push(message("user", None, vec![Part::Text(s.clone())], "/input".into()));
                        return Some(out);
                    }
                    _ => {}
                }
            }
            // One message by itself.
            single(m, "").map(|x| vec![x])
        }
        _ => None,
    }
}

/// The message(s) of a response: a chat completion (`choices[].message`), an Anthropic or
/// Gemini response (`content` blocks, `candidates[].content`), a Responses `output` list, a
/// message or list of messages, or `{tool_calls}` / `{content}` without a role (assistant).
pub fn response(v: &Value) -> Option<Vec<Message>> {
    let Value::Object(m) = v else {
        return match v {
            Value::Array(a) => list(a, ""),
            _ => None,
        };
    };
    if let Some(Value::Array(choices)) = m.get("choices") {
        let mut out = Vec::new();
        for (i, c) in choices.iter().enumerate() {
            let Some(Value::Object(msg)) = c.get("message").or_else(|| c.get("delta")) else {
                continue;
            };
            out.push(single_as(msg, format!("/choices/{i}/message"), "assistant")?);
        }
        return (!out.is_empty()).then_some(out);
    }
    if let Some(Value::Array(cands)) = m.get("candidates") {
        let mut out = Vec::new();
        for (i, c) in cands.iter().enumerate() {
            if let Some(Value::Object(content)) = c.get("content") {
                out.push(single_as(content, format!("/candidates/{i}/content"), "assistant")?);
            }
        }
        return (!out.is_empty()).then_some(out);
    }
    if let Some(Value::Array(items)) = m.get("output") {
        return list(items, "/output");
    }
    if let Some(Value::Object(msg)) = m.get("message") {
        return single_as(msg, "/message".into(), "assistant").map(|x| vec![x]);
    }
    single_as(m, String::new(), "assistant").map(|x| vec![x])
}

fn message(role: &str, name: Option<String>, parts: Vec<Part>, pointer: String) -> Message {
    Message {
        role: role.to_string(),
        name,
        parts,
        pointer,
    }
}

/// A list is a conversation when every element is a message or a Responses item.
fn list(a: &[Value], base: &str) -> Option<Vec<Message>> {
    if a.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(a.len());
    for (i, x) in a.iter().enumerate() {
        let Value::Object(m) = x else { return None };
        out.push(single(m, &format!("{base}/{i}"))?);
    }
    Some(out)
}

/// One element of a conversation list.
fn single(m: &Map<String, Value>, pointer: &str) -> Option<Message> {
    let role = m.get("role").and_then(Value::as_str);
    let ty = m.get("type").and_then(Value::as_str);
    // Claude Code's records: `{type: "user"|"assistant", message: {role, content}}`.
    if let (Some(Value::Object(inner)), None) = (m.get("message"), role)
        && inner.contains_key("role")
    {
        return single_as(inner, format!("{pointer}/message"), "user");
    }
    if role.is_none() {
        // Responses items that are not messages.
        return match ty? {
            "function_call" | "custom_tool_call" | "local_shell_call" | "tool_call" => Some(message(
                "assistant",
                None,
                vec![Part::ToolCall {
                    id: text(m, &["call_id", "id"]),
                    name: text(m, &["name"]).unwrap_or_else(|| ty.unwrap_or("").to_string()),
                    args: args_of(
                        m.get("arguments")
                            .or_else(|| m.get("input"))
                            .or_else(|| m.get("action")),
                    ),
                }],
                pointer.to_string(),
            )),
            "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" | "tool_call_output" => {
                Some(message(
                    "tool",
                    None,
                    vec![Part::ToolResult {
                        id: text(m, &["call_id", "id"]),
                        name: None,
                        content: m.get("output").map(content_parts).unwrap_or_default(),
                        error: false,
                    }],
                    pointer.to_string(),
                ))
            }
            "reasoning" => {
                let mut parts = Vec::new();
                for key in ["summary", "content"] {
                    if let Some(Value::Array(a)) = m.get(key) {
                        for s in a {
                            if let Some(t) = s.get("text").and_then(Value::as_str) {
                                parts.push(Part::Thinking(t.to_string()));
                            }
                        }
                    }
                }
                Some(message("assistant", None, parts, pointer.to_string()))
            }
            "message" => single_as(m, pointer.to_string(), "assistant"),
            _ => None,
        };
    }
    single_as(m, pointer.to_string(), "user")
}

/// A message object: its role (or `default` when it has none but has content) and parts.
fn single_as(m: &Map<String, Value>, pointer: String, default: &str) -> Option<Message> {
    let role = match m.get("role") {
        Some(Value::String(r)) => normal_role(r),
        None => default.to_string(),
        Some(_) => return None,
    };
    let mut parts = Vec::new();
    let mut known = false;
    if let Some(c) = m.get("content") {
        known = true;
        parts.extend(content_parts(c));
    }
    if let Some(p) = m.get("parts") {
        known = true;
        parts.extend(gemini_parts(p));
    }
    if let Some(Value::String(r)) = m.get("reasoning_content").or_else(|| m.get("reasoning")) {
        parts.insert(0, Part::Thinking(r.clone()));
    }
    if let Some(Value::Array(calls)) = m.get("tool_calls") {
        known = true;
        for c in calls {
            let f = c.get("function").and_then(Value::as_object);
            let name = f
                .and_then(|f| text(f, &["name"]))
                .or_else(|| c.as_object().and_then(|c| text(c, &["name"])))
                .unwrap_or_default();
            let args = f
                .and_then(|f| f.get("arguments"))
                .or_else(|| c.get("arguments"))
                .or_else(|| c.get("args"));
            parts.push(Part::ToolCall {
                id: c.as_object().and_then(|c| text(c, &["id"])),
                name,
                args: args_of(args),
            });
        }
    }
    if let Some(Value::Object(f)) = m.get("function_call") {
        known = true;
        parts.push(Part::ToolCall {
            id: None,
            name: text(f, &["name"]).unwrap_or_default(),
            args: args_of(f.get("arguments")),
        });
    }
    if !known {
        return None;
    }
    let name = text(m, &["name"]);
    // An OpenAI tool message: its content is the result of the call it names.
    if role == "tool" || role == "function" {
        let id = text(m, &["tool_call_id"]);
        if !parts.iter().any(|p| matches!(p, Part::ToolResult { .. })) {
            parts = vec![Part::ToolResult {
                id,
                name: name.clone(),
                content: parts,
                error: false,
            }];
        }
    }
    Some(message(&role, name, parts, pointer))
}

fn normal_role(r: &str) -> String {
    match r {
        "model" => "assistant".into(),
        other => other.to_string(),
    }
}

fn text(m: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| m.get(*k).and_then(Value::as_str))
        .map(str::to_owned)
}

fn args_of(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
        Some(other) => other.clone(),
        None => Value::Null,
    }
}

/// The parts of a `content` value: a string, a list of blocks (OpenAI parts, Anthropic
/// blocks, Responses content, GenAI parts), or one block.
pub fn content_parts(v: &Value) -> Vec<Part> {
    match v {
        Value::Null => Vec::new(),
        Value::String(s) => vec![Part::Text(s.clone())],
        Value::Array(a) => a.iter().flat_map(block).collect(),
        Value::Object(_) => block(v),
        other => vec![Part::Text(other.to_string())],
    }
}

/// One content block.
fn block(v: &Value) -> Vec<Part> {
    let Value::Object(m) = v else {
        return match v {
            Value::String(s) => vec![Part::Text(s.clone())],
            Value::Null => Vec::new(),
            other => vec![Part::Text(other.to_string())],
        };
    };
    let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
    match ty {
        "text" | "input_text" | "output_text" | "summary_text" => {
            let t = text(m, &["text", "content"]).unwrap_or_default();
            vec![Part::Text(t)]
        }
        "refusal" => vec![Part::Text(text(m, &["refusal"]).unwrap_or_default())],
        "thinking" | "reasoning" => vec![Part::Thinking(
            text(m, &["thinking", "text", "content"]).unwrap_or_default(),
        )],
        "redacted_thinking" => vec![Part::Thinking("(redacted)".into())],
        "tool_use" | "server_tool_use" | "tool_call" | "function_call" => vec![Part::ToolCall {
            id: text(m, &["id", "call_id"]),
            name: text(m, &["name"]).unwrap_or_default(),
            args: args_of(m.get("input").or_else(|| m.get("arguments"))),
        }],
        "tool_result" | "tool_call_response" | "function_call_output" | "web_search_tool_result" => {
            vec![Part::ToolResult {
                id: text(m, &["tool_use_id", "id", "call_id"]),
                name: None,
                content: m
                    .get("content")
                    .or_else(|| m.get("response"))
                    .or_else(|| m.get("output"))
                    .map(content_parts)
                    .unwrap_or_default(),
                error: m.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            }]
        }
        "image" | "image_url" | "input_image" | "document" | "file" | "input_file" | "input_audio" | "audio"
        | "blob" | "uri" => vec![media(ty, m)],
        "" if m.contains_key("text") => vec![Part::Text(text(m, &["text"]).unwrap_or_default())],
        "" => gemini_part(m)
            .map(|p| vec![p])
            .unwrap_or_else(|| vec![Part::Other("object".into())]),
        other => vec![Part::Other(other.to_string())],
    }
}

fn gemini_parts(v: &Value) -> Vec<Part> {
    match v {
        Value::Array(a) => a
            .iter()
            .flat_map(|p| match p {
                Value::Object(m) => gemini_part(m).map(|x| vec![x]).unwrap_or_else(|| block(p)),
                other => block(other),
            })
            .collect(),
        other => content_parts(other),
    }
}

/// A Gemini part (camelCase in the API, snake_case in the Python SDK's dumps).
fn gemini_part(m: &Map<String, Value>) -> Option<Part> {
    let get = |a: &str, b: &str| m.get(a).or_else(|| m.get(b));
    if let Some(Value::String(t)) = m.get("text") {
        if m.get("thought").and_then(Value::as_bool) == Some(true) {
            return Some(Part::Thinking(t.clone()));
        }
        return Some(Part::Text(t.clone()));
    }
    if let Some(Value::Object(f)) = get("functionCall", "function_call") {
        return Some(Part::ToolCall {
            id: text(f, &["id"]),
            name: text(f, &["name"]).unwrap_or_default(),
            args: args_of(f.get("args")),
        });
    }
    if let Some(Value::Object(f)) = get("functionResponse", "function_response") {
        let content = match f.get("response") {
            Some(Value::Object(r)) if r.len() == 1 && r.contains_key("output") => content_parts(&r["output"]),
            Some(Value::Object(r)) if r.len() == 1 && r.contains_key("content") => content_parts(&r["content"]),
            Some(other) => vec![Part::Text(match other {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            })],
            None => Vec::new(),
        };
        return Some(Part::ToolResult {
            id: text(f, &["id"]),
            name: text(f, &["name"]),
            content,
            error: false,
        });
    }
    if let Some(Value::Object(d)) = get("inlineData", "inline_data") {
        return Some(media("blob", d));
    }
    if let Some(Value::Object(d)) = get("fileData", "file_data") {
        return Some(media("blob", d));
    }
    None
}

/// A media block as a placeholder: what it is, its MIME type and size, where it came from.
fn media(ty: &str, m: &Map<String, Value>) -> Part {
    let mut kind: &'static str = match ty {
        t if t.contains("image") => "image",
        t if t.contains("audio") => "audio",
        "document" => "document",
        _ => "file",
    };
    let mut f = Found {
        mime: text(m, &["media_type", "mimeType", "mime_type"]),
        bytes: None,
        source: text(m, &["filename", "file_name", "fileUri", "file_uri", "file_id", "name"]),
    };
    // Where the data sits: Anthropic `source`, OpenAI `image_url`/`file`/`input_audio`, inline.
    match ["source", "image_url", "file", "input_audio"]
        .iter()
        .find_map(|k| m.get(*k))
    {
        Some(Value::Object(o)) => f.look(o),
        Some(Value::String(u)) => f.url(u),
        _ => {}
    }
    f.look(m);
    if f.mime.is_none() && kind == "audio" {
        let o = m.get("input_audio").and_then(Value::as_object).unwrap_or(m);
        f.mime = text(o, &["format"]).map(|x| format!("audio/{x}"));
    }
    // Gemini's inline data and files say what they are only by their MIME type.
    if ty == "blob" {
        kind = match f.mime.as_deref().unwrap_or("") {
            m if m.starts_with("image/") => "image",
            m if m.starts_with("audio/") => "audio",
            m if m.starts_with("video/") => "video",
            "application/pdf" => "document",
            _ => "file",
        };
    }
    Part::Media {
        kind,
        mime: f.mime,
        bytes: f.bytes,
        source: f.source,
    }
}

/// What a media block says about itself, gathered from its nested objects.
struct Found {
    mime: Option<String>,
    bytes: Option<usize>,
    source: Option<String>,
}

impl Found {
    fn look(&mut self, o: &Map<String, Value>) {
        if self.mime.is_none() {
            self.mime = text(o, &["media_type", "mimeType", "mime_type"]);
        }
        if self.source.is_none() {
            self.source = text(o, &["filename", "file_id"]);
        }
        if let Some(Value::String(d)) = o.get("data").or_else(|| o.get("file_data"))
            && !self.data_url(d)
        {
            self.bytes = Some(base64_len(d));
        }
        if let Some(Value::String(u)) = o.get("url").or_else(|| o.get("image_url")) {
            self.url(u);
        }
    }

    fn url(&mut self, u: &str) {
        if !self.data_url(u) && self.source.is_none() {
            self.source = Some(u.to_string());
        }
    }

    /// A `data:` URL: its MIME type and decoded size.
    fn data_url(&mut self, d: &str) -> bool {
        let Some(rest) = d.strip_prefix("data:") else {
            return false;
        };
        let (head, body) = rest.split_once(',').unwrap_or((rest, ""));
        let m = head.split(';').next().unwrap_or("");
        if !m.is_empty() {
            self.mime = Some(m.to_string());
        }
        self.bytes = Some(base64_len(body));
        true
    }
}

/// Bytes that base64 text decodes to.
fn base64_len(s: &str) -> usize {
    let s = s.trim_end();
    let pad = s.bytes().rev().take_while(|&b| b == b'=').count();
    (s.len() / 4 * 3 + (s.len() % 4).saturating_sub(1)).saturating_sub(pad)
}

/// `12 KB`, `1.4 MB`: a size as a placeholder shows it.
pub fn human_size(n: usize) -> String {
    if n < 1024 {
        format!("{n} B")
    } else if n < 1024 * 1024 {
        format!("{} KB", (n + 512) / 1024)
    } else {
        format!("{:.1} MB", n as f64 / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn roles(m: &[Message]) -> Vec<&str> {
        m.iter().map(|x| x.role.as_str()).collect()
    }

    #[test]
    fn openai_chat_messages_with_tool_calls_and_results() {
        let v = json!({"model": "gpt-4o", "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAA="}}
            ]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"png\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "a PNG header"}
        ]});
        let c = conversation(&v).unwrap();
        assert_eq!(roles(&c), ["system", "user", "assistant", "tool"]);
        assert_eq!(c[1].pointer, "/messages/1");
        assert_eq!(c[1].parts[0], Part::Text("What is this?".into()));
        assert_eq!(
            c[1].parts[1],
            Part::Media {
                kind: "image",
                mime: Some("image/png".into()),
                bytes: Some(11),
                source: None
            }
        );
        assert_eq!(
            c[2].parts,
            [Part::ToolCall {
                id: Some("call_1".into()),
                name: "lookup".into(),
                args: json!({"q": "png"})
            }]
        );
        assert_eq!(
            c[3].parts,
            [Part::ToolResult {
                id: Some("call_1".into()),
                name: None,
                content: vec![Part::Text("a PNG header".into())],
                error: false
            }]
        );
        let r = response(&json!({"choices": [{"message": {"role": "assistant", "content": "Done."}}]})).unwrap();
        assert_eq!(r[0].text(), "Done.");
        assert_eq!(r[0].pointer, "/choices/0/message");
    }

    #[test]
    fn anthropic_messages_with_blocks() {
        let v = json!({"system": [{"type": "text", "text": "You fix bugs."}], "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "Look at this."},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "QUJD"}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "QUJDRA=="}}
            ]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Check the file."},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.py"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true, "content": [{"type": "text", "text": "no such file"}]}
            ]}
        ]});
        let c = conversation(&v).unwrap();
        assert_eq!(roles(&c), ["system", "user", "assistant", "user"]);
        assert_eq!(c[0].text(), "You fix bugs.");
        assert!(
            matches!(&c[1].parts[1], Part::Media { kind: "image", mime: Some(m), bytes: Some(3), .. } if m == "image/jpeg")
        );
        assert!(matches!(
            &c[1].parts[2],
            Part::Media {
                kind: "document",
                bytes: Some(4),
                ..
            }
        ));
        assert_eq!(c[2].parts[0], Part::Thinking("Check the file.".into()));
        assert!(
            matches!(&c[2].parts[1], Part::ToolCall { name, args, .. } if name == "Read" && args["file_path"] == "a.py")
        );
        assert!(
            matches!(&c[3].parts[0], Part::ToolResult { error: true, id: Some(id), content, .. }
            if id == "toolu_1" && content == &[Part::Text("no such file".into())])
        );
        let r = response(&json!({"id": "msg_1", "role": "assistant", "content": [{"type": "text", "text": "Fixed."}], "stop_reason": "end_turn"})).unwrap();
        assert_eq!(r[0].text(), "Fixed.");
    }

    #[test]
    fn gemini_contents_and_parts() {
        let v = json!({"systemInstruction": {"parts": [{"text": "Answer in French."}]}, "contents": [
            {"role": "user", "parts": [{"text": "Weather?"}, {"inlineData": {"mimeType": "image/webp", "data": "AAAA"}}]},
            {"role": "model", "parts": [{"functionCall": {"name": "weather", "args": {"city": "Lyon"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "weather", "response": {"output": "sunny"}}}]}
        ]});
        let c = conversation(&v).unwrap();
        assert_eq!(roles(&c), ["system", "user", "assistant", "user"]);
        assert!(matches!(
            &c[1].parts[1],
            Part::Media {
                kind: "image",
                bytes: Some(3),
                ..
            }
        ));
        assert!(matches!(&c[2].parts[0], Part::ToolCall { name, .. } if name == "weather"));
        assert!(matches!(&c[3].parts[0], Part::ToolResult { name: Some(n), content, .. }
            if n == "weather" && content == &[Part::Text("sunny".into())]));
        let r =
            response(&json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Il fait beau."}]}}]}))
                .unwrap();
        assert_eq!(roles(&r), ["assistant"]);
        assert_eq!(r[0].text(), "Il fait beau.");
    }

    #[test]
    fn responses_input_items() {
        let v = json!({"instructions": "Be careful.", "input": [
            {"role": "user", "content": "List files."},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Only .rs"},
                {"type": "input_file", "filename": "notes.txt", "file_data": "data:text/plain;base64,aGVsbG8="}]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Use ls."}]},
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{\"cmd\":[\"ls\"]}"},
            {"type": "function_call_output", "call_id": "c1", "output": "main.rs"}
        ]});
        let c = conversation(&v).unwrap();
        assert_eq!(roles(&c), ["system", "user", "user", "assistant", "assistant", "tool"]);
        assert!(
            matches!(&c[2].parts[1], Part::Media { kind: "file", mime: Some(m), bytes: Some(5), source: Some(f) }
            if m == "text/plain" && f == "notes.txt")
        );
        assert_eq!(c[3].parts, [Part::Thinking("Use ls.".into())]);
        assert!(
            matches!(&c[4].parts[0], Part::ToolCall { id: Some(i), args, .. } if i == "c1" && args["cmd"][0] == "ls")
        );
        assert!(matches!(&c[5].parts[0], Part::ToolResult { id: Some(i), .. } if i == "c1"));
        let r = response(&json!({"output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "main.rs"}]}]})).unwrap();
        assert_eq!(r[0].text(), "main.rs");
    }

    #[test]
    fn claude_code_records_and_genai_parts() {
        let v = json!([
            {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "Fix the test."}},
            {"type": "assistant", "uuid": "a1", "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}}]}},
            {"type": "user", "uuid": "u2", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "1 passed"}]}}
        ]);
        let c = conversation(&v).unwrap();
        assert_eq!(roles(&c), ["user", "assistant", "user"]);
        assert_eq!(c[1].pointer, "/1/message");
        let g = json!([{"role": "assistant", "parts": [{"type": "text", "content": "Hi"},
            {"type": "tool_call", "id": "q1", "name": "f", "arguments": {"a": 1}}]}]);
        let c = conversation(&g).unwrap();
        assert_eq!(c[0].parts[0], Part::Text("Hi".into()));
        assert!(matches!(&c[0].parts[1], Part::ToolCall { name, .. } if name == "f"));
    }

    #[test]
    fn what_is_not_a_conversation() {
        for v in [
            json!("a prompt"),
            json!(42),
            json!([]),
            json!([1, 2]),
            json!([{"city": "Paris"}]),
            json!({"city": "Paris"}),
            json!([{"role": "user", "content": "x"}, {"name": "no role"}]),
            json!([{"role": 3, "content": "x"}]),
        ] {
            assert_eq!(conversation(&v), None, "{v}");
        }
        assert_eq!(response(&json!("text")), None);
    }

    #[test]
    fn fingerprints_match_across_shapes() {
        let a = &response(&json!({"tool_calls": [{"name": "f", "arguments": {"x": 1}}]})).unwrap()[0];
        let b = &conversation(&json!([{"role": "assistant", "content": null, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}}]}]))
        .unwrap()[0];
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_ne!(
            a.fingerprint(),
            conversation(&json!([{"role": "user", "content": "f"}])).unwrap()[0].fingerprint()
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(base64_len("QUJD"), 3);
        assert_eq!(base64_len("QUJDRA=="), 4);
        assert_eq!(base64_len("QUJDRA"), 4);
        assert_eq!(human_size(12 * 1024 + 100), "12 KB");
        assert_eq!(human_size(1536 * 1024), "1.5 MB");
        assert_eq!(human_size(10), "10 B");
    }
}
