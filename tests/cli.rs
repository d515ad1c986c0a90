//! The non-interactive commands as a user runs them, on the shipped sample traces.

use assert_cmd::Command;
use serde_json::Value;

fn tracetui() -> Command {
    Command::cargo_bin("tracetui").unwrap()
}

/// Run with these arguments, expect this exit code, return stdout.
fn stdout_of(args: &[&str], code: i32) -> Vec<u8> {
    tracetui().args(args).assert().code(code).get_output().stdout.clone()
}

fn json_lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect()
}

#[test]
fn check_a_clean_run_exits_0_with_counts() {
    let out = stdout_of(
        &["check", "--format", "json", "sample-traces/runs/agentdbg-refund-ok"],
        0,
    );
    let v = json_lines(&out);
    assert_eq!(v.len(), 1);
    let o = &v[0];
    assert_eq!(o["format"], "agentdbg");
    assert_eq!(o["trace"], "5f0c2a9e-1b7d-4c3e-9a51-0d2f6b8e4a11");
    assert_eq!(o["events"], 5);
    assert_eq!(o["tool_calls"], 2);
    assert_eq!(o["llm_calls"], 2);
    assert_eq!(o["errors"], 0);
    assert_eq!(o["diagnostics"], serde_json::json!([]));
}

#[test]
fn check_a_damaged_file_reports_lines_and_still_loads() {
    let out = stdout_of(&["check", "--format", "json", "sample-traces/damaged/events.jsonl"], 1);
    let v = json_lines(&out);
    assert_eq!(v[0]["tool_calls"], 1, "the lines around the bad one loaded");
    assert_eq!(v[0]["llm_calls"], 1);
    let d = v[0]["diagnostics"].as_array().unwrap();
    assert_eq!(d[0]["line"], 3);
    assert_eq!(d[0]["severity"], "error");
    assert_eq!(d[1]["line"], 5);
    assert_eq!(
        d[1]["severity"], "warning",
        "a cut last line is a run still writing, not corruption"
    );
}

#[test]
fn check_a_file_that_is_no_trace_names_it_and_the_formats_tried() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("notes.json");
    std::fs::write(&p, r#"{"hello": "world"}"#).unwrap();
    let out = tracetui()
        .args(["check", "--format", "json"])
        .arg(&p)
        .assert()
        .code(2)
        .get_output()
        .stdout
        .clone();
    let v = json_lines(&out);
    assert_eq!(v.len(), 1);
    assert!(v[0]["format"].is_null());
    let err = v[0]["error"].as_str().unwrap();
    assert!(err.contains("notes.json"), "{err}");
    assert!(err.contains("agentdbg") && err.contains("agentsnap"), "{err}");
    assert!(err.contains("`hello`"), "says what it found: {err}");
}

#[test]
fn unreadable_input_and_usage_errors_exit_2() {
    tracetui().args(["check", "no/such/file.jsonl"]).assert().code(2);
    // No PATH and no run in any standard place (an empty HOME and current directory).
    let empty = tempfile::tempdir().unwrap();
    tracetui()
        .args(["check"])
        .env("HOME", empty.path())
        .env("XDG_DATA_HOME", empty.path())
        .env("XDG_CONFIG_HOME", empty.path())
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("GEMINI_CLI_HOME")
        .env_remove("COPILOT_HOME")
        .current_dir(empty.path())
        .assert()
        .code(2)
        .stderr(predicates::str::contains("tracetui sources"));
    tracetui()
        .args(["check", "--format", "nosuchformat", "sample-traces/runs"])
        .assert()
        .code(2);
}

#[test]
fn format_override_names_the_trace_format() {
    // Read an agentsnap file as agentdbg: it is not, and says so, but nothing crashes.
    let out = stdout_of(
        &[
            "check",
            "--format",
            "json",
            "--format",
            "agentdbg",
            "sample-traces/diff/booking.snap.json",
        ],
        1,
    );
    let v = json_lines(&out);
    assert!(v[0]["format"].is_null() || v[0]["diagnostics"].as_array().is_some_and(|d| !d.is_empty()));
    let out = stdout_of(
        &[
            "check",
            "--format",
            "agentsnap",
            "--format",
            "json",
            "sample-traces/diff/booking.snap.json",
        ],
        0,
    );
    assert_eq!(json_lines(&out)[0]["format"], "agentsnap");
}

#[test]
fn show_prints_the_tree_with_args_results_and_errors() {
    let out = stdout_of(&["show", "sample-traces/runs/agentdbg-invoice-error"], 0);
    let s = String::from_utf8(out).unwrap();
    assert!(s.starts_with("agentdbg invoice-mailer [error]"), "{s}");
    assert!(s.contains("└─ run invoice-mailer [error]"), "{s}");
    assert!(s.contains("   └─ llm claude-sonnet-4-5 [ok]"), "{s}");
    assert!(s.contains("      ├─ tool fetch_invoice [ok]"), "{s}");
    assert!(s.contains("tool send_email [error]"), "{s}");
    assert!(s.contains("✗ SMTPAuthenticationError: 535 5.7.8"), "{s}");
    // A tool call's row says what it did: its first short string argument (agentdbg names
    // no tools), then its result.
    assert!(s.contains("tool fetch_invoice [ok] +1.15s 380ms  C-311 → {"), "{s}");
    assert!(
        s.contains("tool send_email [error] +1.59s 3.10s  billing@customer.example  ✗"),
        "{s}"
    );
}

