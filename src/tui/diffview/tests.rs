//! The diff view's state transitions: key → action → state, without rendering. The
//! background diff is run here synchronously, as the app's thread would.

use super::{DiffView, InlineLine, Source};
use crate::diff::{Glob, Op, Verdict};
use crate::tui::action::{Action, Command};
use crate::tui::keymap::{Context, Key, Keymap};
use crate::tui::state::{Effect, State, View};
use crate::tui::update::{key_action, update};
use crossterm::event::KeyEvent;
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/diff")
        .join(rel)
}

fn press(s: &mut State, keys: &[&str]) {
    for k in keys {
        let k = Key::parse(k).unwrap();
        if let Some(a) = key_action(s, KeyEvent::new(k.code, k.mods)) {
            update(s, a);
        }
    }
}

/// The runs of the agentsnap diff fixtures, sorted by name.
fn runs() -> State {
    let mut s = State::new(Keymap::default(), (120, 40));
    s.auto_open = false;
    let d = crate::source::discover(&[fixture("agentsnap")], None);
    for r in &d.runs {
        update(&mut s, Action::RunsFound(crate::tui::entries(r).unwrap()));
    }
    update(&mut s, Action::RunsDone);
    press(&mut s, &["s"]); // by name
    s
}

fn select(s: &mut State, name: &str) {
    press(s, &["g"]);
    while s.selected_entry().unwrap().name() != name {
        let before = s.runs.selected;
        press(s, &["j"]);
        assert_ne!(before, s.runs.selected, "no run {name}");
    }
}

/// Run the pending diff effect as the app's thread would, and deliver its result.
fn finish(s: &mut State) {
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
    let result = super::task::compute(&baseline, &current, &opts);
    update(s, Action::DiffReady { generation, result });
}

/// The diff of the baseline `trip` against the named current run, opened from the runs list.
fn diffed(current: &str) -> State {
    let mut s = runs();
    select(&mut s, "trip");
    press(&mut s, &["space"]);
    select(&mut s, current);
    press(&mut s, &["d"]);
    finish(&mut s);
    s
}

fn view(s: &State) -> &DiffView {
    s.diff.as_ref().unwrap()
}

fn message(s: &State) -> String {
    s.message.as_ref().map(|m| m.text.clone()).unwrap_or_default()
}

#[test]
fn d_without_a_mark_says_what_to_do_and_space_toggles_the_mark() {
    let mut s = runs();
    select(&mut s, "changed");
    press(&mut s, &["d"]);
    assert_eq!(s.view, View::Runs);
    assert!(s.effects.is_empty());
    let m = message(&s);
    assert!(
        m.contains("no baseline") && m.contains("space") && m.contains(" d "),
        "{m}"
    );

    select(&mut s, "trip");
    press(&mut s, &["space"]);
    let trip = s.runs.order[s.runs.selected];
    assert_eq!(s.runs.mark, Some(trip));
    assert!(message(&s).contains("baseline: trip"));
    press(&mut s, &["space"]);
    assert_eq!(s.runs.mark, None, "space again unmarks");
    press(&mut s, &["space", "d"]);
    assert!(
        message(&s).contains("this is the marked baseline"),
        "d on the baseline itself"
    );
    assert_eq!(s.view, View::Runs);

    // the mark stays on its run when the list is re-sorted
    press(&mut s, &["s"]);
    assert_eq!(s.runs.mark, Some(trip));
}

#[test]
fn d_diffs_the_marked_baseline_against_the_selected_run_in_the_background() {
    let mut s = runs();
    select(&mut s, "trip");
    press(&mut s, &["space"]);
    select(&mut s, "changed");
    press(&mut s, &["d"]);
    assert_eq!(s.view, View::Diff);
    assert_eq!(s.context(), Context::Diff);
    assert!(view(&s).computing());
    assert_eq!(view(&s).names, ["trip", "changed"]);
    let Some(Effect::Diff { baseline, current, .. }) = s.effects.last() else {
        panic!("no diff effect")
    };
    assert!(matches!(baseline, Source::Entry { id, .. } if id == "trip.baseline"));
    assert!(matches!(current, Source::Entry { id, .. } if id == "changed.current"));
    // keys keep working while it computes
    press(&mut s, &["j", "n", "s", "enter", "?"]);
    assert_eq!(s.context(), Context::Help);
    press(&mut s, &["esc"]);
    finish(&mut s);
    let v = view(&s);
    let d = v.data.as_ref().unwrap();
    assert_eq!(d.diff.verdict, Verdict::ToolsChanged);
    assert_eq!(v.selected, 1, "the view starts on the first divergence");
    assert_eq!(d.op(v.selected), Op::Changed);
    assert!(v.inline, "s pressed while computing switched the layout");
    assert_eq!(v.names, ["trip (trip.baseline)", "changed (changed.current)"]);
}

