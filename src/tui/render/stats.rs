//! The stats view: the tables of `tracetui stats` and three charts (cost per day, tokens by
//! model, tool latency p95).

use super::{block, fit, put};
use crate::tui::state::State;
use crate::tui::stats::StatsView;
use crate::tui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::{Direction, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Bar, BarChart, BarGroup, Widget};
use unicode_width::UnicodeWidthStr;

/// Draw `rows` (header first) as aligned columns: the first left, the others right.
fn table(buf: &mut Buffer, area: Rect, rows: &[Vec<String>], skip: usize, th: &Theme, total_last: bool) {
    if area.height == 0 || rows.is_empty() {
        return;
    }
    let n = rows[0].len();
    let mut w = vec![0usize; n];
    for r in rows {
        for (i, c) in r.iter().enumerate().take(n) {
            w[i] = w[i].max(c.width());
        }
    }
    let rest: usize = w[1..].iter().map(|x| x + 2).sum();
    w[0] = w[0].min((area.width as usize).saturating_sub(rest).max(8));
    let body = rows.len() - 1;
    let visible = (area.height as usize).saturating_sub(1);
    let shown = std::iter::once(0).chain((1 + skip..rows.len()).take(visible));
    for (line, ri) in shown.enumerate() {
        let r = &rows[ri];
        let role = if ri == 0 {
            Role::Header
        } else if total_last && ri == body {
            Role::Section
        } else {
            Role::Text
        };
        let mut text = String::new();
        for (i, c) in r.iter().enumerate().take(n) {
            if i == 0 {
                let c = fit(c, w[0]);
                text.push_str(&format!(
                    "{c:<pad$}",
                    pad = w[0] - c.width().min(w[0]) + c.chars().count()
                ));
            } else {
                text.push_str(&format!("  {c:>pad$}", pad = w[i]));
            }
        }
        put(buf, area.x, area.y + line as u16, &text, th.style(role), area.width);
    }
}

/// A bar chart of (label, value, value as text), horizontal (long labels) or vertical.
fn chart(buf: &mut Buffer, area: Rect, title: &str, bars: &[(String, u64, String)], horizontal: bool, th: &Theme) {
    let b = block(Line::from(format!(" {title} ")), false, th);
    let inner = b.inner(area);
    b.render(area, buf);
    if bars.is_empty() || inner.height == 0 {
        put(
            buf,
            inner.x,
            inner.y,
            "nothing to show",
            th.style(Role::Dim),
            inner.width,
        );
        return;
    }
    let data: Vec<Bar> = bars
        .iter()
        .map(|(l, v, t)| {
            Bar::default()
                .value(*v)
                .label(Line::from(crate::sanitize::line(l).into_owned()))
                .text_value(t.clone())
                .style(th.style(Role::KindLlm))
                .value_style(th.style(Role::Selection))
        })
        .collect();
    let c = if horizontal {
        // One bar a line, as many as fit.
        let n = (inner.height as usize).min(data.len());
        let data = &data[..n];
        BarChart::default()
            .direction(Direction::Horizontal)
            .data(BarGroup::default().bars(data))
            .bar_width(1)
            .bar_gap(0)
    } else {
        // As many days as fit, the latest ones.
        let per = 6u16;
        let fit_n = ((inner.width + 1) / per).max(1) as usize;
        let from = data.len().saturating_sub(fit_n);
        BarChart::default()
            .data(BarGroup::default().bars(&data[from..]))
            .bar_width(per - 1)
            .bar_gap(1)
    };
    c.render(inner, buf);
}

pub fn render(buf: &mut Buffer, area: Rect, _s: &State, v: &StatsView, th: &Theme) {
    let st = &v.stats;
    let mut title = format!(" stats · {} ", crate::report::count(v.entries.len(), "run"));
    if !v.filter.is_empty() {
        title.push_str(&format!("· filter {} ", crate::sanitize::line(&v.filter)));
    }
    if v.loading() {
        title.push_str(&format!("· loading {}/{} ", v.done, v.entries.len()));
    }
    if !v.failed.is_empty() {
        title.push_str(&format!("· {} unreadable ", v.failed.len()));
    }
    let b = block(Line::from(title), true, th);
    let inner = b.inner(area);
    b.render(area, buf);
    if inner.height < 4 {
        return;
    }
    let mut y = inner.y;
    let mut line = format!("{} loaded: {}", crate::report::count(st.runs, "run"), st.status_line());
    if st.total.unknown > 0 {
        line.push_str(&format!(
            " · cost leaves out {} of an unknown model or price",
            crate::report::count(st.total.unknown as usize, "call")
        ));
    }
    put(buf, inner.x, y, &line, th.style(Role::Text), inner.width);
    y += 2;
    let left = inner.height.saturating_sub(y - inner.y);
    // The LLM table: up to a third of the room (it ends with the total).
    let runs = v.loaded();
    let llm = st.llm_table(&runs);
    let llm_h = (llm.len() as u16).min((left / 3).max(4)).min(left);
    let rows: Vec<Vec<String>> = if llm.len() as u16 > llm_h {
        // Header, the first groups, and the total (always shown).
        let keep = llm_h.saturating_sub(2) as usize;
        let mut r: Vec<Vec<String>> = llm[..1 + keep].to_vec();
        r.push(llm[llm.len() - 1].clone());
        r
    } else {
        llm
    };
    table(buf, Rect::new(inner.x, y, inner.width, llm_h), &rows, 0, th, true);
    y += llm_h + 1;
    let left = inner.height.saturating_sub(y - inner.y);
    // Charts: a third of the width each, 10 lines high when there is room.
    let ch = left.saturating_sub(4).clamp(0, 12);
    if ch >= 5 {
        let w = inner.width / 3;
        let days: Vec<(String, u64, String)> = st
            .days
            .iter()
            .map(|(d, t)| {
                let label = if d.is_empty() {
                    "?".to_string()
                } else {
                    d.get(5..).unwrap_or(d).to_string()
                };
                (label, t.micros, crate::cost::dollars(t.micros))
            })
            .collect();
        let models: Vec<(String, u64, String)> = st
            .models
            .iter()
            .filter(|(_, t)| t.total_tokens > 0)
            .map(|(m, t)| {
                let m = if m.is_empty() { "(no model)" } else { m.as_str() };
                (m.to_string(), t.total_tokens, t.total_tokens.to_string())
            })
            .collect();
        let mut tools: Vec<(String, u64, String)> = st
            .tools
            .iter()
            .filter_map(|t| {
                let p95 = t.latency?[1];
                Some((
                    t.name.clone(),
                    (p95.max(0) / 1_000_000) as u64,
                    crate::model::format_duration(p95),
                ))
            })
            .collect();
        tools.sort_by_key(|t| std::cmp::Reverse(t.1));
        chart(
            buf,
            Rect::new(inner.x, y, w, ch),
            "cost per day (UTC)",
            &days,
            false,
            th,
        );
        chart(
            buf,
            Rect::new(inner.x + w, y, w, ch),
            "tokens by model",
            &models,
            true,
            th,
        );
        chart(
            buf,
            Rect::new(inner.x + 2 * w, y, inner.width - 2 * w, ch),
            "tool latency p95",
            &tools,
            true,
            th,
        );
        y += ch + 1;
    }
    let left = inner.height.saturating_sub(y - inner.y);
    if st.tools.is_empty() {
        put(buf, inner.x, y, "no tool calls", th.style(Role::Dim), inner.width);
    } else {
        table(
            buf,
            Rect::new(inner.x, y, inner.width, left),
            &st.tool_table(),
            v.scroll,
            th,
            false,
        );
    }
}
