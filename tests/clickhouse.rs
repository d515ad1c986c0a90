//! clickhouse:// against the real engine: chdb (ClickHouse in Python) behind the minimal HTTP
//! front of tests/clickhouse/chdb_http.py, holding the exporter's own table and a fake team
//! store (three services' GenAI spans) inserted as the exporter inserts them. The same spans,
//! written as OTLP/JSON, are loaded from disk: `ls` and `show` must agree.
//!
//! Skips (saying so) when python3 or its chdb package is missing (`pip install chdb`; .ci/run
//! installs it).

mod tmux;

use assert_cmd::Command;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use tmux::Tmux;

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

/// The front, seeded with the fake team store; None (the test skips) without python3 or chdb.
fn start() -> Option<Front> {
    start_with("team")
}

/// The front, seeded with store.py's set `set` (store.SETS).
fn start_with(set: &str) -> Option<Front> {
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
        .args(["--set", set])
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
    // Paged (each page's runs found first, then aggregated): the pages are the list, in order,
    // the same rows, and a full page says how many runs the window has.
    let first = tracetui(&front, Some(PASSWORD))
        .args(["ls", &front.url("?limit=4"), "--format", "json"])
        .assert()
        .success();
    let first_err = String::from_utf8_lossy(&first.get_output().stderr).to_string();
    assert!(
        first_err.contains("4 runs shown of 6; more with ?offset=4"),
        "{first_err}"
    );
    let second = tracetui(&front, Some(PASSWORD))
        .args(["ls", &front.url("?limit=4&offset=4"), "--format", "json"])
        .assert()
        .success();
    let mut pages = json_lines(&first.get_output().stdout);
    pages.extend(json_lines(&second.get_output().stdout));
    assert_eq!(pages, remote, "the pages are the list");
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
    // Commands that take runs are given runs: a whole store is not one.
    let a = tracetui(&front, Some(PASSWORD))
        .args(["compare", "--tree", &src])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(err.contains("which run? add ?trace=ID"), "{err}");
    // What a store cannot compute is refused, not made up.
    for args in [
        vec!["stats", "--by", "tool"],
        vec!["stats", "--by", "project"],
        vec!["stats", "--check-costs"],
        vec!["grep", "--filter", "kind:llm", "x"],
    ] {
        let a = tracetui(&front, Some(PASSWORD)).args(&args).arg(&src).assert().code(2);
        let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
        assert!(err.contains(&src) && err.contains("store"), "{args:?}: {err}");
    }
}

/// `stats --format json` of the store and of the file: the same runs, groups, tokens and tools;
/// each group's cost within half a microdollar a call (the store prices a group's sums once,
/// a file each call, rounded).
fn assert_same_stats(by: &str, remote: &Value, local: &Value) {
    assert_eq!(remote["runs"], local["runs"], "--by {by}: runs by status");
    assert_eq!(remote["tools"], local["tools"], "--by {by}: the tool table");
    let close = |r: &Value, l: &Value, what: &str| {
        for k in [
            "llm_calls",
            "input",
            "cache_read",
            "cache_write",
            "output",
            "reasoning",
            "tokens",
            "cost_unknown_calls",
        ] {
            assert_eq!(r[k], l[k], "--by {by}: {what}: {k}");
        }
        // No cost at all (only calls of an unknown price): none on both sides.
        let (Some(a), Some(b)) = (r["cost_micros"].as_u64(), l["cost_micros"].as_u64()) else {
            assert_eq!(r["cost_micros"], l["cost_micros"], "--by {by}: {what}: cost");
            return;
        };
        let calls = r["llm_calls"].as_u64().unwrap();
        assert!(
            a.abs_diff(b) * 2 <= calls,
            "--by {by}: {what}: cost {a} and {b} for {calls} calls"
        );
    };
    close(&remote["total"], &local["total"], "total");
    let (rg, lg) = (
        remote["groups"].as_array().unwrap(),
        local["groups"].as_array().unwrap(),
    );
    assert_eq!(rg.len(), lg.len(), "--by {by}: {remote} / {local}");
    for l in lg {
        let key = &l["key"];
        let r = rg
            .iter()
            .find(|r| r["key"] == *key)
            .unwrap_or_else(|| panic!("--by {by}: no group {key}"));
        assert_eq!(r["runs"], l["runs"], "--by {by}: {key}: runs");
        close(r, l, &key.to_string());
    }
}

