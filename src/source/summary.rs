//! Cheap summaries of large sessions: the runs list of thousands of sessions reads each one's
//! first and last lines, not all of it (issue 15); the full load happens when a run is opened.

use super::RunRef;
use crate::formats::{LoadError, Summary};
use std::io::{Read, Seek, SeekFrom};

/// The summary of a loaded run, priced: its counts ([`Summary::unpriced`]) and its tokens by
/// kind and cost at the current prices ([`crate::cost::usage::run_cost`]). Every loaded run's
/// row (`ls`, the runs list, the summary cache) is made here, above formats/, which know no
/// prices.
pub fn of(t: &crate::model::Trace) -> Summary {
    let cost = crate::cost::usage::run_cost(t, crate::cost::usage::current()).total;
    Summary {
        cost: Some(cost),
        ..Summary::unpriced(t)
    }
}

/// Formats whose every file is one run (a session): their large files are summarized from
/// their ends. A format whose file may hold several runs (Assay, OpenAI-chat datasets) is
/// summarized by the format itself. Add a format's id when its files are sessions.
pub const ONE_RUN_PER_FILE: &[&str] = &["claude-code", "codex", "iflow", "qwen-code"];

/// Files up to this size are summarized in full (exact counts; 2,000 small sessions list in
/// well under the `ls` budget).
pub const FULL_UP_TO: u64 = 512 << 10;
/// How much of each end of a larger file is read.
const END: u64 = 64 << 10;

/// The summary of a large one-run file from its head (read with the format's own parser:
/// id, name, start) and its tail (the last `timestamp`: the end). Counts are left unknown
/// (the list shows `-` until the run is opened), and so is the status, which only the whole
/// session decides. `None` when the file is not such a file, or its head says nothing.
pub fn from_ends(run: &RunRef) -> Option<Result<Vec<Summary>, LoadError>> {
    if !ONE_RUN_PER_FILE.contains(&run.format.id()) {
        return None;
    }
    let meta = std::fs::metadata(&run.path).ok()?;
    if !meta.is_file() || meta.len() <= FULL_UP_TO {
        return None;
    }
    // The head alone (the runs nested in it are not read: their counts are unknown too).
    let mut f = run.format.follow(&run.path)?;
    if let Err(e) = f.poll_some(END) {
        return Some(Err(e));
    }
    let head = f.sink.traces.first()?;
    let mut s = Summary::unpriced(head);
    s.events = None;
    s.tool_calls = None;
    s.llm_calls = None;
    s.errors = None;
    s.tokens = None;
    s.cost = None;
    s.problems = None;
    s.status = crate::model::RunStatus::Unknown;
    let end = last_timestamp(&run.path, meta.len());
    s.duration = match (s.start, end) {
        (Some(a), Some(b)) if b >= a => Some(b - a),
        _ => None,
    };
    Some(Ok(vec![s]))
}

/// The last top-level `timestamp` in the file's last lines.
fn last_timestamp(path: &std::path::Path, len: u64) -> Option<i64> {
    let mut f = std::fs::File::open(path).ok()?;
    let from = len.saturating_sub(END);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut buf = Vec::with_capacity(END as usize);
    f.take(END).read_to_end(&mut buf).ok()?;
    // The first line may be cut (unless the read starts the file).
    let body = if from == 0 {
        &buf[..]
    } else {
        let nl = memchr::memchr(b'\n', &buf)?;
        &buf[nl + 1..]
    };
    body.split(|&b| b == b'\n').rev().find_map(|line| {
        #[derive(serde::Deserialize)]
        struct Stamp<'a> {
            #[serde(borrow)]
            timestamp: Option<&'a serde_json::value::RawValue>,
        }
        let s: Stamp = serde_json::from_slice(line).ok()?;
        let v: serde_json::Value = serde_json::from_str(s.timestamp?.get()).ok()?;
        crate::model::parse_timestamp(&v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A Claude Code session padded past FULL_UP_TO with prompts.
    fn big_session(dir: &std::path::Path) -> std::path::PathBuf {
        let p = dir.join("s.jsonl");
        let mut f = std::fs::File::create(&p).unwrap();
        let line = |uuid: usize, parent: Option<usize>, ts: &str, text: &str| {
            serde_json::json!({
                "parentUuid": parent.map(|p| format!("u{p}")), "isSidechain": false,
                "sessionId": "sess-big", "type": "user", "uuid": format!("u{uuid}"),
                "timestamp": ts, "cwd": "/w",
                "message": {"role": "user", "content": text}
            })
            .to_string()
        };
        writeln!(f, "{}", line(0, None, "2026-04-02T10:00:00.000Z", "Summarize the logs")).unwrap();
        let pad = "x".repeat(1000);
        for i in 1..700 {
            writeln!(f, "{}", line(i, Some(i - 1), "2026-04-02T10:05:00.000Z", &pad)).unwrap();
        }
        writeln!(f, "{}", line(700, Some(699), "2026-04-02T11:00:00.000Z", "done")).unwrap();
        p
    }

    #[test]
    fn a_large_session_is_summarized_from_its_ends() {
        let d = tempfile::tempdir().unwrap();
        let p = big_session(d.path());
        assert!(std::fs::metadata(&p).unwrap().len() > FULL_UP_TO);
        let run = RunRef {
            path: p.clone(),
            format: crate::formats::by_id("claude-code").unwrap(),
            root: std::sync::Arc::from(d.path()),
            nested: None,
        };
        let s = from_ends(&run).unwrap().unwrap();
        assert_eq!(s.len(), 1);
        let loaded = crate::formats::by_id("claude-code").unwrap().load(&p).unwrap();
        let full: Vec<Summary> = loaded.traces.iter().map(of).collect();
        assert_eq!(s[0].id, full[0].id);
        assert_eq!(s[0].name, full[0].name);
        assert_eq!(s[0].start, full[0].start);
        assert_eq!(s[0].duration, Some(3_600_000_000_000), "start to the last timestamp");
        assert_eq!(s[0].duration, full[0].duration);
        assert_eq!(s[0].tool_calls, None, "counts need the whole session");
        // Through RunRef::summarize, as ls and the runs list call it.
        assert_eq!(run.summarize().unwrap()[0].tool_calls, None);
    }

    #[test]
    fn small_files_and_other_formats_are_summarized_in_full() {
        let small = RunRef {
            path: "sample-traces/claude-code/7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f.jsonl".into(),
            format: crate::formats::by_id("claude-code").unwrap(),
            root: std::sync::Arc::from(std::path::Path::new("sample-traces")),
            nested: None,
        };
        assert!(from_ends(&small).is_none());
        assert!(small.summarize().unwrap()[0].tool_calls.is_some());
        let d = tempfile::tempdir().unwrap();
        let p = big_session(d.path());
        let other = RunRef {
            path: p,
            format: crate::formats::by_id("openai-chat").unwrap(),
            root: std::sync::Arc::from(d.path()),
            nested: None,
        };
        assert!(from_ends(&other).is_none(), "only formats of one run per file");
    }
}
