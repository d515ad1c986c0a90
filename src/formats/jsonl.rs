//! One incremental reader for every line-oriented format: a full load reads to the end,
//! the live tail calls it again as the file grows. Lines are cut from a fixed buffer by
//! positioned reads; a trailing partial line is held until its newline arrives.

use super::{LoadError, Loaded};
use crate::model::{Diagnostic, Severity, Trace};
use serde::Deserialize;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// Lines longer than this are skipped with a diagnostic (DESIGN: hostile input is bounded).
pub const MAX_LINE: usize = 64 * 1024 * 1024;
/// Read size: large enough that a batch of lines keeps both cores busy, small enough that
/// the two buffers of an overlapped read stay in the caches the skim reads them from (4 MiB
/// took 5-11% more CPU on Claude Code, Codex and Cursor; 1 MiB made batches too short).
const CHUNK: usize = 2 * 1024 * 1024;

/// Where a line is: 1-based line number and byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineLoc {
    pub line: u64,
    pub offset: u64,
    pub len: usize,
}

impl LineLoc {
    pub fn origin(&self, file: u16) -> crate::model::Origin {
        crate::model::Origin {
            file,
            line: self.line.min(u32::MAX as u64) as u32,
            offset: self.offset,
            len: self.len.min(u32::MAX as usize) as u32,
        }
    }

    /// The origin of an element of a whole document: line 0, for the document is one value
    /// (`show` says so); the byte range is the element's.
    pub fn element_origin(&self, file: u16) -> crate::model::Origin {
        crate::model::Origin {
            line: 0,
            ..self.origin(file)
        }
    }

    /// Where the line ends (the offset after its last byte).
    pub fn end(&self) -> u64 {
        self.offset + self.len as u64
    }
}

/// How far a batch of lines reaches in its file (0 for none).
pub fn batch_end(batch: &[(&[u8], LineLoc)]) -> u64 {
    batch.last().map_or(0, |(_, l)| l.end())
}

/// A format's per-line state machine. The same parser serves a full load and the live tail.
pub trait LineParser: Send {
    /// One complete, non-blank line (no newline).
    fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink);
    /// The end of what is there now: settle what is provisional (the status of runs still
    /// open, times taken from metadata). May be called many times while a file grows.
    fn settle(&mut self, _sink: &mut Sink) {}
    /// The reader reached the end of what is there now: settle, then sort the trees of the
    /// traces that changed (a dataset of a trace a line holds 100,000 of them, and a viewer
    /// flushes after every slice it reads; `Sink::finish` sorts them all once).
    fn flush(&mut self, sink: &mut Sink) {
        self.settle(sink);
        for &i in &sink.touched {
            if let Some(t) = sink.traces.get_mut(i) {
                t.finalize();
            }
        }
    }
    /// Before each read: re-read metadata files that may have been replaced (run.json,
    /// meta.json). Called once before the first line too.
    fn refresh(&mut self, _sink: &mut Sink) {}
    /// Trace `trace` was emptied by the caller (dropped from memory under the OTLP receiver's
    /// cap): forget whatever points into its events.
    fn forget(&mut self, _trace: usize) {}
    /// Many complete lines at once, in file order. The default hands them to `line` one by
    /// one; a parser whose work splits into a pure parse and an in-order apply overrides this
    /// to parse the batch on all cores (DESIGN §4).
    fn lines(&mut self, batch: &[(&[u8], LineLoc)], sink: &mut Sink) {
        for (l, loc) in batch {
            self.line(l, *loc, sink);
        }
    }
    /// Whether `lines` changes the sink's traces only inside [`Sink::held`] (the engine's
    /// parsers: the skim of a batch needs no trace). Else the reader holds the sink around it.
    fn holds_itself(&self) -> bool {
        false
    }
}

/// A trace shared with a viewer while a loader fills it: it stays in `trace` (behind its lock)
/// and is lent to the sink's slot `slot` only for what changes it ([`Sink::held`]), so that the
/// viewer reads it while lines are read and skimmed.
#[derive(Debug)]
pub struct Gate {
    pub trace: Arc<RwLock<Trace>>,
    pub slot: usize,
}

/// Collects the traces of one source while it loads, and routes diagnostics to the trace
/// being built (or, before any trace exists, to the first one that will).
#[derive(Debug)]
pub struct Sink {
    pub path: PathBuf,
    pub traces: Vec<Trace>,
    /// Index of the trace the last record went to.
    pub current: Option<usize>,
    pending: Vec<Diagnostic>,
    /// Records skipped before any trace existed (counted into the first).
    pending_skipped: crate::model::Skipped,
    /// Indices of traces touched since the last `take_touched` (for the live tail).
    touched: Vec<usize>,
    /// Whether each trace is in `touched`: a touch is O(1) however many traces a source has
    /// (a search of the list was quadratic over a dataset of a trace a line).
    is_touched: Vec<bool>,
    /// Set while a loader shares one of the traces (see [`Gate`]).
    gate: Option<Gate>,
}

