//! agentsnap: one JSON object per run (`*.snap.json` baselines, `*.current.json` runs) with
//! an ordered `tools[]` list of `{name, args, result_hash}` (optionally `result`, per-tool
//! `error`), the run's `input`/`output`, `error` (null, a string or `{name, message}`),
//! `model` and an environment `fingerprint`. No timestamps. Tokens: none recorded (a snapshot
//! has no usage or cost), so a run's tokens and cost are unknown.

use super::{Format, LoadError, Loaded, Probe, field, read_json_file, stem};
use crate::model::*;
use serde_json::Value;
use std::path::Path;

pub struct AgentSnap;

/// Largest agentsnap document read (they are small by design: results are hashed).
const LIMIT: u64 = 256 << 20;

fn looks_like(v: &Value) -> bool {
    v.get("version").is_some_and(|x| x.is_u64()) && v.get("tools").is_some_and(Value::is_array)
}

impl Format for AgentSnap {
    fn id(&self) -> &'static str {
        "agentsnap"
    }
    fn describe(&self) -> &'static str {
        "agentsnap snapshot (*.snap.json baseline, *.current.json run), usually __agentsnap__/ or __snapshots__/"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        match &p.whole {
            Some(v) if looks_like(v) => 100,
            Some(_) => 0,
            // Too large for the probe: judge by the keys and the name.
            None if !p.complete && p.has_key("version") && p.has_key("tools") => 70,
            None => 0,
        }
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        // The size is checked before anything is read (issue 14: a 267 MB file was read
        // before it was refused).
        let len = std::fs::metadata(path).map_err(|e| LoadError::io(path, e))?.len();
        if len > LIMIT {
            return Err(LoadError::invalid(
                path,
                format!(
                    "{} MiB, over the {} MiB limit of an agentsnap document; not read",
                    len >> 20,
                    LIMIT >> 20
                ),
            ));
        }
        let v = read_json_file(path, LIMIT)?;
        if !looks_like(&v) {
            return Err(LoadError::NotATrace {
                path: path.to_path_buf(),
                reason: "no integer `version` with a `tools` array".into(),
                tried: "agentsnap".into(),
            });
        }
        Ok(Loaded {
            traces: vec![from_value(path, &v)],
        })
    }
}

