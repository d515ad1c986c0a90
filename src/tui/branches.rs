//! The branches view (`T` in the runs list): the selected runs (or the current group's) as a
//! prefix tree of their call sequences ([`crate::diff::tree`]), a row per branch with its runs,
//! outcomes and mean cost and tokens. Long stretches without a branch are folded so that the
//! divergences show; Enter opens a branch's representative run at that step, and `d` with two
//! branches marked (space) diffs their representatives. The runs are loaded in the background.

use super::action::Command;
use super::diffview::Source;
use super::keymap::Context;
use super::nav::{follow, is_move, move_sel, say};
use super::state::{Effect, State, View};
use super::theme::{Role, Theme};
use crate::diff::tree::{Outcome, RunInfo};
use crate::report::compare_tree::Group;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A stretch longer than this shows its first and last steps and a fold between them.
const FOLD_OVER: usize = 3;
/// Guides stop growing past this many cells (a tree branching at every step).
const MAX_PREFIX: usize = 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    /// The head of a branch: `n/N runs` and their outcome.
    Branch,
    Step,
    /// Steps of a stretch hidden (`l` or Enter shows them).
    Fold(usize),
    /// Runs that end at this node.
    Ends,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub kind: RowKind,
    pub node: u32,
    /// The branch the row belongs to (its first node; 0: the trunk every run shares).
    pub branch: u32,
    /// Guides before the row.
    pub prefix: String,
}

#[derive(Debug)]
pub struct BranchesView {
    pub generation: u64,
    /// The runs as the runs list names them (sanitized), in the tree's run order.
    pub names: Vec<String>,
    pub sources: Vec<Source>,
    /// The runs-list entries of the runs (Enter opens one as the list does).
    pub entries: Vec<usize>,
    /// Runs loaded so far (while building).
    pub loaded: usize,
    /// `None` while the tree is built.
    pub group: Option<Result<Group, String>>,
    /// Branches (their first node, 0 for the trunk) whose long stretch is shown whole.
    pub expanded: HashSet<u32>,
    pub rows: Vec<Row>,
    pub selected: usize,
    pub offset: usize,
    /// Branches marked for `d`, oldest first (at most two).
    pub marks: Vec<u32>,
    /// Shared with the background work: set when the view is closed.
    pub cancel: Arc<AtomicBool>,
}

impl BranchesView {
    /// The rows of the tree as the folds leave them: an explicit stack (a set of runs may branch
    /// at every step, too deep for recursion).
    pub fn rebuild(&mut self) {
        let mut rows = Vec::new();
        if let Some(Ok(g)) = &self.group {
            let t = &g.tree;
            let mut todo: Vec<(u32, String, Option<String>)> = vec![(0, String::new(), None)];
            while let Some((start, prefix, head)) = todo.pop() {
                if let Some(h) = head {
                    rows.push(Row {
                        kind: RowKind::Branch,
                        node: start,
                        branch: start,
                        prefix: h,
                    });
                }
                let mut chain = Vec::new();
                let mut n = start;
                if start != 0 {
                    chain.push(n);
                }
                while t.nodes[n as usize].children.len() == 1 && t.nodes[n as usize].ends.is_empty() {
                    n = t.nodes[n as usize].children[0];
                    chain.push(n);
                }
                let step = |node: u32| Row {
                    kind: RowKind::Step,
                    node,
                    branch: start,
                    prefix: prefix.clone(),
                };
                if chain.len() > FOLD_OVER && !self.expanded.contains(&start) {
                    rows.push(step(chain[0]));
                    rows.push(Row {
                        kind: RowKind::Fold(chain.len() - 2),
                        node: chain[1],
                        branch: start,
                        prefix: prefix.clone(),
                    });
                    rows.push(step(chain[chain.len() - 1]));
                } else {
                    rows.extend(chain.iter().map(|&c| step(c)));
                }
                let node = &t.nodes[n as usize];
                if !node.ends.is_empty() {
                    rows.push(Row {
                        kind: RowKind::Ends,
                        node: n,
                        branch: start,
                        prefix: prefix.clone(),
                    });
                }
                let kids = node.children.clone();
                for (i, &c) in kids.iter().enumerate().rev() {
                    let last = i + 1 == kids.len();
                    let head = format!("{prefix}{}", if last { "└─ " } else { "├─ " });
                    let deeper = if prefix.chars().count() >= MAX_PREFIX {
                        prefix.clone()
                    } else {
                        format!("{prefix}{}", if last { "   " } else { "│  " })
                    };
                    // Pushed in reverse: the first branch comes off the stack first.
                    todo.push((c, deeper, Some(head)));
                }
            }
        }
        self.rows = rows;
        self.selected = self.selected.min(self.rows.len().saturating_sub(1));
    }

