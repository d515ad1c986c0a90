//! From paths on the command line to traces: a trace file, a run directory, or a directory of
//! runs (of mixed formats). Listing is cheap: it looks at names and metadata, and loads a run
//! only when it is opened.

pub mod cache;
pub mod clickhouse;
pub mod index;
pub mod liveness;
mod not_traces;
pub mod places;
pub mod ssh;
pub mod summary;

use crate::formats::{self, Format, LoadError, Loaded, Summary};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One run source: a file or run directory and the format that reads it.
#[derive(Clone)]
pub struct RunRef {
    pub path: PathBuf,
    pub format: &'static dyn Format,
    /// The path it was found under: a PATH given to tracetui, or one of the standard places.
    pub root: Arc<Path>,
    /// For a format that nests runs ([`crate::formats::Format::lineage`]): the sources found
    /// with it that are part of it (a Codex run's sub-agent rollouts), read into it. `None`:
    /// the source alone (a file named on its own).
    pub nested: Option<Arc<[PathBuf]>>,
}

impl std::fmt::Debug for RunRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RunRef({}, {})", self.path.display(), self.format.id())
    }
}

impl RunRef {
    /// A source found on its own (nothing nested in it).
    pub fn new(path: PathBuf, format: &'static dyn Format, root: Arc<Path>) -> RunRef {
        RunRef {
            path,
            format,
            root,
            nested: None,
        }
    }
    pub fn load(&self) -> Result<Loaded, LoadError> {
        match &self.nested {
            None => self.format.load(&self.path),
            Some(n) => self.format.load_nested(&self.path, Some(n)),
        }
    }
    /// [`RunRef::load`], followed by `watcher` ([`crate::formats::Format::load_watched`]).
    pub fn load_watched(&self, watcher: &mut dyn crate::formats::Watcher) -> Result<Loaded, LoadError> {
        match &self.nested {
            None => self.format.load_watched(&self.path, watcher),
            Some(_) => self.load(),
        }
    }
    /// The source followed as it grows ([`crate::formats::Format::follow`]), with what is
    /// nested in it.
    pub fn follow(&self) -> Option<crate::formats::jsonl::Follow> {
        self.format.follow_nested(&self.path, self.nested.as_deref())
    }
    /// The run `id` (or at `index`) of this source alone, where the format can read it
    /// without the others ([`crate::formats::Format::load_run`]).
    pub fn load_run(&self, index: usize, id: &str) -> Option<Result<Loaded, LoadError>> {
        self.format.load_run(&self.path, index, id)
    }
    /// Cheap summaries: the cached ones of a source unchanged since ([`cache`]), else a large
    /// session from its first and last lines ([`summary`]), else the format's own.
    pub fn summarize(&self) -> Result<Vec<Summary>, LoadError> {
        self.summarize_stamped().1
    }
    /// [`RunRef::summarize`], with the stamp of its files taken before they were read
    /// ([`cache::source_stamp`]).
    pub fn summarize_stamped(&self) -> (Option<u64>, Result<Vec<Summary>, LoadError>) {
        cache::summaries_stamped(self, || {
            summary::from_ends(self).unwrap_or_else(|| {
                let cheap = match &self.nested {
                    None => self.format.summarize(&self.path)?,
                    Some(_) => None,
                };
                match cheap {
                    Some(list) => Ok(list),
                    None => Ok(self.load()?.traces.iter().map(summary::of).collect()),
                }
            })
        })
    }
    /// Exact summaries: the loaded runs' ([`summary::of`]), from the cache when the source is
    /// as it was when they were made, else by a full load (then cached). What the runs list
    /// and `ls` show once a source is indexed ([`index`]).
    pub fn exact(&self) -> Result<Vec<Summary>, LoadError> {
        cache::exact(self, || {
            let loaded = self.load()?;
            let list = loaded.traces.iter().map(summary::of).collect();
            index::drop_in_background(loaded);
            Ok(list)
        })
    }
    /// Its project ([`places::project`]): the agent's project directory where the layout has
    /// one, else its parent directory relative to where it was found.
    pub fn project(&self, places: &[places::Resolved]) -> String {
        places::project(&self.root, &self.path, places)
    }
}

