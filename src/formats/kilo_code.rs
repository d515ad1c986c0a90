//! Kilo Code task folders: `tasks/<taskId>/` under VS Code's global storage of the extension
//! `kilocode.kilo-code` (`~/.config/Code/User/globalStorage/kilocode.kilo-code/`, on macOS
//! `~/Library/Application Support/Code/User/…`), and the first Kilo CLI's
//! `~/.kilocode/cli/global/tasks/`. Kilo Code forked Roo Code and keeps Cline's layout, read
//! by Cline's reader (formats/cline.rs: its traps, tokens and drift rule hold here too);
//! Kilo's own tools (`fast_edit_file`, `delete_file`, `new_rule`, `condense`, …) are in that
//! reader's list of tool names. A folder of the layout is Kilo Code's when it is below
//! Kilo's storage; `--format kilo-code` reads one moved elsewhere. (Today's Kilo CLI, built
//! on OpenCode, keeps OpenCode's storage in its own data dir: not this format.)

use super::cline::{KILO_CODE, decode_task_payload, is_task_dir};
use super::roo_code::fork_tool_gist;
use super::{Format, LoadError, Loaded, Probe, Summary};
use crate::model::{Event, Payload, Trace};
use serde_json::Value;
use std::path::Path;

pub struct KiloCode;

impl Format for KiloCode {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        fork_tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        KILO_CODE.id
    }
    fn describe(&self) -> &'static str {
        KILO_CODE.describe
    }
    fn detect(&self, p: &Probe) -> u8 {
        KILO_CODE.detect(p)
    }
    fn is_run_dir(&self, dir: &Path) -> bool {
        is_task_dir(dir) && KILO_CODE.detect_dir(dir)
    }
    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        KILO_CODE.load(path)
    }
    fn summarize(&self, path: &Path) -> Result<Option<Vec<Summary>>, LoadError> {
        KILO_CODE.summarize(path)
    }
    fn decode_payload(&self, trace: &Trace, event: &Event, raw: &[&[u8]]) -> Payload {
        decode_task_payload(trace, event, raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{RunStatus, Status};

    fn sample() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/kilo-code/kilocode.kilo-code/tasks/1767312000000")
    }

    /// The sample in a copy of Kilo's storage (`storage`) in a temporary directory.
    fn task_below(storage: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(storage).join("tasks/1767312000000");
        std::fs::create_dir_all(&dir).unwrap();
        for e in std::fs::read_dir(sample()).unwrap().flatten() {
            std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
        (d, dir)
    }

    #[test]
    fn a_task_below_kilos_storage_is_kilo_codes_with_its_xml_tool_calls() {
        for storage in ["kilocode.kilo-code", ".kilocode/cli/global"] {
            let (_d, dir) = task_below(storage);
            assert_eq!(crate::formats::detect(&dir).unwrap().id(), "kilo-code", "{storage}");
            assert!(KiloCode.is_run_dir(&dir));
            let t = &KiloCode.load(&dir).unwrap().traces[0];
            assert_eq!(t.meta.format, "kilo-code");
            assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
            let calls: Vec<(String, Status)> = t
                .events
                .iter()
                .filter(|e| e.kind == crate::model::EventKind::ToolCall)
                .map(|e| (t.str(e.name).to_string(), e.status))
                .collect();
            assert_eq!(
                calls,
                vec![
                    ("read_file".into(), Status::Ok),
                    ("delete_file".into(), Status::Error),
                    ("execute_command".into(), Status::Ok),
                    ("attempt_completion".into(), Status::Ok)
                ]
            );
            assert_eq!(t.meta.status, RunStatus::Ok);
            assert_eq!(
                t.counts().tokens,
                10 + 52 + 4800 + 9 + 70 + 120 + 4800 + 9 + 35 + 90 + 4920 + 9 + 40 + 60 + 5010
            );
        }
    }

    /// A damaged task, as for Roo Code (Cline's reader under Kilo's id): said by file, and
    /// what is before the damage loads.
    #[test]
    fn a_damaged_task_is_said_by_file_and_loads_the_rest() {
        let (_d, dir) = task_below("kilocode.kilo-code");
        let ui = dir.join("ui_messages.json");
        let bytes = std::fs::read(&ui).unwrap();
        std::fs::write(&ui, &bytes[..bytes.len() / 2]).unwrap();
        let t = &KiloCode.load(&dir).unwrap().traces[0];
        assert_eq!(t.meta.format, "kilo-code");
        assert!(
            t.diagnostics.iter().any(|d| d.path.ends_with("ui_messages.json")),
            "{:?}",
            t.diagnostics
        );
        assert!(t.counts().tool_calls > 0);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 12, ..Default::default() })]
        #[test]
        fn drift_is_skipped_quietly(seed in proptest::prelude::any::<u64>()) {
            // The storage dir, whose name (which makes the task Kilo Code's) the copy keeps.
            let (d, _) = task_below("kilocode.kilo-code");
            let storage = d.path().join("kilocode.kilo-code");
            crate::formats::testing::drift_check(&[storage], seed, &crate::formats::cline::tests::drift_task_file);
        }
    }
}
