//! A run as one conversation: every message, LLM call, tool call and its result in order,
//! whatever the format split them into. Formats that record a conversation as events
//! (Claude Code, Codex, Gemini CLI, Invariant) and formats that record each LLM call's whole
//! prompt (AgentDbg, Maida, OTLP GenAI) read the same: a prompt repeats the history, so only
//! the messages not shown yet are taken from it. Views (the explorer's transcript, exports)
//! render the turns.

use crate::formats;
use crate::model::chat::{self, Message, Part};
use crate::model::{EventKind, Payload, Status, Trace};
use serde_json::Value;
use std::collections::HashMap;

/// One entry of a transcript, with the event it came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Turn {
    Message {
        ev: u32,
        msg: Message,
    },
    /// An LLM call: its model and tokens in and out (its messages follow as their own turns).
    Llm {
        ev: u32,
        model: String,
        tokens: (Option<u64>, Option<u64>),
    },
    /// A boundary: a sub-agent starts, a step or turn begins, a loop warning.
    Mark {
        ev: u32,
        text: String,
    },
    Error {
        ev: u32,
        text: String,
    },
}

impl Turn {
    pub fn event(&self) -> u32 {
        match self {
            Turn::Message { ev, .. } | Turn::Llm { ev, .. } | Turn::Mark { ev, .. } | Turn::Error { ev, .. } => *ev,
        }
    }
}

/// The prompt and the response of an LLM call as messages, where they are shaped as such (a
/// plain string prompt is one user message, a plain string response one assistant message).
pub fn llm_messages(p: &Payload) -> (Option<Vec<Message>>, Option<Vec<Message>>) {
    let prompt = p.input.as_ref().and_then(|v| match v {
        Value::String(s) => Some(vec![text_message("user", s, "")]),
        v => chat::conversation(v),
    });
    let response = p.output.as_ref().and_then(|v| match v {
        Value::String(s) => Some(vec![text_message("assistant", s, "")]),
        v => chat::response(v),
    });
    (prompt, response)
}

fn text_message(role: &str, s: &str, pointer: &str) -> Message {
    Message {
        role: role.into(),
        name: None,
        parts: vec![Part::Text(s.to_string())],
        pointer: pointer.into(),
    }
}

/// A message event's content as a message of its role.
pub fn message_event(role: &str, p: &Payload) -> Option<Message> {
    let v = p.input.as_ref().or(p.output.as_ref())?;
    // A whole message object (`{role, content}`) or just its content.
    if let Some(mut m) = chat::conversation(v).filter(|m| m.len() == 1) {
        let mut m = m.remove(0);
        m.role = role.into();
        return Some(m);
    }
    let parts = chat::content_parts(v);
    // Content this reader does not know is better read as JSON.
    let known = parts.iter().any(|p| !matches!(p, Part::Other(_)));
    known.then(|| Message {
        role: role.into(),
        name: None,
        parts,
        pointer: String::new(),
    })
}

/// A tool call event (call and result joined) as a `tool` message.
pub fn tool_event(t: &Trace, i: u32, p: &Payload) -> Message {
    let e = t.event(i);
    let id = Some(t.str(e.source_id).to_string()).filter(|s| !s.is_empty());
    let mut parts = vec![Part::ToolCall {
        id: id.clone(),
        name: t.str(e.name).to_string(),
        args: p.input.clone().unwrap_or(Value::Null),
    }];
    let mut content = tool_output(p);
    // The error's message, unless the result already says it (Claude Code repeats it).
    if let Some(err) = &p.error {
        let said = content
            .iter()
            .any(|c| matches!(c, Part::Text(s) if s.contains(err.message.trim())));
        if !said {
            content.push(Part::Text(err.message.clone()));
        }
    }
    if !content.is_empty() || e.status != Status::Pending {
        parts.push(Part::ToolResult {
            id,
            name: None,
            content,
            error: e.status == Status::Error,
        });
    }
    Message {
        role: "tool".into(),
        name: Some(t.str(e.name).to_string()),
        parts,
        pointer: String::new(),
    }
}

/// What a tool returned, as text where the format has it as text.
fn tool_output(p: &Payload) -> Vec<Part> {
    // Claude Code keeps the result text the model saw apart from the structured result.
    if let Some((_, Value::String(s))) = p.extra.iter().find(|(k, _)| k == "content") {
        return vec![Part::Text(s.clone())];
    }
    match &p.output {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![Part::Text(s.clone())],
        // Codex: `{output, metadata}`.
        Some(Value::Object(m)) if m.get("output").is_some_and(Value::is_string) => {
            vec![Part::Text(m["output"].as_str().unwrap_or("").to_string())]
        }
        Some(v @ Value::Array(a)) if a.iter().all(|b| b.get("type").is_some()) => {
            let parts = chat::content_parts(v);
            if parts.iter().any(|p| matches!(p, Part::Other(_))) {
                vec![Part::Text(v.to_string())]
            } else {
                parts
            }
        }
        Some(v) => vec![Part::Text(serde_json::to_string_pretty(v).unwrap_or_default())],
    }
}

