//! The runs list's payload search (issue 18): free text and `tool:NAME` in the runs filter are
//! searched in every run's events on a background thread ([`crate::search::grep`]), runs
//! with matches show their count, and opening one lands on its first match.

use super::action::Action;
use super::state::{Effect, State};
use crate::search::grep::{Options, Pattern, search_source_caught};
use crate::source::RunRef;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;

/// The state of the runs list's payload search.
#[derive(Debug, Default)]
pub struct PayloadSearch {
    /// What is searched: (free text, tool name); both empty when no search runs.
    pub key: (String, String),
    pub generation: u64,
    /// Per entry: its matches (0: none, or not searched yet).
    pub counts: Vec<usize>,
    /// Sources searched, and in all.
    pub done: usize,
    pub total: usize,
    pub cancel: Option<Arc<AtomicBool>>,
    /// The run view's filter for the run being opened from a match (lands on its first match).
    pub open_with: Option<String>,
}

impl PayloadSearch {
    pub fn active(&self) -> bool {
        !self.key.0.is_empty() || !self.key.1.is_empty()
    }
    pub fn running(&self) -> bool {
        self.active() && self.done < self.total
    }
    pub fn count(&self, entry: usize) -> usize {
        self.counts.get(entry).copied().unwrap_or(0)
    }
}

/// The free text and `tool:` name of a runs filter (negated terms are not searched).
pub fn key_of(filter: &str) -> (String, String) {
    let mut words = Vec::new();
    let mut tool = String::new();
    for w in filter.split_whitespace() {
        if w.starts_with('!') {
            continue;
        }
        match w.split_once(':') {
            Some(("tool", v)) => tool = v.to_string(),
            Some((k, _)) if ["format", "agent", "status", "project"].contains(&k) => {}
            _ => words.push(w),
        }
    }
    (words.join(" "), tool)
}

/// Start (or stop) the payload search when the filter's text or tool changed, or when
/// `again` (the list has new runs).
pub fn restart(s: &mut State, again: bool) {
    let key = key_of(&s.runs.filter);
    let p = &mut s.runs.payload;
    if key == p.key && !(again && p.active()) {
        return;
    }
    if let Some(c) = p.cancel.take() {
        c.store(true, Ordering::Relaxed);
    }
    p.key = key.clone();
    p.counts = vec![0; s.runs.entries.len()];
    p.done = 0;
    p.total = 0;
    // A new generation even when the search stops: batches of the old one still on their way
    // must not bring its counts back into the list.
    p.generation += 1;
    if !p.active() {
        return;
    }
    let cancel = Arc::new(AtomicBool::new(false));
    p.cancel = Some(cancel.clone());
    let generation = p.generation;
    // One job per source, the rows shown first (they are what the user looks at).
    let shown = (0..s.runs.order.len()).filter_map(|r| s.runs.entry_at(r));
    let mut seen = vec![false; s.runs.entries.len()];
    let mut jobs: Vec<Job> = Vec::new();
    let mut by_path: HashMap<std::path::PathBuf, usize> = HashMap::new();
    for i in shown.chain(0..s.runs.entries.len()) {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        let e = &s.runs.entries[i];
        let j = *by_path.entry(e.run.path.clone()).or_insert_with(|| {
            jobs.push(Job {
                run: e.run.clone(),
                entries: Vec::new(),
            });
            jobs.len() - 1
        });
        jobs[j].entries.push((i, e.index));
    }
    s.runs.payload.total = jobs.len();
    s.effects.push(Effect::RunsSearch {
        generation,
        jobs,
        key,
        cancel,
    });
}

/// A batch of the payload search: counts in, the list refiltered when a run matched.
pub fn batch(s: &mut State, generation: u64, hits: Vec<(usize, usize)>, done: usize, total: usize) {
    let p = &mut s.runs.payload;
    if generation != p.generation {
        return;
    }
    p.done = p.done.max(done);
    p.total = total;
    if hits.is_empty() {
        return;
    }
    for (e, n) in hits {
        if let Some(c) = p.counts.get_mut(e) {
            *c = n;
        }
    }
    // Results stream in under the user's cursor: it stays on the run it was on.
    let keep = s.runs.entry_at(s.runs.selected);
    super::runs_list::refresh_runs(s);
    if let Some(k) = keep
        && let Some(row) = (0..s.runs.order.len()).find(|&r| s.runs.entry_at(r) == Some(k))
    {
        s.runs.selected = row;
    }
}

