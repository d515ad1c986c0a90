//! `tracetui export`: take a run elsewhere, as one self-contained HTML page, a Markdown
//! transcript for a pull request, or OTLP/JSON for the OpenTelemetry Collector and the tools
//! behind it. Each writer takes a loaded [`Trace`] and a `Write`; nothing here knows about
//! terminals, and nothing is ever written into a trace directory ([`check_output`]).

pub mod command;
pub mod html;
pub mod markdown;
pub mod otlp;

use crate::model::Trace;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What a run is exported to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum To {
    Html,
    Markdown,
    #[value(name = "otlp-json")]
    OtlpJson,
}

impl To {
    pub fn extension(self) -> &'static str {
        match self {
            To::Html => "html",
            To::Markdown => "md",
            // The OpenTelemetry file exporter's JSON Lines (one TracesData a line).
            To::OtlpJson => "otlp.jsonl",
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            To::Html => "HTML",
            To::Markdown => "Markdown",
            To::OtlpJson => "OTLP/JSON",
        }
    }
}

/// Write one run in the chosen form.
pub fn write(t: &Trace, to: To, out: &mut dyn Write) -> io::Result<()> {
    match to {
        To::Html => html::write(t, out),
        To::Markdown => markdown::write(t, out),
        To::OtlpJson => otlp::write(t, out),
    }
}

/// A file name for a run's export: its id (or name) reduced to safe characters, so that an
/// id from a trace can neither leave the output directory nor hide what it is.
pub fn file_name(t: &Trace, to: To) -> String {
    format!("{}.{}", file_stem(t), to.extension())
}

/// [`file_name`] without its extension.
pub fn file_stem(t: &Trace) -> String {
    let base = if t.meta.id.trim().is_empty() {
        t.meta.name.clone().unwrap_or_default()
    } else {
        t.meta.id.clone()
    };
    let mut s: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    // No hidden files, no `..`.
    let trimmed = s.trim_start_matches('.').to_string();
    s = trimmed;
    if s.is_empty() {
        s = "run".into();
    }
    s
}

/// The directories a run's data lives in: an export must never be written there.
pub fn trace_dirs(t: &Trace) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut push = |p: &Path| {
        let dir = if p.is_dir() { Some(p) } else { p.parent() };
        if let Some(d) = dir {
            let d = if d.as_os_str().is_empty() { Path::new(".") } else { d };
            let c = d.canonicalize().unwrap_or_else(|_| d.to_path_buf());
            if !out.contains(&c) {
                out.push(c);
            }
        }
    };
    push(&t.meta.source);
    for f in &t.files {
        push(f);
    }
    out
}

/// The nearest existing ancestor of `p`, canonical, with the rest of the path after it.
fn resolve(p: &Path) -> PathBuf {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    let mut base = abs.clone();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(c) = base.canonicalize() {
            let mut out = c;
            for r in rest.iter().rev() {
                out.push(r);
            }
            return out;
        }
        match (base.file_name().map(|n| n.to_os_string()), base.parent()) {
            (Some(n), Some(parent)) => {
                rest.push(n);
                base = parent.to_path_buf();
            }
            _ => return abs,
        }
    }
}

/// Refuse an output path inside any of `protected` (the PATH given, the trace directories):
/// tracetui never writes into a trace directory.
pub fn check_output(out: &Path, protected: &[PathBuf]) -> Result<(), String> {
    let o = resolve(out);
    for p in protected {
        let p = resolve(p);
        let dir = if p.is_file() {
            p.parent().map(Path::to_path_buf).unwrap_or(p)
        } else {
            p
        };
        if o.starts_with(&dir) {
            return Err(format!(
                "{}: inside the trace directory {}; tracetui never writes into a trace directory (choose another -o)",
                out.display(),
                dir.display()
            ));
        }
    }
    Ok(())
}

/// A short label of an event's kind (a message carries its role).
/// Cut a string to at most `max` bytes on a character boundary; the bytes left out.
pub(crate) fn cut_bytes(s: &str, max: usize) -> (&str, usize) {
    if s.len() <= max {
        return (s, 0);
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    (&s[..i], s.len() - i)
}

/// A value as text to show: a string as it is, anything else as pretty JSON.
pub(crate) fn pretty(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    }
}

/// Whether a value is a list of chat messages (`[{role, content|parts|tool_calls}...]`).
pub(crate) fn is_conversation(v: &serde_json::Value) -> bool {
    v.as_array().is_some_and(|a| {
        !a.is_empty()
            && a.iter().all(|m| {
                m.get("role").and_then(|r| r.as_str()).is_some()
                    && (m.get("content").is_some() || m.get("parts").is_some() || m.get("tool_calls").is_some())
            })
    })
}