/// The key under which a transcript counts a message as shown: tool results by their call id
/// whatever role carries them (OpenAI `tool`, an Anthropic `user` message, a tool event).
fn key(m: &Message) -> String {
    let results: Vec<&str> = m
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolResult { id: Some(id), .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    if !results.is_empty() && results.len() == m.parts.iter().filter(|p| matches!(p, Part::ToolResult { .. })).count() {
        return format!("result\u{1}{}", results.join("\u{1}"));
    }
    m.fingerprint()
}

/// The transcript of the events under `root` (the whole run with None), in display order.
pub fn transcript(t: &Trace, root: Option<u32>) -> Vec<Turn> {
    transcript_upto(t, root, usize::MAX).0
}

/// [`transcript`] of at most about `max` turns (each event's payload is decoded to make it),
/// and the number of events left out after the cut.
pub fn transcript_upto(t: &Trace, root: Option<u32>, max: usize) -> (Vec<Turn>, usize) {
    let order: Vec<(u32, usize)> = match root {
        None => t.walk(),
        Some(r) => {
            let mut out = Vec::new();
            let mut stack = vec![(r, 0usize)];
            while let Some((i, d)) = stack.pop() {
                out.push((i, d));
                for &c in t.children(i).iter().rev() {
                    stack.push((c, d + 1));
                }
            }
            out
        }
    };
    let mut turns = Vec::new();
    // How many times each message was shown: a prompt's message is shown when it occurs in
    // that prompt more often than it was shown before (history is repeated, a turn that
    // really recurs is not lost).
    let mut shown: HashMap<String, usize> = HashMap::new();
    let emit = |turns: &mut Vec<Turn>, shown: &mut HashMap<String, usize>, ev: u32, msg: Message| {
        *shown.entry(key(&msg)).or_default() += 1;
        turns.push(Turn::Message { ev, msg });
    };
    for (k, &(i, _)) in order.iter().enumerate() {
        if turns.len() >= max {
            return (turns, order.len() - k);
        }
        let e = t.event(i);
        match e.kind {
            EventKind::Run => {
                if Some(i) != root && e.parent != crate::model::NO_PARENT {
                    turns.push(Turn::Mark {
                        ev: i,
                        text: format!("sub-agent {}", t.str(e.name)),
                    });
                }
            }
            // A step that holds events is a boundary (a turn); a leaf step (an OTLP client
            // span under a tool) says nothing the conversation needs.
            EventKind::Step if !t.children(i).is_empty() => turns.push(Turn::Mark {
                ev: i,
                text: t.str(e.name).to_string(),
            }),
            EventKind::Step => {}
            EventKind::LoopWarning => turns.push(Turn::Mark {
                ev: i,
                text: format!("loop warning: {}", t.str(e.name)),
            }),
            EventKind::LlmCall => {
                let model = if e.model.is_empty() { e.name } else { e.model };
                turns.push(Turn::Llm {
                    ev: i,
                    model: t.str(model).to_string(),
                    tokens: e.usage.get().map_or((None, None), |u| (u.input, u.output)),
                });
                let p = formats::payload(t, e);
                let (prompt, response) = llm_messages(&p);
                let mut seen_here: HashMap<String, usize> = HashMap::new();
                for m in prompt.into_iter().flatten() {
                    let k = key(&m);
                    let n = seen_here.entry(k.clone()).or_default();
                    *n += 1;
                    if *n > shown.get(&k).copied().unwrap_or(0) {
                        emit(&mut turns, &mut shown, i, m);
                    }
                }
                for m in response.into_iter().flatten() {
                    emit(&mut turns, &mut shown, i, m);
                }
                if let Some(err) = p.error {
                    turns.push(Turn::Error {
                        ev: i,
                        text: err.message,
                    });
                }
            }
            EventKind::ToolCall => {
                let p = formats::payload(t, e);
                let m = tool_event(t, i, &p);
                emit(&mut turns, &mut shown, i, m);
            }
            EventKind::Message(role) => {
                let p = formats::payload(t, e);
                // The source's own role word (`context`, `developer`) where it has one.
                let name = t.str(e.name);
                let role = if name.is_empty() || name.len() > 20 {
                    role.as_str()
                } else {
                    name
                };
                if let Some(m) = message_event(role, &p) {
                    emit(&mut turns, &mut shown, i, m);
                }
            }
            EventKind::Error => {
                let p = formats::payload(t, e);
                let text = p
                    .error
                    .map(|x| x.message)
                    .or_else(|| p.input.as_ref().map(|v| crate::report::short(v, 500)))
                    .unwrap_or_else(|| t.str(e.name).to_string());
                turns.push(Turn::Error { ev: i, text });
            }
            EventKind::Other => {
                let name = t.str(e.name);
                if matches!(name, "thinking" | "reasoning") {
                    let p = formats::payload(t, e);
                    if let Some(Value::String(s)) = &p.input {
                        emit(
                            &mut turns,
                            &mut shown,
                            i,
                            Message {
                                role: "assistant".into(),
                                name: None,
                                parts: vec![Part::Thinking(s.clone())],
                                pointer: String::new(),
                            },
                        );
                    }
                }
            }
            EventKind::State => {}
        }
    }
    (turns, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NewEvent, Parent, PayloadRef, Role};
    use serde_json::json;

    fn ev(
        t: &mut Trace,
        kind: EventKind,
        name: &str,
        parent: Option<u32>,
        input: Option<Value>,
        output: Option<Value>,
    ) -> u32 {
        let payload = Payload {
            input,
            output,
            ..Default::default()
        };
        t.add(NewEvent {
            payload: PayloadRef::Inline(Box::new(payload)),
            status: Status::Ok,
            parent: parent.map_or(Parent::None, Parent::Index),
            ..NewEvent::new(kind, name)
        })
    }

    fn texts(turns: &[Turn]) -> Vec<String> {
        turns
            .iter()
            .map(|x| match x {
                Turn::Message { msg, .. } => format!("{}: {}", msg.role, msg.text()),
                Turn::Llm { model, .. } => format!("llm {model}"),
                Turn::Mark { text, .. } => format!("mark {text}"),
                Turn::Error { text, .. } => format!("error {text}"),
            })
            .collect()
    }

    #[test]
    fn prompts_repeat_history_and_the_transcript_shows_each_turn_once() {
        let mut t = Trace::default();
        let root = ev(&mut t, EventKind::Run, "run", None, None, None);
        ev(
            &mut t,
            EventKind::LlmCall,
            "gpt",
            Some(root),
            Some(json!([{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}])),
            Some(json!({"tool_calls": [{"name": "f", "arguments": {"x": 1}}]})),
        );
        let tool = t.add(NewEvent {
            payload: PayloadRef::Inline(Box::new(Payload {
                input: Some(json!({"x": 1})),
                output: Some(json!("42")),
                ..Default::default()
            })),
            id: Some("c1"),
            status: Status::Ok,
            parent: Parent::Index(root),
            ..NewEvent::new(EventKind::ToolCall, "f")
        });
        ev(
            &mut t,
            EventKind::LlmCall,
            "gpt",
            Some(root),
            Some(json!([
                {"role": "system", "content": "S"}, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "42"},
                {"role": "user", "content": "hi"}
            ])),
            Some(json!("done")),
        );
        let turns = transcript(&t, None);
        assert_eq!(
            texts(&turns),
            [
                "llm gpt",
                "system: S",
                "user: hi",
                "assistant: ",
                "tool: ",
                "llm gpt",
                "user: hi",
                "assistant: done"
            ]
        );
        assert_eq!(turns[4].event(), tool);
        assert!(matches!(&turns[4], Turn::Message { msg, .. } if matches!(&msg.parts[1],
            Part::ToolResult { content, .. } if content == &[Part::Text("42".into())])));
    }

    #[test]
    fn events_of_a_conversation_read_in_order() {
        let mut t = Trace::default();
        let root = ev(&mut t, EventKind::Run, "session", None, None, None);
        ev(
            &mut t,
            EventKind::Message(Role::User),
            "user",
            Some(root),
            Some(json!("Fix it")),
            None,
        );
        let llm = ev(&mut t, EventKind::LlmCall, "claude", Some(root), None, None);
        ev(
            &mut t,
            EventKind::Other,
            "thinking",
            Some(llm),
            Some(json!("hmm")),
            None,
        );
        ev(
            &mut t,
            EventKind::Message(Role::Assistant),
            "assistant",
            Some(llm),
            Some(json!([{"type": "text", "text": "Done"}])),
            None,
        );
        let sub = ev(&mut t, EventKind::Run, "agent a1", Some(root), None, None);
        let turn = ev(&mut t, EventKind::Step, "turn 2", Some(sub), None, None);
        ev(
            &mut t,
            EventKind::Message(Role::User),
            "user",
            Some(turn),
            Some(json!("Look")),
            None,
        );
        // A leaf step (an OTLP client span under a tool) is no boundary.
        ev(&mut t, EventKind::Step, "mcp call", Some(sub), None, None);
        assert_eq!(
            texts(&transcript(&t, None)),
            [
                "user: Fix it",
                "llm claude",
                "assistant: ",
                "assistant: Done",
                "mark sub-agent agent a1",
                "mark turn 2",
                "user: Look"
            ]
        );
        let (cut, left) = transcript_upto(&t, None, 2);
        assert_eq!((cut.len(), left), (2, 6));
        // Under one LLM call: its own turns only.
        assert_eq!(
            texts(&transcript(&t, Some(llm))),
            ["llm claude", "assistant: ", "assistant: Done"]
        );
    }

    #[test]
    fn plain_strings_are_messages() {
        let p = Payload {
            input: Some(json!("Summarise")),
            output: Some(json!("Done.")),
            ..Default::default()
        };
        let (a, b) = llm_messages(&p);
        assert_eq!(a.unwrap()[0].role, "user");
        assert_eq!(b.unwrap()[0].text(), "Done.");
        let p = Payload {
            input: Some(json!({"temperature": 0})),
            ..Default::default()
        };
        assert_eq!(llm_messages(&p), (None, None));
    }
}
