//! What the formats' unit tests share.

use super::stem;
use super::{Format, LoadError, Summary};
use crate::model::Trace;
use std::path::{Path, PathBuf};

/// A fixture file of one format: `tests/fixtures/<format>/<name>`.
pub fn fixture(format: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format)
        .join(name)
}

/// A source's summaries as `source` makes them, less their cost (priced above formats/): the
/// format's cheap ones, else those of the loaded runs.
pub fn summaries(f: &dyn Format, path: &Path) -> Result<Vec<Summary>, LoadError> {
    match f.summarize(path)? {
        Some(list) => Ok(list),
        None => Ok(f.load(path)?.traces.iter().map(Summary::unpriced).collect()),
    }
}

/// The tree as text, a line an event: `<indent><kind> <name>`.
pub fn outline(t: &Trace) -> Vec<String> {
    t.walk()
        .iter()
        .map(|&(i, d)| format!("{}{} {}", "  ".repeat(d), t.event(i).kind.as_str(), t.name(i)))
        .collect()
}

/// Records as `base` makes them, left whole `unchanged` times out of `unchanged + 1`, else with
/// one or two bytes changed, removed or inserted: what a fast path must still agree with
/// serde_json on (the formats' differential proptests).
pub fn with_byte_edits<S>(base: S, unchanged: u32) -> impl proptest::strategy::Strategy<Value = Vec<u8>>
where
    S: proptest::strategy::Strategy<Value = Vec<u8>>,
{
    use proptest::prelude::*;
    let edit = (any::<prop::sample::Index>(), any::<u8>(), 0..3u8);
    let edits = prop_oneof![unchanged => Just(Vec::new()), 1 => prop::collection::vec(edit, 1..3)];
    (base, edits).prop_map(|(mut b, edits)| {
        for (at, byte, op) in edits {
            let i = at.index(b.len() + 1);
            match op {
                0 if i < b.len() => b[i] = byte,
                1 if i < b.len() => {
                    b.remove(i);
                }
                _ => b.insert(i, byte),
            }
        }
        b
    })
}

/// Everything a trace says, payloads decoded (read from disk when left there): for comparing
/// a reader that leaves payloads on disk with the one that held them.
pub fn decoded(t: &Trace) -> serde_json::Value {
    use serde_json::json;
    let events: Vec<serde_json::Value> = t
        .walk()
        .into_iter()
        .map(|(i, depth)| {
            let e = t.event(i);
            let p = super::payload(t, e);
            json!({
                "depth": depth,
                "kind": format!("{:?}", e.kind),
                "name": t.strings.get(e.name),
                "id": t.strings.get(e.source_id),
                "model": t.strings.get(e.model),
                "status": format!("{:?}", e.status),
                "start": e.start.get(),
                "duration": e.duration.get(),
                "usage": format!("{:?}", e.usage),
                "line": e.origin.line,
                "input": p.input,
                "output": p.output,
                "error": p.error.map(|x| format!("{x:?}")),
                "extra": p.extra.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
            })
        })
        .collect();
    let diagnostics: Vec<serde_json::Value> = t
        .diagnostics
        .iter()
        .map(|d| json!([format!("{:?}", d.severity), d.line, d.message]))
        .collect();
    json!({
        "id": t.meta.id,
        "name": t.meta.name,
        "status": format!("{:?}", t.meta.status),
        "model": t.meta.model,
        "attributes": t.meta.attributes.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
        "counts": format!("{:?}", t.counts()),
        "events": events,
        "diagnostics": diagnostics,
    })
}

/// A small deterministic random source for the drift checks (a seed from proptest).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    /// splitmix64.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// True one time in `n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n.max(1))
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// A name no recorder uses yet: `new-` and a few letters (sometimes with `_` or `.`).
    pub fn type_name(&mut self) -> String {
        let len = 3 + self.below(8);
        let mut s = String::from("zz");
        for _ in 0..len {
            let c = b"abcdefghijklmnopqrstuvwxyz_.-"[self.below(29)];
            s.push(c as char);
        }
        s
    }
    /// A JSON value of any kind, small.
    pub fn value(&mut self) -> serde_json::Value {
        use serde_json::json;
        match self.below(7) {
            0 => json!(null),
            1 => json!(self.next() % 1000),
            2 => json!(self.one_in(2)),
            3 => json!(format!("drift {}", self.type_name())),
            4 => json!([self.next() % 10, "x", {"k": "v"}]),
            5 => json!({"nested": {"content": "not a message", "n": 3}}),
            _ => json!(-1.5),
        }
    }
    /// Some text an unknown record may carry, or none.
    pub fn maybe_text(&mut self) -> Option<String> {
        self.one_in(2)
            .then(|| format!("new record text {}", self.next() % 10_000))
    }
}

