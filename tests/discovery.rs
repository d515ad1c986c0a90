//! `tracetui` with no PATH: the standard places in a fake HOME and current directory (issue 15),
//! and scans that say what their limits left out.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// One agent's place and a fixture of its format to put there. When a format is added, its
/// agent's place gets a row: `dest` is where the agent writes a run, below the fake HOME
/// (`home/…`) or the current directory (`cwd/…`); `fixture` a file or run directory of it.
struct Row {
    /// The AGENT of the place in `tracetui sources`.
    agent: &'static str,
    /// The format `ls` reports for the run.
    format: &'static str,
    dest: &'static str,
    fixture: &'static str,
    /// The PROJECT `ls` reports.
    project: &'static str,
}

const ROWS: &[Row] = &[
    Row {
        agent: "claude-code",
        format: "claude-code",
        dest: "home/.claude/projects/-home-ada-weather-app/7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f.jsonl",
        fixture: "sample-traces/claude-code/7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f.jsonl",
        project: "-home-ada-weather-app",
    },
    Row {
        agent: "codex",
        format: "codex",
        dest: "home/.codex/sessions/2026/04/03/rollout-2026-04-03T09-12-44-0196a7c2-3f41-7d10-9b55-4e2a8c1d0f37.jsonl",
        fixture: "sample-traces/codex/rollout-2026-04-03T09-12-44-0196a7c2-3f41-7d10-9b55-4e2a8c1d0f37.jsonl",
        project: "2026/04/03",
    },
    Row {
        agent: "agentdbg, maida",
        format: "agentdbg",
        dest: "cwd/runs/agentdbg-refund-ok",
        fixture: "sample-traces/runs/agentdbg-refund-ok",
        project: "",
    },
    Row {
        agent: "assay, maida",
        format: "maida",
        dest: "cwd/traces/maida-research-ok",
        fixture: "sample-traces/runs/maida-research-ok",
        project: "",
    },
    Row {
        agent: "assay",
        format: "assay",
        dest: "cwd/.assay/traces/support-episodes.jsonl",
        fixture: "sample-traces/assay/support-episodes.jsonl",
        project: "",
    },
    Row {
        agent: "openai-chat",
        format: "openai-chat",
        dest: "cwd/.invariant/weather-chat.json",
        fixture: "sample-traces/invariant/weather-chat.json",
        project: "",
    },
    Row {
        agent: "agentsnap",
        format: "agentsnap",
        dest: "cwd/__agentsnap__/booking.snap.json",
        fixture: "sample-traces/diff/booking.snap.json",
        project: "",
    },
    Row {
        agent: "gemini-cli",
        format: "gemini-cli",
        dest: "home/.gemini/tmp/5e1b9c7d2f/chats/session-2026-06-10T08-30-9c1d2e3f.jsonl",
        fixture: "sample-traces/gemini-cli/chats/session-2026-06-10T08-30-9c1d2e3f.jsonl",
        project: "5e1b9c7d2f",
    },
    Row {
        agent: "copilot-cli",
        format: "copilot-cli",
        dest: "home/.copilot/session-state/0d9e4c21-7a55-4e0b-9c1f-3b2a6d8e5f10",
        fixture: "sample-traces/copilot-cli/session-state/0d9e4c21-7a55-4e0b-9c1f-3b2a6d8e5f10",
        project: "",
    },
    Row {
        agent: "cursor",
        format: "cursor",
        dest: "home/.cursor/projects/home-ada-weather-app/agent-transcripts/4a7b1c2d-3e4f-4a5b-9c6d-7e8f9a0b1c2d",
        fixture: "sample-traces/cursor/agent-transcripts/4a7b1c2d-3e4f-4a5b-9c6d-7e8f9a0b1c2d",
        project: "home-ada-weather-app",
    },
    Row {
        agent: "opencode",
        format: "opencode",
        dest: "home/.local/share/opencode/storage",
        fixture: "sample-traces/opencode/storage",
        project: "",
    },
    Row {
        agent: "cline",
        format: "cline",
        dest: "home/.cline/data/tasks/1767225600000",
        fixture: "sample-traces/cline/tasks/1767225600000",
        project: "",
    },
    Row {
        agent: "openhands",
        format: "openhands",
        dest: "home/.openhands/conversations/5b1d0c7e9a2f4e61b3c8d4f0a6e2b917",
        fixture: "sample-traces/openhands/conversations/5b1d0c7e9a2f4e61b3c8d4f0a6e2b917",
        project: "",
    },
    Row {
        agent: "inspect-ai",
        format: "inspect-ai",
        dest: "cwd/logs/agentic.eval",
        fixture: "sample-traces/inspect-ai/agentic.eval",
        project: "",
    },
    Row {
        agent: "swe-agent",
        format: "swe-agent",
        dest: "cwd/trajectories/ada/default/stats-mean-empty/stats-mean-empty.traj",
        fixture: "sample-traces/swe-agent/stats-mean-empty.traj",
        project: "ada/default/stats-mean-empty",
    },
    Row {
        agent: "factory-droid",
        format: "factory-droid",
        dest: "home/.factory/sessions/-home-dev-inventory",
        fixture: "sample-traces/factory-droid/-home-dev-inventory",
        project: "-home-dev-inventory",
    },
    Row {
        agent: "kimi-cli",
        format: "kimi-cli",
        dest: "home/.kimi-code/sessions/wd_inventory_9f8e7d6c5b4a/session_5d6e7f80-9a1b-4c2d-8e3f-405162738495",
        fixture: "sample-traces/kimi-cli/wd_inventory_9f8e7d6c5b4a/session_5d6e7f80-9a1b-4c2d-8e3f-405162738495",
        project: "wd_inventory_9f8e7d6c5b4a",
    },
    Row {
        agent: "pi",
        format: "pi",
        dest: "home/.pi/agent/sessions/--home-dev-inventory--/2026-11-23T15-20-00-000Z_2c3d4e5f-6a7b-4c8d-9e0f-a1b2c3d4e5f6.jsonl",
        fixture: "sample-traces/pi/--home-dev-inventory--/2026-11-23T15-20-00-000Z_2c3d4e5f-6a7b-4c8d-9e0f-a1b2c3d4e5f6.jsonl",
        project: "--home-dev-inventory--",
    },
    Row {
        agent: "mistral-vibe",
        format: "mistral-vibe",
        dest: "home/.vibe/logs/session/session_20261124_141500_4e5f6a7b",
        fixture: "sample-traces/mistral-vibe/session/session_20261124_141500_4e5f6a7b",
        project: "",
    },
    Row {
        agent: "gptme",
        format: "gptme",
        dest: "home/.local/share/gptme/logs/2026-11-24-count-the-lines",
        fixture: "sample-traces/gptme/logs/2026-11-24-count-the-lines",
        project: "",
    },
    Row {
        agent: "zed",
        format: "zed",
        dest: "home/.local/share/zed/threads",
        fixture: "sample-traces/zed/threads",
        project: "",
    },
    Row {
        agent: "goose",
        format: "goose",
        dest: "home/.local/share/goose/sessions",
        fixture: "sample-traces/goose/sessions",
        project: "",
    },
    Row {
        agent: "roo-code",
        format: "roo-code",
        dest: "home/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/1767225600000",
        fixture: "sample-traces/roo-code/rooveterinaryinc.roo-cline/tasks/1767225600000",
        project: "",
    },
    Row {
        agent: "kilo-code",
        format: "kilo-code",
        dest: "home/.config/Code/User/globalStorage/kilocode.kilo-code/tasks/1767312000000",
        fixture: "sample-traces/kilo-code/kilocode.kilo-code/tasks/1767312000000",
        project: "",
    },
    Row {
        agent: "iflow",
        format: "iflow",
        dest: "home/.iflow/projects/-home-ada-notes-cli/session-b2f4e6a8-0c1d-4e3f-9a5b-7c8d9e0f1a2b.jsonl",
        fixture: "sample-traces/iflow/session-b2f4e6a8-0c1d-4e3f-9a5b-7c8d9e0f1a2b.jsonl",
        project: "-home-ada-notes-cli",
    },
    Row {
        agent: "qwen-code",
        format: "qwen-code",
        dest: "home/.qwen/projects/-home-ada-notes-cli/chats/4f6a8c0e-2b3d-4e5f-8a9b-0c1d2e3f4a5b.jsonl",
        fixture: "sample-traces/qwen-code/4f6a8c0e-2b3d-4e5f-8a9b-0c1d2e3f4a5b.jsonl",
        project: "-home-ada-notes-cli",
    },
    Row {
        agent: "copilot-chat",
        format: "copilot-chat",
        dest: "home/.config/Code/User/workspaceStorage/5f2a9c0e7b1d4e3f8a6b2c9d0e1f3a4b",
        fixture: "sample-traces/copilot-chat/workspaceStorage/5f2a9c0e7b1d4e3f8a6b2c9d0e1f3a4b",
        project: "5f2a9c0e7b1d4e3f8a6b2c9d0e1f3a4b",
    },
];

