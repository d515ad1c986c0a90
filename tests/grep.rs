//! `tracetui grep` (issue 18): decoded-text matches, every format, filters, exit codes.

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use tracetui::search::grep::{Options, Pattern, search_source, source_files};

fn bin() -> Command {
    Command::cargo_bin("tracetui").unwrap()
}

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces")
}

/// An AgentDbg run whose tool result holds JSON escapes: `\n`, `\"`, `\u00e9`, `\/`.
fn escaped_run(dir: &Path) -> PathBuf {
    let run = dir.join("run-esc");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(
        run.join("run.json"),
        r#"{"spec_version": "0.1", "run_id": "r1", "run_name": "esc", "started_at": "2026-01-01T00:00:00Z", "status": "ok"}"#,
    )
    .unwrap();
    let lines = [
        r#"{"spec_version": "0.1", "event_id": "e1", "run_id": "r1", "parent_id": null, "event_type": "RUN_START", "ts": "2026-01-01T00:00:00.000Z", "duration_ms": null, "name": "esc", "payload": {"run_name": "esc"}, "meta": {}}"#,
        r#"{"spec_version": "0.1", "event_id": "e2", "run_id": "r1", "parent_id": null, "event_type": "LLM_CALL", "ts": "2026-01-01T00:00:01.000Z", "duration_ms": 5, "name": "gpt-4o", "payload": {"model": "gpt-4o", "prompt": "plan the fix", "response": "ok"}, "meta": {}}"#,
        r#"{"spec_version": "0.1", "event_id": "e3", "run_id": "r1", "parent_id": "e2", "event_type": "TOOL_CALL", "ts": "2026-01-01T00:00:02.000Z", "duration_ms": 7, "name": "read_file", "payload": {"tool_name": "read_file", "args": {"path": "src\/main.rs"}, "result": "line one\nline two \"quoted\" caf\u00e9 au lait", "status": "ok"}, "meta": {}}"#,
        r#"{"spec_version": "0.1", "event_id": "e4", "run_id": "r1", "parent_id": "e2", "event_type": "TOOL_CALL", "ts": "2026-01-01T00:00:03.000Z", "duration_ms": 7, "name": "bash", "payload": {"tool_name": "bash", "args": {"cmd": "make"}, "result": null, "status": "error", "error": {"type": "Exit", "message": "make failed: line two"}}, "meta": {}}"#,
    ];
    std::fs::write(run.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
    run
}

fn grep(args: &[&str]) -> (i32, String) {
    let out = bin().arg("grep").args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn escapes_in_the_file_do_not_hide_a_match() {
    let d = tempfile::tempdir().unwrap();
    let run = escaped_run(d.path());
    let r = run.to_str().unwrap();
    // Across `\n` in the file: the pattern holds a real newline.
    let (code, out) = grep(&["one\nline two", r]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("tool read_file"), "{out}");
    assert!(out.contains("[one\\nline two]"), "the newline shown escaped: {out}");
    for p in ["café au", "\"quoted\"", "src/main.rs"] {
        let (code, out) = grep(&[p, r]);
        assert_eq!(code, 0, "{p}: {out}");
        assert_eq!(out.lines().count(), 1, "{p}: {out}");
    }
    let (code, _) = grep(&["--regex", r"one\nline", r]);
    assert_eq!(code, 0);
    let (code, _) = grep(&["-i", "CAFÉ", r]);
    assert_eq!(code, 0);
}

#[test]
fn a_pattern_only_inside_an_escape_is_no_match() {
    let d = tempfile::tempdir().unwrap();
    let run = escaped_run(d.path());
    let r = run.to_str().unwrap();
    // In the file's bytes (`one\nline`, `caf\u00e9`, `\"quoted`, `src\/main`), not in the text.
    for p in ["nline", "u00e9", "\\\"quoted", "src\\/main", "one\\nline"] {
        let (code, out) = grep(&[p, r]);
        assert_eq!(code, 1, "{p}: {out}");
        assert!(out.is_empty(), "{p}: {out}");
    }
}

#[test]
fn output_names_the_event_its_path_field_and_line() {
    let d = tempfile::tempdir().unwrap();
    let run = escaped_run(d.path());
    let (code, out) = grep(&["line two", run.to_str().unwrap()]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].contains("events.jsonl:3: tool read_file (gpt-4o › read_file) result: "),
        "{out}"
    );
    assert!(
        lines[1].contains("events.jsonl:4: tool bash (gpt-4o › bash) error: make failed: [line two]"),
        "{out}"
    );

    let out = bin()
        .args(["grep", "--format", "json", "line two", run.to_str().unwrap()])
        .output()
        .unwrap();
    let rows: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["format"], "agentdbg");
    assert_eq!(rows[0]["event_id"], "e3");
    assert_eq!(rows[0]["line"], 3);
    assert_eq!(rows[0]["field"], "result");
    assert_eq!(rows[0]["path"], serde_json::json!(["gpt-4o", "read_file"]));
    assert!(rows[0]["run"].as_str().unwrap().ends_with("run-esc"));
    assert!(rows[0]["file"].as_str().unwrap().ends_with("events.jsonl"));
    let sn = rows[1]["snippet"].as_str().unwrap();
    let m = rows[1]["match"].as_array().unwrap();
    let chars: Vec<char> = sn.chars().collect();
    let (a, b) = (m[0].as_u64().unwrap() as usize, m[1].as_u64().unwrap() as usize);
    assert_eq!(chars[a..b].iter().collect::<String>(), "line two");
}

