//! One rule for whether a run is running, stale or ended (DESIGN §8), for `ls`, its JSON and
//! the explorer alike. A run is *running* when its records say so (the format decides: an
//! AgentDbg `run.json` that says `running`, a Claude Code call still waiting for its result, a
//! Codex turn still open, an OTLP trace whose root span has not ended). A running run whose
//! files nothing has written for [`STALE`] is *stale*: the agent died or was stopped without
//! writing its end. Every other run has *ended*, as `ok`, `error` or `unknown` (the format
//! records no outcome).

use crate::model::RunStatus;
use std::path::Path;
use std::time::Duration;

/// How long a running run may go without a write before it is stale.
pub const STALE: Duration = Duration::from_secs(10 * 60);

/// What a run is, by the rule above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    Running,
    Stale,
    Ok,
    Error,
    Unknown,
}

impl Liveness {
    /// The word `ls`, its JSON (`"status"`) and the runs list's filter (`status:`) use.
    pub fn as_str(self) -> &'static str {
        match self {
            Liveness::Running => "running",
            Liveness::Stale => "stale",
            Liveness::Ok => "ok",
            Liveness::Error => "error",
            Liveness::Unknown => "unknown",
        }
    }
}

/// The rule: `status` as the run's records say it, `quiet` how long nothing in its source was
/// written (see [`quiet_for`]), `after` the threshold ([`STALE`]; the explorer's tests set
/// their own).
pub fn liveness(status: RunStatus, quiet: Option<Duration>, after: Duration) -> Liveness {
    match status {
        RunStatus::Running if quiet.is_some_and(|q| q > after) => Liveness::Stale,
        RunStatus::Running => Liveness::Running,
        RunStatus::Ok => Liveness::Ok,
        RunStatus::Error => Liveness::Error,
        RunStatus::Unknown => Liveness::Unknown,
    }
}

/// The rule for a run of the source at `path`, now.
pub fn now(status: RunStatus, path: &Path) -> Liveness {
    liveness(status, quiet_for(path, status), STALE)
}

/// How long the newest file of a source that says it is running (the source itself, or a
/// file directly inside a run directory) has not been written. `None` for a run that does not
/// say it is running (nothing to measure), or when the times cannot be read.
pub fn quiet_for(path: &Path, status: RunStatus) -> Option<Duration> {
    if status != RunStatus::Running {
        return None;
    }
    let newest = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    // One stat for a file (a warm start looks at every running session).
    let meta = std::fs::metadata(path).ok()?;
    let last = if meta.is_dir() {
        std::fs::read_dir(path)
            .into_iter()
            .flatten()
            .flatten()
            .take(1000)
            .filter_map(|e| newest(&e.path()))
            .chain(meta.modified().ok())
            .max()
    } else {
        meta.modified().ok()
    };
    // A time in the future (a clock set back) counts as just written.
    last.map(|t| t.elapsed().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_turns_stale_after_the_quiet_time_and_ended_runs_stay_as_they_are() {
        let h = Duration::from_secs(3600);
        assert_eq!(liveness(RunStatus::Running, None, STALE), Liveness::Running);
        assert_eq!(liveness(RunStatus::Running, Some(STALE), STALE), Liveness::Running);
        assert_eq!(liveness(RunStatus::Running, Some(h), STALE), Liveness::Stale);
        assert_eq!(liveness(RunStatus::Ok, Some(h), STALE), Liveness::Ok);
        assert_eq!(liveness(RunStatus::Error, Some(h), STALE), Liveness::Error);
        assert_eq!(liveness(RunStatus::Unknown, Some(h), STALE), Liveness::Unknown);
    }

    #[test]
    fn the_quiet_time_is_the_newest_write_in_the_source() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("events.jsonl");
        std::fs::write(&f, "{}\n").unwrap();
        let old = std::time::SystemTime::now() - Duration::from_secs(7200);
        std::fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let q = quiet_for(&f, RunStatus::Running).unwrap();
        assert!(q >= Duration::from_secs(7000), "{q:?}");
        assert_eq!(now(RunStatus::Running, &f), Liveness::Stale);
        assert_eq!(quiet_for(&f, RunStatus::Ok), None);
        // A run directory: its newest file decides (here a fresh one beside the old one).
        std::fs::write(d.path().join("run.json"), "{}").unwrap();
        assert!(quiet_for(d.path(), RunStatus::Running).unwrap() < Duration::from_secs(60));
        assert_eq!(now(RunStatus::Running, d.path()), Liveness::Running);
    }
}
