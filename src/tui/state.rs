//! Everything the screen shows, and nothing about how it is drawn. `update` changes it;
//! views render from `&State`. Per-frame work must not depend on the trace size, so the
//! flattened list of visible rows is kept here and rebuilt only on collapse, expand or filter.

use super::detail::{self, Doc};
use super::keymap::{Context, Keymap};
use crate::formats::Summary;
use crate::model::{Counts, EventKind, NO_PARENT, RunStatus, Status, Trace};
use crate::search::Query;
use crate::source::RunRef;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock, RwLockReadGuard};

/// A trace that a background loader may still be adding to (progressive load, live tail).
/// The loader holds the write lock only while it applies a bounded part; views take the read
/// lock for the time of one update or one frame.
///
/// A thread never takes this lock while it holds it already: std's RwLock lets no new reader
/// in while a writer waits, so a second read guard on a thread that holds one deadlocks with
/// the loader (issue 14). Methods that read the trace come in two forms: `x()` takes the lock
/// (for a caller that holds none), `x_with(&Trace)` works on a guard the caller holds.
pub type SharedTrace = Arc<RwLock<Trace>>;

pub fn shared(t: Trace) -> SharedTrace {
    Arc::new(RwLock::new(t))
}

/// Read a shared trace. A loader that panicked mid-slice leaves a trace that is still
/// consistent enough to show (it only ever appends), so a poisoned lock is read anyway.
pub fn read(t: &SharedTrace) -> RwLockReadGuard<'_, Trace> {
    match t.try_read() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => {
            // Say so while waiting: a loader that takes the lock again at once would otherwise
            // win the race over and over (std's lock promises a waiting reader no turn).
            READERS_WAITING.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            let g = t.read().unwrap_or_else(|e| e.into_inner());
            READERS_WAITING.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
            g
        }
    }
}

/// Threads waiting in [`read`] for a trace a loader holds (keys, frames, searches): the loader
/// lets them in before it takes the lock again. One count for every trace: a loader that
/// yields to a reader of another trace loses a moment, nothing else.
static READERS_WAITING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Whether a thread waits in [`read`].
pub fn readers_waiting() -> bool {
    READERS_WAITING.load(std::sync::atomic::Ordering::Acquire) > 0
}

/// How far a progressive load is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub bytes: u64,
    pub total: u64,
}

/// What a view of a growing trace knows about its growth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Live {
    /// A loader keeps the trace up to date (the run may grow while it is open).
    pub watched: bool,
    /// Still loading what was already on disk.
    pub loading: Option<Progress>,
    /// Events that arrived while the selection was off the last row (follow paused).
    pub unseen: usize,
}

/// One run of the runs list: where it is and its cheap summary.
#[derive(Clone, Debug)]
pub struct RunEntry {
    pub run: RunRef,
    /// Position of the trace in its source (a source may hold several runs).
    pub index: usize,
    pub summary: Summary,
    /// For a run that says it is running: how long nothing in its source was written, when
    /// it was summarized. Past [`State::stale_after`] it shows as stale, not live (an agent
    /// that died without writing its end).
    pub quiet: Option<std::time::Duration>,
}

impl RunEntry {
    /// What the run is by the one rule of running / stale / ended ([`crate::source::liveness`]),
    /// with `after` as the quiet time that makes a running run stale.
    pub fn liveness(&self, after: std::time::Duration) -> crate::source::liveness::Liveness {
        crate::source::liveness::liveness(self.summary.status, self.quiet, after)
    }

    pub fn is_stale(&self, after: std::time::Duration) -> bool {
        self.liveness(after) == crate::source::liveness::Liveness::Stale
    }
}

/// How long a running run may go without a write before it is shown as stale.
pub use crate::source::liveness::STALE;

impl RunEntry {
    pub fn name(&self) -> &str {
        self.summary.name.as_deref().unwrap_or(&self.summary.id)
    }
}

/// A row of the runs list with this bit set is a group header (grouping by source): the rest
/// of the value indexes [`RunsState::groups`]; other rows index [`RunsState::entries`].
pub const HEADER: usize = 1 << (usize::BITS - 1);

impl RunsState {
    /// The entry on row `row` of the list (`None` past the end and on group headers).
    pub fn entry_at(&self, row: usize) -> Option<usize> {
        self.order.get(row).copied().filter(|&i| i & HEADER == 0)
    }

    /// The indexer's progress for the title (`indexing 312/2,140 · 1.2/6.0 GB`), while it
    /// indexes.
    pub fn index_text(&self) -> Option<String> {
        self.indexing.map(|p| p.text()).filter(|t| !t.is_empty())
    }

    /// While indexing, under a sort by tokens or cost: how many listed runs have no exact
    /// value yet (they are listed after the others, and the title says so).
    pub fn partial_sort(&self) -> Option<usize> {
        if self.indexing.is_none() || !matches!(self.sort, RunSort::Tokens | RunSort::Cost) {
            return None;
        }
        let n = self
            .order
            .iter()
            .filter(|&&i| i & HEADER == 0 && self.entries[i].summary.provisional())
            .count();
        (n > 0).then_some(n)
    }

    /// Runs shown (the rows that are not group headers).
    pub fn shown(&self) -> usize {
        self.order.len() - self.order.iter().filter(|&&i| i & HEADER != 0).count()
    }

    /// The project of entry `i` (see [`crate::source::RunRef::project`]).
    pub fn project(&self, i: usize) -> &str {
        self.projects.get(i).map(String::as_str).unwrap_or("")
    }

