//! Every view rendered with ratatui's TestBackend, for agentdbg, agentsnap and openai-chat
//! traces (fixtures in tests/fixtures/tui/), compared with insta snapshots.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::path::{Path, PathBuf};
use tracetui::model::{EventKind, NewEvent, Parent, Status};
use tracetui::tui::action::Action;
use tracetui::tui::render::render;
use tracetui::tui::state::{Effect, Progress, State, View, shared};
use tracetui::tui::theme::Theme;
use tracetui::tui::update::update;

mod common;
use common::{press, screen, typed};

/// A state with the runs of these fixture paths listed.
fn runs(paths: &[&str], size: (u16, u16)) -> State {
    common::listed(&paths.iter().map(|p| fixture(p)).collect::<Vec<_>>(), size)
}

/// A state with one run open, loaded the way the app loads it.
fn opened(path: &str, size: (u16, u16)) -> State {
    let mut s = runs(&[path], size);
    common::open_selected(&mut s);
    s
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tui")
        .join(rel)
}

#[test]
fn runs_view() {
    let s = runs(
        &[
            "agentdbg/runs",
            "agentsnap/refund.snap.json",
            "openai-chat/calendar-chat.json",
        ],
        (120, 16),
    );
    insta::assert_snapshot!(screen(&s, 120, 16));
}

#[test]
fn runs_view_narrow_drops_columns_and_filters() {
    let mut s = runs(&["agentdbg/runs", "agentsnap/refund.snap.json"], (64, 16));
    press(&mut s, &["/"]);
    typed(&mut s, "rf");
    insta::assert_snapshot!(screen(&s, 64, 16));
}

#[test]
fn run_view_agentdbg_failed_tool_call() {
    let mut s = opened("agentdbg/runs/run-7f3a", (120, 32));
    press(&mut s, &["e"]);
    insta::assert_snapshot!(screen(&s, 120, 32));
}

#[test]
fn run_view_agentdbg_detail_raw() {
    let mut s = opened("agentdbg/runs/run-7f3a", (120, 24));
    press(&mut s, &["e", "enter", "r"]);
    insta::assert_snapshot!(screen(&s, 120, 24));
}

#[test]
fn run_view_agentdbg_llm_call_detail_scrolled() {
    let mut s = opened("agentdbg/runs/run-7f3a", (120, 30));
    press(&mut s, &["m", "tab", "c", "j", "j", "j", "j", "j", "j", "j", "j"]);
    insta::assert_snapshot!(screen(&s, 120, 30));
}

#[test]
fn run_view_filter_prompt_and_highlight() {
    let mut s = opened("agentdbg/runs/run-7f3a", (120, 24));
    press(&mut s, &["/"]);
    typed(&mut s, "flight");
    insta::assert_snapshot!(screen(&s, 120, 24));
}

#[test]
fn run_view_stacked_on_a_small_terminal() {
    let mut s = opened("agentdbg/runs/run-7f3a", (80, 24));
    press(&mut s, &["t"]);
    insta::assert_snapshot!(screen(&s, 80, 24));
}

#[test]
fn run_view_agentsnap() {
    let mut s = opened("agentsnap/refund.snap.json", (120, 24));
    press(&mut s, &["e", "e"]);
    insta::assert_snapshot!(screen(&s, 120, 24));
}

#[test]
fn run_view_openai_chat() {
    let mut s = opened("openai-chat/calendar-chat.json", (120, 24));
    press(&mut s, &["t", "t"]);
    insta::assert_snapshot!(screen(&s, 120, 24));
}

#[test]
fn run_view_running_agentdbg_with_markers() {
    let mut s = opened("agentdbg/runs/run-c0de", (120, 20));
    press(&mut s, &["t"]);
    insta::assert_snapshot!(screen(&s, 120, 20));
}

#[test]
fn help_overlay_for_the_tree() {
    let mut s = opened("agentdbg/runs/run-7f3a", (120, 44));
    press(&mut s, &["?"]);
    insta::assert_snapshot!(screen(&s, 120, 44));
}

#[test]
fn help_overlay_for_the_runs_list() {
    let mut s = runs(&["agentdbg/runs"], (100, 30));
    press(&mut s, &["?"]);
    insta::assert_snapshot!(screen(&s, 100, 30));
}

#[test]
fn terminal_too_small() {
    let s = runs(&["agentdbg/runs"], (50, 12));
    insta::assert_snapshot!(screen(&s, 50, 12));
}

