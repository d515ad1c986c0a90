//! The runs list: one row per run with status, name, format, start, duration and counts.

use super::{block, fit, put};
use crate::model::{RunStatus, format_duration, format_ts};
use crate::tui::layout;
use crate::tui::state::{HEADER, State};
use crate::tui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Widget;

pub fn status_cell(s: RunStatus) -> (&'static str, Role) {
    match s {
        RunStatus::Running => ("● live", Role::Running),
        RunStatus::Ok => ("✔ ok", Role::Ok),
        RunStatus::Error => ("✖ error", Role::Error),
        RunStatus::Unknown => ("? unknown", Role::Unknown),
    }
}

struct Col {
    title: &'static str,
    width: u16,
    right: bool,
}

const fn col(title: &'static str, width: u16, right: bool) -> Col {
    Col { title, width, right }
}

/// Optional columns, dropped in DROP_ORDER when the screen is narrow. AGENT is the format.
const COLS: [Col; 9] = [
    col("AGENT", 12, false),
    col("PROJECT", 18, false),
    col("START (UTC)", 19, false),
    col("DURATION", 9, true),
    col("TOOLS", 6, true),
    col("LLM", 5, true),
    col("ERR", 5, true),
    col("TOKENS", 9, true),
    col("COST", 10, true),
];
const DROP_ORDER: [usize; 9] = [2, 1, 0, 7, 8, 5, 3, 4, 6];
/// The count columns: shown dim with `~` while they are a run's metadata (not loaded).
const COUNT_COLS: [usize; 4] = [4, 5, 6, 7];

/// The sort as the title says it (`newest first`, `oldest first` when reversed, ...).
pub fn sort_label(r: &crate::tui::state::RunsState) -> String {
    use crate::tui::state::RunSort;
    let label = match (r.sort, r.reversed) {
        (_, false) => r.sort.label().to_string(),
        (RunSort::Start, true) => "oldest first".into(),
        (RunSort::Name, true) => "by name, Z to A".into(),
        (RunSort::Duration, true) => "shortest first".into(),
        (RunSort::Tokens, true) => "fewest tokens first".into(),
        (RunSort::Cost, true) => "cheapest first".into(),
    };
    // Runs not indexed yet have no value to sort on: the sort says so.
    match r.partial_sort() {
        Some(n) => format!(
            "{label} (partial: {} not indexed yet, last)",
            crate::model::thousands(n as u64)
        ),
        None => label,
    }
}

/// Tokens and cost of the listed runs for the title: `· 12,345 tok · $0.42`, with how many
/// runs are not loaded yet (their tokens and cost are not known: `$` loads them).
fn totals(r: &crate::tui::state::RunsState) -> String {
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
        return String::new(); // nothing loaded: nothing to add up
    }
    // While runs are being indexed the sums are lower bounds.
    let at_least = if provisional > 0 && r.indexing.is_some() {
        "≥"
    } else {
        ""
    };
    let cost = crate::report::stats::cost_cell(&t);
    // A cost with unpriced calls says `≥` already.
    let cost_at_least = if cost.starts_with('≥') { "" } else { at_least };
    let mut out = format!("· {at_least}{tokens} tok · {cost_at_least}{cost} ");
    if provisional > 0 && r.indexing.is_none() {
        out.push_str(&format!("({provisional} not loaded: $) "));
    }
    out
}
/// The ERR column (red when a run has errors).
const ERR_COL: usize = 6;
const STATUS_W: u16 = 10;
const NAME_MIN: u16 = 18;

