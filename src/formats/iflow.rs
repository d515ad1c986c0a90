//! iFlow CLI sessions: `~/.iflow/projects/<encoded cwd>/session-<uuid>.jsonl`, one record a line,
//! flat in the project's directory (no `chats/`). iFlow CLI is a Gemini CLI fork that writes
//! Claude Code's transcript records: `uuid`/`parentUuid`/`sessionId`/`isSidechain` envelope,
//! `type` `user`/`assistant`, Anthropic `content[]` blocks (`text`, `tool_use`, `tool_result`)
//! and `message.usage.{input_tokens,output_tokens}`; so Claude Code's reader
//! (formats/claude_code.rs) reads it, under this format's id. What differs:
//! - `sessionId` is the file's stem, `session-<uuid>` (Claude Code's is a bare uuid): what tells
//!   the two apart, with the place;
//! - a `tool_result` block's `content` is Gemini CLI's result envelope, `{callId, responseParts:
//!   {functionResponse: {id, name, response: {output | error}}}, resultDisplay}` (or the
//!   `{functionResponse}` alone): the reader shows `response.output` and marks the call failed
//!   when the response has an `error` (there is no `is_error`); the line's `toolUseResult`
//!   (`{toolName, status, timestamp}`) stays in the payload;
//! - each assistant record is written twice (the same `message.id` and blocks): one LLM call,
//!   its blocks and usage counted once, as Claude Code's repeated lines are;
//! - the tools are Gemini CLI's (`read_file`, `replace`, `run_shell_command`, ...) and `task`
//!   (a subagent, whose records are in the same file with `isSidechain: true`).
//!
//! Read from iFlow's own documentation (iflow-ai/iflow-cli `docs_en`: `IFLOW_TRANSCRIPT_PATH`,
//! `iflow --resume`, `-c`/`-r`) and, for the record shapes (the CLI's source is published only as
//! a bundle, `@iflow-ai/iflow-cli` 0.5.x `bundle/iflow.js`), from third-party readers of its
//! files (an audit of the live store: `session-<uuid>.jsonl`, the envelope, the result
//! envelope, `toolUseResult`). No variable moves `~/.iflow` (its `IFLOW_*` variables are
//! settings).

use super::claude_code::{self, Parser};
use super::jsonl::{Follow, LineParser};
use super::{Format, LoadError, Loaded, Probe, str_of};
use crate::model::{Event, Payload, Trace};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub struct Iflow;

pub const ID: &str = "iflow";

impl Format for Iflow {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        ID
    }
    fn describe(&self) -> &'static str {
        "iFlow CLI session, ~/.iflow/projects/<project>/session-<id>.jsonl (Claude Code-shaped records)"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        let in_place = p.path.components().any(|c| c.as_os_str() == ".iflow");
        for v in p.lines().take(20) {
            if claude_code::looks_like_record(v) {
                let ours = str_of(v, "sessionId").is_some_and(|s| s.starts_with("session-"));
                return if ours || in_place { 97 } else { 0 };
            }
        }
        // A first record too large for the probe: judge by its keys and the name.
        if p.has_key("parentUuid") && p.has_key("sessionId") && p.file_name().starts_with("session-") {
            return if in_place { 97 } else { 92 };
        }
        0
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let mut f = self.follow(path).expect("iflow is line-oriented");
        f.poll()?;
        f.finish("iFlow CLI records")
    }

    fn summary_inputs(&self, path: &Path) -> Option<Vec<PathBuf>> {
        Some(vec![path.to_path_buf()])
    }

    fn follow(&self, path: &Path) -> Option<Follow> {
        let main = path.to_path_buf();
        Some(Follow::new(
            path,
            Box::new(move || Box::new(Parser::with_format(&main, ID)) as Box<dyn LineParser>),
        ))
    }

    fn decode_payload(&self, t: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
        claude_code::decode(t, ev, raw)
    }
}

