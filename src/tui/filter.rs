//! The run's filter (`/` in the tree): small traces searched at once, large ones in the
//! background with hits streaming in.

use super::state::*;
use crate::model::Trace;
use crate::search;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub fn cancel_search(r: &RunView) {
    if let Some(c) = &r.filter.cancel {
        c.store(true, Ordering::Relaxed);
    }
}

/// Set the run's filter. Small traces are searched here; large ones get a background search
/// (returned as an effect) whose batches stream in through `SearchBatch`.
pub fn apply_filter(r: &mut RunView, text: String, sync_limit: usize) -> Option<Effect> {
    let h = r.trace.clone();
    let t = read(&h);
    apply_filter_with(r, &t, text, sync_limit)
}

/// [`apply_filter`] with the trace's guard held by the caller.
pub fn apply_filter_with(r: &mut RunView, t: &Trace, text: String, sync_limit: usize) -> Option<Effect> {
    cancel_search(r);
    r.filter.cancel = None;
    r.filter.progress = None;
    r.filter.text = text;
    let q = match search::parse(&r.filter.text) {
        Ok(q) => q,
        Err(e) => {
            r.filter.error = Some(e);
            return None; // keep showing the last valid result
        }
    };
    r.filter.error = None;
    r.filter.generation += 1;
    if q.is_empty() {
        r.filter.query = None;
        r.filter.hits = Vec::new();
        r.filter.count = 0;
        r.rebuild_rows_with(t);
        return None;
    }
    let q = Arc::new(q);
    r.filter.query = Some(q.clone());
    let n = t.len();
    r.filter.hits = vec![false; n];
    r.filter.count = 0;
    if n <= sync_limit {
        let mut batches = Vec::new();
        search::search(t, &q, &AtomicBool::new(false), |b| batches.push(b));
        for b in batches {
            add_hits(r, &b.hits);
        }
        r.rebuild_rows_with(t);
        select_first_hit(r);
        return None;
    }
    let cancel = Arc::new(AtomicBool::new(false));
    r.filter.cancel = Some(cancel.clone());
    r.filter.progress = Some((0, n));
    r.rebuild_rows_with(t);
    Some(Effect::Search {
        generation: r.filter.generation,
        trace: r.trace.clone(),
        from: 0,
        query: q,
        cancel,
    })
}

/// Hits of a search batch. Only the search of the whole trace (`from` 0) reports progress;
/// searches of events that arrived later just add their hits.
pub fn apply_batch(r: &mut RunView, from: usize, b: search::Batch) {
    let first = r.filter.count == 0;
    add_hits(r, &b.hits);
    if from == 0 {
        r.filter.progress = (!b.finished).then_some((b.done, b.total));
    }
    if !b.hits.is_empty() || b.finished {
        r.filter.stale = true;
    }
    // The first hits are shown at once; later ones on the next tick (rebuilds are O(events)).
    if (first && r.filter.count > 0) || b.finished {
        r.rebuild_rows();
        if first {
            select_first_hit(r);
        }
    }
}

pub fn add_hits(r: &mut RunView, hits: &[u32]) {
    for &i in hits {
        if let Some(h) = r.filter.hits.get_mut(i as usize)
            && !*h
        {
            *h = true;
            r.filter.count += 1;
        }
    }
}

pub fn select_first_hit(r: &mut RunView) {
    if let Some(cur) = r.selected_event()
        && r.filter.is_hit(cur)
    {
        return;
    }
    if let Some(p) = r.rows.iter().position(|row| r.filter.is_hit(row.ev)) {
        r.selected = p;
    }
}
