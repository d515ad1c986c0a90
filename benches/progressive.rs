//! `cargo bench --bench progressive`: open the 1M-event (2 GB) AgentDbg run the way the
//! explorer does (the loader thread, the shared trace, `update`, a frame every 16 ms) and
//! print: time to the first screen of events, time to the full load, frame times while it
//! loads (lock waits included), `G` + frame while it loads, and peak RSS.
//!
//! The data is made once by
//! `python3 ../shared/bench/gen_traces.py target/bench-data/one-1m --runs 1 --events 1000000`
//! (about 2 GB, a few minutes); without it the bench says so and exits.
//! Not a criterion bench: one load takes seconds and its figures are not per-iteration.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::path::Path;
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::{Duration, Instant};
use tracetui::tui::action::{Action, Command};
use tracetui::tui::keymap::Keymap;
use tracetui::tui::live::{Job, LiveOptions, Shared, spawn_loader};
use tracetui::tui::render::render;
use tracetui::tui::state::{State, View};
use tracetui::tui::theme::Theme;
use tracetui::tui::update::update;

struct Figures {
    first_screen: Duration,
    first_events: usize,
    full: Duration,
    events: usize,
    frames: Vec<Duration>,
    bottoms: Vec<Duration>,
    updates: Vec<Duration>,
    waits: Vec<Duration>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort();
    ms(v[((v.len() - 1) as f64 * p).round() as usize])
}

fn once(run: &tracetui::source::RunRef, generation: u64) -> Figures {
    let (tx, rx) = channel();
    let sh = Shared::default();
    sh.wanted.store(generation, std::sync::atomic::Ordering::Relaxed);
    let theme = Theme::dark();
    let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let mut s = State::new(Keymap::default(), (200, 60));
    s.load_gen = generation;
    let t0 = Instant::now();
    spawn_loader(
        Job {
            run: run.clone(),
            index: 0,
            id: String::new(),
            generation,
        },
        tx,
        sh.clone(),
        LiveOptions::default(),
    );
    let mut f = Figures {
        first_screen: Duration::ZERO,
        first_events: 0,
        full: Duration::ZERO,
        events: 0,
        frames: Vec::new(),
        bottoms: Vec::new(),
        updates: Vec::new(),
        waits: Vec::new(),
    };
    let mut next_frame = Instant::now();
    loop {
        match rx.recv_timeout(next_frame.saturating_duration_since(Instant::now())) {
            Ok(a) => {
                let is_update = matches!(a, Action::RunUpdate { .. });
                let t = Instant::now();
                update(&mut s, a);
                if !is_update {
                    continue;
                }
                let r = s.run.as_ref().expect("the run view opened");
                if f.first_screen.is_zero() {
                    term.draw(|fr| render(fr, &s, &theme)).unwrap();
                    f.first_screen = t0.elapsed();
                    f.first_events = r.counts.events;
                    assert_eq!(s.view, View::Run);
                } else {
                    f.updates.push(t.elapsed());
                }
                if r.live.loading.is_none() {
                    f.full = t0.elapsed();
                    f.events = r.counts.events;
                    break;
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                next_frame = Instant::now() + Duration::from_millis(16);
                if s.run.is_none() {
                    continue;
                }
                let t = Instant::now();
                drop(tracetui::tui::state::read(&s.run.as_ref().unwrap().trace));
                f.waits.push(t.elapsed());
                let t = Instant::now();
                term.draw(|fr| render(fr, &s, &theme)).unwrap();
                f.frames.push(t.elapsed());
                // Navigable while loading: jump to the bottom and back, a frame each.
                let t = Instant::now();
                update(&mut s, Action::Cmd(Command::Bottom));
                term.draw(|fr| render(fr, &s, &theme)).unwrap();
                f.bottoms.push(t.elapsed());
                update(&mut s, Action::Cmd(Command::Top));
            }
            Err(RecvTimeoutError::Disconnected) => panic!("the loader stopped"),
        }
    }
    sh.wanted.store(0, std::sync::atomic::Ordering::Relaxed);
    f
}

fn peak_rss_mb() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = l.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/one-1m");
    let Some(run_dir) = std::fs::read_dir(&root)
        .ok()
        .and_then(|d| d.flatten().map(|e| e.path()).find(|p| p.is_dir()))
    else {
        eprintln!(
            "skipping: no data in {} (python3 ../shared/bench/gen_traces.py {} --runs 1 --events 1000000)",
            root.display(),
            root.display()
        );
        return;
    };
    let d = tracetui::source::discover(&[run_dir], None);
    let run = d.runs.first().expect("an AgentDbg run").clone();
    let size = std::fs::metadata(run.path.join("events.jsonl"))
        .map(|m| m.len())
        .unwrap_or(0);
    // Warm the page cache (the budgets are for a warm cache), as `cat` would.
    let t = Instant::now();
    let mut f = std::fs::File::open(run.path.join("events.jsonl")).unwrap();
    let cat = std::io::copy(&mut f, &mut std::io::sink()).unwrap();
    let cat_time = t.elapsed();
    println!(
        "{}: {:.2} GB; reading it (cat) {:.0} ms",
        run.path.display(),
        size as f64 / 1e9,
        ms(cat_time)
    );
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let mut all = Vec::new();
    for i in 0..rounds {
        let mut f = once(&run, i as u64 + 1);
        println!(
            "round {}: first screen {:.0} ms ({} events), full load {:.0} ms ({} events), frame p50 {:.2} / p99 {:.2} / max {:.2} ms, \
G+frame p50 {:.2} / max {:.2} ms, update p50 {:.2} / max {:.2} ms ({} updates), lock wait p50 {:.2} / p99 {:.2} / max {:.2} ms",
            i + 1,
            ms(f.first_screen),
            f.first_events,
            ms(f.full),
            f.events,
            pct(&mut f.frames, 0.5),
            pct(&mut f.frames, 0.99),
            pct(&mut f.frames, 1.0),
            pct(&mut f.bottoms, 0.5),
            pct(&mut f.bottoms, 1.0),
            pct(&mut f.updates, 0.5),
            pct(&mut f.updates, 1.0),
            f.updates.len(),
            pct(&mut f.waits, 0.5),
            pct(&mut f.waits, 0.99),
            pct(&mut f.waits, 1.0),
        );
        all.push(f);
        // Let the previous loader notice it is no longer wanted and free its trace.
        std::thread::sleep(Duration::from_millis(700));
    }
    let mut first: Vec<Duration> = all.iter().map(|f| f.first_screen).collect();
    let mut full: Vec<Duration> = all.iter().map(|f| f.full).collect();
    println!(
        "median: first screen {:.0} ms (budget 300), full load {:.0} ms = {:.1}x cat; peak RSS {:.0} MB",
        pct(&mut first, 0.5),
        pct(&mut full, 0.5),
        pct(&mut full, 0.5) / ms(cat_time).max(0.001),
        peak_rss_mb().unwrap_or(0.0)
    );
    let _ = cat;
}
