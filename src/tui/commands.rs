//! One command list per view: the footer hints and the `?` help overlay are both generated
//! from it (with the keys the keymap actually binds), so they cannot disagree.

use super::action::Command;
use super::keymap::{Context, Keymap};

#[derive(Clone, Copy)]
pub struct Entry {
    pub cmd: Command,
    pub help: &'static str,
    /// Short label for the footer; `None` keeps the command out of the footer.
    pub footer: Option<&'static str>,
}

const fn e(cmd: Command, help: &'static str, footer: Option<&'static str>) -> Entry {
    Entry { cmd, help, footer }
}

const MOVE: [Entry; 4] = [
    e(Command::Up, "move up", None),
    e(Command::Down, "move down", None),
    e(Command::Top, "go to the top", None),
    e(Command::Bottom, "go to the bottom", None),
];
const PAGE: [Entry; 2] = [
    e(Command::PageDown, "half a page down", None),
    e(Command::PageUp, "half a page up", None),
];

const RUNS: &[Entry] = &[
    e(Command::Open, "open the selected run", Some("open")),
    e(
        Command::Filter,
        "filter runs: name, format:, status:, project: (below)",
        Some("filter"),
    ),
    e(
        Command::Sort,
        "sort by start / name / duration / tokens / cost",
        Some("sort"),
    ),
    e(Command::Reverse, "reverse the sort order", None),
    e(
        Command::Stats,
        "tokens, cost and tool latency of the listed runs",
        Some("stats"),
    ),
    e(Command::Group, "group the runs by where they were found", Some("group")),
    e(Command::Copy, "copy the run's id (OSC 52)", None),
    e(Command::CopyPath, "copy the path of the run's source", None),
    e(
        Command::CopyResume,
        "copy the command that resumes the session in its agent",
        None,
    ),
    e(
        Command::Pager,
        "open the run's source in $PAGER (escaped; its first 16 MiB)",
        None,
    ),
    e(
        Command::Problems,
        "what could not be listed, and why (the title's \"unreadable\")",
        None,
    ),
    e(
        Command::Mark,
        "mark the run as the diff baseline (again: unmark)",
        Some("mark"),
    ),
    e(
        Command::Diff,
        "diff the baseline with this run (runs selected: compare table)",
        Some("diff"),
    ),
    e(
        Command::Select,
        "select the run for the compare table (again: unselect)",
        Some("select"),
    ),
    e(
        Command::Visual,
        "visual range: start here, move to extend, again to select it",
        Some("range"),
    ),
    e(
        Command::Branches,
        "the selected runs' (or this group's) calls as a tree of branches",
        None,
    ),
    MOVE[0],
    MOVE[1],
    MOVE[2],
    MOVE[3],
    PAGE[0],
    PAGE[1],
    e(Command::Back, "clear the filter", None),
    e(Command::NextPane, "back to the run that is open", None),
];

const NAV: [Entry; 8] = [
    e(Command::NextError, "next error", Some("next error")),
    e(Command::PrevError, "previous error", None),
    e(Command::NextTool, "next tool call", Some("tool")),
    e(Command::PrevTool, "previous tool call", None),
    e(Command::NextLlm, "next LLM call", Some("LLM")),
    e(Command::PrevLlm, "previous LLM call", None),
    e(Command::NextMatch, "next filter match", None),
    e(Command::PrevMatch, "previous filter match", None),
];

