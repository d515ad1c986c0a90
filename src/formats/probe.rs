use super::LoadError;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// How much of a file detection reads.
const HEAD: usize = 256 * 1024;

/// What detection may look at: the path's shape and the first records.
#[derive(Debug)]
pub struct Probe {
    pub path: PathBuf,
    pub is_dir: bool,
    /// File names in a directory (not recursive).
    pub entries: Vec<String>,
    /// The first bytes of a file.
    pub head: Vec<u8>,
    /// The whole file is in `head`.
    pub complete: bool,
    /// The first non-blank line, parsed, when it is complete and valid JSON.
    pub first: Option<Value>,
    /// The whole file parsed as one JSON document, when it fits in `head`: parsed when a
    /// detector first asks (see [`Probe::whole`]).
    pub(crate) whole: std::sync::OnceLock<Option<Value>>,
    /// Top-level keys of the first object (inside a leading array, of its first element),
    /// found by scanning even when the first record is too large to parse here.
    pub first_keys: Vec<String>,
    /// The first complete lines of the head that parse, parsed once for every detector
    /// (each used to parse up to 20 lines again: most of `ls`'s time over many sessions):
    /// the first few, and where they stopped; the rest only when a detector reads on.
    pub(crate) parsed_lines: std::sync::OnceLock<(Vec<Value>, usize)>,
    pub(crate) more_lines: std::sync::OnceLock<Vec<Value>>,
}

/// How many parsed lines detectors may look at: most look at the first few.
const FIRST_LINES: usize = 5;
const PARSED_LINES: usize = 20;

impl Probe {
    pub fn open(path: &Path) -> Result<Probe, LoadError> {
        let meta = std::fs::metadata(path).map_err(|e| LoadError::io(path, e))?;
        if meta.is_dir() {
            let mut entries = Vec::new();
            let rd = std::fs::read_dir(path).map_err(|e| LoadError::io(path, e))?;
            for e in rd.flatten().take(10_000) {
                entries.push(e.file_name().to_string_lossy().into_owned());
            }
            entries.sort();
            return Ok(Probe {
                path: path.to_path_buf(),
                is_dir: true,
                entries,
                head: Vec::new(),
                complete: true,
                first: None,
                whole: Default::default(),
                first_keys: Vec::new(),
                parsed_lines: Default::default(),
                more_lines: Default::default(),
            });
        }
        if !meta.is_file() {
            return Err(LoadError::io(path, super::not_regular(&meta)));
        }
        let mut f = std::fs::File::open(path).map_err(|e| LoadError::io(path, e))?;
        let mut head = Vec::with_capacity(HEAD.min(meta.len() as usize + 1));
        (&mut f)
            .take(HEAD as u64 + 1)
            .read_to_end(&mut head)
            .map_err(|e| LoadError::io(path, e))?;
        let complete = head.len() <= HEAD;
        head.truncate(HEAD);
        Ok(Probe::from_bytes(path, head, complete))
    }

    pub fn from_bytes(path: &Path, head: Vec<u8>, complete: bool) -> Probe {
        let first = first_line(&head, complete).and_then(|l| serde_json::from_slice::<Value>(l).ok());
        // From the text, not from the whole document parsed: a detector parses that only
        // when these keys say it may be its own (every small file parsed whole, for every
        // `ls`, was 44% of a first listing of 2,000 OpenHands trajectories).
        let first_keys = match &first {
            Some(v) => keys_of_first_object(v),
            None => scan_first_keys(&head),
        };
        Probe {
            path: path.to_path_buf(),
            is_dir: false,
            entries: Vec::new(),
            head,
            complete,
            first,
            whole: Default::default(),
            first_keys,
            parsed_lines: Default::default(),
            more_lines: Default::default(),
        }
    }

    /// The whole file parsed as one JSON document, when it was read whole and is one; parsed
    /// on the first call. Detectors ask once the first keys say it may be theirs. serde_json's
    /// recursion limit (128) turns deep nesting into an error here, never a stack overflow.
    pub fn whole(&self) -> Option<&Value> {
        self.whole
            .get_or_init(|| self.complete.then(|| serde_json::from_slice(&self.head).ok()).flatten())
            .as_ref()
    }

    /// The whole document ([`Probe::whole`]) when its first keys hold one of `keys`: a
    /// detector parses a file whole only when it may be its own.
    pub fn whole_naming(&self, keys: &[&str]) -> Option<&Value> {
        keys.iter().any(|k| self.has_key(k)).then(|| self.whole()).flatten()
    }

    /// Whether what was read starts (after blanks) with a list.
    pub fn is_list(&self) -> bool {
        self.head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
    }

    /// The first element of a document that is a list, parsed alone (the rest is not read).
    pub fn first_item(&self) -> Option<Value> {
        if !self.is_list() {
            return None;
        }
        let at = self.head.iter().position(|&b| b == b'[')?;
        let mut items = serde_json::Deserializer::from_slice(&self.head[at + 1..]).into_iter::<Value>();
        items.next()?.ok()
    }

