//! Everything the screen shows, and nothing about how it is drawn. `update` changes it;
//! views render from `&State`. Per-frame work must not depend on the trace size, so the
//! flattened list of visible rows is kept here and rebuilt only on collapse, expand or filter.

use super::detail::{self, Doc};
use super::keymap::{Context, Keymap};
use crate::formats::Summary;
use crate::model::{Counts, EventKind, NO_PARENT, Trace};
use crate::search::Query;
use crate::source::RunRef;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// One run of the runs list: where it is and its cheap summary.
#[derive(Clone, Debug)]
pub struct RunEntry {
    pub run: RunRef,
    /// Position of the trace in its source (a source may hold several runs).
    pub index: usize,
    pub summary: Summary,
}

impl RunEntry {
    pub fn name(&self) -> &str {
        self.summary.name.as_deref().unwrap_or(&self.summary.id)
    }
}

impl RunsState {
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
}

impl RunSort {
    pub fn label(self) -> &'static str {
        match self {
            RunSort::Start => "newest first",
            RunSort::Name => "by name",
            RunSort::Duration => "longest first",
        }
    }
    pub fn next(self) -> RunSort {
        match self {
            RunSort::Start => RunSort::Name,
            RunSort::Name => RunSort::Duration,
            RunSort::Duration => RunSort::Start,
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
    pub filter: String,
    /// Per entry: another run has the same name (the list then shows the id too).
    pub same_name: Vec<bool>,
    /// The user moved the selection (until then it stays on the first row as runs arrive).
    pub moved: bool,
    /// Discovery still running.
    pub scanning: bool,
    /// Sources that could not be listed.
    pub problems: Vec<String>,
    /// The entry marked (space) as the baseline of a diff.
    pub mark: Option<usize>,
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
    pub cursor: usize,
    pub offset: usize,
}

/// An opened run.
#[derive(Debug)]
pub struct RunView {
    pub trace: Arc<Trace>,
    /// The runs-list entry it came from.
    pub entry: Option<usize>,
    pub counts: Counts,
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
}

impl RunView {
    pub fn new(trace: Arc<Trace>, entry: Option<usize>) -> RunView {
        let n = trace.len();
        let walk = trace.walk();
        let mut order = Vec::with_capacity(n);
        let mut pos = vec![0u32; n];
        for (k, &(i, _)) in walk.iter().enumerate() {
            order.push(i);
            pos[i as usize] = k as u32;
        }
        let model = trace.meta.model.clone().or_else(|| {
            trace
                .events
                .iter()
                .find(|e| e.kind == EventKind::LlmCall && !e.model.is_empty())
                .map(|e| trace.str(e.model).to_string())
        });
        let mut v = RunView {
            counts: trace.counts(),
            span: trace.time_span(),
            timed: trace.events.iter().any(|e| e.start.is_some()),
            model,
            order,
            pos,
            collapsed: vec![false; n],
            rows: Vec::new(),
            selected: 0,
            offset: 0,
            focus: Pane::Tree,
            filter: Filter::default(),
            detail: None,
            wrap: true,
            raw: false,
            trace,
            entry,
        };
        v.rebuild_rows();
        v.sync_detail();
        v
    }

    pub fn selected_event(&self) -> Option<u32> {
        self.rows.get(self.selected).map(|r| r.ev)
    }

    /// Flatten the visible tree: collapsed subtrees are skipped, and with a filter only hits
    /// and their ancestors remain. The selected event stays selected if it is still visible.
    pub fn rebuild_rows(&mut self) {
        let keep_ev = self.selected_event();
        let t = &self.trace;
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
        let mut rows = Vec::with_capacity(if keep.is_some() { 1024 } else { t.len() });
        let mut stack: Vec<(u32, u16)> = t.roots.iter().rev().map(|&r| (r, 0)).collect();
        while let Some((i, d)) = stack.pop() {
            if keep.as_ref().is_some_and(|k| !k[i as usize]) {
                continue;
            }
            rows.push(Row { ev: i, depth: d });
            if !self.collapsed[i as usize] {
                for &c in t.children(i).iter().rev() {
                    stack.push((c, d.saturating_add(1)));
                }
            }
        }
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
        let Some(ev) = self.selected_event() else {
            self.detail = None;
            return;
        };
        if self.detail.as_ref().is_some_and(|d| d.event == ev) {
            return;
        }
        self.rebuild_detail(ev);
    }

    pub fn rebuild_detail(&mut self, ev: u32) {
        self.detail = Some(DetailState {
            event: ev,
            doc: detail::build(&self.trace, ev, self.raw, self.span.0),
            cursor: 0,
            offset: 0,
        });
    }
}

/// A prompt being edited at the bottom of the screen.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub text: String,
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
        trace: Arc<Trace>,
        query: Arc<Query>,
        cancel: Arc<AtomicBool>,
    },
    /// Load two runs and diff them.
    Diff {
        generation: u64,
        baseline: super::diffview::Source,
        current: super::diffview::Source,
        opts: crate::diff::Options,
    },
    /// Put text on the clipboard (OSC 52).
    Copy(String),
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
    /// Help overlay open, with its scroll offset.
    pub help: Option<usize>,
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
            help: None,
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
        }
    }

    /// Where keys are looked up now.
    pub fn context(&self) -> Context {
        if self.help.is_some() {
            return Context::Help;
        }
        self.view_context()
    }

    /// The context of the view itself (what the help overlay describes).
    pub fn view_context(&self) -> Context {
        match (self.view, &self.run, &self.diff) {
            (View::Diff, _, Some(d)) if d.pair.is_some() => Context::Pair,
            (View::Diff, _, Some(_)) => Context::Diff,
            (View::Run, Some(r), _) if r.focus == Pane::Detail => Context::Detail,
            (View::Run, Some(_), _) => Context::Tree,
            _ => Context::Runs,
        }
    }

    pub fn selected_entry(&self) -> Option<&RunEntry> {
        self.runs.order.get(self.runs.selected).map(|&i| &self.runs.entries[i])
    }
}
