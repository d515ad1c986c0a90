//! Every class of code point a trace can hold, rendered by the explorer: the layout stays
//! aligned (every row is exactly as wide as the terminal) and nothing raw reaches the
//! terminal (no control, escape or bidi character in any cell or in the bytes written).

use ratatui::Terminal;
use ratatui::backend::{CrosstermBackend, TestBackend};
use std::path::Path;
use tracetui::tui::action::Action;
use tracetui::tui::render::render;
use tracetui::tui::state::State;
use tracetui::tui::theme::Theme;
use tracetui::tui::update::update;
use unicode_width::UnicodeWidthStr;

/// One sample per class, with a label so failures say which class broke.
const CLASSES: &[(&str, &str)] = &[
    ("c0", "nul\u{0}bel\u{7}bs\u{8}cr\rvt\u{b}ff\u{c}so\u{e}"),
    ("c1", "nel\u{85}dcs\u{90}csi\u{9b}31mst\u{9c}osc\u{9d}"),
    ("del", "del\u{7f}x"),
    ("esc-csi", "\u{1b}[2J\u{1b}[31mred\u{1b}[0m\u{1b}[?1049l"),
    ("osc-bel", "\u{1b}]0;pwned-title\u{7}"),
    ("osc-st", "\u{1b}]52;c;cHduZWQ=\u{1b}\\"),
    ("bidi", "abc\u{202e}fed\u{2066}iso\u{2069}\u{200f}rlm\u{61c}"),
    ("zero-width", "a\u{200b}b\u{200d}c\u{feff}d\u{2060}e"),
    ("combining", "e\u{301}a\u{308}n\u{303}o\u{332}\u{332}\u{332}"),
    ("cjk", "日本語のテキスト中文字符한국어"),
    ("emoji", "🚀🔥✅ family 👨\u{200d}👩\u{200d}👧 flag 🇯🇵 skin 👍🏽"),
    ("separators", "line\u{2028}para\u{2029}end"),
];

fn write_run(dir: &Path) -> std::path::PathBuf {
    let run = dir.join("run-codepoints");
    std::fs::create_dir_all(&run).unwrap();
    let mut lines = vec![serde_json::json!({
        "spec_version": "0.1", "event_id": "root", "run_id": "r", "parent_id": null, "event_type": "RUN_START",
        "ts": "2026-01-01T00:00:00.000Z", "duration_ms": null, "name": "code points", "payload": {"run_name": "code points"}, "meta": {}
    })];
    for (i, (label, text)) in CLASSES.iter().enumerate() {
        lines.push(serde_json::json!({
            "spec_version": "0.1", "event_id": format!("e{i}"), "run_id": "r", "parent_id": "root",
            "event_type": "TOOL_CALL", "ts": format!("2026-01-01T00:00:0{}.000Z", i % 10), "duration_ms": 5,
            "name": format!("{label} {text}"),
            "payload": {"tool_name": format!("{label} {text}"), "args": {"text": text, "label": label},
                        "result": format!("{label}: {text}"), "status": "ok", "error": null},
            "meta": {}
        }));
    }
    let body: String = lines.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(run.join("events.jsonl"), body).unwrap();
    run
}

mod common;
use common::press;

fn opened(run: &Path, size: (u16, u16)) -> State {
    let mut s = common::listed(&[run.to_path_buf()], size);
    common::open_selected(&mut s);
    s
}

fn forbidden(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}' | '\u{2028}' | '\u{2029}')
}

/// Check one rendered screen: no forbidden character in any cell, and every row exactly
/// `w` columns wide as a terminal would count them.
fn check_screen(s: &State, w: u16, h: u16, what: &str) {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| render(f, s, &Theme::dark())).unwrap();
    let buf = term.backend().buffer();
    for y in 0..h {
        let mut row = String::new();
        let mut x = 0;
        while x < w {
            let cell = &buf[(x, y)];
            let sym = cell.symbol();
            assert!(
                !sym.chars().any(forbidden),
                "{what}: raw control in cell ({x},{y}): {sym:?}"
            );
            row.push_str(sym);
            // a wide symbol covers the next cell too (ratatui leaves it empty)
            x += UnicodeWidthStr::width(sym).max(1) as u16;
        }
        assert_eq!(
            UnicodeWidthStr::width(row.as_str()),
            w as usize,
            "{what}: row {y} is misaligned: {row:?}"
        );
    }
}

#[test]
fn every_code_point_class_renders_aligned_and_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let run = write_run(dir.path());
    let (w, h) = (140, 40);
    let mut s = opened(&run, (w, h));
    check_screen(&s, w, h, "tree");
    // Each event's detail pane, one class after the other, wrapped and raw.
    for (label, _) in CLASSES {
        press(&mut s, &["j"]);
        check_screen(&s, w, h, &format!("detail of {label}"));
    }
    press(&mut s, &["g", "j", "enter", "r"]);
    check_screen(&s, w, h, "raw view");
    press(&mut s, &["r", "w"]);
    check_screen(&s, w, h, "wrapped detail");
    // Narrow terminal: columns drop, nothing breaks.
    let (w, h) = (60, 16);
    update(&mut s, Action::Resize(w, h));
    check_screen(&s, w, h, "narrow");
}

#[test]
fn no_raw_sequence_reaches_the_terminal_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let run = write_run(dir.path());
    let (w, h) = (140, 40);
    let mut s = opened(&run, (w, h));
    let mut bytes = Vec::new();
    for _ in 0..CLASSES.len() + 2 {
        let mut term = Terminal::new(CrosstermBackend::new(&mut bytes)).unwrap();
        term.resize(ratatui::layout::Rect::new(0, 0, w, h)).unwrap();
        term.draw(|f| render(f, &s, &Theme::dark())).unwrap();
        drop(term);
        press(&mut s, &["j"]);
    }
    let text = String::from_utf8_lossy(&bytes);
    // crossterm itself writes CSI sequences for cursor and colour; none of the trace's own
    // sequences may appear.
    for needle in [
        "\u{1b}]0;pwned",
        "\u{1b}]52;",
        "\u{1b}[31mred",
        "\u{1b}[?1049l",
        "\u{7}",
        "\u{9b}",
        "\u{85}",
        "\u{202e}",
        "\u{2066}",
        "\u{200f}",
        "\u{2028}",
    ] {
        assert!(!text.contains(needle), "raw {needle:?} written to the terminal");
    }
    assert!(
        text.contains("pwned-title"),
        "the hostile text itself is shown, escaped"
    );
}
