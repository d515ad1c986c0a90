//! The detail of one event as a document of styled lines: header, marker badges, error with
//! stack, arguments / result / prompt / response as pretty-printed JSON, extra fields, or the
//! raw source record(s). Built once when the selection changes; rendering only slices it.
//! JSON values are not printed ahead: [`lazy`] indexes them and makes the lines asked for, so
//! a document of millions of lines is whole (no cap) and costs a few bytes a line.
//! Every string from the trace is sanitized here, before it can reach a terminal.

mod lazy;
pub use lazy::Part;

use crate::formats;
use crate::model::{EventKind, Marker, Payload, Status, Trace, format_duration, format_ts, markers_in};
use crate::sanitize;
use serde_json::Value;

/// Semantic token classes; the theme gives them colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tok {
    Text,
    Dim,
    Heading,
    Section,
    Key,
    Str,
    Num,
    Bool,
    Null,
    Punct,
    Error,
    Ok,
    Pending,
    Badge,
}

#[derive(Clone, Debug, Default)]
pub struct Line {
    pub spans: Vec<(Tok, String)>,
    /// What `y` copies on this line (index into `Doc::copies`).
    pub copy: Option<u32>,
    /// Cells before the value: wrapped continuation rows start under it.
    pub hang: u16,
}

impl Line {
    fn push(&mut self, t: Tok, s: impl Into<String>) -> &mut Self {
        self.spans.push((t, s.into()));
        self
    }
    /// Display width in terminal cells.
    pub fn width(&self) -> usize {
        self.spans.iter().map(|(_, s)| span_width(s)).sum()
    }
}

/// Cells of a span.
fn span_width(s: &str) -> usize {
    // A cell a byte (checked a byte at a time, vectorized): a 50 MB value is not decoded
    // character by character to measure it.
    if printable_ascii(s) {
        s.len()
    } else {
        unicode_width::UnicodeWidthStr::width(s)
    }
}

/// A value `y` can copy: a JSON value inside one of the document's roots.
#[derive(Clone, Debug)]
pub struct CopyTarget {
    pub root: u32,
    /// RFC 6901 pointer into the root.
    pub pointer: String,
    /// Human JSON path (`$.input.query[0]`), what `Y` copies.
    pub path: String,
}

#[derive(Clone, Debug, Default)]
pub struct Doc {
    /// The lines built ahead (header, text, sections' titles); the JSON values' lines are
    /// made on demand by `parts`, between them. [`Doc::line`] reads both by line number.
    pub lines: Vec<Line>,
    /// The JSON values, in line order.
    pub parts: Vec<Part>,
    pub copies: Vec<CopyTarget>,
    pub roots: Vec<Value>,
    pub markers: Vec<Marker>,
    /// The JSON objects and arrays of more than one line, in the order they open (so by
    /// `open`): what can be folded.
    pub nodes: Vec<Node>,
    /// Per node: folded (shown as its opening line and a size, `{…} 12 keys`).
    pub folded: Vec<bool>,
    /// Roots whose (long) string was moved into a line rather than copied: (root, index in
    /// `lines`); the string is that line's [`MOVED_SPAN`] span.
    pub moved: Vec<(u32, u32)>,
}

/// The span of a moved string's line that holds the string (after the indent and the quote).
pub const MOVED_SPAN: usize = 2;
/// Strings at least this long are moved into their line, not copied, and lines at least this
/// long are laid out by arithmetic (see [`Rows`]).
pub const BIG: usize = 1 << 20;

/// Printable ASCII only: a cell a byte, nothing to escape.
pub fn printable_ascii(s: &str) -> bool {
    s.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// A JSON object or array spread over lines `open..=close`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    pub open: u32,
    pub close: u32,
    /// Nesting below its section's root (the root is 0).
    pub depth: u16,
    pub object: bool,
    /// Keys or items.
    pub len: u32,
    /// The enclosing node, or `NO_NODE`.
    pub parent: u32,
}

pub const NO_NODE: u32 = u32::MAX;

/// Where a line of a document is: in `lines`, or line `k` of part `p`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    Eager(usize),
    Lazy(usize, usize),
}

/// Bytes of a whole-document source shown in the raw view.
const MAX_RAW: usize = 1 << 20;

impl Doc {
    fn push(&mut self, l: Line) {
        self.lines.push(l);
    }
    fn blank(&mut self) {
        self.push(Line::default());
    }
    fn section(&mut self, title: &str) {
        let mut l = Line::default();
        l.push(Tok::Section, format!("── {title} "));
        self.push(l);
    }

    /// Lines in the lazy parts.
    fn lazy_lines(&self) -> usize {
        self.parts.last().map_or(0, |p| (p.before + p.len) as usize)
    }

    /// Lines in the document.
    pub fn len(&self) -> usize {
        self.lines.len() + self.lazy_lines()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn locate(&self, i: usize) -> Loc {
        match self.parts.partition_point(|p| p.at as usize <= i).checked_sub(1) {
            None => Loc::Eager(i),
            Some(pi) => {
                let p = &self.parts[pi];
                let k = i - p.at as usize;
                if k < p.len as usize {
                    Loc::Lazy(pi, k)
                } else {
                    Loc::Eager(i - (p.before + p.len) as usize)
                }
            }
        }
    }

    /// The value a part shows.
    fn part_value(&self, p: &Part) -> Option<&Value> {
        self.roots.get(p.root as usize)?.pointer(&p.ptr)
    }

    /// Line `i` (made now, when a JSON value's).
    pub fn get(&self, i: usize) -> Option<std::borrow::Cow<'_, Line>> {
        match self.locate(i) {
            Loc::Eager(e) => self.lines.get(e).map(std::borrow::Cow::Borrowed),
            Loc::Lazy(pi, k) => {
                let p = &self.parts[pi];
                p.line(self.part_value(p)?, k)
            }
        }
    }

