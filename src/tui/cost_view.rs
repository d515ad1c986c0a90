//! `$` on a run: where its money went. Its cost by model, subagent and tool, the costliest
//! LLM calls and the costliest tool results (direct, and carried: re-sent on later calls
//! until a compaction), from `cost::attribution`. Enter on a call or a result jumps to it in
//! the tree. A live run's figures are made again as it grows (at most once a second, and not
//! more often than eight times as long as the last making took).

use super::action::Command;
use super::nav::{is_move, move_sel, say};
use super::state::{Pane, RunView, State, read};
use super::theme::Role;
use crate::cost::attribution::{Attribution, attribute};
use crate::cost::dollars;
use crate::model::{EventKind, Trace, thousands};
use std::time::{Duration, Instant};

/// Rows in each "costliest" list.
const TOP: usize = 10;
const REBUILD_EVERY: Duration = Duration::from_secs(1);

/// One line of the view: a label, figures in columns (right-aligned, never cut), and the
/// event it jumps to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub label: String,
    pub figs: Vec<String>,
    pub role: Role,
    pub event: Option<u32>,
}

impl Row {
    fn section(label: &str, heads: &[&str]) -> Row {
        Row {
            label: label.to_string(),
            figs: heads.iter().map(|h| h.to_string()).collect(),
            role: Role::Section,
            event: None,
        }
    }
    fn text(label: impl Into<String>, figs: Vec<String>, role: Role, event: Option<u32>) -> Row {
        Row {
            label: label.into(),
            figs,
            role,
            event,
        }
    }
    fn blank() -> Row {
        Row::text("", Vec::new(), Role::Text, None)
    }
}

#[derive(Debug)]
pub struct CostView {
    pub rows: Vec<Row>,
    /// The selected row (one with an event), if any.
    pub selected: Option<usize>,
    /// First row shown.
    pub offset: usize,
    /// The trace's length when the rows were made, and when / how long that took.
    made_at_len: usize,
    made: Instant,
    took: Duration,
}

impl CostView {
    fn selectable(&self) -> Vec<usize> {
        (0..self.rows.len()).filter(|&i| self.rows[i].event.is_some()).collect()
    }
}

/// Open the view over the open run.
pub fn open(s: &mut State) {
    let Some(r) = s.run.as_ref() else { return };
    let h = r.trace.clone();
    let t = read(&h);
    let v = make(&t);
    drop(t);
    if v.rows.is_empty() {
        say(s, "no LLM calls or tool results: nothing cost anything", false);
        return;
    }
    s.run_cost = Some(v);
}

fn make(t: &Trace) -> CostView {
    let t0 = Instant::now();
    let a = attribute(t, super::config::prices());
    let rows = rows(t, &a);
    let selected = rows.iter().position(|r| r.event.is_some());
    CostView {
        rows,
        selected,
        offset: 0,
        made_at_len: t.len(),
        made: Instant::now(),
        took: t0.elapsed(),
    }
}

/// Make the rows again when the run grew (a live run), keeping the selection on its event.
pub fn tick(s: &mut State) {
    let (Some(v), Some(r)) = (s.run_cost.as_mut(), s.run.as_ref()) else {
        return;
    };
    if v.made.elapsed() < REBUILD_EVERY.max(v.took * 8) {
        return;
    }
    let h = r.trace.clone();
    let t = read(&h);
    if t.len() == v.made_at_len {
        return;
    }
    let ev = v.selected.and_then(|i| v.rows[i].event);
    let mut new = make(&t);
    drop(t);
    if let Some(ev) = ev {
        new.selected = new.rows.iter().position(|r| r.event == Some(ev)).or(new.selected);
    }
    new.offset = v.offset;
    *v = new;
}

/// A total's cost: `?` when none of its calls could be priced, `≥$…` when some could not.
fn cost_of(x: &crate::cost::usage::Total) -> String {
    if x.calls > 0 && x.unknown >= x.calls {
        "?".to_string()
    } else if x.unknown > 0 {
        format!("≥{}", dollars(x.micros))
    } else {
        dollars(x.micros)
    }
}

fn tokens(n: u64) -> String {
    format!("{} tok", thousands(n))
}

