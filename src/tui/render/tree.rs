//! The run header and the event tree with its timeline (waterfall) column.

use super::{block, fit, put, put_right};
use crate::model::Trace;
use crate::model::{EventKind, Status, format_duration};
use crate::search::fuzzy::Fuzzy;
use crate::tui::detail::kind_icon;
use crate::tui::gist::{fit_numbers, llm_parts};
use crate::tui::layout;
use crate::tui::state::{Pane, RunView};
use crate::tui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Widget;

pub fn kind_role(k: EventKind) -> Role {
    match k {
        EventKind::Run => Role::KindRun,
        EventKind::LlmCall => Role::KindLlm,
        EventKind::ToolCall => Role::KindTool,
        EventKind::Message(_) => Role::KindMessage,
        EventKind::State => Role::KindState,
        EventKind::Error | EventKind::LoopWarning => Role::KindError,
        EventKind::Step | EventKind::Other => Role::KindOther,
    }
}

pub fn status_role(s: Status) -> Role {
    match s {
        Status::Ok => Role::Ok,
        Status::Error => Role::Error,
        Status::Pending => Role::Pending,
        Status::Unknown => Role::Unknown,
    }
}

const STATUS_W: u16 = 8;
const START_W: u16 = 9;
const TOOK_W: u16 = 8;

