//! Payloads for the calls a diff pairs. `formats::payload` opens the file for every event,
//! which is right for the detail pane but dominates a diff of 100k deferred events; here each
//! file is opened once per reader and records are read by positioned reads.

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
        match &ev.payload {
            PayloadRef::None => Payload::default(),
            PayloadRef::Inline(p) => (**p).clone(),
            PayloadRef::Deferred => {
                let Some(format) = self.format else {
                    return Payload::default();
                };
                let mut raws = Vec::with_capacity(2);
                for o in std::iter::once(ev.origin).chain(ev.origin2) {
                    match self.read(o) {
                        Ok(b) => raws.push(b),
                        Err(e) => return unreadable(e),
                    }
                }
                let refs: Vec<&[u8]> = raws.iter().map(Vec::as_slice).collect();
                format.decode_payload(self.trace, ev, &refs)
            }
        }
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