impl Sink {
    pub fn new(path: &Path) -> Sink {
        Sink {
            path: path.to_path_buf(),
            traces: Vec::new(),
            current: None,
            pending: Vec::new(),
            pending_skipped: Default::default(),
            touched: Vec::new(),
            is_touched: Vec::new(),
            gate: None,
        }
    }

    /// Run `f`, which may change the traces, with the shared one (if any) in its slot: its
    /// write lock is held for the time of `f`. Nested calls take nothing again (the gate is
    /// out of the sink while it is held), so a thread never holds the lock twice.
    pub fn held<R>(&mut self, f: impl FnOnce(&mut Sink) -> R) -> R {
        let Some(g) = self.gate.take() else {
            return f(self);
        };
        let mut w = g.trace.write().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = self.traces.get_mut(g.slot) {
            std::mem::swap(&mut *w, t);
        }
        let r = f(self);
        if let Some(t) = self.traces.get_mut(g.slot) {
            std::mem::swap(&mut *w, t);
        }
        drop(w);
        self.gate = Some(g);
        r
    }

    pub fn push_trace(&mut self, mut t: Trace) -> usize {
        if self.traces.is_empty() {
            t.diagnostics.append(&mut self.pending);
            t.skipped.merge(&std::mem::take(&mut self.pending_skipped));
        }
        self.traces.push(t);
        let i = self.traces.len() - 1;
        self.touch(i);
        i
    }

    pub fn touch(&mut self, i: usize) {
        self.current = Some(i);
        if self.is_touched.len() <= i {
            self.is_touched.resize(i + 1, false);
        }
        if !self.is_touched[i] {
            self.is_touched[i] = true;
            self.touched.push(i);
        }
    }

    pub fn take_touched(&mut self) -> Vec<usize> {
        for &i in &self.touched {
            self.is_touched[i] = false;
        }
        std::mem::take(&mut self.touched)
    }

    pub fn diag(&mut self, d: Diagnostic) {
        match self.current.and_then(|i| self.traces.get_mut(i)) {
            Some(t) => {
                if t.diagnostics.len() < 1000 {
                    t.diagnostics.push(d)
                }
            }
            None => {
                if self.pending.len() < 1000 {
                    self.pending.push(d)
                }
            }
        }
    }

    /// A record of a type the format does not know: skipped quietly and counted on the trace
    /// being built (formats drift; DESIGN §3). Never a diagnostic.
    pub fn skip(&mut self, ty: &str) {
        match self.current.and_then(|i| self.traces.get_mut(i)) {
            Some(t) => t.skipped.add(ty),
            None => self.pending_skipped.add(ty),
        }
    }

    /// A record of a type the format does not know, on the first trace: skipped and counted
    /// ([`Sink::skip`]), and shown under `parent` as an event of its type when it carries text
    /// (its payload decoded from the record on demand).
    pub fn drift(&mut self, name: &str, record: &[u8], parent: u32, origin: crate::model::Origin, ts: Option<i64>) {
        self.skip(name);
        let v = serde_json::from_slice::<serde_json::Value>(record).ok();
        if v.as_ref().and_then(super::drift_text).is_some()
            && let Some(t) = self.traces.first_mut()
        {
            t.add(crate::model::NewEvent {
                parent: crate::model::Parent::Index(parent),
                start: ts,
                status: crate::model::Status::Ok,
                payload: crate::model::PayloadRef::Deferred,
                origin,
                ..crate::model::NewEvent::new(crate::model::EventKind::Other, name)
            });
        }
    }

    pub fn error(&mut self, line: u64, msg: impl Into<String>) {
        let d = Diagnostic::error(self.path.clone(), Some(line), msg);
        self.diag(d);
    }

    pub fn warning(&mut self, line: Option<u64>, msg: impl Into<String>) {
        let d = Diagnostic::warning(self.path.clone(), line, msg);
        self.diag(d);
    }

    /// Parse a line as `T`, or report it (line number and serde's reason) and return None.
    pub fn parse<'a, T: Deserialize<'a>>(&mut self, line: &'a [u8], loc: LineLoc) -> Option<T> {
        match serde_json::from_slice::<T>(line) {
            Ok(v) => Some(v),
            Err(e) => {
                self.error(loc.line, json_error(&e));
                None
            }
        }
    }

    pub fn pending(&self) -> &[Diagnostic] {
        &self.pending
    }

