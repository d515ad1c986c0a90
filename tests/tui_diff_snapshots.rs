//! The diff view rendered with ratatui's TestBackend (side by side, inline, the pair detail,
//! the runs list with a marked baseline), compared with insta snapshots.

use std::path::{Path, PathBuf};
use tracetui::tui::action::Action;
use tracetui::tui::diffview::Source;
use tracetui::tui::keymap::Keymap;
use tracetui::tui::state::{Effect, State, View};
use tracetui::tui::update::update;

mod common;
use common::{finish_diff as finish, press};

fn screen(s: &State) -> String {
    common::screen(s, s.size.0, s.size.1)
}

fn path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The diff view of two sources, as `tracetui diff A B` opens it.
fn diffed(a: &str, b: &str, size: (u16, u16)) -> State {
    let mut s = State::new(Keymap::default(), size);
    let src = |p: &str| Source::Path {
        path: path(p),
        forced: None,
    };
    tracetui::tui::diffview::update::start(&mut s, ["baseline".into(), "current".into()], src(a), src(b));
    let computing = screen(&s);
    assert!(computing.contains("computing the diff"), "{computing}");
    finish(&mut s);
    s
}

const BOOKING: [&str; 2] = [
    "sample-traces/diff/booking.snap.json",
    "sample-traces/diff/booking.current.json",
];
const AGENTDBG: [&str; 2] = [
    "tests/fixtures/diff/agentdbg/baseline",
    "tests/fixtures/diff/agentdbg/failing",
];

#[test]
fn diff_side_by_side_agentsnap() {
    let s = diffed(BOOKING[0], BOOKING[1], (120, 16));
    insta::assert_snapshot!(screen(&s));
}

#[test]
fn diff_inline_agentsnap() {
    let mut s = diffed(BOOKING[0], BOOKING[1], (120, 16));
    press(&mut s, &["s", "j"]);
    insta::assert_snapshot!(screen(&s));
}

#[test]
fn diff_pair_detail_agentsnap() {
    let mut s = diffed(BOOKING[0], BOOKING[1], (120, 30));
    press(&mut s, &["enter"]);
    insta::assert_snapshot!(screen(&s));
}

#[test]
fn diff_side_by_side_agentdbg_regression() {
    let s = diffed(AGENTDBG[0], AGENTDBG[1], (130, 24));
    insta::assert_snapshot!(screen(&s));
}

#[test]
fn diff_inline_agentdbg_regression_narrow() {
    let mut s = diffed(AGENTDBG[0], AGENTDBG[1], (80, 24));
    press(&mut s, &["s"]);
    insta::assert_snapshot!(screen(&s));
}

#[test]
fn diff_pair_detail_agentdbg_failed_call() {
    let mut s = diffed(AGENTDBG[0], AGENTDBG[1], (130, 36));
    press(&mut s, &["enter"]);
    insta::assert_snapshot!(screen(&s));
}

#[test]
fn diff_help() {
    let mut s = diffed(BOOKING[0], BOOKING[1], (100, 40));
    press(&mut s, &["?"]);
    insta::assert_snapshot!(screen(&s));
}

#[test]
fn runs_list_with_a_marked_baseline() {
    let mut s = State::new(Keymap::default(), (120, 16));
    s.auto_open = false;
    let d = tracetui::source::discover(&[path("sample-traces/diff")], None);
    for r in &d.runs {
        update(&mut s, Action::RunsFound(tracetui::tui::entries(r).unwrap()));
    }
    update(&mut s, Action::RunsDone);
    while !s.selected_entry().unwrap().summary.id.ends_with("baseline") {
        press(&mut s, &["j"]);
    }
    press(&mut s, &["space"]);
    assert_eq!(s.view, View::Runs);
    insta::assert_snapshot!(screen(&s));
}

#[test]
fn hostile_strings_render_escaped_in_every_layout() {
    let mut s = diffed(
        "tests/fixtures/diff/hostile/baseline",
        "tests/fixtures/diff/hostile/current",
        (240, 30),
    );
    let mut screens = vec![screen(&s)];
    press(&mut s, &["s"]);
    screens.push(screen(&s));
    press(&mut s, &["enter"]);
    screens.push(screen(&s));
    press(&mut s, &["esc", "j", "enter"]);
    screens.push(screen(&s));
    for text in &screens {
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text}");
        assert!(!text.contains('\u{202e}'), "{text}");
    }
    assert!(
        // The call's gist (its URL), then the changed path, both escaped.
        screens[0].contains(
            "fetch_page  http://evil.example/\\x1b]0;ARGS-TITLE\\x07  args.url: http://evil.example/\\x1b]0;ARGS-TITLE"
        ),
        "{}",
        screens[0]
    );
    assert!(screens[1].contains("/\\x9b2J"), "{}", screens[1]);
    // The result's word diff: `after` deleted, `changed\x1b[2J` inserted (told apart by colour).
    assert!(screens[2].contains("override afterchanged\\x1b[2J"), "{}", screens[2]);
    assert!(
        screens[3].contains("name\\x1b]0;NAME-TITLE\\x07<U+202E>eman"),
        "{}",
        screens[3]
    );
}

