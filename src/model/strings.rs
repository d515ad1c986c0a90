use rustc_hash::FxHashMap as HashMap;

/// A string stored in a trace's [`Strings`]: 8 bytes instead of a heap allocation per event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StrRef {
    off: u32,
    len: u32,
}

impl StrRef {
    pub const EMPTY: StrRef = StrRef { off: 0, len: 0 };
    pub fn is_empty(self) -> bool {
        self.len == 0
    }
    /// (offset, length): identifies the string within its trace (for caches).
    pub fn parts(self) -> (u32, u32) {
        (self.off, self.len)
    }
}

/// One growing buffer for all of a trace's short strings. Names and models repeat a lot and
/// are interned; ids are unique and only appended.
#[derive(Clone, Debug, Default)]
pub struct Strings {
    buf: String,
    interned: HashMap<Box<str>, StrRef>,
}

impl Strings {
    pub fn get(&self, r: StrRef) -> &str {
        &self.buf[r.off as usize..(r.off + r.len) as usize]
    }

    /// Store a string that is likely to repeat (names, models, roles).
    pub fn intern(&mut self, s: &str) -> StrRef {
        if s.is_empty() {
            return StrRef::EMPTY;
        }
        if let Some(r) = self.interned.get(s) {
            return *r;
        }
        let r = self.push(s);
        // Very long strings are rarely repeated; keep the map small.
        if s.len() <= 256 {
            self.interned.insert(s.into(), r);
        }
        r
    }

    /// Store a string that is not expected to repeat (ids).
    pub fn push(&mut self, s: &str) -> StrRef {
        if s.is_empty() {
            return StrRef::EMPTY;
        }
        // Cap what a single hostile field can cost; past 4 GiB of strings, store nothing more.
        let s = crate_floor(s, 64 * 1024);
        if self.buf.len() + s.len() > u32::MAX as usize {
            return StrRef::EMPTY;
        }
        let off = self.buf.len() as u32;
        self.buf.push_str(s);
        StrRef {
            off,
            len: s.len() as u32,
        }
    }

    pub fn bytes(&self) -> usize {
        self.buf.len()
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
    }
}
