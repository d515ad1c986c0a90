//! Assay evidence bundles: a `.tar.gz` holding exactly `manifest.json` (run id, event count,
//! file sizes and hashes) and `events.ndjson` (CloudEvents 1.0, one a line, with Assay's
//! extension attributes `assayrunid`, `assayseq`, `assaycontenthash`, ...).
//!
//! Read in memory, never extracted: the archive is streamed through gzip and tar, and any
//! member other than those two is refused by name. The limits are Assay's own verifier
//! defaults (`assay-evidence` `VerifyLimits`): 100 MiB compressed, 1 GiB decompressed,
//! manifest 10 MiB, events 500 MiB, 100,000 events, 1 MiB a line, member paths of 256 bytes.
//!
//! `assay.tool.decision` events (and `assay.enforcement_decision.*` events that name a tool)
//! become tool-call rows whose status is the policy decision (a deny is an error); every other
//! event type is shown generically under its type. One run per bundle.
//!
//! The manifest's hashes are verified as Assay's verifier does: the sha256 of each member it
//! lists, and `run_root` (the sha256 of every event's `assaycontenthash` and a newline, in
//! order). A mismatch is an error diagnostic and the run's badge [`MISMATCH_BADGE`].
//!
//! Tokens: the bundle's events carry no token counts or costs.

use super::jsonl::{JsonlReader, LineLoc, LineParser, Sink, json_error};
use super::{Format, LoadError, Loaded, Probe, field, stem, str_of};
use crate::model::*;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

pub struct AssayBundle;

const MAX_BUNDLE_BYTES: u64 = 100 << 20;
const MAX_DECODE_BYTES: u64 = 1 << 30;
const MAX_MANIFEST_BYTES: u64 = 10 << 20;
const MAX_EVENTS_BYTES: u64 = 500 << 20;
const MAX_EVENTS: u64 = 100_000;
const MAX_LINE_BYTES: usize = 1 << 20;
const MAX_PATH_LEN: usize = 256;

const MANIFEST: &str = "manifest.json";
const EVENTS: &str = "events.ndjson";

/// The run's badge when a hash the manifest gives is not the content's.
pub const MISMATCH_BADGE: &str = "content does not match its manifest";

/// The `run_root` recipe this reader knows (Assay's `algorithms.root`).
const ROOT_RECIPE: &str = "sha256(concat(content_hash + \"\\n\"))";

