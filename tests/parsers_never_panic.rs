//! Property tests: arbitrary bytes and arbitrary JSON fed to detection and to every
//! registered parser never panic (they load, or refuse with an error).

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tracetui::formats::{self, REGISTRY};

/// Keys every format looks for, so that generated records reach deep into the parsers.
const KEYS: &[&str] = &[
    "event_type",
    "event_id",
    "parent_id",
    "run_id",
    "payload",
    "ts",
    "name",
    "duration_ms",
    "tool_name",
    "args",
    "result",
    "status",
    "error",
    "usage",
    "model",
    "version",
    "tools",
    "type",
    "episode_id",
    "step_id",
    "id",
    "timestamp",
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "function",
    "arguments",
    "messages",
    "metadata",
    "trace",
    "span_id",
    "parent_span_id",
    "trace_id",
    "attributes",
    "events",
    "start_time",
    "end_time",
    "prompt",
    "response",
    "spec_version",
    "run_name",
    "counts",
    "parentUuid",
    "sessionId",
    "message",
    "uuid",
    "resourceSpans",
    "scopeSpans",
    "spans",
    "traceId",
    "spanId",
    "parentSpanId",
    "call_id",
    "input",
    "output",
];
const STRINGS: &[&str] = &[
    "RUN_START",
    "RUN_END",
    "LLM_CALL",
    "TOOL_CALL",
    "ERROR",
    "STATE_UPDATE",
    "LOOP_WARNING",
    "episode_start",
    "step",
    "tool_call",
    "tool_result",
    "episode_end",
    "assay.trace",
    "user",
    "assistant",
    "tool",
    "system",
    "error",
    "ok",
    "running",
    "2026-01-01T00:00:00Z",
    "__REDACTED__",
    "1700000000000000000",
    "",
    "a",
    "\u{1b}[2J",
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        prop::sample::select(STRINGS).prop_map(|s| json!(s)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Map<_, _>>())),
        ]
    })
}