/// What a set of paths holds.
#[derive(Debug, Default)]
pub struct Discovery {
    pub runs: Vec<RunRef>,
    /// Paths that could not be read, or that were named explicitly and are no trace.
    pub errors: Vec<LoadError>,
    /// Directories the scan did not enter because of its limits (never silently).
    pub skipped: Skipped,
}

/// Directories a scan left out, and why.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Below [`MAX_DEPTH`] levels from where the scan started (or from a known layout's root).
    pub deep: usize,
    /// Not reached because the scan looked at [`MAX_ENTRIES`] entries already.
    pub over_limit: usize,
}

impl Skipped {
    pub fn dirs(&self) -> usize {
        self.deep + self.over_limit
    }
    pub fn any(&self) -> bool {
        self.dirs() > 0
    }
    pub fn add(&mut self, o: Skipped) {
        self.deep += o.deep;
        self.over_limit += o.over_limit;
    }
    /// Why, in words (empty when nothing was skipped).
    pub fn reason(&self) -> String {
        let mut r = Vec::new();
        if self.deep > 0 {
            r.push(format!("more than {MAX_DEPTH} directory levels deep"));
        }
        if self.over_limit > 0 {
            r.push(format!("the scan stopped after {MAX_ENTRIES} entries"));
        }
        r.join("; ")
    }
    /// One line for stderr and the runs list.
    pub fn message(&self) -> String {
        format!(
            "{} not searched ({}): runs in them are not listed; give a deeper PATH to see them",
            crate::words::count_as(self.dirs(), "directory", "directories"),
            self.reason()
        )
    }
    /// `"skipped": {"dirs": N, "reason": ...}` of `check` and `ls`.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({"dirs": self.dirs(), "reason": self.reason()})
    }
}

/// How deep a directory of runs is searched (Claude Code keeps `projects/<dir>/<session>`);
/// the count starts again at a known layout's root ([`places::is_layout_root`]).
pub const MAX_DEPTH: usize = 6;
/// Directory entries looked at in one scan, so a hostile tree cannot stall a listing.
pub const MAX_ENTRIES: usize = 200_000;
/// `subagents/` holds Claude Code subagent transcripts, loaded as part of their session.
const SKIP_DIRS: [&str; 5] = [".git", "node_modules", "target", "__pycache__", "subagents"];

/// Whether a change at `path` (under `root`) is in a directory a scan never enters, so it
/// cannot be a new run (a build writing `target/` or a `git` command under a watched tree
/// made the explorer walk it again). `subagents/` is entered for its session, so it counts.
pub fn in_skipped_dir(root: &Path, path: &Path) -> bool {
    path.strip_prefix(root).is_ok_and(|rel| {
        rel.components().any(|c| {
            let c = c.as_os_str();
            SKIP_DIRS.iter().any(|d| *d != "subagents" && c == *d)
        })
    })
}
/// Names of the files a directory scan considers (by ending); a slice, so that a format adds
/// one line.
const TRACE_EXTS: &[&str] = &[
    ".json",
    ".jsonl",
    ".ndjson",
    ".tar.gz",
    ".tgz",
    ".aider.chat.history.md",
    ".traj",
    ".eval",
];

/// Find the runs under each path. `forced` overrides detection.
pub fn discover(paths: &[PathBuf], forced: Option<&'static dyn Format>) -> Discovery {
    let mut d = Discovery::default();
    for p in paths {
        // A store's run (clickhouse://…?trace=ID) is named by its URL, not found on disk.
        if let Some(url) = p.to_str().filter(|u| clickhouse::is_url(u)) {
            match clickhouse::runs::discover(url) {
                Ok(r) => d.runs.push(r),
                Err(e) => d.errors.push(e),
            }
            continue;
        }
        discover_one(p, forced, None, &mut d);
    }
    nest(&mut d.runs);
    d
}

/// Find the runs in the standard places that exist ([`places`]). An empty place is no error.
pub fn discover_places(places: &[places::Resolved], forced: Option<&'static dyn Format>) -> Discovery {
    let mut d = Discovery::default();
    for p in places.iter().filter(|p| p.exists()) {
        discover_one(&p.path, forced, Some(p.place), &mut d);
        d.errors
            .retain(|e| !matches!(e, LoadError::NotATrace { path, .. } if path == &p.path));
    }
    nest(&mut d.runs);
    d
}

