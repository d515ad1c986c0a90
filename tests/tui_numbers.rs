//! Issue 36, "never cut a number": the runs list, the run header, the stats view and the
//! compare table at 80x24, 120x40 and 200x50 on Claude Code sessions whose numbers are in
//! the millions and whose names are long (tests/fixtures/tui/big, made by its gen.py).
//! Each screen is an insta snapshot, and every number the state holds is checked to appear
//! whole: in full, or shortened with a unit and rounded right (`34.4M`, `$65.97`), never cut.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use tracetui::tui::action::Action;
use tracetui::tui::render::num;
use tracetui::tui::state::{Effect, State, View};
use tracetui::tui::update::update;

mod common;
use common::press;

/// The screen as text, one line a row, trailing blanks cut; a wide letter's second cell is
/// left out, so that the text lines up as the terminal shows it (CJK names).
fn screen(s: &State, w: u16, h: u16) -> String {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use unicode_width::UnicodeWidthStr;
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| tracetui::tui::render::render(f, s, &tracetui::tui::theme::Theme::dark()))
        .unwrap();
    let buf = term.backend().buffer();
    let mut out = String::new();
    for y in 0..h {
        let mut line = String::new();
        let mut x = 0;
        while x < w {
            let sym = buf[(x, y)].symbol();
            line.push_str(sym);
            x += sym.width().max(1) as u16;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

const SIZES: [(u16, u16); 3] = [(80, 24), (120, 40), (200, 50)];

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tui/big/projects")
}

fn listed(size: (u16, u16)) -> State {
    let mut s = common::listed(&[fixture()], size);
    // By name: steadier to read than by time.
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

/// The compare table: the first run the baseline, the others against it.
fn compared(size: (u16, u16)) -> State {
    let mut s = listed(size);
    press(&mut s, &["g", "space", "j", "x", "j", "x", "j", "x", "d"]);
    assert_eq!(s.view, View::Compare);
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
            &mut s,
            Action::CompareRow {
                generation,
                row,
                result,
            },
        );
    }
    s
}

/// Where `form` stands on the screen as a whole number: not inside a longer one (no digit,
/// or `,` `.` and a digit, on either side) and not cut (no `…` after it, nor `.…`).
fn whole_at(screen: &str, form: &str) -> bool {
    let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
    screen.lines().any(|line| {
        line.match_indices(form).any(|(i, _)| {
            let mut before = line[..i].chars().rev();
            let (b1, b2) = (before.next(), before.next());
            let mut after = line[i + form.len()..].chars();
            let (a1, a2) = (after.next(), after.next());
            let joined_before = digit(b1) || (matches!(b1, Some(',' | '.')) && digit(b2));
            let joined_after = digit(a1) || (matches!(a1, Some(',' | '.')) && (digit(a2) || a2 == Some('…')));
            let cut = a1 == Some('…');
            !joined_before && !joined_after && !cut
        })
    })
}

/// Every number of `numbers` shows whole in one of its forms; returns the missing ones.
fn missing(screen: &str, numbers: &[(String, Vec<String>)]) -> Vec<String> {
    numbers
        .iter()
        .filter(|(_, forms)| !forms.iter().any(|f| whole_at(screen, f)))
        .map(|(what, forms)| format!("{what}: none of {forms:?}"))
        .collect()
}

/// The tokens and cost of every listed run.
fn run_numbers(s: &State) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for e in &s.runs.entries {
        let sm = &e.summary;
        if let Some(t) = sm.tokens {
            out.push((format!("{} tokens", sm.id), num::count_forms(t)));
        }
        if let Some(c) = &sm.cost {
            out.push((format!("{} cost", sm.id), num::cost_forms(c)));
        }
    }
    out
}