impl Format for AssayBundle {
    fn id(&self) -> &'static str {
        "assay-bundle"
    }
    fn describe(&self) -> &'static str {
        "Assay evidence bundle (*.tar.gz with manifest.json + events.ndjson), written by `assay evidence export`"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir || !p.is_gzip() {
            return 0;
        }
        // The first tar header, from the gzip head the probe holds.
        let mut header = [0u8; 512];
        let mut gz = flate2::read::GzDecoder::new(&p.head[..]);
        let mut n = 0;
        while n < header.len() {
            match gz.read(&mut header[n..]) {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
        }
        if n < 512 {
            return 0;
        }
        let name_end = header[..100].iter().position(|&b| b == 0).unwrap_or(100);
        let name = String::from_utf8_lossy(&header[..name_end]);
        match member_name(&name) {
            MANIFEST | EVENTS => 100,
            _ => 0,
        }
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let size = std::fs::metadata(path).map_err(|e| LoadError::io(path, e))?.len();
        if size > MAX_BUNDLE_BYTES {
            return Err(LoadError::invalid(
                path,
                format!(
                    "bundle is {} MiB, over Assay's {} MiB limit; not read",
                    size >> 20,
                    MAX_BUNDLE_BYTES >> 20
                ),
            ));
        }
        let file = super::open_regular(path).map_err(|e| LoadError::io(path, e))?;
        let gz = flate2::read::GzDecoder::new(std::io::BufReader::new(file));
        let mut archive = tar::Archive::new(Limited {
            inner: gz,
            left: MAX_DECODE_BYTES,
        });
        let entries = archive.entries().map_err(|e| damaged(path, &e))?;
        let mut sink = Sink::new(path);
        let mut parser = Parser::new(path, &mut sink);
        let mut manifest: Option<Value> = None;
        let mut events_size: Option<u64> = None;
        // member → sha256 of its bytes, as the archive holds them.
        let mut digests: HashMap<&'static str, String> = HashMap::new();
        for entry in entries {
            let mut entry = entry.map_err(|e| damaged(path, &e))?;
            let raw = entry.path_bytes().into_owned();
            let name = String::from_utf8_lossy(&raw).into_owned();
            if name.len() > MAX_PATH_LEN {
                return Err(LoadError::invalid(
                    path,
                    format!(
                        "a member path is {} bytes long, over {MAX_PATH_LEN}; refused",
                        name.len()
                    ),
                ));
            }
            let member = member_name(&name);
            if member != MANIFEST && member != EVENTS {
                return Err(LoadError::invalid(
                    path,
                    format!(
                        "unexpected member {name:?}: an evidence bundle holds only {MANIFEST} and {EVENTS}; refused"
                    ),
                ));
            }
            if !entry.header().entry_type().is_file() {
                return Err(LoadError::invalid(
                    path,
                    format!("member {name:?} is not a regular file; refused"),
                ));
            }
            let declared = entry.header().size().unwrap_or(u64::MAX);
            let limit = if member == MANIFEST {
                MAX_MANIFEST_BYTES
            } else {
                MAX_EVENTS_BYTES
            };
            if declared > limit {
                return Err(LoadError::invalid(
                    path,
                    format!(
                        "member {name:?} is {declared} bytes, over the {} MiB limit; refused",
                        limit >> 20
                    ),
                ));
            }
            if member == MANIFEST {
                if manifest.is_some() {
                    return Err(LoadError::invalid(path, format!("{MANIFEST} appears twice; refused")));
                }
                let mut buf = Vec::new();
                (&mut entry)
                    .take(limit)
                    .read_to_end(&mut buf)
                    .map_err(|e| damaged(path, &e))?;
                digests.insert(MANIFEST, hex(&Sha256::digest(&buf)));
                let v: Value = serde_json::from_slice(&buf)
                    .map_err(|e| LoadError::invalid(path, format!("{MANIFEST}: {}", json_error(&e))))?;
                parser.manifest(&v, &mut sink);
                manifest = Some(v);
            } else {
                if events_size.is_some() {
                    return Err(LoadError::invalid(path, format!("{EVENTS} appears twice; refused")));
                }
                if manifest.is_none() {
                    sink.warning(
                        None,
                        format!("{EVENTS} comes before {MANIFEST} (Assay writes the manifest first)"),
                    );
                }
                events_size = Some(declared);
                let mut reader = JsonlReader::new(path);
                let mut hashing = Hashing {
                    inner: (&mut entry).take(limit),
                    hasher: Sha256::new(),
                };
                reader
                    .read_stream(&mut hashing, &mut parser, &mut sink)
                    .map_err(|e| LoadError::invalid(path, format!("{EVENTS}: {e}")))?;
                reader.finish(&mut parser, &mut sink);
                // The hash covers the whole member, whatever the reader left unread.
                std::io::copy(&mut hashing, &mut std::io::sink()).map_err(|e| damaged(path, &e))?;
                digests.insert(EVENTS, hex(&hashing.hasher.finalize()));
            }
        }
        let Some(m) = manifest else {
            return Err(LoadError::invalid(
                path,
                format!("no {MANIFEST} in the bundle; refused"),
            ));
        };
        let Some(events_size) = events_size else {
            return Err(LoadError::invalid(path, format!("no {EVENTS} in the bundle; refused")));
        };
        parser.check(&m, events_size, &mut sink);
        parser.verify(&m, &digests, &mut sink);
        parser.flush(&mut sink);
        sink.finish("Assay evidence events")
    }
}

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// `sha256:<hex>` (or bare hex) → the lowercase hex; None when it is not a sha256.
fn sha256_of(v: &Value) -> Option<String> {
    let s = v.as_str()?.trim();
    let h = s.strip_prefix("sha256:").unwrap_or(s);
    (h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit())).then(|| h.to_ascii_lowercase())
}

/// `./manifest.json` and `manifest.json` are the same member.
fn member_name(name: &str) -> &str {
    name.strip_prefix("./").unwrap_or(name)
}

fn damaged(path: &Path, e: &std::io::Error) -> LoadError {
    LoadError::invalid(path, format!("not a readable .tar.gz bundle: {e}"))
}

/// Fails once more than `left` bytes were read: a gzip bomb stops at the limit.
struct Limited<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::other(format!(
                "more than {} MiB decompressed (Assay's limit)",
                MAX_DECODE_BYTES >> 20
            )));
        }
        let max = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..max])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// How a decision reads: allowed, denied, or something else.
fn decision_status(d: Option<&str>) -> Status {
    match d.map(str::to_ascii_lowercase).as_deref() {
        Some("allow" | "allowed" | "permit" | "pass" | "ok") => Status::Ok,
        Some("deny" | "denied" | "block" | "blocked" | "reject" | "rejected" | "fail") => Status::Error,
        _ => Status::Unknown,
    }
}

