use std::hash::BuildHasher;

/// A string stored in a trace's [`Strings`]: 4 bytes instead of a heap allocation per event.
/// It is the position of the string's length header in the store (plus one: 0 is the
/// empty string), so an event's three strings cost 12 bytes, not 24.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StrRef(u32);

impl StrRef {
    pub const EMPTY: StrRef = StrRef(0);
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// Identifies the string within its trace (for caches): interned strings that are equal
    /// have the same id.
    pub fn id(self) -> u32 {
        self.0
    }
}

/// Lengths below this take one header byte; longer ones take `LONG` and three more.
const LONG: u8 = 127;
/// The longest string stored (`push` cuts longer ones): it fits the three 7-bit header bytes.
const MAX_LEN: usize = 64 * 1024;

/// One growing buffer for all of a trace's short strings, each preceded by its length.
/// Names and models repeat a lot and are interned; ids are unique and only appended.
/// The header bytes are ASCII (below 128), so the buffer stays valid UTF-8.
#[derive(Clone, Default)]
pub struct Strings {
    buf: String,
    /// The interned strings, as references into `buf` keyed by their text's hash: a map of
    /// owned keys held each string twice, the copy in an allocation of its own.
    interned: hashbrown::HashTable<StrRef>,
}

impl std::fmt::Debug for Strings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Strings")
            .field("bytes", &self.buf.len())
            .field("interned", &self.interned.len())
            .finish()
    }
}

fn hash(s: &str) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(s)
}

impl Strings {
    pub fn get(&self, r: StrRef) -> &str {
        Self::text(&self.buf, r)
    }

    fn text(buf: &str, r: StrRef) -> &str {
        if r.0 == 0 {
            return "";
        }
        let b = buf.as_bytes();
        let at = (r.0 - 1) as usize;
        // A reference from another store reads garbage, never panics.
        let (from, len) = match b.get(at) {
            Some(&h) if h < LONG => (at + 1, h as usize),
            Some(_) => match b.get(at + 1..at + 4) {
                Some(x) => (at + 4, x[0] as usize | (x[1] as usize) << 7 | (x[2] as usize) << 14),
                None => return "",
            },
            None => return "",
        };
        buf.get(from..from + len).unwrap_or("")
    }

    /// Store a string that is likely to repeat (names, models, roles).
    pub fn intern(&mut self, s: &str) -> StrRef {
        if s.is_empty() {
            return StrRef::EMPTY;
        }
        let h = hash(s);
        if let Some(r) = self.interned.find(h, |&r| Self::text(&self.buf, r) == s) {
            return *r;
        }
        let r = self.push(s);
        // Very long strings are rarely repeated; keep the table small.
        if s.len() <= 256 && !r.is_empty() {
            let buf = &self.buf;
            self.interned.insert_unique(h, r, |&r| hash(Self::text(buf, r)));
        }
        r
    }

    /// Store a string that is not expected to repeat (ids).
    pub fn push(&mut self, s: &str) -> StrRef {
        if s.is_empty() {
            return StrRef::EMPTY;
        }
        // Cap what a single hostile field can cost; past 4 GiB of strings, store nothing more.
        let s = crate_floor(s, MAX_LEN);
        if self.buf.len() + s.len() + 4 >= u32::MAX as usize {
            return StrRef::EMPTY;
        }
        let r = StrRef(self.buf.len() as u32 + 1);
        let n = s.len();
        if n < LONG as usize {
            self.buf.push(n as u8 as char);
        } else {
            self.buf.push(LONG as char);
            for shift in [0, 7, 14] {
                self.buf.push(((n >> shift) & 0x7f) as u8 as char);
            }
        }
        self.buf.push_str(s);
        r
    }

    /// Bytes held (strings and their length headers, and the table of interned ones).
    /// Give back the text buffer's spare capacity (a store that is likely complete).
    pub fn shrink_to_fit(&mut self) {
        self.buf.shrink_to_fit();
    }

    pub fn bytes(&self) -> usize {
        self.buf.capacity() + self.interned.capacity() * (std::mem::size_of::<StrRef>() + 1)
    }
}

/// Truncate to at most `max` bytes on a char boundary.
fn crate_floor(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intern_dedups_and_push_does_not() {
        let mut s = Strings::default();
        let a = s.intern("search");
        let b = s.intern("search");
        assert_eq!(a, b);
        let c = s.push("id-1");
        let d = s.push("id-1");
        assert_ne!(c, d);
        assert_eq!(s.get(c), "id-1");
        assert_eq!(s.get(StrRef::EMPTY), "");
    }

    #[test]
    fn long_strings_are_capped_on_char_boundary() {
        let mut s = Strings::default();
        let long = "é".repeat(40_000);
        let r = s.push(&long);
        assert!(s.get(r).len() <= 64 * 1024);
        assert!(s.get(r).chars().all(|c| c == 'é'));
        let exact = "x".repeat(MAX_LEN);
        let r = s.push(&exact);
        assert_eq!(s.get(r), exact);
    }

    proptest::proptest! {
        /// Every stored string reads back as it went in, whatever its length (one-byte and
        /// four-byte headers), and a reference from another store never panics.
        #[test]
        fn strings_read_back(items in proptest::collection::vec(("[a-zé\\x00-\\x7f]{0,200}", 0usize..300), 0..40)) {
            let mut s = Strings::default();
            let mut refs = Vec::new();
            for (text, pad) in &items {
                let text = format!("{text}{}", "y".repeat(*pad));
                let r = if pad % 2 == 0 { s.push(&text) } else { s.intern(&text) };
                refs.push((r, text));
            }
            for (r, text) in &refs {
                proptest::prop_assert_eq!(s.get(*r), text.as_str());
            }
            for k in 0..(s.bytes() as u32 + 8) {
                let _ = s.get(StrRef(k));
            }
        }
    }
}
