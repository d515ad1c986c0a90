//! The tail printer against a model of what was written (issue: `tail --no-tui` lost the
//! first events after a truncation or a recreated run directory). Random appends,
//! truncations, replacements by rename, deletions and recreated run directories, with polls
//! in between: every event in the file at a poll is printed at that poll, once, in order.
//! Events overwritten before any poll could see them are the only ones not printed.

use proptest::prelude::*;
use std::io::Write;
use std::path::Path;
use tracetui::output::Output;
use tracetui::tail::Tailer;
use tracetui::tail::print::Printer;

#[derive(Clone, Debug)]
enum Op {
    Append(usize),
    /// Truncate in place (same inode), then write this many events.
    Truncate(usize),
    /// A new file renamed over the old one.
    Replace(usize),
    Delete,
    /// The whole run directory removed and made again.
    Recreate(usize),
    Poll,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1..6usize).prop_map(Op::Append),
        1 => (0..6usize).prop_map(Op::Truncate),
        1 => (0..6usize).prop_map(Op::Replace),
        1 => Just(Op::Delete),
        1 => (0..6usize).prop_map(Op::Recreate),
        4 => Just(Op::Poll),
    ]
}

/// One AgentDbg line. Lines of equal length end alike (the id is near the start), as real
/// writers' lines often do: a truncation can keep the file's last bytes.
fn event(id: usize) -> String {
    format!(
        "{{\"spec_version\":\"0.1\",\"event_id\":\"e{id:06}\",\"run_id\":\"r\",\"parent_id\":null,\"event_type\":\"TOOL_CALL\",\"ts\":\"2026-01-01T00:00:00.000Z\",\"duration_ms\":1,\"name\":\"t\",\"payload\":{{\"tool_name\":\"t\"}},\"meta\":{{}}}}\n"
    )
}

struct World {
    next: usize,
    /// The events of the file as it is now, since it was last made anew.
    current: Vec<String>,
    /// How many of them were printed.
    printed: usize,
}

impl World {
    fn fresh(&mut self, k: usize) -> String {
        let mut s = String::new();
        for _ in 0..k {
            self.current.push(format!("e{:06}", self.next));
            s.push_str(&event(self.next));
            self.next += 1;
        }
        s
    }

    fn anew(&mut self) {
        self.current.clear();
        self.printed = 0;
    }
}

fn poll(t: &mut Tailer, p: &mut Printer) -> Vec<String> {
    t.rescan();
    let changes = t.poll(None);
    let mut out = Vec::new();
    p.print(t, &changes, &mut out).unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["id"].as_str().unwrap_or("?").to_string()
        })
        .collect()
}

fn run(ops: &[Op], root: &Path) -> Result<(), TestCaseError> {
    let dir = root.join("r");
    let file = dir.join("events.jsonl");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(&file, "").unwrap();
    let mut w = World {
        next: 0,
        current: Vec::new(),
        printed: 0,
    };
    let mut t = Tailer::new(root, None);
    let mut p = Printer::new(Output::Json);
    p.skip_existing(&t);
    for op in ops.iter().chain(std::iter::once(&Op::Poll)) {
        match op {
            Op::Append(k) => {
                let s = w.fresh(*k);
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&file)
                    .unwrap();
                f.write_all(s.as_bytes()).unwrap();
            }
            Op::Truncate(k) => {
                w.anew();
                let s = w.fresh(*k);
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .write(true)
                    .truncate(true)
                    .open(&file)
                    .unwrap();
                f.write_all(s.as_bytes()).unwrap();
            }
            Op::Replace(k) => {
                w.anew();
                let s = w.fresh(*k);
                let tmp = root.join("new.tmp");
                std::fs::write(&tmp, s).unwrap();
                std::fs::rename(&tmp, &file).unwrap();
            }
            Op::Delete => {
                w.anew();
                let _ = std::fs::remove_file(&file);
            }
            Op::Recreate(k) => {
                w.anew();
                std::fs::remove_dir_all(&dir).unwrap();
                std::fs::create_dir_all(&dir).unwrap();
                let s = w.fresh(*k);
                std::fs::write(&file, s).unwrap();
            }
            Op::Poll => {
                let got = poll(&mut t, &mut p);
                let want = w.current[w.printed..].to_vec();
                prop_assert_eq!(&got, &want, "after {:?}", ops);
                w.printed = w.current.len();
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn nothing_is_lost_or_printed_twice(ops in prop::collection::vec(op(), 1..24)) {
        let tmp = tempfile::tempdir().unwrap();
        run(&ops, tmp.path())?;
    }
}

#[test]
fn a_truncation_read_empty_before_the_rewrite_loses_nothing() {
    // The reported case: the restart was taken by a poll that read 0 events, and the first N
    // new events were then skipped as "already printed".
    let tmp = tempfile::tempdir().unwrap();
    run(
        &[
            Op::Append(5),
            Op::Poll,
            Op::Truncate(0),
            Op::Poll,
            Op::Append(7),
            Op::Poll,
        ],
        tmp.path(),
    )
    .unwrap();
}

#[test]
fn a_truncation_rewritten_past_the_old_length_between_polls_is_seen() {
    let tmp = tempfile::tempdir().unwrap();
    run(&[Op::Append(3), Op::Poll, Op::Truncate(5), Op::Poll], tmp.path()).unwrap();
}

#[test]
fn a_line_says_when_a_run_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    std::fs::create_dir_all(&dir).unwrap();
    let line = |id: &str, ty: &str| {
        format!(
            "{{\"event_id\":\"{id}\",\"run_id\":\"r\",\"event_type\":\"{ty}\",\"ts\":\"2026-01-01T00:00:01.000Z\",\"name\":\"x\",\"payload\":{{\"status\":\"ok\",\"tool_name\":\"t\"}}}}\n"
        )
    };
    std::fs::write(
        dir.join("events.jsonl"),
        line("a", "RUN_START") + &line("b", "TOOL_CALL"),
    )
    .unwrap();
    for fmt in [Output::Json, Output::Text] {
        let mut t = Tailer::new(tmp.path(), None);
        // An end is said once the run's files are quiet (3 s for tail); here at once.
        let mut p = Printer::with_quiet(fmt, std::time::Duration::ZERO);
        p.skip_existing(&t);
        let first = t.poll(None);
        let mut out = Vec::new();
        p.print(&t, &first, &mut out).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join("events.jsonl"))
            .unwrap()
            .write_all(line("c", "RUN_END").as_bytes())
            .unwrap();
        let changes = t.poll(None);
        p.print(&t, &changes, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        match fmt {
            Output::Json => {
                let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
                assert_eq!(last["kind"], "run_end", "{text}");
                assert_eq!(last["status"], "ok");
                assert_eq!(last["tool_calls"], 1);
            }
            Output::Text => {
                assert!(
                    text.contains("run ended [ok] · 2 events, 1 tool call, 0 LLM calls, 0 errors"),
                    "{text}"
                );
            }
        }
        // Polling again prints nothing more: the end is said once.
        let mut again = Vec::new();
        let changes = t.poll(None);
        p.print(&t, &changes, &mut again).unwrap();
        assert!(again.is_empty());
        std::fs::write(
            dir.join("events.jsonl"),
            line("a", "RUN_START") + &line("b", "TOOL_CALL"),
        )
        .unwrap();
    }
}