#[test]
fn results_of_a_cancelled_or_older_diff_are_dropped() {
    let mut s = runs();
    select(&mut s, "trip");
    press(&mut s, &["space"]);
    select(&mut s, "drift");
    press(&mut s, &["d"]);
    let Some(Effect::Diff {
        generation,
        baseline,
        current,
        opts,
        cancel,
    }) = s.effects.pop()
    else {
        panic!()
    };
    assert!(!cancel.load(std::sync::atomic::Ordering::Relaxed));
    press(&mut s, &["esc"]);
    assert_eq!(s.view, View::Runs);
    assert!(s.diff.is_none());
    assert!(message(&s).contains("cancelled"));
    // Esc told the background work to stop: it gives up instead of diffing.
    assert!(cancel.load(std::sync::atomic::Ordering::Relaxed));
    let result = super::task::compute_until(&baseline, &current, &opts, &cancel);
    assert_eq!(result.as_ref().err().map(String::as_str), Some(super::task::CANCELLED));
    update(&mut s, Action::DiffReady { generation, result });
    assert!(s.diff.is_none() && s.view == View::Runs);

    // a newer request wins over an older one still arriving
    press(&mut s, &["d"]);
    let newer = view(&s).generation;
    assert!(newer > generation);
    update(
        &mut s,
        Action::DiffReady {
            generation,
            result: Err("old".into()),
        },
    );
    assert!(view(&s).computing());
    finish(&mut s);
    assert!(view(&s).data.is_some());
}

#[test]
fn n_and_shift_n_step_through_divergences_and_wrap() {
    let mut s = diffed("drift");
    let d = view(&s).data.as_ref().unwrap();
    assert_eq!(d.diff.verdict, Verdict::OutputDrift);
    // items: the run record (~), geocode, forecast (~), events
    assert_eq!(d.len(), 4);
    assert_eq!(view(&s).selected, 0);
    press(&mut s, &["n"]);
    assert_eq!(view(&s).selected, 2);
    press(&mut s, &["n"]);
    assert_eq!(view(&s).selected, 0);
    assert!(message(&s).contains("wrapped to the top"));
    press(&mut s, &["N"]);
    assert_eq!(view(&s).selected, 2);
    assert!(message(&s).contains("wrapped to the bottom"));
    press(&mut s, &["k"]);
    assert_eq!(view(&s).selected, 1);
    press(&mut s, &["N"]);
    assert_eq!(view(&s).selected, 0);

    let mut s = diffed("passed");
    assert_eq!(view(&s).data.as_ref().unwrap().diff.verdict, Verdict::Passed);
    press(&mut s, &["n"]);
    assert_eq!(view(&s).selected, 0);
    assert!(message(&s).contains("no differences"));
}

#[test]
fn s_switches_side_by_side_and_inline_keeping_the_selection() {
    let mut s = diffed("drift");
    press(&mut s, &["n"]);
    assert!(!view(&s).inline);
    assert_eq!(view(&s).selected_line(), 2);
    press(&mut s, &["s"]);
    let v = view(&s);
    assert!(v.inline);
    assert_eq!(v.selected, 2);
    let d = v.data.as_ref().unwrap();
    // run head + its path, geocode, forecast head + its path, events
    assert_eq!(
        d.inline,
        [
            InlineLine::Head(0),
            InlineLine::Path(0, 0),
            InlineLine::Head(1),
            InlineLine::Head(2),
            InlineLine::Path(2, 0),
            InlineLine::Head(3),
        ]
    );
    assert_eq!(v.selected_line(), 3);
    assert_eq!(v.item_at(4), Some(2), "a path line belongs to its row");
    press(&mut s, &["s"]);
    assert!(!view(&s).inline);
}

