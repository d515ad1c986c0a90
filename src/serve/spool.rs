//! Where received batches go: one OTLP/JSON object a line, as the OpenTelemetry Collector's
//! file exporter writes them, in files rotated by size. With `--save DIR` that is DIR (made if
//! missing); otherwise a private temporary directory removed at exit. Only files this process
//! created are ever written (opened with `create_new`): nothing already in DIR is touched.
//!
//! A trace stays in one file: the spans of a trace begun before a rotation go on to the file
//! that holds its beginning (a batch mixing such traces is split by trace id), so that each
//! file read alone, live or later with `tracetui DIR`, holds whole traces and the runs are
//! the same either way.

use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A trace id, as OTLP sends it (16 bytes).
pub type TraceKey = [u8; 16];

/// Traces whose file is remembered, at most (the oldest are forgotten first: a span that
/// comes later than that many other traces starts its trace anew in the current file).
const HOMES: usize = 1 << 17;

pub struct Spool {
    dir: PathBuf,
    /// A private directory, removed when the spool is dropped.
    _temp: Option<tempfile::TempDir>,
    /// Files written, oldest first: (path, still open for appends).
    file: Option<(PathBuf, File)>,
    stamp: String,
    /// The current file's number (1-based index in `files`).
    seq: u32,
    /// The last number used in a file name (a name taken already is skipped).
    name_seq: u32,
    bytes: u64,
    spans: usize,
    /// Rotate after this many bytes or spans in one file.
    pub rotate_bytes: u64,
    pub rotate_spans: usize,
    /// Every file started, by number - 1; None once removed ([`Spool::remove`]).
    files: Vec<Option<PathBuf>>,
    /// Which file (number) holds each trace, and the order they were first seen in.
    home: HashMap<TraceKey, u32>,
    order: VecDeque<TraceKey>,
    /// Spans written to each file (by number - 1), including those routed to it later.
    file_spans: Vec<usize>,
}

