//! A validating JSON skimmer for the hot path of large line-oriented files: it walks one
//! record, hands the caller the few fields it asks for as borrowed text, and skips everything
//! else without building values.
//!
//! Why not serde_json alone (DESIGN §4 says typed serde_json): on a 2 GB AgentDbg file most
//! bytes are payload strings the index never reads. serde_json scans them eight bytes at a time
//! and checks the UTF-8 of every borrowed string; this classifies each 64-byte block once
//! (AVX2 when the CPU has it, SSE2 otherwise) and checks UTF-8 only where serde_json would.
//! Measured on 100k generated events, one core: typed serde_json 176 ms, this 127 ms; the whole
//! `check` of 1M events went from 3.15 s to about 1.6 s with the other changes of that work.
//!
//! Contract: the skimmer is never more lenient than serde_json. Whenever it is unsure (an
//! escape in a field it returns, a tab or other control byte, deep nesting, a duplicate
//! field, anything malformed) it answers `None`, and the caller parses the line with
//! serde_json, which gives the same result or the diagnostic. The tests here, the agentdbg
//! proptests (field by field) and `fuzz/fuzz_targets/skim.rs` check this against serde_json.

use serde::{Deserialize, Deserializer};

/// Nesting deeper than this is left to serde_json (whose own limit is 128).
const MAX_DEPTH: u32 = 100;

pub struct Skim<'a> {
    s: &'a [u8],
    i: usize,
    depth: u32,
    /// Where the bytes that end a run of plain string text are (`"`, `\\` and control bytes),
    /// a bit a byte, for a window of `WINDOW` 64-byte blocks from block `base`. The skimmer
    /// only moves forward, so each window is classified once. Outside strings every byte is
    /// looked at by the tokenizer itself.
    base: usize,
    filled: usize,
    masks: [u64; WINDOW],
}

/// Blocks classified at once: a typical record (2 KB) in one go.
const WINDOW: usize = 32;

