//! Input → `Action` → state. `key_action` and `mouse_action` turn terminal input into actions
//! (through the keymap); `update` is the only place the state changes. Work that cannot be
//! done here (threads, clipboard) is queued in `State::effects` for the app loop.

use super::action::{Action, Command};
use super::diffview::update as diffview;
use super::filter::{apply_batch, cancel_search};
use super::keymap::{Context, Key};
use super::layout;
use super::nav::{WHEEL_STEP, is_move, move_sel, say};
use super::run_view::*;
use super::runs_list::*;
use super::state::*;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};

/// What a key means now: prompt editing while the filter prompt is open, else the keymap.
pub fn key_action(s: &State, k: KeyEvent) -> Option<Action> {
    if k.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    // In raw mode Ctrl-C is a key, not a signal: it always quits, cleanly.
    if ctrl && matches!(k.code, KeyCode::Char('c') | KeyCode::Char('C')) {
        return Some(Action::Cmd(Command::Quit));
    }
    if s.export.prompt.is_some() {
        return super::export::key(k);
    }
    if s.prompt.is_some() {
        return match k.code {
            KeyCode::Esc => Some(Action::InputCancel),
            KeyCode::Enter => Some(Action::InputSubmit),
            KeyCode::Backspace => Some(Action::InputBackspace),
            KeyCode::Char('u') if ctrl => Some(Action::InputClear),
            KeyCode::Char(c) if !ctrl && !k.modifiers.contains(KeyModifiers::ALT) => Some(Action::Input(c)),
            _ => None,
        };
    }
    s.keys.lookup(s.context(), Key::from_event(&k)).map(Action::Cmd)
}

pub fn mouse_action(m: MouseEvent) -> Option<Action> {
    let (x, y) = (m.column, m.row);
    match m.kind {
        MouseEventKind::Down(crossterm::event::MouseButton::Left) => Some(Action::Click { x, y }),
        MouseEventKind::ScrollDown => Some(Action::Scroll { x, y, down: true }),
        MouseEventKind::ScrollUp => Some(Action::Scroll { x, y, down: false }),
        _ => None,
    }
}

