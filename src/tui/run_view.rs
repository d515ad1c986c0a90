//! The run view's handlers: a loaded run arriving and growing, and the commands of its tree,
//! detail and folds, jumps and the search in a document. `update.rs` dispatches to them.

use super::action::Command;
use super::clipboard::{copy_resume, take};
use super::detail;
use super::diffview::update as diffview;
use super::filter::{apply_filter_with, cancel_search};
use super::layout;
use super::nav::{follow, is_move, move_sel, reveal, say};
use super::state::*;
use crate::model::{EventKind, NO_PARENT, Trace};
use ratatui::layout::Rect;
use std::sync::Arc;

/// A loader published its run: open the view (first time) or grow it.
pub(super) fn run_update(
    s: &mut State,
    generation: u64,
    trace: SharedTrace,
    loading: Option<Progress>,
    restarted: bool,
) {
    if generation != s.load_gen {
        return; // a run that is no longer wanted
    }
    let limit = s.sync_search_limit;
    let opened_here = s
        .run
        .as_ref()
        .is_some_and(|r| r.live.watched && r.generation == generation);
    if !opened_here {
        if let Some(old) = s.run.as_ref() {
            cancel_search(old);
        }
        s.loading = None;
        let entry = s.pending_entry.take();
        let mut r = RunView::new(trace, entry);
        r.generation = generation;
        r.live.watched = true;
        r.live.loading = loading;
        if s.follow {
            r.selected = r.rows.len().saturating_sub(1);
        }
        s.run = Some(r);
        s.view = View::Run;
        super::runsearch::land(s);
    } else if let Some(r) = s.run.as_mut() {
        let finished = r.live.loading.is_some() && loading.is_none();
        r.live.loading = loading;
        if finished {
            r.finish_load();
        }
        // A source read again from the start comes in a new trace.
        let replaced = !Arc::ptr_eq(&r.trace, &trace);
        r.trace = trace;
        let restarted = restarted || replaced;
        // One guard for the whole update (see `SharedTrace`: never a second one on a thread).
        let h = r.trace.clone();
        let t = read(&h);
        let from = r.grow_with(&t, restarted);
        if finished && !r.counted_all() {
            r.recount_with(&t); // exact counts once everything is read
        }
        if r.filter.active() {
            let n = t.len();
            if n <= limit || restarted {
                // Small: search again, all of it (statuses of earlier events change too).
                let text = r.filter.text.clone();
                let keep = r.selected_event();
                if let Some(e) = apply_filter_with(r, &t, text, limit) {
                    s.effects.push(e);
                }
                if let Some(p) = keep.and_then(|k| r.rows.iter().position(|row| row.ev == k)) {
                    r.selected = p;
                }
            } else if from < n {
                s.effects.push(Effect::Search {
                    generation: r.filter.generation,
                    trace: r.trace.clone(),
                    from,
                    query: r.filter.query.clone().expect("active filter"),
                    cancel: r.filter.cancel.get_or_insert_with(Default::default).clone(),
                });
            }
        }
    }
    // The runs list shows what the open run has now.
    if let Some(r) = s.run.as_ref()
        && let Some(e) = r.entry.and_then(|i| s.runs.entries.get_mut(i))
    {
        let sm = &mut e.summary;
        let t = read(&r.trace);
        sm.status = t.meta.status;
        // The name and cost too: a live run's first span is often a child (OTLP exports
        // spans as they end), and its row kept that child's name and cost after the root came.
        if t.meta.name.is_some() {
            sm.name = t.meta.name.clone();
        }
        drop(t);
        sm.cost = Some(r.cost.total.clone());
        sm.events = Some(r.counts.events);
        sm.tool_calls = Some(r.counts.tool_calls);
        sm.llm_calls = Some(r.counts.llm_calls);
        sm.errors = Some(r.counts.errors);
        sm.tokens = Some(r.counts.tokens);
        sm.start = r.span.0.or(sm.start);
        if let (Some(a), Some(b)) = r.span {
            sm.duration = Some(b - a);
        }
    }
}