/// One JSON value as the skimmer saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar<'a> {
    Null,
    /// A string without escapes, as its (UTF-8 checked) text.
    Str(&'a str),
    /// Anything else, as its raw text (number, bool, object, array).
    Other(&'a [u8]),
}

impl<'a> Skim<'a> {
    /// A skimmer at the start of one record (no newline in it).
    pub fn new(s: &'a [u8]) -> Skim<'a> {
        Skim {
            s,
            i: 0,
            depth: 0,
            base: 0,
            filled: 0,
            masks: [0; WINDOW],
        }
    }

    /// Whether only whitespace is left (call after the top-level value).
    pub fn at_end(&mut self) -> bool {
        self.ws();
        self.i == self.s.len()
    }

    /// Classify the next window; false when the whole record has been.
    #[inline(never)]
    fn refill(&mut self) -> bool {
        let start = self.base + self.filled;
        let blocks = self.s.len().div_ceil(64);
        if start >= blocks {
            return false;
        }
        let n = (blocks - start).min(WINDOW);
        let end = ((start + n) * 64).min(self.s.len());
        classify(&self.s[start * 64..end], &mut self.masks[..n]);
        self.base = start;
        self.filled = n;
        true
    }

    /// The position of the next `"` or `\\` at or after `from` (never behind the window).
    #[inline(always)]
    fn next_special(&mut self, from: usize) -> Option<usize> {
        let k = (from / 64).wrapping_sub(self.base);
        if k < self.filled {
            let m = self.masks[k] & (!0u64 << (from % 64));
            if m != 0 {
                return Some((self.base + k) * 64 + m.trailing_zeros() as usize);
            }
        }
        self.next_special_far(from)
    }

    #[inline(never)]
    fn next_special_far(&mut self, from: usize) -> Option<usize> {
        let b = from / 64;
        while b >= self.base + self.filled {
            if !self.refill() {
                return None;
            }
        }
        let mut k = b - self.base;
        let mut m = self.masks[k] & (!0u64 << (from % 64));
        loop {
            if m != 0 {
                return Some((self.base + k) * 64 + m.trailing_zeros() as usize);
            }
            k += 1;
            if k == self.filled {
                if !self.refill() {
                    return None;
                }
                k = 0;
            }
            m = self.masks[k];
        }
    }

    fn ws(&mut self) {
        // Tabs and line breaks are whitespace too, but JSON Lines records rarely hold them:
        // they make the record unreadable here and serde_json reads it.
        while self.s.get(self.i) == Some(&b' ') {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.i += 1)
    }

    /// Walk an object; `field` is called with each key and must consume its value (with
    /// `value`, `scalar` or `skip`). Keys with escapes are not compared: None.
    pub fn object(&mut self, field: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        // serde_json checks the UTF-8 of the keys of a typed struct (not of skipped objects).
        self.walk_object(true, field)
    }

    fn walk_object(
        &mut self,
        check_keys: bool,
        mut field: impl FnMut(&mut Self, &'a [u8]) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        self.enter()?;
        if self.peek()? == b'}' {
            self.i += 1;
            self.depth -= 1;
            return Some(());
        }
        loop {
            self.eat(b'"')?;
            let key = self.raw_string()?;
            if check_keys && !key.is_ascii() {
                std::str::from_utf8(key).ok()?;
            }
            self.eat(b':')?;
            field(self, key)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Walk an array; `item` is called with each element's index and must consume it (as
    /// `object`'s `field` does its value).
    pub fn array(&mut self, mut item: impl FnMut(&mut Self, usize) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        self.enter()?;
        if self.peek()? != b']' {
            let mut n = 0;
            loop {
                item(self, n)?;
                n += 1;
                match self.peek()? {
                    b',' => self.i += 1,
                    b']' => break,
                    _ => return None,
                }
            }
        }
        self.i += 1;
        self.depth -= 1;
        Some(())
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// The next byte that is not whitespace (what kind of value comes next), if any.
    pub fn peek_byte(&mut self) -> Option<u8> {
        self.peek()
    }

    /// Where the skimmer is in the record (after `peek_byte`: where the next value starts;
    /// after a value: just past it).
    pub fn pos(&self) -> usize {
        self.i
    }

    /// The next value, as a scalar (objects and arrays as raw text).
    pub fn scalar(&mut self) -> Option<Scalar<'a>> {
        match self.peek()? {
            b'"' => {
                self.i += 1;
                let raw = self.raw_string()?;
                Some(Scalar::Str(utf8(raw)?))
            }
            b'n' => {
                self.skip()?;
                Some(Scalar::Null)
            }
            _ => Some(Scalar::Other(self.value()?)),
        }
    }

    /// The next value's raw text (what serde_json's `RawValue` holds, UTF-8 checked as it is).
    pub fn value(&mut self) -> Option<&'a [u8]> {
        self.ws();
        let start = self.i;
        self.skip()?;
        Some(&self.s[start..self.i])
    }

    /// The next value's raw text, its end found without checking the value (see
    /// [`value_end_unchecked`]): for a record read again that was checked when it was loaded.
    pub fn value_unchecked(&mut self) -> Option<&'a [u8]> {
        self.ws();
        let start = self.i;
        self.i = value_end_unchecked(self.s, start)?;
        Some(&self.s[start..self.i])
    }

    /// A value serde would read as `Option<Raw>`: null is None.
    pub fn raw(&mut self) -> Option<Option<Raw<'a>>> {
        if self.peek()? == b'n' {
            self.skip()?;
            return Some(None);
        }
        Some(Some(Raw(utf8(self.value()?)?)))
    }

    /// A value serde would read as `Option<&str>` (borrowed): null is None, a string with an
    /// escape or any other type is left to serde (the outer None).
    /// [`Skim::opt_str`] as the `Cow` a serde struct with `#[serde(borrow)]` holds.
    pub fn opt_cow(&mut self) -> Option<Option<std::borrow::Cow<'a, str>>> {
        Some(self.opt_str()?.map(std::borrow::Cow::Borrowed))
    }

    pub fn opt_str(&mut self) -> Option<Option<&'a str>> {
        match self.scalar()? {
            Scalar::Null => Some(None),
            Scalar::Str(s) => Some(Some(s)),
            Scalar::Other(_) => None,
        }
    }

    /// Where the next value starts (after whitespace), to cut a part of the record out.
    pub fn value_start(&mut self) -> usize {
        self.ws();
        self.i
    }

    /// Go on after a value someone else read, which ends before `to`.
    pub fn jump(&mut self, to: usize) {
        self.i = to.max(self.i).min(self.s.len());
    }

    /// Where the skimmer is (just after the last value read), whitespace not skipped.
    pub fn at(&self) -> usize {
        self.i
    }

    /// The first byte of the next value.
    pub fn next_byte(&mut self) -> Option<u8> {
        self.peek()
    }

    pub fn is_null_next(&mut self) -> bool {
        self.peek() == Some(b'n')
    }

    /// Skip the next value, checking it as serde_json would.
    pub fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => {
                self.i += 1;
                self.skip_string()
            }
            b'{' => self.walk_object(false, |s, _| s.skip()),
            b'[' => {
                self.i += 1;
                self.enter()?;
                if self.peek()? != b']' {
                    loop {
                        self.skip()?;
                        match self.peek()? {
                            b',' => self.i += 1,
                            b']' => break,
                            _ => return None,
                        }
                    }
                }
                self.i += 1;
                self.depth -= 1;
                Some(())
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number(),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.s[self.i..].starts_with(word).then(|| self.i += word.len())
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, as serde_json accepts.
    fn number(&mut self) -> Option<()> {
        let s = self.s;
        let mut i = self.i;
        if s.get(i) == Some(&b'-') {
            i += 1;
        }
        match s.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => i = digits(s, i),
            _ => return None,
        }
        if s.get(i) == Some(&b'.') {
            let j = digits(s, i + 1);
            if j == i + 1 {
                return None;
            }
            i = j;
        }
        if matches!(s.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(s.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let j = digits(s, i);
            if j == i {
                return None;
            }
            i = j;
        }
        self.i = i;
        Some(())
    }

    /// The text of a string whose opening quote was consumed, if it has no escapes.
    fn raw_string(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        let end = self.next_special(start)?;
        if self.s[end] != b'"' {
            return None;
        }
        self.i = end + 1;
        Some(&self.s[start..end])
    }

    /// Skip a string whose opening quote was consumed, checking its escapes.
    fn skip_string(&mut self) -> Option<()> {
        loop {
            self.i = self.next_special(self.i)?;
            if self.s[self.i] == b'"' {
                self.i += 1;
                return Some(());
            }
            if self.s[self.i] != b'\\' {
                return None; // a control byte: serde_json says what is wrong
            }
            match self.s.get(self.i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
                b'u' => {
                    let hex = self.s.get(self.i + 2..self.i + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    self.i += 6;
                }
                _ => return None,
            }
        }
    }
}

/// Where the JSON value that starts at `s[i]` ends, found without checking it: strings by
/// their closing quote, objects and arrays by their brackets outside strings, scalars at the
/// next delimiter. What was loaded was checked then; read again (to export it), finding the
/// ends of its large values is most of the work, and this does it in fewer steps than
/// [`Skim::skip`]. On text that is not JSON it gives some position within `s` or None, never
/// a panic; whoever uses the text then checks what it copies.
pub fn value_end_unchecked(s: &[u8], mut i: usize) -> Option<usize> {
    match *s.get(i)? {
        b'"' => string_end(s, i + 1),
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                let k = i + next_structural(s.get(i..)?)?;
                match s[k] {
                    b'"' => i = string_end(s, k + 1)?,
                    b'{' | b'[' => {
                        depth += 1;
                        i = k + 1;
                    }
                    _ => {
                        depth = depth.checked_sub(1)?;
                        i = k + 1;
                        if depth == 0 {
                            return Some(i);
                        }
                    }
                }
            }
        }
        _ => {
            let n = s[i..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(s.len() - i);
            (n > 0).then_some(i + n)
        }
    }
}

/// The end (past the closing quote) of a string whose opening quote is before `s[i]`.
fn string_end(s: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let k = i + memchr::memchr2(b'"', b'\\', s.get(i..)?)?;
        if s[k] == b'"' {
            return Some(k + 1);
        }
        i = k + 2;
    }
}