/// The view's rows for a run and its attribution.
pub fn rows(t: &Trace, a: &Attribution) -> Vec<Row> {
    let c = &a.cost;
    if c.total.calls == 0 && a.results.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    // The run's total, and what it does not cover.
    let total = cost_of(&c.total);
    out.push(Row::section("run", &["CALLS", "TOKENS", "COST"]));
    out.push(Row::text(
        "total (computed)",
        vec![thousands(c.total.calls), tokens(c.total.total_tokens), total],
        Role::Text,
        None,
    ));
    if let Some(rec) = c
        .recorded_run
        .filter(|&r| crate::cost::usage::differ(r, c.total.micros))
    {
        out.push(Row::text(
            "recorded by the agent",
            vec![String::new(), String::new(), dollars(rec)],
            Role::Warning,
            None,
        ));
    }
    if c.total.unknown > 0 {
        out.push(Row::text(
            format!(
                "unpriced: {} calls (unknown model or price)",
                thousands(c.total.unknown)
            ),
            Vec::new(),
            Role::Warning,
            None,
        ));
    }
    for (what, x) in &c.unlogged {
        out.push(Row::text(
            format!("not logged: {}", crate::sanitize::line(what)),
            vec![thousands(x.calls), tokens(x.total_tokens), cost_of(x)],
            Role::Dim,
            None,
        ));
    }
    if !c.by_model.is_empty() {
        out.push(Row::blank());
        out.push(Row::section("by model", &["CALLS", "TOKENS", "COST"]));
        let mut by: Vec<_> = c.by_model.iter().collect();
        by.sort_by(|a, b| b.1.micros.cmp(&a.1.micros).then_with(|| a.0.cmp(&b.0)));
        for (m, x) in by {
            let name = if m.is_empty() { "(no model)" } else { m.as_str() };
            out.push(Row::text(
                crate::sanitize::line(name).into_owned(),
                vec![thousands(x.calls), tokens(x.total_tokens), cost_of(x)],
                Role::Text,
                None,
            ));
        }
    }
    if a.by_subagent.len() > 1 {
        out.push(Row::blank());
        out.push(Row::section("by subagent", &["CALLS", "TOKENS", "COST"]));
        let mut by: Vec<_> = a.by_subagent.iter().collect();
        by.sort_by_key(|x| std::cmp::Reverse(x.1.micros));
        for (name, x) in by {
            let name = if name.is_empty() { "(main)" } else { name.as_str() };
            out.push(Row::text(
                crate::sanitize::line(name).into_owned(),
                vec![thousands(x.calls), tokens(x.total_tokens), cost_of(x)],
                Role::Text,
                None,
            ));
        }
    }
    if !a.results.is_empty() {
        out.push(Row::blank());
        out.push(Row::section("by tool (its results)", &["RESULTS", "DIRECT", "CARRIED"]));
        let mut by = a.by_tool();
        by.sort_by(|a, b| (b.2 + b.3).cmp(&(a.2 + a.3)).then_with(|| a.0.cmp(&b.0)));
        for (tool, n, direct, carried) in by {
            out.push(Row::text(
                crate::sanitize::line(&tool).into_owned(),
                vec![thousands(n), dollars(direct), dollars(carried)],
                Role::Text,
                None,
            ));
        }
        out.push(Row::text(
            "not any result's (prompts, messages, output)",
            vec![String::new(), dollars(a.not_results()), String::new()],
            Role::Dim,
            None,
        ));
    }
    // The costliest LLM calls: Enter jumps to each.
    let prices = super::config::prices();
    let mut calls: Vec<(u64, u32, u64)> = Vec::new();
    for i in 0..t.len() as u32 {
        let e = t.event(i);
        if e.kind != EventKind::LlmCall {
            continue;
        }
        let own = t.str(e.model);
        let model = if own.is_empty() {
            t.meta.model.as_deref()
        } else {
            Some(own)
        };
        let u = e.usage.get();
        if let Some(m) = crate::cost::usage::call_cost(prices, model, u.as_ref()).micros {
            let tok = u.as_ref().and_then(|u| u.sum()).unwrap_or(0);
            calls.push((m, i, tok));
        }
    }
    calls.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    calls.retain(|c| c.0 > 0);
    if !calls.is_empty() {
        out.push(Row::blank());
        out.push(Row::section(
            "costliest LLM calls (enter: go to)",
            &["", "TOKENS", "COST"],
        ));
        for &(m, i, tok) in calls.iter().take(TOP) {
            out.push(Row::text(
                call_label(t, i),
                vec![String::new(), tokens(tok), dollars(m)],
                Role::Text,
                Some(i),
            ));
        }
    }
    let mut res: Vec<&crate::cost::attribution::ResultCost> =
        a.results.iter().filter(|r| r.direct + r.carried > 0).collect();
    res.sort_by(|a, b| {
        (b.direct + b.carried)
            .cmp(&(a.direct + a.carried))
            .then(a.event.cmp(&b.event))
    });
    if !res.is_empty() {
        out.push(Row::blank());
        out.push(Row::section(
            "costliest results (enter: go to)",
            &["TOKENS", "DIRECT", "CARRIED"],
        ));
        for r in res.into_iter().take(TOP) {
            let label = format!(
                "{} · re-sent {}×, tokens by {}",
                call_label(t, r.event),
                thousands(r.resent as u64),
                r.method.as_str()
            );
            out.push(Row::text(
                label,
                vec![tokens(r.tokens), dollars(r.direct), dollars(r.carried)],
                Role::Text,
                Some(r.event),
            ));
        }
    }
    out
}

