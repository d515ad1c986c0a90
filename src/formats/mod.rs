//! Formats: detect a source and parse it into the shared model. One file per format; this
//! file holds the registry and what formats share.
//!
//! # Drift: one rule for every format
//!
//! Agents ship new versions weekly and add record types and fields. What a known format's
//! reader does not know is normal, not a problem:
//! - a record of a type the reader does not know (a new `type`, `event`, `kind`, role or
//!   block) is skipped quietly: no diagnostic, no badge, the exit code unchanged. It is
//!   counted by type ([`Sink::skip`](jsonl::Sink::skip), [`Trace::skipped`]: `check --format
//!   json` prints `"skipped": {"<type>": n}`, `check -v` lists them) and, when it carries text
//!   (a message, content, a summary: [`drift_text`]), it is shown in the tree as a generic
//!   event ([`EventKind::Other`](crate::model::EventKind::Other) named by its type) so that
//!   nothing a user could want is hidden;
//! - a field the reader does not know is ignored (and shown in the raw record);
//! - a diagnostic is for what cannot be read: a damaged line, a known record of the wrong
//!   shape, a reference to what is not there, lost data.
//!
//! The rule is held by a proptest in every format's own tests (`drift_is_skipped_quietly`, on
//! the harness of `testing::drift_check`): inserting records of random unknown types, and
//! unknown fields into known records, into its fixtures, samples and corpus traces changes no
//! count and adds no diagnostic.

pub mod document;
pub mod engine;
pub mod gist;
pub mod id_map;
pub mod jsonl;
mod probe;
pub mod resume;
pub mod skim;
pub mod sqlite;
#[cfg(test)]
mod testing;
mod util;
pub mod whole;

pub mod agentdbg;
pub mod agentsnap;
pub mod aider;
pub mod assay;
pub mod assay_bundle;
pub mod claude_code;
pub mod cline;
pub mod codex;
pub mod copilot_chat;
pub mod copilot_cli;
pub mod cursor;
pub mod factory_droid;
pub mod gemini_cli;
pub mod goose;
pub mod gptme;
pub mod iflow;
pub mod inspect_ai;
pub mod kilo_code;
pub mod kimi_cli;
pub mod maida;
pub mod mistral_vibe;
pub mod openai_chat;
pub mod opencode;
pub mod openhands;
pub mod otlp;
pub mod pi;
pub mod qwen_code;
pub mod roo_code;
pub mod swe_agent;
pub mod zed;

pub use probe::Probe;
pub use util::*;

use crate::model::{Diagnostic, Event, Payload, PayloadRef, Trace};
use std::path::{Path, PathBuf};

/// The formats tracetui reads, in detection order. Adding a format is one line here.
pub static REGISTRY: &[&dyn Format] = &[
    // Before AgentDbg: a Copilot session directory holds an `events.jsonl` too.
    &copilot_cli::CopilotCli,
    &agentdbg::AgentDbg,
    &agentsnap::AgentSnap,
    &assay::Assay,
    &maida::Maida,
    &openai_chat::OpenAiChat,
    &claude_code::ClaudeCode,
    &codex::Codex,
    &otlp::Otlp,
    &assay_bundle::AssayBundle,
    &cline::Cline,
    &aider::Aider,
    &swe_agent::SweAgent,
    &openhands::OpenHands,
    &inspect_ai::InspectAi,
    &cursor::Cursor,
    &opencode::OpenCode,
    &gemini_cli::GeminiCli,
    &factory_droid::FactoryDroid,
    &kimi_cli::KimiCli,
    &pi::Pi,
    &mistral_vibe::MistralVibe,
    &gptme::Gptme,
    &zed::Zed,
    &goose::Goose,
    &roo_code::RooCode,
    &kilo_code::KiloCode,
    &iflow::Iflow,
    &qwen_code::QwenCode,
    &copilot_chat::CopilotChat,
];

/// What [`Format::decode_payload_raw`] gives: the payload, but for `input` / `output` when
/// they are here as their text in the record.
#[derive(Debug, Default)]
pub struct RawPayload<'a> {
    pub payload: Payload,
    pub input: Option<RawText<'a>>,
    pub output: Option<RawText<'a>>,
    /// Extra fields as their JSON text (never `null`), in the order `decode_payload` gives
    /// them, after `payload.extra`.
    pub extra: Vec<(&'static str, &'a str)>,
    /// Input and output taken by the [`RawSink`] (then not in `input`/`output` or the payload).
    pub taken: [bool; 2],
}

