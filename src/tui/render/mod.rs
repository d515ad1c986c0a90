//! Views: everything is drawn from `&State`; nothing here changes it. Only what is visible
//! is touched, so a frame costs the same for ten events or a million.

mod cost;
mod detail;
mod diff;
mod export;
pub(crate) mod fields;
pub(crate) mod header;
pub(crate) mod help;
pub mod num;
pub(crate) mod runs;
mod stats;
mod tree;

use super::commands;
use super::layout;
use super::state::{State, View};
use super::theme::{Role, Theme};
use crate::model::Trace;
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};
use unicode_width::UnicodeWidthStr;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

pub fn render(f: &mut Frame, s: &State, th: &Theme) {
    let area = f.area();
    let buf = f.buffer_mut();
    if layout::too_small(area) {
        too_small(buf, area, th);
        return;
    }
    match (s.view, &s.run) {
        (View::Diff, _) if let Some(v) = &s.diff => {
            let l = super::diffview::update::diff_layout(s).unwrap_or_else(|| layout::diff(area, 1));
            let crumb = format!("diff {} ↔ {}", v.names[0], v.names[1]);
            title(buf, l.title, s, th, Some(&crumb), None);
            diff::render(buf, &l, v, th);
            footer(buf, l.footer, s, th);
        }
        (View::Stats, _) if let Some(v) = &s.stats => {
            let l = layout::runs(area);
            title(buf, l.title, s, th, Some("stats"), None);
            stats::render(buf, l.table, s, v, th);
            footer(buf, l.footer, s, th);
        }
        (View::Compare, _) if s.compare.is_some() => {
            let l = layout::diff(area, 0);
            title(buf, l.title, s, th, Some("compare"), None);
            let body = Rect {
                y: l.title.y + 1,
                height: area.height.saturating_sub(2),
                ..area
            };
            super::compare::render(buf, body, s, th);
            footer(buf, l.footer, s, th);
        }
        (View::Branches, _) if s.branches.is_some() => {
            let l = layout::diff(area, 0);
            title(buf, l.title, s, th, Some("branches"), None);
            let body = Rect {
                y: l.title.y + 1,
                height: area.height.saturating_sub(2),
                ..area
            };
            super::branches::render(buf, body, s, th);
            footer(buf, l.footer, s, th);
        }
        (View::Run, Some(r)) => {
            let mut l = layout::run(area);
            if r.zoom {
                l = layout::zoomed(l, r.focus == crate::tui::state::Pane::Detail);
            }
            {
                // One guard for the frame's view of the run: its parts show the same trace,
                // and no part takes the lock again (a second read guard on one thread
                // deadlocks with a waiting loader). Dropped before the footer, which reads it.
                let t = super::state::read(&r.trace);
                let mut name = t.meta.name.clone().unwrap_or_else(|| t.meta.id.clone());
                // The selected event's place in the tree: `runs › run › turn 3 › Task › Read`.
                if let Some(ev) = r.selected_event().filter(|&e| (e as usize) < t.len()) {
                    for c in crate::search::grep::breadcrumb(&t, ev) {
                        name.push_str(" › ");
                        name.push_str(&fit(&c, 40));
                    }
                }
                title(buf, l.title, s, th, Some(&name), Some(&t));
                header::render(buf, l.header, r, &t, th);
                // Zoomed: the other pane has no room and is not drawn.
                if !l.tree.is_empty() {
                    tree::render(buf, l.tree, r, &t, th);
                }
                if !l.detail.is_empty() {
                    detail::render(buf, l.detail, r, &t, th);
                }
                if let Some(v) = &s.run_cost {
                    let run = crate::sanitize::line(t.meta.name.as_deref().unwrap_or(&t.meta.id)).into_owned();
                    cost::render(buf, area, v, &run, th);
                }
            }
            footer(buf, l.footer, s, th);
        }
        _ => {
            let l = layout::runs(area);
            title(buf, l.title, s, th, None, None);
            runs::render(buf, l.table, s, th);
            footer(buf, l.footer, s, th);
        }
    }
    if let Some(offset) = s.help {
        help::render(buf, area, s, offset, th);
    }
    if let Some(p) = &s.export.prompt {
        export::render(buf, area, p, th);
    }
}

fn too_small(buf: &mut Buffer, area: Rect, th: &Theme) {
    let lines = vec![
        Line::styled("terminal too small", th.style(Role::Error)),
        Line::styled(
            format!(
                "{}x{} — tracetui needs at least {}x{}",
                area.width,
                area.height,
                layout::MIN_WIDTH,
                layout::MIN_HEIGHT
            ),
            th.style(Role::Text),
        ),
        Line::styled("enlarge the window, or press q to quit", th.style(Role::Dim)),
    ];
    let y = area.y + area.height.saturating_sub(3) / 2;
    Paragraph::new(lines).centered().render(
        Rect {
            y,
            height: 3.min(area.height),
            ..area
        },
        buf,
    );
}