#[test]
fn hostile_strings_render_escaped() {
    // wide enough that the hostile result is not wrapped
    let mut s = opened("hostile/runs/run-evil", (240, 20));
    press(&mut s, &["j"]);
    let text = screen(&s, 240, 20);
    assert!(text.contains("\\x1b[2J"), "{text}");
    assert!(text.contains("\\x1b]0;PWNED-TITLE\\x07"));
    assert!(text.contains("\\x1b]52;c;cHduZWQ=\\x07"));
    assert!(text.contains("\\x9b31m"));
    assert!(text.contains("<U+202E>"));
    assert!(!text.chars().any(|c| c.is_control() && c != '\n'));
    insta::assert_snapshot!(text);
}

#[test]
fn no_color_theme_renders_without_colours() {
    let s = opened("agentdbg/runs/run-7f3a", (120, 24));
    let mut term = Terminal::new(TestBackend::new(120, 24)).unwrap();
    term.draw(|f| render(f, &s, &Theme::no_color())).unwrap();
    let buf = term.backend().buffer();
    use ratatui::style::Color;
    for c in buf.content() {
        assert!(matches!(c.fg, Color::Reset) && matches!(c.bg, Color::Reset), "{c:?}");
    }
}

/// A run opened the way the app opens it: fed by a loader (live), with the progress given.
fn live_opened(path: &str, size: (u16, u16), follow: bool, loading: Option<Progress>) -> State {
    let mut s = runs(&[path], size);
    s.follow = follow;
    let (generation, trace) = common::enter_and_load(&mut s);
    let trace = trace.unwrap();
    update(
        &mut s,
        Action::RunUpdate {
            generation,
            trace: shared(*trace),
            loading,
            restarted: false,
        },
    );
    s
}

#[test]
fn live_run_in_follow_mode() {
    let s = live_opened("agentdbg/runs/run-c0de", (120, 20), true, None);
    let text = screen(&s, 120, 20);
    assert!(text.contains("FOLLOW"));
    insta::assert_snapshot!(text);
}

#[test]
fn live_run_paused_with_new_events_below() {
    let mut s = live_opened("agentdbg/runs/run-c0de", (120, 20), true, None);
    press(&mut s, &["k", "k"]);
    let (generation, trace) = {
        let r = s.run.as_ref().unwrap();
        (r.generation, r.trace.clone())
    };
    {
        // Two events arrive, as a loader appends them.
        let mut t = trace.write().unwrap();
        let root = t.roots[0];
        for name in ["fetch_page", "summarize"] {
            t.add(NewEvent {
                parent: Parent::Index(root),
                status: Status::Pending,
                ..NewEvent::new(EventKind::ToolCall, name)
            });
        }
        t.finalize();
    }
    update(
        &mut s,
        Action::RunUpdate {
            generation,
            trace,
            loading: None,
            restarted: false,
        },
    );
    let text = screen(&s, 120, 20);
    assert!(text.contains("PAUSED · 2 new below"), "{text}");
    insta::assert_snapshot!(text);
    press(&mut s, &["F"]);
    assert!(screen(&s, 120, 20).contains("FOLLOW"));
}

