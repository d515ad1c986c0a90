//! Whole JSON documents read as a stream (DESIGN §4): a list at the top of a document, or at a
//! known key path inside it (`{"trace": {"trace": [...]}}`, `{"resourceSpans": [...]}`), is
//! scanned chunk by chunk, and each element of the list is handed on with its byte range as if
//! it were a line of a JSON Lines file, so that the line-oriented engine
//! ([`super::engine::batch`]) reads a 4 GB document the way it reads a 4 GB JSONL file: in
//! parallel, into the compact index, payloads left on disk.
//!
//! The scan is structural only: it follows strings (with their escapes) and brackets to find
//! where each element begins and ends, and parses nothing. Whether an element is valid JSON is
//! for the element's own parser to say (with a diagnostic naming its line). Memory is bounded:
//! one chunk, the next chunk being read, and one element that crosses a chunk boundary (at most
//! [`MAX_ELEMENT`]; a larger one is skipped with a diagnostic).
//!
//! The values of the top-level object that are not on the path (a test result's `passed` and
//! `assertions`, wherever they come) are handed on too, up to [`MAX_OTHER`] bytes each.

use super::LoadError;
use super::jsonl::LineLoc;
use std::io::Read;
use std::path::Path;

/// Read size (as the JSONL reader's).
pub const CHUNK: usize = 4 << 20;
/// The largest element read (as the JSONL reader's longest line).
pub const MAX_ELEMENT: usize = super::jsonl::MAX_LINE;
/// The largest value of the top-level object (off the path) handed on.
pub const MAX_OTHER: usize = 16 << 20;
/// Keys longer than this are never on a path.
const MAX_KEY: usize = 4096;

/// What a document's reader receives, in document order.
pub trait DocSink: Send {
    /// Complete elements of the list (each with its byte range and the line it starts on).
    fn elements(&mut self, batch: &[(&[u8], LineLoc)]);
    /// A value of the top-level object that is not on the path to the list.
    fn other(&mut self, _key: &str, _value: &[u8], _loc: LineLoc) {}
    /// The list was found at `paths[path]`; its elements follow.
    fn list(&mut self, _path: usize) {}
    /// What is wrong with the document at `line` (the scan stops at a structural error).
    fn problem(&mut self, line: u64, message: String);
}

/// What the top of a document is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Top {
    /// Nothing but whitespace.
    Empty,
    List,
    Object,
    /// A string, number, literal or something that is not JSON.
    Other,
}

/// What a scan found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scanned {
    pub top: Top,
    /// Which of the paths led to the list (None: no list was found).
    pub list: Option<usize>,
    pub elements: u64,
    pub bytes: u64,
    /// More than whitespace follows the top-level value (a problem was reported): the file
    /// may be JSON Lines rather than one document.
    pub trailing: bool,
}

/// How to read a document: the key paths to the list, tried together (the empty path is a
/// list at the top), and the chunk size (small in tests, to cut elements everywhere).
pub struct Document<'p> {
    pub paths: &'p [&'p [&'p str]],
    pub chunk: usize,
    /// Stream the list of every path found, each once, one after the other (a SWE-agent
    /// trajectory's `trajectory` and `history`), instead of the first only.
    pub every_list: bool,
}