    /// The name to show for entry `i`: with its id when another run has the same name.
    pub fn label(&self, i: usize) -> String {
        let e = &self.entries[i];
        if self.same_name.get(i).copied().unwrap_or(false) && e.summary.id != e.name() {
            format!("{} ({})", e.name(), e.summary.id)
        } else {
            e.name().to_string()
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Runs,
    Run,
    /// Two runs compared (`State::diff`).
    Diff,
    /// Tokens, cost and tool latency over the listed runs (`State::stats`).
    Stats,
    /// Several runs against a baseline (`State::compare`).
    Compare,
    /// The prefix tree of several runs' calls (`State::branches`).
    Branches,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pane {
    Tree,
    Detail,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RunSort {
    /// Newest first.
    #[default]
    Start,
    Name,
    /// Longest first.
    Duration,
    /// Most tokens first (runs not loaded last).
    Tokens,
    /// Most expensive first (runs not loaded, or of unknown cost, last).
    Cost,
}

impl RunSort {
    pub fn label(self) -> &'static str {
        match self {
            RunSort::Start => "newest first",
            RunSort::Name => "by name",
            RunSort::Duration => "longest first",
            RunSort::Tokens => "most tokens first",
            RunSort::Cost => "costliest first",
        }
    }
    pub fn next(self) -> RunSort {
        match self {
            RunSort::Start => RunSort::Name,
            RunSort::Name => RunSort::Duration,
            RunSort::Duration => RunSort::Tokens,
            RunSort::Tokens => RunSort::Cost,
            RunSort::Cost => RunSort::Start,
        }
    }
}

#[derive(Debug, Default)]
pub struct RunsState {
    pub entries: Vec<RunEntry>,
    /// Indices into `entries`: sorted and filtered.
    pub order: Vec<usize>,
    pub selected: usize,
    pub offset: usize,
    pub sort: RunSort,
    /// The sort order turned around (`r`).
    pub reversed: bool,
    pub filter: String,
    /// Per entry: another run has the same name (the list then shows the id too).
    pub same_name: Vec<bool>,
    /// The user moved the selection (until then it stays on the first row as runs arrive).
    pub moved: bool,
    /// Discovery still running.
    pub scanning: bool,
    /// Sources that could not be listed: the run's path when the problem is one run's (it
    /// goes away when that run is listed after all), and what was wrong.
    pub problems: Vec<(Option<std::path::PathBuf>, String)>,
    /// The entry marked (space) as the baseline of a diff.
    pub mark: Option<usize>,
    /// Per entry: its project (the agent's project directory, or its parent relative to
    /// where it was found).
    pub projects: Vec<String>,
    /// The standard places, for the projects of runs found in them.
    pub places: Vec<crate::source::places::Resolved>,
    /// The list is opened on the standard places (no PATH given).
    pub all_places: bool,
    /// Rows grouped by where the runs were found, under a header per place or PATH.
    pub grouped: bool,
    /// The headers' places, when grouped.
    pub groups: Vec<std::sync::Arc<std::path::Path>>,
    /// Directories the scan left out (its depth or entry limit): the title says so.
    pub skipped: crate::source::Skipped,
    /// The filter's free text and `tool:` searched in the runs' events.
    pub payload: super::runsearch::PayloadSearch,
    /// Runs with provisional summaries are being indexed ([`crate::source::index`]): how far.
    pub indexing: Option<crate::source::index::Progress>,
    /// A store's list holds more runs than are listed (its next page is not loaded): the
    /// count and totals say `≥`.
    pub more: bool,
    /// The next page was asked for and has not come yet.
    pub more_asked: bool,
}

/// The runs list's filter: `format:` (or `agent:`), `status:`, `project:` terms, `!` before a
/// term to invert it, and words matched fuzzily against the run's name and id.
#[derive(Debug, Default)]
pub struct RunFilter {
    terms: Vec<(bool, RunTerm)>,
    text: String,
}

#[derive(Debug)]
enum RunTerm {
    /// Runs that called the tool (found by the payload search).
    Tool,
    Format(String),
    Status(String),
    Project(String),
}

impl RunFilter {
    pub fn parse(f: &str) -> RunFilter {
        let mut out = RunFilter::default();
        let mut words = Vec::new();
        for w in f.split_whitespace() {
            let (neg, t) = match w.strip_prefix('!') {
                Some(t) if !t.is_empty() => (true, t),
                _ => (false, w),
            };
            let term = match t.split_once(':') {
                Some(("tool", _)) => RunTerm::Tool,
                Some(("format" | "agent", v)) => RunTerm::Format(v.to_lowercase()),
                Some(("status", v)) => RunTerm::Status(v.to_lowercase()),
                Some(("project", v)) => RunTerm::Project(v.to_lowercase()),
                _ => {
                    words.push(w);
                    continue;
                }
            };
            out.terms.push((neg, term));
        }
        out.text = words.join(" ");
        out
    }

    /// Whether entry `i` of `runs` passes.
    pub fn matches(
        &self,
        runs: &RunsState,
        i: usize,
        stale_after: std::time::Duration,
        fz: &crate::search::fuzzy::Fuzzy,
    ) -> bool {
        let e = &runs.entries[i];
        let terms = self.terms.iter().all(|(neg, t)| {
            let hit = match t {
                RunTerm::Format(v) => e.summary.format.contains(v.as_str()),
                RunTerm::Status(v) => {
                    let st = e.liveness(stale_after).as_str();
                    // `live` is what the list shows for a running run.
                    let v = if v == "live" { "running" } else { v.as_str() };
                    st.starts_with(v)
                }
                RunTerm::Project(v) => runs.project(i).to_lowercase().contains(v.as_str()),
                RunTerm::Tool => runs.payload.count(i) > 0,
            };
            hit != *neg
        });
        terms
            && (self.text.is_empty()
                || fz.score(e.name(), &self.text).is_some()
                || fz.score(&e.summary.id, &self.text).is_some()
                || (runs.payload.key.0 == self.text && runs.payload.count(i) > 0))
    }
}

/// One visible row of the event tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub ev: u32,
    pub depth: u16,
}

/// The filter of the run view.
#[derive(Debug, Default)]
pub struct Filter {
    pub text: String,
    pub query: Option<Arc<Query>>,
    pub error: Option<String>,
    /// Per event: matches the query (empty when no filter is active).
    pub hits: Vec<bool>,
    pub count: usize,
    /// (done, total) while a background search runs.
    pub progress: Option<(usize, usize)>,
    pub generation: u64,
    pub cancel: Option<Arc<AtomicBool>>,
    /// Hits arrived that the rows do not show yet (rebuilt on the next tick).
    pub stale: bool,
}

impl Filter {
    pub fn active(&self) -> bool {
        self.query.is_some()
    }
    pub fn is_hit(&self, ev: u32) -> bool {
        self.hits.get(ev as usize).copied().unwrap_or(false)
    }
}

#[derive(Debug)]
pub struct DetailState {
    pub event: u32,
    pub doc: Doc,
    /// The cursor and the top of the window, in screen rows of [`DetailState::rows`].
    pub cursor: usize,
    pub offset: usize,
    /// Columns scrolled to the right with wrap off.
    pub hscroll: usize,
    /// The document in screen rows at the pane's width (made by `layout`).
    pub rows: Option<detail::Rows>,
    /// The search in the document (`/` in the detail pane).
    pub search: Option<DocSearch>,
    stamp: (Status, Option<i64>, u64, bool, usize),
    /// When the document was built and how long that took (see `refresh_detail_with`).
    built: std::time::Instant,
    took: std::time::Duration,
}

/// A search in the detail's document: every match, and the one the cursor went to.
#[derive(Debug, Default, Clone)]
pub struct DocSearch {
    pub query: String,
    pub hits: Vec<detail::Hit>,
    pub current: Option<usize>,
    /// The line the search began on: typing finds the first match from there.
    pub origin: usize,
}

impl DetailState {
    /// Lay the document out at `width`, once per width and wrap setting; the cursor and the
    /// window's top stay on the lines (and rows within them) they were on.
    pub fn layout(&mut self, width: usize, wrap: bool) -> &detail::Rows {
        let stale = self.rows.as_ref().is_none_or(|r| r.width != width || r.wrap != wrap);
        if stale {
            let old = self.rows.take();
            let at = |row: usize| old.as_ref().map_or((row, 0), |o| o.locate(row));
            let (cl, ck) = at(self.cursor);
            let (ol, ok) = at(self.offset);
            let new = detail::Rows::new(&self.doc, width, wrap);
            let back = |(l, k): (usize, usize)| {
                let l = l.min(self.doc.len().saturating_sub(1));
                new.row_of(l) + k.min(new.rows_in(l).saturating_sub(1))
            };
            self.cursor = back((cl, ck));
            self.offset = back((ol, ok));
            self.rows = Some(new);
        }
        self.rows.as_ref().expect("laid out above")
    }
    /// Lay the document out again (folds changed), the cursor staying on its line.
    pub fn relayout(&mut self) {
        if let Some(r) = self.rows.as_mut() {
            r.width = usize::MAX;
        }
    }

    /// Move the cursor to the row that shows byte `byte` of span `span` of `line`, unfolding
    /// what hides it.
    pub fn goto(&mut self, line: usize, span: usize, byte: usize, width: usize, wrap: bool) {
        if self.doc.hidden(line) {
            self.doc.reveal(line);
            self.relayout();
        }
        let rows = self.layout(width, wrap);
        self.cursor = rows.row_at(line, span, byte);
    }

    /// Rows in the document as last laid out (lines before any layout).
    pub fn total_rows(&self) -> usize {
        self.rows.as_ref().map_or(self.doc.len(), |r| r.total())
    }
    /// The line under the cursor (what `y` copies).
    pub fn cursor_line(&self) -> usize {
        self.rows.as_ref().map_or(self.cursor, |r| r.locate(self.cursor).0)
    }
}

/// An opened run.
#[derive(Debug)]
pub struct RunView {
    pub trace: SharedTrace,
    /// The load that feeds it (a loader replaces the trace when its source is rewritten).
    pub generation: u64,
    /// Growth seen so far: `trace.reshaped()` when the rows were last made.
    pub shape: u64,
    pub live: Live,
    /// The events' time extent (the span where metadata has no start or end).
    extent: (Option<i64>, Option<i64>),
    /// Updates applied in place (every so often the counts are made again from scratch).
    grows: u64,
    /// The last `summarize` was a full pass (see `counted_all`).
    summarized_all: bool,
    /// The load just ended: the next `grow_with` counts every event before it refreshes the
    /// detail (see [`RunView::finish_load`]).
    recount_next: bool,
    /// When the view was last made again from the whole trace (`reindex_with`).
    reindexed: Option<std::time::Instant>,
    /// How long the last full pass took.
    reindex_took: std::time::Duration,
    /// When the counts and cost were last made from every event, and how long that took.
    recounted: Option<std::time::Instant>,
    /// How far the load was then (bytes read).
    recounted_bytes: u64,
    recount_took: std::time::Duration,
    /// The runs-list entry it came from.
    pub entry: Option<usize>,
    pub counts: Counts,
    /// Tokens by kind and cost (`cost::usage`), made with the counts.
    pub cost: crate::cost::usage::RunCost,
    pub span: (Option<i64>, Option<i64>),
    /// Whether any event has a start time (else the timeline shows order).
    pub timed: bool,
    pub model: Option<String>,
    /// Depth-first order of all events, and each event's position in it (for jumps).
    pub order: Vec<u32>,
    pub pos: Vec<u32>,
    pub collapsed: Vec<bool>,
    pub rows: Vec<Row>,
    pub selected: usize,
    pub offset: usize,
    pub focus: Pane,
    pub filter: Filter,
    pub detail: Option<DetailState>,
    pub wrap: bool,
    pub raw: bool,
    /// Chat / JSON, Markdown / raw text, the transcript (`c`, `p`, `C`).
    pub chat: super::chat::ChatMode,
    /// The focused pane fills the screen.
    pub zoom: bool,
    /// The gists of the tool calls that were in view (made by `update`, read by the frame).
    pub gists: super::gist::Gists,
}

impl RunView {
    pub fn new(trace: SharedTrace, entry: Option<usize>) -> RunView {
        let mut v = RunView {
            counts: Counts::default(),
            cost: Default::default(),
            span: (None, None),
            timed: false,
            model: None,
            order: Vec::new(),
            pos: Vec::new(),
            collapsed: Vec::new(),
            rows: Vec::new(),
            selected: 0,
            offset: 0,
            focus: Pane::Tree,
            filter: Filter::default(),
            detail: None,
            wrap: true,
            raw: false,
            chat: Default::default(),
            zoom: false,
            gists: Default::default(),
            shape: 0,
            live: Live::default(),
            extent: (None, None),
            grows: 0,
            summarized_all: false,
            recount_next: false,
            reindexed: None,
            reindex_took: std::time::Duration::ZERO,
            recounted: None,
            recounted_bytes: 0,
            recount_took: std::time::Duration::ZERO,
            generation: 0,
            trace,
            entry,
        };
        let h = v.trace.clone();
        let t = read(&h);
        v.reindex_with(&t);
        v.sync_detail_with(&t);
        drop(t);
        v
    }

    /// Recompute everything derived from the whole trace (order, counts, span), and the
    /// rows too: straight from the walk when nothing is collapsed or filtered (one pass).
    fn reindex_with(&mut self, trace: &Trace) {
        let started = std::time::Instant::now();
        self.reindexed = Some(started);
        let keep_ev = self.selected_event();
        let n = trace.len();
        // The walk (random reads over the whole tree) and the counts take a thread each on a
        // large trace: the last update of a 1M-event load ran them one after the other while
        // the load was not yet complete on screen.
        let walk = if n >= PARALLEL_SUMMARY {
            std::thread::scope(|sc| {
                let h = sc.spawn(|| trace.walk());
                self.summarize(trace, 0);
                h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
            })
        } else {
            self.summarize(trace, 0);
            trace.walk()
        };
        let mut order = Vec::with_capacity(n);
        let mut pos = vec![0u32; n];
        for (k, &(i, _)) in walk.iter().enumerate() {
            order.push(i);
            pos[i as usize] = k as u32;
        }
        self.order = order;
        self.pos = pos;
        self.collapsed.resize(n, false);
        self.shape = trace.reshaped();
        if !self.filter.active() && !self.collapsed.iter().any(|&c| c) {
            let rows = walk
                .iter()
                .map(|&(ev, d)| Row {
                    ev,
                    depth: d.min(u16::MAX as usize) as u16,
                })
                .collect();
            self.set_rows(rows, keep_ev);
        } else {
            self.rebuild_rows_with(trace);
        }
        self.reindex_took = started.elapsed();
    }

    /// Counts, span and model from the events `from` on, added to what the view has (all of
    /// them when `from` is 0). Events already counted may change later (a pending call
    /// completes): a full pass every so often and at the end of a load catches that up.
    fn summarize(&mut self, trace: &Trace, from: usize) {
        let new = &trace.events[from.min(trace.len())..];
        let prices = super::config::prices();
        self.summarized_all = from == 0;
        if from == 0 {
            self.recount_next = false;
            let started = std::time::Instant::now();
            self.recounted = Some(started);
            self.recounted_bytes = self.live.loading.map_or(0, |p| p.bytes);
            // Two passes over every event: on a large trace the cost takes a core of its own
            // (the last update of a 1M-event load waited 60 + 110 ms for them, one after the
            // other, before its frame).
            if trace.len() >= PARALLEL_SUMMARY {
                let cost = std::thread::scope(|sc| {
                    let h = sc.spawn(|| crate::cost::usage::run_cost(trace, prices));
                    self.counts = trace.counts();
                    h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
                });
                self.cost = cost;
            } else {
                self.counts = trace.counts();
                self.cost = crate::cost::usage::run_cost(trace, prices);
            }
            self.recount_took = started.elapsed();
            self.extent = (None, None);
        } else {
            crate::cost::usage::add_calls(&mut self.cost, trace, from, prices);
            let c = crate::model::counts_of(new);
            self.counts.events = trace.len();
            self.counts.tool_calls += c.tool_calls;
            self.counts.llm_calls += c.llm_calls;
            self.counts.errors += c.errors;
            self.counts.tokens += c.tokens;
        }
        for e in new {
            if let Some(s) = e.start.get() {
                let end = e.end().unwrap_or(s);
                self.extent.0 = Some(self.extent.0.map_or(s, |x| x.min(s)));
                self.extent.1 = Some(self.extent.1.map_or(end, |x| x.max(end)));
            }
        }
        self.span = (trace.meta.start.or(self.extent.0), trace.meta.end.or(self.extent.1));
        self.timed = self.span.0.is_some() || self.extent.0.is_some();
        if self.model.is_none() || from == 0 {
            self.model = trace.meta.model.clone().or_else(|| {
                new.iter()
                    .find(|e| e.kind == EventKind::LlmCall && !e.model.is_empty())
                    .map(|e| trace.str(e.model).to_string())
            });
        }
    }

    /// Recount everything (see `summarize`).
    pub fn recount(&mut self) {
        let h = self.trace.clone();
        let t = read(&h);
        self.summarize(&t, 0);
    }

    /// [`RunView::recount`] with the trace's guard held by the caller.
    pub fn recount_with(&mut self, t: &Trace) {
        self.summarize(t, 0);
    }

    /// The update about to be applied ends the load: its `grow_with` makes the counts and the
    /// cost from every event before the detail is refreshed, so that the run event's detail
    /// takes its totals from them instead of a pass of its own.
    pub fn finish_load(&mut self) {
        self.recount_next = true;
    }

    /// Whether the last `grow_with` counted every event (then a recount has nothing to add).
    pub fn counted_all(&self) -> bool {
        self.summarized_all
    }

    /// The trace grew (or was read again from the start): bring order, rows, counts and
    /// detail up to date. Collapsed events, the filter and the selected event are kept; a
    /// selection on the last row stays on the last row (follow). Returns the index of the
    /// first event that is new to the view.
    pub fn grow(&mut self, restarted: bool) -> usize {
        let h = self.trace.clone();
        let t = read(&h);
        self.grow_with(&t, restarted)
    }

    /// [`RunView::grow`] with the trace's guard held by the caller.
    pub fn grow_with(&mut self, t: &Trace, restarted: bool) -> usize {
        self.summarized_all = false;
        let n0 = self.order.len();
        let n1 = t.len();
        let at_bottom = self.selected + 1 >= self.rows.len();
        let keep_id = self
            .selected_event()
            .filter(|&e| (e as usize) < n1)
            .map(|e| t.str(t.event(e).source_id).to_string());
        let from = if restarted || n1 < n0 {
            // Read again from the start: indices mean other events now.
            self.collapsed = vec![false; n1];
            self.gists.clear();
            self.filter.hits.clear();
            self.reindex_with(t);
            0
        } else {
            let appended = (t.moved_since(self.shape) >= n0 as u32)
                .then(|| appended_order(t, &self.order, n0))
                .flatten();
            self.collapsed.resize(n1, false);
            match appended {
                Some(groups) if !self.filter.active() => {
                    self.pos.resize(n1, 0);
                    for g in &groups {
                        let shown = g.under == NO_PARENT || self.shown_expanded(t, g.under);
                        for &(ev, depth) in &g.events {
                            self.pos[ev as usize] = self.order.len() as u32;
                            self.order.push(ev);
                            if shown {
                                self.rows.push(Row { ev, depth });
                            }
                        }
                    }
                    self.shape = t.reshaped();
                    self.grows += 1;
                    // Small traces, and every 16th update of a large one, are recounted; while
                    // a file is read from the start, at most as often as the full pass of the
                    // view (the two passes of a recount of a 1M-event trace and its cost were
                    // a tenth of the explorer's load; the load's last update recounts).
                    // Nor when, at the rate since the last one, the load ends within that time:
                    // its last update recounts anyway (a recount a few hundred ms before it
                    // took a core from the load's last slice, a 1M-event Claude Code session).
                    let full = match self.live.loading {
                        Some(p) => {
                            let every = REINDEX_EVERY.max(self.recount_took * REINDEX_SHARE);
                            self.recounted.is_none_or(|at| {
                                let since = at.elapsed();
                                let read = p.bytes.saturating_sub(self.recounted_bytes) as f64;
                                let left = p.total.saturating_sub(p.bytes) as f64;
                                since >= every
                                    && !(read > 0.0 && left / read * since.as_secs_f64() < every.as_secs_f64())
                            })
                        }
                        None => self.recount_next || n1 < 200_000 || self.grows.is_multiple_of(16),
                    };
                    self.summarize(t, if full { 0 } else { n0 });
                }
                // While the file is read from the start, new events that do not simply follow
                // (they hang under an earlier branch, or siblings were sorted anew) wait for
                // the next full pass, at most one a second: a pass over a 1M-event trace
                // holds the read lock for a tenth of a second or more, and the loader waits
                // for it (most of the explorer's load time over `check`, issue 13). The rows
                // shown stay valid (events are only ever added), the progress moves on, and
                // the last update of the load makes the view whole.
                _ if self.live.loading.is_some()
                    && !self.filter.active()
                    && self
                        .reindexed
                        .is_some_and(|at| at.elapsed() < REINDEX_EVERY.max(self.reindex_took * REINDEX_SHARE)) =>
                {
                    return n0;
                }
                _ => self.reindex_with(t),
            }
            n0
        };
        self.filter
            .hits
            .resize(if self.filter.active() { n1 } else { 0 }, false);
        if restarted
            && let Some(id) = keep_id.filter(|i| !i.is_empty())
            && let Some(p) = self.rows.iter().position(|r| t.str(t.event(r.ev).source_id) == id)
        {
            self.selected = p;
        }
        if at_bottom {
            self.selected = self.rows.len().saturating_sub(1);
        } else {
            self.live.unseen += n1.saturating_sub(n0);
        }
        self.refresh_detail_with(t);
        from
    }

    /// Whether `ev` is on a row and expanded (so its new children are shown).
    fn shown_expanded(&self, t: &Trace, ev: u32) -> bool {
        let mut e = ev;
        loop {
            if self.collapsed[e as usize] {
                return false;
            }
            e = t.event(e).parent;
            if e == NO_PARENT {
                return true;
            }
        }
    }

    /// Rebuild the detail when the selected event changed under it (a result arrived),
    /// keeping the cursor where it was.
    fn refresh_detail_with(&mut self, t: &Trace) {
        let Some(ev) = self.selected_event() else {
            self.detail = None;
            return;
        };
        let stamp = detail_stamp(t, ev);
        match self.detail.as_ref() {
            Some(d) if d.event == ev && d.stamp == stamp => {}
            // While a file is read from the start, a costly document (the run's root sums the
            // usage and cost of every call) is made again at most as often as the view's full
            // pass: rebuilt on every update it took a fifth of the explorer's load (issue 13).
            // The last update of the load makes it whole.
            // So is the root's, whose totals alone changed, in a live tail (each update of a
            // large run); a full count makes them for free (`rebuild_detail_counted`).
            Some(d)
                if d.event == ev
                    && (self.live.loading.is_some()
                        || (d.stamp.0, d.stamp.1, d.stamp.2, d.stamp.3) == (stamp.0, stamp.1, stamp.2, stamp.3))
                    && !(stamp.4 > 0 && self.summarized_all)
                    && d.took >= DETAIL_COSTLY
                    && d.built.elapsed() < REINDEX_EVERY.max(d.took * REINDEX_SHARE) => {}
            Some(d) if d.event == ev => {
                let (cursor, offset, hscroll) = (d.cursor, d.offset, d.hscroll);
                let rows = d.rows.clone();
                let (folded, query) = (d.doc.folded.clone(), d.search.as_ref().map(|x| x.query.clone()));
                self.rebuild_detail_counted(t, ev);
                if let Some(d) = self.detail.as_mut() {
                    // The old layout maps the rows back to lines when the new one is made.
                    (d.cursor, d.offset, d.hscroll, d.rows) = (cursor, offset, hscroll, rows);
                    // Folds and the search stay when the document keeps its shape.
                    if folded.len() == d.doc.nodes.len() {
                        d.doc.folded = folded;
                    }
                    if let Some(q) = query {
                        let hits = detail::search(&d.doc, &q);
                        d.search = Some(DocSearch {
                            query: q,
                            hits,
                            ..Default::default()
                        });
                    }
                    if let Some(r) = d.rows.as_mut() {
                        r.width = usize::MAX;
                    }
                }
            }
            _ => self.rebuild_detail_counted(t, ev),
        }
    }

    /// [`RunView::rebuild_detail_with`] from `grow_with`, which holds the guard it counted
    /// with: after a full count the run's totals are the view's own.
    fn rebuild_detail_counted(&mut self, t: &Trace, ev: u32) {
        let cost = self.summarized_all.then(|| self.cost.clone());
        super::usage_view::with_run_cost(cost.as_ref(), || self.rebuild_detail_with(t, ev));
    }

    pub fn selected_event(&self) -> Option<u32> {
        self.rows.get(self.selected).map(|r| r.ev)
    }

    /// Flatten the visible tree: collapsed subtrees are skipped, and with a filter only hits
    /// and their ancestors remain. The selected event stays selected if it is still visible.
    pub fn rebuild_rows(&mut self) {
        let h = self.trace.clone();
        let t = read(&h);
        self.rebuild_rows_with(&t);
    }

    /// [`RunView::rebuild_rows`] with the trace's guard held by the caller.
    pub fn rebuild_rows_with(&mut self, t: &Trace) {
        let keep_ev = self.selected_event();
        let keep: Option<Vec<bool>> = self.filter.active().then(|| {
            let mut keep = vec![false; t.len()];
            for (i, &hit) in self.filter.hits.iter().enumerate() {
                if !hit {
                    continue;
                }
                let mut j = i as u32;
                while j != NO_PARENT && !keep[j as usize] {
                    keep[j as usize] = true;
                    j = t.event(j).parent;
                }
            }
            keep
        });
        // Only the events the view knows of: a loader may have added more since (the next
        // update brings them in).
        let seen = self.order.len().min(self.collapsed.len()) as u32;
        let mut rows = Vec::with_capacity(if keep.is_some() { 1024 } else { seen as usize });
        let mut stack: Vec<(u32, u16)> = t.roots.iter().rev().filter(|&&r| r < seen).map(|&r| (r, 0)).collect();
        while let Some((i, d)) = stack.pop() {
            if keep.as_ref().is_some_and(|k| !k[i as usize]) {
                continue;
            }
            rows.push(Row { ev: i, depth: d });
            if !self.collapsed[i as usize] {
                for &c in t.children(i).iter().rev().filter(|&&c| c < seen) {
                    stack.push((c, d.saturating_add(1)));
                }
            }
        }
        self.set_rows(rows, keep_ev);
    }

    /// New rows, with `keep_ev` still selected if it is on one.
    fn set_rows(&mut self, rows: Vec<Row>, keep_ev: Option<u32>) {
        self.rows = rows;
        self.selected = match keep_ev.and_then(|e| self.rows.iter().position(|r| r.ev == e)) {
            Some(p) => p,
            None if self.filter.active() => self.rows.iter().position(|r| self.filter.is_hit(r.ev)).unwrap_or(0),
            None => 0,
        };
        self.filter.stale = false;
    }

    /// Rebuild the detail if the selection moved to another event.
    pub fn sync_detail(&mut self) {
        if self
            .selected_event()
            .is_some_and(|ev| self.detail.as_ref().is_none_or(|d| d.event != ev))
        {
            let h = self.trace.clone();
            let t = read(&h);
            self.sync_detail_with(&t);
        } else if self.selected_event().is_none() {
            self.detail = None;
        }
    }

    /// [`RunView::sync_detail`] with the trace's guard held by the caller.
    pub fn sync_detail_with(&mut self, t: &Trace) {
        let Some(ev) = self.selected_event() else {
            self.detail = None;
            return;
        };
        if self.detail.as_ref().is_some_and(|d| d.event == ev) {
            return;
        }
        self.rebuild_detail_with(t, ev);
    }

    pub fn rebuild_detail(&mut self, ev: u32) {
        let h = self.trace.clone();
        let t = read(&h);
        self.rebuild_detail_with(&t, ev);
    }

    /// [`RunView::rebuild_detail`] with the trace's guard held by the caller.
    pub fn rebuild_detail_with(&mut self, t: &Trace, ev: u32) {
        if super::chat::follow_selection(self, ev) {
            return;
        }
        let built = std::time::Instant::now();
        let doc = super::chat::doc(self, t, ev).unwrap_or_else(|| detail::build(t, ev, self.raw, self.span.0));
        let took = built.elapsed();
        let stamp = detail_stamp(t, ev);
        self.detail = Some(DetailState {
            event: ev,
            doc,
            cursor: 0,
            offset: 0,
            hscroll: 0,
            rows: None,
            search: None,
            stamp,
            built,
            took,
        });
        super::chat::place(self, ev);
    }

    /// Whether the run is being followed and the status bar shows FOLLOW / PAUSED.
    pub fn followable(&self, follow_mode: bool) -> bool {
        self.live.watched && (follow_mode || read(&self.trace).meta.status == RunStatus::Running)
    }

    /// [`RunView::followable`] with the trace's guard held by the caller.
    pub fn followable_with(&self, t: &Trace, follow_mode: bool) -> bool {
        self.live.watched && (follow_mode || t.meta.status == RunStatus::Running)
    }

    /// The selection is on the last row: new events move it along.
    pub fn following(&self) -> bool {
        self.selected + 1 >= self.rows.len()
    }
}

/// A detail document that took this long to make is not made again on every update of a load.
const DETAIL_COSTLY: std::time::Duration = std::time::Duration::from_millis(1);
/// At most one full pass of the view over a trace that is still loading in this time.
const REINDEX_EVERY: std::time::Duration = std::time::Duration::from_secs(1);
/// ... and not before this many times as long as the last one took: a pass over a 1M-event
/// Maida run (every span waits for the root, written last, so its events never simply
/// follow) took 150-400 ms, and the loader waited for each one, once a second.
const REINDEX_SHARE: u32 = 8;
/// From this many events, a full count runs its two passes on two threads.
const PARALLEL_SUMMARY: usize = 100_000;

/// What the detail of an event depends on besides its index (a call's result arriving later
/// changes its status, duration and payload; the root's totals change with every call).
fn detail_stamp(t: &Trace, ev: u32) -> (Status, Option<i64>, u64, bool, usize) {
    let e = t.event(ev);
    // The run event at the root shows the run's totals: every event added may change them
    // (they stayed as first made when the root's own record did not change).
    let events = if e.kind == EventKind::Run && e.parent == NO_PARENT {
        t.len()
    } else {
        0
    };
    (
        e.status,
        e.duration.into(),
        e.origin.offset,
        e.origin2.is_some(),
        events,
    )
}

/// New events in display order, grouped by the event they hang under, when they all come
/// after every event already there (appended under the last branch, or new roots) — the
/// common case of a run being written. `None` when some new event belongs elsewhere.
struct Appended {
    under: u32,
    events: Vec<(u32, u16)>,
}

fn appended_order(t: &Trace, order: &[u32], n0: usize) -> Option<Vec<Appended>> {
    let n1 = t.len();
    if n1 == n0 {
        return Some(Vec::new());
    }
    // The last branch: the last event in display order and its ancestors, deepest first.
    let mut spine = Vec::new();
    let mut e = order.last().copied().unwrap_or(NO_PARENT);
    while e != NO_PARENT {
        spine.push(e);
        e = t.event(e).parent;
    }
    let depth0 = spine.len();
    let mut groups = Vec::new();
    let mut seen = 0usize;
    let mut dfs = |under: u32, kids: &[u32], depth: usize, groups: &mut Vec<Appended>| {
        let mut events = Vec::new();
        // Only the new children at the end of the list (see below: any elsewhere are not
        // reached and the caller makes the view again): the list of a flat run's root holds
        // every event, and filtering all of it on every update of a 2M-event load added up.
        let new = kids.iter().rev().take_while(|&&c| c as usize >= n0).count();
        let mut stack: Vec<(u32, usize)> = kids[kids.len() - new..].iter().rev().map(|&c| (c, depth)).collect();
        while let Some((i, d)) = stack.pop() {
            events.push((i, d.min(u16::MAX as usize) as u16));
            for &c in t.children(i).iter().rev() {
                stack.push((c, d + 1));
            }
        }
        seen += events.len();
        if !events.is_empty() {
            groups.push(Appended { under, events });
        }
    };
    for (k, &sp) in spine.iter().enumerate() {
        dfs(sp, t.children(sp), depth0 - k, &mut groups);
    }
    dfs(NO_PARENT, &t.roots, 0, &mut groups);
    // Old events never moved (the caller checked `reshaped`), so new children of an old
    // event sit at the end of its children; any not reached hang elsewhere.
    (seen == n1 - n0).then_some(groups)
}

/// A prompt being edited at the bottom of the screen.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub text: String,
    /// A search in the detail's document (else the view's filter).
    pub doc: bool,
    /// What the filter was before editing began (Esc restores it).
    pub before: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub text: String,
    pub error: bool,
    /// Tick after which it disappears.
    pub until: u64,
}

/// Work the app must do outside `update` (threads, terminal output).
#[derive(Debug)]
pub enum Effect {
    LoadRun {
        generation: u64,
        run: RunRef,
        index: usize,
        id: String,
    },
    Search {
        generation: u64,
        trace: SharedTrace,
        /// Search the events from this one on (the rest were searched already).
        from: usize,
        query: Arc<Query>,
        cancel: Arc<AtomicBool>,
    },
    /// Load two runs and diff them.
    Diff {
        generation: u64,
        baseline: super::diffview::Source,
        current: super::diffview::Source,
        opts: crate::diff::Options,
        /// Set when the view is left (esc) before the diff arrives: the work stops.
        cancel: Arc<AtomicBool>,
    },
    /// Compare several runs with a baseline, a row at a time (`Action::CompareRow`).
    Compare {
        generation: u64,
        baseline: super::diffview::Source,
        runs: Vec<super::diffview::Source>,
        opts: crate::diff::Options,
        cancel: Arc<AtomicBool>,
    },
    /// Load runs and build the prefix tree of their calls (`Action::BranchesReady`).
    Branches {
        generation: u64,
        runs: Vec<super::diffview::Source>,
        ignore: Vec<crate::diff::Glob>,
        cancel: Arc<AtomicBool>,
    },
    /// Put text on the clipboard (OSC 52).
    Copy(String),
    /// Show text in the user's pager, the explorer stepping aside meanwhile.
    Page(String),
    /// Show a run's source in the pager: a file's first bytes (bounded), a directory's files.
    PageFile(std::path::PathBuf),
    /// Load runs in the background for the stats view.
    Stats(super::stats::Job),
    /// Search the runs' events for the runs list's filter.
    RunsSearch {
        generation: u64,
        jobs: Vec<super::runsearch::Job>,
        key: (String, String),
        cancel: Arc<AtomicBool>,
    },
    /// Open text in the user's editor (`$VISUAL`, `$EDITOR`), likewise.
    Edit(String),
    /// Write an export of the open run or diff (`Action::Exported` when done).
    Export(super::export::Job),
    /// Load the next page of a store's runs list (`Action::RunsMore` when done).
    MoreRuns,
}

#[derive(Debug)]
pub struct State {
    pub view: View,
    pub runs: RunsState,
    pub run: Option<RunView>,
    /// The diff view, while it is open.
    pub diff: Option<super::diffview::DiffView>,
    /// Generation of the latest diff request (older results are dropped).
    pub diff_gen: u64,
    /// `--ignore` / `--strict` of `tracetui diff`.
    pub diff_opts: crate::diff::Options,
    /// How word-level changes show in the diff view (config `[diff] context`, NO_COLOR).
    pub words: super::diffview::WordStyle,
    /// The compare table, while it is open (its pair diffs open over it).
    pub compare: Option<super::compare::CompareView>,
    /// The branches view, while it is open (the runs and diffs it opens come back to it).
    pub branches: Option<super::branches::BranchesView>,
    /// The event to select in the run being loaded (opened from the branches view).
    pub pending_event: Option<u32>,
    /// Runs-list entries selected (`x`, `v`) for the compare table.
    pub runs_selection: std::collections::BTreeSet<usize>,
    /// The runs-list row where a visual range started (`v`).
    pub runs_visual: Option<usize>,
    /// Help overlay open, with its scroll offset.
    pub help: Option<usize>,
    /// The open run's cost view (`$`), over the run view.
    pub run_cost: Option<super::cost_view::CostView>,
    /// The overlay lists the open run's load problems instead of the keys.
    pub problems_open: bool,
    /// A running run quiet for longer than this is shown as stale ([`STALE`]).
    pub stale_after: std::time::Duration,
    pub prompt: Option<Prompt>,
    pub size: (u16, u16),
    /// What is loading in the background, for the status bar.
    pub loading: Option<String>,
    pub load_gen: u64,
    /// The runs-list entry being loaded.
    pub pending_entry: Option<usize>,
    pub message: Option<Message>,
    pub tick: u64,
    pub quit: bool,
    pub keys: Keymap,
    pub effects: Vec<Effect>,
    /// Open the run by itself when discovery finds exactly one.
    pub auto_open: bool,
    /// Traces up to this many events are filtered on the UI thread (deterministic, instant);
    /// larger ones in the background.
    pub sync_search_limit: usize,
    /// Follow mode (`--follow`, `tail`): runs open at their last event, and a run that
    /// appears while none is open is opened.
    pub follow: bool,
    /// The stats view over the listed runs, while open (and its load under way).
    pub stats: Option<super::stats::StatsView>,
    /// The export prompt and the export being written.
    pub export: super::export::ExportState,
}

impl State {
    pub fn new(keys: Keymap, size: (u16, u16)) -> State {
        State {
            view: View::Runs,
            runs: RunsState {
                scanning: true,
                ..Default::default()
            },
            run: None,
            diff: None,
            diff_gen: 0,
            diff_opts: Default::default(),
            words: Default::default(),
            compare: None,
            branches: None,
            pending_event: None,
            runs_selection: Default::default(),
            runs_visual: None,
            help: None,
            run_cost: None,
            problems_open: false,
            stale_after: STALE,
            prompt: None,
            size,
            loading: None,
            load_gen: 0,
            pending_entry: None,
            message: None,
            tick: 0,
            quit: false,
            keys,
            effects: Vec::new(),
            auto_open: true,
            sync_search_limit: 2_000,
            follow: false,
            stats: None,
            export: Default::default(),
        }
    }

    /// Where keys are looked up now.
    pub fn context(&self) -> Context {
        if self.help.is_some() {
            return Context::Help;
        }
        // The cost view takes the tree's keys (enter goes to, esc closes).
        if self.run_cost.is_some() && self.view == View::Run {
            return Context::Tree;
        }
        self.view_context()
    }

    /// The context of the view itself (what the help overlay describes).
    pub fn view_context(&self) -> Context {
        match (self.view, &self.run, &self.diff) {
            (View::Diff, _, Some(d)) if d.pair.is_some() => Context::Pair,
            (View::Diff, _, Some(_)) => Context::Diff,
            (View::Stats, _, _) if self.stats.is_some() => Context::Stats,
            (View::Compare, _, _) if self.compare.is_some() => Context::Compare,
            (View::Branches, _, _) if self.branches.is_some() => Context::Branches,
            (View::Run, Some(r), _) if r.focus == Pane::Detail => Context::Detail,
            (View::Run, Some(_), _) => Context::Tree,
            _ => Context::Runs,
        }
    }

    pub fn selected_entry(&self) -> Option<&RunEntry> {
        self.runs.entry_at(self.runs.selected).map(|i| &self.runs.entries[i])
    }
}
