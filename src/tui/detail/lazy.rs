//! JSON values of a detail document made line by line on demand. Building a section walks the
//! value once into a compact index (per line: where its value sits in the tree and its width
//! in cells; per object or array: a fold [`Node`]), so a 1,000,000-item array takes a few
//! bytes a line and no strings. A line's spans are made when the screen, a search or `y` asks
//! for it, exactly as they would be printed whole; nothing is cut.

use super::{Line, Node, Tok, index_path, join_path, pointer_escape, printable_ascii};
use crate::model::Marker;
use crate::sanitize;
use serde_json::Value;

/// `Rec::parent` of the value the section shows.
const ROOT: u32 = u32::MAX;
/// `Rec::at` of a closing bracket (the value is the last of its parent, or not).
const CLOSE: u32 = u32::MAX;
const CLOSE_COMMA: u32 = u32::MAX - 1;
/// Lines at least this wide are made once, when the section is built (a long string is not
/// sanitized and copied again for every frame that shows part of it).
const WIDE: u32 = 1 << 16;
/// Spaces to cut indentation from (at most 40 levels are drawn, as before).
const PAD: &str = "                                                                                ";

/// Where a line's value sits: the line of the object or array that holds it (within the
/// section) and its place there, with flags for which line of the value it is (the closing
/// bracket, or a later line of multi-line text); and the line's width in cells. Twelve bytes
/// a line.
#[derive(Clone, Copy, Debug)]
struct Rec {
    parent: u32,
    child: u32,
    width: u32,
}

/// `Rec::child` flags: a closing bracket (and a comma after it); a later line of text (its
/// byte offset in `Part::texts`).
const F_CLOSE: u32 = 1 << 31;
const F_COMMA: u32 = 1 << 30;
const F_TEXT: u32 = 1 << 29;
const F_CHILD: u32 = F_TEXT - 1;

impl Rec {
    fn new(parent: u32, child: u32, at: u32) -> Rec {
        let flags = match at {
            CLOSE => F_CLOSE,
            CLOSE_COMMA => F_CLOSE | F_COMMA,
            0 => 0,
            _ => F_TEXT,
        };
        Rec {
            parent,
            child: child.min(F_CHILD) | flags,
            width: 0,
        }
    }
    fn child(&self) -> usize {
        (self.child & F_CHILD) as usize
    }
}

/// A JSON value shown from document line `at` on, `len` lines.
#[derive(Clone, Debug)]
pub struct Part {
    /// The document's first line of the section.
    pub at: u32,
    pub len: u32,
    /// Lines of the parts before this one (what separates a line's number from its place in
    /// the eagerly built lines).
    pub before: u32,
    /// The value: `Doc::roots[root]` at pointer `ptr`; `path` is its human path.
    pub root: u32,
    pub ptr: String,
    pub path: String,
    /// The label of the value's first line (`"details": {`), if any.
    pub key: Option<String>,
    pub indent: usize,
    recs: Vec<Rec>,
    /// Byte offsets of the later lines of multi-line text, by line.
    texts: std::collections::HashMap<u32, u32>,
    /// The lines made ahead (see [`WIDE`]).
    wide: std::collections::HashMap<u32, Line>,
}

/// One line of a section, located in the value.
struct At<'v> {
    v: &'v Value,
    key: Option<&'v str>,
    indent: usize,
    last: bool,
    at: u32,
}

/// Walk `v` in line order, calling `f` with each line (what a search reads).
fn walk<'v>(v: &'v Value, key: Option<&'v str>, indent: usize, last: bool, f: &mut impl FnMut(&At<'v>)) {
    let at = |a: u32| At {
        v,
        key,
        indent,
        last,
        at: a,
    };
    match v {
        Value::Object(m) if !m.is_empty() => {
            f(&at(0));
            let n = m.len();
            for (i, (k, x)) in m.iter().enumerate() {
                walk(x, Some(k), indent + 1, i + 1 == n, f);
            }
            f(&at(if last { CLOSE } else { CLOSE_COMMA }));
        }
        Value::Array(a) if !a.is_empty() => {
            f(&at(0));
            let n = a.len();
            for (i, x) in a.iter().enumerate() {
                walk(x, None, indent + 1, i + 1 == n, f);
            }
            f(&at(if last { CLOSE } else { CLOSE_COMMA }));
        }
        Value::String(s) if s.contains('\n') => {
            let mut off = 0usize;
            for part in s.trim_end_matches('\n').split('\n') {
                f(&at(off.min(u32::MAX as usize - 2) as u32));
                off += part.len() + 1;
            }
        }
        _ => f(&at(0)),
    }
}