/// Runs that are part of another run found with them ([`Format::lineage`]: a Codex
/// sub-agent's rollout and its parent's) are read into that run ([`RunRef::nested`]) and not
/// listed on their own; a part whose run is not among them stays a run. Runs of a format that
/// nests, found by a directory scan, read the parts that appear later too (`nested` is
/// `Some`); a file named on its own is read alone unless a part of it was named too.
fn nest(runs: &mut Vec<RunRef>) {
    if !runs.iter().any(|r| r.format.nests()) {
        return;
    }
    // Read from the head of each (Codex: 8 KB of each rollout), or from the cache.
    let lin: Vec<Option<formats::Lineage>> = runs
        .par_iter()
        .map(|r| if r.format.nests() { cache::lineage(r) } else { None })
        .collect();
    if lin.iter().all(Option::is_none) {
        return;
    }
    let mut by_id: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, l) in lin.iter().enumerate() {
        if let Some(l) = l {
            by_id.entry(l.id.as_str()).or_insert(i);
        }
    }
    // The run a part goes into: its oldest ancestor among them (a sub-agent's sub-agent goes
    // into the top run too); none in a loop of parents.
    let top = |i: usize| -> usize {
        let mut seen = vec![i];
        let mut cur = i;
        while let Some(p) = lin[cur]
            .as_ref()
            .and_then(|l| l.parent.as_deref())
            .and_then(|p| by_id.get(p).copied())
            .filter(|&p| runs[p].format.id() == runs[i].format.id())
        {
            if seen.contains(&p) || seen.len() > 64 {
                return i;
            }
            seen.push(p);
            cur = p;
        }
        cur
    };
    let mut parts: Vec<Vec<PathBuf>> = vec![Vec::new(); runs.len()];
    let mut keep = vec![true; runs.len()];
    for i in 0..runs.len() {
        let t = top(i);
        if t != i {
            parts[t].push(runs[i].path.clone());
            keep[i] = false;
        }
    }
    for (i, r) in runs.iter_mut().enumerate() {
        let found_by_scan = *r.root != *r.path;
        if lin[i].is_some() && keep[i] && (found_by_scan || !parts[i].is_empty()) {
            let mut p = std::mem::take(&mut parts[i]);
            p.sort();
            r.nested = Some(Arc::from(p));
        }
    }
    let mut i = 0;
    runs.retain(|_| {
        i += 1;
        keep[i - 1]
    });
}

/// Standard input (`-`): formats read by position (deferred payloads, the raw view), which a
/// pipe cannot do. A regular file on standard input (`< file`) is read in place. A pipe is
/// copied, up to [`STDIN_LIMIT`], into a temporary file that is unlinked at once and read
/// through `/proc/self/fd/N`: nothing is left behind however the process ends (even killed).
/// Where there is no /proc, the copy is a named temporary file removed at exit.
static STDIN_COPIES: std::sync::Mutex<Vec<StdinCopy>> = std::sync::Mutex::new(Vec::new());

/// The most standard input that is copied (the README says so).
pub const STDIN_LIMIT: u64 = 4 << 30;

// Held only to be dropped: the file stays open (or named) while the process reads it.
#[allow(dead_code)]
enum StdinCopy {
    /// Unlinked; kept open so that its /proc/self/fd path stays readable.
    Open(std::fs::File),
    Named(tempfile::TempPath),
}

/// Remove the named copies of standard input (statics are never dropped: call this before
/// exit; unlinked copies need nothing).
pub fn cleanup() {
    STDIN_COPIES.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

fn stdin_to_file() -> std::io::Result<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let fd0 = PathBuf::from("/proc/self/fd/0");
        if std::fs::metadata(&fd0).is_ok_and(|m| m.is_file()) {
            return Ok(fd0);
        }
        let mut f = tempfile::tempfile()?;
        copy_bounded(&mut f)?;
        let p = PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()));
        STDIN_COPIES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(StdinCopy::Open(f));
        Ok(p)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let mut f = tempfile::Builder::new()
            .prefix("tracetui-stdin-")
            .suffix(".jsonl")
            .tempfile()?;
        copy_bounded(f.as_file_mut())?;
        let path = f.into_temp_path();
        let p = path.to_path_buf();
        STDIN_COPIES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(StdinCopy::Named(path));
        Ok(p)
    }
}

