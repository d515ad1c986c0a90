//! AgentDbg, trace spec 0.1: a run directory `runs/<run_id>/` with `run.json` (metadata,
//! rewritten at the end of the run) and `events.jsonl` (append-only, one event a line).
//! Seven event types; `parent_id` usually null; `run.json` counts stay 0 while running.
//! Tokens: an `LLM_CALL`'s `usage` (`prompt_tokens` or `input_tokens`, `completion_tokens` or
//! `output_tokens`, `total_tokens`; values may be null or `"__REDACTED__"`: unknown). The
//! spec has no cache, reasoning or cost fields: the prompt count is the input as written
//! (it includes any cached tokens, which the spec cannot tell apart), priced as input.
//!
//! Built for size (DESIGN §4): the envelope is parsed typed with borrowed strings, only the
//! payload fields the index needs are read, and the payload itself stays on disk until shown.

use super::engine::{self, Records};
use super::jsonl::{Follow, LineLoc, LineParser, Sink};
use super::skim::{Raw, Seen, Skim};
use super::{Format, LoadError, Loaded, Probe, Summary, decode_embedded_owned, lenient_u64, read_json_file, stem};
use crate::model::*;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub struct AgentDbg;

const EVENTS: &str = "events.jsonl";
const RUN: &str = "run.json";
const TYPES: [&str; 7] = [
    "RUN_START",
    "RUN_END",
    "LLM_CALL",
    "TOOL_CALL",
    "STATE_UPDATE",
    "ERROR",
    "LOOP_WARNING",
];

impl Format for AgentDbg {
    fn id(&self) -> &'static str {
        "agentdbg"
    }
    fn describe(&self) -> &'static str {
        "AgentDbg run directory (run.json + events.jsonl, spec 0.1), usually runs/<run_id>/"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return if p.has_entry(EVENTS) && (p.has_entry(RUN) || !p.has_entry("spans.jsonl")) {
                100
            } else if p.has_entry(RUN) && !p.has_entry("meta.json") {
                60
            } else {
                0
            };
        }
        let typed = p.has_key("event_type")
            && p.record()
                .and_then(|r| r.get("event_type"))
                .and_then(Value::as_str)
                .is_some_and(|t| TYPES.contains(&t));
        if typed || (p.has_key("event_type") && p.has_key("event_id") && p.has_key("payload")) {
            return 95;
        }
        // run.json given on its own
        if p.file_name() == RUN && p.has_key("run_id") && p.has_key("counts") {
            return 90;
        }
        0
    }

    fn is_run_dir(&self, dir: &Path) -> bool {
        dir.join(EVENTS).is_file() || (dir.join(RUN).is_file() && !dir.join("meta.json").exists())
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let (_, events) = locate(path);
        let mut f = self.follow(path).expect("agentdbg is line-oriented");
        f.poll()?;
        if !events.is_file() {
            if f.sink.traces.is_empty() {
                return Err(LoadError::io(
                    &events,
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no events.jsonl"),
                ));
            }
            f.sink
                .warning(None, "events.jsonl is missing: the run has not written events yet");
        }
        f.finish("AgentDbg events")
    }

    fn follow(&self, path: &Path) -> Option<Follow> {
        let (run_json, events) = locate(path);
        Some(Follow::new(
            &events,
            Box::new(move || Box::new(Parser::new(run_json.as_deref())) as Box<dyn LineParser>),
        ))
    }

    fn summarize(&self, path: &Path) -> Result<Option<Vec<Summary>>, LoadError> {
        let (run_json, events) = locate(path);
        // run.json is enough for a finished run; a running one counts from its events.
        if let Some(rj) = run_json.as_ref().filter(|p| p.is_file()) {
            let v = read_json_file(rj, 16 << 20)?;
            let status = RunStatus::parse(v.get("status").and_then(Value::as_str).unwrap_or(""));
            if status != RunStatus::Running {
                let start = v.get("started_at").and_then(parse_timestamp);
                let end = v.get("ended_at").and_then(parse_timestamp);
                let counts = v.get("counts");
                let count = |k: &str| counts.and_then(|c| lenient_u64(c.get(k))).map(|n| n as usize);
                // Checked: run.json may hold any number (a hostile one overflows i64).
                let duration = lenient_u64(v.get("duration_ms"))
                    .and_then(|ms| i64::try_from(ms).ok()?.checked_mul(1_000_000))
                    .or(match (start, end) {
                        (Some(a), Some(b)) => b.checked_sub(a),
                        _ => None,
                    });
                return Ok(Some(vec![Summary {
                    id: v
                        .get("run_id")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .unwrap_or_else(|| stem(path)),
                    name: v.get("run_name").and_then(Value::as_str).map(str::to_owned),
                    format: "agentdbg",
                    path: path.to_path_buf(),
                    status,
                    start,
                    duration,
                    events: None,
                    tool_calls: count("tool_calls"),
                    llm_calls: count("llm_calls"),
                    errors: count("errors"),
                    tokens: None,
                    problems: None,
                    badges: Vec::new(),
                    cost: None,
                    resume: None,
                }]));
            }
        }
        let _ = events;
        Ok(None)
    }

    fn decode_payload_raw<'a>(
        &self,
        _t: &Trace,
        ev: &Event,
        raw: &[&'a [u8]],
        sink: Option<&mut dyn super::RawSink>,
    ) -> Option<super::RawPayload<'a>> {
        decode_raw(ev, raw, sink)
    }

    fn decode_payload(&self, _t: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
        let mut out = Payload::default();
        for (i, bytes) in raw.iter().enumerate() {
            let mut v: Value = match serde_json::from_slice(bytes) {
                Ok(v) => v,
                Err(e) => {
                    out.error = Some(ErrorInfo::unreadable(&e));
                    return out;
                }
            };
            // The record is ours: its values are moved into the payload, not copied (a diff
            // decodes every paired call).
            let ty = match v.get_mut("event_type").map(Value::take) {
                Some(Value::String(s)) => s,
                _ => String::new(),
            };
            let p = v.get_mut("payload").map(Value::take).unwrap_or(Value::Null);
            fill_payload(&mut out, &ty, p, i > 0);
            if let Some(meta) = take_field(&mut v, "meta").filter(|m| m.as_object().is_none_or(|o| !o.is_empty())) {
                out.extra.push(("meta".into(), meta));
            }
        }
        if ev.kind == EventKind::Error && out.error.is_none() {
            out.error = Some(ErrorInfo {
                message: "error".into(),
                ..Default::default()
            });
        }
        out
    }
}

/// A record for [`AgentDbg::decode_payload_raw`] as serde reads it: its payload's fields as
/// their text.
#[derive(Deserialize)]
struct RawRecord<'a> {
    #[serde(borrow, default)]
    event_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    payload: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    meta: Option<&'a serde_json::value::RawValue>,
}

/// A record's type, its payload's fields (in record order; a repeated key's last value
/// counts, as in a map) and its meta, each value as its JSON text.
#[derive(Default)]
struct RecordText<'a> {
    ty: Option<Cow<'a, str>>,
    fields: Vec<(Cow<'a, str>, &'a str)>,
    meta: Option<&'a str>,
    /// Input and output given to a sink as they were reached.
    taken: [bool; 2],
}

