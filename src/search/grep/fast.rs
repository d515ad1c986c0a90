//! The fast path of `grep` for AgentDbg sources (the format of the 2,000-run and 1M-event
//! benchmarks, issue 18): work proportional to the matches, not to the file.
//!
//! A full load skims every line completely and builds the whole tree; a search needs only the
//! lines the raw scan marks, their ancestors (for the path `turn 3 › Task › Read`) and each
//! event's index in the trace. So one pass over the bytes (in parallel slices of a large
//! file) finds the candidate lines and reads, per line, only the envelope's head: `event_id`,
//! `parent_id`, `run_id`, `event_type`, `name`. The lines that matter then go through the
//! format's own parser, in file order, and the usual [`super::search_trace`] runs on that
//! partial trace; hits carry the event's index in the whole trace, counted from the pass.
//!
//! The lines kept, so that every hit the full search finds is found here too:
//! candidates; their ancestors by id; every RUN_START and RUN_END (the root and its status);
//! and every line whose event may carry text the parser makes up rather than reads: an
//! ERROR, an unknown event type, an LLM call or state update without a name (named `llm`,
//! `state` by the parser), and a call whose payload may hold an error (its message may be the
//! error object written out again; not for a pattern no such text can match,
//! [`super::Pattern::verbatim`]).
//!
//! Anything this pass is not sure of (another key order, an escape in those fields, several
//! runs in one file, a last line without newline, a very long line) hands the source to the
//! full search. What it cannot see without reading whole lines: a line whose head is a valid
//! event but whose rest is not JSON. The full load drops such a line; here it still counts
//! for the index of the events after it (and it is parsed, so dropped, when it is kept).

use super::{Candidates, Hit, Options, SourceResult, TraceHits, scan_file, search_trace_in, source_files};
use crate::formats::jsonl::LineParser;
use crate::formats::{self, LoadError, agentdbg};
use crate::source::RunRef;
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet, FxHasher};
use std::collections::HashMap;
use std::hash::Hasher;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Files larger than this are read in parallel slices.
const SLICE: u64 = 32 << 20;
/// Read size within a slice.
const CHUNK: usize = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Start,
    End,
    /// Adds an event whose text is all read from the file.
    Plain,
    /// Adds an event that is always searched (see the module doc).
    Keep,
}

/// One non-blank line.
#[derive(Clone, Copy, Debug)]
struct Rec {
    off: u64,
    len: u32,
    /// 1-based, counted over the slice (made global after).
    line: u64,
    id: u64,
    parent: u64,
    ty: Ty,
    cand: bool,
}

#[derive(Debug, Default)]
struct Part {
    recs: Vec<Rec>,
    /// Newlines in the slice.
    lines: u64,
    run: Option<Vec<u8>>,
    /// Not read line by line (see [`read_part`]).
    skipped: bool,
    /// Read in one piece: the buffer still holds all of it, as it is in the file.
    whole: bool,
}

fn hash(b: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(b);
    h.finish().max(1)
}