    /// Line `i`, or an empty one past the end.
    pub fn line(&self, i: usize) -> std::borrow::Cow<'_, Line> {
        self.get(i).unwrap_or_default()
    }

    /// Every line in order (a JSON value's made as it comes).
    pub fn all_lines(&self) -> impl Iterator<Item = std::borrow::Cow<'_, Line>> {
        (0..self.len()).map(|i| self.line(i))
    }

    /// Cells of line `i`, without making a JSON value's line.
    pub fn width_of(&self, i: usize) -> usize {
        match self.locate(i) {
            Loc::Eager(e) => self.lines.get(e).map_or(0, Line::width),
            Loc::Lazy(pi, k) => self.parts[pi].width(k),
        }
    }

    /// Show `v` (the value at `ptr` in root `root`, path `path`) from the next line on,
    /// made line by line on demand.
    fn lazy(&mut self, root: u32, ptr: &str, path: &str, key: Option<&str>, indent: usize) {
        let (at, before) = (self.len() as u32, self.lazy_lines() as u32);
        let Some(v) = self.roots.get(root as usize).and_then(|r| r.pointer(ptr)) else {
            return;
        };
        let p = lazy::build(
            v,
            at,
            before,
            (root, ptr.to_string(), path.to_string()),
            key.map(str::to_string),
            indent,
            &mut self.nodes,
        );
        self.parts.push(p);
    }

    /// Append `src` below this document: its lines, values, folds and copy targets.
    pub fn append(&mut self, src: Doc) {
        let (roots, copies) = (self.roots.len() as u32, self.copies.len() as u32);
        let (at, before, nodes) = (self.len() as u32, self.lazy_lines() as u32, self.nodes.len() as u32);
        let eager = self.lines.len() as u32;
        self.roots.extend(src.roots);
        self.moved
            .extend(src.moved.iter().map(|&(r, l)| (r + roots, l + eager)));
        self.copies.extend(src.copies.into_iter().map(|mut c| {
            c.root += roots;
            c
        }));
        self.lines.extend(src.lines.into_iter().map(|mut l| {
            l.copy = l.copy.map(|c| c + copies);
            l
        }));
        self.parts.extend(src.parts.into_iter().map(|mut p| {
            (p.at, p.before, p.root) = (p.at + at, p.before + before, p.root + roots);
            p
        }));
        self.nodes.extend(src.nodes.into_iter().map(|mut n| {
            (n.open, n.close) = (n.open + at, n.close + at);
            if n.parent != NO_NODE {
                n.parent += nodes;
            }
            n
        }));
        self.folded.resize(nodes as usize, false);
        self.folded.extend(src.folded);
        self.folded.resize(self.nodes.len(), false);
        self.markers.extend(src.markers);
    }

    fn add_root(&mut self, v: Value) -> u32 {
        self.roots.push(v);
        (self.roots.len() - 1) as u32
    }
    fn copy(&mut self, root: u32, pointer: String, path: String) -> u32 {
        self.copies.push(CopyTarget { root, pointer, path });
        (self.copies.len() - 1) as u32
    }

    /// The text `y` copies for a line: strings as they are, other values as pretty JSON.
    pub fn copy_value(&self, line: usize) -> Option<String> {
        let v = match self.locate(line) {
            Loc::Lazy(pi, k) => {
                let p = &self.parts[pi];
                p.value_at(self.part_value(p)?, k)?.0
            }
            Loc::Eager(e) => {
                let c = &self.copies[self.lines.get(e)?.copy? as usize];
                if let Some(&(_, at)) = self.moved.iter().find(|(r, _)| *r == c.root) {
                    return Some(self.lines.get(at as usize)?.spans.get(MOVED_SPAN)?.1.clone());
                }
                self.roots.get(c.root as usize)?.pointer(&c.pointer)?
            }
        };
        Some(match v {
            Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        })
    }

    /// The whole document as text, as shown (what `o` opens off a value).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for i in 0..self.len() {
            for (_, s) in &self.line(i).spans {
                out.push_str(s);
            }
            out.push('\n');
        }
        out
    }

    /// The node that opens on `line`.
    pub fn node_at(&self, line: usize) -> Option<usize> {
        let i = self.nodes.partition_point(|n| (n.open as usize) < line);
        (self.nodes.get(i)?.open as usize == line).then_some(i)
    }

    /// The innermost node whose lines hold `line` (its own opening line included).
    pub fn node_around(&self, line: usize) -> Option<usize> {
        let mut i = self.nodes.partition_point(|n| n.open as usize <= line).checked_sub(1)?;
        loop {
            let n = &self.nodes[i];
            if n.close as usize >= line {
                return Some(i);
            }
            if n.parent == NO_NODE {
                return None;
            }
            i = n.parent as usize;
        }
    }

    pub fn is_folded(&self, node: usize) -> bool {
        self.folded.get(node).copied().unwrap_or(false)
    }

    /// Fold or unfold a node.
    pub fn set_folded(&mut self, node: usize, on: bool) {
        self.folded.resize(self.nodes.len(), false);
        if let Some(f) = self.folded.get_mut(node) {
            *f = on;
        }
    }

    /// Whether `line` is hidden inside a folded node.
    pub fn hidden(&self, line: usize) -> bool {
        let mut at = self.node_around(line);
        while let Some(i) = at {
            let n = &self.nodes[i];
            if self.is_folded(i) && line > n.open as usize {
                return true;
            }
            at = (n.parent != NO_NODE).then_some(n.parent as usize);
        }
        false
    }

    /// Unfold every node that hides `line`.
    pub fn reveal(&mut self, line: usize) {
        let mut at = self.node_around(line);
        while let Some(i) = at {
            let n = self.nodes[i];
            if line > n.open as usize
                && let Some(f) = self.folded.get_mut(i)
            {
                *f = false;
            }
            at = (n.parent != NO_NODE).then_some(n.parent as usize);
        }
    }

    /// What a folded node shows after its opening line: `…} 12 keys,`.
    pub fn fold_tail(&self, node: usize) -> Vec<(Tok, String)> {
        let n = &self.nodes[node];
        let close = match self.locate(n.close as usize) {
            Loc::Lazy(pi, k) => self.parts[pi].closing(k, n.object).unwrap_or(""),
            Loc::Eager(e) => self
                .lines
                .get(e)
                .and_then(|l| l.spans.last())
                .map(|(_, s)| s.as_str())
                .unwrap_or(""),
        };
        let what = match (n.object, n.len) {
            (true, 1) => "1 key".to_string(),
            (true, k) => format!("{} keys", grouped(k as usize)),
            (false, 1) => "1 item".to_string(),
            (false, k) => format!("{} items", grouped(k as usize)),
        };
        // `{…} 2 keys,`: the size before the comma that separates it from what follows.
        let (bracket, comma) = match close.strip_suffix(',') {
            Some(b) => (b, ","),
            None => (close, ""),
        };
        vec![
            (Tok::Punct, format!("…{bracket}")),
            (Tok::Dim, format!(" {what}")),
            (Tok::Punct, comma.to_string()),
        ]
    }

    /// Fold every node at `depth` or deeper (and unfold those above): the document down to a
    /// depth.
    pub fn fold_below(&mut self, depth: u16) {
        self.folded.resize(self.nodes.len(), false);
        for (f, n) in self.folded.iter_mut().zip(&self.nodes) {
            *f = n.depth >= depth;
        }
    }

    pub fn unfold_all(&mut self) {
        self.folded.iter_mut().for_each(|f| *f = false);
    }

    pub fn copy_path(&self, line: usize) -> Option<String> {
        let p = match self.locate(line) {
            Loc::Lazy(pi, k) => {
                let p = &self.parts[pi];
                p.value_at(self.part_value(p)?, k)?.2
            }
            Loc::Eager(e) => self.copies[self.lines.get(e)?.copy? as usize].path.clone(),
        };
        // The whole source record: jq's identity.
        Some(if p.is_empty() { ".".into() } else { p })
    }
}

/// Where each screen row of a line starts: (span, byte offset in that span). The first row
/// starts at (0, 0).
pub type Breaks = Vec<(u32, u32)>;

/// The row starts of a line wrapped at `width` cells: at the last space that leaves a word
/// on the row, else (JSON, paths, hashes, base64) at the character. Continuation rows are
/// `hang` cells narrower (the renderer indents them). One pass, no allocation per character:
/// a 50 MB line is broken once per width.
pub fn breaks(line: &Line, width: usize, hang: usize) -> Breaks {
    use unicode_width::UnicodeWidthChar;
    let width = width.max(1);
    let mut br = Breaker::new(width, hang);
    for (si, (_, s)) in line.spans.iter().enumerate() {
        let bytes = s.as_bytes();
        if bytes.iter().all(|&c| (0x20..0x7f).contains(&c)) {
            // Printable ASCII (most long values: JSON, base64, logs): a cell a byte, and the
            // stretches between spaces that fit on the row are taken whole.
            let mut bi = 0;
            while bi < bytes.len() {
                if bytes[bi] == b' ' {
                    br.step(si, bi, true, 1);
                    bi += 1;
                    continue;
                }
                let run = memchr::memchr(b' ', &bytes[bi..]).unwrap_or(bytes.len() - bi);
                let fits = br.cap.saturating_sub(br.used).min(run);
                br.word(fits);
                bi += fits;
                if fits < run {
                    // The byte that does not fit: the row breaks before it.
                    br.step(si, bi, false, 1);
                    bi += 1;
                }
            }
        } else {
            for (bi, c) in s.char_indices() {
                br.step(si, bi, c == ' ', c.width().unwrap_or(0));
            }
        }
    }
    br.starts
}

/// The state of [`breaks`] along a line.
struct Breaker {
    starts: Breaks,
    /// Cells of the current row, and how many are used.
    cap: usize,
    used: usize,
    width: usize,
    hang: usize,
    /// The start of the row after the last space that follows a word, and what comes after it.
    after_space: Option<(u32, u32)>,
    since_w: usize,
    since_n: usize,
    seen_word: bool,
}

