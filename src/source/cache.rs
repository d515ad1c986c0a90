//! The summary cache of `ls` and the runs list: a session file that has not changed since it
//! was last listed is not read again (issue 13: `ls` over 2,000 sessions within 150 ms; a
//! full summary of 2,000 Claude Code sessions of 300 KB reads 590 MB and took 390 ms).
//!
//! It lives in the user's cache directory (`$TRACETUI_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/tracetui`, else `~/.cache/tracetui`), never beside the traces. An entry
//! is used only when every file its run is read from is as it was (length, modification and
//! change times, inode), and only by the build of tracetui and the prices that made it: any
//! other binary or price list starts a fresh cache. Only formats that name their inputs
//! ([`crate::formats::Format::summary_inputs`]) are cached. `TRACETUI_NO_CACHE=1` turns it off.
//!
//! A damaged or foreign cache file is ignored (and replaced at the next write); a cache that
//! cannot be written is no error: the listing is the same, only slower next time.

use crate::formats::{self, Format, LoadError, Summary};
use rustc_hash::{FxHashMap as HashMap, FxHasher};
use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// The file in the cache directory.
const FILE: &str = "summaries.jsonl";
/// Entries kept (the most recently used); about 400 bytes each.
const MAX_ENTRIES: usize = 50_000;
/// A source written this recently is not cached: a file rewritten within one tick of its
/// file system's clock could keep its length and times.
const SETTLED_SECS: i64 = 2;
/// A used entry's `used` time is written back when it is older than this (not on every `ls`).
const TOUCH_SECS: u64 = 24 * 3600;
/// A directory input with more entries than this (or deeper than [`DIR_DEPTH`]) is not cached.
const DIR_ENTRIES: usize = 512;
const DIR_DEPTH: usize = 3;

static ENABLED: AtomicBool = AtomicBool::new(false);
static CACHE: OnceLock<Option<Cache>> = OnceLock::new();

/// Use the cache in this process (the binary's `ls` and explorer do; the library's callers
/// and tests do not unless they ask).
pub fn enable() {
    if std::env::var_os("TRACETUI_NO_CACHE").is_none_or(|v| v.is_empty() || v == "0") {
        ENABLED.store(true, Ordering::Relaxed);
    }
}

/// The cache directory in use, if any.
pub fn dir() -> Option<PathBuf> {
    dir_from(
        std::env::var_os("TRACETUI_CACHE_DIR"),
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME"),
    )
}

fn dir_from(
    own: Option<std::ffi::OsString>,
    xdg: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    let set = |v: Option<std::ffi::OsString>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    // XDG: a relative path is to be ignored.
    set(own)
        .or_else(|| set(xdg).filter(|p| p.is_absolute()).map(|p| p.join("tracetui")))
        .or_else(|| set(home).map(|h| h.join(".cache").join("tracetui")))
}

/// Read the cache now (on a thread of its own while the tree is walked): its first use would.
pub fn preload() {
    let _ = get();
}

fn get() -> Option<&'static Cache> {
    if !ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    CACHE
        .get_or_init(|| dir().map(|d| Cache::open(d.join(FILE), generation())))
        .as_ref()
}

/// The format of `path` as its cached entry says, when the file is as it was then (no need to
/// read its head to detect it again).
pub fn format_of(path: &Path) -> Option<&'static dyn Format> {
    let c = get()?;
    let e = c.old.get(std::path::absolute(path).ok()?.to_str()?)?;
    (stamp_file(path)? == e.own).then(|| formats::by_id(&e.format))?
}

