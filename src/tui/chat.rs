//! The chat view of an LLM call or a message, and the run's transcript, as detail documents:
//! one header per message with its role, text as Markdown (or raw with `p`), tool calls and
//! results as compact blocks, media as placeholders. Built from the shapes `model::chat`
//! recognises and the turns `report::transcript` orders; drawn by the detail pane like the
//! JSON view, so scrolling, wrapping and copying work the same. All trace text is sanitized.

use super::action::Command;
use super::detail::{self, CopyTarget, Doc, Line, Tok};
use super::markdown;
use super::nav::say;
use super::state::{Pane, RunView, State};
use crate::formats;
use crate::model::chat::{Message, Part, human_size};
use crate::model::{EventKind, Trace};
use crate::report::transcript::{self, Turn};
use crate::sanitize;
use serde_json::Value;

/// How the run view shows documents (`c`, `p`, `C`).
#[derive(Clone, Debug, Default)]
pub struct ChatMode {
    /// `c`: the JSON view even where a conversation was recognised.
    pub json: bool,
    /// `p`: message text as it is, not rendered as Markdown.
    pub plain: bool,
    /// `C`: the detail pane shows the run's transcript.
    pub transcript: bool,
    /// In the transcript: where each event's turns start (event, line), in line order.
    pub turns_at: Vec<(u32, usize)>,
    /// The detail pane holds the transcript now (a selection move only moves its cursor).
    pub shown: bool,
}

/// The document the detail pane shows for `ev` in this mode: the transcript, the chat view,
/// or None for the JSON view (or the raw records).
pub fn doc(r: &mut RunView, t: &Trace, ev: u32) -> Option<Doc> {
    r.chat.shown = false;
    if r.chat.transcript {
        let (d, at) = transcript_doc(t, r.chat.plain);
        r.chat.turns_at = at;
        r.chat.shown = true;
        return Some(d);
    }
    if r.raw || r.chat.json {
        return None;
    }
    event_doc(t, ev, r.span.0, r.chat.plain)
}

/// With the transcript shown, a new selection moves the transcript's cursor to the event's
/// turns instead of building another document. True when it did.
pub fn follow_selection(r: &mut RunView, ev: u32) -> bool {
    if !(r.chat.transcript && r.chat.shown && r.detail.is_some()) {
        return false;
    }
    if let Some(d) = r.detail.as_mut() {
        d.event = ev;
    }
    place(r, ev);
    true
}

/// Put the transcript's cursor (and the window's top) on the first line of `ev`'s turns.
pub fn place(r: &mut RunView, ev: u32) {
    if !r.chat.shown {
        return;
    }
    let pos = |e: u32| r.pos.get(e as usize).copied().unwrap_or(u32::MAX) as usize;
    let Some(line) = line_of(&r.chat.turns_at, pos, ev) else {
        return;
    };
    if let Some(d) = r.detail.as_mut() {
        let row = d.rows.as_ref().map_or(line, |rows| rows.row_of(line));
        d.cursor = row;
        d.offset = row;
    }
}

/// `c`, `p` and `C` in the tree and the detail pane. True when `c` was one of them.
pub fn command(s: &mut State, c: Command) -> bool {
    if !matches!(c, Command::Chat | Command::Plain | Command::Transcript) {
        return false;
    }
    let Some(r) = s.run.as_mut() else { return true };
    let msg = match c {
        Command::Chat => {
            r.chat.json = !r.chat.json;
            if r.chat.json {
                "JSON view (c: chat view)"
            } else {
                "chat view where the event holds a conversation (c: JSON view)"
            }
        }
        Command::Plain => {
            r.chat.plain = !r.chat.plain;
            if r.chat.plain {
                "message text as it is (p: Markdown)"
            } else {
                "message text as Markdown (p: raw text)"
            }
        }
        _ => {
            r.chat.transcript = !r.chat.transcript;
            if r.chat.transcript {
                r.focus = Pane::Detail;
                "transcript: the whole run as one conversation (C: close)"
            } else {
                "transcript closed"
            }
        }
    };
    // Made again in the new mode; the transcript opens at the selected event.
    r.chat.shown = false;
    if let Some(ev) = r.selected_event() {
        r.rebuild_detail(ev);
    }
    say(s, msg, false);
    true
}