/// A run is being opened from the list: when the payload search found matches in it, the run
/// view will filter on the same text (its first match selected, `n`/`N` to the others).
/// A run listed for its name (the filter's words match it) opens as before.
pub fn opening(s: &mut State, entry: usize) {
    let by_name = s.runs.entries.get(entry).is_some_and(|e| {
        let fz = crate::search::fuzzy::Fuzzy::default();
        let text = &s.runs.payload.key.0;
        !text.is_empty() && (fz.score(e.name(), text).is_some() || fz.score(&e.summary.id, text).is_some())
    });
    let p = &mut s.runs.payload;
    p.open_with = (p.active() && p.count(entry) > 0 && !by_name).then(|| {
        let (text, tool) = &p.key;
        match (text.is_empty(), tool.is_empty()) {
            (false, true) => text.clone(),
            (true, false) => format!("tool:{tool}"),
            _ => format!("tool:{tool} {text}"),
        }
    });
}

/// The run view just opened: apply the filter [`opening`] chose.
pub fn land(s: &mut State) {
    let Some(text) = s.runs.payload.open_with.take() else {
        return;
    };
    let limit = s.sync_search_limit;
    if let Some(r) = s.run.as_mut()
        && let Some(e) = super::filter::apply_filter(r, text, limit)
    {
        s.effects.push(e);
    }
}

/// One source to search: the entries (entry, position of its trace in the source) it holds.
#[derive(Debug)]
pub struct Job {
    pub run: RunRef,
    pub entries: Vec<(usize, usize)>,
}

/// Search every job; send a batch of (entry, matches) after each source.
pub fn run(jobs: Vec<Job>, key: (String, String), generation: u64, cancel: Arc<AtomicBool>, tx: Sender<Action>) {
    let (text, tool) = key;
    let pat = if text.is_empty() { &tool } else { &text };
    let Ok(pattern) = Pattern::new(pat, true, false) else {
        return;
    };
    let filter = if tool.is_empty() {
        None
    } else {
        crate::search::parse(&format!("tool:{tool}")).ok()
    };
    let o = Options {
        pattern,
        filter,
        max_count: None,
    };
    let total = jobs.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    // Every core takes the next job in list order (the rows shown first): a parallel
    // iterator would cut the list in halves, one core starting in the middle of it.
    let next = std::sync::atomic::AtomicUsize::new(0);
    rayon::scope(|scope| {
        for _ in 0..rayon::current_num_threads() {
            scope.spawn(|_| {
                while let Some(job) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    search_job(job, &o, generation, &cancel, &done, total, &tx);
                }
            });
        }
    });
}

/// Sources searched between two reports of progress alone.
const PROGRESS_EVERY: usize = 64;

/// One job of [`run`]: its matches sent as a batch.
fn search_job(
    job: &Job,
    o: &Options,
    generation: u64,
    cancel: &AtomicBool,
    done: &std::sync::atomic::AtomicUsize,
    total: usize,
    tx: &Sender<Action>,
) {
    if cancel.load(Ordering::Relaxed) {
        return;
    }
    let mut hits = Vec::new();
    if let Ok(res) = search_source_caught(&job.run, o) {
        for th in &res.traces {
            for (entry, index) in &job.entries {
                if th.index == *index {
                    hits.push((*entry, th.hits.len()));
                }
            }
        }
    }
    let d = done.fetch_add(1, Ordering::Relaxed) + 1;
    // Progress alone is sent every PROGRESS_EVERY sources: each message wakes the loop and
    // draws a frame, which took a core's time from the search.
    if hits.is_empty() && !d.is_multiple_of(PROGRESS_EVERY) && d != total {
        return;
    }
    let _ = tx.send(Action::RunsSearchBatch {
        generation,
        hits,
        done: d,
        total,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_the_free_text_and_the_tool() {
        assert_eq!(
            key_of("status:error refund tool:bash !x"),
            ("refund".into(), "bash".into())
        );
        assert_eq!(key_of("format:agentdbg"), (String::new(), String::new()));
        assert_eq!(key_of("two words"), ("two words".into(), String::new()));
    }
}
