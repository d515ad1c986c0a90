//! Background work that keeps the explorer current (DESIGN §4, §6): a loader per opened run
//! (a progressive load of what is on disk, then the live tail of what is appended) and a
//! watcher of the listed paths (runs that appear, running runs' summaries). Both read with
//! the formats' own incremental parsers ([`Follow`]); nothing here writes anywhere.

use super::action::Action;
use super::state::{Progress, RunEntry, SharedTrace, shared};
use crate::formats::jsonl::{Follow, Gate};
use crate::formats::{Format, Summary};
use crate::model::Trace;
use crate::source::{self, RunRef};
use crate::tail::watch::{Wake, Watch};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, RwLockWriteGuard};
use std::time::{Duration, Instant, SystemTime};

/// How the explorer watches for changes.
#[derive(Clone, Copy, Debug)]
pub struct LiveOptions {
    /// The polling interval: the safety net under notify, or the only mechanism.
    pub poll: Duration,
    /// Do not use notify (`--poll MS`).
    pub poll_only: bool,
    /// How often a load in progress publishes its part and progress (`PUBLISH_LOADING`).
    pub publish_loading: Duration,
    /// How long slices follow each other under one hold of the lock (`HOLD`).
    pub hold: Duration,
    /// The largest slice (`MAX_SLICE`). A test sets these three to zero, zero and `SLICE` to
    /// see every slice's progress whatever the machine's load: timing decides them otherwise.
    pub max_slice: u64,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            poll: Duration::from_millis(500),
            poll_only: false,
            publish_loading: PUBLISH_LOADING,
            hold: HOLD,
            max_slice: MAX_SLICE,
        }
    }
}

/// What the loaders and the watcher share with the app.
#[derive(Clone, Default)]
pub struct Shared {
    /// The generation of the run the user wants open: a loader of another one stops.
    pub wanted: Arc<AtomicU64>,
    /// The source a loader follows: the watcher leaves its summaries to that loader.
    pub followed: Arc<Mutex<Option<PathBuf>>>,
    /// Set by the view when a frame waits for the trace a loader holds; the loader lets it
    /// in between two slices (reading slice after slice, it would otherwise hold the lock
    /// nearly all the time, and a lock does not promise a waiting reader its turn).
    pub frame_waiting: Arc<std::sync::atomic::AtomicBool>,
    /// Walks of the watched tree for new runs so far (a test holds that an idle explorer
    /// walks nothing).
    pub walks: Arc<std::sync::atomic::AtomicUsize>,
    /// Set once the watch is in place and the walk that follows it is done: from then on a
    /// walk is for a change (a test waits for it).
    pub watching: Arc<std::sync::atomic::AtomicBool>,
    /// Set by the view once it has drawn the list the first walk found: the watch is put in
    /// place after that, so that its thousands of directory watches and the walk that
    /// follows them do not delay the first full screen on a warm start.
    pub listed_drawn: Arc<std::sync::atomic::AtomicBool>,
}

impl Shared {
    /// Between two holds of the lock: if a frame or a reader waits, give it the trace (bounded, so that a view that
    /// went away cannot stall a load).
    pub fn let_frame_in(&self) {
        let t0 = Instant::now();
        while (self.frame_waiting.load(Ordering::Acquire) || super::state::readers_waiting())
            && t0.elapsed() < Duration::from_millis(20)
        {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// Bytes read by the first slice while holding the trace's write lock (the first screen).
pub const SLICE: u64 = 1 << 20;
/// Later slices are sized from the rate of the ones before to take about this long: every
/// slice costs a serial read and a pipeline that fills and drains, so the explorer's load
/// took 1.9 s with 1 MiB slices, 1.7 s with 4 MiB, 1.5 s with 16 MiB (AgentDbg, 1M events,
/// `check` 1.1 s). 16 ms (was 4) took 1M-event loads from 1.28-1.70x `check`'s time to
/// 1.07-1.35x (Assay 1.19 -> 0.95 s, Codex 1.26 -> 1.11 s, Maida 2.47 -> 2.11 s, medians of
/// 3). A slice no longer bounds how long a key waits (the parser holds the shared trace only
/// to apply a part of a batch, `Sink::held`), so slices are as long as a publication's period
/// (`PUBLISH_LOADING`): with 16 ms the rayon workers idled a third of the load between
/// slices (the first chunk read alone, the pipeline draining, a `finalize` each), and
/// 1M-event Claude Code and Cursor loads took 1.33x and 1.42x `check`'s time.
const SLICE_TIME: Duration = Duration::from_millis(250);
/// The largest slice, whatever the rate (a slice is read a chunk at a time: no buffer of
/// this size is held).
const MAX_SLICE: u64 = 1 << 30;
/// Slices follow each other under one hold of the write lock for up to this long, unless a
/// frame waits: giving the lock back after every slice, and a view that took it in between,
/// cost the load more than parsing did (issue 13). A key waits at most this and a slice.
const HOLD: Duration = Duration::from_millis(16);
/// How often a loading or growing trace is published to the view.
const PUBLISH: Duration = Duration::from_millis(100);
/// How often while the file is read from the start: each publication has the view bring its
/// rows up to date under the read lock, while the loader waits (a tenth of a 1M-event load's
/// time at 100 ms; the progress bar still moves four times a second).
const PUBLISH_LOADING: Duration = Duration::from_millis(250);
/// How often the runs list is told about a followed source's summaries.
const SUMMARIES: Duration = Duration::from_secs(1);

fn write(t: &SharedTrace) -> RwLockWriteGuard<'_, Trace> {
    t.write().unwrap_or_else(|e| e.into_inner())
}

/// What a run shows before its first event arrives.
fn placeholder_meta(job: &Job) -> crate::model::RunMeta {
    crate::model::RunMeta {
        id: if job.id.is_empty() {
            crate::formats::stem(&job.run.path)
        } else {
            job.id.clone()
        },
        format: job.run.format.id(),
        source: job.run.path.clone(),
        ..Default::default()
    }
}

/// Which trace of a source is the run that was asked for: by id, else by position.
fn pick(traces: &[Trace], index: usize, id: &str) -> Option<usize> {
    traces
        .iter()
        .position(|t| !id.is_empty() && t.meta.id == id)
        .or((index < traces.len()).then_some(index))
}

/// A run to load and follow.
pub struct Job {
    pub run: RunRef,
    pub index: usize,
    pub id: String,
    pub generation: u64,
}

/// Load a run progressively and keep following it while it is the one wanted.
pub fn spawn_loader(job: Job, tx: Sender<Action>, sh: Shared, opts: LiveOptions) {
    std::thread::spawn(move || {
        let generation = job.generation;
        let path = job.run.path.clone();
        *sh.followed.lock().unwrap_or_else(|e| e.into_inner()) = Some(path.clone());
        let tx2 = tx.clone();
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // Fault injection for the end-to-end test of a panic on a background thread.
            if std::env::var_os("TRACETUI_FAULT").is_some_and(|v| v == "loader-panic") {
                panic!("injected loader panic (TRACETUI_FAULT)");
            }
            let mut l = Loader::new(job, tx, sh.clone(), opts);
            l.run()
        }));
        if done.is_err() {
            let _ = tx2.send(Action::RunLoaded {
                generation,
                // Worded like the panic hook's report, which may arrive before or after this.
                result: Err(format!(
                    "internal error (please report): loading {} failed",
                    path.display()
                )),
            });
        }
        let mut f = sh.followed.lock().unwrap_or_else(|e| e.into_inner());
        if f.as_deref() == Some(path.as_path()) {
            *f = None;
        }
    });
}

