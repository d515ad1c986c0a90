//! What the formats' unit tests share.

use crate::model::Trace;
use std::path::{Path, PathBuf};

/// A fixture file of one format: `tests/fixtures/<format>/<name>`.
pub fn fixture(format: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format)
        .join(name)
}

/// The tree as text, a line an event: `<indent><kind> <name>`.
pub fn outline(t: &Trace) -> Vec<String> {
    t.walk()
        .iter()
        .map(|&(i, d)| format!("{}{} {}", "  ".repeat(d), t.event(i).kind.as_str(), t.name(i)))
        .collect()
}
