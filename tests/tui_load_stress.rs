//! The explorer's state machine under a concurrent loader (issue 14): a key loop folds, jumps,
//! filters and scrolls while the real loader thread reads a large run and a writer keeps
//! appending to it. Nothing may hang (a read guard taken twice on one thread deadlocks with a
//! writer that waits between the two: std's RwLock lets no new reader in then), and after
//! every key the view must be consistent with the trace; once the load is over, the view must
//! hold every event, in the order a fresh view of the same trace has.
//!
//! The key loop runs on a thread of its own and the test fails when it does not finish in
//! time: a deadlock is a failure here, not a test that never ends.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracetui::model::{NO_PARENT, Trace};
use tracetui::tui::action::{Action, Command};
use tracetui::tui::keymap::Keymap;
use tracetui::tui::live::{Job, LiveOptions, Shared, spawn_loader};
use tracetui::tui::state::{Effect, RunView, State, View, read};
use tracetui::tui::update::update;

/// One AgentDbg event line, padded so that a run of a few thousand events spans many of the
/// loader's slices.
fn line(id: &str, parent: Option<&str>, ty: &str, k: u64) -> String {
    let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        "{{\"spec_version\":\"0.1\",\"event_id\":\"{id}\",\"run_id\":\"r\",\"parent_id\":{parent},\
         \"event_type\":\"{ty}\",\"ts\":\"2026-02-15T20:{:02}:{:02}.{:03}Z\",\"duration_ms\":1,\
         \"name\":\"{ty}-{id}\",\"payload\":{{\"k\":{k},\"pad\":\"{}\"}},\"meta\":{{}}}}\n",
        (k / 60_000) % 60,
        (k / 1000) % 60,
        k % 1000,
        "x".repeat(300 + (k as usize * 7) % 400)
    )
}

/// A root, then LLM calls with three tool calls each (some of them errors), from step `from`.
fn steps(from: u64, n: u64, out: &mut Vec<u8>) -> u64 {
    let mut events = 0;
    for s in from..from + n {
        let k = s * 4 + 1;
        let l = format!("l{s}");
        out.extend_from_slice(line(&l, Some("a"), "LLM_CALL", k).as_bytes());
        for c in 0..3 {
            let ty = if (s + c) % 17 == 0 { "ERROR" } else { "TOOL_CALL" };
            out.extend_from_slice(line(&format!("t{s}.{c}"), Some(&l), ty, k + 1 + c).as_bytes());
        }
        events += 4;
    }
    events
}

fn run_json(status: &str) -> String {
    format!(
        "{{\"spec_version\":\"0.1\",\"run_id\":\"r\",\"run_name\":\"stress\",\"started_at\":\
         \"2026-02-15T20:00:00.000Z\",\"status\":\"{status}\",\"counts\":{{}}}}"
    )
}

/// A run of `n` steps on disk; returns its directory and its event count.
fn big_run(dir: &Path, n: u64) -> (std::path::PathBuf, u64) {
    let run = dir.join("r");
    std::fs::create_dir(&run).unwrap();
    std::fs::write(run.join("run.json"), run_json("running")).unwrap();
    let mut out = line("a", None, "RUN_START", 0).into_bytes();
    let events = 1 + steps(0, n, &mut out);
    std::fs::write(run.join("events.jsonl"), out).unwrap();
    (run, events)
}

/// A small deterministic generator (xorshift): the same seed plays the same keys.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The view agrees with its trace: rows name events the view knows, once each, at their
/// depth, under a parent that is on an earlier row and expanded; the selection is on a row.
fn check_view(r: &RunView, what: &str) {
    let t = read(&r.trace);
    assert!(
        r.selected < r.rows.len().max(1),
        "{what}: selection {} past {} rows",
        r.selected,
        r.rows.len()
    );
    let mut on_row = vec![false; t.len()];
    for (i, row) in r.rows.iter().enumerate() {
        let ev = row.ev as usize;
        assert!(ev < t.len(), "{what}: row {i} names event {ev} of {}", t.len());
        assert!(!on_row[ev], "{what}: event {ev} on two rows");
        on_row[ev] = true;
        assert_eq!(row.depth as usize, t.depth(row.ev), "{what}: depth of row {i}");
        let p = t.event(row.ev).parent;
        if p != NO_PARENT && !r.filter.active() {
            assert!(on_row[p as usize], "{what}: row {i}'s parent is not above it");
            assert!(!r.collapsed[p as usize], "{what}: row {i} is under a collapsed event");
        }
    }
}