#[test]
fn filters_combine_with_the_pattern() {
    let d = tempfile::tempdir().unwrap();
    let run = escaped_run(d.path());
    let r = run.to_str().unwrap();
    let count = |args: &[&str]| {
        let mut a = vec!["line two", r];
        a.extend_from_slice(args);
        let (code, out) = grep(&a);
        (code, out.lines().count())
    };
    assert_eq!(count(&[]), (0, 2));
    assert_eq!(count(&["--filter", "status:error"]), (0, 1));
    assert_eq!(count(&["--filter", "tool:read"]), (0, 1));
    assert_eq!(count(&["--filter", "tool:bash !status:error"]), (1, 0));
    assert_eq!(count(&["--filter", "kind:llm"]), (1, 0));
    assert_eq!(
        count(&["--filter", "kind:tool quoted"]),
        (0, 1),
        "free text in the filter searches payloads"
    );
    assert_eq!(count(&["--max-count", "1"]), (0, 1));
    // The name is searched too, and case folds with -i.
    let (code, out) = grep(&["-i", "READ_FILE", r]);
    assert_eq!((code, out.lines().count()), (0, 1), "{out}");
}

#[test]
fn exit_codes_follow_grep() {
    let d = tempfile::tempdir().unwrap();
    let run = escaped_run(d.path());
    let r = run.to_str().unwrap();
    assert_eq!(grep(&["caf", r]).0, 0);
    assert_eq!(grep(&["no such words here", r]).0, 1);
    assert_eq!(grep(&["caf", "/nonexistent/tracetui-grep"]).0, 2, "unreadable path");
    assert_eq!(grep(&["--regex", "(", r]).0, 2, "bad regex");
    assert_eq!(grep(&["caf", r, "--filter", "status:meh"]).0, 2, "bad filter");
    // Found in one PATH, trouble with another: trouble wins, as in grep.
    assert_eq!(grep(&["caf", r, "/nonexistent/tracetui-grep"]).0, 2);
}

#[test]
fn no_path_searches_the_current_directory_when_no_place_exists() {
    let d = tempfile::tempdir().unwrap();
    escaped_run(d.path());
    let home = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["grep", "au lait"])
        .current_dir(d.path())
        .env("HOME", home.path())
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("CODEX_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("read_file"));
}

