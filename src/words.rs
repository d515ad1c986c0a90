//! Words around numbers and text, for every output: counts with their nouns, text cut to a
//! width, times or `-`, the backtick fence a text needs. It imports only `model` (the base),
//! so the core (`source`, `export`, `tail`) and the reports share it without importing each
//! other.

use crate::model::{format_duration, format_ts};

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

/// The longest run of backticks in `s`: a code span or fence must be longer to hold it.
pub fn longest_backtick_run(s: &str) -> usize {
    let (mut best, mut cur) = (0, 0);
    for c in s.chars() {
        if c == '`' {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}

/// A time as `format_ts` writes it, or `-`.
pub fn ts_or_dash(ns: Option<i64>) -> String {
    ns.map(format_ts).unwrap_or_else(|| "-".into())
}

/// A duration as `format_duration` writes it, or `-`.
pub fn dur_or_dash(ns: Option<i64>) -> String {
    ns.map(format_duration).unwrap_or_else(|| "-".into())
}
