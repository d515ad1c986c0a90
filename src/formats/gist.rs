//! The gist of a tool call: what it did, in one short line (`git status --short`,
//! `src/main.rs`, `**/*.rs`, a URL or a query), shown after the tool's name in the explorer's
//! tree, `show`, `tail --no-tui`, the HTML export and the diff.
//!
//! Each format names its own tools, so each says which argument tells what a call did
//! ([`super::Format::gist`]); what is left to a format that does not say (and to the tools a
//! format does not know) is the [`generic`] rule here, with the helpers the formats' rules
//! use. Whatever a rule picks passes through [`clean`]: one line, controls and bidi escaped
//! (`crate::sanitize`), at most [`MAX_CHARS`] characters; the view cuts it to its column.

use crate::model::{Event, EventKind, Payload, Trace};
use serde_json::Value;

/// Characters of a gist kept: wider than any name column (a 400-column terminal's tree pane
/// is about 150 cells), so that views cut it, not this.
pub const MAX_CHARS: usize = 240;

/// A string argument this long or shorter is "short" ([`generic`] prefers it to a longer one:
/// a file's path over its contents).
pub const SHORT: usize = 200;

/// How the lines of a multi-line gist (a heredoc, a script) are joined.
const LINE_BREAK: &str = " ⏎ ";

/// Lines of a multi-line value looked at (a 10,000-line script's gist needs its first few).
const MAX_LINES: usize = 8;

/// The gist of event `ev`, reading its payload when it is on disk. None for events that are
/// not tool calls and calls whose arguments say nothing short.
pub fn of(trace: &Trace, ev: &Event) -> Option<String> {
    if ev.kind != EventKind::ToolCall {
        return None;
    }
    from_payload(trace, ev, &super::payload(trace, ev))
}

/// [`of`], with the event's payload already read.
pub fn from_payload(trace: &Trace, ev: &Event, p: &Payload) -> Option<String> {
    if ev.kind != EventKind::ToolCall {
        return None;
    }
    let input = p.input.as_ref()?;
    let name = trace.str(ev.name);
    let raw = match super::by_id(trace.meta.format) {
        Some(f) => f.gist(name, input),
        None => generic(name, input),
    }?;
    clean(&raw)
}

/// The rule for tools nobody named: a string argument is the gist; of an object, its first
/// short string argument (else its first string, else its scalars as `k=v`); of a list of
/// strings (a command's words), the words.
pub fn generic(_name: &str, input: &Value) -> Option<String> {
    match input {
        Value::String(s) => nonempty(s),
        Value::Object(m) => {
            let strings = || m.values().filter_map(|v| v.as_str()).filter(|s| !s.trim().is_empty());
            if let Some(s) = strings().find(|s| s.chars().count() <= SHORT) {
                return Some(s.to_string());
            }
            if let Some(s) = strings().next() {
                return Some(s.to_string());
            }
            let scalars: Vec<String> = m
                .iter()
                .filter(|(_, v)| v.is_number() || v.is_boolean())
                .take(6)
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            (!scalars.is_empty()).then(|| scalars.join(" "))
        }
        Value::Array(_) => words(input),
        _ => None,
    }
}

/// An MCP tool's gist: its first argument, whatever it is (a string as it is, a number, a
/// list or an object as compact JSON).
pub fn first_arg(input: &Value) -> Option<String> {
    match input {
        Value::Object(m) => m.values().find(|v| !v.is_null()).and_then(scalar_or_json),
        Value::Null => None,
        other => scalar_or_json(other),
    }
}

fn scalar_or_json(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => nonempty(s),
        Value::Null => None,
        // Compact JSON of at most a few hundred bytes (the gist keeps [`MAX_CHARS`]).
        Value::Object(_) | Value::Array(_) => {
            let s = v.to_string();
            Some(cut_chars(&s, MAX_CHARS * 2).to_string())
        }
        other => Some(other.to_string()),
    }
}