/// Put drift into one JSONL file: an unknown field into about a third of its object lines
/// (at the front or the end: a new field may come anywhere), and before about a quarter of
/// them a record `unknown` makes (it sees the line it goes before, to copy its envelope).
/// Lines that are not JSON objects are left as they are. Returns the records inserted.
pub fn drift_jsonl(
    path: &Path,
    rng: &mut Rng,
    unknown: &dyn Fn(&mut Rng, &serde_json::Value) -> serde_json::Value,
) -> usize {
    let Ok(text) = std::fs::read(path) else { return 0 };
    let mut out: Vec<u8> = Vec::with_capacity(text.len() + text.len() / 4);
    let mut inserted = 0;
    for line in text.split_inclusive(|&b| b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        let value: Option<serde_json::Value> = serde_json::from_slice(body)
            .ok()
            .filter(|v: &serde_json::Value| v.is_object());
        let Some(v) = value else {
            out.extend_from_slice(line);
            continue;
        };
        if rng.one_in(4) {
            let rec = unknown(rng, &v);
            out.extend_from_slice(serde_json::to_string(&rec).unwrap().as_bytes());
            out.push(b'\n');
            inserted += 1;
        }
        let trimmed = body.trim_ascii();
        if rng.one_in(3) && trimmed.len() > 2 && trimmed != b"{}" {
            let field = format!("\"{}\":{}", rng.type_name(), rng.value());
            let start = body.iter().position(|&b| b == b'{').unwrap();
            let end = body.iter().rposition(|&b| b == b'}').unwrap();
            if rng.one_in(2) {
                out.extend_from_slice(&body[..=start]);
                out.extend_from_slice(field.as_bytes());
                out.push(b',');
                out.extend_from_slice(&body[start + 1..]);
            } else {
                out.extend_from_slice(&body[..end]);
                out.push(b',');
                out.extend_from_slice(field.as_bytes());
                out.extend_from_slice(&body[end..]);
            }
            out.extend_from_slice(&line[body.len()..]);
        } else {
            out.extend_from_slice(line);
        }
    }
    std::fs::write(path, out).unwrap();
    inserted
}

/// The sources a format's drift check runs on: `own` (fixtures and sample traces of the
/// project), and the corpus rows of the format that load without error diagnostics
/// (`clean` or `ok` in `../shared/corpus/expect.tsv`), where that corpus is beside the
/// project. The corpus is only read, never copied into the project.
pub fn drift_sources(format: &str, own: &[&str]) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out: Vec<PathBuf> = own.iter().map(|p| root.join(p)).collect();
    for p in &out {
        assert!(p.exists(), "{} is missing", p.display());
    }
    let corpus = root.join("../shared/corpus");
    if let Ok(tsv) = std::fs::read_to_string(corpus.join("expect.tsv")) {
        for line in tsv.lines().filter(|l| !l.starts_with('#')) {
            let cols: Vec<&str> = line.split('\t').collect();
            if cols.len() >= 5 && cols[1] == format && matches!(cols[4], "clean" | "ok") {
                let p = corpus.join(cols[0]);
                if p.exists() {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// What the drift rule holds fixed for one trace: its id, [tool calls, LLM calls, errors,
/// tokens], its diagnostics' severities.
fn drift_view(t: &Trace) -> (String, [u64; 4], Vec<String>) {
    let c = t.counts();
    let mut sev: Vec<String> = t.diagnostics.iter().map(|d| format!("{:?}", d.severity)).collect();
    sev.sort();
    (
        // Ids some formats make of line numbers (`legacy:3`) move with inserted lines.
        t.meta.id.chars().filter(|c| !c.is_ascii_digit()).collect(),
        [c.tool_calls as u64, c.llm_calls as u64, c.errors as u64, c.tokens],
        sev,
    )
}

fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        }
    } else {
        std::fs::copy(from, to).unwrap();
        // The corpus is read-only; the copy is changed.
        let mut p = std::fs::metadata(to).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        p.set_readonly(false);
        std::fs::set_permissions(to, p).unwrap();
    }
}

fn files_in(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        let mut es: Vec<_> = std::fs::read_dir(p).unwrap().flatten().map(|e| e.path()).collect();
        es.sort();
        for e in es {
            files_in(&e, out);
        }
    } else {
        out.push(p.to_path_buf());
    }
}

