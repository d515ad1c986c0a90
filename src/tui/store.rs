//! The explorer on a ClickHouse store (`tracetui clickhouse://…`): the runs list from the
//! store's aggregation, a page at a time, kept current by polling (see
//! [`crate::source::clickhouse::live`]), and a loader of store runs that fetches a run in the
//! background and fetches it again when spans of it are inserted.
//!
//! The list's rows are the same [`RunEntry`]s a directory gives: a store run's path is its
//! URL and its format [`STORE`], so every view of runs (open, diff of two marked runs, stats,
//! export) loads it through discovery's seam, not a branch here.

use super::action::Action;
use super::live::Shared;
use super::state::{RunEntry, shared};
use crate::formats::Summary;
use crate::source::RunRef;
use crate::source::clickhouse::live::{self as chlive, POLL, Watermark};
use crate::source::clickhouse::runs::{STORE, client};
use crate::source::clickhouse::{Client, MAX_LIMIT};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The entries of a store's rows.
fn entries(root: &Arc<Path>, list: Vec<Summary>) -> Vec<RunEntry> {
    list.into_iter()
        .map(|summary| RunEntry {
            run: RunRef::new(summary.path.clone(), &STORE, root.clone()),
            index: 0,
            summary,
            quiet: None,
        })
        .collect()
}

/// List the store `url` names and keep the list current until the explorer goes. `more`: the
/// view asks for the next page (its end came into view).
pub fn spawn_list(url: String, tx: Sender<Action>, more: Receiver<()>) {
    std::thread::spawn(move || {
        let tx2 = tx.clone();
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| list(&url, &tx, &more)));
        if done.is_err() {
            let _ = tx2.send(Action::RunsProblem(format!(
                "internal error (please report): listing {} failed",
                crate::source::clickhouse::runs::redact(&url)
            )));
            let _ = tx2.send(Action::RunsDone);
        }
    });
}