#[test]
fn progressive_load_shows_a_progress_bar() {
    let loading = Some(Progress {
        bytes: 512 << 20,
        total: 1_989_243_289,
    });
    let s = live_opened("agentdbg/runs/run-7f3a", (140, 16), false, loading);
    let text = screen(&s, 140, 16);
    assert!(
        text.contains("loading ██░░░░░░░░ 26% · 512.0 MB of 1.85 GB · 7 events"),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn a_bundle_that_does_not_match_its_manifest_carries_its_badge() {
    let bundle = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/assay-bundle/tampered.tar.gz");
    let mut s = common::listed(&[bundle], (140, 16));
    let list = screen(&s, 140, 16);
    assert!(list.contains("⚠ run-fixture-1"), "{list}");
    assert!(list.contains("content does not match its manifest"), "{list}");
    common::open_selected(&mut s);
    let header = screen(&s, 120, 16);
    assert!(header.contains("⚠ content does not match its manifest"), "{header}");
}

/// Issue 16: `z` on a line outside JSON folds every section down to its top-level keys; a
/// folded node shows its size.
#[test]
fn detail_folded_document() {
    let mut s = opened("agentdbg/runs/run-7f3a", (120, 30));
    // `c`: the JSON view (an LLM call opens as a conversation).
    press(&mut s, &["m", "tab", "c", "z"]);
    insta::assert_snapshot!(screen(&s, 120, 30));
}

/// Issue 16: `/` in the detail searches its text: every match highlighted, the counter in
/// the title; `+` zooms the detail to the whole screen.
#[test]
fn detail_search_and_zoom() {
    let mut s = opened("agentdbg/runs/run-7f3a", (120, 30));
    press(&mut s, &["m", "tab", "/"]);
    typed(&mut s, "flight");
    press(&mut s, &["enter", "n", "+"]);
    insta::assert_snapshot!(screen(&s, 120, 30));
}

/// `$` on a Claude Code run: its cost by model and tool, the costliest calls and results,
/// at the three sizes; figures whole at each.
#[test]
fn run_cost_view_at_three_sizes() {
    for (w, h) in [(80, 24), (120, 40), (200, 50)] {
        let mut s = opened("../claude-code/recorder-2.1.3xx.jsonl", (w, h));
        press(&mut s, &["$"]);
        insta::assert_snapshot!(format!("run_cost_view_{w}x{h}"), screen(&s, w, h));
    }
}

/// A run with a subagent whose models have no price: `?`, not `$0`.
#[test]
fn run_cost_view_of_unpriced_calls() {
    let mut s = opened("../claude-code/sess-sub.jsonl", (120, 40));
    press(&mut s, &["$"]);
    insta::assert_snapshot!(screen(&s, 120, 40));
}

/// A branches build: its generation, runs, ignored paths and cancel flag.
type BranchesBuild = (
    u64,
    Vec<tracetui::tui::diffview::Source>,
    Vec<tracetui::diff::Glob>,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
);

/// The pending branches build the view asked for (the app's thread would take it).
fn take_branches(s: &mut State) -> BranchesBuild {
    let pos = s
        .effects
        .iter()
        .position(|e| matches!(e, Effect::Branches { .. }))
        .expect("a branches effect");
    let Effect::Branches {
        generation,
        runs,
        ignore,
        cancel,
    } = s.effects.remove(pos)
    else {
        unreachable!()
    };
    (generation, runs, ignore, cancel)
}

/// Build the pending branches tree as the app's thread would.
fn finish_branches(s: &mut State) {
    let (generation, runs, ignore, cancel) = take_branches(s);
    let done = std::sync::Mutex::new(0);
    let result = tracetui::tui::branches::compute(&runs, &ignore, &cancel, &|n| {
        let mut d = done.lock().unwrap();
        *d = (*d).max(n);
    })
    .expect("not cancelled");
    let n = *done.lock().unwrap();
    assert_eq!(n, runs.len(), "progress counts every run");
    update(s, Action::BranchesProgress { generation, done: n });
    update(
        s,
        Action::BranchesReady {
            generation,
            result: result.map(Box::new),
        },
    );
}

/// The repeated runs (3 paths), all selected with a visual range.
fn branches_of_repeated(size: (u16, u16)) -> State {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/repeated");
    let mut s = common::listed(&[root], size);
    press(&mut s, &["g", "v", "G", "v", "T"]);
    assert_eq!(s.view, View::Branches);
    s
}

/// `T` on twelve runs of one task: the branches, folded where a stretch is long, at the three
/// sizes; while building, a progress line.
#[test]
fn branches_view_at_three_sizes() {
    for (w, h) in [(80, 24), (120, 40), (200, 50)] {
        let mut s = branches_of_repeated((w, h));
        if w == 80 {
            assert!(screen(&s, w, h).contains("building the tree: 0/12 runs loaded"));
        }
        finish_branches(&mut s);
        insta::assert_snapshot!(format!("branches_view_{w}x{h}"), screen(&s, w, h));
    }
    // The fold opens with l and closes with h.
    let mut s = branches_of_repeated((120, 40));
    finish_branches(&mut s);
    press(&mut s, &["G", "k", "k", "l"]);
    let sc = screen(&s, 120, 40);
    assert!(!sc.contains("more step"), "{sc}");
    assert!(sc.contains("tool refund_order"), "{sc}");
    press(&mut s, &["h"]);
    assert!(screen(&s, 120, 40).contains("┆ 3 more steps"));
}

/// Enter on a step opens the branch's representative run with that step selected, Esc comes
/// back; two branches marked, `d` diffs their representatives.
#[test]
fn branches_enter_opens_the_representative_and_d_diffs_two_branches() {
    let mut s = branches_of_repeated((120, 40));
    finish_branches(&mut s);
    // Rows: llm (trunk), ├─ 10/12, tool lookup_order, ...; the escalate branch's step.
    press(&mut s, &["j", "j", "j", "j", "j"]);
    let sc = screen(&s, 120, 40);
    assert!(sc.contains("tool escalate"), "{sc}");
    common::open_selected_with(&mut s, |s| press(s, &["enter"]));
    let r = s.run.as_ref().unwrap();
    let t = tracetui::tui::state::read(&r.trace);
    let ev = r.selected_event().expect("an event selected");
    assert_eq!(t.name(ev), "escalate", "opened at the divergent step");
    assert!(
        t.meta.status == tracetui::model::RunStatus::Error,
        "a run of the failing branch"
    );
    drop(t);
    press(&mut s, &["esc"]);
    assert_eq!(s.view, View::Branches);
    // Mark the escalate branch (from its step) and the 2/12 branch (from its head).
    press(&mut s, &["space", "G", "k", "k", "k", "k", "space"]);
    assert!(screen(&s, 120, 40).contains("2/2 marked"));
    press(&mut s, &["d"]);
    assert_eq!(s.view, View::Diff);
    common::finish_diff(&mut s);
    let sc = screen(&s, 120, 40);
    assert!(sc.contains("TOOLS_CHANGED") || sc.contains("REGRESSION"), "{sc}");
    press(&mut s, &["esc"]);
    assert_eq!(s.view, View::Branches);
    press(&mut s, &["esc"]);
    assert_eq!(s.view, View::Runs);
    assert!(s.branches.is_none());
}

/// With one run selected and the list not grouped, `T` says what to do.
#[test]
fn branches_need_two_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/repeated");
    let mut s = common::listed(&[root], (120, 40));
    press(&mut s, &["x", "T"]);
    assert_eq!(s.view, View::Runs);
    assert!(screen(&s, 120, 40).contains("select two runs or more"));
}

/// Three copies of one mini-SWE-agent trajectory, one of them ending in another exit status:
/// the branches view counts the format's verdicts per branch.
#[test]
fn branches_count_the_formats_verdicts() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/swe-agent/weather-kelvin.traj.json");
    let text = std::fs::read_to_string(&src).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (name, status) in [("a", "Submitted"), ("b", "Submitted"), ("c", "LimitsExceeded")] {
        let t = text.replace(
            "\"exit_status\": \"Submitted\"",
            &format!("\"exit_status\": \"{status}\""),
        );
        std::fs::write(dir.path().join(format!("{name}.traj.json")), t).unwrap();
    }
    let mut s = common::listed(&[dir.path().to_path_buf()], (120, 40));
    press(&mut s, &["g", "v", "G", "v", "T"]);
    assert_eq!(s.view, View::Branches);
    finish_branches(&mut s);
    let sc = screen(&s, 120, 40);
    // One path (the calls are the same), its three runs' verdicts counted.
    assert!(sc.contains("Submitted 2"), "{sc}");
    assert!(sc.contains("LimitsExceeded 1"), "{sc}");
}

