//! The runs list: one row per run with status, name, format, start, duration and counts.

use super::fields::{Field, fit_text};
use super::{block, fit, num, put};
use crate::model::thousands;
use crate::model::{RunStatus, format_duration, format_ts};
use crate::tui::layout;
use crate::tui::state::{HEADER, State};
use crate::tui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Widget;
use unicode_width::UnicodeWidthStr;

pub fn status_cell(s: RunStatus) -> (&'static str, Role) {
    match s {
        RunStatus::Running => ("● live", Role::Running),
        RunStatus::Ok => ("✔ ok", Role::Ok),
        RunStatus::Error => ("✖ error", Role::Error),
        RunStatus::Unknown => ("? unknown", Role::Unknown),
    }
}

/// A column: its title, and whether it is a number (right-aligned, with shorter forms).
struct Col {
    title: &'static str,
    number: bool,
}

const fn col(title: &'static str, number: bool) -> Col {
    Col { title, number }
}

/// Optional columns. AGENT is the format.
const COLS: [Col; NCOLS] = [
    col("AGENT", false),
    col("PROJECT", false),
    col("START (UTC)", false),
    col("DURATION", true),
    col("TOOLS", true),
    col("LLM", true),
    col("ERR", true),
    col("TOKENS", true),
    col("COST", true),
    col("ID", false),
];
const NCOLS: usize = 10;
const AGENT: usize = 0;
const PROJECT: usize = 1;
const START: usize = 2;
const DURATION: usize = 3;
const TOOLS: usize = 4;
const LLM: usize = 5;
const ERR: usize = 6;
const TOKENS: usize = 7;
const COST: usize = 8;
const ID: usize = 9;
/// Widths of the text columns (AGENT, PROJECT; START is a time, never cut: 19 or nothing).
const TEXT_W: [u16; 3] = [12, 18, 19];
/// What a narrow screen gives up, in order: the lower-priority columns go, then the numbers
/// shorten (`34.4M`, `$113`) one column and one step at a time, then number columns go. A
/// number is never cut.
enum Step {
    Drop(usize),
    Shorten(usize),
}
const STEPS: [Step; 20] = [
    Step::Drop(START),
    Step::Drop(PROJECT),
    Step::Drop(AGENT),
    Step::Shorten(TOKENS),
    Step::Shorten(COST),
    Step::Shorten(TOKENS),
    Step::Shorten(COST),
    Step::Shorten(TOOLS),
    Step::Shorten(LLM),
    Step::Shorten(ERR),
    Step::Shorten(TOOLS),
    Step::Shorten(LLM),
    Step::Shorten(ERR),
    Step::Shorten(COST),
    Step::Drop(TOKENS),
    Step::Drop(COST),
    Step::Drop(LLM),
    Step::Drop(DURATION),
    Step::Drop(TOOLS),
    Step::Drop(ERR),
];
/// The count columns: shown dim with `~` while they are a run's metadata (not loaded).
const COUNT_COLS: [usize; 4] = [TOOLS, LLM, ERR, TOKENS];

/// The sort as the title says it (`newest first`, `oldest first` when reversed, ...).
pub fn sort_label(r: &crate::tui::state::RunsState) -> String {
    use crate::tui::state::RunSort;
    match (r.sort, r.reversed) {
        (_, false) => r.sort.label().to_string(),
        (RunSort::Start, true) => "oldest first".into(),
        (RunSort::Name, true) => "by name, Z to A".into(),
        (RunSort::Duration, true) => "shortest first".into(),
        (RunSort::Tokens, true) => "fewest tokens first".into(),
        (RunSort::Cost, true) => "cheapest first".into(),
    }
}