/// The keys played: moves, folds, jumps, the detail pane, a filter and its removal.
const KEYS: &[Command] = &[
    Command::Down,
    Command::Down,
    Command::Up,
    Command::PageDown,
    Command::PageUp,
    Command::Top,
    Command::Bottom,
    Command::Collapse,
    Command::Collapse,
    Command::Expand,
    Command::Expand,
    Command::CollapseAll,
    Command::ExpandAll,
    Command::NextError,
    Command::PrevTool,
    Command::NextLlm,
    Command::NextMatch,
    Command::Follow,
    Command::Open,
    Command::Wrap,
    Command::Raw,
    Command::Filter,
];

struct Loop {
    s: State,
    tx: Sender<Action>,
    rx: Receiver<Action>,
    sh: Shared,
}

impl Loop {
    /// Apply what the loader sent; run effects the way the app does (searches on a thread).
    fn drain(&mut self) {
        while let Ok(a) = self.rx.try_recv() {
            update(&mut self.s, a);
            if let Some(r) = self.s.run.as_ref() {
                check_view(r, "after an update");
            }
        }
        for e in std::mem::take(&mut self.s.effects) {
            if let Effect::Search {
                generation,
                trace,
                from,
                query,
                cancel,
            } = e
            {
                let tx = self.tx.clone();
                std::thread::spawn(move || {
                    tracetui::search::search_in(
                        || read(&trace),
                        from,
                        &query,
                        &cancel,
                        |batch| {
                            let _ = tx.send(Action::SearchBatch {
                                generation,
                                from,
                                batch,
                            });
                        },
                    )
                });
            }
        }
    }

    fn key(&mut self, c: Command) {
        if c == Command::Filter {
            // A filter typed and applied, or the active one removed (Back in the tree).
            if self.s.run.as_ref().is_some_and(|r| r.filter.active()) {
                if let Some(r) = self.s.run.as_mut() {
                    r.focus = tracetui::tui::state::Pane::Tree;
                }
                update(&mut self.s, Action::Cmd(Command::Back));
            } else {
                update(&mut self.s, Action::Cmd(Command::Filter));
                for ch in "kind:tool".chars() {
                    update(&mut self.s, Action::Input(ch));
                }
                update(&mut self.s, Action::InputSubmit);
            }
        } else {
            update(&mut self.s, Action::Cmd(c));
        }
        if c == Command::Open {
            // Back to the tree pane (the detail pane has keys of its own).
            update(&mut self.s, Action::Cmd(Command::PrevPane));
        }
        assert_eq!(self.s.view, View::Run, "the keys stay in the run view");
        if let Some(r) = self.s.run.as_ref() {
            check_view(r, &format!("after {c:?}"));
        }
    }
}

