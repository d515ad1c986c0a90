//! Detection alone, in memory: the probe (first line, whole document, key scan) and every
//! format's detector. The first byte chooses whether the probe saw the whole file or a head.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use tracetui::formats::{Probe, REGISTRY};

fuzz_target!(|data: &[u8]| {
    let (complete, bytes) = match data.split_first() {
        Some((b, rest)) => (b & 1 == 0, rest),
        None => (true, data),
    };
    let p = Probe::from_bytes(Path::new("trace.jsonl"), bytes.to_vec(), complete);
    let _ = p.describe();
    let _ = p.lines().count();
    for f in REGISTRY {
        let _ = f.detect(&p);
    }
});
