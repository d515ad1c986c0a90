//! The OTLP receiver's decoding of a request body (issue 37): bound, decode, cut into lines.
//! The first byte chooses traces or logs, protobuf or JSON, gzip or not, and the line limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracetui::serve::receiver::{Encoding, Kind, Limits, prepare};

fuzz_target!(|data: &[u8]| {
    let Some((&b, body)) = data.split_first() else {
        return;
    };
    let kind = if b & 1 == 0 { Kind::Traces } else { Kind::Logs };
    let enc = if b & 2 == 0 { Encoding::Protobuf } else { Encoding::Json };
    let mut lim = Limits::new(1 << 20);
    lim.line = 64 + usize::from(b >> 3) * 64;
    if let Ok(p) = prepare(kind, enc, b & 4 != 0, body, &lim) {
        for l in &p.lines {
            assert!(l.bytes.len() <= lim.line);
        }
    }
});