#[test]
fn other_recorders_spans_in_a_store_count_and_price_as_their_otlp_files() {
    // Claude Code's, OpenInference's and MCP's spans, exit codes, older GenAI keys, recorded
    // costs, a long-context prompt, a model-less call, an agent span with its run's usage
    // (store.mixed_spans): the SQL classifies them as the OTLP reader does.
    let Some(front) = start_with("mixed") else { return };
    let src = front.url("");
    let json = |c: &mut Command| -> Vec<Value> { json_lines(&c.assert().success().get_output().stdout) };
    let remote = json(tracetui(&front, Some(PASSWORD)).args(["ls", &src, "--format", "json"]));
    let local = json(
        tracetui(&front, None)
            .arg("ls")
            .arg(front.store())
            .args(["--format", "json"]),
    );
    assert_eq!(remote.len(), 4, "{remote:?}");
    assert_eq!(local.len(), 4, "{local:?}");
    for (r, l) in remote.iter().zip(&local) {
        let id = l["id"].as_str().unwrap();
        assert_eq!(r["id"], l["id"], "the same order");
        for k in [
            "start",
            "duration",
            "status",
            "tool_calls",
            "llm_calls",
            "errors",
            "tokens",
            "name",
            "model",
            "usage",
        ] {
            assert_eq!(r[k], l[k], "{id}: {k}");
        }
    }
    for by in ["model", "run", "day"] {
        let remote = &json(tracetui(&front, Some(PASSWORD)).args(["stats", "--by", by, &src, "--format", "json"]))[0];
        let local = &json(
            tracetui(&front, None)
                .args(["stats", "--by", by, "--format", "json"])
                .arg(front.store()),
        )[0];
        assert_same_stats(by, remote, local);
    }
    // check: the same counts and tokens a trace.
    let checked = |c: &mut Command| -> Vec<(Value, Vec<Value>)> {
        let mut v: Vec<_> = json_lines(&c.output().unwrap().stdout)
            .into_iter()
            .map(|t| {
                let counts = ["tool_calls", "llm_calls", "errors", "tokens", "status"].map(|k| t[k].clone());
                (t["trace"].clone(), counts.to_vec())
            })
            .collect();
        v.sort_by_key(|x| x.0.to_string());
        v
    };
    let (r, l) = (
        checked(tracetui(&front, Some(PASSWORD)).args(["check", &src, "--format", "json"])),
        checked(
            tracetui(&front, None)
                .arg("check")
                .arg(front.store())
                .args(["--format", "json"]),
        ),
    );
    assert_eq!(r.len(), 4, "{r:?}");
    assert_eq!(r, l, "check");
    // show of each run: the same tree, names, tokens and costs.
    let from_file = tracetui(&front, None).arg("show").arg(front.store()).assert().success();
    let from_file = show_blocks(&String::from_utf8_lossy(&from_file.get_output().stdout));
    for r in &remote {
        let id = r["id"].as_str().unwrap();
        let shown = tracetui(&front, Some(PASSWORD))
            .args(["show", &front.url(&format!("?trace={id}"))])
            .assert()
            .success();
        let shown = String::from_utf8_lossy(&shown.get_output().stdout).to_string();
        let (head, lines) = show_blocks(&shown).into_iter().next().unwrap();
        assert_eq!(Some(&lines), from_file.get(&head), "show of {id}:\n{shown}");
    }
}