/// Tool result lines shown in a chat block before the rest is summarised.
const RESULT_LINES: usize = 12;
/// Characters of a tool call's arguments shown on its line.
const ARGS_CHARS: usize = 600;
/// Lines a transcript holds at most (each event's payload is decoded to build it).
pub const TRANSCRIPT_LINES: usize = 100_000;
/// Turns a transcript is made of at most (it is made on the UI thread: a run of a million
/// events would take seconds to decode whole).
pub const TRANSCRIPT_TURNS: usize = 20_000;

/// The chat view of event `i`, or None when it holds no conversation (then the JSON view).
pub fn event_doc(t: &Trace, i: u32, t0: Option<i64>, plain: bool) -> Option<Doc> {
    let e = t.event(i);
    // Only these can be a conversation: the others are not decoded (nor their document built)
    // twice just to find that out.
    if !matches!(e.kind, EventKind::LlmCall | EventKind::Message(_)) {
        return None;
    }
    let p = formats::payload(t, e);
    let mut w = Writer::new(detail::header(t, i, t0, &p), plain);
    match e.kind {
        EventKind::LlmCall => {
            let (prompt, response) = transcript::llm_messages(&p);
            if prompt.is_none() && response.is_none() {
                // Formats that record a call's output as events under it (Claude Code, Codex).
                let turns = transcript::transcript(t, Some(i));
                if !turns.iter().any(|x| matches!(x, Turn::Message { .. })) {
                    return None;
                }
                w.sent(&p.context);
                w.section("Response (the events under this call)");
                w.turns(&turns[1..]);
            } else {
                for (title, msgs, v, name) in [
                    ("Prompt", prompt, &p.input, "input"),
                    ("Response", response, &p.output, "output"),
                ] {
                    let Some(msgs) = msgs else {
                        if v.is_some() {
                            w.section(&format!("{title} (not a conversation: c shows it as JSON)"));
                            w.blank();
                        }
                        continue;
                    };
                    let n = msgs.len();
                    w.section(&format!("{title} · {}", crate::report::count(n, "message")));
                    let root = v.clone().map(|v| w.root(v));
                    for m in &msgs {
                        w.message(m, root.map(|r| (r, name)));
                    }
                }
            }
        }
        EventKind::Message(_) => {
            let name = t.str(e.name);
            let role = if name.is_empty() || name.len() > 20 {
                e.kind_role()
            } else {
                name
            };
            let m = transcript::message_event(role, &p)?;
            let v = p.input.clone().or(p.output.clone());
            let root = v.map(|v| w.root(v));
            w.message(&m, root.map(|r| (r, "input")));
        }
        _ => return None,
    }
    if let Some(err) = &p.error {
        w.section("Error");
        w.text_lines(Tok::Error, &err.message, "  ", None);
        w.blank();
    }
    if !p.extra.is_empty() || !p.context.is_empty() {
        let keys: Vec<String> = p
            .extra
            .iter()
            .chain(&p.context)
            .map(|(k, _)| sanitize::line(k).into_owned())
            .collect();
        let mut l = Line::default();
        l.spans.push((
            Tok::Dim,
            format!(
                "c shows the JSON view, with {}: {}",
                crate::report::count(keys.len(), "more field"),
                keys.join(", ")
            ),
        ));
        w.d.lines.push(l);
    }
    Some(w.d)
}

