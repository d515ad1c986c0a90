//! Loads that tell how far they are (`Format::load_watched`): the explorer shows the part a
//! whole-document format has read while it reads the rest. The parts must be what the full
//! load gives, cut short: the same events in the same order, none made up.

use serde_json::json;
use std::path::Path;
use tracetui::formats::{Format, Watcher, by_id};
use tracetui::model::Trace;

/// Takes the part at every call, as a watcher that shows them all would.
#[derive(Default)]
struct Every {
    progress: Vec<(u64, u64)>,
    parts: Vec<Vec<String>>,
}

impl Watcher for Every {
    fn progress(&mut self, read: u64, total: u64, partial: &mut dyn FnMut() -> Trace) {
        self.progress.push((read, total));
        self.parts.push(ids(&partial()));
    }
}

fn ids(t: &Trace) -> Vec<String> {
    t.walk()
        .into_iter()
        .map(|(i, _)| format!("{:?} {}", t.event(i).kind, t.str(t.event(i).source_id)))
        .collect()
}

fn check(format: &dyn Format, path: &Path) {
    let mut w = Every::default();
    let watched = format.load_watched(path, &mut w).unwrap();
    let full = format.load(path).unwrap();
    let all = ids(&full.traces[0]);
    assert_eq!(ids(&watched.traces[0]), all, "a watched load gives the same trace");
    let len = std::fs::metadata(path).unwrap().len();
    assert!(
        w.progress.len() >= 3,
        "several parts of a file of several chunks: {:?}",
        w.progress
    );
    assert!(w.progress.windows(2).all(|p| p[0].0 <= p[1].0), "{:?}", w.progress);
    assert!(w.progress.iter().all(|&(read, total)| read <= total && total == len));
    for part in &w.parts {
        // The run event first, then events in the full load's order (a part may lack the
        // run's task: it comes later in the document).
        assert!(part.len() <= all.len());
        assert!(
            part[1..] == all[1..part.len()],
            "a part is the start of the whole: {} of {} events; first {:?}, whole {:?}",
            part.len(),
            all.len(),
            &part[..part.len().min(6)],
            &all[..all.len().min(6)]
        );
    }
    assert!(w.parts.windows(2).all(|p| p[0].len() <= p[1].len()));
}

#[test]
fn swe_agent_parts_are_the_start_of_the_trajectory() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("run.traj");
    let mut out = String::from(r#"{"trajectory": ["#);
    let mut i = 0;
    while out.len() < 12 << 20 {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&json!({"action": format!("edit {i}"), "observation": "o".repeat(3000)}).to_string());
        i += 1;
    }
    out.push_str(r#"], "history": [{"role": "user", "content": "task"}], "info": {"exit_status": "submitted"}}"#);
    std::fs::write(&p, out).unwrap();
    check(by_id("swe-agent").unwrap(), &p);
}

#[test]
fn openhands_v0_parts_are_the_start_of_the_trajectory() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("trajectory.json");
    let mut out = String::from("[");
    out.push_str(&json!({"id": 0, "source": "user", "action": "message", "args": {"content": "Fix it"}}).to_string());
    let mut c = 0;
    while out.len() < 12 << 20 {
        let i = 1 + 2 * c;
        let act = json!({"id": i, "source": "agent", "action": "run", "args": {"command": format!("ls {c}")},
            "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": format!("t{c}"),
                "model_response": {"id": format!("r{c}"), "model": "m", "usage": {"prompt_tokens": 10, "completion_tokens": 2}}}});
        let obs = json!({"id": i + 1, "source": "agent", "cause": i, "observation": "run", "content": "x".repeat(3000),
            "extras": {"metadata": {"exit_code": 0}}});
        out.push_str(&format!(",{act},{obs}"));
        c += 1;
    }
    out.push(']');
    std::fs::write(&p, out).unwrap();
    check(by_id("openhands").unwrap(), &p);
}

#[test]
fn gemini_cli_parts_are_the_start_of_the_session() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("session-2026-05-02T09-15-1a2b3c4d.jsonl");
    let mut out = String::new();
    out.push_str(r#"{"sessionId":"s1","projectHash":"f00d","startTime":"2026-05-02T09:15:00.000Z","kind":"main"}"#);
    out.push('\n');
    let mut i = 0;
    while out.len() < 12 << 20 {
        // Two seconds a turn from 00:00 (the tree orders messages by time).
        let at = |s: u64| format!("2026-05-02T{:02}:{:02}:{:02}.000Z", s / 3600, s / 60 % 60, s % 60);
        let user = json!({"id": format!("u{i}"), "timestamp": at(2 * i), "type": "user", "content": [{"text": "x".repeat(2000)}]});
        let reply = json!({"id": format!("g{i}"), "timestamp": at(2 * i + 1), "type": "gemini", "content": "ok",
            "model": "gemini-2.5-pro", "tokens": {"input": 10, "output": 2, "total": 12},
            "toolCalls": [{"id": format!("c{i}"), "name": "read_file", "args": {}, "status": "success"}]});
        out.push_str(&format!("{user}\n{reply}\n"));
        i += 1;
    }
    std::fs::write(&p, out).unwrap();
    check(by_id("gemini-cli").unwrap(), &p);
}