/// A source's lineage ([`Format::lineage`]: a Codex rollout's head says whose thread it
/// is) from the cache when the file is as it was then, else read (and then kept for next
/// time, with the source's summaries or on its own for a source listed inside another).
pub fn lineage(run: &super::RunRef) -> Option<formats::Lineage> {
    let read = || run.format.lineage(&run.path);
    let Some(c) = get() else { return read() };
    let abs = std::path::absolute(&run.path).ok();
    let Some(key) = abs.as_deref().and_then(Path::to_str) else {
        return read();
    };
    let Some((own, newest)) = std::fs::metadata(&run.path)
        .ok()
        .map(|m| (stamp_meta(&m), newest_ns(&m)))
    else {
        return read();
    };
    if let Some(e) = c.get(key)
        && e.own == own
        && e.format == run.format.id()
        && let Some(h) = &e.head
    {
        return h.lineage();
    }
    let l = read();
    if newest < now_ns() - SETTLED_SECS as i128 * 1_000_000_000 {
        c.keep(
            key,
            Entry {
                format: run.format.id().to_string(),
                own,
                // No summaries: never taken for them.
                all: 0,
                used: now_secs(),
                exact: false,
                summaries: Vec::new(),
                head: Some(Head::of(l.as_ref())),
            },
        );
    }
    l
}

/// The run's summaries from the cache, else from `compute` (and then kept for next time).
/// Formats that name their inputs ([`Format::summary_inputs`]) only: the cheap summaries of
/// the others cost less than looking them up. An exact entry (see [`exact`]) serves any
/// format.
pub fn summaries(
    run: &super::RunRef,
    compute: impl FnOnce() -> Result<Vec<Summary>, LoadError>,
) -> Result<Vec<Summary>, LoadError> {
    summaries_stamped(run, compute).1
}

/// [`summaries`], with the stamp of the run's files ([`source_stamp`]) taken before they were
/// read: a listing that keeps it took it a second time (5 more calls a session, a tenth of a
/// warm start's on 2,000 sessions).
pub fn summaries_stamped(
    run: &super::RunRef,
    compute: impl FnOnce() -> Result<Vec<Summary>, LoadError>,
) -> (Option<u64>, Result<Vec<Summary>, LoadError>) {
    if get().is_none() || run.format.summary_inputs(&run.path).is_none() {
        let stamp = source_stamp(run);
        if let Some(list) = lookup(run, true) {
            return (stamp, Ok(list));
        }
        return (stamp, compute());
    }
    cached(run, false, compute)
}

/// The run's exact summaries (from its full load: [`Summary::provisional`] is false) from the
/// cache, else from `compute`, which loads the run (and then kept for next time, for every
/// format: a load is what the cache saves).
pub fn exact(
    run: &super::RunRef,
    compute: impl FnOnce() -> Result<Vec<Summary>, LoadError>,
) -> Result<Vec<Summary>, LoadError> {
    cached(run, true, compute).1
}

/// The cached exact summaries of the run when its files are as they were (no computing).
pub fn exact_cached(run: &super::RunRef) -> Option<Vec<Summary>> {
    lookup(run, true)
}

/// What a run's summaries are read from: its format's inputs, else the source itself (a
/// directory with what is in it; a database file with its SQLite journal and WAL beside it,
/// where its last writes are until they are checkpointed), and the sources read into it.
fn inputs_of(run: &super::RunRef) -> Vec<PathBuf> {
    let mut inputs = run.format.summary_inputs(&run.path).unwrap_or_else(|| {
        let mut v = vec![run.path.clone()];
        if !run.path.is_dir() {
            for ext in ["-wal", "-journal"] {
                let mut p = run.path.clone().into_os_string();
                p.push(ext);
                v.push(PathBuf::from(p));
            }
        }
        v
    });
    // The sources read into the run are its inputs too (and make another entry than the
    // source alone: the names of the inputs are in the stamp).
    inputs.extend(run.nested.iter().flat_map(|n| n.iter().cloned()));
    inputs
}

/// The stamp of every file the run is read from (`None`: it cannot be taken, e.g. a directory
/// too large): it changes whenever any of them is written.
pub fn source_stamp(run: &super::RunRef) -> Option<u64> {
    stamp_inputs(&inputs_of(run)).map(|s| s.hash)
}

/// The paths a run is read from ([`source_stamp`]), for watching them.
pub fn source_inputs(run: &super::RunRef) -> Vec<PathBuf> {
    inputs_of(run)
}

