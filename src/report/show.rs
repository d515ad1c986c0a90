//! `tracetui show`: the normalized event tree, as indented text or as JSON of the model.

use crate::formats;
use crate::model::{EventKind, NO_PARENT, Trace, format_duration};
use crate::output::Output;
use crate::report::{dur_or_dash, short, ts_or_dash};
use serde_json::{Value, json};
use std::io::Write;

pub fn run(traces: &[Trace], out: &mut dyn Write, fmt: Output) -> std::io::Result<()> {
    for t in traces {
        match fmt {
            Output::Json => write_json(t, out)?,
            Output::Text => text(t, out)?,
        }
    }
    Ok(())
}

/// Tree guides are drawn this many levels deep; deeper rows print their depth instead, so a
/// chain of 100,000 nested events prints in linear, not quadratic, space.
const MAX_DRAWN_DEPTH: usize = 32;

fn text(t: &Trace, out: &mut dyn Write) -> std::io::Result<()> {
    let c = t.counts();
    let (start, _) = t.time_span();
    let header = format!(
        "{} {} [{}] {} {} · {}, {}, {}, {}{} · {}",
        t.meta.format,
        t.meta.name.as_deref().unwrap_or(&t.meta.id),
        t.meta.status.as_str(),
        ts_or_dash(start),
        dur_or_dash(t.duration()),
        super::count(c.events, "event"),
        super::count(c.tool_calls, "tool call"),
        super::count(c.llm_calls, "LLM call"),
        super::count(c.errors, "error"),
        if c.tokens > 0 {
            format!(", {}", super::count(c.tokens as usize, "token"))
        } else {
            String::new()
        },
        t.meta.source.display()
    );
    writeln!(out, "{}", crate::sanitize::line(&header))?;
    if let Some(u) = super::usage::text(&super::usage::of(t)) {
        writeln!(out, "  {}", crate::sanitize::line(&u))?;
    }
    // Tree glyphs need to know whether each ancestor was the last of its siblings.
    let walk = t.walk();
    let mut last_at_depth: Vec<bool> = Vec::new();
    for (i, depth) in walk {
        let e = t.event(i);
        let siblings: &[u32] = if e.parent == NO_PARENT {
            &t.roots
        } else {
            t.children(e.parent)
        };
        let is_last = siblings.last() == Some(&i);
        last_at_depth.truncate(depth);
        let mut prefix = String::new();
        for &l in last_at_depth.iter().take(MAX_DRAWN_DEPTH) {
            prefix.push_str(if l { "   " } else { "│  " });
        }
        if depth > MAX_DRAWN_DEPTH {
            prefix.push_str(&format!("⋯{depth} "));
        }
        prefix.push_str(if is_last { "└─ " } else { "├─ " });
        last_at_depth.push(is_last);
        writeln!(out, "{}{}", prefix, crate::sanitize::line(&row(t, i, start)))?;
    }
    for d in &t.diagnostics {
        writeln!(out, "{}", crate::sanitize::line(&d.to_string()))?;
    }
    Ok(())
}

/// Characters of a call's gist on a line of `show` and `tail --no-tui`.
pub const GIST_CHARS: usize = 80;

/// One event as a line: kind, name, status, offset, duration, tokens, the call's gist (or its
/// short args) → result.
pub fn row(t: &Trace, i: u32, run_start: Option<i64>) -> String {
    let e = t.event(i);
    let mut s = format!("{} {} [{}]", e.kind.label(), t.name(i), e.status.as_str());
    if let (Some(st), Some(r0)) = (e.start.get(), run_start) {
        s.push_str(&format!(" +{}", format_duration(st.saturating_sub(r0))));
    }
    if let Some(d) = e.duration.get() {
        s.push_str(&format!(" {}", format_duration(d)));
    }
    if let Some(n) = e.usage.get().and_then(|u| u.sum()) {
        s.push_str(&format!(" {n} tok"));
    }
    let p = formats::payload(t, e);
    // A tool call by its gist (the command, the path: what it did), else its arguments.
    if let Some(g) = formats::gist::from_payload(t, e, &p) {
        s.push_str(&format!("  {}", crate::report::cut(&g, GIST_CHARS)));
    } else if let Some(inp) = &p.input {
        s.push_str(&format!("  {}", short(inp, 60)));
    }
    if let Some(o) = &p.output {
        s.push_str(&format!(" → {}", short(o, 60)));
    }
    if let Some(err) = &p.error {
        let k = err.kind.as_deref().map(|k| format!("{k}: ")).unwrap_or_default();
        s.push_str(&format!("  ✗ {k}{}", crate::report::cut(&err.message, 80)));
    }
    s
}

