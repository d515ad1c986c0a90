//! Everything that can change the state: user intents (bound to keys by the keymap) and the
//! results background work sends back. `update` is the only consumer.

use super::diffview::DiffData;
use super::state::{Progress, RunEntry, SharedTrace};
use crate::model::Trace;
use crate::search::Batch;

/// User intents that keys can be bound to, by their keymap name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    Quit,
    Help,
    Back,
    NextPane,
    PrevPane,
    Up,
    Down,
    Top,
    Bottom,
    PageDown,
    PageUp,
    Open,
    Filter,
    Sort,
    Collapse,
    Expand,
    CollapseAll,
    ExpandAll,
    NextError,
    PrevError,
    NextTool,
    PrevTool,
    NextLlm,
    PrevLlm,
    NextMatch,
    PrevMatch,
    Wrap,
    Raw,
    Copy,
    CopyPath,
    CopyRaw,
    CopyResume,
    Pager,
    Problems,
    Mark,
    Diff,
    NextChange,
    PrevChange,
    Inline,
    Follow,
    Group,
    ScrollLeft,
    ScrollRight,
    LineStart,
    LineEnd,
    Chat,
    Plain,
    Transcript,
    Reverse,
    Stats,
    Select,
    Visual,
    ToggleFold,
    Zoom,
    Editor,
    Export,
    Branches,
}

impl Command {
    pub const ALL: [Command; 57] = [
        Command::Quit,
        Command::Help,
        Command::Back,
        Command::NextPane,
        Command::PrevPane,
        Command::Up,
        Command::Down,
        Command::Top,
        Command::Bottom,
        Command::PageDown,
        Command::PageUp,
        Command::Open,
        Command::Filter,
        Command::Sort,
        Command::Collapse,
        Command::Expand,
        Command::CollapseAll,
        Command::ExpandAll,
        Command::NextError,
        Command::PrevError,
        Command::NextTool,
        Command::PrevTool,
        Command::NextLlm,
        Command::PrevLlm,
        Command::NextMatch,
        Command::PrevMatch,
        Command::Wrap,
        Command::Raw,
        Command::Copy,
        Command::CopyPath,
        Command::CopyRaw,
        Command::CopyResume,
        Command::Pager,
        Command::Problems,
        Command::Mark,
        Command::Diff,
        Command::NextChange,
        Command::PrevChange,
        Command::Inline,
        Command::Follow,
        Command::Group,
        Command::ScrollLeft,
        Command::ScrollRight,
        Command::LineStart,
        Command::LineEnd,
        Command::Chat,
        Command::Plain,
        Command::Transcript,
        Command::Reverse,
        Command::Stats,
        Command::Select,
        Command::Visual,
        Command::ToggleFold,
        Command::Zoom,
        Command::Editor,
        Command::Export,
        Command::Branches,
    ];

    /// The name used in the keymap TOML.
    pub fn name(self) -> &'static str {
        match self {
            Command::Quit => "quit",
            Command::Help => "help",
            Command::Back => "back",
            Command::NextPane => "next_pane",
            Command::PrevPane => "prev_pane",
            Command::Up => "up",
            Command::Down => "down",
            Command::Top => "top",
            Command::Bottom => "bottom",
            Command::PageDown => "page_down",
            Command::PageUp => "page_up",
            Command::Open => "open",
            Command::Filter => "filter",
            Command::Sort => "sort",
            Command::Collapse => "collapse",
            Command::Expand => "expand",
            Command::CollapseAll => "collapse_all",
            Command::ExpandAll => "expand_all",
            Command::NextError => "next_error",
            Command::PrevError => "prev_error",
            Command::NextTool => "next_tool",
            Command::PrevTool => "prev_tool",
            Command::NextLlm => "next_llm",
            Command::PrevLlm => "prev_llm",
            Command::NextMatch => "next_match",
            Command::PrevMatch => "prev_match",
            Command::Wrap => "wrap",
            Command::Raw => "raw",
            Command::Copy => "copy",
            Command::CopyPath => "copy_path",
            Command::CopyRaw => "copy_raw",
            Command::CopyResume => "copy_resume",
            Command::Pager => "pager",
            Command::Problems => "problems",
            Command::Mark => "mark",
            Command::Diff => "diff",
            Command::Select => "select",
            Command::Visual => "visual",
            Command::NextChange => "next_change",
            Command::PrevChange => "prev_change",
            Command::Inline => "inline",
            Command::Follow => "follow",
            Command::Group => "group",
            Command::ScrollLeft => "scroll_left",
            Command::ScrollRight => "scroll_right",
            Command::LineStart => "line_start",
            Command::LineEnd => "line_end",
            Command::Chat => "chat",
            Command::Plain => "plain",
            Command::Transcript => "transcript",
            Command::Reverse => "reverse",
            Command::Stats => "stats",
            Command::ToggleFold => "toggle_fold",
            Command::Zoom => "zoom",
            Command::Editor => "editor",
            Command::Export => "export",
            Command::Branches => "branches",
        }
    }

    pub fn from_name(s: &str) -> Option<Command> {
        Command::ALL.into_iter().find(|c| c.name() == s)
    }
}