/// The entry of `run` when its inputs are as they were (and it is exact, when `exact`).
fn lookup(run: &super::RunRef, exact: bool) -> Option<Vec<Summary>> {
    let c = get()?;
    let abs = std::path::absolute(&run.path).ok()?;
    let key = abs.to_str()?;
    let e = c.get(key)?;
    if e.all == 0 || e.format != run.format.id() || (exact && !e.exact) {
        return None;
    }
    let stamp = stamp_inputs(&inputs_of(run))?;
    if e.all != stamp.hash {
        return None;
    }
    let list = e
        .summaries
        .iter()
        .map(|s| s.to_summary(run))
        .collect::<Option<Vec<_>>>()?;
    if now_secs().saturating_sub(e.used) > TOUCH_SECS {
        c.keep(key, Entry { used: now_secs(), ..e });
    }
    Some(list)
}

fn cached(
    run: &super::RunRef,
    exact: bool,
    compute: impl FnOnce() -> Result<Vec<Summary>, LoadError>,
) -> (Option<u64>, Result<Vec<Summary>, LoadError>) {
    let inputs = inputs_of(run);
    let stamp = stamp_inputs(&inputs);
    let hash = stamp.as_ref().map(|s| s.hash);
    let Some(c) = get() else { return (hash, compute()) };
    // Keyed by the absolute path: the same run listed from elsewhere is the same entry.
    let abs = std::path::absolute(&run.path).ok();
    let Some(key) = abs.as_deref().and_then(Path::to_str) else {
        return (hash, compute());
    };
    let Some(stamp) = stamp else {
        return (hash, compute());
    };
    if let Some(e) = c.get(key)
        && e.all == stamp.hash
        && e.all != 0
        && e.format == run.format.id()
        && (e.exact || !exact)
        && let Some(list) = e
            .summaries
            .iter()
            .map(|s| s.to_summary(run))
            .collect::<Option<Vec<_>>>()
    {
        if now_secs().saturating_sub(e.used) > TOUCH_SECS {
            c.keep(key, Entry { used: now_secs(), ..e });
        }
        return (hash, Ok(list));
    }
    let list = match compute() {
        Ok(l) => l,
        Err(e) => return (hash, Err(e)),
    };
    let settled = stamp
        .newest
        .is_some_and(|t| t < now_ns() - SETTLED_SECS as i128 * 1_000_000_000);
    // The files may have changed while they were read: kept only if they are as stamped.
    if settled
        && let Some(own) = stamp_file(&run.path)
        && stamp_inputs(&inputs).is_some_and(|s| s.hash == stamp.hash)
    {
        let cached: Option<Vec<Cached>> = list.iter().map(|s| Cached::of(s, &run.path)).collect();
        if let Some(summaries) = cached {
            c.keep(
                key,
                Entry {
                    format: run.format.id().to_string(),
                    own,
                    all: stamp.hash,
                    used: now_secs(),
                    // A cheap summary may be exact too (a small session is read whole).
                    exact: exact || (!list.is_empty() && list.iter().all(|s| !s.provisional())),
                    summaries,
                    head: None,
                },
            );
        }
    }
    (hash, Ok(list))
}

/// Write what this process added or used (one write, replacing the file atomically). Call
/// after a listing; a second call writes only what is new since.
pub fn flush() {
    if let Some(c) = get() {
        c.flush();
    }
}

struct Cache {
    file: PathBuf,
    generation: String,
    /// As read at start (never changed: lookups take no lock).
    old: HashMap<String, Entry>,
    /// Added or used since, to be written.
    new: Mutex<Kept>,
    /// Held while the file is written: two writes at once (the indexer's and a listing's)
    /// could rename an older state over a newer one.
    writing: Mutex<()>,
}

#[derive(Default)]
struct Kept {
    entries: HashMap<String, Entry>,
    dirty: bool,
}

impl Cache {
    fn open(file: PathBuf, generation: String) -> Cache {
        let old = read_bounded(&file)
            .map(|bytes| parse(&bytes, &generation))
            .unwrap_or_default();
        Cache {
            file,
            generation,
            old,
            new: Mutex::new(Kept::default()),
            writing: Mutex::new(()),
        }
    }

