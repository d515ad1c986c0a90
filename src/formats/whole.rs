//! Whole JSON documents read at once, whose parts keep their byte ranges: a format that
//! reads a document (a SWE-agent trajectory, an OpenHands V0 event list) parses it into
//! unparsed parts ([`RawValue`]s borrowing from the bytes), parses one part at a time for the
//! index, and leaves each event's payload on disk with its part's byte range as the event's
//! origin, decoded again when shown (issue 13: no payloads held in the index). Only the bytes
//! and one part's value are in memory at once, where a [`serde_json::Value`] of the whole
//! document took several times the file.

use super::LoadError;
use crate::model::Origin;
use serde_json::Value;
use serde_json::value::RawValue;
use std::path::Path;

/// The bytes of a document, size-checked before anything is read; refused as
/// [`super::read_json_file`] refuses it when it is not JSON or nests too deep.
pub fn read_checked(path: &Path, limit: u64) -> Result<Vec<u8>, LoadError> {
    use std::io::Read;
    let f = super::open_regular(path).map_err(|e| LoadError::io(path, e))?;
    let too_large = || LoadError::invalid(path, format!("larger than {} MiB; not read", limit >> 20));
    if f.metadata().is_ok_and(|m| m.len() > limit) {
        return Err(too_large());
    }
    let mut buf = Vec::new();
    f.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| LoadError::io(path, e))?;
    if buf.len() as u64 > limit {
        return Err(too_large());
    }
    // The raw reads accept any depth: a document nested past serde_json's limit is refused
    // as the whole-value read refuses it.
    if super::nested_too_deep(&buf) {
        serde_json::from_slice::<Value>(&buf).map_err(|e| invalid(path, &e))?;
    }
    Ok(buf)
}

/// The first byte of the file at `path` that is not whitespace, read from its head only (a
/// format that streams a list and reads anything else whole tells the two apart by it).
pub fn first_byte_of(path: &Path) -> Result<Option<u8>, LoadError> {
    use std::io::Read;
    let mut f = super::open_regular(path).map_err(|e| LoadError::io(path, e))?;
    let mut buf = [0u8; 8192];
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => return Ok(None),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(LoadError::io(path, e)),
        };
        if let Some(b) = first_byte(&buf[..n]) {
            return Ok(Some(b));
        }
    }
}

/// A document's error as the whole-value read words it.
pub fn invalid(path: &Path, e: &serde_json::Error) -> LoadError {
    LoadError::invalid(path, super::jsonl::json_error(e))
}

/// The document being read, for the origins of its parts.
#[derive(Clone, Copy)]
pub struct Doc<'a> {
    pub buf: &'a [u8],
    pub file: u16,
}

impl Doc<'_> {
    /// The origin of a part of the document. Line 0: the document is one value (and `show`
    /// says so, as it did when the payloads were held).
    pub fn origin(&self, part: &RawValue) -> Origin {
        let offset = part.get().as_ptr() as usize - self.buf.as_ptr() as usize;
        Origin {
            file: self.file,
            line: 0,
            offset: offset as u64,
            len: part.get().len().min(u32::MAX as usize) as u32,
        }
    }
}

/// The elements of a JSON list, unparsed (None: not a list).
pub fn raw_list(r: &RawValue) -> Option<Vec<&RawValue>> {
    if !r.get().starts_with('[') {
        return None;
    }
    serde_json::from_str(r.get()).ok()
}

/// A part of a document already checked as JSON (and for depth).
pub fn parse(r: &RawValue) -> Value {
    serde_json::from_str(r.get()).unwrap_or(Value::Null)
}

/// The first byte of a document that is not whitespace.
pub fn first_byte(buf: &[u8]) -> Option<u8> {
    buf.iter().copied().find(|b| !b.is_ascii_whitespace())
}

/// A payload that says the record of an event could not be decoded.
pub fn unreadable() -> crate::model::Payload {
    crate::model::Payload {
        error: Some(crate::model::ErrorInfo {
            kind: Some("unreadable".into()),
            message: "the record of this event cannot be decoded".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The first element of a JSON list that `f` takes (gives `Some` for), parsing the elements
/// one at a time and none after it: a list's first element, or the first of its kind, costs
/// no pass over the rest of a long list. None: not a list, or no element taken.
pub fn find_in_list<T>(r: &RawValue, f: impl FnMut(Value) -> Option<T>) -> Option<T> {
    struct Find<'o, T, F> {
        f: F,
        found: &'o mut Option<T>,
    }
    impl<'de, T, F: FnMut(Value) -> Option<T>> serde::de::Visitor<'de> for Find<'_, T, F> {
        type Value = ();
        fn expecting(&self, fm: &mut std::fmt::Formatter) -> std::fmt::Result {
            fm.write_str("a list")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
            while let Some(v) = seq.next_element::<Value>()? {
                if let Some(t) = (self.f)(v) {
                    *self.found = Some(t);
                    break;
                }
            }
            Ok(())
        }
    }
    let mut found = None;
    if r.get().starts_with('[') {
        let mut de = serde_json::Deserializer::from_str(r.get());
        // Stopping early leaves the list unfinished, which the reader reports: not an error
        // here (the document was checked whole before).
        let _ = serde::Deserializer::deserialize_seq(&mut de, Find { f, found: &mut found });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_string()).unwrap()
    }

    #[test]
    fn find_in_list_reads_up_to_the_element_taken() {
        let r = raw(r#"[{"role": "system"}, {"role": "user", "n": 1}, {"role": "user", "n": 2}, 3]"#);
        let mut seen = 0;
        let got = find_in_list(&r, |m| {
            seen += 1;
            (m["role"] == "user").then_some(m)
        });
        assert_eq!(got, Some(json!({"role": "user", "n": 1})));
        assert_eq!(seen, 2, "no element after the one taken is parsed");
        assert_eq!(find_in_list(&r, Some), Some(json!({"role": "system"})));
        assert_eq!(find_in_list(&raw("[]"), Some), None);
        assert_eq!(find_in_list(&raw(r#"{"a": [1]}"#), Some), None);
        assert_eq!(find_in_list(&r, |m| m.as_u64()), Some(3));
    }

    #[test]
    fn parts_know_their_byte_ranges() {
        let buf = br#"{"a": [1, {"b": "x"}]}"#;
        let top: std::collections::BTreeMap<String, &RawValue> = serde_json::from_slice(buf).unwrap();
        let items = raw_list(top["a"]).unwrap();
        let doc = Doc { buf, file: 3 };
        let o = doc.origin(items[1]);
        assert_eq!(&buf[o.offset as usize..][..o.len as usize], br#"{"b": "x"}"#);
        assert_eq!((o.file, o.line), (3, 0));
        assert!(raw_list(top["a"]).is_some() && raw_list(items[1]).is_none());
    }
}
