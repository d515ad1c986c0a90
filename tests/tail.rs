//! `tracetui tail --no-tui` against a writer that reproduces agents' on-disk lifecycles.

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Tail {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Tail {
    fn start(args: &[&str], path: &Path) -> Tail {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tracetui"))
            .arg("tail")
            .args(args)
            .arg(path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l2 = lines.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                l2.lock().unwrap().push(l);
            }
        });
        // Give the watcher time to arm before the writer starts.
        std::thread::sleep(Duration::from_millis(300));
        Tail { child, lines }
    }

    /// The lines once `done` holds of them (or a hang's deadline passed), and a moment more.
    fn wait_until(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let t0 = Instant::now();
        let parsed =
            |l: &[String]| -> Vec<Value> { l.iter().map(|l| serde_json::from_str(l).expect("JSON line")).collect() };
        while !done(&parsed(&self.lines.lock().unwrap())) && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(700));
        parsed(&self.lines.lock().unwrap())
    }

    fn wait_for(&self, n: usize) -> Vec<Value> {
        let t0 = Instant::now();
        // Only a hang: a loaded machine may take many seconds.
        while self.lines.lock().unwrap().len() < n && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(20));
        }
        // A moment more, so that duplicates would show.
        std::thread::sleep(Duration::from_millis(700));
        self.lines
            .lock()
            .unwrap()
            .iter()
            .map(|l| serde_json::from_str(l).expect("JSON line"))
            .collect()
    }
}

impl Drop for Tail {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ev(run: &str, id: &str, parent: Option<&str>, ty: &str, name: &str, payload: &str) -> String {
    let p = parent.map(|p| format!("\"{p}\"")).unwrap_or("null".into());
    format!(
        "{{\"spec_version\":\"0.1\",\"event_id\":\"{id}\",\"run_id\":\"{run}\",\"parent_id\":{p},\"event_type\":\"{ty}\",\"ts\":\"2026-02-15T20:31:05.123Z\",\"duration_ms\":3,\"name\":\"{name}\",\"payload\":{payload},\"meta\":{{}}}}\n"
    )
}

fn run_json(run: &str, status: &str) -> String {
    format!(
        "{{\"spec_version\":\"0.1\",\"run_id\":\"{run}\",\"run_name\":\"{run}\",\"started_at\":\"2026-02-15T20:31:05.000Z\",\"ended_at\":null,\"duration_ms\":null,\"status\":\"{status}\",\"counts\":{{\"llm_calls\":0,\"tool_calls\":0,\"errors\":0,\"loop_warnings\":0}},\"last_event_ts\":null}}"
    )
}

fn append(p: &Path, s: &str) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(p).unwrap();
    f.write_all(s.as_bytes()).unwrap();
    f.flush().unwrap();
}

/// Replace a file the way agents do: write a temporary file, rename it over.
fn replace(p: &Path, s: &str) {
    let tmp = p.with_extension("json.tmp");
    std::fs::write(&tmp, s).unwrap();
    std::fs::rename(&tmp, p).unwrap();
}

