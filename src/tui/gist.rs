//! What a row of the tree (or of the diff) says after its name: a tool call's gist
//! ([`crate::formats::gist`]), an LLM call's tokens and cost.
//!
//! A gist needs the call's payload, which stays on disk until shown, and rendering reads no
//! file: the update step makes the gists of the rows that come into view ([`Gists::fill`],
//! from `settle`) and keeps them here, a bounded map per view; a frame only looks them up.
//! Filling has a time budget, so that a page of huge records (a `Write` of a large file) does
//! not hold a key: what is left is made on the next ticks, the row showing its name meanwhile.

use crate::model::{Event, EventKind, Status, Trace};
use crate::tui::render::num::{count_forms, dollar_forms};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Gists kept per view: many screens of rows. Past it, those out of view are forgotten.
pub const CAP: usize = 4096;

/// Time one update spends reading payloads for gists; the rest waits for the next tick.
pub const BUDGET: Duration = Duration::from_millis(8);
/// Gists made in one update whatever the time: a screen's rows (at most a few dozen) get
/// theirs at once, so that what a screen shows does not depend on the machine's load (a
/// snapshot under load showed half a diff's gists). The budget bounds pages beyond it.
pub const AT_ONCE: usize = 64;

/// The gists made for a view's rows, by event index.
#[derive(Debug, Default)]
pub struct Gists {
    /// (what the event was when its gist was made, the gist).
    map: HashMap<u32, (Stamp, Option<Box<str>>)>,
    /// Rows in view still without their gist (the budget ran out).
    pending: bool,
}

/// A gist is made again when its event changed: a pending call completed, or its record was
/// read anew.
type Stamp = (Status, u64);

fn stamp(e: &Event) -> Stamp {
    (e.status, e.origin.offset)
}

impl Gists {
    /// The gist of event `ev`, when made (and it has one).
    pub fn get(&self, ev: u32) -> Option<&str> {
        self.map.get(&ev).and_then(|(_, g)| g.as_deref())
    }

    /// Whether rows in view are still waiting for their gist.
    pub fn pending(&self) -> bool {
        self.pending
    }