/// Every format's sample: a word taken from some event's decoded payload is found in that
/// event, with and without the raw prefilter's help; and the files a load reads are the files
/// the raw scan looked at (else a source could be ruled out wrongly).
#[test]
fn every_format_sample_is_searched() {
    let d = tracetui::source::discover(&[samples()], None);
    assert!(d.runs.len() > 15);
    let mut formats = std::collections::BTreeSet::new();
    for run in &d.runs {
        let loaded = run.load().unwrap();
        let scanned = source_files(&run.path);
        for t in &loaded.traces {
            if !["opencode", "cursor", "cline"].contains(&t.meta.format) {
                for f in &t.files {
                    let f = std::fs::canonicalize(f).unwrap();
                    assert!(
                        scanned.iter().any(|s| std::fs::canonicalize(s).unwrap() == f),
                        "{}: {} read but not scanned",
                        run.path.display(),
                        f.display()
                    );
                }
            }
            // A word of 6+ letters from a decoded payload string of some event.
            let mut word = None;
            for i in 0..t.len() as u32 {
                let p = tracetui::formats::payload(t, t.event(i));
                let text = serde_json::to_string(&p.output).unwrap() + &serde_json::to_string(&p.input).unwrap();
                let v: Vec<serde_json::Value> = [p.input, p.output].into_iter().flatten().collect();
                let mut strings = Vec::new();
                collect_strings(&serde_json::Value::Array(v), &mut strings);
                if let Some(w) = strings
                    .iter()
                    .flat_map(|s| s.split(|c: char| !c.is_ascii_alphabetic()))
                    .find(|w| w.len() >= 6)
                {
                    assert!(text.contains(w));
                    word = Some((i, w.to_string()));
                    break;
                }
            }
            let Some((event, w)) = word else { continue };
            for regex in [false, true] {
                let o = Options {
                    pattern: Pattern::new(&w, false, regex).unwrap(),
                    filter: None,
                    max_count: None,
                };
                let res = search_source(run, &o).unwrap();
                let found = res
                    .traces
                    .iter()
                    .filter(|th| th.trace.meta.id == t.meta.id)
                    .flat_map(|th| th.hits.iter())
                    .any(|h| h.event == event);
                assert!(
                    found,
                    "{} ({}): {w:?} not found in event {event}",
                    run.path.display(),
                    t.meta.format
                );
            }
            formats.insert(t.meta.format);
        }
    }
    assert!(formats.len() >= 15, "{formats:?}");
}

fn collect_strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

#[test]
fn grep_over_all_samples_finds_every_format() {
    let out = bin()
        .args(["grep", "--format", "json", "-i", "--regex", "the|careful"])
        .arg(samples())
        .output()
        .unwrap();
    let fmts: std::collections::BTreeSet<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["format"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    for f in [
        "agentdbg",
        "maida",
        "assay",
        "openai-chat",
        "claude-code",
        "codex",
        "otlp-json",
        "gemini-cli",
        "opencode",
        "copilot-cli",
        "cursor",
        "cline",
        "aider",
        "inspect-ai",
        "swe-agent",
        "openhands",
    ] {
        assert!(fmts.contains(f), "{f} missing from {fmts:?}");
    }
}

/// Issue 37: a pattern of 8,000 capture groups asked for a 10 GB matcher cache (capture slots
/// x NFA states) and was killed for its memory. Only the match span is used: groups compile
/// as non-capturing, and the search runs under a 2 GiB address-space limit.
#[test]
fn a_pattern_of_thousands_of_groups_stays_small() {
    use std::os::unix::process::CommandExt;
    let d = tempfile::tempdir().unwrap();
    let run = escaped_run(d.path());
    let pattern = format!("{}line two", "(a?)".repeat(8_000));
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_tracetui"));
    c.args(["grep", "--regex", &pattern]).arg(&run);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        c.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = c.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("line two"), "{stdout}");
}
