//! End to end: the real binary in a real terminal (tmux), driven by keys, read from the
//! screen. Each test runs its own tmux server (`-L`), so nothing touches the user's sessions.
//! Skipped, with the reason printed, when tmux is not installed.

mod tmux;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use tmux::Tmux;

macro_rules! need_tmux {
    () => {
        if !tmux::available() {
            eprintln!("skipped: tmux is not installed (the end-to-end terminal tests need it)");
            return;
        }
    };
}

#[test]
fn newcomer_finds_the_failed_tool_call_in_the_sample_traces() {
    need_tmux!();
    assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces").is_dir());
    let t = Tmux::start();
    t.launch("sample-traces/");
    let s = t.wait_for("the runs list", |s| {
        s.contains("STATUS") && s.contains("invoice-mailer")
    });
    assert!(s.contains("✖ error"), "failed runs are marked\n{s}");
    assert_eq!(t.var("alternate_on"), "1");

    // runs → the failed run, by filtering the list
    t.keys(&["/"]);
    t.type_text("invoice");
    t.keys(&["Enter", "Enter"]);
    let s = t.wait_for("the run view", |s| {
        s.contains("runs › invoice-mailer") && s.contains("TIMELINE")
    });
    assert!(s.contains("events") && s.contains("tool calls"), "{s}");

    // the failed tool call, and its arguments and error in the detail
    t.keys(&["e"]);
    let s = t.wait_for("the failed tool call", |s| s.contains("tool call send_email"));
    assert!(s.contains("── Error") && s.contains("SMTPAuthenticationError"), "{s}");
    assert!(
        s.contains("── Arguments") && s.contains("billing@customer.example"),
        "{s}"
    );
    t.keys(&["Enter"]);
    t.wait_for("the detail focused", |s| s.contains("copy") && s.contains("wrap"));

    // copy through OSC 52: the line under the cursor is the event name
    t.keys(&["y"]);
    t.wait_for("the copy message", |s| s.contains("copied value"));
    let b = t.ok(&["show-buffer"]);
    assert_eq!(b, "send_email");
    t.ok(&["delete-buffer"]);

    // filter
    t.keys(&["Escape"]);
    t.keys(&["/"]);
    t.type_text("status:error");
    let s = t.wait_for("the filter result", |s| s.contains("matches"));
    assert!(s.contains("filter status:error"), "{s}");
    t.keys(&["Enter", "n"]);

    // help
    t.keys(&["?"]);
    let s = t.wait_for("the help overlay", |s| s.contains("keys of the event tree"));
    assert!(s.contains("next error"), "{s}");
    // The filter syntax is further down: the help scrolls.
    t.keys(&["j"; 12]);
    t.wait_for("the filter syntax in the help", |s| s.contains("filter (/)"));
    t.keys(&["Escape"]);
    t.wait_for("help closed", |s| !s.contains("keys of the event tree"));

    // back to the runs, then quit
    t.keys(&["Escape"]);
    t.keys(&["Escape"]);
    t.wait_for("the runs list again", |s| {
        s.contains("STATUS") && !s.contains("TIMELINE")
    });
    t.keys(&["q"]);
    t.assert_restored();
    assert_eq!(t.buffers().trim(), "", "nothing else reached the clipboard");
}

#[test]
fn hostile_trace_is_shown_escaped_and_cannot_touch_title_or_clipboard() {
    need_tmux!();
    // wide enough that the hostile result fits on one line of the detail
    let t = Tmux::start_sized(240, 30);
    t.launch("tests/fixtures/tui/hostile/runs/run-evil");
    t.wait_for("the run", |s| s.contains("fetch_page"));
    t.keys(&["j", "Enter"]);
    let s = t.wait_for("the tool result", |s| s.contains("── Result"));
    assert!(s.contains("\\x1b[2J"), "{s}");
    assert!(s.contains("\\x1b]0;PWNED-TITLE\\x07"), "{s}");
    assert!(s.contains("\\x1b]52;c;cHduZWQ="), "{s}");
    assert!(s.contains("\\x9b31m"), "{s}");
    assert!(s.contains("<U+202E>override"), "{s}");
    assert!(s.contains("runs › hostile"), "the screen was not cleared\n{s}");
    assert_eq!(t.var("pane_title"), "e2e-title");
    t.keys(&["q"]);
    t.assert_restored();
    assert_eq!(t.buffers().trim(), "", "no OSC 52 reached tmux");

    // Control: the same sequences sent raw do change the title and the buffers, so the checks
    // above would have caught a leak.
    t.type_text("printf '\\033]0;LEAK\\007\\033]52;c;bGVhaw==\\007'");
    t.keys(&["Enter"]);
    let start = Instant::now();
    while t.var("pane_title") != "LEAK" && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(t.var("pane_title"), "LEAK");
    assert!(t.buffers().contains("leak"));
}

