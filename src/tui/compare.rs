//! The compare table: several runs against one baseline, a row per run with its verdict,
//! metric deltas and first divergence, sortable; Enter opens that pair's side-by-side diff and
//! Esc there comes back here. Rows fill in as the background work finishes each run.
//!
//! In the runs list: space marks the baseline, `x` toggles a run's selection, `v` starts a
//! visual range (moving extends it, `v` again adds it to the selection), `d` opens the table
//! when runs are selected (else the single diff as before).

use super::action::Command;
use super::diffview::Source;
use super::keymap::Context;
use super::nav::{follow, is_move, move_sel, say};
use super::state::{Effect, RunEntry, State, View};
use super::theme::{Role, Theme};
use crate::diff::compare::{COLUMNS, RunDelta};
use crate::model::Trace;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// One run of the table.
#[derive(Debug)]
pub struct CompareRow {
    /// The run as the runs list names it (sanitized).
    pub name: String,
    pub source: Source,
    /// `None` while the run is loaded and diffed.
    pub result: Option<Result<RunDelta, String>>,
}

/// What the table is sorted by: the order the runs were chosen in, the verdict, or a column
/// of [`COLUMNS`] (by its change from the baseline, largest first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    Given,
    Verdict,
    Column(usize),
}

impl SortBy {
    fn next(self) -> SortBy {
        match self {
            SortBy::Given => SortBy::Verdict,
            SortBy::Verdict => SortBy::Column(0),
            SortBy::Column(i) if i + 1 < COLUMNS.len() => SortBy::Column(i + 1),
            SortBy::Column(_) => SortBy::Given,
        }
    }
    pub fn label(self) -> String {
        match self {
            SortBy::Given => "as chosen".into(),
            SortBy::Verdict => "by verdict, worst first".into(),
            SortBy::Column(i) => format!(
                "by {} change, largest first",
                crate::report::compare::header_name(COLUMNS[i]).to_lowercase()
            ),
        }
    }
}

#[derive(Debug)]
pub struct CompareView {
    pub generation: u64,
    pub baseline_name: String,
    pub baseline: Source,
    pub rows: Vec<CompareRow>,
    /// Row indices in display order.
    pub order: Vec<usize>,
    pub sort: SortBy,
    /// Position in `order`.
    pub selected: usize,
    pub offset: usize,
    /// The first column shown after RUN (which always stays): h/l scroll sideways so that
    /// FIRST DIVERGENCE is reachable on a narrow screen.
    pub column: usize,
    /// The last `column` that shows more: set by the drawing (it knows the widths), so that
    /// `l` stops once the last column is whole on screen.
    pub max_column: std::cell::Cell<usize>,
    /// Shared with the background work: set when the table is closed.
    pub cancel: Arc<AtomicBool>,
}

impl CompareView {
    pub fn done(&self) -> usize {
        self.rows.iter().filter(|r| r.result.is_some()).count()
    }

    fn resort(&mut self) {
        let keep = self.order.get(self.selected).copied();
        let mut order: Vec<usize> = (0..self.rows.len()).collect();
        let key = |i: usize| -> (i64, i64) {
            let Some(Ok(d)) = &self.rows[i].result else {
                return (i64::MIN, 0);
            };
            match self.sort {
                SortBy::Given => (0, 0),
                SortBy::Verdict => (d.verdict as i64, 0),
                SortBy::Column(c) => {
                    let m = d.metric(COLUMNS[c]);
                    (m.and_then(|m| m.delta()).unwrap_or(i64::MIN), 0)
                }
            }
        };
        if self.sort != SortBy::Given {
            order.sort_by_key(|&i| std::cmp::Reverse(key(i)));
        }
        self.order = order;
        if let Some(k) = keep {
            self.selected = self.order.iter().position(|&i| i == k).unwrap_or(0);
        }
    }
}

/// The selected entries of the runs list (selection and a visual range in progress), in list
/// order, without the baseline.
pub(super) fn chosen(s: &State) -> Vec<usize> {
    let mut v: Vec<usize> = s.runs_selection.iter().copied().collect();
    if let Some(anchor) = s.runs_visual {
        let (a, b) = (anchor.min(s.runs.selected), anchor.max(s.runs.selected));
        v.extend((a..=b).filter_map(|row| s.runs.entry_at(row)));
    }
    v.sort_unstable();
    v.dedup();
    v.retain(|&e| Some(e) != s.runs.mark && e < s.runs.entries.len());
    v
}