impl Breaker {
    fn new(width: usize, hang: usize) -> Breaker {
        Breaker {
            starts: vec![(0, 0)],
            cap: width,
            width,
            hang: effective_hang(hang, width),
            used: 0,
            after_space: None,
            since_w: 0,
            since_n: 0,
            seen_word: false,
        }
    }
    fn step(&mut self, si: usize, bi: usize, space: bool, w: usize) {
        while self.used + w > self.cap && self.used > 0 {
            match self.after_space.take() {
                Some(at) => {
                    self.starts.push(at);
                    self.used = self.since_w;
                    self.seen_word = self.since_n > 0;
                }
                None => {
                    self.starts.push((si as u32, bi as u32));
                    self.used = 0;
                    self.seen_word = false;
                }
            }
            self.since_w = 0;
            self.since_n = 0;
            self.cap = self.width - self.hang;
        }
        if space {
            if self.seen_word {
                self.after_space = Some((si as u32, (bi + 1) as u32));
                self.since_w = 0;
                self.since_n = 0;
            } else {
                self.since_w += w;
                self.since_n += 1;
            }
        } else {
            self.seen_word = true;
            self.since_w += w;
            self.since_n += 1;
        }
        self.used += w;
    }

    /// `n` one-cell characters, no space among them, that fit on the row: what `n` calls of
    /// `step` would do.
    fn word(&mut self, n: usize) {
        if n > 0 {
            self.seen_word = true;
            self.since_w += n;
            self.since_n += n;
            self.used += n;
        }
    }
}

/// A hang wider than half the pane would leave too little room: continuation rows then use
/// the whole width.
fn effective_hang(hang: usize, width: usize) -> usize {
    if hang * 2 <= width { hang } else { 0 }
}

/// The indentation of a line's continuation rows at `width`.
pub fn hang_at(line: &Line, width: usize) -> usize {
    effective_hang(line.hang as usize, width.max(1))
}

/// Row `k` of a line broken at `b`, as styled pieces.
pub fn row<'a>(line: &'a Line, b: &[(u32, u32)], k: usize) -> Vec<(Tok, &'a str)> {
    row_ranges(line, b, k)
        .into_iter()
        .map(|(si, from, to)| (line.spans[si].0, &line.spans[si].1[from..to]))
        .collect()
}

/// Part of a row: (span, start byte, end byte) in its line.
pub type Piece = (usize, usize, usize);

/// Row `k` of a line broken at `b`, as (span, byte range in it).
pub fn row_ranges(line: &Line, b: &[(u32, u32)], k: usize) -> Vec<Piece> {
    let (s0, b0) = b[k];
    let end = b.get(k + 1).copied();
    let mut out = Vec::new();
    for si in s0 as usize..line.spans.len() {
        let text = &line.spans[si].1;
        let from = if si == s0 as usize { b0 as usize } else { 0 };
        let to = match end {
            Some((es, eb)) if es as usize == si => eb as usize,
            Some((es, _)) if (es as usize) < si => break,
            _ => text.len(),
        };
        if from < to {
            out.push((si, from, to));
        }
        if end.is_some_and(|(es, _)| es as usize == si) {
            break;
        }
    }
    out
}

/// The part of a row from cell `from` on, at most `width` cells: what a pane scrolled
/// sideways shows. Reads no further into a long line than the window's end.
pub fn window<'a, T: Copy>(pieces: &[(T, &'a str)], from: usize, width: usize) -> Vec<(T, &'a str)> {
    use unicode_width::UnicodeWidthChar;
    let mut out = Vec::new();
    let (mut at, end) = (0usize, from + width);
    for &(tok, s) in pieces {
        if at >= end {
            break;
        }
        let (mut a, mut b) = (None, s.len());
        for (i, c) in s.char_indices() {
            let w = c.width().unwrap_or(0);
            if at >= from && a.is_none() {
                a = Some(i);
            }
            if at + w > end {
                b = i;
                at = end;
                break;
            }
            at += w;
        }
        if let Some(a) = a
            && a < b
        {
            out.push((tok, &s[a..b]));
        }
    }
    out
}

/// Split a line into screen rows of at most `width` cells (see [`breaks`]).
pub fn wrap(line: &Line, width: usize) -> Vec<Vec<(Tok, &str)>> {
    let b = breaks(line, width, 0);
    (0..b.len()).map(|k| row(line, &b, k)).collect()
}

/// Screen rows a line takes.
pub fn rows_of(line: &Line, width: usize, wrap: bool) -> usize {
    if !wrap || line.width() <= width {
        return 1;
    }
    breaks(line, width, 0).len()
}

/// A document laid out in screen rows at one width: computed once per width (and per
/// document), so moving and drawing touch only the rows on screen.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    pub width: usize,
    pub wrap: bool,
    /// The first row of each line, and the total at the end (`lines + 1` entries).
    first: Vec<usize>,
    /// Row starts of the lines that take more than one row.
    breaks: std::collections::HashMap<u32, Breaks>,
    /// The long lines laid out by arithmetic instead.
    even: std::collections::HashMap<u32, Even>,
    /// With wrap off: the widest line's cells (how far `→` can go).
    pub max_width: usize,
}

impl Rows {
    pub fn new(doc: &Doc, width: usize, wrap: bool) -> Rows {
        let lines = doc.len();
        let mut first = Vec::with_capacity(lines + 1);
        let mut map = std::collections::HashMap::new();
        let mut even = std::collections::HashMap::new();
        let mut n = 0;
        let mut max_width = 0;
        let folds = doc.folded.iter().any(|&f| f);
        // Nodes open in line order: the next one that may open at or after the line.
        let mut next = 0usize;
        let mut i = 0usize;
        while i < lines {
            first.push(n);
            if folds {
                while doc.nodes.get(next).is_some_and(|x| (x.open as usize) < i) {
                    next += 1;
                }
                if doc.nodes.get(next).is_some_and(|x| x.open as usize == i) && doc.is_folded(next) {
                    // A folded node: its opening line and size on one row, its other lines none.
                    n += 1;
                    if !wrap {
                        let tail: usize = doc
                            .fold_tail(next)
                            .iter()
                            .map(|(_, s)| unicode_width::UnicodeWidthStr::width(s.as_str()))
                            .sum();
                        max_width = max_width.max(doc.width_of(i) + tail);
                    }
                    let close = (doc.nodes[next].close as usize).min(lines - 1);
                    for _ in i + 1..=close {
                        first.push(n);
                    }
                    i = close.max(i) + 1;
                    continue;
                }
            }
            let lazy = match doc.locate(i) {
                Loc::Lazy(pi, k) => Some(&doc.parts[pi]).zip(Some(k)),
                Loc::Eager(_) => None,
            };
            if let Some((p, k)) = lazy {
                // A JSON value's line: its width is indexed; only a line wider than the pane
                // is made, to be broken into rows.
                let w = p.width(k);
                if !wrap {
                    max_width = max_width.max(w);
                }
                if !wrap || w <= width {
                    n += 1;
                    i += 1;
                    continue;
                }
            }
            let l = doc.line(i);
            if !wrap {
                max_width = max_width.max(l.width());
            }
            // A cell takes at least a byte: a line no longer in bytes than the pane fits.
            let bytes: usize = l.spans.iter().map(|(_, s)| s.len()).sum();
            if wrap && bytes >= BIG && l.spans.iter().all(|(_, s)| printable_ascii(s)) {
                let e = Even::new(&l, width);
                n += e.rows;
                even.insert(i as u32, e);
                i += 1;
                continue;
            }
            let b = if wrap && bytes > width {
                breaks(&l, width, l.hang as usize)
            } else {
                Vec::new()
            };
            if b.len() > 1 {
                n += b.len();
                map.insert(i as u32, b);
            } else {
                n += 1;
            }
            i += 1;
        }
        first.push(n);
        Rows {
            width,
            wrap,
            first,
            breaks: map,
            even,
            max_width,
        }
    }
    pub fn total(&self) -> usize {
        self.first.last().copied().unwrap_or(0)
    }
    /// The line a row belongs to, and the row's place in it.
    pub fn locate(&self, row: usize) -> (usize, usize) {
        let line = self.first.partition_point(|&f| f <= row).saturating_sub(1);
        (line, row - self.first.get(line).copied().unwrap_or(0))
    }
    /// The first row of a line.
    pub fn row_of(&self, line: usize) -> usize {
        self.first.get(line).copied().unwrap_or_else(|| self.total())
    }
    /// Rows a line takes.
    pub fn rows_in(&self, line: usize) -> usize {
        self.row_of(line + 1) - self.row_of(line)
    }
    /// The pieces of a screen row, and the cells it is indented by (a wrapped line's
    /// continuation rows start under its value).
    pub fn row(&self, doc: &Doc, row: usize) -> Option<(Vec<(Tok, String)>, usize)> {
        let (li, ranges, indent) = self.ranges(doc, row)?;
        let line = doc.line(li);
        let pieces = ranges
            .into_iter()
            .map(|(si, a, b)| (line.spans[si].0, line.spans[si].1[a..b].to_string()))
            .collect();
        Some((pieces, indent))
    }
    /// A screen row as its line, the (span, byte range) pieces of it, and its indent.
    pub fn ranges(&self, doc: &Doc, row: usize) -> Option<(usize, Vec<Piece>, usize)> {
        if row >= self.total() {
            return None;
        }
        let (li, k) = self.locate(row);
        let line = doc.get(li)?;
        let line = &*line;
        if let Some(e) = self.even.get(&(li as u32)) {
            return Some((li, e.ranges(line, k), if k > 0 { e.hang } else { 0 }));
        }
        Some(match self.breaks.get(&(li as u32)) {
            Some(b) => (
                li,
                row_ranges(line, b, k),
                if k > 0 { hang_at(line, self.width) } else { 0 },
            ),
            None => (
                li,
                line.spans
                    .iter()
                    .enumerate()
                    .map(|(i, (_, s))| (i, 0, s.len()))
                    .collect(),
                0,
            ),
        })
    }
    /// The row that shows byte `byte` of span `span` of line `line`.
    pub fn row_at(&self, line: usize, span: usize, byte: usize) -> usize {
        let base = self.row_of(line);
        if let Some(e) = self.even.get(&(line as u32)) {
            return base + e.row_at(span, byte);
        }
        match self.breaks.get(&(line as u32)) {
            Some(b) => {
                let k = b.partition_point(|&(s, o)| (s as usize, o as usize) <= (span, byte));
                base + k.saturating_sub(1)
            }
            None => base,
        }
    }
}

