//! Inspect AI eval logs: `.eval` (a zip archive) and `.json` (one JSON document).
//!
//! A `.eval` holds `_journal/start.json` (written first), `samples/<id>_epoch_<n>.json` (one
//! member per sample and epoch, written as each completes), `_journal/summaries/<n>.json`, and
//! at the end `summaries.json`, `reductions.json` and `header.json` (the eval spec, status,
//! results and stats). Newer Inspect versions compress members with zstd (zip method 93),
//! older ones with deflate. A `.json` log is the same `EvalLog` as one document: `version`,
//! `status`, `eval`, `plan`, `results`, `stats`, `error`, `samples[]`, `reductions`.
//!
//! One trace per sample × epoch. A sample holds its final `messages[]` and a flat `events[]`
//! timeline: `span_begin`/`span_end` (with `span_id` on the events inside; older logs have
//! `step` begin/end instead), `model` (an LLM call, tokens in `output.usage`), `tool` (call and
//! result in one event, `error` on failure; the agent's `submit()` is one too), `score`,
//! `error`, `sample_limit`, `state`/`store` (JSON patches), `sandbox`, `logger`, `info`, ...
//! Large strings are stored once in `attachments` and referenced as `attachment://<hash>`;
//! newer logs store model inputs once in `events_data.messages` (older: `message_pool`) and
//! give each model event `input_refs` ranges into it. Both are resolved at load, within a
//! budget a load (beyond it the references are shown as recorded); a model call's input shows
//! the messages added since the sample's previous call, not the whole conversation again.
//!
//! Reading is bounded: a member's declared and actual decompressed size are capped (a zip
//! bomb stops at the cap with a diagnostic), as are the whole load's decompressed bytes and a
//! `.json` log's size.
//!
//! Payloads stay on disk (issue 13): each event keeps the byte range of its record, in the
//! file for a `.json` log, in its decompressed member for a `.eval` (a member cannot be read
//! by position: the decoder decompresses the sample's member again, found by the trace id
//! that names it, and keeps the last few). Decoding resolves references as the load did: the
//! sample's attachments and message pool are read again, and where each model call's input
//! began (what earlier calls covered) is replayed over the sample's events. Held instead:
//! events nested in tool/subtask events (older logs; no byte range of their own), samples
//! without `id` or in a member named otherwise, and events after a sample ran out of the
//! resolve budget (decoding them unbounded would show more than the load did).
//!
//! Tokens: `ModelUsage` passes each provider's counts through (OpenAI's include the cache
//! read in `input_tokens` and the reasoning in `output_tokens`; Anthropic's keep the cache
//! apart); `total_tokens` tells which (see `model_usage`), and both are normalized.
//! `total_cost` (dollars, newer versions) is the recorded cost. The run's `model_usage` is
//! the run's totals (summed over models).

use super::jsonl::json_error;
use super::whole;
use super::{Format, LoadError, Loaded, Probe, Summary, field, lenient_u64, open_regular, stem, str_of};
use crate::model::*;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Mutex};

pub struct InspectAi;

/// Largest decompressed size of one `.eval` member (a sample with a long agent run is tens of
/// MiB; past this is a zip bomb or something tracetui should not hold in memory).
const MAX_MEMBER_BYTES: u64 = 512 << 20;
/// Largest decompressed total of one `.eval` load (many members pointing at the same data).
const MAX_TOTAL_BYTES: u64 = 2 << 30;
/// Largest `.json` log read.
const MAX_JSON_BYTES: u64 = 1 << 30;
/// Members in one archive (its central directory is read whole by the zip reader).
const MAX_MEMBERS: usize = 1_000_000;
/// How deep `events[]` nested inside tool and subtask events are followed.
const MAX_NESTING: usize = 64;
/// Resolved references (messages of `input_refs`, attachment texts) one load may add to its
/// payloads, beyond which they are shown as recorded.
const RESOLVE_BUDGET: usize = 256 << 20;

/// What is left of a load's [`RESOLVE_BUDGET`], and whether the last sample ran out of it.
#[derive(Clone, Copy)]
struct Resolve {
    left: usize,
    ran_out: bool,
}

impl Resolve {
    fn new(left: usize) -> Resolve {
        Resolve { left, ran_out: false }
    }
}

const ZIP_MAGIC: &[u8] = b"PK\x03\x04";
const ZIP_EMPTY: &[u8] = b"PK\x05\x06";

impl Format for InspectAi {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        "inspect-ai"
    }
    fn describe(&self) -> &'static str {
        "Inspect AI eval log (*.eval zip or *.json EvalLog), usually ./logs/ or $INSPECT_LOG_DIR"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        if p.head.starts_with(ZIP_MAGIC) || p.head.starts_with(ZIP_EMPTY) {
            // The first local header's name: Inspect writes `_journal/start.json` first.
            let first = first_member_name(&p.head).unwrap_or_default();
            let ours = first.starts_with("_journal/") || first == "header.json" || first.starts_with("samples/");
            return match (p.file_name().ends_with(".eval"), ours) {
                (true, _) => 100,
                (false, true) => 90,
                (false, false) => 0,
            };
        }
        if p.file_name().ends_with(".eval") {
            // Named as a log but no zip: weakly ours, so that a load says what is wrong with
            // it, unless another format knows the file better.
            return 10;
        }
        if p.complete {
            return if p.whole_naming(&["eval"]).is_some_and(looks_like_log) {
                100
            } else {
                0
            };
        }
        // Too large for the probe: the top-level keys Inspect writes first.
        if p.has_key("version") && p.has_key("eval") && (p.has_key("status") || p.has_key("plan")) {
            return 90;
        }
        0
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        if is_zip(path)? {
            load_eval(path, true)
        } else if path.extension().is_some_and(|x| x == "eval") {
            Err(LoadError::invalid(
                path,
                "not a zip archive (an Inspect .eval log is one); damaged or not an Inspect log",
            ))
        } else {
            load_json(path, true)
        }
    }

    /// A `.eval` sample's own member, with the header: the explorer opens one sample of a
    /// log of thousands, which loaded whole took seconds.
    fn load_run(&self, path: &Path, index: usize, id: &str) -> Option<Result<Loaded, LoadError>> {
        if !is_zip(path).ok()? {
            return None;
        }
        load_eval_sample(path, index, id)
    }

    fn decode_payload(&self, trace: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
        decode(trace, ev, raw).unwrap_or_else(whole::unreadable)
    }

    /// A `.eval` event's record, cut out of its decompressed member (the raw view shows it).
    fn read_record(&self, trace: &Trace, o: Origin) -> Option<std::io::Result<Vec<u8>>> {
        // Events without a byte range (held) read nothing either way.
        if o.len == 0 {
            return None;
        }
        let root = trace.event(*trace.roots.first()?);
        if root.origin.len == 0 {
            return None;
        }
        let member = sample_of(trace, root.origin)?;
        let m = member.member.as_ref()?;
        let rec = m.get(o.offset as usize..).and_then(|r| r.get(..o.len as usize));
        Some(
            rec.map(<[u8]>::to_vec)
                .ok_or_else(|| std::io::Error::other("beyond its sample's archive member")),
        )
    }

    fn summary_inputs(&self, path: &Path) -> Option<Vec<std::path::PathBuf>> {
        Some(vec![path.to_path_buf()])
    }

    fn summarize(&self, path: &Path) -> Result<Option<Vec<Summary>>, LoadError> {
        let rows = if is_zip(path)? {
            summarize_eval(path)?
        } else {
            summarize_json(path)?
        };
        // None: no summaries recorded (a log still being written): it is loaded.
        Ok(rows)
    }
}

