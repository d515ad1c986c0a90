//! `tracetui export` (issue 20): OTLP/JSON round trips and parses with the official protobuf
//! JSON mapping; Markdown and HTML snapshots; a hostile trace's HTML opened in headless
//! Chromium (when installed) runs nothing; the command never writes into a trace directory.

use assert_cmd::Command;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use std::path::{Path, PathBuf};
use tracetui::export::{self, To};
use tracetui::model::Trace;

fn tracetui() -> Command {
    let mut c = Command::cargo_bin("tracetui").unwrap();
    c.timeout(std::time::Duration::from_secs(60));
    c
}

fn load(p: &str) -> Vec<Trace> {
    tracetui::formats::load(Path::new(p), None)
        .unwrap_or_else(|e| panic!("{p}: {e}"))
        .traces
}

fn export_string(t: &Trace, to: To) -> String {
    let mut out = Vec::new();
    export::write(t, to, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// Every run of every sample trace → OTLP/JSON → loaded back: the same counts, no
/// diagnostics, and each line is an `ExportTraceServiceRequest` to the official mapping.
#[test]
fn every_sample_trace_round_trips_through_otlp_json() {
    let d = tracetui::source::discover(&[PathBuf::from("sample-traces")], None);
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    let dir = tempfile::tempdir().unwrap();
    let mut runs = 0;
    let mut formats = std::collections::BTreeSet::new();
    for (r, res) in tracetui::source::load_all(&d.runs) {
        let Ok(loaded) = res else { continue };
        for (k, t) in loaded.traces.iter().enumerate() {
            let text = export_string(t, To::OtlpJson);
            for line in text.lines() {
                let req: ExportTraceServiceRequest = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("{} run {}: not OTLP/JSON: {e}", r.path.display(), t.meta.id));
                assert_eq!(req.resource_spans.len(), 1);
            }
            let spans: usize = text
                .lines()
                .map(|l| serde_json::from_str::<ExportTraceServiceRequest>(l).unwrap())
                .map(|r| r.resource_spans[0].scope_spans[0].spans.len())
                .sum();
            assert_eq!(spans, t.len(), "{}", r.path.display());
            let f = dir.path().join(format!("{runs}-{k}.otlp.jsonl"));
            std::fs::write(&f, &text).unwrap();
            let back = tracetui::formats::load(&f, None).unwrap_or_else(|e| panic!("{}: {e}", r.path.display()));
            assert_eq!(back.traces.len(), 1, "{}", r.path.display());
            let b = &back.traces[0];
            assert_eq!(b.meta.format, "otlp-json");
            assert_eq!(b.counts(), t.counts(), "{} run {}", r.path.display(), t.meta.id);
            assert!(b.diagnostics.is_empty(), "{:?}", b.diagnostics);
            runs += 1;
            formats.insert(t.meta.format);
        }
    }
    assert!(runs >= 30, "only {runs} runs");
    assert!(formats.len() >= 15, "{formats:?}");
}

/// `check` of the exported file, through the binary, reports what `check` of the source does.
#[test]
fn check_reads_the_export_back_with_the_same_counts() {
    let src = "sample-traces/runs/agentdbg-invoice-error";
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("out.jsonl");
    tracetui()
        .args(["export", src, "--to", "otlp-json", "-o"])
        .arg(&f)
        .assert()
        .success();
    let counts = |p: &Path| -> serde_json::Value {
        let out = tracetui().args(["check", "--format", "json"]).arg(p).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        serde_json::json!([v["events"], v["tool_calls"], v["llm_calls"], v["errors"], v["tokens"]])
    };
    assert_eq!(counts(&f), counts(Path::new(src)));
    assert_eq!(counts(&f), serde_json::json!([5, 2, 1, 2, 322]));
}

#[test]
fn markdown_snapshots() {
    for (name, path) in [
        ("agentdbg_error", "sample-traces/runs/agentdbg-invoice-error"),
        ("openai_chat", "sample-traces/invariant/weather-chat.json"),
        ("maida", "sample-traces/runs/maida-research-ok"),
    ] {
        let t = &load(path)[0];
        insta::assert_snapshot!(format!("markdown_{name}"), export_string(t, To::Markdown));
    }
}

#[test]
fn html_snapshots() {
    for (name, path) in [
        ("agentdbg_error", "sample-traces/runs/agentdbg-invoice-error"),
        ("openai_chat", "sample-traces/invariant/weather-chat.json"),
    ] {
        let t = &load(path)[0];
        insta::assert_snapshot!(format!("html_{name}"), export_string(t, To::Html));
    }
}

const HOSTILE: [&str; 6] = [
    "<script>alert('xss')</script>",
    "\"><img src=x onerror=alert(1)>",
    "[click](javascript:alert(2))",
    "<a href=\"javascript:alert(3)\">link</a>",
    "\u{1b}]0;pwned\u{7}\u{1b}[2J",
    "abc\u{202e}txt.exe",
];

/// An AgentDbg run whose names, arguments, results, prompt and errors are hostile.
fn hostile_run(dir: &Path) -> PathBuf {
    let run = dir.join("hostile-run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(
        run.join("run.json"),
        r#"{"spec_version":"0.1","run_id":"hostile","run_name":"<script>alert('title')</script>","started_at":"2026-01-01T00:00:00.000Z","ended_at":"2026-01-01T00:00:05.000Z","status":"error"}"#,
    )
    .unwrap();
    let ev = |id: &str, parent: Option<&str>, ty: &str, name: &str, ts: &str, payload: serde_json::Value| {
        serde_json::json!({"spec_version":"0.1","event_id":id,"run_id":"hostile","parent_id":parent,
            "event_type":ty,"ts":ts,"duration_ms":100,"name":name,"payload":payload,"meta":{}})
        .to_string()
    };
    let lines = [
        ev(
            "e1",
            None,
            "RUN_START",
            HOSTILE[0],
            "2026-01-01T00:00:00.000Z",
            serde_json::json!({}),
        ),
        ev(
            "e2",
            None,
            "LLM_CALL",
            "gpt-4o",
            "2026-01-01T00:00:01.000Z",
            serde_json::json!({"model":"gpt-4o","prompt":[
                {"role":"system","content":format!("{} {}", HOSTILE[2], HOSTILE[4])},
                {"role":"user","content":HOSTILE[0]}],
                "response":HOSTILE[3],"usage":{"prompt_tokens":5,"completion_tokens":3}}),
        ),
        ev(
            "e3",
            Some("e2"),
            "TOOL_CALL",
            HOSTILE[1],
            "2026-01-01T00:00:02.000Z",
            serde_json::json!({"tool_name":HOSTILE[1],"args":{"q":HOSTILE[4],"r":HOSTILE[5]},"result":HOSTILE[3],
                "status":"error","error":{"error_type":HOSTILE[1],"message":HOSTILE[0],"stack":"```\n</details>\n"}}),
        ),
    ];
    std::fs::write(run.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
    run
}

/// The tags of an HTML text (`<name attr...>`), lower-cased, for checks on what the DOM holds.
fn tags(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        let end = rest.find('>').unwrap_or(rest.len());
        out.push(rest[..end].to_ascii_lowercase());
        rest = &rest[end.min(rest.len())..];
    }
    out
}

/// What no tag of the page may hold: a script, an event handler, a javascript: URL, an image
/// or anything else that fetches.
fn assert_inert(html: &str, what: &str) {
    for t in tags(html) {
        let name = t.split_whitespace().next().unwrap_or("");
        assert!(
            !matches!(
                name,
                "script" | "img" | "iframe" | "object" | "embed" | "a" | "link" | "base" | "form"
            ),
            "{what}: a <{name}> element: <{t}>"
        );
        assert!(!t.contains("javascript:"), "{what}: javascript: URL in <{t}>");
        assert!(
            !t.contains(" on") || !t.contains('='),
            "{what}: a handler attribute in <{t}>"
        );
        assert!(!t.contains("src="), "{what}: a source in <{t}>");
    }
}

#[test]
fn hostile_html_is_escaped_text() {
    let dir = tempfile::tempdir().unwrap();
    let run = hostile_run(dir.path());
    let t = &load(run.to_str().unwrap())[0];
    let html = export_string(t, To::Html);
    assert_inert(&html, "exported HTML");
    assert!(html.contains("&lt;script&gt;alert(&#39;xss&#39;)&lt;/script&gt;"));
    assert!(html.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));
    // In JSON the escape is JSON's own; in a name, tracetui's sanitizer's.
    assert!(html.contains("\\u001b]0;pwned\\u0007\\u001b[2J"));
    assert!(html.contains("abc&lt;U+202E&gt;txt.exe"));
    assert!(html.contains("\\x1b]0;pwned\\x07\\x1b[2J"));
    assert!(!html.contains('\u{1b}') && !html.contains('\u{202e}'));
    // The stack's `</details>` does not close the page's folding: it is text.
    assert!(html.contains("&lt;/details&gt;"));
}

