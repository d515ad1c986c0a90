//! Wake-ups for the tail: file-system notifications (notify, debounced) on the watched
//! directory, with a polling fallback for file systems where notify sees nothing.

use notify::RecursiveMode;
use notify_debouncer_mini::{DebounceEventResult, Debouncer, new_debouncer};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

/// Why the tail woke up.
#[derive(Debug, PartialEq, Eq)]
pub enum Wake {
    /// These paths changed (temporary `*.tmp` files already left out).
    Changed(Vec<PathBuf>),
    /// Nothing was notified within the poll interval: look at everything.
    Tick,
}

pub struct Watch {
    rx: Option<Receiver<DebounceEventResult>>,
    _debouncer: Option<Debouncer<notify::RecommendedWatcher>>,
    poll: Duration,
}

/// Debounce window: short, so that a line written shows up well under 50 ms later.
const DEBOUNCE: Duration = Duration::from_millis(15);

impl Watch {
    /// Watch `root` (recursively). `poll_only` skips notify entirely (`--poll MS`); without it
    /// the poll interval still runs as a safety net.
    pub fn new(root: &Path, poll: Duration, poll_only: bool) -> Watch {
        if poll_only || !root.exists() {
            return Watch {
                rx: None,
                _debouncer: None,
                poll,
            };
        }
        let (tx, rx) = channel();
        let deb = new_debouncer(DEBOUNCE, tx).ok().and_then(|mut d| {
            let mode = if root.is_dir() {
                RecursiveMode::Recursive
            } else {
                RecursiveMode::NonRecursive
            };
            // Watch the directory of a single file: writers replace files by rename.
            let target = if root.is_dir() {
                root.to_path_buf()
            } else {
                root.parent()?.to_path_buf()
            };
            d.watcher().watch(&target, mode).ok()?;
            Some(d)
        });
        match deb {
            Some(d) => Watch {
                rx: Some(rx),
                _debouncer: Some(d),
                poll,
            },
            None => Watch {
                rx: None,
                _debouncer: None,
                poll,
            },
        }
    }

    pub fn is_notifying(&self) -> bool {
        self.rx.is_some()
    }

    /// Wait for the next change, or for the poll interval to pass.
    pub fn next(&self) -> Wake {
        let Some(rx) = &self.rx else {
            std::thread::sleep(self.poll);
            return Wake::Tick;
        };
        match rx.recv_timeout(self.poll) {
            Ok(Ok(events)) => {
                let mut paths: Vec<PathBuf> = events
                    .into_iter()
                    .map(|e| e.path)
                    .filter(|p| p.extension().is_none_or(|x| x != "tmp"))
                    .collect();
                // Gather whatever else is already queued: one read serves many writes.
                while let Ok(Ok(more)) = rx.try_recv() {
                    paths.extend(more.into_iter().map(|e| e.path));
                }
                paths.sort();
                paths.dedup();
                if paths.is_empty() {
                    Wake::Tick
                } else {
                    Wake::Changed(paths)
                }
            }
            Ok(Err(_)) | Err(RecvTimeoutError::Timeout) => Wake::Tick,
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(self.poll);
                Wake::Tick
            }
        }
    }
}