    fn group(&self) -> Option<&Group> {
        self.group.as_ref().and_then(|g| g.as_ref().ok())
    }
}

/// The runs the tree is built of: the selection (`x`, `v`) with the baseline mark; with none,
/// the runs of the group the cursor is in when the list is grouped.
fn chosen(s: &State) -> Vec<usize> {
    let mut v = super::compare::chosen(s);
    if let Some(m) = s.runs.mark.filter(|&m| m < s.runs.entries.len()) {
        v.push(m);
    }
    v.sort_unstable();
    v.dedup();
    if !v.is_empty() || !s.runs.grouped {
        return v;
    }
    let order = &s.runs.order;
    let at = s.runs.selected.min(order.len().saturating_sub(1));
    let is_head = |i: usize| order[i] & super::state::HEADER != 0;
    let Some(start) = (0..=at).rev().find(|&i| i < order.len() && is_head(i)) else {
        return v;
    };
    (start + 1..order.len())
        .take_while(|&i| !is_head(i))
        .filter_map(|i| s.runs.entry_at(i))
        .collect()
}

/// `T` in the runs list: open the view and build the tree in the background.
pub fn open(s: &mut State) {
    let runs = chosen(s);
    if runs.len() < 2 {
        say(
            s,
            "select two runs or more (x, v for a range) or group the list (S), then T for their branches",
            false,
        );
        return;
    }
    s.diff_gen += 1;
    let v = BranchesView {
        generation: s.diff_gen,
        names: runs
            .iter()
            .map(|&e| crate::sanitize::line(&s.runs.label(e)).into_owned())
            .collect(),
        sources: runs
            .iter()
            .map(|&e| super::compare::source(&s.runs.entries[e]))
            .collect(),
        entries: runs.clone(),
        loaded: 0,
        group: None,
        expanded: HashSet::new(),
        rows: Vec::new(),
        selected: 0,
        offset: 0,
        marks: Vec::new(),
        cancel: Arc::default(),
    };
    s.effects.push(Effect::Branches {
        generation: v.generation,
        runs: v.sources.clone(),
        ignore: s.diff_opts.ignore.clone(),
        cancel: v.cancel.clone(),
    });
    if let Some(old) = s.branches.replace(v) {
        old.cancel.store(true, Ordering::Relaxed);
    }
    s.message = None;
    s.view = View::Branches;
}

/// Load every run (in parallel), reduce it to its calls and build the tree; `progress` gets
/// the count of runs loaded as it grows. `None`: cancelled.
pub fn compute(
    runs: &[Source],
    ignore: &[crate::diff::Glob],
    cancel: &AtomicBool,
    progress: &(dyn Fn(usize) + Sync),
) -> Option<Result<Group, String>> {
    use rayon::prelude::*;
    let prices = crate::cost::Prices::builtin();
    let done = AtomicUsize::new(0);
    let infos: Vec<Result<RunInfo, String>> = runs
        .par_iter()
        .map(|src| {
            if cancel.load(Ordering::Relaxed) {
                return Err("cancelled".to_string());
            }
            let r = super::diffview::task::load_source(src)
                .map(|t| RunInfo::of(&t, t.meta.id.clone(), false, ignore, prices));
            progress(done.fetch_add(1, Ordering::Relaxed) + 1);
            r
        })
        .collect();
    if cancel.load(Ordering::Relaxed) {
        return None;
    }
    let infos: Result<Vec<RunInfo>, String> = infos.into_iter().collect();
    Some(infos.map(|v| Group::new(String::new(), v)))
}