fn copy_bounded(f: &mut std::fs::File) -> std::io::Result<()> {
    use std::io::Read;
    let n = std::io::copy(&mut std::io::stdin().lock().take(STDIN_LIMIT + 1), f)?;
    if n > STDIN_LIMIT {
        return Err(std::io::Error::other(format!(
            "standard input is larger than {} GiB; save it to a file and give its path",
            STDIN_LIMIT >> 30
        )));
    }
    Ok(())
}

fn discover_one(
    path: &Path,
    forced: Option<&'static dyn Format>,
    place: Option<&'static places::Place>,
    d: &mut Discovery,
) {
    let root: Arc<Path> = Arc::from(path);
    if path == Path::new("-") {
        match stdin_to_file() {
            Ok(p) => discover_one(&p, forced, None, d),
            Err(e) => d.errors.push(LoadError::io(path, e)),
        }
        return;
    }
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            d.errors.push(LoadError::io(path, e));
            return;
        }
    };
    if !meta.is_dir() {
        match forced {
            Some(f) => d.runs.push(RunRef::new(path.to_path_buf(), f, root)),
            None => match cache::format_of(path).map_or_else(|| formats::detect(path), Ok) {
                Ok(f) => d.runs.push(RunRef::new(path.to_path_buf(), f, root)),
                Err(e) => d.errors.push(e),
            },
        }
        return;
    }
    if let Some(f) = run_dir_format(path, forced) {
        d.runs.push(RunRef::new(path.to_path_buf(), f, root));
        return;
    }
    let before = d.runs.len();
    let mut scan = Scan {
        forced,
        root: root.clone(),
        budget: MAX_ENTRIES,
        files: Vec::new(),
        known: None,
    };
    let place = place.or_else(|| places::layout_of(path));
    scan.known = place.and_then(|p| p.jsonl).and_then(formats::by_id);
    scan.dir(path, 0, d);
    let files = scan.files;
    // Detection reads the head of each file: do it in parallel for large directories.
    let detected: Vec<Result<RunRef, LoadError>> = files
        .par_iter()
        .filter_map(|p| match forced {
            Some(f) => Some(Ok(RunRef::new(p.clone(), f, root.clone()))),
            None => match cache::format_of(p) {
                Some(f) => Some(Ok(f)),
                None => not_traces::detect(p),
            }
            .map(|r| r.map(|f| RunRef::new(p.clone(), f, root.clone()))),
        })
        .collect();
    for r in detected {
        match r {
            Ok(r) => d.runs.push(r),
            // Not every JSON file in a tree is a trace: only unreadable ones are reported.
            Err(e @ LoadError::Io { .. }) => d.errors.push(e),
            Err(_) => {}
        }
    }
    if d.runs.len() == before && d.errors.is_empty() && !d.skipped.any() {
        d.errors.push(LoadError::NotATrace {
            path: path.to_path_buf(),
            reason: "no run directories or trace files in it".into(),
            tried: formats::ids().join(", "),
        });
    }
}

