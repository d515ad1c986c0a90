//! The explorer's live behaviour without a terminal: the real loader and watcher threads feed
//! `update` while a writer thread reproduces agents' on-disk lifecycles (AgentDbg: run.json
//! running, events appended one by one, some in two writes, run.json replaced; Maida: child
//! spans, meta.json replaced by rename, then the root span). Every event must reach the view
//! exactly once and in order, and follow mode must keep the last event selected.

use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};
use tracetui::model::RunStatus;
use tracetui::tui::action::{Action, Command};
use tracetui::tui::keymap::Keymap;
use tracetui::tui::live::{Job, LiveOptions, Shared, spawn_loader, spawn_watcher};
use tracetui::tui::state::{Effect, RunView, State, View, read};
use tracetui::tui::update::update;

struct Harness {
    s: State,
    tx: Sender<Action>,
    rx: Receiver<Action>,
    sh: Shared,
    opts: LiveOptions,
}

impl Harness {
    fn new(follow: bool) -> Harness {
        let (tx, rx) = channel();
        let mut s = State::new(Keymap::default(), (120, 40));
        s.follow = follow;
        Harness {
            s,
            tx,
            rx,
            sh: Shared::default(),
            // A short poll keeps the test fast where notify is slow to arm.
            opts: LiveOptions {
                poll: Duration::from_millis(50),
                poll_only: false,
                ..Default::default()
            },
        }
    }

    /// Open a run source directly, as the app does for a LoadRun effect.
    fn open(&mut self, path: &Path) {
        let d = tracetui::source::discover(&[path.to_path_buf()], None);
        let run = d.runs.first().expect("a run").clone();
        self.s.load_gen += 1;
        self.s.pending_entry = None;
        self.start(Job {
            run,
            index: 0,
            id: String::new(),
            generation: self.s.load_gen,
        });
    }

    fn start(&mut self, job: Job) {
        self.sh.wanted.store(job.generation, Ordering::Relaxed);
        spawn_loader(job, self.tx.clone(), self.sh.clone(), self.opts);
    }

    /// Run the effects the way the app does (loads start loaders; searches are run here).
    fn effects(&mut self) {
        for e in std::mem::take(&mut self.s.effects) {
            match e {
                Effect::LoadRun {
                    generation,
                    run,
                    index,
                    id,
                } => self.start(Job {
                    run,
                    index,
                    id,
                    generation,
                }),
                Effect::Search {
                    generation,
                    trace,
                    from,
                    query,
                    cancel,
                } => tracetui::search::search_in(
                    || read(&trace),
                    from,
                    &query,
                    &cancel,
                    |batch| {
                        let _ = self.tx.send(Action::SearchBatch {
                            generation,
                            from,
                            batch,
                        });
                    },
                ),
                // these tests compare no runs, copy nothing and list no store
                Effect::Copy(_)
                | Effect::Page(_)
                | Effect::PageFile(_)
                | Effect::Edit(_)
                | Effect::Diff { .. }
                | Effect::Stats(_)
                | Effect::Compare { .. }
                | Effect::Branches { .. }
                | Effect::RunsSearch { .. }
                | Effect::Export(_)
                | Effect::MoreRuns => {}
            }
        }
    }

    /// Apply what the background threads send until `done` holds; `check` runs after every
    /// run update.
    fn pump(&mut self, what: &str, mut check: impl FnMut(&State), done: impl Fn(&State) -> bool) {
        let t0 = Instant::now();
        while !done(&self.s) {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "timed out waiting for {what}; view: {:?}",
                self.s.run.as_ref().map(ids)
            );
            if let Ok(a) = self.rx.recv_timeout(Duration::from_millis(50)) {
                let grew = matches!(a, Action::RunUpdate { .. });
                update(&mut self.s, a);
                self.effects();
                if grew {
                    check(&self.s);
                }
            }
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.sh.wanted.store(u64::MAX, Ordering::Relaxed);
    }
}

/// The source ids of the view's trace, in arrival order.
fn ids(r: &RunView) -> Vec<String> {
    let t = read(&r.trace);
    (0..t.len() as u32)
        .map(|i| t.str(t.event(i).source_id).to_string())
        .collect()
}

/// The source ids of the visible rows, top to bottom.
fn row_ids(r: &RunView) -> Vec<String> {
    let t = read(&r.trace);
    r.rows
        .iter()
        .map(|row| t.str(t.event(row.ev).source_id).to_string())
        .collect()
}