impl<'p> Document<'p> {
    pub fn new(paths: &'p [&'p [&'p str]]) -> Document<'p> {
        Document {
            paths,
            chunk: CHUNK,
            every_list: false,
        }
    }

    /// [`Document::new`], streaming every path's list (see `every_list`).
    pub fn every_list(paths: &'p [&'p [&'p str]]) -> Document<'p> {
        Document {
            every_list: true,
            ..Document::new(paths)
        }
    }

    /// Scan the file at `path`, handing its list's elements to `sink`. The next chunk is read
    /// while the last one is scanned and its elements parsed.
    pub fn read(&self, path: &Path, sink: &mut dyn DocSink) -> Result<Scanned, LoadError> {
        let mut f = super::open_regular(path).map_err(|e| LoadError::io(path, e))?;
        // A small document gets buffers its size: two zeroed chunks of 4 MiB for every one of
        // 2,000 trajectories of 250 KB were most of an `ls` over them.
        let len = f.metadata().map_or(u64::MAX, |m| m.len());
        let doc = Document {
            paths: self.paths,
            chunk: self
                .chunk
                .min(usize::try_from(len.saturating_add(1)).unwrap_or(usize::MAX)),
            every_list: self.every_list,
        };
        doc.read_from(&mut f, sink).map_err(|e| LoadError::io(path, e))
    }

    /// Scan a stream (a file, or bytes in tests).
    pub fn read_from<R: Read + Send>(&self, f: &mut R, sink: &mut dyn DocSink) -> std::io::Result<Scanned> {
        let chunk = self.chunk.max(1);
        let mut sc = Scanner::new(self.paths);
        sc.every_list = self.every_list;
        let mut cur = vec![0; chunk];
        let mut next = vec![0; chunk];
        let mut n = read_full(f, &mut cur)?;
        while n > 0 && !sc.stopped() {
            let (_, read) = rayon::join(|| sc.chunk(&cur[..n], sink), || read_full(f, &mut next));
            n = read?;
            std::mem::swap(&mut cur, &mut next);
        }
        sc.finish(sink);
        Ok(sc.scanned())
    }
}

/// Fill `buf` as far as the stream goes (0 at its end).
fn read_full<R: Read>(f: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Where the scan is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Before the top-level value.
    Start,
    /// In an object on the path: a key or `}`.
    Key,
    /// In an object on the path, after `,`: a key.
    KeyAfterComma,
    /// Inside a key string.
    KeyText,
    Colon,
    /// The value of the key just read.
    KeyValue,
    /// After a value in an object on the path: `,` or `}`.
    AfterValue,
    /// In the list: an element or `]`.
    List,
    /// In the list after `,`: an element.
    ListAfterComma,
    /// After an element: `,` or `]`.
    ListAfter,
    /// Skipping a value (an element, a value off the path).
    Skip,
    /// After the top-level value: only whitespace.
    Done,
    /// A structural error: the scan ended.
    Stopped,
}

/// What a skipped value is.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Skipping {
    Element,
    /// A value of the top-level object, handed on under its key.
    Other(String),
    /// A value inside an object on the path but off it: dropped.
    Ignore,
}

struct Scanner<'p> {
    paths: &'p [&'p [&'p str]],
    mode: Mode,
    /// The candidate paths at each level of objects entered (the last is the innermost).
    levels: Vec<Vec<usize>>,
    key: Vec<u8>,
    key_long: bool,
    key_escape: bool,
    skip: Skipper,
    skipping: Skipping,
    /// Where the value being skipped starts (absolute) and its line.
    value_start: u64,
    value_line: u64,
    /// The part of a value that began in an earlier chunk.
    carry: Vec<u8>,
    carried: bool,
    /// The value outgrew its limit: skipped, reported at its end.
    too_large: bool,
    top: Top,
    /// The first list found.
    list: Option<usize>,
    /// Every path whose list was found (with `every_list`, each is streamed once).
    found: Vec<bool>,
    every_list: bool,
    /// The level (objects entered) of the list, to know where its `]` returns to.
    elements: u64,
    trailing: bool,
    /// Absolute offset of the current chunk, and of what newlines have been counted up to.
    base: u64,
    counted: usize,
    line: u64,
}

impl<'p> Scanner<'p> {
    fn new(paths: &'p [&'p [&'p str]]) -> Scanner<'p> {
        Scanner {
            paths,
            mode: Mode::Start,
            levels: Vec::new(),
            key: Vec::new(),
            key_long: false,
            key_escape: false,
            skip: Skipper::default(),
            skipping: Skipping::Ignore,
            value_start: 0,
            value_line: 1,
            carry: Vec::new(),
            carried: false,
            too_large: false,
            top: Top::Empty,
            list: None,
            found: vec![false; paths.len()],
            every_list: false,
            elements: 0,
            trailing: false,
            base: 0,
            counted: 0,
            line: 1,
        }
    }

    fn stopped(&self) -> bool {
        self.mode == Mode::Stopped
    }

    fn scanned(&self) -> Scanned {
        Scanned {
            top: self.top,
            list: self.list,
            elements: self.elements,
            bytes: self.base,
            trailing: self.trailing,
        }
    }

    /// The line of byte `at` of the chunk (newlines are counted once, forward).
    fn line_at(&mut self, chunk: &[u8], at: usize) -> u64 {
        if at > self.counted {
            self.line += memchr::memchr_iter(b'\n', &chunk[self.counted..at]).count() as u64;
            self.counted = at;
        }
        self.line
    }

    fn stop(&mut self, chunk: &[u8], at: usize, out: &mut Vec<Out>, message: String) {
        let line = self.line_at(chunk, at);
        out.push(Out::Problem(line, message));
        self.mode = Mode::Stopped;
    }

    /// Scan one chunk; what it completes goes to the sink in document order.
    fn chunk(&mut self, chunk: &[u8], sink: &mut dyn DocSink) {
        let mut out: Vec<Out> = Vec::new();
        // A value completed from the carry (only the first value of a chunk can be).
        let mut done_carry: Vec<u8> = Vec::new();
        self.counted = 0;
        let mut i = 0;
        while i < chunk.len() {
            let b = chunk[i];
            match self.mode {
                Mode::Stopped => break,
                Mode::Skip => {
                    let from = i;
                    match self.skip.feed(&chunk[i..]) {
                        Some(n) => {
                            let end = i + n;
                            let range = if self.carried {
                                self.add_carry(&chunk[from..end]);
                                done_carry = std::mem::take(&mut self.carry);
                                self.carried = false;
                                None
                            } else {
                                Some(((self.value_start - self.base) as usize, end))
                            };
                            self.value_done(range, end, &mut out);
                            i = end;
                        }
                        None => {
                            // The value goes on in the next chunk: keep what there is of it.
                            if !self.carried {
                                self.carried = true;
                                self.carry.clear();
                                let start = (self.value_start - self.base) as usize;
                                self.add_carry(&chunk[start..]);
                            } else {
                                self.add_carry(&chunk[from..]);
                            }
                            i = chunk.len();
                        }
                    }
                    continue;
                }
                _ if matches!(b, b' ' | b'\n' | b'\r' | b'\t') && self.mode != Mode::KeyText => {
                    i += 1;
                    continue;
                }
                Mode::Start => match b {
                    b'[' if self.paths.iter().position(|p| p.is_empty()).is_some() => {
                        self.top = Top::List;
                        self.found(self.paths.iter().position(|p| p.is_empty()), &mut out);
                        self.mode = Mode::List;
                    }
                    b'{' if self.paths.iter().any(|p| !p.is_empty()) => {
                        self.top = Top::Object;
                        self.levels
                            .push((0..self.paths.len()).filter(|&k| !self.paths[k].is_empty()).collect());
                        self.mode = Mode::Key;
                    }
                    _ => {
                        // Not a document whose list we can reach: say what it is, read no further.
                        self.top = match b {
                            b'[' => Top::List,
                            b'{' => Top::Object,
                            _ => Top::Other,
                        };
                        self.mode = Mode::Stopped;
                    }
                },
                Mode::Key | Mode::KeyAfterComma => match b {
                    b'"' => {
                        self.key.clear();
                        self.key_long = false;
                        self.key_escape = false;
                        self.mode = Mode::KeyText;
                    }
                    b'}' if self.mode == Mode::Key => self.close_object(),
                    _ => self.stop(chunk, i, &mut out, format!("expected a key, found {}", shown(b))),
                },
                Mode::KeyText => {
                    if self.key_escape {
                        self.key_escape = false;
                        self.push_key(b);
                    } else if b == b'\\' {
                        self.key_escape = true;
                        self.push_key(b);
                    } else if b == b'"' {
                        self.mode = Mode::Colon;
                    } else {
                        self.push_key(b);
                    }
                }
                Mode::Colon => match b {
                    b':' => self.mode = Mode::KeyValue,
                    _ => self.stop(
                        chunk,
                        i,
                        &mut out,
                        format!("expected ':' after a key, found {}", shown(b)),
                    ),
                },
                Mode::KeyValue => {
                    let level = self.levels.len() - 1;
                    self.unescape_key();
                    let key: &[u8] = if self.key_long { b"" } else { &self.key };
                    let cands: Vec<usize> = self.levels[level]
                        .iter()
                        .copied()
                        .filter(|&k| !self.key_long && self.paths[k][level].as_bytes() == key)
                        .collect();
                    let whole = cands.iter().copied().find(|&k| self.paths[k].len() == level + 1);
                    let open = |k: usize| {
                        if self.every_list {
                            !self.found[k]
                        } else {
                            self.list.is_none()
                        }
                    };
                    if b == b'[' && whole.is_some_and(open) {
                        self.found(whole, &mut out);
                        self.mode = Mode::List;
                    } else if b == b'{' && cands.iter().any(|&k| self.paths[k].len() > level + 1) {
                        self.levels
                            .push(cands.into_iter().filter(|&k| self.paths[k].len() > level + 1).collect());
                        self.mode = Mode::Key;
                    } else {
                        let what = if level == 0 {
                            Skipping::Other(String::from_utf8_lossy(&self.key).into_owned())
                        } else {
                            Skipping::Ignore
                        };
                        self.start_skip(chunk, i, what);
                        continue;
                    }
                }
                Mode::AfterValue => match b {
                    b',' => self.mode = Mode::KeyAfterComma,
                    b'}' => self.close_object(),
                    _ => self.stop(chunk, i, &mut out, format!("expected ',' or '}}', found {}", shown(b))),
                },
                Mode::List | Mode::ListAfterComma => match b {
                    b']' if self.mode == Mode::List => self.close_list(),
                    b']' | b',' | b'}' | b':' => self.stop(
                        chunk,
                        i,
                        &mut out,
                        format!("expected an element of the list, found {}", shown(b)),
                    ),
                    _ => {
                        self.start_skip(chunk, i, Skipping::Element);
                        continue;
                    }
                },
                Mode::ListAfter => match b {
                    b',' => self.mode = Mode::ListAfterComma,
                    b']' => self.close_list(),
                    _ => self.stop(
                        chunk,
                        i,
                        &mut out,
                        format!("expected ',' or ']' in the list, found {}", shown(b)),
                    ),
                },
                Mode::Done => {
                    self.trailing = true;
                    self.stop(
                        chunk,
                        i,
                        &mut out,
                        format!("data after the end of the document ({})", shown(b)),
                    )
                }
            }
            i += 1;
        }
        self.line_at(chunk, chunk.len());
        self.deliver(chunk, &done_carry, out, sink);
        self.base += chunk.len() as u64;
    }

    /// A key written with escapes, as its text (compared and handed on so).
    fn unescape_key(&mut self) {
        if self.key_long || !self.key.contains(&b'\\') {
            return;
        }
        let mut quoted = Vec::with_capacity(self.key.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(&self.key);
        quoted.push(b'"');
        match serde_json::from_slice::<String>(&quoted) {
            Ok(k) => self.key = k.into_bytes(),
            Err(_) => self.key_long = true, // not a valid key: never on a path
        }
    }

    fn push_key(&mut self, b: u8) {
        if self.key.len() < MAX_KEY {
            self.key.push(b);
        } else {
            self.key_long = true;
        }
    }

    fn found(&mut self, path: Option<usize>, out: &mut Vec<Out>) {
        if let Some(p) = path {
            self.list.get_or_insert(p);
            self.found[p] = true;
            out.push(Out::List(p));
        }
    }

    fn close_object(&mut self) {
        self.levels.pop();
        self.mode = if self.levels.is_empty() {
            Mode::Done
        } else {
            Mode::AfterValue
        };
    }

    fn close_list(&mut self) {
        self.mode = if self.levels.is_empty() {
            Mode::Done
        } else {
            Mode::AfterValue
        };
    }

    fn start_skip(&mut self, chunk: &[u8], at: usize, what: Skipping) {
        self.value_line = self.line_at(chunk, at);
        self.value_start = self.base + at as u64;
        self.skip = Skipper::default();
        self.skipping = what;
        self.carried = false;
        self.too_large = false;
        self.mode = Mode::Skip;
    }

    fn limit(&self) -> usize {
        match self.skipping {
            Skipping::Element => MAX_ELEMENT,
            Skipping::Other(_) => MAX_OTHER,
            Skipping::Ignore => 0,
        }
    }

    fn add_carry(&mut self, part: &[u8]) {
        if self.too_large {
            return;
        }
        if self.carry.len() + part.len() > self.limit() {
            self.too_large = true;
            self.carry = Vec::new();
        } else {
            self.carry.extend_from_slice(part);
        }
    }

    /// A skipped value ended at `end` of the chunk: `range` in the chunk, or (None) in the
    /// carry that `chunk` hands over.
    fn value_done(&mut self, range: Option<(usize, usize)>, end: usize, out: &mut Vec<Out>) {
        let len = (self.base + end as u64 - self.value_start) as usize;
        let loc = LineLoc {
            line: self.value_line,
            offset: self.value_start,
            len,
        };
        let too_large = self.too_large || (range.is_some() && len > self.limit());
        let what = std::mem::replace(&mut self.skipping, Skipping::Ignore);
        self.mode = match what {
            Skipping::Element => Mode::ListAfter,
            _ => Mode::AfterValue,
        };
        match what {
            Skipping::Element if too_large => out.push(Out::Problem(
                loc.line,
                format!(
                    "an element of {} MiB, over the {} MiB limit: skipped",
                    len >> 20,
                    MAX_ELEMENT >> 20
                ),
            )),
            Skipping::Element => {
                self.elements += 1;
                out.push(Out::Element(range, loc));
            }
            Skipping::Other(key) if too_large => out.push(Out::Problem(
                loc.line,
                format!(
                    "{key:?}: a value of {} MiB, over the {} MiB limit: not read",
                    len >> 20,
                    MAX_OTHER >> 20
                ),
            )),
            Skipping::Other(key) => out.push(Out::Other(key, range, loc)),
            Skipping::Ignore => {}
        }
        // A top-level scalar value ends the document.
        if self.levels.is_empty() && self.list.is_none() {
            self.mode = Mode::Done;
        }
    }

    fn deliver(&mut self, chunk: &[u8], carry: &[u8], out: Vec<Out>, sink: &mut dyn DocSink) {
        let bytes = |r: &Option<(usize, usize)>| -> &[u8] {
            match r {
                Some((a, b)) => &chunk[*a..*b],
                None => carry,
            }
        };
        let mut batch: Vec<(&[u8], LineLoc)> = Vec::new();
        for o in &out {
            match o {
                Out::Element(r, loc) => {
                    batch.push((bytes(r), *loc));
                    continue;
                }
                _ if !batch.is_empty() => {
                    sink.elements(&batch);
                    batch.clear();
                }
                _ => {}
            }
            match o {
                Out::Other(key, r, loc) => sink.other(key, bytes(r), *loc),
                Out::List(p) => sink.list(*p),
                Out::Problem(line, m) => sink.problem(*line, m.clone()),
                Out::Element(..) => {}
            }
        }
        if !batch.is_empty() {
            sink.elements(&batch);
        }
    }

    /// The end of the stream: a document cut short is said to be.
    fn finish(&mut self, sink: &mut dyn DocSink) {
        let line = self.line;
        match self.mode {
            Mode::Done | Mode::Stopped => {}
            Mode::Start => self.top = Top::Empty,
            Mode::Skip if self.skip.is_scalar() && self.levels.is_empty() && self.list.is_none() => {}
            Mode::Skip if self.skipping == Skipping::Element => sink.problem(
                self.value_line,
                "the document ends inside an element of its list (cut short?); that element is not read".into(),
            ),
            _ => sink.problem(line, "the document ends before it is complete (cut short?)".into()),
        }
    }
}

/// What a chunk completed, in order.
enum Out {
    /// An element: its range in the chunk, or None when it is in the carry.
    Element(Option<(usize, usize)>, LineLoc),
    Other(String, Option<(usize, usize)>, LineLoc),
    List(usize),
    Problem(u64, String),
}

/// A byte for a message: printable ASCII as itself, anything else by its code.
fn shown(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

/// Finds where one JSON value ends, across chunks, following strings and brackets.
#[derive(Default)]
struct Skipper {
    started: bool,
    scalar: bool,
    depth: u64,
    in_str: bool,
    esc: bool,
}

impl Skipper {
    fn is_scalar(&self) -> bool {
        self.scalar
    }

    /// Feed the next bytes of the value (the first call starts at its first byte): the
    /// length of `s` the value takes if it ends here. A scalar ends before the byte that
    /// ends it.
    fn feed(&mut self, s: &[u8]) -> Option<usize> {
        let mut i = 0;
        if !self.started {
            self.started = true;
            match s.first()? {
                b'"' => {
                    self.in_str = true;
                    i = 1;
                }
                b'{' | b'[' => {
                    self.depth = 1;
                    i = 1;
                }
                _ => self.scalar = true,
            }
        }
        if self.scalar {
            return s[i..]
                .iter()
                .position(|b| matches!(b, b',' | b']' | b'}' | b' ' | b'\n' | b'\r' | b'\t'))
                .map(|p| i + p);
        }
        loop {
            if self.in_str {
                if self.esc {
                    if i >= s.len() {
                        return None;
                    }
                    self.esc = false;
                    i += 1;
                }
                match memchr::memchr2(b'"', b'\\', &s[i..]) {
                    None => return None,
                    Some(j) => {
                        i += j + 1;
                        if s[i - 1] == b'\\' {
                            self.esc = true;
                        } else {
                            self.in_str = false;
                            if self.depth == 0 {
                                return Some(i);
                            }
                        }
                    }
                }
            } else {
                loop {
                    let &b = s.get(i)?;
                    i += 1;
                    match b {
                        b'"' => {
                            self.in_str = true;
                            break;
                        }
                        b'{' | b'[' => self.depth += 1,
                        b'}' | b']' => {
                            self.depth -= 1;
                            if self.depth == 0 {
                                return Some(i);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    #[derive(Default, Debug)]
    struct Collect {
        elements: Vec<(Vec<u8>, LineLoc)>,
        others: Vec<(String, Vec<u8>)>,
        lists: Vec<usize>,
        problems: Vec<(u64, String)>,
    }
    impl DocSink for Collect {
        fn elements(&mut self, batch: &[(&[u8], LineLoc)]) {
            self.elements.extend(batch.iter().map(|(b, l)| (b.to_vec(), *l)));
        }
        fn other(&mut self, key: &str, value: &[u8], _: LineLoc) {
            self.others.push((key.to_string(), value.to_vec()));
        }
        fn list(&mut self, path: usize) {
            self.lists.push(path);
        }
        fn problem(&mut self, line: u64, message: String) {
            self.problems.push((line, message));
        }
    }

    fn scan(doc: &[u8], paths: &[&[&str]], chunk: usize) -> (Collect, Scanned) {
        let mut c = Collect::default();
        let d = Document {
            chunk,
            ..Document::new(paths)
        };
        let s = d.read_from(&mut std::io::Cursor::new(doc), &mut c).unwrap();
        (c, s)
    }

    fn values(c: &Collect) -> Vec<Value> {
        c.elements
            .iter()
            .map(|(b, _)| serde_json::from_slice(b).unwrap())
            .collect()
    }

    #[test]
    fn a_top_level_list_gives_its_elements_with_ranges_and_lines() {
        let doc = b"[\n  {\"a\": \"x]\\\"}\"},\n  [1, [2]],\n  \"s\", 3, null\n]\n";
        for chunk in [1, 2, 3, 7, 64, CHUNK] {
            let (c, s) = scan(doc, &[&[]], chunk);
            assert_eq!(
                values(&c),
                vec![
                    json!({"a": "x]\"}"}),
                    json!([1, [2]]),
                    json!("s"),
                    json!(3),
                    json!(null)
                ]
            );
            for (b, loc) in &c.elements {
                assert_eq!(&doc[loc.offset as usize..][..loc.len], &b[..], "chunk {chunk}");
            }
            let lines: Vec<u64> = c.elements.iter().map(|(_, l)| l.line).collect();
            assert_eq!(lines, vec![2, 3, 4, 4, 4], "chunk {chunk}");
            assert!(c.problems.is_empty(), "{:?}", c.problems);
            assert_eq!((s.top, s.list, s.elements), (Top::List, Some(0), 5));
        }
    }

    #[test]
    fn a_list_at_a_key_path_and_the_values_beside_it() {
        let doc = br#"{"name": "t", "trace": {"metadata": {"trace": [9]}, "trace": [{"role": "user"}, {"role": "tool"}]}, "passed": false, "assertions": [{"m": "[{"}]}"#;
        let paths: &[&[&str]] = &[&["trace", "trace"], &["trace", "messages"], &["messages"]];
        for chunk in [1, 5, 4096] {
            let (c, s) = scan(doc, paths, chunk);
            assert_eq!(values(&c), vec![json!({"role": "user"}), json!({"role": "tool"})]);
            assert_eq!(c.lists, vec![0]);
            let others: Vec<(String, Value)> = c
                .others
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::from_slice(v).unwrap()))
                .collect();
            assert_eq!(
                others,
                vec![
                    ("name".into(), json!("t")),
                    ("passed".into(), json!(false)),
                    ("assertions".into(), json!([{"m": "[{"}]))
                ]
            );
            assert!(c.problems.is_empty(), "{:?}", c.problems);
            assert_eq!(s.top, Top::Object);
        }
    }

    #[test]
    fn every_list_streams_each_path_once_in_document_order() {
        let doc = br#"{"env": "e", "history": [{"h": 1}], "trajectory": [1, 2], "history": [3], "info": {"x": [4]}}"#;
        let paths: &[&[&str]] = &[&["trajectory"], &["history"]];
        for chunk in [1, 3, 4096] {
            let mut c = Collect::default();
            let d = Document {
                chunk,
                ..Document::every_list(paths)
            };
            let s = d.read_from(&mut std::io::Cursor::new(&doc[..]), &mut c).unwrap();
            assert_eq!(values(&c), vec![json!({"h": 1}), json!(1), json!(2)], "chunk {chunk}");
            assert_eq!(c.lists, vec![1, 0]);
            // A list found again is a value beside the lists, as with one list.
            let keys: Vec<&str> = c.others.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(keys, ["env", "history", "info"]);
            assert_eq!((s.list, s.elements), (Some(1), 3));
            assert!(c.problems.is_empty(), "{:?}", c.problems);
        }
        // Without it, the first list only.
        let (c, _) = scan(doc, paths, 4096);
        assert_eq!(values(&c), vec![json!({"h": 1})]);
        assert_eq!(c.lists, vec![1]);
    }

    #[test]
    fn documents_without_the_list_say_what_they_are() {
        let (c, s) = scan(b"  ", &[&[]], 8);
        assert_eq!((s.top, s.list), (Top::Empty, None));
        assert!(c.problems.is_empty());
        let (_, s) = scan(b"{\"a\": 1}", &[&[]], 8);
        assert_eq!((s.top, s.list), (Top::Object, None));
        let (_, s) = scan(b"[1]", &[&["x"]], 8);
        assert_eq!((s.top, s.list), (Top::List, None));
        let (_, s) = scan(b"\"text\"", &[&[]], 8);
        assert_eq!(s.top, Top::Other);
        let (c, s) = scan(b"{\"x\": {\"y\": 1}, \"z\": [1]}", &[&["x", "y"]], 3);
        assert_eq!((s.top, s.list), (Top::Object, None));
        assert!(c.problems.is_empty(), "{:?}", c.problems);
    }

    #[test]
    fn a_cut_or_broken_document_is_reported_and_what_came_before_is_kept() {
        let (c, _) = scan(b"[{\"a\": 1}, {\"b\": \"cut", &[&[]], 4);
        assert_eq!(values(&c), vec![json!({"a": 1})]);
        assert_eq!(c.problems.len(), 1);
        assert!(c.problems[0].1.contains("cut short"), "{:?}", c.problems);
        let (c, _) = scan(b"[1, 2\n, 3 4]", &[&[]], 4);
        assert_eq!(values(&c), vec![json!(1), json!(2), json!(3)]);
        assert_eq!(c.problems[0].0, 2, "the line of the problem");
        let (c, _) = scan(b"[1] x", &[&[]], 4);
        assert!(c.problems[0].1.contains("after the end"), "{:?}", c.problems);
        let (c, _) = scan(b"[1, , 2]", &[&[]], 4);
        assert_eq!(c.problems.len(), 1);
        let (c, _) = scan(b"{\"a\": [1]", &[&["a"]], 4);
        assert_eq!(values(&c), vec![json!(1)]);
        assert!(c.problems[0].1.contains("cut short"));
    }

    #[test]
    fn an_element_over_the_limit_is_skipped_with_a_problem() {
        let big = format!("[\"{}\", 1]", "x".repeat(MAX_ELEMENT));
        let (c, s) = scan(big.as_bytes(), &[&[]], 1 << 20);
        assert!(values(&c) == vec![json!(1)], "the large element is not kept");
        assert_eq!(s.elements, 1);
        assert!(c.problems[0].1.contains("limit"), "{:?}", c.problems);
    }

    /// JSON values with strings full of what the scan must not take for structure.
    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "[\\[\\]{}\",:\\\\ a\n\tü✓\u{1}]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 64, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec(("[\\[\\]{}\"a-z\\\\]{0,5}", inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The elements found are the list's elements as serde_json reads the whole document,
        /// whatever the chunk size cuts, compact or pretty.
        #[test]
        fn elements_equal_serde_json_on_the_whole_document(
            items in prop::collection::vec(arb_value(), 0..8),
            before in prop::collection::vec(("[a-z\\[\\]\"{}]{0,4}", arb_value()), 0..3),
            pretty in any::<bool>(),
            nested in any::<bool>(),
            chunk in 1usize..40,
        ) {
            let list = Value::Array(items.clone());
            let doc = if nested {
                // The list at trace.trace, other keys around it.
                let mut top = serde_json::Map::new();
                for (k, v) in &before {
                    if k != "trace" {
                        top.insert(k.clone(), v.clone());
                    }
                }
                top.insert("trace".into(), json!({"meta": {"trace": [1, 2]}, "trace": list}));
                Value::Object(top)
            } else {
                list
            };
            let text = if pretty { serde_json::to_vec_pretty(&doc).unwrap() } else { serde_json::to_vec(&doc).unwrap() };
            let paths: &[&[&str]] = if nested { &[&["trace", "trace"]] } else { &[&[]] };
            let (c, s) = scan(&text, paths, chunk);
            prop_assert!(c.problems.is_empty(), "{:?}", c.problems);
            // serde_json on the whole document (not `items`: floats may not round-trip).
            let whole: Value = serde_json::from_slice(&text).unwrap();
            let want = if nested { whole["trace"]["trace"].clone() } else { whole };
            prop_assert_eq!(Value::Array(values(&c)), want);
            prop_assert_eq!(values(&c).len(), items.len());
            prop_assert_eq!(s.list, Some(0));
            for (b, loc) in &c.elements {
                prop_assert_eq!(&text[loc.offset as usize..][..loc.len], &b[..]);
                let line = 1 + text[..loc.offset as usize].iter().filter(|&&b| b == b'\n').count() as u64;
                prop_assert_eq!(loc.line, line);
            }
            if nested {
                let want: Vec<String> = doc.as_object().unwrap().keys().filter(|k| *k != "trace").cloned().collect();
                let mut got: Vec<String> = c.others.iter().map(|(k, _)| k.clone()).collect();
                got.sort();
                let mut want = want;
                want.sort();
                prop_assert_eq!(got, want);
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300), chunk in 1usize..20) {
            let _ = scan(&bytes, &[&[], &["a", "b"]], chunk);
        }
    }
}
