//! Text search over runs' payloads at disk speed (issue 18): `tracetui grep` and the runs
//! list's payload search share this core.
//!
//! A match is a match of the *decoded* text (a JSON string's value, not its spelling in the
//! file): `\n`, `\"`, `\u00e9` and `\/` in a file neither hide a match nor make one. For speed
//! the raw bytes of a source are scanned first for the longest piece of the pattern that no
//! JSON encoder escapes ([`Pattern::prefilter`]); a source with no such piece anywhere is never
//! loaded, and in a loaded source only the events whose records ([`crate::model::Origin`])
//! overlap a candidate line are decoded and searched for real (and every error event: a
//! parser may word an error itself). Text a parser makes up is otherwise found only in sources
//! the raw scan let through.

use crate::formats;
use crate::model::{EventKind, NO_PARENT, Payload, PayloadRef, StrRef, Trace};
use crate::search::{NameCache, Query, Verdict};
use crate::source::RunRef;
use rayon::prelude::*;
use regex::bytes::Regex as BytesRegex;
use regex_automata::meta::Regex;
use regex_automata::nfa::thompson::WhichCaptures;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

mod fast;
mod raw;

pub use raw::OpenFile;

/// A compiled search pattern: the decoded-text matcher and the raw-bytes prefilter.
#[derive(Clone, Debug)]
pub struct Pattern {
    re: Regex,
    pre: Option<BytesRegex>,
    /// No match can lie inside a number's text (`-1.5e+3`): a literal with a character no
    /// number is written with. Then only strings, keys and booleans can hold a match, and
    /// those are in the file as they are (see [`search_trace`]).
    number_free: bool,
    /// Every match is a run of ASCII letters, digits and `_`, [`safe`], and not all of them
    /// characters a number is written with: in any JSON text, the file's or one written out
    /// again from its values (an error object's message), a match lies inside one string,
    /// key or `true`/`false`/`null`, never across the punctuation between them nor in a
    /// number, so its bytes are in the record as they are. Then a record the raw scan rules
    /// out has no match in anything its values make, not even a rebuilt error.
    verbatim: bool,
}

/// Whether a character always appears as itself in a JSON file, whatever the encoder: not
/// `"`, `\`, `/` (`\/`), not `<>&'` (Go and others write `\u003c`...), no control, nothing
/// beyond ASCII (`ensure_ascii`). Case-insensitive, `k` and `s` are out too: they fold to
/// non-ASCII letters (U+212A KELVIN SIGN, U+017F LONG S) that a file may spell as `\u212a`.
fn safe(c: u8, ignore_case: bool) -> bool {
    let ok = c.is_ascii_alphanumeric() || b" !#$%()*+,-.:;=?@[]^_`{|}~".contains(&c);
    ok && !(ignore_case && matches!(c.to_ascii_lowercase(), b'k' | b's'))
}

/// The longest run of [`safe`] bytes of a literal (empty when it has none).
fn longest_safe(lit: &[u8], ignore_case: bool) -> &[u8] {
    lit.split(|&c| !safe(c, ignore_case))
        .max_by_key(|p| p.len())
        .unwrap_or(&[])
}