fn status(r: &RunView) -> RunStatus {
    read(&r.trace).meta.status
}

/// The events of a view are a prefix of what was written: none twice, none out of order.
fn prefix_of(written: &[String]) -> impl Fn(&State) + '_ {
    move |s: &State| {
        let Some(r) = s.run.as_ref() else { return };
        let got = ids(r);
        assert!(got.len() <= written.len(), "more events than written: {got:?}");
        assert_eq!(got[..], written[..got.len()], "events out of order or repeated");
        let mut rows = row_ids(r);
        rows.sort();
        rows.dedup();
        assert_eq!(rows.len(), r.rows.len(), "an event on two rows");
        if s.follow && r.following() {
            assert_eq!(r.selected + 1, r.rows.len());
        }
    }
}

fn append(p: &Path, s: &str) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(p).unwrap();
    f.write_all(s.as_bytes()).unwrap();
}

fn replace(p: &Path, s: &str) {
    let tmp = p.with_extension("json.tmp");
    std::fs::write(&tmp, s).unwrap();
    std::fs::rename(&tmp, p).unwrap();
}

fn adbg(run: &str, id: &str, parent: Option<&str>, ty: &str, k: u64) -> String {
    format!(
        "{}\n",
        json!({"spec_version": "0.1", "event_id": id, "run_id": run, "parent_id": parent,
               "event_type": ty, "ts": format!("2026-02-15T20:31:{:02}.{:03}Z", 5 + k / 1000, k % 1000),
               "duration_ms": 1, "name": format!("{ty}-{id}"), "payload": {"k": k}, "meta": {}})
    )
}

fn run_json(run: &str, status: &str) -> String {
    json!({"spec_version": "0.1", "run_id": run, "run_name": run, "started_at": "2026-02-15T20:31:05.000Z",
           "status": status, "counts": {"llm_calls": 0, "tool_calls": 0, "errors": 0}})
    .to_string()
}

/// The lines of an AgentDbg run: a root, LLM calls with tool calls under them, the end
/// (RUN_END completes the root event: it is no event of its own).
fn agentdbg_lines(run: &str, steps: u64) -> Vec<(String, String)> {
    let mut out = vec![("a".to_string(), adbg(run, "a", None, "RUN_START", 0))];
    let mut k = 1;
    for s in 0..steps {
        let l = format!("l{s}");
        out.push((l.clone(), adbg(run, &l, Some("a"), "LLM_CALL", k)));
        k += 1;
        for c in 0..3 {
            let t = format!("t{s}.{c}");
            out.push((t.clone(), adbg(run, &t, Some(&l), "TOOL_CALL", k)));
            k += 1;
        }
    }
    out.push(("z".to_string(), adbg(run, "z", Some("a"), "RUN_END", k)));
    out
}

#[test]
fn agentdbg_lifecycle_reaches_the_view_once_in_order_and_follow_keeps_the_last_event() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("r1");
    std::fs::create_dir(&run).unwrap();
    replace(&run.join("run.json"), &run_json("r1", "running"));
    let lines = agentdbg_lines("r1", 8);
    let written: Vec<String> = lines.iter().map(|(id, _)| id.clone()).filter(|id| id != "z").collect();
    let mut h = Harness::new(true);
    h.open(&run);
    h.pump("the view", |_| {}, |s| s.run.is_some());
    assert_eq!(h.s.view, View::Run);
    let r = h.s.run.as_ref().unwrap();
    assert!(r.live.watched && r.followable(true));
    assert_eq!(status(r), RunStatus::Running);

    let events = run.join("events.jsonl");
    let writer = {
        let (events, run) = (events.clone(), run.clone());
        std::thread::spawn(move || {
            for (i, (_, line)) in lines.iter().enumerate() {
                if i % 5 == 2 {
                    // one event in two writes: the first half waits for its newline
                    let (a, b) = line.split_at(line.len() / 2);
                    append(&events, a);
                    std::thread::sleep(Duration::from_millis(30));
                    append(&events, b);
                } else {
                    append(&events, line);
                }
                std::thread::sleep(Duration::from_millis(15));
            }
            replace(&run.join("run.json"), &run_json("r1", "ok"));
        })
    };
    let n = written.len();
    h.pump("every event", prefix_of(&written), |s| {
        s.run
            .as_ref()
            .is_some_and(|r| r.counts.events == n && status(r) == RunStatus::Ok)
    });
    writer.join().unwrap();
    let r = h.s.run.as_ref().unwrap();
    assert_eq!(ids(r), written);
    assert_eq!(row_ids(r), written, "written in tree order: rows in the same order");
    assert_eq!(r.selected + 1, r.rows.len(), "follow: the last event is selected");
    assert_eq!(r.counts.tool_calls, 24);
    assert!(!r.followable(false), "a finished run is not live");

    // Truncated and written again: the view starts over with what is there now.
    std::fs::write(
        &events,
        adbg("r1", "a", None, "RUN_START", 0) + &adbg("r1", "x", Some("a"), "ERROR", 1),
    )
    .unwrap();
    h.pump(
        "the truncated run",
        |_| {},
        |s| {
            s.run
                .as_ref()
                .is_some_and(|r| ids(r) == ["a".to_string(), "x".to_string()])
        },
    );
    assert_eq!(h.s.run.as_ref().unwrap().rows.len(), 2);
}

