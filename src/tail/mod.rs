//! Live tail (DESIGN §6): follow a run directory, a trace file or a directory of runs as it
//! grows. Each line-oriented source is a [`Follow`] (the same reader and parser as a full
//! load, reading only what was appended); whole-document sources are reloaded when they
//! change. New run directories and trace files are picked up as they appear. Nothing here
//! writes anywhere: tracetui never writes into a watched directory.

pub mod print;
pub mod watch;

use crate::formats::jsonl::Follow;
use crate::formats::{self, Format, LoadError};
use crate::model::Trace;
use crate::output::Output;
use crate::source::{self, RunRef};
use print::Printer;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};
use watch::{Wake, Watch};

/// One followed source.
pub struct Tracked {
    pub run: RunRef,
    state: State,
}

enum State {
    Lines(Box<Follow>),
    /// Whole documents: reloaded when (len, mtime) changes.
    Whole {
        traces: Vec<Trace>,
        stamp: Option<(u64, Option<SystemTime>)>,
    },
    /// Dropped from memory (the OTLP receiver's cap on spans held): no longer read.
    Released,
}

impl Tracked {
    pub fn traces(&self) -> &[Trace] {
        match &self.state {
            State::Lines(f) => &f.sink.traces,
            State::Whole { traces, .. } => traces,
            State::Released => &[],
        }
    }
}

/// What changed in one poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub source: usize,
    pub trace: usize,
    /// The source was read again from the start (truncated or replaced).
    pub restarted: bool,
    /// A whole document was read again after it changed: the trace was rebuilt, and the
    /// events that were there before are there again.
    pub reloaded: bool,
}

/// Follows everything under a root path.
pub struct Tailer {
    root: PathBuf,
    forced: Option<&'static dyn Format>,
    pub sources: Vec<Tracked>,
    /// Problems met while following (unreadable files); the rest goes on.
    pub errors: Vec<LoadError>,
}

impl Tailer {
    /// Start following `root`, which may not exist yet or hold no run yet.
    pub fn new(root: &Path, forced: Option<&'static dyn Format>) -> Tailer {
        let mut t = Tailer {
            root: root.to_path_buf(),
            forced,
            sources: Vec::new(),
            errors: Vec::new(),
        };
        t.rescan();
        t
    }

