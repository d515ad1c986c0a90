//! A run as a Markdown transcript that renders well on GitHub (a pull request, an issue):
//! a header table, then each turn: user and assistant messages as text, LLM calls with their
//! prompt and response, tool calls with arguments and result in fenced code blocks, errors as
//! a CAUTION alert; long values folded in `<details>`.
//!
//! Nothing from the trace can take the page over: a fence is longer than any backtick run in
//! its value, text outside fences has every character Markdown or HTML would act on escaped
//! (`<`, `&`, `*`, `[`, ...), `@` and `#` cannot mention or link, and controls and bidi
//! overrides are shown as visible escapes. A large run is bounded ([`MAX_EVENTS`],
//! [`MAX_VALUE`]) and the page says what was left out.

use super::{cut_bytes, header, is_conversation, message_text, pretty};
use crate::formats;
use crate::model::{EventKind, Role, Status, Trace, format_duration};
use serde_json::Value;
use std::fmt::Write as _;
use std::io::{self, Write};

/// Events in one transcript (in tree order).
pub const MAX_EVENTS: usize = 2_000;
/// Bytes of one value.
pub const MAX_VALUE: usize = 64 << 10;
/// Values longer than this (bytes or lines) are folded.
const FOLD_BYTES: usize = 1_200;
const FOLD_LINES: usize = 20;

/// Escape text for Markdown outside code: every ASCII punctuation character Markdown or HTML
/// gives a meaning to is escaped, leading spaces kept as spaces (not a code block), lines
/// broken with `<br>`, and `@` / `#` kept from mentioning or linking.
pub fn text(s: &str) -> String {
    let s = crate::sanitize::file_text(s);
    let mut out = String::with_capacity(s.len() + 16);
    for (n, line) in s.split('\n').enumerate() {
        if n > 0 {
            out.push_str("<br>\n");
        }
        let mut leading = true;
        // A run of digits at the line's start: `1.` or `1)` would start a list.
        let mut digits = true;
        let mut it = line.chars().peekable();
        while let Some(c) = it.next() {
            if leading && (c == ' ' || c == '\t') {
                out.push_str("&nbsp;");
                continue;
            }
            let first = leading;
            leading = false;
            match c {
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '&' => out.push_str("&amp;"),
                '@' => out.push_str("@&#8203;"),
                '#' => out.push_str("#&#8203;"),
                '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' => {
                    out.push('\\');
                    out.push(c);
                }
                // Block markers count at the start of a line only: a list, a heading underline.
                '-' | '+' | '=' if first => {
                    out.push('\\');
                    out.push(c);
                }
                '.' | ')' if digits && !first && it.peek().is_none_or(|n| *n == ' ' || *n == '\t') => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
            digits = digits && c.is_ascii_digit();
        }
    }
    out
}

/// A fenced code block that its value cannot close: the fence is longer than any run of
/// backticks inside.
pub fn fence(value: &str, info: &str) -> String {
    let v = crate::sanitize::file_text(value);
    let f = "`".repeat((crate::words::longest_backtick_run(&v) + 1).max(3));
    let nl = if v.ends_with('\n') { "" } else { "\n" };
    format!("{f}{info}\n{v}{nl}{f}\n")
}

#[derive(Default)]
struct Omitted {
    values_cut: usize,
}

pub fn write(t: &Trace, out: &mut dyn Write) -> io::Result<()> {
    let h = header(t);
    let walk = t.walk();
    let shown = walk.len().min(MAX_EVENTS);
    let mut om = Omitted::default();
    let mut body = String::new();
    for &(i, depth) in walk.iter().take(shown) {
        event(t, i, depth, &mut body, &mut om);
    }
    let mut s = String::new();
    let _ = writeln!(s, "# {}{}\n", if h.error { "❌ " } else { "" }, text(&h.title));
    s.push_str("| | |\n|---|---|\n");
    for (k, v) in &h.rows {
        let v = match *k {
            "Status" => format!("{} {}", status_mark(t.meta.status.event_status()), text(v)),
            _ => text(v),
        };
        let _ = writeln!(s, "| **{k}** | {} |", v.trim());
    }
    s.push('\n');
    if shown < walk.len() {
        let _ = writeln!(
            s,
            "> [!NOTE]\n> This transcript shows the first {shown} of {} events; {} left out. The HTML or OTLP/JSON export, or tracetui itself, shows them all.\n",
            walk.len(),
            crate::words::count(walk.len() - shown, "event")
        );
    }
    if om.values_cut > 0 {
        let _ = writeln!(
            s,
            "> [!NOTE]\n> {} longer than {} KiB {} cut (marked where cut).\n",
            crate::words::count(om.values_cut, "value"),
            MAX_VALUE >> 10,
            if om.values_cut == 1 { "was" } else { "were" }
        );
    }
    if !t.diagnostics.is_empty() {
        let mut d = String::new();
        for x in t.diagnostics.iter().take(100) {
            let _ = writeln!(d, "{x}");
        }
        let _ = writeln!(
            s,
            "<details><summary>{} while loading</summary>\n\n{}\n</details>\n",
            crate::words::count(t.diagnostics.len(), "diagnostic"),
            fence(&d, "text")
        );
    }
    s.push_str("## Transcript\n\n");
    out.write_all(s.as_bytes())?;
    out.write_all(body.as_bytes())?;
    writeln!(
        out,
        "---\n<sub>Exported by tracetui {} from a trace in the {} format.</sub>",
        env!("CARGO_PKG_VERSION"),
        text(t.meta.format)
    )
}

fn status_mark(s: Status) -> &'static str {
    match s {
        Status::Ok => "✅",
        Status::Error => "❌",
        Status::Pending => "⏳",
        Status::Unknown => "",
    }
}