/// `x` in the runs list: select the run under the cursor for the compare table, or unselect it.
pub fn toggle_select(s: &mut State) {
    let Some(e) = s.runs.entry_at(s.runs.selected) else {
        return;
    };
    if !s.runs_selection.remove(&e) {
        s.runs_selection.insert(e);
    }
    let n = chosen(s).len();
    say(s, format!("{n} run{} selected", if n == 1 { "" } else { "s" }), false);
}

/// `v` in the runs list: start a visual range here, or add the range to the selection.
pub fn toggle_visual(s: &mut State) {
    match s.runs_visual.take() {
        Some(anchor) => {
            let (a, b) = (anchor.min(s.runs.selected), anchor.max(s.runs.selected));
            for row in a..=b {
                if let Some(e) = s.runs.entry_at(row) {
                    s.runs_selection.insert(e);
                }
            }
            let n = chosen(s).len();
            say(s, format!("{n} run{} selected", if n == 1 { "" } else { "s" }), false);
        }
        None => {
            s.runs_visual = Some(s.runs.selected);
            say(s, "visual range: move to extend it, v again to select it", false);
        }
    }
}

/// Whether `d` should open the compare table (some runs are selected).
pub fn wanted(s: &State) -> bool {
    !s.runs_selection.is_empty() || s.runs_visual.is_some()
}

/// Whether entry `e` is selected (for the runs list's mark column).
pub fn is_selected(s: &State, e: usize) -> bool {
    s.runs_selection.contains(&e)
        || s.runs_visual.is_some_and(|anchor| {
            let (a, b) = (anchor.min(s.runs.selected), anchor.max(s.runs.selected));
            (a..=b).any(|row| s.runs.entry_at(row) == Some(e))
        })
}

pub(super) fn source(e: &RunEntry) -> Source {
    Source::Entry {
        run: e.run.clone(),
        index: e.index,
        id: e.summary.id.clone(),
    }
}

/// `d` with runs selected: open the table and compare each with the baseline in the background.
pub fn open(s: &mut State) {
    let Some(base) = s.runs.mark.filter(|&m| m < s.runs.entries.len()) else {
        say(
            s,
            "no baseline: press space on a run to mark it, then d to compare the selected runs with it",
            false,
        );
        return;
    };
    let runs = chosen(s);
    if runs.is_empty() {
        say(s, "select runs other than the baseline (x, or v for a range)", false);
        return;
    }
    // The range becomes part of the selection: back from the table, `d` compares them again.
    s.runs_selection.extend(runs.iter().copied());
    s.runs_visual = None;
    s.diff_gen += 1;
    let rows: Vec<CompareRow> = runs
        .iter()
        .map(|&e| CompareRow {
            name: crate::sanitize::line(&s.runs.label(e)).into_owned(),
            source: source(&s.runs.entries[e]),
            result: None,
        })
        .collect();
    let v = CompareView {
        generation: s.diff_gen,
        baseline_name: crate::sanitize::line(&s.runs.label(base)).into_owned(),
        baseline: source(&s.runs.entries[base]),
        order: (0..rows.len()).collect(),
        rows,
        sort: SortBy::Given,
        selected: 0,
        offset: 0,
        column: 0,
        max_column: std::cell::Cell::new(usize::MAX),
        cancel: Arc::default(),
    };
    s.effects.push(Effect::Compare {
        generation: v.generation,
        baseline: v.baseline.clone(),
        runs: v.rows.iter().map(|r| r.source.clone()).collect(),
        opts: s.diff_opts.clone(),
        cancel: v.cancel.clone(),
    });
    if let Some(old) = s.compare.replace(v) {
        old.cancel.store(true, Ordering::Relaxed);
    }
    s.message = None;
    s.view = View::Compare;
}

/// Load the baseline once, then each run (in parallel), diff it and summarize it; `send`
/// gets each row's result as it is ready. Stops early when `cancel` is set.
pub fn compute(
    baseline: &Source,
    runs: &[Source],
    opts: &crate::diff::Options,
    cancel: &AtomicBool,
    send: &(dyn Fn(usize, Result<RunDelta, String>) + Sync),
) {
    use rayon::prelude::*;
    let base = match super::diffview::task::load_source(baseline) {
        Ok(t) => t,
        Err(e) => {
            for i in 0..runs.len() {
                send(i, Err(format!("baseline: {e}")));
            }
            return;
        }
    };
    let prices = crate::cost::Prices::builtin();
    runs.par_iter().enumerate().for_each(|(i, src)| {
        if cancel.load(Ordering::Relaxed) {
            return;
        }
        // Only what the row shows: the pairs past the first divergence are not compared once
        // the verdict is settled (RunDelta::compare).
        let r = super::diffview::task::load_source(src).and_then(|t: Trace| {
            RunDelta::compare(&base, &t, opts, prices, Some(cancel)).ok_or_else(|| "cancelled".to_string())
        });
        if !cancel.load(Ordering::Relaxed) {
            send(i, r);
        }
    });
}