#[test]
fn enter_opens_the_pair_with_its_path_changes_and_both_values_and_esc_backs_out() {
    let mut s = diffed("changed");
    press(&mut s, &["enter"]);
    assert_eq!(s.context(), Context::Pair);
    let text = |s: &State| -> Vec<String> {
        let p = view(s).pair.as_ref().unwrap();
        p.doc
            .all_lines()
            .map(|l| l.spans.iter().map(|(_, t)| t.as_str()).collect())
            .collect()
    };
    let t = text(&s);
    assert_eq!(t[0], "~ tools[1] forecast  changed");
    assert!(t.contains(&"tools[1].args.days: 2 → 3".to_string()), "{t:#?}");
    let base = t.iter().position(|l| l.starts_with("── Baseline tools[1]")).unwrap();
    let cur = t.iter().position(|l| l.starts_with("── Current tools[1]")).unwrap();
    assert!(base < cur);
    assert!(t[base..cur].iter().any(|l| l.contains("\"days\": 2")), "{t:#?}");
    assert!(t[cur..].iter().any(|l| l.contains("\"days\": 3")), "{t:#?}");

    // scroll, copy a value of the current side
    let line = t.iter().rposition(|l| l.contains("\"days\": 3")).unwrap();
    for _ in 0..line {
        press(&mut s, &["j"]);
    }
    assert_eq!(view(&s).pair.as_ref().unwrap().cursor, line);
    s.effects.clear();
    press(&mut s, &["y"]);
    assert!(matches!(s.effects.pop(), Some(Effect::Copy(v)) if v == "3"));

    // n moves the detail to the next divergence: the added call
    press(&mut s, &["n"]);
    let t = text(&s);
    assert_eq!(t[0], "+ tools[3] restaurants  added");
    assert!(t.iter().any(|l| l.contains("only the current run")));
    assert!(t.iter().any(|l| l.starts_with("── Baseline ·")));
    assert!(t.iter().any(|l| l.contains("(no such call on this side)")));
    assert_eq!(view(&s).pair.as_ref().unwrap().cursor, 0);

    press(&mut s, &["esc"]);
    assert!(view(&s).pair.is_none());
    assert_eq!(s.context(), Context::Diff);
    assert_eq!(view(&s).selected, 3);
    press(&mut s, &["esc"]);
    assert_eq!(s.view, View::Runs);
    assert!(s.diff.is_none());
    assert!(s.runs.mark.is_some(), "the baseline stays marked for the next diff");
}

#[test]
fn moves_stay_inside_and_keep_the_selection_on_screen() {
    let mut s = diffed("changed");
    press(&mut s, &["G"]);
    assert_eq!(view(&s).selected, 3);
    press(&mut s, &["j", "j"]);
    assert_eq!(view(&s).selected, 3);
    press(&mut s, &["g", "k"]);
    assert_eq!(view(&s).selected, 0);
    // a tiny screen: the selection scrolls the body
    update(&mut s, Action::Resize(60, 16));
    press(&mut s, &["G"]);
    let v = view(&s);
    let l = super::update::diff_layout(&s).unwrap();
    let h = crate::tui::layout::body(l.rows).height as usize;
    assert!(v.offset <= v.selected_line() && v.selected_line() < v.offset + h);
}

#[test]
fn the_command_line_diff_uses_its_paths_and_ignore_options() {
    let mut s = State::new(Keymap::default(), (120, 40));
    let opts = crate::diff::Options {
        strict: false,
        ignore: vec![Glob::new("*.args.days")],
    };
    super::update::start_cli(
        &mut s,
        crate::tui::DiffRequest {
            baseline: fixture("agentsnap/trip.snap.json"),
            current: fixture("agentsnap/changed.current.json"),
            opts,
        },
        None,
    );
    assert_eq!(s.view, View::Diff);
    assert!(!s.auto_open, "the runs behind the diff do not open by themselves");
    assert!(view(&s).names[0].ends_with("trip.snap.json"));
    finish(&mut s);
    let d = view(&s).data.as_ref().unwrap();
    assert_eq!(view(&s).names[1], "changed (changed.current)");
    assert!(
        d.diff.rows.iter().all(|r| r.op != Op::Changed),
        "--ignore left the days argument out"
    );
    assert_eq!(d.diff.verdict, Verdict::ToolsChanged, "the added call still counts");
}

#[test]
fn an_unreadable_side_shows_why() {
    let mut s = State::new(Keymap::default(), (120, 40));
    super::update::start(
        &mut s,
        ["a".into(), "b".into()],
        Source::Path {
            path: fixture("agentsnap/trip.snap.json"),
            forced: None,
        },
        Source::Path {
            path: fixture("agentsnap/nope.json"),
            forced: None,
        },
    );
    finish(&mut s);
    let v = view(&s);
    assert!(!v.computing());
    assert!(v.error.as_deref().unwrap().contains("nope.json"), "{:?}", v.error);
    press(&mut s, &["n", "s", "enter", "j"]);
    assert!(view(&s).pair.is_none());
    let _ = Command::Quit;
}

