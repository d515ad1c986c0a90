//! Non-interactive output: `check`, `show`, `ls`, `diff` as text or JSON. Text passes through the
//! sanitizer: stdout may be a terminal.

pub mod check;
pub mod compare;
pub mod compare_tree;
pub mod diff;
pub mod diff_html;
pub mod diff_md;
pub mod grep;
pub mod ls;
pub mod money;
pub mod prices;
pub mod show;
pub mod sources;
pub mod stats;
pub mod transcript;
pub mod usage;

use serde_json::Value;

/// One value as a short single line: JSON compact, strings unquoted, cut to `max` chars.
pub fn short(v: &Value, max: usize) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    cut(&crate::sanitize::line(&s), max)
}

pub use crate::words::{count, count_as, cut, dur_or_dash, ts_or_dash};

pub fn num_or_dash<T: std::fmt::Display>(n: Option<T>) -> String {
    n.map(|x| x.to_string()).unwrap_or_else(|| "-".into())
}

/// Free a large load on another thread: a report usually ends the process right after, and
/// freeing a million events one allocation at a time takes longer than exiting (~50 ms).
pub(crate) fn drop_in_background(loaded: crate::formats::Loaded) {
    let events: usize = loaded.traces.iter().map(|t| t.events.len()).sum();
    if events < 100_000 {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("drop".into())
        .spawn(move || drop(loaded));
}