impl Pattern {
    /// A literal (`regex` false) or a regular expression over the decoded text.
    pub fn new(pattern: &str, ignore_case: bool, regex: bool) -> Result<Pattern, String> {
        if pattern.is_empty() {
            return Err("empty pattern".into());
        }
        let src = if regex {
            pattern.to_string()
        } else {
            regex::escape(pattern)
        };
        // Only the span of a match is used: groups compile as non-capturing. With them, a
        // pattern of 8,000 groups asked for a 10 GB matcher cache (capture slots x NFA
        // states); every other cache has its bound too.
        let re = Regex::builder()
            .syntax(regex_automata::util::syntax::Config::new().case_insensitive(ignore_case))
            .configure(
                Regex::config()
                    .which_captures(WhichCaptures::Implicit)
                    .nfa_size_limit(Some(1 << 24))
                    .onepass_size_limit(Some(1 << 20))
                    .dfa_size_limit(Some(1 << 22))
                    .hybrid_cache_capacity(1 << 22),
            )
            .build(&src)
            .map_err(|e| format!("bad pattern: {e}"))?;
        let pieces: Vec<Vec<u8>> = if regex {
            required_literals(pattern, ignore_case)
                .into_iter()
                .map(|l| longest_safe(&l, ignore_case).to_vec())
                .collect()
        } else {
            vec![longest_safe(pattern.as_bytes(), ignore_case).to_vec()]
        };
        // One piece without a safe byte means any byte could start a match: no prefilter.
        let pre = if pieces.is_empty() || pieces.iter().any(|p| p.is_empty()) {
            None
        } else {
            let alt: Vec<String> = pieces
                .iter()
                .map(|p| regex::escape(std::str::from_utf8(p).expect("safe bytes are ASCII")))
                .collect();
            regex::bytes::RegexBuilder::new(&alt.join("|"))
                .case_insensitive(ignore_case)
                .unicode(false)
                .build()
                .ok()
        };
        let number_free = !regex && !pattern.chars().all(|c| "0123456789.+-eE".contains(c));
        let verbatim = !regex
            && number_free
            && pattern
                .bytes()
                .all(|c| (c.is_ascii_alphanumeric() || c == b'_') && safe(c, ignore_case));
        Ok(Pattern {
            re,
            pre,
            number_free,
            verbatim,
        })
    }

    /// The first match in decoded text: byte range.
    pub fn find(&self, s: &str) -> Option<(usize, usize)> {
        self.re.find(s).map(|m| (m.start(), m.end()))
    }

    pub fn is_match(&self, s: &str) -> bool {
        self.re.is_match(s)
    }

    /// What every match leaves verbatim in a JSON file, as a raw-bytes search; `None` when the
    /// pattern has no piece that is surely unescaped (every record must then be decoded).
    pub fn prefilter(&self) -> Option<&BytesRegex> {
        self.pre.as_ref()
    }
}

/// Literals one of which every match of the regex starts with (empty: none known).
fn required_literals(pattern: &str, ignore_case: bool) -> Vec<Vec<u8>> {
    use regex_syntax::hir::literal::Extractor;
    let Ok(hir) = regex_syntax::ParserBuilder::new()
        .case_insensitive(ignore_case)
        .build()
        .parse(pattern)
    else {
        return Vec::new();
    };
    let seq = Extractor::new().extract(&hir);
    match seq.literals() {
        Some(lits) if !lits.is_empty() => lits.iter().map(|l| l.as_bytes().to_vec()).collect(),
        _ => Vec::new(),
    }
}

/// Byte ranges of the lines of a file in which the prefilter found a candidate, in order.
#[derive(Clone, Debug, Default)]
pub struct Candidates {
    pub lines: Vec<(u64, u64)>,
}

impl Candidates {
    /// Whether a record's byte range overlaps a candidate line.
    pub fn overlaps(&self, offset: u64, len: u64) -> bool {
        let end = offset + len.max(1);
        let i = self.lines.partition_point(|&(_, e)| e <= offset);
        self.lines.get(i).is_some_and(|&(s, _)| s < end)
    }
}

/// The first bytes of files the raw scan cannot see text in.
fn opaque(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b]) || head.starts_with(b"PK\x03\x04") || head.starts_with(b"SQLite format 3\0")
}

/// Scan a file's raw bytes for the prefilter: the candidate lines, or `None` when the file
/// is compressed or a database (its text is not in its bytes).
///
/// Memory is bounded whatever the lines' length: a line longer than the loaders' limit
/// ([`formats::jsonl::MAX_LINE`]; a JSONL loader skips it, a document's elements may lie in
/// it) is searched in windows that overlap by the longest prefilter match, and each match in
/// it is a candidate range of its own (a record holding the match overlaps it).
pub fn scan_file(path: &Path, pre: &BytesRegex) -> std::io::Result<Option<Candidates>> {
    scan_file_windowed(path, pre, formats::jsonl::MAX_LINE)
}