/// The first `"`, `{`, `}`, `[` or `]` in `s`.
fn next_structural(s: &[u8]) -> Option<usize> {
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    while let Some(block) = s.get(i..i + 16) {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86_64; the load is unaligned and reads the 16 bytes of
        // `block`.
        let m = unsafe {
            let v = _mm_loadu_si128(block.as_ptr() as *const __m128i);
            // `[` and `]` are `{` and `}` without the 0x20 bit.
            let folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
            let any = _mm_or_si128(
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
                _mm_or_si128(
                    _mm_cmpeq_epi8(folded, _mm_set1_epi8(b'{' as i8)),
                    _mm_cmpeq_epi8(folded, _mm_set1_epi8(b'}' as i8)),
                ),
            );
            _mm_movemask_epi8(any) as u32
        };
        if m != 0 {
            return Some(i + m.trailing_zeros() as usize);
        }
        i += 16;
    }
    s[i..]
        .iter()
        .position(|c| matches!(c, b'"' | b'{' | b'}' | b'[' | b']'))
        .map(|k| i + k)
}

/// UTF-8 checked text. Ids, names and times are nearly always ASCII, which is checked a word
/// at a time; the general check costs several times more on short strings.
fn utf8(b: &[u8]) -> Option<&str> {
    if b.is_ascii() {
        // SAFETY: ASCII is valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(b) })
    } else {
        std::str::from_utf8(b).ok()
    }
}