fn feed(name: &str, bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    let _ = formats::detect(&p);
    for f in REGISTRY {
        if let Ok(l) = f.load(&p) {
            for t in &l.traces {
                // Payload resolution and the tree walk must hold too.
                for (i, _) in t.walk() {
                    let _ = formats::payload(t, t.event(i));
                }
                let _ = t.counts();
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        feed("x.jsonl", &bytes);
    }

    #[test]
    fn arbitrary_json_lines(lines in prop::collection::vec(json_value(), 1..12)) {
        let text: Vec<String> = lines.iter().map(|v| v.to_string()).collect();
        feed("x.jsonl", text.join("\n").as_bytes());
    }

    #[test]
    fn arbitrary_json_document(v in json_value()) {
        feed("x.json", serde_json::to_string_pretty(&v).unwrap().as_bytes());
    }

    /// Inspect AI: arbitrary bytes as a `.eval` (zip) log and as a `.json` log, and a zip that
    /// holds arbitrary JSON as a sample member.
    #[test]
    fn arbitrary_inspect_logs(bytes in prop::collection::vec(any::<u8>(), 0..2048), v in json_value()) {
        feed("x.eval", &bytes);
        feed("x.json", &bytes);
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Zstd);
        for name in ["header.json", "samples/1_epoch_1.json", "summaries.json"] {
            w.start_file(name, opts).unwrap();
            std::io::Write::write_all(&mut w, v.to_string().as_bytes()).unwrap();
        }
        let zipped = w.finish().unwrap().into_inner();
        feed("y.eval", &zipped);
        // `ls` reads summaries, not samples: its own path through the archive.
        let dir = tempfile::tempdir().unwrap();
        let inspect = formats::by_id("inspect-ai").unwrap();
        for (name, data) in [("a.eval", &bytes), ("b.json", &bytes), ("c.eval", &zipped)] {
            let p = dir.path().join(name);
            std::fs::write(&p, data).unwrap();
            let _ = inspect.summarize(&p);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    /// Cline reads a task folder: arbitrary JSON (as Cline writes it: a list of messages and a
    /// list of ui rows, or anything else) in both of its files.
    #[test]
    fn cline_task_folder(msgs in prop::collection::vec(json_value(), 0..8), rows in prop::collection::vec(json_value(), 0..8), cut in 0usize..4096) {
        let dir = tempfile::tempdir().unwrap();
        let task = dir.path().join("1700000000000");
        std::fs::create_dir(&task).unwrap();
        let h = serde_json::to_vec(&msgs).unwrap();
        std::fs::write(task.join("api_conversation_history.json"), &h[..cut.min(h.len())]).unwrap();
        std::fs::write(task.join("ui_messages.json"), serde_json::to_vec(&rows).unwrap()).unwrap();
        let f = formats::by_id("cline").unwrap();
        for p in [task.clone(), task.join("ui_messages.json")] {
            let _ = formats::detect(&p);
            if let Ok(l) = f.load(&p) {
                for t in &l.traces {
                    for (i, _) in t.walk() {
                        let _ = formats::payload(t, t.event(i));
                    }
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    /// aider's Markdown history: lines made of its markers (headers, `####`, `> `, fences,
    /// thinking tags, tracebacks, token lines) and arbitrary text, cut anywhere.
    #[test]
    fn aider_history(parts in prop::collection::vec((prop::sample::select(&[
        "# aider chat started at 2026-01-01 00:00:00", "# aider chat started at ", "#### ", "####", "> ", ">",
        "> Applied edit to ", "> Running ", "> Tokens: ", "> Tokens: 1.5k sent, 2k received.", "> litellm.", "> Traceback (most recent call last):",
        "> TypeError: x", "```", "<thinking-content-1>", "</thinking-content-1>", "> Main model: ", "",
    ][..]), ".{0,12}"), 0..24), cut in 0usize..2048) {
        let text: String = parts.iter().map(|(a, b)| format!("{a}{b}\n")).collect();
        let bytes = &text.as_bytes()[..cut.min(text.len())];
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".aider.chat.history.md");
        std::fs::write(&p, bytes).unwrap();
        let _ = formats::detect(&p);
        if let Ok(l) = formats::by_id("aider").unwrap().load(&p) {
            for t in &l.traces {
                for (i, _) in t.walk() {
                    let _ = formats::payload(t, t.event(i));
                }
            }
        }
    }
}

/// An object with some of `keys`, each with an arbitrary value: the shape of a format's record.
fn record_of(keys: &'static [&'static str]) -> impl Strategy<Value = Value> {
    prop::collection::vec((prop::sample::select(keys), json_value()), 0..8)
        .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Map<_, _>>()))
}

const SWE_KEYS: &[&str] = &[
    "action",
    "observation",
    "response",
    "thought",
    "execution_time",
    "state",
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "extra",
    "actions",
    "command",
    "returncode",
    "exit_status",
    "submission",
    "model_stats",
    "timestamp",
    "is_demo",
    "function",
    "arguments",
    "id",
];
const OPENHANDS_KEYS: &[&str] = &[
    "id",
    "timestamp",
    "source",
    "message",
    "action",
    "observation",
    "args",
    "extras",
    "cause",
    "tool_call_metadata",
    "success",
    "content",
    "kind",
    "tool_name",
    "tool_call_id",
    "tool_call",
    "llm_response_id",
    "action_id",
    "thought",
    "llm_message",
    "error",
    "is_error",
    "stats",
    "execution_status",
    "agent",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, .. ProptestConfig::default() })]

    /// swe-agent: SWE-agent and mini-swe-agent documents of arbitrary records, under the
    /// names that make detection pick them.
    #[test]
    fn swe_agent_documents(steps in prop::collection::vec(record_of(SWE_KEYS), 0..6),
                           msgs in prop::collection::vec(record_of(SWE_KEYS), 0..8),
                           info in record_of(SWE_KEYS)) {
        feed("x.traj", json!({"environment": "e", "trajectory": steps, "history": msgs, "info": info}).to_string().as_bytes());
        feed("x.traj.json", Value::Array(msgs.clone()).to_string().as_bytes());
        let doc = json!({"info": info, "messages": msgs, "trajectory_format": "mini-swe-agent-1.1"});
        feed("x.traj.json", doc.to_string().as_bytes());
    }

    /// openhands: V0 arrays and V1 conversation folders of arbitrary events (and bytes).
    #[test]
    fn openhands_documents(events in prop::collection::vec(record_of(OPENHANDS_KEYS), 0..8),
                           state in record_of(OPENHANDS_KEYS),
                           junk in prop::collection::vec(any::<u8>(), 0..64)) {
        let mut v0 = vec![json!({"id": 0, "source": "user", "action": "message"})];
        v0.extend(events.iter().cloned());
        feed("x.json", Value::Array(v0).to_string().as_bytes());
        let dir = tempfile::tempdir().unwrap();
        let conv = dir.path().join("conv");
        std::fs::create_dir_all(conv.join("events")).unwrap();
        std::fs::write(conv.join("base_state.json"), state.to_string()).unwrap();
        for (i, e) in events.iter().enumerate() {
            std::fs::write(conv.join(format!("events/event-{i:05}-x.json")), e.to_string()).unwrap();
        }
        std::fs::write(conv.join("events/event-99999-junk.json"), &junk).unwrap();
        let f = formats::detect(&conv).expect("a conversation folder is detected");
        prop_assert_eq!(f.id(), "openhands");
        let l = f.load(&conv).expect("a conversation folder loads");
        for t in &l.traces {
            for (i, _) in t.walk() {
                let _ = formats::payload(t, t.event(i));
            }
        }
    }
}

