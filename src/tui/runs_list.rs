//! The runs list's order: filtered, sorted and grouped as the user asked, the selection kept.

use super::action::Command;
use super::clipboard::{copy_resume, take};
use super::diffview::update as diffview;
use super::filter::apply_filter;
use super::nav::{is_move, move_sel, say};
use super::run_view::*;
use super::state::*;
use crate::search::fuzzy::Fuzzy;

/// Sort and filter the runs list, keeping the selected run selected.
pub fn refresh_runs(s: &mut State) {
    let keep = s.runs.entry_at(s.runs.selected).filter(|_| s.runs.moved);
    let fz = Fuzzy::default();
    let f = RunFilter::parse(&s.runs.filter);
    let stale = s.stale_after;
    let mut order: Vec<usize> = (0..s.runs.entries.len())
        .filter(|&i| f.matches(&s.runs, i, stale, &fz))
        .collect();
    let en = &s.runs.entries;
    match s.runs.sort {
        RunSort::Start => order.sort_by(|&a, &b| {
            let (a, b) = (&en[a].summary, &en[b].summary);
            b.start
                .cmp(&a.start)
                .then_with(|| a.name.cmp(&b.name))
                .then_with(|| a.id.cmp(&b.id))
        }),
        RunSort::Name => order.sort_by(|&a, &b| {
            en[a]
                .name()
                .to_lowercase()
                .cmp(&en[b].name().to_lowercase())
                .then_with(|| en[a].summary.id.cmp(&en[b].summary.id))
        }),
        RunSort::Duration => order.sort_by(|&a, &b| en[b].summary.duration.cmp(&en[a].summary.duration)),
        RunSort::Tokens => order.sort_by(|&a, &b| en[b].summary.tokens.cmp(&en[a].summary.tokens)),
        RunSort::Cost => {
            // Known costs first (a run whose every call is unknown is not cheap: it is unknown).
            let key = |i: usize| {
                en[i]
                    .summary
                    .cost
                    .as_ref()
                    .filter(|c| c.micros > 0 || c.unknown == 0)
                    .map(|c| c.micros)
            };
            order.sort_by_key(|&i| std::cmp::Reverse(key(i)))
        }
    }
    if s.runs.reversed {
        order.reverse();
        // Runs without the value sorted on (no start, not loaded, unknown cost) stay last.
        let known = |i: usize| {
            let sm = &en[i].summary;
            match s.runs.sort {
                RunSort::Start => sm.start.is_some(),
                RunSort::Name => true,
                RunSort::Duration => sm.duration.is_some(),
                // A run that recorded no tokens (shown `-`) has no value either.
                RunSort::Tokens => sm.tokens.is_some_and(|t| t > 0),
                RunSort::Cost => sm
                    .cost
                    .as_ref()
                    .is_some_and(|c| c.micros > 0 || (c.unknown == 0 && c.total_tokens > 0)),
            }
        };
        order.sort_by_key(|&i| !known(i));
    }
    // While runs are indexed, one not indexed yet has no exact tokens or cost: it is listed
    // after those that have (never ranked below a known value), and the title says the sort
    // is partial ([`crate::tui::render::runs::sort_label`]).
    if s.runs.indexing.is_some() && matches!(s.runs.sort, RunSort::Tokens | RunSort::Cost) {
        order.sort_by_key(|&i| en[i].summary.provisional());
    }
    s.runs.groups.clear();
    if s.runs.grouped {
        // Stable: each group keeps the order just made. Groups in the order they were found.
        let mut groups: Vec<std::sync::Arc<std::path::Path>> = Vec::new();
        for e in &s.runs.entries {
            if !groups.iter().any(|g| g == &e.run.root) {
                groups.push(e.run.root.clone());
            }
        }
        let of = |i: usize| groups.iter().position(|g| g == &en[i].run.root).unwrap_or(0);
        order.sort_by_key(|&i| of(i));
        let mut rows = Vec::with_capacity(order.len() + groups.len());
        let mut last = None;
        for i in order {
            let g = of(i);
            if last != Some(g) {
                rows.push(HEADER | g);
                last = Some(g);
            }
            rows.push(i);
        }
        order = rows;
        s.runs.groups = groups;
    }
    let first_run = order.iter().position(|&i| i & HEADER == 0).unwrap_or(0);
    s.runs.selected = keep
        .and_then(|k| order.iter().position(|&i| i == k))
        .unwrap_or(first_run);
    s.runs.order = order;
}

/// Add runs to the list, or update those already there (same source and position): a live
/// run's counts and status change as it is written. Returns whether a run was added.
pub(super) fn merge_entries(s: &mut State, list: Vec<RunEntry>) -> bool {
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

/// Apply a filter text to the current view (live, as it is typed).
pub(super) fn set_filter(s: &mut State, text: String) {
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
pub(super) fn off_header(s: &mut State, up: bool) {
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

pub(super) fn open_entry(s: &mut State, idx: usize) {
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

pub(super) fn runs_command(s: &mut State, c: Command) {
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