/// Keep offsets and the detail consistent with the selection and the screen size.
pub(super) fn settle(s: &mut State) {
    let rh = runs_height(s);
    let n = s.runs.order.len();
    s.runs.selected = s.runs.selected.min(n.saturating_sub(1));
    s.runs.offset = follow(s.runs.selected, s.runs.offset, rh, n);
    // A store's list: its next page once the list's end is in view.
    if s.view == View::Runs && s.runs.more && !s.runs.more_asked && s.runs.offset + rh >= n {
        s.runs.more_asked = true;
        s.effects.push(Effect::MoreRuns);
    }
    let th = tree_height(s);
    let dbox = detail_box(s);
    if let Some(r) = s.run.as_mut() {
        let n = r.rows.len();
        r.selected = r.selected.min(n.saturating_sub(1));
        r.offset = follow(r.selected, r.offset, th, n);
        if r.following() {
            r.live.unseen = 0;
        }
        // The gists of the rows in view, off the render path (they read payloads from disk).
        if s.view == View::Run {
            let view: Vec<u32> = r.rows.iter().skip(r.offset).take(th).map(|row| row.ev).collect();
            let h = r.trace.clone();
            let t = read(&h);
            r.gists.fill(&t, &view);
        }
        r.sync_detail();
        let wrap = r.wrap;
        if let Some(d) = r.detail.as_mut() {
            let (w, h) = (dbox.width.max(1) as usize, dbox.height.max(1) as usize);
            let rows = d.layout(w, wrap);
            let (n, widest) = (rows.total(), rows.max_width);
            d.hscroll = if wrap {
                0
            } else {
                d.hscroll.min(widest.saturating_sub(w - 1))
            };
            d.cursor = d.cursor.min(n.saturating_sub(1));
            d.offset = follow(d.cursor, d.offset, h, n);
        }
    }
    diffview::settle(s);
    super::compare::settle(s);
    super::branches::settle(s);
}

/// What a jump looks for.
pub(super) type Wanted = fn(&Trace, u32, &Filter) -> bool;

pub(super) fn wanted(c: Command) -> Option<(bool, &'static str, Wanted)> {
    Some(match c {
        Command::NextError => (true, "error", |t, i, _| t.event(i).is_error()),
        Command::PrevError => (false, "error", |t, i, _| t.event(i).is_error()),
        Command::NextTool => (true, "tool call", |t, i, _| t.event(i).kind == EventKind::ToolCall),
        Command::PrevTool => (false, "tool call", |t, i, _| t.event(i).kind == EventKind::ToolCall),
        Command::NextLlm => (true, "LLM call", |t, i, _| t.event(i).kind == EventKind::LlmCall),
        Command::PrevLlm => (false, "LLM call", |t, i, _| t.event(i).kind == EventKind::LlmCall),
        Command::NextMatch => (true, "match", |_, i, f| f.is_hit(i)),
        Command::PrevMatch => (false, "match", |_, i, f| f.is_hit(i)),
        _ => return None,
    })
}

/// Jump to the next (or previous) event the predicate wants, in tree order, wrapping around;
/// collapsed ancestors are expanded to show it. With a filter, only hits are candidates.
pub(super) fn jump(s: &mut State, forward: bool, what: &str, pred: Wanted) {
    let Some(r) = s.run.as_mut() else { return };
    if what == "match" && !r.filter.active() {
        say(s, "no filter: press / to filter", false);
        return;
    }
    let n = r.order.len();
    if n == 0 {
        return;
    }
    let h = r.trace.clone();
    let t = read(&h);
    let cur = r.selected_event().map(|e| r.pos[e as usize] as usize).unwrap_or(0);
    let mut found = None;
    for step in 1..=n {
        let p = if forward {
            (cur + step) % n
        } else {
            (cur + n - step % n) % n
        };
        let ev = r.order[p];
        if (!r.filter.active() || r.filter.is_hit(ev)) && pred(&t, ev, &r.filter) {
            found = Some((ev, if forward { p <= cur } else { p >= cur }));
            break;
        }
    }
    drop(t);
    let Some((ev, wrapped)) = found else {
        say(s, format!("no {what}s"), false);
        return;
    };
    reveal(r, ev);
    if let Some(p) = r.rows.iter().position(|row| row.ev == ev) {
        r.selected = p;
    }
    if wrapped {
        say(
            s,
            format!("{what}: wrapped to the {}", if forward { "top" } else { "bottom" }),
            false,
        );
    }
}