/// Issue 37: a ZWJ family, a skin tone, an emoji presentation selector and a long run of
/// combining marks were drawn by the terminal wider than tracetui computed, and the rows'
/// right borders dropped off. In a real terminal (tmux), every boxed row keeps its border
/// in the last column, in the runs list, the tree and the detail.
#[test]
fn emoji_sequences_and_combining_marks_keep_the_layout_in_a_real_terminal() {
    need_tmux!();
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run-graphemes");
    std::fs::create_dir_all(&run).unwrap();
    let odd = format!(
        "fam 👨\u{200d}👩\u{200d}👧\u{200d}👦 skin 👍🏽👋🏿 heart ❤\u{fe0f} marks o{} end",
        "\u{332}".repeat(40)
    );
    let mut lines = vec![serde_json::json!({
        "spec_version": "0.1", "event_id": "root", "run_id": "r", "parent_id": null, "event_type": "RUN_START",
        "ts": "2026-01-01T00:00:00.000Z", "duration_ms": null, "name": odd, "payload": {"run_name": odd}, "meta": {}
    })];
    for i in 0..3 {
        lines.push(serde_json::json!({
            "spec_version": "0.1", "event_id": format!("e{i}"), "run_id": "r", "parent_id": "root",
            "event_type": "TOOL_CALL", "ts": format!("2026-01-01T00:00:0{i}.000Z"), "duration_ms": 5,
            "name": format!("{i} {odd}"),
            "payload": {"tool_name": format!("{i} {odd}"), "args": {"text": odd}, "result": odd, "status": "ok", "error": null},
            "meta": {}
        }));
    }
    let body: String = lines.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(run.join("events.jsonl"), body).unwrap();
    let t = Tmux::start_sized(120, 30);
    t.launch(&run.display().to_string());
    // tmux's grid, as it captures it, cell by cell: a cell holds a character and the marks
    // it kept; a character drawn across two cells is followed by none. A boxed row whose
    // characters span more or fewer than the terminal's 120 columns was laid out for another
    // width than the terminal drew (a joined family was 2 columns to tracetui and 8 to tmux).
    let boxed = |s: &str| {
        for l in s.lines().filter(|l| l.starts_with('│')) {
            let w: usize = l
                .chars()
                .map(|c| unicode_width::UnicodeWidthChar::width(c).unwrap_or(0))
                .sum();
            assert!(l.ends_with('│') && w == 120, "a row drawn {w} columns wide:\n{l}\n{s}");
        }
    };
    let s = t.wait_for("the run", |s| s.contains("marks") && s.contains("end"));
    boxed(&s);
    t.keys(&["j", "Enter"]);
    let s = t.wait_for("the detail", |s| s.matches("end").count() >= 2);
    boxed(&s);
    // One q quits from any view (more could reach the shell once the explorer has left).
    t.keys(&["q"]);
    t.assert_restored();
}

#[test]
fn ctrl_c_quits_cleanly_even_in_the_filter_prompt() {
    need_tmux!();
    let t = Tmux::start();
    t.launch("tests/fixtures/tui/agentdbg/runs");
    t.wait_for("the runs list", |s| s.contains("book-trip"));
    t.keys(&["/"]);
    t.type_text("boo");
    t.keys(&["C-c"]);
    t.assert_restored();
}

#[test]
fn diff_two_runs_marked_in_the_runs_list() {
    need_tmux!();
    // sample-traces/ holds more runs than a screen (the booking pair sorts late among them):
    // the list is waited for, the filter below finds the pair.
    let t = Tmux::start_sized(130, 60);
    t.launch("sample-traces/");
    t.wait_for("the runs list", |s| {
        s.contains("newest first") && s.contains("invoice-mailer")
    });
    t.keys(&["d"]);
    t.wait_for("what d needs", |s| s.contains("no baseline: press space"));
    t.keys(&["/"]);
    t.type_text("booking");
    t.keys(&["Enter"]);
    let s = t.wait_for("the two booking runs", |s| s.contains("runs 2"));
    let lines: Vec<&str> = s.lines().filter(|l| l.contains("booking (booking.")).collect();
    assert!(lines[0].contains("booking.baseline"), "{s}");
    t.keys(&["Space"]);
    t.wait_for("the baseline badge", |s| {
        s.contains("BASELINE booking (booking.baseline)")
    });
    t.keys(&["j", "d"]);
    let s = t.wait_for("the diff", |s| s.contains("TOOLS_CHANGED"));
    assert!(s.contains("args.limit: 10") && s.contains("args.limit: 25"), "{s}");
    assert!(s.contains("1 changed · 1 added · 1 unchanged"), "{s}");
    assert!(s.contains("tool calls 2 → 3 +1 (+50.0%)"), "{s}");
    t.keys(&["Enter"]);
    let s = t.wait_for("the pair detail", |s| s.contains("── Changes (1)"));
    assert!(s.contains("tools[0].args.limit: 10 → 25"), "{s}");
    assert!(s.contains("── Baseline tools[0]"), "{s}");
    t.keys(&["Escape", "s"]);
    t.wait_for("the inline layout", |s| s.contains("calls · inline"));
    t.keys(&["q"]);
    t.assert_restored();
}

