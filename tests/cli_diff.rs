//! `tracetui diff` end to end: exit codes, text and JSON output, --ignore, --strict, --fail-on.

use assert_cmd::cargo::cargo_bin_cmd;
use predicates::prelude::*;
use serde_json::Value;
use std::path::PathBuf;

fn fx(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/diff")
        .join(rel)
}

fn snap(name: &str) -> PathBuf {
    fx(&format!("agentsnap/{name}"))
}

fn diff(a: &PathBuf, b: &PathBuf, extra: &[&str]) -> assert_cmd::assert::Assert {
    cargo_bin_cmd!("tracetui")
        .env_remove("NO_COLOR")
        .arg("diff")
        .arg(a)
        .arg(b)
        .args(extra)
        .assert()
}

fn json_of(a: &PathBuf, b: &PathBuf, extra: &[&str], code: i32) -> Value {
    let mut args = vec!["--format", "json"];
    args.extend_from_slice(extra);
    let out = diff(a, b, &args).code(code).get_output().stdout.clone();
    serde_json::from_slice(&out).expect("stdout is one JSON document")
}

#[test]
fn passed_exits_0() {
    diff(&snap("trip.snap.json"), &snap("passed.current.json"), &[])
        .code(0)
        .stdout(predicate::str::starts_with("PASSED\n"))
        .stdout(predicate::str::contains(
            "  tools[1] forecast  lat=38.72 lon=-9.14 days=2\n",
        ));
}

#[test]
fn changed_calls_are_marked_and_exit_1() {
    diff(&snap("trip.snap.json"), &snap("changed.current.json"), &[])
        .code(1)
        .stdout(predicate::str::starts_with("TOOLS_CHANGED\n"))
        .stdout(predicate::str::contains(
            // The row's gist, the current run's after an arrow when it differs.
            "~ tools[1] forecast  lat=38.72 lon=-9.14 days=2 → lat=38.72 lon=-9.14 days=3\n      tools[1].args.days: 2 → 3\n",
        ))
        .stdout(predicate::str::contains("+ tools[3] restaurants\n"))
        .stdout(predicate::str::contains("tool calls  3 → 4  +1 (+33.3%)"));
}

#[test]
fn removed_and_moved_calls_are_marked() {
    diff(&snap("changed.current.json"), &snap("trip.snap.json"), &[])
        .code(1)
        .stdout(predicate::str::contains("- tools[3] restaurants\n"));
    diff(&snap("trip.snap.json"), &snap("reordered.current.json"), &[])
        .code(1)
        .stdout(predicate::str::starts_with("TOOLS_REORDERED\n"))
        .stdout(predicate::str::contains("! tools[2]→tools[1] events  Lisbon\n"));
}

#[test]
fn regression_lists_its_reasons() {
    diff(&fx("agentdbg/baseline"), &fx("agentdbg/failing"), &[])
        .code(1)
        .stdout(predicate::str::starts_with("REGRESSION\n"))
        .stdout(predicate::str::contains("✗ tools[1] forecast fails in the current run"));
}

#[test]
fn json_has_verdict_metrics_and_changes() {
    let v = json_of(&snap("trip.snap.json"), &snap("changed.current.json"), &[], 1);
    assert_eq!(v["verdict"], "TOOLS_CHANGED");
    for m in ["steps", "tool_calls", "llm_calls", "tokens", "duration_ms", "errors"] {
        let x = &v["metrics"][m];
        assert!(
            x.get("baseline").is_some() && x.get("delta").is_some() && x.get("pct").is_some(),
            "{m}"
        );
    }
    assert_eq!(v["metrics"]["tool_calls"]["delta"], 1);
    let ch = v["changes"].as_array().unwrap();
    assert_eq!(ch.len(), 2);
    assert_eq!(ch[0]["op"], "changed");
    assert_eq!(ch[0]["baseline_index"], 1);
    assert_eq!(ch[0]["current_index"], 1);
    assert_eq!(ch[0]["kind"], "tool");
    assert_eq!(ch[0]["name"], "forecast");
    assert_eq!(ch[0]["paths"][0]["path"], "tools[1].args.days");
    assert_eq!(ch[0]["paths"][0]["from"], 2);
    assert_eq!(ch[0]["paths"][0]["to"], 3);
    assert_eq!(ch[1]["op"], "added");
    assert_eq!(ch[1]["baseline_index"], Value::Null);
    assert_eq!(ch[1]["current_index"], 3);
    assert!(v["notes"].as_array().unwrap().is_empty());
}