pub fn render(buf: &mut Buffer, area: Rect, s: &State, th: &Theme) {
    let r = &s.runs;
    let mut title = format!(" runs {} · {} ", r.shown(), sort_label(r));
    if let Some(t) = r.index_text() {
        title.push_str(&format!("· {t} "));
    }
    if r.all_places {
        title.push_str("· every agent's place ");
    }
    if r.grouped {
        title.push_str("· grouped ");
    }
    if !r.filter.is_empty() {
        title.push_str(&format!("· filter {} ", crate::sanitize::line(&r.filter)));
    }
    if r.payload.active() {
        // The payload search's progress, then how many runs it found.
        let found = r.payload.counts.iter().filter(|&&n| n > 0).count();
        if r.payload.running() {
            title.push_str(&format!(
                "· searching {}/{} · {found} found ",
                r.payload.done, r.payload.total
            ));
        } else {
            title.push_str(&format!("· {} with matches ", crate::report::count(found, "run")));
        }
    }
    if !r.problems.is_empty() && !r.entries.is_empty() {
        title.push_str(&format!("· {} unreadable (!) ", r.problems.len()));
    }
    if r.skipped.any() {
        title.push_str(&format!(
            "· {} not searched (!) ",
            crate::report::count(r.skipped.dirs(), "dir")
        ));
    }
    title.push_str(&totals(r));
    block(Line::from(title), true, th).render(area, buf);
    let inner = layout::inner(area);
    let body = layout::body(area);
    if inner.height == 0 {
        return;
    }

    // Which optional columns fit next to a name of at least NAME_MIN cells.
    let mut shown = [true; 9];
    // One project for every run (a single directory of runs) tells nothing: START keeps its room.
    let mut projects = r.order.iter().filter(|&&i| i & HEADER == 0).map(|&i| r.project(i));
    if let Some(first) = projects.next()
        && projects.all(|p| p == first)
    {
        shown[1] = false;
    }
    // No listed run with a cost (none loaded, or none made LLM calls with usage): COST
    // would be a column of dashes, and gives its room to the names.
    let costs = r.order.iter().filter(|&&i| i & HEADER == 0).any(|&i| {
        r.entries[i]
            .summary
            .cost
            .as_ref()
            .is_some_and(|c| c.micros > 0 || c.unknown > 0)
    });
    if !costs {
        shown[8] = false;
    }
    let fixed = |shown: &[bool; 9]| -> u16 {
        STATUS_W
            + COLS
                .iter()
                .zip(shown)
                .filter(|(_, s)| **s)
                .map(|(c, _)| c.width + 1)
                .sum::<u16>()
    };
    for &d in &DROP_ORDER {
        if inner.width >= fixed(&shown) + NAME_MIN {
            break;
        }
        shown[d] = false;
    }
    let name_w = inner.width.saturating_sub(fixed(&shown) + 1);

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
    for (c, _) in COLS.iter().zip(shown).filter(|(_, s)| *s) {
        let t = if c.right {
            format!("{:>w$} ", c.title, w = c.width as usize)
        } else {
            format!("{:<w$} ", c.title, w = c.width as usize)
        };
        x = put(buf, x, y, &t, hs, c.width + 1);
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
            &format!("{name:<w$}", w = name_w as usize),
            base.patch(th.style(Role::Text)),
            name_w,
        );
        if let Some(b) = &badge {
            x = put(
                buf,
                x,
                y,
                &format!("{:<w$}", fit(b, bw as usize), w = bw as usize),
                base.patch(th.style(Role::Warning)),
                bw,
            );
        }
        x = put(buf, x, y, " ", base.patch(th.style(Role::Text)), 1);
        // A run not loaded shows its metadata counts, marked `~` (the loaded ones may differ).
        let prov = sm.provisional();
        let num = |n: Option<usize>| {
            crate::report::ls::provisional(n.map(|v| v.to_string()).unwrap_or_else(|| "-".into()), prov)
        };
        let project = r.project(ei);
        let cells = [
            sm.format.to_string(),
            if project.is_empty() {
                ".".into()
            } else {
                project.to_string()
            },
            sm.start
                .map(|t| {
                    let s = format_ts(t);
                    s.get(..19).unwrap_or(&s).to_string()
                })
                .unwrap_or_else(|| "-".into()),
            sm.duration.map(format_duration).unwrap_or_else(|| "-".into()),
            num(sm.tool_calls),
            num(sm.llm_calls),
            num(sm.errors),
            crate::report::ls::provisional(
                sm.tokens
                    .filter(|t| *t > 0)
                    .map(|t| t.to_string())
                    .unwrap_or_else(|| "-".into()),
                prov,
            ),
            sm.cost
                .as_ref()
                .map(crate::report::stats::cost_cell)
                .unwrap_or_else(|| "-".into()),
        ];
        for (i, (c, text)) in COLS.iter().zip(cells).enumerate() {
            if !shown[i] {
                continue;
            }
            // A project's end says most (`…-src-tracetui`).
            let t = if i == 1 {
                crate::report::ls::cut_front(&crate::sanitize::line(&text), c.width as usize)
            } else {
                fit(&crate::sanitize::line(&text), c.width as usize)
            };
            let t = if c.right {
                format!("{t:>w$} ", w = c.width as usize)
            } else {
                format!("{t:<w$} ", w = c.width as usize)
            };
            let role = if prov && COUNT_COLS.contains(&i) {
                Role::Dim
            } else if i == ERR_COL && sm.errors.is_some_and(|n| n > 0) {
                Role::Error
            } else {
                Role::Text
            };
            x = put(buf, x, y, &t, base.patch(th.style(role)), c.width + 1);
        }
        if selected {
            // The selection's colours win over each cell's own (readable in every theme).
            buf.set_style(Rect { y, height: 1, ..body }, base);
        }
    }
}