/// A long line of printable ASCII (a cell a byte) laid out by arithmetic: rows cut at
/// characters, the first `width` cells, the others `width - hang` (they are indented). So a
/// 50 MB value is laid out in no time and holds nothing per row; spaces are not looked for
/// (a value this long is rarely prose).
#[derive(Clone, Debug)]
struct Even {
    /// Each span's end as an offset into the line.
    ends: Vec<usize>,
    first: usize,
    rest: usize,
    hang: usize,
    rows: usize,
}

impl Even {
    fn new(line: &Line, width: usize) -> Even {
        let width = width.max(1);
        let hang = hang_at(line, width);
        let ends: Vec<usize> = line
            .spans
            .iter()
            .scan(0, |at, (_, s)| {
                *at += s.len();
                Some(*at)
            })
            .collect();
        let total = ends.last().copied().unwrap_or(0);
        let rest = (width - hang).max(1);
        let rows = if total <= width {
            1
        } else {
            1 + (total - width).div_ceil(rest)
        };
        Even {
            ends,
            first: width,
            rest,
            hang,
            rows,
        }
    }
    /// Where row `k` starts in the line.
    fn start(&self, k: usize) -> usize {
        let total = self.ends.last().copied().unwrap_or(0);
        if k == 0 {
            0
        } else {
            (self.first + (k - 1) * self.rest).min(total)
        }
    }
    fn ranges(&self, line: &Line, k: usize) -> Vec<Piece> {
        let (a, b) = (self.start(k), self.start(k + 1));
        let mut out = Vec::new();
        let mut from = 0;
        for (si, &end) in self.ends.iter().enumerate() {
            let (x, y) = (a.max(from), b.min(end));
            if x < y {
                out.push((si, x - from, y - from));
            }
            from = end;
        }
        // An empty line still has a row: its first span, empty.
        if out.is_empty() && !line.spans.is_empty() && k == 0 {
            out.push((0, 0, 0));
        }
        out
    }
    /// The row (within the line) that shows byte `byte` of span `span`.
    fn row_at(&self, span: usize, byte: usize) -> usize {
        let from = span.checked_sub(1).and_then(|s| self.ends.get(s)).copied().unwrap_or(0);
        let at = from + byte;
        let k = if at < self.first {
            0
        } else {
            1 + (at - self.first) / self.rest
        };
        k.min(self.rows - 1)
    }
}

/// A match of a document search: bytes `start..end` of span `span` of line `line`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Hit {
    pub line: u32,
    pub span: u32,
    pub start: u32,
    pub end: u32,
}

/// Smart case, as vim's `smartcase` and less's `-i`: a query with no capital letter
/// ignores case.
pub fn ignores_case(query: &str) -> bool {
    !query.chars().any(char::is_uppercase)
}

/// Every match of `query` in the document's text, as shown (sanitized), in order. Matches
/// do not cross from one span to the next.
pub fn search(doc: &Doc, query: &str) -> Vec<Hit> {
    let mut out = Vec::new();
    if query.is_empty() {
        return out;
    }
    let fold = ignores_case(query);
    let lower = query.to_lowercase();
    let finder = memchr::memmem::Finder::new(query.as_bytes());
    let mut span = |li: usize, si: usize, text: &str| {
        let mut push = |a: usize, b: usize| {
            out.push(Hit {
                line: li as u32,
                span: si as u32,
                start: a as u32,
                end: b as u32,
            })
        };
        if !fold {
            for a in finder.find_iter(text.as_bytes()) {
                push(a, a + query.len());
            }
        } else if lower.is_ascii() {
            find_ascii_ci(text.as_bytes(), lower.as_bytes(), &mut push);
        } else {
            find_unicode_ci(text, &lower, &mut push);
        }
    };
    // The lines built ahead, and between them the JSON values, walked whole in line order.
    let eager = |span: &mut dyn FnMut(usize, usize, &str), from: usize, to: usize, at: usize| {
        for (k, l) in doc.lines.iter().enumerate().take(to).skip(from) {
            for (si, (_, text)) in l.spans.iter().enumerate() {
                span(at + k - from, si, text);
            }
        }
    };
    let mut e = 0;
    for p in &doc.parts {
        let to = (p.at - p.before) as usize;
        eager(&mut span, e, to, e + p.before as usize);
        e = to;
        if let Some(v) = doc.part_value(p) {
            let at = p.at as usize;
            p.each_span(v, &mut |k, si, text| span(at + k, si, text));
        }
    }
    let lazy = doc.lazy_lines();
    eager(&mut span, e, doc.lines.len(), e + lazy);
    out
}

/// Case-insensitive search of an ASCII needle (lower case): candidates are found by the
/// first byte in either case with memchr2, then compared.
fn find_ascii_ci(hay: &[u8], needle: &[u8], push: &mut impl FnMut(usize, usize)) {
    let (c0, rest) = match needle.split_first() {
        Some(x) => x,
        None => return,
    };
    let (a, b) = (c0.to_ascii_lowercase(), c0.to_ascii_uppercase());
    let mut at = 0;
    while at + needle.len() <= hay.len() {
        let Some(i) = memchr::memchr2(a, b, &hay[at..=hay.len() - needle.len()]) else {
            break;
        };
        let i = at + i;
        if hay[i + 1..i + needle.len()].eq_ignore_ascii_case(rest) {
            push(i, i + needle.len());
            at = i + needle.len();
        } else {
            at = i + 1;
        }
    }
}