/// Copilot CLI and Cursor records in their own places (a session dir, a transcript dir with a
/// subagent), built from their keys: detection, directory loading and every parser hold.
fn agent_session_records() -> impl Strategy<Value = Vec<Value>> {
    const KEYS2: &[&str] = &[
        "type",
        "data",
        "id",
        "timestamp",
        "parentId",
        "toolCallId",
        "toolName",
        "toolRequests",
        "name",
        "arguments",
        "success",
        "result",
        "error",
        "parentToolCallId",
        "outputTokens",
        "modelMetrics",
        "usage",
        "role",
        "message",
        "content",
        "tool_use_id",
        "is_error",
        "input",
        "text",
        "thinking",
        "status",
    ];
    const TYPES2: &[&str] = &[
        "session.start",
        "assistant.message",
        "tool.execution_start",
        "tool.execution_complete",
        "assistant.turn_start",
        "assistant.turn_end",
        "session.shutdown",
        "hook.start",
        "hook.end",
        "subagent.started",
        "session.error",
        "user",
        "assistant",
        "tool_use",
        "tool_result",
        "text",
        "turn_ended",
        "c1",
        "c2",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop::sample::select(TYPES2).prop_map(|s| json!(s)),
        prop::sample::select(STRINGS).prop_map(|s| json!(s)),
    ];
    let v = leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS2), inner), 0..7)
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Map<_, _>>())),
        ]
    });
    prop::collection::vec(v, 1..10)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, .. ProptestConfig::default() })]

    #[test]
    fn copilot_and_cursor_sessions_in_their_places(lines in agent_session_records(), cut in any::<bool>()) {
        let mut text: String = lines.iter().map(|v| v.to_string() + "\n").collect();
        if cut {
            text.pop();
        }
        let dir = tempfile::tempdir().unwrap();
        let copilot = dir.path().join("session-state/s1");
        let cursor = dir.path().join("agent-transcripts/c1");
        std::fs::create_dir_all(&copilot).unwrap();
        std::fs::create_dir_all(cursor.join("subagents")).unwrap();
        std::fs::write(copilot.join("events.jsonl"), &text).unwrap();
        std::fs::write(cursor.join("c1.jsonl"), &text).unwrap();
        std::fs::write(cursor.join("subagents/k.jsonl"), &text).unwrap();
        for p in [copilot.clone(), copilot.join("events.jsonl"), cursor.clone(), cursor.join("c1.jsonl")] {
            let _ = formats::detect(&p);
            for f in REGISTRY {
                if let Ok(l) = f.load(&p) {
                    for t in &l.traces {
                        for (i, _) in t.walk() {
                            let _ = formats::payload(t, t.event(i));
                        }
                        let _ = t.counts();
                    }
                }
            }
        }
        let _ = tracetui::source::discover(&[dir.path().to_path_buf()], None);
    }
}

