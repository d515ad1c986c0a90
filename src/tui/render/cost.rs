//! The run's cost view (`$` on a run): a box over the run view, rows of a label and figures.
//! Figures are right-aligned in columns and never cut; a label too long for what is left ends
//! with `…`.

use super::{block, put, put_right};
use crate::tui::cost_view::CostView;
use crate::tui::layout;
use crate::tui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Widget};
use unicode_width::UnicodeWidthStr;

/// The box: as wide as its longest row needs (at least 72 cells), as tall as its rows,
/// within the help overlay's area.
pub fn area(screen: Rect, v: &CostView) -> Rect {
    let max = layout::help(screen);
    let figs_w: usize = widths(v).iter().map(|w| w + 2).sum();
    let label_w = v.rows.iter().map(|r| r.label.width()).max().unwrap_or(0);
    let w = ((label_w + figs_w + 5).max(72) as u16).min(max.width);
    let h = (v.rows.len() as u16 + 2).min(max.height);
    Rect {
        x: screen.x + (screen.width - w) / 2,
        y: screen.y + (screen.height - h) / 2,
        width: w,
        height: h,
    }
}

/// Rows shown at once.
pub fn height(screen: Rect, v: &CostView) -> usize {
    layout::inner(area(screen, v)).height.max(1) as usize
}

/// Each figure column's width (the widest cell of that column, headers included).
fn widths(v: &CostView) -> Vec<usize> {
    let mut w: Vec<usize> = Vec::new();
    for r in &v.rows {
        for (k, f) in r.figs.iter().enumerate() {
            if w.len() <= k {
                w.push(0);
            }
            w[k] = w[k].max(f.width());
        }
    }
    w
}

pub fn render(buf: &mut Buffer, screen: Rect, v: &CostView, run: &str, th: &Theme) {
    let area = area(screen, v);
    Clear.render(area, buf);
    let inner = layout::inner(area);
    let h = inner.height as usize;
    let first = crate::tui::cost_view::first_row(v, h);
    let more = if v.rows.len() > h {
        format!(" · {}–{} of {}", first + 1, (first + h).min(v.rows.len()), v.rows.len())
    } else {
        String::new()
    };
    // The keys' hint and the run's name give way to the position on a narrow screen.
    let room = (area.width as usize).saturating_sub(4);
    let keys = [
        " · j/k move · enter goes to · $ or esc closes",
        " · enter goes to · esc closes",
        "",
    ]
    .into_iter()
    .find(|k| format!(" cost{more}{k} ").width() + 12 <= room)
    .unwrap_or("");
    let name_room = room.saturating_sub(format!(" cost · {more}{keys} ").width());
    let title = format!(" cost · {}{more}{keys} ", super::fit(run, name_room.max(8)));
    block(Line::from(title), true, th).render(area, buf);
    let widths = widths(v);
    // Figures from the right edge, two cells apart; the label gets what is left.
    let figs_w: usize = widths.iter().map(|w| w + 2).sum();
    let right = inner.x + inner.width.saturating_sub(1);
    let label_w = (inner.width as usize).saturating_sub(figs_w + 2);
    for (n, r) in v.rows.iter().skip(first).take(h).enumerate() {
        let y = inner.y + n as u16;
        let selected = v.selected == Some(first + n);
        let base = if selected {
            th.style(Role::Selection)
        } else {
            th.style(r.role)
        };
        if selected {
            for x in inner.x..inner.x + inner.width {
                buf[(x, y)].set_style(base);
            }
        }
        let label = super::fit(&r.label, label_w);
        let label_style = if r.role == Role::Section && !selected {
            th.style(Role::Section)
        } else {
            base
        };
        put(buf, inner.x + 1, y, &label, label_style, label_w as u16);
        // Columns right to left: the last figure ends at the box's right edge.
        let mut end = right;
        for k in (0..widths.len()).rev() {
            // A screen too narrow for every column keeps the ones that fit whole.
            if end < inner.x + 1 + widths[k] as u16 {
                break;
            }
            if let Some(f) = r.figs.get(k) {
                let style = if r.role == Role::Section && !selected {
                    th.style(Role::Header)
                } else {
                    base
                };
                put_right(buf, end, y, f, style, widths[k] as u16);
            }
            end = end.saturating_sub(widths[k] as u16 + 2);
        }
    }
}