fn event(t: &Trace, i: u32, depth: usize, s: &mut String, om: &mut Omitted) {
    let e = t.event(i);
    let p = formats::payload(t, e);
    let name = text(&crate::sanitize::line(t.name(i)));
    let st = if e.is_error() { Status::Error } else { e.status };
    let mut facts = Vec::new();
    // A message's ok says nothing; a call's does.
    let quiet = matches!(e.kind, EventKind::Message(_)) && st != Status::Error;
    if st != Status::Unknown && !quiet {
        facts.push(format!("{} {}", status_mark(st), st.as_str()));
    }
    if let Some(d) = e.duration.get() {
        facts.push(format_duration(d));
    }
    if let Some(n) = e.usage.get().and_then(|u| u.sum()) {
        facts.push(format!("{n} tokens"));
    }
    let facts = if facts.is_empty() {
        String::new()
    } else {
        format!(" · {}", facts.join(" · "))
    };
    let indent = if depth >= 2 { "↳ " } else { "" };
    let heading = match e.kind {
        EventKind::Run => format!("## ▶️ {indent}Run: {name}{facts}"),
        EventKind::Message(Role::User) => format!("### 👤 {indent}User{facts}"),
        EventKind::Message(Role::Assistant) => format!("### 💬 {indent}Assistant{facts}"),
        EventKind::Message(Role::System) => format!("### ⚙️ {indent}System{facts}"),
        EventKind::Message(Role::Tool) => format!("### 📎 {indent}Tool output: {name}{facts}"),
        EventKind::Message(Role::Other) => format!("### {indent}Message: {name}{facts}"),
        EventKind::LlmCall => format!("### 🤖 {indent}LLM call: {name}{facts}"),
        EventKind::ToolCall => format!("### 🔧 {indent}Tool call: {name}{facts}"),
        EventKind::Error => format!("### ❌ {indent}Error: {name}{facts}"),
        k => format!("#### {indent}{}: {name}{facts}", k.label()),
    };
    let _ = writeln!(s, "{heading}\n");
    if let Some(err) = &p.error {
        let kind = err
            .kind
            .as_deref()
            .map(|k| format!("{}: ", text(k)))
            .unwrap_or_default();
        let msg = text(cut_bytes(&err.message, 2_000).0);
        let msg = msg.replace('\n', "\n> ");
        let _ = writeln!(s, "> [!CAUTION]\n> **Error** {kind}{msg}\n");
        if let Some(st) = &err.stack {
            value_block(s, "Stack", &Value::String(st.clone()), om, true);
        }
        if let Some(d) = &err.details {
            value_block(s, "Error details", d, om, true);
        }
    }
    match e.kind {
        EventKind::Message(_) => {
            if let Some(v) = &p.input {
                prose(s, v, om);
            }
            if let Some(v) = &p.output {
                value_block(s, "Output", v, om, false);
            }
        }
        EventKind::LlmCall => {
            if let Some(v) = &p.input {
                conversation_or_value(s, "Prompt", v, om, true);
            }
            if let Some(v) = &p.output {
                conversation_or_value(s, "Response", v, om, false);
            }
        }
        EventKind::ToolCall => {
            if let Some(v) = &p.input {
                value_block(s, "Arguments", v, om, false);
            }
            if let Some(v) = &p.output {
                value_block(s, "Result", v, om, false);
            }
        }
        _ => {
            if let Some(v) = &p.input {
                value_block(s, "Input", v, om, true);
            }
            if let Some(v) = &p.output {
                value_block(s, "Output", v, om, true);
            }
        }
    }
}