const TREE: &[Entry] = &[
    e(Command::Open, "show the event's detail", Some("detail")),
    e(Command::Filter, "filter the events (syntax below)", Some("filter")),
    NAV[0],
    NAV[1],
    NAV[2],
    NAV[3],
    NAV[4],
    NAV[5],
    NAV[6],
    NAV[7],
    e(Command::Collapse, "collapse (or go to the parent)", Some("fold")),
    e(Command::Expand, "expand", None),
    e(Command::CollapseAll, "collapse all", None),
    e(Command::ExpandAll, "expand all", None),
    e(
        Command::Copy,
        "copy the event's payload as JSON, escaped (OSC 52)",
        None,
    ),
    e(
        Command::CopyRaw,
        "copy it raw: control characters included, unsafe to paste",
        None,
    ),
    e(Command::Pager, "open the event's payload in $PAGER", None),
    e(
        Command::CopyResume,
        "copy the command that resumes the session in its agent",
        None,
    ),
    e(Command::Follow, "follow new events of a live run (G too)", None),
    e(
        Command::Stats,
        "the run's cost: by model, subagent and tool, its costliest calls and results (enter goes to one)",
        Some("cost"),
    ),
    e(Command::Zoom, "zoom: this pane fills the screen, and back", None),
    e(
        Command::Transcript,
        "the whole run as one conversation (again: close)",
        Some("transcript"),
    ),
    e(
        Command::Problems,
        "the run's load problems (lines that could not be read)",
        None,
    ),
    MOVE[0],
    MOVE[1],
    MOVE[2],
    MOVE[3],
    PAGE[0],
    PAGE[1],
    e(Command::Back, "clear the filter, then back to the runs", Some("back")),
    e(
        Command::Export,
        "export the run to a file: HTML, Markdown or OTLP/JSON",
        Some("export"),
    ),
];

const DETAIL: &[Entry] = &[
    e(
        Command::Copy,
        "copy the value under the cursor, escaped (OSC 52)",
        Some("copy"),
    ),
    e(Command::CopyPath, "copy its JSON path", None),
    e(
        Command::CopyRaw,
        "copy it raw: control characters included, unsafe to paste",
        None,
    ),
    e(
        Command::Pager,
        "open the value under the cursor (on no value: the whole detail) in $PAGER",
        Some("pager"),
    ),
    e(
        Command::Editor,
        "open it in $VISUAL / $EDITOR (a copy, removed after)",
        None,
    ),
    e(
        Command::CopyResume,
        "copy the command that resumes the session in its agent",
        None,
    ),
    e(Command::Filter, "search the detail's text (smart case)", Some("search")),
    e(
        Command::NextMatch,
        "next search match (no search: next filter match)",
        None,
    ),
    e(Command::PrevMatch, "previous search match", None),
    e(
        Command::ToggleFold,
        "fold / unfold the JSON object or array at the cursor",
        Some("fold"),
    ),
    e(Command::Collapse, "fold it (folded: go to the enclosing one)", None),
    e(Command::Expand, "unfold it", None),
    e(
        Command::CollapseAll,
        "fold everything at the cursor's depth and deeper",
        None,
    ),
    e(Command::ExpandAll, "unfold everything", None),
    e(
        Command::Zoom,
        "zoom: this pane fills the screen, and back",
        Some("zoom"),
    ),
    e(Command::Wrap, "wrap long lines on/off", Some("wrap")),
    e(Command::ScrollRight, "wrap off: scroll right half a pane", None),
    e(Command::ScrollLeft, "wrap off: scroll left half a pane", None),
    e(Command::LineStart, "wrap off: back to the first column", None),
    e(
        Command::LineEnd,
        "wrap off: to the end of the line under the cursor",
        None,
    ),
    e(Command::Raw, "raw source record on/off", None),
    e(
        Command::Chat,
        "LLM calls and messages: chat view / JSON view",
        Some("chat/json"),
    ),
    e(Command::Plain, "message text: Markdown / raw text", None),
    e(
        Command::Export,
        "export the run to a file: HTML, Markdown or OTLP/JSON",
        None,
    ),
    e(
        Command::Transcript,
        "the whole run as one conversation (again: close)",
        None,
    ),
    e(
        Command::Problems,
        "the run's load problems (lines that could not be read)",
        None,
    ),
    NAV[0],
    NAV[1],
    NAV[2],
    NAV[3],
    NAV[4],
    NAV[5],
    e(Command::Follow, "follow new events of a live run", None),
    MOVE[0],
    MOVE[1],
    MOVE[2],
    MOVE[3],
    PAGE[0],
    PAGE[1],
    e(Command::Back, "back to the event tree", Some("back")),
];