struct Loader {
    job: Job,
    tx: Sender<Action>,
    sh: Shared,
    opts: LiveOptions,
    trace: SharedTrace,
    published: bool,
    last_publish: Instant,
    last_summaries: Option<Instant>,
}

impl Loader {
    fn new(job: Job, tx: Sender<Action>, sh: Shared, opts: LiveOptions) -> Loader {
        Loader {
            trace: shared(Trace::new(placeholder_meta(&job))),
            job,
            tx,
            sh,
            opts,
            published: false,
            last_publish: Instant::now(),
            last_summaries: None,
        }
    }

    fn trace_meta(&self) -> crate::model::RunMeta {
        placeholder_meta(&self.job)
    }

    fn wanted(&self) -> bool {
        self.sh.wanted.load(Ordering::Relaxed) == self.job.generation
    }

    fn run(&mut self) {
        match self.job.run.follow() {
            Some(f) => self.lines(f),
            None => self.whole(),
        }
    }

    /// Send the trace to the view. False when nobody listens any more.
    fn publish(&mut self, loading: Option<Progress>, restarted: bool) -> bool {
        self.published = true;
        self.last_publish = Instant::now();
        self.tx
            .send(Action::RunUpdate {
                generation: self.job.generation,
                trace: self.trace.clone(),
                loading,
                restarted,
            })
            .is_ok()
    }

    fn fail(&mut self, e: String) {
        if !self.published {
            let _ = self.tx.send(Action::RunLoaded {
                generation: self.job.generation,
                result: Err(e),
            });
            self.published = true;
        }
    }

    fn entry(&self, index: usize, summary: Summary) -> RunEntry {
        RunEntry {
            run: self.job.run.clone(),
            index,
            quiet: source::liveness::quiet_for(&self.job.run.path, summary.status),
            summary,
        }
    }

    /// The summaries of every trace of the source, for the runs list (a source may hold
    /// several runs; the one open is in the shared trace, the others in the sink).
    fn summaries(&mut self, others: &[Trace], ours: Option<usize>) {
        let t = super::state::read(&self.trace);
        let list: Vec<RunEntry> = (0..others.len().max(ours.map_or(0, |k| k + 1)))
            .map(|i| {
                let summary = if Some(i) == ours {
                    source::summary::of(&t)
                } else {
                    source::summary::of(&others[i])
                };
                self.entry(i, summary)
            })
            .collect();
        drop(t);
        self.last_summaries = Some(Instant::now());
        if !list.is_empty() {
            let _ = self.tx.send(Action::RunsFound(list));
        }
    }