#[test]
fn the_fixture_has_numbers_in_the_millions() {
    let s = listed((200, 50));
    assert_eq!(s.runs.entries.len(), 4);
    for e in &s.runs.entries {
        assert!(
            e.summary.tokens.is_some_and(|t| t > 1_000_000),
            "{:?}",
            e.summary.tokens
        );
        assert!(!e.summary.provisional());
    }
}

#[test]
fn runs_list_numbers_are_whole() {
    for (w, h) in SIZES {
        let s = listed((w, h));
        let text = screen(&s, w, h);
        assert_eq!(
            missing(&text, &run_numbers(&s)),
            Vec::<String>::new(),
            "{w}x{h}\n{text}"
        );
        // The ID column: the whole session id when there is room, else none of it.
        for e in &s.runs.entries {
            let id = &e.summary.id;
            assert_eq!(text.contains(id.as_str()), w >= 200, "{w}x{h}: id {id}\n{text}");
            assert!(
                !text.contains(&id[..8]) || text.contains(id.as_str()),
                "{w}x{h}: a cut id\n{text}"
            );
        }
        insta::assert_snapshot!(format!("runs_{w}x{h}"), text);
    }
}

#[test]
fn run_header_numbers_are_whole() {
    for (w, h) in SIZES {
        let mut s = listed((w, h));
        common::open_selected(&mut s);
        let text = screen(&s, w, h);
        let r = s.run.as_ref().expect("an open run");
        let header: String = text.lines().skip(1).take(4).collect::<Vec<_>>().join("\n");
        let c = &r.counts;
        let mut numbers = vec![
            ("events".to_string(), num::count_forms(c.events as u64)),
            ("tokens".to_string(), num::count_forms(c.tokens)),
            ("cost".to_string(), num::cost_forms(&r.cost.total)),
        ];
        if w >= 120 {
            numbers.push(("tool calls".into(), num::count_forms(c.tool_calls as u64)));
            numbers.push(("output".into(), num::count_forms(r.cost.total.tokens.output)));
        }
        assert_eq!(missing(&header, &numbers), Vec::<String>::new(), "{w}x{h}\n{text}");
        insta::assert_snapshot!(format!("header_{w}x{h}"), text);
    }
}

#[test]
fn stats_numbers_are_whole() {
    for (w, h) in SIZES {
        let s = stats((w, h));
        let text = screen(&s, w, h);
        let v = s.stats.as_ref().unwrap();
        assert!(!v.loading());
        let st = &v.stats;
        let mut numbers = vec![
            ("total tokens".to_string(), num::count_forms(st.total.total_tokens)),
            ("total cost".to_string(), num::cost_forms(&st.total)),
        ];
        for (m, t) in &st.models {
            numbers.push((format!("{m} tokens"), num::count_forms(t.total_tokens)));
            numbers.push((format!("{m} cost"), num::cost_forms(t)));
        }
        if w >= 120 {
            // The charts: every day's cost and every tool's p95.
            for (d, t) in &st.days {
                numbers.push((format!("{d} cost"), num::dollar_forms(t.micros)));
            }
            for t in &st.tools {
                if let Some(l) = t.latency {
                    numbers.push((format!("{} p95", t.name), vec![tracetui::model::format_duration(l[1])]));
                }
            }
        }
        assert_eq!(missing(&text, &numbers), Vec::<String>::new(), "{w}x{h}\n{text}");
        // A long tool name stays inside its box: each line's borders are where they belong.
        for line in text.lines().filter(|l| l.starts_with('│')) {
            assert!(line.ends_with('│'), "{w}x{h}: {line:?}");
        }
        insta::assert_snapshot!(format!("stats_{w}x{h}"), text);
    }
}