impl<'a> RecordText<'a> {
    /// The skimmer's reading (one pass, no values built); None when it is unsure, and serde
    /// then reads the record ([`RecordText::serde`]).
    fn skim(bytes: &'a [u8], mut sink: Option<&mut (dyn super::RawSink + '_)>) -> Option<RecordText<'a>> {
        // The record's text is copied out, so all of it is checked once here.
        let text = std::str::from_utf8(bytes).ok()?;
        let sub = |v: &[u8]| {
            text.get(v.as_ptr() as usize - bytes.as_ptr() as usize..)?
                .get(..v.len())
        };
        let mut rec = RecordText::default();
        let mut seen = Seen::default();
        let mut sk = Skim::new(bytes);
        sk.object(|sk, key| {
            // serde compares keys unescaped; the skimmer compares them as written.
            if key.contains(&b'\\') {
                return None;
            }
            match key {
                b"event_type" => {
                    seen.first(0)?;
                    rec.ty = sk.opt_cow()?;
                }
                b"payload" => {
                    seen.first(1)?;
                    if sk.is_null_next() {
                        return sk.skip();
                    }
                    if sk.peek_byte()? != b'{' {
                        return None;
                    }
                    sk.object(|sk, k| {
                        if k.contains(&b'\\') {
                            return None;
                        }
                        // The type came first (as writers put it): its input or output goes
                        // to the sink, which finds its end as it copies it. Taken twice (a
                        // repeated key) is left to serde.
                        if let Some((sink, side)) = sink.as_deref_mut().zip(side_of(rec.ty.as_deref(), k)) {
                            let start = sk.value_start();
                            if rec.taken[side] {
                                return None;
                            }
                            let rest = text.get(start..)?;
                            // A string only when it stays one (what `part` keeps as its text).
                            let whole = match rest.as_bytes().first() {
                                Some(b'"') => plain_string(rest),
                                Some(b'{' | b'[') => true,
                                _ => false,
                            };
                            if whole && let Some(n) = sink.take(side == 1, rest) {
                                rec.taken[side] = true;
                                sk.jump(start + n);
                                return Some(());
                            }
                        }
                        // The record was checked when it was loaded: the values' ends are
                        // found without checking them again (what is copied is checked).
                        let v = sk.value_unchecked()?;
                        rec.fields.push((Cow::Borrowed(sub(k)?), sub(v)?));
                        Some(())
                    })?;
                }
                b"meta" => {
                    seen.first(2)?;
                    rec.meta = Some(sub(sk.value()?)?);
                }
                _ => sk.skip()?,
            }
            Some(())
        })?;
        sk.at_end().then_some(rec)
    }

    /// serde's reading; None when the record is not one `decode_raw` handles.
    fn serde(bytes: &'a [u8]) -> Option<RecordText<'a>> {
        let rec: RawRecord = serde_json::from_slice(bytes).ok()?;
        let fields = match rec.payload {
            Some(p) if p.get().starts_with('{') => serde_json::from_str::<RawFields>(p.get())
                .ok()?
                .into_iter()
                .map(|(k, v)| (k, v.get()))
                .collect(),
            Some(p) if p.get() != "null" => return None,
            _ => Vec::new(),
        };
        Some(RecordText {
            ty: rec.event_type,
            fields,
            meta: rec.meta.map(|m| m.get()),
            taken: [false; 2],
        })
    }

    /// Take a payload field's text (its last value, as a map keeps).
    fn take(&mut self, k: &str) -> Option<&'a str> {
        let at = self.fields.iter().rposition(|(key, _)| key == k)?;
        let v = self.fields[at].1;
        self.fields.retain(|(key, _)| key != k);
        Some(v)
    }
}

type RawFields<'a> = std::collections::HashMap<Cow<'a, str>, &'a serde_json::value::RawValue>;

/// Whether a JSON string as written (quotes included) decodes to text that
/// `decode_embedded_owned` keeps as a string: its first character after leading whitespace
/// cannot start JSON. Only what is sure from the written text says yes (a non-ASCII first
/// character might be Unicode whitespace; an escape other than whitespace might be a quote).
fn plain_string(raw: &str) -> bool {
    let b = raw.as_bytes();
    let mut i = 1;
    loop {
        match b.get(i) {
            Some(b' ') => i += 1,
            Some(b'\\') if matches!(b.get(i + 1), Some(b'n' | b'r' | b't')) => i += 2,
            Some(b'\\' | b'{' | b'[') | None => return false,
            Some(&c) => return c.is_ascii(),
        }
    }
}

/// Which side (0 input, 1 output) a payload field of a record of type `ty` is.
fn side_of(ty: Option<&str>, key: &[u8]) -> Option<usize> {
    match (ty?, key) {
        ("LLM_CALL", b"prompt") | ("TOOL_CALL", b"args") => Some(0),
        ("LLM_CALL", b"response") | ("TOOL_CALL", b"result") | ("STATE_UPDATE", b"state") => Some(1),
        _ => None,
    }
}

/// [`AgentDbg::decode_payload`] for the records whose big values are arguments, results,
/// prompts, responses and states: an object or array among those stays as its text, and so
/// does a string that stays a string; the rest decodes as `fill_payload` does. `None` for
/// anything else (or anything unreadable), which `decode_payload` then handles, diagnostics
/// and all.
fn decode_raw<'a>(
    ev: &Event,
    raw: &[&'a [u8]],
    sink: Option<&mut (dyn super::RawSink + '_)>,
) -> Option<super::RawPayload<'a>> {
    use super::RawText;
    let mut out = super::RawPayload::default();
    // A present, non-null field: its text when an object, array or plain string, else decoded.
    fn part<'a>(f: &mut RecordText<'a>, k: &str) -> Option<Result<RawText<'a>, Value>> {
        let v = f.take(k)?;
        match v.as_bytes().first() {
            Some(b'{' | b'[') => Some(Ok(RawText::Json(v))),
            Some(b'n') => None,
            Some(b'"') if plain_string(v) => Some(Ok(RawText::Str(v))),
            _ => serde_json::from_str(v).ok().map(|x| Err(decode_embedded_owned(x))),
        }
    }
    // A present, non-null field's text.
    fn text<'a>(f: &mut RecordText<'a>, k: &str) -> Option<&'a str> {
        f.take(k).filter(|v| *v != "null")
    }
    fn value(f: &mut RecordText, k: &str) -> Option<Value> {
        f.take(k)
            .and_then(|v| serde_json::from_str::<Value>(v).ok())
            .filter(|v| !v.is_null())
    }
    fn set<'a>(v: Option<Result<RawText<'a>, Value>>, raw: &mut Option<RawText<'a>>, val: &mut Option<Value>) {
        (*raw, *val) = match v {
            Some(Ok(r)) => (Some(r), None),
            Some(Err(x)) => (None, Some(x)),
            None => (None, None),
        };
    }
    // A second record's sides replace the first's: a sink only for one record.
    let mut sink = sink.filter(|_| raw.len() == 1);
    for bytes in raw {
        let mut f = match RecordText::skim(bytes, sink.as_deref_mut()) {
            Some(f) => f,
            // What the sink was given is dropped: the export starts the event again.
            None => RecordText::serde(bytes)?,
        };
        out.taken = f.taken;
        let ty = f.ty.take().unwrap_or_default();
        let p = &mut out.payload;
        match &*ty {
            "LLM_CALL" | "TOOL_CALL" => {
                let (i, o) = if ty == "LLM_CALL" {
                    ("prompt", "response")
                } else {
                    ("args", "result")
                };
                if !f.taken[0] {
                    set(part(&mut f, i), &mut out.input, &mut p.input);
                }
                if !f.taken[1] {
                    set(part(&mut f, o), &mut out.output, &mut p.output);
                }
                p.error = value(&mut f, "error").as_ref().and_then(ErrorInfo::from_value);
                if ty == "LLM_CALL" {
                    for k in ["usage", "provider", "model", "temperature", "stop_reason"] {
                        if let Some(v) = text(&mut f, k) {
                            out.extra.push((k, v));
                        }
                    }
                }
            }
            "STATE_UPDATE" => {
                if !f.taken[1] {
                    set(part(&mut f, "state"), &mut out.output, &mut p.output);
                }
                if let Some(d) = text(&mut f, "diff") {
                    out.extra.push(("diff", d));
                }
            }
            _ => return None,
        }
        // An empty meta object is left out, as `decode_payload` leaves it.
        let empty = |m: &str| m.strip_prefix('{').is_some_and(|r| r.trim_start().starts_with('}'));
        if let Some(m) = f.meta.filter(|m| *m != "null" && !empty(m)) {
            out.extra.push(("meta", m));
        }
    }
    if ev.kind == EventKind::Error && out.payload.error.is_none() {
        out.payload.error = Some(ErrorInfo {
            message: "error".into(),
            ..Default::default()
        });
    }
    Some(out)
}

/// Move a present, non-null field out of `v` (what `field` reads, without the copy).
fn take_field(v: &mut Value, key: &str) -> Option<Value> {
    v.get_mut(key).filter(|x| !x.is_null()).map(Value::take)
}