/// The tool a decision event is about, if it names one.
fn tool_of(ty: &str, data: &Value, subject: Option<&str>) -> Option<String> {
    let named = |v: &Value| match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Object(_) => str_of(v, "name").map(str::to_string),
        _ => None,
    };
    if ty == "assay.tool.decision" {
        return data
            .get("tool")
            .and_then(named)
            .or_else(|| subject.map(str::to_string))
            .or_else(|| Some("tool".into()));
    }
    if ty.starts_with("assay.enforcement_decision") {
        return data.get("tool").and_then(named);
    }
    None
}

struct Parser {
    root: u32,
    count: u64,
    run_id: Option<String>,
    last_seq: Option<u64>,
    warned_seq: bool,
    warned_run: bool,
    warned_spec: bool,
    warned_count: bool,
    finished: Option<RunStatus>,
    /// sha256 of every event's `assaycontenthash` and "\n", in order: the run root.
    run_root: Sha256,
    /// Whether every event so far carried a content hash (else the root cannot be checked).
    all_hashed: bool,
}

impl Parser {
    fn new(path: &Path, sink: &mut Sink) -> Parser {
        let mut t = Trace::new(RunMeta {
            id: stem(path),
            format: "assay-bundle",
            source: path.to_path_buf(),
            ..Default::default()
        });
        t.add_file(path);
        let root = t.add(NewEvent {
            status: Status::Ok,
            ..NewEvent::new(EventKind::Run, &stem(path))
        });
        sink.push_trace(t);
        Parser {
            root,
            count: 0,
            run_id: None,
            last_seq: None,
            warned_seq: false,
            warned_run: false,
            warned_spec: false,
            warned_count: false,
            finished: None,
            run_root: Sha256::new(),
            all_hashed: true,
        }
    }

    fn manifest(&mut self, m: &Value, sink: &mut Sink) {
        let t = &mut sink.traces[0];
        if let Some(run) = str_of(m, "run_id").filter(|s| !s.is_empty()) {
            self.run_id = Some(run.to_string());
            t.meta.id = run.to_string();
            t.meta.name = Some(run.to_string());
            let r = t.strings.intern(run);
            t.event_mut(self.root).name = r;
        }
        for k in ["bundle_id", "producer", "run_root", "schema_version", "algorithms"] {
            if let Some(x) = field(m, k) {
                t.meta.attributes.push((k.to_string(), x.clone()));
            }
        }
        let root = self.root;
        t.event_mut(root).payload = PayloadRef::Inline(Box::new(Payload {
            input: Some(m.clone()),
            ..Default::default()
        }));
        if m.get("schema_version").and_then(Value::as_u64) != Some(1) {
            sink.warning(None, format!("{MANIFEST}: schema_version is not 1; read as version 1"));
        }
    }

    /// What the manifest promises against what the bundle holds.
    fn check(&mut self, m: &Value, events_size: u64, sink: &mut Sink) {
        match m.get("event_count").and_then(Value::as_u64) {
            Some(n) if n != self.count => sink.error(
                0,
                format!(
                    "{MANIFEST} says event_count {n}, but {EVENTS} holds {} events",
                    self.count
                ),
            ),
            Some(_) => {}
            None => sink.warning(None, format!("{MANIFEST} has no event_count to check")),
        }
        let declared = m
            .get("files")
            .and_then(|f| f.get(EVENTS))
            .and_then(|f| f.get("bytes"))
            .and_then(Value::as_u64);
        if let Some(b) = declared
            && b != events_size
        {
            sink.warning(
                None,
                format!("{MANIFEST} says {EVENTS} is {b} bytes, the archive holds {events_size}"),
            );
        }
        // A line number of 0 reads badly: the count diagnostic is about the whole file.
        for d in &mut sink.traces[0].diagnostics {
            if d.line == Some(0) {
                d.line = None;
            }
        }
    }