pub fn render(buf: &mut Buffer, area: Rect, r: &RunView, t: &Trace, th: &Theme) {
    let focused = r.focus == Pane::Tree;
    let mut title = format!(" events {} ", r.counts.events);
    if r.filter.active() {
        title.push_str(&format!(
            "· filter {} · {} ",
            crate::sanitize::line(&r.filter.text),
            crate::report::count_as(r.filter.count, "match", "matches")
        ));
    }
    let pos = if r.rows.is_empty() { 0 } else { r.selected + 1 };
    block(Line::from(title), focused, th)
        .title_bottom(Line::from(format!(" {pos}/{} ", r.rows.len())).right_aligned())
        .render(area, buf);
    let inner = layout::inner(area);
    let body = layout::body(area);
    if inner.height == 0 || inner.width < 20 {
        return;
    }
    let tl_w: u16 = if inner.width >= 56 {
        (inner.width * 22 / 100).clamp(10, 40)
    } else {
        0
    };
    let name_w = inner
        .width
        .saturating_sub(STATUS_W + START_W + TOOK_W + tl_w + u16::from(tl_w > 0));
    let hs = th.style(Role::Header);
    let right = inner.x + inner.width;
    put(buf, inner.x, inner.y, "NAME", hs, name_w);
    let mut x = inner.x + name_w;
    x = put(
        buf,
        x,
        inner.y,
        &format!("{:<w$}", "STATUS", w = STATUS_W as usize),
        hs,
        STATUS_W,
    );
    x = put(
        buf,
        x,
        inner.y,
        &format!("{:>w$}", "START", w = START_W as usize - 1),
        hs,
        START_W,
    );
    put(
        buf,
        x,
        inner.y,
        &format!("{:>w$}", "TOOK", w = TOOK_W as usize - 1),
        hs,
        TOOK_W,
    );
    if tl_w > 0 {
        let label = if r.timed { "TIMELINE" } else { "ORDER" };
        put(buf, right - tl_w, inner.y, label, hs, tl_w);
    }

    if r.rows.is_empty() {
        let msg = if r.filter.progress.is_some() {
            "searching…"
        } else if r.filter.active() {
            "no events match the filter (esc clears it)"
        } else {
            "this run has no events"
        };
        put(
            buf,
            body.x + 1,
            body.y,
            msg,
            th.style(Role::Dim),
            body.width.saturating_sub(1),
        );
        return;
    }

    let fuzzy = Fuzzy::default();
    let needles: Vec<&str> = r
        .filter
        .query
        .as_ref()
        .map(|q| q.highlights().map(|(t, _)| t).collect())
        .unwrap_or_default();
    let t0 = r.span.0.unwrap_or(0);
    let len = match r.span {
        (Some(a), Some(b)) if b > a => b - a,
        _ => 1,
    };
    let n = t.len().max(1) as i64;
    let name_end = inner.x + name_w;
    let prices = crate::tui::config::prices();
    for (k, row) in r.rows.iter().enumerate().skip(r.offset).take(body.height as usize) {
        let y = body.y + (k - r.offset) as u16;
        let e = t.event(row.ev);
        let hit = r.filter.is_hit(row.ev);
        let base = if k == r.selected {
            let s = th.style(if focused {
                Role::Selection
            } else {
                Role::SelectionInactive
            });
            buf.set_style(Rect { y, height: 1, ..inner }, s);
            s
        } else {
            Default::default()
        };
        // name column: indent, fold marker, kind icon, name
        let mut lead = "  ".repeat(row.depth.min(16) as usize);
        lead.push_str(if t.children(row.ev).is_empty() {
            "  "
        } else if r.collapsed[row.ev as usize] {
            "▸ "
        } else {
            "▾ "
        });
        let mut x = put(buf, inner.x, y, &lead, base.patch(th.style(Role::Dim)), name_w);
        let icon = format!("{} ", kind_icon(e.kind));
        x = put(
            buf,
            x,
            y,
            &icon,
            base.patch(th.style(kind_role(e.kind))),
            name_end.saturating_sub(x),
        );
        let name = crate::sanitize::line(t.str(e.name));
        let room = name_end.saturating_sub(x + 1) as usize;
        // After the name: an LLM call's tokens and cost (whole: the name gives way first, then
        // the cost, then the tokens), a tool call's gist (dimmed, cut to what is left).
        let ((with_name, numbers), gist) = match e.kind {
            EventKind::LlmCall => (fit_numbers(&name, llm_parts(t, e, prices), room), None),
            EventKind::ToolCall => ((true, String::new()), r.gists.get(row.ev)),
            _ => ((true, String::new()), None),
        };
        let shown = if with_name {
            fit(
                &name,
                room.saturating_sub(unicode_width::UnicodeWidthStr::width(numbers.as_str())),
            )
        } else {
            String::new()
        };
        let name_style = if r.filter.active() && !hit {
            base.patch(th.style(Role::Dim))
        } else if e.is_error() {
            base.patch(th.style(Role::Error))
        } else {
            base.patch(th.style(Role::Text))
        };
        let marks: Vec<usize> = if hit {
            needles.iter().flat_map(|n| fuzzy.indices(&shown, n)).collect()
        } else {
            Vec::new()
        };
        if marks.is_empty() {
            x = put(buf, x, y, &shown, name_style, name_end.saturating_sub(x));
        } else {
            for (ci, ch) in shown.chars().enumerate() {
                let st = if marks.contains(&ci) {
                    name_style.patch(th.style(Role::Match))
                } else {
                    name_style
                };
                let mut b = [0u8; 4];
                x = put(buf, x, y, ch.encode_utf8(&mut b), st, name_end.saturating_sub(x));
            }
        }
        if !numbers.is_empty() {
            put(
                buf,
                x,
                y,
                &numbers,
                base.patch(th.style(Role::Dim)),
                name_end.saturating_sub(x),
            );
        } else if let Some(g) = gist {
            // Two cells apart from the name; at least a few characters of it, or none.
            let left = name_end.saturating_sub(x + 3) as usize;
            if left >= 4 {
                let g = fit(g, left);
                let spans = super::highlight(&g, base.patch(th.style(Role::Dim)), &needles, th);
                buf.set_line(x + 2, y, &Line::from(spans), left as u16);
            }
        }
        let mut x = name_end;
        let st = match e.status {
            Status::Unknown => "",
            s => s.as_str(),
        };
        let st_style = base.patch(th.style(status_role(e.status)));
        x = put(
            buf,
            x,
            y,
            &format!("{st:<w$}", w = STATUS_W as usize),
            st_style,
            STATUS_W,
        );
        let start = match (e.start.get(), r.span.0) {
            (Some(s), Some(t0)) => format!("+{}", format_duration(s - t0)),
            _ => String::new(),
        };
        put_right(
            buf,
            x + START_W - 1,
            y,
            &start,
            base.patch(th.style(Role::Dim)),
            START_W - 1,
        );
        x += START_W;
        let took = e.duration.map(format_duration).unwrap_or_default();
        put_right(
            buf,
            x + TOOK_W - 1,
            y,
            &took,
            base.patch(th.style(Role::Text)),
            TOOK_W - 1,
        );
        if tl_w > 0 {
            let bar = if e.is_error() {
                th.style(Role::BarError)
            } else if e.status == Status::Pending {
                th.style(Role::Pending)
            } else {
                th.style(Role::Bar)
            };
            let x0 = right - tl_w;
            let w = tl_w as i64;
            if r.timed {
                if let Some(s) = e.start.get() {
                    let scale = |v: i64, up: bool| {
                        let num = (v - t0).clamp(0, len) as i128 * w as i128 + if up { len as i128 - 1 } else { 0 };
                        (num / len as i128) as i64
                    };
                    let a = scale(s, false).min(w - 1);
                    let b = scale(e.end().unwrap_or(s), true).clamp(a + 1, w);
                    let cells = "█".repeat((b - a) as usize);
                    put(buf, x0 + a as u16, y, &cells, base.patch(bar), (b - a) as u16);
                }
            } else {
                let a = (row.ev as i64 * w / n).min(w - 1);
                put(buf, x0 + a as u16, y, "•", base.patch(bar), 1);
            }
        }
        if k == r.selected {
            // The selection's colours win over each cell's own (white text on a white
            // selection was unreadable in the high-contrast theme).
            buf.set_style(Rect { y, height: 1, ..inner }, base);
        }
    }
}