pub fn event_json(t: &Trace, i: u32) -> Value {
    let e = t.event(i);
    let p = formats::payload(t, e);
    let mut v = json!({
        "index": i,
        "id": (!e.source_id.is_empty()).then(|| t.str(e.source_id)),
        "parent": (e.parent != NO_PARENT).then_some(e.parent),
        "children": t.children(i),
        "kind": e.kind.as_str(),
        "name": t.name(i),
        "status": e.status,
        "start": e.start.map(crate::json::ts),
        "start_ns": e.start,
        "duration_ms": e.duration.map(|d| d as f64 / 1e6),
        "model": (!e.model.is_empty()).then(|| t.str(e.model)),
        "usage": e.usage.get(),
        "line": (e.origin.line > 0).then_some(e.origin.line),
    });
    if let EventKind::Message(r) = e.kind {
        v["role"] = json!(r.as_str());
    }
    if let Some(x) = p.input {
        v["input"] = x;
    }
    if let Some(x) = p.output {
        v["output"] = x;
    }
    if let Some(x) = p.error {
        v["error"] = serde_json::to_value(x).unwrap_or(Value::Null);
    }
    if !p.extra.is_empty() {
        v["extra"] = Value::Object(p.extra.into_iter().collect());
    }
    v
}

/// The trace as one line of JSON, written as it goes: an event at a time, each payload read
/// from disk, written and dropped (built whole, a 1M-event run took 7.5 GB).
pub fn write_json(t: &Trace, out: &mut dyn Write) -> std::io::Result<()> {
    use crate::json::write;
    let (start, end) = t.time_span();
    let mut head = json!({
        "id": t.meta.id,
        "name": t.meta.name,
        "format": t.meta.format,
        "status": t.meta.status,
        "start": start.map(crate::json::ts),
        "end": end.map(crate::json::ts),
        "model": t.meta.model,
        "attributes": t.meta.all_attributes().cloned().collect::<serde_json::Map<_, _>>(),
    });
    for (k, x) in super::usage::json(&super::usage::of(t)) {
        head[k] = x;
    }
    crate::json::put_path(&mut head, "source", &t.meta.source);
    out.write_all(b"{\"trace\":")?;
    write(out, &head)?;
    out.write_all(b",\"counts\":")?;
    write(out, &t.counts())?;
    out.write_all(b",\"roots\":")?;
    write(out, &t.roots)?;
    out.write_all(b",\"events\":[")?;
    for i in 0..t.len() as u32 {
        if i > 0 {
            out.write_all(b",")?;
        }
        write(out, &event_json(t, i))?;
    }
    out.write_all(b"],\"diagnostics\":")?;
    let diags: Vec<Value> = t.diagnostics.iter().map(super::check::diag_json).collect();
    write(out, &diags)?;
    out.write_all(b"}\n")
}

/// The trace as a JSON value (tests and small traces; output streams with [`write_json`]).
pub fn trace_json(t: &Trace) -> Value {
    let mut buf = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = write_json(t, &mut buf);
    serde_json::from_slice(&buf).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_call_s_row_says_what_it_did() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/session.jsonl");
        let t = formats::load(&path, None).unwrap().traces.remove(0);
        let mut out = Vec::new();
        text(&t, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.contains("tool Read [ok] +5.00s 2.00s  /home/dev/proj/notes.txt → "),
            "{out}"
        );
        assert!(out.contains("tool Bash [error] +6.00s 2.00s  ls missing/ → "), "{out}");
        assert!(
            out.contains("tool Bash [ok] +12.00s 1.00s  wc -w notes.txt → "),
            "{out}"
        );
    }
}
