//! Keys and results → the diff view's state: marking a baseline in the runs list, starting a
//! diff, moving between divergences, the layout switch and the pair detail.

use super::{DiffData, DiffView, PairDetail, Source, header, run_label};
use crate::tui::action::Command;
use crate::tui::clipboard::take;
use crate::tui::detail::{self, Doc};
use crate::tui::keymap::Context;
use crate::tui::layout::{self, DiffLayout};
use crate::tui::nav::{WHEEL_STEP, follow, is_move, move_sel, say};
use crate::tui::state::{Effect, RunEntry, State, View};
use ratatui::layout::Rect;

fn area(s: &State) -> Rect {
    Rect::new(0, 0, s.size.0, s.size.1)
}

/// The layout of the diff view now (its header height depends on the diff and the width).
pub fn diff_layout(s: &State) -> Option<DiffLayout> {
    let v = s.diff.as_ref()?;
    Some(layout::diff(area(s), header(v, s.size.0).len()))
}

/// The first key bound to a command, for messages that tell what to press.
fn key_of(s: &State, ctx: Context, c: Command) -> String {
    match s.keys.keys(ctx, c).first() {
        Some(k) => k.to_string(),
        None => c.name().to_string(),
    }
}

/// Space in the runs list: mark the selected run as the baseline, or unmark it.
pub fn toggle_mark(s: &mut State) {
    let Some(i) = s.runs.entry_at(s.runs.selected) else {
        return;
    };
    if s.runs.mark == Some(i) {
        s.runs.mark = None;
        say(s, "baseline unmarked", false);
        return;
    }
    s.runs.mark = Some(i);
    let msg = format!(
        "baseline: {} · {} on another run",
        crate::sanitize::line(&s.runs.label(i)),
        key_of(s, Context::Runs, Command::Diff)
    );
    say(s, msg, false);
}

/// `d` in the runs list: diff the marked run (baseline) against the selected one.
pub fn diff_selected(s: &mut State) {
    let Some(cur) = s.runs.entry_at(s.runs.selected) else {
        return;
    };
    let Some(base) = s.runs.mark.filter(|&m| m < s.runs.entries.len()) else {
        let msg = format!(
            "no baseline: press {} on a run to mark it, then {} on the run to compare",
            key_of(s, Context::Runs, Command::Mark),
            key_of(s, Context::Runs, Command::Diff)
        );
        say(s, msg, false);
        return;
    };
    if base == cur {
        say(
            s,
            "this is the marked baseline: select another run to compare with it",
            false,
        );
        return;
    }
    let src = |e: &RunEntry| Source::Entry {
        run: e.run.clone(),
        index: e.index,
        id: e.summary.id.clone(),
    };
    let names = [base, cur].map(|i| crate::sanitize::line(&s.runs.label(i)).into_owned());
    let (a, b) = (src(&s.runs.entries[base]), src(&s.runs.entries[cur]));
    start(s, names, a, b);
}