    /// Why neither the first line nor the whole file parsed, when what was read is complete
    /// (serde's message with line and column: nesting too deep, invalid UTF-8, ...).
    fn json_error(&self) -> Option<String> {
        if self.first.is_some() {
            return None;
        }
        // The whole file's error points into the first record of a pretty-printed document;
        // a line's error is only complete when the file was read whole or the line ended.
        // As `Value`s, as detection reads them: serde_json ignores a value without its
        // recursion limit, so nesting too deep would pass as valid here.
        if self.complete {
            return serde_json::from_slice::<Value>(&self.head).err().map(|e| e.to_string());
        }
        match first_line(&self.head, false).map(serde_json::from_slice::<Value>) {
            Some(Err(e)) if e.classify() != serde_json::error::Category::Eof => Some(e.to_string()),
            _ => None,
        }
    }

    pub fn has_entry(&self, name: &str) -> bool {
        self.entries.iter().any(|e| e == name)
    }

    pub fn has_key(&self, k: &str) -> bool {
        self.first_keys.iter().any(|x| x == k)
    }

    pub fn file_name(&self) -> &str {
        self.path.file_name().and_then(|n| n.to_str()).unwrap_or("")
    }

    pub fn is_gzip(&self) -> bool {
        self.head.starts_with(&[0x1f, 0x8b])
    }

    /// The first record: the first line, else the whole document.
    pub fn record(&self) -> Option<&Value> {
        self.first.as_ref().or_else(|| self.whole())
    }

    /// The first complete lines of the head that are JSON, parsed (for detectors that look past
    /// line one), at most 20: lines that do not parse are skipped.
    pub fn lines(&self) -> impl Iterator<Item = &Value> + '_ {
        let (first, resume) = self.parsed_lines.get_or_init(|| self.parse_lines(0, FIRST_LINES));
        let more = std::iter::once_with(move || {
            self.more_lines
                .get_or_init(|| self.parse_lines(*resume, PARSED_LINES - first.len()).0)
        });
        first.iter().chain(more.flat_map(|v| v.iter()))
    }

    /// Up to `n` parsed lines from byte `from` of the head, and where the next line starts.
    fn parse_lines(&self, from: usize, n: usize) -> (Vec<Value>, usize) {
        let mut out = Vec::new();
        let mut at = from.min(self.head.len());
        while out.len() < n && at < self.head.len() {
            let rest = &self.head[at..];
            let (l, next) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..i], at + i + 1),
                None if self.complete => (rest, self.head.len()),
                None => break, // the cut-off last line
            };
            at = next;
            // No JSON value ends in these: an element of a document written a line each
            // (`{...},`) is not parsed only to fail at its end (a first `ls` of 2,000
            // OpenHands trajectories spent 44% of its time so).
            match l.trim_ascii_end().last() {
                None => continue,
                Some(b',' | b':' | b'[' | b'{') => continue,
                Some(_) => {}
            }
            if let Ok(v) = serde_json::from_slice(l) {
                out.push(v);
            }
        }
        (out, at)
    }

    /// A short description of what was found, for the "not a trace" error.
    pub fn describe(&self) -> String {
        if self.is_dir {
            return if self.entries.is_empty() {
                "an empty directory".into()
            } else {
                format!("a directory holding {} (no run files)", preview(&self.entries))
            };
        }
        if self.head.is_empty() {
            return "the file is empty".into();
        }
        if self.is_gzip() {
            return "a gzip archive without manifest.json and events.ndjson".into();
        }
        if self.head.contains(&0)
            || std::str::from_utf8(&self.head[..self.head.len().min(4096)]).is_err() && !self.complete
        {
            return "binary data, not JSON".into();
        }
        match (self.record(), self.first_keys.is_empty()) {
            (None, true) if let Some(e) = self.json_error() => format!("invalid JSON: {e}"),
            (None, false) if let Some(e) = self.json_error() => {
                format!("invalid JSON ({e}) in a record with keys {}", preview(&self.first_keys))
            }
            (Some(Value::Object(_)), _) | (None, false) => {
                format!("JSON with keys {}", preview(&self.first_keys))
            }
            (Some(Value::Array(a)), _) => {
                format!("a JSON array of {} items of no known shape", a.len())
            }
            (Some(v), _) => format!("a JSON {}", type_name(v)),
            (None, true) => "no JSON on the first line".into(),
        }
    }
}

