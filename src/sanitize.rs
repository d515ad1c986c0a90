//! The one gate between trace text and the terminal (DESIGN §7): C0 and C1 controls, DEL,
//! and bidi overrides are shown escaped, never sent raw, so a tool result cannot clear the
//! screen, retitle the window, write the clipboard or reorder what is shown.
//!
//! Text for the terminal ([`line`], [`text`]) also loses what terminals disagree on the width
//! of, so that the one width the layout computes (`unicode-width` of the text, as ratatui
//! places it) is what every terminal draws: the zero-width joiner (tmux 3.3 draws a ZWJ family
//! in 2 columns, xterm in 6), emoji presentation selectors (a `❤️` is 2 columns by the tables
//! and 1 in tmux) and skin-tone modifiers (`👍🏽`: 2 against 4); and a run of combining marks
//! is cut to [`MAX_MARKS`] (terminals keep a few per cell, then draw the rest apart). Exports
//! ([`file_text`], [`html`]) keep them: no layout depends on their width.

use std::borrow::Cow;

fn needs_escape(c: char, keep_newlines: bool) -> bool {
    match c {
        '\n' | '\t' => !keep_newlines,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        // bidi embeddings, overrides, isolates and marks
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}' => true,
        // line and paragraph separators would break a row
        '\u{2028}' | '\u{2029}' => true,
        _ => false,
    }
}

/// Combining marks (and other zero-width characters) kept after one character.
pub const MAX_MARKS: usize = 3;

/// Joiners, presentation selectors and modifiers: dropped from terminal text (see above).
fn ambiguous(c: char) -> bool {
    matches!(c, '\u{200d}' | '\u{fe0e}' | '\u{fe0f}' | '\u{1f3fb}'..='\u{1f3ff}')
}

fn zero_width(c: char) -> bool {
    !c.is_ascii() && unicode_width::UnicodeWidthChar::width(c) == Some(0)
}

fn escape_into(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
        c => out.push_str(&format!("<U+{:04X}>", c as u32)),
    }
}

fn run(s: &str, keep_newlines: bool, terminal: bool) -> Cow<'_, str> {
    // Printable ASCII (most of any long value) needs nothing: checked a byte at a time, which
    // the compiler vectorizes, rather than decoding characters.
    if s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Cow::Borrowed(s);
    }
    let changes = |c: char| needs_escape(c, keep_newlines) || terminal && (ambiguous(c) || zero_width(c));
    if !s.chars().any(changes) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut marks = 0;
    for c in s.chars() {
        if needs_escape(c, keep_newlines) {
            escape_into(&mut out, c);
            marks = 0;
        } else if terminal && ambiguous(c) {
            // dropped
        } else if terminal && zero_width(c) {
            marks += 1;
            if marks <= MAX_MARKS {
                out.push(c);
            }
        } else {
            out.push(c);
            marks = 0;
        }
    }
    Cow::Owned(out)
}

/// Local paths shown under another name: an ssh:// source's mirror directory as the URL it
/// stands for (`ssh://host`), registered by the source when it opens. Kept here, not in the
/// source, so that every line shown ([`line`]) names the remote without this leaf importing
/// the source; the flag keeps the lookup off the path when nothing is registered.
static SHOWN_PATHS: std::sync::RwLock<Vec<(String, String)>> = std::sync::RwLock::new(Vec::new());
static ANY_SHOWN_PATH: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Show `local` (a directory's path) as `shown` from now on.
pub fn show_path_as(local: &str, shown: &str) {
    let mut map = SHOWN_PATHS.write().unwrap_or_else(|e| e.into_inner());
    if !map.iter().any(|(m, _)| m == local) {
        map.push((local.to_string(), shown.to_string()));
    }
    ANY_SHOWN_PATH.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether some path is shown under another name.
pub fn showing_paths() -> bool {
    ANY_SHOWN_PATH.load(std::sync::atomic::Ordering::Relaxed)
}

/// The paths shown under other names, and those names.
pub fn shown_path_table() -> Vec<(String, String)> {
    SHOWN_PATHS.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// `s` with every registered path shown under its name, when it holds one.
pub fn shown_paths(s: &str) -> Option<String> {
    if !showing_paths() {
        return None;
    }
    let map = SHOWN_PATHS.read().unwrap_or_else(|e| e.into_inner());
    let mut out: Option<String> = None;
    for (local, shown) in map.iter() {
        let cur = out.as_deref().unwrap_or(s);
        if cur.contains(local.as_str()) {
            out = Some(cur.replace(local.as_str(), shown));
        }
    }
    out
}

/// For one line of display: every control, newlines and tabs included, is escaped.
pub fn line(s: &str) -> Cow<'_, str> {
    let out = run(s, false, true);
    // The mirror of an ssh:// source is shown as the remote's paths (`ssh://host/path`).
    match shown_paths(&out) {
        Some(o) => Cow::Owned(o),
        None => out,
    }
}

/// For multi-line text: newlines and tabs stay, every other control is escaped.
pub fn text(s: &str) -> Cow<'_, str> {
    run(s, true, true)
}

/// For a file (an export): as [`text`], but every printable character is kept.
pub fn file_text(s: &str) -> Cow<'_, str> {
    run(s, true, false)
}