pub fn update(s: &mut State, a: Action) {
    match a {
        Action::Tick => {
            s.tick += 1;
            if s.message.as_ref().is_some_and(|m| m.until <= s.tick) {
                s.message = None;
            }
            if let Some(r) = s.run.as_mut().filter(|r| r.filter.stale) {
                r.rebuild_rows();
            }
            super::stats::tick(s);
            super::cost_view::tick(s);
        }
        Action::Resize(w, h) => s.size = (w, h),
        Action::StatsPart { generation, results } => super::stats::part(s, generation, results),
        Action::RunsFound(list) => {
            // A run listed now is readable: its problem, if it had one, is over (and so is a
            // missing PATH's once a run below it is listed).
            s.runs.problems.retain(|(p, _)| {
                p.as_ref()
                    .is_none_or(|p| !list.iter().any(|e| e.run.path.starts_with(p)))
            });
            let added = merge_entries(s, list);
            // Follow mode: a run that appears while none is open is opened (tail before the
            // agent starts), unless the user is choosing one.
            if added
                && s.follow
                && !s.runs.scanning
                && s.run.is_none()
                && s.loading.is_none()
                && !s.runs.moved
                && let Some(i) = (0..s.runs.order.len()).find_map(|r| s.runs.entry_at(r))
            {
                open_entry(s, i);
            }
        }
        Action::RunsIndexed { found, progress } => {
            let was = s.runs.indexing.is_some();
            s.runs.indexing = (!progress.finished()).then_some(progress);
            if !found.is_empty() {
                update(s, Action::RunsFound(found));
            } else if was && s.runs.indexing.is_none() {
                // The sort is whole now (its label says so).
                refresh_runs(s);
            }
        }
        Action::RunsSkipped(k) => s.runs.skipped = k,
        Action::RunsProblem(p) => s.runs.problems.push((None, p)),
        Action::RunProblem(path, p) => {
            if !s.runs.problems.iter().any(|(q, _)| q.as_ref() == Some(&path)) {
                s.runs.problems.push((Some(path), p));
            }
        }
        Action::RunProblemOver(path) => s.runs.problems.retain(|(q, _)| q.as_ref() != Some(&path)),
        Action::Problem(p) => say(s, p, true),
        Action::RunsMore(more) => {
            s.runs.more = more;
            s.runs.more_asked = false;
        }
        Action::RunsDone => {
            s.runs.scanning = false;
            // Runs found after the payload search began are searched too.
            super::runsearch::restart(s, true);
            if s.auto_open && s.runs.entries.len() == 1 && s.run.is_none() && s.loading.is_none() {
                open_entry(s, 0);
            }
        }
        Action::RunLoaded { generation, result } => {
            if generation != s.load_gen {
                return; // cancelled or superseded
            }
            s.loading = None;
            match result {
                Ok(trace) => {
                    if let Some(old) = s.run.as_ref() {
                        cancel_search(old);
                    }
                    let entry = s.pending_entry.take();
                    s.run = Some(RunView::new(shared(*trace), entry));
                    s.view = View::Run;
                    if let (Some(ev), Some(r)) = (s.pending_event.take(), s.run.as_mut()) {
                        super::cost_view::go_to(r, ev);
                    }
                    super::runsearch::land(s);
                }
                Err(e) => say(s, e, true),
            }
        }
        Action::DiffReady { generation, result } => diffview::ready(s, generation, result),
        Action::CompareRow {
            generation,
            row,
            result,
        } => super::compare::row_ready(s, generation, row, result),
        Action::BranchesProgress { generation, done } => super::branches::progress(s, generation, done),
        Action::BranchesReady { generation, result } => super::branches::ready(s, generation, result.map(|g| *g)),
        Action::RunUpdate {
            generation,
            trace,
            loading,
            restarted,
        } => run_update(s, generation, trace, loading, restarted),
        Action::SearchBatch {
            generation,
            from,
            batch,
        } => {
            if let Some(r) = s.run.as_mut()
                && r.filter.generation == generation
            {
                apply_batch(r, from, batch);
            }
        }
        Action::RunsSearchBatch {
            generation,
            hits,
            done,
            total,
        } => super::runsearch::batch(s, generation, hits, done, total),
        Action::Input(c) => edit_prompt(s, |t| t.push(c)),
        Action::InputBackspace => edit_prompt(s, |t| {
            t.pop();
        }),
        Action::InputClear => edit_prompt(s, String::clear),
        Action::InputSubmit if s.prompt.as_ref().is_some_and(|p| p.doc) => {
            s.prompt = None;
            let found = s
                .run
                .as_ref()
                .and_then(|r| r.detail.as_ref())
                .and_then(|d| d.search.as_ref())
                .map(|x| (x.hits.len(), x.query.clone()));
            if let Some((0, q)) = found {
                say(s, format!("not found: {}", crate::sanitize::line(&q)), false);
            }
        }
        Action::InputSubmit => {
            s.prompt = None;
            if let Some(r) = s.run.as_ref().filter(|_| s.view == View::Run)
                && r.filter.active()
                && r.filter.count == 0
                && r.filter.progress.is_none()
            {
                say(s, "no events match", false);
            }
        }
        Action::InputCancel => {
            if let Some(p) = s.prompt.take() {
                if p.doc {
                    set_doc_search(s, p.before);
                } else {
                    set_filter(s, p.before);
                }
            }
        }
        Action::Click { x, y } => click(s, x, y),
        Action::Scroll { x, y, down } => scroll(s, x, y, down),
        Action::Cmd(c) => command(s, c),
        Action::Export(i) => super::export::input(s, i),
        Action::Exported(r) => super::export::done(s, r),
    }
    settle(s);
}

fn edit_prompt(s: &mut State, f: impl FnOnce(&mut String)) {
    let Some(p) = s.prompt.as_mut() else { return };
    f(&mut p.text);
    let text = p.text.clone();
    if p.doc {
        set_doc_search(s, text);
    } else {
        set_filter(s, text);
    }
}

fn command(s: &mut State, c: Command) {
    if c == Command::Quit {
        s.quit = true;
        return;
    }
    if s.help.is_some() {
        match c {
            Command::Help | Command::Back | Command::Problems => {
                s.help = None;
                s.problems_open = false;
            }
            c if is_move(c) => {
                // The usual keys: j/k, arrows, pages, g/G; never past the last line.
                let a = area(s);
                let max = crate::tui::render::help::max_offset(s, a);
                let page = crate::tui::render::help::page(s, a);
                let o = s.help.unwrap_or(0).min(max);
                s.help = Some(move_sel(o, max + 1, c, page));
            }
            _ => {}
        }
        return;
    }
    if s.view != View::Run {
        s.run_cost = None;
    }
    if let Some(v) = &s.run_cost {
        let page = super::render::cost_height(area(s), v);
        if super::cost_view::command(s, c, page) {
            return;
        }
    }
    if c == Command::Help {
        s.help = Some(0);
        return;
    }
    if c == Command::Export {
        super::export::open(s);
        return;
    }
    if c == Command::Problems && s.run.is_some() && s.view != View::Runs {
        s.help = Some(0);
        s.problems_open = true;
        return;
    }
    if c == Command::Stats && s.context() == Context::Tree {
        super::cost_view::open(s);
        return;
    }
    match s.context() {
        Context::Runs => runs_command(s, c),
        Context::Tree => tree_command(s, c),
        Context::Detail => detail_command(s, c),
        Context::Diff => diffview::diff_command(s, c),
        Context::Pair => diffview::pair_command(s, c),
        Context::Stats => super::stats::command(s, c),
        Context::Compare => super::compare::command(s, c),
        Context::Branches => super::branches::command(s, c),
        Context::Help | Context::Global => {}
    }
}