fn preview(items: &[String]) -> String {
    let mut s: Vec<String> = items.iter().take(6).map(|k| format!("`{k}`")).collect();
    if items.len() > 6 {
        s.push(format!("and {} more", items.len() - 6));
    }
    s.join(", ")
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn first_line(head: &[u8], complete: bool) -> Option<&[u8]> {
    let mut rest = head;
    loop {
        match memchr::memchr(b'\n', rest) {
            Some(i) => {
                let l = &rest[..i];
                if !l.iter().all(|b| b.is_ascii_whitespace()) {
                    return Some(l);
                }
                rest = &rest[i + 1..];
            }
            None if complete && !rest.iter().all(|b| b.is_ascii_whitespace()) => return Some(rest),
            None => return None,
        }
    }
}

fn keys_of_first_object(v: &Value) -> Vec<String> {
    match v {
        Value::Object(m) => m.keys().cloned().collect(),
        Value::Array(a) => a.first().map(keys_of_first_object).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Top-level keys of the first object in a prefix of JSON text that may be cut anywhere.
pub(crate) fn scan_first_keys(bytes: &[u8]) -> Vec<String> {
    let mut keys = Vec::new();
    let mut depth = 0usize;
    let mut target = 0usize; // depth at which keys are read: 1 for `{`, 2 for `[{`
    let mut i = 0;
    while i < bytes.len() && keys.len() < 200 {
        match bytes[i] {
            b'{' => {
                depth += 1;
                if target == 0 {
                    target = depth;
                }
            }
            b'[' => depth += 1,
            b'}' | b']' => {
                if depth == target && target != 0 {
                    break;
                }
                depth = depth.saturating_sub(1);
            }
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                if j >= bytes.len() {
                    break;
                }
                if depth == target && target != 0 {
                    let mut k = j + 1;
                    while k < bytes.len() && bytes[k].is_ascii_whitespace() {
                        k += 1;
                    }
                    if k < bytes.len() && bytes[k] == b':' {
                        let raw = &bytes[start..j];
                        // A key with escapes is decoded, as a parsed record's would be.
                        let key = match raw.contains(&b'\\') {
                            true => serde_json::from_slice::<String>(&bytes[start - 1..=j]).ok(),
                            false => None,
                        };
                        keys.push(key.unwrap_or_else(|| String::from_utf8_lossy(raw).into_owned()));
                    }
                }
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_from_a_cut_record() {
        let k = scan_first_keys(br#"{"a": 1, "b": {"x": 2}, "c": "text \" with quote", "d": [1,2"#);
        assert_eq!(k, vec!["a", "b", "c", "d"]);
        let k = scan_first_keys(br#"[{"role": "user", "content": "hi"}, {"other": 1}]"#);
        assert_eq!(k, vec!["role", "content"]);
    }

    #[test]
    fn first_line_parsed_even_without_newline() {
        let p = Probe::from_bytes(Path::new("x.jsonl"), b"\n\n{\"a\":1}".to_vec(), true);
        assert!(p.first.is_some());
        assert!(p.has_key("a"));
    }

    #[test]
    fn cut_head_keeps_keys() {
        let p = Probe::from_bytes(
            Path::new("x.jsonl"),
            br#"{"type":"step","content":"aaaa"#.to_vec(),
            false,
        );
        assert!(p.first.is_none());
        assert_eq!(p.first_keys, vec!["type", "content"]);
        assert!(p.describe().contains("`type`"));
    }

    #[test]
    fn a_key_with_escapes_is_decoded() {
        let k = scan_first_keys(br#"{"r\u006fle": "user", "a\"b": 1, "c"#);
        assert_eq!(k, vec!["role", "a\"b"]);
    }

    /// Detection parses a small document whole only for a format whose keys it has: a
    /// document of another format's keys is never parsed whole (most of a first `ls` was so).
    #[test]
    fn a_document_is_parsed_whole_only_for_the_formats_its_keys_name() {
        let v0 = "[\n".to_string()
            + &vec![r#"{"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}}"#; 30].join(",\n")
            + "\n]";
        let p = Probe::from_bytes(Path::new("t.json"), v0.into_bytes(), true);
        let best = crate::formats::REGISTRY.iter().max_by_key(|f| f.detect(&p)).unwrap();
        assert_eq!(best.id(), "openhands");
        assert!(p.whole.get().is_none(), "parsed whole");

        let chat = br#"{"messages": [{"role": "user", "content": "hi"}]}"#.to_vec();
        let p = Probe::from_bytes(Path::new("t.json"), chat, true);
        assert_eq!(
            crate::formats::REGISTRY
                .iter()
                .max_by_key(|f| f.detect(&p))
                .unwrap()
                .id(),
            "openai-chat"
        );
        assert!(p.whole.get().is_some());
    }

    #[test]
    fn the_first_item_of_a_list_is_parsed_alone() {
        let p = Probe::from_bytes(Path::new("t.json"), br#" [{"a": 1}, {"b": tru"#.to_vec(), true);
        assert_eq!(p.first_item(), Some(serde_json::json!({"a": 1})));
        assert!(p.whole().is_none());
        assert!(p.describe().contains("invalid JSON"), "{}", p.describe());
        let p = Probe::from_bytes(Path::new("t.json"), br#"{"a": [1]}"#.to_vec(), true);
        assert_eq!(p.first_item(), None);
        let p = Probe::from_bytes(Path::new("t.json"), b"[]".to_vec(), true);
        assert_eq!(p.first_item(), None);
    }
}
