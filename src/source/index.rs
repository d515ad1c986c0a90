//! Background indexing (DESIGN §8, "the runs list is exact"): sources whose cheap summaries
//! are provisional (a large session summarized from its ends, a run directory from its
//! metadata) are loaded whole, newest first, on every core, and their exact summaries
//! ([`super::RunRef::exact`]) reported in batches and written to the summary cache as they
//! complete. Only summaries are kept: each loaded run is dropped once it is summarized.
//!
//! The explorer keeps one indexer for its lifetime (runs found later join the queue); `ls`
//! makes one, waits for it and prints.

use super::RunRef;
use crate::formats::{LoadError, Summary};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How far indexing is: sources done of those queued so far, and their bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub bytes_done: u64,
    pub bytes_total: u64,
}

impl Progress {
    /// Every source queued is indexed.
    pub fn finished(&self) -> bool {
        self.done >= self.total
    }

    /// `indexing 312/2,140 · 1.2/6.0 GB` (empty when finished).
    pub fn text(&self) -> String {
        if self.finished() {
            return String::new();
        }
        let gb = |b: u64| b as f64 / 1e9;
        let size = if self.bytes_total >= 100_000_000 {
            format!("{:.1}/{:.1} GB", gb(self.bytes_done), gb(self.bytes_total))
        } else {
            format!(
                "{:.0}/{:.0} MB",
                self.bytes_done as f64 / 1e6,
                (self.bytes_total as f64 / 1e6).max(1.0)
            )
        };
        format!(
            "indexing {}/{} · {size}",
            crate::model::thousands(self.done as u64),
            crate::model::thousands(self.total as u64)
        )
    }
}

/// One source indexed.
pub struct Indexed {
    pub run: RunRef,
    pub result: Result<Vec<Summary>, LoadError>,
}

/// Receives indexed sources in batches (at most one batch per period), with the progress
/// after them; returns false to stop indexing (nobody listens any more).
pub type Report = Box<dyn FnMut(Vec<Indexed>, Progress) -> bool + Send>;

