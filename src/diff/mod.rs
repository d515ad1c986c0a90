//! Diff two traces (DESIGN §5): align their calls, compare paired calls structurally as JSON
//! paths, classify the difference and report metric deltas. No terminal, no I/O beyond reading
//! the payloads of paired calls.
//!
//! Verdict, first match wins: `REGRESSION` (an error the baseline did not have),
//! `TOOLS_CHANGED` (calls added, removed or with other arguments), `TOOLS_REORDERED` (same
//! calls, other order), `OUTPUT_DRIFT` (only results, errors, models or extras differ),
//! `PASSED`.

mod align;
pub mod compare;
mod ignore;
mod json;
mod metrics;
mod payloads;
pub mod repeated;
pub mod tree;
pub mod words;

pub use align::{Call, Step, align, align_with, calls};
pub use ignore::{Glob, VOLATILE_KEYS};
pub use json::Leaf;
pub use metrics::Metric;
pub use payloads::PayloadReader;

use crate::model::{Event, EventKind, Payload, PayloadRef, Status, Trace};
use json::Skip;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Compare volatile fields too (ids, clocks, durations, fingerprints, usage, stacks).
    pub strict: bool,
    /// Paths left out, in addition to the volatile fields.
    pub ignore: Vec<Glob>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    Passed,
    OutputDrift,
    ToolsReordered,
    ToolsChanged,
    Regression,
}

impl Verdict {
    pub const ALL: [Verdict; 5] = [
        Verdict::Passed,
        Verdict::OutputDrift,
        Verdict::ToolsReordered,
        Verdict::ToolsChanged,
        Verdict::Regression,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Passed => "PASSED",
            Verdict::OutputDrift => "OUTPUT_DRIFT",
            Verdict::ToolsReordered => "TOOLS_REORDERED",
            Verdict::ToolsChanged => "TOOLS_CHANGED",
            Verdict::Regression => "REGRESSION",
        }
    }
    /// Case-insensitive; `-` may stand for `_`.
    pub fn parse(s: &str) -> Option<Verdict> {
        let s = s.trim().to_ascii_uppercase().replace('-', "_");
        Verdict::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// What a row of the aligned call list is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Same,
    Changed,
    Added,
    Removed,
    Moved,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Same => "same",
            Op::Changed => "changed",
            Op::Added => "added",
            Op::Removed => "removed",
            Op::Moved => "moved",
        }
    }
    /// The mark of the row in text output.
    pub fn sign(self) -> char {
        match self {
            Op::Same => ' ',
            Op::Changed => '~',
            Op::Added => '+',
            Op::Removed => '-',
            Op::Moved => '!',
        }
    }
}

/// Which part of a call a change is in: arguments decide `TOOLS_CHANGED`, the rest is drift.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Section {
    Input,
    Output,
    Error,
    Model,
    Status,
    Extra,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PathChange {
    pub path: String,
    /// `None`: absent in the baseline.
    pub from: Option<Value>,
    /// `None`: absent in the current run.
    pub to: Option<Value>,
    pub section: Section,
}

/// A call on one side of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallRef {
    /// Position in that trace's call sequence.
    pub index: usize,
    /// The event in that trace.
    pub event: u32,
    /// Position among calls of the same kind (`tools[N]`).
    pub kind_index: usize,
}

#[derive(Clone, Debug)]
pub struct Row {
    pub op: Op,
    pub baseline: Option<CallRef>,
    pub current: Option<CallRef>,
    pub kind: EventKind,
    pub name: String,
    pub paths: Vec<PathChange>,
}

impl Row {
    /// `tools[N]` / `llm[N]`, numbered on the baseline side when there is one.
    pub fn label(&self) -> String {
        let n = self.baseline.or(self.current).map_or(0, |c| c.kind_index);
        call_prefix(self.kind, n)
    }
}

#[derive(Clone, Debug)]
pub struct Diff {
    pub verdict: Verdict,
    pub metrics: Vec<Metric>,
    /// The aligned call list, unchanged pairs included.
    pub rows: Vec<Row>,
    /// Changes of the run record itself (`run.output`, `run.model`, ...).
    pub run: Vec<PathChange>,
    /// Why the verdict is `REGRESSION`, one line each.
    pub regressions: Vec<String>,
    pub notes: Vec<String>,
    pub cross_format: bool,
}

impl Diff {
    /// Rows that differ (everything but unchanged pairs).
    pub fn changes(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.op != Op::Same)
    }
}