fn run_dir_format(dir: &Path, forced: Option<&'static dyn Format>) -> Option<&'static dyn Format> {
    match forced {
        Some(f) => f.is_run_dir(dir).then_some(f),
        None => formats::REGISTRY.iter().copied().find(|f| f.is_run_dir(dir)),
    }
}

/// One directory scan's state.
struct Scan {
    forced: Option<&'static dyn Format>,
    root: Arc<Path>,
    /// Entries left to look at.
    budget: usize,
    /// Files with a trace extension, detected afterwards (in parallel).
    files: Vec<PathBuf>,
    /// In a place whose `.jsonl` files are all of one format ([`places::Place::jsonl`]): it.
    known: Option<&'static dyn Format>,
}

impl Scan {
    fn dir(&mut self, dir: &Path, depth: usize, d: &mut Discovery) {
        let rd = match std::fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) => {
                d.errors.push(LoadError::io(dir, e));
                return;
            }
        };
        let mut entries: Vec<_> = rd.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        let mut subdirs = Vec::new();
        // Sessions' names (`X` of `X.jsonl`) in a place of JSONL sessions: a directory `X`
        // beside `X.jsonl` is that session's own (Claude Code's subagents and tool results,
        // read with it), not a place of runs, and is not entered (a directory read per
        // session, a third of a warm start's walk of 2,000 sessions).
        let mut sessions: std::collections::HashSet<String> = std::collections::HashSet::new();
        let mut left = entries.into_iter();
        while let Some(e) = left.next() {
            if self.budget == 0 {
                // The rest of this directory is not looked at (it counts as skipped), nor are
                // the directories in it.
                let rest = std::iter::once(e)
                    .chain(left)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .count();
                d.skipped.over_limit += 1 + rest + subdirs.len();
                return;
            }
            self.budget -= 1;
            let name = e.file_name().to_string_lossy().into_owned();
            // file_type() does not follow symlinks: a linked directory is not entered (no loops).
            let Ok(ft) = e.file_type() else { continue };
            let path = e.path();
            if ft.is_dir() {
                if !SKIP_DIRS.contains(&name.as_str()) {
                    subdirs.push((path, name));
                }
            } else if (ft.is_file() || ft.is_symlink()) && TRACE_EXTS.iter().any(|x| name.ends_with(x)) {
                if ft.is_symlink() && !path.is_file() {
                    continue; // dangling link or a link to a directory/FIFO
                }
                match self.known.filter(|_| self.forced.is_none() && name.ends_with(".jsonl")) {
                    Some(format) => {
                        sessions.insert(name.strip_suffix(".jsonl").unwrap_or(&name).to_string());
                        d.runs.push(RunRef::new(path, format, self.root.clone()))
                    }
                    None => self.files.push(path),
                }
            }
        }
        let forced = self.forced;
        // Run directories are found by name, cheaply and in parallel (2,000 runs list fast).
        // Not in a place whose runs are all JSONL files of one format: there a directory is a
        // session's own (Claude Code's subagents and tool results), and asking every format
        // whether it is a run directory was 11 stats a session, a fifth of a warm start.
        let in_jsonl_place = self.known.is_some() && forced.is_none();
        if in_jsonl_place {
            subdirs.retain(|(_, name)| !sessions.contains(name));
        }
        let subdirs: Vec<PathBuf> = subdirs.into_iter().map(|(p, _)| p).collect();
        let found: Vec<Option<&'static dyn Format>> = if in_jsonl_place {
            vec![None; subdirs.len()]
        } else {
            subdirs.par_iter().map(|p| run_dir_format(p, forced)).collect()
        };
        for (p, f) in subdirs.into_iter().zip(found) {
            match f {
                Some(format) => d.runs.push(RunRef::new(p, format, self.root.clone())),
                None if self.budget == 0 => d.skipped.over_limit += 1,
                // A known layout (`.codex/sessions`, `.claude/projects`, …) is searched to its
                // own depth wherever it is found.
                None if let Some(place) = places::layout_of(&p) => {
                    let outer = self.known;
                    self.known = place.jsonl.and_then(formats::by_id);
                    self.dir(&p, 0, d);
                    self.known = outer;
                }
                None if depth + 1 < MAX_DEPTH => self.dir(&p, depth + 1, d),
                None => d.skipped.deep += 1,
            }
        }
    }
}

/// Load every run found, in parallel, keeping discovery order.
pub fn load_all(runs: &[RunRef]) -> Vec<(RunRef, Result<Loaded, LoadError>)> {
    runs.par_iter().map(|r| (r.clone(), retried(r, RunRef::load))).collect()
}

/// Load every source in parallel and hand each load to `f` on the thread that made it (so
/// that a caller can reduce a trace and drop it there, rather than hold every run at once).
pub fn load_each<T: Send>(
    runs: &[RunRef],
    f: impl Fn(&RunRef, Result<Loaded, LoadError>) -> T + Sync + Send,
) -> Vec<T> {
    runs.par_iter().map(|r| f(r, retried(r, RunRef::load))).collect()
}

/// Summaries for `ls` and the runs view, in parallel.
pub fn summarize_all(runs: &[RunRef]) -> Vec<(RunRef, Result<Vec<Summary>, LoadError>)> {
    runs.par_iter()
        .map(|r| (r.clone(), retried(r, RunRef::summarize)))
        .collect()
}

/// A source written in the last [`FRESH`] may have been caught half-written (a run directory's
/// metadata before its events): when it fails, it is read again once it has been quiet for a
/// moment (at most [`FRESH`] later), and only that answer counts.
fn retried<T>(r: &RunRef, read: impl Fn(&RunRef) -> Result<T, LoadError>) -> Result<T, LoadError> {
    let first = read(r);
    if first.is_ok() || !written_within(&r.path, FRESH) {
        return first;
    }
    let t0 = std::time::Instant::now();
    while written_within(&r.path, QUIET) && t0.elapsed() < FRESH {
        std::thread::sleep(QUIET / 4);
    }
    read(r)
}