#[test]
fn clicks_select_rows_and_the_wheel_scrolls() {
    let mut s = diffed("drift");
    let l = super::update::diff_layout(&s).unwrap();
    let body = crate::tui::layout::body(l.rows);
    update(
        &mut s,
        Action::Click {
            x: body.x + 3,
            y: body.y + 3,
        },
    );
    assert_eq!(view(&s).selected, 3);
    // inline, a click on a path line selects its row
    press(&mut s, &["s"]);
    update(
        &mut s,
        Action::Click {
            x: body.x + 3,
            y: body.y + 4,
        },
    );
    assert_eq!(view(&s).selected, 2);
    update(
        &mut s,
        Action::Click {
            x: body.x + 3,
            y: body.y + 30,
        },
    );
    assert_eq!(view(&s).selected, 2, "below the last line selects nothing");
    update(
        &mut s,
        Action::Scroll {
            x: body.x,
            y: body.y,
            down: false,
        },
    );
    assert_eq!(view(&s).selected, 0);
    press(&mut s, &["enter"]);
    update(
        &mut s,
        Action::Scroll {
            x: body.x,
            y: body.y,
            down: true,
        },
    );
    assert_eq!(view(&s).pair.as_ref().unwrap().cursor, 3);
    let inner = crate::tui::layout::inner(l.rows);
    update(
        &mut s,
        Action::Click {
            x: inner.x + 1,
            y: inner.y + 1,
        },
    );
    assert_eq!(view(&s).pair.as_ref().unwrap().cursor, 1);
}

#[test]
fn a_diff_replaced_by_another_is_cancelled() {
    let mut s = runs();
    select(&mut s, "trip");
    press(&mut s, &["space"]);
    select(&mut s, "drift");
    press(&mut s, &["d"]);
    let Some(Effect::Diff { cancel: first, .. }) = s.effects.pop() else {
        panic!()
    };
    super::update::start(
        &mut s,
        ["a".into(), "b".into()],
        Source::Path {
            path: fixture("agentsnap/trip.snap.json"),
            forced: None,
        },
        Source::Path {
            path: fixture("agentsnap/drift.current.json"),
            forced: None,
        },
    );
    assert!(first.load(std::sync::atomic::Ordering::Relaxed));
    let Some(Effect::Diff { cancel: second, .. }) = s.effects.last() else {
        panic!()
    };
    assert!(!second.load(std::sync::atomic::Ordering::Relaxed));
}

#[test]
fn the_pair_detail_shows_a_string_change_as_its_word_diff() {
    let mut s = State::new(Keymap::default(), (120, 40));
    s.words.context = 3;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/compare");
    let src = |n: &str| Source::Path {
        path: root.join(n),
        forced: None,
    };
    super::update::start(&mut s, ["a".into(), "b".into()], src("baseline"), src("rerun-wording"));
    finish(&mut s);
    let text = |s: &State| {
        let p = view(s).pair.as_ref().unwrap();
        p.doc
            .all_lines()
            .map(|l| l.spans.iter().map(|(_, t)| t.as_str()).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    };
    press(&mut s, &["enter"]);
    let t = text(&s);
    assert!(
        t.contains("llm[1].response:\n  …6 unchanged words… been issued; it reachesshould reach your card"),
        "{t}"
    );
    let p = view(&s).pair.as_ref().unwrap();
    let toks: Vec<_> = p
        .doc
        .lines
        .iter()
        .flat_map(|l| l.spans.iter())
        .filter(|(_, t)| t == "reaches" || t == "should reach")
        .map(|(k, _)| *k)
        .collect();
    assert_eq!(toks, [crate::tui::detail::Tok::Error, crate::tui::detail::Tok::Ok]);
    // Without colours the marks are spelled out.
    press(&mut s, &["esc", "esc"]);
    s.words.marks = true;
    super::update::start(&mut s, ["a".into(), "b".into()], src("baseline"), src("rerun-wording"));
    finish(&mut s);
    press(&mut s, &["enter"]);
    assert!(
        text(&s).contains("it [-reaches-]{+should reach+} your card"),
        "{}",
        text(&s)
    );
}
