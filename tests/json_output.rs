//! Every `--format json` output with hostile strings and a path that is not UTF-8: it never
//! panics, every line is JSON, nothing a terminal acts on is written raw (serde_json escapes
//! only C0), paths are lossy and say so, times are RFC 3339 UTC with milliseconds.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A tool name and run name with a C1 CSI, bidi override, line separator, DEL and ESC.
const HOSTILE: &str = "t\u{9b}31m\u{202e}x\u{2028}y\u{7f}z\u{1b}[2J\u{2066}";

fn run_dir(parent: &Path, name: &std::ffi::OsStr) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let esc = |s: &str| serde_json::to_string(s).unwrap();
    let lines = [
        format!(
            r#"{{"spec_version":"0.1","event_id":"e1","run_id":"r1","parent_id":null,"event_type":"RUN_START","ts":"2026-02-15T20:31:05.123Z","duration_ms":0,"name":"run","payload":{{"run_name":{}}},"meta":{{}}}}"#,
            esc(HOSTILE)
        ),
        format!(
            r#"{{"spec_version":"0.1","event_id":"e2","run_id":"r1","parent_id":"e1","event_type":"TOOL_CALL","ts":"2026-02-15T20:31:06.000Z","duration_ms":5,"name":{0},"payload":{{"tool_name":{0},"args":{{"q":{0}}},"result":{0},"status":"ok"}},"meta":{{}}}}"#,
            esc(HOSTILE)
        ),
        "{not json}".to_string(),
    ];
    std::fs::write(dir.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
    dir
}

fn check_output(what: &str, stdout: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(stdout).unwrap_or_else(|e| panic!("{what}: output is not UTF-8: {e}"));
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| (c.is_control() && c != '\n') || tracetui::json::needs_escape(c))
        .collect();
    assert!(bad.is_empty(), "{what}: raw {bad:?} in {text}");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {l}")))
        .collect()
}

fn tracetui(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let out = Command::cargo_bin("tracetui")
        .unwrap()
        .args(args)
        .env("NO_COLOR", "1")
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    assert_ne!(
        out.status.code(),
        Some(101),
        "panicked: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[cfg(unix)]
#[test]
fn every_json_output_escapes_what_serde_leaves_raw_and_survives_non_utf8_paths() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().unwrap();
    let a = run_dir(tmp.path(), std::ffi::OsStr::from_bytes(b"run-\xff\xfe-a"));
    let b = run_dir(tmp.path(), std::ffi::OsStr::from_bytes(b"run-b"));
    let json = std::ffi::OsStr::new("json");

    let out = tracetui(&["check".as_ref(), "--format".as_ref(), json, a.as_os_str()]);
    assert_eq!(out.status.code(), Some(1), "a bad line is a diagnostic: exit 1");
    let v = check_output("check", &out.stdout);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0]["path_lossy"], true, "{}", v[0]);
    assert!(v[0]["path"].as_str().unwrap().contains("run-\u{fffd}\u{fffd}-a"));
    assert_eq!(v[0]["diagnostics"][0]["line"], 3);
    assert_eq!(v[0]["name"], HOSTILE, "the same value, spelled safely");

    let out = tracetui(&["show".as_ref(), "--format".as_ref(), json, a.as_os_str()]);
    let v = check_output("show", &out.stdout);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0]["trace"]["source_lossy"], true);
    assert_eq!(v[0]["trace"]["start"], "2026-02-15T20:31:05.123Z");
    let tool = &v[0]["events"][1];
    assert_eq!(tool["name"], HOSTILE);
    assert_eq!(tool["input"]["q"], HOSTILE);
    assert_eq!(tool["start"], "2026-02-15T20:31:06.000Z");
    assert_eq!(v[0]["diagnostics"][0]["path_lossy"], true);

    let out = tracetui(&["ls".as_ref(), "--format".as_ref(), json, tmp.path().as_os_str()]);
    let v = check_output("ls", &out.stdout);
    assert_eq!(v.len(), 2, "{v:?}");
    let lossy: Vec<&Value> = v.iter().filter(|r| r["path_lossy"] == true).collect();
    assert_eq!(lossy.len(), 1, "{v:?}");
    assert!(v.iter().all(|r| r["start"] == "2026-02-15T20:31:05.123Z"), "{v:?}");

    let out = tracetui(&["diff".as_ref(), "--format".as_ref(), json, a.as_os_str(), b.as_os_str()]);
    let v = check_output("diff", &out.stdout);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0]["baseline"]["source_lossy"], true);
}

