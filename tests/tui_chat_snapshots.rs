//! The chat view (OpenAI, Anthropic and Claude Code shapes), Markdown, and the run's
//! transcript, rendered with ratatui's TestBackend (fixtures in tests/fixtures/tui/chat/).

use std::path::{Path, PathBuf};
use tracetui::tui::state::State;

mod common;
use common::{press, screen};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tui/chat")
        .join(rel)
}

fn opened(path: &str, size: (u16, u16)) -> State {
    let mut s = common::listed(&[fixture(path)], size);
    common::open_selected(&mut s);
    s
}

const CLAUDE: &str = "claude-code/5e551011-aaaa-4bbb-8ccc-0123456789ab.jsonl";

#[test]
fn chat_view_of_an_openai_chat_completion() {
    let mut s = opened("runs/run-oa1", (120, 48));
    press(&mut s, &["m", "tab"]);
    insta::assert_snapshot!(screen(&s, 120, 48));
}

#[test]
fn chat_view_of_anthropic_messages() {
    let mut s = opened("runs/run-an1", (120, 48));
    press(&mut s, &["m", "tab"]);
    insta::assert_snapshot!(screen(&s, 120, 48));
}

#[test]
fn chat_view_of_a_claude_code_call() {
    let mut s = opened(CLAUDE, (120, 30));
    press(&mut s, &["m", "tab"]);
    insta::assert_snapshot!(screen(&s, 120, 30));
}

#[test]
fn markdown_of_an_assistant_message_and_its_raw_text() {
    let mut s = opened(CLAUDE, (120, 40));
    press(&mut s, &["G", "tab"]);
    let md = screen(&s, 120, 40);
    insta::assert_snapshot!(md);
    press(&mut s, &["p"]);
    let raw = screen(&s, 120, 40);
    assert!(raw.contains("| value | expected |"), "{raw}");
    assert!(raw.contains("```python"), "{raw}");
    assert!(!md.contains("```python"), "{md}");
}

#[test]
fn c_switches_between_chat_and_json() {
    let mut s = opened("runs/run-oa1", (120, 40));
    press(&mut s, &["m", "tab"]);
    assert!(screen(&s, 120, 40).contains("▍user"));
    press(&mut s, &["c"]);
    let json = screen(&s, 120, 40);
    assert!(json.contains("\"messages\": ["), "{json}");
    assert!(!json.contains("▍user"), "{json}");
    press(&mut s, &["c"]);
    assert!(screen(&s, 120, 40).contains("▍user"));
}

#[test]
fn transcript_of_a_claude_code_session() {
    let mut s = opened(CLAUDE, (120, 60));
    press(&mut s, &["C"]);
    insta::assert_snapshot!(screen(&s, 120, 60));
}

#[test]
fn the_transcript_follows_the_tree_selection() {
    let mut s = opened(CLAUDE, (120, 24));
    press(&mut s, &["C", "tab", "G"]);
    // The last event (the final answer) is on screen at the top of the transcript's window.
    let text = screen(&s, 120, 24);
    assert!(text.contains("Why it fails"), "{text}");
    press(&mut s, &["C"]);
    assert!(!screen(&s, 120, 24).contains("┌ transcript "));
}
