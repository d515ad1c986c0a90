//! The runs list's order: filtered, sorted and grouped as the user asked, the selection kept.

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
