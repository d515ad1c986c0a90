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

use crate::model::{format_duration, format_ts};
use serde_json::Value;

/// One value as a short single line: JSON compact, strings unquoted, cut to `max` chars.
pub fn short(v: &Value, max: usize) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    cut(&crate::sanitize::line(&s), max)
}

/// `1 error`, `2 errors`: a count with its noun (regular plurals).
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A count with its noun, the plural given (`1 match`, `2 matches`).
pub fn count_as(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Cut to `max` characters with an ellipsis.
pub fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

pub fn ts_or_dash(ns: Option<i64>) -> String {
    ns.map(format_ts).unwrap_or_else(|| "-".into())
}

pub fn dur_or_dash(ns: Option<i64>) -> String {
    ns.map(format_duration).unwrap_or_else(|| "-".into())
}

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
