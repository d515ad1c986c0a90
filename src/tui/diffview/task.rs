//! The background work of the diff view: load both runs (in parallel) and diff them.

use super::DiffData;
use crate::formats::Format;
use crate::model::Trace;
use crate::source::RunRef;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The error of a diff given up because its view was left.
pub const CANCELLED: &str = "diff cancelled";

/// Where one side of a diff comes from.
#[derive(Clone)]
pub enum Source {
    /// An entry of the runs list.
    Entry { run: RunRef, index: usize, id: String },
    /// A path from the command line (`PATH#N` / `PATH#ID` pick one trace of several).
    Path {
        path: PathBuf,
        forced: Option<&'static dyn Format>,
    },
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Entry { run, index, id } => write!(f, "Entry({run:?}, {index}, {id})"),
            Source::Path { path, .. } => write!(f, "Path({})", path.display()),
        }
    }
}

/// One side loaded, with what the user should hear about it.
fn load(src: &Source, side: &str) -> Result<(Trace, Vec<String>), String> {
    let (trace, mut warnings) = match src {
        Source::Entry { run, index, id } => (*crate::tui::load_one(run, *index, id)?, Vec::new()),
        Source::Path { path, forced } => {
            let s = crate::report::diff::open(path, *forced)?;
            // `open` lists every diagnostic after its own notes; they are counted below.
            let own = s.warnings.len().saturating_sub(s.trace.diagnostics.len());
            let mut w = s.warnings;
            w.truncate(own);
            (s.trace, w)
        }
    };
    let n = trace.diagnostics.len();
    if n > 0 {
        warnings.push(format!(
            "the {side} has {n} load diagnostic{} (`tracetui check {}` lists them)",
            if n == 1 { "" } else { "s" },
            trace.meta.source.display()
        ));
    }
    Ok((trace, warnings))
}

/// Load one run (for the compare table: no side to name).
pub fn load_source(src: &Source) -> Result<Trace, String> {
    load(src, "run").map(|(t, _)| t)
}

/// Load both sides and diff them; the error names the side that failed.
pub fn compute(baseline: &Source, current: &Source, opts: &crate::diff::Options) -> Result<Box<DiffData>, String> {
    compute_until(baseline, current, opts, &AtomicBool::new(false))
}

/// [`compute`], given up soon after `cancel` is set (between the loads and the diff, and
/// inside the diff: see [`crate::diff::try_diff`]).
pub fn compute_until(
    baseline: &Source,
    current: &Source,
    opts: &crate::diff::Options,
    cancel: &AtomicBool,
) -> Result<Box<DiffData>, String> {
    let (a, b) = rayon::join(|| load(baseline, "baseline"), || load(current, "current run"));
    let ((a, mut wa), (b, wb)) = (a?, b?);
    let gone = || CANCELLED.to_string();
    if cancel.load(Ordering::Relaxed) {
        return Err(gone());
    }
    let diff = crate::diff::try_diff(&a, &b, opts, cancel).ok_or_else(gone)?;
    wa.extend(wb);
    Ok(Box::new(DiffData::new(Arc::new(a), Arc::new(b), diff, wa)))
}