/// Cells of trace text once sanitized.
fn text_width(s: &str) -> usize {
    if printable_ascii(s) {
        s.len()
    } else {
        unicode_width::UnicodeWidthStr::width(&*sanitize::line(s))
    }
}

/// Cells of a number as printed, without printing the common ones.
fn number_width(n: &serde_json::Number) -> usize {
    fn digits(mut x: u64) -> usize {
        let mut d = 1;
        while x >= 10 {
            x /= 10;
            d += 1;
        }
        d
    }
    if let Some(u) = n.as_u64() {
        digits(u)
    } else if let Some(i) = n.as_i64() {
        1 + digits(i.unsigned_abs())
    } else {
        n.to_string().len()
    }
}

/// Cells of a line, as [`spans`] would make it (checked against it by the tests).
fn width(a: &At) -> usize {
    let pad = 2 * a.indent.min(40);
    let key = a.key.map_or(0, |k| text_width(k) + 4);
    let comma = usize::from(!a.last);
    match a.v {
        Value::Object(m) if !m.is_empty() => match a.at {
            CLOSE | CLOSE_COMMA => pad + 1 + usize::from(a.at == CLOSE_COMMA),
            _ => pad + key + 1,
        },
        Value::Array(x) if !x.is_empty() => match a.at {
            CLOSE | CLOSE_COMMA => pad + 1 + usize::from(a.at == CLOSE_COMMA),
            _ => pad + key + 1,
        },
        Value::Object(_) | Value::Array(_) => pad + key + 2 + comma,
        Value::String(s) if s.contains('\n') => {
            let part = text_part(s, a.at);
            let lead = if a.at == 0 {
                pad + key
            } else {
                pad + a.key.map_or(0, |k| k.chars().count() + 4)
            };
            let body = if printable_ascii(part) {
                part.len()
            } else {
                unicode_width::UnicodeWidthStr::width(&*sanitize::line(&super::detab(part)))
            };
            lead + 2 + body
        }
        Value::String(s) => pad + key + text_width(s) + 2 + comma,
        Value::Number(n) => pad + key + number_width(n) + comma,
        Value::Bool(b) => pad + key + if *b { 4 } else { 5 } + comma,
        Value::Null => pad + key + 4 + comma,
    }
}

/// The line of multi-line text at byte `at`, without its `\r`.
fn text_part(s: &str, at: u32) -> &str {
    let body = s.trim_end_matches('\n');
    let rest = body.get(at as usize..).unwrap_or("");
    let part = rest.split('\n').next().unwrap_or("");
    part.trim_end_matches('\r')
}

