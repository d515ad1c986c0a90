//! The export prompt (`X`): format, file name, where it goes, and why the last Enter did not
//! write. Drawn over the view it exports.

use super::{block, fit_left, put};
use crate::tui::export::{Prompt, resolve};
use crate::tui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Widget};
use unicode_width::UnicodeWidthStr;

pub fn render(buf: &mut Buffer, area: Rect, p: &Prompt, th: &Theme) {
    let w = area.width.saturating_sub(4).min(80);
    let h = 10u16.min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    Clear.render(r, buf);
    let what = if p.diff { "diff" } else { "run" };
    block(Line::from(format!(" export the {what} {} ", p.title)), true, th).render(r, buf);
    let inner = crate::tui::layout::inner(r);
    let (x0, right) = (inner.x + 1, inner.x + inner.width);
    let label_w = 8u16;
    // Values line up with the text of the format choices (each has a space before it).
    let vx = x0 + label_w + 1;
    let room = |x: u16| right.saturating_sub(x);
    let label = |buf: &mut Buffer, y: u16, t: &str| {
        put(buf, x0, y, t, th.style(Role::FooterKey), label_w);
    };
    let mut y = inner.y + 1;
    label(buf, y, "format");
    let mut x = vx - 1;
    for (i, to) in p.forms.iter().enumerate() {
        let style = if i == p.form {
            th.style(Role::Selection)
        } else {
            th.style(Role::Text)
        };
        let text = format!(" {} ", to.label());
        x = put(buf, x, y, &text, style, room(x));
        x = put(buf, x, y, " ", th.style(Role::Text), room(x));
    }
    y += 1;
    label(buf, y, "file");
    // The end of a long name is what is being typed: keep it in view.
    let name = crate::sanitize::line(&p.name);
    let shown = fit_left(&name, room(vx).saturating_sub(1) as usize);
    let x = put(buf, vx, y, shown.trim_start(), th.style(Role::Text), room(vx));
    put(buf, x, y, "▏", th.style(Role::Title), room(x));
    y += 1;
    label(buf, y, "into");
    let path = resolve(p.name.trim(), &p.cwd);
    let dir = path.parent().unwrap_or(&p.cwd).display().to_string();
    let dir = crate::sanitize::line(&dir);
    put(
        buf,
        vx,
        y,
        fit_left(&dir, room(vx) as usize).trim_start(),
        th.style(Role::Dim),
        room(vx),
    );
    y += 2;
    let (msg, role) = match &p.error {
        Some(e) => (e.clone(), Role::Error),
        None => (
            "a relative name is in the current directory; never into a trace directory".to_string(),
            Role::Dim,
        ),
    };
    // Two lines for it: a refusal names the directory and says why.
    let (first, rest) = split_at_width(&msg, room(x0) as usize);
    for part in [first, rest.trim_start()] {
        if y < inner.y + inner.height && !part.is_empty() {
            put(
                buf,
                x0,
                y,
                &super::fit(part, room(x0) as usize),
                th.style(role),
                room(x0),
            );
        }
        y += 1;
    }
    if y < inner.y + inner.height {
        let keys = "enter write · tab format · ctrl-u clear · esc cancel";
        let kw = (keys.width() as u16).min(room(x0));
        put(buf, x0, y, keys, th.style(Role::FooterText), kw);
    }
}

/// The longest start of `s` that fits `width` cells, cut after a space when there is one.
fn split_at_width(s: &str, width: usize) -> (&str, &str) {
    if s.width() <= width {
        return (s, "");
    }
    let mut w = 0;
    let mut end = 0;
    let mut space = None;
    for (i, c) in s.char_indices() {
        w += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if w > width {
            break;
        }
        if c == ' ' {
            space = Some(i);
        }
        end = i + c.len_utf8();
    }
    let cut = space.filter(|&i| i > 0).unwrap_or(end);
    s.split_at(cut)
}