#[test]
fn a_path_that_is_not_a_trace_is_json_too() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("notes\u{202e}.txt");
    std::fs::write(&p, "hello\n").unwrap();
    let out = tracetui(&["check".as_ref(), "--format".as_ref(), "json".as_ref(), p.as_os_str()]);
    let v = check_output("check", &out.stdout);
    assert_eq!(v.len(), 1);
    assert!(v[0]["format"].is_null());
    assert!(v[0]["error"].as_str().is_some());
}

mod arbitrary {
    //! Arbitrary strings and paths through every JSON writer, in process: each output is one
    //! line of valid JSON with nothing raw that a terminal acts on, and reads back the same.
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use tracetui::model::*;

    fn inert(out: &str) -> Result<Vec<Value>, TestCaseError> {
        prop_assert!(
            !out.chars()
                .any(|c| (c.is_control() && c != '\n') || tracetui::json::needs_escape(c)),
            "raw in {out:?}"
        );
        out.lines()
            .map(|l| serde_json::from_str(l).map_err(|e| TestCaseError::fail(format!("{e}: {l}"))))
            .collect()
    }

    #[cfg(unix)]
    fn path_of(bytes: &[u8]) -> std::path::PathBuf {
        use std::os::unix::ffi::OsStrExt;
        std::path::PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
    }

    fn trace(name: &str, tool: &str, arg: &str, path: &std::path::Path) -> Trace {
        let mut t = Trace::new(RunMeta {
            id: name.to_string(),
            name: Some(name.to_string()),
            format: "agentdbg",
            source: path.to_path_buf(),
            ..Default::default()
        });
        let root = t.add(NewEvent {
            id: Some(name),
            start: Some(1_771_187_465_123_000_000),
            ..NewEvent::new(EventKind::Run, name)
        });
        t.add(NewEvent {
            id: Some(tool),
            parent: Parent::Index(root),
            start: Some(1_771_187_466_000_000_000),
            duration: Some(5_000_000),
            status: Status::Ok,
            payload: PayloadRef::inline(Payload {
                input: Some(json!({ arg: arg })),
                output: Some(Value::String(arg.to_string())),
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::ToolCall, tool)
        });
        t.diagnostics.push(Diagnostic::error(path, Some(3), arg));
        t.finalize();
        t
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[cfg(unix)]
        #[test]
        fn every_json_writer_is_inert_and_faithful(
            name in any::<String>(),
            tool in any::<String>(),
            arg in any::<String>(),
            path in prop::collection::vec(any::<u8>(), 1..40),
        ) {
            let p = path_of(&path);
            let t = trace(&name, &tool, &arg, &p);

            let mut out = Vec::new();
            tracetui::json::write_line(&mut out, &tracetui::report::check::trace_json(&t)).unwrap();
            let v = inert(&String::from_utf8(out).unwrap())?;
            prop_assert_eq!(&v[0]["name"], &Value::String(name.clone()));
            prop_assert_eq!(&v[0]["diagnostics"][0]["message"], &Value::String(arg.clone()));

            let mut out = Vec::new();
            tracetui::report::show::write_json(&t, &mut out).unwrap();
            let v = inert(&String::from_utf8(out).unwrap())?;
            prop_assert_eq!(v.len(), 1);
            prop_assert_eq!(&v[0]["events"][1]["name"], &Value::String(tool.clone()));
            prop_assert_eq!(&v[0]["events"][1]["input"][&arg], &Value::String(arg.clone()));
            prop_assert_eq!(v[0]["trace"]["source_lossy"] == true, p.to_str().is_none());

            let mut out = Vec::new();
            tracetui::json::write_line(&mut out, &tracetui::source::summary::of(&t)).unwrap();
            inert(&String::from_utf8(out).unwrap())?;

            let d = tracetui::diff::diff(&t, &t, &Default::default());
            let mut out = Vec::new();
            tracetui::json::write_line(&mut out, &tracetui::report::diff::to_json(&d, &t, &t)).unwrap();
            inert(&String::from_utf8(out).unwrap())?;
        }
    }
}
