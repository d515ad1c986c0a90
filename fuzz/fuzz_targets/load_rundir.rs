//! One run directory. The input is `metadata NUL events`: the part before the first NUL byte
//! is written as both run.json and meta.json, the rest as both events.jsonl and spans.jsonl,
//! so the AgentDbg and Maida run-directory readers (metadata + lines) both see it.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (meta, events) = match memchr_nul(data) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (&data[..0], data),
    };
    let dir = common::scratch().join("run");
    std::fs::create_dir_all(&dir).expect("run dir");
    for (name, bytes) in [
        ("run.json", meta),
        ("meta.json", meta),
        ("events.jsonl", events),
        ("spans.jsonl", events),
    ] {
        std::fs::write(dir.join(name), bytes).expect("write input");
    }
    common::exercise(&dir);
});

fn memchr_nul(d: &[u8]) -> Option<usize> {
    d.iter().position(|&b| b == 0)
}