/// Runs loaded so far (older or closed views' counts are dropped).
pub fn progress(s: &mut State, generation: u64, done: usize) {
    if let Some(v) = s.branches.as_mut().filter(|v| v.generation == generation) {
        v.loaded = v.loaded.max(done);
    }
}

/// The tree arrived.
pub fn ready(s: &mut State, generation: u64, result: Result<Group, String>) {
    let Some(v) = s.branches.as_mut().filter(|v| v.generation == generation) else {
        return;
    };
    v.group = Some(result);
    v.rebuild();
}

fn body_height(s: &State) -> usize {
    (s.size.1 as usize).saturating_sub(6).max(1)
}

/// The run that stands for `branch` and not for `other` when it can (a branch inside another
/// shares its first run).
fn representative(g: &Group, branch: u32, other: u32) -> u32 {
    let runs = &g.tree.nodes[branch as usize].runs;
    let theirs = &g.tree.nodes[other as usize].runs;
    runs.iter().copied().find(|r| !theirs.contains(r)).unwrap_or(runs[0])
}

/// What Enter does on a row: open this run at this event (`None`: the run from its start),
/// or unfold.
#[derive(Debug, PartialEq)]
pub enum Target {
    Run(usize, Option<u32>),
    Unfold(u32),
}

pub fn target(v: &BranchesView) -> Option<Target> {
    let row = v.rows.get(v.selected)?;
    let g = v.group()?;
    let node = &g.tree.nodes[row.node as usize];
    match row.kind {
        RowKind::Fold(_) => Some(Target::Unfold(row.branch)),
        RowKind::Ends => {
            let r = *node.ends.first()?;
            let ev = node
                .runs
                .iter()
                .position(|&x| x == r)
                .and_then(|i| node.events.get(i).copied());
            Some(Target::Run(r as usize, ev))
        }
        RowKind::Step | RowKind::Branch => {
            let (r, ev) = node.representative()?;
            Some(Target::Run(r as usize, ev))
        }
    }
}

pub fn command(s: &mut State, c: Command) {
    let h = body_height(s);
    let Some(v) = s.branches.as_mut() else { return };
    match c {
        Command::Back => {
            v.cancel.store(true, Ordering::Relaxed);
            let unfinished = v.group.is_none();
            s.branches = None;
            s.view = View::Runs;
            if unfinished {
                say(s, "building the tree cancelled", false);
            }
        }
        c if is_move(c) => v.selected = move_sel(v.selected, v.rows.len(), c, h),
        Command::Open | Command::Expand => match target(v) {
            Some(Target::Unfold(b)) => {
                v.expanded.insert(b);
                v.rebuild();
            }
            Some(Target::Run(r, ev)) if c == Command::Open => {
                let e = v.entries[r];
                super::runs_list::open_entry_at(s, e, ev);
            }
            _ => {}
        },
        Command::Collapse => {
            let Some(row) = v.rows.get(v.selected).cloned() else {
                return;
            };
            if v.expanded.remove(&row.branch) {
                v.rebuild();
                if let Some(p) = v
                    .rows
                    .iter()
                    .position(|r| r.branch == row.branch && matches!(r.kind, RowKind::Fold(_)))
                {
                    v.selected = p;
                }
            } else if let Some(p) = v
                .rows
                .iter()
                .position(|r| r.kind == RowKind::Branch && r.node == row.branch)
            {
                // Already folded: to the head of its branch.
                v.selected = p;
            }
        }
        Command::Mark => {
            let Some(row) = v.rows.get(v.selected) else { return };
            let b = row.branch;
            if b == 0 {
                say(
                    s,
                    "every run takes this stretch: mark a branch (├─) or a step under one",
                    false,
                );
                return;
            }
            if let Some(i) = v.marks.iter().position(|&m| m == b) {
                v.marks.remove(i);
            } else {
                v.marks.push(b);
                if v.marks.len() > 2 {
                    v.marks.remove(0);
                }
            }
            let n = v.marks.len();
            say(
                s,
                if n == 2 {
                    "2 branches marked: d diffs their representative runs"
                } else {
                    "mark another branch (space), then d"
                },
                false,
            );
        }
        Command::Diff => {
            let (Some(g), &[a, b]) = (v.group(), &v.marks[..]) else {
                say(s, "mark two branches with space, then d", false);
                return;
            };
            let (ra, rb) = (representative(g, a, b) as usize, representative(g, b, a) as usize);
            if ra == rb {
                say(s, "the two branches hold the same runs", false);
                return;
            }
            let names = [v.names[ra].clone(), v.names[rb].clone()];
            let (x, y) = (v.sources[ra].clone(), v.sources[rb].clone());
            super::diffview::update::start(s, names, x, y);
        }
        _ => {}
    }
}