/// The first of `keys` that the arguments hold as a non-empty string (or a list of strings,
/// joined as words).
pub fn key(input: &Value, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match input.get(k)? {
        Value::String(s) => nonempty(s),
        v @ Value::Array(_) => words(v),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// [`key`], else the [`generic`] rule.
pub fn key_or_generic(name: &str, input: &Value, keys: &[&str]) -> Option<String> {
    key(input, keys).or_else(|| generic(name, input))
}

/// A command given as its words (`["bash", "-lc", "ls -la"]`): the script a shell is asked to
/// run (`ls -la`), else the words joined.
pub fn words(v: &Value) -> Option<String> {
    let list = v.as_array()?;
    let w: Vec<&str> = list.iter().map_while(Value::as_str).collect();
    if w.is_empty() || w.len() != list.len() {
        return None;
    }
    let shell = |s: &str| {
        let base = s.rsplit('/').next().unwrap_or(s);
        matches!(
            base,
            "bash" | "sh" | "zsh" | "dash" | "fish" | "pwsh" | "powershell" | "powershell.exe" | "cmd" | "cmd.exe"
        )
    };
    if w.len() >= 3 && shell(w[0]) && matches!(w[w.len() - 2], "-c" | "-lc" | "-ic" | "-Command" | "/c" | "/C") {
        return nonempty(w[w.len() - 1]);
    }
    nonempty(&w.join(" "))
}

/// The first `http(s)://` URL in a text (Gemini's `web_fetch` takes a prompt that holds them).
pub fn first_url(s: &str) -> Option<String> {
    let at = s.find("https://").or_else(|| s.find("http://"))?;
    let url: String = s[at..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, '"' | '\'' | '<' | '>' | ')' | ']'))
        .collect();
    Some(url)
}

/// The files a patch in the `*** Begin Patch` form (Codex's `apply_patch`) touches, with
/// what it does to each when not an update: `src/a.rs, +src/new.rs, -src/old.rs`.
pub fn patch_files(patch: &str) -> Option<String> {
    let mut files = Vec::new();
    for line in patch.lines().take(100_000) {
        let (mark, rest) = if let Some(r) = line.strip_prefix("*** Update File: ") {
            ("", r)
        } else if let Some(r) = line.strip_prefix("*** Add File: ") {
            ("+", r)
        } else if let Some(r) = line.strip_prefix("*** Delete File: ") {
            ("-", r)
        } else if let Some(r) = line.strip_prefix("*** Move to: ") {
            ("→", r)
        } else {
            continue;
        };
        files.push(format!("{mark}{}", rest.trim()));
        if files.len() >= 20 {
            break;
        }
    }
    (!files.is_empty()).then(|| files.join(", "))
}

/// A to-do list's gist (Claude Code's `TodoWrite`, OpenCode's `todowrite`, Gemini's
/// `write_todos`, Codex's `update_plan`): `2/5 done · <the item in progress>`. `text` names
/// the keys an item's text may be under, `status` its status's.
pub fn todos(list: &Value, text: &[&str], status: &str) -> Option<String> {
    let items = list.as_array()?;
    fn st<'v>(i: &'v Value, status: &str) -> &'v str {
        i.get(status).and_then(Value::as_str).unwrap_or("")
    }
    let done = items
        .iter()
        .filter(|i| matches!(st(i, status), "completed" | "done"))
        .count();
    let mut out = format!("{done}/{} done", items.len());
    if let Some(now) = items
        .iter()
        .find(|i| matches!(st(i, status), "in_progress" | "in-progress" | "active"))
        .and_then(|i| key(i, text))
    {
        out.push_str(" · ");
        out.push_str(&now);
    }
    Some(out)
}

fn nonempty(s: &str) -> Option<String> {
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// `s` cut to at most `n` characters, at a character boundary.
fn cut_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}