/// Play random keys while `run` loads and a writer appends `more` steps; returns the final
/// state once the load is over and the last append is in.
fn play(run: &Path, seed: u64, more: u64, expected: u64) -> State {
    let (tx, rx) = channel();
    let mut s = State::new(Keymap::default(), (120, 40));
    s.load_gen = 1;
    let sh = Shared::default();
    sh.wanted.store(1, Ordering::Relaxed);
    let d = tracetui::source::discover(&[run.to_path_buf()], None);
    let job = Job {
        run: d.runs.first().expect("a run").clone(),
        index: 0,
        id: String::new(),
        generation: 1,
    };
    let opts = LiveOptions {
        poll: Duration::from_millis(20),
        poll_only: false,
        ..Default::default()
    };
    spawn_loader(job, tx.clone(), sh.clone(), opts);
    // The writer keeps the loader taking its write lock after the initial load too.
    let writing = Arc::new(AtomicBool::new(true));
    let writer = {
        let events = run.join("events.jsonl");
        let writing = writing.clone();
        let first = (expected - 1) / 4;
        std::thread::spawn(move || {
            for k in 0..more {
                let mut out = Vec::new();
                steps(first + k, 1, &mut out);
                let mut f = std::fs::OpenOptions::new().append(true).open(&events).unwrap();
                f.write_all(&out).unwrap();
                std::thread::sleep(Duration::from_millis(3));
            }
            writing.store(false, Ordering::Release);
        })
    };
    let mut l = Loop { s, tx, rx, sh };
    let mut rng = Rng(seed.max(1));
    let total = expected + more * 4;
    let t0 = Instant::now();
    let mut keys = 0u64;
    let mut while_loading = 0u64;
    loop {
        l.drain();
        if l.s.run.is_some() {
            let c = KEYS[rng.below(KEYS.len())];
            // Against the loader: its first load, or the appends it follows (each one a write
            // lock too). The first load alone now often ends within a few keys.
            if writing.load(Ordering::Acquire) || l.s.run.as_ref().is_some_and(|r| r.live.loading.is_some()) {
                while_loading += 1;
            }
            l.key(c);
            keys += 1;
            if keys.is_multiple_of(8) {
                update(&mut l.s, Action::Tick);
            }
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
        let done = !writing.load(Ordering::Acquire)
            && l.s
                .run
                .as_ref()
                .is_some_and(|r| r.live.loading.is_none() && r.order.len() as u64 == total);
        if done && keys > 200 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(45),
            "the load did not end: {} of {total} events in the view",
            l.s.run.as_ref().map_or(0, |r| r.order.len())
        );
    }
    writer.join().unwrap();
    l.sh.wanted.store(u64::MAX, Ordering::Relaxed);
    assert!(
        while_loading >= 10,
        "only {while_loading} keys while the run loaded or grew: the test played against no load"
    );
    l.s
}

/// Run `f` on a thread; fail if it has not returned within `limit` (a deadlock).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = channel();
    let panicked = Arc::new(Mutex::new(None::<String>));
    let p = panicked.clone();
    std::thread::spawn(
        move || match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(v) => {
                let _ = tx.send(v);
            }
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                *p.lock().unwrap() = Some(msg);
                drop(tx);
            }
        },
    );
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            panic!("{}", panicked.lock().unwrap().take().unwrap_or_default())
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("the key loop did not finish within {limit:?}: the view and the loader deadlocked")
        }
    }
}

/// A fresh view of the final trace: every event, in display order.
fn fresh_rows(t: &Trace) -> Vec<u32> {
    t.walk().into_iter().map(|(i, _)| i).collect()
}

fn stress(seed: u64, steps_on_disk: u64, more: u64) {
    let d = tempfile::tempdir().unwrap();
    let (run, events) = big_run(d.path(), steps_on_disk);
    let run2 = run.clone();
    let mut s = within(Duration::from_secs(60), move || play(&run2, seed, more, events));
    // Everything arrived once, and the view agrees with a fresh one of the same trace.
    if s.run.as_ref().is_some_and(|r| r.filter.active()) {
        update(&mut s, Action::Cmd(Command::Back));
    }
    update(&mut s, Action::Cmd(Command::ExpandAll));
    let r = s.run.as_ref().unwrap();
    let t = read(&r.trace);
    let total = (events + more * 4) as usize;
    assert_eq!(t.len(), total);
    let rows: Vec<u32> = r.rows.iter().map(|row| row.ev).collect();
    assert_eq!(rows, fresh_rows(&t), "the rows of a fully expanded view");
    assert_eq!(r.counts.events, total);
    assert_eq!(r.counts.tool_calls, t.counts().tool_calls, "counts caught up");
    let _ = std::fs::remove_dir_all(d.path());
}

#[test]
fn folding_and_random_keys_while_a_large_run_loads_never_hang() {
    // ~75 MB on disk: many of the loader's slices, each a write lock the keys run into (at
    // 20 MB the load now ends after some 20 keys).
    for seed in [1u64, 0x9e37_79b9_7f4a_7c15] {
        stress(seed, 30_000, 300);
    }
}