    /// The manifest's hashes against the content: each listed member's sha256, and the run
    /// root when the manifest gives one by the recipe this reader knows.
    fn verify(&mut self, m: &Value, digests: &HashMap<&'static str, String>, sink: &mut Sink) {
        let mut mismatch = false;
        let files = m.get("files").and_then(Value::as_object);
        for (key, f) in files.into_iter().flatten() {
            let listed = str_of(f, "path").unwrap_or(key);
            let Some(want) = f.get("sha256").filter(|h| !h.is_null()) else {
                continue; // no hash given for it: nothing to verify
            };
            let Some(want) = sha256_of(want) else {
                sink.warning(
                    None,
                    format!("{MANIFEST}: the sha256 of {listed:?} is not a sha256 hash; not verified"),
                );
                continue;
            };
            match digests.get(member_name(listed)) {
                Some(got) if *got == want => {}
                Some(got) => {
                    mismatch = true;
                    sink.error(
                        0,
                        format!(
                            "{listed}: its sha256 is {got}, {MANIFEST} says {want}: the content does not match its manifest"
                        ),
                    );
                }
                None => {
                    mismatch = true;
                    sink.error(
                        0,
                        format!("{MANIFEST} lists {listed:?}, which the bundle does not hold"),
                    );
                }
            }
        }
        let recipe = m.get("algorithms").and_then(|a| a.get("root"));
        let known = recipe.is_none_or(|r| r.as_str() == Some(ROOT_RECIPE));
        if let Some(want) = m.get("run_root").and_then(sha256_of)
            && known
            && self.all_hashed
            && self.count > 0
        {
            let got = hex(&std::mem::take(&mut self.run_root).finalize());
            if got != want {
                mismatch = true;
                sink.error(
                    0,
                    format!(
                        "run_root is {got} by the events' content hashes, {MANIFEST} says {want}: the content does not match its manifest"
                    ),
                );
            }
        }
        if mismatch {
            sink.traces[0].meta.add_badge(MISMATCH_BADGE);
        }
        for d in &mut sink.traces[0].diagnostics {
            if d.line == Some(0) {
                d.line = None;
            }
        }
    }

    fn event(&mut self, v: &Value, loc: LineLoc, sink: &mut Sink) {
        match str_of(v, "assaycontenthash") {
            Some(h) => {
                self.run_root.update(h.as_bytes());
                self.run_root.update(b"\n");
            }
            None => self.all_hashed = false,
        }
        let Some(ty) = str_of(v, "type").filter(|s| !s.is_empty()) else {
            sink.error(loc.line, "a CloudEvent without `type`; skipped");
            return;
        };
        if str_of(v, "specversion") != Some("1.0") && !self.warned_spec {
            self.warned_spec = true;
            sink.warning(
                Some(loc.line),
                "specversion is not \"1.0\" (CloudEvents 1.0 expected); read anyway",
            );
        }
        if let (Some(want), Some(got)) = (self.run_id.as_deref(), str_of(v, "assayrunid"))
            && want != got
            && !self.warned_run
        {
            self.warned_run = true;
            sink.warning(
                Some(loc.line),
                format!("assayrunid {got:?} differs from the manifest's run_id {want:?}"),
            );
        }
        if let Some(seq) = v.get("assayseq").and_then(Value::as_u64) {
            let expected = self.last_seq.map_or(0, |s| s + 1);
            if seq != expected && !self.warned_seq {
                self.warned_seq = true;
                sink.warning(
                    Some(loc.line),
                    format!("assayseq {seq} where {expected} was expected (a gap or reordering)"),
                );
            }
            self.last_seq = Some(seq);
        }
        let data = v.get("data").cloned().unwrap_or(Value::Null);
        let subject = str_of(v, "subject");
        let time = v.get("time").and_then(parse_timestamp);
        // The envelope, without the data shown on its own.
        let envelope: Map<String, Value> = v
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(k, x)| k.as_str() != "data" && !x.is_null())
                    .map(|(k, x)| (k.clone(), x.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let origin = Origin {
            file: 0,
            // Lines live inside the compressed archive: the number is kept, no byte range.
            line: loc.line.min(u32::MAX as u64) as u32,
            offset: 0,
            len: 0,
        };
        if ty == "assay.profile.finished" {
            self.finished = Some(match str_of(&data, "status") {
                Some(s) => RunStatus::parse(s),
                None => RunStatus::Ok,
            });
        }
        let t = &mut sink.traces[0];
        let id = str_of(v, "id");
        match tool_of(ty, &data, subject) {
            Some(tool) => {
                let decision = str_of(&data, "decision").or_else(|| str_of(&data, "verdict"));
                let status = decision_status(decision);
                let reason = str_of(&data, "reason_code").or_else(|| str_of(&data, "reason"));
                let input = field(&data, "arguments")
                    .or_else(|| field(&data, "args"))
                    .or_else(|| field(&data, "params"))
                    .cloned()
                    .unwrap_or_else(|| data.clone());
                let mut out = Map::new();
                for k in ["decision", "verdict", "reason_code", "reason"] {
                    if let Some(x) = field(&data, k) {
                        out.insert(k.to_string(), x.clone());
                    }
                }
                let error = (status == Status::Error).then(|| ErrorInfo {
                    kind: Some(decision.unwrap_or("denied").to_string()),
                    message: reason.unwrap_or("denied by policy").to_string(),
                    ..Default::default()
                });
                let mut extra = vec![("event".to_string(), Value::Object(envelope))];
                if input != data {
                    extra.push(("data".to_string(), data.clone()));
                }
                t.add(NewEvent {
                    id: str_of(&data, "tool_call_id").or(id),
                    parent: Parent::Index(self.root),
                    start: time,
                    status,
                    origin,
                    payload: PayloadRef::Inline(Box::new(Payload {
                        input: Some(input),
                        output: (!out.is_empty()).then_some(Value::Object(out)),
                        error,
                        extra,
                        context: Vec::new(),
                    })),
                    ..NewEvent::new(EventKind::ToolCall, &tool)
                });
            }
            None => {
                let name = match subject {
                    Some(s) if !s.is_empty() && s.len() <= 80 => format!("{ty} {s}"),
                    _ => ty.to_string(),
                };
                t.add(NewEvent {
                    id,
                    parent: Parent::Index(self.root),
                    start: time,
                    status: Status::Ok,
                    origin,
                    payload: PayloadRef::Inline(Box::new(Payload {
                        input: (!data.is_null()).then_some(data),
                        extra: vec![("event".to_string(), Value::Object(envelope))],
                        ..Default::default()
                    })),
                    ..NewEvent::new(EventKind::Other, &name)
                });
            }
        }
    }
}

impl LineParser for Parser {
    fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        self.count += 1;
        if self.count > MAX_EVENTS {
            if !self.warned_count {
                self.warned_count = true;
                sink.error(
                    loc.line,
                    format!("more than {MAX_EVENTS} events (Assay's limit); the rest is not read"),
                );
            }
            return;
        }
        if line.len() > MAX_LINE_BYTES {
            sink.error(
                loc.line,
                format!("line of {} bytes, over Assay's 1 MiB limit; skipped", line.len()),
            );
            return;
        }
        let Some(v) = sink.parse::<Value>(line, loc) else {
            return;
        };
        if !v.is_object() {
            sink.error(loc.line, "not a JSON object; skipped");
            return;
        }
        self.event(&v, loc, sink);
    }