/// The run as one conversation, and where each event's turns start.
pub fn transcript_doc(t: &Trace, plain: bool) -> (Doc, Vec<(u32, usize)>) {
    let (turns, left) = transcript::transcript_upto(t, None, TRANSCRIPT_TURNS);
    let mut w = Writer::new(Doc::default(), plain);
    let mut l = Line::default();
    l.spans.push((Tok::Heading, "Transcript ".into()));
    l.spans.push((
        Tok::Text,
        sanitize::line(t.meta.name.as_deref().unwrap_or(&t.meta.id)).into_owned(),
    ));
    w.d.lines.push(l);
    let messages = turns.iter().filter(|x| matches!(x, Turn::Message { .. })).count();
    let mut l = Line::default();
    l.spans.push((
        Tok::Dim,
        format!(
            "{}, {} events · C closes · p raw text · the tree's selection moves here",
            crate::report::count(messages, "message"),
            t.len()
        ),
    ));
    w.d.lines.push(l);
    w.blank();
    if turns.is_empty() {
        let mut l = Line::default();
        l.spans
            .push((Tok::Dim, "(no messages, LLM calls or tool calls in this run)".into()));
        w.d.lines.push(l);
    }
    w.turns(&turns);
    if left > 0 && !w.full {
        let mut l = Line::default();
        l.spans.push((
            Tok::Error,
            format!(
                "… the transcript stops here after {TRANSCRIPT_TURNS} turns: {} more events left out; select an event in the tree for its detail",
                left
            ),
        ));
        w.d.lines.push(l);
    }
    let at = std::mem::take(&mut w.at);
    (w.d, at)
}

/// The header of the event's detail (name, status, time, ids, tokens, source, badges): the
/// JSON view's, so both views start alike.
trait KindRole {
    fn kind_role(&self) -> &'static str;
}

impl KindRole for crate::model::Event {
    fn kind_role(&self) -> &'static str {
        match self.kind {
            EventKind::Message(r) => r.as_str(),
            _ => "message",
        }
    }
}

struct Writer {
    d: Doc,
    plain: bool,
    at: Vec<(u32, usize)>,
    full: bool,
}

impl Writer {
    fn new(d: Doc, plain: bool) -> Writer {
        Writer {
            d,
            plain,
            at: Vec::new(),
            full: false,
        }
    }

    fn blank(&mut self) {
        self.d.lines.push(Line::default());
    }

    fn section(&mut self, title: &str) {
        let mut l = Line::default();
        l.spans.push((Tok::Section, format!("── {title} ")));
        self.d.lines.push(l);
    }

    fn root(&mut self, v: Value) -> u32 {
        self.d.roots.push(v);
        (self.d.roots.len() - 1) as u32
    }

    fn copy(&mut self, root: u32, pointer: &str, name: &str) -> u32 {
        self.d.copies.push(CopyTarget {
            root,
            pointer: pointer.to_string(),
            path: format!("$.{name}{}", pointer_path(pointer)),
        });
        (self.d.copies.len() - 1) as u32
    }

    /// Lines of text as they are, each starting with `indent`.
    fn text_lines(&mut self, tok: Tok, text: &str, indent: &str, copy: Option<u32>) {
        for mut l in markdown::plain(text, indent) {
            for s in l.spans.iter_mut().skip(usize::from(!indent.is_empty())) {
                s.0 = tok;
            }
            l.copy = copy;
            self.d.lines.push(l);
        }
    }

    fn turns(&mut self, turns: &[Turn]) {
        for (k, turn) in turns.iter().enumerate() {
            if self.d.lines.len() >= TRANSCRIPT_LINES {
                let mut l = Line::default();
                l.spans.push((
                    Tok::Error,
                    format!(
                        "… the transcript stops here: {} more turns left out (it shows at most {TRANSCRIPT_LINES} lines); select an event in the tree for its detail",
                        turns.len() - k
                    ),
                ));
                self.d.lines.push(l);
                self.full = true;
                return;
            }
            let ev = turn.event();
            if self.at.last().is_none_or(|&(e, _)| e != ev) {
                self.at.push((ev, self.d.lines.len()));
            }
            match turn {
                Turn::Message { msg, .. } => self.message(msg, None),
                Turn::Llm { model, tokens, .. } => {
                    let mut l = Line::default();
                    l.spans
                        .push((Tok::Dim, format!("◆ LLM call {}", sanitize::line(model))));
                    if let (Some(a), Some(b)) = tokens {
                        l.spans.push((Tok::Dim, format!(" · {a} in · {b} out")));
                    }
                    self.d.lines.push(l);
                    self.blank();
                }
                Turn::Mark { text, .. } => {
                    let mut l = Line::default();
                    l.spans.push((Tok::Section, format!("── {} ", sanitize::line(text))));
                    self.d.lines.push(l);
                    self.blank();
                }
                Turn::Error { text, .. } => {
                    let mut l = Line::default();
                    l.spans.push((Tok::Error, "✖ error".into()));
                    self.d.lines.push(l);
                    self.text_lines(Tok::Error, text, "  ", None);
                    self.blank();
                }
            }
        }
    }

