//! tracetui never writes into a trace directory (DESIGN §6): every non-interactive command
//! runs over `sample-traces/` in place (no copy), and afterwards no file or directory in it has
//! changed — contents, names, types, sizes, permissions and modification times — and nothing
//! was added or removed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

/// What is compared of each entry (access times are not: reading is allowed).
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    kind: &'static str,
    len: u64,
    modified: SystemTime,
    readonly: bool,
    /// File contents, or a symlink's target.
    content: Vec<u8>,
}

fn snapshot(root: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let m = std::fs::symlink_metadata(&p).unwrap();
        let ft = m.file_type();
        let (kind, content) = if ft.is_symlink() {
            (
                "symlink",
                std::fs::read_link(&p).unwrap().into_os_string().into_encoded_bytes(),
            )
        } else if ft.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
            ("dir", Vec::new())
        } else {
            ("file", std::fs::read(&p).unwrap())
        };
        out.insert(
            p.strip_prefix(root).unwrap().to_path_buf(),
            Entry {
                kind,
                len: m.len(),
                modified: m.modified().unwrap(),
                readonly: m.permissions().readonly(),
                content,
            },
        );
    }
    out
}

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tracetui"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// Run a command to its end; returns stdout.
fn run(args: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    let code = out.status.code();
    assert!(
        matches!(code, Some(0..=2)),
        "tracetui {args:?}: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Run `tail --no-tui` with each set of arguments, all at once, for about a second; each must
/// still be following (not have ended) when it is stopped.
fn run_tails(sets: &[&[&str]]) {
    let mut children: Vec<_> = sets
        .iter()
        .map(|args| {
            let child = bin()
                .arg("tail")
                .arg("--no-tui")
                .args(*args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            (args, child)
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1000));
    for (args, child) in &mut children {
        let still_following = child.try_wait().unwrap().is_none();
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(still_following, "tail {args:?} ended by itself instead of following");
    }
}

/// The subcommands `tracetui --help` lists.
fn subcommands() -> Vec<String> {
    let help = run(&["--help"]);
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn no_command_changes_anything_in_the_traces_it_reads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces");
    let before = snapshot(&root);
    assert!(before.len() > 10, "sample-traces is there: {}", before.len());

    // Every subcommand must be run below; a new one fails here until it is added.
    let covered = [
        "check",
        "show",
        "ls",
        "tail",
        "diff",
        "compare",
        "config",
        "completions",
        "man",
        "sources",
        "prices",
        "stats",
        "grep",
        "export",
        "help",
        "serve",
    ];
    for c in subcommands() {
        assert!(
            covered.contains(&c.as_str()),
            "`tracetui {c}` is not covered by the read-only test: run it over sample-traces/ below"
        );
    }

    // serve reads no trace and writes only into a --save DIR it is given: started in
    // sample-traces/ without one, it leaves it as it was (checked by the snapshot below).
    let mut serve = std::process::Command::new(env!("CARGO_BIN_EXE_tracetui"))
        .args(["serve", "--no-tui", "--http", "127.0.0.1:0", "--grpc", "off"])
        .current_dir(&root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let _ = serve.kill();
    let _ = serve.wait();
    for fmt in ["text", "json"] {
        let out = run(&["check", "--format", fmt, "sample-traces"]);
        assert!(out.contains("agentdbg") && out.contains("maida"), "{out}");
        run(&["ls", "--format", fmt, "sample-traces"]);
        run(&["ls", "--format", fmt, "sample-traces/runs"]);
        run(&["ls", "--load", "--format", fmt, "sample-traces"]);
        for by in ["model", "day", "tool", "run", "format"] {
            let out = run(&["stats", "--by", by, "--format", fmt, "sample-traces"]);
            assert!(out.contains("run") && out.contains("bash"), "{out}");
        }
        run(&["grep", "--format", fmt, "-i", "the", "sample-traces"]);
    }
    // Each run on its own, by the path `ls` reports (run directories and trace files).
    let listed = run(&["ls", "--format", "json", "sample-traces"]);
    let mut paths: Vec<String> = listed
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["path"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    paths.sort();
    paths.dedup();
    assert!(paths.len() >= 8, "{paths:?}");
    for p in &paths {
        run(&["show", p]);
        run(&["show", "--format", "json", p]);
        run(&["check", p]);
    }
    // export reads every run and writes only where it is told (here a temporary directory),
    // also when told to write into the traces (refused).
    let out = tempfile::tempdir().unwrap();
    let dir = format!("{}/", out.path().display());
    for to in ["html", "markdown", "otlp-json"] {
        run(&["export", "--to", to, "sample-traces", "-o", &dir]);
        run(&[
            "export",
            "--to",
            to,
            "sample-traces/runs",
            "-o",
            "sample-traces/runs/out/",
        ]);
    }
    let running = "sample-traces/runs/agentdbg-research-running";
    run_tails(&[
        &["sample-traces"],
        &["--from-start", "sample-traces"],
        &["--from-start", "--poll", "50", "--format", "json", "sample-traces"],
        &["--from-start", running],
        &["--poll", "50", running],
        &["--from-start", "sample-traces/assay/support-episodes.jsonl"],
    ]);
    // diff reads both sides (pipes: text and JSON, never the interactive view), also across formats.
    let pairs = [
        (
            "sample-traces/diff/booking.snap.json",
            "sample-traces/diff/booking.current.json",
        ),
        (
            "sample-traces/runs/agentdbg-refund-ok",
            "sample-traces/runs/agentdbg-invoice-error",
        ),
        (
            "sample-traces/diff/booking.snap.json",
            "sample-traces/runs/maida-research-ok",
        ),
        (
            "sample-traces/assay/support-episodes.jsonl",
            "sample-traces/invariant/dataset.jsonl",
        ),
    ];
    for (a, b) in pairs {
        for fmt in ["text", "json"] {
            run(&["diff", "--format", fmt, a, b]);
        }
        run(&["diff", "--strict", "--format", "json", a, b]);
    }
    // compare reads every run it is given: a tree of all the samples, and two sets of runs.
    for fmt in ["text", "json", "markdown"] {
        run(&[
            "compare",
            "--tree",
            "--group-by",
            "task",
            "--format",
            fmt,
            "sample-traces",
        ]);
        run(&[
            "compare",
            "--format",
            fmt,
            "--baseline",
            "sample-traces/repeated/baseline",
            "--current",
            "sample-traces/repeated/current",
        ]);
    }
    // With no PATH: the standard places, with sample-traces as HOME and current directory
    // (its runs/ and traces/ are places).
    for args in [
        &["sources"][..],
        &["sources", "--format", "json"],
        &["ls"],
        &["ls", "--format", "json"],
        &["check"],
    ] {
        let out = bin()
            .args(args)
            .env("HOME", &root)
            .env("XDG_DATA_HOME", &root)
            .env("XDG_CONFIG_HOME", &root)
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(matches!(out.status.code(), Some(0..=2)), "{args:?}: {:?}", out.status);
    }
    run(&["config", "path"]);
    run(&["prices", "gpt-4o"]);
    run(&["completions", "bash"]);
    run(&["man"]);

    let after = snapshot(&root);
    let added: Vec<_> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    let removed: Vec<_> = before.keys().filter(|k| !after.contains_key(*k)).collect();
    assert!(
        added.is_empty() && removed.is_empty(),
        "added {added:?}, removed {removed:?}"
    );
    for (k, b) in &before {
        assert_eq!(b, &after[k], "{} changed", k.display());
    }
}