/// Esc in a run or a diff opened from the view: back to it.
pub fn back_to_view(s: &mut State) -> bool {
    if s.branches.is_some() {
        s.view = View::Branches;
        true
    } else {
        false
    }
}

pub fn settle(s: &mut State) {
    let h = body_height(s);
    if let Some(v) = s.branches.as_mut() {
        let n = v.rows.len();
        v.selected = v.selected.min(n.saturating_sub(1));
        v.offset = follow(v.selected, v.offset, h, n);
    }
}

pub fn click(s: &mut State, y: u16) {
    let Some(v) = s.branches.as_mut() else { return };
    // Title, header, box top: rows start on screen line 3.
    if y >= 3 {
        let at = v.offset + (y - 3) as usize;
        if at < v.rows.len() {
            v.selected = at;
        }
    }
}

pub fn scroll(s: &mut State, down: bool) {
    let Some(v) = s.branches.as_mut() else { return };
    let n = v.rows.len();
    v.selected = if down {
        (v.selected + super::nav::WHEEL_STEP).min(n.saturating_sub(1))
    } else {
        v.selected.saturating_sub(super::nav::WHEEL_STEP)
    };
}

/// An outcome as fields, the least needed dropped first: runs, ok/error, verdicts, then mean
/// cost and tokens (shortened with units before they go), duration first to go.
fn outcome_fields(o: &Outcome, runs: Option<(usize, usize)>) -> Vec<super::render::fields::Field> {
    use super::render::fields::Field;
    use super::render::num;
    let mut out = Vec::new();
    if let Some((n, total)) = runs {
        out.push(Field::text(format!("{n}/{total} runs"), Role::Text));
    }
    out.push(Field::text(format!("ok {}", o.ok), Role::Text));
    if o.error > 0 {
        out.push(Field::text(format!("error {}", o.error), Role::Error));
    }
    if !o.verdicts.is_empty() {
        let v: Vec<String> = o
            .verdicts
            .iter()
            .map(|(k, n)| format!("{} {n}", crate::report::cut(&crate::sanitize::line(k), 16)))
            .collect();
        out.push(Field::text(v.join(", "), Role::Text).drop_at(4));
    }
    if o.cost.n > 0 {
        let forms = num::dollar_forms(o.cost.mean.round().max(0.0) as u64);
        out.push(Field::labelled("cost", &forms, 2).drop_at(3));
    }
    if o.tokens.n > 0 {
        let forms = num::count_forms(o.tokens.mean.round().max(0.0) as u64);
        out.push(Field::labelled("tokens", &forms, 2).drop_at(3));
    }
    if o.duration.n > 0 {
        let d = crate::model::format_duration(o.duration.mean.round() as i64);
        out.push(Field::text(d, Role::Dim).drop_at(1));
    }
    out
}