#[test]
fn scrolling_up_pauses_and_counts_new_events_collapsed_and_filter_survive() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("r2");
    std::fs::create_dir(&run).unwrap();
    replace(&run.join("run.json"), &run_json("r2", "running"));
    let lines = agentdbg_lines("r2", 6);
    let events = run.join("events.jsonl");
    for (_, l) in &lines[..9] {
        append(&events, l);
    }
    let mut h = Harness::new(false);
    h.open(&run);
    h.pump(
        "the first events",
        |_| {},
        |s| s.run.as_ref().is_some_and(|r| r.counts.events == 9),
    );
    // Opened without --follow: at the top, not following.
    let r = h.s.run.as_ref().unwrap();
    assert_eq!(r.selected, 0);
    assert!(!r.following());
    // Collapse the first LLM call (row 1), filter on tool calls.
    update(&mut h.s, Action::Cmd(Command::Down));
    update(&mut h.s, Action::Cmd(Command::Collapse));
    assert_eq!(h.s.run.as_ref().unwrap().rows.len(), 6, "l0's three tools hidden");
    for (_, l) in &lines[9..13] {
        append(&events, l);
    }
    h.pump(
        "more events",
        |_| {},
        |s| s.run.as_ref().is_some_and(|r| r.counts.events == 13),
    );
    let r = h.s.run.as_ref().unwrap();
    assert_eq!(r.live.unseen, 4, "PAUSED counts what arrived below");
    assert_eq!(r.rows.len(), 10, "still collapsed: 13 events less l0's three tools");
    assert_eq!(
        read(&r.trace).name(r.selected_event().unwrap()),
        "LLM_CALL-l0",
        "selection kept"
    );
    // G follows again; then new events keep the last one selected.
    update(&mut h.s, Action::Cmd(Command::Bottom));
    assert!(h.s.run.as_ref().unwrap().following());
    assert_eq!(h.s.run.as_ref().unwrap().live.unseen, 0);
    // A filter keeps working as events arrive: only tool calls of l3 and later are new hits.
    update(&mut h.s, Action::Cmd(Command::Filter));
    for c in "kind:tool".chars() {
        update(&mut h.s, Action::Input(c));
    }
    update(&mut h.s, Action::InputSubmit);
    let before = h.s.run.as_ref().unwrap().filter.count;
    assert_eq!(before, 9);
    for (_, l) in &lines[13..] {
        append(&events, l);
    }
    let n = lines.len() - 1;
    h.pump(
        "the rest",
        |_| {},
        |s| s.run.as_ref().is_some_and(|r| r.counts.events == n),
    );
    let r = h.s.run.as_ref().unwrap();
    assert_eq!(r.filter.count, 18, "every tool call matches, the new ones too");
    assert!(r.collapsed.iter().any(|&c| c), "collapsed state survived the updates");
}

fn maida_span(id: &str, parent: Option<&str>, attrs: serde_json::Value, start_ms: u64) -> String {
    format!(
        "{}\n",
        json!({"trace_id": "t1", "span_id": id, "parent_span_id": parent, "name": id,
               "start_time": format!("2026-01-01T00:00:00.{start_ms:03}Z"),
               "end_time": format!("2026-01-01T00:00:00.{:03}Z", start_ms + 1), "attributes": attrs,
               "events": [], "status_code": "OK"})
    )
}