/// Tokens and cost of the listed runs for the title: `12,345 tok · $0.42`, with how many
/// runs are not loaded yet (their tokens and cost are not known: `$` loads them).
fn totals(r: &crate::tui::state::RunsState) -> Vec<Field> {
    let mut t = crate::cost::usage::Total::default();
    let mut tokens = 0u64;
    let mut provisional = 0;
    for i in r.order.iter().filter(|&&i| i & HEADER == 0) {
        let sm = &r.entries[*i].summary;
        match &sm.cost {
            Some(c) if !sm.provisional() => {
                t.merge(c);
                tokens = tokens.saturating_add(sm.tokens.unwrap_or(0));
            }
            _ => provisional += 1,
        }
    }
    if provisional == r.shown() {
        return Vec::new(); // nothing loaded: nothing to add up
    }
    let mut out = Vec::new();
    // Runs with no LLM usage at all (`0 tok · -`) have nothing to add up.
    // While runs are being indexed the sums are lower bounds (a cost with unpriced calls says
    // `≥` already).
    // So are they while a store's list holds more runs than are listed.
    let at_least = (provisional > 0 && r.indexing.is_some()) || r.more;
    let mark = |forms: Vec<String>| -> Vec<String> {
        if !at_least {
            return forms;
        }
        forms
            .into_iter()
            .map(|f| if f.starts_with('≥') { f } else { format!("≥{f}") })
            .collect()
    };
    if tokens > 0 || t.micros > 0 || t.unknown > 0 {
        out.push(Field::number(&mark(num::count_forms(tokens)), Role::Title, "tok", 4));
        out.push(Field::number(&mark(num::cost_forms(&t)), Role::Title, "", 4));
    }
    if provisional > 0 && r.indexing.is_none() {
        let n = thousands(provisional as u64);
        out.push(
            Field::text(format!("({n} not loaded: $)"), Role::Title)
                .or(2, vec![(format!("({n} not loaded)"), Role::Title)]),
        );
    }
    out
}

/// The box title: how many runs and how sorted, what narrows the list, the totals. Fitted to
/// `width`: notes go first, then the totals shorten; a number is never cut.
pub(crate) fn title(r: &crate::tui::state::RunsState, width: usize) -> String {
    let mut count = num::count_forms(r.shown() as u64);
    if r.more {
        // A store's list with pages not loaded: a lower bound.
        count = count.into_iter().map(|f| format!("≥{f}")).collect();
    }
    let mut parts = vec![
        Field::labelled("runs", &count, 6),
        Field::text(sort_label(r), Role::Title).drop_at(2),
    ];
    // Runs not indexed yet have no value to sort on: the sort says so, whatever else goes.
    if let Some(n) = r.partial_sort() {
        let n = thousands(n as u64);
        parts.push(
            Field::text(format!("partial: {n} not indexed yet, last"), Role::Title)
                .or(3, vec![(format!("partial: {n} last"), Role::Title)]),
        );
    }
    if let Some(t) = r.index_text() {
        parts.push(Field::text(t, Role::Title));
    }
    if r.all_places {
        // Another machine's places (`tracetui ssh://host`) say whose they are.
        let t = match crate::source::ssh::places_of() {
            Some(host) => format!("every agent's place on {}", crate::sanitize::line(&host)),
            None => "every agent's place".into(),
        };
        parts.push(Field::text(t, Role::Title).drop_at(1));
    }
    if r.grouped {
        parts.push(Field::text("grouped", Role::Title).drop_at(1));
    }
    if !r.filter.is_empty() {
        parts.push(Field::text(format!("filter {}", crate::sanitize::line(&r.filter)), Role::Title).drop_at(5));
    }
    if r.payload.active() {
        // The payload search's progress, then how many runs it found.
        let found = r.payload.counts.iter().filter(|&&n| n > 0).count();
        parts.push(Field::text(
            if r.payload.running() {
                format!(
                    "searching {}/{} · {found} found",
                    thousands(r.payload.done as u64),
                    thousands(r.payload.total as u64)
                )
            } else {
                format!("{} with matches", crate::report::count(found, "run"))
            },
            Role::Title,
        ));
    }
    if !r.problems.is_empty() && !r.entries.is_empty() {
        parts.push(Field::text(
            format!("{} unreadable (!)", thousands(r.problems.len() as u64)),
            Role::Title,
        ));
    }
    if r.skipped.any() {
        parts.push(
            Field::text(
                format!("{} not searched (!)", crate::report::count(r.skipped.dirs(), "dir")),
                Role::Title,
            )
            .drop_at(2),
        );
    }
    parts.extend(totals(r));
    let text = fit_text(&mut parts, " · ", width.saturating_sub(2));
    if text.is_empty() {
        String::new()
    } else {
        format!(" {text} ")
    }
}

const STATUS_W: u16 = 10;
/// The names keep this much before the optional columns go (a name of 18 was too often cut).
const NAME_MIN: u16 = 26;
/// The ID column is shown only when the names keep their whole width besides it, up to
/// this much.
const NAME_ROOMY: u16 = 56;
const ID_MIN: u16 = 8;
const ID_MAX: u16 = 36;