    /// Forget every gist (the trace was read again: indices mean other events).
    pub fn clear(&mut self) {
        self.map.clear();
        self.pending = false;
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Make the gists of the tool calls among `events` (the rows in view) that have none yet,
    /// for at most [`BUDGET`]. Returns how many were made.
    pub fn fill(&mut self, t: &Trace, events: &[u32]) -> usize {
        self.fill_within(t, events, BUDGET)
    }

    /// [`Gists::fill`] with the time budget given (tests).
    pub fn fill_within(&mut self, t: &Trace, events: &[u32], budget: Duration) -> usize {
        let todo = |m: &HashMap<u32, (Stamp, Option<Box<str>>)>, ev: u32| {
            let Some(e) = t.events.get(ev as usize) else {
                return false;
            };
            e.kind == EventKind::ToolCall && m.get(&ev).is_none_or(|(s, _)| *s != stamp(e))
        };
        if !events.iter().any(|&ev| todo(&self.map, ev)) {
            self.pending = false;
            return 0;
        }
        if self.map.len() + events.len() > CAP {
            // Keep what is in view; the rest is made again when it comes back.
            let keep: std::collections::HashSet<u32> = events.iter().copied().collect();
            self.map.retain(|ev, _| keep.contains(ev));
        }
        let started = Instant::now();
        let mut made = 0;
        self.pending = false;
        for &ev in events {
            if !todo(&self.map, ev) {
                continue;
            }
            if made >= AT_ONCE && started.elapsed() >= budget {
                self.pending = true;
                break;
            }
            let e = t.event(ev);
            let g = crate::formats::gist::of(t, e).map(String::into_boxed_str);
            self.map.insert(ev, (stamp(e), g));
            made += 1;
        }
        made
    }
}

/// What an LLM call's row shows after its name, most important first, each in its forms
/// longest first: its tokens (`5,708 tok`, `5.7k tok`, `6k tok`) and, when known, its cost
/// (`$0.0256`, `$0.03`). Whole numbers: a narrow column takes shorter forms, then drops the
/// last parts ([`fit_numbers`]), never cuts one.
pub fn llm_parts(t: &Trace, e: &Event, prices: &crate::cost::Prices) -> Vec<Vec<String>> {
    if e.kind != EventKind::LlmCall {
        return Vec::new();
    }
    let Some(u) = e.usage.get() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(n) = u.sum() {
        out.push(count_forms(n).into_iter().map(|f| format!("{f} tok")).collect());
    }
    let own = t.str(e.model);
    let model = if own.is_empty() {
        t.meta.model.as_deref()
    } else {
        Some(own)
    };
    if let Some(m) = crate::cost::usage::call_cost(prices, model, Some(&u)).micros {
        out.push(dollar_forms(m));
    }
    out
}

/// How an LLM row's name and numbers share `room` cells: the numbers in the longest forms
/// that fit beside at least [`MIN_NAME`] cells of the name (the fewest steps shorter, the
/// first number the longer on a tie), else without the name, else without the last parts.
/// Returns whether the name shows, and the numbers as they follow it
/// (` · 5,708 tok · $0.0256`, or `5,708 tok · $0.0256` without the name).
pub fn fit_numbers(name: &str, mut parts: Vec<Vec<String>>, room: usize) -> (bool, String) {
    use unicode_width::UnicodeWidthStr;
    let min_name = name.width().min(MIN_NAME);
    parts.retain(|forms| !forms.is_empty());
    while !parts.is_empty() {
        // Every choice of one form a part (a few parts of at most three forms each).
        let mut choices: Vec<Vec<usize>> = vec![Vec::new()];
        for forms in &parts {
            choices = choices
                .into_iter()
                .flat_map(|c| {
                    (0..forms.len()).map(move |k| {
                        let mut c = c.clone();
                        c.push(k);
                        c
                    })
                })
                .collect();
        }
        choices.sort_by_key(|c| (c.iter().sum::<usize>(), c.clone()));
        let text = |c: &[usize]| {
            let forms: Vec<&str> = parts.iter().zip(c).map(|(f, &k)| f[k].as_str()).collect();
            forms.join(" · ")
        };
        if let Some(s) = choices
            .iter()
            .map(|c| text(c))
            .find(|s| s.width() + 3 + min_name <= room)
        {
            return (true, format!(" · {s}"));
        }
        if let Some(s) = choices.iter().map(|c| text(c)).find(|s| s.width() <= room) {
            return (false, s);
        }
        parts.pop();
    }
    (true, String::new())
}

/// Cells of a name kept beside an LLM row's numbers (`claude…`).
pub const MIN_NAME: usize = 7;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::*;

