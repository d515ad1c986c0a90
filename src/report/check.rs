//! `tracetui check`: load, report format, counts and diagnostics.

use crate::formats::LoadError;
use crate::model::{Diagnostic, Severity, Skipped, Trace};
use crate::output::Output;
use crate::source::Discovery;
use serde_json::{Value, json};
use std::io::Write;

/// What `check` found, for the exit code.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub traces: usize,
    pub error_diagnostics: usize,
    pub not_traces: usize,
    /// Sources of a known format in which nothing loaded (every record was bad).
    pub invalid: usize,
    pub unreadable: usize,
    /// Directories the scan did not enter (depth or entry limit): runs may be missing.
    pub skipped_dirs: usize,
}

impl Outcome {
    /// The README's rule, as `show` and `ls` follow it too: 0 clean; 1 diagnostics (a source
    /// of a known format in which nothing loaded is one); 2 input that cannot be read or is
    /// not a trace at all.
    pub fn exit_code(&self) -> i32 {
        if self.unreadable > 0 || self.not_traces > 0 {
            2
        } else if self.error_diagnostics > 0 || self.invalid > 0 || self.skipped_dirs > 0 {
            1
        } else {
            0
        }
    }
}

pub(crate) fn diag_json(d: &Diagnostic) -> Value {
    let mut v = json!({"line": d.line, "severity": d.severity, "message": d.message});
    crate::json::put_path(&mut v, "path", &d.path);
    v
}

pub fn trace_json(t: &Trace) -> Value {
    let c = t.counts();
    let mut v = json!({
        "format": t.meta.format,
        "trace": t.meta.id,
        "name": t.meta.name,
        "status": t.meta.status,
        "events": c.events,
        "tool_calls": c.tool_calls,
        "llm_calls": c.llm_calls,
        "errors": c.errors,
        "tokens": c.tokens,
        "diagnostics": t.diagnostics.iter().map(diag_json).collect::<Vec<_>>(),
        "skipped": skipped_json(&t.skipped),
    });
    for (k, x) in super::usage::json(&super::usage::of(t)) {
        v[k] = x;
    }
    crate::json::put_path(&mut v, "path", &t.meta.source);
    v
}

/// Records skipped as of a type the format does not know: `{"<type>": n}`.
pub(crate) fn skipped_json(s: &Skipped) -> Value {
    Value::Object(s.iter().map(|(k, n)| (k.to_string(), json!(n))).collect())
}

fn error_json(e: &LoadError) -> Value {
    let (path, diags) = match e {
        LoadError::Io { path, .. } | LoadError::NotATrace { path, .. } => (path.clone(), Vec::new()),
        LoadError::Invalid { path, diagnostics, .. } => (path.clone(), diagnostics.iter().map(diag_json).collect()),
    };
    let mut v = json!({"format": null, "error": e.to_string(), "diagnostics": diags});
    crate::json::put_path(&mut v, "path", &path);
    v
}

/// `verbose`: text output lists each trace's skipped records too (JSON always has them).
pub fn run(d: &Discovery, out: &mut dyn Write, fmt: Output, verbose: bool) -> std::io::Result<Outcome> {
    let mut o = Outcome {
        skipped_dirs: d.skipped.dirs(),
        ..Default::default()
    };
    if d.skipped.any() {
        eprintln!(
            "{}",
            crate::sanitize::line(&format!("tracetui: {}", d.skipped.message()))
        );
    }
    for e in &d.errors {
        report_error(e, out, fmt, &mut o)?;
    }
    for (r, res) in crate::source::load_all(&d.runs) {
        match res {
            Ok(loaded) => {
                for t in &loaded.traces {
                    o.traces += 1;
                    o.error_diagnostics += t.diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
                    match fmt {
                        Output::Json => crate::json::write_line(out, &trace_json(t))?,
                        Output::Text => write_text(t, out, verbose)?,
                    }
                }
                super::drop_in_background(loaded);
            }
            Err(e) => {
                let _ = r;
                report_error(&e, out, fmt, &mut o)?;
            }
        }
    }
    if d.skipped.any() {
        // Text output said so on stderr above.
        if fmt == Output::Json {
            crate::json::write_line(out, &json!({"skipped": d.skipped.json()}))?;
        }
    }
    Ok(o)
}

fn report_error(e: &LoadError, out: &mut dyn Write, fmt: Output, o: &mut Outcome) -> std::io::Result<()> {
    match e {
        LoadError::Io { .. } => o.unreadable += 1,
        LoadError::NotATrace { .. } => o.not_traces += 1,
        LoadError::Invalid { .. } => o.invalid += 1,
    }
    match fmt {
        Output::Json => crate::json::write_line(out, &error_json(e)),
        Output::Text => {
            writeln!(out, "{}", crate::sanitize::line(&format!("error: {e}")))?;
            if let LoadError::Invalid { diagnostics, .. } = e {
                for d in diagnostics.iter().take(20) {
                    writeln!(out, "  {}", crate::sanitize::line(&d.to_string()))?;
                }
            }
            Ok(())
        }
    }
}

fn write_text(t: &Trace, out: &mut dyn Write, verbose: bool) -> std::io::Result<()> {
    let c = t.counts();
    let name = t.meta.name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
    let line = format!(
        "{}: {} trace {}{}: {}, {}, {}, {}, status {}",
        t.meta.source.display(),
        t.meta.format,
        t.meta.id,
        name,
        super::count(c.events, "event"),
        super::count(c.tool_calls, "tool call"),
        super::count(c.llm_calls, "LLM call"),
        super::count(c.errors, "error"),
        t.meta.status.as_str()
    );
    writeln!(out, "{}", crate::sanitize::line(&line))?;
    if let Some(u) = super::usage::text(&super::usage::of(t)) {
        writeln!(out, "  {}", crate::sanitize::line(&u))?;
    }
    if verbose && !t.skipped.is_empty() {
        let list: Vec<String> = t.skipped.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let line = format!("  skipped (record types this build does not read): {}", list.join(", "));
        writeln!(out, "{}", crate::sanitize::line(&line))?;
    }
    let shown = 50;
    for d in t.diagnostics.iter().take(shown) {
        writeln!(out, "  {}", crate::sanitize::line(&d.to_string()))?;
    }
    if t.diagnostics.len() > shown {
        writeln!(
            out,
            "  ... and {} more",
            super::count(t.diagnostics.len() - shown, "diagnostic")
        )?;
    }
    Ok(())
}
