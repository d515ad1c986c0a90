//! The skimmer's contract, differentially: whatever it reads whole, serde_json accepts too
//! (it may refuse more; never less). The field-level agreement for AgentDbg envelopes is
//! property-tested in `formats::agentdbg`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracetui::formats::skim::Skim;

fuzz_target!(|data: &[u8]| {
    let mut k = Skim::new(data);
    if k.skip().is_some() && k.at_end() {
        assert!(
            serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok(),
            "skimmed what serde_json rejects: {:?}",
            String::from_utf8_lossy(data)
        );
    }
});