fn call_ref(calls: &[Call], i: usize) -> CallRef {
    CallRef {
        index: i,
        event: calls[i].event,
        kind_index: calls[i].kind_index,
    }
}

fn call_prefix(kind: EventKind, n: usize) -> String {
    match kind {
        EventKind::LlmCall => format!("llm[{n}]"),
        _ => format!("tools[{n}]"),
    }
}

/// Pairs compared per parallel task (each task opens its files once). Small enough that a few
/// thousand pairs still spread evenly over the cores.
const CHUNK: usize = 128;

/// Diff `a` (the baseline) against `b` (the current run).
pub fn diff(a: &Trace, b: &Trace, opts: &Options) -> Diff {
    diff_overlapping(a, b, opts, Overlap::UntilAligned)
}

/// [`diff`] that gives up (`None`) soon after `cancel` is set: the alignment stops at its next
/// step, and pairs not yet compared are not.
pub fn try_diff(a: &Trace, b: &Trace, opts: &Options, cancel: &AtomicBool) -> Option<Diff> {
    diff_until(a, b, opts, Overlap::UntilAligned, Some(cancel))
}

/// How much pair comparing a helper thread does while the calls are aligned. Only the speed
/// differs: the diff is the same.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Overlap {
    Off,
    /// Stop when the alignment is done and share what is left over the cores.
    UntilAligned,
    /// Every pair Myers matched (tests: the most early results to check).
    #[cfg(test)]
    All,
}

fn diff_overlapping(a: &Trace, b: &Trace, opts: &Options, overlap: Overlap) -> Diff {
    diff_until(a, b, opts, overlap, None).expect("not cancellable")
}

fn diff_until(a: &Trace, b: &Trace, opts: &Options, overlap: Overlap, cancel: Option<&AtomicBool>) -> Option<Diff> {
    diff_inner(a, b, opts, overlap, cancel, false)
}

/// A diff made for [`compare::RunDelta`] (the row of a compare table): its verdict, metrics,
/// run changes and first differing row (with that row's paths) are those of [`diff`], but the
/// pairs after the first divergence are compared only while the verdict is still open. So
/// later rows may lack their paths (and show as unchanged), and `regressions` and `notes` may
/// lack what those pairs would have said. Of two unrelated runs of 10,000 events, where calls
/// are added and removed from the start, this compares a few pairs instead of thousands.
pub(crate) fn summary_diff(a: &Trace, b: &Trace, opts: &Options, cancel: Option<&AtomicBool>) -> Option<Diff> {
    diff_inner(a, b, opts, Overlap::Off, cancel, true)
}