    /// The entry of `key`: kept in this process, else as read at start.
    fn get(&self, key: &str) -> Option<Entry> {
        let k = self.new.lock().unwrap_or_else(|e| e.into_inner());
        k.entries.get(key).or_else(|| self.old.get(key)).cloned()
    }

    /// Keep `e` for `key`. What the entry it replaces knew of the same file and the other does
    /// not (its lineage, its summaries) stays.
    fn keep(&self, key: &str, mut e: Entry) {
        let mut k = self.new.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(was) = k.entries.get(key).or_else(|| self.old.get(key))
            && was.own == e.own
            && was.format == e.format
        {
            if e.head.is_none() {
                e.head = was.head.clone();
            }
            if e.all == 0 && was.all != 0 {
                e.all = was.all;
                e.exact = was.exact;
                e.summaries = was.summaries.clone();
            }
        }
        k.entries.insert(key.to_string(), e);
        k.dirty = true;
    }

    fn flush(&self) {
        let _writing = self.writing.lock().unwrap_or_else(|e| e.into_inner());
        // Take what to write under the lock, write without it.
        let added: Vec<(String, Entry)> = {
            let mut k = self.new.lock().unwrap_or_else(|e| e.into_inner());
            if !k.dirty {
                return;
            }
            k.dirty = false;
            k.entries.iter().map(|(p, e)| (p.clone(), e.clone())).collect()
        };
        let mut all: HashMap<&str, &Entry> = self.old.iter().map(|(p, e)| (p.as_str(), e)).collect();
        for (p, e) in &added {
            all.insert(p, e);
        }
        let mut rows: Vec<(&str, &Entry)> = all.into_iter().collect();
        rows.sort_unstable_by(|a, b| b.1.used.cmp(&a.1.used).then(a.0.cmp(b.0)));
        rows.truncate(MAX_ENTRIES);
        let mut text = serde_json::to_string(&Header {
            tracetui_summary_cache: &self.generation,
        })
        .unwrap_or_default();
        text.push('\n');
        for (path, e) in rows {
            if let Ok(line) = serde_json::to_string(&Row { path, entry: e }) {
                text.push_str(&line);
                text.push('\n');
            }
        }
        let _ = write_atomically(&self.file, text.as_bytes());
    }
}

/// The largest cache file read: [`MAX_ENTRIES`] rows of several summaries each fit well below.
const MAX_FILE: u64 = 256 << 20;

/// The cache file's bytes when it is a regular file of at most [`MAX_FILE`]; anything else
/// there (a FIFO hung `ls`, a link to `/dev/zero` read until memory ran out) is ignored, and
/// replaced by the next write (a rename over it, which follows no link).
fn read_bounded(file: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let m = std::fs::symlink_metadata(file).ok()?;
    if !m.file_type().is_file() || m.len() > MAX_FILE {
        return None;
    }
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    // Not through a link put there since, and a FIFO put there since does not block the open.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut o, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let f = o.open(file).ok()?;
    if !f.metadata().ok()?.file_type().is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    f.take(MAX_FILE + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= MAX_FILE).then_some(bytes)
}

/// Into a temporary file beside it, then renamed over it: a reader sees the old file or the
/// new one, never half of one. Private to the user (it names their sessions).
fn write_atomically(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = file
        .parent()
        .ok_or_else(|| std::io::Error::other("no cache directory"))?;
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)?;
    // Left by a process that ended while it wrote (a quit explorer does not wait for it).
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let old = e
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok());
            if e.file_name().to_string_lossy().starts_with(".summaries-") && old.is_some_and(|d| d.as_secs() > 60) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let mut tmp = tempfile::Builder::new().prefix(".summaries-").tempfile_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

fn parse(bytes: &[u8], generation: &str) -> HashMap<String, Entry> {
    let mut lines = bytes.split(|&b| b == b'\n');
    let ok = lines
        .next()
        .and_then(|l| serde_json::from_slice::<OwnedHeader>(l).ok())
        .is_some_and(|h| h.tracetui_summary_cache == generation);
    if !ok {
        return HashMap::default();
    }
    // On this thread, never on rayon's pool: this runs inside the cache's one-time
    // initialisation, which lookups on the pool's threads wait for (a parse handed to the
    // pool would wait for them: a deadlock). It is read while the tree is walked instead.
    lines
        .filter_map(|l| serde_json::from_slice::<OwnedRow>(l).ok())
        .map(OwnedRow::split)
        .collect()
}

