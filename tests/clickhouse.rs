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
            err.contains("clickhouse:// sources work with ls, show, "),
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

// ---- The explorer on the store, in a real terminal (tmux), as tests/tui_tmux.rs drives it.

struct Tmux {
    socket: String,
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

const PROMPT: &str = "E2E$";

impl Tmux {
    /// None (the test skips, saying so) without tmux.
    fn start(w: u16, h: u16) -> Option<Tmux> {
        let has = std::process::Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        if !has {
            eprintln!("SKIPPED: the explorer test needs tmux");
            return None;
        }
        let t = Tmux {
            socket: format!("tracetui-ch-{}", std::process::id()),
        };
        let shell = format!("env PS1='{PROMPT} ' HISTFILE=/dev/null bash --norc --noprofile -i");
        t.ok(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "e2e",
            "-x",
            &w.to_string(),
            "-y",
            &h.to_string(),
            &shell,
        ]);
        t.ok(&["set-option", "-s", "escape-time", "0"]);
        t.wait_for("the shell prompt", |s| s.contains(PROMPT));
        Some(t)
    }

    fn ok(&self, args: &[&str]) -> String {
        let o = std::process::Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        assert!(
            o.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.ok(&["capture-pane", "-p", "-t", "e2e"])
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.ok(&["send-keys", "-t", "e2e", k]);
            std::thread::sleep(std::time::Duration::from_millis(if *k == "Escape" { 150 } else { 40 }));
        }
    }

    fn type_line(&self, text: &str) {
        self.ok(&["send-keys", "-t", "e2e", "-l", text]);
        self.ok(&["send-keys", "-t", "e2e", "Enter"]);
    }

    /// The screen once `pred` holds on it and it holds still; the deadline only catches hangs.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = std::time::Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                std::thread::sleep(std::time::Duration::from_millis(200));
                if self.screen() == s {
                    return s;
                }
                continue;
            }
            if start.elapsed() > std::time::Duration::from_secs(90) {
                panic!("timed out waiting for {what}; the screen:\n{s}");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    fn assert_restored(&self) {
        self.wait_for("the shell prompt after quitting", |s| {
            s.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.starts_with(PROMPT))
        });
        assert_eq!(
            self.ok(&["display-message", "-p", "-t", "e2e", "#{alternate_on}"])
                .trim(),
            "0"
        );
    }
}

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
fn insert(front: &Front, spans: Value) {
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
    let Some(t) = Tmux::start(160, 45) else { return };
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
    t.wait_for("the run's tree", |s| {
        s.contains("execute_tool search") || s.contains("search_")
    });
    // A span inserted while the run is open appears in it.
    // store.py's ids: trace `0xA1000 + t`, its root span `(t + 1) << 16 | 1`.
    let t_index = u64::from_str_radix(&newest[16..], 16).unwrap() - 0xA1000;
    let root = format!("{:016x}", ((t_index + 1) << 16) | 1);
    insert(
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
    insert(
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