    /// A line-oriented source: read it in slices, publishing as it goes, then follow it.
    fn lines(&mut self, mut f: Follow) {
        f.keep_replaced();
        let mut ours: Option<usize> = None;
        let mut watch: Option<Watch> = None;
        let mut restarted = false;
        let mut changed = false;
        // The progress the view was last sent: it moves on even while the slices read other
        // traces of the source than the one shown (an Assay or OpenAI-chat file holds one
        // per line), and the view must hear of it (it stayed at 0% when only a change of the
        // shown trace was published).
        let mut sent: Option<Progress> = None;
        let mut slice = SLICE;
        let mut deferred = false;
        let mut unsummarized = false;
        loop {
            if !self.wanted() {
                return;
            }
            // Disk reads are asked for ahead of the slices, so that reading one under the lock
            // finds it in the cache.
            prefetch(f.path(), f.offset(), slice.max(8 * SLICE));
            let polled = {
                // The trace lives in the shared slot; while a slice is read, the parser has it
                // only for the time it changes it (`Sink::held`: the apply of a part, not the
                // read and skim of lines), so that the view reads it in between.
                let before = ours.filter(|&k| k < f.sink.traces.len());
                if let Some(k) = before {
                    f.gate(Gate {
                        trace: self.trace.clone(),
                        slot: k,
                    });
                }
                let mut r = poll_timed(&mut f, &mut slice, self.opts.max_slice);
                let held = Instant::now();
                // The first slice is published alone (the first screen); the next is long.
                while self.published
                    && r.as_ref().is_ok_and(|p| !p.restarted)
                    && !f.has_replaced()
                    && f.behind() > 0
                    && held.elapsed() < self.opts.hold
                    && !self.sh.frame_waiting.load(Ordering::Acquire)
                    && !super::state::readers_waiting()
                    && self.wanted()
                {
                    match (poll_timed(&mut f, &mut slice, self.opts.max_slice), &mut r) {
                        (Ok(q), Ok(p)) => {
                            for k in q.touched {
                                if !p.touched.contains(&k) {
                                    p.touched.push(k);
                                }
                            }
                            p.restarted |= q.restarted;
                        }
                        (Err(e), _) => r = Err(e),
                        (Ok(_), Err(_)) => break,
                    }
                }
                // Back in the sink, where the code below expects it.
                let mut g = write(&self.trace);
                f.ungate(&mut g);
                let replaced = f.take_replaced();
                let restarted_now = replaced.is_some();
                if let Some(mut old) = replaced {
                    // Read again from the start: the view keeps the old trace (its rows point
                    // into it) until it takes the new one, which goes into a new slot.
                    if let Some(k) = before.filter(|&k| k < old.traces.len()) {
                        std::mem::swap(&mut *g, &mut old.traces[k]);
                    }
                    drop(g);
                    let fresh = Trace::new(self.trace_meta());
                    self.trace = shared(fresh);
                    g = write(&self.trace);
                }
                ours = pick(&f.sink.traces, self.job.index, &self.job.id);
                if let Some(b) = before.filter(|&b| !restarted_now && ours != Some(b) && b < f.sink.traces.len()) {
                    // Another trace of the source turned out to be the run (its id showed up
                    // late): the view keeps a copy of the one it shows until it switches.
                    *g = f.sink.traces[b].clone();
                    drop(g);
                    self.trace = shared(Trace::new(self.trace_meta()));
                    g = write(&self.trace);
                }
                if let Some(k) = ours {
                    std::mem::swap(&mut *g, &mut f.sink.traces[k]);
                }
                r
            };
            self.sh.let_frame_in();
            let p = match polled {
                Ok(p) => p,
                Err(e) => {
                    self.fail(e.to_string());
                    if !self.published {
                        return;
                    }
                    crate::formats::jsonl::Polled::default()
                }
            };
            restarted |= p.restarted;
            // A change within SUMMARIES of the last summaries is summarized at a later wake
            // (it was dropped: a root span that came right after its children never reached
            // the list, whose row kept a child's name and part of the cost).
            unsummarized |= !p.touched.is_empty();
            changed |= p.restarted || ours.is_some_and(|k| p.touched.contains(&k));
            let behind = f.behind();
            let loading = (behind > 0).then(|| Progress {
                bytes: f.offset(),
                total: f.file_len().unwrap_or(0),
            });
            let every = if behind > 0 { self.opts.publish_loading } else { PUBLISH };
            let due = !self.published || behind == 0 || self.last_publish.elapsed() >= every;
            if (changed || !self.published || loading != sent) && due {
                if !self.publish(loading, std::mem::take(&mut restarted)) {
                    return;
                }
                changed = false;
                sent = loading;
            }
            if behind == 0 {
                let stale = self.last_summaries.is_none_or(|t| t.elapsed() >= SUMMARIES);
                let first = self.last_summaries.is_none();
                if first && !deferred {
                    // The first summaries (a full count of the run) wait for the next wake:
                    // computed at once, they took a core from the view's own full count of
                    // the update just sent, the last step of the load on screen. The open
                    // run's list entry has that count meanwhile (`run_update`).
                    deferred = true;
                } else if (stale && unsummarized) || first {
                    self.summaries(&f.sink.traces, ours);
                    unsummarized = false;
                }
                // Caught up: wait for the next change.
                let w =
                    watch.get_or_insert_with(|| Watch::new(&self.job.run.path, self.opts.poll, self.opts.poll_only));
                let _ = w.next();
            }
        }
    }

    /// A whole-document source: load it, and load it again when it changes.
    fn whole(&mut self) {
        let mut stamp = None;
        let mut watch: Option<Watch> = None;
        while self.wanted() {
            let now = file_stamp(&self.job.run.path);
            if now != stamp {
                stamp = now;
                // The first load shows what it has read while it reads (a document's trace is
                // built once it is read whole); a load again after a change does not, lest the
                // run shown shrink to a part of itself.
                let run = self.job.run.clone();
                let one = run.load_run(self.job.index, &self.job.id);
                let alone = one.is_some();
                let loaded = if let Some(one) = one {
                    one
                } else if self.published {
                    run.load()
                } else {
                    run.load_watched(&mut Shown {
                        loader: self,
                        shown: false,
                        last: Instant::now(),
                    })
                };
                match loaded {
                    Ok(mut l) => {
                        if let Some(k) = pick(&l.traces, self.job.index, &self.job.id) {
                            let again = self.published;
                            // Every run of the source is listed after its first load (one
                            // opened on its own was listed as one provisional run).
                            let mut listed: Vec<RunEntry> = if again || alone || l.traces.len() < 2 {
                                Vec::new()
                            } else {
                                l.traces
                                    .iter()
                                    .enumerate()
                                    .map(|(i, t)| self.entry(i, source::summary::of(t)))
                                    .collect()
                            };
                            // The open run's own row says what its load found, not what a
                            // summary file says (an Inspect log's has no counts).
                            let mine = (!again && alone).then(|| source::summary::of(&l.traces[k]));
                            // A new slot: the view's rows point into the old trace until it
                            // takes this one.
                            self.trace = shared(l.traces.swap_remove(k));
                            if !self.publish(None, again) {
                                return;
                            }
                            if !again && alone {
                                // After the first screen: the format's summaries (an Inspect
                                // log's are its `summaries.json`), cached.
                                listed = entries(&self.job.run).unwrap_or_default();
                                if let Some(mine) = mine
                                    && let Some(e) = listed.iter_mut().find(|e| e.summary.id == mine.id)
                                {
                                    e.summary = mine;
                                }
                            }
                            if listed.len() > 1 && self.tx.send(Action::RunsFound(listed)).is_err() {
                                return;
                            }
                        } else {
                            self.fail(format!(
                                "{}: the run {:?} is no longer there",
                                self.job.run.path.display(),
                                self.job.id
                            ));
                        }
                    }
                    // A document caught half-written is read again on its next change.
                    Err(e) => self.fail(e.to_string()),
                }
            }
            let w = watch.get_or_insert_with(|| Watch::new(&self.job.run.path, self.opts.poll, self.opts.poll_only));
            let _ = w.next();
        }
    }
}

/// Below this much left to read, a load ends too soon for a first screen of its own.
const PARTIAL_MIN: u64 = 32 << 20;

