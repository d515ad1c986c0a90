//! `grep`'s matcher on hostile patterns and text: `pattern NUL text`, the first byte's low
//! bits choosing case-insensitive and regex. Compiling is bounded (a bad or huge pattern is
//! an error), and matching is bounded in memory whatever the groups; the raw prefilter finds
//! in the text's bytes what every literal match of the decoded text leaves there.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracetui::search::grep::Pattern;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else { return };
    let (pat, text) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let (Ok(pat), Ok(text)) = (std::str::from_utf8(pat), std::str::from_utf8(text)) else { return };
    let (ic, regex) = (flags & 1 == 1, flags & 2 == 2);
    let Ok(p) = Pattern::new(pat, ic, regex) else { return };
    let found = p.find(text);
    assert_eq!(found.is_some(), p.is_match(text));
    if let Some((a, b)) = found {
        assert!(a <= b && b <= text.len() && text.is_char_boundary(a) && text.is_char_boundary(b));
        // A literal found in text written as is (no JSON escaping needed) leaves its
        // prefilter piece in the bytes.
        if !regex && text.bytes().all(|c| c.is_ascii_graphic() && c != b'"' && c != b'\\') {
            if let Some(pre) = p.prefilter() {
                assert!(pre.is_match(text.as_bytes()), "prefilter missed {pat:?} in {text:?}");
            }
        }
    }
});
