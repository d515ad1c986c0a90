//! How to go on with a session in the agent that wrote it: the agent's own resume command,
//! from each agent's CLI docs (`claude --resume <id>`, `codex resume <id>`, `gemini --resume
//! <id>`, `copilot --resume <id>`, `opencode --session <id>`, `cursor-agent --resume <id>`,
//! `iflow --resume <id>`, `qwen --resume <id>`, `goose session --resume --session-id <id>`).
//! Agents that scope sessions to a project (Claude Code, Gemini CLI, OpenCode) resume only from
//! that directory: the command starts with `cd` there when the session recorded it.
//!
//! The command is pasted into a shell, so nothing from the trace goes in unchecked: an id must
//! be made of letters, digits, `-`, `_` and `.`, and a directory is single-quoted and has no
//! control characters; otherwise there is no command.

use crate::model::RunMeta;

/// The command that resumes the run in its agent, when the agent has one and the run is a
/// session of its own (not a subagent's part of one).
pub fn command(meta: &RunMeta) -> Option<String> {
    let attr = |k: &str| {
        meta.all_attributes()
            .find(|(x, _)| x == k)
            .and_then(|(_, v)| v.as_str())
    };
    let (cmd, id, dir) = match meta.format {
        "claude-code" => ("claude --resume", attr("sessionId").unwrap_or(&meta.id), attr("cwd")),
        // A sub-agent's thread is resumed through its parent's.
        "codex" => (
            "codex resume",
            attr("parent_thread_id").or(attr("session_id")).or(attr("id"))?,
            attr("cwd"),
        ),
        "gemini-cli" if attr("kind") != Some("subagent") => ("gemini --resume", meta.id.as_str(), None),
        "copilot-cli" => ("copilot --resume", meta.id.as_str(), attr("cwd")),
        "opencode" if attr("parent session").is_none() => ("opencode --session", meta.id.as_str(), attr("directory")),
        "cursor" if attr("parentSession").is_none() => ("cursor-agent --resume", meta.id.as_str(), None),
        // Kimi Code resumes a session (its directory's name) from its working directory; a
        // subagent's journal through its session.
        // pi takes a session id (or its prefix) and looks in the current project first.
        "pi" => ("pi --session", meta.id.as_str(), attr("cwd")),
        // Vibe resumes a session by id; a subagent's through its parent's.
        "mistral-vibe" if attr("parent_session_id").is_none() => ("vibe --resume", meta.id.as_str(), attr("cwd")),
        // iFlow CLI resumes a session of the directory it runs in (`iflow --resume <id>`).
        "iflow" => ("iflow --resume", attr("sessionId").unwrap_or(&meta.id), attr("cwd")),
        // Qwen Code resumes a session of the project it runs in (`qwen --resume <id>`).
        "qwen-code" => ("qwen --resume", attr("sessionId").unwrap_or(&meta.id), attr("cwd")),
        "kimi-cli" if attr("agent").is_none_or(|a| a == "main") => ("kimi --session", attr("session")?, attr("cwd")),
        // goose resumes a session by id from anywhere (it keeps the session's directory); a
        // subagent's session is not resumed on its own.
        "goose" if attr("session_type") != Some("sub_agent") => {
            ("goose session --resume --session-id", meta.id.as_str(), None)
        }
        _ => return None,
    };
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return None;
    }
    match dir.filter(|d| !d.is_empty() && !d.chars().any(char::is_control)) {
        Some(d) => Some(format!("cd {} && {cmd} {id}", quote(d))),
        None => Some(format!("{cmd} {id}")),
    }
}

/// Whether the agent resumes a session only from its project's directory (the command then
/// needs the `cd` the session's recorded directory gives it).
pub fn project_scoped(format: &str) -> bool {
    matches!(
        format,
        "claude-code" | "gemini-cli" | "opencode" | "iflow" | "qwen-code"
    )
}

/// A word for a POSIX shell: single-quoted, a quote inside as `'\''`.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(format: &'static str, id: &str, attrs: &[(&str, serde_json::Value)]) -> RunMeta {
        RunMeta {
            id: id.into(),
            format,
            attributes: attrs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn each_agent_resumes_its_own_way() {
        let m = meta(
            "claude-code",
            "4be8ac81-9a4f",
            &[("sessionId", json!("4be8ac81-9a4f")), ("cwd", json!("/home/a/my app"))],
        );
        assert_eq!(
            command(&m).unwrap(),
            "cd '/home/a/my app' && claude --resume 4be8ac81-9a4f"
        );
        let m = meta(
            "codex",
            "rollout-2026-x",
            &[
                ("session_id", json!("01a2-sub")),
                ("parent_thread_id", json!("01a2-top")),
            ],
        );
        assert_eq!(command(&m).unwrap(), "codex resume 01a2-top");
        assert_eq!(
            command(&meta("copilot-cli", "533ca422", &[])).unwrap(),
            "copilot --resume 533ca422"
        );
        assert_eq!(
            command(&meta("gemini-cli", "70ae8bbd", &[])).unwrap(),
            "gemini --resume 70ae8bbd"
        );
        assert!(command(&meta("gemini-cli", "de8d", &[("kind", json!("subagent"))])).is_none());
        assert_eq!(
            command(&meta("opencode", "ses_3f1c", &[("directory", json!("/srv/x"))])).unwrap(),
            "cd '/srv/x' && opencode --session ses_3f1c"
        );
        assert_eq!(
            command(&meta("goose", "20261120_1", &[("working_dir", json!("/srv/x"))])).unwrap(),
            "goose session --resume --session-id 20261120_1"
        );
        assert!(command(&meta("goose", "20261121_2", &[("session_type", json!("sub_agent"))])).is_none());
        let m = meta(
            "iflow",
            "session-0c3e",
            &[("sessionId", json!("session-0c3e")), ("cwd", json!("/w"))],
        );
        assert_eq!(command(&m).unwrap(), "cd '/w' && iflow --resume session-0c3e");
        let m = meta(
            "qwen-code",
            "8d2b6f14",
            &[("sessionId", json!("8d2b6f14")), ("cwd", json!("/w"))],
        );
        assert_eq!(command(&m).unwrap(), "cd '/w' && qwen --resume 8d2b6f14");
        assert!(command(&meta("aider", "x", &[])).is_none());
    }

    #[test]
    fn nothing_from_the_trace_reaches_the_shell_unchecked() {
        // An id that is not an id: no command at all.
        assert!(command(&meta("copilot-cli", "x; rm -rf ~", &[])).is_none());
        assert!(command(&meta("copilot-cli", "x\u{1b}[2J", &[])).is_none());
        // A directory with a quote is quoted; one with a control character is left out.
        let m = meta("copilot-cli", "id1", &[("cwd", json!("/tmp/it's"))]);
        assert_eq!(command(&m).unwrap(), r"cd '/tmp/it'\''s' && copilot --resume id1");
        let m = meta("copilot-cli", "id1", &[("cwd", json!("/tmp/a\nb"))]);
        assert_eq!(command(&m).unwrap(), "copilot --resume id1");
    }
}