/// A run's optional cells, each as its forms, longest first (a text has one; sanitized).
fn cells(s: &State, ei: usize) -> [Vec<String>; NCOLS] {
    let r = &s.runs;
    let sm = &r.entries[ei].summary;
    let prov = sm.provisional();
    let dash = || vec!["-".to_string()];
    // A run not loaded shows its metadata counts, marked `~` (the loaded ones may differ).
    let count = |n: Option<u64>| -> Vec<String> {
        n.map(|v| {
            num::count_forms(v)
                .into_iter()
                .map(|f| crate::report::ls::provisional(f, prov))
                .collect()
        })
        .unwrap_or_else(dash)
    };
    let project = r.project(ei);
    let text = |t: &str| vec![crate::sanitize::line(t).into_owned()];
    [
        text(sm.format),
        text(if project.is_empty() { "." } else { project }),
        vec![
            sm.start
                .map(|t| {
                    let s = format_ts(t);
                    s.get(..19).unwrap_or(&s).to_string()
                })
                .unwrap_or_else(|| "-".into()),
        ],
        vec![sm.duration.map(format_duration).unwrap_or_else(|| "-".into())],
        count(sm.tool_calls.map(|n| n as u64)),
        count(sm.llm_calls.map(|n| n as u64)),
        count(sm.errors.map(|n| n as u64)),
        count(sm.tokens.filter(|t| *t > 0)),
        sm.cost.as_ref().map(num::cost_forms).unwrap_or_else(dash),
        text(&sm.id),
    ]
}

/// Which optional columns are shown, how wide, and the name's width.
pub struct Columns {
    shown: [bool; NCOLS],
    width: [u16; NCOLS],
    name_w: u16,
}

/// Fit the columns to `inner` cells: everything at full length when it fits next to a name
/// of NAME_MIN, else [`STEPS`] in order; the ID column only when
/// the names keep their width (up to NAME_ROOMY).
fn columns(s: &State, inner: u16) -> Columns {
    let r = &s.runs;
    let rows: Vec<usize> = r.order.iter().copied().filter(|&i| i & HEADER == 0).collect();
    // Per column, the width of each step of shortening: the widest cell at that step.
    let mut levels: [Vec<u16>; NCOLS] = Default::default();
    for &ei in &rows {
        for (i, forms) in cells(s, ei).iter().enumerate() {
            if !COLS[i].number {
                continue;
            }
            let l = &mut levels[i];
            if l.len() < forms.len() {
                let last = l.last().copied().unwrap_or(0);
                l.resize(forms.len(), last);
            }
            for k in 0..l.len() {
                let f = &forms[k.min(forms.len() - 1)];
                l[k] = l[k].max(f.width() as u16);
            }
        }
    }
    let id_w = rows
        .iter()
        .map(|&ei| r.entries[ei].summary.id.width() as u16)
        .max()
        .unwrap_or(0)
        .clamp(ID_MIN, ID_MAX);
    let mut level = [0usize; NCOLS];
    let width_of = |i: usize, level: &[usize; NCOLS]| -> u16 {
        let title = COLS[i].title.width() as u16;
        let content = match i {
            AGENT | PROJECT | START => TEXT_W[i],
            ID => id_w,
            _ => levels[i].get(level[i]).or(levels[i].last()).copied().unwrap_or(1),
        };
        title.max(content)
    };
    let mut shown = [true; NCOLS];
    shown[ID] = false;
    // One project for every run (a single directory of runs) tells nothing: START keeps its room.
    let mut projects = rows.iter().map(|&i| r.project(i));
    if let Some(first) = projects.next()
        && projects.all(|p| p == first)
    {
        shown[PROJECT] = false;
    }
    // No listed run with a cost (none loaded, or none made LLM calls with usage): COST
    // would be a column of dashes, and gives its room to the names.
    let costs = rows.iter().any(|&i| {
        r.entries[i]
            .summary
            .cost
            .as_ref()
            .is_some_and(|c| c.micros > 0 || c.unknown > 0)
    });
    if !costs {
        shown[COST] = false;
    }
    let fixed = |shown: &[bool; NCOLS], level: &[usize; NCOLS]| -> u16 {
        STATUS_W
            + (0..NCOLS)
                .filter(|&i| shown[i])
                .map(|i| width_of(i, level) + 1)
                .sum::<u16>()
    };
    let mut gave_up = false;
    for step in &STEPS {
        if inner >= fixed(&shown, &level) + 1 + NAME_MIN {
            break;
        }
        gave_up = true;
        match *step {
            Step::Drop(i) => shown[i] = false,
            Step::Shorten(i) => level[i] = (level[i] + 1).min(levels[i].len().saturating_sub(1)),
        }
    }
    // The id, after every column that matters more, when the names keep their room.
    // It is as wide as the widest id (up to ID_MAX, a uuid) and shown only whole.
    let names = rows
        .iter()
        .map(|&ei| {
            let sm = &r.entries[ei].summary;
            let badges: usize = sm.badges.iter().map(|b| b.width() + 3).sum();
            (r.label(ei).width() + 2 + badges) as u16
        })
        .max()
        .unwrap_or(0)
        .min(NAME_ROOMY);
    let spare = inner.saturating_sub(fixed(&shown, &level) + 1 + names.max(NAME_MIN));
    if spare > id_w && !gave_up {
        shown[ID] = true;
    }
    let mut width = [0u16; NCOLS];
    for (i, w) in width.iter_mut().enumerate() {
        *w = width_of(i, &level);
    }
    let name_w =
        inner.saturating_sub(STATUS_W + (0..NCOLS).filter(|&i| shown[i]).map(|i| width[i] + 1).sum::<u16>() + 1);
    Columns { shown, width, name_w }
}