/// Publishes a whole-document load as it goes: the events read first, as soon as there are
/// some (the first screen), then how far it is, at the publication period.
struct Shown<'l> {
    loader: &'l mut Loader,
    shown: bool,
    last: Instant,
}

impl crate::formats::Watcher for Shown<'_> {
    fn progress(&mut self, read: u64, total: u64, partial: &mut dyn FnMut() -> Trace) {
        if !self.loader.wanted() {
            return;
        }
        let loading = Some(Progress { bytes: read, total });
        if !self.shown {
            if total.saturating_sub(read) < PARTIAL_MIN {
                return;
            }
            self.loader.trace = shared(partial());
            self.shown = true;
        } else if self.last.elapsed() < SLICE_TIME {
            return;
        }
        self.last = Instant::now();
        self.loader.publish(loading, false);
    }
}

/// One slice of at most `slice` bytes; a slice that read most of its bytes sets the size of
/// the next from its rate (see [`SLICE_TIME`]).
fn poll_timed(
    f: &mut Follow,
    slice: &mut u64,
    max: u64,
) -> Result<crate::formats::jsonl::Polled, crate::formats::LoadError> {
    let (t0, at) = (Instant::now(), f.offset());
    let r = f.poll_some(*slice);
    let (read, took) = (f.offset().saturating_sub(at), t0.elapsed().as_secs_f64());
    if read >= *slice / 2 && took > 0.0 {
        *slice = ((read as f64 / took * SLICE_TIME.as_secs_f64()) as u64).clamp(SLICE, max.max(SLICE));
    }
    r
}

/// Read `len` bytes at `offset` and forget them: they are in the page cache afterwards.
fn prefetch(path: &Path, offset: u64, len: u64) {
    // Ask the kernel to read ahead; copying the bytes out here (as before) cost a second copy
    // of the whole file when it was already cached, which is the common case.
    #[cfg(target_os = "linux")]
    if let Ok(f) = std::fs::File::open(path) {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain syscall on a descriptor we own; it reads nothing into our memory.
        unsafe {
            libc::posix_fadvise(
                f.as_raw_fd(),
                offset as libc::off_t,
                len as libc::off_t,
                libc::POSIX_FADV_WILLNEED,
            )
        };
    }
    #[cfg(not(target_os = "linux"))]
    {
        use std::io::{Read, Seek, SeekFrom};
        if let Ok(mut f) = std::fs::File::open(path)
            && f.seek(SeekFrom::Start(offset)).is_ok()
        {
            let _ = std::io::copy(&mut f.take(len), &mut std::io::sink());
        }
    }
}

fn file_stamp(p: &Path) -> Option<(u64, Option<SystemTime>)> {
    std::fs::metadata(p).ok().map(|m| (m.len(), m.modified().ok()))
}

/// Entries for the runs list, one per trace summary of each source (cheap summaries: a large
/// session's from its ends, a finished run directory's from its metadata; the indexer makes
/// them exact).
pub fn entries(run: &RunRef) -> Result<Vec<RunEntry>, String> {
    let list = run.summarize().map_err(|e| e.to_string())?;
    Ok(entries_of(run, list))
}

/// Entries for the runs list of a source's summaries.
fn entries_of(run: &RunRef, list: Vec<Summary>) -> Vec<RunEntry> {
    list.into_iter()
        .enumerate()
        .map(|(index, summary)| RunEntry {
            run: run.clone(),
            index,
            quiet: source::liveness::quiet_for(&run.path, summary.status),
            summary,
        })
        .collect()
}

/// One source opened on its own needs no summary first: it is opened at once and its loader
/// reports the summaries (a summary of a large running run would be a full load before the
/// first screen).
fn provisional(run: &RunRef) -> RunEntry {
    RunEntry {
        run: run.clone(),
        index: 0,
        summary: Summary {
            name: Some(crate::formats::stem(&run.path)),
            format: run.format.id(),
            path: run.path.clone(),
            ..Default::default()
        },
        quiet: None,
    }
}

/// Find the runs under `paths`, then keep watching them: runs that appear are added, runs
/// whose summaries are provisional are indexed in the background ([`source::index`]), and
/// every source written to is summarized again as it is written.
pub fn spawn_watcher(
    paths: Vec<PathBuf>,
    places: Option<Vec<source::places::Resolved>>,
    forced: Option<&'static dyn Format>,
    tx: Sender<Action>,
    sh: Shared,
    opts: LiveOptions,
    watch: bool,
) {
    std::thread::spawn(move || {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut w = Watcher {
                paths,
                places,
                forced,
                failing: HashMap::new(),
                skipped: Default::default(),
                tx,
                sh,
                known: HashMap::new(),
                inputs: HashMap::new(),
                running: HashMap::new(),
                written: HashMap::new(),
                indexer: None,
                said_errors: false,
                indexed_running: None,
            };
            let single = w.paths.len() == 1;
            // The summary cache is read while the tree is walked (both are most of a warm
            // start; the first lookup waits for it).
            let _ = std::thread::Builder::new()
                .name("cache-read".into())
                .spawn(source::cache::preload);
            let _ = w.discover(single);
            let _ = w.tx.send(Action::RunsDone);
            if watch {
                // Bounded: with no view drawing (a test, a view gone) the watch starts anyway.
                let t0 = Instant::now();
                while !w.sh.listed_drawn.load(Ordering::Acquire) && t0.elapsed() < LIST_DRAWN_WAIT {
                    std::thread::sleep(Duration::from_millis(1));
                }
                w.watch(opts);
            }
        }));
    });
}

