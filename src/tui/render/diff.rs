//! The diff view: the header (verdict, counts, metric deltas, notes), then the aligned calls
//! side by side (one line per pair, a blank cell where a call was added or removed) or
//! inline (`-`/`+` lines, `~` rows with their path changes under them), or the detail of one
//! pair. Only visible rows are drawn.

use super::detail::role as tok_role;
use super::{block, fit, put};
use crate::diff::Op;
use crate::tui::detail::{self, kind_icon};
use crate::tui::diffview::{DiffData, DiffView, InlineLine, header, op_role};
use crate::tui::layout::{self, DiffLayout};
use crate::tui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

pub fn render(buf: &mut Buffer, l: &DiffLayout, v: &DiffView, th: &Theme) {
    let lines = header(v, l.header.width);
    let shown = l.header.height as usize;
    for (i, line) in lines.iter().take(shown).enumerate() {
        let y = l.header.y + i as u16;
        // A header cut by a short terminal says so on its last line.
        if i + 1 == shown && lines.len() > shown {
            let more = format!(" … {} more header lines in a taller terminal", lines.len() - i);
            put(buf, l.header.x, y, &more, th.style(Role::Dim), l.header.width);
            break;
        }
        let mut x = l.header.x + 1;
        let right = l.header.x + l.header.width;
        for (k, (role, text)) in line.iter().enumerate() {
            let mut st = th.style(*role);
            // The verdict is a badge.
            if k == 0 && i == 0 && v.data.is_some() {
                st = st.add_modifier(Modifier::REVERSED);
            }
            x = put(buf, x, y, text, st, right.saturating_sub(x));
        }
    }
    match (&v.data, &v.pair) {
        (Some(d), Some(_)) => pair(buf, l.rows, v, d, th),
        (Some(d), None) if v.inline => inline(buf, l.rows, v, d, th),
        (Some(d), None) => side_by_side(buf, l.rows, v, d, th),
        (None, _) => {
            let title = if v.error.is_some() {
                " diff failed "
            } else {
                " computing… "
            };
            block(Line::from(title), true, th).render(l.rows, buf);
            let inner = layout::inner(l.rows);
            for (i, n) in v.names.iter().enumerate().take(inner.height as usize) {
                let what = if i == 0 { "baseline " } else { "current  " };
                let x = put(
                    buf,
                    inner.x + 1,
                    inner.y + i as u16,
                    what,
                    th.style(Role::Dim),
                    inner.width,
                );
                put(
                    buf,
                    x,
                    inner.y + i as u16,
                    n,
                    th.style(Role::Text),
                    inner.width.saturating_sub(x - inner.x),
                );
            }
        }
    }
}

fn frame(buf: &mut Buffer, area: Rect, v: &DiffView, d: &DiffData, th: &Theme) {
    let title = format!(
        " {} call{} · {} ",
        d.len(),
        if d.len() == 1 { "" } else { "s" },
        if v.inline { "inline" } else { "side by side" }
    );
    block(Line::from(title), true, th)
        .title_bottom(Line::from(format!(" {}/{} ", (v.selected + 1).min(d.len()), d.len())).right_aligned())
        .render(area, buf);
}

/// A side's column header: `BASELINE booking (booking.snap) · agentsnap`.
fn side_title(d: &DiffData, baseline: bool) -> String {
    let (what, t) = if baseline {
        ("BASELINE", &d.a)
    } else {
        ("CURRENT", &d.b)
    };
    let name = if baseline {
        crate::tui::diffview::run_label(&d.a)
    } else {
        crate::tui::diffview::run_label(&d.b)
    };
    format!("{what} {name} · {}", t.meta.format)
}

fn empty_note(buf: &mut Buffer, body: Rect, th: &Theme) {
    put(
        buf,
        body.x + 1,
        body.y,
        "(no calls on either side)",
        th.style(Role::Dim),
        body.width.saturating_sub(1),
    );
}

fn side_by_side(buf: &mut Buffer, area: Rect, v: &DiffView, d: &DiffData, th: &Theme) {
    frame(buf, area, v, d, th);
    let inner = layout::inner(area);
    let body = layout::body(area);
    if inner.height == 0 || inner.width < 8 {
        return;
    }
    // sign, left cell, separator, right cell
    let lw = (inner.width - 2 - 3) / 2;
    let rx = inner.x + 2 + lw + 3;
    let rw = inner.x + inner.width - rx;
    let hs = th.style(Role::Header);
    put(
        buf,
        inner.x + 2,
        inner.y,
        &fit(&side_title(d, true), lw as usize),
        hs,
        lw,
    );
    put(buf, inner.x + 2 + lw, inner.y, " │ ", th.style(Role::Border), 3);
    put(buf, rx, inner.y, &fit(&side_title(d, false), rw as usize), hs, rw);
    if d.is_empty() {
        empty_note(buf, body, th);
    }
    for (row, i) in (v.offset..d.len()).take(body.height as usize).enumerate() {
        let y = body.y + row as u16;
        let selected = i == v.selected;
        let base = row_base(buf, body, y, selected, th);
        let op = d.op(i);
        put(
            buf,
            inner.x,
            y,
            &format!("{} ", op.sign()),
            base.patch(th.style(op_role(op))),
            2,
        );
        cell(buf, inner.x + 2, y, lw, d, i, true, base, th);
        put(buf, inner.x + 2 + lw, y, " │ ", base.patch(th.style(Role::Border)), 3);
        cell(buf, rx, y, rw, d, i, false, base, th);
    }
}

