//! The detail pane: a window onto the selected event's document, wrapped or cut.

use super::{block, highlight};
use crate::model::Trace;
use crate::tui::detail::{self, Tok, kind_label};
use crate::tui::layout;
use crate::tui::state::{Pane, RunView};
use crate::tui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

pub(super) fn role(t: Tok) -> Role {
    match t {
        Tok::Text => Role::Text,
        Tok::Dim => Role::Dim,
        Tok::Heading => Role::Title,
        Tok::Section => Role::Section,
        Tok::Key => Role::JsonKey,
        Tok::Str => Role::JsonString,
        Tok::Num => Role::JsonNumber,
        Tok::Bool => Role::JsonBool,
        Tok::Null => Role::JsonNull,
        Tok::Punct => Role::JsonPunct,
        Tok::Error => Role::Error,
        Tok::Ok => Role::Ok,
        Tok::Pending => Role::Pending,
        Tok::Badge => Role::Badge,
    }
}

pub fn render(buf: &mut Buffer, area: Rect, r: &RunView, t: &Trace, th: &Theme) {
    let focused = r.focus == Pane::Detail;
    let Some(d) = &r.detail else {
        block(Line::from(" detail "), focused, th).render(area, buf);
        return;
    };
    let e = t.event(d.event);
    let mut title = if r.chat.shown {
        " transcript ".to_string()
    } else {
        format!(" {} ", kind_label(e.kind))
    };
    if r.chat.plain && !r.raw {
        title.push_str("· raw text ");
    }
    if r.raw {
        title.push_str("· raw ");
    }
    if !r.wrap {
        title.push_str("· nowrap ");
        if d.hscroll > 0 {
            title.push_str(&format!("· col {} ", d.hscroll + 1));
        }
    }
    if let Some(sr) = d.search.as_ref().filter(|x| !x.query.is_empty()) {
        let q = crate::report::cut(&crate::sanitize::line(&sr.query), 24);
        match (sr.current, sr.hits.len()) {
            (_, 0) => title.push_str(&format!("· /{q} no match ")),
            (Some(i), n) => title.push_str(&format!("· /{q} {}/{n} ", i + 1)),
            (None, n) => title.push_str(&format!("· /{q} {n} ")),
        }
    }
    let inner = layout::inner(area);
    // Laid out by `settle` at this width; a frame drawn before it (or a bench drawing a state
    // by hand) lays it out here.
    let fresh;
    let rows = match d.rows.as_ref() {
        Some(x) if x.width == inner.width.max(1) as usize && x.wrap == r.wrap => x,
        _ => {
            fresh = detail::Rows::new(&d.doc, inner.width.max(1) as usize, r.wrap);
            &fresh
        }
    };
    let total = rows.total();
    let Some(inner) = document_frame(buf, area, title, focused, d.cursor, total, th) else {
        return;
    };
    // A document search highlights its matches; else the event filter's words are.
    let search = d.search.as_ref().filter(|x| !x.query.is_empty());
    let needles: Vec<&str> = match search {
        Some(_) => Vec::new(),
        None => r
            .filter
            .query
            .as_ref()
            .map(|q| q.highlights().map(|(_, lower)| lower).collect())
            .unwrap_or_default(),
    };
    let current = search.and_then(|x| x.current.map(|i| x.hits[i]));
    let hit_style = th.style(Role::Match);
    let current_style = th.style(Role::Match).add_modifier(Modifier::REVERSED | Modifier::BOLD);
    for k in 0..inner.height as usize {
        let i = d.offset + k;
        let Some((li, ranges, indent)) = rows.ranges(&d.doc, i) else {
            break;
        };
        let line = d.doc.line(li);
        // Each piece styled by its token, matches cut out of it in the match style.
        let mut pieces: Vec<(Style, &str)> = Vec::with_capacity(ranges.len());
        for (si, a, b) in ranges {
            let (tok, text) = &line.spans[si];
            let base = th.style(role(*tok));
            let Some(sr) = search else {
                pieces.push((base, &text[a..b]));
                continue;
            };
            let key = |h: &detail::Hit| (h.line as usize, h.span as usize, h.end as usize);
            let mut at = sr.hits.partition_point(|h| key(h) <= (li, si, a));
            let mut from = a;
            while let Some(h) = sr.hits.get(at) {
                if (h.line as usize, h.span as usize) != (li, si) || h.start as usize >= b {
                    break;
                }
                let (ha, hb) = ((h.start as usize).max(from), (h.end as usize).min(b));
                if ha > from {
                    pieces.push((base, &text[from..ha]));
                }
                let st = if Some(*h) == current { current_style } else { hit_style };
                pieces.push((base.patch(st), &text[ha..hb]));
                from = hb;
                at += 1;
            }
            if from < b {
                pieces.push((base, &text[from..b]));
            }
        }
        // A folded node: its size after the opening line.
        let tail = d
            .doc
            .node_at(li)
            .filter(|&n| d.doc.is_folded(n))
            .map(|n| d.doc.fold_tail(n))
            .unwrap_or_default();
        for (t, x) in &tail {
            pieces.push((th.style(role(*t)), x.as_str()));
        }
        let pieces = detail::window(&pieces, if r.wrap { 0 } else { d.hscroll }, inner.width as usize);
        let y = inner.y + k as u16;
        let pad = " ".repeat(indent);
        let spans: Vec<Span> = std::iter::once(Span::raw(pad))
            .chain(pieces.iter().flat_map(|(st, s)| highlight(s, *st, &needles, th)))
            .collect();
        let area = Rect { y, height: 1, ..inner };
        if focused && i == d.cursor {
            buf.set_style(area, th.style(Role::Cursor));
        }
        buf.set_line(inner.x, y, &Line::from(spans), inner.width);
    }
}

/// The frame of a document pane (an event's detail, a diff pair): title, `line/lines` at the
/// bottom; the inside, unless there is no room.
pub(super) fn document_frame(
    buf: &mut Buffer,
    area: Rect,
    title: String,
    focused: bool,
    cursor: usize,
    total: usize,
    th: &Theme,
) -> Option<Rect> {
    block(Line::from(title), focused, th)
        .title_bottom(Line::from(format!(" {}/{total} ", cursor + 1)).right_aligned())
        .render(area, buf);
    let inner = layout::inner(area);
    (inner.height > 0 && inner.width > 0).then_some(inner)
}