    /// One message: its role header, then its parts. `root` is the value the message was read
    /// from (and its section name), for `y` and `Y`.
    fn message(&mut self, m: &Message, root: Option<(u32, &str)>) {
        let mut head = Line::default();
        let tok = match m.role.as_str() {
            "user" => Tok::Heading,
            "assistant" => Tok::Ok,
            "system" | "developer" => Tok::Dim,
            "tool" | "function" => Tok::Key,
            _ => Tok::Section,
        };
        head.spans.push((tok, format!("▍{}", sanitize::line(&m.role))));
        if let Some(n) = &m.name
            && n != &m.role
        {
            head.spans.push((Tok::Dim, format!(" · {}", sanitize::line(n))));
        }
        let whole = root.map(|(r, name)| self.copy(r, &m.pointer, name));
        head.copy = whole;
        self.d.lines.push(head);
        // `y` on a text line copies the message's content where the source has one.
        let content = root.map(|(r, name)| {
            let ptr = format!("{}/content", m.pointer);
            let has = self.d.roots[r as usize].pointer(&ptr).is_some();
            if has {
                self.copy(r, &ptr, name)
            } else {
                whole.unwrap_or(0)
            }
        });
        for p in &m.parts {
            self.part(p, "  ", content);
        }
        self.blank();
    }

    fn part(&mut self, p: &Part, indent: &str, copy: Option<u32>) {
        // In the transcript (no source value to point into) `y` and `o` take the part itself.
        let copy = copy.or_else(|| self.own_copy(p));
        match p {
            Part::Text(s) => {
                if s.trim().is_empty() {
                    return;
                }
                let lines = if self.plain {
                    markdown::plain(s, indent)
                } else {
                    markdown::render(s, indent)
                };
                for mut l in lines {
                    l.copy = copy;
                    self.d.lines.push(l);
                }
            }
            Part::Thinking(s) => {
                let mut l = line(indent);
                l.spans.push((Tok::Dim, "✻ thinking".into()));
                self.d.lines.push(l);
                self.text_lines(Tok::Dim, s, &format!("{indent}  "), copy);
            }
            Part::ToolCall { id, name, args } => {
                let mut l = line(indent);
                l.spans.push((Tok::Key, format!("⚙ {}", sanitize::line(name))));
                if let Some(id) = id {
                    l.spans.push((Tok::Dim, format!(" · {}", sanitize::line(id))));
                }
                self.d.lines.push(l);
                if let Value::String(text) = args {
                    // Free-form input (a patch, a command line) reads as its lines.
                    self.result_text(Tok::Str, text, &format!("{indent}  "), copy);
                } else if !args.is_null() {
                    let text = args.to_string();
                    let mut l = line(&format!("{indent}  "));
                    let n = text.chars().count();
                    let shown: String = text.chars().take(ARGS_CHARS).collect();
                    l.spans.push((Tok::Str, sanitize::line(&shown).into_owned()));
                    if n > ARGS_CHARS {
                        l.spans.push((
                            Tok::Dim,
                            format!(" … {} more characters (c: JSON view)", n - ARGS_CHARS),
                        ));
                    }
                    self.d.lines.push(l);
                }
            }
            Part::ToolResult {
                id,
                name,
                content,
                error,
            } => {
                let mut l = line(indent);
                let (tok, word) = if *error {
                    (Tok::Error, "↳ error")
                } else {
                    (Tok::Ok, "↳ result")
                };
                l.spans.push((tok, word.into()));
                if let Some(n) = name {
                    l.spans.push((Tok::Dim, format!(" · {}", sanitize::line(n))));
                }
                if let Some(id) = id {
                    l.spans.push((Tok::Dim, format!(" · {}", sanitize::line(id))));
                }
                if content.is_empty() {
                    l.spans.push((Tok::Dim, " (empty)".into()));
                }
                self.d.lines.push(l);
                let inner = format!("{indent}  ");
                for c in content {
                    match c {
                        Part::Text(s) => self.result_text(if *error { Tok::Error } else { Tok::Text }, s, &inner, copy),
                        other => self.part(other, &inner, copy),
                    }
                }
            }
            Part::Media {
                kind,
                mime,
                bytes,
                source,
            } => {
                let mut what = vec![];
                if let Some(m) = mime {
                    what.push(m.clone());
                }
                if let Some(b) = bytes {
                    what.push(human_size(*b));
                }
                if let Some(s) = source {
                    let s: String = s.chars().take(120).collect();
                    what.push(s);
                }
                let text = if what.is_empty() {
                    format!("[{kind}]")
                } else {
                    format!("[{kind}: {}]", what.join(", "))
                };
                let mut l = line(indent);
                l.spans.push((Tok::Badge, sanitize::line(&text).into_owned()));
                self.d.lines.push(l);
            }
            Part::Other(kind) => {
                let mut l = line(indent);
                l.spans.push((
                    Tok::Dim,
                    format!("[{} block: c shows it as JSON]", sanitize::line(kind)),
                ));
                self.d.lines.push(l);
            }
        }
    }
}