#[test]
fn show_json_is_the_model() {
    let out = stdout_of(
        &["show", "--format", "json", "sample-traces/runs/agentdbg-refund-ok"],
        0,
    );
    let v = &json_lines(&out)[0];
    assert_eq!(v["trace"]["status"], "ok");
    let events = v["events"].as_array().unwrap();
    assert_eq!(events.len(), 5);
    let refund = events.iter().find(|e| e["name"] == "refund_order").unwrap();
    assert_eq!(refund["kind"], "tool");
    assert_eq!(refund["input"]["amount"], "59.90");
    assert_eq!(refund["output"]["refund_id"], "RF-88120");
    let parent = refund["parent"].as_u64().unwrap() as usize;
    assert_eq!(events[parent]["kind"], "llm");
}

#[test]
fn ls_lists_runs_newest_first() {
    let out = stdout_of(&["ls", "sample-traces/runs"], 0);
    let s = String::from_utf8(out).unwrap();
    let names: Vec<&str> = s.lines().skip(1).filter_map(|l| l.split_whitespace().nth(1)).collect();
    let pos = |n: &str| {
        names
            .iter()
            .position(|x| *x == n)
            .unwrap_or_else(|| panic!("{n} in {s}"))
    };
    assert!(pos("research-assistant") < pos("invoice-mailer"));
    assert!(pos("invoice-mailer") < pos("refund-agent"));

    // A run whose run.json says running: running while it is written, stale once nothing has
    // written it for 10 minutes (one rule for the text, the JSON and the explorer).
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("agentdbg-research-running");
    std::fs::create_dir(&run).unwrap();
    for e in std::fs::read_dir("sample-traces/runs/agentdbg-research-running").unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), run.join(e.file_name())).unwrap();
    }
    let d = dir.path().to_str().unwrap();
    let s = String::from_utf8(stdout_of(&["ls", d], 0)).unwrap();
    assert!(s.contains("running  research-assistant"), "{s}");
    let v = json_lines(&stdout_of(&["ls", "--format", "json", d], 0));
    assert_eq!(v[0]["status"], "running");
    assert_eq!(v[0]["tool_calls"], 1, "counted from events while run.json says 0");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for e in std::fs::read_dir(&run).unwrap() {
        let f = std::fs::File::options().write(true).open(e.unwrap().path()).unwrap();
        f.set_modified(old).unwrap();
    }
    // The directory too: a file made in it is a write.
    std::fs::File::open(&run).unwrap().set_modified(old).unwrap();
    let s = String::from_utf8(stdout_of(&["ls", d], 0)).unwrap();
    assert!(s.contains("stale    research-assistant"), "{s}");
    let v = json_lines(&stdout_of(&["ls", "--format", "json", d], 0));
    assert_eq!(v[0]["status"], "stale");
}

#[test]
fn hostile_text_is_escaped_in_text_output() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("hostile.snap.json");
    let doc = serde_json::json!({"version": 1, "tools": [
        {"name": "evil\u{1b}]0;pwned\u{7}", "args": {"x": "\u{1b}[2J\u{9b}31m\u{202e}abc"}, "result_hash": "sha256:00"}
    ]});
    std::fs::write(&p, doc.to_string()).unwrap();
    let out = tracetui()
        .arg("show")
        .arg(&p)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let s = String::from_utf8(out).unwrap();
    assert!(!s.contains('\u{1b}') && !s.contains('\u{9b}') && !s.contains('\u{202e}') && !s.contains('\u{7}'));
    assert!(s.contains("evil\\x1b]0;pwned\\x07"), "{s}");
}

#[test]
fn completions_and_man_page() {
    let out = stdout_of(&["completions", "bash"], 0);
    assert!(String::from_utf8_lossy(&out).contains("tracetui"));
    let out = tracetui().arg("man").assert().code(0).get_output().stdout.clone();
    assert!(String::from_utf8_lossy(&out).contains(".TH"));
}

#[test]
fn dash_reads_standard_input() {
    let input = std::fs::read("sample-traces/runs/agentdbg-refund-ok/events.jsonl").unwrap();
    let out = tracetui()
        .args(["check", "--format", "json", "-"])
        .write_stdin(input)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v = json_lines(&out);
    assert_eq!(v[0]["format"], "agentdbg");
    assert_eq!(v[0]["tool_calls"], 2);
    let out = tracetui()
        .args(["show", "-"])
        .write_stdin(std::fs::read("sample-traces/diff/booking.snap.json").unwrap())
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8_lossy(&out).contains("tool search_restaurants [ok]"));
}