/// A row's result arrived (results of a closed or older table are dropped).
pub fn row_ready(s: &mut State, generation: u64, row: usize, result: Result<RunDelta, String>) {
    let Some(v) = s.compare.as_mut().filter(|v| v.generation == generation) else {
        return;
    };
    if let Some(r) = v.rows.get_mut(row) {
        r.result = Some(result);
    }
    v.resort();
}

fn body_height(s: &State) -> usize {
    (s.size.1 as usize).saturating_sub(6).max(1)
}

pub fn command(s: &mut State, c: Command) {
    let h = body_height(s);
    let Some(v) = s.compare.as_mut() else { return };
    match c {
        Command::Back => {
            v.cancel.store(true, Ordering::Relaxed);
            let unfinished = v.done() < v.rows.len();
            s.compare = None;
            s.view = View::Runs;
            if unfinished {
                say(s, "comparison cancelled", false);
            }
        }
        c if is_move(c) => v.selected = move_sel(v.selected, v.order.len(), c, h),
        Command::ScrollLeft => v.column = v.column.saturating_sub(1),
        // RUN, VERDICT, the metrics, FIRST DIVERGENCE: the last can come first after RUN.
        Command::ScrollRight => v.column = (v.column + 1).min(COLUMNS.len() + 1).min(v.max_column.get()),
        Command::Sort => {
            v.sort = v.sort.next();
            v.resort();
            let msg = format!("sorted {}", v.sort.label());
            say(s, msg, false);
        }
        Command::Open => {
            let Some(&i) = v.order.get(v.selected) else { return };
            let names = [v.baseline_name.clone(), v.rows[i].name.clone()];
            let (a, b) = (v.baseline.clone(), v.rows[i].source.clone());
            super::diffview::update::start(s, names, a, b);
        }
        _ => {}
    }
}

/// Esc in a diff opened from the table: back to the table.
pub fn back_to_table(s: &mut State) -> bool {
    if s.compare.is_some() {
        s.view = View::Compare;
        true
    } else {
        false
    }
}

pub fn settle(s: &mut State) {
    let h = body_height(s);
    if let Some(v) = s.compare.as_mut() {
        let n = v.order.len();
        v.selected = v.selected.min(n.saturating_sub(1));
        v.offset = follow(v.selected, v.offset, h, n);
    }
}

pub fn click(s: &mut State, y: u16) {
    let Some(v) = s.compare.as_mut() else { return };
    // Title, header, box top, column heads: rows start on screen line 4.
    if y >= 4 {
        let at = v.offset + (y - 4) as usize;
        if at < v.order.len() {
            v.selected = at;
        }
    }
}

pub fn scroll(s: &mut State, down: bool) {
    let Some(v) = s.compare.as_mut() else { return };
    let n = v.order.len();
    v.selected = if down {
        (v.selected + super::nav::WHEEL_STEP).min(n.saturating_sub(1))
    } else {
        v.selected.saturating_sub(super::nav::WHEEL_STEP)
    };
}

/// The table as cells, heads first: what `render` draws (and tests read).
pub fn cells(v: &CompareView) -> Vec<Vec<(Role, String)>> {
    let mut head = vec![(Role::Header, "RUN".to_string()), (Role::Header, "VERDICT".to_string())];
    head.extend(
        COLUMNS
            .iter()
            .map(|c| (Role::Header, crate::report::compare::header_name(c).to_string())),
    );
    head.push((Role::Header, "FIRST DIVERGENCE".into()));
    let mut out = vec![head];
    for &i in &v.order {
        let r = &v.rows[i];
        let mut row = vec![(Role::Text, r.name.clone())];
        match &r.result {
            None => row.push((Role::Dim, "comparing…".into())),
            Some(Err(e)) => {
                row.push((Role::Error, "ERROR".into()));
                row.extend(COLUMNS.iter().map(|_| (Role::Dim, "-".to_string())));
                row.push((Role::Error, crate::sanitize::line(e).into_owned()));
            }
            Some(Ok(d)) => {
                row.push((super::diffview::verdict_role(d.verdict), d.verdict.as_str().into()));
                for c in COLUMNS {
                    let m = d.metric(c);
                    let bad = c == "errors" && m.and_then(|m| m.delta()).is_some_and(|x| x > 0);
                    row.push((
                        if bad { Role::Error } else { Role::Text },
                        crate::report::compare::cell(m),
                    ));
                }
                row.push((
                    Role::Dim,
                    d.first
                        .as_deref()
                        .map_or("-".into(), |f| crate::sanitize::line(f).into_owned()),
                ));
            }
        }
        out.push(row);
    }
    out
}