fn list(url: &str, tx: &Sender<Action>, more: &Receiver<()>) {
    let c = match client(url) {
        Ok(c) => c,
        Err(e) => {
            let _ = tx.send(Action::RunsProblem(e));
            let _ = tx.send(Action::RunsDone);
            return;
        }
    };
    let root: Arc<Path> = PathBuf::from(c.source.display()).into();
    // One run named (`?trace=ID`): that run alone, kept current.
    let only = c.source.trace.clone();
    // Taken before the first page: what is inserted while it is read comes with the next poll.
    let mut mark = Watermark::now();
    let page = c.source.limit;
    let first = |c: &Client| match &only {
        Some(id) => c
            .query(&chlive::rerun_sql(&c.source, std::slice::from_ref(id)))
            .map(|rows| rows_to_summaries(c, &rows)),
        None => chlive::page(c, c.source.offset, page),
    };
    // The first page, tried again at each poll while it fails (a server that is starting).
    let listed;
    let mut said: Option<String> = None;
    loop {
        match first(&c) {
            Ok(l) => {
                listed = l.len() as u64;
                let full = only.is_none() && listed == page;
                if only.is_some()
                    && l.is_empty()
                    && tx
                        .send(Action::RunProblem(
                            PathBuf::from(c.source.display()),
                            // Said until the run is listed.
                            format!(
                                "{}: no spans of this trace in the window yet (?since= widens it); watching for them",
                                c.source.display()
                            ),
                        ))
                        .is_err()
                {
                    return;
                }
                if tx.send(Action::RunsFound(entries(&root, l))).is_err()
                    || tx.send(Action::RunsMore(full)).is_err()
                    || tx.send(Action::RunsDone).is_err()
                {
                    return;
                }
                if said.is_some() && tx.send(Action::RunProblemOver(root.to_path_buf())).is_err() {
                    return;
                }
                break;
            }
            Err(e) => {
                // Said in the list (in place of the one said before) until the store answers.
                if said.as_deref() != Some(e.0.as_str()) {
                    said = Some(e.0.clone());
                    if tx.send(Action::RunProblemOver(root.to_path_buf())).is_err()
                        || tx.send(Action::RunProblem(root.to_path_buf(), e.0)).is_err()
                        || tx.send(Action::RunsDone).is_err()
                    {
                        return;
                    }
                }
                match more.recv_timeout(POLL) {
                    Err(RecvTimeoutError::Disconnected) => return,
                    _ => continue,
                }
            }
        }
    }
    let mut offset = c.source.offset + listed;
    let mut full = only.is_none() && listed == page;
    let mut failing: Option<String> = None;
    loop {
        match more.recv_timeout(POLL) {
            Err(RecvTimeoutError::Disconnected) => return,
            Ok(()) if full => {
                // The next page; pages that overlap (runs started meanwhile push the older
                // ones down) are the same rows, merged by their URL.
                let result = if offset >= MAX_LIMIT {
                    Err(format!(
                        "{}: the newest {} runs of the window are listed; ?since= narrows it",
                        c.source.display(),
                        crate::model::thousands(offset)
                    ))
                } else {
                    chlive::page(&c, offset, page).map_err(|e| e.0)
                };
                let sent = match result {
                    Ok(l) => {
                        full = l.len() as u64 == page;
                        offset += l.len() as u64;
                        tx.send(Action::RunsFound(entries(&root, l))).is_ok() && tx.send(Action::RunsMore(full)).is_ok()
                    }
                    // The list still says more exist (`≥`); asked again at the next end.
                    Err(e) => tx.send(Action::Problem(e)).is_ok() && tx.send(Action::RunsMore(true)).is_ok(),
                };
                if !sent {
                    return;
                }
            }
            Ok(()) => {
                if tx.send(Action::RunsMore(false)).is_err() {
                    return;
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                let polled = match &only {
                    Some(id) => poll_one(&c, id),
                    None => chlive::poll(&c, &mut mark),
                };
                match polled {
                    Ok(l) => {
                        if failing.take().is_some()
                            && tx
                                .send(Action::Problem(format!("{}: live again", c.source.display())))
                                .is_err()
                        {
                            return;
                        }
                        if !l.is_empty() && tx.send(Action::RunsFound(entries(&root, l))).is_err() {
                            return;
                        }
                    }
                    // Said once (the status line), tried again at the next poll.
                    Err(e) => {
                        if failing.as_deref() != Some(e.0.as_str()) {
                            failing = Some(e.0.clone());
                            if tx.send(Action::Problem(format!("live mode: {}", e.0))).is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        }
    }
}

fn rows_to_summaries(c: &Client, rows: &[serde_json::Map<String, serde_json::Value>]) -> Vec<Summary> {
    let prices = crate::cost::usage::current();
    rows.iter()
        .filter_map(|r| crate::source::clickhouse::summary_of(&c.source, r, prices))
        .collect()
}

/// The one run of a `?trace=` list, aggregated again.
fn poll_one(c: &Client, id: &str) -> Result<Vec<Summary>, crate::source::clickhouse::Error> {
    let rows = c.query(&chlive::rerun_sql(&c.source, &[id.to_string()]))?;
    Ok(rows_to_summaries(c, &rows))
}

/// Load a store run in the background, then fetch it again whenever its spans change, while
/// it is the run wanted (`sh.wanted`).
pub fn spawn_loader(run: RunRef, generation: u64, tx: Sender<Action>, sh: Shared) {
    std::thread::spawn(move || {
        let url = run.path.to_string_lossy().into_owned();
        let tx2 = tx.clone();
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| load(&run, generation, &tx, &sh)));
        if done.is_err() {
            let _ = tx2.send(Action::RunLoaded {
                generation,
                result: Err(format!("internal error (please report): loading {url} failed")),
            });
        }
    });
}

/// Sleep `d` in steps, false as soon as the run is no longer wanted.
fn wait_wanted(d: Duration, generation: u64, sh: &Shared) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < d {
        if sh.wanted.load(Ordering::Relaxed) != generation {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100).min(d));
    }
    sh.wanted.load(Ordering::Relaxed) == generation
}

fn load(run: &RunRef, generation: u64, tx: &Sender<Action>, sh: &Shared) {
    let url = run.path.to_string_lossy().into_owned();
    let c = match client(&url) {
        Ok(c) => c,
        Err(e) => {
            let _ = tx.send(Action::RunLoaded {
                generation,
                result: Err(e),
            });
            return;
        }
    };
    let Some(id) = c.source.trace.clone() else {
        let _ = tx.send(Action::RunLoaded {
            generation,
            result: Err(format!("{url}: no ?trace= in the run's URL")),
        });
        return;
    };
    // Measured before each fetch: a span inserted during the fetch shows as a change next time.
    let mut state = chlive::trace_state(&c, &id).ok();
    let mut published = false;
    let mut said: Option<String> = None;
    loop {
        match run.load() {
            Ok(mut l) if !l.traces.is_empty() => {
                // The run's row is the list's (its poll sees the same spans).
                let sent = tx.send(Action::RunUpdate {
                    generation,
                    trace: shared(l.traces.swap_remove(0)),
                    loading: None,
                    restarted: published,
                });
                if sent.is_err() {
                    return;
                }
                published = true;
                said = None;
            }
            Ok(_) => {}
            Err(e) if !published => {
                let _ = tx.send(Action::RunLoaded {
                    generation,
                    result: Err(e.to_string()),
                });
                return;
            }
            Err(e) => {
                let e = e.to_string();
                if said.as_deref() != Some(e.as_str()) && tx.send(Action::Problem(e.clone())).is_err() {
                    return;
                }
                said = Some(e);
            }
        }
        // Wait for a change of the run's spans (count or latest end).
        loop {
            if !wait_wanted(POLL, generation, sh) {
                return;
            }
            match chlive::trace_state(&c, &id) {
                Ok(now) if Some(now) != state => {
                    state = Some(now);
                    break;
                }
                Ok(_) => {}
                Err(e) => {
                    if said.as_deref() != Some(e.0.as_str()) {
                        if tx.send(Action::Problem(format!("live mode: {}", e.0))).is_err() {
                            return;
                        }
                        said = Some(e.0);
                    }
                }
            }
        }
    }
}

/// The senders of the explorer's store lists: a page is asked of each (normally one).
#[derive(Clone, Default)]
pub struct Pages(Arc<Mutex<Vec<Sender<()>>>>);

impl Pages {
    pub fn add(&self, s: Sender<()>) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(s);
    }
    pub fn ask(&self) {
        for s in self.0.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let _ = s.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::keymap::Keymap;
    use crate::tui::state::{Effect, State};
    use crate::tui::update::update;

    fn rows(n: usize) -> Vec<RunEntry> {
        let root: Arc<Path> = PathBuf::from("clickhouse://h:8123/otel").into();
        let list = (0..n)
            .map(|i| Summary {
                id: format!("{i:032x}"),
                name: Some(format!("run {i}")),
                format: "clickhouse",
                path: PathBuf::from(format!("clickhouse://h:8123/otel?trace={i:032x}")),
                start: Some(i as i64 * 1_000_000_000),
                tokens: Some(100),
                problems: Some(0),
                ..Default::default()
            })
            .collect();
        entries(&root, list)
    }

    #[test]
    fn a_full_page_counts_at_least_and_asks_for_the_next_once_its_end_is_in_view() {
        let mut s = State::new(Keymap::default(), (120, 40));
        update(&mut s, Action::RunsFound(rows(2)));
        update(&mut s, Action::RunsMore(true));
        update(&mut s, Action::RunsDone);
        let title = crate::tui::render::runs::title(&s.runs, 120);
        assert!(title.contains("runs ≥2"), "{title}");
        let asked = |s: &State| s.effects.iter().filter(|e| matches!(e, Effect::MoreRuns)).count();
        assert_eq!(asked(&s), 1, "the whole list is in view: the next page is asked for");
        update(&mut s, Action::Tick);
        assert_eq!(asked(&s), 1, "asked once until it comes");
        s.effects.clear();
        // A page overlapping the first (runs started meanwhile) is merged by URL.
        let mut next = rows(4);
        next.drain(..1);
        update(&mut s, Action::RunsFound(next));
        update(&mut s, Action::RunsMore(false));
        assert_eq!(s.runs.entries.len(), 4);
        let title = crate::tui::render::runs::title(&s.runs, 120);
        assert!(title.contains("runs 4 ") && !title.contains('≥'), "{title}");
        assert_eq!(asked(&s), 0, "nothing more to ask for");
        // A store that failed and then answered: what was said of it goes.
        let root = PathBuf::from("clickhouse://h:8123/otel");
        update(&mut s, Action::RunProblem(root.clone(), "refused".into()));
        assert_eq!(s.runs.problems.len(), 1);
        update(&mut s, Action::RunProblemOver(root));
        assert!(s.runs.problems.is_empty());
        // Every store row opens through the store's format.
        assert!(
            s.runs
                .entries
                .iter()
                .all(|e| crate::source::clickhouse::runs::is_store(&e.run))
        );
    }
}