struct Watcher {
    paths: Vec<PathBuf>,
    /// Opened with no PATH: the standard places (`paths` are theirs), scanned as places (an
    /// empty one is no problem, one that appears later is picked up).
    places: Option<Vec<source::places::Resolved>>,
    forced: Option<&'static dyn Format>,
    /// Sources that could not be summarized: the first failure's message and time, and
    /// whether it was reported. A run caught half-written (a run directory's metadata before
    /// its events) is retried and reported only if it stays unreadable while nothing writes it.
    failing: HashMap<PathBuf, (String, Instant, bool)>,
    /// What the last scan left out (sent when it changes).
    skipped: source::Skipped,
    tx: Sender<Action>,
    sh: Shared,
    /// Listed sources, as last found (what is read into each may grow: a sub-agent's rollout),
    /// with the stamp of their files when they were last summarized (a write changes it).
    known: HashMap<PathBuf, Known>,
    /// The other files a listed source is read from (a Claude Code session's subagents), to
    /// the source: a write to one is a write to it.
    inputs: HashMap<PathBuf, PathBuf>,
    /// Sources with a running run: their entries as last sent and whether they were stale
    /// then (a run that stops being written turns stale with no write to tell).
    running: HashMap<PathBuf, (Vec<RunEntry>, bool)>,
    /// Sources written to since they were listed: summarized again as they are written.
    written: HashMap<PathBuf, Written>,
    /// Makes provisional summaries exact; started when the first one is listed.
    indexer: Option<source::index::Indexer>,
    /// What the first scan could not read was said (later scans meet runs half-created).
    said_errors: bool,
    /// The running runs the indexer made exact, to be watched for turning stale.
    indexed_running: Option<std::sync::mpsc::Receiver<(PathBuf, Vec<RunEntry>)>>,
}

/// A source as listed: its stamp before it was read, and its summaries.
type Listed = (RunRef, Option<u64>, Result<Vec<Summary>, String>);

struct Known {
    run: RunRef,
    stamp: Option<u64>,
}

/// A source kept current as it is written.
struct Written {
    run: RunRef,
    /// Its format reads it line by line (else it is loaded whole again).
    lines: bool,
    /// A line-oriented source's reader, kept between writes: a write costs what it appended.
    /// `None` for a whole-document source (loaded again), or not made yet.
    follow: Option<Follow>,
    /// Written since it was last summarized.
    pending: bool,
    /// When it was last summarized, and how long that took.
    last: Option<Instant>,
    took: Duration,
    /// When a write was last seen (a source quiet for long is let go, its reader with it).
    seen: Instant,
}

/// A source that cannot be summarized is reported once it has failed for this long and
/// nothing wrote to it meanwhile (a run directory caught between its metadata and its events
/// is retried until then).
const HALF_WRITTEN: Duration = Duration::from_secs(2);

/// Whether nothing in `path` (the file, or the files directly in the directory) was written
/// for `d`.
fn quiet_for_at_least(path: &Path, d: Duration) -> bool {
    let newest = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let last = if path.is_dir() {
        std::fs::read_dir(path)
            .into_iter()
            .flatten()
            .flatten()
            .take(1000)
            .filter_map(|e| newest(&e.path()))
            .chain(newest(path))
            .max()
    } else {
        newest(path)
    };
    last.and_then(|t| t.elapsed().ok()).is_none_or(|e| e >= d)
}

/// The path a load error is about.
fn error_path(e: &crate::formats::LoadError) -> &Path {
    use crate::formats::LoadError::*;
    match e {
        Io { path, .. } | NotATrace { path, .. } | Invalid { path, .. } => path,
    }
}

/// At most this long the watch waits for the view to draw the first list.
const LIST_DRAWN_WAIT: Duration = Duration::from_millis(300);
/// Runs summarized before the list hears of them (see `Watcher::discover`).
const LIST_PART: usize = 500;

/// A source written to is summarized again at most this often while its writes go on (each
/// write is shown within this and the time the summary takes).
const RESUMMARIZE: Duration = Duration::from_millis(250);
/// A whole-document source is loaded again at most once in this many times its load took
/// (a large database written all the time is not loaded all the time).
const LOAD_SHARE: u32 = 4;
/// With notify, walks of the tree for changes outside the listed sources are at least this
/// far apart (a new run still shows within a second).
const WALK_SPACING: Duration = Duration::from_millis(500);
/// How often running runs are looked at for turning stale.
const STALE_CHECK: Duration = Duration::from_secs(5);
/// Sources written to that are kept current (their readers held), at most; the ones written
/// least recently are let go first (and read again whole if they are written again).
const MAX_WRITTEN: usize = 32;
/// A source written to is let go once it has been quiet this long.
const LET_GO: Duration = Duration::from_secs(300);
/// How often indexed summaries reach the list (each batch is one merge and sort).
const INDEX_REPORT: Duration = Duration::from_millis(100);