    /// The load's result: the traces found, or, when there are none, an error that carries
    /// what was wrong.
    pub fn finish(mut self, what: &str) -> Result<Loaded, LoadError> {
        if self.traces.is_empty() {
            let first = self
                .pending
                .iter()
                .find(|d| d.severity == Severity::Error)
                .map(|d| match d.line {
                    Some(l) => format!(" (line {l}: {})", d.message),
                    None => format!(" ({})", d.message),
                })
                .unwrap_or_default();
            return Err(LoadError::Invalid {
                path: self.path.clone(),
                message: format!("no {what} found{first}"),
                diagnostics: std::mem::take(&mut self.pending),
            });
        }
        for t in &mut self.traces {
            t.finalize();
            // Whole now: give back what growth by doubling left spare (AgentDbg 1M: 5 MB).
            t.shrink_to_fit();
            t.release_ids();
        }
        Ok(Loaded { traces: self.traces })
    }
}

/// serde_json's error, without its own "at line 1" (we know the file line).
pub fn json_error(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    let msg = match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    };
    let what = match e.classify() {
        serde_json::error::Category::Eof => "incomplete JSON",
        serde_json::error::Category::Syntax => "invalid JSON",
        serde_json::error::Category::Data => "unexpected record shape",
        serde_json::error::Category::Io => "read error",
    };
    format!("{what}: {msg} (column {})", e.column())
}

/// Why a line the fast path could not read is unreadable: bad UTF-8 (the skimmers check the
/// whole line, serde skips what it ignores), else serde_json's own error reading it as `T`,
/// else `fallback`.
pub fn why_unreadable<'a, T: Deserialize<'a>>(line: &'a [u8], fallback: &str) -> String {
    match (std::str::from_utf8(line), serde_json::from_slice::<T>(line)) {
        (Err(e), _) => format!("invalid UTF-8 at byte {}", e.valid_up_to() + 1),
        (_, Err(e)) => json_error(&e),
        _ => fallback.into(),
    }
}

/// Reads a line-oriented file incrementally.
#[derive(Debug)]
pub struct JsonlReader {
    path: PathBuf,
    offset: u64,
    line_no: u64,
    partial: Vec<u8>,
    partial_start: u64,
    skipping: bool,
    buf: Vec<u8>,
    /// The second buffer of an overlapped read, kept for the next one: the explorer reads a
    /// large file in slices, and a fresh 4 MiB for each slice was zeroed page by page.
    spare: Vec<u8>,
    /// The file's length when it was last opened: a small file gets a buffer its size, not a
    /// whole chunk (zeroing 4 MiB for each of 2,000 small sessions was most of a listing).
    len_hint: Option<u64>,
}

impl JsonlReader {
    pub fn new(path: &Path) -> JsonlReader {
        JsonlReader {
            path: path.to_path_buf(),
            offset: 0,
            line_no: 0,
            partial: Vec::new(),
            partial_start: 0,
            skipping: false,
            buf: Vec::new(),
            spare: Vec::new(),
            len_hint: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes consumed so far (complete lines plus a held partial line).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn has_partial(&self) -> bool {
        !self.partial.is_empty() || self.skipping
    }

    /// Read everything from the current offset to the end of the file as it is now.
    pub fn read_available(&mut self, parser: &mut dyn LineParser, sink: &mut Sink) -> Result<u64, LoadError> {
        let mut f = super::open_regular(&self.path).map_err(|e| LoadError::io(&self.path, e))?;
        self.len_hint = f.metadata().ok().map(|m| m.len());
        self.read_from(&mut f, parser, sink)
    }

    pub fn read_from<R: Read + Seek + Send>(
        &mut self,
        f: &mut R,
        parser: &mut dyn LineParser,
        sink: &mut Sink,
    ) -> Result<u64, LoadError> {
        f.seek(SeekFrom::Start(self.offset))
            .map_err(|e| LoadError::io(&self.path, e))?;
        self.read_limited(f, parser, sink, u64::MAX)
    }

    /// Read a stream (a decompressed member) to its end, on this thread.
    pub fn read_stream<R: Read>(
        &mut self,
        f: &mut R,
        parser: &mut dyn LineParser,
        sink: &mut Sink,
    ) -> Result<u64, LoadError> {
        self.read_serial(f, parser, sink, u64::MAX, false)
            .map(|(total, _)| total)
    }

    /// Read at most `max` bytes from the current offset (a progressive load reads a large
    /// file in slices, publishing what it has between them).
    pub fn read_some(&mut self, parser: &mut dyn LineParser, sink: &mut Sink, max: u64) -> Result<u64, LoadError> {
        let mut f = super::open_regular(&self.path).map_err(|e| LoadError::io(&self.path, e))?;
        self.len_hint = f.metadata().ok().map(|m| m.len().min(self.offset.saturating_add(max)));
        f.seek(SeekFrom::Start(self.offset))
            .map_err(|e| LoadError::io(&self.path, e))?;
        self.read_limited(&mut f, parser, sink, max)
    }

    /// Chunks are read on this thread until one comes back full: a small file, or the few
    /// lines a live tail finds, end here; a large one goes on overlapped.
    fn read_limited<R: Read + Send>(
        &mut self,
        f: &mut R,
        parser: &mut dyn LineParser,
        sink: &mut Sink,
        max: u64,
    ) -> Result<u64, LoadError> {
        match self.read_serial(f, parser, sink, max, true)? {
            (total, true) => self.read_overlapped(f, parser, sink, max, total),
            (total, false) => Ok(total),
        }
    }

    /// Read and consume chunks on this thread; with `until_full`, stop after the first full
    /// chunk when more is wanted (true in the answer).
    fn read_serial<R: Read>(
        &mut self,
        f: &mut R,
        parser: &mut dyn LineParser,
        sink: &mut Sink,
        max: u64,
        until_full: bool,
    ) -> Result<(u64, bool), LoadError> {
        // A file that grew past the hint is still read to its end, in more reads.
        let want = match self.len_hint.take() {
            Some(len) => (len.saturating_sub(self.offset) + 1).clamp(64 << 10, CHUNK as u64) as usize,
            None => CHUNK,
        };
        if self.buf.len() < want {
            self.buf = vec![0; want];
        }
        let mut buf = std::mem::take(&mut self.buf);
        let mut total = 0u64;
        let mut more = false;
        while total < max {
            let n = match self.read_chunk(f, &mut buf, max - total) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    self.buf = buf;
                    return Err(e);
                }
            };
            self.consume(&buf[..n], parser, sink);
            total += n as u64;
            if until_full && n == CHUNK && total < max {
                more = true;
                break;
            }
        }
        self.buf = buf;
        Ok((total, more))
    }