/// While the tree builds, moving, opening, folding and diffing do nothing and break nothing;
/// Esc cancels the build and goes back to the list, saying so.
#[test]
fn branches_keys_while_building_and_esc_cancels() {
    let mut s = branches_of_repeated((120, 40));
    press(&mut s, &["j", "k", "G", "g", "l", "h", "enter", "space", "d"]);
    assert_eq!(s.view, View::Branches);
    assert!(screen(&s, 120, 40).contains("building the tree: 0/12 runs loaded"));
    let (generation, runs, ignore, cancel) = take_branches(&mut s);
    press(&mut s, &["esc"]);
    assert_eq!(s.view, View::Runs);
    assert!(
        cancel.load(std::sync::atomic::Ordering::Relaxed),
        "the build was told to stop"
    );
    assert!(screen(&s, 120, 40).contains("building the tree cancelled"));
    // A tree that arrives after the cancel (built before the thread saw it) is dropped.
    let fresh = std::sync::atomic::AtomicBool::new(false);
    let result = tracetui::tui::branches::compute(&runs, &ignore, &fresh, &|_| {}).expect("built");
    update(
        &mut s,
        Action::BranchesReady {
            generation,
            result: result.map(Box::new),
        },
    );
    assert_eq!(s.view, View::Runs);
    assert!(s.branches.is_none());
}

/// A click selects the row under the pointer; the wheel moves the selection.
#[test]
fn branches_mouse_click_and_wheel() {
    let mut s = branches_of_repeated((120, 40));
    finish_branches(&mut s);
    let selected = |s: &State| s.branches.as_ref().unwrap().selected;
    assert_eq!(selected(&s), 0);
    // Rows start on screen line 3 (title, header, box top).
    update(&mut s, Action::Click { x: 10, y: 5 });
    assert_eq!(selected(&s), 2);
    update(
        &mut s,
        Action::Scroll {
            x: 10,
            y: 5,
            down: true,
        },
    );
    assert!(selected(&s) > 2);
    for _ in 0..2 {
        update(
            &mut s,
            Action::Scroll {
                x: 10,
                y: 5,
                down: false,
            },
        );
    }
    assert_eq!(selected(&s), 0);
    // A click below the last row changes nothing.
    update(&mut s, Action::Click { x: 10, y: 39 });
    assert_eq!(selected(&s), 0);
}