fn click(s: &mut State, x: u16, y: u16) {
    if s.help.is_some() {
        if !layout::contains(crate::tui::render::help::area(s, area(s)), x, y) {
            s.help = None;
        }
        return;
    }
    match s.view {
        View::Stats => {}
        View::Diff => diffview::click(s, x, y),
        View::Compare => super::compare::click(s, y),
        View::Branches => super::branches::click(s, y),
        View::Runs => {
            let table = layout::runs(area(s)).table;
            // The title carries "N unreadable" / "N dirs not searched": a click there lists
            // them, as `!` does.
            if y == table.y && layout::contains(table, x, y) && (!s.runs.problems.is_empty() || s.runs.skipped.any()) {
                s.help = Some(0);
                s.problems_open = true;
                return;
            }
            let b = layout::body(table);
            if layout::contains(b, x, y) {
                let i = s.runs.offset + (y - b.y) as usize;
                if i < s.runs.order.len() {
                    s.runs.selected = i;
                    off_header(s, false);
                    s.runs.moved = true;
                }
            }
        }
        View::Run => {
            let l = run_layout(s);
            let (tree, dbox) = (layout::body(l.tree), layout::inner(l.detail));
            // The header's counts line carries the "N load problems" note: a click there
            // lists them, as `!` does.
            if layout::contains(l.header, x, y)
                && y == l.header.y + 1
                && s.run.as_ref().is_some_and(|r| !read(&r.trace).diagnostics.is_empty())
            {
                s.help = Some(0);
                s.problems_open = true;
                return;
            }
            let Some(r) = s.run.as_mut() else { return };
            if layout::contains(l.tree, x, y) {
                r.focus = Pane::Tree;
                if layout::contains(tree, x, y) {
                    let i = r.offset + (y - tree.y) as usize;
                    if i < r.rows.len() {
                        r.selected = i;
                    }
                }
            } else if layout::contains(l.detail, x, y) {
                r.focus = Pane::Detail;
                if layout::contains(dbox, x, y)
                    && let Some(d) = r.detail.as_mut()
                {
                    let row = d.offset + (y - dbox.y) as usize;
                    if row < d.total_rows() {
                        d.cursor = row;
                    }
                }
            }
        }
    }
}

fn scroll(s: &mut State, x: u16, y: u16, down: bool) {
    let step = |v: usize, n: usize| {
        if down {
            (v + WHEEL_STEP).min(n.saturating_sub(1))
        } else {
            v.saturating_sub(WHEEL_STEP)
        }
    };
    if let Some(o) = s.help {
        let max = crate::tui::render::help::max_offset(s, area(s));
        s.help = Some(if down {
            (o + WHEEL_STEP).min(max)
        } else {
            o.saturating_sub(WHEEL_STEP)
        });
        return;
    }
    match s.view {
        View::Stats => {
            if let Some(v) = s.stats.as_mut() {
                v.scroll = step(v.scroll, v.stats.tools.len());
            }
        }
        View::Diff => diffview::scroll(s, down),
        View::Compare => super::compare::scroll(s, down),
        View::Branches => super::branches::scroll(s, down),
        View::Runs => {
            s.runs.selected = step(s.runs.selected, s.runs.order.len());
            off_header(s, !down);
            s.runs.moved = true;
        }
        View::Run => {
            let l = run_layout(s);
            let Some(r) = s.run.as_mut() else { return };
            if layout::contains(l.detail, x, y) {
                if let Some(d) = r.detail.as_mut() {
                    d.cursor = step(d.cursor, d.total_rows());
                }
            } else if layout::contains(l.tree, x, y) {
                r.selected = step(r.selected, r.rows.len());
            }
        }
    }
}