pub(super) fn tree_command(s: &mut State, c: Command) {
    if super::chat::command(s, c) {
        return;
    }
    if let Some((fwd, what, pred)) = wanted(c) {
        jump(s, fwd, what, pred);
        return;
    }
    let h = tree_height(s);
    let limit = s.sync_search_limit;
    let Some(r) = s.run.as_mut() else { return };
    // One guard for the whole command: everything below works on it (`*_with`), none takes
    // the lock again (a second read guard deadlocks with a waiting loader: issue 14).
    let handle = r.trace.clone();
    let t = read(&handle);
    match c {
        c if is_move(c) => r.selected = move_sel(r.selected, r.rows.len(), c, h),
        Command::Follow => r.selected = r.rows.len().saturating_sub(1),
        Command::Zoom => r.zoom = !r.zoom,
        Command::Open | Command::NextPane | Command::PrevPane => r.focus = Pane::Detail,
        Command::Collapse => {
            let Some(row) = r.rows.get(r.selected).copied() else {
                return;
            };
            let has_children = !t.children(row.ev).is_empty();
            if has_children && !r.collapsed[row.ev as usize] {
                r.collapsed[row.ev as usize] = true;
                r.rebuild_rows_with(&t);
            } else {
                let parent = t.event(row.ev).parent;
                if let Some(p) = r.rows[..r.selected].iter().rposition(|x| x.ev == parent) {
                    r.selected = p;
                }
            }
        }
        Command::Expand => {
            let Some(row) = r.rows.get(r.selected).copied() else {
                return;
            };
            if r.collapsed[row.ev as usize] {
                r.collapsed[row.ev as usize] = false;
                r.rebuild_rows_with(&t);
            } else if !t.children(row.ev).is_empty() {
                r.selected = (r.selected + 1).min(r.rows.len().saturating_sub(1));
            }
        }
        Command::CollapseAll => {
            // Keep the selection on the top-level event that contains it.
            if let Some(mut e) = r.selected_event() {
                while t.event(e).parent != NO_PARENT {
                    e = t.event(e).parent;
                }
                r.selected = r.rows.iter().position(|x| x.ev == e).unwrap_or(0);
            }
            for (i, c) in r.collapsed.iter_mut().enumerate() {
                *c = !t.children(i as u32).is_empty();
            }
            r.rebuild_rows_with(&t);
        }
        Command::ExpandAll => {
            r.collapsed.iter_mut().for_each(|c| *c = false);
            r.rebuild_rows_with(&t);
        }
        Command::Filter => {
            s.prompt = Some(Prompt {
                text: r.filter.text.clone(),
                doc: false,
                before: r.filter.text.clone(),
            })
        }
        Command::Back => {
            if r.filter.active() || r.filter.error.is_some() {
                let _ = apply_filter_with(r, &t, String::new(), limit);
            } else if !super::branches::back_to_view(s) {
                s.view = View::Runs;
            }
        }
        Command::CopyResume => {
            let meta = &t.meta;
            let (cmd, format) = (crate::formats::resume::command(meta), meta.format);
            drop(t);
            copy_resume(s, cmd, format);
        }
        Command::Copy | Command::CopyRaw | Command::Pager => {
            if let Some(ev) = r.selected_event() {
                let p = crate::formats::payload(&t, t.event(ev));
                let text = serde_json::to_string_pretty(&p).unwrap_or_default();
                take(s, text, "payload", c);
            }
        }
        _ => {}
    }
}