fn ws(l: &[u8], mut i: usize) -> usize {
    while i < l.len() && matches!(l[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// A string without escapes at `i` (the opening quote): its bytes and the index after it.
fn plain_str(l: &[u8], i: usize) -> Option<(&[u8], usize)> {
    if l.get(i) != Some(&b'"') {
        return None;
    }
    let j = i + 1 + memchr::memchr2(b'"', b'\\', &l[i + 1..])?;
    (l[j] == b'"').then(|| (&l[i + 1..j], j + 1))
}

/// Skip a scalar value at `i`; None for an object or array (or anything unsure).
fn skip_scalar(l: &[u8], i: usize) -> Option<usize> {
    match *l.get(i)? {
        b'"' => {
            let mut j = i + 1;
            loop {
                j += memchr::memchr2(b'"', b'\\', &l[j..])?;
                if l[j] == b'\\' {
                    j += 2;
                } else {
                    return Some(j + 1);
                }
            }
        }
        b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
            let n = l[i..]
                .iter()
                .position(|c| !(c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.')))
                .unwrap_or(l.len() - i);
            Some(i + n)
        }
        _ => None,
    }
}

/// The head of an event line: (id, parent, type, run id). None: not sure (the full search
/// reads the source). Reads keys until the five are seen and a nested value comes.
/// `errors`: whether a call whose payload may hold an error is kept (see [`Scan::errors`]).
fn head(l: &[u8], errors: bool) -> Option<(u64, u64, Ty, &[u8])> {
    const KEYS: [&[u8]; 5] = [b"event_id", b"parent_id", b"run_id", b"event_type", b"name"];
    let mut val: [Option<Option<&[u8]>>; 5] = [None; 5];
    let mut i = ws(l, 0);
    if l.get(i) != Some(&b'{') || l.iter().rev().find(|c| !c.is_ascii_whitespace()) != Some(&b'}') {
        return None;
    }
    i += 1;
    loop {
        i = ws(l, i);
        if l.get(i) == Some(&b'}') {
            break;
        }
        let (key, j) = plain_str(l, i)?;
        i = ws(l, j);
        if l.get(i) != Some(&b':') {
            return None;
        }
        i = ws(l, i + 1);
        match KEYS.iter().position(|k| *k == key) {
            Some(k) => {
                if val[k].is_some() {
                    return None;
                }
                if l[i..].starts_with(b"null") {
                    val[k] = Some(None);
                    i += 4;
                } else {
                    let (s, j) = plain_str(l, i)?;
                    val[k] = Some(Some(s));
                    i = j;
                }
            }
            None => match skip_scalar(l, i) {
                Some(j) => i = j,
                // A nested value: the head is over when the five were read before it.
                None if val.iter().all(Option::is_some) => break,
                None => return None,
            },
        }
        i = ws(l, i);
        match l.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => break,
            _ => return None,
        }
    }
    let get = |k: usize| val[k].flatten().unwrap_or(b"");
    let ty = get(3);
    let unnamed = get(4).is_empty();
    let t = match ty {
        b"RUN_START" => Ty::Start,
        b"RUN_END" => Ty::End,
        b"TOOL_CALL" | b"LLM_CALL" if errors && may_hold_error(l) => Ty::Keep,
        b"LLM_CALL" | b"STATE_UPDATE" if unnamed => Ty::Keep,
        b"TOOL_CALL" | b"LLM_CALL" | b"STATE_UPDATE" | b"LOOP_WARNING" => Ty::Plain,
        // event_type is required: without it the line is no event (let the full load say so).
        b"" => return None,
        _ => Ty::Keep,
    };
    let run = get(2);
    if run.is_empty() {
        return None;
    }
    let id = val[0].flatten().filter(|s| !s.is_empty()).map_or(0, hash);
    let parent = val[1].flatten().filter(|s| !s.is_empty()).map_or(0, hash);
    Some((id, parent, t, run))
}

/// Whether some `"error"` key in the line (at any depth: more lines than needed are kept,
/// never fewer) has a value that is neither null nor a string: a call's error object or
/// number is written out again by the parser (`ErrorInfo::from_value`), text not in the file.
/// A string is the message as it is, and a status of "error" alone adds no text.
fn may_hold_error(l: &[u8]) -> bool {
    static ERROR: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"error\""));
    ERROR.find_iter(l).any(|m| {
        let i = ws(l, m + 7);
        l.get(i) == Some(&b':') && {
            let v = &l[ws(l, i + 1)..];
            !(v.starts_with(b"null") || v.starts_with(b"\""))
        }
    })
}

/// What the pass over the bytes looks for.
struct Scan<'a> {
    pre: &'a regex::bytes::Regex,
    /// Keep the calls whose payload may hold an error ([`may_hold_error`]): their error is
    /// searched even when the raw scan rules the line out, as the full search does. Not
    /// needed for a [`super::Pattern::verbatim`] pattern: no text rebuilt from such a line
    /// can match. (The check reads every call line to its end: a tenth of the pass.)
    errors: bool,
}

