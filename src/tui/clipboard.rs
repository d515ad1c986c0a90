//! `y`, `alt-y` and `o`: a value copied escaped or raw (OSC 52), or opened in the pager.

use super::action::Command;
use super::nav::say;
use super::state::*;

/// The most text `y` puts in one OSC 52 sequence: base64 makes it 4/3 larger, and many
/// terminals drop a sequence over about 100 KB (while we would say "copied").
pub const CLIPBOARD_MAX: usize = 75_000;

/// What `y`, `alt-y` and `o` do with a value: copy it escaped (the form shown on screen, safe
/// to paste: no ESC, CR, LF, BEL, C1 or bidi control reaches a shell), copy it raw, or open it
/// in the pager (escaped, newlines kept).
pub fn take(s: &mut State, text: String, what: &str, how: Command) {
    match how {
        Command::Pager => {
            let text = crate::sanitize::text(&text).into_owned();
            s.effects.push(Effect::Page(text));
        }
        Command::CopyRaw => copy_text(s, text, what, "raw, control characters included"),
        _ => {
            // Pretty JSON (objects, the payload) is copied compact: one line, nothing to escape
            // but what the values hold.
            let one_line = match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(v) if text.contains('\n') && !v.is_string() => serde_json::to_string(&v).unwrap_or(text),
                _ => text,
            };
            let safe = crate::sanitize::line(&one_line).into_owned();
            let note = if safe.len() != one_line.len() {
                "escaped; alt-y copies it raw"
            } else {
                "alt-y copies it raw"
            };
            copy_text(s, safe, what, note)
        }
    }
}

pub fn copy_text(s: &mut State, text: String, what: &str, note: &str) {
    if text.len() > CLIPBOARD_MAX {
        say(
            s,
            format!(
                "{what} too large for the clipboard ({} bytes; terminals take about 100 KB by OSC 52): o opens it in the pager",
                text.len()
            ),
            true,
        );
        return;
    }
    let shown = if matches!(what, "path" | "id" | "resume command") && text.len() <= 100 {
        format!("copied {what} {text} to the clipboard")
    } else {
        format!("copied {what} ({} bytes, {note}) to the clipboard", text.len())
    };
    say(s, shown, false);
    s.effects.push(Effect::Copy(text));
}

/// `R`: the command that resumes a session in its agent, on the clipboard (or why there is
/// none).
pub fn copy_resume(s: &mut State, cmd: Option<String>, format: &str) {
    match cmd {
        Some(cmd) => {
            if crate::formats::resume::project_scoped(format) && !cmd.starts_with("cd ") {
                say(
                    s,
                    format!("copied {cmd} (run it in the session's project directory)"),
                    false,
                );
                s.effects.push(Effect::Copy(cmd));
            } else {
                take(s, cmd, "resume command", Command::Copy);
            }
        }
        None => say(
            s,
            "no resume command for this run: its agent has none tracetui knows",
            false,
        ),
    }
}