/// What makes a summary: this very build (its version, size and time) and the prices costs
/// are computed with.
fn generation() -> String {
    let mut h = FxHasher::default();
    if let Ok(m) = std::env::current_exe().and_then(std::fs::metadata) {
        h.write_u64(m.len());
        h.write_i128(mtime_ns(&m));
    }
    // The built-in list is this build's (hashed above): it is not parsed for this (a few
    // milliseconds of every warm start).
    if let Some(prices) = crate::cost::usage::overridden() {
        for e in &prices.entries {
            h.write(format!("{}\u{0}{:?}", e.model, e.price).as_bytes());
        }
    }
    format!("{} {:016x}", env!("CARGO_PKG_VERSION"), h.finish())
}

fn now_secs() -> u64 {
    (now_ns() / 1_000_000_000) as u64
}

fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

fn mtime_ns(m: &std::fs::Metadata) -> i128 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128
    }
    #[cfg(not(unix))]
    {
        m.modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128)
    }
}

fn write_meta(h: &mut FxHasher, m: &std::fs::Metadata) {
    h.write_u64(m.len());
    h.write_i128(mtime_ns(m));
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        h.write_i64(m.ctime());
        h.write_i64(m.ctime_nsec());
        h.write_u64(m.ino());
        h.write_u64(m.dev());
    }
}

/// One file's stamp (`None`: it cannot be read).
fn stamp_file(path: &Path) -> Option<u64> {
    Some(stamp_meta(&std::fs::metadata(path).ok()?))
}

fn stamp_meta(m: &std::fs::Metadata) -> u64 {
    let mut h = FxHasher::default();
    write_meta(&mut h, m);
    h.finish()
}

/// The later of a file's modification and change times, nanoseconds since the epoch.
fn newest_ns(m: &std::fs::Metadata) -> i128 {
    let t = mtime_ns(m);
    #[cfg(unix)]
    let t = {
        use std::os::unix::fs::MetadataExt;
        t.max(m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128)
    };
    t
}

struct Stamp {
    hash: u64,
    /// The newest modification or change time among them, nanoseconds since the epoch.
    newest: Option<i128>,
}

/// The stamp of every input: a missing one counts as missing (its appearance changes the
/// stamp); a directory counts with everything in it. `None`: not to be cached.
fn stamp_inputs(inputs: &[PathBuf]) -> Option<Stamp> {
    let mut h = FxHasher::default();
    let mut newest = None;
    let mut budget = DIR_ENTRIES;
    for p in inputs {
        h.write(p.as_os_str().as_encoded_bytes());
        h.write_u8(0);
        stamp_into(p, 0, &mut h, &mut newest, &mut budget)?;
    }
    Some(Stamp {
        hash: h.finish(),
        newest,
    })
}

fn stamp_into(p: &Path, depth: usize, h: &mut FxHasher, newest: &mut Option<i128>, budget: &mut usize) -> Option<()> {
    let m = match std::fs::metadata(p) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            h.write_u8(1);
            return Some(());
        }
        Err(_) => return None,
    };
    write_meta(h, &m);
    let t = newest_ns(&m);
    *newest = Some(newest.map_or(t, |n: i128| n.max(t)));
    if m.is_dir() {
        if depth >= DIR_DEPTH {
            return None;
        }
        let mut names: Vec<_> = std::fs::read_dir(p).ok()?.flatten().map(|e| e.file_name()).collect();
        if names.len() > *budget {
            return None;
        }
        *budget -= names.len();
        names.sort();
        for n in names {
            h.write(n.as_encoded_bytes());
            h.write_u8(0);
            stamp_into(&p.join(n), depth + 1, h, newest, budget)?;
        }
    }
    Some(())
}

