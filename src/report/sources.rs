//! `tracetui sources`: the places tracetui looks in when given no PATH, whether each exists and
//! how many runs it holds.

use crate::output::Output;
use crate::source::places::Resolved;
use std::io::Write;

/// One place and what a scan of it found.
pub struct Row<'a> {
    pub place: &'a Resolved,
    pub exists: bool,
    /// Run sources found (a file that holds several runs, as a dataset does, counts once).
    pub runs: usize,
    pub skipped: crate::source::Skipped,
    /// Paths in it that could not be read.
    pub unreadable: usize,
}

/// Scan each place on its own (so that each has its count).
pub fn scan<'a>(places: &'a [Resolved], forced: Option<&'static dyn crate::formats::Format>) -> Vec<Row<'a>> {
    places
        .iter()
        .map(|p| {
            let exists = p.exists();
            let d = if exists {
                crate::source::discover_places(std::slice::from_ref(p), forced)
            } else {
                Default::default()
            };
            Row {
                place: p,
                exists,
                runs: d.runs.len(),
                skipped: d.skipped,
                unreadable: d.errors.len(),
            }
        })
        .collect()
}

pub fn write(rows: &[Row], out: &mut dyn Write, fmt: Output) -> std::io::Result<()> {
    match fmt {
        Output::Json => {
            for r in rows {
                let mut v = serde_json::json!({
                    "agent": r.place.place.agent,
                    "exists": r.exists,
                    "runs": r.runs,
                    "env": r.place.via,
                    "unreadable": r.unreadable,
                });
                crate::json::put_path(&mut v, "path", &r.place.path);
                if r.skipped.any() {
                    v["skipped"] = r.skipped.json();
                }
                crate::json::write_line(out, &v)?;
            }
        }
        Output::Text => {
            writeln!(out, "{:<16} {:<7} {:>6}  PATH", "AGENT", "EXISTS", "RUNS")?;
            for r in rows {
                let mut path = r.place.path.display().to_string();
                if let Some(v) = r.place.via {
                    path.push_str(&format!("  (from {v})"));
                }
                let mut notes = Vec::new();
                if r.unreadable > 0 {
                    notes.push(format!("{} unreadable", r.unreadable));
                }
                if r.skipped.any() {
                    notes.push(format!(
                        "{} not searched: {}",
                        crate::report::count_as(r.skipped.dirs(), "directory", "directories"),
                        r.skipped.reason()
                    ));
                }
                if !notes.is_empty() {
                    path.push_str(&format!("  [{}]", notes.join("; ")));
                }
                let line = format!(
                    "{:<16} {:<7} {:>6}  {}",
                    r.place.place.agent,
                    if r.exists { "yes" } else { "no" },
                    if r.exists { r.runs.to_string() } else { "-".into() },
                    path
                );
                writeln!(out, "{}", crate::sanitize::line(&line))?;
            }
        }
    }
    Ok(())
}