    /// One read of at most a chunk (and at most `left` bytes); 0 at the end.
    fn read_chunk<R: Read>(&self, f: &mut R, buf: &mut [u8], left: u64) -> Result<usize, LoadError> {
        read_retrying(f, buf, left).map_err(|e| LoadError::io(&self.path, e))
    }

    /// A large read: the next chunk is read while the last one is cut and parsed, all on the
    /// rayon pool. The read is the stealable half of a join, so the core that is idle while
    /// a chunk is cut into lines picks it up. A reader thread of its own (as before) made a
    /// third and fourth runnable thread on two cores: the scheduler queued them behind a
    /// parsing thread for about a millisecond at a time while the other core idled (22% of
    /// one core, by `perf sched`).
    fn read_overlapped<R: Read + Send>(
        &mut self,
        f: &mut R,
        parser: &mut dyn LineParser,
        sink: &mut Sink,
        max: u64,
        mut total: u64,
    ) -> Result<u64, LoadError> {
        let path = self.path.clone();
        let mut cur = std::mem::take(&mut self.spare);
        if cur.len() < CHUNK {
            cur = vec![0; CHUNK];
        }
        let mut next = std::mem::take(&mut self.buf);
        rayon::scope(|_| {
            let mut n = match read_retrying(f, &mut cur, max - total) {
                Ok(n) => n,
                Err(e) => return Err(LoadError::io(&path, e)),
            };
            while n > 0 {
                total += n as u64;
                let left = max - total;
                let (_, read) = rayon::join(
                    || self.consume(&cur[..n], parser, sink),
                    || {
                        if left > 0 {
                            read_retrying(f, &mut next, left)
                        } else {
                            Ok(0)
                        }
                    },
                );
                n = read.map_err(|e| LoadError::io(&path, e))?;
                std::mem::swap(&mut cur, &mut next);
            }
            Ok(())
        })?;
        self.buf = cur;
        self.spare = next;
        Ok(total)
    }

    fn consume(&mut self, chunk: &[u8], parser: &mut dyn LineParser, sink: &mut Sink) {
        let base = self.offset;
        let mut start = 0usize;
        // Whole lines of this chunk go to the parser as one batch; the order of lines is kept
        // by flushing the batch before anything delivered on its own.
        let mut batch: Vec<(&[u8], LineLoc)> = Vec::new();
        for nl in memchr::memchr_iter(b'\n', chunk) {
            self.line_no += 1;
            if self.skipping {
                flush_batch(&mut batch, parser, sink);
                self.skipping = false;
                let line_no = self.line_no;
                sink.held(|sink| sink.error(line_no, format!("line longer than {} MiB, skipped", MAX_LINE >> 20)));
            } else if self.partial.is_empty() {
                let l = trim_cr(&chunk[start..nl]);
                if !l.iter().all(|b| b.is_ascii_whitespace()) {
                    let loc = LineLoc {
                        line: self.line_no,
                        offset: base + start as u64,
                        len: l.len(),
                    };
                    batch.push((l, loc));
                }
            } else if self.partial.len() + (nl - start) > MAX_LINE {
                flush_batch(&mut batch, parser, sink);
                self.partial.clear();
                let line_no = self.line_no;
                sink.held(|sink| sink.error(line_no, format!("line longer than {} MiB, skipped", MAX_LINE >> 20)));
            } else {
                flush_batch(&mut batch, parser, sink);
                self.partial.extend_from_slice(&chunk[start..nl]);
                let line = std::mem::take(&mut self.partial);
                let loc = LineLoc {
                    line: self.line_no,
                    offset: self.partial_start,
                    len: line.len(),
                };
                sink.held(|sink| deliver(&line, loc, parser, sink));
                self.partial = line;
                self.partial.clear();
                if self.partial.capacity() > CHUNK {
                    self.partial = Vec::new();
                }
            }
            start = nl + 1;
        }
        flush_batch(&mut batch, parser, sink);
        let rest = &chunk[start..];
        if !rest.is_empty() && !self.skipping {
            if self.partial.is_empty() {
                self.partial_start = base + start as u64;
            }
            if self.partial.len() + rest.len() > MAX_LINE {
                self.partial = Vec::new();
                self.skipping = true;
            } else {
                self.partial.extend_from_slice(rest);
            }
        }
        self.offset = base + chunk.len() as u64;
    }