/// A string change shows as its word diff: inline on its row, and in the pair detail; with
/// `[-…-]{+…+}` marks when the theme has no colours.
#[test]
fn diff_word_changes_inline_and_in_the_pair_detail() {
    let (a, b) = ("sample-traces/compare/baseline", "sample-traces/compare/rerun-prompt");
    let mut s = diffed(a, b, (150, 20));
    press(&mut s, &["s"]);
    insta::assert_snapshot!("diff_word_changes_inline", screen(&s));
    let mut s = State::new(Keymap::default(), (110, 24));
    s.words.marks = true;
    s.words.context = 4;
    let src = |p: &str| Source::Path {
        path: path(p),
        forced: None,
    };
    tracetui::tui::diffview::update::start(&mut s, ["baseline".into(), "current".into()], src(a), src(b));
    finish(&mut s);
    press(&mut s, &["enter"]);
    insta::assert_snapshot!("diff_word_changes_pair_plain", screen(&s));
}

/// Run the pending compare effect as the app's thread would, delivering every row.
fn finish_compare(s: &mut State) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let pos = s
        .effects
        .iter()
        .position(|e| matches!(e, Effect::Compare { .. }))
        .expect("a compare effect");
    let Effect::Compare {
        generation,
        baseline,
        runs,
        opts,
        cancel,
    } = s.effects.remove(pos)
    else {
        unreachable!()
    };
    let got = std::sync::Mutex::new(Vec::new());
    tracetui::tui::compare::compute(&baseline, &runs, &opts, &cancel, &|row, result| {
        got.lock().unwrap().push((row, result))
    });
    for (row, result) in got.into_inner().unwrap() {
        update(
            s,
            Action::CompareRow {
                generation,
                row,
                result,
            },
        );
    }
    cancel
}

#[test]
fn compare_table_of_selected_runs_against_the_baseline() {
    let mut s = State::new(Keymap::default(), (150, 16));
    s.auto_open = false;
    let d = tracetui::source::discover(&[path("sample-traces/compare")], None);
    for r in &d.runs {
        update(&mut s, Action::RunsFound(tracetui::tui::entries(r).unwrap()));
    }
    update(&mut s, Action::RunsDone);
    press(&mut s, &["s"]); // by name: baseline, rerun-error, rerun-prompt, rerun-same, rerun-wording
    // Baseline, one run with x, two with a visual range; x again unselects.
    press(&mut s, &["g", "space", "j", "x", "j", "v", "j", "v", "j", "x", "x"]);
    insta::assert_snapshot!("compare_runs_selected", screen(&s));
    press(&mut s, &["d"]);
    assert_eq!(s.view, View::Compare);
    assert!(screen(&s).contains("comparing…"));
    let cancel = finish_compare(&mut s);
    insta::assert_snapshot!("compare_table", screen(&s));
    // Sorted by verdict: the regression first.
    press(&mut s, &["s"]);
    let sc = screen(&s);
    let first_row = sc.lines().nth(4).unwrap();
    assert!(
        first_row.contains("rerun-error") && first_row.contains("REGRESSION"),
        "{sc}"
    );
    // Enter opens that pair's diff; esc comes back to the table, esc again to the runs.
    press(&mut s, &["j", "enter"]);
    assert_eq!(s.view, View::Diff);
    finish(&mut s);
    assert!(screen(&s).contains("rerun-prompt"), "{}", screen(&s));
    assert!(screen(&s).contains("TOOLS_CHANGED"));
    press(&mut s, &["esc"]);
    assert_eq!(s.view, View::Compare);
    assert!(!cancel.load(std::sync::atomic::Ordering::Relaxed));
    press(&mut s, &["esc"]);
    assert_eq!(s.view, View::Runs);
    assert!(
        cancel.load(std::sync::atomic::Ordering::Relaxed),
        "closing the table stops its work"
    );
}

#[test]
fn a_cancelled_comparison_sends_nothing() {
    let base = Source::Path {
        path: path("sample-traces/compare/baseline"),
        forced: None,
    };
    let runs = vec![
        Source::Path {
            path: path("sample-traces/compare/rerun-same"),
            forced: None,
        };
        3
    ];
    let cancel = std::sync::atomic::AtomicBool::new(true);
    let n = std::sync::atomic::AtomicUsize::new(0);
    tracetui::tui::compare::compute(&base, &runs, &Default::default(), &cancel, &|_, _| {
        n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
    assert_eq!(n.into_inner(), 0);
}
