//! `tracetui diff` beyond one pair as text: word-level changes (text with and without colour,
//! JSON segments), many runs against a baseline (verdicts, exit codes, JSON lines), `diff -`,
//! and the Markdown and HTML reports (snapshots; a hostile trace escaped).

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::Value;
use std::path::{Path, PathBuf};

const C: &str = "sample-traces/compare";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `tracetui diff ARGS` from the crate root (relative paths keep snapshots stable).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = cargo_bin_cmd!("tracetui")
        .current_dir(root())
        .env_remove("NO_COLOR")
        .env("XDG_CONFIG_HOME", root().join("tests/fixtures/no-config"))
        .arg("diff")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn runs(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| format!("{C}/{n}")).collect()
}

#[test]
fn word_diff_in_text_without_colour() {
    let (code, out, _) = run(&[&format!("{C}/baseline"), &format!("{C}/rerun-prompt")]);
    assert_eq!(code, 1);
    assert!(!out.contains('\x1b'));
    insta::assert_snapshot!("word_diff_text_plain", out);
}

#[test]
fn word_diff_context_is_configurable() {
    let args = [&format!("{C}/baseline"), &format!("{C}/rerun-prompt")];
    let (_, narrow, _) = run(&[args[0], args[1], "--context", "2"]);
    assert!(
        narrow.contains("…32 unchanged words… reports damage, [-refund-]{+check+} the"),
        "{narrow}"
    );
    let (_, wide, _) = run(&[args[0], args[1], "--context", "1000"]);
    assert!(!wide.contains("unchanged words"), "{wide}");
    assert!(wide.contains("You are a refunds assistant"));
    // The config key, when no flag is given.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("tracetui")).unwrap();
    std::fs::write(dir.path().join("tracetui/config.toml"), "[diff]\ncontext = 2\n").unwrap();
    let out = cargo_bin_cmd!("tracetui")
        .current_dir(root())
        .env("XDG_CONFIG_HOME", dir.path())
        .args(["diff", args[0], args[1]])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), narrow);
}

#[test]
fn word_diff_with_colour() {
    let load = |p: &str| tracetui::formats::load(&root().join(p), None).unwrap().traces.remove(0);
    let (mut a, mut b) = (load(&format!("{C}/baseline")), load(&format!("{C}/rerun-wording")));
    a.meta.source = PathBuf::from("baseline");
    b.meta.source = PathBuf::from("rerun-wording");
    let d = tracetui::diff::diff(&a, &b, &Default::default());
    let mut out = Vec::new();
    tracetui::report::diff::write_with(&d, &a, &b, &mut out, tracetui::output::Output::Text, true, 4).unwrap();
    let s = String::from_utf8(out).unwrap();
    // Deleted words red, inserted green, no bracket marks.
    assert!(
        s.contains("\x1b[1;31mreaches\x1b[0m\x1b[1;32mshould reach\x1b[0m"),
        "{s:?}"
    );
    assert!(!s.contains("[-"));
    insta::assert_snapshot!("word_diff_text_colour", s.replace('\x1b', "␛"));
}

