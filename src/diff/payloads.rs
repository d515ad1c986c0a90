//! Payloads for the calls a diff pairs. `formats::payload` opens the file for every event,
//! which is right for the detail pane but dominates a diff of 100k deferred events; here each
//! file is opened once per reader and read by positioned reads of a window of records, so
//! paired calls, which mostly come in file order, cost one system call per window, not one each.

use super::ignore::is_volatile_key;
use crate::formats::{self, Format};
use crate::model::{ErrorInfo, Event, Origin, Payload, PayloadRef, Trace};
use std::fs::File;

pub struct PayloadReader<'t> {
    trace: &'t Trace,
    format: Option<&'static dyn Format>,
    files: Vec<Option<Window>>,
}

/// Bytes read at once: a few hundred records of a typical trace.
const WINDOW: usize = 256 * 1024;

/// An open file and the bytes last read from it, starting at `start`.
struct Window {
    file: File,
    start: u64,
    buf: Vec<u8>,
}

impl Window {
    /// The bytes of `offset .. offset + len`, read with the window that follows them when they
    /// are not in the current one; fewer only at the end of the file.
    fn slice(&mut self, offset: u64, len: usize) -> std::io::Result<&[u8]> {
        let held = offset >= self.start && offset + len as u64 <= self.start + self.buf.len() as u64;
        if !held {
            self.buf.resize(len.max(WINDOW), 0);
            let n = read_at_full(&self.file, &mut self.buf, offset)?;
            self.buf.truncate(n);
            self.start = offset;
        }
        let from = (offset - self.start) as usize;
        Ok(&self.buf[from..(from + len).min(self.buf.len())])
    }
}

impl<'t> PayloadReader<'t> {
    pub fn new(trace: &'t Trace) -> Self {
        PayloadReader {
            trace,
            format: formats::by_id(trace.meta.format),
            files: Vec::new(),
        }
    }

    pub fn get(&mut self, ev: &Event) -> Payload {
        match self.records(ev) {
            None => inline(ev),
            Some(Ok(raws)) => self.decode(ev, &raws),
            Some(Err(e)) => unreadable(e),
        }
    }

    /// The raw record(s) of a deferred payload; `None` when the payload is not on disk.
    pub fn records(&mut self, ev: &Event) -> Option<std::io::Result<Vec<Vec<u8>>>> {
        if !matches!(ev.payload, PayloadRef::Deferred) {
            return None;
        }
        let mut raws = Vec::with_capacity(2);
        for o in std::iter::once(ev.origin).chain(ev.origin2.as_deref().copied()) {
            match self.read(o) {
                Ok(b) => raws.push(b),
                Err(e) => return Some(Err(e)),
            }
        }
        Some(Ok(raws))
    }

    pub fn decode(&self, ev: &Event, raws: &[Vec<u8>]) -> Payload {
        let Some(format) = self.format else {
            return Payload::default();
        };
        let refs: Vec<&[u8]> = raws.iter().map(Vec::as_slice).collect();
        format.decode_payload(self.trace, ev, &refs)
    }

    fn read(&mut self, o: Origin) -> std::io::Result<Vec<u8>> {
        let i = o.file as usize;
        if self.files.len() <= i {
            self.files.resize_with(i + 1, || None);
        }
        if self.files[i].is_none() {
            let path = self
                .trace
                .files
                .get(i)
                .ok_or_else(|| std::io::Error::other("event has no source file"))?;
            self.files[i] = Some(Window {
                file: crate::formats::open_regular(path)?,
                start: 0,
                buf: Vec::new(),
            });
        }
        let w = self.files[i].as_mut().expect("opened above");
        Ok(w.slice(o.offset, o.len as usize)?.to_vec())
    }
}

/// The payload of an event that is not deferred.
pub fn inline(ev: &Event) -> Payload {
    match &ev.payload {
        PayloadRef::Inline(p) => (**p).clone(),
        _ => Payload::default(),
    }
}

/// Whether two records say the same thing apart from their volatile envelope fields (event id,
/// timestamp, duration, parent and run ids: see `VOLATILE_KEYS`). Their payloads then decode
/// alike, so the costly decoding is skipped. Byte-identical records (a replayed or copied run)
/// are the same without parsing; otherwise only the top level is parsed, without copying
/// values, and anything unexpected answers `false` so the payloads are decoded and compared.
pub fn same_records(a: &[Vec<u8>], b: &[Vec<u8>]) -> bool {
    use serde_json::value::RawValue;
    type Fields<'a> = Vec<(&'a str, &'a RawValue)>;
    fn fields(raw: &[u8]) -> Option<Fields<'_>> {
        let m: std::collections::BTreeMap<&str, &RawValue> = serde_json::from_slice(raw).ok()?;
        Some(m.into_iter().filter(|(k, _)| !is_volatile_key(k)).collect())
    }
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x == y
                || match (fields(x), fields(y)) {
                    (Some(fx), Some(fy)) => {
                        fx.len() == fy.len()
                            && fx
                                .iter()
                                .zip(&fy)
                                .all(|((ka, va), (kb, vb))| ka == kb && va.get() == vb.get())
                    }
                    _ => false,
                }
        })
}