impl Spool {
    /// `save`: the directory to keep the session in, or None for a private temporary one.
    pub fn new(save: Option<&Path>, rotate_bytes: u64, rotate_spans: usize) -> std::io::Result<Spool> {
        let (dir, temp) = match save {
            Some(d) => {
                std::fs::create_dir_all(d)?;
                (d.to_path_buf(), None)
            }
            None => {
                let t = tempfile::Builder::new().prefix("tracetui-otlp-").tempdir()?;
                (t.path().to_path_buf(), Some(t))
            }
        };
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
        Ok(Spool {
            dir,
            _temp: temp,
            file: None,
            stamp,
            seq: 0,
            name_seq: 0,
            bytes: 0,
            spans: 0,
            rotate_bytes: rotate_bytes.max(1),
            rotate_spans: rotate_spans.max(1),
            files: Vec::new(),
            home: HashMap::new(),
            order: VecDeque::new(),
            file_spans: Vec::new(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the directory is private (its files may be deleted once released).
    pub fn is_private(&self) -> bool {
        self._temp.is_some()
    }

    pub fn current(&self) -> Option<&Path> {
        self.file.as_ref().map(|(p, _)| p.as_path())
    }

    /// Append one batch line whose trace ids are `traces` (see [`super::receiver::Incoming`]);
    /// returns the path of a file this append started, if it did. Spans of traces that began
    /// in an earlier file are written there.
    pub fn append(
        &mut self,
        line: &[u8],
        spans: usize,
        traces: &[(TraceKey, bool)],
    ) -> std::io::Result<Option<PathBuf>> {
        let mut started = None;
        // A file full: the next one is started only when something is written to it (a batch
        // of traces that all began earlier leaves no empty file behind).
        let full = self.file.is_none() || self.bytes >= self.rotate_bytes || self.spans >= self.rotate_spans;
        let cur = if full { self.files.len() as u32 + 1 } else { self.seq };
        let mut elsewhere = false;
        for (k, _) in traces {
            match self.home.get(k) {
                Some(&n) if n != cur => elsewhere |= self.files.get(n as usize - 1).is_some_and(Option::is_some),
                Some(_) => {}
                None => {
                    self.home.insert(*k, cur);
                    self.order.push_back(*k);
                }
            }
        }
        while self.order.len() > HOMES {
            if let Some(k) = self.order.pop_front() {
                self.home.remove(&k);
            }
        }
        let parts = if elsewhere { self.split(line, cur) } else { None };
        // Not what the receiver writes if it does not split (it cannot happen): kept whole.
        let parts = parts.unwrap_or_else(|| vec![(cur, line.to_vec(), spans)]);
        for (n, part, count) in parts {
            if n == cur {
                if full && started.is_none() {
                    started = Some(self.rotate()?);
                }
                self.write_current(&part, count)?;
            } else if let Some(Some(p)) = self.files.get(n as usize - 1) {
                // An earlier file: opened for this append only (few batches go back).
                let mut f = std::fs::OpenOptions::new().append(true).open(p)?;
                f.write_all(&with_newline(&part))?;
                self.file_spans[n as usize - 1] += count;
            }
        }
        Ok(started)
    }

    fn write_current(&mut self, line: &[u8], spans: usize) -> std::io::Result<()> {
        let (_, f) = self.file.as_mut().expect("a file was opened");
        // One write of line + newline: a reader never sees a line without its end for long,
        // and the format's reader holds a partial line until its newline comes anyway.
        let buf = with_newline(line);
        f.write_all(&buf)?;
        self.bytes += buf.len() as u64;
        self.spans += spans;
        if let Some(n) = self.file_spans.get_mut(self.seq as usize - 1) {
            *n += spans;
        }
        Ok(())
    }

    /// Which file a trace id (hex, as the JSON line has it) goes to.
    fn home_of(&self, id: Option<&str>, cur: u32) -> u32 {
        id.and_then(hex16)
            .and_then(|k| self.home.get(&k).copied())
            .filter(|&n| self.files.get(n as usize - 1).is_some_and(Option::is_some))
            .unwrap_or(cur)
    }

    /// A batch line cut into one line per file its traces belong to: (file number, line,
    /// spans in it). The resource and scope of each span or log record go with it.
    fn split(&self, line: &[u8], cur: u32) -> Option<Vec<(u32, Vec<u8>, usize)>> {
        let v: Value = serde_json::from_slice(line).ok()?;
        let (res_key, scope_key, item_key, spans) = if v.get("resourceSpans").is_some() {
            ("resourceSpans", "scopeSpans", "spans", true)
        } else {
            ("resourceLogs", "scopeLogs", "logRecords", false)
        };
        let resources = v.get(res_key)?.as_array()?;
        let mut targets: Vec<u32> = Vec::new();
        for r in resources {
            for sc in r.get(scope_key).and_then(Value::as_array).into_iter().flatten() {
                for it in sc.get(item_key).and_then(Value::as_array).into_iter().flatten() {
                    let n = self.home_of(it.get("traceId").and_then(Value::as_str), cur);
                    if !targets.contains(&n) {
                        targets.push(n);
                    }
                }
            }
        }
        let mut out = Vec::new();
        for n in targets {
            let mut count = 0;
            let mut rs_out = Vec::new();
            for r in resources {
                let mut scopes_out = Vec::new();
                for sc in r.get(scope_key).and_then(Value::as_array).into_iter().flatten() {
                    let items: Vec<Value> = sc
                        .get(item_key)
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter(|it| self.home_of(it.get("traceId").and_then(Value::as_str), cur) == n)
                        .cloned()
                        .collect();
                    if items.is_empty() {
                        continue;
                    }
                    count += items.len();
                    let mut sc = sc.clone();
                    sc[item_key] = Value::Array(items);
                    scopes_out.push(sc);
                }
                if !scopes_out.is_empty() {
                    let mut r = r.clone();
                    r[scope_key] = Value::Array(scopes_out);
                    rs_out.push(r);
                }
            }
            let mut m = serde_json::Map::new();
            m.insert(res_key.to_string(), Value::Array(rs_out));
            let bytes = serde_json::to_vec(&Value::Object(m)).ok()?;
            out.push((n, bytes, if spans { count } else { 0 }));
        }
        Some(out)
    }

    /// The files started so far, oldest first, with the spans written to each (None: removed).
    pub fn files(&self) -> impl Iterator<Item = (Option<&Path>, usize)> {
        self.files.iter().zip(&self.file_spans).map(|(p, &n)| (p.as_deref(), n))
    }

    /// A file is gone (a private spool's file whose traces were all dropped): its traces'
    /// later spans start them anew in the current file.
    pub fn remove(&mut self, path: &Path) -> std::io::Result<()> {
        let Some(i) = self.files.iter().position(|p| p.as_deref() == Some(path)) else {
            return Ok(());
        };
        self.files[i] = None;
        let n = i as u32 + 1;
        self.home.retain(|_, h| *h != n);
        std::fs::remove_file(path)
    }

    fn rotate(&mut self) -> std::io::Result<PathBuf> {
        loop {
            self.name_seq += 1;
            let p = self.dir.join(format!(
                "otlp-{}-{}-{:04}.jsonl",
                self.stamp,
                std::process::id(),
                self.name_seq
            ));
            match std::fs::OpenOptions::new().append(true).create_new(true).open(&p) {
                Ok(f) => {
                    self.file = Some((p.clone(), f));
                    // Numbers are the index in `files`, + 1, whatever names were skipped.
                    self.files.push(Some(p.clone()));
                    self.file_spans.push(0);
                    self.seq = self.files.len() as u32;
                    self.bytes = 0;
                    self.spans = 0;
                    return Ok(p);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

fn with_newline(line: &[u8]) -> Vec<u8> {
    let mut buf = Vec::with_capacity(line.len() + 1);
    buf.extend_from_slice(line);
    buf.push(b'\n');
    buf
}

/// A 32-digit hex trace id as 16 bytes.
fn hex16(s: &str) -> Option<TraceKey> {
    let b = s.as_bytes();
    if b.len() != 32 {
        return None;
    }
    let mut k = [0u8; 16];
    for (i, pair) in b.chunks(2).enumerate() {
        let d = |c: u8| (c as char).to_digit(16);
        k[i] = (d(pair[0])? * 16 + d(pair[1])?) as u8;
    }
    Some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_rotate_by_size_and_existing_files_are_left_alone() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("mine.json"), "keep").unwrap();
        let mut s = Spool::new(Some(d.path()), 10, 1000).unwrap();
        let a = s.append(b"{\"resourceSpans\":[]}", 1, &[]).unwrap();
        assert!(a.is_some());
        let b = s.append(b"{\"resourceSpans\":[]}", 1, &[]).unwrap();
        assert!(b.is_some() && a != b, "over 10 bytes: a new file");
        assert_eq!(std::fs::read_to_string(d.path().join("mine.json")).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(a.unwrap()).unwrap(), "{\"resourceSpans\":[]}\n");
        let mut s = Spool::new(Some(d.path()), 1 << 20, 2).unwrap();
        assert!(s.append(b"{}", 2, &[]).unwrap().is_some());
        assert!(s.append(b"{}", 1, &[]).unwrap().is_some(), "two spans: a new file");
    }

    #[test]
    fn a_private_spool_is_removed_when_dropped() {
        let s = Spool::new(None, 1 << 20, 100).unwrap();
        let dir = s.dir().to_path_buf();
        assert!(dir.is_dir() && s.is_private());
        drop(s);
        assert!(!dir.exists());
    }

    fn batch(spans: &[(&str, &str)]) -> (Vec<u8>, Vec<(TraceKey, bool)>) {
        let spans: Vec<Value> = spans
            .iter()
            .map(|(t, sid)| serde_json::json!({"traceId": t, "spanId": sid, "name": sid}))
            .collect();
        let line = serde_json::json!({"resourceSpans": [{"resource": {"attributes": []},
            "scopeSpans": [{"scope": {"name": "s"}, "spans": spans}]}]});
        let mut keys: Vec<(TraceKey, bool)> = Vec::new();
        for s in line["resourceSpans"][0]["scopeSpans"][0]["spans"].as_array().unwrap() {
            let k = hex16(s["traceId"].as_str().unwrap()).unwrap();
            if !keys.iter().any(|(o, _)| *o == k) {
                keys.push((k, false));
            }
        }
        (serde_json::to_vec(&line).unwrap(), keys)
    }

    fn ids(p: &Path) -> Vec<String> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .flat_map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["resourceSpans"][0]["scopeSpans"][0]["spans"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| {
                        format!(
                            "{}/{}",
                            &s["traceId"].as_str().unwrap()[..1],
                            s["spanId"].as_str().unwrap()
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn a_trace_begun_before_a_rotation_stays_in_its_file() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = ("a".repeat(32), "b".repeat(32));
        let mut s = Spool::new(Some(d.path()), 1 << 20, 2).unwrap();
        let (l, k) = batch(&[(&a, "a1"), (&a, "a2")]);
        let first = s.append(&l, 2, &k).unwrap().unwrap();
        // Two spans: the file is full. A batch of both traces is cut in two.
        let (l, k) = batch(&[(&b, "b1"), (&a, "a3"), (&b, "b2")]);
        let second = s.append(&l, 3, &k).unwrap().unwrap();
        assert_eq!(ids(&first), ["a/a1", "a/a2", "a/a3"]);
        assert_eq!(ids(&second), ["b/b1", "b/b2"]);
        let counts: Vec<usize> = s.files().map(|(_, n)| n).collect();
        assert_eq!(counts, [3, 2]);
        // The second file is full too; spans of trace a alone start no (empty) third file.
        let (l, k) = batch(&[(&a, "a5")]);
        assert_eq!(s.append(&l, 1, &k).unwrap(), None);
        assert_eq!(ids(&first), ["a/a1", "a/a2", "a/a3", "a/a5"]);
        assert_eq!(s.files().count(), 2);
        // A file removed: its trace's later spans start anew in the current one.
        s.remove(&first).unwrap();
        assert!(!first.exists());
        let (l, k) = batch(&[(&a, "a4")]);
        s.append(&l, 1, &k).unwrap();
        let third = s.current().unwrap().to_path_buf();
        assert_eq!(ids(&third), ["a/a4"]);
        assert_eq!(hex16("zz"), None);
        assert_eq!(hex16(&"0f".repeat(16)), Some([15; 16]));
    }
}