/// One side of a row: `tools[0] ⚙ search_restaurants  args.limit: 10`, blank when the call
/// is not on this side.
#[allow(clippy::too_many_arguments)]
fn cell(buf: &mut Buffer, x: u16, y: u16, w: u16, d: &DiffData, i: usize, baseline: bool, base: Style, th: &Theme) {
    let (Some(ev), Some(label)) = (d.event(i, baseline), d.side_label(i, baseline)) else {
        return;
    };
    let t = if baseline { &d.a } else { &d.b };
    let e = t.event(ev);
    let op = d.op(i);
    let right = x + w;
    let mut at = put(buf, x, y, &format!("{label} "), base.patch(th.style(Role::Dim)), w);
    let name_role = match op {
        Op::Same => Role::Text,
        op => op_role(op),
    };
    at = put(
        buf,
        at,
        y,
        &format!("{} ", kind_icon(e.kind)),
        base.patch(th.style(name_role)),
        right.saturating_sub(at),
    );
    let name = crate::sanitize::line(t.name(ev)).into_owned();
    at = put(
        buf,
        at,
        y,
        &name,
        base.patch(th.style(name_role)),
        right.saturating_sub(at),
    );
    if e.is_error() {
        at = put(
            buf,
            at,
            y,
            " ✖",
            base.patch(th.style(Role::Error)),
            right.saturating_sub(at),
        );
    }
    // What the call did: a tool call's gist, an LLM call's tokens and cost.
    let room = right.saturating_sub(at + 2);
    if room > 2
        && let Some(g) = row_note(d, i, baseline, room as usize)
    {
        at = put(buf, at + 2, y, &g, base.patch(th.style(Role::Dim)), room);
    }
    let room = right.saturating_sub(at + 2);
    if room > 2 {
        let p = d.preview(i, baseline, room as usize);
        if !p.is_empty() {
            let role = if d.paths(i).is_empty() { Role::Dim } else { name_role };
            put(
                buf,
                at + 2,
                y,
                &fit(&p, room as usize),
                base.patch(th.style(role)),
                room,
            );
        }
    }
}

fn inline(buf: &mut Buffer, area: Rect, v: &DiffView, d: &DiffData, th: &Theme) {
    frame(buf, area, v, d, th);
    let inner = layout::inner(area);
    let body = layout::body(area);
    if inner.height == 0 {
        return;
    }
    let hs = th.style(Role::Header);
    let mut x = put(buf, inner.x, inner.y, "- ", th.style(Role::DiffRemoved), inner.width);
    let half = inner.width / 2;
    x = put(
        buf,
        x,
        inner.y,
        &fit(&side_title(d, true), half.saturating_sub(4) as usize),
        hs,
        half,
    );
    x = put(buf, x.max(inner.x + half), inner.y, "+ ", th.style(Role::DiffAdded), 2);
    put(
        buf,
        x,
        inner.y,
        &side_title(d, false),
        hs,
        (inner.x + inner.width).saturating_sub(x),
    );
    if d.is_empty() {
        empty_note(buf, body, th);
    }
    let right = body.x + body.width;
    for (row, line) in d.inline.iter().skip(v.offset).take(body.height as usize).enumerate() {
        let y = body.y + row as u16;
        let i = line.item();
        let op = d.op(i);
        match *line {
            InlineLine::Head(_) => {
                let selected = i == v.selected;
                let base = row_base(buf, body, y, selected, th);
                let role = match op {
                    Op::Same => Role::Text,
                    op => op_role(op),
                };
                let mut x = put(buf, body.x, y, &d.title(i), base.patch(th.style(role)), body.width);
                // The side the row's call is on: the current one when both are.
                let current = d.event(i, false).is_some();
                let t = if current { &d.b } else { &d.a };
                if let Some(ev) = d.event(i, !current)
                    && t.event(ev).is_error()
                {
                    x = put(
                        buf,
                        x,
                        y,
                        " ✖",
                        base.patch(th.style(Role::Error)),
                        right.saturating_sub(x),
                    );
                }
                // What the call did: the baseline's, and the current run's after an arrow
                // when it differs (a changed pair's paths follow it).
                let room = right.saturating_sub(x + 2);
                let note = match (d.gist(i, true), d.gist(i, false)) {
                    (Some(a), Some(b)) if a != b => Some(fit(&format!("{a} → {b}"), room as usize)),
                    _ => row_note(d, i, d.event(i, true).is_some(), room as usize),
                };
                if room > 2
                    && let Some(g) = note
                {
                    put(buf, x + 2, y, &g, base.patch(th.style(Role::Dim)), room);
                }
            }
            InlineLine::Path(_, k) => {
                let Some(p) = d.paths(i).get(k as usize) else { continue };
                let path = crate::sanitize::line(&p.path).into_owned();
                let short_strings = match (&p.from, &p.to) {
                    (Some(serde_json::Value::String(x)), Some(serde_json::Value::String(y))) => {
                        x.len() + y.len() <= super::super::diffview::INLINE_WORDS_MAX
                    }
                    _ => false,
                };
                // A short string change as its word diff on one line (` ⏎ ` between its lines).
                if short_strings && let Some(lines) = super::super::diffview::word_lines(p, d.words.context) {
                    let mut spans = vec![
                        Span::styled("      ", Style::default()),
                        Span::styled(path, th.style(Role::JsonKey)),
                        Span::styled(": ", th.style(Role::JsonPunct)),
                    ];
                    for (n, wl) in lines.iter().enumerate() {
                        if n > 0 {
                            spans.push(Span::styled(" ⏎ ", th.style(Role::Dim)));
                        }
                        for (m, t) in super::super::diffview::marked_pieces(wl, d.words.marks) {
                            let role = match m {
                                crate::diff::words::Mark::Equal => Role::Text,
                                crate::diff::words::Mark::Delete => Role::DiffRemoved,
                                crate::diff::words::Mark::Insert => Role::DiffAdded,
                                crate::diff::words::Mark::Elided => Role::Dim,
                            };
                            spans.push(Span::styled(t, th.style(role)));
                        }
                    }
                    buf.set_line(body.x, y, &Line::from(spans), body.width);
                    continue;
                }
                // Both values share the room left, so that the arrow and the new value show.
                let room = (body.width as usize).saturating_sub(6 + path.chars().count() + 5);
                let max = (room / 2).max(12);
                let val = |x: &Option<serde_json::Value>| {
                    x.as_ref()
                        .map_or("(absent)".to_string(), |v| crate::report::short(v, max))
                };
                let spans = vec![
                    Span::styled("      ", Style::default()),
                    Span::styled(path, th.style(Role::JsonKey)),
                    Span::styled(": ", th.style(Role::JsonPunct)),
                    Span::styled(val(&p.from), th.style(Role::DiffRemoved)),
                    Span::styled(" → ", th.style(Role::JsonPunct)),
                    Span::styled(val(&p.to), th.style(Role::DiffAdded)),
                ];
                buf.set_line(body.x, y, &Line::from(spans), body.width);
            }
            InlineLine::More(_, n) => {
                put(
                    buf,
                    body.x + 6,
                    y,
                    &format!("… and {n} more (enter shows all)"),
                    th.style(Role::Dim),
                    body.width.saturating_sub(6),
                );
            }
        }
    }
}