/// A gist as shown: its first [`MAX_LINES`] non-blank lines joined by ` ⏎ `, runs of blanks as
/// one space, controls and bidi escaped, at most [`MAX_CHARS`] characters (`…` where cut).
/// None when nothing is left.
pub fn clean(raw: &str) -> Option<String> {
    // Only the head of a long value is looked at: the rest would be cut anyway.
    let head = cut_chars(raw, MAX_CHARS * 4);
    let mut one = String::with_capacity(head.len().min(MAX_CHARS * 4));
    let lines = head.lines().map(str::trim).filter(|l| !l.is_empty());
    for (k, line) in lines.take(MAX_LINES).enumerate() {
        if k > 0 {
            one.push_str(LINE_BREAK);
        }
        let mut blank = false;
        for c in line.chars() {
            // Tabs and other spaces as one space (escaped, a tab would show as `\t`).
            if c == '\t' || c == ' ' {
                if !blank {
                    one.push(' ');
                }
                blank = true;
            } else {
                one.push(c);
                blank = false;
            }
        }
    }
    if one.is_empty() {
        return None;
    }
    let s = crate::sanitize::line(&one);
    let more = head.len() < raw.len() || head.lines().filter(|l| !l.trim().is_empty()).count() > MAX_LINES;
    if s.chars().count() <= MAX_CHARS && !more {
        return Some(s.into_owned());
    }
    let mut out = cut_chars(&s, MAX_CHARS - 1).trim_end().to_string();
    out.push('…');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generic_prefers_the_first_short_string() {
        assert_eq!(
            generic("t", &json!({"query": "coffee", "limit": 25})).as_deref(),
            Some("coffee")
        );
        let long = "x".repeat(SHORT + 1);
        assert_eq!(
            generic("write", &json!({"content": long, "file_path": "a.md"})).as_deref(),
            Some("a.md")
        );
        assert_eq!(generic("t", &json!({"content": long})), Some(long.clone()));
        assert_eq!(generic("add", &json!({"x": 40, "y": 2})).as_deref(), Some("x=40 y=2"));
        assert_eq!(generic("t", &json!({"a": "  ", "b": null})), None);
        assert_eq!(generic("t", &json!({})), None);
        assert_eq!(generic("t", &json!("ls -la")).as_deref(), Some("ls -la"));
        assert_eq!(generic("t", &json!(null)), None);
        assert_eq!(generic("t", &json!(["git", "status"])).as_deref(), Some("git status"));
    }

    #[test]
    fn a_shell_asked_to_run_a_script_is_the_script() {
        assert_eq!(words(&json!(["bash", "-lc", "ls -la"])).as_deref(), Some("ls -la"));
        assert_eq!(words(&json!(["/bin/zsh", "-c", "make"])).as_deref(), Some("make"));
        assert_eq!(words(&json!(["ls", "-la"])).as_deref(), Some("ls -la"));
        assert_eq!(words(&json!(["ls", 1])), None);
        assert_eq!(words(&json!([])), None);
    }

    #[test]
    fn mcp_first_argument_of_any_kind() {
        assert_eq!(first_arg(&json!({"repo": "a/b", "n": 1})).as_deref(), Some("a/b"));
        assert_eq!(first_arg(&json!({"n": 1, "repo": "a/b"})).as_deref(), Some("1"));
        assert_eq!(first_arg(&json!({"q": {"k": [1]}})).as_deref(), Some(r#"{"k":[1]}"#));
        assert_eq!(first_arg(&json!({})), None);
    }

    #[test]
    fn patches_name_their_files() {
        let p = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Add File: b.txt\n+hi\n*** Delete File: c.txt\n*** End Patch\n";
        assert_eq!(patch_files(p).as_deref(), Some("src/a.rs, +b.txt, -c.txt"));
        assert_eq!(patch_files("no patch"), None);
    }

    #[test]
    fn todo_lists_count_and_name_the_current_item() {
        let t = json!([
            {"content": "Read", "status": "completed"},
            {"content": "Fix the loader", "status": "in_progress"},
            {"content": "Test", "status": "pending"}
        ]);
        assert_eq!(
            todos(&t, &["content"], "status").as_deref(),
            Some("1/3 done · Fix the loader")
        );
        assert_eq!(todos(&json!([]), &["content"], "status").as_deref(), Some("0/0 done"));
        assert_eq!(todos(&json!("x"), &["content"], "status"), None);
    }

    #[test]
    fn urls_are_found_in_prompts() {
        assert_eq!(
            first_url("Summarize https://example.com/a?b=1 and more").as_deref(),
            Some("https://example.com/a?b=1")
        );
        assert_eq!(first_url("(see http://x.org/y)").as_deref(), Some("http://x.org/y"));
        assert_eq!(first_url("no url"), None);
    }

    #[test]
    fn cleaning_makes_one_safe_line() {
        assert_eq!(clean("  git status  ").as_deref(), Some("git status"));
        assert_eq!(
            clean("cat <<EOF\nhello\n\n  world\nEOF").as_deref(),
            Some("cat <<EOF ⏎ hello ⏎ world ⏎ EOF")
        );
        assert_eq!(clean("a\t\tb   c").as_deref(), Some("a b c"));
        // Escape sequences, OSC and bidi overrides are shown, never sent.
        assert_eq!(
            clean("echo \x1b[2J\x1b]0;pwned\x07").as_deref(),
            Some("echo \\x1b[2J\\x1b]0;pwned\\x07")
        );
        assert_eq!(clean("rm \u{202e}fdp.exe").as_deref(), Some("rm <U+202E>fdp.exe"));
        assert_eq!(clean("a\rb").as_deref(), Some("a\\rb"));
        assert_eq!(clean("x\u{2028}y").as_deref(), Some("x<U+2028>y"));
        assert_eq!(clean("\n \t\n"), None);
        // Cut at a character boundary, with an ellipsis.
        let long = "日本語".repeat(200);
        let c = clean(&long).unwrap();
        assert_eq!(c.chars().count(), MAX_CHARS);
        assert!(c.ends_with('…'));
        let many: String = (0..20).map(|i| format!("line {i}\n")).collect();
        let c = clean(&many).unwrap();
        assert!(c.starts_with("line 0 ⏎ line 1"), "{c}");
        assert!(c.ends_with('…') && !c.contains("line 8"), "{c}");
    }
}
