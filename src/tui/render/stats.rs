//! The stats view: the tables of `tracetui stats` and three charts (cost per day, tokens by
//! model, tool latency p95).

use super::{block, fit, num, put};
use crate::cost::usage::Total;
use crate::tui::state::State;
use crate::tui::stats::StatsView;
use crate::tui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Widget;
use unicode_width::UnicodeWidthStr;

/// What a table gives up on a narrow screen, in order: a column goes, or every number
/// column takes its next shorter form (`50,062,931` → `50.1M`). A number is never cut.
#[derive(Clone, Copy)]
enum Step {
    Drop(usize),
    Shorten,
}

/// The LLM table's columns (by, RUNS, CALLS, INPUT, CACHE R, CACHE W, OUTPUT, REASON,
/// TOKENS, COST): the token kinds go first, TOKENS and COST last.
const LLM_STEPS: &[Step] = &[
    Step::Drop(7),
    Step::Drop(5),
    Step::Shorten,
    Step::Drop(3),
    Step::Drop(4),
    Step::Shorten,
    Step::Drop(1),
    Step::Drop(2),
    Step::Drop(6),
    Step::Shorten,
    Step::Drop(8),
];
/// The tool table's (TOOL, CALLS, ERRORS, ERR %, P50, P95, P99, MAX): P95 and CALLS stay.
const TOOL_STEPS: &[Step] = &[
    Step::Drop(6),
    Step::Drop(4),
    Step::Shorten,
    Step::Drop(7),
    Step::Drop(3),
    Step::Drop(2),
    Step::Shorten,
];

/// Which columns a table shows and at which form, and each one's width, for `width` cells
/// (the first column, a name, keeps at least 8 and is cut with `…`).
fn fit_table(rows: &[Vec<String>], width: usize, steps: &[Step]) -> (Vec<bool>, usize, Vec<usize>) {
    let n = rows[0].len();
    let forms: Vec<Vec<Vec<String>>> = rows
        .iter()
        .enumerate()
        .map(|(ri, r)| {
            r.iter()
                .enumerate()
                .map(|(i, c)| {
                    if ri == 0 || i == 0 {
                        vec![c.clone()]
                    } else {
                        num::cell_forms(c)
                    }
                })
                .collect()
        })
        .collect();
    let col_w = |i: usize, level: usize| -> usize {
        forms
            .iter()
            .filter_map(|r| r.get(i))
            .map(|f| f[level.min(f.len() - 1)].width())
            .max()
            .unwrap_or(0)
    };
    let name_min = col_w(0, 0).min(rows[0][0].width().max(8));
    let mut shown = vec![true; n];
    let mut level = 0;
    let need = |shown: &[bool], level: usize| -> usize {
        name_min + (1..n).filter(|&i| shown[i]).map(|i| col_w(i, level) + 2).sum::<usize>()
    };
    for step in steps {
        if need(&shown, level) <= width {
            break;
        }
        match *step {
            Step::Drop(i) if i < n => shown[i] = false,
            Step::Drop(_) => {}
            Step::Shorten => level += 1,
        }
    }
    let mut w: Vec<usize> = (0..n).map(|i| col_w(i, level)).collect();
    let rest: usize = (1..n).filter(|&i| shown[i]).map(|i| w[i] + 2).sum();
    w[0] = w[0].min(width.saturating_sub(rest)).max(name_min.min(width));
    (shown, level, w)
}

/// Draw `rows` (header first) as aligned columns: the first left (cut with `…`), the
/// others right, fitted to the width by `steps`.
fn table(
    buf: &mut Buffer,
    area: Rect,
    rows: &[Vec<String>],
    skip: usize,
    th: &Theme,
    total_last: bool,
    steps: &[Step],
) {
    if area.height == 0 || rows.is_empty() {
        return;
    }
    let n = rows[0].len();
    let (shown, level, w) = fit_table(rows, area.width as usize, steps);
    let body = rows.len() - 1;
    let visible = (area.height as usize).saturating_sub(1);
    let shown_rows = std::iter::once(0).chain((1 + skip..rows.len()).take(visible));
    for (line, ri) in shown_rows.enumerate() {
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
                text.push_str(&c);
                text.push_str(&" ".repeat(w[0].saturating_sub(c.width())));
            } else if shown[i] {
                let f = if ri == 0 { vec![c.clone()] } else { num::cell_forms(c) };
                let c = &f[level.min(f.len() - 1)];
                text.push_str("  ");
                text.push_str(&" ".repeat(w[i].saturating_sub(c.width())));
                text.push_str(c);
            }
        }
        put(buf, area.x, area.y + line as u16, &text, th.style(role), area.width);
    }
}

/// A bar of a chart: its label, its value, and the value's forms (longest first).
struct BarRow {
    label: String,
    value: u64,
    forms: Vec<String>,
}