    /// End of a full load: a last line without a newline is used if it is whole JSON (many
    /// writers omit the final newline), and otherwise reported as incomplete (a run that is
    /// still being written), not as corruption.
    pub fn finish(&mut self, parser: &mut dyn LineParser, sink: &mut Sink) {
        if self.skipping {
            self.skipping = false;
            sink.error(
                self.line_no + 1,
                format!("line longer than {} MiB, skipped", MAX_LINE >> 20),
            );
        }
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line_no += 1;
            let loc = LineLoc {
                line: self.line_no,
                offset: self.partial_start,
                len: line.len(),
            };
            if line.iter().all(|b| b.is_ascii_whitespace()) {
                // nothing
            } else {
                match serde_json::from_slice::<serde::de::IgnoredAny>(trim_cr(&line)) {
                    // Cut mid-record: a run still being written.
                    Err(e) if e.classify() == serde_json::error::Category::Eof => sink.warning(
                        Some(loc.line),
                        "incomplete last line (no newline yet: the run may still be writing); ignored",
                    ),
                    // Whole JSON, or whole but wrong (records run together without newlines,
                    // garbage): the parser reads it or reports what is wrong.
                    _ => deliver(&line, loc, parser, sink),
                }
            }
        }
        parser.flush(sink);
    }

    /// The file got shorter than what was read: it was truncated or replaced. Start over.
    pub fn reset(&mut self) {
        *self = JsonlReader::new(&self.path);
    }
}