impl Writer {
    /// A copy target holding the whole of a part: its text, arguments or result.
    fn own_copy(&mut self, p: &Part) -> Option<u32> {
        let (v, name) = match p {
            Part::Text(s) | Part::Thinking(s) => (Value::String(s.clone()), "text"),
            Part::ToolCall { args, .. } => (args.clone(), "arguments"),
            Part::ToolResult { content, .. } => {
                let text: Vec<&str> = content
                    .iter()
                    .filter_map(|c| match c {
                        Part::Text(s) => Some(s.as_str()),
                        _ => None,
                    })
                    .collect();
                (Value::String(text.join("\n")), "result")
            }
            _ => return None,
        };
        let r = self.root(v);
        Some(self.copy(r, "", name))
    }

    /// What the request sent besides the conversation (its system prompt and tool names), in
    /// short: the JSON view (`c`) has them whole.
    fn sent(&mut self, context: &[(String, Value)]) {
        let get = |k: &str| context.iter().find(|(x, _)| x == k).map(|(_, v)| v);
        if let Some(Value::String(sys)) = get("system prompt") {
            self.section("System prompt (sent with the request)");
            let copy = self.own_root(Value::String(sys.clone()), "system_prompt");
            self.result_text(Tok::Text, sys, "  ", copy);
            self.blank();
        }
        if let Some(Value::Array(tools)) = get("tools") {
            let names: Vec<String> = tools
                .iter()
                .map(|t| sanitize::line(t.get("name").and_then(Value::as_str).unwrap_or("?")).into_owned())
                .collect();
            self.section(&format!("Tools sent · {}", names.len()));
            let mut l = line("  ");
            l.spans.push((Tok::Text, names.join(", ")));
            self.d.lines.push(l);
            self.blank();
        }
    }

    /// A value of its own to copy from (`y`), named as the JSON view names it.
    fn own_root(&mut self, v: Value, name: &str) -> Option<u32> {
        let r = self.root(v);
        Some(self.copy(r, "", name))
    }

    /// The first [`RESULT_LINES`] lines of a tool's text, and how many more there are.
    fn result_text(&mut self, tok: Tok, s: &str, indent: &str, copy: Option<u32>) {
        let all: Vec<&str> = s.trim_end_matches('\n').split('\n').collect();
        let shown = all.len().min(RESULT_LINES);
        self.text_lines(tok, &all[..shown].join("\n"), indent, copy);
        if all.len() > shown {
            let mut l = line(indent);
            l.spans.push((
                Tok::Dim,
                format!("… {} more lines (c: JSON view, o: pager)", all.len() - shown),
            ));
            self.d.lines.push(l);
        }
    }
}

