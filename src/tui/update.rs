//! Input → `Action` → state. `key_action` and `mouse_action` turn terminal input into actions
//! (through the keymap); `update` is the only place the state changes. Work that cannot be
//! done here (threads, clipboard) is queued in `State::effects` for the app loop.

use super::action::{Action, Command};
use super::clipboard::take;
use super::detail;
use super::diffview::update as diffview;
use super::filter::{apply_batch, apply_filter, apply_filter_with, cancel_search};
use super::keymap::{Context, Key};
use super::layout;
use super::nav::{WHEEL_STEP, follow, is_move, move_sel, reveal, say};
use super::runs_list::refresh_runs;
use super::state::*;
use crate::model::{EventKind, NO_PARENT, Trace};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use std::sync::Arc;

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

fn area(s: &State) -> Rect {
    Rect::new(0, 0, s.size.0, s.size.1)
}

fn runs_height(s: &State) -> usize {
    layout::body(layout::runs(area(s)).table).height.max(1) as usize
}

fn tree_height(s: &State) -> usize {
    layout::body(run_layout(s).tree).height.max(1) as usize
}

fn detail_box(s: &State) -> Rect {
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
        Action::Problem(p) => say(s, p, true),
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

/// Add runs to the list, or update those already there (same source and position): a live
/// run's counts and status change as it is written. Returns whether a run was added.
fn merge_entries(s: &mut State, list: Vec<RunEntry>) -> bool {
    let mut added = false;
    let mut at: std::collections::HashMap<(std::path::PathBuf, usize), usize> = s
        .runs
        .entries
        .iter()
        .enumerate()
        .map(|(i, x)| ((x.run.path.clone(), x.index), i))
        .collect();
    for e in list {
        match at.get(&(e.run.path.clone(), e.index)) {
            // A rescan lists metadata again: a run loaded since keeps its loaded counts
            // unless its status moved on.
            Some(&i) => {
                // What is read into the run may have grown (a sub-agent's rollout appeared).
                if s.runs.entries[i].run.nested.as_deref() != e.run.nested.as_deref() {
                    s.runs.entries[i].run = e.run.clone();
                }
                let old = &s.runs.entries[i].summary;
                if !(e.summary.provisional() && !old.provisional() && e.summary.status == old.status) {
                    s.runs.entries[i].summary = e.summary;
                    // How long it has been quiet goes with its status (a run indexed as
                    // running an hour after its last write is stale, not live).
                    s.runs.entries[i].quiet = e.quiet;
                }
            }
            None => {
                at.insert((e.run.path.clone(), e.index), s.runs.entries.len());
                s.runs.entries.push(e);
                added = true;
            }
        }
    }
    let places = &s.runs.places;
    let from = s.runs.projects.len();
    let new: Vec<String> = s.runs.entries[from.min(s.runs.entries.len())..]
        .iter()
        .map(|e| e.run.project(places))
        .collect();
    s.runs.projects.extend(new);
    let mut seen = std::collections::HashMap::new();
    for e in &s.runs.entries {
        *seen.entry(e.name()).or_insert(0) += 1;
    }
    s.runs.same_name = s.runs.entries.iter().map(|e| seen[e.name()] > 1).collect();
    refresh_runs(s);
    added
}

/// A loader published its run: open the view (first time) or grow it.
fn run_update(s: &mut State, generation: u64, trace: SharedTrace, loading: Option<Progress>, restarted: bool) {
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
fn settle(s: &mut State) {
    let rh = runs_height(s);
    let n = s.runs.order.len();
    s.runs.selected = s.runs.selected.min(n.saturating_sub(1));
    s.runs.offset = follow(s.runs.selected, s.runs.offset, rh, n);
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

/// Apply a filter text to the current view (live, as it is typed).
fn set_filter(s: &mut State, text: String) {
    match s.view {
        View::Runs => {
            s.runs.filter = text;
            super::runsearch::restart(s, false);
            refresh_runs(s);
            s.runs.selected = 0;
        }
        View::Run => {
            let limit = s.sync_search_limit;
            if let Some(r) = s.run.as_mut()
                && let Some(e) = apply_filter(r, text, limit)
            {
                s.effects.push(e);
            }
        }
        View::Diff | View::Stats | View::Compare | View::Branches => {}
    }
}

/// A selection that landed on a group header moves on to a run (down, or up when `up` and
/// there is one above).
fn off_header(s: &mut State, up: bool) {
    let n = s.runs.order.len();
    if s.runs.entry_at(s.runs.selected).is_some() || n == 0 {
        return;
    }
    if up && s.runs.selected > 0 {
        s.runs.selected -= 1;
    } else if s.runs.selected + 1 < n {
        s.runs.selected += 1;
    }
}

/// Open entry `idx` with event `ev` selected (from the branches view).
pub fn open_entry_at(s: &mut State, idx: usize, ev: Option<u32>) {
    s.pending_event = ev;
    open_entry(s, idx);
}

fn open_entry(s: &mut State, idx: usize) {
    let Some(e) = s.runs.entries.get(idx) else { return };
    if s.run.as_ref().is_some_and(|r| r.entry == Some(idx)) {
        s.view = View::Run;
        if let (Some(ev), Some(r)) = (s.pending_event.take(), s.run.as_mut()) {
            super::cost_view::go_to(r, ev);
        }
        return;
    }
    s.load_gen += 1;
    s.loading = Some(format!("loading {}", crate::sanitize::line(e.name())));
    s.pending_entry = Some(idx);
    s.effects.push(Effect::LoadRun {
        generation: s.load_gen,
        run: e.run.clone(),
        index: e.index,
        id: e.summary.id.clone(),
    });
    super::runsearch::opening(s, idx);
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

fn runs_command(s: &mut State, c: Command) {
    match c {
        c if is_move(c) => {
            let h = runs_height(s);
            s.runs.selected = move_sel(s.runs.selected, s.runs.order.len(), c, h);
            off_header(s, matches!(c, Command::Up | Command::PageUp));
            s.runs.moved = true;
        }
        Command::Open => {
            if let Some(i) = s.runs.entry_at(s.runs.selected) {
                // No event to select: none left over from a load from the branches view.
                open_entry_at(s, i, None);
            }
        }
        Command::Group => {
            s.runs.grouped = !s.runs.grouped;
            refresh_runs(s);
            let msg = if s.runs.grouped {
                "grouped by where the runs were found"
            } else {
                "not grouped"
            };
            say(s, msg, false);
        }
        Command::Problems => {
            s.help = Some(0);
            s.problems_open = true;
        }
        Command::Filter => {
            s.prompt = Some(Prompt {
                text: s.runs.filter.clone(),
                doc: false,
                before: s.runs.filter.clone(),
            })
        }
        Command::Sort => {
            s.runs.sort = s.runs.sort.next();
            s.runs.reversed = false;
            refresh_runs(s);
            say(s, format!("sorted {}", s.runs.sort.label()), false);
        }
        Command::Reverse => {
            s.runs.reversed = !s.runs.reversed;
            refresh_runs(s);
            say(s, format!("sorted {}", super::render::runs::sort_label(&s.runs)), false);
        }
        Command::Stats => super::stats::open(s),
        Command::Back => {
            if s.loading.take().is_some() {
                s.load_gen += 1;
                say(s, "loading cancelled", false);
            } else if !s.runs.filter.is_empty() {
                s.runs.filter.clear();
                refresh_runs(s);
            }
        }
        Command::NextPane | Command::PrevPane if s.run.is_some() => s.view = View::Run,
        Command::Mark => diffview::toggle_mark(s),
        Command::Diff if super::compare::wanted(s) => super::compare::open(s),
        Command::Diff => diffview::diff_selected(s),
        Command::Select => super::compare::toggle_select(s),
        Command::Visual => super::compare::toggle_visual(s),
        Command::Branches => super::branches::open(s),
        Command::Copy | Command::CopyPath | Command::CopyResume | Command::Pager => {
            let Some(e) = s.runs.entry_at(s.runs.selected).and_then(|i| s.runs.entries.get(i)) else {
                return;
            };
            let (id, path, format) = (e.summary.id.clone(), e.summary.path.clone(), e.summary.format);
            let resume = e.summary.resume.clone().or_else(|| {
                // A summary from metadata alone: the id and the agent are enough where the
                // agent resumes from anywhere.
                let meta = crate::model::RunMeta {
                    id: id.clone(),
                    format,
                    ..Default::default()
                };
                crate::formats::resume::command(&meta)
            });
            match c {
                Command::Copy => take(s, id, "id", Command::Copy),
                Command::CopyPath => take(s, path.to_string_lossy().into_owned(), "path", Command::Copy),
                Command::CopyResume => copy_resume(s, resume, format),
                _ => s.effects.push(Effect::PageFile(path)),
            }
        }
        _ => {}
    }
}

/// `R`: the command that resumes a session in its agent, on the clipboard.
fn copy_resume(s: &mut State, cmd: Option<String>, format: &str) {
    match cmd {
        Some(cmd) => {
            if crate::formats::resume::project_scoped(format) && !cmd.starts_with("cd ") {
                say(
                    s,
                    format!("copied {cmd} (run it in the session's project directory)"),
                    false,
                );
                s.effects.push(Effect::Copy(cmd));
            } else {
                take(s, cmd, "resume command", Command::Copy);
            }
        }
        None => say(
            s,
            "no resume command for this run: its agent has none tracetui knows",
            false,
        ),
    }
}

/// What a jump looks for.
type Wanted = fn(&Trace, u32, &Filter) -> bool;

fn wanted(c: Command) -> Option<(bool, &'static str, Wanted)> {
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
fn jump(s: &mut State, forward: bool, what: &str, pred: Wanted) {
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

fn tree_command(s: &mut State, c: Command) {
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

fn detail_command(s: &mut State, c: Command) {
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
fn set_doc_search(s: &mut State, text: String) {
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
fn step_doc_search(s: &mut State, forward: bool) {
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
fn fold_command(s: &mut State, c: Command) -> bool {
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