/// Message text as escaped prose, folded when long.
fn prose(s: &mut String, v: &Value, om: &mut Omitted) {
    let t = match v {
        Value::String(x) => x.clone(),
        other if other.get("role").is_some() => message_text(other),
        other => pretty(other),
    };
    let (head, left) = cut_bytes(&t, MAX_VALUE);
    let mut body = text(head);
    if left > 0 {
        om.values_cut += 1;
        let _ = write!(body, "<br>\n*… {left} more bytes left out*");
    }
    if long(&t) {
        let lines = t.lines().count();
        let _ = writeln!(s, "<details><summary>{lines} lines</summary>\n\n{body}\n\n</details>\n");
    } else {
        let _ = writeln!(s, "{body}\n");
    }
}

fn long(t: &str) -> bool {
    t.len() > FOLD_BYTES || t.lines().count() > FOLD_LINES
}

/// A prompt that is a message list as the conversation, one message after the other.
fn conversation_or_value(s: &mut String, label: &str, v: &Value, om: &mut Omitted, fold: bool) {
    if !is_conversation(v) {
        if let Value::String(x) = v {
            let _ = writeln!(s, "**{label}**\n");
            prose(s, &Value::String(x.clone()), om);
        } else {
            value_block(s, label, v, om, fold);
        }
        return;
    }
    let msgs = v.as_array().map(Vec::as_slice).unwrap_or(&[]);
    let mut inner = String::new();
    for m in msgs {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("other");
        let _ = writeln!(inner, "**{}**\n", text(role));
        prose(&mut inner, &Value::String(message_text(m)), om);
    }
    if fold || inner.len() > FOLD_BYTES {
        let _ = writeln!(
            s,
            "<details><summary>{label} ({})</summary>\n\n{inner}</details>\n",
            crate::words::count(msgs.len(), "message")
        );
    } else {
        let _ = writeln!(s, "**{label}**\n\n{inner}");
    }
}

/// A value in a fenced block (JSON pretty, text as text), folded when long or asked to.
fn value_block(s: &mut String, label: &str, v: &Value, om: &mut Omitted, fold: bool) {
    let full = pretty(v);
    let info = if v.is_string() { "text" } else { "json" };
    let (head, left) = cut_bytes(&full, MAX_VALUE);
    let mut block = fence(head, info);
    if left > 0 {
        om.values_cut += 1;
        let _ = writeln!(block, "*… {left} more bytes left out*");
    }
    if fold || long(&full) {
        let lines = full.lines().count();
        let _ = writeln!(
            s,
            "<details><summary>{label} ({})</summary>\n\n{block}\n</details>\n",
            crate::words::count(lines, "line")
        );
    } else {
        let _ = writeln!(s, "**{label}**\n\n{block}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outlast_backticks_in_the_value() {
        assert_eq!(fence("a", "json"), "```json\na\n```\n");
        let f = fence("x ```` y\n```", "text");
        assert!(f.starts_with("`````text\n"), "{f}");
        assert!(f.ends_with("\n`````\n"));
    }

    #[test]
    fn text_is_inert_markdown() {
        assert_eq!(text("<script>x</script>"), "&lt;script&gt;x&lt;/script&gt;");
        assert_eq!(text("[a](javascript:x)"), "\\[a\\](javascript:x)");
        assert_eq!(text("1. a-b 2.5\n- x"), "1\\. a-b 2.5<br>\n\\- x");
        assert_eq!(text("**b** @me #1"), "\\*\\*b\\*\\* @&#8203;me #&#8203;1");
        assert_eq!(text("  - item\nnext"), "&nbsp;&nbsp;\\- item<br>\nnext");
        assert_eq!(text("\x1b[2J\u{202e}"), "\\\\x1b\\[2J&lt;U+202E&gt;");
    }
}
