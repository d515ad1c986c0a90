//! clickhouse:// against the real engine: chdb (ClickHouse in Python) behind the minimal HTTP
//! front of tests/clickhouse/chdb_http.py, holding the exporter's own table and a fake team
//! store (three services' GenAI spans) inserted as the exporter inserts them. The same spans,
//! written as OTLP/JSON, are loaded from disk: `ls` and `show` must agree.
//!
//! Skips (saying so) when python3 or its chdb package is missing (`pip install chdb`; .ci/run
//! installs it).

use assert_cmd::Command;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

const PASSWORD: &str = "s3cret-pw";

struct Front {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Front {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clickhouse/chdb_http.py")
}

/// The front, seeded; None (the test skips) without python3 or chdb.
fn start() -> Option<Front> {
    let has = std::process::Command::new("python3")
        .args(["-c", "import chdb"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has {
        eprintln!("SKIPPED: the clickhouse:// tests need python3 with chdb (pip install chdb)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let port_file = dir.path().join("port");
    let child = std::process::Command::new("python3")
        .arg(script())
        .arg("--port-file")
        .arg(&port_file)
        .arg("--seed")
        .arg(dir.path().join("otlp"))
        .arg("--log")
        .arg(dir.path().join("queries.jsonl"))
        .args(["--password", PASSWORD])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 runs");
    let mut front = Front { child, port: 0, dir };
    // Waits for the engine to start (no deadline asserted: a slow machine is slow).
    for _ in 0..1200 {
        if let Ok(p) = std::fs::read_to_string(&port_file) {
            front.port = p.trim().parse().unwrap();
            return Some(front);
        }
        if let Ok(Some(st)) = front.child.try_wait() {
            panic!("the chdb front exited: {st}");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the chdb front did not start in 2 minutes");
}

impl Front {
    fn url(&self, rest: &str) -> String {
        format!("clickhouse://default@127.0.0.1:{}/otel{rest}", self.port)
    }
    fn store(&self) -> PathBuf {
        self.dir.path().join("otlp/store.json")
    }
}

/// tracetui with a config of its own (no user config, no cache of the user's) and the password.
fn tracetui(front: &Front, password: Option<&str>) -> Command {
    let mut c = Command::cargo_bin("tracetui").unwrap();
    let home = front.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    c.env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env_remove("TRACETUI_CLICKHOUSE_PASSWORD");
    if let Some(p) = password {
        c.env("TRACETUI_CLICKHOUSE_PASSWORD", p);
    }
    c
}

fn json_lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The usage line's "by model" list sorted: its order is the models' first use in the order
/// the spans are stored, which the Collector's batching decides (a file groups them by
/// service, ClickHouse returns them by time); the amounts must agree.
fn by_model_sorted(line: &str) -> String {
    match line.split_once(" · by model: ") {
        Some((head, list)) => {
            let mut items: Vec<&str> = list.split(", ").collect();
            items.sort();
            format!("{head} · by model: {}", items.join(", "))
        }
        None => line.to_string(),
    }
}

/// `show`'s text of each trace, keyed by its header without the source.
fn show_blocks(text: &str) -> HashMap<String, Vec<String>> {
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    let mut cur = None;
    for line in text.lines().map(by_model_sorted) {
        let line = line.as_str();
        if line.starts_with("otlp-json ") {
            // `otlp-json NAME [...] ... · SOURCE`: the id is not in it; the start time is.
            let head = line.rsplit_once(" · ").map(|(h, _)| h).unwrap_or(line).to_string();
            cur = Some(head.clone());
            out.entry(head.clone()).or_default().push(head);
        } else if let Some(c) = &cur {
            out.get_mut(c).unwrap().push(line.to_string());
        }
    }
    out
}

#[test]
fn a_clickhouse_store_lists_and_shows_as_its_otlp_files() {
    let Some(front) = start() else { return };

    // ls: the runs list computed in ClickHouse.
    let ch = tracetui(&front, Some(PASSWORD))
        .args(["ls", &front.url(""), "--format", "json"])
        .assert()
        .success();
    let ch_out = ch.get_output();
    let remote = json_lines(&ch_out.stdout);
    assert_eq!(remote.len(), 6, "{remote:?}");
    // The same spans from the OTLP/JSON file.
    let file = tracetui(&front, None)
        .args(["ls"])
        .arg(front.store())
        .args(["--format", "json"])
        .assert()
        .success();
    let local = json_lines(&file.get_output().stdout);
    assert_eq!(local.len(), 6);
    let by_id: HashMap<&str, &Value> = local.iter().map(|v| (v["id"].as_str().unwrap(), v)).collect();
    let mut starts = Vec::new();
    for r in &remote {
        let id = r["id"].as_str().unwrap();
        let l = by_id.get(id).unwrap_or_else(|| panic!("{id} not in the file's runs"));
        for k in [
            "start",
            "duration",
            "tool_calls",
            "llm_calls",
            "errors",
            "tokens",
            "name",
        ] {
            assert_eq!(r[k], l[k], "{id}: {k}");
        }
        assert_eq!(r["usage"], l["usage"], "{id}: tokens by kind and cost");
        assert!(r["usage"]["cost_micros"].as_u64().is_some_and(|c| c > 0), "{r}");
        assert!(r["path"].as_str().unwrap().ends_with(&format!("?trace={id}")));
        starts.push(r["start"].as_str().unwrap().to_string());
    }
    let mut sorted = starts.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(starts, sorted, "newest first");
    let errors: u64 = remote.iter().map(|r| r["errors"].as_u64().unwrap()).sum();
    assert!(errors > 0, "the store has failing tools");

    // The text table too, and nothing of the password anywhere.
    let text = tracetui(&front, Some(PASSWORD))
        .args(["ls", &front.url("")])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&text.get_output().stdout).to_string();
    assert!(text.contains("clickhouse") && text.contains("$"), "{text}");
    assert!(!text.contains(PASSWORD));

    // show: one run, through the OTLP mapping, as the file shows it.
    // A run with a failed tool.
    let id = remote.iter().find(|r| r["errors"] == 1).unwrap()["id"]
        .as_str()
        .unwrap();
    let shown = tracetui(&front, Some(PASSWORD))
        .args(["show", &front.url(&format!("?trace={id}"))])
        .assert()
        .success();
    let shown = String::from_utf8_lossy(&shown.get_output().stdout).to_string();
    let from_file = tracetui(&front, None).arg("show").arg(front.store()).assert().success();
    let from_file = show_blocks(&String::from_utf8_lossy(&from_file.get_output().stdout));
    assert!(
        shown
            .lines()
            .next()
            .unwrap()
            .ends_with(&format!(" · {}", front.url(&format!("?trace={id}")))),
        "the header names the run by its URL: {shown}"
    );
    let remote_blocks = show_blocks(&shown);
    assert_eq!(remote_blocks.len(), 1, "{shown}");
    let (head, lines) = remote_blocks.into_iter().next().unwrap();
    assert_eq!(Some(&lines), from_file.get(&head), "show of {id}:\n{shown}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("─ tool search_") && l.contains("✗ TimeoutError")),
        "{shown}"
    );
    // And as JSON: the same events (the source differs: a temporary file).
    let j = tracetui(&front, Some(PASSWORD))
        .args(["show", &front.url(&format!("?trace={id}")), "--format", "json"])
        .assert()
        .success();
    let j: Value = serde_json::from_slice(&j.get_output().stdout).unwrap();
    assert!(j["events"].as_array().is_some_and(|e| e.len() == 7), "{j}");

    // Every query was read-only and bounded.
    let log = std::fs::read_to_string(front.dir.path().join("queries.jsonl")).unwrap();
    let queries: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(queries.len() >= 3);
    for q in &queries {
        assert_eq!(q["params"]["readonly"], "1", "{q}");
        assert!(q["params"]["max_execution_time"].is_string(), "{q}");
        assert!(q["params"]["max_result_bytes"].is_string(), "{q}");
        assert!(q["query"].as_str().unwrap().contains("LIMIT"), "{q}");
        assert!(!q.to_string().contains(PASSWORD));
    }
}

#[test]
fn clickhouse_errors_are_clear_and_keep_the_password() {
    let Some(front) = start() else { return };
    let src = front.url("");
    // No such table: named, with the hint, exit 2.
    let a = tracetui(&front, Some(PASSWORD))
        .args(["ls", &front.url("?table=nope")])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(err.contains(&format!("{src}?table=nope")), "{err}");
    assert!(err.contains("UNKNOWN_TABLE") && err.contains("exporter"), "{err}");
    assert!(!err.contains(PASSWORD));
    // A wrong password: the server's refusal, not the password.
    let a = tracetui(&front, Some("wrong-one")).args(["ls", &src]).assert().code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(
        err.contains("AUTHENTICATION_FAILED") && !err.contains("wrong-one"),
        "{err}"
    );
    // A trace that is not there.
    let a = tracetui(&front, Some(PASSWORD))
        .args(["show", &front.url("?trace=ffff")])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(err.contains("no spans of this trace"), "{err}");
    // show without a trace says how to name one.
    let a = tracetui(&front, Some(PASSWORD)).args(["show", &src]).assert().code(2);
    assert!(String::from_utf8_lossy(&a.get_output().stderr).contains("?trace="));
    // Commands that do not read clickhouse:// yet say so.
    for cmd in ["stats", "check", "grep"] {
        let mut c = tracetui(&front, Some(PASSWORD));
        c.arg(cmd);
        if cmd == "grep" {
            c.arg("x");
        }
        let a = c.arg(&src).assert().code(2);
        let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
        assert!(
            err.contains("clickhouse:// sources work with ls and show so far"),
            "{cmd}: {err}"
        );
    }
}

#[test]
fn ls_since_keeps_the_runs_started_in_the_window_of_a_directory_too() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/compare");
    let count = |since: &str| {
        let a = Command::cargo_bin("tracetui")
            .unwrap()
            .env("XDG_CACHE_HOME", tempfile::tempdir().unwrap().path())
            .args(["ls", "--format", "json", "--since", since])
            .arg(&dir)
            .assert()
            .success();
        json_lines(&a.get_output().stdout).len()
    };
    // The five runs started on 2026-11-20 09:14:02.
    assert_eq!(count("2026-11-20"), 5);
    assert_eq!(count("2026-11-20T09:15:00Z"), 0);
}