fn scan_file_windowed(path: &Path, pre: &BytesRegex, window: usize) -> std::io::Result<Option<Candidates>> {
    const CHUNK: usize = 8 << 20;
    let mut f = formats::open_regular(path)?;
    // Sized to the file (a run has many small files; zeroing 8 MiB for each cost more than
    // reading them), grown below for a line longer than the buffer, up to `window`.
    let size = f.metadata().map_or(CHUNK as u64, |m| m.len());
    let mut buf = vec![0u8; (size as usize).saturating_add(1).clamp(4096, CHUNK)];
    let mut have = 0usize;
    let mut base = 0u64;
    let mut first = true;
    // Inside a line longer than `window`: its bytes so far were searched in windows.
    let mut long = false;
    let mut out = Candidates::default();
    loop {
        let n = f.read(&mut buf[have..])?;
        let eof = n == 0;
        have += n;
        if first && (have >= 16 || eof) {
            if opaque(&buf[..have]) {
                return Ok(None);
            }
            first = false;
        }
        if !eof && have < buf.len() {
            continue;
        }
        let nl = if long {
            memchr::memchr(b'\n', &buf[..have])
        } else {
            memchr::memrchr(b'\n', &buf[..have])
        };
        if long || (nl.is_none() && !eof && buf.len() >= window) {
            // A window of a long line: matches are candidates of their own; the last bytes
            // stay, so that a match across two windows is found in the next.
            let end = nl.unwrap_or(have);
            let keep = if nl.is_some() || eof {
                0
            } else {
                longest_match(pre).min(end)
            };
            let hay = &buf[..end];
            for m in pre.find_iter(hay) {
                if keep > 0 && m.start() >= end - keep {
                    break; // found again, whole, in the next window
                }
                out.lines.push((base + m.start() as u64, base + m.end() as u64));
            }
            let done = match nl {
                Some(i) => {
                    long = false;
                    i + 1
                }
                None => {
                    long = !eof;
                    end - keep
                }
            };
            if eof && nl.is_none() {
                return Ok(Some(out));
            }
            buf.copy_within(done..have, 0);
            have -= done;
            base += done as u64;
            continue;
        }
        // Search up to the last newline (all when at the end); keep the partial line.
        let upto = if eof {
            have
        } else {
            match nl {
                Some(i) => i + 1,
                None => {
                    // A line longer than the buffer: grow it (up to `window`).
                    buf.resize((buf.len() * 2).min(window), 0);
                    continue;
                }
            }
        };
        let hay = &buf[..upto];
        let mut at = 0;
        while let Some(m) = pre.find_at(hay, at) {
            let s = memchr::memrchr(b'\n', &hay[..m.start()]).map_or(0, |i| i + 1);
            let e = memchr::memchr(b'\n', &hay[m.end()..]).map_or(hay.len(), |i| m.end() + i + 1);
            out.lines.push((base + s as u64, base + e as u64));
            at = e;
            if at >= hay.len() {
                break;
            }
        }
        if eof {
            return Ok(Some(out));
        }
        buf.copy_within(upto..have, 0);
        have -= upto;
        base += upto as u64;
    }
}

/// The longest text the prefilter can match (its pieces are literals), for the overlap of
/// two windows; a pattern of unknown length keeps a generous overlap.
fn longest_match(pre: &BytesRegex) -> usize {
    regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .case_insensitive(true)
        .build()
        .parse(pre.as_str())
        .ok()
        .and_then(|h| h.properties().maximum_len())
        .unwrap_or(1 << 16)
}

/// One match: an event, the field it is in and a one-line snippet around it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub event: u32,
    /// The event's index in the whole trace: `event`, except on the fast path, whose trace
    /// holds only the events a search needs.
    pub index: u32,
    /// `name`, `arguments`, `result`, `prompt`, `response`, `content`, `input`, `output` or
    /// `error`, with a JSON path below it where the text was inside an object
    /// (`arguments.command`).
    pub field: String,
    pub snippet: Snippet,
}

/// A window of the matched text, unsanitized; the match is `text[start..end]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snippet {
    pub text: String,
    pub start: usize,
    pub end: usize,
    /// Text was cut before / after the window.
    pub cut_before: bool,
    pub cut_after: bool,
}

const BEFORE: usize = 40;
const AFTER: usize = 80;