/// The drift rule (module docs of `formats`), on each source: a copy of it gets records of
/// unknown types and unknown fields (`mutate` changes one file of the copy and returns the
/// records it inserted), then both load as `check` loads them. The copy must be detected as
/// the same format and hold the same traces with the same tool calls, LLM calls, errors and
/// tokens and no other diagnostics; its events may grow by the inserted records that carry
/// text, no more; each inserted record is counted as skipped.
/// A source's own sibling directory (a Claude Code session's `<id>/subagents/`) is copied
/// with it.
pub fn drift_check(sources: &[PathBuf], seed: u64, mutate: &dyn Fn(&Path, &mut Rng) -> usize) {
    drift_check_as(sources, seed, mutate, Drift::Skipped);
}

/// What a format does with a record of a type it does not know.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Drift {
    /// Counted as skipped, shown when it carries text (the rule).
    Skipped,
    /// Shown under its type, not counted: a format whose event types are open by its spec
    /// (an Assay evidence bundle: every `assay.*` type is its own), where no type is unknown.
    Shown,
}

/// [`drift_check`], for a format that handles unknown types as `how` says.
pub fn drift_check_as(sources: &[PathBuf], seed: u64, mutate: &dyn Fn(&Path, &mut Rng) -> usize, how: Drift) {
    let mut rng = Rng::new(seed);
    for src in sources {
        let tmp = tempfile::tempdir().unwrap();
        // A file is copied into a directory of its own directory's name: some formats name a
        // run by it (gptme's `<conversation>/conversation.jsonl`).
        let dir = match src.parent().and_then(|p| p.file_name()) {
            Some(parent) if src.is_file() => tmp.path().join(parent),
            _ => tmp.path().to_path_buf(),
        };
        std::fs::create_dir_all(&dir).unwrap();
        let name = src.file_name().unwrap();
        let copy = dir.join(name);
        copy_tree(src, &copy);
        if src.is_file() {
            let sib = src.with_file_name(stem(src));
            if sib.is_dir() {
                copy_tree(&sib, &dir.join(sib.file_name().unwrap()));
            }
        }
        let mut files = Vec::new();
        files_in(&dir, &mut files);
        let inserted: usize = files.iter().map(|f| mutate(f, &mut rng)).sum();
        let load = |p: &Path| {
            let d = crate::source::discover(&[p.to_path_buf()], None);
            assert!(d.errors.is_empty(), "{}: {:?}", p.display(), d.errors);
            let mut traces = Vec::new();
            for (r, res) in crate::source::load_all(&d.runs) {
                let l = res.unwrap_or_else(|e| panic!("{}: {e}", r.path.display()));
                traces.extend(l.traces.into_iter().map(|t| (r.format.id(), t)));
            }
            traces
        };
        let before = load(src);
        let after = load(&copy);
        let what = format!("{} (seed {seed}, {inserted} records inserted)", src.display());
        let fmts = |v: &[(&'static str, Trace)]| v.iter().map(|(f, _)| *f).collect::<Vec<&'static str>>();
        assert_eq!(fmts(&before), fmts(&after), "{what}: formats");
        let view = |v: &[(&str, Trace)]| v.iter().map(|(_, t)| drift_view(t)).collect::<Vec<_>>();
        assert_eq!(view(&before), view(&after), "{what}: counts or diagnostics changed");
        let events = |v: &[(&str, Trace)]| v.iter().map(|(_, t)| t.counts().events).sum::<usize>();
        let (eb, ea) = (events(&before), events(&after));
        let skipped = |v: &[(&str, Trace)]| v.iter().map(|(_, t)| t.skipped.total() as i64).sum::<i64>();
        let counted = skipped(&after) - skipped(&before);
        match how {
            Drift::Skipped => {
                assert!(eb <= ea && ea <= eb + inserted, "{what}: {eb} events became {ea}");
                assert_eq!(
                    counted, inserted as i64,
                    "{what}: each inserted record is counted as skipped"
                );
            }
            Drift::Shown => {
                assert_eq!(ea, eb + inserted, "{what}: each inserted record is shown");
                assert_eq!(counted, 0, "{what}");
            }
        }
    }
}