pub(super) fn detail_command(s: &mut State, c: Command) {
    if super::chat::command(s, c) {
        return;
    }
    let searching = s
        .run
        .as_ref()
        .and_then(|r| r.detail.as_ref())
        .is_some_and(|d| d.search.is_some());
    if searching && matches!(c, Command::NextMatch | Command::PrevMatch) {
        step_doc_search(s, c == Command::NextMatch);
        return;
    }
    if fold_command(s, c) {
        return;
    }
    if let Some((fwd, what, pred)) = wanted(c) {
        jump(s, fwd, what, pred);
        return;
    }
    let h = detail_box(s).height as usize;
    let Some(r) = s.run.as_mut() else { return };
    match c {
        c if is_move(c) => {
            if let Some(d) = r.detail.as_mut() {
                d.cursor = move_sel(d.cursor, d.total_rows(), c, h);
            }
        }
        Command::Follow => r.selected = r.rows.len().saturating_sub(1),
        Command::Zoom => r.zoom = !r.zoom,
        Command::Filter => {
            let Some(d) = r.detail.as_mut() else { return };
            let origin = d.cursor_line();
            let before = d.search.as_ref().map(|x| x.query.clone()).unwrap_or_default();
            let sr = d.search.get_or_insert_with(Default::default);
            sr.origin = origin;
            s.prompt = Some(Prompt {
                text: before.clone(),
                doc: true,
                before,
            });
        }
        Command::Back if r.detail.as_ref().is_some_and(|d| d.search.is_some()) => {
            if let Some(d) = r.detail.as_mut() {
                d.search = None;
            }
        }
        Command::Back | Command::NextPane | Command::PrevPane => r.focus = Pane::Tree,
        Command::Wrap => {
            r.wrap = !r.wrap;
            let on = r.wrap;
            say(s, if on { "wrap on" } else { "wrap off" }, false);
        }
        Command::ScrollLeft | Command::ScrollRight | Command::LineStart | Command::LineEnd => {
            if r.wrap {
                say(s, "wrap is on: every column is on screen (w turns wrap off)", false);
                return;
            }
            let w = detail_box(s).width.max(1) as usize;
            let Some(r) = s.run.as_mut() else { return };
            if let Some(d) = r.detail.as_mut() {
                d.hscroll = match c {
                    Command::ScrollLeft => d.hscroll.saturating_sub((w / 2).max(1)),
                    Command::ScrollRight => d.hscroll + (w / 2).max(1),
                    Command::LineStart => 0,
                    // The end of the line under the cursor in the pane's last column.
                    _ => d.doc.width_of(d.cursor_line()).saturating_sub(w - 1),
                };
            }
        }
        Command::Raw => {
            r.raw = !r.raw;
            if let Some(ev) = r.selected_event() {
                r.rebuild_detail(ev);
            }
        }
        Command::Pager | Command::Editor => {
            // The value under the cursor, else the whole document (as shown).
            let got = r
                .detail
                .as_ref()
                .map(|d| d.doc.copy_value(d.cursor_line()).unwrap_or_else(|| d.doc.text()));
            if let Some(text) = got {
                let text = crate::sanitize::text(&text).into_owned();
                s.effects.push(if c == Command::Editor {
                    Effect::Edit(text)
                } else {
                    Effect::Page(text)
                });
            }
        }
        Command::Copy | Command::CopyPath | Command::CopyRaw => {
            let got = r.detail.as_ref().and_then(|d| {
                if c == Command::CopyPath {
                    d.doc.copy_path(d.cursor_line())
                } else {
                    d.doc.copy_value(d.cursor_line())
                }
            });
            match got {
                Some(text) => take(s, text, if c == Command::CopyPath { "path" } else { "value" }, c),
                None => say(s, "nothing to copy on this line", false),
            }
        }
        _ => {}
    }
}

/// Type in the document search: every match, the cursor on the first from where the search
/// began (wrapping around).
pub(super) fn set_doc_search(s: &mut State, text: String) {
    let w = detail_box(s).width.max(1) as usize;
    let Some(r) = s.run.as_mut() else { return };
    let wrap = r.wrap;
    let Some(d) = r.detail.as_mut() else { return };
    let origin = d.search.as_ref().map_or(0, |x| x.origin);
    if text.is_empty() {
        d.search = s.prompt.is_some().then(|| DocSearch {
            origin,
            ..Default::default()
        });
        return;
    }
    let hits = detail::search(&d.doc, &text);
    let current = (!hits.is_empty()).then(|| hits.iter().position(|h| h.line as usize >= origin).unwrap_or(0));
    if let Some(h) = current.map(|i| hits[i]) {
        d.goto(h.line as usize, h.span as usize, h.start as usize, w, wrap);
    }
    d.search = Some(DocSearch {
        query: text,
        hits,
        current,
        origin,
    });
}