/// A window of `s` around the match `(a, b)` (byte offsets), cut on characters.
pub fn snippet(s: &str, (a, b): (usize, usize)) -> Snippet {
    let mut from = a;
    for (n, (i, _)) in s[..a].char_indices().rev().enumerate() {
        if n >= BEFORE {
            break;
        }
        from = i;
    }
    let mut to = b;
    for (n, (i, c)) in s[b..].char_indices().enumerate() {
        if n >= AFTER.saturating_sub(b - a) {
            break;
        }
        to = b + i + c.len_utf8();
    }
    Snippet {
        text: s[from..to].to_string(),
        start: a - from,
        end: b - from,
        cut_before: from > 0,
        cut_after: to < s.len(),
    }
}

/// Names of an event's input and output in words a user knows.
fn field_names(k: EventKind) -> (&'static str, &'static str) {
    match k {
        EventKind::ToolCall => ("arguments", "result"),
        EventKind::LlmCall => ("prompt", "response"),
        EventKind::Message(_) => ("content", "output"),
        _ => ("input", "output"),
    }
}

/// The first match inside a JSON value: (path below the field, snippet).
fn in_value(p: &Pattern, v: &Value, path: &mut String, budget: &mut usize) -> Option<(String, Snippet)> {
    if *budget == 0 {
        return None;
    }
    *budget -= 1;
    let leaf = |s: &str, path: &str| p.find(s).map(|m| (path.to_string(), snippet(s, m)));
    match v {
        Value::String(s) => leaf(s, path),
        Value::Number(n) => leaf(&n.to_string(), path),
        Value::Bool(b) => leaf(if *b { "true" } else { "false" }, path),
        Value::Null => None,
        Value::Array(a) => a.iter().enumerate().find_map(|(i, x)| {
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            let r = in_value(p, x, path, budget);
            path.truncate(len);
            r
        }),
        Value::Object(o) => o.iter().find_map(|(k, x)| {
            let len = path.len();
            path.push('.');
            path.push_str(k);
            let r = leaf(k, path).or_else(|| in_value(p, x, path, budget));
            path.truncate(len);
            r
        }),
    }
}

/// The matches in an event's payload: at most one per field (the first), in the order
/// input, output, error.
pub fn payload_hits(p: &Pattern, kind: EventKind, pl: &Payload) -> Vec<(String, Snippet)> {
    let (inp, outp) = field_names(kind);
    let mut out = Vec::new();
    let mut budget = 1_000_000;
    for (name, v) in [(inp, &pl.input), (outp, &pl.output)] {
        if let Some(v) = v {
            let mut path = name.to_string();
            if let Some(h) = in_value(p, v, &mut path, &mut budget) {
                out.push(h);
            }
        }
    }
    if let Some(e) = &pl.error {
        let texts = [e.kind.as_deref(), Some(e.message.as_str()), e.stack.as_deref()];
        let hit = texts
            .into_iter()
            .flatten()
            .find_map(|s| p.find(s).map(|m| ("error".to_string(), snippet(s, m))))
            .or_else(|| {
                let mut path = "error.details".to_string();
                e.details.as_ref().and_then(|d| in_value(p, d, &mut path, &mut budget))
            });
        out.extend(hit);
    }
    out
}

/// The ancestors of an event below the run, then the event: their labels (name, else kind).
pub fn breadcrumb(t: &Trace, i: u32) -> Vec<String> {
    let mut chain = Vec::new();
    let mut cur = i;
    let mut guard = 0;
    while cur != NO_PARENT && (cur as usize) < t.len() && guard < 10_000 {
        let e = t.event(cur);
        if e.kind != EventKind::Run {
            let name = t.str(e.name);
            chain.push(if name.is_empty() {
                e.kind.as_str().to_string()
            } else {
                name.to_string()
            });
        }
        cur = e.parent;
        guard += 1;
    }
    chain.reverse();
    chain
}

/// Options of a search.
#[derive(Clone, Debug)]
pub struct Options {
    pub pattern: Pattern,
    pub filter: Option<Query>,
    /// At most this many matches per trace.
    pub max_count: Option<usize>,
}

/// A trace's matches.
#[derive(Debug)]
pub struct TraceHits {
    /// Position of the trace in its source.
    pub index: usize,
    pub trace: Trace,
    pub hits: Vec<Hit>,
}

