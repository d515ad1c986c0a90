//! The event loop: terminal input and background results become actions, `update` applies
//! them, effects run here (threads, clipboard), and a frame is drawn when something changed.

use super::action::Action;
use super::config;
use super::keymap::Keymap;
use super::live::{Job, LiveOptions, Shared, spawn_loader, spawn_watcher};
use super::render::render;
use super::state::{Effect, State, read};
use super::terminal;
use super::theme::Theme;
use super::update::{key_action, mouse_action, update};
use crate::formats::Format;
use crate::source::RunRef;
use crossterm::event::{self, Event};
use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

pub struct Options {
    pub paths: Vec<PathBuf>,
    /// No PATH was given: `paths` are the standard places ([`crate::source::places`]).
    pub places: bool,
    pub forced: Option<&'static dyn Format>,
    /// `--theme NAME|PATH`.
    pub theme: Option<String>,
    /// `tracetui diff A B` on a terminal: open the diff of these two.
    pub diff: Option<DiffRequest>,
    /// Follow mode (`--follow`, `tail`): open runs at their last event and keep up with them.
    pub follow: bool,
    pub live: LiveOptions,
}

/// Two sources (`PATH`, `PATH#N` or `PATH#ID`) to open the diff view on.
pub struct DiffRequest {
    pub baseline: PathBuf,
    pub current: PathBuf,
    pub opts: crate::diff::Options,
}

/// NO_COLOR (set and not empty) turns colours off unless `--theme` asks for one.
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

pub fn theme_and_keys(opts_theme: Option<&str>) -> anyhow::Result<(Theme, Keymap, Option<String>)> {
    let cfg = config::load(config::path().as_deref()).map_err(anyhow::Error::msg)?;
    let keys = Keymap::with_overrides(&cfg.keys).map_err(|e| anyhow::anyhow!("config: {e}"))?;
    let user_themes = config::dir().map(|d| d.join("themes"));
    let theme = match opts_theme {
        Some(t) => Theme::load(t, user_themes.as_deref()).map_err(anyhow::Error::msg)?,
        None if no_color() => Theme::no_color(),
        None => Theme::load(cfg.theme.as_deref().unwrap_or("dark"), user_themes.as_deref())
            .map_err(|e| anyhow::anyhow!("config: {e}"))?,
    };
    Ok((theme, keys, cfg.warning))
}

/// Run the explorer until the user quits.
pub fn run(opts: Options) -> anyhow::Result<()> {
    let started = Instant::now();
    let (theme, keys, warning) = theme_and_keys(opts.theme.as_deref())?;
    let (tx, rx) = channel();
    let mut live = Live {
        shared: Shared::default(),
        pages: super::store::Pages::default(),
        opts: opts.live,
        timing: std::env::var_os("TRACETUI_EXIT_AFTER_LOAD").map(|_| Timing {
            started,
            first_screen: None,
            loaded: None,
        }),
    };
    let places = crate::source::places::resolve_env();
    let (mut paths, watched_places) = if opts.places {
        (places.iter().map(|p| p.path.clone()).collect(), Some(places.clone()))
    } else {
        (opts.paths, None)
    };
    // clickhouse:// PATHs are listed from their store, polled for new spans; the rest are
    // watched on disk.
    let stores: Vec<String> = paths
        .iter()
        .filter_map(|p| p.to_str().filter(|u| crate::source::clickhouse::is_url(u)))
        .map(str::to_string)
        .collect();
    paths.retain(|p| !p.to_str().is_some_and(crate::source::clickhouse::is_url));
    if !stores.is_empty() {
        crate::source::clickhouse::runs::configure(
            config::load(config::path().as_deref())
                .ok()
                .and_then(|c| c.clickhouse_password),
        );
    }
    for url in stores.iter() {
        let (more_tx, more_rx) = channel();
        live.pages.add(more_tx);
        super::store::spawn_list(url.clone(), tx.clone(), more_rx);
    }
    if stores.is_empty() || !paths.is_empty() {
        spawn_watcher(
            paths,
            watched_places,
            opts.forced,
            tx.clone(),
            live.shared.clone(),
            opts.live,
            true,
        );
    }
    let quit = terminal::quit_signals();
    let mut guard = terminal::enter()?;
    let size = guard.term.size()?;
    let mut state = State::new(keys, (size.width, size.height));
    state.words = super::diffview::WordStyle {
        context: config::load(config::path().as_deref())
            .ok()
            .and_then(|c| c.diff_context)
            .unwrap_or(crate::diff::words::DEFAULT_CONTEXT),
        marks: theme.plain,
    };
    state.runs.places = places;
    state.runs.all_places = opts.places;
    if let Some(d) = opts.diff {
        super::diffview::update::start_cli(&mut state, d, opts.forced);
    }
    state.follow = opts.follow;
    if let Some(w) = warning {
        update(&mut state, Action::Problem(w));
    }
    let result = event_loop(&mut guard, &mut state, &theme, &tx, &rx, &quit, &mut live);
    drop(guard);
    if let Some(t) = &live.timing {
        let ms = |d: Option<Duration>| d.map_or("-".to_string(), |d| format!("{:.0} ms", d.as_secs_f64() * 1e3));
        eprintln!(
            "tracetui: first screen of events {}, load complete {}",
            ms(t.first_screen),
            ms(t.loaded)
        );
    }
    result
}