/// Where an export writes the input or output value a format reads for
/// [`Format::decode_payload_raw`], as the format reaches it: the writer finds the value's end
/// as it copies it, so the record's big values are scanned once, not once to find their end
/// and again to copy them.
pub trait RawSink {
    /// Take the input (`output` false) or output value that starts `rest` (its first byte is
    /// `"`, `{` or `[`): its length in `rest` when taken, or None (nothing kept) to have the
    /// format read it as usual. A taken side is marked in [`RawPayload::taken`].
    fn take(&mut self, output: bool, rest: &str) -> Option<usize>;
}

/// A value as its JSON text in a record (valid JSON, UTF-8 checked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawText<'a> {
    /// An object or array.
    Json(&'a str),
    /// A string, quotes and escapes as written, whose text the format keeps as a string (it
    /// is not JSON that the format would decode).
    Str(&'a str),
}

impl RawText<'_> {
    /// The value it stands for.
    pub fn value(&self) -> Option<serde_json::Value> {
        match self {
            RawText::Json(t) | RawText::Str(t) => serde_json::from_str(t).ok(),
        }
    }
}

/// Follows a load ([`Format::load_watched`]).
pub trait Watcher: Send {
    /// `read` of the source's `total` bytes are read. `partial` makes a trace of the events
    /// read so far (the run's status, model and totals may still change), at the cost of a
    /// pass over them: call it only to show it.
    fn progress(&mut self, read: u64, total: u64, partial: &mut dyn FnMut() -> Trace);
}

/// What a format does: recognise a source and load it.
pub trait Format: Sync {
    /// Stable id (`--format NAME`, JSON output).
    fn id(&self) -> &'static str;
    /// Where these files usually live / what they look like, for help and errors.
    fn describe(&self) -> &'static str;
    /// How sure the format is that `probe` is one of its sources: 0 no, 100 certain.
    fn detect(&self, probe: &Probe) -> u8;
    /// Load every trace in the source. Bad records become diagnostics; only a source that
    /// cannot be read or holds nothing of this format is an error.
    fn load(&self, path: &Path) -> Result<Loaded, LoadError>;
    /// [`Format::load`], telling `watcher` how far it is. A format that builds its trace only
    /// once the source is read (a whole document) hands it the events read so far, so that
    /// the explorer shows them while the rest loads. The default tells nothing.
    fn load_watched(&self, path: &Path, _watcher: &mut dyn Watcher) -> Result<Loaded, LoadError> {
        self.load(path)
    }
    /// The run `id` of a source that holds several (an Inspect AI log's samples), read
    /// without the others; without an id, the run at `index` of the whole load. None where
    /// the format has no quicker way than [`Format::load`], of which the caller then takes
    /// the run. The one trace loaded is that run.
    fn load_run(&self, _path: &Path, _index: usize, _id: &str) -> Option<Result<Loaded, LoadError>> {
        None
    }
    /// Cheap run summaries for `ls` (metadata files, first and last lines). None where the
    /// format has no cheaper way than [`Format::load`]: the caller then loads the source and
    /// summarizes its runs with their cost (`source::summary::of`; pricing sits above
    /// formats/). The default has none.
    fn summarize(&self, _path: &Path) -> Result<Option<Vec<Summary>>, LoadError> {
        Ok(None)
    }
    /// Decode the payload of an event whose payload was left on disk (`PayloadRef::Deferred`);
    /// `raw` holds the bytes of its origin record and, if any, its second record.
    fn decode_payload(&self, _trace: &Trace, _event: &Event, _raw: &[&[u8]]) -> Payload {
        Payload::default()
    }
    /// For a bulk export: [`Format::decode_payload`] with the arguments and result (prompt and
    /// response) left as their JSON text in the record when they are objects or arrays, so
    /// that they are copied, not decoded and written again. `None`: use `decode_payload`.
    /// With `sink`, the format may hand it the input and output values as it reaches them
    /// (see [`RawSink`]).
    fn decode_payload_raw<'a>(
        &self,
        _trace: &Trace,
        _event: &Event,
        _raw: &[&'a [u8]],
        _sink: Option<&mut dyn RawSink>,
    ) -> Option<RawPayload<'a>> {
        None
    }
    /// The bytes of a record that are not at its byte range in the file (a record inside a
    /// compressed archive member); None: read them from the file.
    fn read_record(&self, _trace: &Trace, _origin: crate::model::Origin) -> Option<std::io::Result<Vec<u8>>> {
        None
    }
    /// Every file or directory that loading `path` reads (a directory with all in it), when
    /// its summary is a function of them alone: then `ls` caches it ([`crate::source::cache`]).
    /// `None` (the default): summarized afresh each time.
    fn summary_inputs(&self, _path: &Path) -> Option<Vec<PathBuf>> {
        None
    }
    /// Whether the source is a directory this format reads as one run.
    fn is_run_dir(&self, _dir: &Path) -> bool {
        false
    }
    /// For line-oriented sources: the source as a [`jsonl::Follow`], so the live tail reads
    /// appended lines with the very parser a full load uses. `None` for whole-document formats.
    fn follow(&self, _path: &Path) -> Option<jsonl::Follow> {
        None
    }
    /// Whether a source of this format may be a part of another run ([`Format::lineage`]).
    fn nests(&self) -> bool {
        false
    }
    /// Where a source belongs when it is a part of another run (a Codex sub-agent's rollout
    /// is part of its parent's): read cheaply (names, the head of the file), for formats that
    /// [nest](Format::nests). Discovery reads the sources a listing finds together: a source
    /// whose parent is among them is read into that run ([`Format::load_nested`]) and not
    /// listed on its own. None (the default): a run of its own, always.
    fn lineage(&self, _path: &Path) -> Option<Lineage> {
        None
    }
    /// [`Format::load`] of a run listed with the sources that are part of it (`Some`, maybe
    /// none yet: a format that nests them may also look for ones that appear while the run is
    /// followed); `None`: the source alone, as `load` reads it. The default: `load`.
    fn load_nested(&self, path: &Path, _nested: Option<&[PathBuf]>) -> Result<Loaded, LoadError> {
        self.load(path)
    }
    /// [`Format::follow`] of a run with the sources that are part of it (as in
    /// [`Format::load_nested`]). The default: `follow`.
    fn follow_nested(&self, path: &Path, _nested: Option<&[PathBuf]>) -> Option<jsonl::Follow> {
        self.follow(path)
    }
    /// What a call to the tool `name` with arguments `input` did, in a few words: the
    /// argument that says it (a command, a path, a pattern, a URL), as written; [`gist`]
    /// makes it one clean line. A format maps the tools its agent has; the default is the
    /// [`gist::generic`] rule.
    fn gist(&self, name: &str, input: &serde_json::Value) -> Option<String> {
        gist::generic(name, input)
    }
}

