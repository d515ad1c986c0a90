//! The detail pane: a window onto the selected event's document, wrapped or cut.

use super::{block, highlight};
use crate::model::Trace;
use crate::tui::detail::{self, Tok, kind_label};
use crate::tui::layout;
use crate::tui::state::{Pane, RunView};
use crate::tui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
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
    let needles: Vec<&str> = r
        .filter
        .query
        .as_ref()
        .map(|q| q.highlights().map(|(_, lower)| lower).collect())
        .unwrap_or_default();
    for k in 0..inner.height as usize {
        let i = d.offset + k;
        let Some((pieces, indent)) = rows.row(&d.doc, i) else {
            break;
        };
        let pieces = detail::window(&pieces, if r.wrap { 0 } else { d.hscroll }, inner.width as usize);
        let y = inner.y + k as u16;
        let pad = " ".repeat(indent);
        let spans: Vec<Span> = std::iter::once(Span::raw(pad))
            .chain(
                pieces
                    .iter()
                    .flat_map(|(t, s)| highlight(s, th.style(role(*t)), &needles, th)),
            )
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