#[test]
fn diff_command_opens_the_diff_view_on_a_terminal() {
    need_tmux!();
    let t = Tmux::start_sized(130, 40);
    t.launch("diff sample-traces/diff/booking.snap.json sample-traces/diff/booking.current.json");
    let s = t.wait_for("the diff view", |s| {
        s.contains("TOOLS_CHANGED") && s.contains("side by side")
    });
    assert_eq!(t.var("alternate_on"), "1", "{s}");
    assert!(s.contains("args.limit: 10"), "{s}");
    t.keys(&["n"]);
    t.wait_for("the added call selected", |s| s.contains(" 2/3 "));
    // esc leads to the runs of the two sources
    t.keys(&["Escape"]);
    t.wait_for("the runs list", |s| {
        s.contains("runs 2") && s.contains("booking (booking.current)")
    });
    t.keys(&["q"]);
    t.assert_restored();
    t.type_text("echo EXIT=$?");
    t.keys(&["Enter"]);
    t.wait_for("the exit code", |s| s.contains("EXIT=0"));
}

/// The pid of the explorer: the child of the pane's shell.
fn child_of(shell: u32) -> Option<u32> {
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold spaces, so split after the last ')'.
        let ppid = stat
            .rsplit(')')
            .next()?
            .split_whitespace()
            .nth(1)?
            .parse::<u32>()
            .ok()?;
        if ppid == shell {
            return Some(pid);
        }
    }
    None
}

#[test]
fn sigterm_and_sighup_restore_the_terminal() {
    need_tmux!();
    if !Path::new("/proc/self/stat").exists() {
        eprintln!("skipped: no /proc to find the explorer's pid");
        return;
    }
    for sig in ["-TERM", "-HUP"] {
        let t = Tmux::start();
        t.launch("tests/fixtures/tui/agentdbg/runs");
        t.wait_for("the runs list", |s| s.contains("book-trip"));
        let shell: u32 = t.var("pane_pid").parse().unwrap();
        let pid = child_of(shell).expect("the explorer runs under the shell");
        let st = Command::new("kill").args([sig, &pid.to_string()]).status().unwrap();
        assert!(st.success());
        t.assert_restored();
    }
}

/// The terminal goes away under the explorer (its tmux server is killed, and no SIGHUP need
/// reach it): the explorer notices and exits instead of outliving its terminal spinning.
#[test]
fn explorer_exits_when_its_terminal_disappears() {
    need_tmux!();
    let socket = format!("tracetui-e2e-gone-{}", std::process::id());
    let bin = env!("CARGO_BIN_EXE_tracetui");
    let out = Command::new("tmux")
        .args([
            "-L",
            &socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-P",
            "-F",
            "#{pane_pid}",
        ])
        .args(["-x", "100", "-y", "30", "-c", env!("CARGO_MANIFEST_DIR")])
        .arg(format!("exec {bin} sample-traces/"))
        .output()
        .unwrap();
    let pid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().expect("pane pid");
    std::thread::sleep(Duration::from_millis(1500));
    let alive = |pid: u32| Path::new(&format!("/proc/{pid}")).exists() && !zombie(pid);
    assert!(alive(pid), "the explorer started");
    let _ = Command::new("tmux").args(["-L", &socket, "kill-server"]).output();
    let start = Instant::now();
    while alive(pid) && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let gone = !alive(pid);
    let state = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let threads = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .map(|t| std::fs::read_to_string(t.path().join("comm")).unwrap_or_default())
                .collect::<String>()
        })
        .unwrap_or_default();
    if !gone {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).output();
    }
    assert!(
        gone,
        "the explorer outlived its terminal:\n{state}\nthreads:\n{threads}"
    );
}

fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
        .unwrap_or(true)
}

fn adbg_line(id: &str, parent: Option<&str>, ty: &str, name: &str, sec: u32) -> String {
    let parent = parent.map(|p| format!("\"{p}\"")).unwrap_or_else(|| "null".into());
    format!(
        "{{\"spec_version\":\"0.1\",\"event_id\":\"{id}\",\"run_id\":\"live1\",\"parent_id\":{parent},\"event_type\":\"{ty}\",\"ts\":\"2026-02-15T20:31:{sec:02}.000Z\",\"duration_ms\":5,\"name\":\"{name}\",\"payload\":{{}},\"meta\":{{}}}}\n"
    )
}

