//! `tracetui check`: load, report format, counts and diagnostics.

use crate::cli::Output;
use crate::formats::LoadError;
use crate::model::{Diagnostic, Severity, Trace};
use crate::source::Discovery;
use serde_json::{Value, json};
use std::io::Write;

/// What `check` found, for the exit code.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub traces: usize,
    pub error_diagnostics: usize,
    pub not_traces: usize,
    pub unreadable: usize,
}

impl Outcome {
    /// 0 clean, 1 diagnostics or non-traces, 2 unreadable input.
    pub fn exit_code(&self) -> i32 {
        if self.unreadable > 0 {
            2
        } else if self.error_diagnostics > 0 || self.not_traces > 0 {
            1
        } else {
            0
        }
    }
}

fn diag_json(d: &Diagnostic) -> Value {
    json!({"line": d.line, "severity": d.severity, "message": d.message})
}

pub fn trace_json(t: &Trace) -> Value {
    let c = t.counts();
    json!({
        "path": t.meta.source.display().to_string(),
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
    })
}

fn error_json(e: &LoadError) -> Value {
    let (path, diags) = match e {
        LoadError::Io { path, .. } | LoadError::NotATrace { path, .. } => (path.clone(), Vec::new()),
        LoadError::Invalid { path, diagnostics, .. } => (path.clone(), diagnostics.iter().map(diag_json).collect()),
    };
    json!({"path": path.display().to_string(), "format": null, "error": e.to_string(), "diagnostics": diags})
}

pub fn run(d: &Discovery, out: &mut dyn Write, fmt: Output) -> std::io::Result<Outcome> {
    let mut o = Outcome::default();
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
                        Output::Json => writeln!(out, "{}", trace_json(t))?,
                        Output::Text => write_text(t, out)?,
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
    Ok(o)
}

fn report_error(e: &LoadError, out: &mut dyn Write, fmt: Output, o: &mut Outcome) -> std::io::Result<()> {
    match e {
        LoadError::Io { .. } => o.unreadable += 1,
        _ => o.not_traces += 1,
    }
    match fmt {
        Output::Json => writeln!(out, "{}", error_json(e)),
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

fn write_text(t: &Trace, out: &mut dyn Write) -> std::io::Result<()> {
    let c = t.counts();
    let name = t.meta.name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
    let line = format!(
        "{}: {} trace {}{}: {} events, {} tool calls, {} LLM calls, {} errors, status {}",
        t.meta.source.display(),
        t.meta.format,
        t.meta.id,
        name,
        c.events,
        c.tool_calls,
        c.llm_calls,
        c.errors,
        t.meta.status.as_str()
    );
    writeln!(out, "{}", crate::sanitize::line(&line))?;
    let shown = 50;
    for d in t.diagnostics.iter().take(shown) {
        writeln!(out, "  {}", crate::sanitize::line(&d.to_string()))?;
    }
    if t.diagnostics.len() > shown {
        writeln!(out, "  ... and {} more diagnostics", t.diagnostics.len() - shown)?;
    }
    Ok(())
}