/// The agents' own variables, cleared so that the fake HOME decides.
const AGENT_VARS: &[&str] = &[
    "FLATPAK_XDG_DATA_HOME",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "GEMINI_CLI_HOME",
    "COPILOT_HOME",
    "INSPECT_LOG_DIR",
    "FACTORY_DIR",
    "KIMI_CODE_HOME",
    "PI_CODING_AGENT_DIR",
    "VIBE_HOME",
    "GOOSE_PATH_ROOT",
    "QWEN_HOME",
];

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            copy(&e.path(), &to.join(e.file_name()));
        }
    } else {
        std::fs::copy(from, to).unwrap();
    }
}

/// A fake HOME (`root/home`) and current directory (`root/cwd`) holding every row's fixture.
fn fake_home(rows: &[Row]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("home")).unwrap();
    std::fs::create_dir_all(root.path().join("cwd")).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"));
    for r in rows {
        copy(&src.join(r.fixture), &root.path().join(r.dest));
    }
    root
}

/// tracetui in the fake HOME, with every XDG directory below it.
fn in_home(root: &Path, args: &[&str]) -> std::process::Output {
    let home = root.join("home");
    let mut c = Command::cargo_bin("tracetui").unwrap();
    for v in AGENT_VARS {
        c.env_remove(v);
    }
    c.env("HOME", &home)
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .current_dir(root.join("cwd"))
        .args(args)
        .output()
        .unwrap()
}