/// What searching one source found.
#[derive(Debug, Default)]
pub struct SourceResult {
    /// Traces with at least one match, in source order.
    pub traces: Vec<TraceHits>,
    /// Whether the source was loaded (false: the raw scan ruled it out).
    pub loaded: bool,
    /// Files of the source replaced, deleted or truncated while it was searched: its
    /// matches may be incomplete (`grep` names them and exits 2).
    pub changed: Vec<PathBuf>,
}

/// What a file was when its search began: which file (device, inode) and how long. A file
/// that grew is the same file (a live session appends); one replaced by a rename, deleted
/// or made shorter is not, and the offsets read from it before no longer hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    len: u64,
}

fn identity(path: &Path) -> Option<Identity> {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let (dev, ino) = {
        use std::os::unix::fs::MetadataExt;
        (m.dev(), m.ino())
    };
    #[cfg(not(unix))]
    let (dev, ino) = (0, 0);
    Some(Identity { dev, ino, len: m.len() })
}

/// The files of `before` that are no longer what they were.
fn changed_since(before: &[(PathBuf, Option<Identity>)]) -> Vec<PathBuf> {
    before
        .iter()
        .filter(|(p, was)| {
            let Some(was) = was else { return false };
            identity(p).is_none_or(|now| (now.dev, now.ino) != (was.dev, was.ino) || now.len < was.len)
        })
        .map(|(p, _)| p.clone())
        .collect()
}

/// Formats whose runs read files outside the source path (a storage tree, a database): the
/// raw scan of the source path alone cannot rule them out, so they are always loaded.
const LOAD_ALWAYS: &[&str] = &["opencode", "cursor", "cline"];

/// The files a source's load reads, as far as its path tells: the file (and a Claude Code
/// session's `<session>/subagents/`), or the files in a run directory.
pub fn source_files(path: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            if out.len() >= 10_000 {
                return;
            }
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_file() {
                out.push(e.path());
            } else if ft.is_dir() && depth < 4 {
                walk(&e.path(), depth + 1, out);
            }
        }
    }
    let mut out = Vec::new();
    if path.is_dir() {
        walk(path, 0, &mut out);
    } else {
        out.push(path.to_path_buf());
        let side = path.with_extension("");
        if side != path && side.is_dir() {
            walk(&side, 0, &mut out);
        }
    }
    out
}

/// Search one source. `Err` is a source that could not be read.
pub fn search_source(run: &RunRef, o: &Options) -> Result<SourceResult, formats::LoadError> {
    let before: Vec<(PathBuf, Option<Identity>)> = source_files(&run.path)
        .into_iter()
        .map(|f| {
            let id = identity(&f);
            (f, id)
        })
        .collect();
    let mut r = match fast::search(run, o) {
        Some(r) => r,
        None => search_source_loaded(run, o),
    };
    if let Ok(r) = &mut r {
        r.changed = changed_since(&before);
    }
    r
}

/// [`search_source`] on a worker thread: a panic in a parser is this source failing (an
/// error naming it), not a hole in the results or a lost worker.
pub fn search_source_caught(run: &RunRef, o: &Options) -> Result<SourceResult, formats::LoadError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| search_source(run, o))).unwrap_or_else(|_| {
        Err(formats::LoadError::io(
            &run.path,
            std::io::Error::other("the search failed"),
        ))
    })
}

/// [`search_source`] by a full load of the source (the general path; the fast path of
/// AgentDbg sources must agree with it).
pub fn search_source_loaded(run: &RunRef, o: &Options) -> Result<SourceResult, formats::LoadError> {
    let mut scanned: HashMap<PathBuf, Option<Candidates>> = HashMap::new();
    if let Some(pre) = o.pattern.prefilter()
        && !LOAD_ALWAYS.contains(&run.format.id())
    {
        let mut any = false;
        for f in source_files(&run.path) {
            let c = scan_file(&f, pre).map_err(|e| formats::LoadError::io(&f, e))?;
            any |= c.as_ref().is_none_or(|c| !c.lines.is_empty());
            scanned.insert(f, c);
        }
        if !any {
            return Ok(SourceResult::default());
        }
    }
    let loaded = run.load()?;
    let mut out = SourceResult {
        loaded: true,
        ..Default::default()
    };
    for (index, t) in loaded.traces.into_iter().enumerate() {
        let hits = search_trace(&t, o, &mut scanned);
        if !hits.is_empty() {
            out.traces.push(TraceHits { index, trace: t, hits });
        }
    }
    Ok(out)
}