impl Watcher {
    /// Discover the runs not known yet and list them; queue the ones whose summaries are
    /// provisional for indexing. Returns whether any run not known before was found.
    fn discover(&mut self, single: bool) -> bool {
        self.sh.walks.fetch_add(1, Ordering::Relaxed);
        let first = self.known.is_empty();
        let d = match &self.places {
            Some(places) => source::discover_places(places, self.forced),
            None => {
                let (existing, missing): (Vec<PathBuf>, Vec<PathBuf>) =
                    self.paths.iter().cloned().partition(|p| p.exists());
                if first {
                    // Said in the list (an empty "no runs found" hid a mistyped PATH); it is
                    // watched all the same, and the message goes once runs appear below it.
                    for p in missing {
                        let msg = format!("{}: no such file or directory (watching for it)", p.display());
                        let _ = self.tx.send(Action::RunProblem(p, msg));
                    }
                }
                source::discover(&existing, self.forced)
            }
        };
        if d.skipped != self.skipped {
            self.skipped = d.skipped;
            let _ = self.tx.send(Action::RunsSkipped(d.skipped));
        }
        // Later scans meet runs half-created (a directory before its files, a file before
        // its first line): they are retried, not reported.
        // Once: an empty directory is "first" at every scan until a run appears in it.
        if !self.said_errors {
            self.said_errors = true;
            for e in &d.errors {
                // By its path: said once, and over once a run is listed below it (a
                // directory watched while still empty, as `serve`'s spool is at its start,
                // was said again at every scan and never cleared: "2 unreadable").
                let _ = self
                    .tx
                    .send(Action::RunProblem(error_path(e).to_path_buf(), e.to_string()));
            }
        }
        let mut new: Vec<RunRef> = Vec::new();
        for r in d.runs {
            match self.known.get_mut(&r.path) {
                None => new.push(r),
                // A listed run that now reads more sources (a sub-agent's rollout appeared
                // beside it): summarized again, with them.
                Some(k) if k.run.nested.as_deref() != r.nested.as_deref() => {
                    k.run = r.clone();
                    self.note_inputs(&r);
                    self.mark_written(&r.path);
                }
                Some(_) => {}
            }
        }
        if single && new.len() == 1 && self.known.is_empty() {
            let r = new.remove(0);
            self.remember(&r);
            let _ = self.tx.send(Action::RunsFound(vec![provisional(&r)]));
            return true;
        }
        let any_new = !new.is_empty();
        use rayon::prelude::*;
        // Summarized and sent in parts: with thousands of sessions the list fills as they are
        // read, not only when the last one is (each part is one merge and sort in the view).
        let mut to_index: Vec<(RunRef, Option<i64>)> = Vec::new();
        let mut new = new.into_iter().peekable();
        while new.peek().is_some() {
            let part: Vec<RunRef> = new.by_ref().take(LIST_PART).collect();
            // Stamped before they are read: a write while they are read is a change.
            let found: Vec<Listed> = part
                .into_par_iter()
                .map(|r| {
                    let (stamp, res) = r.summarize_stamped();
                    (r, stamp, res.map_err(|e| e.to_string()))
                })
                .collect();
            let mut all = Vec::new();
            for (r, stamp, res) in found {
                self.remember(&r);
                match res {
                    Ok(list) => {
                        if let Some(k) = self.known.get_mut(&r.path) {
                            k.stamp = stamp;
                        }
                        if source::index::needs_index(&list) {
                            let start = list.iter().filter_map(|s| s.start).max();
                            to_index.push((r.clone(), start));
                        }
                        let list = entries_of(&r, list);
                        self.note_running(&r.path, &list);
                        all.extend(list);
                    }
                    Err(e) => {
                        // A run caught as it is created (no events yet): tried again at its
                        // next write or the next look; said only if it stays so (`failing`).
                        self.mark_written(&r.path);
                        self.failing.entry(r.path.clone()).or_insert((e, Instant::now(), false));
                    }
                }
            }
            if !all.is_empty() && self.tx.send(Action::RunsFound(all)).is_err() {
                break;
            }
        }
        source::cache::flush();
        self.index(to_index);
        any_new
    }

    /// Queue sources for indexing (the indexer starts with the first).
    fn index(&mut self, runs: Vec<(RunRef, Option<i64>)>) {
        if runs.is_empty() {
            return;
        }
        let tx = self.tx.clone();
        let (itx, irx) = std::sync::mpsc::channel();
        let ix = self.indexer.get_or_insert_with(|| {
            source::index::Indexer::start(
                0,
                INDEX_REPORT,
                Box::new(move |batch, progress| {
                    let mut found = Vec::new();
                    for x in batch {
                        match x.result {
                            Ok(list) => {
                                let list = entries_of(&x.run, list);
                                // A running run is watched for turning stale (`check_stale`).
                                if list
                                    .iter()
                                    .any(|e| e.summary.status == crate::model::RunStatus::Running)
                                {
                                    let _ = itx.send((x.run.path.clone(), list.clone()));
                                }
                                found.extend(list);
                            }
                            Err(e) => {
                                if tx.send(Action::RunProblem(x.run.path.clone(), e.to_string())).is_err() {
                                    return false;
                                }
                            }
                        }
                    }
                    tx.send(Action::RunsIndexed { found, progress }).is_ok()
                }),
            )
        });
        if self.indexed_running.is_none() {
            self.indexed_running = Some(irx);
        }
        ix.push(runs);
    }

    /// A source is listed: remember it and the files it is read from.
    fn remember(&mut self, r: &RunRef) {
        self.known.insert(
            r.path.clone(),
            Known {
                run: r.clone(),
                stamp: None,
            },
        );
        self.note_inputs(r);
    }

    fn note_inputs(&mut self, r: &RunRef) {
        for p in source::cache::source_inputs(r) {
            if p != r.path {
                self.inputs.insert(p, r.path.clone());
            }
        }
    }

    /// The listed source that `p` (a path notify reported) is part of.
    fn source_of(&self, p: &Path) -> Option<PathBuf> {
        p.ancestors().find_map(|a| {
            self.known
                .get_key_value(a)
                .map(|(k, _)| k.clone())
                .or_else(|| self.inputs.get(a).cloned())
        })
    }

    /// Keep track of a source's running runs (for their turn to stale).
    fn note_running(&mut self, path: &Path, list: &[RunEntry]) {
        if list
            .iter()
            .any(|e| e.summary.status == crate::model::RunStatus::Running)
        {
            let stale = list.iter().any(|e| e.is_stale(source::liveness::STALE));
            self.running.insert(path.to_path_buf(), (list.to_vec(), stale));
        } else {
            self.running.remove(path);
        }
    }

    /// The source was written to (or must be looked at again): it is summarized again soon,
    /// exactly, and no longer indexed (it is kept current here).
    fn mark_written(&mut self, path: &Path) {
        let Some(k) = self.known.get(path) else { return };
        let run = k.run.clone();
        let w = self.written.entry(path.to_path_buf()).or_insert_with(|| Written {
            lines: run.follow().is_some(),
            run: run.clone(),
            follow: None,
            pending: true,
            last: None,
            took: Duration::ZERO,
            seen: Instant::now(),
        });
        if w.run.nested.as_deref() != run.nested.as_deref() {
            // What is read into it changed: read it again from the start.
            w.run = run;
            w.follow = None;
        }
        w.pending = true;
        w.seen = Instant::now();
        if let Some(ix) = &self.indexer {
            ix.forget(path);
        }
    }

    /// Listed sources whose files changed since they were last summarized (polling: notify
    /// is not there, or may have missed a write).
    fn look_for_writes(&mut self) {
        let changed: Vec<PathBuf> = self
            .known
            .iter()
            .filter(|(_, k)| source::cache::source_stamp(&k.run) != k.stamp)
            .map(|(p, _)| p.clone())
            .collect();
        for p in changed {
            self.mark_written(&p);
        }
    }