fn diff_inner(
    a: &Trace,
    b: &Trace,
    opts: &Options,
    overlap: Overlap,
    cancel: Option<&AtomicBool>,
    summary: bool,
) -> Option<Diff> {
    let cancelled = || cancel.is_some_and(|c| c.load(Ordering::Relaxed));
    // Across formats only tool calls are shared vocabulary (agentsnap has no LLM calls).
    let cross = a.meta.format != b.meta.format;
    let ca = calls(a, cross);
    let cb = calls(b, cross);
    let ctx = Ctx {
        a,
        b,
        opts,
        cross,
        cancel,
    };
    let (steps, mut early) = ctx.align_comparing(&ca, &cb, overlap)?;

    let mut rows = Vec::with_capacity(steps.len());
    let mut work = Vec::new();
    for s in steps {
        let (op, ia, ib) = match s {
            Step::Pair(i, j) => (Op::Same, Some(i), Some(j)),
            Step::Moved(i, j) => (Op::Moved, Some(i), Some(j)),
            Step::Removed(i) => (Op::Removed, Some(i), None),
            Step::Added(j) => (Op::Added, None, Some(j)),
        };
        let baseline = ia.map(|i| call_ref(&ca, i));
        let current = ib.map(|j| call_ref(&cb, j));
        let ev = baseline.map_or_else(|| b.event(current.unwrap().event), |c| a.event(c.event));
        let name = match (baseline, current) {
            (Some(c), _) => a.name(c.event),
            (None, Some(c)) => b.name(c.event),
            (None, None) => "",
        };
        if let (Some(x), Some(y)) = (baseline, current) {
            work.push((rows.len(), x, y));
        }
        rows.push(Row {
            op,
            baseline,
            current,
            kind: ev.kind,
            name: name.to_string(),
            paths: Vec::new(),
        });
    }

    // Pairs compared while the alignment ran are kept when the final alignment made the same
    // pair; the rest are compared now, in parallel.
    let mut compared: Vec<Option<Compared>> = work
        .iter()
        .map(|&(_, x, y)| match early[x.index].take() {
            Some((j, c)) if j == y.index => Some(c),
            _ => None,
        })
        .collect();
    let compare = |todo: &[usize]| -> Vec<Compared> {
        todo.par_chunks(CHUNK)
            .flat_map_iter(|chunk| {
                if cancelled() {
                    return Vec::new();
                }
                let mut ra = PayloadReader::new(a);
                let mut rb = PayloadReader::new(b);
                chunk
                    .iter()
                    .map(|&k| ctx.compare_call(work[k].1, work[k].2, &mut ra, &mut rb))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    // A paired call fails in the current run and not in the baseline: a regression, known
    // from the events alone (`compare_call` says so for exactly these pairs).
    let pair_regression = work
        .iter()
        .any(|&(_, x, y)| b.event(y.event).is_error() && !a.event(x.event).is_error());
    let run = ctx.compare_runs();
    let mut other_regressions = Vec::new();
    for row in rows.iter().filter(|r| r.op == Op::Added) {
        let ev = b.event(row.current.unwrap().event);
        if ev.is_error() {
            let p = crate::formats::payload(b, ev);
            other_regressions.push(format!("{} {} (added) fails{}", row.label(), row.name, error_text(&p)));
        }
    }
    if b.meta.status == crate::model::RunStatus::Error && a.meta.status != crate::model::RunStatus::Error {
        other_regressions.push(format!("the run ended in error (baseline: {})", a.meta.status.as_str()));
    }
    if !cross {
        other_regressions.extend(new_error_events(a, b));
    }
    if summary {
        summary_pairs(
            &rows,
            &work,
            &run,
            pair_regression || !other_regressions.is_empty(),
            &mut compared,
            &compare,
            &cancelled,
        )?;
    } else {
        let todo: Vec<usize> = (0..work.len()).filter(|&k| compared[k].is_none()).collect();
        let late = compare(&todo);
        if cancelled() {
            return None;
        }
        for (k, c) in todo.into_iter().zip(late) {
            compared[k] = Some(c);
        }
    }
    let compared = work.iter().zip(compared).filter_map(|(&(row, _, _), c)| {
        assert!(summary || c.is_some(), "every pair compared");
        c.map(|c| (row, c))
    });

    let mut regressions = Vec::new();
    let mut hash_vs_value = 0;
    for (row, c) in compared {
        let row = &mut rows[row];
        row.paths = c.paths;
        if row.op == Op::Same && !row.paths.is_empty() {
            row.op = Op::Changed;
        }
        hash_vs_value += c.hash_vs_value as usize;
        if let Some(r) = c.regression {
            regressions.push(r);
        }
    }
    regressions.extend(other_regressions);
    let verdict = classify(&rows, &run, pair_regression || !regressions.is_empty());

    let mut notes = Vec::new();
    if cross {
        notes.push(format!(
            "baseline is {}, current is {}: comparing the tool calls they share (LLM calls, error events, \
             models and the run records are not compared across formats)",
            a.meta.format, b.meta.format
        ));
    }
    if hash_vs_value > 0 {
        notes.push(format!(
            "{hash_vs_value} tool result(s) recorded as a hash on one side and as a value on the other were not compared"
        ));
    }
    if let (Some(ra), Some(rb)) = (recorder(a), recorder(b))
        && ra != rb
    {
        notes.push(format!(
            "the snapshots were recorded by different runtimes ({ra} in the baseline, {rb} in the current run): \
             result-hash drift is expected there"
        ));
    }

    Some(Diff {
        verdict,
        metrics: metrics::compute(a, b),
        rows,
        run,
        regressions,
        notes,
        cross_format: cross,
    })
}

/// Whether a change is in the arguments (what makes `TOOLS_CHANGED`).
fn args_changed(paths: &[PathChange]) -> bool {
    paths.iter().any(|p| p.section == Section::Input)
}

/// The pairs [`summary_diff`] compares, in row order, in growing blocks: until the first
/// differing row is known (a pair before the first added, removed or moved row that differs,
/// or every pair up to and including that row: a moved row's label names its first path) and
/// the verdict is settled (a regression, an added or removed call, or changed arguments
/// anywhere decide it; otherwise every pair counts). `None` when cancelled.
fn summary_pairs(
    rows: &[Row],
    work: &[(usize, CallRef, CallRef)],
    run: &[PathChange],
    regression: bool,
    compared: &mut [Option<Compared>],
    compare: &(dyn Fn(&[usize]) -> Vec<Compared> + Sync),
    cancelled: &dyn Fn() -> bool,
) -> Option<()> {
    let mut settled = regression || args_changed(run) || rows.iter().any(|r| matches!(r.op, Op::Added | Op::Removed));
    let structural = rows.iter().position(|r| r.op != Op::Same).unwrap_or(rows.len());
    let (mut next, mut block, mut first_known) = (0, 32, false);
    while next < work.len() && !(first_known && settled) {
        let end = (next + block).min(work.len());
        let todo: Vec<usize> = (next..end).filter(|&k| compared[k].is_none()).collect();
        let got = compare(&todo);
        if cancelled() {
            return None;
        }
        for (k, c) in todo.into_iter().zip(got) {
            compared[k] = Some(c);
        }
        for k in next..end {
            let paths = compared[k].as_ref().map_or(&[][..], |c| &c.paths[..]);
            settled |= args_changed(paths);
            first_known |= work[k].0 < structural && !paths.is_empty();
        }
        next = end;
        first_known |= next == work.len() || work[next].0 > structural;
        block = (block * 4).min(4096);
    }
    Some(())
}

fn classify(rows: &[Row], run: &[PathChange], regression: bool) -> Verdict {
    if regression {
        Verdict::Regression
    } else if args_changed(run)
        || rows
            .iter()
            .any(|r| matches!(r.op, Op::Added | Op::Removed) || args_changed(&r.paths))
    {
        Verdict::ToolsChanged
    } else if rows.iter().any(|r| r.op == Op::Moved) {
        Verdict::ToolsReordered
    } else if !run.is_empty() || rows.iter().any(|r| !r.paths.is_empty()) {
        Verdict::OutputDrift
    } else {
        Verdict::Passed
    }
}

/// Error events (not failing calls) of a name the current run has more of than the baseline.
fn new_error_events(a: &Trace, b: &Trace) -> Vec<String> {
    let mut counts: HashMap<&str, (usize, usize)> = HashMap::new();
    for (t, side) in [(a, 0), (b, 1)] {
        for (i, e) in t.events.iter().enumerate() {
            if e.kind == EventKind::Error {
                let c = counts.entry(t.name(i as u32)).or_default();
                if side == 0 {
                    c.0 += 1;
                } else {
                    c.1 += 1;
                }
            }
        }
    }
    let mut out: Vec<(&str, usize, usize)> = counts
        .into_iter()
        .filter(|(_, (x, y))| y > x)
        .map(|(n, (x, y))| (n, x, y))
        .collect();
    out.sort();
    out.into_iter()
        .map(|(n, x, y)| format!("{y} error event(s) {n:?} in the current run, {x} in the baseline"))
        .collect()
}

/// agentsnap's `fingerprint` names the runtime that hashed the results: a `node` or a
/// `python` key.
fn recorder(t: &Trace) -> Option<&'static str> {
    if t.meta.format != "agentsnap" {
        return None;
    }
    let fp = t
        .meta
        .attributes
        .iter()
        .find(|(k, _)| k == "fingerprint")?
        .1
        .as_object()?;
    ["node", "python", "deno", "bun"]
        .into_iter()
        .find(|k| fp.contains_key(*k))
}

fn error_text(p: &Payload) -> String {
    match &p.error {
        Some(e) => match &e.kind {
            Some(k) => format!(" ({k}: {})", e.message),
            None => format!(" ({})", e.message),
        },
        None => String::new(),
    }
}

fn error_value(e: Option<crate::model::ErrorInfo>) -> Option<Value> {
    e.and_then(|e| serde_json::to_value(e).ok())
}

#[derive(Debug, PartialEq)]
struct Compared {
    paths: Vec<PathChange>,
    hash_vs_value: bool,
    regression: Option<String>,
}

struct Ctx<'a> {
    a: &'a Trace,
    b: &'a Trace,
    opts: &'a Options,
    cross: bool,
    cancel: Option<&'a AtomicBool>,
}

fn is_hash(v: &Option<Value>) -> bool {
    v.as_ref()
        .and_then(Value::as_str)
        .is_some_and(|s| crate::model::Marker::of_str(s) == Some(crate::model::Marker::Hash))
}

/// Comparisons made while the alignment ran, by baseline call: (current call, result).
type Early = Vec<Option<(usize, Compared)>>;

impl Ctx<'_> {
    /// Align the calls. Aligning two long runs that differ throughout keeps one core busy for
    /// a while (similar's Myers is sequential), so meanwhile a helper thread compares the pairs
    /// Myers has matched so far; most survive into the final alignment.
    fn align_comparing(&self, ca: &[Call], cb: &[Call], overlap: Overlap) -> Option<(Vec<Step>, Early)> {
        let mut early: Early = Vec::new();
        early.resize_with(ca.len(), || None);
        if overlap == Overlap::Off || (overlap == Overlap::UntilAligned && rayon::current_num_threads() < 2) {
            let steps = align::align_until(self.a, ca, self.b, cb, |_, _, _| {}, self.cancel)?;
            return Some((steps, early));
        }
        let (tx, rx) = mpsc::channel::<(usize, usize, usize)>();
        let done = AtomicBool::new(false);
        let steps = std::thread::scope(|s| {
            let done = &done;
            let helper = s.spawn(move || {
                let mut ra = PayloadReader::new(self.a);
                let mut rb = PayloadReader::new(self.b);
                let mut out = Vec::new();
                // Stop as soon as the alignment is done: what is left is shared out in parallel.
                'runs: while let Ok((i, j, n)) = rx.recv() {
                    for k in 0..n {
                        if done.load(Ordering::Relaxed) || self.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                            break 'runs;
                        }
                        let (x, y) = (call_ref(ca, i + k), call_ref(cb, j + k));
                        out.push((x.index, y.index, self.compare_call(x, y, &mut ra, &mut rb)));
                    }
                }
                out
            });
            let steps = align::align_until(
                self.a,
                ca,
                self.b,
                cb,
                |i, j, n| {
                    let _ = tx.send((i, j, n));
                },
                self.cancel,
            );
            done.store(overlap == Overlap::UntilAligned, Ordering::Relaxed);
            drop(tx);
            let out = helper.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
            for (i, j, c) in out {
                early[i] = Some((j, c));
            }
            steps
        })?;
        Some((steps, early))
    }

    fn skip(&self, volatile: bool) -> Skip<'_> {
        Skip {
            volatile: volatile && !self.opts.strict,
            globs: &self.opts.ignore,
        }
    }

    fn section(&self, prefix: &str, key: &str, from: Option<Value>, to: Option<Value>, sec: Section) -> Vec<Leaf> {
        let mut path = prefix.to_string();
        json::push_key(&mut path, key);
        let mut out = Vec::new();
        // Arguments are the agent's decisions: volatile keys are compared there.
        json::compare(&mut path, from, to, &self.skip(sec != Section::Input), &mut out);
        out
    }

    fn compare_call(&self, x: CallRef, y: CallRef, ra: &mut PayloadReader, rb: &mut PayloadReader) -> Compared {
        let (ea, eb) = (self.a.event(x.event), self.b.event(y.event));
        let prefix = call_prefix(ea.kind, x.kind_index);
        let unchanged = Compared {
            paths: Vec::new(),
            hash_vs_value: false,
            regression: None,
        };
        // Cheap first: records or inline payloads that are equal need no decoding. Not under
        // --strict (the envelope's volatile fields count there) nor across formats.
        let fast =
            !self.opts.strict && !self.cross && ea.status == eb.status && self.a.str(ea.model) == self.b.str(eb.model);
        let (pa, pb) = match (ra.records(ea), rb.records(eb)) {
            (Some(Ok(xa)), Some(Ok(xb))) => {
                if fast && payloads::same_records(&xa, &xb) {
                    return unchanged;
                }
                (ra.decode(ea, &xa), rb.decode(eb, &xb))
            }
            (None, None) => {
                if fast
                    && let (PayloadRef::Inline(p), PayloadRef::Inline(q)) = (&ea.payload, &eb.payload)
                    && p == q
                {
                    return unchanged;
                }
                (payloads::inline(ea), payloads::inline(eb))
            }
            _ => (ra.get(ea), rb.get(eb)),
        };
        let regression = (eb.is_error() && !ea.is_error()).then(|| {
            format!(
                "{prefix} {} fails in the current run{}, not in the baseline",
                self.a.name(x.event),
                error_text(&pb)
            )
        });
        let (paths, hash_vs_value) = self.compare_payloads(&prefix, ea, pa, eb, pb);
        Compared {
            paths,
            hash_vs_value,
            regression,
        }
    }

    fn compare_payloads(
        &self,
        prefix: &str,
        ea: &Event,
        pa: Payload,
        eb: &Event,
        pb: Payload,
    ) -> (Vec<PathChange>, bool) {
        let tool = ea.kind == EventKind::ToolCall;
        let mut paths = Vec::new();
        let mut push = |leaves: Vec<Leaf>, section: Section| {
            paths.extend(leaves.into_iter().map(|l| PathChange {
                path: l.path,
                from: l.from,
                to: l.to,
                section,
            }))
        };
        push(
            self.section(
                prefix,
                if tool { "args" } else { "prompt" },
                pa.input,
                pb.input,
                Section::Input,
            ),
            Section::Input,
        );
        let mut hash_vs_value = false;
        let (ha, hb) = (is_hash(&pa.output), is_hash(&pb.output));
        // A hash against a value cannot be compared: the hashing recipe is the recorder's.
        if self.cross && ha != hb && pa.output.is_some() && pb.output.is_some() {
            hash_vs_value = true;
        } else {
            let key = match (tool, ha || hb) {
                (true, true) => "result_hash",
                (true, false) => "result",
                (false, _) => "response",
            };
            push(
                self.section(prefix, key, pa.output, pb.output, Section::Output),
                Section::Output,
            );
        }
        push(
            self.section(
                prefix,
                "error",
                error_value(pa.error),
                error_value(pb.error),
                Section::Error,
            ),
            Section::Error,
        );
        if ea.status != eb.status && ea.status != Status::Unknown && eb.status != Status::Unknown {
            push(
                self.section(
                    prefix,
                    "status",
                    Some(ea.status.as_str().into()),
                    Some(eb.status.as_str().into()),
                    Section::Status,
                ),
                Section::Status,
            );
        }
        if !self.cross {
            let (ma, mb) = (self.a.str(ea.model), self.b.str(eb.model));
            if ma != mb {
                let v = |s: &str| (!s.is_empty()).then(|| Value::String(s.to_string()));
                push(
                    self.section(prefix, "model", v(ma), v(mb), Section::Model),
                    Section::Model,
                );
            }
            push(self.extras(prefix, pa.extra, pb.extra), Section::Extra);
        }
        (paths, hash_vs_value)
    }

    /// Extra fields by key. `model` is compared from the event, so its copy among the extras
    /// is left out.
    fn extras(&self, prefix: &str, xa: Vec<(String, Value)>, xb: Vec<(String, Value)>) -> Vec<Leaf> {
        let map = |x: Vec<(String, Value)>| Value::Object(x.into_iter().filter(|(k, _)| k != "model").collect());
        let mut out = Vec::new();
        json::compare(
            &mut prefix.to_string(),
            Some(map(xa)),
            Some(map(xb)),
            &self.skip(true),
            &mut out,
        );
        out
    }

    /// The run record: its model when both formats name one, and, for agentsnap, its input,
    /// output and error (other formats' run records hold the environment: argv, cwd, versions).
    fn compare_runs(&self) -> Vec<PathChange> {
        let mut out = Vec::new();
        if self.cross {
            return out;
        }
        if let (Some(ma), Some(mb)) = (&self.a.meta.model, &self.b.meta.model)
            && ma != mb
        {
            out.push(PathChange {
                path: "run.model".into(),
                from: Some(ma.clone().into()),
                to: Some(mb.clone().into()),
                section: Section::Model,
            });
        }
        if self.a.meta.format != "agentsnap" {
            return out;
        }
        let root = |t: &Trace| t.roots.iter().copied().find(|&r| t.event(r).kind == EventKind::Run);
        let (Some(x), Some(y)) = (root(self.a), root(self.b)) else {
            return out;
        };
        let (pa, pb) = (
            crate::formats::payload(self.a, self.a.event(x)),
            crate::formats::payload(self.b, self.b.event(y)),
        );
        let mut push = |leaves: Vec<Leaf>, section: Section| {
            out.extend(leaves.into_iter().map(|l| PathChange {
                path: l.path,
                from: l.from,
                to: l.to,
                section,
            }))
        };
        push(
            self.section("run", "input", pa.input, pb.input, Section::Input),
            Section::Input,
        );
        push(
            self.section("run", "output", pa.output, pb.output, Section::Output),
            Section::Output,
        );
        push(
            self.section(
                "run",
                "error",
                error_value(pa.error),
                error_value(pb.error),
                Section::Error,
            ),
            Section::Error,
        );
        push(self.extras("run", pa.extra, pb.extra), Section::Extra);
        out
    }
}

#[cfg(test)]
mod tests;