/// What a row's call did on one side, fitted to `room` cells: a tool call's gist (cut), an
/// LLM call's tokens and cost (shortened or dropped, never cut).
fn row_note(d: &DiffData, i: usize, baseline: bool, room: usize) -> Option<String> {
    if let Some(g) = d.gist(i, baseline) {
        return Some(fit(g, room));
    }
    let t = if baseline { &d.a } else { &d.b };
    let e = t.event(d.event(i, baseline)?);
    let parts = crate::tui::gist::llm_parts(t, e, crate::tui::config::prices());
    let (_, s) = crate::tui::gist::fit_numbers("", parts, room);
    let s = s.trim_start_matches(" · ");
    (!s.is_empty()).then(|| s.to_string())
}

/// The style a row starts from: the selection's, painted across the row, or none.
fn row_base(buf: &mut Buffer, body: Rect, y: u16, selected: bool, th: &Theme) -> Style {
    if !selected {
        return Style::default();
    }
    let base = th.style(Role::Selection);
    buf.set_style(Rect { y, height: 1, ..body }, base);
    base
}

fn pair(buf: &mut Buffer, area: Rect, v: &DiffView, d: &DiffData, th: &Theme) {
    let Some(p) = &v.pair else { return };
    let mut title = format!(
        " {} ",
        fit(d.title(p.item).trim_start(), area.width.saturating_sub(20) as usize)
    );
    if !v.wrap {
        title.push_str("· nowrap ");
    }
    let total = p.doc.len();
    let Some(inner) = super::detail::document_frame(buf, area, title, true, p.cursor, total, th) else {
        return;
    };
    let bottom = inner.y + inner.height;
    let mut y = inner.y;
    for i in p.offset..total {
        if y >= bottom {
            break;
        }
        let line = p.doc.line(i);
        let line = &*line;
        let rows: Vec<Vec<(detail::Tok, &str)>> = if v.wrap {
            detail::wrap(line, inner.width as usize)
        } else {
            vec![line.spans.iter().map(|(t, s)| (*t, s.as_str())).collect()]
        };
        for row in rows {
            if y >= bottom {
                break;
            }
            let spans: Vec<Span> = row
                .iter()
                .map(|(t, s)| Span::styled(*s, th.style(tok_role(*t))))
                .collect();
            if i == p.cursor {
                buf.set_style(Rect { y, height: 1, ..inner }, th.style(Role::Cursor));
            }
            buf.set_line(inner.x, y, &Line::from(spans), inner.width);
            y += 1;
        }
    }
}