fn maida_meta(dir: &Path, status: &str) {
    let m = json!({"spec_version": "0.2.0", "trace_id": "t1", "run_name": "live-maida", "status": status,
                   "started_at": "2026-01-01T00:00:00Z", "counts": {"tool_calls": 0}});
    replace(&dir.join("meta.json"), &m.to_string());
}

#[test]
fn maida_lifecycle_children_then_replaced_meta_then_the_root() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("m1");
    std::fs::create_dir(&run).unwrap();
    maida_meta(&run, "running");
    let spans = run.join("spans.jsonl");
    std::fs::write(&spans, "").unwrap();
    let mut h = Harness::new(true);
    h.open(&run);
    h.pump("the view", |_| {}, |s| s.run.is_some());
    let children: Vec<String> = (0..6).map(|i| format!("c{i}")).collect();
    let writer = {
        let (run, spans, children) = (run.clone(), spans.clone(), children.clone());
        std::thread::spawn(move || {
            for (i, c) in children.iter().enumerate() {
                append(
                    &spans,
                    &maida_span(c, Some("root"), json!({"maida.tool_name": c}), 100 + i as u64 * 10),
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            maida_meta(&run, "ok");
            std::thread::sleep(Duration::from_millis(40));
            append(&spans, &maida_span("root", None, json!({}), 50));
        })
    };
    let mut written = children.clone();
    written.push("root".into());
    h.pump("the root", prefix_of(&written), |s| {
        s.run
            .as_ref()
            .is_some_and(|r| r.counts.events == 7 && status(r) == RunStatus::Ok)
    });
    writer.join().unwrap();
    let r = h.s.run.as_ref().unwrap();
    assert_eq!(ids(r), written, "arrival order");
    let mut tree = vec!["root".to_string()];
    tree.extend(children);
    assert_eq!(
        row_ids(r),
        tree,
        "the children were adopted by the late root, once each"
    );
    assert_eq!(read(&r.trace).meta.name.as_deref(), Some("live-maida"));
}

fn tree_hash(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p.clone());
                out.push((p, Vec::new()));
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn follow_mode_on_an_empty_directory_opens_the_first_run_that_appears() {
    let d = tempfile::tempdir().unwrap();
    let runs = d.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    let mut h = Harness::new(true);
    h.s.auto_open = true;
    spawn_watcher(vec![runs.clone()], None, None, h.tx.clone(), h.sh.clone(), h.opts, true);
    h.pump("discovery", |_| {}, |s| !s.runs.scanning);
    assert!(h.s.runs.entries.is_empty());
    std::thread::sleep(Duration::from_millis(200)); // the watcher arms
    let run = runs.join("r9");
    std::fs::create_dir(&run).unwrap();
    replace(&run.join("run.json"), &run_json("r9", "running"));
    let lines = agentdbg_lines("r9", 2);
    for (_, l) in &lines[..4] {
        append(&run.join("events.jsonl"), l);
    }
    h.pump(
        "the new run, opened",
        |_| {},
        |s| s.run.as_ref().is_some_and(|r| r.counts.events == 4),
    );
    assert_eq!(h.s.runs.entries.len(), 1);
    assert_eq!(h.s.runs.entries[0].summary.status, RunStatus::Running);
    let before = tree_hash(d.path());
    for (_, l) in &lines[4..] {
        append(&run.join("events.jsonl"), l);
    }
    let after_write = tree_hash(d.path());
    let n = lines.len() - 1;
    h.pump(
        "the rest",
        |_| {},
        |s| s.run.as_ref().is_some_and(|r| r.counts.events == n),
    );
    // The runs list shows the open run's counts as they grow.
    assert_eq!(h.s.runs.entries[0].summary.events, Some(n));
    assert_eq!(
        tree_hash(d.path()),
        after_write,
        "tracetui wrote nothing in the watched directory"
    );
    assert_ne!(before, after_write);
}

/// A source of one trace per line (an OpenAI-chat dataset; Assay episodes are alike) read in
/// many slices: the slices after the first touch other traces than the one shown, and the
/// progress must still move and the load end in the view (it stayed at 0%, loading for ever).
/// The two tests that time a load of many MiB take turns: run together on two cores (in a
/// debug build) the one slowed the other past the time after which its progress must move.
static LARGE_LOADS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn progress_moves_and_the_load_ends_when_the_slices_read_other_traces() {
    let _turn = LARGE_LOADS.lock().unwrap_or_else(|e| e.into_inner());
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("dataset.jsonl");
    let mut out = String::new();
    let mut i = 0;
    // Several of the loader's slices (1 MiB each).
    while out.len() < 6 << 20 {
        out.push_str(
            &json!({"messages": [{"role": "user", "content": format!("question {i} {}", "x".repeat(200))},
                                 {"role": "assistant", "content": format!("answer {i}")}]})
            .to_string(),
        );
        out.push('\n');
        i += 1;
    }
    std::fs::write(&p, &out).unwrap();
    let total = out.len() as u64;
    let mut h = Harness::new(false);
    // Every slice publishes its progress: whether the machine is idle or loaded, a load of
    // several slices reports more than one position on its way.
    h.opts.publish_loading = Duration::ZERO;
    h.opts.hold = Duration::ZERO;
    h.opts.max_slice = tracetui::tui::live::SLICE;
    h.open(&p);
    let mut seen: Vec<Option<tracetui::tui::state::Progress>> = Vec::new();
    let t0 = Instant::now();
    loop {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the load never ended in the view; progress seen: {:?}",
            seen.iter().map(|p| p.map(|p| p.bytes)).collect::<Vec<_>>()
        );
        let Ok(a) = h.rx.recv_timeout(Duration::from_millis(50)) else {
            continue;
        };
        if let Action::RunUpdate { loading, .. } = &a {
            seen.push(*loading);
        }
        update(&mut h.s, a);
        h.effects();
        if h.s.run.as_ref().is_some_and(|r| r.live.loading.is_none()) {
            break;
        }
    }
    let r = h.s.run.as_ref().unwrap();
    assert!(r.counts.events > 0, "the first conversation is shown");
    let bytes: Vec<u64> = seen.iter().flatten().map(|p| p.bytes).collect();
    assert!(
        bytes.windows(2).all(|w| w[0] <= w[1]),
        "progress only moves on: {bytes:?}"
    );
    assert!(seen.iter().flatten().all(|p| p.total == total && p.bytes < total));
    assert_eq!(seen.last(), Some(&None), "the last update ends the load");
    // A load of several slices reported its way there.
    let mut distinct = bytes.clone();
    distinct.dedup();
    assert!(distinct.len() >= 2, "progress stood still: {bytes:?}");
}