/// A bar `len` eighths of a cell long.
fn bar_text(eighths: u64) -> String {
    const PART: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];
    let mut out = "█".repeat((eighths / 8) as usize);
    out.push_str(PART[(eighths % 8) as usize]);
    out
}

/// A boxed chart of one bar a line: the label (cut with `…`), the bar, and the value whole at
/// the right (in a shorter form when the box is narrow, never cut). `more` says how many rows
/// did not fit.
fn bars(buf: &mut Buffer, area: Rect, title: &str, rows: &[BarRow], whole_labels: bool, th: &Theme) {
    let b = block(
        Line::from(format!(" {} ", fit(title, area.width.saturating_sub(4) as usize))),
        false,
        th,
    );
    let inner = b.inner(area);
    b.render(area, buf);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    if rows.is_empty() {
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
    let w = inner.width as usize;
    let h = inner.height as usize;
    let (rows, more) = if rows.len() > h {
        (&rows[..h.saturating_sub(1)], rows.len() - h.saturating_sub(1))
    } else {
        (rows, 0)
    };
    // The values' form: the longest that leaves a label of 10 (or whole, for dates) and a
    // bar of 4.
    let label_max = rows.iter().map(|r| r.label.width()).max().unwrap_or(0);
    let label_min = if whole_labels { label_max } else { label_max.min(10) };
    let levels = rows.iter().map(|r| r.forms.len()).max().unwrap_or(1);
    let value_w = |level: usize| -> usize {
        rows.iter()
            .map(|r| r.forms[level.min(r.forms.len() - 1)].width())
            .max()
            .unwrap_or(0)
    };
    let level = (0..levels)
        .find(|&l| value_w(l) + label_min + 4 + 2 <= w)
        .unwrap_or(levels - 1);
    let vw = value_w(level);
    let lw = label_max.min(((w.saturating_sub(vw + 2)) * 2 / 5).max(label_min));
    let bw = w.saturating_sub(lw + vw + 2);
    let max = rows.iter().map(|r| r.value).max().unwrap_or(0).max(1);
    for (i, r) in rows.iter().enumerate() {
        let y = inner.y + i as u16;
        let label = fit(&r.label, lw);
        put(buf, inner.x, y, &label, th.style(Role::Text), lw as u16);
        let eighths = (r.value as u128 * bw as u128 * 8 / max as u128) as u64;
        // Something, however small, shows as a sliver.
        let eighths = if r.value > 0 { eighths.max(1) } else { 0 };
        put(
            buf,
            inner.x + lw as u16 + 1,
            y,
            &bar_text(eighths),
            th.style(Role::KindLlm),
            bw as u16,
        );
        let v = &r.forms[level.min(r.forms.len() - 1)];
        if v.width() <= w {
            let x = inner.x + inner.width - v.width() as u16;
            put(buf, x, y, v, th.style(Role::Text), v.width() as u16);
        }
    }
    if more > 0 {
        let y = inner.y + rows.len() as u16;
        let t = format!("… {} more", crate::model::thousands(more as u64));
        put(buf, inner.x, y, &t, th.style(Role::Dim), inner.width);
    }
}

/// Cost per day over the whole range: a bar a day when the days fit, else a bar a week
/// (from Monday), else a month. Days are `YYYY-MM-DD`; the empty day (no time) stays apart.
fn cost_rows(days: &[(String, Total)], height: usize) -> (&'static str, Vec<BarRow>) {
    let mut days: Vec<&(String, Total)> = days.iter().collect();
    days.sort_by(|a, b| a.0.cmp(&b.0));
    let group = |key: &dyn Fn(&str) -> String| -> Vec<BarRow> {
        let mut out: Vec<(String, u64)> = Vec::new();
        for (d, t) in &days {
            let k = if d.is_empty() { "?".to_string() } else { key(d) };
            match out.last_mut() {
                Some((last, m)) if *last == k => *m += t.micros,
                _ => out.push((k, t.micros)),
            }
        }
        // One year: its days and weeks as `MM-DD` (a month stays `YYYY-MM`).
        let mut years = out.iter().filter(|(l, _)| l.len() == 10).map(|(l, _)| &l[..4]);
        let first = years.next();
        let one_year = years.all(|y| Some(y) == first);
        out.into_iter()
            .map(|(label, value)| BarRow {
                label: if one_year && label.len() == 10 {
                    label[5..].to_string()
                } else {
                    label
                },
                value,
                forms: num::dollar_forms(value),
            })
            .collect()
    };
    let by_day = group(&|d| d.to_string());
    if by_day.len() <= height {
        return ("cost per day (UTC)", by_day);
    }
    let week = |d: &str| -> String {
        use chrono::Datelike;
        match chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d") {
            Ok(day) => {
                let monday = day - chrono::Days::new(day.weekday().num_days_from_monday() as u64);
                monday.format("%Y-%m-%d").to_string()
            }
            Err(_) => d.to_string(),
        }
    };
    let by_week = group(&week);
    if by_week.len() <= height {
        return ("cost per week (UTC, from Monday)", by_week);
    }
    ("cost per month (UTC)", group(&|d| d.get(..7).unwrap_or(d).to_string()))
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
    table(
        buf,
        Rect::new(inner.x, y, inner.width, llm_h),
        &rows,
        0,
        th,
        true,
        LLM_STEPS,
    );
    y += llm_h + 1;
    let left = inner.height.saturating_sub(y - inner.y);
    // Charts: a third of the width each, 10 lines high when there is room.
    let ch = left.saturating_sub(4).clamp(0, 12);
    if ch >= 5 {
        let w = inner.width / 3;
        let (cost_title, days) = cost_rows(&st.days, ch.saturating_sub(2) as usize);
        let mut models: Vec<BarRow> = st
            .models
            .iter()
            .filter(|(_, t)| t.total_tokens > 0)
            .map(|(m, t)| BarRow {
                label: crate::sanitize::line(if m.is_empty() { "(no model)" } else { m.as_str() }).into_owned(),
                value: t.total_tokens,
                forms: num::count_forms(t.total_tokens),
            })
            .collect();
        models.sort_by_key(|r| std::cmp::Reverse(r.value));
        let mut tools: Vec<BarRow> = st
            .tools
            .iter()
            .filter_map(|t| {
                let p95 = t.latency?[1];
                Some(BarRow {
                    label: crate::sanitize::line(if t.name.is_empty() { "-" } else { &t.name }).into_owned(),
                    value: (p95.max(0) / 1_000_000) as u64,
                    forms: vec![crate::model::format_duration(p95)],
                })
            })
            .collect();
        tools.sort_by_key(|r| std::cmp::Reverse(r.value));
        bars(buf, Rect::new(inner.x, y, w, ch), cost_title, &days, true, th);
        bars(
            buf,
            Rect::new(inner.x + w, y, w, ch),
            "tokens by model",
            &models,
            false,
            th,
        );
        bars(
            buf,
            Rect::new(inner.x + 2 * w, y, inner.width - 2 * w, ch),
            "tool latency p95",
            &tools,
            false,
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
            TOOL_STEPS,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: &str, micros: u64) -> (String, Total) {
        (
            d.to_string(),
            Total {
                micros,
                ..Default::default()
            },
        )
    }

    #[test]
    fn cost_covers_the_whole_range_by_day_week_or_month() {
        let days: Vec<(String, Total)> = (1..=20)
            .map(|i| day(&format!("2026-01-{i:02}"), i * 1_000_000))
            .chain([day("2026-03-02", 5_000_000)])
            .collect();
        let (title, rows) = cost_rows(&days, 30);
        assert_eq!(title, "cost per day (UTC)");
        assert_eq!(rows.len(), 21);
        assert_eq!(rows[0].label, "01-01");
        // 21 days on 8 lines: weeks from Monday (2025-12-29 holds Jan 1-4).
        let (title, rows) = cost_rows(&days, 8);
        assert!(title.starts_with("cost per week"));
        let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            ["2025-12-29", "2026-01-05", "2026-01-12", "2026-01-19", "2026-03-02"]
        );
        assert_eq!(rows[0].value, 10_000_000);
        // Every dollar is counted whatever the grouping.
        let all: u64 = days.iter().map(|d| d.1.micros).sum();
        assert_eq!(rows.iter().map(|r| r.value).sum::<u64>(), all);
        let (title, rows) = cost_rows(&days, 3);
        assert_eq!(title, "cost per month (UTC)");
        assert_eq!(
            rows.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(),
            ["2026-01", "2026-03"]
        );
    }

    #[test]
    fn a_table_drops_and_shortens_never_cuts() {
        let rows = vec![
            vec!["MODEL".to_string(), "RUNS".into(), "TOKENS".into(), "COST".into()],
            vec![
                "claude-opus-4-5".to_string(),
                "2".into(),
                "50062931".into(),
                "$25.6014".into(),
            ],
        ];
        let steps = [Step::Drop(1), Step::Shorten, Step::Shorten];
        let (shown, level, w) = fit_table(&rows, 80, &steps);
        assert_eq!((shown, level), (vec![true; 4], 0));
        assert_eq!(w[2], 10);
        // The name keeps 8: 8 + 2+4 + 2+10 + 2+8 = 36 with RUNS, 30 without.
        let (shown, level, _) = fit_table(&rows, 33, &steps);
        assert_eq!((shown, level), (vec![true, false, true, true], 0));
        let (_, level, w) = fit_table(&rows, 25, &steps);
        assert_eq!(level, 1);
        assert_eq!(num::cell_forms("50062931")[level], "50.1M");
        assert!(w[0] >= 8);
    }
}
