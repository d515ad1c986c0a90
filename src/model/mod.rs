//! The shared event tree (DESIGN §2). No I/O, no terminal: every format loads into this,
//! every view and report reads from it.

pub mod chat;
mod event;
pub mod micros;
mod payload;
mod strings;
mod time;
mod trace;
pub mod usage;

pub use event::Event;
pub use event::{EventKind, NO_PARENT, Nanos, Origin, Role, Status, Usage, UsageCell};
pub use payload::{ErrorInfo, Marker, Payload, PayloadRef, markers_in};
pub use strings::{StrRef, Strings};
pub use time::{format_duration, format_ts, parse_timestamp, parse_timestamp_ms, parse_timestamp_str};
pub use trace::{
    Counts, Diagnostic, NewEvent, Parent, RECORDED_COST_ATTR, RECORDED_USAGE_ATTR, RunMeta, RunStatus, Severity,
    Skipped, Trace, counts_of,
};

/// `12345` → `12,345`: every count tracetui prints, whole and grouped.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