fn fill_payload(out: &mut Payload, ty: &str, mut p: Value, second: bool) {
    // Each key is read once, so taking it leaves nothing another branch needs.
    let mut take = |k: &str| take_field(&mut p, k);
    match ty {
        "LLM_CALL" => {
            out.input = take("prompt").map(decode_embedded_owned);
            out.output = take("response").map(decode_embedded_owned);
            out.error = take("error").as_ref().and_then(ErrorInfo::from_value);
            for k in ["usage", "provider", "model", "temperature", "stop_reason"] {
                if let Some(v) = take(k) {
                    out.extra.push((k.into(), v));
                }
            }
        }
        "TOOL_CALL" => {
            out.input = take("args").map(decode_embedded_owned);
            out.output = take("result").map(decode_embedded_owned);
            out.error = take("error").as_ref().and_then(ErrorInfo::from_value);
        }
        "ERROR" => {
            out.error = ErrorInfo::from_value(&p);
        }
        "STATE_UPDATE" => {
            out.output = take("state").map(decode_embedded_owned);
            if let Some(d) = take("diff") {
                out.extra.push(("diff".into(), d));
            }
        }
        "RUN_END" if second => {
            out.output = Some(p);
        }
        _ => {
            if second {
                out.output = Some(p);
            } else {
                out.input = Some(p);
            }
        }
    }
}

/// (run.json if this is a run directory, events file).
pub(crate) fn locate(path: &Path) -> (Option<PathBuf>, PathBuf) {
    if path.is_dir() {
        (Some(path.join(RUN)), path.join(EVENTS))
    } else if path.file_name().is_some_and(|n| n == RUN) {
        let dir = path.parent().unwrap_or(Path::new("."));
        (Some(path.to_path_buf()), dir.join(EVENTS))
    } else {
        let dir = path.parent().unwrap_or(Path::new("."));
        let rj = dir.join(RUN);
        (rj.is_file().then_some(rj), path.to_path_buf())
    }
}

/// The event envelope. `P` is how much of the payload is read with it: its index fields on
/// the fast path, or nothing but its raw text for lines whose payload does not fit the index.
#[derive(Deserialize, Debug, PartialEq)]
pub(crate) struct Envelope<'a, P> {
    #[serde(borrow, default)]
    event_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    run_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    parent_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    event_type: Cow<'a, str>,
    #[serde(borrow, default)]
    ts: Option<Raw<'a>>,
    #[serde(borrow, default)]
    duration_ms: Option<Raw<'a>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(default = "none")]
    payload: Option<P>,
    /// `ts` and `duration_ms` read in the parallel half: number and time parsing are a good
    /// share of the in-order work otherwise.
    #[serde(skip)]
    start: Option<i64>,
    #[serde(skip)]
    duration: Option<i64>,
    /// Nested deeper than serde_json decodes (the envelope read skipped it): said at load.
    #[serde(skip)]
    too_deep: bool,
}

fn none<P>() -> Option<P> {
    None
}

/// Envelope and payload index in one pass (the fast path).
pub(crate) type FastEnvelope<'a> = Envelope<'a, PayloadIndex<'a>>;

impl<'a, P> Envelope<'a, P> {
    fn blank() -> Self {
        Envelope {
            event_id: None,
            run_id: None,
            parent_id: None,
            event_type: Cow::Borrowed(""),
            ts: None,
            duration_ms: None,
            name: None,
            payload: None,
            start: None,
            duration: None,
            too_deep: false,
        }
    }

    fn with_payload<Q>(self, payload: Option<Q>) -> Envelope<'a, Q> {
        Envelope {
            event_id: self.event_id,
            run_id: self.run_id,
            parent_id: self.parent_id,
            event_type: self.event_type,
            ts: self.ts,
            duration_ms: self.duration_ms,
            name: self.name,
            payload,
            start: None,
            duration: None,
            too_deep: false,
        }
    }

    /// Fill in the fields read from the raw ones (the pure part, done in parallel). In place:
    /// an envelope is a few hundred bytes and moving it showed in profiles.
    fn derive(&mut self) {
        self.start = raw_ts(self.ts);
        self.duration = raw_u64(self.duration_ms).map(|ms| (ms.min(i64::MAX as u64 / 1_000_000) as i64) * 1_000_000);
    }
}

/// The few payload fields the index needs; everything else is skipped unread.
#[derive(Deserialize, Default, Debug, PartialEq)]
pub(crate) struct PayloadIndex<'a> {
    #[serde(borrow, default)]
    tool_name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    status: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    run_name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    error_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    usage: Option<Raw<'a>>,
    #[serde(borrow, default)]
    error: Option<Raw<'a>>,
    /// `usage` read (in the parallel half).
    #[serde(skip)]
    tokens: Option<Usage>,
}

#[derive(Deserialize, Default, Debug, PartialEq)]
struct UsageIndex<'a> {
    #[serde(borrow, default)]
    prompt_tokens: Option<Raw<'a>>,
    #[serde(borrow, default)]
    completion_tokens: Option<Raw<'a>>,
    #[serde(borrow, default)]
    total_tokens: Option<Raw<'a>>,
    #[serde(borrow, default)]
    input_tokens: Option<Raw<'a>>,
    #[serde(borrow, default)]
    output_tokens: Option<Raw<'a>>,
}

fn raw_u64(r: Option<Raw>) -> Option<u64> {
    let s = r?.0;
    s.parse::<u64>().ok().or_else(|| {
        s.parse::<f64>()
            .ok()
            .filter(|f| *f >= 0.0 && f.is_finite())
            .map(|f| f as u64)
    })
}

fn raw_ts(r: Option<Raw>) -> Option<i64> {
    let s = r?.0;
    if let Some(inner) = s.strip_prefix('"').and_then(|x| x.strip_suffix('"'))
        && !inner.contains('\\')
    {
        return parse_timestamp_str(inner);
    }
    serde_json::from_str::<Value>(s).ok().as_ref().and_then(parse_timestamp)
}

/// The AgentDbg line parser: one trace per `run_id` (a single file may hold several runs).
pub struct Parser {
    /// run_id → index into `states` (and into the sink's traces).
    runs: rustc_hash::FxHashMap<String, usize>,
    states: Vec<RunState>,
    /// Metadata from run.json, applied to the trace of its run (or the only one).
    run_json: Option<PathBuf>,
    /// (length, mtime) of run.json when last read: it is replaced when the run ends.
    run_json_stamp: Option<(u64, Option<std::time::SystemTime>)>,
    events_file: u16,
}

#[derive(Default)]
struct RunState {
    root: Option<u32>,
    ended: bool,
    meta_status: Option<RunStatus>,
}

impl Parser {
    pub fn new(run_json: Option<&Path>) -> Parser {
        Parser {
            runs: Default::default(),
            states: Vec::new(),
            run_json: run_json.map(Path::to_path_buf),
            run_json_stamp: None,
            events_file: 0,
        }
    }

    /// Read run.json (it may be missing while a run starts, or be replaced under us).
    pub fn read_run_json(&mut self, path: &Path, sink: &mut Sink) {
        if !path.is_file() {
            return;
        }
        let v = match read_json_file(path, 16 << 20) {
            Ok(v) => v,
            Err(e) => {
                sink.warning(None, format!("run.json: {e}"));
                return;
            }
        };
        let run_id = v.get("run_id").and_then(Value::as_str).unwrap_or("").to_string();
        let key = if run_id.is_empty() {
            self.only_run().unwrap_or_default()
        } else {
            run_id.clone()
        };
        let idx = self.trace_for(&key, sink);
        let status = RunStatus::parse(v.get("status").and_then(Value::as_str).unwrap_or(""));
        let t = &mut sink.traces[idx];
        if let Some(n) = v.get("run_name").and_then(Value::as_str) {
            t.meta.name = Some(n.to_string());
        }
        t.meta.start = v.get("started_at").and_then(parse_timestamp).or(t.meta.start);
        t.meta.end = v.get("ended_at").and_then(parse_timestamp).or(t.meta.end);
        if let Some(sv) = v.get("spec_version").and_then(Value::as_str)
            && sv != "0.1"
        {
            t.diagnostics.push(Diagnostic::warning(
                path,
                None,
                format!("spec_version {sv:?}: read as 0.1"),
            ));
        }
        if let Some(c) = v.get("counts") {
            t.meta.attributes.retain(|(k, _)| k != "counts");
            t.meta.attributes.push(("counts".into(), c.clone()));
        }
        self.states[idx].meta_status = Some(status);
    }

    fn only_run(&self) -> Option<String> {
        (self.runs.len() == 1)
            .then(|| self.runs.keys().next().cloned())
            .flatten()
    }