/// How recent a write makes a failed read worth another try.
const FRESH: std::time::Duration = std::time::Duration::from_secs(2);
/// How long a source must go unwritten before it is read again.
const QUIET: std::time::Duration = std::time::Duration::from_millis(200);

/// Whether the source (the file, or the directory and the files directly in it) was written
/// within `d`.
fn written_within(path: &Path, d: std::time::Duration) -> bool {
    let recent = |p: &Path| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|e| e < d)
    };
    recent(path)
        || (path.is_dir()
            && std::fs::read_dir(path)
                .into_iter()
                .flatten()
                .flatten()
                .take(1000)
                .any(|e| recent(&e.path())))
}

/// Resolve `--format NAME`.
pub fn forced_format(name: Option<&str>) -> Result<Option<&'static dyn Format>, String> {
    match name {
        None => Ok(None),
        Some(n) => formats::by_id(n)
            .map(Some)
            .ok_or_else(|| format!("unknown trace format {n:?}; known: {}", formats::ids().join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An AgentDbg run directory caught while its run.json is being written (cut short): the
    /// first read fails; the whole file arrives while the read waits for the directory to be
    /// quiet, and the run loads.
    #[test]
    fn a_run_caught_half_written_is_read_again() {
        let d = tempfile::tempdir().unwrap();
        let run = d.path().join("run");
        std::fs::create_dir(&run).unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/runs/agentdbg-refund-ok");
        let meta = std::fs::read(src.join("run.json")).unwrap();
        std::fs::write(run.join("run.json"), &meta[..meta.len() / 2]).unwrap();
        std::fs::copy(src.join("events.jsonl"), run.join("events.jsonl")).unwrap();
        let r = RunRef::new(run.clone(), formats::by_id("agentdbg").unwrap(), Arc::from(d.path()));
        assert!(
            r.summarize().is_err(),
            "cut metadata: {:?}",
            r.summarize().map(|l| l.len())
        );
        let writer = {
            let run = run.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(100));
                std::fs::write(run.join("run.json"), &meta).unwrap();
            })
        };
        let got = summarize_all(std::slice::from_ref(&r));
        writer.join().unwrap();
        let listed = got[0].1.as_ref().expect("read again once run.json was whole");
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].name.as_deref(), Some("refund-agent"));
        // An old source that fails is not waited for (decided by its age, not timed here: a
        // timed claim fails on a loaded machine).
        let bad = RunRef::new(
            d.path().join("missing.jsonl"),
            formats::by_id("claude-code").unwrap(),
            Arc::from(d.path()),
        );
        assert!(!written_within(&bad.path, FRESH));
        assert!(summarize_all(&[bad])[0].1.is_err());
    }

    /// In a place of JSONL sessions, `X/` beside `X.jsonl` is the session's own (its
    /// subagents and tool results) and is not searched for runs; another directory there is.
    #[test]
    fn a_sessions_own_directory_is_not_searched_for_runs() {
        let d = tempfile::tempdir().unwrap();
        let projects = d.path().join(".claude/projects");
        let proj = projects.join("-home-dev-app");
        let sample = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("sample-traces/claude-code/7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f.jsonl"),
        )
        .unwrap();
        let session = |p: &Path, id: &str| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, sample.replace("7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f", id)).unwrap();
        };
        let a = "aaaaaaaa-5b7e-4c1d-9e2f-0a1b2c3d4e5f";
        let b = "bbbbbbbb-5b7e-4c1d-9e2f-0a1b2c3d4e5f";
        let c = "cccccccc-5b7e-4c1d-9e2f-0a1b2c3d4e5f";
        session(&proj.join(format!("{a}.jsonl")), a);
        // Under the session's own directory: not a run of its own.
        session(&proj.join(a).join("tool-results").join(format!("{b}.jsonl")), b);
        // Under a directory that is no session's: found.
        session(&proj.join("older").join(format!("{c}.jsonl")), c);
        let found = discover(std::slice::from_ref(&projects), None);
        let mut names: Vec<String> = found
            .runs
            .iter()
            .map(|r| r.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [format!("{a}.jsonl"), format!("{c}.jsonl")],
            "{:?}",
            found.errors
        );
    }
}