/// Whether the file starts as a zip archive does.
fn is_zip(path: &Path) -> Result<bool, LoadError> {
    let mut f = open_regular(path).map_err(|e| LoadError::io(path, e))?;
    let mut magic = [0u8; 4];
    let mut n = 0;
    while n < 4 {
        match f.read(&mut magic[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(LoadError::io(path, e)),
        }
    }
    Ok(n == 4 && (magic == ZIP_MAGIC || magic == ZIP_EMPTY))
}

/// The name in the zip's first local file header, if the head holds it.
fn first_member_name(head: &[u8]) -> Option<String> {
    if head.len() < 30 || !head.starts_with(ZIP_MAGIC) {
        return None;
    }
    let len = u16::from_le_bytes([head[26], head[27]]) as usize;
    let name = head.get(30..30 + len)?;
    Some(String::from_utf8_lossy(name).into_owned())
}

/// The top-level shape of an `EvalLog` document: an `eval` spec with a task, and a version.
fn looks_like_log(v: &Value) -> bool {
    let Some(eval) = v.get("eval").filter(|e| e.is_object()) else {
        return false;
    };
    v.get("version").is_some_and(Value::is_u64)
        && (eval.get("task").is_some() || eval.get("model").is_some())
        && (v.get("status").is_some() || v.get("plan").is_some() || v.get("samples").is_some())
}

/// What the log says about the whole eval, shared by its samples' traces.
#[derive(Default)]
struct Log {
    task: String,
    model: Option<String>,
    status: Option<String>,
    error: Option<ErrorInfo>,
    attributes: Vec<(String, Value)>,
}

impl Log {
    /// From `header.json` / `_journal/start.json` / the `.json` document's top level.
    fn from_header(h: &Value, fallback_name: &str) -> Log {
        let eval = h.get("eval").unwrap_or(&Value::Null);
        let task = str_of(eval, "task_display_name")
            .or_else(|| str_of(eval, "task"))
            .filter(|s| !s.is_empty())
            .unwrap_or(fallback_name)
            .to_string();
        let mut attributes = Vec::new();
        for k in ["task", "eval_id", "run_id", "eval_set_id", "created", "model"] {
            if let Some(x) = field(eval, k) {
                attributes.push((k.to_string(), x.clone()));
            }
        }
        if let Some(v) = eval.get("packages").and_then(|p| p.get("inspect_ai")) {
            attributes.push(("inspect_ai".into(), v.clone()));
        }
        if let Some(s) = field(h, "status") {
            attributes.push(("log_status".into(), s.clone()));
        }
        if let Some(v) = field(h, "version") {
            attributes.push(("log_version".into(), v.clone()));
        }
        Log {
            task,
            model: str_of(eval, "model").map(str::to_string),
            status: str_of(h, "status").map(str::to_string),
            error: field(h, "error").and_then(eval_error),
            attributes,
        }
    }

    /// The trace standing for the eval itself when it holds no sample (never logged,
    /// cancelled or failed before one completed, or every sample unreadable).
    fn eval_trace(&self, path: &Path) -> Trace {
        let status = match self.status.as_deref() {
            Some("error") => RunStatus::Error,
            Some("started") => RunStatus::Running,
            Some("success") => RunStatus::Ok,
            _ if self.error.is_some() => RunStatus::Error,
            _ => RunStatus::Unknown,
        };
        let mut t = Trace::new(RunMeta {
            id: "eval".into(),
            name: Some(self.task.clone()),
            format: "inspect-ai",
            source: path.to_path_buf(),
            status,
            model: self.model.clone(),
            attributes: self.attributes.clone(),
            ..Default::default()
        });
        t.add_file(path);
        t.add(NewEvent {
            status: status.event_status(),
            model: self.model.as_deref(),
            payload: PayloadRef::inline(Payload {
                error: self.error.clone(),
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::Run, &self.task)
        });
        t
    }
}

/// Inspect's `EvalError` (`message`, `traceback`) or a plain string.
fn eval_error(v: &Value) -> Option<ErrorInfo> {
    let mut e = ErrorInfo::from_value(v)?;
    if e.stack.is_none()
        && let Some(tb) = str_of(v, "traceback")
    {
        e.stack = Some(tb.to_string());
    }
    if let Some(Value::Object(d)) = &mut e.details {
        d.remove("traceback_ansi");
        if d.is_empty() {
            e.details = None;
        }
    }
    Some(e)
}

// ---------------------------------------------------------------------------------------
// .eval (zip)

type Archive = zip::ZipArchive<std::io::BufReader<std::fs::File>>;

fn open_archive(path: &Path) -> Result<Archive, LoadError> {
    let f = open_regular(path).map_err(|e| LoadError::io(path, e))?;
    let zip = zip::ZipArchive::new(std::io::BufReader::new(f))
        .map_err(|e| LoadError::invalid(path, format!("not a readable .eval log (zip archive): {e}")))?;
    if zip.len() > MAX_MEMBERS {
        return Err(LoadError::invalid(
            path,
            format!("{} members, over the limit of {MAX_MEMBERS}; not read", zip.len()),
        ));
    }
    Ok(zip)
}

/// Member names by index (a name that is not UTF-8 is skipped: Inspect writes ASCII).
fn member_names(zip: &Archive) -> Vec<(usize, String)> {
    (0..zip.len())
        .filter_map(|i| Some((i, zip.name_for_index(i)?.ok()?.into_owned())))
        .collect()
}

/// Decompressed bytes left for the rest of a load.
struct Budget {
    left: u64,
}

/// Read one member, bounded: its declared size and the bytes it really decompresses to are
/// both held to [`MAX_MEMBER_BYTES`] and to what is left of the load's budget.
fn read_member(zip: &mut Archive, index: usize, name: &str, budget: &mut Budget) -> Result<Vec<u8>, String> {
    let f = zip
        .by_index(index)
        .map_err(|e| format!("{name}: cannot be read: {e}"))?;
    let declared = f.size();
    let cap = MAX_MEMBER_BYTES.min(budget.left);
    if declared > cap {
        return Err(format!(
            "{name}: declares {declared} bytes decompressed, over the {} MiB {}; not read (a zip bomb, or a sample too large to show)",
            cap >> 20,
            if cap < MAX_MEMBER_BYTES {
                "left of this load's decompression limit"
            } else {
                "limit of one member"
            }
        ));
    }
    // The declared size may be a lie: reserve no more than a modest amount up front.
    let mut buf = Vec::with_capacity(declared.min(16 << 20) as usize);
    f.take(cap + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("{name}: damaged ({e})"))?;
    if buf.len() as u64 > cap {
        return Err(format!(
            "{name}: decompresses to more than {} MiB though it declares {declared} bytes; stopped there (a zip bomb)",
            cap >> 20
        ));
    }
    budget.left -= buf.len() as u64;
    Ok(buf)
}

fn read_member_json(
    zip: &mut Archive,
    names: &[(usize, String)],
    name: &str,
    budget: &mut Budget,
) -> Option<Result<Value, String>> {
    let &(i, _) = names.iter().find(|(_, n)| n == name)?;
    Some(read_member(zip, i, name, budget).and_then(|b| {
        serde_json::from_slice::<Value>(&b).map_err(|e| format!("{name}: not valid JSON: {}", json_error(&e)))
    }))
}

/// The log's header: `header.json`, else (a log still being written) `_journal/start.json`.
fn eval_header(
    path: &Path,
    zip: &mut Archive,
    names: &[(usize, String)],
    budget: &mut Budget,
    diags: &mut Vec<Diagnostic>,
) -> Option<Value> {
    for name in ["header.json", "_journal/start.json"] {
        match read_member_json(zip, names, name, budget) {
            Some(Ok(v)) if v.is_object() => return Some(v),
            Some(Ok(_)) => diags.push(Diagnostic::error(path, None, format!("{name}: not a JSON object"))),
            Some(Err(e)) => diags.push(Diagnostic::error(path, None, e)),
            None => {}
        }
    }
    None
}

/// `samples/<id>_epoch_<n>.json` → (id, epoch).
fn sample_member(name: &str) -> Option<(&str, u64)> {
    let rest = name.strip_prefix("samples/")?.strip_suffix(".json")?;
    let (id, epoch) = rest.rsplit_once("_epoch_")?;
    Some((id, epoch.parse().ok()?))
}

/// Order samples by id (numerically where both are numbers) then epoch, as Inspect lists them.
fn sample_order(a: &(&str, u64), b: &(&str, u64)) -> std::cmp::Ordering {
    let num = |s: &str| s.parse::<u64>().ok();
    match (num(a.0), num(b.0)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => a.0.cmp(b.0),
    }
    .then(a.1.cmp(&b.1))
}

fn load_eval(path: &Path, defer: bool) -> Result<Loaded, LoadError> {
    load_eval_within(path, defer, RESOLVE_BUDGET)
}

fn load_eval_within(path: &Path, defer: bool, resolve_budget: usize) -> Result<Loaded, LoadError> {
    let mut zip = open_archive(path)?;
    let names = member_names(&zip);
    let mut budget = Budget { left: MAX_TOTAL_BYTES };
    let mut diags = Vec::new();
    let header = eval_header(path, &mut zip, &names, &mut budget, &mut diags);
    let mut samples: Vec<(&str, u64, usize, &str)> = names
        .iter()
        .filter_map(|(i, n)| sample_member(n).map(|(id, ep)| (id, ep, *i, n.as_str())))
        .collect();
    if header.is_none() && samples.is_empty() {
        let first = diags.first().map(|d| format!(" ({})", d.message)).unwrap_or_default();
        return Err(LoadError::NotATrace {
            path: path.to_path_buf(),
            reason: format!("a zip archive without header.json, _journal/start.json or samples/*.json{first}"),
            tried: "inspect-ai".into(),
        });
    }
    let log = Log::from_header(header.as_ref().unwrap_or(&Value::Null), &stem_eval(path));
    samples.sort_by(|a, b| sample_order(&(a.0, a.1), &(b.0, b.1)));
    let mut traces = Vec::new();
    let mut resolve = Resolve::new(resolve_budget);
    // Samples are read in order (the decompression budget is the log's), a batch at a time,
    // and parsed in parallel; the next batch is read while one is parsed.
    let mut samples = samples.into_iter();
    let mut batch = read_batch(path, &mut zip, &mut samples, &mut budget);
    while !batch.is_empty() {
        let (next, done) = rayon::join(
            || read_batch(path, &mut zip, &mut samples, &mut budget),
            || parse_batch(path, &log, &batch, defer, resolve.left),
        );
        for (slot, parsed) in batch.iter().zip(done) {
            match (slot, parsed) {
                (Err(e), _) => diags.push(e.clone()),
                (Ok((name, text)), Some(p)) => {
                    // Parsed with the budget left when the batch began: the same trace as in
                    // turn when it stayed within what is left now (else parsed again so).
                    let same = p.budget_before == resolve.left || (!p.ran_out && p.used() <= resolve.left);
                    let result = if same {
                        resolve.left -= p.used();
                        p.trace
                    } else {
                        sample_trace(path, &log, text, Place::member(defer), name, &mut resolve)
                    };
                    match result {
                        Ok(t) => traces.push(t),
                        Err(e) => diags.push(Diagnostic::error(path, None, format!("{name}: {e}; sample skipped"))),
                    }
                }
                (Ok(_), None) => {}
            }
        }
        batch = next;
    }
    finish(path, &log, traces, diags)
}

/// Decompressed bytes of the samples read before they are parsed together.
const BATCH_BYTES: usize = 64 << 20;
const BATCH_SAMPLES: usize = 64;

/// A sample member read (its name and text), or why it was skipped.
type Slot = Result<(String, String), Diagnostic>;

/// The next samples, in order, up to [`BATCH_BYTES`] (at least one) or [`BATCH_SAMPLES`].
fn read_batch<'n>(
    path: &Path,
    zip: &mut Archive,
    samples: &mut impl Iterator<Item = (&'n str, u64, usize, &'n str)>,
    budget: &mut Budget,
) -> Vec<Slot> {
    let mut out = Vec::new();
    let mut bytes = 0;
    while bytes < BATCH_BYTES && out.len() < BATCH_SAMPLES {
        let Some((_, _, index, name)) = samples.next() else {
            break;
        };
        let slot = match read_member(zip, index, name, budget) {
            Err(e) => Err(Diagnostic::error(path, None, format!("{e}; sample skipped"))),
            Ok(b) => match String::from_utf8(b) {
                Err(e) => Err(Diagnostic::error(
                    path,
                    None,
                    format!("{name}: not UTF-8 ({}); sample skipped", e.utf8_error()),
                )),
                Ok(text) => {
                    bytes += text.len();
                    Ok((name.to_string(), text))
                }
            },
        };
        out.push(slot);
    }
    out
}

/// A sample parsed with the resolve budget left when its batch began.
struct Parsed {
    trace: Result<Trace, String>,
    budget_before: usize,
    budget_after: usize,
    /// The budget ran out in it: with less left, it would have run out elsewhere.
    ran_out: bool,
}

impl Parsed {
    fn used(&self) -> usize {
        self.budget_before - self.budget_after
    }
}

fn parse_batch(path: &Path, log: &Log, batch: &[Slot], defer: bool, resolve: usize) -> Vec<Option<Parsed>> {
    use rayon::prelude::*;
    batch
        .par_iter()
        .map(|slot| {
            let (name, text) = slot.as_ref().ok()?;
            let mut left = Resolve::new(resolve);
            let trace = sample_trace(path, log, text, Place::member(defer), name, &mut left);
            Some(Parsed {
                trace,
                budget_before: resolve,
                budget_after: left.left,
                ran_out: left.ran_out,
            })
        })
        .collect()
}

/// The sample whose trace id is `id` (`<id>_epoch_<n>`, which also names its member), alone;
/// without an id, the first sample (the first run of the whole load). None when there is no
/// such member, it cannot be read, or its sample says another id: the whole load then finds
/// the run, or says why not. The log's own problems (its header) are told with the sample;
/// those of other samples are not.
fn load_eval_sample(path: &Path, index: usize, id: &str) -> Option<Result<Loaded, LoadError>> {
    let mut zip = match open_archive(path) {
        Ok(z) => z,
        Err(e) => return Some(Err(e)),
    };
    let names = member_names(&zip);
    let (index, name) = if id.is_empty() {
        if index != 0 {
            return None;
        }
        names
            .iter()
            .filter_map(|(i, n)| sample_member(n).map(|s| (s, *i, n.clone())))
            .min_by(|a, b| sample_order(&a.0, &b.0))
            .map(|(_, i, n)| (i, n))?
    } else {
        let name = format!("samples/{id}.json");
        sample_member(&name)?;
        names.iter().find(|(_, n)| *n == name).cloned()?
    };
    let mut budget = Budget { left: MAX_TOTAL_BYTES };
    let mut diags = Vec::new();
    let header = eval_header(path, &mut zip, &names, &mut budget, &mut diags);
    let log = Log::from_header(header.as_ref().unwrap_or(&Value::Null), &stem_eval(path));
    let bytes = read_member(&mut zip, index, &name, &mut budget).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    let place = Place::member(true);
    let mut resolve = Resolve::new(RESOLVE_BUDGET);
    let t = sample_trace(path, &log, text, place, &name, &mut resolve).ok()?;
    if name != format!("samples/{}.json", t.meta.id) {
        return None;
    }
    Some(finish(path, &log, vec![t], diags))
}

/// The run name of a log file: its name without `.eval`.
fn stem_eval(path: &Path) -> String {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("eval");
    match name.strip_suffix(".eval") {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => stem(path),
    }
}

/// Attach the log-level diagnostics (to the first trace) and make sure there is a trace.
fn finish(path: &Path, log: &Log, mut traces: Vec<Trace>, diags: Vec<Diagnostic>) -> Result<Loaded, LoadError> {
    if traces.is_empty() {
        let mut t = log.eval_trace(path);
        if diags.is_empty() {
            t.diagnostics.push(Diagnostic::warning(
                path,
                None,
                "the log holds no samples (samples not logged, or the eval stopped before one completed)",
            ));
        }
        traces.push(t);
    }
    traces[0].diagnostics.extend(diags);
    for t in &mut traces {
        t.finalize();
    }
    Ok(Loaded { traces })
}

// ---------------------------------------------------------------------------------------
// .json

fn read_json_text(path: &Path) -> Result<String, LoadError> {
    let f = open_regular(path).map_err(|e| LoadError::io(path, e))?;
    let len = f.metadata().map_err(|e| LoadError::io(path, e))?.len();
    let too_large = || {
        LoadError::invalid(
            path,
            format!(
                "over the {} MiB limit of an Inspect .json log; not read",
                MAX_JSON_BYTES >> 20
            ),
        )
    };
    if len > MAX_JSON_BYTES {
        return Err(too_large());
    }
    let mut buf = Vec::with_capacity(len as usize);
    f.take(MAX_JSON_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| LoadError::io(path, e))?;
    if buf.len() as u64 > MAX_JSON_BYTES {
        return Err(too_large());
    }
    String::from_utf8(buf).map_err(|e| LoadError::invalid(path, format!("not UTF-8: {}", e.utf8_error())))
}

fn load_json(path: &Path, defer: bool) -> Result<Loaded, LoadError> {
    let text = read_json_text(path)?;
    let top: BTreeMap<String, &RawValue> =
        serde_json::from_str(&text).map_err(|e| LoadError::invalid(path, json_error(&e)))?;
    // The header: every top-level field but the samples (the large part).
    let mut header = Map::new();
    for (k, raw) in &top {
        if k != "samples" && k != "reductions" {
            header.insert(k.clone(), serde_json::from_str(raw.get()).unwrap_or(Value::Null));
        }
    }
    let header = Value::Object(header);
    if !looks_like_log(&header) {
        return Err(LoadError::NotATrace {
            path: path.to_path_buf(),
            reason: "no Inspect EvalLog (`version`, `eval` with a task, `status`/`plan`/`samples`)".into(),
            tried: "inspect-ai".into(),
        });
    }
    let log = Log::from_header(&header, &stem(path));
    let mut diags = Vec::new();
    let samples: Vec<&RawValue> = match top.get("samples") {
        None => Vec::new(),
        Some(raw) if raw.get() == "null" => Vec::new(),
        Some(raw) => match serde_json::from_str(raw.get()) {
            Ok(s) => s,
            Err(e) => {
                diags.push(Diagnostic::error(
                    path,
                    None,
                    format!("`samples` is not a list: {}", json_error(&e)),
                ));
                Vec::new()
            }
        },
    };
    let mut traces = Vec::new();
    let mut resolve = Resolve::new(RESOLVE_BUDGET);
    for (i, raw) in samples.iter().enumerate() {
        let offset = raw.get().as_ptr() as usize - text.as_ptr() as usize;
        match sample_trace(
            path,
            &log,
            raw.get(),
            Place {
                base: Some(offset as u64),
                member: false,
                defer,
            },
            &format!("samples[{i}]"),
            &mut resolve,
        ) {
            Ok(t) => traces.push(t),
            Err(e) => diags.push(Diagnostic::error(path, None, format!("samples[{i}]: {e}; skipped"))),
        }
    }
    finish(path, &log, traces, diags)
}

// ---------------------------------------------------------------------------------------
// Payloads decoded when shown

/// What a sample's payloads are decoded against: its attachments and message pool, where
/// each model call's input began (`Refs::seen` before it, by the call's byte offset), and for
/// a `.eval` sample the decompressed member its byte ranges point into.
struct Sample {
    attachments: Arc<Map<String, Value>>,
    pool: Arc<Vec<Value>>,
    seen: HashMap<u64, usize>,
    member: Option<Vec<u8>>,
}

/// A sample: its file, trace id and byte range.
type SampleKey = (std::path::PathBuf, String, u64, u32);

/// The samples decoded last: the detail pane, `grep` and `export` ask for many events of one
/// sample in turn (and a few threads at once), and reading a sample's context is a pass over
/// the sample (a `.eval` member decompressed).
static SAMPLES: Mutex<Vec<(SampleKey, Arc<Sample>)>> = Mutex::new(Vec::new());
const SAMPLES_KEPT: usize = 4;

/// Decode an event whose payload was left in the file. None: its record cannot be read.
fn decode(trace: &Trace, ev: &Event, raw: &[&[u8]]) -> Option<Payload> {
    // The run event of the sample: its byte range is the sample's.
    let mut root = ev;
    for _ in 0..trace.len() {
        if root.parent == NO_PARENT {
            break;
        }
        root = trace.event(root.parent);
    }
    let sample = sample_of(trace, root.origin)?;
    let rec: &[u8] = match &sample.member {
        // A zip member cannot be read by position: `raw` is the archive's bytes, not the
        // record's; the record is cut out of the member.
        Some(m) => m.get(ev.origin.offset as usize..)?.get(..ev.origin.len as usize)?,
        None => raw.first()?,
    };
    let text = std::str::from_utf8(rec).ok()?;
    let mut refs = Refs {
        attachments: sample.attachments.clone(),
        pool: sample.pool.clone(),
        left: usize::MAX,
        seen: 0,
        exhausted: false,
    };
    // A record with no `event` is a message (a sample without events): its LLM call, or
    // (with the answering message as the second record) its tool call.
    let made_of_message = matches!(ev.kind, EventKind::LlmCall | EventKind::ToolCall)
        && serde_json::from_str::<Fields<'_>>(text).is_ok_and(|f| !f.contains_key("event"));
    if made_of_message {
        if ev.kind == EventKind::LlmCall {
            return Some(message_llm_payload(text, &mut refs));
        }
        let result = match (&sample.member, ev.origin2.as_deref()) {
            (Some(m), Some(o)) => Some(m.get(o.offset as usize..)?.get(..o.len as usize)?),
            (None, Some(_)) => Some(*raw.get(1)?),
            (_, None) => None,
        };
        let result = result.map(std::str::from_utf8).transpose().ok()?;
        return Some(message_call_payload(text, result, &mut refs));
    }
    Some(match ev.kind {
        EventKind::Run => root_payload(&serde_json::from_str(text).ok()?, &mut refs),
        EventKind::Message(_) => message_parts(text, &mut refs).1,
        _ => {
            let offset = ev.origin.offset;
            refs.seen = sample.seen.get(&offset).copied().unwrap_or(0);
            event_payload(serde_json::from_str(text).ok()?, &mut refs)
        }
    })
}

/// The decoding context of the sample at `at` (its run event's origin), cached.
fn sample_of(trace: &Trace, at: Origin) -> Option<Arc<Sample>> {
    let path = trace.files.get(at.file as usize)?;
    let key: SampleKey = (path.clone(), trace.meta.id.clone(), at.offset, at.len);
    {
        let mut cache = SAMPLES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = cache.iter().position(|(k, _)| *k == key) {
            let hit = cache.remove(i);
            let s = hit.1.clone();
            cache.insert(0, hit);
            return Some(s);
        }
    }
    let s = Arc::new(read_sample(trace, path, at)?);
    let mut cache = SAMPLES.lock().unwrap_or_else(|e| e.into_inner());
    cache.insert(0, (key, s.clone()));
    cache.truncate(SAMPLES_KEPT);
    Some(s)
}

fn read_sample(trace: &Trace, path: &Path, at: Origin) -> Option<Sample> {
    let zip = is_zip(path).ok()?;
    let (bytes, member) = if zip {
        let mut archive = open_archive(path).ok()?;
        let name = format!("samples/{}.json", trace.meta.id);
        let index = archive.index_for_name(&name)?;
        let bytes = read_member(&mut archive, index, &name, &mut Budget { left: MAX_MEMBER_BYTES }).ok()?;
        (None, Some(bytes))
    } else {
        (Some(super::read_file_range(trace, at).ok()?), None)
    };
    let all = bytes.as_deref().or(member.as_deref())?;
    let text = std::str::from_utf8(all.get(..at.len as usize)?).ok()?;
    // A `.json` sample's offsets count from the file's start, a member's from its own.
    let base = if zip { 0 } else { at.offset };
    let fields: Fields<'_> = serde_json::from_str(text).ok()?;
    let (attachments, pool) = sample_context(&fields);
    let mut seen = HashMap::new();
    if let Some(events) = fields
        .get("events")
        .and_then(|r| serde_json::from_str::<Vec<&RawValue>>(r.get()).ok())
    {
        let mut at_pool = 0;
        for raw in events {
            let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(raw.get()) else {
                continue;
            };
            let offset = base + (raw.get().as_ptr() as usize - text.as_ptr() as usize) as u64;
            if str_of(&v, "event") == Some("model") {
                seen.insert(offset, at_pool);
            }
            replay_seen(&v, pool.len(), 0, &mut at_pool);
        }
    }
    Some(Sample {
        attachments: Arc::new(attachments),
        pool: Arc::new(pool),
        seen,
        member,
    })
}

/// Move `seen` past an event as the load's [`Refs::new_messages`] moved it: a model call
/// whose input is its `input_refs` covers their ranges; events nested in tool and subtask
/// events (older logs) count in the order the load visits them.
fn replay_seen(v: &Value, pool_len: usize, depth: usize, seen: &mut usize) {
    match str_of(v, "event") {
        Some("model") => {
            let input = v.get("input").filter(|i| i.as_array().is_none_or(|a| !a.is_empty()));
            if input.is_none()
                && let Some(ranges) = v.get("input_refs").and_then(|r| ref_ranges(r, pool_len))
            {
                *seen = ranges.iter().map(|&(_, b)| b).fold(*seen, usize::max);
            }
        }
        Some("tool" | "subtask") => {
            if let Some(Value::Array(list)) = v.get("events")
                && !list.is_empty()
                && depth + 1 < MAX_NESTING
            {
                for x in list.iter().filter(|x| x.is_object()) {
                    replay_seen(x, pool_len, depth + 1, seen);
                }
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// One sample

/// What a model call's `input_refs` and `attachment://` references resolve against.
struct Refs {
    /// Shared with the sample's decoding context (see [`Sample`]).
    attachments: Arc<Map<String, Value>>,
    pool: Arc<Vec<Value>>,
    /// Bytes of resolved references left for this load.
    left: usize,
    /// The end of the pool that earlier model calls' inputs covered.
    seen: usize,
    /// The budget ran out (said once, in a diagnostic).
    exhausted: bool,
}

impl Refs {
    /// Replace `attachment://<hash>` strings inside `v` by the attachment's text.
    fn attachments_in(&mut self, v: &mut Value) {
        if self.attachments.is_empty() {
            return;
        }
        let mut stack = vec![v];
        while let Some(v) = stack.pop() {
            match v {
                Value::String(s) => {
                    if let Some(hash) = s.strip_prefix("attachment://")
                        && let Some(Value::String(text)) = self.attachments.get(hash)
                    {
                        if text.len() > self.left {
                            self.exhausted = true;
                            continue;
                        }
                        self.left -= text.len();
                        *s = text.clone();
                    }
                }
                Value::Array(a) => stack.extend(a.iter_mut()),
                Value::Object(o) => stack.extend(o.values_mut()),
                _ => {}
            }
        }
    }

    /// The messages that `input_refs` (`[[start, end], ...]`, end exclusive) point at and no
    /// earlier model call of the sample did, with how many were left out as seen: each call's
    /// input is the whole conversation so far, so resolving every call whole costs the square
    /// of its length (100 samples of 250 turns: 80 s and 7.5 GB). None past the budget.
    fn new_messages(&mut self, refs: &Value) -> Option<(Value, usize)> {
        let ranges = ref_ranges(refs, self.pool.len())?;
        let mut out = Vec::new();
        let (mut seen_before, mut end) = (0, self.seen);
        for (a, b) in ranges {
            let from = a.max(self.seen);
            seen_before += from.min(b) - a;
            for m in self.pool.get(from..b).unwrap_or(&[]) {
                let cost = approx_size(m);
                if cost > self.left {
                    self.exhausted = true;
                    return None;
                }
                self.left -= cost;
                out.push(m.clone());
            }
            end = end.max(b);
        }
        self.seen = end;
        Some((Value::Array(out), seen_before))
    }
}

/// The ranges of `input_refs` (`[[start, end], ...]`, end exclusive, cut to the pool), empty
/// ones left out; None when one is not a pair of counts.
fn ref_ranges(refs: &Value, pool_len: usize) -> Option<Vec<(usize, usize)>> {
    let mut out = Vec::new();
    for r in refs.as_array()? {
        let (Some(a), Some(b)) = (
            r.get(0).and_then(Value::as_u64).map(|x| x as usize),
            r.get(1).and_then(Value::as_u64).map(|x| (x as usize).min(pool_len)),
        ) else {
            return None;
        };
        if a < b {
            out.push((a, b));
        }
    }
    Some(out)
}

/// A cheap upper-bound-ish size of a value, for the resolve budget.
fn approx_size(v: &Value) -> usize {
    let mut n = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        n += 16;
        match v {
            Value::String(s) => n += s.len(),
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(o) => {
                for (k, x) in o {
                    n += k.len();
                    stack.push(x);
                }
            }
            _ => {}
        }
    }
    n
}

/// A sample's fields, each left as raw text until it is needed.
type Fields<'a> = BTreeMap<String, &'a RawValue>;

fn value_of(fields: &Fields<'_>, k: &str) -> Option<Value> {
    let raw = fields.get(k)?;
    serde_json::from_str::<Value>(raw.get()).ok().filter(|v| !v.is_null())
}

/// The id of a sample: a string or an integer.
fn id_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Sum of a `model_usage` map (`{model: {input_tokens, output_tokens, total_tokens}}`).
fn usage_sum(mu: Option<&Value>) -> Option<Usage> {
    let m = mu?.as_object().filter(|m| !m.is_empty())?;
    let mut u = Usage::default();
    for x in m.values() {
        let add = |acc: &mut Option<u64>, v: Option<u64>| {
            if let Some(v) = v {
                *acc = Some(acc.unwrap_or(0).saturating_add(v));
            }
        };
        let x = model_usage(x);
        add(&mut u.input, x.input);
        add(&mut u.output, x.output);
        add(&mut u.total, x.total);
        add(&mut u.cache_read, x.cache_read);
        add(&mut u.cache_write, x.cache_write);
        add(&mut u.reasoning, x.reasoning);
        add(&mut u.cost, x.cost);
    }
    (!u.is_empty()).then_some(u)
}

/// One `ModelUsage`, normalized. Inspect passes each provider's counts through: OpenAI's
/// `input_tokens` include `input_tokens_cache_read` and `output_tokens` include
/// `reasoning_tokens`, while Anthropic's exclude the cache. The recorded `total_tokens` tells
/// which: a part it adds on top of input + output is apart, else it is inside (OpenAI's way,
/// also when no total is written). `total_cost` (dollars, newer versions) is the recorded cost.
fn model_usage(u: &Value) -> Usage {
    let n = |k: &str| lenient_u64(u.get(k));
    let (input, output, total) = (n("input_tokens"), n("output_tokens"), n("total_tokens"));
    let (cache_read, cache_write, reasoning) = (
        n("input_tokens_cache_read"),
        n("input_tokens_cache_write"),
        n("reasoning_tokens"),
    );
    let base = input.unwrap_or(0).saturating_add(output.unwrap_or(0));
    let cache = cache_read.unwrap_or(0).saturating_add(cache_write.unwrap_or(0));
    let think = reasoning.unwrap_or(0);
    let (cache_apart, reasoning_apart) = match total {
        Some(t) if cache + think > 0 && t == base.saturating_add(cache).saturating_add(think) => (true, true),
        Some(t) if cache > 0 && t == base.saturating_add(cache) => (true, false),
        Some(t) if think > 0 && t == base.saturating_add(think) => (false, true),
        _ => (false, false),
    };
    let mut out = Usage {
        input,
        output,
        total,
        cache_read,
        cache_write,
        reasoning,
        cost: u.get("total_cost").and_then(crate::model::micros::micros_of_json),
        ..Default::default()
    };
    if !cache_apart {
        out = super::usage_input_with_cache(out);
    }
    if !reasoning_apart {
        out = super::usage_output_with_reasoning(out);
    }
    out
}

/// Usage of one model call (`output.usage`).
fn call_usage(u: Option<&Value>) -> Option<Usage> {
    let usage = model_usage(u?);
    (!usage.is_empty()).then_some(usage)
}

/// Seconds (a float) as nanoseconds.
fn seconds(v: Option<&Value>) -> Option<i64> {
    let s = v?.as_f64()?;
    (0.0..1e10).contains(&s).then_some((s * 1e9) as i64)
}

fn ts(v: &Value, k: &str) -> Option<i64> {
    v.get(k).and_then(parse_timestamp)
}

/// The attachments and message pool of a sample, as its references resolve against them.
fn sample_context(fields: &Fields<'_>) -> (Map<String, Value>, Vec<Value>) {
    let attachments = match value_of(fields, "attachments") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    // Only the messages of `events_data`: its `calls` (raw provider requests) stay unread.
    let pool = match fields
        .get("events_data")
        .and_then(|d| serde_json::from_str::<Fields<'_>>(d.get()).ok())
        .and_then(|d| value_of(&d, "messages"))
        .or_else(|| value_of(fields, "message_pool"))
    {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    (attachments, pool)
}

/// The payload of a sample's run event.
fn root_payload(fields: &Fields<'_>, refs: &mut Refs) -> Payload {
    let mut input = value_of(fields, "input");
    if let Some(i) = &mut input {
        refs.attachments_in(i);
    }
    let mut extra = Vec::new();
    for (k, v) in [
        ("target", value_of(fields, "target")),
        ("scores", value_of(fields, "scores")),
        (
            "metadata",
            value_of(fields, "metadata").filter(|m| m.as_object().is_none_or(|o| !o.is_empty())),
        ),
        ("model_usage", value_of(fields, "model_usage")),
        ("limit", value_of(fields, "limit")),
    ] {
        if let Some(v) = v {
            extra.push((k.to_string(), v));
        }
    }
    Payload {
        input,
        output: value_of(fields, "output").map(|o| final_output(&o)),
        error: value_of(fields, "error").as_ref().and_then(eval_error),
        extra,
        context: Vec::new(),
    }
}

/// How a sample is read: `base` is its text's byte offset in the file (a `.json` log) or in
/// its archive member (a `.eval` log whose member is named after the sample), when events
/// can keep their byte range; `defer` leaves their payloads there to be decoded when shown
/// (false: held, as the tests' reference reading holds them).
#[derive(Clone, Copy)]
struct Place {
    base: Option<u64>,
    /// The text is a whole `.eval` member, named `what`.
    member: bool,
    defer: bool,
}

impl Place {
    /// A whole `.eval` member.
    fn member(defer: bool) -> Place {
        Place {
            base: Some(0),
            member: true,
            defer,
        }
    }
}

/// Build the trace of one sample from its JSON text.
fn sample_trace(
    path: &Path,
    log: &Log,
    text: &str,
    place: Place,
    what: &str,
    budget: &mut Resolve,
) -> Result<Trace, String> {
    let fields: Fields<'_> =
        serde_json::from_str(text).map_err(|e| format!("not a sample object: {}", json_error(&e)))?;
    let mut diags = Vec::new();
    let id = id_text(value_of(&fields, "id").as_ref()).or_else(|| sample_member(what).map(|(i, _)| i.to_string()));
    let epoch = value_of(&fields, "epoch")
        .and_then(|v| v.as_u64())
        .or_else(|| sample_member(what).map(|(_, e)| e));
    let id = id.unwrap_or_else(|| {
        diags.push(Diagnostic::warning(path, None, format!("{what}: no sample `id`")));
        what.to_string()
    });
    let epoch = epoch.unwrap_or(1);
    // The decoder finds a `.eval` member again by the trace's id, which names it as Inspect
    // does; a member named otherwise keeps no byte ranges (and its payloads are held).
    let base = match place.member {
        true => place
            .base
            // Without `id` the run event has no byte range to find the sample by.
            .filter(|_| fields.contains_key("id") && what == format!("samples/{id}_epoch_{epoch}.json")),
        false => place.base,
    };
    let error = value_of(&fields, "error").as_ref().and_then(eval_error);
    let limit = value_of(&fields, "limit");
    let model_usage = value_of(&fields, "model_usage");
    let started = value_of(&fields, "started_at").as_ref().and_then(parse_timestamp);
    let completed = value_of(&fields, "completed_at").as_ref().and_then(parse_timestamp);
    let total = seconds(value_of(&fields, "total_time").as_ref());
    let scores = value_of(&fields, "scores");

    let status = if error.is_some() {
        RunStatus::Error
    } else {
        RunStatus::Ok
    };
    let mut attributes = log.attributes.clone();
    attributes.push(("sample_id".into(), Value::String(id.clone())));
    attributes.push(("epoch".into(), Value::from(epoch)));
    for k in ["target", "total_time", "working_time", "uuid", "retries"] {
        if let Some(v) = value_of(&fields, k) {
            attributes.push((k.to_string(), v));
        }
    }
    if let Some(s) = &scores {
        attributes.push(("scores".into(), score_values(s)));
    }
    if let Some(l) = &limit {
        attributes.push(("limit".into(), l.clone()));
    }
    let name = format!("{} · sample {id} · epoch {epoch}", log.task);
    let mut t = Trace::new(RunMeta {
        id: format!("{id}_epoch_{epoch}"),
        name: Some(name.clone()),
        format: "inspect-ai",
        source: path.to_path_buf(),
        status,
        start: started,
        end: completed.or_else(|| Some(started?.saturating_add(total?))),
        model: log.model.clone(),
        attributes,
        shared: None,
    });
    let file = t.add_file(path);
    let origin_of = |raw: &str| match base {
        Some(b) => Origin {
            file,
            line: 0,
            offset: b + (raw.as_ptr() as usize - text.as_ptr() as usize) as u64,
            len: raw.len().min(u32::MAX as usize) as u32,
        },
        None => Origin {
            file,
            ..Default::default()
        },
    };

    let (attachments, pool) = sample_context(&fields);
    let mut refs = Refs {
        attachments: Arc::new(attachments),
        pool: Arc::new(pool),
        left: budget.left,
        seen: 0,
        exhausted: false,
    };
    // Payloads are left in the file when the decoder finds the sample again: through the run
    // event's byte range, which a sample without `id` does not get.
    let defer = place.defer && base.is_some() && fields.contains_key("id");
    // Resolving references with the load's budget gives what the decoder's unbounded
    // resolving gives only while the budget lasts: past it, payloads are held.
    let held = |p: Payload, refs: &Refs| {
        if defer && !refs.exhausted {
            PayloadRef::Deferred
        } else {
            PayloadRef::inline(p)
        }
    };

    let root_p = root_payload(&fields, &mut refs);
    let root = t.add(NewEvent {
        start: started,
        duration: total,
        status: if error.is_some() { Status::Error } else { Status::Ok },
        usage: usage_sum(model_usage.as_ref()),
        model: log.model.as_deref(),
        origin: fields.get("id").map(|_| origin_of(text)).unwrap_or_default(),
        payload: held(root_p, &refs),
        ..NewEvent::new(EventKind::Run, &name)
    });

    // The timeline.
    let mut has_events = false;
    if let Some(raw) = fields.get("events") {
        match serde_json::from_str::<Vec<&RawValue>>(raw.get()) {
            Ok(events) => {
                let mut b = Builder {
                    path,
                    what,
                    root,
                    spans: HashMap::new(),
                    steps: Vec::new(),
                    last_tool: None,
                    pending: None,
                    defer,
                    diags: &mut diags,
                    known: 0,
                };
                b.events(&mut t, &events, root, 0, &origin_of, &mut refs);
                b.settle_pending(&mut t);
                // Events of no type Inspect writes (drift only) are no timeline either.
                has_events = b.known > 0;
            }
            Err(e) => diags.push(Diagnostic::error(
                path,
                None,
                format!("{what}: `events` is not a list: {}", json_error(&e)),
            )),
        }
    }
    // The conversation as it ended (after the timeline: the same turns, as the model saw them).
    if let Some(raw) = fields.get("messages") {
        match serde_json::from_str::<Vec<&RawValue>>(raw.get()) {
            Ok(msgs) if !msgs.is_empty() => {
                let group = t.add(NewEvent {
                    parent: Parent::Index(root),
                    origin: origin_of(raw.get()),
                    status: Status::Ok,
                    ..NewEvent::new(EventKind::Step, "messages")
                });
                if has_events {
                    for m in msgs {
                        add_message(&mut t, group, m, &origin_of, &mut refs, false, defer);
                    }
                } else {
                    let model = value_of(&fields, "output")
                        .as_ref()
                        .and_then(|o| str_of(o, "model").map(str::to_string))
                        .or_else(|| log.model.clone());
                    let mut conv = Conversation {
                        group,
                        model: model.as_deref(),
                        origin_of: &origin_of,
                        defer,
                        waiting: Default::default(),
                        by_id: HashMap::new(),
                        taken: Default::default(),
                    };
                    conv.messages(&mut t, &msgs, &mut refs, &mut diags, path, what);
                }
            }
            Ok(_) => {}
            Err(e) => diags.push(Diagnostic::error(
                path,
                None,
                format!("{what}: `messages` is not a list: {}", json_error(&e)),
            )),
        }
    }

    budget.left = refs.left;
    budget.ran_out = refs.exhausted;
    if refs.exhausted {
        diags.push(Diagnostic::warning(
            path,
            None,
            format!(
                "{what}: this log's referenced messages and attachments are over {} MiB; the rest are shown as references",
                RESOLVE_BUDGET >> 20
            ),
        ));
    }
    t.diagnostics.extend(diags);
    Ok(t)
}

/// `{scorer: {value, answer, explanation, ...}}` → `{scorer: value}` for the run attributes.
fn score_values(s: &Value) -> Value {
    match s.as_object() {
        Some(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), v.get("value").cloned().unwrap_or_else(|| v.clone())))
                .collect(),
        ),
        None => s.clone(),
    }
}

/// A model output shown as its first choice's message when there is one.
fn final_output(o: &Value) -> Value {
    match o.get("choices").and_then(|c| c.get(0)).and_then(|c| c.get("message")) {
        Some(m) => m.clone(),
        None => o.clone(),
    }
}

/// `errors_count`: a tool message's error is also its tool event's; it counts as an error
/// only when the sample has no events to count it.
fn add_message(
    t: &mut Trace,
    parent: u32,
    raw: &RawValue,
    origin_of: &dyn Fn(&str) -> Origin,
    refs: &mut Refs,
    errors_count: bool,
    defer: bool,
) {
    let (role, payload) = message_parts(raw.get(), refs);
    t.add(NewEvent {
        parent: Parent::Index(parent),
        status: if payload.error.is_some() && errors_count {
            Status::Error
        } else {
            Status::Ok
        },
        origin: origin_of(raw.get()),
        payload: if defer && !refs.exhausted {
            PayloadRef::Deferred
        } else {
            PayloadRef::inline(payload)
        },
        ..NewEvent::new(EventKind::Message(Role::parse(&role)), &role)
    });
}

/// A sample's messages as its timeline, for a sample without events (older logs, or events
/// not logged): each assistant message is one LLM call, named by its `model` (else the
/// sample's output's, else the log's); its `tool_calls` are tool calls, each joined to the
/// `tool` message whose `tool_call_id` names it (one that names none takes the oldest call
/// still waiting), which becomes its result rather than an event of its own. A call no
/// message answers is settled as unknown (the sample is over). No LLM call gets tokens:
/// Inspect records them per model call in `model` events (absent here) and per sample in
/// `model_usage` (the run's tokens, on the run event); splitting those over the calls would
/// invent numbers.
struct Conversation<'m, 'o> {
    group: u32,
    model: Option<&'o str>,
    origin_of: &'o dyn Fn(&str) -> Origin,
    defer: bool,
    /// Calls not answered yet, oldest first: (event, its id, the call's JSON text).
    waiting: std::collections::VecDeque<(u32, Option<String>, &'m str)>,
    /// The waiting calls by id (a call answered by id stays in `waiting`, marked `taken`):
    /// each join is constant time, however many calls wait.
    by_id: HashMap<String, (u32, &'m str)>,
    taken: std::collections::HashSet<u32>,
}

impl<'m> Conversation<'m, '_> {
    fn messages(
        &mut self,
        t: &mut Trace,
        msgs: &[&'m RawValue],
        refs: &mut Refs,
        diags: &mut Vec<Diagnostic>,
        path: &Path,
        what: &str,
    ) {
        for (i, raw) in msgs.iter().enumerate() {
            let fields: Fields<'m> = match serde_json::from_str(raw.get()) {
                Ok(f) => f,
                Err(_) => {
                    // Not an object: shown as the messages of a log with events are.
                    add_message(t, self.group, raw, self.origin_of, refs, true, self.defer);
                    continue;
                }
            };
            let role = value_of(&fields, "role");
            match role.as_ref().and_then(Value::as_str) {
                Some("assistant") => self.assistant(t, raw, &fields, refs),
                Some("tool") => {
                    let id = value_of(&fields, "tool_call_id").and_then(|v| v.as_str().map(str::to_string));
                    match self.take(id.as_deref()) {
                        Some((idx, call)) => {
                            let failed = ["error", "tool_error"].iter().any(|k| value_of(&fields, k).is_some());
                            let p = message_call_payload(call, Some(raw.get()), refs);
                            let e = t.event_mut(idx);
                            e.status = if failed { Status::Error } else { Status::Ok };
                            e.origin2 = Some(Box::new((self.origin_of)(raw.get())));
                            e.payload = self.held(p, refs);
                        }
                        None => {
                            let named = id.map(|id| format!(" {id:?}")).unwrap_or_default();
                            diags.push(Diagnostic::warning(
                                path,
                                None,
                                format!("{what}: messages[{i}] is the result of a tool call{named} that no assistant message made"),
                            ));
                            add_message(t, self.group, raw, self.origin_of, refs, true, self.defer);
                        }
                    }
                }
                _ => add_message(t, self.group, raw, self.origin_of, refs, true, self.defer),
            }
        }
        self.by_id.clear();
        let taken = std::mem::take(&mut self.taken);
        for (idx, _, call) in std::mem::take(&mut self.waiting) {
            if taken.contains(&idx) {
                continue;
            }
            let p = message_call_payload(call, None, refs);
            let e = t.event_mut(idx);
            e.status = Status::Unknown;
            e.payload = self.held(p, refs);
        }
    }

    /// The call a tool message answers: the waiting call with the id it names, else (no id)
    /// the oldest waiting call; an id no waiting call carries answers none.
    fn take(&mut self, id: Option<&str>) -> Option<(u32, &'m str)> {
        if let Some(id) = id {
            let (idx, call) = self.by_id.remove(id)?;
            self.taken.insert(idx);
            return Some((idx, call));
        }
        while let Some((idx, id, call)) = self.waiting.pop_front() {
            if self.taken.remove(&idx) {
                continue;
            }
            if let Some(id) = id
                && self.by_id.get(&id).is_some_and(|(i, _)| *i == idx)
            {
                self.by_id.remove(&id);
            }
            return Some((idx, call));
        }
        None
    }

    fn held(&self, p: Payload, refs: &Refs) -> PayloadRef {
        if self.defer && !refs.exhausted {
            PayloadRef::Deferred
        } else {
            PayloadRef::inline(p)
        }
    }

    fn assistant(&mut self, t: &mut Trace, raw: &'m RawValue, fields: &Fields<'m>, refs: &mut Refs) {
        let own = value_of(fields, "model").and_then(|m| m.as_str().map(str::to_string));
        let model = own.as_deref().or(self.model).unwrap_or("assistant").to_string();
        let p = message_llm_payload(raw.get(), refs);
        let llm = t.add(NewEvent {
            parent: Parent::Index(self.group),
            status: Status::Ok,
            model: Some(&model),
            origin: (self.origin_of)(raw.get()),
            payload: self.held(p, refs),
            ..NewEvent::new(EventKind::LlmCall, &model)
        });
        let calls = fields
            .get("tool_calls")
            .and_then(|c| serde_json::from_str::<Option<Vec<&'m RawValue>>>(c.get()).ok())
            .flatten()
            .unwrap_or_default();
        for call in calls {
            let v: Value = serde_json::from_str(call.get()).unwrap_or(Value::Null);
            let id = str_of(&v, "id").filter(|s| !s.is_empty()).map(str::to_string);
            let function = str_of(&v, "function").unwrap_or("tool").to_string();
            let idx = t.add(NewEvent {
                parent: Parent::Index(llm),
                id: id.as_deref(),
                status: Status::Pending,
                origin: (self.origin_of)(call.get()),
                ..NewEvent::new(EventKind::ToolCall, &function)
            });
            if let Some(id) = &id {
                self.by_id.entry(id.clone()).or_insert((idx, call.get()));
            }
            self.waiting.push_back((idx, id, call.get()));
        }
    }
}

/// The payload of an LLM call made of an assistant message: the message, as a `model`
/// event's output shows its reply.
fn message_llm_payload(raw: &str, refs: &mut Refs) -> Payload {
    let mut m: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
    refs.attachments_in(&mut m);
    Payload {
        output: Some(m),
        ..Default::default()
    }
}

/// The payload of a tool call made of an assistant message's `tool_calls[]` entry and the
/// `tool` message answering it, if any.
fn message_call_payload(call: &str, result: Option<&str>, refs: &mut Refs) -> Payload {
    let mut c: Value = serde_json::from_str(call).unwrap_or(Value::Null);
    refs.attachments_in(&mut c);
    let mut out = Payload::default();
    if let Value::Object(o) = &mut c {
        out.input = o.remove("arguments");
        for k in ["id", "type", "parse_error", "view", "internal"] {
            if let Some(x) = o.remove(k).filter(|x| !x.is_null()) {
                out.extra.push((k.to_string(), x));
            }
        }
    }
    if let Some(r) = result {
        let mut m: Value = serde_json::from_str(r).unwrap_or(Value::Null);
        refs.attachments_in(&mut m);
        if let Value::Object(o) = &mut m {
            out.output = o.remove("content");
            // `tool_error` (a string) is how older logs said it.
            out.error = ["error", "tool_error"]
                .iter()
                .find_map(|k| o.remove(*k).as_ref().and_then(ErrorInfo::from_value));
        }
    }
    out
}

/// A message's role and payload.
fn message_parts(raw: &str, refs: &mut Refs) -> (String, Payload) {
    let mut m: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
    refs.attachments_in(&mut m);
    let role = str_of(&m, "role").unwrap_or("other").to_string();
    let mut extra = Vec::new();
    let mut content = None;
    let mut error = None;
    if let Value::Object(o) = &mut m {
        content = o.remove("content");
        error = o.remove("error").as_ref().and_then(ErrorInfo::from_value);
        for (k, v) in std::mem::take(o) {
            if k != "role" && !v.is_null() {
                extra.push((k, v));
            }
        }
    }
    let p = Payload {
        input: content,
        error,
        extra,
        ..Default::default()
    };
    (role, p)
}

/// A `span_begin` not yet added.
struct Span {
    id: String,
    name: String,
    ty: Option<String>,
    parent_id: Option<String>,
    /// The parent when `parent_id` names no known span.
    fallback: u32,
    start: Option<i64>,
    origin: Origin,
    /// Its payload is left in the file (a span of the sample's own `events[]`).
    defer: bool,
}

/// Turns a sample's `events[]` into the event tree.
struct Builder<'p, 'd> {
    path: &'p Path,
    what: &'p str,
    root: u32,
    /// Span id → its event (a `tool` span maps to the tool event it belongs to).
    spans: HashMap<String, u32>,
    /// Open `step` events of older logs: (name, event).
    steps: Vec<(String, u32)>,
    /// The last tool event (function, event), for the `tool` span that follows it.
    last_tool: Option<(String, u32)>,
    /// A `tool` span that began before its tool event.
    pending: Option<Span>,
    /// Payloads of the sample's own events are left in the file (nested events of older
    /// logs have no byte range of their own and are always held).
    defer: bool,
    diags: &'d mut Vec<Diagnostic>,
    /// Events of the types Inspect writes (drift aside) seen so far.
    known: usize,
}

impl Builder<'_, '_> {
    /// The payload as the event keeps it: left in the file where it can be (see `defer`).
    fn held(&self, p: Payload, refs: &Refs, depth: usize) -> PayloadRef {
        if self.defer && depth == 0 && !refs.exhausted {
            PayloadRef::Deferred
        } else {
            PayloadRef::inline(p)
        }
    }

    fn events(
        &mut self,
        t: &mut Trace,
        events: &[&RawValue],
        parent: u32,
        depth: usize,
        origin_of: &dyn Fn(&str) -> Origin,
        refs: &mut Refs,
    ) {
        for (i, raw) in events.iter().enumerate() {
            let v: Value = match serde_json::from_str(raw.get()) {
                Ok(v @ Value::Object(_)) => v,
                Ok(_) => {
                    self.diags.push(Diagnostic::error(
                        self.path,
                        None,
                        format!("{}: events[{i}] is not an object; skipped", self.what),
                    ));
                    continue;
                }
                Err(e) => {
                    self.diags.push(Diagnostic::error(
                        self.path,
                        None,
                        format!("{}: events[{i}]: {}; skipped", self.what, json_error(&e)),
                    ));
                    continue;
                }
            };
            self.event(t, v, raw, parent, depth, origin_of, refs);
        }
    }

    /// The parent of an event: its span, else the innermost open step, else `parent`.
    fn parent_of(&self, v: &Value, parent: u32) -> u32 {
        if let Some(p) = str_of(v, "span_id").and_then(|s| self.spans.get(s)) {
            return *p;
        }
        match self.steps.last() {
            Some(&(_, s)) if parent == self.root => s,
            _ => parent,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn event(
        &mut self,
        t: &mut Trace,
        mut v: Value,
        raw: &RawValue,
        parent: u32,
        depth: usize,
        origin_of: &dyn Fn(&str) -> Origin,
        refs: &mut Refs,
    ) {
        let kind = str_of(&v, "event").unwrap_or("").to_string();
        let start = ts(&v, "timestamp");
        let origin = origin_of(raw.get());
        let end = ts(&v, "completed");
        let duration = match (start, end) {
            (Some(s), Some(e)) if e >= s => Some(e - s),
            _ => None,
        };
        if !kind.is_empty() && !is_known_event(&kind) {
            // A type Inspect did not write before: drift (formats/mod.rs). It leaves the
            // builder's state (the tool a span waits for) as it was.
            t.skipped.add(&kind);
            if super::drift_text(&v).is_some() {
                let p = self.parent_of(&v, parent);
                let payload = self.held(super::drift_payload(&v, &EVENT_ENVELOPE), refs, depth);
                t.add(NewEvent {
                    parent: Parent::Index(p),
                    start,
                    duration,
                    status: Status::Ok,
                    origin,
                    payload,
                    ..NewEvent::new(EventKind::Other, &kind)
                });
            }
            return;
        }
        if !kind.is_empty() {
            self.known += 1;
        }
        let pending = v.get("pending").and_then(Value::as_bool) == Some(true);
        let prev_tool = self.last_tool.take();
        // A tool span waiting for its tool event becomes a step of its own once something
        // else refers to it first.
        if let Some(p) = &self.pending {
            let its_tool = kind == "tool" && str_of(&v, "function") == Some(p.name.as_str());
            let refers =
                [str_of(&v, "span_id"), str_of(&v, "parent_id"), str_of(&v, "id")].contains(&Some(p.id.as_str()));
            if !its_tool && refers {
                self.settle_pending(t);
            }
        }
        match kind.as_str() {
            "span_begin" => {
                let id = str_of(&v, "id").unwrap_or("").to_string();
                let name = str_of(&v, "name").unwrap_or("span").to_string();
                let span = Span {
                    ty: str_of(&v, "type").map(str::to_string),
                    parent_id: str_of(&v, "parent_id").map(str::to_string),
                    fallback: self.parent_of(&v, parent),
                    id,
                    name,
                    start,
                    origin,
                    defer: self.defer && depth == 0,
                };
                // A tool's own span (holding its sandbox calls) belongs to the tool event,
                // which is written just before or, usually, just after the span begins.
                if span.ty.as_deref() == Some("tool") {
                    if let Some((f, idx)) = prev_tool
                        && f == span.name
                    {
                        self.spans.insert(span.id, idx);
                        return;
                    }
                    self.settle_pending(t);
                    self.pending = Some(span);
                    return;
                }
                self.add_span(t, span);
            }
            "span_end" => {
                if let Some(&idx) = str_of(&v, "id").and_then(|s| self.spans.get(s))
                    && t.event(idx).kind == EventKind::Step
                    && let (Some(s), Some(e)) = (t.event(idx).start.get(), start)
                    && e >= s
                {
                    t.event_mut(idx).duration = Some(e - s).into();
                }
            }
            "step" => {
                let name = str_of(&v, "name").unwrap_or("step").to_string();
                if str_of(&v, "action") == Some("end") {
                    if let Some(pos) = self.steps.iter().rposition(|(n, _)| *n == name) {
                        let (_, idx) = self.steps.remove(pos);
                        self.steps.truncate(pos);
                        if let (Some(s), Some(e)) = (t.event(idx).start.get(), start)
                            && e >= s
                        {
                            t.event_mut(idx).duration = Some(e - s).into();
                        }
                    }
                    return;
                }
                let p = self.parent_of(&v, parent);
                let payload = self.held(type_payload(&v), refs, depth);
                let idx = t.add(NewEvent {
                    parent: Parent::Index(p),
                    start,
                    origin,
                    status: Status::Ok,
                    payload,
                    ..NewEvent::new(EventKind::Step, &name)
                });
                if parent == self.root {
                    self.steps.push((name, idx));
                }
            }
            "model" => {
                let p = self.parent_of(&v, parent);
                let model = str_of(&v, "model").unwrap_or("model").to_string();
                let usage = call_usage(v.get("output").and_then(|o| o.get("usage")));
                let payload = model_payload(v, refs);
                let status = call_status(&payload, pending);
                let payload = self.held(payload, refs, depth);
                t.add(NewEvent {
                    parent: Parent::Index(p),
                    start,
                    duration,
                    status,
                    usage,
                    model: Some(&model),
                    origin,
                    payload,
                    ..NewEvent::new(EventKind::LlmCall, &model)
                });
            }
            "tool" => {
                let p = self.parent_of(&v, parent);
                let function = str_of(&v, "function").unwrap_or("tool").to_string();
                let call_id = str_of(&v, "id").map(str::to_string);
                let nested = v.as_object_mut().and_then(|o| o.remove("events"));
                let payload = tool_payload(v, refs);
                let status = call_status(&payload, pending);
                let payload = self.held(payload, refs, depth);
                let idx = t.add(NewEvent {
                    parent: Parent::Index(p),
                    id: call_id.as_deref(),
                    start,
                    duration,
                    status,
                    origin,
                    payload,
                    ..NewEvent::new(EventKind::ToolCall, &function)
                });
                match self.pending.take() {
                    Some(p) if p.name == function => {
                        self.spans.insert(p.id, idx);
                    }
                    other => {
                        self.pending = other;
                        self.last_tool = Some((function, idx));
                    }
                }
                self.nested(t, nested, idx, depth, refs);
            }
            "subtask" => {
                let p = self.parent_of(&v, parent);
                let name = str_of(&v, "name").unwrap_or("subtask").to_string();
                let nested = v.as_object_mut().and_then(|o| o.remove("events"));
                let payload = self.held(subtask_payload(v), refs, depth);
                let idx = t.add(NewEvent {
                    parent: Parent::Index(p),
                    start,
                    duration,
                    status: Status::Ok,
                    origin,
                    payload,
                    ..NewEvent::new(EventKind::Step, &name)
                });
                self.nested(t, nested, idx, depth, refs);
            }
            _ => self.other(t, &kind, v, start, duration, parent, origin, depth, refs),
        }
    }

    fn add_span(&mut self, t: &mut Trace, span: Span) {
        let p = span
            .parent_id
            .as_deref()
            .and_then(|s| self.spans.get(s))
            .copied()
            .unwrap_or(span.fallback);
        let payload = if span.defer {
            PayloadRef::Deferred
        } else {
            PayloadRef::inline(type_payload_of(span.ty))
        };
        let idx = t.add(NewEvent {
            parent: Parent::Index(p),
            start: span.start,
            origin: span.origin,
            status: Status::Ok,
            payload,
            ..NewEvent::new(EventKind::Step, &span.name)
        });
        self.spans.insert(span.id, idx);
    }

    /// A tool span whose tool event did not come: a step of its own.
    fn settle_pending(&mut self, t: &mut Trace) {
        if let Some(p) = self.pending.take() {
            self.add_span(t, p);
        }
    }

    /// `events[]` recorded inside a tool or subtask event (older logs).
    fn nested(&mut self, t: &mut Trace, nested: Option<Value>, parent: u32, depth: usize, refs: &mut Refs) {
        let Some(Value::Array(list)) = nested else {
            return;
        };
        if list.is_empty() {
            return;
        }
        if depth + 1 >= MAX_NESTING {
            self.diags.push(Diagnostic::warning(
                self.path,
                None,
                format!("{}: events nested deeper than {MAX_NESTING}; not shown", self.what),
            ));
            return;
        }
        for x in list {
            if !x.is_object() {
                continue;
            }
            // Nested events have no byte range of their own here: they point at the outer one.
            let text = x.to_string();
            let Ok(raw) = RawValue::from_string(text) else {
                continue;
            };
            let outer = t.event(parent).origin;
            self.event(t, x, &raw, parent, depth + 1, &|_| outer, refs);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn other(
        &mut self,
        t: &mut Trace,
        kind: &str,
        v: Value,
        start: Option<i64>,
        duration: Option<i64>,
        parent: u32,
        origin: Origin,
        depth: usize,
        refs: &mut Refs,
    ) {
        let p = self.parent_of(&v, parent);
        if kind.is_empty() {
            self.diags.push(Diagnostic::warning(
                self.path,
                None,
                format!("{}: an event without `event` type", self.what),
            ));
        }
        let (ek, name, status, payload) = other_parts(kind, v, refs);
        let payload = self.held(payload, refs, depth);
        t.add(NewEvent {
            parent: Parent::Index(p),
            start,
            duration,
            status,
            origin,
            payload,
            ..NewEvent::new(ek, &name)
        });
    }
}

/// The payload of a `model` event.
fn model_payload(mut v: Value, refs: &mut Refs) -> Payload {
    let Some(o) = v.as_object_mut() else {
        return Payload::default();
    };
    let output = o.remove("output").unwrap_or(Value::Null);
    let error = o
        .remove("error")
        .as_ref()
        .and_then(ErrorInfo::from_value)
        .or_else(|| output.get("error").and_then(ErrorInfo::from_value));
    let mut input = o.remove("input").filter(|i| i.as_array().is_none_or(|a| !a.is_empty()));
    let mut earlier = 0;
    if input.is_none()
        && let Some(r) = o.get("input_refs")
        && let Some((new, seen)) = refs.new_messages(r)
    {
        input = Some(new);
        earlier = seen;
    }
    if let Some(i) = &mut input {
        refs.attachments_in(i);
    }
    let mut out = if output.is_null() {
        None
    } else {
        Some(final_output(&output))
    };
    if let Some(x) = &mut out {
        refs.attachments_in(x);
    }
    let mut extra = Vec::new();
    if let Some(Value::Object(m)) = output.get("choices").and_then(|c| c.get(0))
        && let Some(r) = m.get("stop_reason")
    {
        extra.push(("stop_reason".to_string(), r.clone()));
    }
    if let Some(u) = output.get("usage") {
        extra.push(("usage".to_string(), u.clone()));
    }
    for k in ["role", "config", "tool_choice", "cache", "retries", "working_time"] {
        if let Some(x) = o.remove(k).filter(|x| !x.is_null()) {
            extra.push((k.to_string(), x));
        }
    }
    if let Some(r) = o.remove("input_refs") {
        extra.push(("input_refs".to_string(), r));
    }
    if earlier > 0 {
        extra.push((
            "input_shown".to_string(),
            Value::String(format!(
                "the messages added since the previous model call; the {earlier} before them are in earlier calls' inputs"
            )),
        ));
    }
    Payload {
        input,
        output: out,
        error,
        extra,
        context: Vec::new(),
    }
}

/// The payload of a `tool` event (its nested `events` taken out before).
fn tool_payload(mut v: Value, refs: &mut Refs) -> Payload {
    let Some(o) = v.as_object_mut() else {
        return Payload::default();
    };
    let error = o.remove("error").as_ref().and_then(ErrorInfo::from_value);
    let mut output = o.remove("result");
    if let Some(x) = &mut output {
        refs.attachments_in(x);
    }
    let mut input = o.remove("arguments");
    if let Some(x) = &mut input {
        refs.attachments_in(x);
    }
    let mut extra = Vec::new();
    for k in [
        "type",
        "truncated",
        "agent",
        "failed",
        "message_id",
        "working_time",
        "internal",
    ] {
        if let Some(x) = o.remove(k).filter(|x| !x.is_null()) {
            extra.push((k.to_string(), x));
        }
    }
    Payload {
        input,
        output,
        error,
        extra,
        context: Vec::new(),
    }
}

/// The payload of a `subtask` event (its nested `events` taken out before).
fn subtask_payload(mut v: Value) -> Payload {
    let Some(o) = v.as_object_mut() else {
        return Payload::default();
    };
    Payload {
        input: o.remove("input"),
        output: o.remove("result"),
        ..Default::default()
    }
}

/// The payload of a span or step: its `type`.
fn type_payload(v: &Value) -> Payload {
    type_payload_of(str_of(v, "type").map(str::to_string))
}

fn type_payload_of(ty: Option<String>) -> Payload {
    Payload {
        extra: ty
            .map(|ty| vec![("type".to_string(), Value::String(ty))])
            .unwrap_or_default(),
        ..Default::default()
    }
}

/// The payload of one of a sample's `events[]`, as the load built it (the decoder's way in;
/// `refs.seen` set to where it stood before this event).
fn event_payload(mut v: Value, refs: &mut Refs) -> Payload {
    if !v.is_object() {
        return whole::unreadable();
    }
    let kind = str_of(&v, "event").unwrap_or("").to_string();
    match kind.as_str() {
        "span_begin" | "step" => type_payload(&v),
        "model" => model_payload(v, refs),
        "tool" => {
            if let Some(o) = v.as_object_mut() {
                o.remove("events");
            }
            tool_payload(v, refs)
        }
        "subtask" => subtask_payload(v),
        k if !k.is_empty() && !is_known_event(k) => super::drift_payload(&v, &EVENT_ENVELOPE),
        _ => other_parts(&kind, v, refs).3,
    }
}

/// The event types Inspect writes (`inspect_ai/event/_event.py`'s `Event` union, and the
/// older `step`); any other is drift.
fn is_known_event(kind: &str) -> bool {
    matches!(
        kind,
        "sample_init"
            | "sample_limit"
            | "sandbox"
            | "state"
            | "store"
            | "model"
            | "tool"
            | "anchor"
            | "approval"
            | "branch"
            | "checkpoint"
            | "compaction"
            | "input"
            | "interrupt"
            | "score"
            | "score_edit"
            | "error"
            | "logger"
            | "info"
            | "span_begin"
            | "span_end"
            | "step"
            | "subtask"
    )
}

/// Fields every event repeats, left out of a drift event's record.
const EVENT_ENVELOPE: [&str; 4] = ["uuid", "span_id", "timestamp", "working_start"];

/// The kind, name, status and payload of an event of the kinds not built on their own.
fn other_parts(kind: &str, mut v: Value, refs: &mut Refs) -> (EventKind, String, Status, Payload) {
    let o = v.as_object_mut().expect("checked to be an object");
    for k in [
        "event",
        "uuid",
        "span_id",
        "timestamp",
        "working_start",
        "completed",
        "pending",
        "metadata",
    ] {
        o.remove(k);
    }
    match kind {
        "error" => {
            let e = o.remove("error").as_ref().and_then(eval_error).unwrap_or(ErrorInfo {
                message: "error".into(),
                ..Default::default()
            });
            (
                EventKind::Error,
                "error".into(),
                Status::Error,
                Payload {
                    error: Some(e),
                    ..Default::default()
                },
            )
        }
        "score" => {
            let score = o.remove("score");
            let name = match score.as_ref().and_then(|s| s.get("value")) {
                Some(Value::String(s)) => format!("score {s}"),
                Some(x @ (Value::Number(_) | Value::Bool(_))) => format!("score {x}"),
                _ => "score".into(),
            };
            (
                EventKind::Other,
                name,
                Status::Ok,
                Payload {
                    output: score,
                    extra: take_rest(o),
                    ..Default::default()
                },
            )
        }
        "state" | "store" => (
            EventKind::State,
            kind.into(),
            Status::Ok,
            Payload {
                input: o.remove("changes"),
                ..Default::default()
            },
        ),
        "sample_init" => {
            let mut sample = o.remove("sample");
            if let Some(s) = &mut sample {
                refs.attachments_in(s);
            }
            (
                EventKind::Other,
                "sample_init".into(),
                Status::Ok,
                Payload {
                    input: sample,
                    extra: take_rest(o),
                    ..Default::default()
                },
            )
        }
        "sample_limit" => {
            let ty = str_of(&v, "type").unwrap_or("limit").to_string();
            let o = v.as_object_mut().expect("checked to be an object");
            (
                EventKind::LoopWarning,
                format!("{ty} limit"),
                Status::Unknown,
                Payload {
                    input: o.remove("message"),
                    extra: take_rest(o),
                    ..Default::default()
                },
            )
        }
        "sandbox" => {
            let action = str_of(&v, "action").unwrap_or("sandbox").to_string();
            let o = v.as_object_mut().expect("checked to be an object");
            let input = o.remove("cmd").or_else(|| o.remove("file"));
            let output = o.remove("output");
            (
                EventKind::Other,
                format!("sandbox {action}"),
                Status::Ok,
                Payload {
                    input,
                    output,
                    extra: take_rest(o),
                    ..Default::default()
                },
            )
        }
        "logger" => {
            let level = v
                .get("message")
                .and_then(|m| str_of(m, "level"))
                .unwrap_or("log")
                .to_string();
            let o = v.as_object_mut().expect("checked to be an object");
            let msg = o.remove("message");
            let status = if matches!(level.as_str(), "error" | "critical") {
                Status::Error
            } else {
                Status::Ok
            };
            (
                EventKind::Other,
                format!("log {level}"),
                status,
                Payload {
                    input: msg,
                    ..Default::default()
                },
            )
        }
        "" => (
            EventKind::Other,
            "event".into(),
            Status::Unknown,
            Payload {
                extra: take_rest(o),
                ..Default::default()
            },
        ),
        // info, input, approval, compaction, ...: shown as recorded.
        other => (
            EventKind::Other,
            other.to_string(),
            Status::Ok,
            Payload {
                extra: take_rest(o),
                ..Default::default()
            },
        ),
    }
}

fn take_rest(o: &mut Map<String, Value>) -> Vec<(String, Value)> {
    std::mem::take(o).into_iter().filter(|(_, v)| !v.is_null()).collect()
}

// ---------------------------------------------------------------------------------------
// Cheap summaries for `ls`

/// A row of `summaries.json` (Inspect's `EvalSampleSummary`); whatever else it holds is skipped.
#[derive(Deserialize)]
struct SampleHead {
    id: Option<Value>,
    epoch: Option<u64>,
    model_usage: Option<Value>,
    total_time: Option<Value>,
    error: Option<Value>,
    started_at: Option<Value>,
}

fn summary_of(path: &Path, log: &Log, h: &SampleHead) -> Summary {
    let id = id_text(h.id.as_ref()).unwrap_or_else(|| "?".into());
    let epoch = h.epoch.unwrap_or(1);
    let error = h.error.as_ref().filter(|e| !e.is_null() && e.as_str() != Some(""));
    Summary {
        id: format!("{id}_epoch_{epoch}"),
        name: Some(format!("{} · sample {id} · epoch {epoch}", log.task)),
        format: "inspect-ai",
        path: path.to_path_buf(),
        status: if error.is_some() {
            RunStatus::Error
        } else {
            RunStatus::Ok
        },
        start: h.started_at.as_ref().and_then(parse_timestamp),
        duration: seconds(h.total_time.as_ref()),
        events: None,
        tool_calls: None,
        llm_calls: None,
        errors: None,
        tokens: usage_sum(h.model_usage.as_ref()).and_then(|u| u.sum()),
        problems: None,
        badges: Vec::new(),
        cost: None,
        resume: None,
    }
}

/// From `header.json` and `summaries.json` (or the journal's summaries), never a sample.
/// None when the archive has no summaries to read.
fn summarize_eval(path: &Path) -> Result<Option<Vec<Summary>>, LoadError> {
    let mut zip = open_archive(path)?;
    let names = member_names(&zip);
    let mut budget = Budget { left: MAX_TOTAL_BYTES };
    let mut diags = Vec::new();
    let header = eval_header(path, &mut zip, &names, &mut budget, &mut diags);
    let Some(header) = header else {
        return Ok(None);
    };
    let log = Log::from_header(&header, &stem_eval(path));
    let mut members: Vec<String> = Vec::new();
    if names.iter().any(|(_, n)| n == "summaries.json") {
        members.push("summaries.json".into());
    } else {
        let mut journal: Vec<(u64, String)> = names
            .iter()
            .filter_map(|(_, n)| {
                let k = n.strip_prefix("_journal/summaries/")?.strip_suffix(".json")?;
                Some((k.parse().ok()?, n.clone()))
            })
            .collect();
        journal.sort();
        members.extend(journal.into_iter().map(|(_, n)| n));
    }
    if members.is_empty() {
        return Ok(None);
    }
    let mut rows = Vec::new();
    for m in members {
        let Some(&(i, _)) = names.iter().find(|(_, n)| *n == m) else {
            continue;
        };
        let Ok(bytes) = read_member(&mut zip, i, &m, &mut budget) else {
            return Ok(None);
        };
        let Ok(heads) = serde_json::from_slice::<Vec<SampleHead>>(&bytes) else {
            return Ok(None);
        };
        rows.extend(heads.iter().map(|h| summary_of(path, &log, h)));
    }
    if rows.is_empty() {
        return Ok(None);
    }
    Ok(Some(rows))
}

/// A `.json` log's samples read for their heads only (events and messages are skipped
/// without being built).
fn summarize_json(path: &Path) -> Result<Option<Vec<Summary>>, LoadError> {
    #[derive(Deserialize)]
    struct Top<'a> {
        #[serde(borrow)]
        eval: Option<&'a RawValue>,
        status: Option<String>,
        version: Option<IgnoredAny>,
        samples: Option<Vec<SampleHead>>,
    }
    let text = read_json_text(path)?;
    let top: Top<'_> = serde_json::from_str(&text).map_err(|e| LoadError::invalid(path, json_error(&e)))?;
    let (Some(eval), Some(_)) = (top.eval, top.version) else {
        return Ok(None);
    };
    let header = serde_json::json!({
        "eval": serde_json::from_str::<Value>(eval.get()).unwrap_or(Value::Null),
        "status": top.status,
    });
    let log = Log::from_header(&header, &stem(path));
    match top.samples {
        Some(s) if !s.is_empty() => Ok(Some(s.iter().map(|h| summary_of(path, &log, h)).collect())),
        _ => Ok(None),
    }
}

/// A model or tool call's status: its error, else whether the log left it waiting.
fn call_status(payload: &Payload, pending: bool) -> Status {
    if payload.error.is_some() {
        Status::Error
    } else if pending {
        Status::Pending
    } else {
        Status::Ok
    }
}

/// A call's gist by Inspect AI's standard tools (`inspect_ai.tool`): the command (`bash`'s
/// `cmd`), the code (`python`), the file (`text_editor`), the URL or query; the rest by the
/// generic rule (the task's own tools).
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{generic, key_or_generic};
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "bash" | "bash_session" => by(&["cmd", "command", "input"]),
        "python" => by(&["code"]),
        "text_editor" => by(&["path"]),
        "web_search" => by(&["query"]),
        "web_browser_go" => by(&["url"]),
        "think" => by(&["thought"]),
        "submit" => by(&["answer"]),
        _ => generic(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_usage_is_normalized_by_what_the_total_adds_up_to() {
        // OpenAI through Inspect: 1,000 input of which 400 cached; 300 output of which 200
        // reasoning; total = input + output.
        let openai = json!({"input_tokens": 1000, "output_tokens": 300, "total_tokens": 1300,
            "input_tokens_cache_read": 400, "reasoning_tokens": 200, "total_cost": 0.00215});
        assert_eq!(
            model_usage(&openai),
            Usage {
                input: Some(600),
                cache_read: Some(400),
                output: Some(100),
                reasoning: Some(200),
                total: Some(1300),
                cost: Some(2_150),
                ..Default::default()
            }
        );
        // Anthropic through Inspect: the cache is apart (the total adds it on top).
        let anthropic = json!({"input_tokens": 10, "output_tokens": 50, "total_tokens": 1560,
            "input_tokens_cache_read": 1000, "input_tokens_cache_write": 500});
        let u = model_usage(&anthropic);
        assert_eq!(
            (u.input, u.cache_read, u.cache_write, u.output),
            (Some(10), Some(1000), Some(500), Some(50))
        );
        // No total: OpenAI's way (the cache is inside the input).
        let u = model_usage(&json!({"input_tokens": 100, "input_tokens_cache_read": 30}));
        assert_eq!((u.input, u.cache_read), (Some(70), Some(30)));
        // The run's totals over two models.
        let sum = usage_sum(Some(&json!({"a": openai, "b": anthropic}))).unwrap();
        assert_eq!(
            (sum.input, sum.cache_read, sum.total),
            (Some(610), Some(1400), Some(2860))
        );
    }
    use crate::formats::testing::outline;
    use serde_json::json;
    use std::io::Write;
    use zip::CompressionMethod;

    const T0: &str = "2026-01-02T03:04:05";

    fn at(ms: u32) -> String {
        format!("{T0}.{ms:03}000+00:00")
    }

    fn usage(i: u64, o: u64) -> Value {
        json!({"input_tokens": i, "output_tokens": o, "total_tokens": i + o})
    }

    fn model_event(span: &str, ms: u32, refs: Value, reply: &str, u: Value) -> Value {
        json!({"event": "model", "span_id": span, "timestamp": at(ms), "completed": at(ms + 5),
               "model": "mockllm/model", "input": [], "input_refs": refs, "config": {},
               "output": {"model": "mockllm/model", "usage": u,
                          "choices": [{"message": {"role": "assistant", "content": reply}, "stop_reason": "tool_calls"}]}})
    }

    /// A react() agent's sample as Inspect 0.3.2xx writes it: spans, deduplicated model
    /// inputs, an attachment, a tool span begun before its tool event, a failing tool and
    /// submit().
    fn sample(id: Value, epoch: u64) -> Value {
        let pool = json!([
            {"id": "m1", "role": "system", "content": "attachment://a1"},
            {"id": "m2", "role": "user", "content": "What is 40+2?", "source": "input"},
            {"id": "m3", "role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": "add", "arguments": {"x": 40, "y": 2}}]},
            {"id": "m4", "role": "tool", "content": "42", "tool_call_id": "c1", "function": "add"},
            {"id": "m5", "role": "assistant", "content": "", "tool_calls": [{"id": "c2", "function": "read_note", "arguments": {"name": "x"}}]},
            {"id": "m6", "role": "tool", "content": "", "tool_call_id": "c2", "function": "read_note",
             "error": {"type": "unknown", "message": "no note called 'x'"}},
            {"id": "m7", "role": "assistant", "content": "", "tool_calls": [{"id": "c3", "function": "submit", "arguments": {"answer": "42"}}]},
            {"id": "m8", "role": "tool", "content": "42", "tool_call_id": "c3", "function": "submit"}
        ]);
        let events = json!([
                {"event": "span_begin", "id": "s-init", "name": "init", "type": "init", "timestamp": at(0)},
                {"event": "sample_init", "span_id": "s-init", "timestamp": at(1), "sample": {"input": "attachment://a1"}, "state": {}},
                {"event": "span_end", "id": "s-init", "timestamp": at(2)},
                {"event": "span_begin", "id": "s-solv", "name": "solvers", "type": "solvers", "timestamp": at(10)},
                {"event": "span_begin", "id": "s-react", "parent_id": "s-solv", "name": "react", "type": "agent", "timestamp": at(11)},
                model_event("s-react", 20, json!([[0, 2]]), "", usage(10, 3)),
                {"event": "span_begin", "id": "s-t1", "parent_id": "s-react", "name": "add", "type": "tool", "timestamp": at(30)},
                {"event": "tool", "span_id": "s-react", "timestamp": at(29), "completed": at(60), "type": "function",
                 "id": "c1", "function": "add", "arguments": {"x": 40, "y": 2}, "result": "42", "events": []},
                {"event": "sandbox", "span_id": "s-t1", "timestamp": at(31), "completed": at(50), "action": "exec",
                 "cmd": "python3 add.py", "output": "42"},
                {"event": "span_end", "id": "s-t1", "timestamp": at(59)},
                model_event("s-react", 70, json!([[0, 4]]), "", usage(10, 3)),
                {"event": "tool", "span_id": "s-react", "timestamp": at(80), "completed": at(85), "type": "function",
                 "id": "c2", "function": "read_note", "arguments": {"name": "x"}, "result": "",
                 "error": {"type": "unknown", "message": "no note called 'x'"}, "events": []},
                model_event("s-react", 90, json!([[0, 6]]), "42", usage(10, 3)),
                {"event": "tool", "span_id": "s-react", "timestamp": at(100), "completed": at(101), "type": "function",
                 "id": "c3", "function": "submit", "arguments": {"answer": "42"}, "result": "42", "events": []},
                {"event": "span_end", "id": "s-react", "timestamp": at(102)},
                {"event": "span_end", "id": "s-solv", "timestamp": at(103)},
                {"event": "span_begin", "id": "s-score", "name": "scorers", "type": "scorers", "timestamp": at(110)},
                {"event": "score", "span_id": "s-score", "timestamp": at(111), "score": {"value": "C", "answer": "42"}, "target": "42"},
                {"event": "span_end", "id": "s-score", "timestamp": at(112)}
        ]);
        json!({
            "id": id, "epoch": epoch, "input": "What is 40+2?", "target": "42",
            "messages": pool,
            "output": {"model": "mockllm/model", "choices": [{"message": {"role": "assistant", "content": "42"}}]},
            "scores": {"includes": {"value": "C", "answer": "42"}},
            "metadata": {},
            "model_usage": {"mockllm/model": usage(30, 9)},
            "started_at": at(0), "completed_at": at(900), "total_time": 0.9, "working_time": 0.8,
            "uuid": "u1",
            "attachments": {"a1": "You are a careful assistant."},
            "events_data": {"messages": pool},
            "events": events
        })
    }

    fn header(status: &str) -> Value {
        json!({
            "version": 2, "status": status,
            "eval": {"task": "agentic", "model": "mockllm/model", "eval_id": "E1", "run_id": "R1",
                     "created": at(0), "packages": {"inspect_ai": "0.3.285"}},
            "plan": {"name": "plan", "steps": []},
            "results": {"total_samples": 1, "completed_samples": 1},
            "stats": {"started_at": at(0), "completed_at": at(900)}
        })
    }

    fn bytes(v: &Value) -> Vec<u8> {
        serde_json::to_vec_pretty(v).unwrap()
    }

    /// A zip as Inspect writes one, at a fixed time (so that the sample trace is reproducible).
    fn build_zip(members: &[(&str, Vec<u8>, CompressionMethod)]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, data, method) in members {
            let opts = zip::write::SimpleFileOptions::default()
                .compression_method(*method)
                .last_modified_time(zip::DateTime::default());
            w.start_file(*name, opts).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    fn write(dir: &tempfile::TempDir, name: &str, data: &[u8]) -> std::path::PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, data).unwrap();
        p
    }

    fn three_samples() -> Vec<u8> {
        build_zip(&[
            (
                "_journal/start.json",
                bytes(&header("started")),
                CompressionMethod::Deflated,
            ),
            (
                "samples/10_epoch_1.json",
                bytes(&sample(json!(10), 1)),
                CompressionMethod::Zstd,
            ),
            (
                "samples/2_epoch_1.json",
                bytes(&sample(json!(2), 1)),
                CompressionMethod::Deflated,
            ),
            (
                "samples/1_epoch_1.json",
                bytes(&sample(json!(1), 1)),
                CompressionMethod::Stored,
            ),
            ("header.json", bytes(&header("success")), CompressionMethod::Zstd),
        ])
    }

    fn tool(t: &Trace, id: &str) -> u32 {
        t.find(id).unwrap_or_else(|| panic!("no event {id}"))
    }

    /// Samples parsed a batch at a time in parallel, each with the resolve budget left when
    /// its batch began, are the samples parsed one after the other: budgets that run out in
    /// the first sample, in the first batch, in a later one, or never.
    #[test]
    fn samples_parsed_together_are_the_samples_parsed_in_turn() {
        use crate::formats::testing::decoded;
        let n = 150;
        let texts: Vec<(String, Vec<u8>)> = (0..n)
            .map(|i| (format!("samples/{i}_epoch_1.json"), bytes(&sample(json!(i), 1))))
            .collect();
        let members: Vec<(&str, Vec<u8>, CompressionMethod)> = texts
            .iter()
            .map(|(name, b)| (name.as_str(), b.clone(), CompressionMethod::Deflated))
            .collect();
        let d = tempfile::tempdir().unwrap();
        let path = write(&d, "many.eval", &build_zip(&members));
        let log = Log::from_header(&Value::Null, &stem_eval(&path));
        let in_turn = |budget: usize| -> Vec<Trace> {
            let mut left = Resolve::new(budget);
            texts
                .iter()
                .map(|(name, b)| {
                    let place = Place::member(true);
                    let text = std::str::from_utf8(b).unwrap();
                    let mut t = sample_trace(&path, &log, text, place, name, &mut left).unwrap();
                    t.finalize();
                    t
                })
                .collect()
        };
        let mut left = Resolve::new(usize::MAX);
        let text = std::str::from_utf8(&texts[0].1).unwrap();
        sample_trace(&path, &log, text, Place::member(true), &texts[0].0, &mut left).unwrap();
        let one = usize::MAX - left.left;
        assert!(one > 0, "a sample resolves references");
        for budget in [0, one / 2, 10 * one + one / 3, 100 * one + 7, n * one, usize::MAX / 2] {
            let got = load_eval_within(&path, true, budget).unwrap().traces;
            let want = in_turn(budget);
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(decoded(g), decoded(w), "budget {budget}, {}", w.meta.id);
                let said = |t: &Trace| t.diagnostics.iter().map(|d| d.message.clone()).collect::<Vec<_>>();
                assert_eq!(said(g), said(w), "budget {budget}, {}", w.meta.id);
            }
        }
    }

    #[test]
    fn one_sample_loads_alone_as_the_whole_load_has_it() {
        use crate::formats::testing::decoded;
        let d = tempfile::tempdir().unwrap();
        let path = write(&d, "three.eval", &three_samples());
        let whole = InspectAi.load(&path).unwrap().traces;
        assert_eq!(whole.len(), 3);
        for (i, t) in whole.iter().enumerate() {
            let one = InspectAi.load_run(&path, i, &t.meta.id).unwrap().unwrap().traces;
            assert_eq!(one.len(), 1);
            assert_eq!(decoded(&one[0]), decoded(t), "{}", t.meta.id);
            assert_eq!(one[0].meta.name, t.meta.name);
        }
        // Without an id: the first run, as the whole load orders them.
        let first = InspectAi.load_run(&path, 0, "").unwrap().unwrap().traces;
        assert_eq!(first[0].meta.id, "1_epoch_1");
        assert_eq!(decoded(&first[0]), decoded(&whole[0]));
        // Not there, or not by id: the caller loads the whole log.
        assert!(InspectAi.load_run(&path, 0, "3_epoch_1").is_none());
        assert!(InspectAi.load_run(&path, 1, "").is_none());
        assert!(InspectAi.load_run(&path, 0, "../header").is_none());
        // A member whose sample says another id is found by the whole load only.
        let renamed = build_zip(&[
            ("header.json", bytes(&header("success")), CompressionMethod::Deflated),
            (
                "samples/7_epoch_1.json",
                bytes(&sample(json!(8), 1)),
                CompressionMethod::Deflated,
            ),
        ]);
        let path = write(&d, "renamed.eval", &renamed);
        assert!(InspectAi.load_run(&path, 0, "7_epoch_1").is_none());
        assert!(InspectAi.load_run(&path, 0, "").is_none());
    }

    #[test]
    fn stored_deflated_and_zstd_members_load_one_trace_a_sample() {
        let d = tempfile::tempdir().unwrap();
        let p = write(&d, "log.eval", &three_samples());
        let l = InspectAi.load(&p).unwrap();
        let ids: Vec<&str> = l.traces.iter().map(|t| t.meta.id.as_str()).collect();
        assert_eq!(ids, ["1_epoch_1", "2_epoch_1", "10_epoch_1"]);
        for t in &l.traces {
            assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
            let c = t.counts();
            assert_eq!((c.tool_calls, c.llm_calls, c.tokens), (3, 3, 39));
            // The failed read_note is the one error: its tool message does not count twice.
            assert_eq!(c.errors, 1);
            assert_eq!(t.meta.status, RunStatus::Ok);
            assert_eq!(t.meta.model.as_deref(), Some("mockllm/model"));
            assert_eq!(
                t.meta.name.as_deref().unwrap(),
                format!("agentic · sample {} · epoch 1", &t.meta.id[..t.meta.id.len() - 8])
            );
            assert!(
                t.meta
                    .attributes
                    .iter()
                    .any(|(k, v)| k == "log_status" && v == "success")
            );
        }
    }

    #[test]
    fn spans_tools_and_their_sandbox_calls_nest() {
        let d = tempfile::tempdir().unwrap();
        let p = write(&d, "log.eval", &three_samples());
        let t = &InspectAi.load(&p).unwrap().traces[0];
        let o = outline(t);
        let expected = [
            "run agentic · sample 1 · epoch 1",
            "  step init",
            "    other sample_init",
            "  step solvers",
            "    step react",
            "      llm mockllm/model",
            "      tool add",
            "        other sandbox exec",
            "      llm mockllm/model",
            "      tool read_note",
            "      llm mockllm/model",
            "      tool submit",
            "  step scorers",
            "    other score C",
            "  step messages",
            "    message system",
            "    message user",
            "    message assistant",
            "    message tool",
            "    message assistant",
            "    message tool",
            "    message assistant",
            "    message tool",
        ];
        assert_eq!(o, expected);
        let add = t.event(tool(t, "c1"));
        assert_eq!((add.status, add.duration.get()), (Status::Ok, Some(31_000_000)));
        let p = crate::formats::payload(t, add);
        assert_eq!(p.input, Some(json!({"x": 40, "y": 2})));
        assert_eq!(p.output, Some(json!("42")));
        let note = t.event(tool(t, "c2"));
        assert_eq!(note.status, Status::Error);
        let e = crate::formats::payload(t, note).error.unwrap();
        assert_eq!(
            (e.kind.as_deref(), e.message.as_str()),
            (Some("unknown"), "no note called 'x'")
        );
        assert_eq!(
            crate::formats::payload(t, t.event(tool(t, "c3"))).input,
            Some(json!({"answer": "42"}))
        );
    }

    #[test]
    fn model_inputs_and_attachments_are_resolved() {
        let d = tempfile::tempdir().unwrap();
        let p = write(&d, "log.eval", &three_samples());
        let t = &InspectAi.load(&p).unwrap().traces[0];
        let llm: Vec<u32> = (0..t.len() as u32)
            .filter(|&i| t.event(i).kind == EventKind::LlmCall)
            .collect();
        let first = crate::formats::payload(t, t.event(llm[0]));
        let input = first.input.unwrap();
        assert_eq!(input.as_array().unwrap().len(), 2);
        assert_eq!(input[0]["content"], "You are a careful assistant.");
        assert_eq!(
            t.event(llm[0]).usage.get(),
            Some(Usage {
                input: Some(10),
                output: Some(3),
                total: Some(13),
                ..Default::default()
            })
        );
        // Later calls show what was added since the previous call (not the whole conversation
        // again: that is quadratic in its length).
        let third = crate::formats::payload(t, t.event(llm[2]));
        let third_input = third.input.clone().unwrap();
        assert_eq!(third_input.as_array().unwrap().len(), 2);
        assert_eq!(third_input[1]["tool_call_id"], "c2");
        assert!(
            third
                .extra
                .iter()
                .any(|(k, v)| k == "input_shown" && v.as_str().unwrap().contains("the 4 before"))
        );
        assert_eq!(
            crate::formats::payload(t, t.event(llm[2])).output.unwrap()["content"],
            "42"
        );
        // The run: sample input, final output, scores; its usage is model_usage.
        let root = t.roots[0];
        let rp = crate::formats::payload(t, t.event(root));
        assert_eq!(rp.input, Some(json!("What is 40+2?")));
        assert!(
            rp.extra
                .iter()
                .any(|(k, v)| k == "scores" && v["includes"]["value"] == "C")
        );
        assert_eq!(t.event(root).usage.get().and_then(|u| u.sum()), Some(39));
        assert_eq!(
            t.time_span(),
            (parse_timestamp_str(&at(0)), parse_timestamp_str(&at(900)))
        );
    }

    #[test]
    fn a_json_log_loads_the_same_and_keeps_byte_ranges() {
        let d = tempfile::tempdir().unwrap();
        let mut log = header("success");
        log["samples"] = json!([sample(json!("q1"), 1), sample(json!("q1"), 2)]);
        let jp = write(&d, "log.json", &bytes(&log));
        let ep = write(
            &d,
            "log.eval",
            &build_zip(&[
                (
                    "samples/q1_epoch_1.json",
                    bytes(&sample(json!("q1"), 1)),
                    CompressionMethod::Zstd,
                ),
                (
                    "samples/q1_epoch_2.json",
                    bytes(&sample(json!("q1"), 2)),
                    CompressionMethod::Zstd,
                ),
                ("header.json", bytes(&header("success")), CompressionMethod::Zstd),
            ]),
        );
        let j = InspectAi.load(&jp).unwrap();
        let e = InspectAi.load(&ep).unwrap();
        assert_eq!(j.traces.len(), 2);
        for (a, b) in j.traces.iter().zip(&e.traces) {
            assert_eq!(a.meta.id, b.meta.id);
            assert_eq!(outline(a), outline(b));
            for i in 0..a.len() as u32 {
                assert_eq!(
                    crate::formats::payload(a, a.event(i)),
                    crate::formats::payload(b, b.event(i))
                );
            }
        }
        // Each event of the .json points at its own record.
        let t = &j.traces[1];
        let raw = crate::formats::read_origin(t, t.event(tool(t, "c2")).origin).unwrap();
        let v: Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!((v["event"].as_str(), v["id"].as_str()), (Some("tool"), Some("c2")));
    }

    #[test]
    fn sample_errors_limits_and_error_events() {
        let d = tempfile::tempdir().unwrap();
        let mut s = sample(json!(1), 1);
        s["error"] =
            json!({"message": "RuntimeError('boom')", "traceback": "Traceback ...", "traceback_ansi": "\u{1b}[1m..."});
        s["limit"] = json!({"type": "message", "limit": 10});
        let ev = s["events"].as_array_mut().unwrap();
        ev.push(json!({"event": "sample_limit", "timestamp": at(200), "type": "message", "message": "message limit 10 reached", "limit": 10}));
        ev.push(json!({"event": "error", "timestamp": at(201), "error": {"message": "RuntimeError('boom')", "traceback": "Traceback ..."}}));
        ev.push(json!({"event": "tool", "timestamp": at(202), "id": "c9", "function": "bash", "arguments": {}, "pending": true}));
        let p = write(
            &d,
            "log.eval",
            &build_zip(&[
                ("samples/1_epoch_1.json", bytes(&s), CompressionMethod::Deflated),
                ("header.json", bytes(&header("error")), CompressionMethod::Deflated),
            ]),
        );
        let t = &InspectAi.load(&p).unwrap().traces[0];
        assert_eq!(t.meta.status, RunStatus::Error);
        let root = crate::formats::payload(t, t.event(t.roots[0]));
        let e = root.error.unwrap();
        assert_eq!(
            (e.message.as_str(), e.stack.as_deref(), e.details),
            ("RuntimeError('boom')", Some("Traceback ..."), None)
        );
        assert!(root.extra.iter().any(|(k, _)| k == "limit"));
        let o = outline(t);
        assert!(o.contains(&"  loop message limit".to_string()), "{o:?}");
        assert!(o.contains(&"  error error".to_string()), "{o:?}");
        assert_eq!(t.event(tool(t, "c9")).status, Status::Pending);
        assert_eq!(t.counts().errors, 2);
    }

    #[test]
    fn older_step_events_nest_their_events() {
        let d = tempfile::tempdir().unwrap();
        let s = json!({
            "id": 1, "epoch": 1, "input": "q", "target": "A",
            "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "A"}],
            "events": [
                {"event": "sample_init", "timestamp": at(0), "sample": {"input": "q"}},
                {"event": "step", "action": "begin", "type": "solver", "name": "generate", "timestamp": at(1)},
                {"event": "model", "timestamp": at(2), "model": "m", "input": [{"role": "user", "content": "q"}],
                 "output": {"choices": [{"message": {"role": "assistant", "content": "A"}}], "usage": usage(5, 1)}},
                {"event": "tool", "timestamp": at(3), "id": "t1", "function": "search", "arguments": {}, "result": "r",
                 "events": [{"event": "model", "timestamp": at(4), "model": "m2", "input": [], "output": {"usage": usage(2, 2)}}]},
                {"event": "step", "action": "end", "type": "solver", "name": "generate", "timestamp": at(9)},
                {"event": "step", "action": "begin", "type": "scorer", "name": "match", "timestamp": at(10)},
                {"event": "score", "timestamp": at(11), "score": {"value": 1.0}},
                {"event": "step", "action": "end", "type": "scorer", "name": "match", "timestamp": at(12)},
                {"event": "logger", "timestamp": at(13), "message": {"level": "warning", "message": "slow"}},
                {"event": "info", "timestamp": at(14), "data": "note"},
                7
            ]
        });
        let mut log = header("success");
        log["samples"] = json!([s]);
        let p = write(&d, "log.json", &bytes(&log));
        let t = &InspectAi.load(&p).unwrap().traces[0];
        assert_eq!(
            outline(t),
            [
                "run agentic · sample 1 · epoch 1",
                "  other sample_init",
                "  step generate",
                "    llm m",
                "    tool search",
                "      llm m2",
                "  step match",
                "    other score 1.0",
                "  other log warning",
                "  other info",
                "  step messages",
                "    message user",
                "    message assistant",
            ]
        );
        let gen_step = t.event(t.children(t.roots[0])[1]);
        assert_eq!(gen_step.duration, Some(8_000_000));
        assert_eq!(t.counts().tokens, 10);
        assert_eq!(t.diagnostics.len(), 1);
        assert!(
            t.diagnostics[0].message.contains("events[10] is not an object"),
            "{:?}",
            t.diagnostics
        );
    }

    #[test]
    fn damaged_members_are_diagnostics_and_the_rest_loads() {
        let good = bytes(&sample(json!(1), 1));
        let truncated = bytes(&sample(json!(2), 1))[..500].to_vec();
        let mut z = build_zip(&[
            ("samples/1_epoch_1.json", good.clone(), CompressionMethod::Stored),
            ("samples/2_epoch_1.json", truncated, CompressionMethod::Deflated),
            ("samples/3_epoch_1.json", good.clone(), CompressionMethod::Stored),
            ("samples/4_epoch_1.json", b"[1, 2]".to_vec(), CompressionMethod::Stored),
            ("header.json", bytes(&header("success")), CompressionMethod::Deflated),
        ]);
        // Break sample 3's stored bytes: its CRC no longer matches.
        let at3 = memchr::memmem::find_iter(&z, &good).nth(1).unwrap();
        z[at3 + 40] ^= 0x55;
        let d = tempfile::tempdir().unwrap();
        let p = write(&d, "log.eval", &z);
        let l = InspectAi.load(&p).unwrap();
        assert_eq!(l.traces.len(), 1);
        let msgs: Vec<&str> = l.traces[0].diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(msgs.len(), 3, "{msgs:?}");
        assert!(
            msgs[0].starts_with("samples/2_epoch_1.json: not a sample object"),
            "{msgs:?}"
        );
        assert!(msgs[1].starts_with("samples/3_epoch_1.json: damaged"), "{msgs:?}");
        assert!(
            msgs[2].starts_with("samples/4_epoch_1.json: not a sample object"),
            "{msgs:?}"
        );
        assert!(l.traces[0].diagnostics.iter().all(|d| d.severity == Severity::Error));
    }

    #[test]
    fn a_truncated_or_foreign_archive_is_refused_clearly() {
        let d = tempfile::tempdir().unwrap();
        let z = three_samples();
        let p = write(&d, "cut.eval", &z[..z.len() / 2]);
        let e = InspectAi.load(&p).unwrap_err().to_string();
        assert!(e.contains("not a readable .eval log"), "{e}");
        let p = write(&d, "noise.eval", b"\x00\x01 not a zip");
        let e = InspectAi.load(&p).unwrap_err().to_string();
        assert!(e.contains("not a zip archive"), "{e}");
        let p = write(
            &d,
            "other.eval",
            &build_zip(&[("readme.txt", b"hi".to_vec(), CompressionMethod::Stored)]),
        );
        let e = InspectAi.load(&p).unwrap_err().to_string();
        assert!(e.contains("without header.json"), "{e}");
    }

    #[test]
    fn decompression_is_capped() {
        let d = tempfile::tempdir().unwrap();
        let big = vec![b' '; 100_000];
        let mut z = build_zip(&[("samples/1_epoch_1.json", big, CompressionMethod::Deflated)]);
        let p = write(&d, "bomb.eval", &z);
        // Over the budget by its declared size: not decompressed at all.
        let mut zip = open_archive(&p).unwrap();
        let e = read_member(&mut zip, 0, "m", &mut Budget { left: 1000 }).unwrap_err();
        assert!(e.contains("declares 100000 bytes") && e.contains("not read"), "{e}");
        // A member that lies about its size (100 bytes) stops at the cap all the same.
        for sig in [&b"PK\x03\x04"[..], &b"PK\x01\x02"[..]] {
            let at = memchr::memmem::find(&z, sig).unwrap();
            let field = if sig[2] == 3 { at + 22 } else { at + 24 };
            z[field..field + 4].copy_from_slice(&100u32.to_le_bytes());
        }
        let p = write(&d, "liar.eval", &z);
        let mut zip = open_archive(&p).unwrap();
        let mut budget = Budget { left: 1000 };
        let r = read_member(&mut zip, 0, "m", &mut budget);
        match r {
            Ok(b) => panic!("read {} bytes of a lying member", b.len()),
            Err(e) => assert!(e.contains("zip bomb") || e.contains("damaged"), "{e}"),
        }
        assert!(budget.left <= 1000);
        // Through a load: a diagnostic, not a crash.
        let l = InspectAi.load(&p).unwrap();
        assert_eq!(l.traces[0].diagnostics[0].severity, Severity::Error);
    }

    #[test]
    fn a_log_without_samples_is_the_eval_itself() {
        let d = tempfile::tempdir().unwrap();
        let mut h = header("error");
        h["error"] = json!({"message": "ValueError: bad dataset", "traceback": "tb"});
        let p = write(&d, "failed.json", &bytes(&h));
        let l = InspectAi.load(&p).unwrap();
        assert_eq!(l.traces.len(), 1);
        let t = &l.traces[0];
        assert_eq!((t.meta.id.as_str(), t.meta.status), ("eval", RunStatus::Error));
        assert_eq!(
            crate::formats::payload(t, t.event(0)).error.unwrap().message,
            "ValueError: bad dataset"
        );
        assert_eq!(t.diagnostics[0].severity, Severity::Warning);
        // A log still being written: only the journal's start, and one sample so far.
        let p = write(
            &d,
            "running.eval",
            &build_zip(&[
                (
                    "_journal/start.json",
                    bytes(&header("started")),
                    CompressionMethod::Zstd,
                ),
                (
                    "samples/1_epoch_1.json",
                    bytes(&sample(json!(1), 1)),
                    CompressionMethod::Zstd,
                ),
            ]),
        );
        let l = InspectAi.load(&p).unwrap();
        assert_eq!(l.traces.len(), 1);
        assert_eq!(crate::formats::testing::summaries(&InspectAi, &p).unwrap().len(), 1);
    }

    #[test]
    fn summaries_come_from_summaries_json_not_the_samples() {
        let d = tempfile::tempdir().unwrap();
        let summaries = json!([
            {"id": 1, "epoch": 1, "model_usage": {"m": usage(30, 9)}, "total_time": 0.9, "started_at": at(0)},
            {"id": 1, "epoch": 2, "error": "RuntimeError('boom')", "model_usage": {}}
        ]);
        let p = write(
            &d,
            "log.eval",
            &build_zip(&[
                ("samples/1_epoch_1.json", b"{broken".to_vec(), CompressionMethod::Zstd),
                ("samples/1_epoch_2.json", b"{broken".to_vec(), CompressionMethod::Zstd),
                ("summaries.json", bytes(&summaries), CompressionMethod::Zstd),
                ("header.json", bytes(&header("success")), CompressionMethod::Zstd),
            ]),
        );
        let rows = crate::formats::testing::summaries(&InspectAi, &p).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].id.as_str(), rows[0].status, rows[0].tokens),
            ("1_epoch_1", RunStatus::Ok, Some(39))
        );
        assert_eq!(rows[0].duration, Some(900_000_000));
        assert_eq!((rows[1].id.as_str(), rows[1].status), ("1_epoch_2", RunStatus::Error));
        assert!(rows.iter().all(|r| r.events.is_none()));
        // The journal's summaries when summaries.json is not written yet.
        let p = write(
            &d,
            "partial.eval",
            &build_zip(&[
                (
                    "_journal/start.json",
                    bytes(&header("started")),
                    CompressionMethod::Deflated,
                ),
                (
                    "_journal/summaries/1.json",
                    bytes(&summaries),
                    CompressionMethod::Deflated,
                ),
            ]),
        );
        assert_eq!(crate::formats::testing::summaries(&InspectAi, &p).unwrap().len(), 2);
        // A .json log: the sample heads only.
        let mut log = header("success");
        log["samples"] = json!([sample(json!(7), 1)]);
        let p = write(&d, "log.json", &bytes(&log));
        let rows = crate::formats::testing::summaries(&InspectAi, &p).unwrap();
        assert_eq!((rows[0].id.as_str(), rows[0].tokens), ("7_epoch_1", Some(39)));
    }

    #[test]
    fn detection_claims_inspect_logs_and_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        let probe = |name: &str, data: &[u8]| {
            let p = write(&d, name, data);
            InspectAi.detect(&Probe::open(&p).unwrap())
        };
        let z = three_samples();
        assert_eq!(probe("a.eval", &z), 100);
        let journal_first = build_zip(&[(
            "_journal/start.json",
            bytes(&header("started")),
            CompressionMethod::Zstd,
        )]);
        assert_eq!(probe("a.zip", &journal_first), 90);
        assert_eq!(
            probe(
                "b.zip",
                &build_zip(&[("x.txt", b"x".to_vec(), CompressionMethod::Stored)])
            ),
            0
        );
        let mut log = header("success");
        log["samples"] = json!([sample(json!(1), 1)]);
        assert_eq!(probe("log.json", &bytes(&log)), 100);
        assert_eq!(probe("chat.json", br#"[{"role": "user", "content": "hi"}]"#), 0);
        assert_eq!(probe("snap.json", br#"{"version": 1, "tools": []}"#), 0);
        assert_eq!(
            probe("other.json", br#"{"version": 1, "eval": "x", "status": "ok"}"#),
            0
        );
        // A damaged .eval is weakly ours, so that loading it says what is wrong.
        assert_eq!(probe("cut.eval", &z[..100]), 100);
        assert_eq!(probe("noise.eval", b"not a zip"), 10);
        // Through the registry: no other format takes them.
        for (name, data) in [("r.eval", z), ("r.json", bytes(&log))] {
            let p = write(&d, name, &data);
            assert_eq!(crate::formats::detect(&p).unwrap().id(), "inspect-ai");
        }
    }

    /// The sample under `sample-traces/inspect-ai/` is this fixture: the test fails when the
    /// two drift apart; `INSPECT_SAMPLE_WRITE=1` rewrites them.
    #[test]
    fn sample_traces_are_generated_from_the_fixture() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/inspect-ai");
        let mut failing = sample(json!("q2"), 1);
        failing["error"] =
            json!({"message": "TimeoutError('sandbox')", "traceback": "Traceback (most recent call last): ..."});
        failing["events"]
            .as_array_mut()
            .unwrap()
            .push(json!({"event": "error", "timestamp": at(300), "error": {"message": "TimeoutError('sandbox')"}}));
        let summaries = json!([
            {"id": "q1", "epoch": 1, "target": "42", "scores": {"includes": {"value": "C"}},
             "model_usage": {"mockllm/model": usage(30, 9)}, "total_time": 0.9, "started_at": at(0), "completed": true},
            {"id": "q2", "epoch": 1, "target": "42", "error": "TimeoutError('sandbox')",
             "model_usage": {"mockllm/model": usage(30, 9)}, "total_time": 0.9, "started_at": at(0), "completed": true}
        ]);
        let eval = build_zip(&[
            (
                "_journal/start.json",
                bytes(&header("started")),
                CompressionMethod::Zstd,
            ),
            (
                "samples/q1_epoch_1.json",
                bytes(&sample(json!("q1"), 1)),
                CompressionMethod::Zstd,
            ),
            ("samples/q2_epoch_1.json", bytes(&failing), CompressionMethod::Zstd),
            ("_journal/summaries/1.json", bytes(&summaries), CompressionMethod::Zstd),
            ("summaries.json", bytes(&summaries), CompressionMethod::Zstd),
            ("header.json", bytes(&header("success")), CompressionMethod::Zstd),
        ]);
        let mut log = header("success");
        log["samples"] = json!([sample(json!("q1"), 1), failing]);
        let json_log = bytes(&log);
        let files = [("agentic.eval", eval), ("agentic.json", json_log)];
        if std::env::var_os("INSPECT_SAMPLE_WRITE").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            for (name, data) in &files {
                std::fs::write(dir.join(name), data).unwrap();
            }
        }
        for (name, data) in &files {
            let on_disk = std::fs::read(dir.join(name)).unwrap();
            assert!(
                on_disk == *data,
                "sample-traces/inspect-ai/{name} differs from its fixture"
            );
            let l = InspectAi.load(&dir.join(name)).unwrap();
            assert_eq!(l.traces.len(), 2);
            assert_eq!(l.traces[1].meta.status, RunStatus::Error);
        }
    }

    fn fixture(name: &str) -> std::path::PathBuf {
        crate::formats::testing::fixture("inspect-ai", name)
    }

    /// The tool call (or message) named `name`, the `n`th of them: status and payload.
    fn nth(t: &Trace, name: &str, n: usize) -> (Status, Payload) {
        let i = t
            .walk()
            .into_iter()
            .filter(|&(i, _)| t.name(i) == name)
            .nth(n)
            .unwrap_or_else(|| panic!("no {name} #{n}"))
            .0;
        (t.event(i).status, crate::formats::payload(t, t.event(i)))
    }

    #[test]
    fn samples_without_events_are_read_from_their_messages() {
        // An older log (no events yet): `tool_error` strings, no sample model_usage.
        let l = InspectAi.load(&fixture("no-events.json")).unwrap();
        assert_eq!(l.traces.len(), 2);
        let (a, b) = (&l.traces[0], &l.traces[1]);
        for t in [a, b] {
            assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        }
        assert_eq!(
            outline(a),
            [
                "run shell_facts · sample 1 · epoch 1",
                "  step messages",
                "    message system",
                "    message user",
                "    llm gpt-4o-2024-08-06",
                "      tool bash",
                "    llm gpt-4o-2024-08-06",
                "      tool submit",
            ]
        );
        let c = a.counts();
        // No tokens: the log recorded none for the sample (only the eval's in `stats`).
        assert_eq!((c.tool_calls, c.llm_calls, c.errors, c.tokens), (2, 2, 0, 0));
        let (st, p) = nth(a, "bash", 0);
        assert_eq!(st, Status::Ok);
        assert_eq!(p.input, Some(json!({"cmd": "wc -l /etc/hosts"})));
        assert_eq!(p.output, Some(json!("7 /etc/hosts\n")));
        assert!(p.extra.contains(&("id".to_string(), json!("call_hP9x2"))));
        // The LLM call shows the assistant message, as a model event shows its reply.
        let (_, p) = nth(a, "gpt-4o-2024-08-06", 0);
        assert_eq!(p.output.unwrap()["content"], "I'll count them.");
        // Two calls answered in the other order: joined by `tool_call_id`.
        assert_eq!(
            outline(b)[4..],
            [
                "    llm gpt-4o-2024-08-06",
                "      tool bash",
                "      tool bash",
                "    llm gpt-4o-2024-08-06",
            ]
        );
        let c = b.counts();
        assert_eq!((c.tool_calls, c.llm_calls, c.errors), (2, 2, 1));
        let (st, p) = nth(b, "bash", 0);
        assert_eq!((st, p.output), (Status::Ok, Some(json!("syslog\n"))));
        let (st, p) = nth(b, "bash", 1);
        assert_eq!(st, Status::Error);
        assert_eq!(
            p.error.unwrap().message,
            "stat: cannot statx '/var/log/syslog': Permission denied"
        );

        // A newer .eval written with events off: `error` objects, the assistant's `model`,
        // the sample's model_usage (the run's tokens; no call gets a share of it).
        let l = InspectAi.load(&fixture("no-events.eval")).unwrap();
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let m = "claude-sonnet-4-5-20250929";
        assert_eq!(
            outline(t),
            [
                "run fix_tests · sample q1 · epoch 1".to_string(),
                "  step messages".into(),
                "    message system".into(),
                "    message user".into(),
                format!("    llm {m}"),
                "      tool bash".into(),
                format!("    llm {m}"),
                "      tool text_editor".into(),
                format!("    llm {m}"),
                "      tool bash".into(),
                format!("    llm {m}"),
            ]
        );
        let c = t.counts();
        assert_eq!((c.tool_calls, c.llm_calls, c.errors, c.tokens), (3, 4, 1, 10008));
        assert!(
            t.events
                .iter()
                .filter(|e| e.kind == EventKind::LlmCall)
                .all(|e| e.usage.get().is_none())
        );
        let (st, p) = nth(t, "text_editor", 0);
        assert_eq!(st, Status::Error);
        let e = p.error.unwrap();
        assert_eq!(
            (e.kind.as_deref(), e.message.as_str()),
            (Some("permission"), "tests/test_dates.py is read-only in this sandbox")
        );
        let (st, p) = nth(t, "bash", 1);
        assert_eq!((st, p.output), (Status::Ok, Some(json!(".\n1 passed in 0.19s\n"))));
        // The .eval and the .json readings agree on what each event holds: the raw record of
        // a call is its `tool_calls` entry, its result the tool message.
        let raw = crate::formats::read_origin(t, t.event(t.find("toolu_01Dq9").unwrap()).origin).unwrap();
        let v: Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!(v["function"], "text_editor");
        // A tool message answering no call is itself, and said.
        let d = tempfile::tempdir().unwrap();
        let mut log = header("success");
        log["samples"] = json!([{"id": 1, "epoch": 1, "messages": [
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": "f", "arguments": {}}]},
            {"role": "tool", "content": "late", "tool_call_id": "c9", "error": {"type": "x", "message": "m"}}
        ]}]);
        let p = write(&d, "orphan.json", &bytes(&log));
        let t = &InspectAi.load(&p).unwrap().traces[0];
        assert_eq!(
            outline(t)[1..],
            [
                "  step messages",
                "    llm mockllm/model",
                "      tool f",
                "    message tool"
            ]
        );
        assert_eq!(t.event(t.find("c1").unwrap()).status, Status::Unknown);
        assert_eq!(t.counts().errors, 1);
        assert_eq!(t.diagnostics.len(), 1);
        assert!(
            t.diagnostics[0]
                .message
                .contains("\"c9\" that no assistant message made")
        );
        // Many calls answered in reverse order, the last without `tool_call_id` (the oldest
        // call still waiting): each joined to its own call.
        let n = 20_000;
        let calls: Vec<Value> = (0..n)
            .map(|i| json!({"id": format!("c{i}"), "function": "f", "arguments": {"i": i}}))
            .collect();
        let mut msgs = vec![json!({"role": "assistant", "content": "", "tool_calls": calls})];
        msgs.extend(
            (1..n)
                .rev()
                .map(|i| json!({"role": "tool", "content": format!("r{i}"), "tool_call_id": format!("c{i}")})),
        );
        msgs.push(json!({"role": "tool", "content": "r0"}));
        log["samples"] = json!([{"id": 1, "epoch": 1, "messages": msgs}]);
        let p = write(&d, "many.json", &bytes(&log));
        let t = &InspectAi.load(&p).unwrap().traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", &t.diagnostics[..1]);
        assert_eq!(t.counts().tool_calls, n);
        for i in [0, 1, n / 2, n - 1] {
            let e = t.event(t.find(&format!("c{i}")).unwrap());
            assert_eq!(crate::formats::payload(t, e).output, Some(json!(format!("r{i}"))));
        }
    }

    #[test]
    fn unknown_event_types_are_counted_quietly_and_shown_when_they_carry_text() {
        let d = tempfile::tempdir().unwrap();
        let mut s = sample(json!(1), 1);
        let ev = s["events"].as_array_mut().unwrap();
        // Between a tool span's begin and its tool event: it changes nothing of the nesting.
        ev.insert(
            7,
            json!({"event": "memory_write", "timestamp": at(29), "span_id": "s-react", "summary": "noted: 40+2"}),
        );
        ev.insert(2, json!({"event": "heartbeat", "timestamp": at(2), "seq": 1}));
        let mut log = header("success");
        log["samples"] = json!([s, sample(json!(2), 1)]);
        let p = write(&d, "log.json", &bytes(&log));
        let l = InspectAi.load(&p).unwrap();
        let (t, plain) = (&l.traces[0], &l.traces[1]);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let mut skipped: Vec<_> = t.skipped.iter().map(|(k, n)| (k.to_string(), n)).collect();
        skipped.sort();
        assert_eq!(skipped, [("heartbeat".to_string(), 1), ("memory_write".to_string(), 1)]);
        assert_eq!(t.counts().tool_calls, plain.counts().tool_calls);
        assert_eq!(t.counts().events, plain.counts().events + 1);
        let mut with = outline(t);
        let at = with.iter().position(|l| l.trim() == "other memory_write").unwrap();
        assert_eq!(with[at], "      other memory_write", "under the react span");
        with.remove(at);
        assert_eq!(with[1..], outline(plain)[1..], "the rest is as without the drift");
        let (_, p) = nth(t, "memory_write", 0);
        assert_eq!(p.input, Some(json!("noted: 40+2")));
        assert_eq!(
            p.extra,
            vec![(
                "record".to_string(),
                json!({"event": "memory_write", "summary": "noted: 40+2"})
            )]
        );
    }

    /// Drift in a `.json` log: unknown fields in about a third of its objects (the log, its
    /// samples, events and messages), and events of unknown types before about a quarter of
    /// a sample's events. Returns the events inserted.
    fn drift_log(f: &Path, rng: &mut crate::formats::testing::Rng) -> usize {
        use crate::formats::testing::Rng;
        fn field(rng: &mut Rng, v: &mut Value) {
            if rng.one_in(3)
                && let Some(o) = v.as_object_mut()
            {
                o.insert(rng.type_name(), rng.value());
            }
        }
        if f.extension().is_none_or(|x| x != "json") {
            return 0;
        }
        let Ok(mut log) = serde_json::from_slice::<Value>(&std::fs::read(f).unwrap()) else {
            return 0;
        };
        field(rng, &mut log);
        let mut inserted = 0;
        for s in log
            .get_mut("samples")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            field(rng, s);
            for m in s
                .get_mut("messages")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                field(rng, m);
            }
            let Some(events) = s.get_mut("events").and_then(Value::as_array_mut) else {
                continue;
            };
            let mut out = Vec::with_capacity(events.len() * 2);
            for mut e in std::mem::take(events) {
                if rng.one_in(4) {
                    let mut u = json!({"event": rng.type_name(), "timestamp": e.get("timestamp")});
                    if rng.one_in(2)
                        && let Some(span) = e.get("span_id")
                    {
                        u["span_id"] = span.clone();
                    }
                    if let Some(t) = rng.maybe_text() {
                        u[["message", "content", "summary"][rng.below(3)]] = json!(t);
                    }
                    u["zz"] = rng.value();
                    out.push(u);
                    inserted += 1;
                }
                field(rng, &mut e);
                out.push(e);
            }
            *events = out;
        }
        std::fs::write(f, serde_json::to_vec_pretty(&log).unwrap()).unwrap();
        inserted
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on the `.json` logs of our fixtures, the sample and
        /// the corpus.
        #[test]
        fn drift_is_skipped_quietly(seed in proptest::prelude::any::<u64>()) {
            let mut sources = crate::formats::testing::drift_sources(
                "inspect-ai",
                &["tests/fixtures/inspect-ai/no-events.json", "sample-traces/inspect-ai/agentic.json"],
            );
            sources.retain(|p| p.extension().is_some_and(|x| x == "json"));
            crate::formats::testing::drift_check(&sources, seed, &drift_log);
        }
    }

    /// Logs that exercise decoding on demand beyond the sample traces: model inputs as
    /// `input_refs` through events nested in tool and subtask events (older logs), attachments
    /// in messages, tool results and the sample input, a tool span before its tool event, a
    /// model call whose input is recorded (and one recorded as null), and a sample without
    /// `id` (its payloads stay held).
    fn decoding_logs(d: &tempfile::TempDir) -> Vec<std::path::PathBuf> {
        let pool = json!([
            {"role": "system", "content": "attachment://a1"},
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "t1", "function": "f", "arguments": {}}]},
            {"role": "tool", "content": "attachment://a2", "tool_call_id": "t1"},
            {"role": "assistant", "content": "done"}
        ]);
        let model = |ms: u32, refs: Value| {
            json!({"event": "model", "timestamp": at(ms), "model": "m", "input": [], "input_refs": refs,
                   "output": {"choices": [{"message": {"role": "assistant", "content": "x"}, "stop_reason": "stop"}], "usage": usage(3, 1)}})
        };
        let s = json!({
            "id": "n1", "epoch": 2, "input": "attachment://a1", "target": "t",
            "attachments": {"a1": "the system prompt", "a2": "a long tool result"},
            "events_data": {"messages": pool},
            "messages": [{"role": "user", "content": "attachment://a1"}, {"role": "tool", "content": "r", "error": {"message": "bad"}}],
            "events": [
                {"event": "span_begin", "id": "s1", "name": "solvers", "type": "solvers", "timestamp": at(0)},
                model(1, json!([[0, 2]])),
                {"event": "span_begin", "id": "ts", "name": "f", "type": "tool", "parent_id": "s1", "timestamp": at(2)},
                {"event": "tool", "span_id": "s1", "timestamp": at(3), "id": "t1", "function": "f", "arguments": {"q": "attachment://a1"},
                 "result": "attachment://a2", "events": [model(4, json!([[0, 3]]))]},
                {"event": "span_end", "id": "ts", "timestamp": at(5)},
                {"event": "subtask", "name": "sub", "timestamp": at(6), "input": {"a": 1}, "result": 2,
                 "events": [model(7, json!([[1, 4], [0, 1]]))]},
                model(8, json!([[0, 5]])),
                {"event": "model", "timestamp": at(9), "model": "m", "input": null, "input_refs": [[0, 5]], "output": {}},
                {"event": "model", "timestamp": at(10), "model": "m", "input": [{"role": "user", "content": "attachment://a2"}], "output": {"error": "boom"}},
                {"event": "step", "action": "begin", "type": "scorer", "name": "match", "timestamp": at(11)},
                {"event": "sandbox", "action": "exec", "cmd": "ls", "output": "attachment://a2", "timestamp": at(12)},
                {"event": "sample_init", "timestamp": at(13), "sample": {"input": "attachment://a1"}},
                {"event": "error", "timestamp": at(14), "error": {"message": "E", "traceback": "tb"}},
                {"event": "logger", "timestamp": at(15), "message": {"level": "error", "message": "m"}},
                {"event": "sample_limit", "type": "token", "message": "over", "timestamp": at(16)},
                {"event": "state", "changes": [{"op": "add"}], "timestamp": at(17)},
                {"event": "score", "score": {"value": "C"}, "timestamp": at(18)},
                {"timestamp": at(19), "data": 1},
                {"event": "info", "data": "attachment://a1", "timestamp": at(20)},
                {"event": "step", "action": "end", "type": "scorer", "name": "match", "timestamp": at(21)},
                {"event": "span_end", "id": "s1", "timestamp": at(22)}
            ]
        });
        let mut no_id = sample(json!(5), 1);
        no_id.as_object_mut().unwrap().remove("id");
        let mut log = header("success");
        log["samples"] = json!([s.clone(), sample(json!("q1"), 1), no_id.clone()]);
        vec![
            write(d, "decode.json", &bytes(&log)),
            write(
                d,
                "decode.eval",
                &build_zip(&[
                    ("samples/n1_epoch_2.json", bytes(&s), CompressionMethod::Deflated),
                    (
                        "samples/q1_epoch_1.json",
                        bytes(&sample(json!("q1"), 1)),
                        CompressionMethod::Zstd,
                    ),
                    // Named otherwise than its sample, or a sample without `id`: payloads held.
                    (
                        "samples/other_epoch_1.json",
                        bytes(&sample(json!(7), 1)),
                        CompressionMethod::Stored,
                    ),
                    ("samples/5_epoch_1.json", bytes(&no_id), CompressionMethod::Deflated),
                    ("header.json", bytes(&header("success")), CompressionMethod::Zstd),
                ]),
            ),
            write(d, "three.eval", &three_samples()),
        ]
    }

    /// Every payload decoded when shown is the payload the load built (and held until issue
    /// 13 left them in the file): the load that holds them is the reference. Events are
    /// decoded last to first, the traces of a log in turn, so that no decoding leans on the
    /// one before it. `INSPECT_ORACLE_DIR` adds the logs of a directory (the corpus).
    #[test]
    fn payloads_decoded_when_shown_equal_the_payloads_held_at_load() {
        let d = tempfile::tempdir().unwrap();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/inspect-ai");
        let mut paths = vec![
            dir.join("agentic.json"),
            dir.join("agentic.eval"),
            fixture("no-events.json"),
            fixture("no-events.eval"),
        ];
        paths.extend(decoding_logs(&d));
        let mut dirs: Vec<std::path::PathBuf> = std::env::var_os("INSPECT_ORACLE_DIR")
            .map(Into::into)
            .into_iter()
            .collect();
        while let Some(dir) = dirs.pop() {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let (p, n) = (e.path(), e.file_name().to_string_lossy().into_owned());
                if p.is_dir() {
                    dirs.push(p);
                } else if n.ends_with(".eval") || n.ends_with(".json") {
                    paths.push(p);
                }
            }
        }
        let (mut deferred, mut held) = (0, 0);
        for p in &paths {
            let load = |defer| match is_zip(p).unwrap() {
                true => load_eval(p, defer),
                false => load_json(p, defer),
            };
            let (Ok(reference), Ok(loaded)) = (load(false), load(true)) else {
                assert!(load(false).is_err() && load(true).is_err(), "{}", p.display());
                continue;
            };
            assert_eq!(reference.traces.len(), loaded.traces.len());
            for (a, b) in reference.traces.iter().zip(&loaded.traces) {
                assert_eq!(crate::formats::testing::outline(a), crate::formats::testing::outline(b));
                for i in (0..a.len() as u32).rev() {
                    let (ea, eb) = (a.event(i), b.event(i));
                    assert!(!matches!(ea.payload, PayloadRef::Deferred));
                    match eb.payload {
                        PayloadRef::Deferred => deferred += 1,
                        PayloadRef::Inline(_) => held += 1,
                        PayloadRef::None => {}
                    }
                    assert_eq!(
                        crate::formats::payload(a, ea),
                        crate::formats::payload(b, eb),
                        "{} {} event {i} ({})",
                        p.display(),
                        a.meta.id,
                        a.str(ea.name)
                    );
                    assert_eq!((ea.status, ea.origin), (eb.status, eb.origin));
                    // The raw view's record: the event's JSON, also inside a `.eval` member.
                    if eb.origin.len > 0 {
                        let raw = crate::formats::read_origin(b, eb.origin).unwrap();
                        assert!(serde_json::from_slice::<Value>(&raw).is_ok_and(|v| v.is_object() || v.is_array()));
                    }
                }
            }
        }
        // Held: the nested events, the samples without `id` and the misnamed member.
        assert!(deferred > 3 * held, "{deferred} deferred, {held} held");
    }

    /// Issue 13's budget: the index at most 128 bytes an event plus interned strings, no
    /// payload held, for an agent run as `bench/gen/inspect-ai.py` writes it (model inputs as
    /// `input_refs` into `events_data`), in a `.json` and a `.eval` log. `INSPECT_INDEX_LOG`
    /// measures a log of one's own (the bench's) and prints the figures.
    #[test]
    fn the_index_holds_no_payload_and_fits_the_budget() {
        let turns = 250;
        let mut pool = vec![json!({"role": "user", "content": "task"})];
        let mut events = vec![
            json!({"event": "span_begin", "id": "solvers", "name": "solvers", "type": "solvers", "timestamp": at(0)}),
        ];
        for c in 0..turns {
            let call = json!({"id": format!("c{c}"), "function": "bash", "arguments": {"cmd": format!("ls {c}")}});
            pool.push(json!({"role": "assistant", "content": "", "tool_calls": [call]}));
            events.push(
                json!({"event": "model", "span_id": "solvers", "timestamp": at(c * 10 + 1), "model": "mockllm/model",
                "input": [], "input_refs": [[0, pool.len() - 1]],
                "output": {"choices": [{"message": pool.last().unwrap()}], "usage": usage(100 + c as u64, 10)}}),
            );
            let result = format!("file_{c}.txt\n").repeat(8);
            events.push(
                json!({"event": "tool", "span_id": "solvers", "timestamp": at(c * 10 + 6), "type": "function",
                "id": call["id"], "function": "bash", "arguments": call["arguments"], "result": result, "events": []}),
            );
            pool.push(json!({"role": "tool", "content": result, "tool_call_id": call["id"], "function": "bash"}));
        }
        events.push(json!({"event": "span_end", "id": "solvers", "timestamp": at(turns * 10)}));
        let sample = |id: u64| {
            json!({"id": id, "epoch": 1, "input": "task", "target": "x", "messages": pool, "events": events,
                   "events_data": {"messages": pool}, "model_usage": {"mockllm/model": usage(1, 1)}})
        };
        let d = tempfile::tempdir().unwrap();
        let mut log = header("success");
        log["samples"] = json!([sample(1), sample(2)]);
        let mut paths = vec![
            write(&d, "run.json", &bytes(&log)),
            write(
                &d,
                "run.eval",
                &build_zip(&[
                    ("samples/1_epoch_1.json", bytes(&sample(1)), CompressionMethod::Deflated),
                    ("samples/2_epoch_1.json", bytes(&sample(2)), CompressionMethod::Deflated),
                    ("header.json", bytes(&header("success")), CompressionMethod::Deflated),
                ]),
            ),
        ];
        let own = std::env::var_os("INSPECT_INDEX_LOG");
        paths.extend(own.iter().map(std::path::PathBuf::from));
        for p in &paths {
            let l = InspectAi.load(p).unwrap();
            let (mut events, mut index, mut strings, mut held) = (0, 0, 0, 0);
            for t in &l.traces {
                events += t.len();
                for (part, n) in t.index_bytes() {
                    match part {
                        "strings" => strings += n,
                        _ => index += n,
                    }
                }
                held += t
                    .events
                    .iter()
                    .filter(|e| matches!(e.payload, PayloadRef::Inline(_)))
                    .count();
            }
            let per_event = index as f64 / events as f64;
            if own.is_some() {
                println!(
                    "{}: {events} events, index {index} bytes ({per_event:.1} an event) + strings {strings} bytes, {held} payloads held",
                    p.display()
                );
            }
            assert_eq!(held, 0, "{}", p.display());
            assert!(per_event <= 128.0, "{}: {per_event} bytes an event", p.display());
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, .. proptest::prelude::ProptestConfig::default() })]

        /// Damaged archives (bytes changed, removed, inserted) load or refuse, never panic.
        #[test]
        fn damaged_archives_never_panic(z in crate::formats::testing::with_byte_edits(proptest::prelude::Just(three_samples()), 1)) {
            let d = tempfile::tempdir().unwrap();
            let p = write(&d, "x.eval", &z);
            if let Ok(l) = InspectAi.load(&p) {
                for t in &l.traces {
                    for (i, _) in t.walk() {
                        let _ = crate::formats::payload(t, t.event(i));
                    }
                }
            }
            let _ = InspectAi.summarize(&p);
        }

        /// The tree against a straightforward serde_json reading of the same events: every
        /// `tool` event is one tool call, every `model` event one LLM call with its tokens,
        /// and in a `.json` log each event's byte range holds that event.
        #[test]
        fn events_agree_with_a_plain_parse(picks in proptest::collection::vec(0..6usize, 0..24)) {
            let mut events = Vec::new();
            for (n, k) in picks.iter().enumerate() {
                let ms = n as u32 * 10;
                events.push(match k {
                    0 => json!({"event": "tool", "timestamp": at(ms), "id": format!("c{n}"), "function": "f", "arguments": {"n": n}, "result": "r"}),
                    1 => json!({"event": "tool", "timestamp": at(ms), "id": format!("c{n}"), "function": "g", "arguments": {}, "error": {"type": "timeout", "message": "slow"}}),
                    2 => model_event("nowhere", ms, json!([[0, 1]]), "x", usage(n as u64, 1)),
                    3 => json!({"event": "span_begin", "id": format!("s{n}"), "name": "s", "timestamp": at(ms)}),
                    4 => json!({"event": "span_end", "id": format!("s{}", n.saturating_sub(1)), "timestamp": at(ms)}),
                    _ => json!({"event": "score", "timestamp": at(ms), "score": {"value": n}}),
                });
            }
            let s = json!({"id": 1, "epoch": 1, "messages": [], "events": events});
            let mut log = header("success");
            log["samples"] = json!([s.clone()]);
            let d = tempfile::tempdir().unwrap();
            let p = write(&d, "log.json", &bytes(&log));
            let t = &InspectAi.load(&p).unwrap().traces[0];
            let plain = s["events"].as_array().unwrap();
            let count = |e: &str| plain.iter().filter(|v| v["event"] == e).count();
            let c = t.counts();
            proptest::prop_assert_eq!(c.tool_calls, count("tool"));
            proptest::prop_assert_eq!(c.llm_calls, count("model"));
            let tokens: u64 = plain.iter().filter(|v| v["event"] == "model").map(|v| v["output"]["usage"]["total_tokens"].as_u64().unwrap()).sum();
            proptest::prop_assert_eq!(c.tokens, tokens);
            proptest::prop_assert_eq!(c.errors, plain.iter().filter(|v| v.get("error").is_some()).count());
            for i in 0..t.len() as u32 {
                let e = t.event(i);
                if e.kind == EventKind::Run || e.origin.len == 0 {
                    continue;
                }
                let raw = crate::formats::read_origin(t, e.origin).unwrap();
                let v: Value = serde_json::from_slice(&raw).unwrap();
                proptest::prop_assert!(plain.contains(&v), "{} is not one of the events", v);
            }
        }
    }
}

#[cfg(test)]
mod gist_tests {
    use super::*;
    use serde_json::json;

    fn g(name: &str, input: Value) -> Option<String> {
        InspectAi.gist(name, &input)
    }

    #[test]
    fn each_tool_says_what_it_did() {
        // A `tool` event's `arguments`.
        assert_eq!(g("bash", json!({"cmd": "ls"})).as_deref(), Some("ls"));
        assert_eq!(
            g("python", json!({"code": "import os\nprint(os.getcwd())"})).as_deref(),
            Some("import os\nprint(os.getcwd())")
        );
        let te = json!({"command": "view", "path": "/repo/a.py", "view_range": [1, 20]});
        assert_eq!(g("text_editor", te).as_deref(), Some("/repo/a.py"));
        assert_eq!(g("submit", json!({"answer": "42 eggs"})).as_deref(), Some("42 eggs"));
        assert_eq!(g("add", json!({"x": 40, "y": 2})).as_deref(), Some("x=40 y=2"));
        assert_eq!(g("read_note", json!({"name": "shopping"})).as_deref(), Some("shopping"));
    }
}