/// Build the trace of one snapshot document.
pub fn from_value(path: &Path, v: &Value) -> Trace {
    let name = stem(path);
    let kind = if path.to_string_lossy().ends_with(".snap.json") {
        "baseline"
    } else if path.to_string_lossy().ends_with(".current.json") {
        "current"
    } else {
        "snapshot"
    };
    let model = v.get("model").and_then(Value::as_str).filter(|s| !s.is_empty());
    let run_error = field(v, "error").and_then(ErrorInfo::from_value);
    let mut attributes = vec![("snapshot".to_string(), Value::String(kind.into()))];
    for k in ["version", "fingerprint"] {
        if let Some(x) = field(v, k) {
            attributes.push((k.to_string(), x.clone()));
        }
    }
    let mut t = Trace::new(RunMeta {
        id: format!("{name}.{kind}"),
        name: Some(name.clone()),
        format: "agentsnap",
        source: path.to_path_buf(),
        status: if run_error.is_some() {
            RunStatus::Error
        } else {
            RunStatus::Ok
        },
        model: model.map(str::to_owned),
        attributes,
        ..Default::default()
    });
    let file = t.add_file(path);
    let origin = Origin {
        file,
        line: 0,
        offset: 0,
        len: 0,
    };
    let run = t.add(NewEvent {
        model,
        status: if run_error.is_some() { Status::Error } else { Status::Ok },
        origin,
        payload: PayloadRef::Inline(Box::new(Payload {
            input: field(v, "input").cloned(),
            output: field(v, "output").cloned(),
            error: run_error,
            extra: field(v, "fingerprint")
                .map(|f| vec![("fingerprint".to_string(), f.clone())])
                .unwrap_or_default(),
        })),
        ..NewEvent::new(EventKind::Run, &name)
    });
    let tools = v
        .get("tools")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for (i, tool) in tools.iter().enumerate() {
        let id = format!("tools[{i}]");
        let Some(obj) = tool.as_object() else {
            t.diagnostics
                .push(Diagnostic::error(path, None, format!("{id} is not an object; skipped")));
            continue;
        };
        let name = obj.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            t.diagnostics
                .push(Diagnostic::warning(path, None, format!("{id} has no name")));
        }
        let error = obj.get("error").and_then(ErrorInfo::from_value);
        let output = field(tool, "result").or_else(|| field(tool, "result_hash")).cloned();
        let mut extra = Vec::new();
        if field(tool, "result").is_some()
            && let Some(h) = field(tool, "result_hash")
        {
            extra.push(("result_hash".to_string(), h.clone()));
        }
        for (k, x) in obj {
            if !["name", "args", "result", "result_hash", "error"].contains(&k.as_str()) {
                extra.push((k.clone(), x.clone()));
            }
        }
        t.add(NewEvent {
            id: Some(&id),
            parent: Parent::Index(run),
            status: if error.is_some() { Status::Error } else { Status::Ok },
            origin,
            payload: PayloadRef::Inline(Box::new(Payload {
                input: field(tool, "args").cloned(),
                output,
                error,
                extra,
            })),
            ..NewEvent::new(EventKind::ToolCall, if name.is_empty() { "?" } else { name })
        });
    }
    t.finalize();
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn probe(v: &Value) -> Probe {
        Probe::from_bytes(Path::new("x.json"), serde_json::to_vec(v).unwrap(), true)
    }

    #[test]
    fn detects_the_recorder_shape_but_not_the_lookalike() {
        assert_eq!(AgentSnap.detect(&probe(&json!({"version": 1, "tools": []}))), 100);
        // iamfaham/AgentSnap: string version and `trace`, a different format of the same name.
        assert_eq!(AgentSnap.detect(&probe(&json!({"version": "1.0", "trace": []}))), 0);
    }

    #[test]
    fn tools_errors_results_and_hashes() {
        let v = json!({
            "version": 1, "model": "m", "input": "q", "output": "a",
            "tools": [
                {"name": "search", "args": {"limit": 10}, "result_hash": "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
                {"name": "fetch", "args": {}, "result": {"ok": true}, "result_hash": "sha256:bbbbbbbbbbbbbbbbbbbb"},
                {"name": "book", "args": {}, "error": {"name": "TimeoutError", "message": "slow"}},
                "garbage"
            ],
            "error": "run failed",
            "fingerprint": {"node": "v20"}
        });
        let t = from_value(Path::new("dir/flow.snap.json"), &v);
        assert_eq!(t.meta.name.as_deref(), Some("flow"));
        assert_eq!(t.meta.status, RunStatus::Error);
        assert_eq!(t.meta.model.as_deref(), Some("m"));
        assert_eq!(t.counts().tool_calls, 3);
        assert_eq!(t.diagnostics.len(), 1);
        let walk = t.walk();
        assert_eq!(walk.len(), 4);
        let book = t.find("tools[2]").unwrap();
        assert_eq!(t.event(book).status, Status::Error);
        let p = super::super::payload(&t, t.event(t.find("tools[0]").unwrap()));
        assert_eq!(p.output, Some(json!("sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")));
        let p = super::super::payload(&t, t.event(t.find("tools[1]").unwrap()));
        assert_eq!(p.output, Some(json!({"ok": true})));
    }

    #[test]
    fn a_document_over_the_limit_is_refused_before_it_is_read() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("big.snap.json");
        // Sparse: the size is there, the bytes are not (reading them would take seconds).
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(LIMIT + 1).unwrap();
        let e = AgentSnap.load(&path).unwrap_err().to_string();
        assert!(e.contains("over the 256 MiB limit") && e.contains("not read"), "{e}");
    }

    #[test]
    fn error_may_be_null_string_or_object() {
        for (e, status) in [
            (json!(null), RunStatus::Ok),
            (json!("x"), RunStatus::Error),
            (json!({"name": "E", "message": "m"}), RunStatus::Error),
        ] {
            let t = from_value(Path::new("a.json"), &json!({"version": 1, "tools": [], "error": e}));
            assert_eq!(t.meta.status, status);
        }
    }
}