/// The text of a message's content: a string, or the text parts of a list; other parts as JSON.
pub(crate) fn message_text(m: &serde_json::Value) -> String {
    use serde_json::Value;
    let mut out = String::new();
    let content = m.get("content").or_else(|| m.get("parts"));
    match content {
        Some(Value::String(s)) => out.push_str(s),
        Some(Value::Array(parts)) => {
            for p in parts {
                if !out.is_empty() {
                    out.push('\n');
                }
                match p {
                    Value::String(s) => out.push_str(s),
                    _ => match p.get("text").or_else(|| p.get("content")).and_then(Value::as_str) {
                        Some(t) => out.push_str(t),
                        None => out.push_str(&pretty(p)),
                    },
                }
            }
        }
        Some(Value::Null) | None => {}
        Some(other) => out.push_str(&pretty(other)),
    }
    if let Some(tc) = m.get("tool_calls").filter(|t| !t.is_null()) {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str("tool calls: ");
        out.push_str(&pretty(tc));
    }
    out
}

/// The run's header facts, shared by the HTML and Markdown pages.
pub(crate) struct Header {
    pub title: String,
    pub rows: Vec<(&'static str, String)>,
    pub error: bool,
}

pub(crate) fn header(t: &Trace) -> Header {
    use crate::words::{count, dur_or_dash, ts_or_dash};
    let c = t.counts();
    let (start, end) = t.time_span();
    let title = t
        .meta
        .name
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| t.meta.id.clone());
    let mut rows = vec![
        ("Run", t.meta.id.clone()),
        ("Format", t.meta.format.to_string()),
        ("Status", t.meta.status.as_str().to_string()),
        (
            "Started",
            start
                .map(|s| format!("{} UTC", ts_or_dash(Some(s))))
                .unwrap_or("-".into()),
        ),
        (
            "Ended",
            end.map(|s| format!("{} UTC", ts_or_dash(Some(s))))
                .unwrap_or("-".into()),
        ),
        ("Duration", dur_or_dash(t.duration())),
        (
            "Events",
            format!(
                "{}: {}, {}, {}",
                c.events,
                count(c.tool_calls, "tool call"),
                count(c.llm_calls, "LLM call"),
                count(c.errors, "error")
            ),
        ),
    ];
    if let Some(m) = &t.meta.model {
        rows.push(("Model", m.clone()));
    }
    let rc = crate::cost::usage::run_cost(t, crate::cost::Prices::builtin());
    if rc.total.total_tokens > 0 {
        let k = rc.total.tokens;
        let mut parts = vec![format!("{} in", k.input), format!("{} out", k.output)];
        if k.cache_read > 0 {
            parts.push(format!("{} cache read", k.cache_read));
        }
        if k.cache_write > 0 {
            parts.push(format!("{} cache write", k.cache_write));
        }
        if k.reasoning > 0 {
            parts.push(format!("{} reasoning", k.reasoning));
        }
        rows.push(("Tokens", format!("{} ({})", rc.total.total_tokens, parts.join(", "))));
        let cost = rc.total.cost_text();
        let cost = if cost == "?" {
            "unknown (no price for the model)".to_string()
        } else {
            cost
        };
        rows.push(("Cost", cost));
    }
    rows.push(("Source", t.meta.source.display().to_string()));
    Header {
        title,
        rows,
        error: t.meta.status == crate::model::RunStatus::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{RunMeta, Trace};

    #[test]
    fn file_names_are_safe() {
        let mut t = Trace::new(RunMeta {
            id: "../../etc/passwd".into(),
            ..Default::default()
        });
        assert_eq!(file_name(&t, To::Html), "_.._etc_passwd.html");
        t.meta.id = "..".into();
        assert_eq!(file_name(&t, To::Markdown), "run.md");
        t.meta.id = "abc-1".into();
        assert_eq!(file_name(&t, To::OtlpJson), "abc-1.otlp.jsonl");
    }

    #[test]
    fn output_inside_a_trace_directory_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let runs = d.path().join("runs");
        std::fs::create_dir_all(runs.join("r1")).unwrap();
        std::fs::write(runs.join("r1/events.jsonl"), "").unwrap();
        let protected = vec![runs.clone()];
        assert!(check_output(&runs.join("r1/out.html"), &protected).is_err());
        assert!(check_output(&runs.join("new/dir/out.html"), &protected).is_err());
        assert!(check_output(&runs.join("r1/../x.md"), &protected).is_err());
        assert!(check_output(&d.path().join("out.html"), &protected).is_ok());
        // A trace file protects its directory.
        let file = vec![runs.join("r1/events.jsonl")];
        assert!(check_output(&runs.join("r1/x.html"), &file).is_err());
        assert!(check_output(&runs.join("x.html"), &file).is_ok());
    }

    #[test]
    fn cut_bytes_keeps_characters_whole() {
        assert_eq!(cut_bytes("héllo", 2), ("h", 5));
        assert_eq!(cut_bytes("abc", 5), ("abc", 0));
    }
}