/// Trace text for an HTML text node or attribute (exported runs, diff reports): controls and
/// bidi made visible first, as [`text`] does, then `& < > " '` as entities.
pub fn html(s: &str) -> String {
    let s = file_text(s);
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_path_is_shown_under_its_name_in_every_line() {
        // A path no other test prints: the table is the process's.
        let local = "/tmp/tracetui-test-mirror-3c1f/fs";
        show_path_as(local, "ssh://box");
        show_path_as(local, "ssh://box");
        assert_eq!(
            line(&format!("{local}/home/a.jsonl:3: bad")),
            "ssh://box/home/a.jsonl:3: bad"
        );
        assert_eq!(shown_path_table().iter().filter(|(l, _)| l == local).count(), 1);
        assert_eq!(line("/elsewhere/a.jsonl"), "/elsewhere/a.jsonl");
    }

    #[test]
    fn html_makes_markup_and_controls_inert() {
        assert_eq!(
            html("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(
            html("\"><img src=x onerror=alert(1)>"),
            "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"
        );
        assert_eq!(html("a\x1b[31mb"), "a\\x1b[31mb");
        assert_eq!(html("abc\u{202e}fed"), "abc&lt;U+202E&gt;fed");
        assert_eq!(html("two\nlines"), "two\nlines");
    }

    #[test]
    fn hostile_sequences_are_escaped() {
        assert_eq!(line("a\x1b[2Jb"), "a\\x1b[2Jb");
        assert_eq!(line("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
        assert_eq!(line("\x1b]52;c;aGk=\x1b\\"), "\\x1b]52;c;aGk=\\x1b\\");
        assert_eq!(line("x\u{9b}31m"), "x\\x9b31m");
        assert_eq!(line("abc\u{202e}fed"), "abc<U+202E>fed");
        assert_eq!(line("del\x7f"), "del\\x7f");
        assert_eq!(line("two\nlines\t"), "two\\nlines\\t");
        assert_eq!(text("two\nlines\t"), "two\nlines\t");
        assert_eq!(text("cr\r"), "cr\\r");
    }

    #[test]
    fn terminal_text_loses_what_terminals_draw_at_other_widths() {
        use unicode_width::UnicodeWidthStr;
        let family = "👨\u{200d}👩\u{200d}👧";
        assert_eq!(line(family), "👨👩👧");
        assert_eq!(line("👍🏽 ❤\u{fe0f}"), "👍 ❤");
        let marks = format!("o{}k", "\u{332}".repeat(30));
        assert_eq!(line(&marks), format!("o{}k", "\u{332}".repeat(MAX_MARKS)));
        assert_eq!(line(&marks).width(), 2);
        assert_eq!(line("e\u{301}").width(), 1, "a few marks stay");
        // The same width character by character as by the tables' sequences: what ratatui
        // computes is what a terminal that knows no sequences draws.
        for s in [family, "👍🏽", "❤\u{fe0f}", "🇯🇵 日本", &marks] {
            let l = line(s);
            let by_char: usize = l
                .chars()
                .map(|c| unicode_width::UnicodeWidthChar::width(c).unwrap_or(0))
                .sum();
            assert_eq!(l.width(), by_char, "{s:?}");
        }
        // Exports keep every character.
        assert_eq!(file_text(family), family);
        assert!(html("👍🏽").contains('\u{1f3fd}'));
    }

    #[test]
    fn clean_text_is_not_copied() {
        assert!(matches!(line("plain 日本語 🚀"), Cow::Borrowed(_)));
    }
}
