//! `cargo bench --bench progressive`: open the 1M-event (2 GB) AgentDbg run the way the
//! explorer does (the loader thread, the shared trace, `update`, a frame every 16 ms) and
//! print: time to the first screen of events, time to the full load, frame times while it
//! loads (lock waits included), `G` + frame while it loads, and peak RSS.
//!
//! Each round also times `check`'s load of the same run in this process (`RunRef::load`, what
//! `tracetui check` runs), interleaved, and prints the ratio (issue 13's budget: the explorer's
//! load within 1.2x `check`).
//!
//! The run: `PROGRESSIVE_RUN=PATH`, else the 1M-event AgentDbg run of bench/formats.py
//! (`python3 bench/formats.py --only agentdbg --events 1000000 --no-lnav` makes it, about
//! 2 GB), else `target/bench-data/one-1m`; without any the bench says so and exits.
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
                if no_view()
                    && s.run.is_some()
                    && let Action::RunUpdate { loading, .. } = &a
                {
                    // The loader alone: what the view's updates cost it shows as the difference.
                    if loading.is_none() {
                        f.full = t0.elapsed();
                        f.events = tracetui::tui::state::read(&s.run.as_ref().unwrap().trace).len();
                        break;
                    }
                    continue;
                }
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
                if s.run.is_none() || no_view() {
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

/// `NO_VIEW=1`: after the first screen, neither apply the loader's updates nor draw frames.
fn no_view() -> bool {
    std::env::var_os("NO_VIEW").is_some()
}

/// CPU time of this process so far (every thread), in seconds.
fn cpu() -> f64 {
    // SAFETY: getrusage fills the struct we pass; nothing else is touched.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn peak_rss_mb() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = l.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// The first directory under `root` (a run directory of the generators).
fn first_dir(root: &Path) -> Option<std::path::PathBuf> {
    std::fs::read_dir(root)
        .ok()
        .and_then(|d| d.flatten().map(|e| e.path()).find(|p| p.is_dir()))
}

/// The data files of a run: the file itself, or the files of a run directory.
fn files(p: &Path) -> Vec<std::path::PathBuf> {
    if p.is_file() {
        return vec![p.to_path_buf()];
    }
    std::fs::read_dir(p)
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect())
        .unwrap_or_default()
}

fn main() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    let found = std::env::var_os("PROGRESSIVE_RUN")
        .map(std::path::PathBuf::from)
        .or_else(|| first_dir(&base.join("formats/agentdbg-1000000/data")))
        .or_else(|| first_dir(&base.join("one-1m")));
    let Some(run_dir) = found else {
        eprintln!(
            "skipping: no data (set PROGRESSIVE_RUN, or: python3 bench/formats.py --only agentdbg --events 1000000 --no-lnav)"
        );
        return;
    };
    let d = tracetui::source::discover(std::slice::from_ref(&run_dir), None);
    let run = d.runs.first().expect("a run").clone();
    let data = files(&run.path);
    let size: u64 = data
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    // Warm the page cache (the budgets are for a warm cache), as `cat` would.
    let t = Instant::now();
    let mut cat = 0;
    for p in &data {
        let mut f = std::fs::File::open(p).unwrap();
        cat += std::io::copy(&mut f, &mut std::io::sink()).unwrap();
    }
    let cat_time = t.elapsed();
    println!(
        "{}: {:.2} GB; reading it (cat) {:.0} ms",
        run.path.display(),
        size as f64 / 1e9,
        ms(cat_time)
    );
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let mut all = Vec::new();
    let mut checks = Vec::new();
    for i in 0..rounds {
        // `check`'s load of the same run, in turn with the explorer's.
        let t = Instant::now();
        let c0 = cpu();
        let loaded = run.load().expect("the run loads");
        checks.push(t.elapsed());
        let check_cpu = cpu() - c0;
        println!(
            "round {}: check's load {:.0} ms, CPU {:.2} s ({} events)",
            i + 1,
            ms(checks[i]),
            check_cpu,
            loaded.traces.iter().map(|t| t.len()).sum::<usize>()
        );
        drop(loaded);
        let c0 = cpu();
        let mut f = once(&run, i as u64 + 1);
        let stall: Duration = f.updates.iter().sum();
        println!(
            "round {}: the explorer's load: CPU {:.2} s; updates: {:.0} ms in all, {} over 50 ms",
            i + 1,
            cpu() - c0,
            ms(stall),
            f.updates.iter().filter(|d| d.as_millis() > 50).count()
        );
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
        "median: first screen {:.0} ms (budget 300), full load {:.0} ms = {:.2}x check's load ({:.0} ms; budget 1.2x) \
= {:.1}x cat; peak RSS {:.0} MB",
        pct(&mut first, 0.5),
        pct(&mut full, 0.5),
        pct(&mut full, 0.5) / pct(&mut checks, 0.5).max(0.001),
        pct(&mut checks, 0.5),
        pct(&mut full, 0.5) / ms(cat_time).max(0.001),
        peak_rss_mb().unwrap_or(0.0)
    );
    let _ = cat;
}