/// OpenCode reads directories of JSON files and SQLite databases, which the cases above never
/// are: values of OpenCode's shapes (parts with tool states, steps with tokens) with arbitrary
/// fields, as storage files and as the `data` of database rows, with arbitrary column values.
mod opencode {
    use super::*;
    use tracetui::formats::{Format, opencode::OpenCode};

    fn part() -> impl Strategy<Value = Value> {
        let ty = prop::sample::select(
            &[
                "tool",
                "text",
                "reasoning",
                "step-start",
                "step-finish",
                "patch",
                "retry",
                "x",
                "",
            ][..],
        );
        let status = prop::sample::select(&["pending", "running", "completed", "error", "?"][..]);
        (
            ty,
            status,
            json_value(),
            json_value(),
            json_value(),
            json_value(),
            any::<i64>(),
            any::<i64>(),
        )
            .prop_map(|(ty, status, input, output, tokens, other, start, end)| {
                json!({"type": ty, "tool": other.clone(), "callID": "c", "text": output.clone(), "tokens": tokens,
                       "cost": other, "error": output.clone(),
                       "time": {"start": start, "end": end},
                       "state": {"status": status, "input": input, "output": output.clone(), "error": output,
                                 "time": {"start": start, "end": end}}})
            })
    }

    fn message() -> impl Strategy<Value = Value> {
        let role = prop::sample::select(&["user", "assistant", "system", ""][..]);
        (role, json_value(), any::<i64>(), prop::option::of(any::<i64>())).prop_map(|(role, error, created, completed)| {
            json!({"role": role, "error": error, "modelID": "m", "time": {"created": created, "completed": completed}})
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

        #[test]
        fn opencode_storage_and_database(
            session in json_value(),
            messages in prop::collection::vec(message(), 1..3),
            parts in prop::collection::vec(part(), 0..6),
            cell in prop::collection::vec(any::<u8>(), 0..64),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let st = dir.path().join("storage");
            let put = |rel: String, text: String| {
                let p = st.join(rel);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, text).unwrap();
            };
            put("session/global/ses_1.json".into(), session.to_string());
            std::fs::create_dir_all(st.join("project")).unwrap();
            let db = dir.path().join("opencode.db");
            let c = rusqlite::Connection::open(&db).unwrap();
            c.execute_batch(
                "CREATE TABLE session (id, title, parent_id, time_created, time_updated, tokens_input);
                 CREATE TABLE message (id, session_id, time_created, data);
                 CREATE TABLE part (id, message_id, session_id, time_created, data);",
            )
            .unwrap();
            let blob = rusqlite::types::Value::Blob(cell.clone());
            let text = String::from_utf8_lossy(&cell).into_owned();
            c.execute("INSERT INTO session VALUES ('ses_1', ?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![text, blob, session.to_string(), text, blob]).unwrap();
            for (i, m) in messages.iter().enumerate() {
                put(format!("message/ses_1/msg_{i}.json"), m.to_string());
                c.execute("INSERT INTO message VALUES (?1, 'ses_1', ?2, ?3)",
                    rusqlite::params![format!("msg_{i}"), i as i64, m.to_string()]).unwrap();
                for (j, p) in parts.iter().enumerate() {
                    put(format!("part/msg_{i}/prt_{j}.json"), p.to_string());
                    c.execute("INSERT INTO part VALUES (?1, ?2, 'ses_1', ?3, ?4)",
                        rusqlite::params![format!("prt_{i}_{j}"), format!("msg_{i}"), blob, p.to_string()]).unwrap();
                }
            }
            // A row whose data is not text at all.
            c.execute("INSERT INTO part VALUES ('prt_x', 'msg_0', 'ses_1', 0, ?1)", rusqlite::params![blob]).unwrap();
            drop(c);
            for path in [dir.path().to_path_buf(), st.clone(), db.clone()] {
                let _ = formats::detect(&path);
                let _ = OpenCode.summarize(&path);
                if let Ok(l) = OpenCode.load(&path) {
                    for t in &l.traces {
                        for (i, _) in t.walk() {
                            let _ = formats::payload(t, t.event(i));
                        }
                        let _ = t.counts();
                    }
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    /// Gemini CLI recordings: records keyed by `id` with `$set` lists and `$rewindTo` among
    /// them, in a `chats/` directory (where detection trusts the path), as lines and as the
    /// older whole document.
    #[test]
    fn gemini_cli_records(lines in prop::collection::vec((json_value(), prop::sample::select(&["id", "$set", "$rewindTo", "toolCalls", "messages", "sessionId", "projectHash", "tokens", "type"][..]), json_value()), 1..10)) {
        let recs: Vec<Value> = lines.into_iter().map(|(mut v, k, x)| {
            if let Value::Object(m) = &mut v { m.insert(k.to_string(), x); }
            v
        }).collect();
        let text: Vec<String> = recs.iter().map(|v| v.to_string()).collect();
        let doc = json!({"sessionId": "s", "projectHash": "h", "messages": recs});
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("chats")).unwrap();
        for (name, bytes) in [("session-x.jsonl", text.join("\n").into_bytes()), ("session-x.json", serde_json::to_vec_pretty(&doc).unwrap())] {
            let p = dir.path().join("chats").join(name);
            std::fs::write(&p, bytes).unwrap();
            let _ = formats::detect(&p);
            for f in REGISTRY {
                if let Ok(l) = f.load(&p) {
                    for t in &l.traces {
                        for (i, _) in t.walk() {
                            let _ = formats::payload(t, t.event(i));
                        }
                    }
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    /// `grep`'s matcher (as the `grep_match` fuzz target): any pattern, literal or regex,
    /// compiles or is refused, and matching never panics; a literal found in text that needs
    /// no JSON escaping leaves its prefilter piece in the bytes.
    #[test]
    fn grep_patterns_compile_or_are_refused_and_match_without_panic(
        pat in "[a-zA-Z0-9 .*+?|()\\[\\]{}^$\\\\kKsSé_-]{1,40}",
        text in "[a-zA-Z0-9 .*+?|()\\[\\]{}^$kKsSé_-]{0,80}",
        ic in any::<bool>(),
        regex in any::<bool>(),
    ) {
        if let Ok(p) = tracetui::search::grep::Pattern::new(&pat, ic, regex) {
            let found = p.find(&text);
            prop_assert_eq!(found.is_some(), p.is_match(&text));
            if let Some((a, b)) = found {
                prop_assert!(a <= b && b <= text.len());
                if !regex && text.is_ascii() && let Some(pre) = p.prefilter() {
                    prop_assert!(pre.is_match(text.as_bytes()), "prefilter missed {:?} in {:?}", pat, text);
                }
            }
        }
    }
}

/// The OTLP receiver's decoding (issue 37): whatever body a client sends, as protobuf or
/// JSON, gzipped or not, `prepare` bounds it, decodes it and cuts it into lines, or refuses
/// it; it never panics, and every line it keeps fits the reader's limit and is OTLP/JSON.
mod otlp_receiver {
    use super::*;
    use prost::Message;
    use tracetui::serve::receiver::{Encoding, Kind, Limits, prepare};

    /// A trace request from generated JSON put where spans and attributes go.
    fn request(spans: &[Value], text: &str) -> Vec<u8> {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
        use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
        let spans = spans
            .iter()
            .enumerate()
            .map(|(i, v)| Span {
                trace_id: vec![(i % 3) as u8 + 1; 16],
                span_id: vec![i as u8 + 1; 8],
                name: v.to_string(),
                attributes: vec![KeyValue {
                    key: text.into(),
                    value: Some(AnyValue {
                        value: Some(any_value::Value::StringValue(v.to_string())),
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect();
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
        .encode_to_vec()
    }

    fn gz(b: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut e, b).unwrap();
        e.finish().unwrap()
    }

    fn check(kind: Kind, enc: Encoding, gzip: bool, body: &[u8], lim: &Limits) {
        let body = if gzip { gz(body) } else { body.to_vec() };
        if let Ok(p) = prepare(kind, enc, gzip, &body, lim) {
            for l in &p.lines {
                assert!(l.bytes.len() <= lim.line, "{} > {}", l.bytes.len(), lim.line);
                let v: Value = serde_json::from_slice(&l.bytes).expect("a line is JSON");
                assert!(v.get("resourceSpans").is_some() || v.get("resourceLogs").is_some());
            }
            if kind == Kind::Traces {
                assert_eq!(p.lines.iter().map(|l| l.spans).sum::<usize>(), p.spans);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

        #[test]
        fn arbitrary_bodies(bytes in prop::collection::vec(any::<u8>(), 0..2048), gzip in any::<bool>()) {
            let lim = Limits::new(1 << 20);
            for kind in [Kind::Traces, Kind::Logs] {
                for enc in [Encoding::Protobuf, Encoding::Json] {
                    check(kind, enc, gzip, &bytes, &lim);
                    // Not gzip at all, though it says so.
                    let _ = prepare(kind, enc, true, &bytes, &lim);
                }
            }
        }

        #[test]
        fn requests_damaged_and_cut_into_small_lines(
            spans in prop::collection::vec(json_value(), 0..12),
            text in ".{0,40}",
            flips in prop::collection::vec((any::<usize>(), any::<u8>()), 0..4),
            cut in any::<usize>(),
            line in 200usize..4000,
            v in json_value(),
        ) {
            let mut lim = Limits::new(1 << 20);
            lim.line = line;
            let mut body = request(&spans, &text);
            check(Kind::Traces, Encoding::Protobuf, false, &body, &lim);
            for (at, b) in flips {
                if !body.is_empty() {
                    let n = body.len();
                    body[at % n] ^= b;
                }
            }
            let n = body.len();
            body.truncate(cut % (n + 1));
            check(Kind::Traces, Encoding::Protobuf, false, &body, &lim);
            check(Kind::Logs, Encoding::Protobuf, true, &body, &lim);
            let doc = json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}], "resourceLogs": [v]});
            check(Kind::Traces, Encoding::Json, false, doc.to_string().as_bytes(), &lim);
            check(Kind::Logs, Encoding::Json, false, doc.to_string().as_bytes(), &lim);
        }
    }
}

mod goose {
    use super::*;
    use tracetui::formats::{Format, goose::Goose};

    /// A content item of a type goose writes (or not), with fields of any shape.
    fn item() -> impl Strategy<Value = Value> {
        let ty = prop::sample::select(
            &[
                "text",
                "image",
                "toolRequest",
                "toolResponse",
                "frontendToolRequest",
                "toolConfirmationRequest",
                "actionRequired",
                "thinking",
                "redactedThinking",
                "systemNotification",
                "new",
            ][..],
        );
        let id = prop::sample::select(&["a", "b", ""][..]);
        (ty, id, json_value(), json_value(), json_value()).prop_map(|(ty, id, call, result, text)| {
            json!({"type": ty, "id": id, "text": text, "toolCall": call, "toolResult": {"status": "success", "value": result}})
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

        /// goose's sessions.db: content lists of any items (and content that is no list),
        /// session columns of any type.
        #[test]
        fn goose_database(
            messages in prop::collection::vec((prop::sample::select(&["user", "assistant", "system"][..]), prop::collection::vec(item(), 0..4), any::<i64>()), 1..6),
            odd in json_value(),
            cell in prop::collection::vec(any::<u8>(), 0..32),
        ) {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir(dir.path().join("sessions")).unwrap();
            let db = dir.path().join("sessions/sessions.db");
            let c = rusqlite::Connection::open(&db).unwrap();
            c.execute_batch(
                "CREATE TABLE sessions (id, name, working_dir, created_at, updated_at, accumulated_input_tokens, model_config_json, accumulated_cost);
                 CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id, role, content_json, created_timestamp, metadata_json);",
            )
            .unwrap();
            let blob = rusqlite::types::Value::Blob(cell.clone());
            c.execute("INSERT INTO sessions VALUES ('s', ?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                rusqlite::params![blob, odd.to_string(), String::from_utf8_lossy(&cell), blob, -5, odd.to_string(), blob]).unwrap();
            for (role, items, created) in &messages {
                c.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json) VALUES ('s', ?1, ?2, ?3, ?4)",
                    rusqlite::params![role, Value::Array(items.clone()).to_string(), created, odd.to_string()]).unwrap();
            }
            c.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp) VALUES ('s', 'user', ?1, ?2)",
                rusqlite::params![odd.to_string(), blob]).unwrap();
            drop(c);
            for path in [dir.path().join("sessions"), db.clone()] {
                let _ = formats::detect(&path);
                if let Ok(l) = Goose.load(&path) {
                    for t in &l.traces {
                        for (i, _) in t.walk() {
                            let _ = formats::payload(t, t.event(i));
                            let _ = Goose.gist(t.str(t.event(i).name), &Value::Null);
                        }
                        let _ = t.counts();
                    }
                }
            }
        }
    }
}

mod copilot_chat {
    use super::*;
    use tracetui::formats::{Format, copilot_chat::CopilotChat};

    /// A path into a session as VS Code's log names them, or into nothing.
    fn path() -> impl Strategy<Value = Value> {
        let key = prop_oneof![
            prop::sample::select(
                &[
                    "requests",
                    "response",
                    "result",
                    "modelState",
                    "metadata",
                    "toolCallRounds",
                    "toolCalls",
                    "resultDetails",
                    "message",
                    "timings",
                    "value",
                    "x"
                ][..]
            )
            .prop_map(|k| json!(k)),
            (0u64..4).prop_map(|i| json!(i)),
            Just(json!(null)),
            Just(json!(u64::MAX)),
        ];
        prop::collection::vec(key, 0..6).prop_map(Value::Array)
    }

    fn entry() -> impl Strategy<Value = Value> {
        (0u64..6, path(), json_value(), prop::option::of(0u64..5), any::<bool>()).prop_map(|(kind, k, v, i, list)| {
            let v = if list { json!([v]) } else { v };
            let mut e = json!({"kind": kind, "k": k, "v": v});
            if let Some(i) = i {
                e["i"] = json!(i);
            }
            e
        })
    }

    /// The values the log's lines hold, as requests of a document.
    fn requests_of(text: &str) -> Value {
        Value::Array(
            text.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter_map(|e| e.get("v").cloned())
                .collect(),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// Copilot Chat mutation logs: a session entry with requests of any shape, then sets,
        /// pushes, deletes and unknown kinds at any path (and lines cut short).
        #[test]
        fn copilot_chat_mutation_logs(requests in prop::collection::vec(json_value(), 0..3), entries in prop::collection::vec(entry(), 0..12), cut in 0usize..4096) {
            let dir = tempfile::tempdir().unwrap();
            let sessions = dir.path().join("chatSessions");
            std::fs::create_dir_all(&sessions).unwrap();
            let mut text = json!({"kind": 0, "v": {"sessionId": "s", "requests": requests}}).to_string();
            for e in entries {
                text.push('\n');
                text.push_str(&e.to_string());
            }
            let mut at = text.len().min(cut.max(20));
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            text.truncate(at);
            let f = sessions.join("s.jsonl");
            std::fs::write(&f, &text).unwrap();
            let _ = CopilotChat.load(&f);
            let _ = formats::load(&f, None);
            // The older form: the session as one document, its requests of any shape.
            let doc = sessions.join("s.json");
            let mut whole = json!({"version": 3, "sessionId": "s", "responderUsername": "r", "requests": requests_of(&text)}).to_string();
            if cut % 3 == 0 {
                let mut at = whole.len() / 2;
                while !whole.is_char_boundary(at) {
                    at -= 1;
                }
                whole.truncate(at);
            }
            std::fs::write(&doc, &whole).unwrap();
            let _ = CopilotChat.load(&doc);
            let _ = formats::load(&doc, None);
        }
    }
}