fn json_lines(out: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A path `tracetui` printed (relative ones are in the current directory), as a full path.
fn full(root: &Path, printed: &str) -> PathBuf {
    let p = Path::new(printed);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join("cwd").join(p)
    }
}

/// Where a row's fixture is, as tracetui should see it.
fn dest(root: &Path, r: &Row) -> PathBuf {
    root.join(r.dest)
}

#[test]
fn sources_and_ls_find_every_agents_runs_in_their_standard_places() {
    let root = fake_home(ROWS);
    let root = root.path();

    let out = in_home(root, &["sources", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let places = json_lines(&out.stdout);
    for r in ROWS {
        let d = dest(root, r);
        let place = places
            .iter()
            .find(|p| p["agent"] == r.agent && d.starts_with(full(root, p["path"].as_str().unwrap())))
            .unwrap_or_else(|| panic!("no place of {} holds {}: {places:?}", r.agent, r.dest));
        assert_eq!(place["exists"], true, "{place}");
        assert!(
            place["runs"].as_u64().unwrap() >= 1,
            "{} finds its run: {place}",
            r.agent
        );
    }
    // Places of agents with nothing on disk are listed, and say they do not exist.
    assert!(places.iter().any(|p| p["exists"] == false), "{places:?}");
    let text = in_home(root, &["sources"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.starts_with("AGENT"), "{text}");
    for r in ROWS {
        assert!(text.contains(r.agent), "{text}");
    }

    let out = in_home(root, &["ls", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let runs = json_lines(&out.stdout);
    for r in ROWS {
        let d = dest(root, r);
        let run = runs
            .iter()
            // A run directory's summary may name its file (a Copilot session's events.jsonl),
            // and a data directory the store in it (OpenCode's storage/).
            .find(|x| {
                let p = full(root, x["path"].as_str().unwrap());
                x["format"] == r.format && (p == d || p.starts_with(&d) || d.starts_with(&p))
            })
            .unwrap_or_else(|| panic!("ls lists {}: {runs:?}", r.dest));
        assert_eq!(run["format"], r.format, "{run}");
        assert_eq!(run["project"], r.project, "{run}");
        assert!(run["source"].is_string(), "{run}");
    }
    assert!(
        !runs.iter().any(|x| x.get("skipped").is_some()),
        "nothing left out: {runs:?}"
    );
    // The text table has the new columns.
    let text = in_home(root, &["ls"]);
    let text = String::from_utf8_lossy(&text.stdout);
    let head = text.lines().next().unwrap();
    assert!(head.contains("AGENT") && head.contains("PROJECT"), "{head}");
    assert!(
        text.contains("ada-weather-app"),
        "the end of a long project shows: {text}"
    );

    // check with no PATH loads them all.
    let out = in_home(root, &["check", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let checked = json_lines(&out.stdout);
    for r in ROWS {
        assert!(
            checked.iter().any(|c| c["format"] == r.format),
            "check loads {}",
            r.format
        );
    }
}

#[test]
fn the_agents_variables_move_their_places() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    for d in ["home", "cwd"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR"));
    copy(
        &src.join(ROWS[0].fixture),
        &root.join("claude-elsewhere/projects/-p/s.jsonl"),
    );
    copy(
        &src.join(ROWS[1].fixture),
        &root.join("codex-elsewhere/sessions/2026/04/03/r.jsonl"),
    );
    let mut c = Command::cargo_bin("tracetui").unwrap();
    for v in AGENT_VARS {
        c.env_remove(v);
    }
    let out = c
        .env("HOME", root.join("home"))
        .env("CLAUDE_CONFIG_DIR", root.join("claude-elsewhere"))
        .env("CODEX_HOME", root.join("codex-elsewhere"))
        .current_dir(root.join("cwd"))
        .args(["sources", "--format", "json"])
        .output()
        .unwrap();
    let places = json_lines(&out.stdout);
    let claude = places.iter().find(|p| p["agent"] == "claude-code").unwrap();
    assert_eq!(claude["env"], "CLAUDE_CONFIG_DIR");
    assert_eq!(claude["runs"], 1, "{claude}");
    let codex = places.iter().find(|p| p["agent"] == "codex").unwrap();
    assert_eq!(codex["env"], "CODEX_HOME");
    assert_eq!(codex["runs"], 1, "{codex}");
}

/// A directory tree deeper than the scan goes.
fn deep_tree(root: &Path, levels: usize) -> PathBuf {
    let mut p = root.to_path_buf();
    for i in 0..levels {
        p = p.join(format!("d{i}"));
    }
    std::fs::create_dir_all(&p).unwrap();
    p
}

#[test]
fn a_scan_that_stops_at_its_depth_says_so_and_check_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"));
    copy(&src.join(ROWS[2].fixture), &dir.path().join("near/run"));
    let deep = deep_tree(dir.path(), 9);
    copy(&src.join(ROWS[2].fixture), &deep.join("far-run"));
    let path = dir.path().to_str().unwrap();

    let out = Command::cargo_bin("tracetui")
        .unwrap()
        .args(["check", "--format", "json", path])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "left-out directories are a finding");
    let v = json_lines(&out.stdout);
    // The line of the scan's own (each trace's line has "skipped" record types too).
    let skipped = v
        .iter()
        .filter(|x| x.get("format").is_none())
        .find_map(|x| x.get("skipped"))
        .expect("a skipped line");
    assert_eq!(skipped["dirs"], 1, "{skipped}");
    assert!(skipped["reason"].as_str().unwrap().contains("levels deep"), "{skipped}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 directory not searched"), "{stderr}");

    let out = Command::cargo_bin("tracetui")
        .unwrap()
        .args(["ls", "--format", "json", path])
        .output()
        .unwrap();
    let v = json_lines(&out.stdout);
    assert_eq!(v.iter().filter(|x| x.get("format").is_some()).count(), 1, "{v:?}");
    assert_eq!(v.last().unwrap()["skipped"]["dirs"], 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not searched"));
}

#[test]
fn known_layouts_are_searched_from_their_roots_wherever_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"));
    // A Codex home five levels down: its YYYY/MM/DD sessions are deeper than the scan's own
    // limit from here, and found all the same.
    let codex = deep_tree(dir.path(), 4).join(".codex/sessions/2026/04/03/rollout-a.jsonl");
    copy(&src.join(ROWS[1].fixture), &codex);
    let claude = deep_tree(dir.path(), 4).join(".claude/projects/-p/s.jsonl");
    copy(&src.join(ROWS[0].fixture), &claude);
    let out = Command::cargo_bin("tracetui")
        .unwrap()
        .args(["check", "--format", "json", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_lines(&out.stdout);
    assert!(v.iter().any(|x| x["format"] == "codex"), "{v:?}");
    assert!(v.iter().any(|x| x["format"] == "claude-code"), "{v:?}");
    assert!(
        !v.iter()
            .any(|x| x.get("format").is_none() && x.get("skipped").is_some()),
        "{v:?}"
    );
}

#[test]
fn a_path_that_does_not_exist_says_so() {
    for cmd in [&["ls"][..], &["check"], &["show"]] {
        let out = Command::cargo_bin("tracetui")
            .unwrap()
            .args(cmd)
            .arg("no/such/dir")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd:?}");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            all.contains("no/such/dir") && all.contains("No such file"),
            "{cmd:?}: {all}"
        );
    }
}