    fn trace_for(&mut self, run_id: &str, sink: &mut Sink) -> usize {
        if let Some(&i) = self.runs.get(run_id) {
            sink.touch(i);
            return i;
        }
        // Events that name no run join the first run there is.
        if run_id.is_empty() && !self.states.is_empty() {
            sink.touch(0);
            return 0;
        }
        let source = match &self.run_json {
            Some(rj) => rj.parent().map(Path::to_path_buf).unwrap_or_default(),
            None => sink.path.clone(),
        };
        let mut t = Trace::new(RunMeta {
            id: if run_id.is_empty() {
                stem(&source)
            } else {
                run_id.to_string()
            },
            format: "agentdbg",
            source,
            status: RunStatus::Unknown,
            ..Default::default()
        });
        self.events_file = t.add_file(sink.path.clone());
        let idx = sink.push_trace(t);
        debug_assert_eq!(idx, self.states.len(), "this parser makes every trace of its sink");
        self.runs.insert(run_id.to_string(), idx);
        self.states.push(RunState::default());
        idx
    }
}

/// The pure half of reading a line (the engine's skim): the skimmer reads nearly every line;
/// what it is unsure of, serde_json reads (same result, or None and the slow path reports why).
fn parse_fast_into<'a>(line: &'a [u8], slot: &mut Option<FastEnvelope<'a>>) {
    if skim_into(line, slot.insert(FastEnvelope::blank())).is_none() {
        *slot = serde_json::from_slice::<FastEnvelope>(line).ok();
        // The skimmer leaves deep lines to serde, which skips what it does not read at any depth.
        if let Some(e) = slot.as_mut() {
            e.too_deep = super::nested_too_deep(line);
        }
    }
    if let Some(e) = slot {
        if let Some(p) = e.payload.as_mut() {
            p.tokens = read_usage(p.usage);
        }
        e.derive();
    }
}

fn too_deep_message() -> String {
    format!(
        "payload nested deeper than {} levels: the event loads, its payload cannot be decoded (the raw record can be shown)",
        super::JSON_DEPTH_LIMIT
    )
}

fn read_usage(raw: Option<Raw>) -> Option<Usage> {
    let raw = raw?.0;
    let u = skim_usage(raw.as_bytes()).or_else(|| serde_json::from_str::<UsageIndex>(raw).ok())?;
    Some(Usage {
        input: raw_u64(u.prompt_tokens).or(raw_u64(u.input_tokens)),
        output: raw_u64(u.completion_tokens).or(raw_u64(u.output_tokens)),
        total: raw_u64(u.total_tokens),
        ..Default::default()
    })
}

/// The envelope as serde_json would read it into `FastEnvelope`, by the skimmer; None when
/// the skimmer leaves the line to serde_json (see `skim`'s contract).
#[cfg(test)]
fn skim(line: &[u8]) -> Option<FastEnvelope<'_>> {
    let mut e = FastEnvelope::blank();
    skim_into(line, &mut e).map(|()| e)
}

/// `skim` into a blank envelope; on None, what it holds is partial.
fn skim_into<'a>(line: &'a [u8], e: &mut FastEnvelope<'a>) -> Option<()> {
    let mut k = Skim::new(line);
    let mut seen = Seen::default();
    k.object(|k, key| {
        match key {
            b"event_id" => (seen.first(0)?, e.event_id = k.opt_cow()?),
            b"run_id" => (seen.first(1)?, e.run_id = k.opt_cow()?),
            b"parent_id" => (seen.first(2)?, e.parent_id = k.opt_cow()?),
            b"event_type" => (seen.first(3)?, e.event_type = Cow::Borrowed(k.opt_str()??)),
            b"ts" => (seen.first(4)?, e.ts = k.raw()?),
            b"duration_ms" => (seen.first(5)?, e.duration_ms = k.raw()?),
            b"name" => (seen.first(6)?, e.name = k.opt_cow()?),
            b"payload" => (
                seen.first(7)?,
                if k.is_null_next() {
                    k.skip()?
                } else {
                    skim_payload(k, e.payload.insert(PayloadIndex::default()))?
                },
            ),
            _ => ((), k.skip()?),
        };
        Some(())
    })?;
    // event_type is the one field without a default.
    (k.at_end() && seen.has(3)).then_some(())
}

/// `UsageIndex` as serde_json reads it, by the skimmer (None: left to serde_json).
fn skim_usage(raw: &[u8]) -> Option<UsageIndex<'_>> {
    let mut k = Skim::new(raw);
    let mut u = UsageIndex::default();
    let mut seen = Seen::default();
    k.object(|k, key| {
        match key {
            b"prompt_tokens" => (seen.first(0)?, u.prompt_tokens = k.raw()?),
            b"completion_tokens" => (seen.first(1)?, u.completion_tokens = k.raw()?),
            b"total_tokens" => (seen.first(2)?, u.total_tokens = k.raw()?),
            b"input_tokens" => (seen.first(3)?, u.input_tokens = k.raw()?),
            b"output_tokens" => (seen.first(4)?, u.output_tokens = k.raw()?),
            _ => ((), k.skip()?),
        };
        Some(())
    })?;
    k.at_end().then_some(u)
}

fn skim_payload<'a>(k: &mut Skim<'a>, p: &mut PayloadIndex<'a>) -> Option<()> {
    let mut seen = Seen::default();
    k.object(|k, key| {
        match key {
            b"tool_name" => (seen.first(0)?, p.tool_name = k.opt_cow()?),
            b"model" => (seen.first(1)?, p.model = k.opt_cow()?),
            b"status" => (seen.first(2)?, p.status = k.opt_cow()?),
            b"run_name" => (seen.first(3)?, p.run_name = k.opt_cow()?),
            b"error_type" => (seen.first(4)?, p.error_type = k.opt_cow()?),
            b"usage" => (seen.first(5)?, p.usage = k.raw()?),
            b"error" => (seen.first(6)?, p.error = k.raw()?),
            _ => ((), k.skip()?),
        };
        Some(())
    })?;
    Some(())
}

impl LineParser for Parser {
    fn line(&mut self, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        engine::one(self, line, loc, sink);
    }

    fn lines(&mut self, batch: &[(&[u8], LineLoc)], sink: &mut Sink) {
        engine::batch(self, batch, sink);
    }

    fn holds_itself(&self) -> bool {
        true
    }

    fn refresh(&mut self, sink: &mut Sink) {
        let Some(rj) = self.run_json.clone() else { return };
        let stamp = std::fs::metadata(&rj).ok().map(|m| (m.len(), m.modified().ok()));
        if stamp.is_none() || stamp == self.run_json_stamp {
            return;
        }
        self.run_json_stamp = stamp;
        self.read_run_json(&rj, sink);
    }

    /// Status and counts from what the events say; run.json's status is provisional while
    /// it says running (DESIGN §6).
    fn settle(&mut self, sink: &mut Sink) {
        for (i, rs) in self.states.iter().enumerate() {
            let t = &mut sink.traces[i];
            let from_events = match rs.root {
                Some(r) if rs.ended => match t.events[r as usize].status {
                    Status::Error => RunStatus::Error,
                    _ => RunStatus::Ok,
                },
                _ => RunStatus::Running,
            };
            // run.json is rewritten at the end, RUN_END is appended: the events have the last word.
            t.meta.status = match rs.meta_status {
                _ if rs.ended => from_events,
                Some(s @ (RunStatus::Ok | RunStatus::Error)) => s,
                _ => from_events,
            };
            if let Some(r) = rs.root {
                let e = &t.events[r as usize];
                t.meta.start = t.meta.start.or(e.start.into());
                if rs.ended {
                    t.meta.end = t.meta.end.or(e.end());
                }
            }
        }
    }
}

impl Records for Parser {
    type Rec<'a> = FastEnvelope<'a>;

    fn skim<'a>(line: &'a [u8], slot: &mut Option<FastEnvelope<'a>>) {
        parse_fast_into(line, slot);
    }

    fn apply(&mut self, rec: Option<&FastEnvelope<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        Parser::apply(self, rec, line, loc, sink);
    }

    fn prefetch(&self, ahead: &FastEnvelope<'_>, sink: &Sink) {
        if let Some(t) = sink.current.and_then(|i| sink.traces.get(i)) {
            // Its own slot (to add it) and its parent's (to find it).
            for id in [&ahead.event_id, &ahead.parent_id].into_iter().flatten() {
                t.prefetch_id(id);
            }
        }
    }
}