/// The spans of a line, in order, handed to `f` (`buf` holds the ones made for the line); and
/// the cells before its value (where wrapped rows continue). Printed as the whole value was.
fn spans(a: &At, buf: &mut String, f: &mut impl FnMut(Tok, &str)) -> usize {
    use std::fmt::Write;
    let pad = &PAD[..2 * a.indent.min(40)];
    let comma = if a.last { "" } else { "," };
    let close = matches!(a.at, CLOSE | CLOSE_COMMA);
    let container = match a.v {
        Value::Object(m) => !m.is_empty(),
        Value::Array(x) => !x.is_empty(),
        _ => false,
    };
    if container && close {
        f(Tok::Text, pad);
        buf.clear();
        buf.push(if a.v.is_object() { '}' } else { ']' });
        if a.at == CLOSE_COMMA {
            buf.push(',');
        }
        f(Tok::Punct, buf);
        return 0;
    }
    let text = matches!(a.v, Value::String(s) if s.contains('\n'));
    let mut hang = pad.len();
    if text && a.at > 0 {
        // A continuation line of text: under the first line's value.
        buf.clear();
        buf.push_str(pad);
        for _ in 0..a.key.map_or(0, |k| k.chars().count() + 4) {
            buf.push(' ');
        }
        hang = buf.len();
        f(Tok::Text, buf);
    } else {
        f(Tok::Text, pad);
        if let Some(k) = a.key {
            buf.clear();
            buf.push('"');
            buf.push_str(&sanitize::line(k));
            buf.push('"');
            hang += super::span_width(buf) + 2;
            f(Tok::Key, buf);
            f(Tok::Punct, ": ");
        }
    }
    match a.v {
        Value::Object(_) | Value::Array(_) if container => {
            f(Tok::Punct, if a.v.is_object() { "{" } else { "[" });
        }
        Value::Object(_) | Value::Array(_) => {
            buf.clear();
            buf.push_str(if a.v.is_object() { "{}" } else { "[]" });
            buf.push_str(comma);
            f(Tok::Punct, buf);
        }
        Value::String(s) if text => {
            f(Tok::Dim, "│ ");
            hang += 2;
            let part = text_part(s, a.at);
            if printable_ascii(part) {
                f(Tok::Str, part);
            } else {
                f(Tok::Str, &sanitize::line(&super::detab(part)));
            }
        }
        Value::String(s) => {
            let tok = if Marker::of_str(s).is_some() {
                Tok::Badge
            } else {
                Tok::Str
            };
            buf.clear();
            buf.push('"');
            buf.push_str(&sanitize::line(s));
            buf.push('"');
            f(tok, buf);
            f(Tok::Punct, comma);
        }
        Value::Number(n) => {
            buf.clear();
            let _ = write!(buf, "{n}");
            f(Tok::Num, buf);
            f(Tok::Punct, comma);
        }
        Value::Bool(b) => {
            f(Tok::Bool, if *b { "true" } else { "false" });
            f(Tok::Punct, comma);
        }
        Value::Null => {
            f(Tok::Null, "null");
            f(Tok::Punct, comma);
        }
    }
    hang
}

/// `Rec::parent` of a value at the top of a share built apart (see [`Builder::spread`]).
const TOP: u32 = u32::MAX - 1;
/// Objects and arrays with at least this many members are indexed on every core, in shares.
const PAR: usize = 1 << 15;

/// The index of a value (or of a share of an object's or array's members), lines numbered
/// from its first.
struct Builder {
    recs: Vec<Rec>,
    texts: Vec<(u32, u32)>,
    nodes: Vec<Node>,
    wide: Vec<u32>,
    /// See [`PAR`] (the tests lower it).
    par: usize,
}

impl Builder {
    fn new(par: usize) -> Builder {
        Builder {
            recs: Vec::new(),
            texts: Vec::new(),
            nodes: Vec::new(),
            wide: Vec::new(),
            par,
        }
    }

    fn line(&mut self, a: &At, mut r: Rec) {
        let me = self.recs.len() as u32;
        r.width = width(a).min(u32::MAX as usize) as u32;
        if r.width >= WIDE {
            self.wide.push(me);
        }
        if r.child & F_TEXT != 0 {
            self.texts.push((me, a.at));
        }
        self.recs.push(r);
    }

    /// Index `v`: `parent` is the line of the object or array holding it (`node` that
    /// node), `child` its place there.
    #[allow(clippy::too_many_arguments)]
    fn value(&mut self, v: &Value, key: Option<&str>, indent: usize, last: bool, parent: u32, child: u32, node: u32) {
        let at = |a: u32| At {
            v,
            key,
            indent,
            last,
            at: a,
        };
        let len = match v {
            Value::Object(m) => m.len(),
            Value::Array(x) => x.len(),
            _ => 0,
        };
        if len > 0 {
            let me = self.recs.len() as u32;
            self.line(&at(0), Rec::new(parent, child, 0));
            let mine = self.nodes.len() as u32;
            self.nodes.push(Node {
                open: me,
                close: me,
                depth: indent.min(u16::MAX as usize) as u16,
                object: v.is_object(),
                len: len.min(u32::MAX as usize) as u32,
                parent: node,
            });
            match v {
                Value::Object(m) if len >= self.par => {
                    let kids: Vec<(Option<&str>, &Value)> = m.iter().map(|(k, x)| (Some(k.as_str()), x)).collect();
                    self.spread(&kids, indent + 1, me, mine);
                }
                Value::Array(x) if len >= self.par => {
                    let kids: Vec<(Option<&str>, &Value)> = x.iter().map(|x| (None, x)).collect();
                    self.spread(&kids, indent + 1, me, mine);
                }
                Value::Object(m) => {
                    for (i, (k, x)) in m.iter().enumerate() {
                        self.value(x, Some(k), indent + 1, i + 1 == len, me, i as u32, mine);
                    }
                }
                Value::Array(a) => {
                    for (i, x) in a.iter().enumerate() {
                        self.value(x, None, indent + 1, i + 1 == len, me, i as u32, mine);
                    }
                }
                _ => {}
            }
            let c = if last { CLOSE } else { CLOSE_COMMA };
            let close = self.recs.len() as u32;
            self.line(&at(c), Rec::new(parent, child, c));
            self.nodes[mine as usize].close = close;
            return;
        }
        match v {
            Value::String(s) if s.contains('\n') => {
                let mut off = 0usize;
                for part in s.trim_end_matches('\n').split('\n') {
                    let o = off.min(u32::MAX as usize - 2) as u32;
                    self.line(&at(o), Rec::new(parent, child, o));
                    off += part.len() + 1;
                }
            }
            _ => self.line(&at(0), Rec::new(parent, child, 0)),
        }
    }

