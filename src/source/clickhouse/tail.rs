//! `tracetui tail --no-tui clickhouse://…?trace=ID`: the run's events as they are inserted,
//! one line each, as `tail` prints a file's ([`crate::tail::print::line`]).
//!
//! The run is fetched again whenever its span count or latest end moves
//! ([`super::live::trace_state`]); the events not printed before are printed, each once, known
//! by their span's id. A span is inserted once it has ended, so no call is pending here.

use super::live::{POLL, trace_state};
use super::runs::{client, load_url};
use crate::output::Output;
use std::collections::HashSet;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Print the run's events as they come until `stop` is set. `poll`: how often to look
/// (default [`POLL`]); `from_start`: print what is there already first.
pub fn follow_print(
    url: &str,
    fmt: Output,
    poll: Option<Duration>,
    from_start: bool,
    out: &mut dyn Write,
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    let c = client(url).map_err(anyhow::Error::msg)?;
    let Some(id) = c.source.trace.clone() else {
        anyhow::bail!(
            "{}: which run? add ?trace=ID (`tracetui ls {}` lists them)",
            c.source.display(),
            c.source.display()
        );
    };
    let url = c.source.display();
    let poll = poll.unwrap_or(POLL);
    let mut seen: HashSet<String> = HashSet::new();
    let mut last = None;
    let mut first = true;
    let mut said: Option<String> = None;
    while !stop.load(Ordering::Relaxed) {
        let step = (|| -> anyhow::Result<()> {
            let now = trace_state(&c, &id)?;
            if Some(now) == last {
                return Ok(());
            }
            // A run not begun yet (no span in the window) is waited for: all it prints is new.
            if now.spans == 0 {
                last = Some(now);
                first = false;
                return Ok(());
            }
            let loaded = load_url(&url)?;
            for t in &loaded.traces {
                for i in 0..t.len() as u32 {
                    let sid = t.str(t.event(i).source_id);
                    let key = if sid.is_empty() {
                        format!("#{i}")
                    } else {
                        sid.to_string()
                    };
                    if seen.insert(key) && (from_start || !first) {
                        crate::tail::print::line(fmt, t, i, None, out)?;
                    }
                }
            }
            out.flush()?;
            last = Some(now);
            first = false;
            Ok(())
        })();
        match step {
            Ok(()) => said = None,
            // The first look fails the command; later ones are said once and tried again.
            Err(e) if last.is_none() => return Err(e),
            Err(e) => {
                let e = format!("{e:#}");
                if said.as_deref() != Some(e.as_str()) {
                    eprintln!("{}", crate::sanitize::line(&format!("tracetui: {e}")));
                    said = Some(e);
                }
            }
        }
        let t0 = Instant::now();
        while t0.elapsed() < poll && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50).min(poll));
        }
    }
    Ok(())
}