#[test]
fn hostile_markdown_cannot_break_out() {
    let dir = tempfile::tempdir().unwrap();
    let run = hostile_run(dir.path());
    let t = &load(run.to_str().unwrap())[0];
    let md = export_string(t, To::Markdown);
    // Outside code fences, the only tags are the page's own folding and breaks.
    let mut fence: Option<usize> = None;
    for line in md.lines() {
        let ticks = line.chars().take_while(|&c| c == '`').count();
        match fence {
            Some(n) if ticks >= n && line.trim_end().len() == ticks => fence = None,
            Some(_) => {}
            None if ticks >= 3 => fence = Some(ticks),
            None => {
                for t in tags(line) {
                    let name = t.split(|c: char| c.is_whitespace() || c == '>').next().unwrap_or("");
                    assert!(
                        ["details", "/details", "summary", "/summary", "br", "sub", "/sub"].contains(&name),
                        "a <{t}> tag outside code in: {line}"
                    );
                }
                // A link needs an unescaped `]` before its `(`.
                assert!(!line.replace("\\]", "").contains("](javascript"), "{line}");
            }
        }
    }
    assert!(fence.is_none(), "a fence left open");
    assert!(!md.contains('\u{1b}') && !md.contains('\u{202e}'));
    // The stack holds a fence of three backticks: its own fence is longer.
    assert!(md.contains("````text\n```\n</details>\n````"), "{md}");
}