#[test]
fn json_string_changes_carry_segments() {
    let (code, out, _) = run(&[
        &format!("{C}/baseline"),
        &format!("{C}/rerun-wording"),
        "--format",
        "json",
    ]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    let p = &v["changes"][0]["paths"][0];
    assert_eq!(p["path"], "llm[1].response");
    let segs = p["segments"].as_array().unwrap();
    let ops: Vec<&str> = segs.iter().map(|s| s["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["equal", "delete", "insert", "equal", "delete", "insert", "equal"]);
    let side = |skip: &str| {
        segs.iter()
            .filter(|s| s["op"] != skip)
            .map(|s| s["text"].as_str().unwrap())
            .collect::<String>()
    };
    assert_eq!(side("insert"), p["from"].as_str().unwrap());
    assert_eq!(side("delete"), p["to"].as_str().unwrap());
    // Non-string values carry none.
    let (_, out, _) = run(&[
        "tests/fixtures/diff/agentsnap/trip.snap.json",
        "tests/fixtures/diff/agentsnap/changed.current.json",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    for c in v["changes"].as_array().unwrap() {
        for p in c["paths"].as_array().unwrap() {
            assert_eq!(
                p.get("segments").is_some(),
                p["from"].is_string() && p["to"].is_string(),
                "{p}"
            );
        }
    }
}

#[test]
fn json_segments_are_escaped_as_all_json_output() {
    let dir = tempfile::tempdir().unwrap();
    let doc = |arg: &str| {
        format!(r#"{{"version":1,"tools":[{{"name":"t","args":{{"q":"{arg}"}},"result":"r"}}],"error":null}}"#)
    };
    let (a, b) = (dir.path().join("x.snap.json"), dir.path().join("x.current.json"));
    std::fs::write(&a, doc("keep this one word")).unwrap();
    std::fs::write(&b, doc("keep this \\u202eevil\\u0085 word")).unwrap();
    let (_, out, _) = run(&[a.to_str().unwrap(), b.to_str().unwrap(), "--format", "json"]);
    assert!(!out.contains('\u{202e}') && !out.contains('\u{85}'));
    assert!(out.contains(r#"{"op":"insert","text":"\u202eevil\u0085"}"#), "{out}");
}

#[test]
fn many_runs_get_a_row_each_and_a_summary() {
    let mut args = vec![format!("{C}/baseline")];
    args.extend(runs(&["rerun-same", "rerun-wording", "rerun-prompt", "rerun-error"]));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, _) = run(&a);
    assert_eq!(code, 1);
    insta::assert_snapshot!("many_runs_text", out);

    // Exit codes follow --fail-on over every run.
    let only = |extra: &[&str]| {
        let mut v = a.clone();
        v.extend_from_slice(extra);
        run(&v).0
    };
    assert_eq!(only(&["--fail-on", "regression"]), 1);
    assert_eq!(only(&["--fail-on", "tools-reordered"]), 0);
    assert_eq!(only(&["--fail-on", "none"]), 0);
    let (code, _, _) = run(&[
        &format!("{C}/baseline"),
        &format!("{C}/rerun-same"),
        &format!("{C}/rerun-wording"),
        "--fail-on",
        "regression,tools_changed",
    ]);
    assert_eq!(code, 0);
    let (code, _, _) = run(&[
        &format!("{C}/baseline"),
        &format!("{C}/rerun-same"),
        &format!("{C}/baseline"),
    ]);
    assert_eq!(code, 0, "every run passes");
    // One unreadable run is trouble.
    let (code, _, err) = run(&[&format!("{C}/baseline"), &format!("{C}/rerun-same"), "no/such/run"]);
    assert_eq!(code, 2);
    assert!(err.contains("no/such/run"), "{err}");
}

#[test]
fn many_runs_as_json_lines_and_markdown() {
    let mut args = vec![format!("{C}/baseline")];
    args.extend(runs(&["rerun-same", "rerun-wording", "rerun-prompt", "rerun-error"]));
    let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
    a.extend(["--format", "json"]);
    let (code, out, _) = run(&a);
    assert_eq!(code, 1);
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 5);
    let verdicts: Vec<&str> = lines[..4].iter().map(|l| l["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["PASSED", "OUTPUT_DRIFT", "TOOLS_CHANGED", "REGRESSION"]);
    for l in &lines[..4] {
        // The shape of a single diff, plus cost and the first divergence.
        for k in [
            "baseline",
            "current",
            "metrics",
            "calls",
            "changes",
            "regressions",
            "notes",
        ] {
            assert!(l.get(k).is_some(), "{k}");
        }
        assert!(l["metrics"]["cost_usd"]["current"].is_number());
    }
    assert!(lines[0]["first_divergence"].is_null());
    assert_eq!(
        lines[2]["first_divergence"],
        "~ llm[0] gpt-4o changed · llm[0].prompt[0].content"
    );
    let s = &lines[4]["summary"];
    assert_eq!(s["runs"], 4);
    assert_eq!(s["worst"], "REGRESSION");
    assert_eq!(s["verdicts"]["PASSED"], 1);
    assert_eq!(s["failing"].as_array().unwrap().len(), 3);

    let n = a.len();
    a[n - 1] = "markdown";
    let (code, out, _) = run(&a);
    assert_eq!(code, 1);
    insta::assert_snapshot!("many_runs_markdown", out);
    // The single-pair output of a pair stays the single-pair output.
    let (_, one, _) = run(&[&format!("{C}/baseline"), &format!("{C}/rerun-same"), "--format", "json"]);
    let v: Value = serde_json::from_str(&one).unwrap();
    assert!(v.get("summary").is_none() && v.get("first_divergence").is_none());
}

#[test]
fn the_baseline_can_come_from_standard_input() {
    let baseline = std::fs::read(root().join(C).join("baseline/events.jsonl")).unwrap();
    let out = cargo_bin_cmd!("tracetui")
        .current_dir(root())
        .args(["diff", "-", &format!("{C}/rerun-wording"), "--format", "json"])
        .write_stdin(baseline.clone())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "OUTPUT_DRIFT");
    assert_eq!(v["baseline"]["source"], "-");
    assert_eq!(v["baseline"]["format"], "agentdbg", "detected from the content");
    // The same run on both sides passes.
    let out = cargo_bin_cmd!("tracetui")
        .current_dir(root())
        .args(["diff", "-", &format!("{C}/baseline")])
        .write_stdin(baseline)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // Nothing on standard input: trouble, said.
    let out = cargo_bin_cmd!("tracetui")
        .current_dir(root())
        .args(["diff", "-", &format!("{C}/baseline")])
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty"));
}

#[test]
fn markdown_report_of_a_pair() {
    let (code, out, _) = run(&[
        &format!("{C}/baseline"),
        &format!("{C}/rerun-prompt"),
        "--format",
        "markdown",
    ]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("pair_markdown", out);
    let (code, _, _) = run(&[&format!("{C}/baseline"), &format!("{C}/rerun-same"), "--format", "md"]);
    assert_eq!(code, 0, "exit codes as for text");
}

#[test]
fn html_report_of_a_pair() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.html");
    let (code, out, err) = run(&[
        &format!("{C}/baseline"),
        &format!("{C}/rerun-error"),
        "--format",
        "html",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(err.contains("wrote"));
    let html = std::fs::read_to_string(&file).unwrap();
    insta::assert_snapshot!("pair_html", html);
    // Self-contained: no reference to another host, nothing to run.
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"));
    assert!(html.contains("default-src 'none'"));
    // Many runs do not make one side-by-side page.
    let mut args = vec![format!("{C}/baseline")];
    args.extend(runs(&["rerun-same", "rerun-error"]));
    args.extend(["--format".into(), "html".into()]);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(run(&a).0, 2);
}

/// An agentdbg run whose names, arguments and results try every way into a page.
fn hostile_pair(dir: &Path) -> (PathBuf, PathBuf) {
    let evil = "<script>alert(1)</script> \"><img src=x onerror=alert(2)> <a href=\"javascript:alert(3)\">x</a> \
                \u{1b}]0;TITLE\u{7} \u{1b}[2J \u{202e}desrever <style>body{display:none}</style> <img src=\"https://evil.example/p.png\">";
    let mk = |name: &str, extra: &str| {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        let ev = |i: u32, t: &str, n: &str, payload: Value| {
            serde_json::json!({"spec_version":"0.1","event_id":format!("e{i}"),"run_id":name,"parent_id":null,
                "event_type":t,"ts":format!("2026-02-15T09:00:0{i}.000Z"),"duration_ms":null,"name":n,"payload":payload,"meta":{}})
            .to_string()
        };
        let lines = [
            ev(1, "RUN_START", name, serde_json::json!({"run_name": name})),
            ev(
                2,
                "TOOL_CALL",
                evil,
                serde_json::json!({"tool_name": evil, "args": {"q": format!("{evil} {extra}")},
                    "result": format!("keep these words {evil} {extra}"), "status": "ok", "error": null}),
            ),
            ev(3, "RUN_END", name, serde_json::json!({"status": "ok"})),
        ];
        std::fs::write(d.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
        d
    };
    (
        mk("a", "one"),
        mk(&format!("b{evil}").replace(['/', '\u{1b}', '\u{7}'], "_"), "two"),
    )
}

#[test]
fn html_of_a_hostile_trace_is_text_only() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = hostile_pair(dir.path());
    let file = dir.path().join("r.html");
    let (code, _, err) = run(&[
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "html",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    let html = std::fs::read_to_string(&file).unwrap();
    for bad in [
        "<script",
        "<img",
        "onerror=",
        "<a ",
        "<style>body",
        "javascript:alert(3)\"",
        "\u{1b}",
        "\u{202e}",
        "\u{7}",
        "https://evil",
    ] {
        // `onerror=` survives only inside escaped text, `&lt;img src=x onerror=...`.
        if bad == "onerror=" {
            assert!(html.matches("onerror=").count() == html.matches("&lt;img src=x onerror=").count());
            continue;
        }
        if bad == "https://evil" {
            // Present as text only: no element could load it.
            assert!(!html.contains("src=\"https://evil"));
            continue;
        }
        assert!(!html.contains(bad), "{bad:?} in the page");
    }
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("\\x1b]0;TITLE\\x07"), "{html}");
    assert!(html.contains("&lt;U+202E&gt;desrever"), "{html}");
    // In a browser when one is installed: the text is there and nothing from the trace runs.
    let chromium = ["chromium", "chromium-browser", "google-chrome"].into_iter().find(|c| {
        std::process::Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(chromium) = chromium else {
        eprintln!("SKIPPED the browser half of html_of_a_hostile_trace_is_text_only: no chromium installed");
        return;
    };
    let out = std::process::Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(format!("file://{}", file.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(dom.contains("tracetui diff"), "{dom}");
    assert!(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(
        !dom.contains("<script") && !dom.contains("<img") && !dom.contains("<a "),
        "{dom}"
    );
    // `onerror` only inside escaped text.
    assert_eq!(
        dom.matches("onerror").count(),
        dom.matches("&lt;img src=x onerror").count(),
        "{dom}"
    );
}
