//! Files a directory scan found not to be traces, remembered with their metadata so a later
//! scan does not open them again while they are unchanged: an explorer watching a tree of
//! 300k other files re-opened every one of them at each walk.

use crate::formats::{self, Format, LoadError};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

/// What identifies a file's content well enough: a write changes its length or time, a
/// replacement its inode.
type Stamp = (u64, u64, i64, i64);

/// Kept at most; past it the memo starts over (a scan stops at `MAX_ENTRIES` entries anyway).
const MAX: usize = 400_000;

static MEMO: LazyLock<Mutex<HashMap<PathBuf, Stamp>>> = LazyLock::new(Default::default);

fn stamp(p: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(p).ok()?;
    Some((m.ino(), m.len(), m.mtime(), m.mtime_nsec()))
}

/// Detect `p`'s format, or `None` when it was found not to be a trace and is unchanged since.
/// Errors other than "not a trace" (it could not be read) are not remembered.
pub fn detect(p: &Path) -> Option<Result<&'static dyn Format, LoadError>> {
    let st = stamp(p);
    let memo = |m: &HashMap<PathBuf, Stamp>| st.is_some() && m.get(p) == st.as_ref();
    if memo(&MEMO.lock().unwrap_or_else(|e| e.into_inner())) {
        return None;
    }
    let r = formats::detect(p);
    if let (Err(LoadError::NotATrace { .. }), Some(st)) = (&r, st) {
        let mut m = MEMO.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() >= MAX {
            m.clear();
        }
        m.insert(p.to_path_buf(), st);
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchanged_other_file_is_not_opened_again_and_a_changed_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("notes.jsonl");
        std::fs::write(&f, br#"{"name":"x"}"#).unwrap();
        assert!(matches!(detect(&f), Some(Err(LoadError::NotATrace { .. }))));
        assert!(detect(&f).is_none(), "remembered while unchanged");
        // Becomes a trace (a recorder wrote its first line where a stub was).
        let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude-code/session.jsonl");
        std::fs::copy(trace, &f).unwrap();
        assert!(matches!(detect(&f), Some(Ok(_))), "a changed file is detected again");
    }
}