/// (trace, span) of each line of `grep --format json`.
fn grep_hits(out: &[u8]) -> std::collections::BTreeSet<(String, String)> {
    json_lines(out)
        .iter()
        .map(|h| {
            (
                h["trace"].as_str().unwrap().to_string(),
                h["event_id"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_clickhouse_store_prices_and_greps_as_its_otlp_files() {
    let Some(front) = start() else { return };
    let src = front.url("");
    // stats: computed in ClickHouse, compared with the same spans loaded from the file.
    for by in ["model", "day"] {
        let r = tracetui(&front, Some(PASSWORD))
            .args(["stats", "--by", by, &src, "--format", "json"])
            .assert()
            .success();
        let remote: Value = serde_json::from_slice(&r.get_output().stdout).unwrap();
        let l = tracetui(&front, None)
            .args(["stats", "--by", by, "--format", "json"])
            .arg(front.store())
            .assert()
            .success();
        let local: Value = serde_json::from_slice(&l.get_output().stdout).unwrap();
        assert_same_stats(by, &remote, &local);
        assert_eq!(remote["runs"]["total"], 6);
        assert!(remote["total"]["cost_micros"].as_u64().unwrap() > 0);
    }
    // --by run: a row a run, its URL for a path.
    let r = tracetui(&front, Some(PASSWORD))
        .args(["stats", "--by", "run", &src, "--format", "json"])
        .assert()
        .success();
    let remote: Value = serde_json::from_slice(&r.get_output().stdout).unwrap();
    let groups = remote["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 6);
    assert!(groups.iter().all(|g| g["path"].as_str().unwrap().contains("?trace=")));
    // The text tables, as the file's.
    let text = |c: &mut Command| String::from_utf8_lossy(&c.assert().success().get_output().stdout).to_string();
    let t = text(tracetui(&front, Some(PASSWORD)).args(["stats", &src]));
    assert!(
        t.starts_with("6 runs: ok 6\n") && t.contains("claude-sonnet-4-5") && t.contains("search_retriever"),
        "{t}"
    );
    // A window before the spans: nothing, said as such.
    let t =
        text(tracetui(&front, Some(PASSWORD)).args(["stats", &src, "--since", "2020-01-01", "--until", "2020-01-02"]));
    assert!(t.starts_with("0 runs: -"), "{t}");

    // grep: what grep finds in the file, the store finds (it searches every attribute's
    // value as stored; a file's are decoded first, so the store may find more).
    for (pattern, flags) in [
        ("timed", vec![]),
        ("item 1", vec![]),
        ("FOUND 2", vec!["-i"]),
        ("search_c.der", vec!["--regex"]),
    ] {
        let l = tracetui(&front, None)
            .arg("grep")
            .args(&flags)
            .args([pattern, "--format", "json"])
            .arg(front.store())
            .assert()
            .success();
        let r = tracetui(&front, Some(PASSWORD))
            .arg("grep")
            .args(&flags)
            .args([pattern, &src, "--format", "json"])
            .assert()
            .success();
        let (local, remote) = (grep_hits(&l.get_output().stdout), grep_hits(&r.get_output().stdout));
        assert!(!local.is_empty(), "{pattern}");
        assert!(
            local.is_subset(&remote),
            "{pattern}: the file finds {local:?}, the store {remote:?}"
        );
    }
    let r = tracetui(&front, Some(PASSWORD))
        .args(["grep", "timed", &src])
        .assert()
        .success();
    let lines = String::from_utf8_lossy(&r.get_output().stdout).to_string();
    assert_eq!(lines.lines().count(), 2, "{lines}");
    assert!(
        lines
            .lines()
            .all(|l| l.starts_with(&format!("{src}?trace=")) && l.contains("search [timed] out")),
        "{lines}"
    );
    // -m N: at most N spans a trace.
    let r = tracetui(&front, Some(PASSWORD))
        .args(["grep", "-m", "1", "search", &src, "--format", "json"])
        .assert()
        .success();
    assert_eq!(json_lines(&r.get_output().stdout).len(), 6);
    // Quotes and backslashes reach the engine as they are (a query parameter, not SQL): the
    // stored arguments hold `"q": "item 1"`.
    let r = tracetui(&front, Some(PASSWORD))
        .args(["grep", "\"q\": \"item 1", &src, "--format", "json"])
        .assert()
        .success();
    assert_eq!(json_lines(&r.get_output().stdout).len(), 6);
    let r = tracetui(&front, Some(PASSWORD))
        .args(["grep", "--regex", "item\\s1", &src, "--format", "json"])
        .assert()
        .success();
    assert_eq!(json_lines(&r.get_output().stdout).len(), 6);
    let hostile = "x') OR 1=1; DROP TABLE otel.otel_traces; --\\' \\";
    tracetui(&front, Some(PASSWORD))
        .args(["grep", hostile, &src])
        .assert()
        .code(1);
    tracetui(&front, Some(PASSWORD))
        .args(["grep", "--regex", hostile, &src])
        .assert()
        .code(2);
    tracetui(&front, Some(PASSWORD)).args(["ls", &src]).assert().success();
    // A pattern Rust's regex takes and RE2 does not: refused, naming RE2.
    let a = tracetui(&front, Some(PASSWORD))
        .args(["grep", "--regex", "(?x)item 1", &src])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(err.contains("RE2") && err.contains(&src), "{err}");

    // Every query was read-only and bounded; grep's pattern went as a parameter.
    let log = std::fs::read_to_string(front.dir.path().join("queries.jsonl")).unwrap();
    for q in log.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()) {
        assert_eq!(q["params"]["readonly"], "1", "{q}");
        assert!(q["query"].as_str().unwrap().contains("LIMIT"), "{q}");
        assert!(!q["query"].as_str().unwrap().contains("DROP"), "{q}");
    }
}

/// Rows the exporter could have written, inserted into the front's table (not through
/// tracetui, which only reads).
fn insert(front: &Front, sql: &str) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let r = reqwest::blocking::Client::new()
        .post(format!("http://127.0.0.1:{}/", front.port))
        .basic_auth("default", Some(PASSWORD))
        .body(sql.to_string())
        .send()
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().unwrap_or_default());
}

#[test]
fn check_of_a_store_names_each_trace_and_exits_as_check() {
    let Some(front) = start() else { return };
    let src = front.url("");
    let a = tracetui(&front, Some(PASSWORD))
        .args(["check", &src, "--format", "json"])
        .assert()
        .code(0);
    let traces = json_lines(&a.get_output().stdout);
    assert_eq!(traces.len(), 6);
    let l = tracetui(&front, None)
        .args(["check", "--format", "json"])
        .arg(front.store())
        .assert()
        .success();
    let local = json_lines(&l.get_output().stdout);
    for t in &traces {
        let f = local.iter().find(|x| x["trace"] == t["trace"]).unwrap();
        for k in ["tool_calls", "llm_calls", "errors", "tokens", "name", "status"] {
            assert_eq!(t[k], f[k], "{k}: {t} / {f}");
        }
        assert_eq!(t["diagnostics"], serde_json::json!([]));
    }
    // An orphan (its parent never written) is a warning: still 0.
    insert(
        &front,
        "INSERT INTO otel.otel_traces (Timestamp, TraceId, SpanId, ParentSpanId, SpanName, ServiceName) \
         VALUES (now64(9) - INTERVAL 1 HOUR, 'b0000000000000000000000000000001', '00000000000000aa', '00000000000000ff', 'orphan', 'coder')",
    );
    let a = tracetui(&front, Some(PASSWORD)).args(["check", &src]).assert().code(0);
    let out = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with(&format!(
            "{src}?trace=b0000000000000000000000000000001: clickhouse trace"
        )),
        "problems first: {out}"
    );
    assert!(
        out.contains("warning: no root span in the window") && out.contains("1 span whose parent is not in the trace"),
        "{out}"
    );
    let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(
        err.contains("7 traces") && err.contains("0 with errors, 1 with warnings"),
        "{err}"
    );
    // A trace id that is not hex cannot be opened: an error, exit 1, on any page.
    insert(
        &front,
        "INSERT INTO otel.otel_traces (Timestamp, TraceId, SpanId, ParentSpanId, SpanName, ServiceName) \
         VALUES (now64(9) - INTERVAL 3 HOUR, 'not-a-hex-id', '00000000000000bb', '', 'odd', 'coder')",
    );
    let a = tracetui(&front, Some(PASSWORD))
        .args(["check", &front.url("?limit=1&offset=5")])
        .assert()
        .code(1);
    let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(
        err.contains("8 traces") && err.contains("1 with errors") && err.contains("more with ?offset=6"),
        "{err}"
    );
    let a = tracetui(&front, Some(PASSWORD))
        .args(["check", &src, "--format", "json"])
        .assert()
        .code(1);
    let first = &json_lines(&a.get_output().stdout)[0];
    assert_eq!(first["trace"], "not-a-hex-id");
    assert_eq!(first["diagnostics"][0]["severity"], "error", "{first}");
    // stats counts those runs without LLM calls (no group of their own) and their statuses.
    let a = tracetui(&front, Some(PASSWORD))
        .args(["stats", &src, "--format", "json"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&a.get_output().stdout).unwrap();
    assert_eq!(
        (
            v["runs"]["total"].as_u64(),
            v["runs"]["ok"].as_u64(),
            v["runs"]["unknown"].as_u64()
        ),
        (Some(8), Some(7), Some(1)),
        "{v}"
    );
    let keys: Vec<&str> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(!keys.contains(&""), "{keys:?}");
    // An unreachable store: exit 2, as an unreadable file.
    tracetui(&front, Some(PASSWORD))
        .args(["check", "clickhouse://127.0.0.1:1/otel"])
        .assert()
        .code(2);
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

/// The run's id in `ls --format json` rows, by their root's agent name order (newest first).
fn ls_rows(front: &Front) -> Vec<Value> {
    let a = tracetui(front, Some(PASSWORD))
        .args(["ls", &front.url(""), "--format", "json"])
        .assert()
        .success();
    json_lines(&a.get_output().stdout)
}

/// `text` with the store's URL of a run and the file's name of it made one placeholder, the
/// "by model" lists sorted (see [`by_model_sorted`]), and what a store cannot keep put aside:
/// the exporter writes every attribute value as a string (`AsString`), so an attribute that
/// was a number in the file (`gen_ai.usage.cache_read.input_tokens: 200`) is the string
/// `"200"` from the store (the token counts themselves are read as numbers either way); an
/// export's trace id is derived from its source's name.
fn same_source(text: &str, front: &Front, ids: &[&str]) -> String {
    // Markdown breaks `@` mentions with a zero-width space.
    let mut t = text.replace("&#8203;", "");
    for id in ids {
        t = t.replace(&front.url(&format!("?trace={id}")), "SOURCE");
        t = t.replace(&format!("{}#{id}", front.store().display()), "SOURCE");
    }
    t = t.replace(&front.store().display().to_string(), "SOURCE");
    for id in ids {
        t = t.replace(&one_run_file(front, id).display().to_string(), "SOURCE");
    }
    let quoted_number = regex::Regex::new(r#"(&quot;|\\"|\")(\d+)(&quot;|\\"|\")"#).unwrap();
    let t = quoted_number.replace_all(&t, "$2");
    let trace_id = regex::Regex::new(r#""traceId":"[0-9a-f]{32}""#).unwrap();
    let t = trace_id.replace_all(&t, r#""traceId":"T""#);
    t.lines()
        .map(|l| match serde_json::from_str::<Value>(l) {
            Ok(mut v) => {
                drop_attribute_segments(&mut v);
                v.to_string()
            }
            Err(_) => by_model_sorted(l),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A JSON diff's word segments of an attribute's change: a number's change in the file
/// (`400 → 0`), a string's from the store (`"400" → "0"`), which is diffed by words.
fn drop_attribute_segments(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.get("path")
                .and_then(Value::as_str)
                .is_some_and(|p| p.contains(".attributes["))
            {
                m.remove("segments");
            }
            m.values_mut().for_each(drop_attribute_segments);
        }
        Value::Array(a) => a.iter_mut().for_each(drop_attribute_segments),
        _ => {}
    }
}

/// The spans of one trace of the store's OTLP/JSON file, in a file of their own.
fn one_run_file(front: &Front, id: &str) -> PathBuf {
    let path = front.dir.path().join(format!("otlp/{id}.json"));
    if !path.exists() {
        let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(front.store()).unwrap()).unwrap();
        for rs in doc["resourceSpans"].as_array_mut().unwrap() {
            for ss in rs["scopeSpans"].as_array_mut().unwrap() {
                ss["spans"].as_array_mut().unwrap().retain(|sp| sp["traceId"] == id);
            }
        }
        std::fs::write(&path, doc.to_string()).unwrap();
    }
    path
}

#[test]
fn store_runs_diff_compare_and_export_as_their_otlp_files() {
    let Some(front) = start() else { return };
    let rows = ls_rows(&front);
    // A run with a failed tool and one without: a diff with something to say.
    let a = rows.iter().find(|r| r["errors"] == 1).unwrap()["id"].as_str().unwrap();
    let b = rows.iter().find(|r| r["errors"] == 0).unwrap()["id"].as_str().unwrap();
    let url = |id: &str| front.url(&format!("?trace={id}"));
    let file = |id: &str| format!("{}#{id}", front.store().display());
    let run = |args: &[String], password: Option<&str>| {
        let o = tracetui(&front, password).args(args).output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stdout).to_string())
    };

    // diff, text and json: the same report but for the sources' names.
    for fmt in [&[][..], &["--format".to_string(), "json".to_string()][..]] {
        let mut args = vec!["diff".to_string(), url(a), url(b)];
        args.extend(fmt.iter().cloned());
        let (code, remote) = run(&args, Some(PASSWORD));
        let mut args = vec!["diff".to_string(), file(a), file(b)];
        args.extend(fmt.iter().cloned());
        let (fcode, local) = run(&args, None);
        assert_eq!(code, fcode, "exit codes: {remote}");
        assert!(code.is_some_and(|c| c <= 1), "{remote}");
        assert!(!remote.trim().is_empty());
        assert_eq!(
            same_source(&remote, &front, &[a, b]),
            same_source(&local, &front, &[a, b]),
            "diff {fmt:?}"
        );
        assert!(
            remote.contains(&url(a)) && remote.contains(&url(b)),
            "named by their URLs: {remote}"
        );
    }
    // A store run against a file.
    let (code, mixed) = run(
        &["diff".into(), url(a), file(b), "--format".into(), "json".into()],
        Some(PASSWORD),
    );
    let (_, local) = run(
        &["diff".into(), file(a), file(b), "--format".into(), "json".into()],
        None,
    );
    assert!(code.is_some_and(|c| c <= 1));
    assert_eq!(
        same_source(&mixed, &front, &[a, b]),
        same_source(&local, &front, &[a, b])
    );

    // compare: the pair verdict and its costs.
    let (code, remote) = run(
        &[
            "compare".into(),
            "--baseline".into(),
            url(a),
            "--current".into(),
            url(b),
            "--format".into(),
            "json".into(),
        ],
        Some(PASSWORD),
    );
    // (compare takes no `FILE#ID`: each run in a file of its own.)
    let (fa, fb) = (one_run_file(&front, a), one_run_file(&front, b));
    let (fcode, local) = run(
        &[
            "compare".into(),
            "--baseline".into(),
            fa.display().to_string(),
            "--current".into(),
            fb.display().to_string(),
            "--format".into(),
            "json".into(),
        ],
        None,
    );
    assert_eq!(code, fcode);
    assert_eq!(
        same_source(&remote, &front, &[a, b]),
        same_source(&local, &front, &[a, b])
    );

    // export to every target: the same document (export's own sanitizing applied to both).
    for to in ["otlp-json", "markdown", "html"] {
        let (code, remote) = run(&["export".into(), url(a), "--to".into(), to.into()], Some(PASSWORD));
        assert_eq!(code, Some(0), "{to}");
        let (_, local) = run(
            &[
                "export".into(),
                front.store().display().to_string(),
                "--run".into(),
                a.into(),
                "--to".into(),
                to.into(),
            ],
            None,
        );
        assert!(!remote.is_empty());
        assert_eq!(
            same_source(&remote, &front, &[a]),
            same_source(&local, &front, &[a]),
            "export --to {to}"
        );
    }

    // Prices: `show`'s cost and tokens by model of each run are the file's (the list's,
    // ClickHouse's sums, are checked against the file's by the first test).
    for id in [a, b] {
        let (code, remote) = run(
            &["show".into(), url(id), "--format".into(), "json".into()],
            Some(PASSWORD),
        );
        assert_eq!(code, Some(0));
        let (_, local) = run(
            &[
                "show".into(),
                one_run_file(&front, id).display().to_string(),
                "--format".into(),
                "json".into(),
            ],
            None,
        );
        let (r, l): (Value, Value) = (
            serde_json::from_str(&remote).unwrap(),
            serde_json::from_str(&local).unwrap(),
        );
        let (r, l) = (&r["trace"], &l["trace"]);
        assert!(r["cost_usd_micros"].as_u64().is_some_and(|c| c > 0), "{r}");
        for k in ["cost_usd_micros", "cost_unknown_calls", "tokens_by_kind"] {
            assert_eq!(r[k], l[k], "{id}: {k}");
        }
        // By model, in the order of first use (which the Collector's batching decides).
        let by_model = |v: &Value| {
            let mut m: Vec<String> = v["cost_by_model"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.to_string())
                .collect();
            m.sort();
            m
        };
        assert_eq!(by_model(r), by_model(l), "{id}: cost by model");
    }

    // A URL without ?trace= says which is missing; a bad one never echoes a password.
    let o = tracetui(&front, Some(PASSWORD))
        .args(["diff", &front.url(""), &url(b)])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("?trace=ID"), "{o:?}");
    let bad = format!(
        "clickhouse://default:{PASSWORD}@127.0.0.1:{}/otel?trace={a}",
        front.port
    );
    let o = tracetui(&front, None)
        .args(["export", &bad, "--to", "markdown"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.contains(PASSWORD) && err.contains("TRACETUI_CLICKHOUSE_PASSWORD"),
        "{err}"
    );
}

// ---- The explorer on the store, in a real terminal (tmux/mod.rs, as tests/tui_tmux.rs drives it).

/// The shell command that opens the explorer on `url`, with the test's home and password.
fn explorer_command(front: &Front, url: &str, password: &str) -> String {
    let home = front.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    format!(
        "env HOME={h} XDG_CONFIG_HOME={h}/.config XDG_CACHE_HOME={h}/.cache TRACETUI_CLICKHOUSE_PASSWORD={password} {bin} '{url}'",
        h = home.display(),
        bin = env!("CARGO_BIN_EXE_tracetui"),
    )
}

/// Insert spans (store.spans()'s form) as the Collector would, apart from tracetui's queries.
fn insert_spans(front: &Front, spans: Value) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let r = reqwest::blocking::Client::new()
        .post(format!("http://127.0.0.1:{}/_test/insert", front.port))
        .body(spans.to_string())
        .send()
        .unwrap();
    assert!(r.status().is_success(), "{:?}", r.text());
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// An LLM call of `trace`, ended a moment ago, under its root (`<trace's 1st byte>…0001`).
fn llm_span(trace: &str, span: &str, parent: &str, model: &str, input: u64) -> Value {
    let end = now_ns() - 1_000_000_000;
    serde_json::json!({
        "trace": trace, "span": span, "parent": parent, "name": format!("chat {model}"),
        "service": "coder", "kind": 3, "start": end - 2_000_000_000, "end": end, "status": 0,
        "message": "", "events": [],
        "attrs": {"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
                  "gen_ai.request.model": model, "gen_ai.response.model": model,
                  "gen_ai.usage.input_tokens": input, "gen_ai.usage.output_tokens": 100}
    })
}

#[test]
fn the_explorer_browses_the_store_as_ls_lists_it_and_follows_inserts() {
    let Some(front) = start() else { return };
    if !tmux::available() {
        eprintln!("SKIPPED: the explorer test needs tmux");
        return;
    }
    let t = Tmux::start_sized(160, 45);
    let rows = ls_rows(&front);
    let costs = ls_costs(&front);
    t.type_line(&explorer_command(&front, &front.url(""), PASSWORD));
    let list = t.wait_for("the store's runs", |s| s.contains("runs 6 "));
    // A row by its start (its name is the same for all; the id is cut to the column).
    let started = |r: &Value| r["start"].as_str().unwrap()[..19].replace('T', " ");
    // Every run with the numbers `ls` computed in ClickHouse: its tokens and cost.
    for r in &rows {
        let id = r["id"].as_str().unwrap();
        let line = list
            .lines()
            .find(|l| l.contains(&started(r)))
            .unwrap_or_else(|| panic!("{id} not listed:\n{list}"));
        let tokens = thousands(r["tokens"].as_u64().unwrap());
        assert!(line.contains(&tokens), "{id}: {tokens} tokens?\n{line}");
        let dollars = &costs[id];
        assert!(line.contains(dollars.as_str()), "{id}: {dollars}?\n{line}");
    }
    assert!(!list.contains(PASSWORD));
    // The newest first, opened with Enter: its tree, fetched in the background.
    let newest = rows[0]["id"].as_str().unwrap().to_string();
    let row_of = |screen: &str, r: &Value| screen.lines().position(|l| l.contains(&started(r))).unwrap();
    assert!(
        rows.windows(2).all(|w| row_of(&list, &w[0]) < row_of(&list, &w[1])),
        "newest first:\n{list}"
    );
    t.keys(&["Enter"]);
    let opened = t.wait_for("the run's tree", |s| {
        s.contains("execute_tool search") || s.contains("search_")
    });
    // Its header names the store's format, as the list did (its spans are read as OTLP).
    assert!(opened.contains("format clickhouse"), "{opened}");
    // A span inserted while the run is open appears in it.
    // store.py's ids: trace `0xA1000 + t`, its root span `(t + 1) << 16 | 1`.
    let t_index = u64::from_str_radix(&newest[16..], 16).unwrap() - 0xA1000;
    let root = format!("{:016x}", ((t_index + 1) << 16) | 1);
    insert_spans(
        &front,
        serde_json::json!([llm_span(&newest, "00000000feed0001", &root, "gpt-4o", 777)]),
    );
    t.wait_for("the inserted span in the open run", |s| s.contains("877 tok"));
    // Back in the list, its row has grown as `ls` says it has now.
    t.keys(&["Escape"]);
    let grown = ls_rows(&front);
    let g = grown.iter().find(|r| r["id"] == newest.as_str()).unwrap();
    assert_eq!(g["tokens"].as_u64(), rows[0]["tokens"].as_u64().map(|n| n + 877));
    let want = thousands(g["tokens"].as_u64().unwrap());
    let cost = ls_costs(&front)[newest.as_str()].clone();
    t.wait_for("the grown row", |s| {
        s.lines()
            .any(|l| l.contains(&started(&rows[0])) && l.contains(&want) && l.contains(&cost))
    });
    // A trace begun now is listed at the top.
    let fresh = "00000000000000000000000000c0ffee";
    insert_spans(
        &front,
        serde_json::json!([llm_span(fresh, "00000000c0ffee01", "", "gpt-4o", 500)]),
    );
    let s = t.wait_for("the new trace", |s| s.contains("runs 7 "));
    let top = s
        .lines()
        .position(|l| l.contains("chat gpt-4o"))
        .expect("the new trace listed");
    assert!(top < row_of(&s, &rows[0]), "a new trace at the top:\n{s}");
    t.keys(&["q"]);
    t.assert_restored();

    // Pages: two runs a page, the next asked for as the list's end comes into view.
    t.type_line(&explorer_command(&front, &front.url("?limit=2"), PASSWORD));
    t.wait_for("every page", |s| s.contains("runs 7 "));
    t.keys(&["q"]);
    t.assert_restored();
    let log = std::fs::read_to_string(front.dir.path().join("queries.jsonl")).unwrap();
    assert!(
        log.contains("LIMIT 2 OFFSET 2") && log.contains("LIMIT 2 OFFSET 4"),
        "pages asked"
    );
    for l in log.lines() {
        let q: Value = serde_json::from_str(l).unwrap();
        assert_eq!(q["params"]["readonly"], "1", "{q}");
        assert!(q["query"].as_str().unwrap().contains("LIMIT"), "{q}");
    }

    // A wrong password: the server's refusal on the list, and the terminal back.
    t.type_line(&explorer_command(&front, &front.url(""), "wrong-one"));
    let s = t.wait_for("the refusal", |s| s.contains("Authentication failed"));
    assert!(!s.contains("wrong-one"));
    t.keys(&["q"]);
    t.assert_restored();
}

/// `ls`'s COST column by run id, as the list shows costs.
fn ls_costs(front: &Front) -> HashMap<String, String> {
    let a = tracetui(front, Some(PASSWORD))
        .args(["ls", &front.url("")])
        .assert()
        .success();
    String::from_utf8_lossy(&a.get_output().stdout)
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (id, cost) = (f.last()?, f.get(f.len().checked_sub(2)?)?);
            Some((id.to_string(), cost.to_string()))
        })
        .collect()
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