fn digits(s: &[u8], mut i: usize) -> usize {
    while s.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// One bit a byte of `s` into `out` (64 a word): set for `"`, `\\` and bytes below 0x20.
fn classify(s: &[u8], out: &mut [u64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { classify_avx2(s, out) };
        return;
    }
    classify_with(s, out, block_mask);
}

/// Full blocks in place, the last partial one padded with spaces (not special).
#[inline(always)]
fn classify_with(s: &[u8], out: &mut [u64], block: impl Fn(&[u8; 64]) -> u64) {
    let mut blocks = s.chunks_exact(64);
    let mut k = 0;
    for b in &mut blocks {
        out[k] = block(b.try_into().expect("64 bytes"));
        k += 1;
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        let mut pad = [b' '; 64];
        pad[..rest.len()].copy_from_slice(rest);
        out[k] = block(&pad);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn classify_avx2(s: &[u8], out: &mut [u64]) {
    use std::arch::x86_64::*;
    #[target_feature(enable = "avx2")]
    fn block(b: &[u8; 64]) -> u64 {
        // SAFETY: unaligned loads of the 64 bytes of `b`.
        unsafe {
            let quote = _mm256_set1_epi8(b'"' as i8);
            let bslash = _mm256_set1_epi8(b'\\' as i8);
            let below = _mm256_set1_epi8(0x1f);
            let lo = _mm256_loadu_si256(b.as_ptr() as *const __m256i);
            let hi = _mm256_loadu_si256(b.as_ptr().add(32) as *const __m256i);
            // v <= 0x1f exactly when max(v, 0x1f) == 0x1f.
            let hit = |v| {
                let c = _mm256_cmpeq_epi8(_mm256_max_epu8(v, below), below);
                _mm256_or_si256(
                    _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, bslash)),
                    c,
                )
            };
            let l = _mm256_movemask_epi8(hit(lo)) as u32 as u64;
            let h = _mm256_movemask_epi8(hit(hi)) as u32 as u64;
            l | (h << 32)
        }
    }
    classify_with(s, out, |b| block(b));
}

/// The portable block classifier (LLVM turns it into SSE2 compares on x86_64).
fn block_mask(b: &[u8; 64]) -> u64 {
    let mut mask = 0u64;
    for (k, &c) in b.iter().enumerate() {
        mask |= (((c == b'"') | (c == b'\\') | (c < 0x20)) as u64) << k;
    }
    mask
}

/// The fields of a typed struct already read: serde rejects a field given twice, so the
/// skimmer must too (`first(n)` is None the second time).
#[derive(Default)]
pub struct Seen(u64);

impl Seen {
    pub fn first(&mut self, field: u32) -> Option<()> {
        let new = self.0 & (1 << field) == 0;
        self.0 |= 1 << field;
        new.then_some(())
    }

    pub fn has(&self, field: u32) -> bool {
        self.0 & (1 << field) != 0
    }
}

/// A value's raw JSON text, borrowed from the record: what serde_json's `RawValue` holds, in a
/// type the skimmer can make too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raw<'a>(pub &'a str);

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r: &'de serde_json::value::RawValue = Deserialize::deserialize(d)?;
        Ok(Raw(r.get()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skims(s: &str) -> bool {
        let mut k = Skim::new(s.as_bytes());
        k.skip().is_some() && k.at_end()
    }

    fn serde_ok(s: &str) -> bool {
        serde_json::from_str::<serde::de::IgnoredAny>(s).is_ok()
    }

    #[test]
    fn accepts_what_serde_accepts() {
        for s in [
            r#"{}"#,
            r#"{"a":1,"b":[1,2,{"c":null}],"d":"x\"y\\z\u00e9\n","e":true,"f":false}"#,
            r#" { "a" : -0.5e+10 , "b" : [ ] } "#,
            r#"[1, -0, 0.25, 1E5, "s"]"#,
            r#""just a string""#,
            r#"{"ünï":"cödé ✓"}"#,
        ] {
            assert!(skims(s), "{s}");
            assert!(serde_ok(s), "{s}");
        }
    }

    #[test]
    fn never_accepts_what_serde_rejects() {
        for s in [
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":1e}"#,
            r#"{"a":-}"#,
            r#"{"a":.5}"#,
            r#"{"a":+1}"#,
            r#"{"a":tru}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12g4"}"#,
            r#"{"a":"\u12"}"#,
            r#"{"a":1,}"#,
            r#"[1,]"#,
            r#"{"a" 1}"#,
            r#"{"a":1}}"#,
            r#"{"a":1} x"#,
            r#"{"a":"unterminated}"#,
            r#"{a:1}"#,
            "{\"a\":\"tab\there\"}",
            "{\"a\":\t1}",
        ] {
            assert!(!skims(s), "skimmer accepted {s:?}");
        }
    }

    #[test]
    fn arrays_are_walked_element_by_element() {
        let walk = |s: &str| {
            let mut k = Skim::new(s.as_bytes());
            let mut items = Vec::new();
            let r = k.array(|k, n| {
                items.push((n, k.value()?.to_vec()));
                Some(())
            });
            (r.is_some() && k.at_end()).then_some(items)
        };
        assert_eq!(walk("[]"), Some(vec![]));
        assert_eq!(walk(" [ ] "), Some(vec![]));
        let got = walk(r#"[1, {"a":[2]} ,"x"]"#).unwrap();
        assert_eq!(
            got,
            vec![
                (0, b"1".to_vec()),
                (1, br#"{"a":[2]}"#.to_vec()),
                (2, br#""x""#.to_vec())
            ]
        );
        for bad in ["[1,]", "[,1]", "[1 2]", "[1", "{}", "[1]]"] {
            assert_eq!(walk(bad), None, "{bad}");
        }
        let deep = format!("[{}{}]", "[".repeat(100), "]".repeat(100));
        assert_eq!(walk(&deep), None, "depth counts the walked array too");
    }

    #[test]
    fn deep_nesting_is_left_to_serde() {
        let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
        assert!(!skims(&deep));
        let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(skims(&ok));
    }

    #[test]
    fn arrays_walked_element_by_element_with_their_ranges() {
        let line = br#"[ {"a":1}, "s" ,[2,3],null]"#;
        let mut k = Skim::new(line);
        let mut parts = Vec::new();
        let r = k.array(|k, _| {
            let first = k.peek_byte()?;
            let start = k.pos();
            k.skip()?;
            parts.push((first, &line[start..k.pos()]));
            Some(())
        });
        assert!(r.is_some() && k.at_end());
        let want: [(u8, &[u8]); 4] = [
            (b'{', br#"{"a":1}"#),
            (b'"', br#""s""#),
            (b'[', b"[2,3]"),
            (b'n', b"null"),
        ];
        assert_eq!(parts, want);
        for bad in [&b"[1,]"[..], b"[1 2]", b"{}", b"[1"] {
            let mut k = Skim::new(bad);
            assert!(k.array(|k, _| k.skip()).is_none(), "{:?}", String::from_utf8_lossy(bad));
        }
        assert!(Skim::new(b"[]").array(|_, _| None).is_some(), "no element: no call");
    }

    #[test]
    fn scalars_and_raw_values() {
        let line = br#"{"s":"text","n":null,"x":12.5,"o":{"k":[1]},"e":"a\nb"}"#;
        let mut k = Skim::new(line);
        let mut seen = Vec::new();
        let r = k.object(|k, key| {
            let v = if key == b"e" { None } else { Some(k.scalar()?) };
            if v.is_none() {
                k.skip()?;
            }
            seen.push((String::from_utf8_lossy(key).into_owned(), v));
            Some(())
        });
        assert!(r.is_some() && k.at_end());
        assert_eq!(seen[0].1, Some(Scalar::Str("text")));
        assert_eq!(seen[1].1, Some(Scalar::Null));
        assert_eq!(seen[2].1, Some(Scalar::Other(b"12.5")));
        assert_eq!(seen[3].1, Some(Scalar::Other(br#"{"k":[1]}"#)));
        // A string with an escape is not returned as text: the caller falls back.
        let mut k = Skim::new(br#""a\nb""#);
        assert_eq!(k.scalar(), None);
    }

    #[test]
    fn special_and_control_bytes_found_at_every_position() {
        let masks = |v: &[u8]| {
            let mut avx = vec![0u64; v.len().div_ceil(64)];
            classify(v, &mut avx);
            let mut portable = vec![0u64; v.len().div_ceil(64)];
            classify_with(v, &mut portable, block_mask);
            assert_eq!(avx, portable);
            avx
        };
        for len in 1..200 {
            assert!(masks(&vec![b'a'; len]).iter().all(|&m| m == 0));
            for pos in 0..len {
                for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                    let mut v = vec![b'a'; len];
                    v[pos] = special;
                    let m = masks(&v);
                    assert_eq!(m[pos / 64], 1 << (pos % 64), "len {len} pos {pos}");
                    assert_eq!(m.iter().map(|w| w.count_ones()).sum::<u32>(), 1);
                }
                // A control byte in a string or between tokens fails the record.
                let mut rec = b"\"".to_vec();
                rec.extend(std::iter::repeat_n(b'a', len));
                rec.extend(b"\"");
                assert!(skims(std::str::from_utf8(&rec).unwrap()));
                rec.insert(1 + pos, 0x01);
                assert!(!skims(std::str::from_utf8(&rec).unwrap()));
                let mut tail = b"[1".to_vec();
                tail.extend(std::iter::repeat_n(b' ', len));
                tail.push(b']');
                tail[2 + pos] = b'\t';
                assert!(!skims(std::str::from_utf8(&tail).unwrap()));
            }
        }
    }

    proptest::proptest! {
        /// On JSON, the unchecked end is the end of the value serde reads, alone and with
        /// more after it; on any bytes it gives a position within them or None.
        #[test]
        fn unchecked_ends_are_the_values_ends(
            text in "(\\PC|[\"\\\\{}\\[\\]:, /é])*",
            nums in proptest::collection::vec(-1e9f64..1e9, 0..3),
            pretty in proptest::prelude::any::<bool>(),
            junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
        ) {
            let v = serde_json::json!({"a": text, "b": [nums, {"c": text, "d": [[], {}]}], "e": null, "f": true});
            for v in [v.clone(), v["a"].clone(), v["b"].clone(), serde_json::json!(nums.first())] {
                let t = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) }.unwrap();
                proptest::prop_assert_eq!(value_end_unchecked(t.as_bytes(), 0), Some(t.len()), "{}", t);
                let more = format!("{t}, \"x\": 1}}");
                proptest::prop_assert_eq!(value_end_unchecked(more.as_bytes(), 0), Some(t.len()), "{}", more);
            }
            for at in 0..junk.len() {
                if let Some(end) = value_end_unchecked(&junk, at) {
                    proptest::prop_assert!(end <= junk.len());
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(5000))]
        /// Never more lenient than serde_json, on text made of JSON's own characters.
        #[test]
        fn never_more_lenient_than_serde(s in r#"[\[\]{}:,\" \\/a-z0-9.eE+\-\u{1}\té✓]{0,80}"#) {
            if skims(&s) {
                proptest::prop_assert!(serde_ok(&s), "{:?}", s);
            }
        }

        /// And on valid documents with one byte changed.
        #[test]
        fn never_more_lenient_on_edits(doc in r#"\{"a": \[1, -2.5e3, "x\\"y", \{"b": null, "c": true\}, false\], "d": "\\u00e9z"\}"#, at in 0usize..60, byte in proptest::prelude::any::<u8>()) {
            let mut b = doc.into_bytes();
            let i = at.min(b.len() - 1);
            b[i] = byte;
            if let Ok(s) = std::str::from_utf8(&b)
                && skims(s)
            {
                proptest::prop_assert!(serde_ok(s), "{:?}", s);
            }
        }
    }

    #[test]
    fn strings_across_blocks() {
        for len in 0..300 {
            let body: String = (0..len).map(|i| if i % 37 == 5 { "\\\"" } else { "x" }).collect();
            let rec = format!(r#"{{"k":"{body}","n":1}}"#);
            assert!(skims(&rec), "{rec}");
            assert!(serde_ok(&rec));
        }
    }
}