/// Rows the run's cost view shows at once on a screen.
pub fn cost_height(screen: Rect, v: &crate::tui::cost_view::CostView) -> usize {
    cost::height(screen, v)
}

/// Write `text` at (x, y), at most `max` cells wide; returns the x after it.
pub(super) fn put(buf: &mut Buffer, x: u16, y: u16, text: &str, style: Style, max: u16) -> u16 {
    if max == 0 {
        return x;
    }
    let (end, _) = buf.set_stringn(x, y, text, max as usize, style);
    end
}

/// Right-align `text` so it ends at `right` (exclusive).
/// A value wider than `max` ends with `…` (cut without a mark, `+2924h10m` read `2924h10`).
pub(super) fn put_right(buf: &mut Buffer, right: u16, y: u16, text: &str, style: Style, max: u16) {
    let text = fit(text, max as usize);
    let w = (text.width() as u16).min(max);
    put(buf, right.saturating_sub(w), y, &text, style, w);
}

/// Cut to a display width from the left (a breadcrumb keeps its end: the selected event).
fn fit_left(s: &str, width: usize) -> String {
    if s.width() <= width || width < 2 {
        return s.to_string();
    }
    let mut tail = Vec::new();
    let mut w = 0;
    for c in s.chars().rev() {
        let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if w + cw + 2 > width {
            break;
        }
        tail.push(c);
        w += cw;
    }
    format!(" …{}", tail.into_iter().rev().collect::<String>())
}

/// Cut to a display width with an ellipsis.
pub(crate) fn fit(s: &str, width: usize) -> String {
    if s.width() <= width {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if w + cw + 1 > width {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

pub(super) fn block<'a>(title: Line<'a>, focused: bool, th: &Theme) -> Block<'a> {
    let (b, t) = if focused {
        (th.style(Role::BorderFocus), th.style(Role::BorderFocus))
    } else {
        (th.style(Role::Border), th.style(Role::Title))
    };
    Block::default()
        .borders(Borders::ALL)
        .border_style(b)
        .title(title.style(t))
}

/// `trace`: the open run's trace, when the caller holds its guard (the badge reads it).
fn title(buf: &mut Buffer, area: Rect, s: &State, th: &Theme, run: Option<&str>, trace: Option<&Trace>) {
    let mut x = put(buf, area.x, area.y, " tracetui ", th.style(Role::Title), area.width);
    let crumb = match run {
        Some(name) => format!(" runs › {}", crate::sanitize::line(name)),
        None => " runs".to_string(),
    };
    let badge = live_badge(s, trace);
    let bw = badge.as_ref().map(|(t, _)| t.width() as u16 + 1).unwrap_or(0);
    // the breadcrumb keeps at least 30 cells; the message is fitted first so that the
    // breadcrumb knows what is left (`› Bashcopied path` ran the two together)
    let status_max = area.width.saturating_sub(bw + 30).max(area.width / 3);
    let right = status_text(s).map(|(t, role)| (fit(&t, status_max as usize), role));
    // two cells stand between the breadcrumb and the message
    let rw = right.as_ref().map(|(t, _)| t.width() as u16 + 3).unwrap_or(0);
    let room = (area.x + area.width).saturating_sub(x + rw + bw);
    x = put(
        buf,
        x,
        area.y,
        &(if trace.is_some() {
            fit_left(&crumb, room as usize)
        } else {
            fit(&crumb, room as usize)
        }),
        th.style(Role::Text),
        room,
    );
    let _ = x;
    let end = area.x + area.width - 1;
    if let Some((t, role)) = &badge {
        put_right(buf, end, area.y, t, th.style(*role), area.width / 3);
    }
    if let Some((t, role)) = right {
        put_right(buf, end.saturating_sub(bw), area.y, &t, th.style(role), status_max);
    }
}

/// FOLLOW while the view keeps up with a live run, PAUSED when the selection left the bottom.
fn live_badge(s: &State, trace: Option<&Trace>) -> Option<(String, Role)> {
    let r = s.run.as_ref().filter(|r| {
        s.view == View::Run
            && match trace {
                Some(t) => r.followable_with(t, s.follow),
                None => r.followable(s.follow),
            }
    })?;
    Some(if r.following() {
        (" FOLLOW ".into(), Role::Badge)
    } else if r.live.unseen > 0 {
        (
            format!(" PAUSED · {} new below · F follows ", r.live.unseen),
            Role::Warning,
        )
    } else {
        (" PAUSED · F follows ".into(), Role::Warning)
    })
}

/// A progress bar of `w` cells.
fn bar(done: u64, total: u64, w: usize) -> String {
    let full = (done.min(total) as u128 * w as u128 / total.max(1) as u128) as usize;
    format!("{}{}", "█".repeat(full), "░".repeat(w - full))
}

/// 1.4 GB, 512.0 MB, 12 KB.
pub(super) fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.2} GB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{} KB", n >> 10),
        n => format!("{n} B"),
    }
}