/// `t` and spaces to `w` display cells (CJK letters are two), right-aligned for a number;
/// then the space between columns.
fn pad(t: &str, w: usize, right: bool) -> String {
    let fill = " ".repeat(w.saturating_sub(t.width()));
    if right {
        format!("{fill}{t} ")
    } else {
        format!("{t}{fill} ")
    }
}

pub fn render(buf: &mut Buffer, area: Rect, s: &State, th: &Theme) {
    let r = &s.runs;
    // The corners and a cell each side stay border.
    let title = title(r, area.width.saturating_sub(4) as usize);
    block(Line::from(title), true, th).render(area, buf);
    let inner = layout::inner(area);
    let body = layout::body(area);
    if inner.height == 0 {
        return;
    }

    let cols = columns(s, inner.width);
    let (shown, width, name_w) = (cols.shown, cols.width, cols.name_w);

    let hs = th.style(Role::Header);
    let y = inner.y;
    let mut x = put(
        buf,
        inner.x,
        y,
        &format!("{:<w$}", "STATUS", w = STATUS_W as usize),
        hs,
        STATUS_W,
    );
    x = put(
        buf,
        x,
        y,
        &format!("{:<w$} ", "NAME", w = name_w as usize),
        hs,
        name_w + 1,
    );
    for i in (0..NCOLS).filter(|&i| shown[i]) {
        let (c, w) = (&COLS[i], width[i] as usize);
        let t = if c.number {
            format!("{:>w$} ", c.title)
        } else {
            format!("{:<w$} ", c.title)
        };
        x = put(buf, x, y, &t, hs, width[i] + 1);
    }

    if r.order.is_empty() {
        let msg: Vec<(String, Role)> = if r.scanning {
            vec![("looking for runs…".into(), Role::Dim)]
        } else if s.follow && r.filter.is_empty() {
            vec![(
                "waiting for runs to appear… (follow mode: a new run opens by itself)".into(),
                Role::Dim,
            )]
        } else if !r.filter.is_empty() {
            vec![(
                format!("no runs match {:?} (esc clears the filter)", r.filter),
                Role::Dim,
            )]
        } else if r.problems.is_empty() && r.all_places {
            vec![(
                "no runs in the places agents write to (tracetui sources lists them; tracetui PATH opens others)"
                    .into(),
                Role::Dim,
            )]
        } else if r.problems.is_empty() {
            vec![("no runs found".into(), Role::Dim)]
        } else {
            r.problems.iter().map(|(_, p)| (p.clone(), Role::Error)).collect()
        };
        for (i, (m, role)) in msg.iter().enumerate().take(body.height as usize) {
            put(
                buf,
                body.x + 1,
                body.y + i as u16,
                &crate::sanitize::line(m),
                th.style(*role),
                body.width - 1,
            );
        }
        return;
    }

    for (row, &ei) in r.order.iter().enumerate().skip(r.offset).take(body.height as usize) {
        let y = body.y + (row - r.offset) as u16;
        let selected = row == r.selected;
        if ei & HEADER != 0 {
            // A group header: the place (or PATH) the runs below were found in.
            let g = ei & !HEADER;
            let root = r.groups.get(g).map(|p| p.display().to_string()).unwrap_or_default();
            let agent = r
                .places
                .iter()
                .find(|p| r.groups.get(g).is_some_and(|x| **x == *p.path))
                .map(|p| format!("  {}", p.place.agent))
                .unwrap_or_default();
            let n = r.order[row + 1..].iter().take_while(|&&i| i & HEADER == 0).count();
            let text = format!("▾ {root}{agent} · {}", crate::report::count(n, "run"));
            let style = if selected {
                th.style(Role::Selection).patch(th.style(Role::Section))
            } else {
                th.style(Role::Section)
            };
            put(buf, body.x, y, &crate::sanitize::line(&text), style, body.width);
            continue;
        }
        let e = &s.runs.entries[ei];
        let base = if selected {
            th.style(Role::Selection)
        } else {
            Default::default()
        };
        if selected {
            buf.set_style(Rect { y, height: 1, ..body }, base);
        }
        let sm = &e.summary;
        let (st, role) = if e.is_stale(s.stale_after) {
            ("◌ stale", Role::Unknown)
        } else {
            status_cell(sm.status)
        };
        let mut x = put(
            buf,
            body.x,
            y,
            &format!("{st:<w$}", w = STATUS_W as usize),
            base.patch(th.style(role)),
            STATUS_W,
        );
        // The diff baseline (space) carries a badge before its name.
        // Runs selected for the compare table (x, v) carry one too.
        let badge = if r.mark == Some(ei) {
            "BASELINE "
        } else if crate::tui::compare::is_selected(s, ei) {
            "✓ "
        } else {
            ""
        };
        let bw = (unicode_width::UnicodeWidthStr::width(badge) as u16).min(name_w / 2);
        x = put(buf, x, y, badge, base.patch(th.style(Role::Mark)), bw);
        let name_w = name_w - bw;
        // A run that loaded with problems (damaged lines) says so before its name.
        let damaged = if sm.problems.is_some_and(|n| n > 0) || !sm.badges.is_empty() {
            "⚠ "
        } else {
            ""
        };
        let dw = (damaged.chars().count() as u16).min(name_w / 2);
        x = put(buf, x, y, damaged, base.patch(th.style(Role::Warning)), dw);
        let mut name_w = name_w - dw;
        // A badge (what is wrong with the run as a whole) ends the name column.
        // It leaves the name what it needs, up to 12 columns.
        let mut label = crate::sanitize::line(&r.label(ei)).into_owned();
        // The payload search's matches in this run, after its name.
        if r.payload.count(ei) > 0 {
            label.push_str(&format!(" [{}]", r.payload.count(ei)));
        }
        let badge = (!sm.badges.is_empty()).then(|| format!("  {}", crate::sanitize::line(&sm.badges.join(" · "))));
        let bw = badge.as_deref().map_or(0, |b| {
            let need = (unicode_width::UnicodeWidthStr::width(label.as_str()) as u16).min(12);
            (unicode_width::UnicodeWidthStr::width(b) as u16).min(name_w.saturating_sub(need))
        });
        name_w -= bw;
        let name = fit(&label, name_w as usize);
        x = put(
            buf,
            x,
            y,
            &pad(&name, name_w as usize, false),
            base.patch(th.style(Role::Text)),
            name_w,
        );
        if let Some(b) = &badge {
            x = put(
                buf,
                x,
                y,
                &pad(&fit(b, bw as usize), bw as usize, false),
                base.patch(th.style(Role::Warning)),
                bw,
            );
        }
        x = put(buf, x, y, " ", base.patch(th.style(Role::Text)), 1);
        let prov = sm.provisional();
        let cells = cells(s, ei);
        for i in (0..NCOLS).filter(|&i| shown[i]) {
            let w = width[i] as usize;
            let t = match i {
                // A project's end says most (`…-src-tracetui`).
                PROJECT => crate::report::ls::cut_front(&cells[i][0], w),
                _ if COLS[i].number => num::fit(&cells[i], w).to_string(),
                // An id is whole or not at all (a cut one would not resume anything).
                ID if cells[i][0].width() > w => String::new(),
                _ => fit(&cells[i][0], w),
            };
            let t = pad(&t, w, COLS[i].number);
            let role = if prov && COUNT_COLS.contains(&i) {
                Role::Dim
            } else if i == ERR && sm.errors.is_some_and(|n| n > 0) {
                Role::Error
            } else if i == ID {
                Role::Dim
            } else {
                Role::Text
            };
            x = put(buf, x, y, &t, base.patch(th.style(role)), width[i] + 1);
        }
        if selected {
            // The selection's colours win over each cell's own (readable in every theme).
            buf.set_style(Rect { y, height: 1, ..body }, base);
        }
    }
}