    fn watch(&mut self, opts: LiveOptions) {
        let mut w = Watch::new_many(&self.paths, opts.poll, opts.poll_only);
        // Roots not watched yet (not there when the watch began).
        let mut unwatched: Vec<PathBuf> = self.paths.iter().filter(|p| !p.exists()).cloned().collect();
        // Without notify the tree is walked again less often the longer nothing new turns up
        // (an idle explorer over a tree of 300k other files walked it every half second).
        // With notify it is walked only when a change is outside every listed source, or
        // notify lost events: an idle explorer does nothing.
        let mut polled = crate::tail::Rescans::new(opts.poll);
        // A run begun between the first listing and the watch's start sent its event to no
        // one (a receiver's first batch, written as the explorer starts): with notify there
        // is no periodic walk to find it, so one walk follows the watch's start.
        let mut walk_wanted = w.is_notifying();
        let mut last_walk = Instant::now().checked_sub(WALK_SPACING).unwrap_or_else(Instant::now);
        let mut stale_check = Instant::now();
        loop {
            if !opts.poll_only && !unwatched.is_empty() {
                let appeared: Vec<PathBuf> = unwatched.iter().filter(|p| p.exists()).cloned().collect();
                if !appeared.is_empty() {
                    if w.is_notifying() {
                        for p in &appeared {
                            if !w.add(p) {
                                w = Watch::new_many(&self.paths, opts.poll, true);
                            }
                        }
                    } else {
                        w = Watch::new_many(&self.paths, opts.poll, false);
                    }
                    unwatched.retain(|p| !p.exists());
                    // What is in a root that appeared is found now, not at the next walk.
                    let found = self.discover(false);
                    polled.found(found);
                }
            }
            let walk_in = walk_wanted.then(|| WALK_SPACING.saturating_sub(last_walk.elapsed()));
            let wake = w.next_within(self.next_due(stale_check, walk_in));
            let notifying = w.is_notifying();
            let mut look = !notifying;
            match &wake {
                Wake::Changed(paths) => {
                    for p in paths {
                        // By the path's ancestors: a scan of every known run for every event
                        // was most of the explorer's start on a directory of 2,000 runs.
                        match self.source_of(p) {
                            Some(k) => self.mark_written(&k),
                            None if self.paths.iter().any(|r| source::in_skipped_dir(r, p)) => {}
                            None => walk_wanted = true,
                        }
                    }
                }
                Wake::Rescan => {
                    walk_wanted = true;
                    look = true;
                }
                Wake::Tick => {}
            }
            if look {
                self.look_for_writes();
            }
            // Walks for changes are spaced (a writer of other files under the tree would
            // have the tree walked at each write); the first comes at once.
            let walk = if notifying {
                walk_wanted && last_walk.elapsed() >= WALK_SPACING
            } else {
                polled.due()
            };
            if walk {
                walk_wanted = false;
                last_walk = Instant::now();
                let found = self.discover(false);
                if !notifying {
                    polled.found(found);
                }
            }
            if !walk_wanted {
                self.sh.watching.store(true, Ordering::Release);
            }
            if !self.refresh() {
                return;
            }
            if stale_check.elapsed() >= STALE_CHECK {
                stale_check = Instant::now();
                if !self.check_stale() {
                    return;
                }
            }
        }
    }

    /// How long the watch may wait before something is due: a source written to whose next
    /// summary waits for its turn, a walk waiting for its turn (`walk`), or the look for runs
    /// turned stale.
    fn next_due(&self, stale_check: Instant, walk: Option<Duration>) -> Option<Duration> {
        let stale = STALE_CHECK.saturating_sub(stale_check.elapsed());
        let written = self
            .written
            .values()
            .filter(|w| w.pending)
            .map(|w| w.wait())
            .min()
            .unwrap_or(Duration::MAX);
        Some(
            stale
                .min(written)
                .min(walk.unwrap_or(Duration::MAX))
                .max(Duration::from_millis(5)),
        )
    }

    /// Summarize again the sources written to whose turn it is. False when the UI is gone.
    fn refresh(&mut self) -> bool {
        let followed = self.sh.followed.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let due: Vec<PathBuf> = self
            .written
            .iter()
            .filter(|(_, w)| w.pending && w.wait().is_zero())
            .map(|(p, _)| p.clone())
            .collect();
        for p in due {
            let stamp = self.known.get(&p).and_then(|k| source::cache::source_stamp(&k.run));
            if let Some(k) = self.known.get_mut(&p) {
                k.stamp = stamp;
            }
            let Some(w) = self.written.get_mut(&p) else { continue };
            w.pending = false;
            // The open run's loader reports its source's summaries as it reads it.
            if followed.as_deref() == Some(p.as_path()) {
                w.follow = None;
                continue;
            }
            let t0 = Instant::now();
            let listed = w.summaries();
            w.last = Some(Instant::now());
            w.took = t0.elapsed();
            match listed {
                Err(e) => {
                    let e = e.to_string();
                    let (_, since, said) = self
                        .failing
                        .entry(p.clone())
                        .or_insert((e.clone(), Instant::now(), false));
                    if !*said && since.elapsed() >= HALF_WRITTEN && quiet_for_at_least(&p, HALF_WRITTEN) {
                        *said = true;
                        if self.tx.send(Action::RunProblem(p.clone(), e)).is_err() {
                            return false;
                        }
                    } else if !*said {
                        // Tried again until it reads or has been quiet long enough to say so.
                        w.pending = true;
                    }
                }
                Ok(list) => {
                    self.failing.remove(&p);
                    let run = w.run.clone();
                    let list = entries_of(&run, list);
                    self.note_running(&p, &list);
                    if self.tx.send(Action::RunsFound(list)).is_err() {
                        return false;
                    }
                }
            }
        }
        // Sources quiet for long are let go (their readers are what they hold), and the
        // oldest when there are too many.
        self.written.retain(|_, w| w.pending || w.seen.elapsed() < LET_GO);
        while self.written.len() > MAX_WRITTEN {
            let Some(oldest) = self
                .written
                .iter()
                .filter(|(_, w)| !w.pending)
                .min_by_key(|(_, w)| w.seen)
                .map(|(p, _)| p.clone())
            else {
                break;
            };
            self.written.remove(&oldest);
        }
        true
    }