#[test]
fn tail_on_an_empty_directory_shows_a_run_as_it_is_written() {
    need_tmux!();
    let d = tempfile::tempdir().unwrap();
    let runs = d.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    let t = Tmux::start();
    t.launch(&format!("tail {}", runs.display()));
    t.wait_for("the empty list", |s| s.contains("waiting for runs to appear"));
    // An agent starts: run.json (replaced by rename), then events one by one.
    let run = runs.join("live1");
    std::fs::create_dir(&run).unwrap();
    let meta = r#"{"spec_version":"0.1","run_id":"live1","run_name":"live-agent","started_at":"2026-02-15T20:31:00.000Z","status":"running","counts":{}}"#;
    std::fs::write(run.join("run.json.tmp"), meta).unwrap();
    std::fs::rename(run.join("run.json.tmp"), run.join("run.json")).unwrap();
    let events = run.join("events.jsonl");
    let append = |s: &str| {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&events)
            .unwrap();
        f.write_all(s.as_bytes()).unwrap();
    };
    append(&adbg_line("a", None, "RUN_START", "live-agent", 0));
    append(&adbg_line("l1", Some("a"), "LLM_CALL", "plan-step", 1));
    let s = t.wait_for("the run, opened by itself", |s| s.contains("plan-step"));
    assert!(s.contains("FOLLOW"), "follow mode\n{s}");
    assert!(s.contains("● live"), "a running run\n{s}");
    for i in 0..5 {
        append(&adbg_line(
            &format!("t{i}"),
            Some("l1"),
            "TOOL_CALL",
            &format!("lookup_{i}"),
            2 + i,
        ));
        std::thread::sleep(Duration::from_millis(80));
    }
    let s = t.wait_for("every tool call", |s| s.contains("lookup_4") && s.contains("7 events"));
    assert!(s.contains("FOLLOW"));
    // Scrolling up pauses; a new event is counted; G follows again.
    t.keys(&["k", "k"]);
    append(&adbg_line("t9", Some("l1"), "TOOL_CALL", "late_call", 9));
    let s = t.wait_for("the paused view", |s| s.contains("PAUSED") && s.contains("1 new below"));
    assert!(s.contains("late_call"), "the new event is listed\n{s}");
    t.keys(&["G"]);
    t.wait_for("follow again", |s| s.contains("FOLLOW"));
    t.keys(&["q"]);
    t.assert_restored();
}

/// A panic on a background thread (the run loader, made to panic through TRACETUI_FAULT)
/// neither kills the explorer nor prints over its screen: the UI says what happened, keeps
/// working, and quitting restores the terminal.
#[test]
fn a_panic_in_a_background_thread_keeps_the_terminal_sane() {
    need_tmux!();
    let t = Tmux::start();
    t.type_text("export TRACETUI_FAULT=loader-panic");
    t.keys(&["Enter"]);
    t.launch("sample-traces/runs");
    let s = t.wait_for("the runs list", |s| s.contains("refund-agent"));
    assert_eq!(t.var("alternate_on"), "1", "{s}");
    t.keys(&["Enter"]);
    let s = t.wait_for("the loader's failure reported in the UI", |s| {
        s.contains("1 unreadable")
    });
    // The UI reports it in its status line; the default hook's "thread '…' panicked" never
    // reaches the screen.
    assert!(s.contains("internal error (please report)"), "{s}");
    assert!(
        !s.contains("thread '"),
        "the panic message was printed over the screen:\n{s}"
    );
    assert_eq!(t.var("alternate_on"), "1", "still in the explorer\n{s}");
    t.keys(&["?"]);
    t.wait_for("help still works", |s| s.contains("keys of the runs list"));
    // One q: q quits from the help too, and a second one could reach the shell after the
    // explorer left (echoed before the prompt, which the restore check would not find).
    t.keys(&["q"]);
    t.assert_restored();
}

#[test]
fn no_path_opens_every_agents_runs_in_a_fake_home() {
    need_tmux!();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let cwd = d.path().join("cwd");
    // Two sessions of the same name in two projects, a Codex rollout, and runs/ here.
    let claude =
        std::fs::read_to_string(root.join("sample-traces/claude-code/7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f.jsonl"))
            .unwrap();
    for (proj, id) in [
        ("-home-ada-weather-app", "7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f"),
        ("-home-ada-other-app", "11111111-5b7e-4c1d-9e2f-0a1b2c3d4e5f"),
    ] {
        let dir = home.join(".claude/projects").join(proj);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("{id}.jsonl")),
            claude.replace("7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f", id),
        )
        .unwrap();
    }
    let codex = home.join(".codex/sessions/2026/04/03");
    std::fs::create_dir_all(&codex).unwrap();
    let rollout = "rollout-2026-04-03T09-12-44-0196a7c2-3f41-7d10-9b55-4e2a8c1d0f37.jsonl";
    std::fs::copy(root.join("sample-traces/codex").join(rollout), codex.join(rollout)).unwrap();
    let runs = cwd.join("runs/agentdbg-invoice-error");
    std::fs::create_dir_all(&runs).unwrap();
    for f in ["run.json", "events.jsonl"] {
        std::fs::copy(
            root.join("sample-traces/runs/agentdbg-invoice-error").join(f),
            runs.join(f),
        )
        .unwrap();
    }

    let t = Tmux::start_sized(150, 30);
    let bin = env!("CARGO_BIN_EXE_tracetui");
    t.type_text(&format!(
        "cd {} && env -u CLAUDE_CONFIG_DIR -u CODEX_HOME -u GEMINI_CLI_HOME -u COPILOT_HOME HOME={} XDG_DATA_HOME={}/share XDG_CONFIG_HOME={}/config {bin}",
        cwd.display(),
        home.display(),
        home.display(),
        home.display()
    ));
    t.keys(&["Enter"]);
    let s = t.wait_for("every agent's runs", |s| {
        s.contains("runs 4") && s.contains("codex") && s.contains("invoice-mailer")
    });
    assert!(s.contains("every agent's place"), "{s}");
    assert!(s.contains("AGENT") && s.contains("PROJECT"), "{s}");
    // The same session name twice, told apart by project.
    assert_eq!(s.matches("Fix the flaky forecast test").count(), 2, "{s}");
    assert!(s.contains("ada-other-app") && s.contains("2026/04/03"), "{s}");

    // Filter by agent, then by status.
    t.keys(&["/"]);
    t.type_text("format:claude");
    t.keys(&["Enter"]);
    let s = t.wait_for("the filtered list", |s| s.contains("runs 2 "));
    assert!(!s.contains("invoice-mailer"), "{s}");
    t.keys(&["Escape", "/"]);
    t.type_text("status:error");
    t.keys(&["Enter"]);
    let s = t.wait_for("the failed run", |s| s.contains("runs 1 "));
    assert!(s.contains("invoice-mailer"), "{s}");
    t.keys(&["Escape"]);

    // Grouped by place.
    t.keys(&["S"]);
    let s = t.wait_for("the groups", |s| s.contains("grouped"));
    assert!(s.contains(".claude/projects  claude-code · 2 runs"), "{s}");
    assert!(s.contains("runs  agentdbg, maida · 1 run"), "{s}");
    t.keys(&["q"]);
    t.assert_restored();
}