/// Whose run a source is part of ([`Format::lineage`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lineage {
    /// The source's own key (a Codex thread id).
    pub id: String,
    /// The key of the run it is part of, when it is a part (a sub-agent's thread).
    pub parent: Option<String>,
}

/// The result of loading one source.
#[derive(Debug, Default)]
pub struct Loaded {
    pub traces: Vec<Trace>,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a trace tracetui can read ({reason}); tried: {tried}")]
    NotATrace {
        path: PathBuf,
        reason: String,
        tried: String,
    },
    #[error("{path}: {message}")]
    Invalid {
        path: PathBuf,
        message: String,
        diagnostics: Vec<Diagnostic>,
    },
}

impl LoadError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        LoadError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
    pub fn invalid(path: &Path, message: impl Into<String>) -> Self {
        LoadError::Invalid {
            path: path.to_path_buf(),
            message: message.into(),
            diagnostics: Vec::new(),
        }
    }
}

/// One row of `ls` and of the runs view before a run is opened. `Default` is a row of a run
/// not loaded: every count unknown (summaries from metadata or a file's ends fill the rest).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Summary {
    pub id: String,
    pub name: Option<String>,
    pub format: &'static str,
    #[serde(serialize_with = "crate::json::serialize_path")]
    pub path: PathBuf,
    pub status: crate::model::RunStatus,
    #[serde(serialize_with = "crate::json::serialize_ts")]
    pub start: Option<i64>,
    pub duration: Option<i64>,
    pub events: Option<usize>,
    pub tool_calls: Option<usize>,
    pub llm_calls: Option<usize>,
    pub errors: Option<usize>,
    pub tokens: Option<u64>,
    /// Load problems (diagnostics) when the run was loaded; None when it was summarized
    /// from metadata without reading its events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problems: Option<usize>,
    /// The run's badges ([`crate::model::RunMeta::badges`]), when it was loaded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub badges: Vec<String>,
    /// Tokens by kind and cost of the loaded run (`run_cost` of cost/usage.rs at the current
    /// prices, attached above formats/: `source::summary::of`); None when summarized from
    /// metadata. `ls` writes it out itself.
    #[serde(skip)]
    pub cost: Option<crate::model::usage::Total>,
    /// The agent's command that resumes the session ([`resume::command`]), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
}

impl Summary {
    /// Whether the counts are the run.json/metadata values of a run not loaded (they may
    /// differ from the loaded counts, which every view shows once the run is loaded).
    pub fn provisional(&self) -> bool {
        self.problems.is_none()
    }

