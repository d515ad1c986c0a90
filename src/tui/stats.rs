//! The stats view: `tracetui stats` over the runs the list shows (its filter applies), with
//! charts. The runs load in the background (every core, a source at a time each) and the
//! view fills in as they arrive; keys are never blocked. Each run loaded also gives its row
//! in the runs list its loaded counts, tokens and cost (in place of metadata values).

use super::action::{Action, Command};
use super::nav::{is_move, move_sel, say};
use super::state::{Effect, State, View};
use crate::report::stats::{By, RunStats, Stats};
use crate::source::RunRef;
use rayon::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;

/// What the background load is asked for: per run, its place in the view's list, its source,
/// its position in the source and its id.
#[derive(Debug)]
pub struct Job {
    pub generation: u64,
    pub runs: Vec<(usize, RunRef, usize, String)>,
    pub cancel: Arc<AtomicBool>,
}

#[derive(Debug)]
pub struct StatsView {
    pub generation: u64,
    pub by: By,
    /// The runs list entries the view is over, in list order.
    pub entries: Vec<usize>,
    /// Per entry (same order): its stats once loaded.
    pub results: Vec<Option<RunStats>>,
    /// Runs that could not be loaded, with why.
    pub failed: Vec<String>,
    pub done: usize,
    /// The totals of the loaded runs (rebuilt on the tick after new ones arrive).
    pub stats: Stats,
    pub dirty: bool,
    /// First row of the tool table shown.
    pub scroll: usize,
    /// The runs list's filter when the view was opened.
    pub filter: String,
    pub cancel: Arc<AtomicBool>,
}

impl StatsView {
    pub fn loading(&self) -> bool {
        self.done < self.entries.len()
    }
    /// The loaded runs, in list order.
    pub fn loaded(&self) -> Vec<RunStats> {
        self.results.iter().flatten().cloned().collect()
    }
    fn rebuild(&mut self) {
        self.stats = Stats::build(self.results.iter().flatten(), self.by);
        self.dirty = false;
    }
}

/// Open the view over the runs the list shows.
pub fn open(s: &mut State) {
    let entries: Vec<usize> = (0..s.runs.order.len()).filter_map(|r| s.runs.entry_at(r)).collect();
    if entries.is_empty() {
        say(s, "no runs listed", false);
        return;
    }
    if let Some(old) = s.stats.take() {
        old.cancel.store(true, Ordering::Relaxed);
    }
    let generation = s.stats_gen();
    let cancel = Arc::new(AtomicBool::new(false));
    let runs = entries
        .iter()
        .enumerate()
        .map(|(pos, &i)| {
            let e = &s.runs.entries[i];
            (pos, e.run.clone(), e.index, e.summary.id.clone())
        })
        .collect();
    s.effects.push(Effect::Stats(Job {
        generation,
        runs,
        cancel: cancel.clone(),
    }));
    s.stats = Some(StatsView {
        generation,
        by: By::Model,
        results: vec![None; entries.len()],
        entries,
        failed: Vec::new(),
        done: 0,
        stats: Stats::default(),
        dirty: true,
        scroll: 0,
        filter: s.runs.filter.clone(),
        cancel,
    });
    s.view = View::Stats;
}

impl State {
    /// A generation number for a new stats view (results of an older one are dropped).
    fn stats_gen(&self) -> u64 {
        self.stats.as_ref().map_or(1, |v| v.generation + 1)
    }
}

pub fn command(s: &mut State, c: Command) {
    let page = s.size.1.saturating_sub(4) as usize;
    let Some(v) = s.stats.as_mut() else {
        s.view = View::Runs;
        return;
    };
    match c {
        c if is_move(c) => v.scroll = move_sel(v.scroll, v.stats.tools.len(), c, page),
        Command::Sort => {
            v.by = match v.by {
                By::Model => By::Day,
                By::Day => By::Format,
                By::Format => By::Run,
                By::Run | By::Tool | By::Subagent | By::Project => By::Model,
            };
            v.rebuild();
            let msg = format!("grouped by {}", v.by.as_str());
            say(s, msg, false);
        }
        Command::Back => {
            // The load goes on no further; what it loaded stays in the runs list.
            v.cancel.store(true, Ordering::Relaxed);
            s.stats = None;
            s.view = View::Runs;
            super::runs_list::refresh_runs(s);
        }
        _ => {}
    }
}