/// Formats whose decoded payloads hold, besides the error, only the strings, keys, numbers
/// and booleans of the record (no words of the parser's): AgentDbg's arguments, results,
/// prompts, responses and states are its values, JSON text in a string decoded.
const ERROR_TEXT_ONLY: &[&str] = &["agentdbg"];
/// Formats whose deferred payloads hold text resolved from other parts of the file.
const REFERENCES_ELSEWHERE: &[&str] = &["inspect-ai"];

/// How much of an event's payload a search decodes.
enum Decode {
    No,
    Full,
    /// The error alone ([`fast::error_only`]), the full payload when that cannot say.
    Error,
}

/// Search a loaded trace. `scanned` caches the raw scans of its files (filled as needed).
pub fn search_trace(t: &Trace, o: &Options, scanned: &mut HashMap<PathBuf, Option<Candidates>>) -> Vec<Hit> {
    search_trace_in(t, o, scanned, None)
}

/// [`search_trace`], reading records of `open`'s file from it.
pub fn search_trace_in(
    t: &Trace,
    o: &Options,
    scanned: &mut HashMap<PathBuf, Option<Candidates>>,
    open: Option<OpenFile>,
) -> Vec<Hit> {
    // Per file of the trace: its candidate lines, or None to decode every record in it.
    // A format whose payloads take text from elsewhere in the file (Inspect AI's attachments
    // and message pool) cannot be ruled out by its records' bytes.
    let prefilter = o
        .pattern
        .prefilter()
        .filter(|_| !REFERENCES_ELSEWHERE.contains(&t.meta.format));
    let cands: Vec<Option<Candidates>> = match prefilter {
        Some(pre) => t
            .files
            .iter()
            .map(|f| {
                scanned
                    .entry(f.clone())
                    .or_insert_with(|| scan_file(f, pre).ok().flatten())
                    .clone()
            })
            .collect(),
        None => vec![None; t.files.len()],
    };
    let max = o.max_count.unwrap_or(usize::MAX);
    let n = t.len() as u32;
    if n <= SPAN {
        return search_events(t, o, &cands, 0..n, max, open);
    }
    // A big trace (the 1M-event run, or many matches) in spans on every core: decoding the
    // payloads of the candidates is most of a search. Hits are kept in event order and cut at
    // `max`, as one pass would; spans go a few per core at a time, so that a search with
    // `--max-count` stops soon.
    let spans: Vec<std::ops::Range<u32>> = (0..n).step_by(SPAN as usize).map(|s| s..(s + SPAN).min(n)).collect();
    let mut hits = Vec::new();
    for group in spans.chunks(2 * rayon::current_num_threads()) {
        let found: Vec<Vec<Hit>> = group
            .par_iter()
            .map(|r| search_events(t, o, &cands, r.clone(), max, open))
            .collect();
        for f in found {
            hits.extend(f);
            if hits.len() >= max {
                hits.truncate(max);
                return hits;
            }
        }
    }
    hits
}

/// Events searched at once by one core (see [`search_trace`]).
const SPAN: u32 = 4096;