/// What the loop needs to start loaders.
struct Live {
    shared: Shared,
    /// The store lists' page requests (`Effect::MoreRuns`).
    pages: super::store::Pages,
    opts: LiveOptions,
    /// `TRACETUI_EXIT_AFTER_LOAD` (set to anything): time the first screen that shows events
    /// and the end of the open run's load, quit then and print both to stderr. For measuring
    /// the explorer's load against `check` on a real terminal (benches/progressive.rs does it
    /// without one).
    timing: Option<Timing>,
}

struct Timing {
    started: Instant,
    first_screen: Option<Duration>,
    loaded: Option<Duration>,
}

/// Take the pending background results, keeping only the last update of a growing run
/// (each one carries the whole trace; applying the older ones would be wasted work).
fn drain(rx: &Receiver<Action>) -> Vec<Action> {
    let mut out: Vec<Action> = Vec::new();
    while let Ok(mut a) = rx.try_recv() {
        if let Action::RunUpdate {
            generation, restarted, ..
        } = &mut a
            && let Some(i) = out
                .iter()
                .rposition(|p| matches!(p, Action::RunUpdate { generation: g, .. } if g == generation))
        {
            // A restart reported by the update replaced must not be lost.
            *restarted |= matches!(out.remove(i), Action::RunUpdate { restarted: true, .. });
        }
        out.push(a);
    }
    out
}

const TICK: Duration = Duration::from_millis(100);
/// The input wait while background work may report (a run opening or loading, runs being
/// found, a live run): one frame, so that what it sends is drawn as it arrives rather than at
/// the next tick (the first screen of a large run came 200 ms late).
const BACKGROUND_WAIT: Duration = Duration::from_millis(16);
/// How long a frame waits for a moment when the trace is free before it waits for the lock.
const FRAME_PATIENCE: Duration = Duration::from_millis(10);

