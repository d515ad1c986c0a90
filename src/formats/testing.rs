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

/// Records as `base` makes them, left whole `unchanged` times out of `unchanged + 1`, else with
/// one or two bytes changed, removed or inserted: what a fast path must still agree with
/// serde_json on (the formats' differential proptests).
pub fn with_byte_edits<S>(base: S, unchanged: u32) -> impl proptest::strategy::Strategy<Value = Vec<u8>>
where
    S: proptest::strategy::Strategy<Value = Vec<u8>>,
{
    use proptest::prelude::*;
    let edit = (any::<prop::sample::Index>(), any::<u8>(), 0..3u8);
    let edits = prop_oneof![unchanged => Just(Vec::new()), 1 => prop::collection::vec(edit, 1..3)];
    (base, edits).prop_map(|(mut b, edits)| {
        for (at, byte, op) in edits {
            let i = at.index(b.len() + 1);
            match op {
                0 if i < b.len() => b[i] = byte,
                1 if i < b.len() => {
                    b.remove(i);
                }
                _ => b.insert(i, byte),
            }
        }
        b
    })
}

/// Everything a trace says, payloads decoded (read from disk when left there): for comparing
/// a reader that leaves payloads on disk with the one that held them.
pub fn decoded(t: &Trace) -> serde_json::Value {
    use serde_json::json;
    let events: Vec<serde_json::Value> = t
        .walk()
        .into_iter()
        .map(|(i, depth)| {
            let e = t.event(i);
            let p = super::payload(t, e);
            json!({
                "depth": depth,
                "kind": format!("{:?}", e.kind),
                "name": t.strings.get(e.name),
                "id": t.strings.get(e.source_id),
                "model": t.strings.get(e.model),
                "status": format!("{:?}", e.status),
                "start": e.start.get(),
                "duration": e.duration.get(),
                "usage": format!("{:?}", e.usage),
                "line": e.origin.line,
                "input": p.input,
                "output": p.output,
                "error": p.error.map(|x| format!("{x:?}")),
                "extra": p.extra.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
            })
        })
        .collect();
    let diagnostics: Vec<serde_json::Value> = t
        .diagnostics
        .iter()
        .map(|d| json!([format!("{:?}", d.severity), d.line, d.message]))
        .collect();
    json!({
        "id": t.meta.id,
        "name": t.meta.name,
        "status": format!("{:?}", t.meta.status),
        "model": t.meta.model,
        "attributes": t.meta.attributes.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
        "counts": format!("{:?}", t.counts()),
        "events": events,
        "diagnostics": diagnostics,
    })
}