fn line(indent: &str) -> Line {
    let mut l = Line::default();
    if !indent.is_empty() {
        l.spans.push((Tok::Text, indent.to_string()));
    }
    l.hang = indent.len().min(u16::MAX as usize) as u16;
    l
}

/// `/messages/1/content` as `.messages[1].content`.
fn pointer_path(p: &str) -> String {
    let mut out = String::new();
    for seg in p.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if seg.bytes().all(|b| b.is_ascii_digit()) && !seg.is_empty() {
            out.push_str(&format!("[{seg}]"));
        } else {
            out.push('.');
            out.push_str(&seg);
        }
    }
    out
}

/// The first line of the transcript that belongs to `ev`, or to the nearest event before it
/// in display order that has turns.
pub fn line_of(at: &[(u32, usize)], order_pos: impl Fn(u32) -> usize, ev: u32) -> Option<usize> {
    let want = order_pos(ev);
    at.iter()
        .filter(|(e, _)| order_pos(*e) <= want)
        .max_by_key(|(e, _)| order_pos(*e))
        .map(|&(_, l)| l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NewEvent, Parent, Payload, PayloadRef, Role, Status};
    use serde_json::json;

    use crate::tui::detail::tests::text;

    fn add(
        t: &mut Trace,
        kind: EventKind,
        name: &str,
        parent: Option<u32>,
        input: Value,
        output: Option<Value>,
    ) -> u32 {
        t.add(NewEvent {
            payload: PayloadRef::Inline(Box::new(Payload {
                input: Some(input),
                output,
                ..Default::default()
            })),
            status: Status::Ok,
            parent: parent.map_or(Parent::None, Parent::Index),
            ..NewEvent::new(kind, name)
        })
    }

    #[test]
    fn an_llm_call_reads_as_a_conversation_and_copies_from_it() {
        let mut t = Trace::default();
        let i = add(
            &mut t,
            EventKind::LlmCall,
            "gpt-4o",
            None,
            json!({"messages": [
                {"role": "user", "content": [{"type": "text", "text": "**Hi** \u{1b}[31m"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}]},
                {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"}
            ]}),
            Some(json!({"choices": [{"message": {"role": "assistant", "content": "Bye"}}]})),
        );
        let d = event_doc(&t, i, None, false).unwrap();
        let s = text(&d);
        let at = |needle: &str| {
            s.iter()
                .position(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("{needle}: {s:#?}"))
        };
        assert!(at("── Prompt · 3 messages") < at("▍user"));
        assert!(s.contains(&"  Hi \\x1b[31m".to_string()), "{s:#?}");
        assert!(s.contains(&"  [image: image/png, 3 B]".to_string()), "{s:#?}");
        assert!(s.contains(&"  ⚙ f · c1".to_string()), "{s:#?}");
        assert!(s.contains(&"  ↳ result · c1".to_string()), "{s:#?}");
        assert!(at("── Response · 1 message") < at("  Bye"));
        assert!(
            d.copy_value(at("Hi"))
                .is_some_and(|v| v.starts_with('[') && v.contains("**Hi**"))
        );
        assert_eq!(d.copy_path(at("Hi")).as_deref(), Some("$.input.messages[0].content"));
        assert_eq!(d.copy_value(at("  Bye")).as_deref(), Some("Bye"));
        // Raw text keeps the Markdown markup.
        let raw = text(&event_doc(&t, i, None, true).unwrap());
        assert!(raw.iter().any(|l| l.contains("**Hi**")));
    }

    #[test]
    fn what_has_no_conversation_has_no_chat_view() {
        let mut t = Trace::default();
        let i = add(&mut t, EventKind::ToolCall, "f", None, json!({"a": 1}), None);
        assert!(event_doc(&t, i, None, false).is_none());
        let j = add(&mut t, EventKind::LlmCall, "m", None, json!({"temperature": 1}), None);
        assert!(event_doc(&t, j, None, false).is_none());
        let k = add(
            &mut t,
            EventKind::Message(Role::User),
            "user",
            None,
            json!("# Title"),
            None,
        );
        let s = text(&event_doc(&t, k, None, false).unwrap());
        assert!(s.contains(&"  # Title".to_string()), "{s:#?}");
    }

    #[test]
    fn the_transcript_marks_where_events_start() {
        let mut t = Trace::default();
        let r = add(&mut t, EventKind::Run, "run", None, json!(null), None);
        let u = add(
            &mut t,
            EventKind::Message(Role::User),
            "user",
            Some(r),
            json!("hello"),
            None,
        );
        let tool = add(
            &mut t,
            EventKind::ToolCall,
            "ls",
            Some(r),
            json!({"dir": "."}),
            Some(json!("a\nb")),
        );
        let (d, at) = transcript_doc(&t, false);
        let s = text(&d);
        assert_eq!(at.len(), 2);
        assert_eq!(at[0].0, u);
        assert_eq!(s[at[0].1], "▍user");
        assert_eq!(s[at[1].1], "▍tool · ls");
        assert!(s.contains(&"  ⚙ ls".to_string()));
        assert!(s.contains(&"    {\"dir\":\".\"}".to_string()), "{s:#?}");
        assert!(s.contains(&"    b".to_string()));
        let _ = tool;
        // `y` on a result line copies the whole result.
        let res = s.iter().position(|l| l == "    b").unwrap();
        assert_eq!(d.copy_value(res).as_deref(), Some("a\nb"));
        let pos = |e: u32| e as usize;
        assert_eq!(line_of(&at, pos, r), None);
        assert_eq!(line_of(&at, pos, tool), Some(at[1].1));
    }

    fn controls(d: &Doc) -> Vec<String> {
        d.lines
            .iter()
            .flat_map(|l| l.spans.iter())
            .filter(|(_, s)| {
                s.chars().any(|c| {
                    c < ' '
                        || ('\u{7f}'..='\u{9f}').contains(&c)
                        || ('\u{202a}'..='\u{202e}').contains(&c)
                        || ('\u{2066}'..='\u{2069}').contains(&c)
                })
            })
            .map(|(_, s)| s.clone())
            .collect()
    }

    proptest::proptest! {
        /// Whatever a message holds (roles, names, ids, Markdown, URLs), no control character
        /// reaches the screen, in the chat view, raw text or the transcript, and nothing panics.
        #[test]
        fn any_text_is_shown_sanitized(
            a in "\\PC{0,12}|[\u{0}-\u{1f}\u{7f}-\u{9f}\u{202e}]{1,4}",
            b in ".{0,20}",
            md in "[#*`|>\\-\n\t a-z0-9\u{1b}\u{7}\u{9b}\u{202e}\u{2067}\r]{0,120}",
        ) {
            let mut t = Trace::default();
            let r = add(&mut t, EventKind::Run, "run", None, json!(null), None);
            let i = add(
                &mut t,
                EventKind::LlmCall,
                &a,
                Some(r),
                json!({"messages": [
                    {"role": a, "name": b, "content": [{"type": "text", "text": md},
                        {"type": "image_url", "image_url": {"url": b}},
                        {"type": a, "x": 1}]},
                    {"role": "assistant", "tool_calls": [{"id": a, "function": {"name": b, "arguments": md}}]},
                    {"role": "tool", "tool_call_id": b, "content": md}
                ]}),
                Some(json!({"content": [{"type": "text", "text": md}, {"type": "thinking", "thinking": md}]})),
            );
            add(&mut t, EventKind::Message(Role::User), &b, Some(r), json!(md), None);
            add(&mut t, EventKind::ToolCall, &a, Some(r), json!({"k": md}), Some(json!(md)));
            for plain in [false, true] {
                let d = event_doc(&t, i, None, plain).unwrap();
                proptest::prop_assert!(controls(&d).is_empty(), "{:?}", controls(&d));
                let (d, _) = transcript_doc(&t, plain);
                proptest::prop_assert!(controls(&d).is_empty(), "{:?}", controls(&d));
            }
        }
    }

    #[test]
    fn pointers_read_as_paths() {
        assert_eq!(pointer_path("/messages/1/content"), ".messages[1].content");
        assert_eq!(pointer_path(""), "");
        assert_eq!(pointer_path("/a~1b"), ".a/b");
    }
}