    /// The members of a large object or array, indexed in shares on every core and joined in
    /// order (a million items take the time of a fraction of them).
    fn spread(&mut self, kids: &[(Option<&str>, &Value)], indent: usize, open: u32, node: u32) {
        use rayon::prelude::*;
        let n = kids.len();
        let size = n.div_ceil(rayon::current_num_threads().max(1) * 4).max(1);
        let par = self.par;
        let shares: Vec<Builder> = kids
            .par_chunks(size)
            .enumerate()
            .map(|(ci, share)| {
                let mut b = Builder::new(par);
                for (i, (k, x)) in share.iter().enumerate() {
                    let idx = ci * size + i;
                    b.value(x, *k, indent, idx + 1 == n, TOP, idx as u32, super::NO_NODE);
                }
                b
            })
            .collect();
        for b in shares {
            let (lines, nodes) = (self.recs.len() as u32, self.nodes.len() as u32);
            self.recs.extend(b.recs.into_iter().map(|mut r| {
                r.parent = if r.parent == TOP { open } else { r.parent + lines };
                r
            }));
            self.nodes.extend(b.nodes.into_iter().map(|mut x| {
                (x.open, x.close) = (x.open + lines, x.close + lines);
                x.parent = if x.parent == super::NO_NODE {
                    node
                } else {
                    x.parent + nodes
                };
                x
            }));
            self.texts.extend(b.texts.into_iter().map(|(l, o)| (l + lines, o)));
            self.wide.extend(b.wide.into_iter().map(|l| l + lines));
        }
    }
}

/// Index `v` (shown from document line `at`, its objects and arrays appended to `nodes`).
#[allow(clippy::too_many_arguments)]
pub fn build(
    v: &Value,
    at: u32,
    before: u32,
    (root, ptr, path): (u32, String, String),
    key: Option<String>,
    indent: usize,
    nodes: &mut Vec<Node>,
) -> Part {
    build_with(v, at, before, (root, ptr, path), key, indent, nodes, PAR)
}

#[allow(clippy::too_many_arguments)]
fn build_with(
    v: &Value,
    at: u32,
    before: u32,
    (root, ptr, path): (u32, String, String),
    key: Option<String>,
    indent: usize,
    nodes: &mut Vec<Node>,
    par: usize,
) -> Part {
    let mut b = Builder::new(par);
    b.value(v, key.as_deref(), indent, true, ROOT, 0, super::NO_NODE);
    let base = nodes.len() as u32;
    nodes.extend(b.nodes.into_iter().map(|mut x| {
        (x.open, x.close) = (x.open + at, x.close + at);
        if x.parent != super::NO_NODE {
            x.parent += base;
        }
        x
    }));
    let mut p = Part {
        at,
        len: b.recs.len() as u32,
        before,
        root,
        ptr,
        path,
        key,
        indent,
        recs: b.recs,
        texts: b.texts.into_iter().collect(),
        wide: Default::default(),
    };
    for k in b.wide {
        if let Some(l) = p.make(v, k as usize) {
            p.wide.insert(k, l);
        }
    }
    p
}

impl Part {
    /// Cells of line `k` of the section.
    pub fn width(&self, k: usize) -> usize {
        self.recs.get(k).map_or(0, |r| r.width as usize)
    }