#[test]
fn compare_table_scrolls_to_the_first_divergence() {
    for (w, h) in SIZES {
        let mut s = compared((w, h));
        let text = screen(&s, w, h);
        insta::assert_snapshot!(format!("compare_{w}x{h}"), text);
        let mut seen = text.contains("FIRST DIVERGENCE");
        for _ in 0..12 {
            press(&mut s, &["l"]);
            let t = screen(&s, w, h);
            seen |= t.contains("FIRST DIVERGENCE");
        }
        assert!(seen, "{w}x{h}: FIRST DIVERGENCE never shown");
        if w == 80 {
            insta::assert_snapshot!(format!("compare_{w}x{h}_scrolled"), screen(&s, w, h));
        }
        // Scrolling stops once the last column is whole on screen: the table never scrolls
        // into nothing, and with room for every column it does not scroll at all.
        let stop = s.compare.as_ref().unwrap().column;
        assert!(screen(&s, w, h).contains("FIRST DIVERGENCE"), "{w}x{h}");
        let all_fit = !text.contains("h/l scroll");
        assert_eq!(stop == 0, all_fit, "{w}x{h}: stopped at column {stop}");
        press(&mut s, &["h", "left"]);
        assert_eq!(s.compare.as_ref().unwrap().column, stop.saturating_sub(2));
    }
}

/// The help overlay fits the screen, scrolls with the usual keys to its last line and back,
/// and on a wide screen cuts none of its lines.
#[test]
fn help_fits_and_scrolls_with_the_usual_keys() {
    let mut s = listed((80, 24));
    common::open_selected(&mut s);
    press(&mut s, &["?"]);
    let first = screen(&s, 80, 24);
    // `help · 1–20 of 46 · …`: the box is within the screen and says how far it has come.
    let range = |t: &str| -> (usize, usize, usize) {
        let l = t.lines().find(|l| l.contains("help · ")).expect("the help title");
        let r = l.split("help · ").nth(1).unwrap();
        let nums: Vec<usize> = r
            .split(|c: char| !c.is_ascii_digit())
            .filter(|x| !x.is_empty())
            .take(3)
            .map(|x| x.parse().unwrap())
            .collect();
        (nums[0], nums[1], nums[2])
    };
    let (a, b, n) = range(&first);
    assert_eq!(a, 1);
    assert!(b < n, "{first}");
    for key in ["G", "end"] {
        press(&mut s, &[key]);
        assert_eq!(range(&screen(&s, 80, 24)).1, n, "{key}");
        press(&mut s, &["g"]);
    }
    press(&mut s, &["pagedown"]);
    let (a2, _, _) = range(&screen(&s, 80, 24));
    assert!(a2 > 2, "a page moves more than a line: {a2}");
    press(&mut s, &["pageup", "down", "j"]);
    assert_eq!(range(&screen(&s, 80, 24)).0, 3);
    press(&mut s, &["up", "k", "home"]);
    assert_eq!(range(&screen(&s, 80, 24)).0, 1);
    // Past the end is the end: one `k` after many `j` moves up at once.
    press(&mut s, &["j"; 200]);
    press(&mut s, &["k"]);
    assert_eq!(range(&screen(&s, 80, 24)).1, n - 1);

    // 200 columns: every help line is on screen whole.
    let mut s = listed((200, 50));
    common::open_selected(&mut s);
    press(&mut s, &["?"]);
    press(&mut s, &["G"]);
    let text = screen(&s, 200, 50);
    for want in [
        "goes back: closes the prompt, clears the filter, leaves the run",
        "copy it raw: control characters included, unsafe to paste",
    ] {
        assert!(text.contains(want), "{want:?} cut\n{text}");
    }
}

/// A message stands apart from the breadcrumb (`› Bashcopied path` ran together).
#[test]
fn a_message_stands_apart_from_the_breadcrumb() {
    for (w, h) in SIZES {
        let mut s = listed((w, h));
        common::open_selected(&mut s);
        press(&mut s, &["j", "j", "j", "y"]);
        let top = screen(&s, w, h).lines().next().unwrap().to_string();
        let at = top
            .find("copied")
            .unwrap_or_else(|| panic!("{w}: no message in {top:?}"));
        assert!(top[..at].ends_with("  "), "{w}: {top:?}");
    }
}