/// [`search_trace`] over the events `range`: at most `max` hits.
fn search_events(
    t: &Trace,
    o: &Options,
    cands: &[Option<Candidates>],
    range: std::ops::Range<u32>,
    max: usize,
    open: Option<OpenFile>,
) -> Vec<Hit> {
    let candidate = |file: u16, off: u64, len: u32| match cands.get(file as usize) {
        Some(Some(c)) => c.overlaps(off, len as u64),
        _ => true,
    };
    let mut names = NameCache::default();
    let mut name_hit: HashMap<StrRef, Option<Snippet>> = HashMap::new();
    let mut hits = Vec::new();
    for i in range {
        if hits.len() >= max {
            break;
        }
        let e = t.event(i);
        let verdict = match &o.filter {
            Some(q) => q.eval_fast(t, i, &mut names),
            None => Verdict::Yes,
        };
        if verdict == Verdict::No {
            continue;
        }
        let name = name_hit
            .entry(e.name)
            .or_insert_with(|| {
                let s = t.str(e.name);
                o.pattern.find(s).map(|m| snippet(s, m))
            })
            .clone();
        let mut found: Vec<(String, Snippet)> = name.map(|s| ("name".to_string(), s)).into_iter().collect();
        let decode = match &e.payload {
            PayloadRef::None => Decode::No,
            PayloadRef::Inline(_) => Decode::Full,
            PayloadRef::Deferred
                if candidate(e.origin.file, e.origin.offset, e.origin.len)
                    || e.origin2
                        .as_deref()
                        .is_some_and(|o2| candidate(o2.file, o2.offset, o2.len)) =>
            {
                Decode::Full
            }
            // Errors are few, and their message may be the parser's words, not the file's.
            // Where the rest of the payload is the file's own text (a format of
            // ERROR_TEXT_ONLY), which the raw scan ruled out, and no number can hold the
            // match, only the error can match: it alone is decoded.
            PayloadRef::Deferred if e.is_error() => {
                if o.pattern.number_free && ERROR_TEXT_ONLY.contains(&t.meta.format) {
                    Decode::Error
                } else {
                    Decode::Full
                }
            }
            PayloadRef::Deferred => Decode::No,
        };
        let mut payload = None;
        match decode {
            Decode::No => {}
            Decode::Error => match fast::error_only(t, e, open) {
                Some(p) => found.extend(payload_hits(&o.pattern, e.kind, &p)),
                None => {
                    let p = raw::whole(t, e, open);
                    found.extend(payload_hits(&o.pattern, e.kind, &p));
                    payload = Some(p);
                }
            },
            // Without a filter to run on it, the payload need only hold what can match.
            Decode::Full if verdict == Verdict::Yes && matches!(e.payload, PayloadRef::Deferred) => {
                let p = raw::searched_payload(t, e, &o.pattern, open);
                found.extend(payload_hits(&o.pattern, e.kind, &p));
            }
            Decode::Full => {
                let p = raw::whole(t, e, open);
                found.extend(payload_hits(&o.pattern, e.kind, &p));
                payload = Some(p);
            }
        }
        if found.is_empty() {
            continue;
        }
        if verdict == Verdict::NeedsPayload {
            let p = payload.unwrap_or_else(|| formats::payload(t, e));
            if !o.filter.as_ref().is_some_and(|q| q.eval_full(t, i, &mut names, &p)) {
                continue;
            }
        }
        for (field, snippet) in found {
            if hits.len() >= max {
                break;
            }
            hits.push(Hit {
                event: i,
                index: i,
                field,
                snippet,
            });
        }
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pre(p: &Pattern) -> String {
        p.prefilter().map(|r| r.as_str().to_string()).unwrap_or_default()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Lines longer than the window are searched in windows: every match is covered by
        /// a candidate, whatever the lines' lengths and where the windows fall.
        #[test]
        fn a_line_longer_than_the_window_is_searched_in_windows(
            lines in proptest::collection::vec((0usize..20_000, proptest::collection::vec(0usize..20_000, 0..4)), 1..6),
            window in 4096usize..9000,
        ) {
            let p = Pattern::new("needle", false, false).unwrap();
            let mut text = Vec::new();
            let mut at = Vec::new();
            for (len, needles) in &lines {
                let start = text.len();
                text.extend(std::iter::repeat_n(b'x', *len));
                for &n in needles {
                    let i = start + n.min(*len);
                    text.splice(i..i, b"needle".iter().copied());
                }
                text.push(b'\n');
            }
            let mut i = 0;
            while let Some(j) = memchr::memmem::find(&text[i..], b"needle") {
                at.push((i + j) as u64);
                i += j + 1;
            }
            let d = tempfile::tempdir().unwrap();
            let f = d.path().join("t.jsonl");
            std::fs::write(&f, &text).unwrap();
            let c = scan_file_windowed(&f, p.prefilter().unwrap(), window).unwrap().unwrap();
            for &a in &at {
                proptest::prop_assert!(
                    c.lines.iter().any(|&(s, e)| s <= a && a + 6 <= e),
                    "the needle at {} is in no candidate: {:?}", a, c.lines
                );
            }
            // Nothing but needles is a candidate in a long line.
            for &(s, e) in &c.lines {
                proptest::prop_assert!(memchr::memmem::find(&text[s as usize..e as usize], b"needle").is_some());
            }
        }
    }

    #[test]
    fn a_file_replaced_deleted_or_truncated_is_changed_and_one_that_grew_is_not() {
        let d = tempfile::tempdir().unwrap();
        let [a, b, c, g] = ["a", "b", "c", "g"].map(|n| d.path().join(n));
        for f in [&a, &b, &c, &g] {
            std::fs::write(f, "0123456789\n").unwrap();
        }
        let before: Vec<_> = [&a, &b, &c, &g].iter().map(|f| ((*f).clone(), identity(f))).collect();
        assert!(changed_since(&before).is_empty());
        let new = d.path().join("new");
        std::fs::write(&new, "0123456789\n").unwrap();
        std::fs::rename(&new, &a).unwrap();
        std::fs::remove_file(&b).unwrap();
        std::fs::write(&c, "01\n").unwrap();
        std::io::Write::write_all(
            &mut std::fs::OpenOptions::new().append(true).open(&g).unwrap(),
            b"more\n",
        )
        .unwrap();
        assert_eq!(changed_since(&before), vec![a, b, c]);
    }

    #[test]
    fn the_prefilter_is_the_longest_piece_no_encoder_escapes() {
        assert_eq!(
            pre(&Pattern::new("line one\nline 2", false, false).unwrap()),
            "line one"
        );
        assert_eq!(pre(&Pattern::new("café au lait", false, false).unwrap()), " au lait");
        assert_eq!(pre(&Pattern::new("a/b/cde", false, false).unwrap()), "cde");
        assert_eq!(pre(&Pattern::new("\"é\"", false, false).unwrap()), "", "nothing safe");
        // Case-insensitive, k and s may be spelled \u212a and \u017f in the file.
        assert_eq!(pre(&Pattern::new("Task", true, false).unwrap()), "Ta");
        assert_eq!(pre(&Pattern::new("foo|bar", false, true).unwrap()), "foo|bar");
        assert_eq!(
            pre(&Pattern::new(".*x", false, true).unwrap()),
            "",
            "any start: no prefilter"
        );
    }

    #[test]
    fn candidate_lines_overlap_records() {
        let c = Candidates {
            lines: vec![(0, 10), (20, 30)],
        };
        assert!(c.overlaps(0, 5));
        assert!(c.overlaps(5, 20));
        assert!(!c.overlaps(10, 10));
        assert!(c.overlaps(25, 1));
        assert!(!c.overlaps(30, 5));
    }

    #[test]
    fn scan_finds_lines_across_chunk_sizes_and_skips_compressed_files() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("a.jsonl");
        let mut s = String::new();
        for i in 0..50_000 {
            s.push_str(&format!(
                "{{\"n\": {i}, \"text\": \"{}\"}}\n",
                if i % 9_999 == 0 { "needle" } else { "hay" }
            ));
        }
        std::fs::write(&f, &s).unwrap();
        let p = Pattern::new("needle", false, false).unwrap();
        let c = scan_file(&f, p.prefilter().unwrap()).unwrap().unwrap();
        assert_eq!(c.lines.len(), 6);
        for (a, b) in &c.lines {
            assert!(s[*a as usize..*b as usize].contains("needle"));
            assert!(s[*a as usize..*b as usize].ends_with('\n'));
        }
        let g = d.path().join("b.gz");
        std::fs::write(&g, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        assert!(scan_file(&g, p.prefilter().unwrap()).unwrap().is_none());
    }

    #[test]
    fn snippets_are_windows_around_the_match() {
        let s = "x".repeat(100) + "NEEDLE" + &"y".repeat(100);
        let p = Pattern::new("needle", true, false).unwrap();
        let sn = snippet(&s, p.find(&s).unwrap());
        assert_eq!(&sn.text[sn.start..sn.end], "NEEDLE");
        assert!(sn.cut_before && sn.cut_after);
        assert_eq!(sn.start, BEFORE);
    }
}