    fn flush(&mut self, sink: &mut Sink) {
        let Some(t) = sink.traces.first_mut() else { return };
        t.finalize();
        let (lo, hi) = {
            let mut lo: Option<i64> = None;
            let mut hi: Option<i64> = None;
            for e in &t.events {
                if let Some(s) = e.start.get() {
                    lo = Some(lo.map_or(s, |x| x.min(s)));
                    hi = Some(hi.map_or(s, |x| x.max(s)));
                }
            }
            (lo, hi)
        };
        let status = self.finished.unwrap_or(RunStatus::Ok);
        t.meta.status = status;
        t.meta.start = lo;
        t.meta.end = hi;
        let root = self.root;
        let e = t.event_mut(root);
        e.start = lo.into();
        e.duration = match (lo, hi) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a).max(0)).into(),
            _ => None.into(),
        };
        e.status = status.event_status();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::path::PathBuf;

    /// Drift in an evidence bundle as a newer Assay would write it: events of types this
    /// reader has no rows for, sometimes with text, and fields it does not know, with the
    /// manifest made again to match (count, sizes, hashes, sequence numbers, run root).
    fn drift_bundle(f: &Path, rng: &mut crate::formats::testing::Rng) -> usize {
        use flate2::{Compression, read::GzDecoder, write::GzEncoder};
        if !f.to_string_lossy().ends_with(".tar.gz") {
            return 0;
        }
        let mut ar = tar::Archive::new(GzDecoder::new(std::fs::File::open(f).unwrap()));
        let mut members: Vec<(String, Vec<u8>)> = Vec::new();
        for e in ar.entries().unwrap() {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut b = Vec::new();
            e.read_to_end(&mut b).unwrap();
            members.push((name, b));
        }
        let get = |n: &str| members.iter().find(|(m, _)| m == n).map(|(_, b)| b.clone());
        let (Some(manifest), Some(events)) = (get(MANIFEST), get(EVENTS)) else {
            return 0;
        };
        let Ok(mut manifest) = serde_json::from_slice::<Value>(&manifest) else {
            return 0;
        };
        let mut lines: Vec<Value> = events
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        let mut added = 0;
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(lines.len() + 1);
            let near = lines
                .get(at.min(lines.len().saturating_sub(1)))
                .cloned()
                .unwrap_or(Value::Null);
            let mut ev = serde_json::json!({
                "specversion": "1.0",
                "type": format!("assay.{}", rng.type_name()),
                "id": format!("drift-{}", rng.next()),
                "source": near.get("source").cloned().unwrap_or(Value::Null),
                "time": near.get("time").cloned().unwrap_or(Value::Null),
                "assaycontenthash": format!("sha256:{}", hex(&Sha256::digest(rng.next().to_le_bytes()))),
                "data": {},
            });
            for k in ["assayrunid", "subject"] {
                if let Some(x) = near.get(k) {
                    ev[k] = x.clone();
                }
            }
            if let Some(t) = rng.maybe_text() {
                ev["data"]["message"] = Value::String(t);
            }
            lines.insert(at, ev);
            added += 1;
        }
        let mut root = Sha256::new();
        for (i, ev) in lines.iter_mut().enumerate() {
            if let Some(o) = ev.as_object_mut() {
                if o.contains_key("assayseq") || added > 0 {
                    o.insert("assayseq".into(), Value::from(i as u64));
                }
                if rng.one_in(3) {
                    o.insert(format!("zz{}", rng.type_name()), rng.value());
                }
            }
            if let Some(h) = str_of(ev, "assaycontenthash") {
                root.update(h.as_bytes());
                root.update(b"\n");
            }
        }
        let mut body = Vec::new();
        for ev in &lines {
            body.extend_from_slice(serde_json::to_string(ev).unwrap().as_bytes());
            body.push(b'\n');
        }
        manifest["event_count"] = Value::from(lines.len() as u64);
        if manifest.get("run_root").is_some() {
            manifest["run_root"] = Value::String(format!("sha256:{}", hex(&root.finalize())));
        }
        if let Some(e) = manifest.get_mut("files").and_then(|x| x.get_mut(EVENTS)) {
            if e.get("bytes").is_some() {
                e["bytes"] = Value::from(body.len() as u64);
            }
            if e.get("sha256").is_some() {
                e["sha256"] = Value::String(format!("sha256:{}", hex(&Sha256::digest(&body))));
            }
        }
        let manifest = serde_json::to_vec(&manifest).unwrap();
        let mut out = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::fast()));
        for (name, bytes) in [(MANIFEST, &manifest), (EVENTS, &body)] {
            let mut h = tar::Header::new_gnu();
            h.set_size(bytes.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            out.append_data(&mut h, name, bytes.as_slice()).unwrap();
        }
        std::fs::write(f, out.into_inner().unwrap().finish().unwrap()).unwrap();
        added
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) for a format whose event types are open: a new
        /// type is shown under its type, with no diagnostic and no other count changed.
        #[test]
        fn drift_is_shown_quietly(seed in proptest::prelude::any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "assay-bundle",
                &["sample-traces/assay/evidence.tar.gz", "tests/fixtures/assay-bundle/decisions.tar.gz"],
            );
            crate::formats::testing::drift_check_as(
                &sources,
                seed,
                &drift_bundle,
                crate::formats::testing::Drift::Shown,
            );
        }
    }

    fn fixture(name: &str) -> PathBuf {
        crate::formats::testing::fixture("assay-bundle", name)
    }

    /// A .tar.gz with the given members, in order.
    fn bundle(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
        for (name, data) in members {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap()
    }

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
        p
    }

    #[test]
    fn decisions_become_tool_calls_and_the_rest_is_generic() {
        let l = AssayBundle.load(&fixture("decisions.tar.gz")).unwrap();
        assert_eq!(l.traces.len(), 1);
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.id, "run-fixture-1");
        let rows: Vec<_> = t
            .walk()
            .iter()
            .map(|&(i, d)| {
                format!(
                    "{d} {} {} [{}]",
                    t.event(i).kind.as_str(),
                    t.name(i),
                    t.event(i).status.as_str()
                )
            })
            .collect();
        assert_eq!(
            rows,
            vec![
                "0 run run-fixture-1 [ok]",
                "1 other assay.profile.started ci [ok]",
                "1 tool fs.read_file [ok]",
                "1 tool shell.exec [error]",
                "1 tool github.add_deploy_key [error]",
                "1 other assay.net.connect api.example.test:443 [ok]",
                "1 other assay.profile.finished [ok]",
            ],
            "{rows:#?}"
        );
        let deny = t.find("tc-2").unwrap();
        let p = super::super::payload(t, t.event(deny));
        assert_eq!(p.error.unwrap().message, "P_DENY_SHELL");
        assert_eq!(p.input.unwrap()["command"], "rm -rf /tmp/x");
        assert_eq!(t.counts().tool_calls, 3);
    }

    #[test]
    fn a_count_mismatch_and_a_bad_line_are_diagnosed() {
        let l = AssayBundle.load(&fixture("count-mismatch.tar.gz")).unwrap();
        let t = &l.traces[0];
        let d: Vec<_> = t.diagnostics.iter().map(|d| (d.line, d.message.clone())).collect();
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d[0].0, Some(2));
        assert!(d[0].1.contains("JSON"), "{}", d[0].1);
        assert_eq!(d[1].0, None);
        assert!(
            d[1].1.contains("event_count 5") && d[1].1.contains("holds 3"),
            "{}",
            d[1].1
        );
        assert_eq!(t.counts().tool_calls, 1, "the rest still loads");
    }

    #[test]
    fn content_that_does_not_match_its_manifest_is_an_error_and_a_badge() {
        // decisions.tar.gz lists the right sha256: no badge.
        let ok = AssayBundle.load(&fixture("decisions.tar.gz")).unwrap();
        assert!(ok.traces[0].meta.badges().is_empty());
        // tampered.tar.gz: one argument edited after the manifest was written.
        let l = AssayBundle.load(&fixture("tampered.tar.gz")).unwrap();
        let t = &l.traces[0];
        let errors: Vec<_> = t.diagnostics.iter().filter(|d| d.severity == Severity::Error).collect();
        assert_eq!(errors.len(), 1, "{:?}", t.diagnostics);
        assert_eq!(errors[0].line, None);
        assert!(
            errors[0].message.contains("events.ndjson")
                && errors[0].message.contains("527f29258ea3417f")
                && errors[0].message.contains("4a9c6edb0ce96344"),
            "{}",
            errors[0].message
        );
        assert_eq!(t.meta.badges(), vec![MISMATCH_BADGE.to_string()]);
        assert_eq!(
            crate::formats::Summary::unpriced(t).badges,
            vec![MISMATCH_BADGE.to_string()]
        );
        // Everything still loads.
        assert_eq!(t.counts().tool_calls, 3);
    }

    #[test]
    fn the_run_root_and_missing_members_are_verified() {
        let d = tempfile::tempdir().unwrap();
        let events = concat!(
            r#"{"specversion":"1.0","type":"assay.x","id":"a","source":"s","assaycontenthash":"sha256:11"}"#,
            "\n",
            r#"{"specversion":"1.0","type":"assay.y","id":"b","source":"s","assaycontenthash":"sha256:22"}"#,
            "\n"
        );
        let sha = |b: &[u8]| hex(&Sha256::digest(b));
        let root = sha(b"sha256:11\nsha256:22\n");
        let manifest = |run_root: &str, extra: &str| {
            format!(
                r#"{{"schema_version":1,"run_id":"r","event_count":2,"run_root":"sha256:{run_root}","algorithms":{{"root":{}}},"files":{{"events.ndjson":{{"path":"events.ndjson","sha256":"sha256:{}"}}{extra}}}}}"#,
                serde_json::to_string(ROOT_RECIPE).unwrap(),
                sha(events.as_bytes())
            )
        };
        let load = |name: &str, m: String| {
            let p = write(
                d.path(),
                name,
                &bundle(&[("manifest.json", m.as_bytes()), ("events.ndjson", events.as_bytes())]),
            );
            AssayBundle.load(&p).unwrap().traces.remove(0)
        };
        let good = load("good.tar.gz", manifest(&root, ""));
        assert!(good.diagnostics.is_empty(), "{:?}", good.diagnostics);
        assert!(good.meta.badges().is_empty());
        let bad_root = load("root.tar.gz", manifest(&sha(b"other"), ""));
        assert_eq!(bad_root.diagnostics.len(), 1, "{:?}", bad_root.diagnostics);
        assert!(bad_root.diagnostics[0].message.starts_with("run_root is "));
        assert_eq!(bad_root.meta.badges(), vec![MISMATCH_BADGE.to_string()]);
        let missing = load(
            "missing.tar.gz",
            manifest(
                &root,
                &format!(
                    r#","policy.yaml":{{"path":"policy.yaml","sha256":"sha256:{}"}}"#,
                    sha(b"p")
                ),
            ),
        );
        assert_eq!(missing.diagnostics.len(), 1, "{:?}", missing.diagnostics);
        assert!(missing.diagnostics[0].message.contains("\"policy.yaml\""));
        assert_eq!(missing.meta.badges(), vec![MISMATCH_BADGE.to_string()]);
        // A hash that is not one is a warning, not a mismatch.
        let odd = load("odd.tar.gz", manifest(&root, "").replace(&sha(events.as_bytes()), "zz"));
        assert_eq!(odd.diagnostics.len(), 1, "{:?}", odd.diagnostics);
        assert_eq!(odd.diagnostics[0].severity, Severity::Warning);
        assert!(odd.meta.badges().is_empty());
    }

    #[test]
    fn an_extra_member_is_refused_by_name() {
        let e = AssayBundle.load(&fixture("extra-member.tar.gz")).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("\"notes.txt\"") && msg.contains("refused"), "{msg}");
    }

    #[test]
    fn limits_missing_members_and_traversal() {
        let d = tempfile::tempdir().unwrap();
        let m = br#"{"schema_version":1,"run_id":"r","event_count":0,"files":{}}"#;
        let only_manifest = write(d.path(), "a.tar.gz", &bundle(&[("manifest.json", m)]));
        assert!(
            AssayBundle
                .load(&only_manifest)
                .unwrap_err()
                .to_string()
                .contains("no events.ndjson")
        );
        let sneaky = write(
            d.path(),
            "b.tar.gz",
            &bundle(&[("manifest.json", m), ("logs/events.ndjson", b"")]),
        );
        assert!(
            AssayBundle
                .load(&sneaky)
                .unwrap_err()
                .to_string()
                .contains("unexpected member")
        );
        let long_line = format!("{{\"type\":\"x\",\"data\":\"{}\"}}\n", "a".repeat(MAX_LINE_BYTES));
        let big = write(
            d.path(),
            "c.tar.gz",
            &bundle(&[
                ("manifest.json", br#"{"schema_version":1,"run_id":"r","event_count":1}"#),
                ("events.ndjson", long_line.as_bytes()),
            ]),
        );
        let t = &AssayBundle.load(&big).unwrap().traces[0];
        assert!(t.diagnostics[0].message.contains("1 MiB"), "{:?}", t.diagnostics);
        let not_gz = write(d.path(), "d.tar.gz", b"\x1f\x8bnot really");
        assert!(AssayBundle.load(&not_gz).is_err());
    }

    #[test]
    fn detection_reads_the_first_member_name() {
        let probe = |p: &Path| Probe::open(p).unwrap();
        assert_eq!(AssayBundle.detect(&probe(&fixture("decisions.tar.gz"))), 100);
        let d = tempfile::tempdir().unwrap();
        let other = write(d.path(), "x.tar.gz", &bundle(&[("readme.md", b"hi")]));
        assert_eq!(AssayBundle.detect(&probe(&other)), 0);
        let jsonl = write(
            d.path(),
            "t.jsonl",
            b"{\"type\":\"episode_start\",\"episode_id\":\"e\"}\n",
        );
        assert_eq!(AssayBundle.detect(&probe(&jsonl)), 0);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2000)) {
            let d = tempfile::tempdir().unwrap();
            let mut bytes = vec![0x1f, 0x8b];
            bytes.extend(data);
            let p = write(d.path(), "b.tar.gz", &bytes);
            let _ = AssayBundle.load(&p);
            let _ = AssayBundle.detect(&Probe::open(&p).unwrap());
        }

        #[test]
        fn arbitrary_events_never_panic(lines in proptest::collection::vec(event_strategy(), 0..10), count in 0u64..12) {
            let d = tempfile::tempdir().unwrap();
            let m = serde_json::json!({"schema_version": 1, "run_id": "r", "event_count": count}).to_string();
            let events = lines.join("\n");
            let p = write(d.path(), "b.tar.gz", &bundle(&[("manifest.json", m.as_bytes()), ("events.ndjson", events.as_bytes())]));
            let _ = AssayBundle.load(&p);
        }
    }

    fn event_strategy() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let ty = prop_oneof![
            Just(Value::from("assay.tool.decision")),
            Just(Value::from("assay.enforcement_decision.v0")),
            Just(Value::from("assay.profile.finished")),
            Just(Value::Null),
            "[a-z.]{0,8}".prop_map(Value::from)
        ];
        let val = prop_oneof![
            Just(Value::Null),
            "[a-z]{0,5}".prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            Just(serde_json::json!({"name": "t"})),
        ];
        (ty, val.clone(), val.clone(), val).prop_map(|(ty, a, b, c)| {
            serde_json::json!({"specversion": a, "type": ty, "time": b, "assayseq": c, "subject": a,
                "data": {"tool": c, "decision": a, "arguments": b, "status": a}})
            .to_string()
        })
    }
}