/// A tool result that is one 300 KB line wraps into thousands of screen rows: `G` in the
/// detail pane reaches its last row, where the marker is.
#[test]
fn the_end_of_a_huge_one_line_result_is_reachable() {
    need_tmux!();
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("runs").join("run-big");
    std::fs::create_dir_all(&run).unwrap();
    let meta = r#"{"spec_version":"0.1","run_id":"run-big","run_name":"big-result","started_at":"2026-02-15T09:00:00.000Z","status":"ok","counts":{}}"#;
    std::fs::write(run.join("run.json"), meta).unwrap();
    // Words and long unbroken stretches, as minified JSON and base64 have.
    let mut value = String::new();
    let mut k = 0;
    while value.len() < 300_000 {
        value.push_str(&format!("chunk{k:06}-{} ", "q".repeat(k % 150)));
        k += 1;
    }
    value.push_str("THE-END-MARKER-42");
    let events = [
        r#"{"spec_version":"0.1","event_id":"b1","run_id":"run-big","parent_id":null,"event_type":"RUN_START","ts":"2026-02-15T09:00:00.000Z","duration_ms":null,"name":"big-result","payload":{"run_name":"big-result"},"meta":{}}"#.to_string(),
        format!(
            r#"{{"spec_version":"0.1","event_id":"b2","run_id":"run-big","parent_id":null,"event_type":"TOOL_CALL","ts":"2026-02-15T09:00:00.100Z","duration_ms":50,"name":"dump_page","payload":{{"tool_name":"dump_page","args":{{}},"result":"{value}","status":"ok","error":null}},"meta":{{}}}}"#
        ),
    ];
    std::fs::write(run.join("events.jsonl"), events.join("\n") + "\n").unwrap();
    let t = Tmux::start();
    t.launch(&run.display().to_string());
    t.wait_for("the run", |s| s.contains("dump_page"));
    t.keys(&["j"]);
    t.wait_for("the tool call's detail", |s| s.contains("── Result"));
    t.keys(&["Enter", "G"]);
    let s = t.wait_for("the end of the result", |s| s.contains("THE-END-MARKER-42"));
    // The counter counts screen rows: thousands of them for one line.
    let counter = s
        .lines()
        .filter_map(|l| {
            let (a, b) = l.rsplit_once('/')?;
            let a: usize = a.rsplit(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
            let b: usize = b.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
            Some((a, b))
        })
        .find(|&(a, b)| a == b && b > 1000);
    assert!(counter.is_some(), "a row counter at its end\n{s}");
    // `/` searches the document: a word from the middle of the value is brought on screen.
    let middle = format!("chunk{:06}-", k / 2);
    assert!(!s.contains(&middle));
    t.keys(&["/"]);
    t.type_text(&middle);
    t.keys(&["Enter"]);
    let s = t.wait_for("the match in the middle", |s| s.contains(&middle));
    assert!(s.contains("1/1"), "the match counter\n{s}");
    t.keys(&["q"]);
    t.assert_restored();
}

/// `o` in the detail: the pager gets a private copy (mode 0600, in the temporary directory,
/// removed after) of what the screen shows, escapes escaped; the explorer comes back.
#[test]
fn o_hands_the_pager_a_private_sanitized_file_removed_after() {
    need_tmux!();
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("seen");
    let script = d.path().join("pager.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncp \"$1\" '{0}'\nstat -c %a \"$1\" > '{0}.mode'\nprintf %s \"$1\" > '{0}.path'\n",
            out.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
    let t = Tmux::start_sized(240, 30);
    let bin = env!("CARGO_BIN_EXE_tracetui");
    t.type_text(&format!(
        "PAGER='{}' {bin} tests/fixtures/tui/hostile/runs/run-evil",
        script.display()
    ));
    t.keys(&["Enter"]);
    t.wait_for("the run", |s| s.contains("fetch_page"));
    t.keys(&["j", "Enter"]);
    t.wait_for("the tool result", |s| s.contains("── Result"));
    // The last line is blank: no value there, so the whole detail is opened.
    t.keys(&["G", "o"]);
    let start = Instant::now();
    while !out.with_extension("path").exists() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let seen = std::fs::read(&out).expect("the pager ran");
    assert!(!seen.contains(&0x1b), "no escape byte reaches the pager");
    let text = String::from_utf8(seen).unwrap();
    assert!(text.contains("── Result") && text.contains("\\x1b[2J"), "{text}");
    let mode = std::fs::read_to_string(d.path().join("seen.mode")).unwrap();
    assert_eq!(mode.trim(), "600");
    let path = std::fs::read_to_string(d.path().join("seen.path")).unwrap();
    assert!(std::path::Path::new(&path).starts_with(std::env::temp_dir()), "{path}");
    assert!(!path.contains("run-evil"), "not in the trace directory: {path}");
    // The explorer is back on the alternate screen, and the file is gone.
    t.wait_for("the explorer again", |s| s.contains("── Result"));
    assert_eq!(t.var("alternate_on"), "1");
    assert!(!std::path::Path::new(&path).exists(), "{path} removed");
    t.keys(&["q"]);
    t.assert_restored();
}

/// Issue 18: a word in one run's tool result, typed in the runs list's filter, is searched in
/// the runs' events; the run that has it shows its match count, and opening it lands on the
/// matching event (the top bar's breadcrumb names it).
#[test]
fn runs_list_search_finds_a_word_in_a_tool_result_and_opens_the_run_on_it() {
    need_tmux!();
    let d = tempfile::tempdir().unwrap();
    for (run, result) in [
        ("alpha", "order shipped to Zanzibar harbour"),
        ("beta", "order shipped to Oslo"),
    ] {
        let dir = d.path().join(run);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("run.json"),
            format!(r#"{{"spec_version": "0.1", "run_id": "live1", "run_name": "{run}", "started_at": "2026-02-15T20:31:00Z", "status": "ok"}}"#),
        )
        .unwrap();
        let lines = [
            adbg_line(&format!("{run}-1"), None, "RUN_START", run, 0),
            adbg_line(&format!("{run}-2"), None, "LLM_CALL", "gpt-4o", 1),
            format!(
                r#"{{"spec_version": "0.1", "event_id": "{run}-3", "run_id": "live1", "parent_id": "{run}-2", "event_type": "TOOL_CALL", "ts": "2026-02-15T20:31:03.000Z", "duration_ms": 5, "name": "lookup_order", "payload": {{"tool_name": "lookup_order", "args": {{"id": 7}}, "result": "{result}"}}, "meta": {{}}}}"#
            ),
            adbg_line(&format!("{run}-4"), None, "LLM_CALL", "gpt-4o", 4),
        ];
        std::fs::write(
            dir.join("events.jsonl"),
            lines.map(|l| l.trim_end().to_string()).join("\n") + "\n",
        )
        .unwrap();
    }
    let t = Tmux::start();
    t.launch(d.path().to_str().unwrap());
    t.wait_for("the runs list", |s| s.contains("alpha") && s.contains("beta"));
    t.keys(&["/"]);
    t.type_text("zanzibar");
    let s = t.wait_for("the payload search's result", |s| s.contains("1 run with matches"));
    assert!(s.contains("alpha [1]"), "the count after the name\n{s}");
    assert!(!s.contains("beta"), "the run without the word is filtered out\n{s}");
    t.keys(&["Enter", "Enter"]);
    let s = t.wait_for("the run opened on the match", |s| s.contains("TIMELINE"));
    assert!(
        s.contains("runs › alpha › gpt-4o › lookup_order"),
        "the tool call with the word is selected\n{s}"
    );
    assert!(s.contains("Zanzibar"), "its result is in the detail\n{s}");
    t.keys(&["q"]);
    t.assert_restored();
}

/// `tracetui serve`: spans sent over OTLP/HTTP while the explorer runs appear in the open run
/// under FOLLOW, as a tailed file's events do.
#[test]
fn spans_received_by_serve_appear_under_follow() {
    need_tmux!();
    let d = tempfile::tempdir().unwrap();
    let save = d.path().join("session");
    // A free port, picked by binding to port 0 and letting it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t = Tmux::start();
    t.launch(&format!(
        "serve --http 127.0.0.1:{port} --grpc off --save {}",
        save.display()
    ));
    let span = |id: &str, parent: &str, name: &str, attrs: &str| {
        format!(
            r#"{{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"{id}","parentSpanId":"{parent}","name":"{name}","startTimeUnixNano":"1771187460000000000","endTimeUnixNano":"1771187461000000000","attributes":[{attrs}]}}"#
        )
    };
    let send = |spans: &[String]| {
        let body = format!(
            r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"live-agent"}}}}]}},"scopeSpans":[{{"spans":[{}]}}]}}]}}"#,
            spans.join(",")
        );
        let start = Instant::now();
        loop {
            // The explorer may still be starting: retry until the receiver answers.
            match {
                tls();
                reqwest::blocking::Client::new()
            }
            .post(format!("http://127.0.0.1:{port}/v1/traces"))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            {
                Ok(r) => {
                    assert_eq!(r.status().as_u16(), 200);
                    return;
                }
                Err(e) if start.elapsed() > Duration::from_secs(15) => panic!("no receiver: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    };
    let llm = r#"{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},{"key":"gen_ai.request.model","value":{"stringValue":"plan-model"}}"#;
    send(&[span("00000000000000a1", "00000000000000f0", "chat plan-model", llm)]);
    let s = t.wait_for("the run, opened by itself", |s| s.contains("plan-model"));
    assert!(s.contains("FOLLOW"), "follow mode\n{s}");
    let tool = |n: usize| {
        format!(
            r#"{{"key":"gen_ai.operation.name","value":{{"stringValue":"execute_tool"}}}},{{"key":"gen_ai.tool.name","value":{{"stringValue":"lookup_{n}"}}}}"#
        )
    };
    for i in 0..3 {
        send(&[span(
            &format!("00000000000000b{i}"),
            "00000000000000f0",
            "execute_tool",
            &tool(i),
        )]);
        std::thread::sleep(Duration::from_millis(80));
    }
    let s = t.wait_for("every tool call", |s| s.contains("lookup_2"));
    assert!(s.contains("FOLLOW"), "{s}");
    assert!(s.contains("● live"), "running until its root span ends\n{s}");
    send(&[span(
        "00000000000000f0",
        "",
        "invoke_agent live",
        r#"{"key":"gen_ai.operation.name","value":{"stringValue":"invoke_agent"}}"#,
    )]);
    t.wait_for("the root span, the run no longer live", |s| {
        s.contains("invoke_agent live") && !s.contains("● live")
    });
    t.keys(&["q"]);
    t.assert_restored();
    assert!(save.read_dir().unwrap().count() > 0, "the session was saved");
}

const SAMPLE_SESSION: &str = "7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f";

/// The explorer with no PATH on a fake HOME (only its places), its summary cache private.
fn launch_on_home(t: &Tmux, d: &Path) {
    let home = d.join("home");
    let bin = env!("CARGO_BIN_EXE_tracetui");
    t.type_text(&format!(
        "cd {} && env -u CLAUDE_CONFIG_DIR -u CODEX_HOME -u GEMINI_CLI_HOME -u COPILOT_HOME HOME={h} XDG_DATA_HOME={h}/share XDG_CONFIG_HOME={h}/config TRACETUI_CACHE_DIR={c} {bin}",
        d.display(),
        h = home.display(),
        c = d.join("cache").display(),
    ));
    t.keys(&["Enter"]);
}

/// `ls --format json` of one source: (tool calls, LLM calls, errors, tokens) of its run.
fn ls_counts(path: &Path, cache: &Path) -> (u64, u64, u64, u64) {
    let o = Command::new(env!("CARGO_BIN_EXE_tracetui"))
        .args(["ls", "--format", "json"])
        .arg(path)
        .env("TRACETUI_CACHE_DIR", cache)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value = serde_json::from_str(text.lines().next().expect("one run")).unwrap();
    let n = |k: &str| v[k].as_u64().unwrap_or(0);
    (n("tool_calls"), n("llm_calls"), n("errors"), n("tokens"))
}

/// Whether a screen row shows these counts side by side, as the runs list's columns do
/// (tokens `-` when there are none; digits grouped or not).
fn row_shows(row: &str, (tools, llm, err, tokens): (u64, u64, u64, u64)) -> bool {
    let cells: Vec<String> = row
        .split(|c: char| c.is_whitespace() || c == '│')
        .filter(|c| !c.is_empty())
        .map(|c| c.replace(',', ""))
        .collect();
    let tok = if tokens == 0 {
        "-".to_string()
    } else {
        tokens.to_string()
    };
    let want = [tools.to_string(), llm.to_string(), err.to_string(), tok];
    cells.windows(4).any(|w| w == want)
}

/// Issue 36: a Claude Code session written line by line while the explorer is open (on the
/// standard places) appears, and its row follows each write with the counts `ls` reads from
/// the same bytes.
#[test]
fn a_session_appended_line_by_line_follows_each_write_in_the_open_list() {
    need_tmux!();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let d = tempfile::tempdir().unwrap();
    let proj = d.path().join("home/.claude/projects/-home-ada-weather-app");
    std::fs::create_dir_all(&proj).unwrap();
    let id = "abcdef01-5b7e-4c1d-9e2f-0a1b2c3d4e5f";
    let body = std::fs::read_to_string(root.join(format!("sample-traces/claude-code/{SAMPLE_SESSION}.jsonl")))
        .unwrap()
        .replace(SAMPLE_SESSION, id);
    let t = Tmux::start();
    launch_on_home(&t, d.path());
    t.wait_for("the empty list", |s| s.contains("runs 0"));
    let path = proj.join(format!("{id}.jsonl"));
    let check_cache = d.path().join("check-cache");
    let mut f = std::fs::File::create(&path).unwrap();
    for (n, line) in body.lines().enumerate() {
        use std::io::Write;
        writeln!(f, "{line}").unwrap();
        f.flush().unwrap();
        // The first line is the session's summary alone: nothing to count yet.
        if n == 0 {
            continue;
        }
        let want = ls_counts(&path, &check_cache);
        t.wait_for(&format!("the counts {want:?} after line {}", n + 1), |s| {
            s.contains("runs 1 ") && s.lines().any(|l| l.contains("Fix the flaky") && row_shows(l, want))
        });
    }
    // The whole session: 5 tool calls, 6 LLM calls, 1 error, 7808 tokens (as `ls` of the
    // sample says).
    assert_eq!(ls_counts(&path, &check_cache), (5, 6, 1, 7808));
    t.keys(&["q"]);
    t.assert_restored();
}

/// A Claude Code session of `copies` times the sample's turns (with their own ids): over
/// 512 KiB from about 60 copies, so that its cheap summary has no tokens or cost.
fn long_session(sample: &str, id: &str, name: &str, copies: usize) -> String {
    let mut out = format!("{{\"type\": \"summary\", \"summary\": \"{name}\", \"leafUuid\": \"u099\"}}\n");
    for k in 0..copies {
        for line in sample.lines().skip(1) {
            let l = line
                .replace(SAMPLE_SESSION, id)
                .replace("\"u0", &format!("\"u{k}x"))
                .replace("msg_w", &format!("msg_{k}w"))
                .replace("toolu_w", &format!("toolu_{k}w"));
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// Issue 36: the costliest sessions are the long ones (summarized from their ends, no cost
/// until loaded). Once indexing ends, a sort by cost puts them first.
#[test]
fn a_cost_sort_puts_the_long_costly_sessions_first_once_indexed() {
    need_tmux!();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let d = tempfile::tempdir().unwrap();
    let proj = d.path().join("home/.claude/projects/-home-ada-weather-app");
    std::fs::create_dir_all(&proj).unwrap();
    let sample =
        std::fs::read_to_string(root.join(format!("sample-traces/claude-code/{SAMPLE_SESSION}.jsonl"))).unwrap();
    for k in 0..3 {
        let id = format!("0000000{k}-5b7e-4c1d-9e2f-0a1b2c3d4e5f");
        let body = long_session(&sample, &id, &format!("Long costly session {k}"), 70 + 10 * k);
        assert!(body.len() > 512 * 1024);
        std::fs::write(proj.join(format!("{id}.jsonl")), body).unwrap();
    }
    for k in 0..6 {
        let id = format!("1000000{k}-5b7e-4c1d-9e2f-0a1b2c3d4e5f");
        std::fs::write(proj.join(format!("{id}.jsonl")), sample.replace(SAMPLE_SESSION, &id)).unwrap();
    }
    // Settled (the summary cache keeps only what was not written in the last seconds).
    let old = std::time::SystemTime::now() - Duration::from_secs(60);
    for e in std::fs::read_dir(&proj).unwrap() {
        std::fs::File::options()
            .write(true)
            .open(e.unwrap().path())
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let t = Tmux::start();
    launch_on_home(&t, d.path());
    t.wait_for("the list", |s| s.contains("runs 9 "));
    // Newest first → by name → longest first → most tokens first → costliest first.
    t.keys(&["s", "s", "s", "s"]);
    let s = t.wait_for("indexing done under a cost sort", |s| {
        s.contains("costliest first") && !s.contains("indexing") && !s.contains("partial")
    });
    let rows: Vec<&str> = s
        .lines()
        .filter(|l| l.contains("Long costly session") || l.contains("Fix the flaky"))
        .collect();
    assert_eq!(rows.len(), 9, "{s}");
    // The longest (most copies, costliest) first.
    for (i, k) in [2, 1, 0].iter().enumerate() {
        assert!(rows[i].contains(&format!("Long costly session {k}")), "{s}");
        assert!(
            rows[i].contains('$') && !rows[i].trim_end_matches('│').trim_end().ends_with('-'),
            "{s}"
        );
    }
    assert!(!s.contains('≥'), "the total is whole: {s}");
    t.keys(&["q"]);
    t.assert_restored();
}

/// reqwest is built with rustls and no bundled crypto provider (the clickhouse:// client
/// installs ring before it makes a client): a test's clients need it installed too.
fn tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