thread_local! {
    /// Each worker's read buffer, kept from slice to slice and file to file: a fresh one
    /// costs a page fault and the zeroing of every page (an eighth of the time on the 2 GB
    /// run).
    static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Read `[from, to)` of the file (whole lines) and take its lines' heads.
fn read_part(f: &std::fs::File, sc: &Scan, from: u64, to: u64) -> Option<Part> {
    let mut buf = BUF.take();
    let part = read_part_with(f, sc, from, to, &mut buf);
    // A buffer grown for a very long line is not kept.
    if buf.len() <= 2 * CHUNK {
        BUF.set(buf);
    }
    part
}

fn read_part_with(f: &std::fs::File, sc: &Scan, from: u64, to: u64, buf: &mut Vec<u8>) -> Option<Part> {
    let mut part = Part::default();
    // The part of `buf` in use: its start is the slice's size, at most CHUNK.
    let mut cap = ((to - from) as usize).min(CHUNK);
    if buf.len() < cap {
        buf.resize(cap, 0);
    }
    let mut have = 0usize;
    let mut base = from;
    loop {
        let want = ((to - base) as usize).min(cap);
        while have < want {
            let n = f.read_at(&mut buf[have..want], base + have as u64).ok()?;
            if n == 0 {
                return None; // shorter than it was: let the full search read it
            }
            have += n;
        }
        if have == 0 {
            return Some(part);
        }
        let upto = match memchr::memrchr(b'\n', &buf[..have]) {
            Some(i) => i + 1,
            None if have < cap => return None, // no final newline
            None if cap >= formats::jsonl::MAX_LINE => return None,
            None => {
                cap *= 2;
                if buf.len() < cap {
                    buf.resize(cap, 0);
                }
                continue;
            }
        };
        // A whole file in one read with no candidate: nothing of it is needed (unless
        // another of the source's files has one, which the caller sees as `skipped`).
        if base == 0 && upto == (to - from) as usize && !sc.pre.is_match(&buf[..upto]) {
            part.skipped = true;
            part.lines = memchr::memchr_iter(b'\n', &buf[..upto]).count() as u64;
            return Some(part);
        }
        lines(&buf[..upto], base, sc, &mut part)?;
        part.whole = base == from && upto == have && have as u64 == to - from;
        buf.copy_within(upto..have, 0);
        have -= upto;
        base += upto as u64;
    }
}

fn lines(hay: &[u8], base: u64, sc: &Scan, part: &mut Part) -> Option<()> {
    let mut ms = sc.pre.find_iter(hay).map(|m| m.start()).peekable();
    let mut start = 0;
    for nl in memchr::memchr_iter(b'\n', hay) {
        part.lines += 1;
        let l = &hay[start..nl];
        let l = l.strip_suffix(b"\r").unwrap_or(l);
        let mut cand = false;
        while let Some(&m) = ms.peek() {
            if m >= nl {
                break;
            }
            cand |= m >= start;
            ms.next();
        }
        if !l.iter().all(|b| b.is_ascii_whitespace()) {
            let (id, parent, ty, run) = head(l, sc.errors)?;
            match &part.run {
                Some(r) if r.as_slice() != run => return None,
                Some(_) => {}
                None => part.run = Some(run.to_vec()),
            }
            part.recs.push(Rec {
                off: base + start as u64,
                len: u32::try_from(l.len()).ok()?,
                line: part.lines,
                id,
                parent,
                ty,
                cand,
            });
        }
        start = nl + 1;
    }
    Some(())
}

/// Slice boundaries at line starts.
fn slices(f: &std::fs::File, size: u64) -> Option<Vec<u64>> {
    let n = size.div_ceil(SLICE).max(1);
    let mut b = vec![0u64];
    let mut probe = vec![0u8; 1 << 16];
    for k in 1..n {
        let mut at = (size / n * k).max(*b.last().unwrap());
        loop {
            let got = f.read_at(&mut probe, at).ok()?;
            if got == 0 {
                return Some(finish(b, size));
            }
            if let Some(i) = memchr::memchr(b'\n', &probe[..got]) {
                at += i as u64 + 1;
                break;
            }
            at += got as u64;
        }
        if at < size && at > *b.last().unwrap() {
            b.push(at);
        }
    }
    Some(finish(b, size))
}

fn finish(mut b: Vec<u64>, size: u64) -> Vec<u64> {
    b.push(size);
    b
}

/// Search an AgentDbg source the fast way; None when this path does not apply or is not sure
/// (the caller then searches it with a full load).
pub(super) fn search(run: &RunRef, o: &Options) -> Option<Result<SourceResult, LoadError>> {
    if run.format.id() != "agentdbg" || o.filter.is_some() {
        return None;
    }
    let pre = o.pattern.prefilter()?;
    let (run_json, events) = agentdbg::locate(&run.path);
    let f = formats::open_regular(&events).ok()?;
    let size = f.metadata().ok()?.len();
    let bounds = slices(&f, size)?;
    let sc = Scan {
        pre,
        errors: !o.pattern.verbatim,
    };
    // One slice (most files) is read here: handing it to the pool would cost a wake-up.
    // Its buffer is kept to the end: a file read in one piece is still in it, and the lines
    // to parse and the payloads to decode are taken from there, not read again.
    let mut buf = Lent(Vec::new());
    let parts: Vec<Option<Part>> = if bounds.len() == 2 {
        buf.0 = BUF.take();
        vec![read_part_with(&f, &sc, bounds[0], bounds[1], &mut buf.0)]
    } else {
        bounds.par_windows(2).map(|w| read_part(&f, &sc, w[0], w[1])).collect()
    };
    if parts.len() == 1
        && let Some(Some(p)) = parts.first()
        && p.skipped
    {
        return source_without_candidates(run, &events, pre);
    }
    let whole = bounds.len() == 2 && matches!(parts.first(), Some(Some(p)) if p.whole);
    let mut recs: Vec<Rec> = Vec::new();
    let mut run_id: Option<Vec<u8>> = None;
    let mut line_base = 0u64;
    for p in parts {
        let p = p?;
        match (&run_id, p.run) {
            (Some(a), Some(b)) if *a != b => return None,
            (None, Some(b)) => run_id = Some(b),
            _ => {}
        }
        recs.extend(p.recs.into_iter().map(|r| Rec {
            line: r.line + line_base,
            ..r
        }));
        line_base += p.lines;
    }
    if !recs.iter().any(|r| r.cand) {
        return source_without_candidates(run, &events, pre);
    }
    let held = whole.then(|| &buf.0[..size as usize]);
    Some(search_kept(run_json.as_deref(), &events, &f, held, &recs, o))
}

/// The worker's buffer ([`BUF`]) while a search holds it: given back on every return.
struct Lent(Vec<u8>);

impl Drop for Lent {
    fn drop(&mut self) {
        // A buffer grown for a very long line is not kept.
        if !self.0.is_empty() && self.0.len() <= 2 * CHUNK {
            BUF.set(std::mem::take(&mut self.0));
        }
    }
}

/// As the full search: a source whose files hold no candidate at all is not searched; when
/// another of its files has one (run.json), the full search decides.
fn source_without_candidates(
    run: &RunRef,
    events: &Path,
    pre: &regex::bytes::Regex,
) -> Option<Result<SourceResult, LoadError>> {
    for file in source_files(&run.path).into_iter().filter(|p| p != events) {
        if scan_file(&file, pre).ok()?.is_none_or(|c| !c.lines.is_empty()) {
            return None;
        }
    }
    Some(Ok(SourceResult::default()))
}

fn search_kept(
    run_json: Option<&Path>,
    events: &Path,
    f: &std::fs::File,
    held: Option<&[u8]>,
    recs: &[Rec],
    o: &Options,
) -> Result<SourceResult, LoadError> {
    let mut keep: Vec<bool> = recs.iter().map(|r| r.cand || r.ty != Ty::Plain).collect();
    // Ancestors by id, level by level (a few levels; ids are hashed, a collision keeps a
    // line too many, which is harmless).
    let mut want: FxHashSet<u64> = recs
        .iter()
        .zip(&keep)
        .filter(|(r, k)| **k && r.parent != 0)
        .map(|(r, _)| r.parent)
        .collect();
    let mut seen: FxHashSet<u64> = FxHashSet::default();
    while !want.is_empty() {
        seen.extend(want.iter().copied());
        let mut next = FxHashSet::default();
        for (r, k) in recs.iter().zip(keep.iter_mut()) {
            if !*k && r.id != 0 && want.contains(&r.id) {
                *k = true;
                if r.parent != 0 && !seen.contains(&r.parent) {
                    next.insert(r.parent);
                }
            }
        }
        want = next;
    }
    // Each line's index in the whole trace (the parser's rule: a RUN_END after the run's
    // RUN_START closes it instead of adding an event).
    let mut index_of: FxHashMap<u64, u32> = FxHashMap::default();
    let (mut n, mut root, mut ended) = (0u32, false, false);
    for (r, k) in recs.iter().zip(&keep) {
        let adds = match r.ty {
            Ty::Start => {
                root = true;
                true
            }
            Ty::End => {
                let adds = !root || ended;
                ended = true;
                adds
            }
            _ => true,
        };
        if adds {
            if *k {
                index_of.insert(r.off, n);
            }
            n += 1;
        }
    }
    // The kept lines through the format's own parser, in file order.
    let mut parser = agentdbg::Parser::new(run_json);
    let mut sink = formats::jsonl::Sink::new(events);
    parser.refresh(&mut sink);
    let mut buf = Vec::new();
    for (r, _) in recs.iter().zip(&keep).filter(|(_, k)| **k) {
        let line = match held.and_then(|h| h.get(r.off as usize..r.off as usize + r.len as usize)) {
            Some(l) => l,
            None => {
                buf.resize(r.len as usize, 0);
                f.read_exact_at(&mut buf, r.off).map_err(|e| LoadError::io(events, e))?;
                &buf
            }
        };
        let loc = formats::jsonl::LineLoc {
            line: r.line,
            offset: r.off,
            len: line.len(),
        };
        parser.line(line, loc, &mut sink);
    }
    parser.flush(&mut sink);
    let loaded = sink.finish("AgentDbg events")?;
    let cands = Candidates {
        lines: recs
            .iter()
            .filter(|r| r.cand)
            .map(|r| (r.off, r.off + r.len as u64 + 1))
            .collect(),
    };
    let mut scanned: HashMap<PathBuf, Option<Candidates>> = HashMap::new();
    scanned.insert(events.to_path_buf(), Some(cands));
    let mut out = SourceResult {
        loaded: true,
        ..Default::default()
    };
    for (index, t) in loaded.traces.into_iter().enumerate() {
        let open = super::OpenFile {
            path: events,
            file: f,
            bytes: held,
        };
        let mut hits: Vec<Hit> = search_trace_in(&t, o, &mut scanned, Some(open));
        for h in &mut hits {
            let e = t.event(h.event);
            // Every kept line has its index; a made-up event (none in this format) keeps its own.
            if let Some(&i) = index_of.get(&{ e.origin.offset }) {
                h.index = i;
            }
        }
        if !hits.is_empty() {
            out.traces.push(TraceHits { index, trace: t, hits });
        }
    }
    Ok(out)
}

/// The payload of an AgentDbg error event as [`AgentDbg`](agentdbg)'s `decode_payload` gives
/// it, but its error alone (what [`super::search_trace`] needs of an error event whose
/// record the raw scan ruled out): the record is read as text, not built into values, but
/// its error. `None`: not sure (a second record, another event type, a record that does not
/// read or whose payload is so big that the full search would stop before its error); the
/// caller decodes all of it.
pub(super) fn error_only(
    t: &crate::model::Trace,
    e: &crate::model::Event,
    open: Option<super::OpenFile>,
) -> Option<crate::model::Payload> {
    use crate::model::{ErrorInfo, EventKind, Payload};
    use serde_json::value::RawValue;
    #[derive(serde::Deserialize)]
    struct Record<'a> {
        #[serde(borrow, default)]
        event_type: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow, default)]
        payload: Option<&'a RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct Call<'a> {
        #[serde(borrow, default)]
        error: Option<&'a RawValue>,
    }
    if e.origin2.is_some() || t.meta.format != "agentdbg" {
        return None;
    }
    let raw = super::raw::read_record(t, e.origin, open).ok()?;
    // `payload_hits` visits at most 1,000,000 values of the arguments and result before the
    // error; a record with so many takes more than 2 bytes a value.
    if raw.len() >= 2_000_000 {
        return None;
    }
    let rec: Record = serde_json::from_slice(&raw).ok()?;
    let payload = rec.payload.map(RawValue::get).unwrap_or("null");
    let error = match rec.event_type.as_deref()? {
        // `fill_payload`: the payload's "error" when it is an object, else none.
        "TOOL_CALL" | "LLM_CALL" if payload.starts_with('{') => {
            let call: Call = serde_json::from_str(payload).ok()?;
            match call.error {
                Some(v) => ErrorInfo::from_value(&serde_json::from_str(v.get()).ok()?),
                None => None,
            }
        }
        "TOOL_CALL" | "LLM_CALL" => None,
        "ERROR" => ErrorInfo::from_value(&serde_json::from_str(payload).ok()?),
        _ => return None,
    };
    let error = match error {
        None if e.kind == EventKind::Error => Some(ErrorInfo {
            message: "error".into(),
            ..Default::default()
        }),
        other => other,
    };
    Some(Payload {
        error,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_is_read_up_to_the_payload() {
        let l = br#"{"spec_version": "0.1", "event_id": "e2", "run_id": "r", "parent_id": "e1", "event_type": "TOOL_CALL", "ts": "x", "duration_ms": 5, "name": "read", "payload": {"tool_name": "read", "error": null}, "meta": {}}"#;
        let (id, parent, ty, run) = head(l, true).unwrap();
        assert_eq!((id, parent, ty, run), (hash(b"e2"), hash(b"e1"), Ty::Plain, &b"r"[..]));
        let err = br#"{"event_id": "e2", "run_id": "r", "parent_id": null, "event_type": "TOOL_CALL", "name": "read", "payload": {"error": {"code": 1}}}"#;
        assert_eq!(head(err, true).unwrap().2, Ty::Keep);
        assert_eq!(head(err, false).unwrap().2, Ty::Plain);
        let unnamed = br#"{"event_id": "e2", "run_id": "r", "parent_id": null, "event_type": "LLM_CALL", "name": "", "payload": {}}"#;
        assert_eq!(head(unnamed, false).unwrap().2, Ty::Keep);
        // Not sure: another key order, an escape, no run, a cut line.
        for l in [
            &br#"{"event_id": "e2", "payload": {}, "run_id": "r", "parent_id": null, "event_type": "TOOL_CALL", "name": "x"}"#[..],
            br#"{"event_id": "e\u0032", "run_id": "r", "parent_id": null, "event_type": "TOOL_CALL", "name": "x", "payload": {}}"#,
            br#"{"event_id": "e2", "parent_id": null, "event_type": "TOOL_CALL", "name": "x", "payload": {}}"#,
            br#"{"event_id": "e2", "run_id": "r", "parent_id": null, "event_type": "TOOL_CALL", "name": "x", "payload": {"#,
        ] {
            assert!(head(l, true).is_none(), "{}", String::from_utf8_lossy(l));
        }
    }

    use proptest::prelude::*;

    /// One line of a generated run: (id, parent, type, name, payload, shape).
    fn line() -> impl Strategy<Value = String> {
        let id = prop::sample::select(vec!["e0", "e1", "e2", "e3", "e4", "e5", "e1"]);
        let parent = prop::sample::select(vec!["null", "\"e0\"", "\"e1\"", "\"e2\"", "\"\"", "\"nope\""]);
        let ty = prop::sample::select(vec![
            "RUN_START",
            "RUN_END",
            "LLM_CALL",
            "LLM_CALL",
            "TOOL_CALL",
            "TOOL_CALL",
            "STATE_UPDATE",
            "ERROR",
            "LOOP_WARNING",
            "CUSTOM",
        ]);
        let name = prop::sample::select(vec!["\"alpha\"", "\"\"", "null", "\"needle x\"", "\"read\""]);
        let payload = prop::sample::select(vec![
            r#"{"tool_name": "read", "args": {"q": "nee\ndle"}, "result": "a \"needle\" b", "status": "ok", "error": null}"#,
            r#"{"model": "m", "prompt": "needle", "response": "x", "error": {"code": 1, "k": "v"}}"#,
            r#"{"model": "", "prompt": "p", "status": "error"}"#,
            r#"{"tool_name": "x", "error": "needle broke", "status": "error"}"#,
            r#"{"tool_name": "x", "error": 1, "result": [1, 2]}"#,
            r#"{"tool_name": "x", "error": {"rows": [1, 2], "why": "a,b"}}"#,
            r#"{"run_name": "needle run", "status": "ok"}"#,
            r#"{"error_type": "Boom", "message": "a needle"}"#,
            r#"{"state": {"needle": [1, 2]}, "error": null}"#,
            "null",
            "{}",
        ]);
        // 0: usual; 1: CRLF; 2: payload before name (the full path); 3: an escaped id;
        // 4: another run; 5: a cut line; 6: a blank line after it.
        let shape = prop::sample::select(vec![0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6]);
        (id, parent, ty, name, payload, shape).prop_map(|(id, parent, ty, name, payload, shape)| {
            let run = if shape == 4 { "r2" } else { "r1" };
            let id = if shape == 3 { "e\\u0031".to_string() } else { id.to_string() };
            let mut l = if shape == 2 {
                format!(r#"{{"event_id": "{id}", "run_id": "{run}", "parent_id": {parent}, "event_type": "{ty}", "payload": {payload}, "name": {name}, "meta": {{}}}}"#)
            } else {
                format!(r#"{{"spec_version": "0.1", "event_id": "{id}", "run_id": "{run}", "parent_id": {parent}, "event_type": "{ty}", "ts": "2026-02-15T20:31:00.000Z", "duration_ms": 5, "name": {name}, "payload": {payload}, "meta": {{}}}}"#)
            };
            match shape {
                1 => l.push('\r'),
                5 => l.truncate(l.len() * 2 / 3),
                6 => l.push_str("\n  "),
                _ => {}
            }
            l
        })
    }

    fn rows(run: &RunRef, r: Result<SourceResult, LoadError>) -> Vec<serde_json::Value> {
        let Ok(r) = r else {
            return vec![serde_json::json!("error")];
        };
        let mut out = Vec::new();
        for th in &r.traces {
            for h in &th.hits {
                let mut v = crate::report::grep::hit_json(run, &th.trace, h);
                v["trace_index"] = th.index.into();
                out.push(v);
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
        /// The fast path's output is the full search's, line for line.
        #[test]
        fn the_fast_path_agrees_with_a_full_load(
            lines in prop::collection::vec(line(), 1..14),
            pat in prop::sample::select(vec![
                "needle", "alpha", "llm", "state", "error", "Boom", "read", "1,", "CUSTOM a", "a needle",
                // Only in an error object written out again (or in its keys and literals).
                "code", "v", "k", "null", "true", "\"k\":\"v", "1,2",
            ]),
            ic in any::<bool>(),
            max in prop::option::of(1usize..3),
            run_json in any::<bool>(),
        ) {
            let d = tempfile::tempdir().unwrap();
            let dir = d.path().join("run");
            std::fs::create_dir(&dir).unwrap();
            if run_json {
                std::fs::write(dir.join("run.json"), r#"{"spec_version": "0.1", "run_id": "r1", "run_name": "n", "status": "ok"}"#).unwrap();
            }
            std::fs::write(dir.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
            let run = crate::source::discover(std::slice::from_ref(&dir), None).runs[0].clone();
            let o = Options { pattern: crate::search::grep::Pattern::new(pat, ic, false).unwrap(), filter: None, max_count: max };
            let full = rows(&run, super::super::search_source_loaded(&run, &o));
            let fast = super::search(&run, &o);
            if let Some(fast) = fast {
                prop_assert_eq!(rows(&run, fast), full);
            }
        }
    }

    /// A TOOL_CALL, LLM_CALL or ERROR line with an error of some shape, numbers and JSON text
    /// in a string among its values.
    fn error_line() -> impl Strategy<Value = String> {
        let ty = prop::sample::select(vec!["TOOL_CALL", "LLM_CALL", "ERROR"]);
        let error = prop::sample::select(vec![
            "null",
            r#""needle broke""#,
            r#"{"error_type": "Boom", "message": "a needle", "stack": "tb", "n": 1.50}"#,
            r#"{"code": {"x": 1}, "detail": "needle"}"#,
            r#"{"code": 1E3, "msg": "n\u00e9edle"}"#,
            r#"{"type": "T", "error": "needle", "extra": [1, {"k": "needle"}]}"#,
            "[1, 2]",
            "7",
            "true",
        ]);
        let rest = prop::sample::select(vec![
            r#""args": {"n": 1.50, "m": 1E3, "q": "needle"}, "result": "{\"rows\": [1e2, \"needle\"]}""#,
            r#""prompt": "p", "response": "x", "status": "error""#,
            r#""error_type": "Boom", "message": "m", "stack": "needle", "nested": {"error": {"k": 2}}"#,
            r#""result": null"#,
        ]);
        let shape = prop::sample::select(vec![0, 1, 2]);
        (ty, error, rest, shape).prop_map(|(ty, error, rest, shape)| {
            let payload = match shape {
                0 => format!(r#"{{{rest}, "error": {error}}}"#),
                1 => format!(r#"{{"error": {error}, {rest}}}"#),
                _ => "[1]".to_string(),
            };
            format!(r#"{{"event_id": "e1", "run_id": "r1", "parent_id": null, "event_type": "{ty}", "name": "x", "payload": {payload}, "meta": {{}}}}"#)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
        /// `error_only` gives the error a full decode gives, and where the raw scan rules the
        /// record out and the pattern is number-free, the whole payload has no hit but the
        /// error's: what `search_trace` relies on to decode the error alone.
        #[test]
        fn an_error_decoded_alone_has_the_hits_of_the_whole_payload(
            line in error_line(),
            pat in prop::sample::select(vec!["needle", "Boom", "1.5", "1000.0", "100.0", "\"x\":1", "code", "tb", "1,2", "error", "né"]),
            ic in any::<bool>(),
        ) {
            let d = tempfile::tempdir().unwrap();
            let dir = d.path().join("run");
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("events.jsonl"), line + "\n").unwrap();
            let run = crate::source::discover(std::slice::from_ref(&dir), None).runs[0].clone();
            let p = crate::search::grep::Pattern::new(pat, ic, false).unwrap();
            for t in run.load().unwrap().traces {
                for i in 0..t.len() as u32 {
                    let e = t.event(i);
                    if !e.is_error() {
                        continue;
                    }
                    let Some(alone) = error_only(&t, e, None) else { continue };
                    let full = formats::payload(&t, e);
                    prop_assert_eq!(&alone.error, &full.error);
                    let raw = formats::read_origin(&t, e.origin).unwrap();
                    if p.number_free && p.prefilter().is_some_and(|pre| !pre.is_match(&raw)) {
                        prop_assert_eq!(
                            super::super::payload_hits(&p, e.kind, &alone),
                            super::super::payload_hits(&p, e.kind, &full)
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_call_whose_error_is_written_out_again_is_kept_unless_the_pattern_is_verbatim() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("run");
        std::fs::create_dir(&dir).unwrap();
        let ev = |id: &str, ty: &str, payload: &str| {
            format!(
                r#"{{"event_id": "{id}", "run_id": "r1", "parent_id": null, "event_type": "{ty}", "name": "x", "payload": {payload}, "meta": {{}}}}"#
            )
        };
        let lines = [
            ev("e0", "RUN_START", r#"{"run_name": "run"}"#),
            // The message is `{"rows":[1,2],"why":"a,b"}`: "1,2" is in it, not in the line.
            ev(
                "e1",
                "TOOL_CALL",
                r#"{"tool_name": "x", "error": {"rows": [1, 2], "why": "a,b"}}"#,
            ),
            ev("e2", "TOOL_CALL", r#"{"tool_name": "x", "result": "needle 1,2"}"#),
            ev("e3", "RUN_END", r#"{"status": "ok"}"#),
        ];
        std::fs::write(dir.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
        let run = crate::source::discover(std::slice::from_ref(&dir), None).runs[0].clone();
        let search = |pat: &str| {
            let o = Options {
                pattern: crate::search::grep::Pattern::new(pat, false, false).unwrap(),
                filter: None,
                max_count: None,
            };
            let fast = super::search(&run, &o).expect("the fast path applies").unwrap();
            let len = fast.traces.first().map_or(0, |t| t.trace.len());
            let rows_fast = rows(&run, Ok(fast));
            assert_eq!(
                rows_fast,
                rows(&run, super::super::search_source_loaded(&run, &o)),
                "{pat}"
            );
            (rows_fast.len(), len)
        };
        assert_eq!(search("1,2").0, 2, "the rebuilt error and the result");
        // "needle" cannot be in text rebuilt from e1: e1 is not read (the run, e2, its end).
        assert_eq!(search("needle"), (1, 2));
    }

    #[test]
    fn the_fast_path_is_taken_and_finds_what_a_full_load_finds() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("run");
        std::fs::create_dir(&dir).unwrap();
        let ev = |id: &str, parent: &str, ty: &str, name: &str, payload: &str| {
            format!(
                r#"{{"spec_version": "0.1", "event_id": "{id}", "run_id": "r1", "parent_id": {parent}, "event_type": "{ty}", "ts": "2026-02-15T20:31:00.000Z", "duration_ms": 5, "name": "{name}", "payload": {payload}, "meta": {{}}}}"#
            )
        };
        let mut lines = vec![ev("e0", "null", "RUN_START", "run", r#"{"run_name": "run"}"#)];
        for i in 1..200 {
            lines.push(ev(
                &format!("l{i}"),
                "\"e0\"",
                "LLM_CALL",
                "gpt",
                r#"{"prompt": "p", "error": null}"#,
            ));
            let result = if i == 150 {
                "the ne\\\"edle and the needle"
            } else {
                "hay"
            };
            lines.push(ev(
                &format!("t{i}"),
                &format!("\"l{i}\""),
                "TOOL_CALL",
                "read",
                &format!(r#"{{"tool_name": "read", "result": "{result}"}}"#),
            ));
        }
        lines.push(ev("e9", "\"e0\"", "RUN_END", "run", r#"{"status": "ok"}"#));
        std::fs::write(dir.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
        let run = crate::source::discover(std::slice::from_ref(&dir), None).runs[0].clone();
        let o = Options {
            pattern: crate::search::grep::Pattern::new("needle", false, false).unwrap(),
            filter: None,
            max_count: None,
        };
        let fast = super::search(&run, &o).expect("the fast path applies").unwrap();
        // The partial trace holds the hit, its ancestors, the root: not the 400 others.
        assert!(fast.traces[0].trace.len() < 10, "{}", fast.traces[0].trace.len());
        let rows_fast = rows(&run, Ok(fast));
        assert_eq!(rows_fast, rows(&run, super::super::search_source_loaded(&run, &o)));
        assert_eq!(rows_fast.len(), 1);
        assert_eq!(rows_fast[0]["event_index"], 300);
        assert_eq!(rows_fast[0]["path"], serde_json::json!(["gpt", "read"]));
        assert_eq!(rows_fast[0]["line"], 301);
    }
}