    /// The summary of a loaded run without its cost (`cost: None`): the layer above formats/
    /// prices it (`source::summary::of`).
    pub fn unpriced(t: &Trace) -> Summary {
        let c = t.counts();
        let (start, _) = t.time_span();
        Summary {
            id: t.meta.id.clone(),
            name: t.meta.name.clone(),
            format: t.meta.format,
            path: t.meta.source.clone(),
            status: t.meta.status,
            start,
            duration: t.duration(),
            events: Some(c.events),
            tool_calls: Some(c.tool_calls),
            llm_calls: Some(c.llm_calls),
            errors: Some(c.errors),
            tokens: Some(c.tokens),
            problems: Some(t.diagnostics.len()),
            badges: t.meta.badges(),
            cost: None,
            resume: resume::command(&t.meta),
        }
    }
}

pub fn by_id(id: &str) -> Option<&'static dyn Format> {
    REGISTRY.iter().copied().find(|f| f.id() == id)
}

pub fn ids() -> Vec<&'static str> {
    REGISTRY.iter().map(|f| f.id()).collect()
}

/// Pick the format of a source: the most confident detector wins; ties go to registry order.
pub fn detect(path: &Path) -> Result<&'static dyn Format, LoadError> {
    let probe = Probe::open(path)?;
    let mut best: Option<(&'static dyn Format, u8)> = None;
    for f in REGISTRY {
        let c = f.detect(&probe);
        if c > 0 && best.is_none_or(|(_, b)| c > b) {
            best = Some((*f, c));
        }
    }
    best.map(|(f, _)| f).ok_or_else(|| LoadError::NotATrace {
        path: path.to_path_buf(),
        reason: probe.describe(),
        tried: ids().join(", "),
    })
}

/// Detect (or use `forced`) and load.
pub fn load(path: &Path, forced: Option<&'static dyn Format>) -> Result<Loaded, LoadError> {
    let f = match forced {
        Some(f) => f,
        None => detect(path)?,
    };
    f.load(path)
}

/// The payload of an event, reading it from disk when it was left there.
pub fn payload(trace: &Trace, ev: &Event) -> Payload {
    match &ev.payload {
        PayloadRef::Deferred => payload_with_records(trace, ev).0,
        PayloadRef::None => Payload::default(),
        PayloadRef::Inline(p) => (**p).clone(),
    }
}

/// The payload of an event and the bytes of its source record(s), each read once (the
/// detail pane decodes the one and looks up `Y`'s source paths in the other).
pub fn payload_with_records(trace: &Trace, ev: &Event) -> (Payload, Vec<Vec<u8>>) {
    let mut raws = Vec::new();
    for o in std::iter::once(ev.origin).chain(ev.origin2.as_deref().copied()) {
        match read_origin(trace, o) {
            Ok(b) => raws.push(b),
            Err(e) if matches!(ev.payload, PayloadRef::Deferred) => {
                let p = Payload {
                    error: Some(crate::model::ErrorInfo {
                        kind: Some("unreadable".into()),
                        message: format!("could not read the record from disk: {e}"),
                        ..Default::default()
                    }),
                    ..Default::default()
                };
                return (p, raws);
            }
            Err(_) => {}
        }
    }
    let p = match &ev.payload {
        PayloadRef::None => Payload::default(),
        PayloadRef::Inline(p) => (**p).clone(),
        PayloadRef::Deferred => match by_id(trace.meta.format) {
            Some(f) => {
                let refs: Vec<&[u8]> = raws.iter().map(|v| v.as_slice()).collect();
                f.decode_payload(trace, ev, &refs)
            }
            None => Payload::default(),
        },
    };
    (p, raws)
}

/// The raw bytes of a record (for the raw view and deferred payloads), by positioned read.
pub fn read_origin(trace: &Trace, o: crate::model::Origin) -> std::io::Result<Vec<u8>> {
    if let Some(r) = by_id(trace.meta.format).and_then(|f| f.read_record(trace, o)) {
        return r;
    }
    read_file_range(trace, o)
}

/// The bytes at an origin's byte range in its file.
pub fn read_file_range(trace: &Trace, o: crate::model::Origin) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let path = trace
        .files
        .get(o.file as usize)
        .ok_or_else(|| std::io::Error::other("event has no source file"))?;
    let mut f = open_regular(path)?;
    f.seek(SeekFrom::Start(o.offset))?;
    // Not a zeroed buffer first: a large read (the export reads megabytes at once) would
    // spend as long zeroing as reading.
    let mut buf = Vec::with_capacity(o.len as usize);
    f.take(o.len as u64).read_to_end(&mut buf)?;
    Ok(buf)
}