/// Runs loaded in the background: into the view, and their rows get the loaded counts.
pub fn part(s: &mut State, generation: u64, results: Vec<(usize, Result<Box<RunStats>, String>)>) {
    let Some(v) = s.stats.as_mut().filter(|v| v.generation == generation) else {
        return;
    };
    for (pos, r) in results {
        v.done += 1;
        match r {
            Ok(rs) => {
                if let Some(&i) = v.entries.get(pos)
                    && let Some(e) = s.runs.entries.get_mut(i)
                    && e.summary.id == rs.summary.id
                {
                    e.summary = rs.summary.clone();
                }
                if let Some(slot) = v.results.get_mut(pos) {
                    *slot = Some(*rs);
                }
            }
            Err(e) => v.failed.push(e),
        }
    }
    v.dirty = true;
    if !v.loading() {
        v.rebuild();
        // Every listed run is loaded: a sort by tokens or cost is now exact.
        super::runs_list::refresh_runs(s);
    }
}

/// Totals are rebuilt at most once a tick while runs arrive (thousands of parts would
/// otherwise each add everything up again).
pub fn tick(s: &mut State) {
    if let Some(v) = s.stats.as_mut().filter(|v| v.dirty) {
        v.rebuild();
    }
}

/// A run wanted from a source: its place in the view, its position in the source, its id.
type Wanted = (usize, usize, String);

/// Load the runs on every core, a source at a time each, and report each source's runs.
pub fn spawn(job: Job, tx: Sender<Action>) {
    std::thread::spawn(move || {
        // A source may hold several listed runs: it is loaded once for them all.
        let mut by_source: Vec<(RunRef, Vec<Wanted>)> = Vec::new();
        let mut at: std::collections::HashMap<std::path::PathBuf, usize> = Default::default();
        for (pos, run, index, id) in job.runs {
            match at.get(&run.path) {
                Some(&k) => by_source[k].1.push((pos, index, id)),
                None => {
                    at.insert(run.path.clone(), by_source.len());
                    by_source.push((run, vec![(pos, index, id)]));
                }
            }
        }
        let prices = crate::cost::usage::current();
        let cancel = job.cancel;
        let generation = job.generation;
        by_source.into_par_iter().for_each(|(run, wanted)| {
            if cancel.load(Ordering::Relaxed) {
                return;
            }
            let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.load()));
            let results = match res {
                Ok(Ok(loaded)) => {
                    let out = wanted
                        .into_iter()
                        .map(|(pos, index, id)| {
                            let t = loaded
                                .traces
                                .get(index)
                                .filter(|t| t.meta.id == id)
                                .or_else(|| loaded.traces.iter().find(|t| t.meta.id == id));
                            let r = match t {
                                Some(t) => Ok(Box::new(RunStats::of(t, prices))),
                                None => Err(format!("{}: the run {id:?} is no longer there", run.path.display())),
                            };
                            (pos, r)
                        })
                        .collect();
                    crate::report::drop_in_background(loaded);
                    out
                }
                Ok(Err(e)) => wanted.into_iter().map(|(pos, ..)| (pos, Err(e.to_string()))).collect(),
                Err(_) => wanted
                    .into_iter()
                    .map(|(pos, ..)| {
                        (
                            pos,
                            Err(format!("{}: tracetui failed loading it (a bug)", run.path.display())),
                        )
                    })
                    .collect(),
            };
            let _ = tx.send(Action::StatsPart { generation, results });
        });
    });
}