fn event_loop(
    g: &mut terminal::Guard,
    s: &mut State,
    theme: &Theme,
    tx: &Sender<Action>,
    rx: &Receiver<Action>,
    quit: &std::sync::atomic::AtomicBool,
    live: &mut Live,
) -> anyhow::Result<()> {
    let mut dirty = true;
    let mut last_tick = Instant::now();
    let mut last_report = Instant::now();
    let mut dirty_since: Option<Instant> = None;
    loop {
        // A loader holding the trace for a slice delays the frame, not the loop: input is
        // still read, and the frame is drawn on the next turn.
        // A loader that reads slice after slice leaves the lock free only for moments: past
        // FRAME_PATIENCE the frame waits for it (one slice, a millisecond or two).
        let busy = s
            .run
            .as_ref()
            .is_some_and(|r| matches!(r.trace.try_read(), Err(std::sync::TryLockError::WouldBlock)));
        let overdue = dirty_since.is_some_and(|t| t.elapsed() >= FRAME_PATIENCE);
        if dirty && busy && overdue {
            live.shared.frame_waiting.store(true, Ordering::Release);
        }
        if dirty && (!busy || overdue) {
            g.term.draw(|f| render(f, s, theme))?;
            dirty = false;
            live.shared.frame_waiting.store(false, Ordering::Release);
            if !s.runs.scanning {
                live.shared.listed_drawn.store(true, Ordering::Release);
            }
            if let Some(t) = live.timing.as_mut()
                && let Some(r) = s.run.as_ref().filter(|r| r.live.watched)
            {
                if t.first_screen.is_none() && !r.rows.is_empty() {
                    t.first_screen = Some(t.started.elapsed());
                }
                if t.first_screen.is_some() && r.live.loading.is_none() {
                    t.loaded = Some(t.started.elapsed());
                    return Ok(());
                }
            }
        }
        dirty_since = if dirty {
            dirty_since.or(Some(Instant::now()))
        } else {
            None
        };
        let expecting = s.loading.is_some() || s.runs.scanning || s.follow || last_report.elapsed() < TICK * 10;
        let wait = if dirty {
            Duration::from_millis(2)
        } else if expecting {
            BACKGROUND_WAIT.min(TICK.saturating_sub(last_tick.elapsed()))
        } else {
            TICK.saturating_sub(last_tick.elapsed())
        };
        // Take every pending input before drawing again (coalesces key repeat and wheel).
        if event::poll(wait)? {
            // Bounded, and watching the quit signals: a terminal that hung up can report
            // input ready forever, and this loop must not become the whole program.
            let mut taken = 0;
            loop {
                taken += 1;
                let action = match event::read()? {
                    // Raw mode turns Ctrl-Z into a key: stop as the shell's Ctrl-Z would.
                    Event::Key(k)
                        if k.code == crossterm::event::KeyCode::Char('z')
                            && k.modifiers.contains(crossterm::event::KeyModifiers::CONTROL) =>
                    {
                        terminal::stop_self();
                        None
                    }
                    Event::Key(k) => key_action(s, k),
                    Event::Mouse(m) => mouse_action(m),
                    Event::Resize(w, h) => Some(Action::Resize(w, h)),
                    _ => None,
                };
                if let Some(a) = action {
                    update(s, a);
                    dirty = true;
                }
                if s.quit || quit.load(Ordering::Relaxed) || taken >= 256 || !event::poll(Duration::ZERO)? {
                    break;
                }
            }
        }
        for a in drain(rx) {
            update(s, a);
            dirty = true;
            last_report = Instant::now();
        }
        if terminal::take_resumed() {
            // Back from Ctrl-Z: the shell drew over the screen.
            g.term.clear()?;
            dirty = true;
        }
        if let Some(p) = terminal::take_background_panic() {
            s.loading = None;
            update(s, Action::RunsProblem(format!("internal error: {p}")));
            s.message = Some(super::state::Message {
                text: format!("internal error (please report): {p}"),
                error: true,
                until: s.tick + 100,
            });
            dirty = true;
        }
        if last_tick.elapsed() >= TICK {
            last_tick = Instant::now();
            let animating = s.loading.is_some()
                || s.message.is_some()
                || s.runs.scanning
                || s.stats.as_ref().is_some_and(|v| v.dirty || v.loading())
                || s.diff.as_ref().is_some_and(|d| d.computing())
                || s.run
                    .as_ref()
                    .is_some_and(|r| r.filter.progress.is_some() || r.filter.stale || r.gists.pending());
            update(s, Action::Tick);
            dirty |= animating;
        }
        live.shared.wanted.store(s.load_gen, Ordering::Relaxed);
        for e in std::mem::take(&mut s.effects) {
            run_effect(e, tx, g, live)?;
        }
        if s.quit || quit.load(Ordering::Relaxed) {
            return Ok(());
        }
    }
}