#[derive(serde::Serialize)]
struct Header<'a> {
    tracetui_summary_cache: &'a str,
}

#[derive(serde::Deserialize)]
struct OwnedHeader {
    tracetui_summary_cache: String,
}

#[derive(serde::Serialize)]
struct Row<'a> {
    path: &'a str,
    #[serde(flatten)]
    entry: &'a Entry,
}

/// A row as read: [`Entry`]'s fields beside `path`, spelled out (`#[serde(flatten)]` buffers
/// the whole row and reads it twice: half of a warm start's reading of 2,000 entries).
#[derive(serde::Deserialize)]
struct OwnedRow {
    path: String,
    format: String,
    own: u64,
    all: u64,
    used: u64,
    #[serde(default)]
    exact: bool,
    summaries: Vec<Cached>,
    #[serde(default)]
    head: Option<Head>,
}

impl OwnedRow {
    fn split(self) -> (String, Entry) {
        let OwnedRow {
            path,
            format,
            own,
            all,
            used,
            exact,
            summaries,
            head,
        } = self;
        (
            path,
            Entry {
                format,
                own,
                all,
                used,
                exact,
                summaries,
                head,
            },
        )
    }
}

#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Entry {
    format: String,
    /// The run path's own stamp (for [`format_of`]).
    own: u64,
    /// The stamp of every input (for the summaries).
    all: u64,
    /// When it was last used, seconds since the epoch (the oldest go first when full).
    used: u64,
    /// The summaries are the run's loaded ones (not its metadata nor its ends).
    #[serde(default)]
    exact: bool,
    summaries: Vec<Cached>,
    /// What its head said of its lineage, when read ([`lineage`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    head: Option<Head>,
}

/// A source's lineage as cached: `id` None when its format read none.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Head {
    id: Option<String>,
    parent: Option<String>,
}

impl Head {
    fn of(l: Option<&formats::Lineage>) -> Head {
        Head {
            id: l.map(|l| l.id.clone()),
            parent: l.and_then(|l| l.parent.clone()),
        }
    }

    fn lineage(&self) -> Option<formats::Lineage> {
        Some(formats::Lineage {
            id: self.id.clone()?,
            parent: self.parent.clone(),
        })
    }
}

/// A [`Summary`] as stored: every field of it (the destructuring in `of` makes a new field a
/// compile error here).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Cached {
    id: String,
    name: Option<String>,
    /// Its path under the run's path (empty: the run's path itself), so that the entry holds
    /// for the run however it was named (a relative PATH from another directory).
    path: String,
    status: String,
    start: Option<i64>,
    duration: Option<i64>,
    events: Option<usize>,
    tool_calls: Option<usize>,
    llm_calls: Option<usize>,
    errors: Option<usize>,
    tokens: Option<u64>,
    problems: Option<usize>,
    badges: Vec<String>,
    /// calls, input, cache read, cache write, output, reasoning, total tokens, micros, unknown.
    cost: Option<[u64; 9]>,
    /// cache write 1h, cache write of unknown tier, web searches, recorded calls, recorded
    /// micros, their computed micros, recorded calls not computed.
    #[serde(default)]
    cost2: Option<[u64; 7]>,
    #[serde(default)]
    resume: Option<String>,
}

impl Cached {
    /// `None` for what cannot be stored as it is (a path that is not UTF-8, or not the run's
    /// path or under it).
    fn of(s: &Summary, run: &Path) -> Option<Cached> {
        let Summary {
            id,
            name,
            format: _,
            path,
            status,
            start,
            duration,
            events,
            tool_calls,
            llm_calls,
            errors,
            tokens,
            problems,
            badges,
            cost,
            resume,
        } = s;
        Some(Cached {
            id: id.clone(),
            name: name.clone(),
            path: path.strip_prefix(run).ok()?.to_str()?.to_string(),
            status: status.as_str().to_string(),
            start: *start,
            duration: *duration,
            events: *events,
            tool_calls: *tool_calls,
            llm_calls: *llm_calls,
            errors: *errors,
            tokens: *tokens,
            problems: *problems,
            badges: badges.clone(),
            cost: cost.as_ref().map(|c| {
                let t = &c.tokens;
                [
                    c.calls,
                    t.input,
                    t.cache_read,
                    t.cache_write,
                    t.output,
                    t.reasoning,
                    c.total_tokens,
                    c.micros,
                    c.unknown,
                ]
            }),
            cost2: cost.as_ref().map(|c| {
                let t = &c.tokens;
                [
                    t.cache_write_1h,
                    t.cache_write_untiered,
                    t.web_search,
                    c.recorded_calls,
                    c.recorded,
                    c.recomputed,
                    c.recorded_uncomputed,
                ]
            }),
            resume: resume.clone(),
        })
    }