    fn trace(n: usize) -> Trace {
        let mut t = Trace::new(RunMeta {
            id: "r".into(),
            format: "agentdbg",
            ..Default::default()
        });
        let root = t.add(NewEvent::new(EventKind::Run, "r"));
        for k in 0..n {
            t.add(NewEvent {
                parent: Parent::Index(root),
                status: Status::Ok,
                payload: PayloadRef::Inline(Box::new(Payload {
                    input: Some(serde_json::json!({"path": format!("/src/f{k}.rs")})),
                    ..Default::default()
                })),
                ..NewEvent::new(EventKind::ToolCall, "read_file")
            });
        }
        t.add(NewEvent {
            parent: Parent::Index(root),
            model: Some("claude-sonnet-4-5"),
            usage: Some(Usage {
                input: Some(5000),
                output: Some(708),
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::LlmCall, "claude-sonnet-4-5")
        });
        t.finalize();
        t
    }

    #[test]
    fn gists_are_made_for_the_rows_in_view_and_bounded() {
        let t = trace(CAP + 100);
        let mut g = Gists::default();
        let view: Vec<u32> = (1..41).collect();
        assert_eq!(g.fill(&t, &view), 40);
        assert_eq!(g.get(1), Some("/src/f0.rs"));
        assert_eq!(g.get(0), None, "the run event has no gist");
        // Made once: the next update finds them.
        assert_eq!(g.fill(&t, &view), 0);
        // Scrolling through every row keeps the map bounded.
        for start in (1..t.len() as u32 - 40).step_by(40) {
            let view: Vec<u32> = (start..start + 40).collect();
            g.fill(&t, &view);
            assert!(g.len() <= CAP, "{}", g.len());
            assert_eq!(g.get(start), Some(format!("/src/f{}.rs", start - 1).as_str()));
        }
    }

    #[test]
    fn an_exhausted_budget_leaves_the_rest_for_later() {
        let t = trace(100);
        let mut g = Gists::default();
        let view: Vec<u32> = (1..101).collect();
        // A budget already spent still makes a screenful (the screen always moves on, and
        // what it shows does not depend on the machine's load).
        assert_eq!(g.fill_within(&t, &view, Duration::ZERO), AT_ONCE);
        assert!(g.pending());
        assert_eq!(g.fill_within(&t, &view, Duration::from_secs(10)), 100 - AT_ONCE);
        assert!(!g.pending());
    }

    #[test]
    fn llm_rows_show_tokens_and_cost() {
        let t = trace(1);
        let e = t.event(t.len() as u32 - 1);
        let parts = llm_parts(&t, e, crate::cost::Prices::builtin());
        assert_eq!(parts[0], ["5,708 tok", "5.7k tok", "6k tok"]);
        // claude-sonnet-4-5: $3 / M input, $15 / M output: 0.015 + 0.01062.
        assert_eq!(parts[1], ["$0.0256", "$0.03"]);
        assert!(llm_parts(&t, t.event(1), crate::cost::Prices::builtin()).is_empty());
    }

    #[test]
    fn numbers_shorten_then_drop_never_cut() {
        let parts = || {
            vec![
                count_forms(1_234_567).into_iter().map(|f| format!("{f} tok")).collect(),
                dollar_forms(10_510_000),
            ]
        };
        let name = "claude-sonnet-4-5";
        assert_eq!(
            fit_numbers(name, parts(), 60),
            (true, " · 1,234,567 tok · $10.5100".into())
        );
        // 7 cells of name + " · " + the rest: shorter forms first.
        assert_eq!(fit_numbers(name, parts(), 28), (true, " · 1.2M tok · $10.51".into()));
        // Then without the name, then without the cost.
        assert_eq!(fit_numbers(name, parts(), 18), (false, "1.2M tok · $10.51".into()));
        // The forms every view uses (`render::num`): a tie in steps keeps the first the longer.
        assert_eq!(fit_numbers(name, parts(), 16), (false, "1.2M tok · $11".into()));
        assert_eq!(fit_numbers(name, parts(), 12), (false, "1M tok · $11".into()));
        assert_eq!(fit_numbers(name, parts(), 11), (false, "1.2M tok".into()));
        // Each part shortens on its own: a cent's fraction keeps its digits while the
        // tokens take a unit.
        let small = vec![
            count_forms(5_708).into_iter().map(|f| format!("{f} tok")).collect(),
            dollar_forms(3_512),
        ];
        assert_eq!(fit_numbers(name, small, 16), (false, "6k tok · $0.0035".into()));
        assert_eq!(
            fit_numbers(
                name,
                vec![count_forms(10).into_iter().map(|f| format!("{f} tok")).collect()],
                16
            ),
            (true, " · 10 tok".into())
        );
        assert_eq!(fit_numbers(name, parts(), 8), (false, "1.2M tok".into()));
        assert_eq!(fit_numbers(name, parts(), 3), (true, String::new()));
        for room in 0..80 {
            let (_, s) = fit_numbers(name, parts(), room);
            assert!(unicode_width::UnicodeWidthStr::width(s.as_str()) <= room, "{room}: {s}");
        }
    }

    /// The explorer on `t` at `w`x`h`, every gist in view made, as text.
    fn screen(t: Trace, w: u16, h: u16) -> String {
        use crate::tui::action::Action;
        use crate::tui::state::{RunView, State, View, shared};
        use crate::tui::update::update;
        let mut s = State::new(crate::tui::keymap::Keymap::default(), (w, h));
        s.run = Some(RunView::new(shared(t), None));
        s.view = View::Run;
        update(&mut s, Action::Tick);
        // A loaded machine may spend the budget before the page is done: more ticks finish it
        // (bounded: a hang fails here instead of looping).
        for _ in 0..1000 {
            if !s.run.as_ref().unwrap().gists.pending() {
                break;
            }
            update(&mut s, Action::Tick);
        }
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
        term.draw(|f| crate::tui::render::render(f, &s, &crate::tui::theme::Theme::dark()))
            .unwrap();
        let buf = term.backend().buffer().clone();
        (0..h)
            .map(|y| (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_tree_shows_what_each_call_did() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/session.jsonl");
        let t = || crate::formats::load(&path, None).unwrap().traces.remove(0);
        // At 80 and 120 columns (two panes) the gists are cut to the name column, the
        // tokens take a shorter form.
        for (w, h) in [(80, 24), (120, 40)] {
            let s = screen(t(), w, h);
            assert!(s.contains("⚙ Read  /home/de"), "{w}x{h}\n{s}");
            assert!(s.contains("⚙ Bash  ls missi"), "{w}x{h}\n{s}");
            assert!(
                s.contains("· 1,045 tok ") || s.contains("· 1.0k tok ") || s.contains("· 1k tok "),
                "{w}x{h}\n{s}"
            );
        }
        let s = screen(t(), 200, 50);
        // Tool rows: the name, two cells, the gist.
        assert!(s.contains("⚙ Read  /home/dev/proj/notes.txt "), "{s}");
        assert!(s.contains("⚙ Bash  ls missing/ "), "{s}");
        assert!(s.contains("⚙ Bash  wc -w notes.txt "), "{s}");
        // LLM rows: their tokens, whole.
        assert!(s.contains("◆ claude-test-1 · 1,045 tok "), "{s}");
    }

    #[test]
    fn a_narrow_tree_shortens_an_llm_row_s_numbers_and_never_cuts_them() {
        // Millions of tokens and dollars: the forms that fit at 80 columns are shorter.
        let wide = screen(trace_with(12_345_678, 1_000_000), 200, 50);
        assert!(wide.contains("13,345,678 tok · $52.0370"), "{wide}");
        let narrow = screen(trace_with(12_345_678, 1_000_000), 80, 24);
        let row = narrow.lines().find(|l| l.contains("◆ ")).expect(&narrow).to_string();
        // Whole forms only: each number is one of its forms, none cut.
        assert!(
            ["13,345,678 tok", "13.3M tok", "13M tok"]
                .iter()
                .any(|f| row.contains(f)),
            "{row}"
        );
        assert!(!row.contains("…tok") && !row.contains("$5…"), "{row}");
    }

    /// An LLM call of claude-sonnet-4-5 using `input` and `output` tokens.
    fn trace_with(input: u64, output: u64) -> Trace {
        let mut t = Trace::new(RunMeta {
            id: "r".into(),
            format: "agentdbg",
            ..Default::default()
        });
        let root = t.add(NewEvent::new(EventKind::Run, "r"));
        t.add(NewEvent {
            parent: Parent::Index(root),
            model: Some("claude-sonnet-4-5"),
            usage: Some(Usage {
                input: Some(input),
                output: Some(output),
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::LlmCall, "claude-sonnet-4-5-with-a-long-name")
        });
        t.finalize();
        t
    }
}
