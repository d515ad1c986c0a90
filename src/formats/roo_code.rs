//! Roo Code task folders: `tasks/<taskId>/` under VS Code's global storage of the extension
//! `RooVeterinaryInc.roo-cline` (`~/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/`,
//! on macOS `~/Library/Application Support/Code/User/…`). Roo Code is a fork of Cline and
//! keeps Cline's layout (its `GlobalFileNames`: `api_conversation_history.json`,
//! `ui_messages.json`, `task_metadata.json`, plus `history_item.json`), read by Cline's reader
//! (formats/cline.rs: its traps, tokens and drift rule hold here too). Roo's own tools
//! (`apply_diff`, `switch_mode`, `codebase_search`, `update_todo_list`, …) are in that
//! reader's list of tool names. A folder of the layout is Roo Code's when it is below Roo's
//! storage id; `--format roo-code` reads one moved elsewhere.

use super::cline::{ROO_CODE, decode_task_payload, is_task_dir};
use super::{Format, LoadError, Loaded, Probe, Summary};
use crate::model::{Event, Payload, Trace};
use serde_json::Value;
use std::path::Path;

pub struct RooCode;

impl Format for RooCode {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        fork_tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        ROO_CODE.id
    }
    fn describe(&self) -> &'static str {
        ROO_CODE.describe
    }
    fn detect(&self, p: &Probe) -> u8 {
        ROO_CODE.detect(p)
    }
    fn is_run_dir(&self, dir: &Path) -> bool {
        is_task_dir(dir) && ROO_CODE.detect_dir(dir)
    }
    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        ROO_CODE.load(path)
    }
    fn summarize(&self, path: &Path) -> Result<Option<Vec<Summary>>, LoadError> {
        ROO_CODE.summarize(path)
    }
    fn decode_payload(&self, trace: &Trace, event: &Event, raw: &[&[u8]]) -> Payload {
        decode_task_payload(trace, event, raw)
    }
}

/// The tools Roo Code and Kilo Code add to Cline's (their `toolNames`), and Cline's.
pub(crate) fn fork_tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::key_or_generic;
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "apply_diff"
        | "search_replace"
        | "edit_file"
        | "fast_edit_file"
        | "delete_file"
        | "insert_content"
        | "search_and_replace"
        | "edit_file_roo"
        | "edit_file_anthropic"
        | "edit_file_grok"
        | "edit_file_gemini"
        | "edit_file_codex" => by(&["path", "file_path", "target_file"]),
        "codebase_search" => by(&["query"]),
        "switch_mode" => by(&["mode_slug", "reason"]),
        "new_task" => by(&["message", "mode"]),
        "run_slash_command" => by(&["command"]),
        "generate_image" => by(&["prompt", "path"]),
        "fetch_instructions" => by(&["task"]),
        "skill" => by(&["skill", "name"]),
        _ => super::cline::tool_gist(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A task folder below `storage` (a globalStorage id) in a temporary directory.
    pub(crate) fn task_below(storage: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(storage).join("tasks/1767225600000");
        std::fs::create_dir_all(&dir).unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("sample-traces/roo-code/rooveterinaryinc.roo-cline/tasks/1767225600000");
        for e in std::fs::read_dir(src).unwrap().flatten() {
            std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
        (d, dir)
    }

    #[test]
    fn a_task_below_roos_storage_is_roo_codes_and_below_clines_is_clines() {
        let (_d, dir) = task_below("rooveterinaryinc.roo-cline");
        assert_eq!(crate::formats::detect(&dir).unwrap().id(), "roo-code");
        assert!(RooCode.is_run_dir(&dir));
        let l = RooCode.load(&dir).unwrap();
        assert_eq!(l.traces[0].meta.format, "roo-code");
        let s = crate::formats::testing::summaries(&RooCode, &dir).unwrap();
        assert_eq!(s[0].format, "roo-code");
        let (_c, cline) = task_below("saoudrizwan.claude-dev");
        assert_eq!(crate::formats::detect(&cline).unwrap().id(), "cline");
        assert!(!RooCode.is_run_dir(&cline));
        // A task folder below no agent's storage is read as Cline's, as before.
        let (_o, other) = task_below("elsewhere");
        assert_eq!(crate::formats::detect(&other).unwrap().id(), "cline");
    }

    /// A task still going (its last call has no result yet) and a damaged one: the running
    /// call is pending, the damage is said by file and the rest loads.
    #[test]
    fn a_running_task_has_a_pending_call_and_a_damaged_one_loads_the_rest() {
        let (_d, dir) = task_below("rooveterinaryinc.roo-cline");
        let h = dir.join("api_conversation_history.json");
        let mut v: Vec<Value> = serde_json::from_slice(&std::fs::read(&h).unwrap()).unwrap();
        // Cut after the last tool use: its result has not come yet.
        let last_use = v
            .iter()
            .rposition(|m| m["role"] == "assistant" && m.to_string().contains("\"tool_use\""))
            .unwrap();
        v.truncate(last_use + 1);
        std::fs::write(&h, serde_json::to_vec(&v).unwrap()).unwrap();
        let t = &RooCode.load(&dir).unwrap().traces[0];
        let last = t
            .events
            .iter()
            .rev()
            .find(|e| e.kind == crate::model::EventKind::ToolCall)
            .unwrap();
        assert_eq!(last.status, crate::model::Status::Pending);
        // A ui file cut short: said, and what is before the cut loads.
        let ui = dir.join("ui_messages.json");
        let bytes = std::fs::read(&ui).unwrap();
        std::fs::write(&ui, &bytes[..bytes.len() / 2]).unwrap();
        let t = &RooCode.load(&dir).unwrap().traces[0];
        assert!(
            t.diagnostics.iter().any(|d| d.path.ends_with("ui_messages.json")),
            "{:?}",
            t.diagnostics
        );
        assert!(t.counts().tool_calls > 0);
    }

    #[test]
    fn the_sample_loads_with_roos_tools() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("sample-traces/roo-code/rooveterinaryinc.roo-cline/tasks/1767225600000");
        let t = &RooCode.load(&dir).unwrap().traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let c = t.counts();
        assert_eq!(c.tool_calls, 4);
        // The failed apply_diff, and the diff_error Roo showed for it (Cline's reader shows
        // both, as for Cline's own rows).
        assert_eq!(c.errors, 2);
        assert_eq!(t.meta.status, crate::model::RunStatus::Ok);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 12, ..Default::default() })]
        #[test]
        fn drift_is_skipped_quietly(seed in proptest::prelude::any::<u64>()) {
            // The storage dir, whose name (which makes the task Roo Code's) the copy keeps.
            let (d, _) = task_below("rooveterinaryinc.roo-cline");
            let storage = d.path().join("rooveterinaryinc.roo-cline");
            crate::formats::testing::drift_check(&[storage], seed, &crate::formats::cline::tests::drift_task_file);
        }
    }

    #[test]
    fn each_tool_says_what_it_did() {
        let g = |n: &str, i: Value| fork_tool_gist(n, &i);
        assert_eq!(
            g("apply_diff", json!({"path": "src/a.ts", "diff": "..."})).as_deref(),
            Some("src/a.ts")
        );
        assert_eq!(
            g("codebase_search", json!({"query": "auth flow"})).as_deref(),
            Some("auth flow")
        );
        assert_eq!(
            g("switch_mode", json!({"mode_slug": "architect", "reason": "plan"})).as_deref(),
            Some("architect")
        );
        assert_eq!(
            g("execute_command", json!({"command": "npm test"})).as_deref(),
            Some("npm test")
        );
    }
}
