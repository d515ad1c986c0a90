//! A candidate's payload as far as a search needs it (issue 18's 1% budget: decoding every
//! candidate's arguments and result into values was a tenth of a search that matches the
//! tool's name on 1% of lines).

use super::Pattern;
use crate::formats::{self, RawText};
use crate::model::{Event, Origin, Payload, Trace};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// A file of the trace that the caller has open already (the fast path's events file): its
/// records are read from it without opening the file again for each one, or taken from its
/// bytes when the caller holds all of them.
#[derive(Clone, Copy, Debug)]
pub struct OpenFile<'a> {
    pub path: &'a Path,
    pub file: &'a std::fs::File,
    pub bytes: Option<&'a [u8]>,
}

/// A record's bytes, as [`formats::read_origin`] reads them (a file shorter than the record
/// gives what there is).
pub(super) fn read_record(t: &Trace, o: Origin, open: Option<OpenFile>) -> std::io::Result<Vec<u8>> {
    let Some(of) = open.filter(|of| t.files.get(o.file as usize).is_some_and(|p| p == of.path)) else {
        return formats::read_origin(t, o);
    };
    if let Some(b) = of.bytes {
        let from = (o.offset as usize).min(b.len());
        return Ok(b[from..(from + o.len as usize).min(b.len())].to_vec());
    }
    let mut buf = vec![0u8; o.len as usize];
    let mut have = 0;
    while have < buf.len() {
        match of.file.read_at(&mut buf[have..], o.offset + have as u64) {
            Ok(0) => break,
            Ok(n) => have += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(have);
    Ok(buf)
}

/// Records at least this long are decoded whole: `payload_hits` visits at most 1,000,000
/// values over all fields, so a field left out that holds that many (2 bytes a value at
/// least) would change what the next field finds.
const WHOLE: usize = 2_000_000;

/// The payload of a deferred event for [`super::payload_hits`], with the same hits as
/// [`formats::payload`] gives: but an input or output that the format hands over as its text
/// in the record ([`formats::Format::decode_payload_raw`]) is decoded only when that text
/// holds the prefilter's piece. Where it does not, no string, key or literal of it holds a
/// match (the piece is written as it is, as the raw scan of whole lines relies on), and
/// for a [`Pattern::number_free`](super::Pattern) pattern no number does either (numbers
/// are searched as written out again, `1E3` as `1000.0`, text not in the file): the field
/// is left out. Anything else is decoded as before.
pub(super) fn searched_payload(t: &Trace, e: &Event, p: &Pattern, open: Option<OpenFile>) -> Payload {
    let (Some(pre), true, Some(fmt)) = (p.prefilter(), p.number_free, formats::by_id(t.meta.format)) else {
        return whole(t, e, open);
    };
    let mut recs: Vec<Vec<u8>> = Vec::with_capacity(2);
    for o in std::iter::once(e.origin).chain(e.origin2.as_deref().copied()) {
        match read_record(t, o, open) {
            Ok(b) => recs.push(b),
            // The usual path words the error.
            Err(_) => return formats::payload(t, e),
        }
    }
    let refs: Vec<&[u8]> = recs.iter().map(Vec::as_slice).collect();
    if refs.iter().map(|r| r.len()).sum::<usize>() >= WHOLE {
        return fmt.decode_payload(t, e, &refs);
    }
    let Some(rp) = fmt.decode_payload_raw(t, e, &refs, None) else {
        return fmt.decode_payload(t, e, &refs);
    };
    let mut out = rp.payload;
    let field = |r: RawText| {
        let (RawText::Json(s) | RawText::Str(s)) = r;
        if pre.is_match(s.as_bytes()) { r.value() } else { None }
    };
    // `decode_payload_raw` gives a field either as text or as a value, never both.
    if let Some(r) = rp.input {
        out.input = field(r);
    }
    if let Some(r) = rp.output {
        out.output = field(r);
    }
    out
}

/// [`formats::payload`], reading the records from `open` where it can.
pub(super) fn whole(t: &Trace, e: &Event, open: Option<OpenFile>) -> Payload {
    let (Some(of), Some(fmt)) = (open, formats::by_id(t.meta.format)) else {
        return formats::payload(t, e);
    };
    if !matches!(e.payload, crate::model::PayloadRef::Deferred) {
        return formats::payload(t, e);
    }
    let mut recs = Vec::with_capacity(2);
    for o in std::iter::once(e.origin).chain(e.origin2.as_deref().copied()) {
        match read_record(t, o, Some(of)) {
            Ok(b) => recs.push(b),
            Err(_) => return formats::payload(t, e),
        }
    }
    let refs: Vec<&[u8]> = recs.iter().map(|r| r.as_slice()).collect();
    fmt.decode_payload(t, e, &refs)
}

#[cfg(test)]
mod tests {
    use super::super::payload_hits;
    use super::*;
    use proptest::prelude::*;

    /// A JSON string as encoders write it: plainly (serde, UTF-8 as is) or ASCII-only with
    /// `\/` and `\u003c` (Python's, Go's), never a letter or digit escaped.
    fn enc(s: &str, ascii: bool) -> String {
        let mut o = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => o.push_str("\\\""),
                '\\' => o.push_str("\\\\"),
                '\n' => o.push_str("\\n"),
                '/' if ascii => o.push_str("\\/"),
                '<' if ascii => o.push_str("\\u003c"),
                c if (c as u32) < 0x20 || (ascii && !c.is_ascii()) => {
                    let mut b = [0u16; 2];
                    for u in c.encode_utf16(&mut b) {
                        o.push_str(&format!("\\u{:04x}", u));
                    }
                }
                c => o.push(c),
            }
        }
        o.push('"');
        o
    }

    const WORDS: &[&str] = &[
        "needle",
        "ne\nedle",
        "a needle/b",
        "café needle",
        "\u{212a}elvin",
        "{\"k\": \"needle\", \"n\": 1E3}",
        "[1.50, \"x<y\"]",
        "true",
        "x",
    ];

    /// The text of a JSON value of arguments, results and errors: numbers in several
    /// spellings, strings (some JSON themselves) in both encodings, nested.
    fn value() -> impl Strategy<Value = String> {
        let string = (prop::sample::select(WORDS), any::<bool>()).prop_map(|(w, a)| enc(w, a));
        let leaf = prop_oneof![
            2 => prop::sample::select(vec!["1E3", "1.50", "7", "-2.5e-3", "true", "false", "null"]).prop_map(String::from),
            1 => string.clone(),
        ];
        leaf.prop_recursive(3, 16, 3, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(|v| format!("[{}]", v.join(", "))),
                prop::collection::vec((prop::sample::select(WORDS), any::<bool>(), inner), 0..3).prop_map(|kv| {
                    let kv: Vec<String> = kv.iter().map(|(k, a, v)| format!("{}: {v}", enc(k, *a))).collect();
                    format!("{{{}}}", kv.join(", "))
                }),
            ]
        })
    }

    fn line() -> impl Strategy<Value = String> {
        let ty = prop::sample::select(vec!["TOOL_CALL", "LLM_CALL", "STATE_UPDATE", "ERROR", "CUSTOM"]);
        let key = prop::sample::select(vec!["args", "result", "prompt", "response", "state", "error", "model"]);
        (ty, prop::collection::vec((key, value()), 0..4)).prop_map(|(ty, fields)| {
            let fields: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
            format!(
                r#"{{"event_id": "e", "run_id": "r1", "parent_id": null, "event_type": "{ty}", "name": "x", "payload": {{{}}}, "meta": {{}}}}"#,
                fields.join(", ")
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]
        /// A payload with the fields that cannot match left out has the hits of the whole
        /// payload: the same fields, paths and snippets.
        #[test]
        fn leaving_out_fields_that_cannot_match_changes_no_hit(
            lines in prop::collection::vec(line(), 1..6),
            pat in prop::sample::select(vec![
                "needle", "ne\nedle", "edle", "é", "café", "a needle/b", "/b", "1000.0", "1000.0", "0.0025",
                "1.5", "1E3", "x<y", "true", "kelvin", "\"k\"", "k\": \"n", "x", "needle\", \"n",
            ]),
            ic in any::<bool>(),
            regex in any::<bool>(),
        ) {
            let d = tempfile::tempdir().unwrap();
            let dir = d.path().join("run");
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
            let run = crate::source::discover(std::slice::from_ref(&dir), None).runs[0].clone();
            let Ok(p) = Pattern::new(&if regex { regex::escape(pat) } else { pat.to_string() }, ic, regex) else {
                return Ok(());
            };
            let events = dir.join("events.jsonl");
            let f = std::fs::File::open(&events).unwrap();
            for t in run.load().unwrap().traces {
                for i in 0..t.len() as u32 {
                    let e = t.event(i);
                    let full = payload_hits(&p, e.kind, &formats::payload(&t, e));
                    let bytes = std::fs::read(&events).unwrap();
                    let open = OpenFile { path: &events, file: &f, bytes: None };
                    let held = OpenFile { bytes: Some(&bytes), ..open };
                    for o in [None, Some(open), Some(held)] {
                        let part = payload_hits(&p, e.kind, &searched_payload(&t, e, &p, o));
                        prop_assert_eq!(&part, &full, "{}", lines.join("\n"));
                        prop_assert_eq!(&payload_hits(&p, e.kind, &whole(&t, e, o)), &full);
                    }
                }
            }
        }
    }

    #[test]
    fn fields_without_the_piece_are_left_out_and_the_others_kept() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("run");
        std::fs::create_dir(&dir).unwrap();
        let line = r#"{"event_id": "e", "run_id": "r1", "parent_id": null, "event_type": "TOOL_CALL", "name": "x", "payload": {"args": {"q": "hay"}, "result": "the ne\"edle and the needle", "error": null}, "meta": {}}"#;
        std::fs::write(dir.join("events.jsonl"), format!("{line}\n")).unwrap();
        let run = crate::source::discover(std::slice::from_ref(&dir), None).runs[0].clone();
        let t = run.load().unwrap().traces.remove(0);
        let i = (0..t.len() as u32)
            .find(|&i| t.event(i).kind == crate::model::EventKind::ToolCall)
            .unwrap();
        let p = Pattern::new("needle", false, false).unwrap();
        let pl = searched_payload(&t, t.event(i), &p, None);
        assert!(pl.input.is_none(), "the arguments cannot match: not decoded");
        assert_eq!(pl.output, Some(serde_json::json!("the ne\"edle and the needle")));
        // A pattern a number could match: everything decoded.
        let p = Pattern::new("1.5", false, false).unwrap();
        assert!(searched_payload(&t, t.event(i), &p, None).input.is_some());
    }
}