/// One input to `update`.
#[derive(Debug)]
pub enum Action {
    Cmd(Command),
    /// Editing the filter prompt.
    Input(char),
    InputBackspace,
    InputClear,
    InputSubmit,
    InputCancel,
    Resize(u16, u16),
    Click {
        x: u16,
        y: u16,
    },
    Scroll {
        x: u16,
        y: u16,
        down: bool,
    },
    /// Periodic: animates the loading indicator and expires messages.
    Tick,
    /// Background discovery found runs.
    RunsFound(Vec<RunEntry>),
    /// The indexer made these runs' summaries exact ([`crate::source::index`]), and how far
    /// it is.
    RunsIndexed {
        found: Vec<RunEntry>,
        progress: crate::source::index::Progress,
    },
    RunsProblem(String),
    /// One run could not be listed (yet): said until it is.
    RunProblem(std::path::PathBuf, String),
    /// What was said of this path is over (a store listed after all).
    RunProblemOver(std::path::PathBuf),
    /// Directories the latest scan did not enter (depth or entry limit).
    RunsSkipped(crate::source::Skipped),
    /// A problem to show in the status line (an effect that failed).
    Problem(String),
    RunsDone,
    /// A store's list: whether it holds more runs than are listed (the next page loads when
    /// the list's end comes into view).
    RunsMore(bool),
    /// A run finished loading (or failed to).
    RunLoaded {
        generation: u64,
        result: Result<Box<Trace>, String>,
    },
    /// Runs loaded so far for the branches view.
    BranchesProgress {
        generation: u64,
        done: usize,
    },
    /// The branches view's tree (or why it could not be built).
    BranchesReady {
        generation: u64,
        result: Result<Box<crate::report::compare_tree::Group>, String>,
    },
    /// One run of the compare table compared with the baseline (or why it could not be).
    CompareRow {
        generation: u64,
        row: usize,
        result: Result<crate::diff::compare::RunDelta, String>,
    },
    /// A diff computed in the background (or why it could not be).
    DiffReady {
        generation: u64,
        result: Result<Box<DiffData>, String>,
    },
    /// A loader published (more of) the run it loads: the first time it opens the run view,
    /// then the view grows. `loading` is set while what was on disk is still being read.
    RunUpdate {
        generation: u64,
        trace: SharedTrace,
        loading: Option<Progress>,
        /// The source was read again from the start (truncated or replaced).
        restarted: bool,
    },
    /// Runs the stats view loaded (`pos`: the run's place in the view's list).
    StatsPart {
        generation: u64,
        results: Vec<(usize, Result<Box<crate::report::stats::RunStats>, String>)>,
    },
    /// Results of a background payload search over the events from `from` on.
    SearchBatch {
        generation: u64,
        from: usize,
        batch: Batch,
    },
    /// The runs list's payload search searched one more source: (entry, matches).
    RunsSearchBatch {
        generation: u64,
        hits: Vec<(usize, usize)>,
        done: usize,
        total: usize,
    },
    /// A key in the export prompt.
    Export(super::export::Input),
    /// The export was written (what to say), or why not.
    Exported(Result<String, String>),
}
