//! Where received batches go: one OTLP/JSON object a line, as the OpenTelemetry Collector's
//! file exporter writes them, in files rotated by size. With `--save DIR` that is DIR (made if
//! missing); otherwise a private temporary directory removed at exit. Only files this process
//! created are ever written (opened with `create_new`): nothing already in DIR is touched.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct Spool {
    dir: PathBuf,
    /// A private directory, removed when the spool is dropped.
    _temp: Option<tempfile::TempDir>,
    /// Files written, oldest first: (path, still open for appends).
    file: Option<(PathBuf, File)>,
    stamp: String,
    seq: u32,
    bytes: u64,
    spans: usize,
    /// Rotate after this many bytes or spans in one file.
    pub rotate_bytes: u64,
    pub rotate_spans: usize,
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
            bytes: 0,
            spans: 0,
            rotate_bytes: rotate_bytes.max(1),
            rotate_spans: rotate_spans.max(1),
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

    /// Append one batch line; returns the path of a file this append started, if it did.
    pub fn append(&mut self, line: &[u8], spans: usize) -> std::io::Result<Option<PathBuf>> {
        let mut started = None;
        if self.file.is_none() || self.bytes >= self.rotate_bytes || self.spans >= self.rotate_spans {
            started = Some(self.rotate()?);
        }
        let (_, f) = self.file.as_mut().expect("a file was just opened");
        // One write of line + newline: a reader never sees a line without its end for long,
        // and the format's reader holds a partial line until its newline comes anyway.
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line);
        buf.push(b'\n');
        f.write_all(&buf)?;
        self.bytes += buf.len() as u64;
        self.spans += spans;
        Ok(started)
    }

    fn rotate(&mut self) -> std::io::Result<PathBuf> {
        loop {
            self.seq += 1;
            let p = self.dir.join(format!(
                "otlp-{}-{}-{:04}.jsonl",
                self.stamp,
                std::process::id(),
                self.seq
            ));
            match std::fs::OpenOptions::new().append(true).create_new(true).open(&p) {
                Ok(f) => {
                    self.file = Some((p.clone(), f));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_rotate_by_size_and_existing_files_are_left_alone() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("mine.json"), "keep").unwrap();
        let mut s = Spool::new(Some(d.path()), 10, 1000).unwrap();
        let a = s.append(b"{\"resourceSpans\":[]}", 1).unwrap();
        assert!(a.is_some());
        let b = s.append(b"{\"resourceSpans\":[]}", 1).unwrap();
        assert!(b.is_some() && a != b, "over 10 bytes: a new file");
        assert_eq!(std::fs::read_to_string(d.path().join("mine.json")).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(a.unwrap()).unwrap(), "{\"resourceSpans\":[]}\n");
        let mut s = Spool::new(Some(d.path()), 1 << 20, 2).unwrap();
        assert!(s.append(b"{}", 2).unwrap().is_some());
        assert!(s.append(b"{}", 1).unwrap().is_some(), "two spans: a new file");
    }

    #[test]
    fn a_private_spool_is_removed_when_dropped() {
        let s = Spool::new(None, 1 << 20, 100).unwrap();
        let dir = s.dir().to_path_buf();
        assert!(dir.is_dir() && s.is_private());
        drop(s);
        assert!(!dir.exists());
    }
}