    fn to_summary(&self, run: &super::RunRef) -> Option<Summary> {
        use crate::model::RunStatus;
        let status = [RunStatus::Running, RunStatus::Ok, RunStatus::Error, RunStatus::Unknown]
            .into_iter()
            .find(|s| s.as_str() == self.status)?;
        Some(Summary {
            id: self.id.clone(),
            name: self.name.clone(),
            format: run.format.id(),
            path: match self.path.as_str() {
                "" => run.path.clone(),
                p => run.path.join(p),
            },
            status,
            start: self.start,
            duration: self.duration,
            events: self.events,
            tool_calls: self.tool_calls,
            llm_calls: self.llm_calls,
            errors: self.errors,
            tokens: self.tokens,
            problems: self.problems,
            badges: self.badges.clone(),
            cost: self.cost.map(|c| {
                let d = self.cost2.unwrap_or_default();
                crate::cost::usage::Total {
                    calls: c[0],
                    tokens: crate::cost::Tokens {
                        input: c[1],
                        cache_read: c[2],
                        cache_write: c[3],
                        output: c[4],
                        reasoning: c[5],
                        cache_write_1h: d[0],
                        cache_write_untiered: d[1],
                        web_search: d[2],
                    },
                    total_tokens: c[6],
                    micros: c[7],
                    unknown: c[8],
                    recorded_calls: d[3],
                    recorded: d[4],
                    recomputed: d[5],
                    recorded_uncomputed: d[6],
                }
            }),
            resume: self.resume.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_follows_the_environment() {
        let os = |s: &str| Some(std::ffi::OsString::from(s));
        assert_eq!(dir_from(os("/c"), os("/x"), os("/h")), Some(PathBuf::from("/c")));
        assert_eq!(dir_from(None, os("/x"), os("/h")), Some(PathBuf::from("/x/tracetui")));
        assert_eq!(
            dir_from(os(""), os("rel"), os("/h")),
            Some(PathBuf::from("/h/.cache/tracetui"))
        );
        assert_eq!(dir_from(None, None, None), None);
    }

    fn summary() -> Summary {
        let t = &formats::by_id("claude-code")
            .unwrap()
            .load(Path::new(
                "sample-traces/claude-code/7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f.jsonl",
            ))
            .unwrap()
            .traces[0];
        crate::source::summary::of(t)
    }

    #[test]
    fn a_summary_comes_back_as_it_went_in() {
        let s = summary();
        assert!(s.cost.as_ref().is_some_and(|c| c.calls > 0));
        let run = super::super::RunRef {
            path: s.path.clone(),
            format: formats::by_id(s.format).unwrap(),
            root: std::sync::Arc::from(Path::new(".")),
            nested: None,
        };
        let back = Cached::of(&s, &run.path).unwrap().to_summary(&run).unwrap();
        assert_eq!(format!("{s:?}"), format!("{back:?}"));
        assert!(Cached::of(&s, Path::new("elsewhere")).is_none());
    }

    #[test]
    fn a_file_of_another_generation_or_damaged_lines_are_ignored() {
        let e = Entry {
            format: "claude-code".into(),
            own: 1,
            all: 2,
            used: 3,
            exact: true,
            summaries: vec![Cached::of(&summary(), Path::new("sample-traces")).unwrap()],
            head: None,
        };
        let row = serde_json::to_string(&Row { path: "/a", entry: &e }).unwrap();
        let text = format!("{{\"tracetui_summary_cache\":\"g1\"}}\n{row}\n{{\"path\":\"/b\"\nnot json\n");
        let got = parse(text.as_bytes(), "g1");
        assert_eq!(got.len(), 1);
        assert_eq!(got["/a"].all, 2);
        assert!(parse(text.as_bytes(), "g2").is_empty());
        assert!(parse(b"", "g1").is_empty());
    }

    #[test]
    fn a_lineage_and_the_summaries_of_one_file_are_kept_together() {
        let d = tempfile::tempdir().unwrap();
        let c = Cache::open(d.path().join(FILE), "g1".into());
        let entry = |all: u64, head: Option<Head>| Entry {
            format: "codex".into(),
            own: 7,
            all,
            used: 1,
            exact: false,
            summaries: Vec::new(),
            head,
        };
        let head = || {
            Some(Head::of(Some(&formats::Lineage {
                id: "c".into(),
                parent: Some("p".into()),
            })))
        };
        c.keep("/r", entry(0, head()));
        c.keep("/r", entry(9, None));
        c.flush();
        let back = Cache::open(d.path().join(FILE), "g1".into());
        let e = &back.old["/r"];
        assert_eq!(e.all, 9, "the summaries kept");
        assert_eq!(
            e.head.as_ref().and_then(Head::lineage).and_then(|l| l.parent),
            Some("p".into())
        );
        // Read again for the file changed: the old lineage is not carried over.
        back.keep(
            "/r",
            Entry {
                own: 8,
                ..entry(9, None)
            },
        );
        back.flush();
        assert!(Cache::open(d.path().join(FILE), "g1".into()).old["/r"].head.is_none());
    }

    /// Issue 37: a FIFO in the cache's place hung `ls` and the explorer; a link to
    /// `/dev/zero` was read until memory ran out. Only a regular file is read, and it is
    /// replaced by the next write.
    #[test]
    fn only_a_regular_file_of_bounded_size_is_read_and_anything_else_is_replaced() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join(FILE);
        let fifo = std::ffi::CString::new(file.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let c = Cache::open(file.clone(), "g1".into());
        assert!(c.old.is_empty());
        c.keep(
            "/r",
            Entry {
                format: "agentdbg".into(),
                own: 1,
                all: 0,
                used: 1,
                exact: false,
                summaries: Vec::new(),
                head: None,
            },
        );
        c.flush();
        assert!(
            std::fs::symlink_metadata(&file).unwrap().file_type().is_file(),
            "the FIFO was replaced"
        );
        assert_eq!(Cache::open(file.clone(), "g1".into()).old.len(), 1);
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &file).unwrap();
        assert!(Cache::open(file.clone(), "g1".into()).old.is_empty());
        assert!(read_bounded(&file).is_none());
        // A source that is no part of any (its format read none) is kept as such.
        assert!(Head::of(None).lineage().is_none());
    }

    #[test]
    fn stamps_change_with_the_inputs() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("s.jsonl");
        let sub = d.path().join("s");
        std::fs::write(&f, "a\n").unwrap();
        let inputs = [f.clone(), sub.clone()];
        let s0 = stamp_inputs(&inputs).unwrap().hash;
        assert_eq!(stamp_inputs(&inputs).unwrap().hash, s0);
        // A subagent directory that appears, then a file in it that grows.
        std::fs::create_dir_all(sub.join("subagents")).unwrap();
        let s1 = stamp_inputs(&inputs).unwrap().hash;
        assert_ne!(s1, s0);
        std::fs::write(sub.join("subagents/a.jsonl"), "x").unwrap();
        let s2 = stamp_inputs(&inputs).unwrap().hash;
        assert_ne!(s2, s1);
        std::fs::write(sub.join("subagents/a.jsonl"), "xy").unwrap();
        assert_ne!(stamp_inputs(&inputs).unwrap().hash, s2);
        // The file appended to.
        let before = stamp_inputs(&inputs).unwrap().hash;
        std::fs::write(&f, "a\nb\n").unwrap();
        assert_ne!(stamp_inputs(&inputs).unwrap().hash, before);
    }
}