/// A call's gist: Gemini CLI's tools, which iFlow keeps, and its `task` subagent.
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::key_or_generic;
    match name {
        "task" => key_or_generic(name, input, &["description", "prompt"]),
        "todo_write" | "todo_read" => key_or_generic(name, input, &["todos"]),
        _ => super::gemini_cli::tool_gist(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testing::{Rng, fixture, outline};
    use crate::model::{EventKind, RunStatus, Status};
    use serde_json::json;

    fn load(name: &str) -> Trace {
        let l = crate::formats::load(&fixture(ID, name), None).unwrap();
        assert_eq!(l.traces.len(), 1);
        l.traces.into_iter().next().unwrap()
    }

    fn calls(t: &Trace, kind: EventKind) -> Vec<u32> {
        t.walk()
            .into_iter()
            .map(|(i, _)| i)
            .filter(|&i| t.event(i).kind == kind)
            .collect()
    }

    #[test]
    fn detection_tells_iflow_from_claude_code_and_qwen() {
        for name in [
            "session-finished.jsonl",
            "session-running.jsonl",
            "session-subagent.jsonl",
        ] {
            let f = crate::formats::detect(&fixture(ID, name)).unwrap();
            assert_eq!(f.id(), ID, "{name}");
        }
        let claude = crate::formats::testing::fixture("claude-code", "session.jsonl");
        assert_eq!(crate::formats::detect(&claude).unwrap().id(), "claude-code");
        let p = Probe::from_bytes(
            Path::new("/h/.iflow/projects/-p/x.jsonl"),
            br#"{"uuid":"a","parentUuid":null,"sessionId":"s","type":"user","message":{"role":"user","content":"hi"}}"#
                .to_vec(),
            true,
        );
        assert_eq!(Iflow.detect(&p), 97, "in iFlow's place");
    }

    #[test]
    fn a_finished_session_joins_results_counts_each_response_once_and_marks_errors() {
        let t = load("session-finished.jsonl");
        assert_eq!(t.meta.format, ID);
        let attr = |k: &str| t.meta.all_attributes().find(|(x, _)| x == k).map(|(_, v)| v.clone());
        assert_eq!(
            attr("sessionId"),
            Some(json!("session-0c3e9a52-7d1b-4f60-9a8e-5b2c71d4e093"))
        );
        assert_eq!(attr("cwd"), Some(json!("/home/ada/weather-app")));
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(t.meta.model.as_deref(), Some("glm-4.6"));
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        // Four responses, each written twice: four LLM calls.
        let llm = calls(&t, EventKind::LlmCall);
        assert_eq!(llm.len(), 4, "{:#?}", outline(&t));
        let total: u64 = llm
            .iter()
            .filter_map(|&i| t.event(i).usage.get())
            .map(|u| u.input.unwrap_or(0) + u.output.unwrap_or(0))
            .sum();
        assert_eq!(total, 5120 + 84 + 5410 + 61 + 5800 + 120 + 6020 + 42);
        let tools = calls(&t, EventKind::ToolCall);
        assert_eq!(tools.len(), 3);
        let st: Vec<Status> = tools.iter().map(|&i| t.event(i).status).collect();
        assert_eq!(st, [Status::Ok, Status::Error, Status::Ok]);
        // The output is the response's, the error the response's error.
        let read = crate::formats::payload(&t, t.event(tools[0]));
        assert_eq!(
            read.input.unwrap()["absolute_path"],
            "/home/ada/weather-app/tests/test_forecast.py"
        );
        let out = read.output.unwrap();
        assert!(out.to_string().contains("def test_forecast"), "{out}");
        let failed = crate::formats::payload(&t, t.event(tools[1]));
        assert!(failed.error.unwrap().message.contains("AssertionError"));
        let compact = crate::formats::payload(&t, t.event(tools[2]));
        assert!(compact.output.unwrap().to_string().contains("Successfully modified"));
        let gists: Vec<Option<String>> = tools
            .iter()
            .map(|&i| Iflow.gist(t.name(i), &crate::formats::payload(&t, t.event(i)).input.unwrap()))
            .collect();
        assert_eq!(gists[1].as_deref(), Some("pytest -q tests/test_forecast.py"));
        assert_eq!(gists[2].as_deref(), Some("/home/ada/weather-app/forecast.py"));
    }

    #[test]
    fn a_call_without_result_is_pending_and_the_session_running() {
        let t = load("session-running.jsonl");
        assert_eq!(t.meta.status, RunStatus::Running);
        let tools = calls(&t, EventKind::ToolCall);
        assert_eq!(tools.len(), 2);
        assert_eq!(t.event(tools[1]).status, Status::Pending);
        assert_eq!(t.name(tools[1]), "glob");
    }

    #[test]
    fn a_subagents_sidechain_loads_with_its_task() {
        let t = load("session-subagent.jsonl");
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.status, RunStatus::Ok);
        let tools = calls(&t, EventKind::ToolCall);
        let names: Vec<&str> = tools.iter().map(|&i| t.name(i)).collect();
        assert_eq!(names, ["task", "read_file"]);
        assert!(tools.iter().all(|&i| t.event(i).status == Status::Ok));
        assert_eq!(calls(&t, EventKind::LlmCall).len(), 4);
        // The sidechain hangs under the task call that ran it.
        let mut up = t.event(tools[1]).parent;
        while up != crate::model::NO_PARENT && up != tools[0] {
            up = t.event(up).parent;
        }
        assert_eq!(up, tools[0], "{:#?}", outline(&t));
    }

    #[test]
    fn a_damaged_line_is_named_and_unknown_records_are_counted_quietly() {
        let t = load("session-damaged.jsonl");
        assert_eq!(t.diagnostics.len(), 1, "{:?}", t.diagnostics);
        assert_eq!(t.diagnostics[0].line, Some(3));
        assert_eq!(t.skipped.total(), 1);
        assert_eq!(calls(&t, EventKind::LlmCall).len(), 1);
    }

    #[test]
    fn following_a_session_pairs_a_result_that_arrives_later() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session-x.jsonl");
        let text = std::fs::read_to_string(fixture(ID, "session-finished.jsonl")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        std::fs::write(&path, lines[..3].join("\n") + "\n").unwrap();
        let mut f = Iflow.follow(&path).unwrap();
        f.poll().unwrap();
        let t = &f.sink.traces[0];
        assert_eq!(t.meta.status, RunStatus::Running);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        f.poll().unwrap();
        let t = &f.sink.traces[0];
        assert_eq!(t.meta.status, RunStatus::Ok);
        assert_eq!(calls(t, EventKind::ToolCall).len(), 3);
    }

    /// A record of a type no iFlow CLI writes yet, sometimes with text.
    fn unknown_record(rng: &mut Rng, near: &Value) -> Value {
        let mut m = json!({"type": rng.type_name(), "zz": rng.value()});
        for k in ["sessionId", "timestamp", "cwd"] {
            if let Some(x) = near.get(k) {
                m[k] = x.clone();
            }
        }
        if let Some(text) = rng.maybe_text() {
            m["content"] = Value::String(text);
        }
        m
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on our fixtures and sample.
        #[test]
        fn drift_is_skipped_quietly(seed in proptest::prelude::any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                ID,
                &[
                    "tests/fixtures/iflow/session-finished.jsonl",
                    "tests/fixtures/iflow/session-running.jsonl",
                    "tests/fixtures/iflow/session-subagent.jsonl",
                    "sample-traces/iflow/session-b2f4e6a8-0c1d-4e3f-9a5b-7c8d9e0f1a2b.jsonl",
                ],
            );
            crate::formats::testing::drift_check(&sources, seed, &|f, rng| {
                crate::formats::testing::drift_jsonl(f, rng, &unknown_record)
            });
        }
    }
}