/// `n` / `N` with a document search: the next (previous) match from the cursor, wrapping.
pub(super) fn step_doc_search(s: &mut State, forward: bool) {
    let w = detail_box(s).width.max(1) as usize;
    let Some(r) = s.run.as_mut() else { return };
    let wrap = r.wrap;
    let Some(d) = r.detail.as_mut() else { return };
    let Some(sr) = d.search.as_ref() else { return };
    let n = sr.hits.len();
    if n == 0 {
        let q = crate::sanitize::line(&sr.query).into_owned();
        say(s, format!("not found: {q}"), false);
        return;
    }
    let next = match sr.current {
        Some(i) if forward => (i + 1) % n,
        Some(i) => (i + n - 1) % n,
        None => {
            let line = d.cursor_line() as u32;
            if forward {
                sr.hits.iter().position(|h| h.line > line).unwrap_or(0)
            } else {
                sr.hits.iter().rposition(|h| h.line < line).unwrap_or(n - 1)
            }
        }
    };
    let wrapped = sr.current.is_some_and(|i| if forward { next < i } else { next > i });
    let h = sr.hits[next];
    d.goto(h.line as usize, h.span as usize, h.start as usize, w, wrap);
    if let Some(sr) = d.search.as_mut() {
        sr.current = Some(next);
    }
    if wrapped {
        say(
            s,
            if forward {
                "search hit the bottom, went on from the top"
            } else {
                "search hit the top, went on from the bottom"
            },
            false,
        );
    }
}

/// Folding JSON in the detail (as jless): `space` toggles the node at the cursor, `h` folds
/// it (on a folded node or a value: goes to the enclosing one), `l` unfolds it, `z` folds
/// every node at the cursor's depth and deeper, `Z` unfolds everything.
pub(super) fn fold_command(s: &mut State, c: Command) -> bool {
    if !matches!(
        c,
        Command::ToggleFold | Command::Collapse | Command::Expand | Command::CollapseAll | Command::ExpandAll
    ) {
        return false;
    }
    let Some(d) = s.run.as_mut().and_then(|r| r.detail.as_mut()) else {
        return true;
    };
    let line = d.cursor_line();
    let doc = &mut d.doc;
    let mut to = line;
    match c {
        Command::ToggleFold => {
            if let Some(k) = doc.node_around(line) {
                let on = !doc.is_folded(k);
                doc.set_folded(k, on);
                to = doc.nodes[k].open as usize;
            }
        }
        Command::Collapse => match doc.node_at(line) {
            Some(k) if !doc.is_folded(k) => doc.set_folded(k, true),
            _ => {
                let outer = match doc.node_at(line) {
                    Some(k) => doc.nodes[k].parent,
                    None => doc.node_around(line).map_or(detail::NO_NODE, |k| k as u32),
                };
                if outer != detail::NO_NODE {
                    to = doc.nodes[outer as usize].open as usize;
                }
            }
        },
        Command::Expand => {
            if let Some(k) = doc.node_at(line) {
                doc.set_folded(k, false);
            }
        }
        Command::CollapseAll => {
            let depth = match (doc.node_at(line), doc.node_around(line)) {
                (Some(k), _) => doc.nodes[k].depth,
                (None, Some(k)) => doc.nodes[k].depth + 1,
                // Outside JSON: each section down to its top-level keys.
                (None, None) => 1,
            };
            doc.fold_below(depth);
        }
        _ => doc.unfold_all(),
    }
    // The cursor stays on its line, or goes to the fold that now hides it.
    while doc.hidden(to) {
        match doc.node_around(to) {
            Some(k) if (doc.nodes[k].open as usize) < to => to = doc.nodes[k].open as usize,
            _ => break,
        }
    }
    if let Some(rows) = d.rows.as_ref() {
        d.cursor = rows.row_of(to);
    }
    d.relayout();
    true
}

pub(super) fn area(s: &State) -> Rect {
    Rect::new(0, 0, s.size.0, s.size.1)
}

pub(super) fn runs_height(s: &State) -> usize {
    layout::body(layout::runs(area(s)).table).height.max(1) as usize
}

pub(super) fn tree_height(s: &State) -> usize {
    layout::body(run_layout(s).tree).height.max(1) as usize
}

pub(super) fn detail_box(s: &State) -> Rect {
    layout::inner(run_layout(s).detail)
}

/// The run view's panes, one of them zoomed to fill both (`+`).
pub fn run_layout(s: &State) -> layout::RunLayout {
    let l = layout::run(area(s));
    match s.run.as_ref() {
        Some(r) if r.zoom => layout::zoomed(l, r.focus == Pane::Detail),
        _ => l,
    }
}