/// Case-insensitive search of a non-ASCII needle: at each character, compare lower-cased
/// characters.
fn find_unicode_ci(hay: &str, lower: &str, push: &mut impl FnMut(usize, usize)) {
    let mut skip_to = 0;
    for (i, _) in hay.char_indices() {
        if i < skip_to {
            continue;
        }
        let mut want = lower.chars().peekable();
        let mut end = i;
        for c in hay[i..].chars() {
            if want.peek().is_none() {
                break;
            }
            let mut ok = true;
            for lc in c.to_lowercase() {
                if want.next() != Some(lc) {
                    ok = false;
                    break;
                }
            }
            if !ok {
                break;
            }
            end += c.len_utf8();
        }
        if want.peek().is_none() && end > i {
            push(i, end);
            skip_to = end;
        }
    }
}

pub fn kind_icon(k: EventKind) -> &'static str {
    match k {
        EventKind::Run => "▶",
        EventKind::LlmCall => "◆",
        EventKind::ToolCall => "⚙",
        EventKind::Message(_) => "✉",
        EventKind::State => "≡",
        EventKind::Error => "✖",
        EventKind::LoopWarning => "↻",
        EventKind::Step => "•",
        EventKind::Other => "·",
    }
}

pub fn kind_label(k: EventKind) -> String {
    match k {
        EventKind::Run => "run".into(),
        EventKind::LlmCall => "LLM call".into(),
        EventKind::ToolCall => "tool call".into(),
        EventKind::Message(r) => format!("{} message", r.as_str()),
        EventKind::State => "state update".into(),
        EventKind::Error => "error".into(),
        EventKind::LoopWarning => "loop warning".into(),
        EventKind::Step => "step".into(),
        EventKind::Other => "event".into(),
    }
}

pub fn status_tok(s: Status) -> Tok {
    match s {
        Status::Ok => Tok::Ok,
        Status::Error => Tok::Error,
        Status::Pending => Tok::Pending,
        Status::Unknown => Tok::Dim,
    }
}