/// Open the diff view and ask for the diff in the background.
pub fn start(s: &mut State, names: [String; 2], baseline: Source, current: Source) {
    s.diff_gen += 1;
    if let Some(old) = &s.diff {
        // A diff still computing for a view being replaced is not wanted any more.
        old.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let v = DiffView::new(s.diff_gen, names);
    let cancel = v.cancel.clone();
    s.diff = Some(v);
    s.message = None;
    s.view = View::Diff;
    s.effects.push(Effect::Diff {
        generation: s.diff_gen,
        baseline,
        current,
        opts: s.diff_opts.clone(),
        cancel,
    });
}

/// `tracetui diff A B` on a terminal: the view opens on the two sources given. The runs list
/// behind it (esc) holds the runs of those sources, discovered as usual.
pub fn start_cli(s: &mut State, d: crate::tui::DiffRequest, forced: Option<&'static dyn crate::formats::Format>) {
    s.auto_open = false;
    s.diff_opts = d.opts;
    let names = [&d.baseline, &d.current].map(|p| crate::sanitize::line(&p.display().to_string()).into_owned());
    let src = |path| Source::Path { path, forced };
    start(s, names, src(d.baseline), src(d.current));
}

/// The background diff arrived (results of a cancelled or older request are dropped).
pub fn ready(s: &mut State, generation: u64, result: Result<Box<DiffData>, String>) {
    let Some(v) = s.diff.as_mut().filter(|v| v.generation == generation) else {
        return;
    };
    match result {
        Ok(mut d) => {
            d.words = s.words;
            v.names = [run_label(&d.a), run_label(&d.b)];
            v.selected = d.first_divergence().unwrap_or(0);
            v.data = Some(d);
        }
        Err(e) => {
            v.error = Some(e.clone());
            say(s, e, true);
        }
    }
}

fn rows_height(s: &State) -> usize {
    diff_layout(s).map_or(1, |l| layout::body(l.rows).height.max(1) as usize)
}

fn pair_box(s: &State) -> Rect {
    diff_layout(s).map_or_else(Rect::default, |l| layout::inner(l.rows))
}

pub fn diff_command(s: &mut State, c: Command) {
    let h = rows_height(s);
    let Some(v) = s.diff.as_mut() else { return };
    match c {
        Command::Back => {
            let cancelled = v.computing();
            // The background diff stops: nobody waits for it any more.
            v.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
            s.diff = None;
            // Opened from the compare table: back to it.
            if !crate::tui::compare::back_to_table(s) && !crate::tui::branches::back_to_view(s) {
                s.view = View::Runs;
            }
            if cancelled {
                say(s, "diff cancelled", false);
            }
        }
        c if is_move(c) => {
            let n = v.data.as_ref().map_or(0, |d| d.len());
            v.selected = move_sel(v.selected, n, c, h);
        }
        Command::NextChange | Command::PrevChange => jump(s, c == Command::NextChange),
        Command::Inline => {
            v.inline = !v.inline;
            let on = v.inline;
            say(s, if on { "inline" } else { "side by side" }, false);
        }
        Command::Open => {
            if let Some(d) = &v.data
                && v.selected < d.len()
            {
                v.pair = Some(PairDetail {
                    item: v.selected,
                    doc: d.pair_doc(v.selected),
                    cursor: 0,
                    offset: 0,
                });
            }
        }
        _ => {}
    }
}

pub fn pair_command(s: &mut State, c: Command) {
    let h = pair_box(s).height as usize;
    let Some(v) = s.diff.as_mut() else { return };
    let Some(p) = v.pair.as_mut() else { return };
    match c {
        c if is_move(c) => p.cursor = move_sel(p.cursor, p.doc.len(), c, h),
        Command::Back => v.pair = None,
        Command::NextChange | Command::PrevChange => {
            jump(s, c == Command::NextChange);
            if let Some(v) = s.diff.as_mut()
                && let Some(d) = &v.data
                && v.pair.as_ref().is_some_and(|p| p.item != v.selected)
            {
                v.pair = Some(PairDetail {
                    item: v.selected,
                    doc: d.pair_doc(v.selected),
                    cursor: 0,
                    offset: 0,
                });
            }
        }
        Command::Wrap => {
            v.wrap = !v.wrap;
            let on = v.wrap;
            say(s, if on { "wrap on" } else { "wrap off" }, false);
        }
        Command::Copy | Command::CopyPath | Command::CopyRaw | Command::Pager => {
            let got = if c == Command::CopyPath {
                p.doc.copy_path(p.cursor)
            } else {
                p.doc.copy_value(p.cursor)
            };
            match got {
                Some(text) => take(s, text, if c == Command::CopyPath { "path" } else { "value" }, c),
                None => say(s, "nothing to copy on this line", false),
            }
        }
        _ => {}
    }
}

/// Select the next (or previous) divergence, wrapping around.
fn jump(s: &mut State, forward: bool) {
    let Some(v) = s.diff.as_mut() else { return };
    let Some(d) = &v.data else { return };
    let n = d.len();
    let cur = v.selected;
    let found = (1..=n)
        .map(|step| {
            if forward {
                (cur + step) % n
            } else {
                (cur + n - step % n) % n
            }
        })
        .find(|&i| d.diverges(i));
    match found {
        None => say(s, "no differences: every call is paired and unchanged", false),
        Some(i) => {
            v.selected = i;
            let wrapped = if forward { i <= cur } else { i >= cur };
            if wrapped {
                let msg = format!("divergences: wrapped to the {}", if forward { "top" } else { "bottom" });
                say(s, msg, false);
            }
        }
    }
}

/// Keep the selection and the scroll offsets inside the lists and on screen.
pub fn settle(s: &mut State) {
    let (h, pbox) = (rows_height(s), pair_box(s));
    let Some(v) = s.diff.as_mut() else { return };
    let n = v.data.as_ref().map_or(0, |d| d.len());
    v.selected = v.selected.min(n.saturating_sub(1));
    let lines = v.lines();
    let head = v.selected_line();
    // Inline, the row's path lines come with it when they fit; its head line always shows.
    let end = match &v.data {
        Some(d) if v.inline => d.inline_pos.get(v.selected + 1).map_or(lines, |&p| p as usize),
        _ => head + 1,
    };
    let last = (end.saturating_sub(1)).min(head + h.saturating_sub(1));
    v.offset = follow(head, follow(last, v.offset, h, lines), h, lines);
    // The gists of the calls in view, off the render path (they read payloads from disk).
    let items: Vec<usize> = (v.offset..v.offset + h).filter_map(|l| v.item_at(l)).collect();
    if let Some(d) = v.data.as_mut() {
        d.fill_gists(&items);
    }
    let wrap = v.wrap;
    if let Some(p) = v.pair.as_mut() {
        p.offset = fit_cursor(&p.doc, p.cursor, p.offset, pbox, wrap);
        p.cursor = p.cursor.min(p.doc.len().saturating_sub(1));
    }
}

/// The offset that shows the cursor line whole, when lines wrap over several rows.
fn fit_cursor(doc: &Doc, cursor: usize, offset: usize, area: Rect, wrap: bool) -> usize {
    let n = doc.len();
    if n == 0 {
        return 0;
    }
    let cursor = cursor.min(n - 1);
    let mut offset = offset.min(cursor);
    let (w, h) = (area.width as usize, area.height.max(1) as usize);
    let mut used = 0;
    let mut top = cursor;
    loop {
        used += detail::rows_of(&doc.line(top), w, wrap);
        if used > h {
            top += 1;
            break;
        }
        if top == offset {
            break;
        }
        top -= 1;
    }
    offset = offset.max(top.min(cursor));
    offset
}

pub fn click(s: &mut State, x: u16, y: u16) {
    let Some(l) = diff_layout(s) else { return };
    let (body, pbox) = (layout::body(l.rows), layout::inner(l.rows));
    let Some(v) = s.diff.as_mut() else { return };
    let wrap = v.wrap;
    if let Some(p) = v.pair.as_mut() {
        if !layout::contains(pbox, x, y) {
            return;
        }
        let mut row = pbox.y;
        for i in p.offset..p.doc.len() {
            let hgt = detail::rows_of(&p.doc.line(i), pbox.width as usize, wrap) as u16;
            if y < row + hgt {
                p.cursor = i;
                break;
            }
            row += hgt;
        }
    } else if layout::contains(body, x, y)
        && let Some(i) = v.item_at(v.offset + (y - body.y) as usize)
    {
        v.selected = i;
    }
}

pub fn scroll(s: &mut State, down: bool) {
    let Some(v) = s.diff.as_mut() else { return };
    let step = |at: usize, n: usize| {
        if down {
            (at + WHEEL_STEP).min(n.saturating_sub(1))
        } else {
            at.saturating_sub(WHEEL_STEP)
        }
    };
    if let Some(p) = v.pair.as_mut() {
        p.cursor = step(p.cursor, p.doc.len());
    } else {
        let n = v.data.as_ref().map_or(0, |d| d.len());
        v.selected = step(v.selected, n);
    }
}