fn run_effect(e: Effect, tx: &Sender<Action>, g: &mut terminal::Guard, live: &Live) -> anyhow::Result<()> {
    match e {
        // Every run is loaded progressively and followed while it is open.
        Effect::LoadRun { generation, run, .. } if crate::source::clickhouse::runs::is_store(&run) => {
            super::store::spawn_loader(run, generation, tx.clone(), live.shared.clone())
        }
        Effect::LoadRun {
            generation,
            run,
            index,
            id,
        } => spawn_loader(
            Job {
                run,
                index,
                id,
                generation,
            },
            tx.clone(),
            live.shared.clone(),
            live.opts,
        ),
        Effect::Search {
            generation,
            trace,
            from,
            query,
            cancel,
        } => {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    crate::search::search_in(
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
                }));
            });
        }
        Effect::RunsSearch {
            generation,
            jobs,
            key,
            cancel,
        } => {
            let tx = tx.clone();
            std::thread::spawn(move || super::runsearch::run(jobs, key, generation, cancel, tx));
        }
        Effect::Diff {
            generation,
            baseline,
            current,
            opts,
            cancel,
        } => {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    super::diffview::task::compute_until(&baseline, &current, &opts, &cancel)
                }))
                .unwrap_or_else(|_| Err("tracetui failed while diffing (a bug)".into()));
                let _ = tx.send(Action::DiffReady { generation, result });
            });
        }
        Effect::Stats(job) => super::stats::spawn(job, tx.clone()),
        Effect::Compare {
            generation,
            baseline,
            runs,
            opts,
            cancel,
        } => {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let send = |row: usize, result| {
                    let _ = tx.send(Action::CompareRow {
                        generation,
                        row,
                        result,
                    });
                };
                let ok = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    super::compare::compute(&baseline, &runs, &opts, &cancel, &send)
                }));
                if ok.is_err() {
                    let _ = tx.send(Action::Problem("tracetui failed while comparing runs (a bug)".into()));
                }
            });
        }
        Effect::Branches {
            generation,
            runs,
            ignore,
            cancel,
        } => {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let progress = |done| {
                    let _ = tx.send(Action::BranchesProgress { generation, done });
                };
                let out = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    super::branches::compute(&runs, &ignore, &cancel, &progress)
                }))
                .unwrap_or_else(|_| Some(Err("tracetui failed while building the tree (a bug)".into())));
                if let Some(result) = out {
                    let _ = tx.send(Action::BranchesReady {
                        generation,
                        result: result.map(Box::new),
                    });
                }
            });
        }
        Effect::Page(text) => {
            #[cfg(unix)]
            let shown = terminal::page(&text);
            #[cfg(not(unix))]
            let shown: std::io::Result<()> = Err(std::io::Error::other("no pager here"));
            if let Err(e) = shown {
                let _ = tx.send(Action::Problem(format!("could not open the pager: {e}")));
            }
            terminal::take_resumed();
            g.term.clear()?;
        }
        Effect::PageFile(path) => {
            // Read here, bounded: the pager shows what the trace holds, escaped.
            let text = match source_text(&path) {
                Ok(t) => t,
                Err(e) => {
                    let _ = tx.send(Action::Problem(format!("{}: {e}", path.display())));
                    return Ok(());
                }
            };
            #[cfg(unix)]
            let shown = terminal::page(&crate::sanitize::text(&text));
            #[cfg(not(unix))]
            let shown: std::io::Result<()> = Err(std::io::Error::other("no pager here"));
            if let Err(e) = shown {
                let _ = tx.send(Action::Problem(format!("could not open the pager: {e}")));
            }
            terminal::take_resumed();
            g.term.clear()?;
        }
        Effect::Edit(text) => {
            #[cfg(unix)]
            let shown = terminal::edit(&text);
            #[cfg(not(unix))]
            let shown: std::io::Result<()> = Err(std::io::Error::other("no editor here"));
            if let Err(e) = shown {
                let _ = tx.send(Action::Problem(format!("could not open the editor: {e}")));
            }
            terminal::take_resumed();
            g.term.clear()?;
        }
        Effect::Export(job) => {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let _ = tx.send(super::export::run(job));
            });
        }
        Effect::MoreRuns => live.pages.ask(),
        Effect::Copy(text) => {
            // OSC 52: the terminal puts it on the clipboard. Base64 keeps any control bytes
            // in the copied value from being interpreted.
            let out = g.term.backend_mut();
            write!(out, "\x1b]52;c;{}\x07", base64(text.as_bytes()))?;
            out.flush()?;
        }
    }
    Ok(())
}

/// How much of a run's source `o` shows in the pager.
const PAGE_BYTES: u64 = 16 << 20;

/// A run's source as text for the pager: a file's first [`PAGE_BYTES`] (and what is left out),
/// or a directory's files with their sizes.
fn source_text(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        let mut names: Vec<(String, u64)> = std::fs::read_dir(path)?
            .flatten()
            .take(10_000)
            .map(|e| {
                let len = e.metadata().map_or(0, |m| m.len());
                (e.file_name().to_string_lossy().into_owned(), len)
            })
            .collect();
        names.sort();
        let mut out = format!("{}/\n", path.display());
        for (n, len) in names {
            out.push_str(&format!("  {n}  {} bytes\n", crate::model::thousands(len)));
        }
        return Ok(out);
    }
    let mut buf = Vec::new();
    crate::formats::open_regular(path)?
        .take(PAGE_BYTES)
        .read_to_end(&mut buf)?;
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    if meta.len() > PAGE_BYTES {
        text.push_str(&format!(
            "\n… the first {} MiB of {} bytes are shown\n",
            PAGE_BYTES >> 20,
            crate::model::thousands(meta.len())
        ));
    }
    Ok(text)
}

/// Load a source and pick its `index`-th trace (checked against the summary's id).
pub fn load_one(run: &RunRef, index: usize, id: &str) -> Result<Box<crate::model::Trace>, String> {
    let mut loaded = run.load().map_err(|e| e.to_string())?;
    let pos = if loaded.traces.get(index).is_some_and(|t| t.meta.id == id) {
        Some(index)
    } else {
        loaded
            .traces
            .iter()
            .position(|t| t.meta.id == id)
            .or((index < loaded.traces.len()).then_some(index))
    };
    match pos {
        Some(p) => Ok(Box::new(loaded.traces.swap_remove(p))),
        None => Err(format!("{}: the run {id:?} is no longer there", run.path.display())),
    }
}

fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        out.push(T[(n >> 18) as usize & 63] as char);
        out.push(T[(n >> 12) as usize & 63] as char);
        out.push(if c.len() > 1 {
            T[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if c.len() > 2 { T[n as usize & 63] as char } else { '=' });
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_the_rfc_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(super::base64(i.as_bytes()), o);
        }
    }
}
