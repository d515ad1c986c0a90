//! Helpers the explorer's TestBackend tests share: drive the state with keys and read the
//! rendered screen, the way the app does.
#![allow(dead_code)] // each test file uses some of them

use crossterm::event::KeyEvent;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::path::PathBuf;
use tracetui::tui::action::Action;
use tracetui::tui::keymap::{Key, Keymap};
use tracetui::tui::render::render;
use tracetui::tui::state::{Effect, State, View};
use tracetui::tui::theme::Theme;
use tracetui::tui::update::{key_action, update};

/// The screen as text, one line a row, trailing blanks cut.
pub fn screen(s: &State, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| render(f, s, &Theme::dark())).unwrap();
    let buf = term.backend().buffer();
    let mut out = String::new();
    for y in 0..h {
        let mut line = String::new();
        for x in 0..w {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

pub fn press(s: &mut State, keys: &[&str]) {
    for k in keys {
        let k = Key::parse(k).unwrap();
        if let Some(a) = key_action(s, KeyEvent::new(k.code, k.mods)) {
            update(s, a);
        }
    }
}

pub fn typed(s: &mut State, text: &str) {
    for c in text.chars() {
        update(s, Action::Input(c));
    }
}

/// A state with the runs of these paths listed.
pub fn listed(paths: &[PathBuf], size: (u16, u16)) -> State {
    let mut s = State::new(Keymap::default(), size);
    s.auto_open = false;
    // The sample traces are committed files: their age is the checkout's, and a "running"
    // sample run would show as stale once the checkout is ten minutes old.
    s.stale_after = std::time::Duration::MAX;
    let d = tracetui::source::discover(paths, None);
    for r in &d.runs {
        update(&mut s, Action::RunsFound(tracetui::tui::entries(r).unwrap()));
    }
    update(&mut s, Action::RunsDone);
    s
}

/// Enter on the selected run, and load it as the app's loader would: (generation, result).
pub fn enter_and_load(s: &mut State) -> (u64, Result<Box<tracetui::model::Trace>, String>) {
    press(s, &["enter"]);
    let Some(Effect::LoadRun {
        generation,
        run,
        index,
        id,
    }) = s.effects.pop()
    else {
        panic!("no load")
    };
    (generation, tracetui::tui::load_one(&run, index, &id))
}

/// Open the selected run, loaded the way the app loads it.
pub fn open_selected(s: &mut State) {
    let (generation, result) = enter_and_load(s);
    update(s, Action::RunLoaded { generation, result });
    assert_eq!(s.view, View::Run);
}

/// Press what opens a run (`go`), then load it as the app's thread would.
pub fn open_selected_with(s: &mut State, go: impl FnOnce(&mut State)) {
    go(s);
    let Some(Effect::LoadRun {
        generation,
        run,
        index,
        id,
    }) = s.effects.pop()
    else {
        panic!("no load")
    };
    let result = tracetui::tui::load_one(&run, index, &id);
    update(s, Action::RunLoaded { generation, result });
    assert_eq!(s.view, View::Run);
}

/// Run the pending diff as the app's thread would.
pub fn finish_diff(s: &mut State) {
    let Some(Effect::Diff {
        generation,
        baseline,
        current,
        opts,
        ..
    }) = s.effects.pop()
    else {
        panic!("no diff effect")
    };
    let result = tracetui::tui::diffview::task::compute(&baseline, &current, &opts);
    update(s, Action::DiffReady { generation, result });
}