/// `#12 Bash: cargo test` (the call's place in the run's events, its name and gist).
fn call_label(t: &Trace, i: u32) -> String {
    let e = t.event(i);
    let name = crate::sanitize::line(t.str(e.name)).into_owned();
    let what = if e.kind == EventKind::ToolCall {
        crate::formats::gist::of(t, e)
            .map(|g| format!("{name}: {}", crate::sanitize::line(&g)))
            .unwrap_or(name)
    } else {
        let m = t.str(e.model);
        if m.is_empty() || name.contains(m) {
            name
        } else {
            format!("{name} {}", crate::sanitize::line(m))
        }
    };
    format!("#{} {what}", i)
}

/// The first row shown: `offset`, moved so that the selection is in view.
pub fn first_row(v: &CostView, h: usize) -> usize {
    let max = v.rows.len().saturating_sub(h);
    let mut o = v.offset.min(max);
    if let Some(s) = v.selected {
        if s < o {
            // The section's heading above the first row of a section comes into view too.
            o = s.saturating_sub(1);
        } else if s >= o + h {
            o = s + 1 - h;
        }
    }
    o.min(max)
}

/// Keys while the view is open: moves between the rows that jump, Enter jumps, `$` or Esc
/// closes. Whether the key was the view's.
pub fn command(s: &mut State, c: Command, page: usize) -> bool {
    let Some(v) = s.run_cost.as_mut() else { return false };
    match c {
        c if is_move(c) => {
            let sel = v.selectable();
            if sel.is_empty() {
                // Nothing to select: the keys scroll.
                v.offset = move_sel(v.offset, v.rows.len(), c, page);
                return true;
            }
            let cur = v.selected.and_then(|s| sel.iter().position(|&x| x == s)).unwrap_or(0);
            let next = move_sel(cur, sel.len(), c, page);
            v.selected = Some(sel[next]);
            // Top: the view's own top (its totals), not only the first call.
            v.offset = if c == Command::Top { 0 } else { first_row(v, page) };
            true
        }
        Command::Open => {
            let ev = v.selected.and_then(|i| v.rows[i].event);
            s.run_cost = None;
            if let (Some(ev), Some(r)) = (ev, s.run.as_mut()) {
                go_to(r, ev);
            }
            true
        }
        Command::Back | Command::Stats => {
            s.run_cost = None;
            true
        }
        // Help opens over the view; closed, the view is there again.
        Command::Help | Command::Quit => false,
        _ => true,
    }
}

/// Select `ev` in the tree, its collapsed ancestors expanded, the tree focused.
pub(super) fn go_to(r: &mut RunView, ev: u32) {
    super::nav::reveal(r, ev);
    if let Some(p) = r.rows.iter().position(|row| row.ev == ev) {
        r.selected = p;
    }
    r.focus = Pane::Tree;
    r.zoom = false;
}

/// A run's attribution, by the run's source, id and length.
type Memo = Option<(std::path::PathBuf, String, usize, std::rc::Rc<Attribution>)>;

thread_local! {
    /// The last run's attribution (a tool call's detail shows its result's cost; moving
    /// through a run's calls makes it once).
    static LAST: std::cell::RefCell<Memo> = const { std::cell::RefCell::new(None) };
}

/// The attribution of `t` (made once per run and length on this thread).
pub fn attribution_of(t: &Trace) -> std::rc::Rc<Attribution> {
    LAST.with(|m| {
        let mut m = m.borrow_mut();
        if let Some((src, id, len, a)) = m.as_ref()
            && *src == t.meta.source
            && *id == t.meta.id
            && *len == t.len()
        {
            return a.clone();
        }
        let a = std::rc::Rc::new(attribute(t, super::config::prices()));
        *m = Some((t.meta.source.clone(), t.meta.id.clone(), t.len(), a.clone()));
        a
    })
}

/// A tool call's result's cost, for its detail: `direct $0.0057 · carried $0.0120 on 14
/// later calls · ≈1,900 tok (usage delta)`; None for a call with no result read by a later
/// call, or a run with no cost.
pub fn result_cost_text(t: &Trace, ev: u32) -> Option<String> {
    if t.event(ev).kind != EventKind::ToolCall {
        return None;
    }
    let a = attribution_of(t);
    if a.cost.total.micros == 0 {
        return None;
    }
    let r = a.results.iter().find(|r| r.event == ev)?;
    Some(format!(
        "direct {} · carried {} on {} later {} · ≈{} (by {})",
        dollars(r.direct),
        dollars(r.carried),
        thousands(r.resent as u64),
        if r.resent == 1 { "call" } else { "calls" },
        tokens(r.tokens),
        r.method.as_str()
    ))
}
