//! Non-interactive output: `check`, `show`, `ls`, `diff` as text or JSON. Text passes through the
//! sanitizer: stdout may be a terminal.

pub mod check;
pub mod diff;
pub mod ls;
pub mod show;

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
