//! One trace file: detection, every format's loader, payloads, tree walk.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = common::scratch().join("trace.jsonl");
    std::fs::write(&path, data).expect("write input");
    common::exercise(&path);
});