/// The installed Chromium, if any.
fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"] {
        if let Ok(out) = std::process::Command::new("which").arg(name).output()
            && out.status.success()
        {
            let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !p.is_empty() {
                return Some(PathBuf::from(p));
            }
        }
    }
    None
}

/// The page as headless Chromium builds its DOM: the trace's text is there, as text, and no
/// script, handler, javascript: URL or image from the trace is in the DOM.
#[test]
fn hostile_html_in_headless_chromium() {
    let Some(chrome) = chromium() else {
        eprintln!(
            "SKIPPED hostile_html_in_headless_chromium: no chromium installed (.ci/run installs it with apt-get when it can)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = hostile_run(dir.path());
    let out_dir = tempfile::tempdir().unwrap();
    let page = out_dir.path().join("hostile.html");
    tracetui()
        .arg("export")
        .arg(&run)
        .args(["--to", "html", "-o"])
        .arg(&page)
        .assert()
        .success();
    let profile = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(&chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-dev-shm-usage",
            "--virtual-time-budget=2000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains("</html>"),
        "chromium dumped no DOM (exit {:?}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_inert(&dom, "Chromium's DOM");
    for text in [
        "&lt;script&gt;alert('xss')&lt;/script&gt;",
        "\"&gt;&lt;img src=x onerror=alert(1)&gt;",
    ] {
        assert!(dom.contains(text), "{text} missing from the DOM");
    }
    assert!(dom.contains("[click](javascript:alert(2))"));
    assert!(dom.contains("\\u001b]0;pwned\\u0007"));
    assert!(dom.contains("abc&lt;U+202E&gt;txt.exe"));
    assert!(dom.contains("\\x1b]0;pwned\\x07\\x1b[2J"));
    // The title is text too.
    assert!(dom.contains("<title>&lt;script&gt;alert('title')&lt;/script&gt; · tracetui</title>"));
    eprintln!("hostile_html_in_headless_chromium: ran {}", chrome.display());
}

#[test]
fn export_refuses_an_output_inside_the_trace_directory() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let src = Path::new("sample-traces/runs/agentdbg-refund-ok");
    let run = runs.join("r1");
    std::fs::create_dir_all(&run).unwrap();
    for f in ["run.json", "events.jsonl"] {
        std::fs::copy(src.join(f), run.join(f)).unwrap();
    }
    let before: Vec<_> = std::fs::read_dir(&run)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let out = tracetui()
        .arg("export")
        .arg(&runs)
        .args(["--to", "html", "-o"])
        .arg(run.join("x.html"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("never writes into a trace directory"));
    let after: Vec<_> = std::fs::read_dir(&run)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before, after);
    assert!(!runs.join("x.html").exists());
}

#[test]
fn export_to_stdout_a_file_and_a_directory() {
    // One run to stdout.
    let out = tracetui()
        .args(["export", "sample-traces/runs/agentdbg-refund-ok", "--to", "markdown"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("# refund-agent\n"));
    // Several runs into a directory, one file each; the run ids name them.
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("out/");
    let out = tracetui()
        .args(["export", "sample-traces/runs", "--to", "html", "-o"])
        .arg(&o)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut names: Vec<String> = std::fs::read_dir(&o)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(names.iter().all(|n| n.ends_with(".html")));
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote 5 runs"));
    // Several runs to one file: refused before anything is written.
    let f = dir.path().join("one.html");
    let out = tracetui()
        .args(["export", "sample-traces/runs", "--to", "html", "-o"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!f.exists());
    // --run picks one; an unknown id is an error.
    let out = tracetui()
        .args([
            "export",
            "sample-traces/runs",
            "--run",
            "5f0c2a9e-1b7d-4c3e-9a51-0d2f6b8e4a11",
            "--to",
            "otlp-json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    let out = tracetui()
        .args(["export", "sample-traces/runs", "--run", "nope", "--to", "otlp-json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run with id nope"));
}

/// Issue 37: `-o DIR` wrote through a symbolic link already in DIR and overwrote files
/// silently. Files are created new; an existing one is kept unless --force, and a link is
/// never followed, even with --force.
#[test]
fn export_never_follows_a_link_nor_overwrites_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "keep me").unwrap();
    let run = "sample-traces/runs/agentdbg-refund-ok";
    let export = |o: &Path, force: bool| {
        let mut c = tracetui();
        c.args(["export", run, "--to", "markdown", "-o"]).arg(o);
        if force {
            c.arg("--force");
        }
        c.output().unwrap()
    };
    // Where the run's file goes (its name as a first export into an empty directory says).
    let probe = dir.path().join("probe");
    std::fs::create_dir(&probe).unwrap();
    assert!(export(&probe, false).status.success());
    let name = std::fs::read_dir(&probe).unwrap().next().unwrap().unwrap().file_name();
    std::os::unix::fs::symlink(&victim, out_dir.join(&name)).unwrap();
    for force in [false, true] {
        let out = export(&out_dir, force);
        assert_eq!(out.status.code(), Some(2), "force {force}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(if force { "not followed" } else { "not overwritten" }),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    }
    // A plain file: kept without --force, replaced with it.
    let file = dir.path().join("run.md");
    std::fs::write(&file, "old").unwrap();
    let out = export(&file, false);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "old");
    assert!(export(&file, true).status.success());
    assert!(std::fs::read_to_string(&file).unwrap().starts_with("# refund-agent"));
}

/// A sample of an Inspect AI log asked for by --run is read alone (its archive member) and
/// exports as it does from the whole log; an id given twice is one run, found.
#[test]
fn a_sample_asked_for_exports_as_from_the_whole_log() {
    let log = "sample-traces/inspect-ai/agentic.eval";
    let dir = tempfile::tempdir().unwrap();
    let all = dir.path().join("all/");
    let out = tracetui()
        .args(["export", log, "--to", "html", "-o"])
        .arg(&all)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for id in ["q1_epoch_1", "q2_epoch_1"] {
        let one = dir.path().join(format!("{id}.html"));
        let out = tracetui()
            .args(["export", log, "--run", id, "--run", id, "--to", "html", "-o"])
            .arg(&one)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let whole = std::fs::read(all.join(format!("{id}.html"))).unwrap();
        assert_eq!(std::fs::read(&one).unwrap(), whole, "{id}");
    }
    let out = tracetui()
        .args([
            "export",
            log,
            "--run",
            "q1_epoch_1",
            "--run",
            "nope",
            "--to",
            "markdown",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run with id nope"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("q1"));
}

/// A large run is bounded on the page, and the page says what it left out.
#[test]
fn a_large_run_is_bounded_and_says_so() {
    use tracetui::model::{EventKind, NewEvent, Payload, PayloadRef, RunMeta};
    let mut t = Trace::new(RunMeta {
        id: "big".into(),
        format: "test",
        ..Default::default()
    });
    let big = "x".repeat(100_000);
    for k in 0..(export::html::MAX_EVENTS + 10) {
        t.add(NewEvent {
            start: Some(k as i64 * 1_000_000),
            payload: PayloadRef::inline(Payload {
                input: Some(serde_json::Value::String(if k == 0 { big.clone() } else { "a".into() })),
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::ToolCall, "t")
        });
    }
    t.finalize();
    let html = export_string(&t, To::Html);
    assert!(
        html.contains("This page shows the first 2000 of 2010 events"),
        "bound note"
    );
    assert!(html.contains("1 value longer than 32 KiB was cut"));
    assert!(html.len() < 2_000_000, "{} bytes", html.len());
    let md = export_string(&t, To::Markdown);
    assert!(md.contains("This transcript shows the first 2000 of 2010 events"));
    assert!(md.contains("1 value longer than 64 KiB was cut"));
}