/// A queue of sources to index and the threads that index them.
pub struct Indexer {
    inner: Arc<Inner>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

struct Inner {
    q: Mutex<Queue>,
    /// Workers wait here for work.
    work: Condvar,
    /// The reporter waits here for results.
    results: Condvar,
    stop: AtomicBool,
}

#[derive(Default)]
struct Queue {
    /// Oldest first: the newest is taken from the end.
    items: Vec<Item>,
    /// Queued or under way (a source is indexed once at a time).
    queued: HashSet<PathBuf>,
    /// Given up on while under way ([`Indexer::forget`]): not reported.
    forgotten: HashSet<PathBuf>,
    done: Vec<Indexed>,
    /// The progress changed since the last report.
    changed: bool,
    progress: Progress,
    busy: usize,
}

struct Item {
    run: RunRef,
    start: Option<i64>,
    bytes: u64,
}

/// How often the summary cache is written while indexing (and once when it ends).
const CACHE_EVERY: Duration = Duration::from_secs(2);

impl Indexer {
    /// Start indexing on `threads` (0: every core; 1: one source at a time, in order) and a
    /// reporter calling `report` at most every `every`.
    pub fn start(threads: usize, every: Duration, mut report: Report) -> Indexer {
        let inner = Arc::new(Inner {
            q: Mutex::new(Queue::default()),
            work: Condvar::new(),
            results: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let n = if threads == 0 {
            rayon::current_num_threads().max(1)
        } else {
            threads
        };
        let mut handles = Vec::new();
        let d = inner.clone();
        if let Ok(h) = std::thread::Builder::new()
            .name("index".into())
            .spawn(move || dispatch(&d, n))
        {
            handles.push(h);
        }
        let r = inner.clone();
        if let Ok(h) = std::thread::Builder::new().name("index-report".into()).spawn(move || {
            let mut cached = Instant::now();
            loop {
                let (batch, progress, stop) = {
                    let mut q = r.lock();
                    while !q.changed && !r.stop.load(Ordering::Acquire) {
                        q = r.results.wait(q).unwrap_or_else(|e| e.into_inner());
                    }
                    q.changed = false;
                    (std::mem::take(&mut q.done), q.progress, r.stop.load(Ordering::Acquire))
                };
                if progress.finished() || cached.elapsed() >= CACHE_EVERY || stop {
                    super::cache::flush();
                    cached = Instant::now();
                }
                if (!batch.is_empty() || !stop) && !report(batch, progress) {
                    r.halt();
                    return;
                }
                if stop {
                    return;
                }
                std::thread::sleep(every);
            }
        }) {
            handles.push(h);
        }
        Indexer {
            inner,
            threads: handles,
        }
    }

    /// Queue sources with their start (the newest are indexed first). A source queued or under
    /// way already is not queued again.
    pub fn push(&self, runs: Vec<(RunRef, Option<i64>)>) {
        if runs.is_empty() {
            return;
        }
        // Sizes are read outside the lock (a stat or a directory listing each).
        let items: Vec<Item> = runs
            .into_iter()
            .map(|(run, start)| Item {
                bytes: source_bytes(&run),
                run,
                start,
            })
            .collect();
        let mut q = self.inner.lock();
        for it in items {
            q.forgotten.remove(&it.run.path);
            if !q.queued.insert(it.run.path.clone()) {
                continue;
            }
            q.progress.total += 1;
            q.progress.bytes_total += it.bytes;
            q.items.push(it);
        }
        // Stable: of two runs that started together, the one listed first goes first.
        q.items.sort_by_key(|a| a.start);
        q.changed = true;
        drop(q);
        self.inner.work.notify_all();
        self.inner.results.notify_one();
    }

    /// Someone else keeps the source current now (the explorer's watcher follows it as it is
    /// written): not indexed, and a result under way is not reported. It counts as done.
    pub fn forget(&self, path: &Path) {
        let mut q = self.inner.lock();
        if !q.queued.contains(path) {
            return;
        }
        if let Some(i) = q.items.iter().position(|it| it.run.path == path) {
            let it = q.items.remove(i);
            q.queued.remove(path);
            q.progress.done += 1;
            q.progress.bytes_done += it.bytes;
        } else {
            q.forgotten.insert(path.to_path_buf());
        }
        q.changed = true;
        drop(q);
        self.inner.results.notify_one();
    }

    pub fn progress(&self) -> Progress {
        self.inner.lock().progress
    }

    /// Wait until every source queued is indexed and reported, then stop the threads.
    pub fn finish(mut self) {
        loop {
            {
                let q = self.inner.lock();
                if q.progress.finished() && q.busy == 0 {
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        self.inner.halt();
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}

impl Drop for Indexer {
    fn drop(&mut self) {
        self.inner.halt();
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.q.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn halt(&self) {
        self.stop.store(true, Ordering::Release);
        // Under the lock: a thread between its check and its wait would miss the wake-up.
        let _q = self.lock();
        self.work.notify_all();
        self.results.notify_all();
    }
}

/// Sources are indexed newest first on rayon's pool, as `check` loads: a load's own parallel
/// parts (the engine's skim and apply) are then taken up by the pool's idle threads. Workers of
/// our own handed every part to the pool from outside it and kept one of two cores idle
/// (2,000 sessions indexed in 2.4x `check`'s time); groups with a barrier between them idled
/// at each barrier. A few sources are under way at a time, so that newer ones queued
/// meanwhile go next.
fn dispatch(inner: &Inner, n: usize) {
    let next = |limit: usize| -> Option<Item> {
        let mut q = inner.lock();
        loop {
            if inner.stop.load(Ordering::Acquire) {
                return None;
            }
            if q.busy < limit
                && let Some(it) = q.items.pop()
            {
                q.busy += 1;
                return Some(it);
            }
            q = inner.work.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    };
    if n == 1 {
        while let Some(it) = next(1) {
            index_one(inner, it);
        }
        return;
    }
    rayon::in_place_scope(|s| {
        while let Some(it) = next(IN_FLIGHT_PER_THREAD * n) {
            s.spawn(move |_| index_one(inner, it));
        }
    });
}

/// Sources under way at a time, per thread: enough that a thread never waits for the next.
const IN_FLIGHT_PER_THREAD: usize = 2;

fn index_one(inner: &Inner, item: Item) {
    if inner.stop.load(Ordering::Acquire) {
        return;
    }
    // A panic in a format is a bug, but it must not take the indexer with it: the source
    // is reported as unreadable.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| item.run.exact())).unwrap_or_else(|_| {
        Err(LoadError::io(
            &item.run.path,
            std::io::Error::other("tracetui failed while indexing it (a bug)"),
        ))
    });
    let mut q = inner.lock();
    q.busy -= 1;
    q.progress.done += 1;
    q.progress.bytes_done += item.bytes;
    q.queued.remove(&item.run.path);
    if !q.forgotten.remove(&item.run.path) {
        q.done.push(Indexed { run: item.run, result });
    }
    q.changed = true;
    drop(q);
    inner.results.notify_one();
    // The dispatcher waits for a place under way.
    inner.work.notify_all();
}

/// The bytes a source is read from: the file, or the files in the directory (and in its
/// directories, two levels down, up to a few thousand entries), and the sources read into it.
pub fn source_bytes(run: &RunRef) -> u64 {
    fn walk(p: &Path, depth: usize, budget: &mut usize) -> u64 {
        let Ok(m) = std::fs::metadata(p) else { return 0 };
        if !m.is_dir() {
            return m.len();
        }
        if depth > 2 {
            return 0;
        }
        let Ok(rd) = std::fs::read_dir(p) else { return 0 };
        let mut n = 0;
        for e in rd.flatten() {
            if *budget == 0 {
                break;
            }
            *budget -= 1;
            n += walk(&e.path(), depth + 1, budget);
        }
        n
    }
    let mut budget = 4096;
    let mut n = walk(&run.path, 0, &mut budget);
    for p in run.nested.iter().flat_map(|v| v.iter()) {
        n += walk(p, 0, &mut budget);
    }
    n
}

/// Drop a loaded source on another thread when it is large (freeing a million events takes a
/// while; the indexer moves on meanwhile).
pub fn drop_in_background(loaded: crate::formats::Loaded) {
    let events: usize = loaded.traces.iter().map(|t| t.events.len()).sum();
    if events < 100_000 {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("drop".into())
        .spawn(move || drop(loaded));
}

/// Whether a source's summaries need indexing: any of them is provisional (not from a load).
pub fn needs_index(list: &[Summary]) -> bool {
    list.iter().any(Summary::provisional)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude(dir: &Path, id: &str, ts: &str) -> RunRef {
        let body = std::fs::read_to_string("sample-traces/claude-code/7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f.jsonl")
            .unwrap()
            .replace("7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f", id)
            .replace("2026-", &format!("{ts}-"));
        let p = dir.join(format!("{id}.jsonl"));
        std::fs::write(&p, body).unwrap();
        RunRef::new(p, crate::formats::by_id("claude-code").unwrap(), Arc::from(dir))
    }

    /// Sources come back exact, each once, the newest first (one worker: the order is the
    /// queue's), in batches, with the progress counting them and their bytes.
    #[test]
    fn sources_are_indexed_newest_first_and_reported_once() {
        let d = tempfile::tempdir().unwrap();
        let runs: Vec<(RunRef, Option<i64>)> = (0..5)
            .map(|i| {
                let r = claude(d.path(), &format!("0000000{i}-5b7e-4c1d-9e2f-0a1b2c3d4e5f"), "2026");
                (r, Some(i as i64))
            })
            .collect();
        let bytes: u64 = runs
            .iter()
            .map(|(r, _)| std::fs::metadata(&r.path).unwrap().len())
            .sum();
        let got: Arc<Mutex<Vec<(PathBuf, usize)>>> = Arc::default();
        let last: Arc<Mutex<Progress>> = Arc::default();
        let (g, l) = (got.clone(), last.clone());
        let ix = Indexer::start(
            1,
            Duration::from_millis(1),
            Box::new(move |batch, p| {
                for x in batch {
                    let list = x.result.unwrap();
                    assert!(!needs_index(&list), "exact");
                    g.lock().unwrap().push((x.run.path, list[0].tool_calls.unwrap()));
                }
                *l.lock().unwrap() = p;
                true
            }),
        );
        ix.push(runs.clone());
        // Queued again while it is queued: once.
        ix.push(runs[..2].to_vec());
        ix.finish();
        let got = got.lock().unwrap();
        let order: Vec<&PathBuf> = got.iter().map(|(p, _)| p).collect();
        let newest_first: Vec<&PathBuf> = runs.iter().rev().map(|(r, _)| &r.path).collect();
        assert_eq!(order, newest_first);
        let p = *last.lock().unwrap();
        assert_eq!((p.done, p.total), (5, 5));
        assert_eq!((p.bytes_done, p.bytes_total), (bytes, bytes));
        assert!(p.finished() && p.text().is_empty());
        let full = runs[0].0.load().unwrap().traces[0].counts().tool_calls;
        assert!(got.iter().all(|(_, n)| *n == full));
    }

    #[test]
    fn a_forgotten_source_is_not_indexed_and_counts_as_done() {
        let d = tempfile::tempdir().unwrap();
        let a = claude(d.path(), "0000000a-5b7e-4c1d-9e2f-0a1b2c3d4e5f", "2026");
        let b = claude(d.path(), "0000000b-5b7e-4c1d-9e2f-0a1b2c3d4e5f", "2026");
        let got: Arc<Mutex<Vec<PathBuf>>> = Arc::default();
        let g = got.clone();
        // No workers yet: the queue holds both until one starts.
        let ix = Indexer::start(
            1,
            Duration::from_millis(1),
            Box::new(move |batch, _| {
                g.lock().unwrap().extend(batch.into_iter().map(|x| x.run.path));
                true
            }),
        );
        {
            // Hold the queue so that no worker takes an item before `forget`.
            let mut q = ix.inner.lock();
            for (r, s) in [(a.clone(), Some(1)), (b.clone(), Some(2))] {
                q.queued.insert(r.path.clone());
                q.progress.total += 1;
                q.items.push(Item {
                    run: r,
                    start: s,
                    bytes: 1,
                });
            }
        }
        ix.forget(&b.path);
        ix.inner.work.notify_all();
        ix.finish();
        assert_eq!(*got.lock().unwrap(), vec![a.path.clone()]);
    }

    #[test]
    fn progress_reads_as_the_title_says_it() {
        let p = Progress {
            done: 312,
            total: 2140,
            bytes_done: 1_200_000_000,
            bytes_total: 6_000_000_000,
        };
        assert_eq!(p.text(), "indexing 312/2,140 · 1.2/6.0 GB");
        let small = Progress {
            done: 1,
            total: 3,
            bytes_done: 2_000_000,
            bytes_total: 9_000_000,
        };
        assert_eq!(small.text(), "indexing 1/3 · 2/9 MB");
    }
}