#[test]
fn json_carries_notes_for_cross_format_and_recorders() {
    let v = json_of(&snap("trip.snap.json"), &fx("agentdbg/rerun"), &[], 0);
    assert_eq!(v["verdict"], "PASSED");
    assert!(v["notes"][0].as_str().unwrap().contains("agentsnap"));
    let v = json_of(&snap("trip.snap.json"), &snap("python.current.json"), &[], 1);
    assert_eq!(v["verdict"], "OUTPUT_DRIFT");
    assert!(
        v["notes"][0]
            .as_str()
            .unwrap()
            .contains("result-hash drift is expected")
    );
}

#[test]
fn ignore_globs_leave_paths_out() {
    let (a, b) = (snap("trip.snap.json"), snap("drift.current.json"));
    diff(&a, &b, &[])
        .code(1)
        .stdout(predicate::str::starts_with("OUTPUT_DRIFT\n"));
    diff(&a, &b, &["--ignore", "tools[*].result_hash", "--ignore", "run.output"])
        .code(0)
        .stdout(predicate::str::starts_with("PASSED\n"));
    diff(&a, &b, &["--ignore", "tools[*].result_hash"])
        .code(1)
        .stdout(predicate::str::contains("run.output:"));
}

#[test]
fn strict_compares_volatile_fields_and_excludes_ignore() {
    let (a, b) = (snap("trip.snap.json"), snap("passed.current.json"));
    diff(&a, &b, &["--strict"])
        .code(1)
        .stdout(predicate::str::starts_with("OUTPUT_DRIFT\n"))
        .stdout(predicate::str::contains("run.fingerprint.node: v20.11.0 → v22.3.0"));
    diff(&a, &b, &["--strict", "--ignore", "x"]).code(2);
}

#[test]
fn fail_on_chooses_what_fails() {
    let (a, b) = (snap("trip.snap.json"), snap("drift.current.json"));
    diff(&a, &b, &["--fail-on", "REGRESSION,TOOLS_CHANGED"]).code(0);
    diff(&a, &b, &["--fail-on", "output_drift"]).code(1);
    diff(&a, &b, &["--fail-on", "none"]).code(0);
    diff(&a, &b, &["--fail-on", "sometimes"])
        .code(2)
        .stderr(predicate::str::contains("unknown verdict"));
    diff(
        &snap("trip.snap.json"),
        &snap("passed.current.json"),
        &["--fail-on", "passed"],
    )
    .code(1);
}

#[test]
fn trouble_exits_2() {
    diff(&snap("trip.snap.json"), &snap("missing.current.json"), &[])
        .code(2)
        .stderr(predicate::str::contains("missing.current.json"));
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}").unwrap();
    diff(&snap("trip.snap.json"), &junk, &[])
        .code(2)
        .stderr(predicate::str::contains("not a trace"));
    cargo_bin_cmd!("tracetui").args(["diff", "only-one"]).assert().code(2);
}

#[test]
fn piped_output_has_no_colour_and_trace_text_is_sanitized() {
    let dir = tempfile::tempdir().unwrap();
    let doc = |arg: &str| {
        format!(
            r#"{{"version":1,"tools":[{{"name":"evil\u001b]0;pwned\u0007","args":{{"q":"{arg}"}},"result_hash":"sha256:{}"}}],"error":null}}"#,
            "a".repeat(64)
        )
    };
    let (a, b) = (dir.path().join("x.snap.json"), dir.path().join("x.current.json"));
    std::fs::write(&a, doc("one")).unwrap();
    std::fs::write(&b, doc("two\\u001b[2J")).unwrap();
    let out = diff(&a, &b, &[]).code(1).get_output().stdout.clone();
    let s = String::from_utf8(out).unwrap();
    assert!(!s.contains('\x1b'), "{s:?}");
    assert!(s.contains("evil\\x1b]0;pwned\\x07"), "{s}");
    assert!(s.contains("two\\x1b[2J"), "{s}");
}

#[test]
fn a_source_with_several_traces_uses_the_first_or_the_one_named() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.snap.json", "b.current.json"] {
        std::fs::copy(
            snap(if name.starts_with('a') {
                "trip.snap.json"
            } else {
                "changed.current.json"
            }),
            dir.path().join(name),
        )
        .unwrap();
    }
    let d = dir.path().to_path_buf();
    diff(&snap("trip.snap.json"), &d, &[])
        .code(0)
        .stderr(predicate::str::contains("holds 2 traces; using the first"));
    let second = PathBuf::from(format!("{}#2", d.display()));
    diff(&snap("trip.snap.json"), &second, &[])
        .code(1)
        .stdout(predicate::str::starts_with("TOOLS_CHANGED"));
    let by_id = PathBuf::from(format!("{}#b.current", d.display()));
    diff(&snap("trip.snap.json"), &by_id, &[]).code(1);
    let none = PathBuf::from(format!("{}#9", d.display()));
    diff(&snap("trip.snap.json"), &none, &[])
        .code(2)
        .stderr(predicate::str::contains("no trace #9"));
}