    /// Line `k` of the section; `v` is the section's value.
    pub fn line(&self, v: &Value, k: usize) -> Option<std::borrow::Cow<'_, Line>> {
        if let Some(l) = self.wide.get(&(k as u32)) {
            return Some(std::borrow::Cow::Borrowed(l));
        }
        self.make(v, k).map(std::borrow::Cow::Owned)
    }

    fn make(&self, v: &Value, k: usize) -> Option<Line> {
        let a = self.locate(v, k, None)?;
        let mut l = Line::default();
        let mut buf = String::new();
        let hang = spans(&a, &mut buf, &mut |t, s| l.spans.push((t, s.to_string())));
        l.hang = hang.min(u16::MAX as usize) as u16;
        Some(l)
    }

    /// Line `k` of the section in the value `v`; with `copy`, the value's RFC 6901 pointer
    /// and human path are written there.
    fn locate<'v>(&'v self, v: &'v Value, k: usize, mut copy: Option<(&mut String, &mut String)>) -> Option<At<'v>> {
        let mut r = *self.recs.get(k)?;
        let at = match r.child & !F_CHILD {
            0 => 0,
            F_TEXT => *self.texts.get(&(k as u32))?,
            F_CLOSE => CLOSE,
            _ => CLOSE_COMMA,
        };
        let mut chain = Vec::new();
        while r.parent != ROOT {
            chain.push(r.child());
            r = *self.recs.get(r.parent as usize)?;
        }
        let (mut v, mut key, mut last) = (v, self.key.as_deref(), true);
        for &c in chain.iter().rev() {
            match v {
                Value::Object(m) => {
                    // In insertion order (serde_json keeps it): the c-th entry.
                    let (kk, x) = m.iter().nth(c)?;
                    if let Some((ptr, path)) = copy.as_mut() {
                        ptr.push('/');
                        ptr.push_str(&pointer_escape(kk));
                        **path = join_path(path, kk);
                    }
                    last = c + 1 == m.len();
                    key = Some(kk.as_str());
                    v = x;
                }
                Value::Array(a) => {
                    if let Some((ptr, path)) = copy.as_mut() {
                        ptr.push_str(&format!("/{c}"));
                        **path = index_path(path, c);
                    }
                    last = c + 1 == a.len();
                    key = None;
                    v = a.get(c)?;
                }
                _ => return None,
            }
        }
        Some(At {
            v,
            key,
            indent: self.indent + chain.len(),
            last,
            at,
        })
    }

    /// The value line `k` belongs to, its pointer from the document root, and its path.
    pub fn value_at<'v>(&'v self, v: &'v Value, k: usize) -> Option<(&'v Value, String, String)> {
        let (mut ptr, mut path) = (self.ptr.clone(), self.path.clone());
        let a = self.locate(v, k, Some((&mut ptr, &mut path)))?;
        Some((a.v, ptr, path))
    }

    /// The closing bracket line `k` shows (`}` or `],`), without making the line.
    pub fn closing(&self, k: usize, object: bool) -> Option<&'static str> {
        let r = self.recs.get(k)?;
        Some(match (object, r.child & (F_CLOSE | F_COMMA)) {
            (true, F_CLOSE) => "}",
            (false, F_CLOSE) => "]",
            (true, _) if r.child & F_CLOSE != 0 => "},",
            (false, _) if r.child & F_CLOSE != 0 => "],",
            _ => return None,
        })
    }

    /// Every line's spans in order, `f(line in the section, span, text)`: what a search
    /// reads (one walk over the value, no line made).
    pub fn each_span(&self, v: &Value, f: &mut impl FnMut(usize, usize, &str)) {
        let mut buf = String::new();
        let mut k = 0usize;
        walk(v, self.key.as_deref(), self.indent, true, &mut |a| {
            if let Some(l) = (!self.wide.is_empty()).then(|| self.wide.get(&(k as u32))).flatten() {
                for (si, (_, s)) in l.spans.iter().enumerate() {
                    f(k, si, s);
                }
            } else {
                let mut si = 0;
                spans(a, &mut buf, &mut |_, s| {
                    f(k, si, s);
                    si += 1;
                });
            }
            k += 1;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn part(v: &Value) -> (Part, Vec<Node>) {
        part_par(v, PAR)
    }

    fn part_par(v: &Value, par: usize) -> (Part, Vec<Node>) {
        let mut nodes = Vec::new();
        let p = build_with(v, 0, 0, (0, String::new(), "$.output".into()), None, 0, &mut nodes, par);
        (p, nodes)
    }

    fn lines(p: &Part, v: &Value) -> Vec<String> {
        (0..p.len as usize)
            .map(|k| p.line(v, k).unwrap().spans.iter().map(|(_, s)| s.as_str()).collect())
            .collect()
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            (-1e6f64..1e6).prop_map(|n| json!(n)),
            "[a-z \"]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::vec(("[a-z_]{1,6}", inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The lines made one at a time are the value pretty-printed (strings shown
        /// unescaped), their widths as indexed, and a search walk reads the same spans.
        #[test]
        fn lines_are_the_value_pretty_printed(v in value()) {
            let (p, nodes) = part(&v);
            let shown = lines(&p, &v).join("\n");
            let pretty = serde_json::to_string_pretty(&v).unwrap().replace("\\\"", "\"");
            prop_assert_eq!(shown, pretty);
            for k in 0..p.len as usize {
                prop_assert_eq!(p.width(k), p.line(&v, k).unwrap().width());
            }
            let mut walked: Vec<Vec<String>> = vec![Vec::new(); p.len as usize];
            p.each_span(&v, &mut |k, si, s| {
                assert_eq!(walked[k].len(), si);
                walked[k].push(s.to_string());
            });
            for (k, w) in walked.iter().enumerate() {
                let made: Vec<String> = p.line(&v, k).unwrap().spans.iter().map(|(_, s)| s.clone()).collect();
                prop_assert_eq!(w, &made);
            }
            // Every object and array is a node from its opening line to its closing one.
            for n in &nodes {
                let close = p.closing(n.close as usize, n.object);
                prop_assert!(close.is_some());
            }
            // Indexed in shares (as a large value is, on every core): the same index.
            for par in [1, 2, 3] {
                let (q, qn) = part_par(&v, par);
                prop_assert_eq!(&qn, &nodes);
                prop_assert_eq!(lines(&q, &v), lines(&p, &v));
                for k in 0..p.len as usize {
                    prop_assert_eq!(q.width(k), p.width(k));
                    prop_assert_eq!(q.value_at(&v, k).map(|x| x.1), p.value_at(&v, k).map(|x| x.1));
                }
            }
        }
    }

    #[test]
    fn multi_line_text_keys_and_copies() {
        let v = json!({"a b": "one\r\ntwo\tx\n\n", "n": [1, {"x": null}], "e": {}});
        let (p, nodes) = part(&v);
        assert_eq!(
            lines(&p, &v),
            [
                "{",
                "  \"a b\": │ one",
                "         │ two    x",
                "  \"n\": [",
                "    1,",
                "    {",
                "      \"x\": null",
                "    }",
                "  ],",
                "  \"e\": {}",
                "}"
            ]
        );
        assert_eq!(nodes.len(), 3);
        assert_eq!(
            (nodes[1].open, nodes[1].close, nodes[1].depth, nodes[1].parent),
            (3, 8, 1, 0)
        );
        for k in 0..p.len as usize {
            assert_eq!(p.width(k), p.line(&v, k).unwrap().width(), "line {k}");
        }
        let (x, ptr, path) = p.value_at(&v, 6).unwrap();
        assert_eq!(
            (x, ptr.as_str(), path.as_str()),
            (&Value::Null, "/n/1/x", "$.output.n[1].x")
        );
        let (x, ptr, path) = p.value_at(&v, 2).unwrap();
        assert_eq!(
            (x.as_str(), ptr.as_str(), path.as_str()),
            (Some("one\r\ntwo\tx\n\n"), "/a b", "$.output[\"a b\"]")
        );
        assert_eq!(p.line(&v, 2).unwrap().hang, 11);
        assert_eq!(p.closing(8, false), Some("],"));
    }

    #[test]
    fn hostile_text_is_sanitized_in_lines_and_widths() {
        let evil = "\x1b[2J\u{202e}日本";
        let v = json!({ evil: [evil, format!("{evil}\n{evil}")] });
        let (p, _) = part(&v);
        for (k, l) in lines(&p, &v).iter().enumerate() {
            assert!(!l.chars().any(|c| c.is_control() || c == '\u{202e}'), "{l:?}");
            assert_eq!(p.width(k), p.line(&v, k).unwrap().width(), "line {k}");
        }
    }
}