/// A whole document (a SWE-agent trajectory, built only once read to its end, where its status
/// comes): the view gets the steps read first as soon as there are some, with the load's
/// progress, then the whole run in place of them.
#[test]
fn a_large_document_shows_its_first_events_while_it_loads() {
    let _turn = LARGE_LOADS.lock().unwrap_or_else(|e| e.into_inner());
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("big.traj");
    let mut out = String::from(r#"{"environment": "swe_main", "trajectory": ["#);
    let mut steps = 0;
    // Past the size under which a load ends too soon to show a part (32 MiB).
    while out.len() < 48 << 20 {
        if steps > 0 {
            out.push_str(",\n");
        }
        let step = json!({"action": format!("open f{steps}.py"), "observation": "x".repeat(2000), "response": "r"});
        out.push_str(&step.to_string());
        steps += 1;
    }
    out.push_str(r#"], "info": {"exit_status": "submitted"}}"#);
    std::fs::write(&p, &out).unwrap();
    let mut h = Harness::new(false);
    h.open(&p);
    let mut seen: Vec<(Option<tracetui::tui::state::Progress>, usize, RunStatus)> = Vec::new();
    let t0 = Instant::now();
    loop {
        assert!(t0.elapsed() < Duration::from_secs(30), "the load never ended: {seen:?}");
        let Ok(a) = h.rx.recv_timeout(Duration::from_millis(50)) else {
            continue;
        };
        let update_seen = matches!(a, Action::RunUpdate { .. });
        update(&mut h.s, a);
        h.effects();
        if update_seen && let Some(r) = h.s.run.as_ref() {
            seen.push((r.live.loading, r.counts.events, status(r)));
            if r.live.loading.is_none() {
                break;
            }
        }
    }
    let (first, last) = (seen[0], seen[seen.len() - 1]);
    let total = out.len() as u64;
    assert!(
        first.0.is_some_and(|p| p.bytes < total && p.total == total),
        "the first update is a part, with the progress: {seen:?}"
    );
    assert!(first.1 > 1 && first.1 < 2 * steps + 1, "{seen:?}");
    assert_eq!(first.2, RunStatus::Running, "the status is not known before the end");
    assert_eq!((last.1, last.2), (2 * steps + 1, RunStatus::Ok));
    let r = h.s.run.as_ref().unwrap();
    assert_eq!(r.rows.len(), 2 * steps + 1, "every event has its row");
    let ids = ids(r);
    assert_eq!(
        ids.last().map(String::as_str),
        Some(format!("trajectory[{}]", steps - 1).as_str())
    );
}

/// An Inspect AI log opened on its own: its first sample is read alone and shown, then every
/// sample is listed, and another one opens alone too (the whole log was read for each).
#[test]
fn a_log_of_samples_lists_them_all_and_opens_each_alone() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/inspect-ai/agentic.eval");
    let mut h = Harness::new(false);
    h.open(&path);
    h.pump(
        "the first sample and the list of samples",
        |_| {},
        |s| s.run.is_some() && s.runs.entries.len() == 2,
    );
    let id_of = |s: &State| read(&s.run.as_ref().unwrap().trace).meta.id.clone();
    let ids: Vec<String> = h.s.runs.entries.iter().map(|e| e.summary.id.clone()).collect();
    assert_eq!(id_of(&h.s), ids[0]);
    // The open sample's row has what its load found; the log's summaries have no counts.
    let open = &h.s.runs.entries[0].summary;
    let loaded = read(&h.s.run.as_ref().unwrap().trace).counts();
    assert_eq!(open.tool_calls, Some(loaded.tool_calls), "{open:?}");
    let e = h.s.runs.entries[1].clone();
    h.s.load_gen += 1;
    h.s.pending_entry = Some(1);
    h.start(Job {
        run: e.run.clone(),
        index: e.index,
        id: e.summary.id.clone(),
        generation: h.s.load_gen,
    });
    let want = ids[1].clone();
    h.pump(
        "the second sample",
        |_| {},
        |s| s.run.as_ref().is_some_and(|_| id_of(s) == want),
    );
    assert!(read(&h.s.run.as_ref().unwrap().trace).len() > 1);
}

/// Codex (issue 35): a sub-agent's rollout that appears beside its parent's while the parent is
/// open joins it under the spawn call, and the runs list keeps one row for the two, whose
/// counts grow with the sub-agent's.
#[test]
fn a_codex_sub_agent_rollout_that_appears_joins_its_open_parent() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex/nested");
    let parent = "rollout-2026-11-20T10-00-00-0196f3a0-1c2d-7e10-9a11-5b0c7d2e4f01.jsonl";
    let sub = "rollout-2026-11-20T10-00-01-0196f3a0-2e4f-7a20-8b22-6c1d8e3f5a02.jsonl";
    let d = tempfile::tempdir().unwrap();
    let day = d.path().join("sessions");
    std::fs::create_dir(&day).unwrap();
    std::fs::copy(fixtures.join(parent), day.join(parent)).unwrap();
    let mut h = Harness::new(false);
    spawn_watcher(vec![day.clone()], None, None, h.tx.clone(), h.sh.clone(), h.opts, true);
    h.pump("discovery", |_| {}, |s| !s.runs.scanning && !s.runs.entries.is_empty());
    update(&mut h.s, Action::Cmd(Command::Open));
    h.effects();
    let calls = |s: &State| s.run.as_ref().map(|r| read(&r.trace).counts().tool_calls);
    h.pump("the parent", |_| {}, |s| calls(s) == Some(4));
    std::thread::sleep(Duration::from_millis(200)); // the watchers arm
    for line in std::fs::read_to_string(fixtures.join(sub)).unwrap().lines() {
        append(&day.join(sub), &format!("{line}\n"));
    }
    h.pump("the sub-agent, nested", |_| {}, |s| calls(s) == Some(5));
    {
        let t = read(&h.s.run.as_ref().unwrap().trace);
        let spawn = t.find("call_spawn").unwrap();
        assert_eq!(t.name(t.children(spawn)[0]), "agent Hopper");
    }
    h.pump(
        "the list's row",
        |_| {},
        |s| s.runs.entries.len() == 1 && s.runs.entries[0].summary.tool_calls == Some(5),
    );
    // A rescan finds the sub-agent's rollout: still one row.
    std::thread::sleep(Duration::from_millis(300));
    while let Ok(a) = h.rx.try_recv() {
        update(&mut h.s, a);
    }
    assert_eq!(h.s.runs.entries.len(), 1);
}