#[test]
fn exit_codes_follow_the_readme_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.json");
    std::fs::write(&notes, r#"{"hello": "world"}"#).unwrap();
    // Not a trace at all: 2, in check and in show alike.
    tracetui().arg("check").arg(&notes).assert().code(2);
    tracetui().arg("show").arg(&notes).assert().code(2);
    // A runs directory where one run cannot be read: ls lists the other and exits 2.
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(runs.join("good")).unwrap();
    std::fs::write(
        runs.join("good/events.jsonl"),
        r#"{"event_id":"e1","run_id":"r1","event_type":"RUN_START","ts":"2026-02-15T20:31:05Z","payload":{}}"#
            .to_string()
            + "\n",
    )
    .unwrap();
    std::fs::create_dir_all(runs.join("broken")).unwrap();
    std::fs::write(runs.join("broken/run.json"), "{\"run_id\": ").unwrap();
    let out = tracetui().arg("ls").arg(&runs).assert().code(2).get_output().clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("r1"), "the readable run is listed: {stdout}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("broken"),
        "the other is named"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn standard_input_leaves_no_file_behind_even_when_killed() {
    let tmp = tempfile::tempdir().unwrap();
    // A pipe that stays open: the process is killed while it waits for the rest of it.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tracetui"))
        .args(["check", "-"])
        .env("TMPDIR", tmp.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write;
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(&std::fs::read("sample-traces/runs/agentdbg-refund-ok/events.jsonl").unwrap())
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    // A file on standard input is read where it is, not copied.
    let out = tracetui()
        .args(["check", "--format", "json", "-"])
        .env("TMPDIR", tmp.path())
        .pipe_stdin("sample-traces/runs/agentdbg-refund-ok/events.jsonl")
        .unwrap()
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    assert_eq!(json_lines(&out)[0]["tool_calls"], 2);
}

#[test]
fn prices_resolve_model_names_and_config_overrides() {
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str], code: i32| {
        tracetui()
            .env("XDG_CONFIG_HOME", home.path())
            .args(args)
            .assert()
            .code(code)
            .get_output()
            .clone()
    };
    // A provider prefix and a date: the maker's published price ($3 / $15 per million).
    let out = run(
        &["prices", "anthropic/claude-sonnet-4-5-20250929", "--format", "json"],
        0,
    );
    let v = &json_lines(&out.stdout)[0];
    assert_eq!((v["input"].as_f64(), v["output"].as_f64()), (Some(3.0), Some(15.0)));
    assert_eq!(v["match"], "spelling");
    assert!(v["source"].as_str().unwrap().contains("LiteLLM"), "{v}");
    // Unknown: exit 1, a note on stderr, never a price of 0.
    let out = run(&["prices", "my-local-model"], 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no price for model"));
    // The user's price wins over the list and adds models.
    let dir = home.path().join("tracetui");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[prices.\"my-local-model\"]\ninput = 0.5\noutput = 1.5\n[prices.\"claude-sonnet-4-5\"]\ninput = 1\noutput = 2\n",
    )
    .unwrap();
    let out = run(&["prices", "my-local-model"], 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("0.5") && text.contains("1.5") && text.contains("config.toml"),
        "{text}"
    );
    let out = run(&["prices", "claude-sonnet-4-5-20250929", "--format", "json"], 0);
    let v = &json_lines(&out.stdout)[0];
    assert_eq!(
        (v["input"].as_f64(), v["output"].as_f64()),
        (Some(1.0), Some(2.0)),
        "{v}"
    );
    // A broken price is an error naming the file.
    std::fs::write(dir.join("config.toml"), "[prices.\"m\"]\ninput = \"cheap\"\n").unwrap();
    let out = run(&["prices"], 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("config.toml"));
}

#[test]
fn ls_shows_a_bundle_whose_content_does_not_match_its_manifest() {
    let out = String::from_utf8(stdout_of(&["ls", "tests/fixtures/assay-bundle/tampered.tar.gz"], 0)).unwrap();
    assert!(out.contains("⚠ content does not match its manifest"), "{out}");
    let out = stdout_of(
        &["ls", "--format", "json", "tests/fixtures/assay-bundle/tampered.tar.gz"],
        0,
    );
    let v = &json_lines(&out)[0];
    assert_eq!(v["badges"], serde_json::json!(["content does not match its manifest"]));
    // A bundle that matches has none.
    let out = stdout_of(
        &["ls", "--format", "json", "tests/fixtures/assay-bundle/decisions.tar.gz"],
        0,
    );
    assert!(json_lines(&out)[0].get("badges").is_none());
}

#[test]
fn every_trace_of_a_dataset_shows_the_datasets_metadata() {
    let out = stdout_of(
        &["show", "--format", "json", "sample-traces/invariant/dataset.jsonl"],
        0,
    );
    let v = json_lines(&out);
    let traces: Vec<&Value> = v.iter().filter_map(|x| x.get("trace")).collect();
    assert!(traces.len() >= 2, "{v:?}");
    for t in traces {
        assert_eq!(
            t["attributes"]["dataset_metadata"]["description"], "Support-agent evaluation traces",
            "{t}"
        );
    }
}
