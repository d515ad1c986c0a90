//! Payloads for the calls a diff pairs. `formats::payload` opens the file for every event,
//! which is right for the detail pane but dominates a diff of 100k deferred events; here each
//! file is opened once per reader and records are read by positioned reads.

use super::ignore::is_volatile_key;
use crate::formats::{self, Format};
use crate::model::{ErrorInfo, Event, Origin, Payload, PayloadRef, Trace};
use std::fs::File;

pub struct PayloadReader<'t> {
    trace: &'t Trace,
    format: Option<&'static dyn Format>,
    files: Vec<Option<File>>,
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
        for o in std::iter::once(ev.origin).chain(ev.origin2) {
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
            self.files[i] = Some(File::open(path)?);
        }
        let f = self.files[i].as_ref().expect("opened above");
        let mut buf = vec![0; o.len as usize];
        let n = read_at_full(f, &mut buf, o.offset)?;
        buf.truncate(n);
        Ok(buf)
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
/// alike, so the costly decoding is skipped. Only the top level is parsed, without copying
/// values; anything unexpected answers `false` and the payloads are decoded and compared.
pub fn same_records(a: &[Vec<u8>], b: &[Vec<u8>]) -> bool {
    use serde_json::value::RawValue;
    type Fields<'a> = Vec<(&'a str, &'a RawValue)>;
    fn fields(raw: &[u8]) -> Option<Fields<'_>> {
        let m: std::collections::BTreeMap<&str, &RawValue> = serde_json::from_slice(raw).ok()?;
        Some(m.into_iter().filter(|(k, _)| !is_volatile_key(k)).collect())
    }
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (fields(x), fields(y)) {
            (Some(fx), Some(fy)) => {
                fx.len() == fy.len()
                    && fx
                        .iter()
                        .zip(&fy)
                        .all(|((ka, va), (kb, vb))| ka == kb && va.get() == vb.get())
            }
            _ => false,
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
        assert!(!same_records(&a, &[a[0].clone(), a[0].clone()]));
    }
}