pub fn render(buf: &mut Buffer, area: Rect, s: &State, th: &Theme) {
    use super::render::fields::{self, Field};
    let Some(v) = &s.branches else { return };
    let w = area.width.saturating_sub(2);
    let total = v.sources.len();
    let mut head: Vec<Field> = match &v.group {
        None => vec![Field::text(
            format!(
                "building the tree: {}/{} runs loaded",
                crate::model::thousands(v.loaded as u64),
                crate::model::thousands(total as u64)
            ),
            Role::Dim,
        )],
        Some(Err(e)) => vec![Field::text(crate::sanitize::line(e).into_owned(), Role::Error).elastic(10)],
        Some(Ok(g)) => {
            let mut f = vec![
                Field::text(crate::report::count(total, "run"), Role::Text),
                Field::text(crate::report::count(g.tree.paths().len(), "path"), Role::Text),
            ];
            if g.tools_only {
                f.push(Field::text("several formats: tool calls only", Role::Dim).drop_at(5));
            }
            f.extend(outcome_fields(&Outcome::of(&g.runs, &g.tree.root().runs), None));
            f
        }
    };
    fields::draw(buf, area.x + 1, area.y, &mut head, (" · ", Role::Dim), th, w);
    let boxed = Rect {
        y: area.y + 1,
        height: area.height.saturating_sub(1),
        ..area
    };
    let title = match v.marks.len() {
        0 => " branches · space marks, d diffs two ".to_string(),
        n => format!(" branches · {n}/2 marked "),
    };
    let block = super::render::block(ratatui::text::Line::from(title), true, th);
    let inner = block.inner(boxed);
    ratatui::widgets::Widget::render(block, boxed, buf);
    let Some(g) = v.group() else { return };
    let right = inner.x + inner.width;
    for (k, row) in v.rows.iter().enumerate().skip(v.offset).take(inner.height as usize) {
        let y = inner.y + (k - v.offset) as u16;
        let sel = k == v.selected;
        let mut x = inner.x;
        let marked = v.marks.contains(&row.branch) && row.kind == RowKind::Branch;
        let lead = format!("{}{}", if marked { "●" } else { " " }, row.prefix);
        x = super::render::put(
            buf,
            x,
            y,
            &lead,
            th.style(if marked { Role::Mark } else { Role::Dim }),
            right,
        );
        let room = right.saturating_sub(x);
        let node = &g.tree.nodes[row.node as usize];
        match row.kind {
            RowKind::Branch => {
                let mut f = outcome_fields(&Outcome::of(&g.runs, &node.runs), Some((node.runs.len(), total)));
                fields::draw(buf, x, y, &mut f, (" · ", Role::Dim), th, room);
            }
            RowKind::Ends => {
                let mut f = vec![Field::text(
                    format!(
                        "■ {} {} here",
                        crate::report::count(node.ends.len(), "run"),
                        if node.ends.len() == 1 { "ends" } else { "end" }
                    ),
                    Role::Dim,
                )];
                f.extend(outcome_fields(&Outcome::of(&g.runs, &node.ends), None));
                fields::draw(buf, x, y, &mut f, (" · ", Role::Dim), th, room);
            }
            RowKind::Fold(n) => {
                let t = format!("┆ {} · l to show", crate::report::count(n, "more step"));
                super::render::put(buf, x, y, &t, th.style(Role::Dim), right);
            }
            RowKind::Step => {
                let label = crate::sanitize::line(&g.tree.label(node.key.unwrap_or(0))).into_owned();
                let mut f = vec![Field::text(label, Role::Text).elastic(8)];
                if node.failed > 0 {
                    f.push(Field::text(format!("✗ failed in {}", node.failed), Role::Error));
                }
                fields::draw(buf, x, y, &mut f, ("  ", Role::Dim), th, room);
            }
        }
        if sel {
            buf.set_style(Rect::new(inner.x, y, inner.width, 1), th.style(Role::Selection));
        }
    }
}

/// The context the keymap uses for the view.
pub const CONTEXT: Context = Context::Branches;