const HELP: &[Entry] = &[
    e(Command::Help, "close the help", Some("close")),
    e(Command::Back, "close the help", None),
    MOVE[0],
    MOVE[1],
];

const DIFF: &[Entry] = &[
    e(
        Command::NextChange,
        "next divergence (a row that is not unchanged)",
        Some("next change"),
    ),
    e(Command::PrevChange, "previous divergence", None),
    e(Command::Open, "the pair's path changes and both values", Some("detail")),
    e(Command::Inline, "side by side / inline", Some("layout")),
    MOVE[0],
    MOVE[1],
    MOVE[2],
    MOVE[3],
    PAGE[0],
    PAGE[1],
    e(Command::Back, "back to the runs", Some("back")),
    e(
        Command::Export,
        "export the diff to a file: a Markdown or HTML report",
        Some("export"),
    ),
];

const PAIR: &[Entry] = &[
    e(Command::NextChange, "the next divergence's detail", Some("next change")),
    e(Command::PrevChange, "the previous divergence's detail", None),
    e(Command::Wrap, "wrap long lines on/off", Some("wrap")),
    e(
        Command::Copy,
        "copy the value under the cursor, escaped (OSC 52)",
        Some("copy"),
    ),
    e(Command::CopyPath, "copy its JSON path", None),
    e(
        Command::CopyRaw,
        "copy it raw: control characters included, unsafe to paste",
        None,
    ),
    e(Command::Pager, "open the value in $PAGER (long values)", Some("pager")),
    e(
        Command::Export,
        "export the diff to a file: a Markdown or HTML report",
        None,
    ),
    MOVE[0],
    MOVE[1],
    MOVE[2],
    MOVE[3],
    PAGE[0],
    PAGE[1],
    e(Command::Back, "back to the aligned calls", Some("back")),
];

const STATS: &[Entry] = &[
    e(Command::Sort, "group by model / day / format / run", Some("group by")),
    e(Command::Back, "back to the runs list", Some("back")),
    MOVE[0],
    MOVE[1],
    MOVE[2],
    MOVE[3],
    PAGE[0],
    PAGE[1],
];

const BRANCHES: &[Entry] = &[
    e(
        Command::Open,
        "open the branch's representative run at this step (on a fold: show it)",
        Some("open"),
    ),
    e(Command::Expand, "show the steps of a fold", None),
    e(Command::Collapse, "fold the stretch again (or go to its branch)", None),
    e(Command::Mark, "mark this branch (two at most)", Some("mark")),
    e(
        Command::Diff,
        "diff the two marked branches' representative runs",
        Some("diff"),
    ),
    MOVE[0],
    MOVE[1],
    MOVE[2],
    MOVE[3],
    PAGE[0],
    PAGE[1],
    e(
        Command::Back,
        "back to the runs (stops building the tree)",
        Some("back"),
    ),
];

const COMPARE: &[Entry] = &[
    e(Command::Open, "the selected run's side-by-side diff", Some("diff")),
    e(
        Command::Sort,
        "sort: as chosen, by verdict, by each column's change",
        Some("sort"),
    ),
    e(Command::ScrollLeft, "scroll the columns left (RUN stays)", None),
    e(
        Command::ScrollRight,
        "scroll the columns right, to FIRST DIVERGENCE",
        Some("columns"),
    ),
    MOVE[0],
    MOVE[1],
    MOVE[2],
    MOVE[3],
    PAGE[0],
    PAGE[1],
    e(
        Command::Back,
        "back to the runs (stops what is still comparing)",
        Some("back"),
    ),
];