pub fn render(buf: &mut Buffer, area: Rect, s: &State, th: &Theme) {
    let Some(v) = &s.compare else { return };
    let done = v.done();
    // The baseline's name gives way (cut with …) to the count and the sort.
    {
        use super::render::fields::{self, Field};
        let mut head = vec![
            Field::text(format!("baseline {}", v.baseline_name), Role::Dim).elastic(20),
            Field::text(
                format!(
                    "{}/{} compared",
                    crate::model::thousands(done as u64),
                    crate::model::thousands(v.rows.len() as u64)
                ),
                Role::Dim,
            ),
            Field::text(format!("sorted {}", v.sort.label()), Role::Dim).drop_at(1),
        ];
        let w = area.width.saturating_sub(2);
        fields::draw(buf, area.x + 1, area.y, &mut head, (" · ", Role::Dim), th, w);
    }
    let boxed = Rect {
        y: area.y + 1,
        height: area.height.saturating_sub(1),
        ..area
    };
    let table = cells(v);
    let ncol = table[0].len();
    let widths: Vec<usize> = (0..ncol)
        .map(|c| {
            table
                .iter()
                .map(|r| {
                    r.get(c)
                        .map_or(0, |(_, t)| unicode_width::UnicodeWidthStr::width(t.as_str()))
                })
                .max()
                .unwrap_or(0)
                // A metric is never cut: its whole width.
                .min(if c == 0 {
                    28
                } else if c + 1 == ncol {
                    60
                } else {
                    usize::MAX
                })
        })
        .collect();
    let inner_w = boxed.width.saturating_sub(2) as usize;
    // RUN stays; the others from `column` on, as many whole as fit (a metric is never cut;
    // FIRST DIVERGENCE, the last, takes what is left).
    // Scrolled no further than where the columns from there to the last are all whole.
    let whole_from = (1..ncol)
        .find(|&f| widths[0] + widths[f..].iter().map(|w| 2 + w).sum::<usize>() <= inner_w)
        .unwrap_or(ncol - 1);
    v.max_column.set(whole_from - 1);
    let first = (1 + v.column).min(whole_from);
    let mut cols = vec![0];
    let mut used = widths[0];
    for (c, &cw) in widths.iter().enumerate().skip(first) {
        let last = c + 1 == ncol;
        if last || cols.len() == 1 || used + 2 + cw <= inner_w {
            if last && used + 2 + 4 > inner_w && cols.len() > 1 {
                break;
            }
            cols.push(c);
            used += 2 + cw;
        } else {
            break;
        }
    }
    let hidden_left = first - 1;
    let hidden_right = ncol - 1 - (cols.len() - 1) - hidden_left;
    let mut title = format!(" {} runs against the baseline ", v.rows.len());
    if hidden_left + hidden_right > 0 {
        title.push_str(&format!(
            "· columns {}–{} of {} · h/l scroll ",
            first + 1,
            first + cols.len() - 1,
            ncol
        ));
    }
    let block = super::render::block(ratatui::text::Line::from(title), true, th);
    let inner = block.inner(boxed);
    ratatui::widgets::Widget::render(block, boxed, buf);
    let draw = |buf: &mut Buffer, y: u16, row: &[(Role, String)], selected: bool| {
        let mut x = inner.x;
        let right = inner.x + inner.width;
        for &c in &cols {
            let Some((role, t)) = row.get(c) else { break };
            if x >= right {
                break;
            }
            let mut style = th.style(*role);
            if selected {
                style = style.patch(th.style(Role::Selection));
            }
            let w = if c + 1 == ncol { (right - x) as usize } else { widths[c] };
            // Cut by display width (a CJK letter is two cells), so that the columns line up.
            let text = super::render::fit(t, w);
            buf.set_stringn(x, y, &text, (right - x) as usize, style);
            x = (x + w as u16).min(right).saturating_add(2);
        }
    };
    if inner.height == 0 {
        return;
    }
    draw(buf, inner.y, &table[0], false);
    let h = inner.height.saturating_sub(1) as usize;
    for (k, row) in table[1..].iter().enumerate().skip(v.offset).take(h) {
        let y = inner.y + 1 + (k - v.offset) as u16;
        if k == v.selected {
            buf.set_style(Rect::new(inner.x, y, inner.width, 1), th.style(Role::Selection));
        }
        draw(buf, y, row, k == v.selected);
    }
}

/// The context the keymap uses for the table.
pub const CONTEXT: Context = Context::Compare;