fn file_name(t: &Trace, file: u16) -> String {
    t.files
        .get(file as usize)
        .map(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .unwrap_or_else(|| "?".into())
}

/// The document's header (name, status, times, id and model, usage, source, markers, and a
/// blank line), from the event and its decoded payload; the chat view uses it too.
pub fn header(t: &Trace, i: u32, t0: Option<i64>, payload: &Payload) -> Doc {
    let e = t.event(i);
    let mut d = Doc::default();
    for v in [&payload.input, &payload.output].into_iter().flatten() {
        markers_in(v, &mut d.markers);
    }
    for (_, v) in &payload.extra {
        markers_in(v, &mut d.markers);
    }
    d.markers.sort();
    d.markers.dedup();

    let mut l = Line::default();
    l.push(Tok::Heading, format!("{} {} ", kind_icon(e.kind), kind_label(e.kind)));
    l.push(Tok::Text, sanitize::line(t.str(e.name)).into_owned());
    let name_root = d.add_root(Value::String(t.str(e.name).to_string()));
    l.copy = Some(d.copy(name_root, String::new(), "$.name".into()));
    d.push(l);

    let mut l = Line::default();
    l.push(Tok::Dim, "status ")
        .push(status_tok(e.status), e.status.as_str());
    if let Some(du) = e.duration.get() {
        l.push(Tok::Dim, "  took ").push(Tok::Text, format_duration(du));
    }
    d.push(l);
    if let Some(s) = e.start.get() {
        let mut l = Line::default();
        l.push(Tok::Dim, "start ");
        if let Some(t0) = t0 {
            l.push(Tok::Text, format!("+{}  ", format_duration(s - t0)));
        }
        l.push(Tok::Dim, format!("at {}", format_ts(s)));
        d.push(l);
    }
    let mut l = Line::default();
    if !e.source_id.is_empty() {
        l.push(Tok::Dim, "id ")
            .push(Tok::Text, sanitize::line(t.str(e.source_id)).into_owned());
        let r = d.add_root(Value::String(t.str(e.source_id).to_string()));
        l.copy = Some(d.copy(r, String::new(), "$.id".into()));
    }
    if !e.model.is_empty() {
        l.push(Tok::Dim, if l.spans.is_empty() { "model " } else { "  model " })
            .push(Tok::Text, sanitize::line(t.str(e.model)).into_owned());
    }
    if !l.spans.is_empty() {
        d.push(l);
    }
    // Tokens by kind and the cost with the price used (the run's totals on the run event).
    for l in super::usage_view::lines(t, e, super::config::prices()) {
        d.push(l);
    }
    // A tool call: what its result cost, read by the next LLM call and carried on the later ones.
    if let Some(text) = super::cost_view::result_cost_text(t, i) {
        let mut l = Line::default();
        l.push(Tok::Dim, "result cost ").push(Tok::Text, text);
        d.push(l);
    }
    let mut l = Line::default();
    l.push(Tok::Dim, "source ");
    let mut src = format!("{}", sanitize::line(&file_name(t, e.origin.file)));
    let store = t.meta.source.to_str().filter(|u| crate::source::clickhouse::is_url(u));
    if let Some(url) = store {
        // A store's run is read from a temporary document: its place is the run's URL.
        src = sanitize::line(url).into_owned();
    } else if e.origin.line > 0 {
        src.push_str(&format!(":{}", e.origin.line));
    }
    // A second record (a tool result joined to its call) in a line-oriented file.
    if let Some(o2) = e.origin2.as_deref().copied().filter(|o| o.line > 0 && store.is_none()) {
        src.push_str(&format!(" + {}:{}", sanitize::line(&file_name(t, o2.file)), o2.line));
    }
    l.push(Tok::Text, src);
    d.push(l);
    // The run: how to go on with it in its agent (`R` copies it).
    if e.kind == EventKind::Run
        && e.parent == crate::model::NO_PARENT
        && let Some(cmd) = formats::resume::command(&t.meta)
    {
        let mut l = Line::default();
        l.push(Tok::Dim, "resume ")
            .push(Tok::Text, sanitize::line(&cmd).into_owned());
        let r = d.add_root(Value::String(cmd));
        l.copy = Some(d.copy(r, String::new(), "$.resume".into()));
        d.push(l);
    }
    if !d.markers.is_empty() {
        let mut l = Line::default();
        for m in d.markers.clone() {
            l.push(Tok::Badge, format!(" {} ", m.label())).push(Tok::Text, " ");
        }
        d.push(l);
    }
    d.blank();
    d
}

/// Build the detail of event `i`: the decoded payload, or with `raw` the source record(s).
/// `t0` is the start of the run's time axis (start offsets are shown against it).
pub fn build(t: &Trace, i: u32, raw: bool, t0: Option<i64>) -> Doc {
    let e = t.event(i);
    let (payload, raw_records) = formats::payload_with_records(t, e);
    // Parsed (when small enough to look for the sections' paths in), and the bytes let go: a
    // huge record is not held twice.
    let records = if raw { Vec::new() } else { parse_records(&raw_records) };
    drop(raw_records);
    let mut d = header(t, i, t0, &payload);
    if raw {
        raw_section(t, i, &mut d);
    } else if payload.is_empty() {
        let mut l = Line::default();
        l.push(Tok::Dim, "(no payload)");
        d.push(l);
    } else {
        payload_sections(e.kind, payload, &records, &mut d);
    }
    d.folded = vec![false; d.nodes.len()];
    d
}

/// The event's source record(s), parsed, to find where each payload section came from.
fn parse_records(raws: &[Vec<u8>]) -> Vec<Value> {
    raws.iter()
        // A whole document (its origin reads nothing) has no record of its own; a huge record
        // is not parsed a second time.
        .filter(|b| !b.is_empty() && b.len() <= MAX_SOURCE_RECORD)
        .filter_map(|b| serde_json::from_slice(b).ok())
        .collect()
}

/// Source records larger than this are not searched for the sections' paths.
const MAX_SOURCE_RECORD: usize = 4 << 20;

/// The jq path of a payload section in the source record(s): where a value equal to it
/// sits (`.payload.args`), or JSON kept in a string there (`(.payload.args | fromjson)`).
/// None when the format derived the section (it is then copied as `$.input...`).
fn section_path(records: &[Value], want: &Value) -> Option<String> {
    fn walk(v: &Value, want: &Value, path: &str, depth: usize) -> Option<String> {
        if v == want {
            return Some(path.to_string());
        }
        if depth > 64 {
            return None;
        }
        match v {
            Value::String(s) if !want.is_string() && s.len() <= MAX_SOURCE_RECORD => {
                let t = s.trim_start();
                if (t.starts_with('{') || t.starts_with('['))
                    && serde_json::from_str::<Value>(s).is_ok_and(|x| &x == want)
                {
                    let inner = if path.is_empty() { "." } else { path };
                    return Some(format!("({inner} | fromjson)"));
                }
                None
            }
            Value::Object(m) => m
                .iter()
                .find_map(|(k, x)| walk(x, want, &join_path(path, k), depth + 1)),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .find_map(|(i, x)| walk(x, want, &index_path(path, i), depth + 1)),
            _ => None,
        }
    }
    // Scalars too small to place (`true`, `0`, `""`) are not looked for.
    let placeable = match want {
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
        Value::String(s) => s.len() >= 4,
        _ => true,
    };
    if !placeable {
        return None;
    }
    records.iter().find_map(|r| walk(r, want, "", 0))
}

fn payload_sections(kind: EventKind, p: Payload, records: &[Value], d: &mut Doc) {
    let (input, output) = match kind {
        EventKind::ToolCall => ("Arguments", "Result"),
        EventKind::LlmCall => ("Prompt", "Response"),
        EventKind::Message(_) => ("Content", "Output"),
        _ => ("Input", "Output"),
    };
    if let Some(err) = &p.error {
        d.section("Error");
        let root = d.add_root(serde_json::to_value(err).unwrap_or(Value::Null));
        let mut l = Line::default();
        if let Some(k) = &err.kind {
            l.push(Tok::Error, format!("{}: ", sanitize::line(k)));
        }
        let mut msg = err.message.split('\n');
        l.push(Tok::Error, sanitize::line(msg.next().unwrap_or("")).into_owned());
        l.copy = Some(d.copy(root, "/message".into(), "$.error.message".into()));
        d.push(l);
        for rest in msg {
            let mut l = Line::default();
            l.push(Tok::Error, sanitize::line(&detab(rest)).into_owned());
            l.copy = Some(d.copy(root, "/message".into(), "$.error.message".into()));
            d.push(l);
        }
        if let Some(stack) = &err.stack {
            let c = d.copy(root, "/stack".into(), "$.error.stack".into());
            for s in stack.lines() {
                let mut l = Line::default();
                l.push(Tok::Dim, format!("  {}", sanitize::line(&detab(s))));
                l.copy = Some(c);
                d.push(l);
            }
        }
        if err.details.is_some() {
            d.lazy(root, "/details", "$.error.details", Some("details"), 0);
        }
        d.blank();
    }
    // Each value moves into the document's roots once its lines are made (a 50 MB result is
    // not copied).
    for (title, v, name) in [(input, p.input, "input"), (output, p.output, "output")] {
        if let Some(v) = v {
            d.section(title);
            let root = d.add_root(Value::Null);
            // `Y` copies the path in the source record where it can be found (jq on the file).
            let path = section_path(records, &v).unwrap_or_else(|| format!("$.{name}"));
            section_value(d, root, v, &path);
            d.blank();
        }
    }
    for (k, v) in p.extra {
        d.section(&sanitize::line(&k));
        let root = d.add_root(Value::Null);
        let path = section_path(records, &v).unwrap_or_else(|| format!("$.{}", path_key(&k)));
        section_value(d, root, v, &path);
        d.blank();
    }
    // Held once by another event (the request's system prompt and tools): their paths are
    // not in this event's records.
    for (k, v) in p.context {
        d.section(&sanitize::line(&k));
        let root = d.add_root(Value::Null);
        section_value(d, root, v, &format!("$.{}", path_key(&k)));
        d.blank();
    }
}

/// A section's value as lines; it then becomes the root. A long one-line string that needs
/// no escaping is moved into its line instead (a 50 MB result is held once, not twice, and
/// not copied on the way to the first frame); `y` and `o` read it back from there.
fn section_value(d: &mut Doc, root: u32, v: Value, path: &str) {
    match v {
        Value::String(s) if s.len() >= BIG && printable_ascii(&s) => {
            let tok = if Marker::of_str(&s).is_some() {
                Tok::Badge
            } else {
                Tok::Str
            };
            let mut l = Line::default();
            l.push(Tok::Text, "");
            l.copy = Some(d.copy(root, String::new(), path.to_string()));
            l.push(tok, "\"").push(tok, s).push(tok, "\"");
            d.moved.push((root, d.lines.len() as u32));
            d.push(l);
        }
        v => {
            d.roots[root as usize] = v;
            d.lazy(root, "", path, None, 0);
        }
    }
}

fn raw_section(t: &Trace, i: u32, d: &mut Doc) {
    let e = t.event(i);
    let mut origins = vec![e.origin];
    // The whole document is shown once, however many of its records the event joins.
    origins.extend(
        e.origin2
            .as_deref()
            .copied()
            .filter(|o2| !(o2.len == 0 && o2.file == e.origin.file && e.origin.len == 0)),
    );
    for o in origins {
        let name = file_name(t, o.file);
        let whole = o.len == 0;
        if whole {
            d.section(&format!("{} (the whole source document)", sanitize::line(&name)));
        } else {
            d.section(&format!("{} line {}", sanitize::line(&name), o.line));
        }
        let bytes = if whole {
            t.files
                .get(o.file as usize)
                .ok_or_else(|| std::io::Error::other("event has no source file"))
                .and_then(|p| {
                    use std::io::Read;
                    let mut buf = Vec::new();
                    crate::formats::open_regular(p)?
                        .take(MAX_RAW as u64)
                        .read_to_end(&mut buf)?;
                    Ok(buf)
                })
        } else {
            formats::read_origin(t, o)
        };
        match bytes {
            Ok(b) => {
                let text = String::from_utf8_lossy(&b);
                let root = d.add_root(Value::String(text.to_string()));
                let c = d.copy(root, String::new(), "$.raw".into());
                for s in text.trim_end_matches(['\n', '\r']).split('\n') {
                    let mut l = Line::default();
                    l.push(Tok::Text, sanitize::line(s.trim_end_matches('\r')).into_owned());
                    l.copy = Some(c);
                    d.push(l);
                }
                if whole && b.len() >= MAX_RAW {
                    let mut l = Line::default();
                    l.push(Tok::Dim, format!("… first {} KiB shown", MAX_RAW / 1024));
                    d.push(l);
                }
            }
            Err(err) => {
                let mut l = Line::default();
                l.push(Tok::Error, format!("could not read the record: {err}"));
                d.push(l);
            }
        }
        d.blank();
    }
}

/// `5,000`: digits in groups of three.
pub fn grouped(n: usize) -> String {
    let d = n.to_string();
    let mut out = String::with_capacity(d.len() + d.len() / 3);
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn detab(s: &str) -> String {
    s.replace('\t', "    ")
}

/// `.key` for identifiers, `["key"]` otherwise.
fn path_key(k: &str) -> String {
    let ident = !k.is_empty()
        && k.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ident {
        k.to_string()
    } else {
        format!("[{}]", Value::String(k.to_string()))
    }
}

fn join_path(path: &str, k: &str) -> String {
    let pk = path_key(k);
    if pk.starts_with('[') {
        format!("{path}{pk}")
    } else {
        format!("{path}.{pk}")
    }
}

/// `path[i]`; at the root, jq's `.[i]`.
fn index_path(path: &str, i: usize) -> String {
    if path.is_empty() {
        format!(".[{i}]")
    } else {
        format!("{path}[{i}]")
    }
}

fn pointer_escape(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::{ErrorInfo, NewEvent, PayloadRef};
    use serde_json::json;

    /// A document's lines as plain text (the chat view's tests read them too).
    pub(crate) fn text(d: &Doc) -> Vec<String> {
        (0..d.len())
            .map(|i| d.line(i).spans.iter().map(|(_, s)| s.as_str()).collect())
            .collect()
    }

    fn one(payload: Payload) -> Trace {
        let mut t = Trace::default();
        t.add(NewEvent {
            status: Status::Error,
            payload: PayloadRef::Inline(Box::new(payload)),
            ..NewEvent::new(EventKind::ToolCall, "read_file")
        });
        t
    }

    #[test]
    fn sections_json_paths_and_copy_values() {
        let t = one(Payload {
            input: Some(json!({"path": "/tmp/a b", "opts": {"n": [1, 2]}, "secret": "__REDACTED__"})),
            output: Some(json!("line one\nline two")),
            error: Some(ErrorInfo {
                kind: Some("IOError".into()),
                message: "denied".into(),
                stack: Some("at a\nat b".into()),
                details: None,
            }),
            extra: vec![],
            context: Vec::new(),
        });
        let d = build(&t, 0, false, None);
        let lines = text(&d);
        let find = |s: &str| {
            lines
                .iter()
                .position(|l| l.contains(s))
                .unwrap_or_else(|| panic!("{s} in {lines:#?}"))
        };
        assert!(find("── Error") < find("── Arguments"));
        assert!(lines[find("IOError")].contains("IOError: denied"));
        assert!(lines.iter().any(|l| l.trim() == "at b"));
        assert_eq!(d.markers, vec![Marker::Redacted]);
        let n1 = find("1,");
        assert_eq!(d.copy_path(n1).unwrap(), "$.input.opts.n[0]");
        assert_eq!(d.copy_value(n1).unwrap(), "1");
        let opts = find("\"opts\"");
        assert_eq!(d.copy_value(opts).unwrap(), "{\n  \"n\": [\n    1,\n    2\n  ]\n}");
        let two = find("line two");
        assert_eq!(d.copy_value(two).unwrap(), "line one\nline two");
        assert_eq!(d.copy_path(find("\"path\"")).unwrap(), "$.input.path");
    }

    #[test]
    fn hostile_strings_are_escaped_in_every_line() {
        let evil = "\x1b[2J\x1b]0;pwned\x07\x1b]52;c;aGk=\x07\u{9b}31m\u{202e}";
        let t = one(Payload {
            input: Some(json!({ evil: evil })),
            output: Some(json!(format!("{evil}\n{evil}"))),
            ..Default::default()
        });
        let d = build(&t, 0, false, None);
        for l in text(&d) {
            assert!(!l.chars().any(|c| c.is_control() || c == '\u{202e}'), "{l:?}");
        }
        assert!(
            text(&d)
                .iter()
                .any(|l| l.contains("\\x1b[2J") && l.contains("<U+202E>"))
        );
    }

    #[test]
    fn wrapping_counts_cells_not_bytes() {
        let mut l = Line::default();
        l.push(Tok::Key, "ab").push(Tok::Str, "日本語xyz");
        let rows = wrap(&l, 4);
        let text: Vec<String> = rows.iter().map(|r| r.iter().map(|(_, s)| *s).collect()).collect();
        assert_eq!(text, ["ab日", "本語", "xyz"]);
        assert_eq!(rows_of(&l, 4, true), 3);
        assert_eq!(rows_of(&l, 4, false), 1);
        assert_eq!(rows_of(&l, 100, true), 1);
    }

    #[test]
    fn wrapping_prefers_spaces_after_a_word() {
        let mut l = Line::default();
        l.push(Tok::Text, "    ").push(Tok::Error, "card declined by issuer");
        let rows = wrap(&l, 16);
        let text: Vec<String> = rows.iter().map(|r| r.iter().map(|(_, s)| *s).collect()).collect();
        assert_eq!(text, ["    card ", "declined by ", "issuer"]);
        let mut l = Line::default();
        l.push(Tok::Text, "    ").push(Tok::Str, "abcdefghijklmnop");
        let text: Vec<String> = wrap(&l, 8)
            .iter()
            .map(|r| r.iter().map(|(_, s)| *s).collect())
            .collect();
        assert_eq!(
            text,
            ["    abcd", "efghijkl", "mnop"],
            "indentation is not a place to break"
        );
    }

    #[test]
    fn sections_are_found_in_their_source_records_as_jq_paths() {
        let rec: Value = serde_json::from_str(
            r#"{"payload":{"args":"{\"q\":\"lisbon\"}","result":{"rows":[1,2]},"odd key":{"a":[{"b":"text here"}]}}}"#,
        )
        .unwrap();
        let recs = [rec];
        // Equal value: its path; JSON kept in a string: through fromjson.
        assert_eq!(
            section_path(&recs, &serde_json::json!({"rows": [1, 2]})).as_deref(),
            Some(".payload.result")
        );
        assert_eq!(
            section_path(&recs, &serde_json::json!({"q": "lisbon"})).as_deref(),
            Some("(.payload.args | fromjson)")
        );
        assert_eq!(
            section_path(&recs, &serde_json::json!("text here")).as_deref(),
            Some(r#".payload["odd key"].a[0].b"#)
        );
        // Derived by the format, or too small to place: the model's path stays.
        assert_eq!(section_path(&recs, &serde_json::json!({"q": "porto"})), None);
        assert_eq!(section_path(&recs, &serde_json::json!(1)), None);
        assert_eq!(
            join_path("(.payload.args | fromjson)", "q"),
            "(.payload.args | fromjson).q"
        );
        assert_eq!(index_path("", 0), ".[0]");
    }

    #[test]
    fn long_values_are_whole_and_every_row_is_reachable() {
        let long = format!("{}END-MARKER", "ab cd ".repeat(20_000));
        let t = one(Payload {
            output: Some(json!(long)),
            ..Default::default()
        });
        let d = build(&t, 0, false, None);
        assert!(text(&d).iter().any(|l| l.contains(&long)), "no cut inside a line");
        let rows = Rows::new(&d, 37, true);
        assert!(rows.total() > 120_000 / 37);
        let mut all = String::new();
        for r in 0..rows.total() {
            let (pieces, _) = rows.row(&d, r).unwrap();
            let w: usize = pieces
                .iter()
                .map(|(_, s)| unicode_width::UnicodeWidthStr::width(s.as_str()))
                .sum();
            assert!(w <= 37, "row {r} is {w} cells");
            all.extend(pieces.iter().map(|(_, s)| s.as_str()));
        }
        assert!(all.contains(&long), "the rows hold the whole value, in order");
        let li = text(&d).iter().position(|l| l.contains("END-MARKER")).unwrap();
        let (last, _) = rows.row(&d, rows.row_of(li + 1) - 1).unwrap();
        let last: String = last.iter().map(|(_, s)| s.as_str()).collect();
        assert!(last.ends_with("END-MARKER\""), "{last}");
        assert_eq!(rows.locate(rows.row_of(3)), (3, 0));
    }

    #[test]
    fn a_long_value_is_moved_into_its_line_and_laid_out_by_arithmetic() {
        let long = format!("{}END-MARKER", "abc-def ".repeat(BIG / 8 + 1000));
        let t = one(Payload {
            input: Some(json!({"url": "x"})),
            output: Some(json!(long)),
            ..Default::default()
        });
        let d = build(&t, 0, false, None);
        let li = text(&d).iter().position(|l| l.contains("END-MARKER")).unwrap();
        assert_eq!(text(&d)[li], format!("\"{long}\""), "shown whole, quoted");
        assert_eq!(d.moved.len(), 1, "held once, in its line");
        assert_eq!(d.copy_value(li).unwrap(), long, "`y` and `o` give the value");
        // The moved line is built ahead: the last of `lines` but the blank after it.
        let eager = d.lines.len() - 2;
        assert_eq!(d.line(li).spans, d.lines[eager].spans);
        for hang in [0u16, 12] {
            let mut d = d.clone();
            d.lines[eager].hang = hang;
            let rows = Rows::new(&d, 37, true);
            assert!(rows.even.contains_key(&(li as u32)));
            let mut all = String::new();
            for k in 0..rows.rows_in(li) {
                let (pieces, indent) = rows.row(&d, rows.row_of(li) + k).unwrap();
                let w: usize = pieces.iter().map(|(_, s)| s.len()).sum::<usize>() + indent;
                assert!(w <= 37, "row {k} is {w} cells");
                assert_eq!(indent, if k > 0 { hang as usize } else { 0 });
                all.extend(pieces.iter().map(|(_, s)| s.as_str()));
            }
            assert_eq!(all, format!("\"{long}\""), "every row, in order, nothing twice");
            // The row of a byte (a search match) is the row that shows it.
            let at = long.len() - 3;
            let r = rows.row_at(li, MOVED_SPAN, at);
            let len = |k: usize| -> usize { rows.row(&d, k).unwrap().0.iter().map(|(_, s)| s.len()).sum() };
            let before: usize = (rows.row_of(li)..r).map(len).sum();
            // The line is the quote, then the value: byte `at` is at `1 + at` in it.
            assert!(before <= 1 + at && 1 + at < before + len(r), "row {r}");
        }
        let hits = search(&d, "end-marker");
        assert_eq!(hits.len(), 1);
        assert_eq!((hits[0].line as usize, hits[0].span as usize), (li, MOVED_SPAN));
    }

    #[test]
    fn continuation_rows_start_under_the_value() {
        let t = one(Payload {
            input: Some(json!({"key": "word ".repeat(40), "text": "first\n".to_string() + &"more ".repeat(30)})),
            ..Default::default()
        });
        let d = build(&t, 0, false, None);
        let rows = Rows::new(&d, 40, true);
        let at = |needle: &str| text(&d).iter().position(|l| l.contains(needle)).unwrap();
        // `  "key": ` is 9 cells: the value's rows continue there.
        let key = at("\"key\"");
        assert!(rows.rows_in(key) > 2);
        for k in 1..rows.rows_in(key) {
            let (pieces, indent) = rows.row(&d, rows.row_of(key) + k).unwrap();
            assert_eq!(indent, 9);
            assert!(pieces[0].1.starts_with("word"), "{pieces:?}");
        }
        // The gutter of multi-line text: continuation rows start after `│ `.
        let more = at("more more");
        let gutter = d.line(more).width() - "more ".repeat(30).len();
        assert_eq!(rows.row(&d, rows.row_of(more) + 1).unwrap().1, gutter);
        // A hang wider than half the pane is dropped rather than leave a sliver.
        let narrow = Rows::new(&d, 16, true);
        assert_eq!(narrow.row(&d, narrow.row_of(key) + 1).unwrap().1, 0);
    }

    #[test]
    fn a_long_array_is_whole_searched_and_folded_past_the_old_cap() {
        // 300,000 items: past the 200,000 lines the document used to be cut at.
        let n = 300_000;
        let t = one(Payload {
            output: Some(Value::Array(
                (0..n).map(|i| json!({"id": i, "name": format!("item {i}")})).collect(),
            )),
            ..Default::default()
        });
        let mut d = build(&t, 0, false, None);
        let lines = text(&d);
        let at = |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap();
        let last = at("\"item 299999\"");
        assert!(last > 1_000_000, "{last}");
        assert_eq!(lines[last + 1], "  }");
        assert_eq!(lines[last + 2], "]");
        assert_eq!(d.copy_path(last).unwrap(), "$.output[299999].name");
        assert_eq!(d.copy_value(last).unwrap(), "item 299999");
        let whole: Value = serde_json::from_str(&d.copy_value(at("── Result") + 1).unwrap()).unwrap();
        assert_eq!(whole.as_array().map(Vec::len), Some(n));
        // Search reads the whole value; a match maps to the line that shows it.
        let hits = search(&d, "item 2999");
        assert_eq!(hits.len(), 111);
        let h = hits.last().unwrap();
        assert_eq!(h.line as usize, last);
        let shown = &d.line(last).spans[h.span as usize].1;
        assert_eq!(&shown[h.start as usize..h.end as usize], "item 2999");
        // Fold all below the array: every item, to the last, shows as one row with its size.
        d.fold_below(1);
        let rows = Rows::new(&d, 80, true);
        let result = at("── Result");
        assert_eq!(rows.total(), result + 1 + n + 1 + 1 + (lines.len() - last - 3));
        let tail = d.node_at(last - 2).unwrap();
        assert!(d.is_folded(tail) && d.hidden(last));
        assert_eq!(
            d.fold_tail(tail).iter().map(|(_, s)| s.as_str()).collect::<String>(),
            "…} 2 keys"
        );
        d.reveal(last);
        assert!(!d.hidden(last));
    }

    #[test]
    fn appended_documents_keep_their_values_folds_and_matches() {
        let a = build(
            &one(Payload {
                output: Some(json!({"k": [1, 2]})),
                ..Default::default()
            }),
            0,
            false,
            None,
        );
        let b = build(
            &one(Payload {
                input: Some(json!({"q": ["x", "needle"]})),
                ..Default::default()
            }),
            0,
            false,
            None,
        );
        let mut d = a.clone();
        d.append(b.clone());
        assert_eq!(text(&d), [text(&a), text(&b)].concat());
        assert_eq!(d.nodes.len(), a.nodes.len() + b.nodes.len());
        assert_eq!(d.folded.len(), d.nodes.len());
        let hits = search(&d, "needle");
        assert_eq!(hits.len(), 1);
        let li = hits[0].line as usize;
        assert_eq!(li, a.len() + search(&b, "needle")[0].line as usize);
        assert_eq!(d.copy_value(li).as_deref(), Some("needle"));
        assert_eq!(d.copy_path(li).as_deref(), Some("$.input.q[1]"));
        let q = d.node_around(li).unwrap();
        assert_eq!(d.nodes[q].parent as usize, a.nodes.len());
        d.set_folded(q, true);
        assert!(d.hidden(li));
    }

    #[test]
    fn odd_keys_get_bracket_paths() {
        assert_eq!(join_path("$.input", "a b"), "$.input[\"a b\"]");
        assert_eq!(join_path("$.input", "ok_1"), "$.input.ok_1");
    }
}

#[cfg(test)]
mod break_props {
    use super::*;
    use proptest::prelude::*;

    /// The breaks as the plain loop makes them, a character at a time (the reference for the
    /// fast path over printable ASCII).
    fn slow(line: &Line, width: usize, hang: usize) -> Breaks {
        use unicode_width::UnicodeWidthChar;
        let width = width.max(1);
        let mut br = Breaker::new(width, hang);
        for (si, (_, s)) in line.spans.iter().enumerate() {
            for (bi, c) in s.char_indices() {
                let w = if c.is_ascii() {
                    usize::from(c >= ' ' && c != '\x7f')
                } else {
                    c.width().unwrap_or(0)
                };
                br.step(si, bi, c == ' ', w);
            }
        }
        br.starts
    }

    proptest! {
        #[test]
        fn the_fast_path_breaks_as_the_plain_loop(
            spans in proptest::collection::vec("[a-c ]{0,40}|[x日 ]{0,10}", 1..4),
            width in 1usize..30,
            hang in 0usize..12,
        ) {
            let mut l = Line::default();
            for s in spans {
                l.push(Tok::Text, s);
            }
            prop_assert_eq!(breaks(&l, width, hang), slow(&l, width, hang));
        }
    }
}