const GLOBAL: &[Entry] = &[
    e(Command::Help, "help: the keys of this view", Some("help")),
    e(Command::NextPane, "next pane", None),
    e(Command::PrevPane, "previous pane", None),
    e(Command::Quit, "quit (Ctrl-C too)", Some("quit")),
];

/// The commands of a view, its own first; then the global ones (except for the help overlay).
pub fn for_context(ctx: Context) -> impl Iterator<Item = &'static Entry> {
    let own: &'static [Entry] = match ctx {
        Context::Runs => RUNS,
        Context::Tree => TREE,
        Context::Detail => DETAIL,
        Context::Help => HELP,
        Context::Diff => DIFF,
        Context::Pair => PAIR,
        Context::Stats => STATS,
        Context::Compare => COMPARE,
        Context::Branches => BRANCHES,
        Context::Global => &[],
    };
    let global: &'static [Entry] = if ctx == Context::Help { &[] } else { GLOBAL };
    // The diff views have one pane: Tab does nothing there, so it is not offered.
    let one_pane = matches!(
        ctx,
        Context::Diff | Context::Pair | Context::Compare | Context::Branches
    );
    // A view's own entry for a command replaces the global one.
    own.iter().chain(global.iter().filter(move |g| {
        let pane_key = matches!(g.cmd, Command::NextPane | Command::PrevPane);
        let replaced = own.iter().any(|o| o.cmd == g.cmd);
        let hidden = one_pane && pane_key;
        !replaced && !hidden
    }))
}

/// Footer hints: (first key, label) for the commands that have a footer label and a key.
/// Help comes first, so that it is never cut off on a narrow screen.
pub fn footer(ctx: Context, keys: &Keymap) -> Vec<(String, &'static str)> {
    let help = for_context(ctx).filter(|e| e.cmd == Command::Help);
    help.chain(for_context(ctx).filter(|e| e.cmd != Command::Help))
        .filter_map(|e| {
            let label = e.footer?;
            let k = keys.keys(ctx, e.cmd).first()?.to_string();
            Some((k, label))
        })
        .collect()
}

/// Help rows: (all keys, description); commands with no key are left out.
pub fn help(ctx: Context, keys: &Keymap) -> Vec<(String, &'static str)> {
    for_context(ctx)
        .filter_map(|e| {
            let k = keys.keys(ctx, e.cmd);
            (!k.is_empty()).then(|| (k.join(" "), e.help))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_views_offer_no_pane_keys() {
        let k = Keymap::default();
        for ctx in [Context::Diff, Context::Pair] {
            let h = help(ctx, &k);
            assert!(!h.iter().any(|(_, d)| d.contains("pane")), "{h:?}");
        }
        assert!(help(Context::Tree, &k).iter().any(|(_, d)| *d == "next pane"));
    }

    #[test]
    fn footer_and_help_use_the_bound_keys() {
        let k = Keymap::default();
        let f = footer(Context::Tree, &k);
        assert!(f.contains(&("e".to_string(), "next error")));
        assert!(f.contains(&("?".to_string(), "help")));
        let over: toml::Table = "[tree]\nnext_error = [\"x\"]\n".parse().unwrap();
        let k = Keymap::with_overrides(&over).unwrap();
        assert!(footer(Context::Tree, &k).contains(&("x".to_string(), "next error")));
        assert!(
            help(Context::Tree, &k)
                .iter()
                .any(|(keys, h)| keys == "x" && *h == "next error")
        );
    }

    #[test]
    fn every_view_documents_quit_and_help() {
        let k = Keymap::default();
        for ctx in [
            Context::Runs,
            Context::Tree,
            Context::Detail,
            Context::Diff,
            Context::Pair,
        ] {
            let h = help(ctx, &k);
            assert!(h.iter().any(|(keys, _)| keys.contains('?')), "{ctx:?}");
            assert!(h.iter().any(|(keys, _)| keys.contains('q')), "{ctx:?}");
        }
    }
}