fn unreadable(e: std::io::Error) -> Payload {
    Payload {
        error: Some(ErrorInfo {
            kind: Some("unreadable".into()),
            message: format!("could not read the record from disk: {e}"),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Read up to `buf.len()` bytes at `offset`; fewer only at the end of the file.
fn read_at_full(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match read_at(f, &mut buf[n..], offset + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(unix)]
fn read_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(f, buf, offset)
}

#[cfg(windows)]
fn read_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(f, buf, offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recs(s: &[&str]) -> Vec<Vec<u8>> {
        s.iter().map(|x| x.as_bytes().to_vec()).collect()
    }

    #[test]
    fn records_equal_but_for_the_envelope_are_the_same() {
        let a = recs(&[r#"{"event_id":"1","ts":"t1","duration_ms":5,"name":"x","payload":{"args":{"a":1}}}"#]);
        let b = recs(&[r#"{"payload":{"args":{"a":1}},"name":"x","event_id":"2","ts":"t2","duration_ms":9}"#]);
        assert!(same_records(&a, &b));
        let c = recs(&[r#"{"event_id":"2","name":"x","payload":{"args":{"a":2}}}"#]);
        assert!(!same_records(&a, &c));
        let d = recs(&[r#"{"event_id":"2","name":"x","payload":{"args":{"a":1}},"meta":{}}"#]);
        assert!(!same_records(&a, &d), "an extra field differs");
        assert!(!same_records(&a, &recs(&["not json"])));
        // byte-identical records decode alike whatever they hold: no parsing needed
        assert!(same_records(&recs(&["not json"]), &recs(&["not json"])));
        assert!(same_records(&a, &a.clone()));
        assert!(!same_records(&a, &[a[0].clone(), a[0].clone()]));
    }

    fn reader_over(content: &[u8]) -> (tempfile::TempDir, Trace) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.jsonl");
        std::fs::write(&path, content).unwrap();
        let mut t = Trace::default();
        t.files.push(path);
        (dir, t)
    }

    #[test]
    fn windowed_reads_return_each_record_wherever_it_lies() {
        // Records of varied sizes, one larger than the window, read in file order, backwards
        // and at random, give the bytes a fresh read at the offset gives.
        let mut content = Vec::new();
        let mut origins = Vec::new();
        for i in 0..400usize {
            let len = match i {
                7 => WINDOW + 1000,
                _ => 50 + (i * 7919) % 3000,
            };
            let rec: Vec<u8> = (0..len).map(|k| b'a' + ((i + k) % 26) as u8).collect();
            origins.push(Origin {
                file: 0,
                line: i as u32 + 1,
                offset: content.len() as u64,
                len: len as u32,
            });
            content.extend_from_slice(&rec);
            content.push(b'\n');
        }
        let (_dir, t) = reader_over(&content);
        let expect = |o: &Origin| content[o.offset as usize..(o.offset + o.len as u64) as usize].to_vec();
        let mut order: Vec<usize> = (0..origins.len()).collect();
        let mut r = PayloadReader::new(&t);
        for &i in &order {
            assert_eq!(r.read(origins[i]).unwrap(), expect(&origins[i]), "record {i} in order");
        }
        order.reverse();
        for &i in &order {
            assert_eq!(r.read(origins[i]).unwrap(), expect(&origins[i]), "record {i} backwards");
        }
        order.sort_by_key(|&i| (i * 104729) % 401);
        for &i in &order {
            assert_eq!(r.read(origins[i]).unwrap(), expect(&origins[i]), "record {i} shuffled");
        }
    }

    #[test]
    fn a_record_cut_by_the_end_of_the_file_reads_short() {
        let (_dir, t) = reader_over(b"{\"a\":1}\n{\"b\"");
        let mut r = PayloadReader::new(&t);
        let o = |offset, len| Origin {
            file: 0,
            line: 1,
            offset,
            len,
        };
        assert_eq!(r.read(o(8, 8)).unwrap(), b"{\"b\"");
        assert_eq!(r.read(o(0, 7)).unwrap(), b"{\"a\":1}");
        assert_eq!(r.read(o(40, 5)).unwrap(), b"");
        assert!(
            PayloadReader::new(&Trace::default()).read(o(0, 1)).is_err(),
            "no source file"
        );
    }
}