    /// Running runs that turned stale (or live again) since they were sent: sent again, with
    /// how long they have been quiet. False when the UI is gone.
    fn check_stale(&mut self) -> bool {
        // Running runs the indexer found (a source written since is followed here instead).
        let indexed: Vec<(PathBuf, Vec<RunEntry>)> = self
            .indexed_running
            .as_ref()
            .map_or_else(Vec::new, |rx| rx.try_iter().collect());
        for (p, list) in indexed {
            if !self.written.contains_key(&p) {
                self.note_running(&p, &list);
            }
        }
        let mut again = Vec::new();
        for (p, (list, was_stale)) in self.running.iter_mut() {
            let mut now_stale = false;
            for e in list.iter_mut() {
                e.quiet = source::liveness::quiet_for(p, e.summary.status);
                now_stale |= e.is_stale(source::liveness::STALE);
            }
            if now_stale != *was_stale {
                *was_stale = now_stale;
                again.extend(list.iter().cloned());
            }
        }
        again.is_empty() || self.tx.send(Action::RunsFound(again)).is_ok()
    }
}

impl Written {
    /// How long until its next summary may be made.
    fn wait(&self) -> Duration {
        let every = if self.lines {
            RESUMMARIZE
        } else {
            RESUMMARIZE.max(self.took * LOAD_SHARE)
        };
        self.last.map_or(Duration::ZERO, |t| every.saturating_sub(t.elapsed()))
    }

    /// The source's exact summaries now: a line-oriented source reads what was appended since
    /// the last time, a whole document is loaded again.
    fn summaries(&mut self) -> Result<Vec<Summary>, crate::formats::LoadError> {
        if self.follow.is_none() {
            self.follow = self.run.follow();
        }
        match self.follow.as_mut() {
            Some(f) => {
                f.poll()?;
                if f.sink.traces.is_empty() {
                    // Nothing read as a run yet (a file before its first whole line): not listed.
                    return Err(crate::formats::LoadError::Invalid {
                        path: self.run.path.clone(),
                        message: "no run in it yet".into(),
                        diagnostics: Vec::new(),
                    });
                }
                Ok(f.sink.traces.iter().map(source::summary::of).collect())
            }
            None => self.run.exact(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::keymap::Keymap;
    use crate::tui::state::State;
    use crate::tui::update::update;

    /// `serve`'s spool is a directory watched while still empty (issue 37): it is not listed
    /// as unreadable once its runs appear, however many scans saw it empty.
    #[test]
    fn an_empty_directory_watched_is_not_unreadable_once_runs_appear_in_it() {
        let d = tempfile::tempdir().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut w = Watcher {
            paths: vec![d.path().to_path_buf()],
            places: None,
            forced: None,
            failing: HashMap::new(),
            skipped: Default::default(),
            tx,
            sh: Shared::default(),
            known: HashMap::new(),
            inputs: HashMap::new(),
            running: HashMap::new(),
            written: HashMap::new(),
            indexer: None,
            said_errors: false,
            indexed_running: None,
        };
        assert!(!w.discover(true));
        assert!(!w.discover(false), "scanned again while empty");
        std::fs::write(
            d.path().join("otlp-1.jsonl"),
            "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"traceId\":\"0af7651916cd43dd8448eb211c80319c\",\"spanId\":\"00f067aa0ba902b7\",\"name\":\"root\",\"startTimeUnixNano\":\"1\",\"endTimeUnixNano\":\"2\"}]}]}]}\n",
        )
        .unwrap();
        assert!(w.discover(false));
        drop(w);
        let mut s = State::new(Keymap::default(), (120, 40));
        for a in rx.try_iter() {
            update(&mut s, a);
        }
        assert_eq!(s.runs.entries.len(), 1);
        assert!(s.runs.problems.is_empty(), "{:?}", s.runs.problems);
    }

    const OTLP_LINE: &str = "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"traceId\":\"0af7651916cd43dd8448eb211c80319c\",\"spanId\":\"00f067aa0ba902b7\",\"name\":\"root\",\"startTimeUnixNano\":\"1\",\"endTimeUnixNano\":\"2\"}]}]}]}\n";

    /// Issue 37: an idle explorer over a tree of other files walked it again every 5 to 60 s
    /// (re-opening every file). With notify it walks only for a change outside the listed
    /// runs: none while idle, none for a write under `target/` or `.git/`, one for a new run.
    #[test]
    fn an_idle_watch_walks_nothing_and_a_new_run_is_found_by_its_event() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("otlp-1.jsonl"), OTLP_LINE).unwrap();
        std::fs::create_dir_all(d.path().join("src/target")).unwrap();
        std::fs::write(d.path().join("src/package.json"), "{\"name\":\"x\"}").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let sh = Shared::default();
        spawn_watcher(
            vec![d.path().to_path_buf()],
            None,
            None,
            tx,
            sh.clone(),
            LiveOptions::default(),
            true,
        );
        let deadline = Instant::now() + Duration::from_secs(45);
        let mut listed = 0;
        let mut wait_for = |want: usize| {
            while listed < want {
                let left = deadline.saturating_duration_since(Instant::now());
                if let Action::RunsFound(l) = rx.recv_timeout(left).expect("the watcher stopped or hung") {
                    listed += l.len();
                }
            }
        };
        wait_for(1);
        // The walk that follows the watch's start is not idleness.
        while !sh.watching.load(Ordering::Acquire) {
            assert!(Instant::now() < deadline, "the watch never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        let walks = || sh.walks.load(Ordering::Relaxed);
        let after_start = walks();
        // Longer than the safety rescan of the old watch (5 s) and its poll (0.5 s).
        std::thread::sleep(Duration::from_secs(6));
        // Writes where no run can be: a build's output.
        std::fs::write(d.path().join("src/target/out.json"), "{}").unwrap();
        std::thread::sleep(Duration::from_millis(700));
        assert_eq!(walks(), after_start, "an idle watch walked the tree");
        std::fs::write(
            d.path().join("otlp-2.jsonl"),
            OTLP_LINE.replace("00f067aa0ba902b7", "00f067aa0ba902b8"),
        )
        .unwrap();
        wait_for(2);
        assert!(walks() > after_start);
    }
}
