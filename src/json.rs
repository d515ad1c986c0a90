//! JSON as every output of tracetui writes it (`check`, `show`, `ls`, `diff`, `tail --no-tui`, errors).
//!
//! serde_json escapes only C0 controls, `"` and `\`. Whatever else a terminal or another
//! program may act on when it prints or embeds a string is escaped as `\uXXXX` here too: DEL,
//! the C1 controls (U+0080–U+009F: U+009B is a one-byte CSI), the bidi controls (they reorder
//! what a reader sees), and U+2028/U+2029 (line breaks to JavaScript). The text is the same
//! JSON value; only its spelling is safer.
//!
//! Paths are written lossily (a path need not be UTF-8), with `"path_lossy": true` beside
//! them when something was replaced; times are RFC 3339 UTC with milliseconds.

use serde::Serialize;
use std::io::{self, Write};
use std::path::Path;

/// Whether a character is written as `\uXXXX` although JSON allows it raw.
pub fn needs_escape(c: char) -> bool {
    matches!(c,
        '\u{7f}'..='\u{9f}'
        | '\u{061c}'
        | '\u{200e}' | '\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}'
        | '\u{2028}' | '\u{2029}')
}

/// serde_json's compact formatter, with the escapes above inside strings.
struct Safe;

impl serde_json::ser::Formatter for Safe {
    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, fragment: &str) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if needs_escape(c) {
                w.write_all(&fragment.as_bytes()[start..i])?;
                write!(w, "\\u{:04x}", c as u32)?;
                start = i + c.len_utf8();
            }
        }
        w.write_all(&fragment.as_bytes()[start..])
    }
}

/// Write `v` as one line of JSON.
pub fn write_line<T: Serialize + ?Sized>(out: &mut dyn Write, v: &T) -> io::Result<()> {
    write(out, v)?;
    out.write_all(b"\n")
}

/// Write `v` as JSON (no newline).
pub fn write<T: Serialize + ?Sized>(mut out: &mut dyn Write, v: &T) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Safe);
    v.serialize(&mut ser).map_err(io::Error::other)
}

/// A path as JSON text: lossy where it is not UTF-8 (the flag says so).
fn path(p: &Path) -> (String, bool) {
    match p.to_str() {
        Some(s) => (s.to_string(), false),
        None => (p.to_string_lossy().into_owned(), true),
    }
}

/// serde `serialize_with` for a path field: lossy, never an error.
pub fn serialize_path<S: serde::Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

/// Add `"<key>": path` (and `"<key>_lossy": true` when it had to be made UTF-8) to a JSON object.
pub fn put_path(obj: &mut serde_json::Value, key: &str, p: &Path) {
    let (text, lossy) = path(p);
    obj[key] = serde_json::Value::String(text);
    if lossy {
        obj[format!("{key}_lossy")] = serde_json::Value::Bool(true);
    }
}

/// A time in JSON output: RFC 3339, UTC, milliseconds (`2026-02-15T20:31:05.123Z`).
pub fn ts(ns: i64) -> String {
    use chrono::{TimeZone, Utc};
    Utc.timestamp_nanos(ns).format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// serde `serialize_with` for an optional time field.
pub fn serialize_ts<S: serde::Serializer>(t: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(ns) => s.serialize_str(&ts(*ns)),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn to_string<T: Serialize + ?Sized>(v: &T) -> String {
        let mut buf = Vec::new();
        write(&mut buf, v).unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn what_serde_leaves_raw_is_escaped() {
        let v = json!({"k\u{9b}": "a\u{7f}b\u{9b}[31mc\u{202e}d\u{2028}e\u{2069}\u{61c}é✓\u{1b}"});
        let s = to_string(&v);
        assert_eq!(
            s,
            r#"{"k\u009b":"a\u007fb\u009b[31mc\u202ed\u2028e\u2069\u061cé✓\u001b"}"#
        );
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back, v, "the same value, spelled safely");
    }

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(ts(1_771_187_465_123_456_789), "2026-02-15T20:31:05.123Z");
        assert_eq!(ts(0), "1970-01-01T00:00:00.000Z");
    }

    #[cfg(unix)]
    #[test]
    fn a_path_that_is_not_utf8_is_written_lossily_and_said_so() {
        use std::os::unix::ffi::OsStrExt;
        let p = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/a\xffb"));
        let mut v = json!({});
        put_path(&mut v, "path", p);
        assert_eq!(v, json!({"path": "/tmp/a\u{fffd}b", "path_lossy": true}));
        let mut v = json!({});
        put_path(&mut v, "path", Path::new("/tmp/ok"));
        assert_eq!(v, json!({"path": "/tmp/ok"}));
    }

    proptest! {
        /// Any string: valid JSON that reads back as the same string, and nothing in the
        /// output a terminal would act on (no control, DEL, C1, bidi, or line separator).
        #[test]
        fn any_string_round_trips_and_is_inert(s in any::<String>()) {
            let out = to_string(&json!({ s.clone(): s.clone() }));
            prop_assert!(!out.chars().any(|c| c.is_control() || needs_escape(c)), "{out:?}");
            let back: serde_json::Value = serde_json::from_str(&out).unwrap();
            prop_assert_eq!(back, json!({ s.clone(): s }));
        }
    }
}