    /// Follow nothing yet: sources come from [`Tailer::follow_file`] only (the OTLP receiver's
    /// spool files, not whatever else the directory holds).
    pub fn files(root: &Path) -> Tailer {
        Tailer {
            root: root.to_path_buf(),
            forced: None,
            sources: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Follow one more line-oriented source; returns its index.
    pub fn follow_file(&mut self, run: RunRef, f: Follow) -> usize {
        self.sources.push(Tracked {
            run,
            state: State::Lines(Box::new(f)),
        });
        self.sources.len() - 1
    }

    /// Drop a source's traces from memory; it is not read again (indices stay as they were).
    pub fn release(&mut self, source: usize) {
        if let Some(s) = self.sources.get_mut(source) {
            s.state = State::Released;
        }
    }

    /// Drop one trace's events from memory (see [`Follow::drop_trace`]); returns how many.
    pub fn drop_trace(&mut self, source: usize, trace: usize) -> usize {
        match self.sources.get_mut(source).map(|s| &mut s.state) {
            Some(State::Lines(f)) => f.drop_trace(trace),
            _ => 0,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Look for sources that appeared since the last scan; returns their indices.
    pub fn rescan(&mut self) -> Vec<usize> {
        if !self.root.exists() {
            return Vec::new();
        }
        let d = source::discover(std::slice::from_ref(&self.root), self.forced);
        let mut added = Vec::new();
        for run in d.runs {
            if self.sources.iter().any(|s| s.run.path == run.path) {
                continue;
            }
            let state = match run.follow() {
                Some(f) => State::Lines(Box::new(f)),
                None => State::Whole {
                    traces: Vec::new(),
                    stamp: None,
                },
            };
            self.sources.push(Tracked { run, state });
            added.push(self.sources.len() - 1);
        }
        added
    }

    /// Read what is new in every source (or in those under `paths`, when given).
    pub fn poll(&mut self, paths: Option<&[PathBuf]>) -> Vec<Change> {
        let mut changes = Vec::new();
        for (i, s) in self.sources.iter_mut().enumerate() {
            if let Some(ps) = paths {
                let base = &s.run.path;
                if !ps.iter().any(|p| p.starts_with(base) || base.starts_with(p)) {
                    continue;
                }
            }
            match poll_one(s) {
                Ok(c) => changes.extend(c.into_iter().map(|(trace, restarted, reloaded)| Change {
                    source: i,
                    trace,
                    restarted,
                    reloaded,
                })),
                Err(e) => {
                    if self.errors.len() < 100 {
                        self.errors.push(e)
                    }
                }
            }
        }
        changes
    }

    /// All traces, with their source index.
    pub fn traces(&self) -> impl Iterator<Item = (usize, usize, &Trace)> {
        self.sources
            .iter()
            .enumerate()
            .flat_map(|(si, s)| s.traces().iter().enumerate().map(move |(ti, t)| (si, ti, t)))
    }
}

/// How `tail` runs.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The polling interval: the safety net under notify, or the only mechanism.
    pub poll: Duration,
    /// Do not use notify at all (`--poll MS`), for file systems where it sees nothing.
    pub poll_only: bool,
    /// Print what is already there first.
    pub from_start: bool,
}

/// `tail --no-tui`: print each new event as one line until `stop` is set.
pub fn follow_print(
    root: &Path,
    forced: Option<&'static dyn Format>,
    fmt: Output,
    opts: Options,
    out: &mut dyn Write,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    // A FIFO or device is no trace, and following one would wait forever: refuse it.
    if let Ok(m) = std::fs::metadata(root)
        && !m.is_file()
        && !m.is_dir()
    {
        let e = crate::formats::not_regular(&m);
        return Err(std::io::Error::new(e.kind(), format!("{}: {e}", root.display())));
    }
    let mut tailer = Tailer::new(root, forced);
    let mut printer = Printer::new(fmt);
    let first = tailer.poll(None);
    if opts.from_start {
        printer.print(&tailer, &first, out)?;
        out.flush()?;
    } else {
        printer.skip_existing(&tailer);
    }
    let mut w = Watch::new(root, opts.poll, opts.poll_only);
    // A run begun between the first walk and the watch's start sent its event to no one;
    // with notify no periodic walk would find it.
    if w.is_notifying() {
        tailer.rescan();
        let changes = tailer.poll(None);
        if printer.print(&tailer, &changes, out)? > 0 {
            out.flush()?;
        }
    }
    let mut rescans = Rescans::new(opts.poll);
    while !stop.load(Ordering::Relaxed) {
        if !opts.poll_only && !w.is_notifying() && root.exists() {
            w = Watch::new(root, opts.poll, false); // the root appeared: start notify on it
        }
        let changes = match w.next() {
            Wake::Changed(paths) => {
                // Only a path outside every known source can be a new run.
                if paths
                    .iter()
                    .any(|p| !tailer.sources.iter().any(|s| p.starts_with(&s.run.path)))
                {
                    tailer.rescan();
                    tailer.poll(None)
                } else {
                    tailer.poll(Some(&paths))
                }
            }
            // Notify reports new runs: a tick only looks at the sources known. Without it,
            // the tree is walked again, less often the longer nothing new turns up (a tree of
            // 300k other files took 80% of a core walked every half second).
            // Notify lost events: what they would have said is found by walking again.
            Wake::Rescan => {
                tailer.rescan();
                tailer.poll(None)
            }
            Wake::Tick => {
                if !w.is_notifying() && rescans.due() {
                    let found = !tailer.rescan().is_empty();
                    rescans.found(found);
                }
                tailer.poll(None)
            }
        };
        if printer.print(&tailer, &changes, out)? > 0 {
            out.flush()?;
        }
    }
    Ok(())
}

/// When to walk the tree for new runs without notify: at every poll while runs keep turning
/// up, then at twice the interval each time none did, up to [`watch::IDLE_MAX`].
pub struct Rescans {
    poll: Duration,
    every: Duration,
    max: Duration,
    last: std::time::Instant,
}

impl Rescans {
    pub fn new(poll: Duration) -> Rescans {
        Rescans::with_max(poll, watch::IDLE_MAX)
    }

    /// Backing off from `poll` up to `max`.
    pub fn with_max(poll: Duration, max: Duration) -> Rescans {
        Rescans {
            poll,
            every: poll,
            max: max.max(poll),
            last: std::time::Instant::now(),
        }
    }

    pub fn due(&self) -> bool {
        self.last.elapsed() + self.poll / 2 >= self.every
    }

    /// A walk happened; `found`: it turned up something new.
    pub fn found(&mut self, found: bool) {
        self.last = std::time::Instant::now();
        self.every = if found {
            self.poll
        } else {
            (self.every * 2).min(self.max)
        };
    }
}

fn stamp(p: &Path) -> Option<(u64, Option<SystemTime>)> {
    std::fs::metadata(p).ok().map(|m| (m.len(), m.modified().ok()))
}

/// (trace, restarted, reloaded) of each trace that changed.
fn poll_one(s: &mut Tracked) -> Result<Vec<(usize, bool, bool)>, LoadError> {
    match &mut s.state {
        State::Lines(f) => {
            let p = f.poll()?;
            Ok(p.touched.into_iter().map(|t| (t, p.restarted, false)).collect())
        }
        State::Released => Ok(Vec::new()),
        State::Whole { traces, stamp: st } => {
            let now = stamp(&s.run.path);
            if now == *st {
                return Ok(Vec::new());
            }
            *st = now;
            match formats::load(&s.run.path, Some(s.run.format)) {
                Ok(l) => {
                    *traces = l.traces;
                    Ok((0..traces.len()).map(|t| (t, false, true)).collect())
                }
                // A document caught half-written: try again on its next change.
                Err(_) => Ok(Vec::new()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn line(run: &str, id: &str, ty: &str, name: &str) -> String {
        format!(
            "{{\"spec_version\":\"0.1\",\"event_id\":\"{id}\",\"run_id\":\"{run}\",\"parent_id\":null,\"event_type\":\"{ty}\",\"ts\":\"2026-01-01T00:00:00.000Z\",\"duration_ms\":null,\"name\":\"{name}\",\"payload\":{{}},\"meta\":{{}}}}\n"
        )
    }

    #[test]
    fn new_run_directories_are_picked_up_and_appends_are_read() {
        let d = tempfile::tempdir().unwrap();
        let mut t = Tailer::new(d.path(), None);
        assert!(t.sources.is_empty(), "an empty directory holds no run yet");
        let run = d.path().join("r1");
        std::fs::create_dir(&run).unwrap();
        std::fs::write(run.join("events.jsonl"), line("r1", "a", "RUN_START", "x")).unwrap();
        assert_eq!(t.rescan(), vec![0]);
        let c = t.poll(None);
        assert_eq!(
            c,
            vec![Change {
                source: 0,
                trace: 0,
                restarted: false,
                reloaded: false,
            }]
        );
        assert_eq!(t.sources[0].traces()[0].len(), 1);
        std::fs::OpenOptions::new()
            .append(true)
            .open(run.join("events.jsonl"))
            .unwrap()
            .write_all(line("r1", "b", "TOOL_CALL", "y").as_bytes())
            .unwrap();
        let c = t.poll(Some(&[run.join("events.jsonl")]));
        assert_eq!(c.len(), 1);
        assert_eq!(t.sources[0].traces()[0].len(), 2);
        assert!(t.poll(None).is_empty(), "nothing new, nothing reported");
    }

    #[test]
    fn a_root_that_does_not_exist_yet_is_waited_for() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("later");
        let mut t = Tailer::new(&root, None);
        assert!(t.sources.is_empty());
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(root.join("r")).unwrap();
        std::fs::write(root.join("r/events.jsonl"), line("r", "a", "RUN_START", "x")).unwrap();
        assert_eq!(t.rescan().len(), 1);
    }

    #[test]
    fn rescans_back_off_while_nothing_new_turns_up() {
        let poll = Duration::from_millis(500);
        let mut r = Rescans::new(poll);
        r.found(false);
        r.found(false);
        assert_eq!(r.every, Duration::from_secs(2));
        for _ in 0..10 {
            r.found(false);
        }
        assert_eq!(r.every, watch::IDLE_MAX);
        r.found(true);
        assert_eq!(r.every, poll);
    }
}