fn tree_hash(root: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(p.clone());
                out.push((p, Vec::new(), m.modified().unwrap()));
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap(), m.modified().unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn agentdbg_lifecycle_every_event_once_in_order_and_new_runs_appear() {
    let d = tempfile::tempdir().unwrap();
    let runs = d.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    // The agent has not started yet: tail waits on an empty directory.
    let tail = Tail::start(&["--no-tui", "--format", "json"], &runs);

    let r1 = runs.join("r1");
    std::fs::create_dir(&r1).unwrap();
    replace(&r1.join("run.json"), &run_json("r1", "running"));
    let events = r1.join("events.jsonl");
    append(&events, &ev("r1", "a", None, "RUN_START", "r1", "{}"));
    std::thread::sleep(Duration::from_millis(60));
    // One event in two partial writes.
    let llm = ev(
        "r1",
        "b",
        None,
        "LLM_CALL",
        "gpt",
        r#"{"model":"gpt","usage":{"total_tokens":3}}"#,
    );
    let (x, y) = llm.split_at(50);
    append(&events, x);
    std::thread::sleep(Duration::from_millis(120));
    append(&events, y);
    append(
        &events,
        &ev(
            "r1",
            "c",
            Some("b"),
            "TOOL_CALL",
            "search",
            r#"{"tool_name":"search","status":"ok"}"#,
        ),
    );
    std::thread::sleep(Duration::from_millis(60));
    append(&events, &ev("r1", "d", None, "RUN_END", "r1", r#"{"status":"ok"}"#));
    replace(&r1.join("run.json"), &run_json("r1", "ok"));
    // A second run appears while tail runs.
    let r2 = runs.join("r2");
    std::fs::create_dir(&r2).unwrap();
    append(&r2.join("events.jsonl"), &ev("r2", "e", None, "RUN_START", "r2", "{}"));
    append(
        &r2.join("events.jsonl"),
        &ev(
            "r2",
            "f",
            None,
            "ERROR",
            "Boom",
            r#"{"error_type":"Boom","message":"x"}"#,
        ),
    );

    let all = tail.wait_for(6);
    // r1 ended: one line says so, with its status and counts.
    let ends: Vec<&Value> = all.iter().filter(|v| v["kind"] == "run_end").collect();
    assert_eq!(ends.len(), 1, "{all:?}");
    assert_eq!(
        (&ends[0]["run"], &ends[0]["status"], &ends[0]["tool_calls"]),
        (&"r1".into(), &"ok".into(), &1.into())
    );
    let got: Vec<Value> = all
        .into_iter()
        .filter(|v| v["kind"] != "run_end" && v["kind"] != "call_end")
        .collect();
    let ids: Vec<&str> = got.iter().map(|v| v["id"].as_str().unwrap()).collect();
    // RUN_END is merged into the run event (a, printed once), so r1 shows a, b, c.
    assert_eq!(ids, vec!["a", "b", "c", "e", "f"], "{got:?}");
    assert_eq!(got[1]["kind"], "llm");
    assert_eq!(got[2]["kind"], "tool");
    assert_eq!(got[2]["parent"], "b");
    assert_eq!(got[2]["run"], "r1");
    assert_eq!(got[4]["run"], "r2");
    assert_eq!(got[4]["kind"], "error");

    // tracetui never writes in the watched directory.
    let before = tree_hash(d.path());
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(before, tree_hash(d.path()));
    let names: Vec<_> = std::fs::read_dir(&r1)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn truncation_rereads_without_repeating_and_from_start_prints_history() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("events.jsonl");
    append(&f, &ev("r", "a", None, "RUN_START", "r", "{}"));
    append(&f, &ev("r", "b", None, "TOOL_CALL", "t", r#"{"tool_name":"t"}"#));
    let tail = Tail::start(&["--no-tui", "--format", "json", "--from-start"], &f);
    let got = tail.wait_for(2);
    assert_eq!(got.len(), 2);
    // The file is truncated and written anew: a new run in the same file, printed whole
    // (what was printed before says nothing about where the new events begin).
    std::fs::write(&f, "").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    append(&f, &ev("r", "a", None, "RUN_START", "r", "{}"));
    append(&f, &ev("r", "z", None, "TOOL_CALL", "u", r#"{"tool_name":"u"}"#));
    let got = tail.wait_for(4);
    let ids: Vec<&str> = got.iter().map(|v| v["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec!["a", "b", "a", "z"]);
}

#[test]
fn polling_fallback_sees_appends_without_notify() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("r");
    std::fs::create_dir(&r).unwrap();
    append(&r.join("events.jsonl"), &ev("r", "a", None, "RUN_START", "r", "{}"));
    let tail = Tail::start(&["--no-tui", "--format", "json", "--poll", "50"], &r);
    append(&r.join("events.jsonl"), &ev("r", "b", None, "LLM_CALL", "m", "{}"));
    let got = tail.wait_for(1);
    let ids: Vec<&str> = got.iter().map(|v| v["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec!["b"], "existing events are not printed without --from-start");
}

/// Claude Code and Codex sessions are followed as they are appended, line by line, with
/// every event printed once: the same set a full load of the finished file has.
#[test]
fn claude_code_and_codex_sessions_are_followed_as_they_grow() {
    for sample in [
        "sample-traces/claude-code/7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f.jsonl",
        "sample-traces/codex/rollout-2026-04-03T09-12-44-0196a7c2-3f41-7d10-9b55-4e2a8c1d0f37.jsonl",
    ] {
        let d = tempfile::tempdir().unwrap();
        let name = Path::new(sample).file_name().unwrap();
        let target = d.path().join(name);
        let text = std::fs::read_to_string(sample).unwrap();
        let mut lines = text.lines();
        // The first line is there when tail starts (detection needs it), the rest arrives.
        append(&target, &format!("{}\n", lines.next().unwrap()));
        let tail = Tail::start(&["--no-tui", "--format", "json", "--from-start"], d.path());
        for l in lines {
            append(&target, &format!("{l}\n"));
            std::thread::sleep(Duration::from_millis(15));
        }
        let full = Command::new(env!("CARGO_BIN_EXE_tracetui"))
            .args(["show", "--format", "json"])
            .arg(&target)
            .output()
            .unwrap();
        let model: Value = serde_json::from_slice(&full.stdout).unwrap();
        let expected = model["events"].as_array().unwrap().len();
        let all = tail.wait_until(|l| l.iter().any(|v| v["kind"] == "run_end"));
        let got: Vec<&Value> = all
            .iter()
            .filter(|v| v["kind"] != "run_end" && v["kind"] != "call_end")
            .collect();
        assert_eq!(got.len(), expected, "{sample}: {got:?}");
        // Sessions have no end record, and a session whose calls are all answered says `ok`
        // between two calls: its end is said once it stays quiet, once, with every event.
        let ends: Vec<&Value> = all.iter().filter(|v| v["kind"] == "run_end").collect();
        assert_eq!(ends.len(), 1, "{sample}: {ends:?}");
        assert_eq!(ends[0]["events"].as_u64(), Some(expected as u64), "{sample}");
        assert_eq!(all.last().unwrap()["kind"], "run_end");
        let mut ids: Vec<String> = got.iter().map(|v| format!("{}/{}", v["id"], v["index"])).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), expected, "{sample}: every event once");
    }
}

/// Issue 37: `tail --no-tui` printed a call as `[pending]` and never said how it ended.
/// A call printed pending gets a line when its result comes (text and JSON).
#[test]
fn a_call_printed_pending_says_how_it_ended() {
    let sample =
        std::fs::read_to_string("sample-traces/claude-code/7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f.jsonl").unwrap();
    let lines: Vec<&str> = sample.lines().collect();
    // Lines 1-4 end with a Read call (toolu_w01); line 5 is its result.
    assert!(lines[3].contains("\"toolu_w01\"") && lines[4].contains("\"tool_use_id\": \"toolu_w01\""));
    for fmt in ["json", "text"] {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f.jsonl");
        append(&target, &format!("{}\n", lines[0]));
        let tail = Tail::start(&["--no-tui", "--format", fmt, "--from-start"], d.path());
        for l in &lines[1..4] {
            append(&target, &format!("{l}\n"));
        }
        let pending = |l: &String| l.contains("Read") && l.contains("pending");
        let t0 = Instant::now();
        while !tail.lines.lock().unwrap().iter().any(pending) && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(20));
        }
        append(&target, &format!("{}\n", lines[4]));
        let ended = |l: &String| !pending(l) && l.contains("Read") && l.contains("ok");
        let t0 = Instant::now();
        while !tail.lines.lock().unwrap().iter().any(ended) && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let got = tail.lines.lock().unwrap().clone();
        let end = got
            .iter()
            .find(|l| ended(l))
            .unwrap_or_else(|| panic!("{fmt}: no outcome line: {got:?}"));
        if fmt == "json" {
            let v: Value = serde_json::from_str(end).unwrap();
            assert_eq!(
                (&v["kind"], &v["call"], &v["status"], &v["id"]),
                (&"call_end".into(), &"tool".into(), &"ok".into(), &"toolu_w01".into())
            );
        } else {
            assert!(end.contains("tool Read ok"), "{end}");
        }
        // The call line itself was printed once.
        assert_eq!(got.iter().filter(|l| pending(l)).count(), 1, "{got:?}");
    }
}