impl Parser {
    /// The in-order half: add the event of one line (read again slowly, with a diagnostic,
    /// when the fast parse failed).
    fn apply(&mut self, fast: Option<&FastEnvelope<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink) {
        // One pass reads envelope and payload index; a payload of unexpected shape is read
        // again on its own so that the event still loads (with a diagnostic).
        let mut slow;
        let env: &FastEnvelope = match fast {
            Some(e) => e,
            None => {
                let Some(env) = sink.parse::<Envelope<Raw>>(line, loc) else {
                    return;
                };
                if env.payload.is_some_and(|raw| super::nested_too_deep(raw.0.as_bytes())) {
                    sink.error(loc.line, too_deep_message());
                }
                let payload = match env.payload {
                    Some(raw) => match serde_json::from_str::<PayloadIndex>(raw.0) {
                        Ok(mut p) => {
                            p.tokens = read_usage(p.usage);
                            Some(p)
                        }
                        Err(e) => {
                            sink.error(loc.line, format!("payload: {}", super::jsonl::json_error(&e)));
                            None
                        }
                    },
                    _ => None,
                };
                slow = env.with_payload(payload);
                slow.derive();
                &slow
            }
        };
        if env.too_deep {
            sink.error(loc.line, too_deep_message());
        }
        let ti = self.trace_for(env.run_id.as_deref().unwrap_or(""), sink);
        let no_payload = PayloadIndex::default();
        let p = env.payload.as_ref().unwrap_or(&no_payload);
        let start = env.start;
        let duration = env.duration;
        let origin = loc.origin(self.events_file);
        let ok_or_error = |s: &Option<Cow<str>>| match s.as_deref() {
            Some("error") => Status::Error,
            Some(_) | None => Status::Ok,
        };
        let rs = &mut self.states[ti];
        let t = &mut sink.traces[ti];
        let env_name = env.name.as_deref().unwrap_or("");
        let parent = match env.parent_id.as_deref() {
            Some(pid) if !pid.is_empty() => Parent::Id(pid),
            _ => match rs.root {
                Some(r) if env.event_type != "RUN_START" => Parent::Index(r),
                _ => Parent::None,
            },
        };
        let mut ev = NewEvent {
            id: env.event_id.as_deref(),
            parent,
            start,
            duration,
            origin,
            payload: PayloadRef::Deferred,
            ..NewEvent::new(EventKind::Other, env_name)
        };
        match env.event_type.as_ref() {
            "RUN_START" => {
                if rs.root.is_some() {
                    t.diagnostics.push(Diagnostic::warning(
                        sink.path.clone(),
                        Some(loc.line),
                        "a second RUN_START in the same run",
                    ));
                }
                ev.kind = EventKind::Run;
                ev.name = p.run_name.as_deref().filter(|s| !s.is_empty()).unwrap_or(env_name);
                ev.status = Status::Pending;
                let idx = t.add(ev);
                if rs.root.is_none() {
                    rs.root = Some(idx);
                    if t.meta.name.is_none() && !t.name(idx).is_empty() {
                        t.meta.name = Some(t.name(idx).to_string());
                    }
                    // Events written before RUN_START with no parent join the run now.
                    let early: Vec<u32> = t.roots.iter().copied().filter(|&r| r != idx).collect();
                    for e in early {
                        if t.events[e as usize].source_id.is_empty() || t.events[e as usize].parent == NO_PARENT {
                            t.set_parent(e, idx);
                        }
                    }
                }
            }
            "RUN_END" => match rs.root {
                Some(r) if !rs.ended => {
                    rs.ended = true;
                    let e = t.event_mut(r);
                    e.status = ok_or_error(&p.status);
                    e.origin2 = Some(Box::new(origin));
                    if let (Some(s0), Some(s1)) = (e.start.get(), start) {
                        e.duration = Some(s1.saturating_sub(s0).max(0)).into();
                    }
                }
                _ => {
                    rs.ended = true;
                    ev.kind = EventKind::Run;
                    ev.status = ok_or_error(&p.status);
                    t.add(ev);
                }
            },
            "LLM_CALL" => {
                ev.kind = EventKind::LlmCall;
                ev.model = p.model.as_deref().filter(|m| !m.is_empty());
                if env_name.is_empty() {
                    ev.name = ev.model.unwrap_or("llm");
                }
                ev.status = if p.error.is_some() {
                    Status::Error
                } else {
                    ok_or_error(&p.status)
                };
                ev.usage = p.tokens;
                t.add(ev);
            }
            "TOOL_CALL" => {
                ev.kind = EventKind::ToolCall;
                if let Some(n) = p.tool_name.as_deref().filter(|s| !s.is_empty()) {
                    ev.name = n;
                }
                ev.status = if p.error.is_some() {
                    Status::Error
                } else {
                    ok_or_error(&p.status)
                };
                t.add(ev);
            }
            "STATE_UPDATE" => {
                ev.kind = EventKind::State;
                if env_name.is_empty() {
                    ev.name = "state";
                }
                ev.status = Status::Ok;
                t.add(ev);
            }
            "ERROR" => {
                ev.kind = EventKind::Error;
                if let Some(n) = p.error_type.as_deref().filter(|s| !s.is_empty()) {
                    ev.name = n;
                }
                ev.status = Status::Error;
                t.add(ev);
            }
            "LOOP_WARNING" => {
                ev.kind = EventKind::LoopWarning;
                ev.status = Status::Ok;
                t.add(ev);
            }
            other => {
                // Additive event types are allowed by the spec: shown generically, and
                // counted as a type this reader does not know (formats/mod.rs).
                t.skipped.add(other);
                let name = format!("{other} {env_name}");
                t.add(NewEvent {
                    name: name.trim(),
                    ..ev
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    /// An event of a type the spec does not name yet (it allows additive types), in the run
    /// of the line it goes before, sometimes with text.
    fn unknown_record(rng: &mut crate::formats::testing::Rng, near: &Value) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("spec_version".into(), Value::String("0.1".into()));
        m.insert("event_id".into(), Value::String(format!("drift-{}", rng.next())));
        for k in ["run_id", "ts"] {
            if let Some(x) = near.get(k) {
                m.insert(k.into(), x.clone());
            }
        }
        m.insert("parent_id".into(), Value::Null);
        m.insert("event_type".into(), Value::String(rng.type_name().to_uppercase()));
        m.insert("name".into(), Value::String("drift".into()));
        let mut payload = serde_json::Map::new();
        if let Some(text) = rng.maybe_text() {
            payload.insert("message".into(), Value::String(text));
        }
        m.insert("payload".into(), Value::Object(payload));
        m.insert("meta".into(), serde_json::json!({}));
        Value::Object(m)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on our AgentDbg runs.
        #[test]
        fn drift_is_skipped_quietly(seed in any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "agentdbg",
                &[
                    "sample-traces/runs/agentdbg-refund-ok",
                    "sample-traces/runs/agentdbg-invoice-error",
                    "sample-traces/runs/agentdbg-research-running",
                    "tests/fixtures/diff/agentdbg/baseline",
                ],
            );
            crate::formats::testing::drift_check(&sources, seed, &|f, rng| {
                if f.file_name().is_some_and(|x| x == "events.jsonl") {
                    crate::formats::testing::drift_jsonl(f, rng, &unknown_record)
                } else {
                    0
                }
            });
        }
    }

    fn raw_json_value() -> impl Strategy<Value = Value> {
        let text = prop_oneof![
            "[a-z \"\\\\/{}\\[\\],:]{0,12}",
            Just("\u{202e}\u{2028}\u{85}\u{1b}[2J\t\n é 🚀".to_string()),
            Just("{\"embedded\": [1, \"x\"]}".to_string()),
            Just("\"quoted\"".to_string()),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            text.prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-z\"\\\\]{1,4}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The export's fast path (values left as their text) decodes to what
        /// `decode_payload` gives, whatever the values and the record's spacing.
        #[test]
        fn raw_payloads_agree_with_decoded_ones(
            ty in prop_oneof![Just("TOOL_CALL"), Just("LLM_CALL"), Just("STATE_UPDATE"), Just("RUN_END")],
            fields in prop::collection::vec((
                prop_oneof![Just("args"), Just("result"), Just("prompt"), Just("response"), Just("state"),
                    Just("diff"), Just("error"), Just("usage"), Just("model"), Just("other")],
                raw_json_value()), 0..6),
            meta in raw_json_value(),
            pretty in any::<bool>(),
            second in any::<bool>(),
        ) {
            let payload = Value::Object(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
            let rec = serde_json::json!({"event_type": ty, "payload": payload, "meta": meta});
            let line = if pretty { serde_json::to_string_pretty(&rec) } else { serde_json::to_string(&rec) }.unwrap();
            let mut t = Trace::new(RunMeta::default());
            t.add(NewEvent::new(EventKind::ToolCall, "t"));
            let ev = t.event(0).clone();
            let raw: Vec<&[u8]> = if second { vec![line.as_bytes(), line.as_bytes()] } else { vec![line.as_bytes()] };
            let slow = AgentDbg.decode_payload(&t, &ev, &raw);
            match decode_raw(&ev, &raw, None) {
                None => prop_assert!(!matches!(ty, "TOOL_CALL" | "LLM_CALL" | "STATE_UPDATE"), "{line}"),
                Some(rp) => {
                    let text = |r: Option<crate::formats::RawText>| r.map(|r| r.value().unwrap());
                    let mut fast = rp.payload;
                    if rp.input.is_some() {
                        prop_assert!(fast.input.is_none());
                        fast.input = text(rp.input);
                    }
                    if rp.output.is_some() {
                        prop_assert!(fast.output.is_none());
                        fast.output = text(rp.output);
                    }
                    prop_assert_eq!(fast.input, slow.input, "{}", line);
                    prop_assert_eq!(fast.output, slow.output, "{}", line);
                    prop_assert_eq!(fast.error, slow.error, "{}", line);
                    for (k, v) in rp.extra {
                        prop_assert!(v != "null");
                        fast.extra.push((k.to_string(), serde_json::from_str(v).unwrap()));
                    }
                    prop_assert_eq!(fast.extra, slow.extra, "{}", line);
                }
            }
        }
    }

    /// The skimmer's contract: what it reads, serde_json reads the same. Ok(true): skimmed.
    fn skim_agrees(line: &[u8]) -> Result<bool, String> {
        let text = || String::from_utf8_lossy(line).into_owned();
        let Some(fast) = skim(line) else { return Ok(false) };
        let slow = serde_json::from_slice::<FastEnvelope>(line)
            .map_err(|e| format!("skimmed a line serde rejects ({e}): {}", text()))?;
        if fast != slow {
            return Err(format!("skim {fast:?} != serde {slow:?}: {}", text()));
        }
        if let Some(u) = fast.payload.as_ref().and_then(|p| p.usage)
            && let Some(by_skim) = skim_usage(u.0.as_bytes())
        {
            let by_serde = serde_json::from_str::<UsageIndex>(u.0).ok();
            if Some(&by_skim) != by_serde.as_ref() {
                return Err(format!("usage: skim {by_skim:?} != serde {by_serde:?}: {}", text()));
            }
        }
        Ok(true)
    }

    fn scalar() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            Just("false".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|f| serde_json::to_string(&f).unwrap()),
            "[0-9eE.+-]{1,6}",
            ".{0,12}".prop_map(|s| serde_json::to_string(&s).unwrap()),
            "[a-z\\\\\"\u{1}\t é✓]{0,90}".prop_map(|s| format!("\"{s}\"")),
            Just("\"2026-02-15T20:31:05.123Z\"".to_string()),
        ]
    }

    fn value() -> impl Strategy<Value = String> {
        scalar().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec((key(), inner), 0..4).prop_map(|kv| {
                    let f: Vec<String> = kv.into_iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
                    format!("{{{}}}", f.join(", "))
                }),
            ]
        })
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "event_id",
                "run_id",
                "parent_id",
                "event_type",
                "ts",
                "duration_ms",
                "name",
                "payload",
                "tool_name",
                "model",
                "status",
                "run_name",
                "error_type",
                "usage",
                "error",
                "prompt_tokens",
                "total_tokens",
                "meta",
                "event\\u005fid",
            ])
            .prop_map(str::to_string),
            "[a-z_]{1,8}",
        ]
    }

    /// Envelope-shaped records: known and unknown keys (repeated sometimes), values of every
    /// type, payloads of every shape; then a byte or two changed.
    fn record() -> impl Strategy<Value = Vec<u8>> {
        let field = (
            key(),
            prop_oneof![3 => value(), 1 => prop::collection::vec((key(), value()), 0..6).prop_map(|kv| {
                let f: Vec<String> = kv.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                format!("{{{}}}", f.join(","))
            })],
        );
        let base = (
            prop::collection::vec(field, 0..10),
            prop::sample::select(vec!["LLM_CALL", "TOOL_CALL", "ERROR", "X"]),
        )
            .prop_map(|(fields, ty)| {
                let mut f: Vec<String> = fields.into_iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
                f.push(format!("\"event_type\": \"{ty}\""));
                format!("{{{}}}", f.join(", ")).into_bytes()
            });
        crate::formats::testing::with_byte_edits(base, 2)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn skimmer_never_disagrees_with_serde(line in record()) {
            skim_agrees(&line).map_err(TestCaseError::fail)?;
        }

        #[test]
        fn skimmer_on_arbitrary_bytes(line in prop::collection::vec(any::<u8>(), 0..300)) {
            skim_agrees(&line).map_err(TestCaseError::fail)?;
        }
    }

    #[test]
    fn the_differential_test_is_not_vacuous() {
        // Enough generated records skim (and so are compared) for the property to mean something.
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let mut skimmed = 0;
        for _ in 0..1000 {
            let line = record().new_tree(&mut runner).unwrap().current();
            skimmed += skim_agrees(&line).unwrap() as u32;
        }
        assert!(skimmed > 100, "only {skimmed} of 1000 generated records skimmed");
    }

    #[test]
    fn skimmer_reads_the_common_lines() {
        // The fast path must be the path: every line of the AgentDbg samples skims.
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/runs");
        let mut lines = 0;
        for run in std::fs::read_dir(&dir).unwrap().flatten() {
            let Ok(text) = std::fs::read(run.path().join(EVENTS)) else {
                continue;
            };
            for l in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                lines += 1;
                assert_eq!(skim_agrees(l), Ok(true), "{}", String::from_utf8_lossy(l));
            }
        }
        assert!(lines >= 10, "{lines}");
    }

    fn ev(id: &str, parent: Option<&str>, ty: &str, name: &str, payload: &str, ts_ms: u64) -> String {
        let p = parent.map(|p| format!("\"{p}\"")).unwrap_or("null".into());
        format!(
            "{{\"spec_version\":\"0.1\",\"event_id\":\"{id}\",\"run_id\":\"r1\",\"parent_id\":{p},\"event_type\":\"{ty}\",\"ts\":\"2026-02-15T20:31:{:02}.{:03}Z\",\"duration_ms\":5,\"name\":\"{name}\",\"payload\":{payload},\"meta\":{{}}}}\n",
            ts_ms / 1000,
            ts_ms % 1000
        )
    }

    fn write_run(dir: &Path, status: &str, lines: &[String]) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(
            dir.join("run.json"),
            format!(
                "{{\"spec_version\":\"0.1\",\"run_id\":\"r1\",\"run_name\":\"demo\",\"started_at\":\"2026-02-15T20:31:00.000Z\",\"ended_at\":null,\"duration_ms\":null,\"status\":\"{status}\",\"counts\":{{\"llm_calls\":0,\"tool_calls\":0,\"errors\":0,\"loop_warnings\":0}},\"last_event_ts\":null}}"
            ),
        )
        .unwrap();
        let mut f = std::fs::File::create(dir.join("events.jsonl")).unwrap();
        for l in lines {
            f.write_all(l.as_bytes()).unwrap();
        }
    }

    fn all_types() -> Vec<String> {
        vec![
            ev(
                "s",
                None,
                "RUN_START",
                "demo",
                r#"{"run_name":"demo","argv":["a.py"]}"#,
                0,
            ),
            ev(
                "l1",
                None,
                "LLM_CALL",
                "gpt-4o",
                r#"{"model":"gpt-4o","prompt":"hi","response":"yo","usage":{"prompt_tokens":"__REDACTED__","completion_tokens":7,"total_tokens":null},"status":"ok","error":null}"#,
                100,
            ),
            ev(
                "t1",
                Some("l1"),
                "TOOL_CALL",
                "search",
                r#"{"tool_name":"search","args":"{\"q\":1}","result":{"n":2},"status":"ok","error":null}"#,
                200,
            ),
            ev(
                "t2",
                None,
                "TOOL_CALL",
                "write",
                r#"{"tool_name":"write","args":{},"result":null,"status":"error","error":{"error_type":"PermissionError","message":"denied","stack":"tb"}}"#,
                300,
            ),
            ev(
                "st",
                None,
                "STATE_UPDATE",
                "state",
                r#"{"state":{"a":1},"diff":{"a":[0,1]}}"#,
                400,
            ),
            ev(
                "er",
                None,
                "ERROR",
                "ValueError",
                r#"{"error_type":"ValueError","message":"bad","stack":"x"}"#,
                500,
            ),
            ev(
                "lw",
                None,
                "LOOP_WARNING",
                "loop",
                r#"{"pattern":"A -> B","repetitions":3,"window_size":6,"evidence_event_ids":["l1"]}"#,
                600,
            ),
            ev(
                "e",
                None,
                "RUN_END",
                "demo",
                r#"{"status":"error","summary":{"llm_calls":1}}"#,
                700,
            ),
        ]
    }

    #[test]
    fn all_seven_event_types_load_into_one_tree() {
        let d = tempfile::tempdir().unwrap();
        write_run(d.path(), "error", &all_types());
        let l = AgentDbg.load(d.path()).unwrap();
        assert_eq!(l.traces.len(), 1);
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.id, "r1");
        assert_eq!(t.meta.name.as_deref(), Some("demo"));
        assert_eq!(t.meta.status, RunStatus::Error);
        let c = t.counts();
        assert_eq!((c.events, c.tool_calls, c.llm_calls), (7, 2, 1));
        assert_eq!(c.errors, 2, "failed tool and ERROR event; the run's status is apart");
        assert_eq!(c.tokens, 7, "redacted prompt tokens count as unknown");
        let root = t.roots[0];
        assert_eq!(t.event(root).kind, EventKind::Run);
        assert_eq!(t.event(root).duration, Some(700_000_000));
        let walk: Vec<_> = t.walk().iter().map(|&(i, d)| (t.name(i).to_string(), d)).collect();
        assert_eq!(walk[1], ("gpt-4o".into(), 1));
        assert_eq!(walk[2], ("search".into(), 2));
        // Payloads are read from disk when asked for.
        let search = t.find("t1").unwrap();
        let p = super::super::payload(t, t.event(search));
        assert_eq!(
            p.input,
            Some(serde_json::json!({"q": 1})),
            "a JSON string argument is shown as JSON"
        );
        assert_eq!(p.output, Some(serde_json::json!({"n": 2})));
        let w = t.find("t2").unwrap();
        let p = super::super::payload(t, t.event(w));
        assert_eq!(p.error.unwrap().kind.as_deref(), Some("PermissionError"));
        let r = super::super::payload(t, t.event(root));
        assert!(
            r.input.is_some() && r.output.is_some(),
            "RUN_START and RUN_END both shown"
        );
    }

    #[test]
    fn a_running_run_counts_from_its_events() {
        let d = tempfile::tempdir().unwrap();
        let lines = all_types();
        write_run(d.path(), "running", &lines[..4]);
        let l = AgentDbg.load(d.path()).unwrap();
        let t = &l.traces[0];
        assert_eq!(t.meta.status, RunStatus::Running);
        assert_eq!(t.counts().tool_calls, 2);
        let s = crate::formats::testing::summaries(&AgentDbg, d.path()).unwrap();
        assert_eq!(s[0].tool_calls, Some(2));
        assert_eq!(s[0].status, RunStatus::Running);
    }

    #[test]
    fn a_bad_line_is_a_diagnostic_and_the_rest_loads() {
        let d = tempfile::tempdir().unwrap();
        let mut lines = all_types();
        lines.insert(2, "{not json\n".into());
        lines.insert(3, "{\"event_type\": 5}\n".into());
        write_run(d.path(), "ok", &lines);
        let l = AgentDbg.load(d.path()).unwrap();
        let t = &l.traces[0];
        assert_eq!(t.counts().tool_calls, 2);
        let lines: Vec<_> = t.diagnostics.iter().map(|d| d.line).collect();
        assert_eq!(lines, vec![Some(3), Some(4)]);
        assert!(
            t.diagnostics[0].message.contains("invalid JSON"),
            "{}",
            t.diagnostics[0].message
        );
    }

    #[test]
    fn children_written_before_their_parent_attach_to_it() {
        let d = tempfile::tempdir().unwrap();
        let lines = vec![
            ev("s", None, "RUN_START", "demo", "{}", 0),
            ev("c", Some("p"), "LLM_CALL", "m", "{}", 10),
            ev("p", None, "TOOL_CALL", "delegate_task", "{}", 20),
            ev("e", None, "RUN_END", "demo", r#"{"status":"ok"}"#, 30),
        ];
        write_run(d.path(), "ok", &lines);
        let t = &AgentDbg.load(d.path()).unwrap().traces[0];
        let p = t.find("p").unwrap();
        let c = t.find("c").unwrap();
        assert_eq!(t.event(c).parent, p);
        assert_eq!(t.roots.len(), 1);
        assert_eq!(t.meta.status, RunStatus::Ok);
    }

    #[test]
    fn following_a_live_run_sees_appends_partial_lines_and_truncation() {
        let d = tempfile::tempdir().unwrap();
        let lines = all_types();
        write_run(d.path(), "running", &lines[..2]);
        let mut f = AgentDbg.follow(d.path()).unwrap();
        f.poll().unwrap();
        assert_eq!(f.sink.traces[0].len(), 2);
        assert_eq!(f.sink.traces[0].meta.status, RunStatus::Running);
        // An event written in two parts: the first half waits for its newline.
        let ev_path = d.path().join("events.jsonl");
        let (a, b) = lines[2].split_at(40);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&ev_path)
            .unwrap()
            .write_all(a.as_bytes())
            .unwrap();
        let p = f.poll().unwrap();
        assert_eq!(f.sink.traces[0].len(), 2);
        assert!(f.has_partial());
        assert!(p.touched.is_empty() || p.touched == vec![0]);
        let mut w = std::fs::OpenOptions::new().append(true).open(&ev_path).unwrap();
        w.write_all(b.as_bytes()).unwrap();
        for l in &lines[3..] {
            w.write_all(l.as_bytes()).unwrap();
        }
        drop(w);
        // run.json is replaced at the end of the run.
        let rj = std::fs::read_to_string(d.path().join("run.json"))
            .unwrap()
            .replace("running", "error");
        std::fs::write(d.path().join("run.json.tmp"), rj).unwrap();
        std::fs::rename(d.path().join("run.json.tmp"), d.path().join("run.json")).unwrap();
        let p = f.poll().unwrap();
        assert_eq!(p.touched, vec![0]);
        assert_eq!(f.sink.traces[0].len(), 7);
        assert_eq!(f.sink.traces[0].meta.status, RunStatus::Error);
        // Truncation: read again from the start.
        std::fs::write(&ev_path, &lines[0]).unwrap();
        let p = f.poll().unwrap();
        assert!(p.restarted);
        assert_eq!(f.sink.traces[0].len(), 1);
    }

    #[test]
    fn a_payload_of_unexpected_shape_still_loads_its_event() {
        let d = tempfile::tempdir().unwrap();
        let lines = vec![
            ev("s", None, "RUN_START", "demo", "{}", 0),
            ev(
                "t",
                None,
                "TOOL_CALL",
                "named-by-envelope",
                r#"{"tool_name": 5, "status": "ok"}"#,
                10,
            ),
        ];
        write_run(d.path(), "running", &lines);
        let t = &AgentDbg.load(d.path()).unwrap().traces[0];
        let i = t.find("t").unwrap();
        assert_eq!(t.event(i).kind, EventKind::ToolCall);
        assert_eq!(t.name(i), "named-by-envelope");
        assert_eq!(t.diagnostics.len(), 1);
        assert_eq!(t.diagnostics[0].line, Some(2));
        assert!(
            t.diagnostics[0].message.starts_with("payload:"),
            "{}",
            t.diagnostics[0].message
        );
    }

    #[test]
    fn parallel_batches_build_the_same_tree_as_one_line_at_a_time() {
        let d = tempfile::tempdir().unwrap();
        let mut lines = vec![ev("s", None, "RUN_START", "demo", "{}", 0)];
        for i in 0..1500u64 {
            let parent = format!("p{}", i / 10);
            // children are written before their parents, as sub-agents do
            lines.push(ev(
                &format!("c{i}"),
                Some(&parent),
                "TOOL_CALL",
                "t",
                r#"{"tool_name":"t","status":"ok"}"#,
                i,
            ));
            if i % 10 == 9 {
                lines.push(ev(
                    &parent,
                    None,
                    "LLM_CALL",
                    "m",
                    r#"{"model":"m","usage":{"total_tokens":2}}"#,
                    i,
                ));
            }
        }
        lines.push("{broken\n".into());
        write_run(d.path(), "running", &lines);
        let batched = AgentDbg.load(d.path()).unwrap();
        let mut p = Parser::new(Some(&d.path().join("run.json")));
        let events = d.path().join("events.jsonl");
        let mut sink = Sink::new(&events);
        p.refresh(&mut sink);
        let bytes = std::fs::read(&events).unwrap();
        let mut off = 0u64;
        for (n, l) in bytes.split(|&b| b == b'\n').enumerate() {
            if !l.is_empty() {
                let loc = LineLoc {
                    line: n as u64 + 1,
                    offset: off,
                    len: l.len(),
                };
                p.line(l, loc, &mut sink);
            }
            off += l.len() as u64 + 1;
        }
        p.flush(&mut sink);
        let single = sink.finish("x").unwrap();
        let (a, b) = (&batched.traces[0], &single.traces[0]);
        assert_eq!(a.counts(), b.counts());
        assert_eq!(a.counts().tool_calls, 1500);
        let shape = |t: &Trace| {
            t.walk()
                .iter()
                .map(|&(i, d)| (t.str(t.event(i).source_id).to_string(), d, t.event(i).origin))
                .collect::<Vec<_>>()
        };
        assert_eq!(shape(a), shape(b));
        assert_eq!(a.diagnostics, b.diagnostics);
        assert_eq!(a.diagnostics.len(), 1);
    }

    /// The decoder as first written (copying every value out of the parsed record): the
    /// oracle for the decoder that moves them.
    fn decode_by_copying(ev: &Event, raw: &[&[u8]]) -> Payload {
        use crate::formats::{decode_embedded, field};
        fn fill(out: &mut Payload, ty: &str, p: &Value, second: bool) {
            let take = |k: &str| field(p, k).map(decode_embedded);
            match ty {
                "LLM_CALL" => {
                    out.input = take("prompt");
                    out.output = take("response");
                    out.error = field(p, "error").and_then(ErrorInfo::from_value);
                    for k in ["usage", "provider", "model", "temperature", "stop_reason"] {
                        if let Some(v) = field(p, k) {
                            out.extra.push((k.into(), v.clone()));
                        }
                    }
                }
                "TOOL_CALL" => {
                    out.input = take("args");
                    out.output = take("result");
                    out.error = field(p, "error").and_then(ErrorInfo::from_value);
                }
                "ERROR" => out.error = ErrorInfo::from_value(p),
                "STATE_UPDATE" => {
                    out.output = take("state");
                    if let Some(d) = field(p, "diff") {
                        out.extra.push(("diff".into(), d.clone()));
                    }
                }
                "RUN_END" if second => out.output = Some(p.clone()),
                _ if second => out.output = Some(p.clone()),
                _ => out.input = Some(p.clone()),
            }
        }
        let mut out = Payload::default();
        for (i, bytes) in raw.iter().enumerate() {
            let v: Value = match serde_json::from_slice(bytes) {
                Ok(v) => v,
                Err(e) => {
                    out.error = Some(ErrorInfo::unreadable(&e));
                    return out;
                }
            };
            let p = v.get("payload").cloned().unwrap_or(Value::Null);
            let ty = v.get("event_type").and_then(Value::as_str).unwrap_or("");
            fill(&mut out, ty, &p, i > 0);
            if let Some(meta) = field(&v, "meta").filter(|m| m.as_object().is_none_or(|o| !o.is_empty())) {
                out.extra.push(("meta".into(), meta.clone()));
            }
        }
        if ev.kind == EventKind::Error && out.error.is_none() {
            out.error = Some(ErrorInfo {
                message: "error".into(),
                ..Default::default()
            });
        }
        out
    }

    #[test]
    fn decoding_moves_values_out_and_decodes_as_copying_did() {
        let records = [
            r#"{"event_type":"TOOL_CALL","payload":{"tool_name":"t","args":{"q":"x","limit":10},"result":"{\"rows\":[1,2]}","status":"ok","error":null},"meta":{}}"#,
            r#"{"event_type":"TOOL_CALL","payload":{"args":"  [1, 2]","result":"{not json","error":{"error_type":"Timeout","message":"slow","stack":"s"}},"meta":{"k":1}}"#,
            r#"{"event_type":"TOOL_CALL","payload":{"args":"\"quoted\"","result":"plain text","error":"boom"}}"#,
            r#"{"event_type":"TOOL_CALL","payload":{"args":null,"result":null,"error":false},"meta":null}"#,
            r#"{"event_type":"LLM_CALL","payload":{"model":"m","prompt":"hi","response":"{\"a\":1}","usage":{"total_tokens":3},"provider":"p","temperature":0.2,"stop_reason":"stop","error":null},"meta":{}}"#,
            r#"{"event_type":"LLM_CALL","payload":{"prompt":[{"role":"user","content":"x"}],"usage":null,"model":"m","error":{"type":"RateLimit","msg":"later"}}}"#,
            r#"{"event_type":"ERROR","payload":{"error_type":"ValueError","message":"bad","stack":"tb"}}"#,
            r#"{"event_type":"ERROR","payload":"just a string"}"#,
            r#"{"event_type":"ERROR","payload":null}"#,
            r#"{"event_type":"STATE_UPDATE","payload":{"state":"{\"step\":2}","diff":{"step":[1,2]}}}"#,
            r#"{"event_type":"LOOP_WARNING","payload":{"pattern":"a,b","repetitions":3}}"#,
            r#"{"event_type":"RUN_START","payload":{"run_name":"r","argv":["a"]},"meta":{"x":[]}}"#,
            r#"{"event_type":"SOMETHING_NEW","payload":[1,2,3]}"#,
            r#"{"event_type":7,"payload":{"args":{"a":1}}}"#,
            r#"{"event_type":"TOOL_CALL"}"#,
            r#"{"event_type":"TOOL_CALL","payload":"not an object"}"#,
            r#"{"event_type":"TOOL_CALL","payload":{"args":{"a":1},"args":{"a":2}},"payload":{"args":{"b":3}}}"#,
            r#"["not","an","object"]"#,
            r#"{"event_type":"TOOL_CALL","payload":{"args":{"a":1}"#,
            r#"{"event_type":"TOOL_CALL","payload":{"args":{"a":1e999}}}"#,
        ];
        for kind in [
            EventKind::ToolCall,
            EventKind::LlmCall,
            EventKind::Error,
            EventKind::State,
            EventKind::Run,
        ] {
            let mut t = Trace::default();
            let i = t.add(NewEvent::new(kind, "e"));
            let ev = t.event(i).clone();
            for (i, r) in records.iter().enumerate() {
                let one = [r.as_bytes()];
                assert_eq!(
                    AgentDbg.decode_payload(&Trace::default(), &ev, &one),
                    decode_by_copying(&ev, &one),
                    "{kind:?} record {i}: {r}"
                );
                // A run's second record (RUN_END) fills the output.
                let end = r#"{"event_type":"RUN_END","payload":{"status":"ok","summary":{"n":1}},"meta":{}}"#;
                for pair in [[r.as_bytes(), end.as_bytes()], [end.as_bytes(), r.as_bytes()]] {
                    assert_eq!(
                        AgentDbg.decode_payload(&Trace::default(), &ev, &pair),
                        decode_by_copying(&ev, &pair),
                        "{kind:?} record {i} with RUN_END: {r}"
                    );
                }
            }
        }
    }
}