/// The right side of the title bar: what is happening in the background, else a message.
fn status_text(s: &State) -> Option<(String, Role)> {
    let spin = SPINNER[(s.tick % SPINNER.len() as u64) as usize];
    if let Some(l) = &s.loading {
        return Some((format!("{spin} {l}…"), Role::Warning));
    }
    if let Some(r) = s.run.as_ref()
        && let Some(p) = r.live.loading
    {
        let pct = p.bytes.min(p.total) * 100 / p.total.max(1);
        return Some((
            format!(
                "loading {} {pct}% · {} of {} · {} events",
                bar(p.bytes, p.total, 10),
                bytes(p.bytes),
                bytes(p.total),
                r.counts.events
            ),
            Role::Warning,
        ));
    }
    if let Some(path) = &s.export.busy {
        return Some((format!("{spin} exporting to {path}…"), Role::Warning));
    }
    if let Some(m) = &s.message {
        return Some((
            crate::sanitize::line(&m.text).into_owned(),
            if m.error { Role::Error } else { Role::Info },
        ));
    }
    if s.view == View::Runs && s.runs.scanning {
        return Some((format!("{spin} looking for runs…"), Role::Warning));
    }
    if s.view == View::Diff && s.diff.as_ref().is_some_and(|d| d.computing()) {
        return Some((format!("{spin} diffing…"), Role::Warning));
    }
    if s.view == View::Run
        && let Some((done, total)) = s.run.as_ref().and_then(|r| r.filter.progress)
    {
        let pct = done * 100 / total.max(1);
        return Some((format!("{spin} searching payloads {pct}%"), Role::Warning));
    }
    None
}

fn footer(buf: &mut Buffer, area: Rect, s: &State, th: &Theme) {
    let right = area.x + area.width;
    if let Some(p) = &s.prompt {
        let mut x = put(buf, area.x, area.y, "/", th.style(Role::FooterKey), 1);
        x = put(
            buf,
            x,
            area.y,
            &crate::sanitize::line(&p.text),
            th.style(Role::Text),
            right.saturating_sub(x + 1),
        );
        put(buf, x, area.y, "▏", th.style(Role::Title), 1);
        let info = match (s.view, s.run.as_ref()) {
            (View::Run, Some(r)) if p.doc => {
                let sr = r.detail.as_ref().and_then(|d| d.search.as_ref());
                let n = sr.map_or(0, |x| x.hits.len());
                let what = match sr {
                    Some(x) if !x.query.is_empty() && n == 0 => "no match".to_string(),
                    Some(x) if !x.query.is_empty() => {
                        format!("{}/{} · enter keep · esc cancel", x.current.map_or(0, |i| i + 1), n)
                    }
                    _ => "search the detail (smart case: a capital letter makes it exact) · n/N step".into(),
                };
                (what, Role::FooterText)
            }
            (View::Run, Some(r)) => match &r.filter.error {
                Some(e) => (crate::sanitize::line(e).into_owned(), Role::Error),
                None if r.filter.active() => (
                    format!(
                        "{} · enter keep · esc cancel",
                        crate::report::count_as(r.filter.count, "match", "matches")
                    ),
                    Role::FooterText,
                ),
                None => (
                    "text  tool:NAME  kind:llm|tool|error  status:error|pending  model:X  !inverts".into(),
                    Role::FooterText,
                ),
            },
            _ => (
                format!(
                    "{} · enter keep · esc cancel",
                    crate::report::count(s.runs.shown(), "run")
                ),
                Role::FooterText,
            ),
        };
        let room = right.saturating_sub(x + 3);
        put_right(buf, right, area.y, &fit(&info.0, room as usize), th.style(info.1), room);
        return;
    }
    let mut x = area.x;
    for (key, label) in commands::footer(s.context(), &s.keys) {
        let need = (key.width() + label.width() + 3) as u16;
        if x + need > right {
            break;
        }
        x = put(buf, x, area.y, &format!(" {key} "), th.style(Role::FooterKey), need);
        x = put(buf, x, area.y, &format!(" {label} "), th.style(Role::FooterText), need);
    }
}

/// Spans of a line with the case-insensitive occurrences of `needles` in the match style.
pub(super) fn highlight<'a>(text: &'a str, base: Style, needles: &[&str], th: &Theme) -> Vec<Span<'a>> {
    let mut marks: Vec<(usize, usize)> = needles
        .iter()
        .flat_map(|n| crate::search::fuzzy::find_ci(text, n))
        .collect();
    if marks.is_empty() {
        return vec![Span::styled(text, base)];
    }
    marks.sort();
    let mut out = Vec::new();
    let mut at = 0;
    for (a, b) in marks {
        if a < at {
            continue;
        }
        if a > at {
            out.push(Span::styled(&text[at..a], base));
        }
        out.push(Span::styled(&text[a..b], base.patch(th.style(Role::Match))));
        at = b;
    }
    if at < text.len() {
        out.push(Span::styled(&text[at..], base));
    }
    out
}