/// One `read` of at most `left` bytes into `buf`, again when a signal interrupted it.
fn read_retrying<R: Read>(f: &mut R, buf: &mut [u8], left: u64) -> std::io::Result<usize> {
    let want = left.min(buf.len() as u64) as usize;
    loop {
        match f.read(&mut buf[..want]) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

fn flush_batch(batch: &mut Vec<(&[u8], LineLoc)>, parser: &mut dyn LineParser, sink: &mut Sink) {
    if !batch.is_empty() {
        if parser.holds_itself() {
            parser.lines(batch, sink);
        } else {
            sink.held(|sink| parser.lines(batch, sink));
        }
        batch.clear();
    }
}

fn trim_cr(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

fn deliver(line: &[u8], loc: LineLoc, parser: &mut dyn LineParser, sink: &mut Sink) {
    let l = trim_cr(line);
    if l.iter().all(|b| b.is_ascii_whitespace()) {
        return;
    }
    parser.line(l, LineLoc { len: l.len(), ..loc }, sink);
}

/// Load a whole line-oriented file with `parser`.
pub fn load_lines(path: &Path, parser: &mut dyn LineParser, sink: &mut Sink) -> Result<(), LoadError> {
    let mut r = JsonlReader::new(path);
    r.read_available(parser, sink)?;
    r.finish(parser, sink);
    Ok(())
}

/// Makes a fresh parser for a source (again after the file was truncated or replaced).
pub type MakeParser = Box<dyn Fn() -> Box<dyn LineParser> + Send>;

/// A line-oriented source followed as it grows. A full load is one `poll` and `finish`; the
/// live tail polls again whenever the file changes. Same reader, same parser (DESIGN §6).
pub struct Follow {
    path: PathBuf,
    reader: JsonlReader,
    parser: Box<dyn LineParser>,
    make: MakeParser,
    pub sink: Sink,
    restarted: bool,
    /// Identity of what was read: the file's inode and the last bytes before the offset. A
    /// file truncated and rewritten past the old length between two polls, or replaced by
    /// rename, no longer matches them.
    ino: Option<u64>,
    tail_sig: Vec<u8>,
    /// The first bytes of the file: lines of equal length end alike, so a file truncated and
    /// rewritten past its old length in place can keep its last bytes; its first line (an id,
    /// a time) rarely survives.
    head_sig: Vec<u8>,
    len: Option<u64>,
    /// With `keep_replaced`: the sink a restart replaced, for a caller that still shows it.
    keep: bool,
    replaced: Option<Sink>,
}

/// How many bytes before the offset are checked on every poll.
const SIG: u64 = 64;

/// What one poll found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Polled {
    /// Indices of traces that changed.
    pub touched: Vec<usize>,
    /// The file shrank: everything was read again from the start (traces were rebuilt).
    pub restarted: bool,
}

impl Follow {
    pub fn new(path: &Path, make: MakeParser) -> Follow {
        let parser = make();
        Follow {
            path: path.to_path_buf(),
            reader: JsonlReader::new(path),
            parser,
            make,
            sink: Sink::new(path),
            restarted: false,
            ino: None,
            tail_sig: Vec::new(),
            head_sig: Vec::new(),
            len: None,
            keep: false,
            replaced: None,
        }
    }

    fn read_sig(&self) -> Vec<u8> {
        let off = self.reader.offset();
        self.read_range(off.saturating_sub(SIG), off)
    }

    fn read_head(&self) -> Vec<u8> {
        self.read_range(0, self.reader.offset().min(SIG))
    }

    fn read_range(&self, start: u64, off: u64) -> Vec<u8> {
        use std::io::{Read, Seek, SeekFrom};
        let mut buf = Vec::new();
        if let Ok(mut f) = super::open_regular(&self.path)
            && f.seek(SeekFrom::Start(start)).is_ok()
        {
            let _ = f.take(off - start).read_to_end(&mut buf);
        }
        buf
    }

    fn changed_under_us(&self, meta: &std::fs::Metadata) -> bool {
        if meta.len() < self.reader.offset() {
            return true;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            if self.ino.is_some_and(|i| i != meta.ino()) {
                return true;
            }
        }
        self.reader.offset() > 0 && (self.read_sig() != self.tail_sig || self.read_head() != self.head_sig)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn offset(&self) -> u64 {
        self.reader.offset()
    }

    /// The file's length at the last poll (None: not there yet).
    pub fn file_len(&self) -> Option<u64> {
        self.len
    }

    /// Bytes known to be there but not read yet (a bounded poll stopped before the end).
    pub fn behind(&self) -> u64 {
        self.len.unwrap_or(0).saturating_sub(self.reader.offset())
    }

    /// Read what is new: replaced metadata, then appended lines. A file that does not exist
    /// yet is not an error (a run directory whose events have not started).
    /// Drop one trace's events from memory (the OTLP receiver's cap): it stays in the sink,
    /// empty, with its metadata, and a later record of it starts filling it again. Returns
    /// the number of events dropped.
    pub fn drop_trace(&mut self, i: usize) -> usize {
        let Some(t) = self.sink.traces.get_mut(i) else {
            return 0;
        };
        let n = t.len();
        let mut empty = Trace::new(t.meta.clone());
        empty.files = std::mem::take(&mut t.files);
        *t = empty;
        self.parser.forget(i);
        n
    }

    pub fn poll(&mut self) -> Result<Polled, LoadError> {
        self.poll_some(u64::MAX)
    }

    /// Like [`Follow::poll`], reading at most `max_bytes` of appended data; [`Follow::behind`]
    /// then tells how much is left. Each call leaves the traces consistent (the parser's
    /// `flush` runs), so a loader can publish them between calls.
    pub fn poll_some(&mut self, max_bytes: u64) -> Result<Polled, LoadError> {
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(LoadError::io(&self.path, e)),
        };
        let len = meta.as_ref().map(|m| m.len());
        if meta.as_ref().is_some_and(|m| self.changed_under_us(m)) {
            // Truncated or replaced: start over.
            self.reader.reset();
            self.head_sig.clear();
            self.tail_sig.clear();
            self.parser = (self.make)();
            let old = std::mem::replace(&mut self.sink, Sink::new(&self.path));
            if self.keep {
                self.replaced = Some(old);
            }
            self.restarted = true;
        }
        let parser = &mut self.parser;
        self.sink.held(|sink| parser.refresh(sink));
        if let Some(m) = &meta {
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                self.ino = Some(m.ino());
            }
            let before = self.reader.offset();
            self.reader.read_some(self.parser.as_mut(), &mut self.sink, max_bytes)?;
            if self.reader.offset() != before || self.tail_sig.is_empty() {
                self.tail_sig = self.read_sig();
                if self.head_sig.len() < SIG as usize {
                    self.head_sig = self.read_head();
                }
            }
        }
        self.len = len;
        let parser = &mut self.parser;
        self.sink.held(|sink| parser.flush(sink));
        let touched = self.sink.take_touched();
        // A restart is reported with the first traces read after it (a file truncated to
        // nothing has none yet), so that consumers can tell old events from new ones.
        let restarted = !touched.is_empty() && std::mem::take(&mut self.restarted);
        Ok(Polled { touched, restarted })
    }

    /// Share trace `gate.slot` with a viewer while polling (see [`Gate`]): between polls the
    /// trace is in `gate.trace`, and the sink's slot holds what was there before.
    pub fn gate(&mut self, gate: Gate) {
        self.sink.gate = Some(gate);
    }

    /// Stop sharing: the trace goes back into its slot of the sink that had the gate (the
    /// one a restart replaced, if it did), and what was in that slot into `shared`, whose
    /// lock the caller holds.
    pub fn ungate(&mut self, shared: &mut Trace) {
        for s in std::iter::once(&mut self.sink).chain(self.replaced.as_mut()) {
            if let Some(g) = s.gate.take()
                && let Some(t) = s.traces.get_mut(g.slot)
            {
                std::mem::swap(shared, t);
            }
        }
    }

    /// Keep the sink a restart replaces (see [`Follow::take_replaced`]): a viewer that shares
    /// traces with other threads must not lose the old ones before it swaps to the new.
    pub fn keep_replaced(&mut self) {
        self.keep = true;
    }

    /// The sink the last restart replaced, if kept.
    pub fn take_replaced(&mut self) -> Option<Sink> {
        self.replaced.take()
    }

    /// Whether a restart replaced the sink since the last [`Follow::take_replaced`].
    pub fn has_replaced(&self) -> bool {
        self.replaced.is_some()
    }

    /// Whether a partial last line is waiting for its newline.
    pub fn has_partial(&self) -> bool {
        self.reader.has_partial()
    }

    /// End of a one-shot load: a last line without newline is parsed or reported.
    pub fn finish(mut self, what: &str) -> Result<Loaded, LoadError> {
        self.reader.finish(self.parser.as_mut(), &mut self.sink);
        self.sink.finish(what)
    }

    /// Load a whole source in one go.
    pub fn load(path: &Path, make: MakeParser, what: &str) -> Result<Loaded, LoadError> {
        let mut f = Follow::new(path, make);
        f.poll()?;
        f.finish(what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// Records each line it is given.
    struct Collect(Vec<(String, LineLoc)>);
    impl LineParser for Collect {
        fn line(&mut self, line: &[u8], loc: LineLoc, _: &mut Sink) {
            self.0.push((String::from_utf8_lossy(line).into_owned(), loc));
        }
    }

    #[test]
    fn lines_are_cut_with_their_byte_ranges() {
        let data = b"{\"a\":1}\n\n{\"b\":2}\r\n{\"c\":3}";
        let mut r = JsonlReader::new(Path::new("x"));
        let mut p = Collect(Vec::new());
        let mut s = Sink::new(Path::new("x"));
        r.read_stream(&mut Cursor::new(&data[..]), &mut p, &mut s).unwrap();
        assert_eq!(p.0.len(), 2, "the last line waits for its newline");
        r.finish(&mut p, &mut s);
        let got: Vec<_> = p.0.iter().map(|(l, loc)| (l.as_str(), loc.line, loc.offset)).collect();
        assert_eq!(
            got,
            vec![("{\"a\":1}", 1, 0), ("{\"b\":2}", 3, 9), ("{\"c\":3}", 4, 18)]
        );
        assert_eq!(&data[9..9 + 7], b"{\"b\":2}");
    }

    #[test]
    fn a_large_read_overlapped_with_parsing_delivers_every_line_once_in_order() {
        // Over three chunks, so that the overlapped read (on the rayon pool) takes over; lines of varied length
        // cross the chunk boundaries.
        let mut data = Vec::new();
        let mut want = Vec::new();
        let mut n = 0u64;
        while data.len() < 3 * CHUNK + 1000 {
            let line = format!("{{\"n\":{n},\"pad\":\"{}\"}}", "x".repeat((n as usize * 37) % 5000));
            want.push((line.clone(), n + 1, data.len() as u64));
            data.extend_from_slice(line.as_bytes());
            data.push(b'\n');
            n += 1;
        }
        let mut r = JsonlReader::new(Path::new("x"));
        let mut p = Collect(Vec::new());
        let mut s = Sink::new(Path::new("x"));
        let read = r
            .read_limited(&mut Cursor::new(&data[..]), &mut p, &mut s, u64::MAX)
            .unwrap();
        assert_eq!(read, data.len() as u64);
        let got: Vec<_> = p.0.into_iter().map(|(l, loc)| (l, loc.line, loc.offset)).collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "lines differ");
        assert_eq!(r.offset(), data.len() as u64);
    }

    #[test]
    fn a_partial_line_is_held_across_reads() {
        let mut r = JsonlReader::new(Path::new("x"));
        let mut p = Collect(Vec::new());
        let mut s = Sink::new(Path::new("x"));
        r.consume(b"{\"a\":", &mut p, &mut s);
        assert!(p.0.is_empty());
        assert!(r.has_partial());
        r.consume(b"1}\n{\"b\"", &mut p, &mut s);
        assert_eq!(p.0.len(), 1);
        assert_eq!(p.0[0].0, "{\"a\":1}");
        assert_eq!(p.0[0].1.offset, 0);
        r.consume(b":2}\n", &mut p, &mut s);
        assert_eq!(p.0[1].0, "{\"b\":2}");
        assert_eq!(p.0[1].1.offset, 8);
        assert_eq!(p.0[1].1.line, 2);
    }

    /// One event per line, named after the line.
    struct Names;
    impl LineParser for Names {
        fn line(&mut self, line: &[u8], _: LineLoc, sink: &mut Sink) {
            if sink.traces.is_empty() {
                sink.push_trace(Trace::default());
            }
            let name = String::from_utf8_lossy(line).into_owned();
            sink.traces[0].add(crate::model::NewEvent::new(crate::model::EventKind::Step, &name));
            sink.touch(0);
        }
    }

    fn names(f: &Follow) -> Vec<String> {
        let t = &f.sink.traces[0];
        (0..t.len() as u32).map(|i| t.name(i).to_string()).collect()
    }

    #[test]
    fn a_bounded_poll_reads_in_slices_and_ends_where_a_full_poll_does() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("e.jsonl");
        let lines: Vec<String> = (0..50).map(|i| format!("{{\"n\":{i}}}")).collect();
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        let make = || -> MakeParser { Box::new(|| Box::new(Names) as Box<dyn LineParser>) };
        let mut whole = Follow::new(&p, make());
        whole.poll().unwrap();
        let mut sliced = Follow::new(&p, make());
        let first = sliced.poll_some(5).unwrap();
        assert!(first.touched.is_empty(), "no line is complete within 5 bytes");
        assert_eq!(sliced.offset(), 5);
        let mut polls = 0;
        loop {
            sliced.poll_some(13).unwrap();
            polls += 1;
            assert!(sliced.offset() <= 5 + 13 * polls, "at most 13 bytes a poll");
            if sliced.behind() == 0 {
                break;
            }
        }
        assert!(polls > 20);
        assert_eq!(names(&sliced), names(&whole));
        assert_eq!(names(&sliced), lines);
        assert_eq!(sliced.file_len(), Some(sliced.offset()));
    }

    #[test]
    fn a_gated_poll_fills_the_shared_trace_and_ungate_gives_it_back() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("e.jsonl");
        let lines: Vec<String> = (0..300).map(|i| format!("{{\"n\":{i}}}")).collect();
        std::fs::write(&p, lines[..10].join("\n") + "\n").unwrap();
        let mut f = Follow::new(&p, Box::new(|| Box::new(Names) as Box<dyn LineParser>));
        f.poll().unwrap();
        // The viewer's copy: the trace moves to the shared slot, the sink keeps a placeholder.
        let shared = Arc::new(RwLock::new(Trace::default()));
        std::mem::swap(&mut *shared.write().unwrap(), &mut f.sink.traces[0]);
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        f.gate(Gate {
            trace: shared.clone(),
            slot: 0,
        });
        let polled = f.poll().unwrap();
        assert_eq!(polled.touched, vec![0]);
        let t = shared.read().unwrap();
        let seen: Vec<String> = (0..t.len() as u32).map(|i| t.name(i).to_string()).collect();
        assert_eq!(seen, lines, "between holds the trace is in the shared slot, whole");
        drop(t);
        assert_eq!(f.sink.traces[0].len(), 0, "the sink's slot has the placeholder");
        f.ungate(&mut shared.write().unwrap());
        assert_eq!(names(&f), lines);
        assert_eq!(shared.read().unwrap().len(), 0);
        // Ungated, a poll fills the sink's own trace again.
        std::fs::write(&p, lines.join("\n") + "\n{\"n\":300}\n").unwrap();
        f.poll().unwrap();
        assert_eq!(f.sink.traces[0].len(), 301);
    }

    #[test]
    fn a_cut_last_line_is_a_warning_not_an_error() {
        let mut r = JsonlReader::new(Path::new("x"));
        let mut p = Collect(Vec::new());
        let mut s = Sink::new(Path::new("x"));
        r.consume(b"{\"a\":1}\n{\"b\":", &mut p, &mut s);
        r.finish(&mut p, &mut s);
        assert_eq!(p.0.len(), 1);
        assert_eq!(s.pending().len(), 1);
        assert_eq!(s.pending()[0].severity, Severity::Warning);
        assert_eq!(s.pending()[0].line, Some(2));
    }
}
