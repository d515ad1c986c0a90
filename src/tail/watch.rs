//! Wake-ups for the tail: file-system notifications (notify, debounced) on the watched
//! directory, with a polling fallback for file systems where notify sees nothing.

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// Why the tail woke up.
#[derive(Debug, PartialEq, Eq)]
pub enum Wake {
    /// These paths changed (temporary `*.tmp` files already left out).
    Changed(Vec<PathBuf>),
    /// Nothing was notified within the poll interval: look at everything.
    Tick,
    /// Notify may have lost events (its queue overflowed, or it reported an error): what it
    /// would have said is found only by walking the tree again.
    Rescan,
}

/// What the notify handler passes on: changed paths, or `None` for "events were lost".
type Note = Option<Vec<PathBuf>>;

pub struct Watch {
    rx: Option<Receiver<Note>>,
    _watcher: Option<RecommendedWatcher>,
    poll: Duration,
    /// While notify reports changes, the safety-net tick backs off from `poll` up to
    /// [`IDLE_MAX`] as long as nothing happens: an idle tail looked at everything every
    /// half second.
    idle: std::cell::Cell<Duration>,
}

/// The longest wait between two safety-net ticks while notify works.
pub const IDLE_MAX: Duration = Duration::from_secs(8);

/// Debounce window: short, so that a line written shows up well under 50 ms later.
const DEBOUNCE: Duration = Duration::from_millis(15);

/// Whether an event can mean new content. Opening and reading a file are events too (inotify
/// reports them): our own reads must not wake us, or every read causes another, and a
/// directory of 2,000 runs was summarized twice at start.
fn is_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

impl Watch {
    /// Watch `root` (recursively). `poll_only` skips notify entirely (`--poll MS`); without it
    /// the poll interval still runs as a safety net.
    pub fn new(root: &Path, poll: Duration, poll_only: bool) -> Watch {
        Watch::new_many(std::slice::from_ref(&root.to_path_buf()), poll, poll_only)
    }

    /// Watch every root that exists (a directory recursively, a file through its directory).
    /// Notify is used only when it can watch every one of them: otherwise polling covers all.
    pub fn new_many(roots: &[PathBuf], poll: Duration, poll_only: bool) -> Watch {
        let polling = Watch {
            rx: None,
            _watcher: None,
            poll,
            idle: std::cell::Cell::new(poll),
        };
        let existing: Vec<&PathBuf> = roots.iter().filter(|r| r.exists()).collect();
        if poll_only || existing.is_empty() {
            return polling;
        }
        let (tx, rx) = channel();
        let handler = move |res: notify::Result<notify::Event>| match res {
            Ok(e) if e.need_rescan() => {
                let _ = tx.send(None);
            }
            Ok(e) if is_change(&e.kind) => {
                let _ = tx.send(Some(e.paths));
            }
            Ok(_) => {}
            // An error may mean a lost event (a watch that could not be added to a new
            // directory, a read of the queue that failed).
            Err(_) => {
                let _ = tx.send(None);
            }
        };
        let Ok(mut d) = notify::recommended_watcher(handler) else {
            return polling;
        };
        for root in existing {
            if watch_root(&mut d, root).is_none() {
                return polling;
            }
        }
        Watch {
            rx: Some(rx),
            _watcher: Some(d),
            poll,
            idle: std::cell::Cell::new(poll),
        }
    }

    /// Watch one more root (one that appeared since). False when notify cannot (the caller
    /// polls for it).
    pub fn add(&mut self, root: &Path) -> bool {
        match self._watcher.as_mut() {
            Some(d) => watch_root(d, root).is_some(),
            None => false,
        }
    }

    pub fn is_notifying(&self) -> bool {
        self.rx.is_some()
    }

    /// Wait for the next change, or for the poll interval to pass.
    pub fn next(&self) -> Wake {
        self.next_within(None)
    }

    /// [`Watch::next`], waiting no longer than `most` when given (the caller has something
    /// to do by then).
    pub fn next_within(&self, most: Option<Duration>) -> Wake {
        let cap = |d: Duration| most.map_or(d, |m| d.min(m));
        let Some(rx) = &self.rx else {
            std::thread::sleep(cap(self.poll));
            return Wake::Tick;
        };
        match rx.recv_timeout(cap(self.idle.get())) {
            Ok(first) => {
                self.idle.set(self.poll);
                // Debounce: what else arrives within the window is one wake-up (a writer's
                // burst, a file written in two parts).
                let mut lost = first.is_none();
                let mut paths = first.unwrap_or_default();
                let until = Instant::now() + DEBOUNCE;
                while let Ok(more) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                    match more {
                        Some(more) => paths.extend(more),
                        None => lost = true,
                    }
                }
                if lost {
                    return Wake::Rescan;
                }
                paths.retain(|p| p.extension().is_none_or(|x| x != "tmp"));
                paths.sort();
                paths.dedup();
                if paths.is_empty() {
                    Wake::Tick
                } else {
                    Wake::Changed(paths)
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                // Only a full wait without news backs off (a short one was the caller's).
                if most.is_none_or(|m| m >= self.idle.get()) {
                    self.idle.set((self.idle.get() * 2).min(IDLE_MAX.max(self.poll)));
                }
                Wake::Tick
            }
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(cap(self.poll));
                Wake::Tick
            }
        }
    }
}

/// Watch a directory recursively; a file through its directory (writers replace files by
/// rename), not recursively.
fn watch_root(d: &mut RecommendedWatcher, root: &Path) -> Option<()> {
    if root.is_dir() {
        d.watch(root, RecursiveMode::Recursive).ok()
    } else {
        d.watch(root.parent()?, RecursiveMode::NonRecursive).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_is_not_a_change_and_writing_is() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("events.jsonl");
        std::fs::write(&f, b"{}\n").unwrap();
        let w = Watch::new(dir.path(), Duration::from_millis(300), false);
        assert!(w.is_notifying());
        // Our own reads (open, read, close) must not wake the watcher: each wake reads again.
        for _ in 0..3 {
            std::fs::read(&f).unwrap();
        }
        assert_eq!(w.next(), Wake::Tick);
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&f)
            .unwrap()
            .write_all(b"{}\n")
            .unwrap();
        assert_eq!(w.next(), Wake::Changed(vec![f.clone()]));
    }

    #[test]
    fn an_idle_watch_backs_off_and_a_change_resets_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("events.jsonl");
        std::fs::write(&f, b"{}\n").unwrap();
        let poll = Duration::from_millis(20);
        let w = Watch::new(dir.path(), poll, false);
        assert!(w.is_notifying());
        let t0 = Instant::now();
        for _ in 0..4 {
            assert_eq!(w.next(), Wake::Tick);
        }
        // 20 + 40 + 80 + 160 ms at least: each quiet tick doubles the wait.
        assert!(t0.elapsed() >= Duration::from_millis(300), "{:?}", t0.elapsed());
        assert_eq!(w.idle.get(), Duration::from_millis(320));
        std::fs::write(&f, b"{}\n{}\n").unwrap();
        assert!(matches!(w.next(), Wake::Changed(_)));
        assert_eq!(w.idle.get(), poll, "a change brings the interval back");
    }
}
