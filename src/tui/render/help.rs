//! The `?` overlay: the keys of the view underneath, from the same command list as the footer.

use super::{block, put};
use crate::tui::commands;
use crate::tui::keymap::Context;
use crate::tui::layout;
use crate::tui::state::State;
use crate::tui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Widget};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// What the runs list could not list ("N unreadable" in its title): which path, and why;
/// and the directories the scan left out.
fn runs_problems(s: &State) -> Vec<(String, String, Role)> {
    let r = &s.runs;
    let mut out = vec![("could not be listed".into(), String::new(), Role::Section)];
    if r.problems.is_empty() {
        out.push(("none".into(), "every run found was listed".into(), Role::Dim));
    }
    for (path, why) in &r.problems {
        // The file or directory's name, then why and the whole path (a problem of no single
        // run names its path in its message already).
        let at = path
            .as_ref()
            .and_then(|p| p.file_name())
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let why = match path {
            Some(p) => {
                let w = why.strip_prefix(&format!("{}: ", p.display())).unwrap_or(why);
                format!("{w} · {}", p.display())
            }
            None => why.clone(),
        };
        out.push((
            crate::sanitize::line(&at).into_owned(),
            crate::sanitize::line(&why).into_owned(),
            Role::Error,
        ));
    }
    if r.skipped.any() {
        out.push((String::new(), String::new(), Role::Text));
        out.push(("not searched".into(), String::new(), Role::Section));
        out.push((
            crate::report::count_as(r.skipped.dirs(), "directory", "directories"),
            crate::sanitize::line(&r.skipped.message()).into_owned(),
            Role::Warning,
        ));
    }
    out
}

/// The open run's load problems: where, and what was wrong.
fn problems(s: &State) -> Vec<(String, String, Role)> {
    if s.view == crate::tui::state::View::Runs {
        return runs_problems(s);
    }
    let Some(r) = s.run.as_ref() else { return Vec::new() };
    let t = crate::tui::state::read(&r.trace);
    if t.diagnostics.is_empty() {
        return vec![("none".into(), "every line of this run was read".into(), Role::Dim)];
    }
    t.diagnostics
        .iter()
        .map(|d| {
            let file = d
                .path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            let at = match d.line {
                Some(l) => format!("{file}:{l}"),
                None => file,
            };
            let role = match d.severity {
                crate::model::Severity::Error => Role::Error,
                crate::model::Severity::Warning => Role::Warning,
            };
            (
                crate::sanitize::line(&at).into_owned(),
                crate::sanitize::line(&d.message).into_owned(),
                role,
            )
        })
        .collect()
}

pub fn lines(s: &State) -> Vec<(String, String, Role)> {
    if s.problems_open {
        return problems(s);
    }
    let ctx = s.view_context();
    let mut out = Vec::new();
    let what = match ctx {
        Context::Runs => "runs list",
        Context::Tree => "event tree",
        Context::Detail => "event detail",
        Context::Diff => "diff",
        Context::Pair => "pair detail",
        Context::Compare => "compare table",
        Context::Branches => "branches view",
        Context::Stats => "stats view",
        _ => "",
    };
    out.push((format!("keys of the {what}"), String::new(), Role::Section));
    for (keys, help) in commands::help(ctx, &s.keys) {
        out.push((keys, help.to_string(), Role::Text));
    }
    if ctx == Context::Runs {
        out.push((String::new(), String::new(), Role::Text));
        out.push(("status".into(), String::new(), Role::Section));
        for (k, h) in [
            ("✖ error", "the run failed (its ERR column counts failed events)"),
            ("● live", "the run is still being written"),
            ("◌ stale", "it says running, but nothing was written for 10 minutes"),
            ("✔ ok", "the run finished without error"),
            (
                "? unknown",
                "the format records no outcome (nothing says how the run ended)",
            ),
            (
                "⚠ name",
                "the run loaded with problems: open it and press ! to list them",
            ),
            (
                "⚠ name  badge",
                "what is wrong with the run as a whole (a bundle whose content does not match its manifest)",
            ),
        ] {
            out.push((k.into(), h.into(), Role::Text));
        }
        out.push((String::new(), String::new(), Role::Text));
        out.push(("filter (/)".into(), String::new(), Role::Section));
        for (k, h) in [
            ("words", "fuzzy on the run's name and id"),
            ("format:F", "runs of a format (agent:F too): claude-code, codex, …"),
            ("status:S", "error, ok, live (running), stale, unknown"),
            ("project:P", "runs whose PROJECT contains P"),
            ("!term", "inverts a term"),
        ] {
            out.push((k.into(), h.into(), Role::Text));
        }
    }
    if matches!(ctx, Context::Diff | Context::Pair) {
        out.push((String::new(), String::new(), Role::Text));
        out.push(("rows".into(), String::new(), Role::Section));
        for (k, h) in [
            ("+", "added: a call only the current run makes"),
            ("-", "removed: a call only the baseline makes"),
            ("~", "changed: paired, with other arguments or results"),
            ("!", "moved: the same call at another place"),
            (" ", "unchanged"),
        ] {
            out.push((k.into(), h.into(), Role::Text));
        }
        out.push((String::new(), String::new(), Role::Text));
        out.push(("verdict".into(), String::new(), Role::Section));
        for (k, h) in [
            ("REGRESSION", "an error the baseline did not have"),
            ("TOOLS_CHANGED", "calls added, removed, or with other arguments"),
            ("TOOLS_REORDERED", "the same calls in another order"),
            ("OUTPUT_DRIFT", "only results, errors or models differ"),
            ("PASSED", "no difference (ids, clocks and durations are ignored)"),
        ] {
            out.push((k.into(), h.into(), Role::Text));
        }
    }
    if ctx == Context::Detail {
        out.push((String::new(), String::new(), Role::Text));
        out.push(("search (/)".into(), String::new(), Role::Section));
        for (k, h) in [
            ("word", "no capital letter: any case; a capital makes it exact"),
            ("n N", "next / previous match, wrapping; the title counts them (3/17)"),
            ("esc", "ends the search (then back to the tree)"),
            ("{…} 12 keys", "a folded object or array and its size"),
        ] {
            out.push((k.into(), h.into(), Role::Text));
        }
    }
    if ctx == Context::Tree {
        out.push((String::new(), String::new(), Role::Text));
        out.push(("filter (/)".into(), String::new(), Role::Section));
        for (k, h) in [
            ("words", "fuzzy on names, or anywhere in the payload"),
            ("tool:NAME", "tool calls whose name contains NAME"),
            ("kind:K", "llm, tool, message, state, error, loop, step, run, other"),
            ("status:S", "error, pending, ok, unknown"),
            ("model:X", "events of a model"),
            ("!term", "inverts a term; \"quoted words\" are one term"),
        ] {
            out.push((k.into(), h.into(), Role::Text));
        }
    }
    out.push((String::new(), String::new(), Role::Text));
    out.push((
        "mouse".into(),
        "click selects and focuses; the wheel scrolls".into(),
        Role::Dim,
    ));
    out.push((
        "esc".into(),
        "goes back: closes the prompt, clears the filter, leaves the run".into(),
        Role::Dim,
    ));
    out
}

/// The key column's width: the widest key, at most a third of the box.
fn key_width(all: &[(String, String, Role)], inner_w: u16) -> u16 {
    let widest = all
        .iter()
        .filter(|(_, _, r)| *r != Role::Section)
        .map(|(k, _, _)| k.width() as u16 + 2)
        .max()
        .unwrap_or(0);
    widest.clamp(8, 24).min(inner_w / 3)
}

/// The overlay's box: as wide as its longest line needs (a line is wrapped, not cut, when
/// the screen is narrower), as tall as its lines, within the screen less a margin.
pub fn area(s: &State, screen: Rect) -> Rect {
    let max = layout::help(screen);
    let all = lines(s);
    let kw = key_width(&all, max.width.saturating_sub(2));
    let want = all
        .iter()
        .map(|(k, h, r)| {
            if *r == Role::Section {
                k.width() as u16 + 2
            } else {
                kw + 3 + h.width() as u16
            }
        })
        .max()
        .unwrap_or(0)
        + 2;
    // The title (`help · 1–30 of 74 · j/k PgUp/PgDn g/G scroll · ? or esc closes`) fits too.
    let w = want.max(72).min(max.width);
    let inner_w = w.saturating_sub(2);
    let h = (rows(s, inner_w).len() as u16 + 2).min(max.height);
    Rect {
        x: screen.x + (screen.width - w) / 2,
        y: screen.y + (screen.height - h) / 2,
        width: w,
        height: h,
    }
}

/// The overlay's screen lines at an inner width: (key, text, role), a long text wrapped onto
/// lines of its own with no key.
fn rows(s: &State, inner_w: u16) -> Vec<(String, String, Role)> {
    let all = lines(s);
    let kw = key_width(&all, inner_w);
    let text_w = inner_w.saturating_sub(kw + 2).max(10) as usize;
    let mut out = Vec::new();
    for (k, h, role) in all {
        if role == Role::Section || h.width() <= text_w {
            out.push((k, h, role));
            continue;
        }
        let mut key = Some(k);
        for part in wrap(&h, text_w) {
            out.push((key.take().unwrap_or_default(), part, role));
        }
    }
    out
}

/// Split at spaces into lines of at most `w` cells (a word longer than that is cut into
/// pieces of `w`).
fn wrap(text: &str, w: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        let sep = usize::from(!cur.is_empty());
        if cur.width() + sep + word.width() <= w {
            if sep == 1 {
                cur.push(' ');
            }
            cur.push_str(word);
            continue;
        }
        if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        for c in word.chars() {
            if cur.width() + c.width().unwrap_or(0) > w {
                out.push(std::mem::take(&mut cur));
            }
            cur.push(c);
        }
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

/// The largest first line the overlay can start at (its last line at the bottom).
pub fn max_offset(s: &State, screen: Rect) -> usize {
    let a = area(s, screen);
    let inner = layout::inner(a);
    rows(s, inner.width).len().saturating_sub(inner.height as usize)
}

/// Lines a page moves.
pub fn page(s: &State, screen: Rect) -> usize {
    (layout::inner(area(s, screen)).height as usize)
        .saturating_sub(1)
        .max(1)
}

pub fn render(buf: &mut Buffer, screen: Rect, s: &State, offset: usize, th: &Theme) {
    let area = area(s, screen);
    Clear.render(area, buf);
    let inner = layout::inner(area);
    let all = rows(s, inner.width);
    let key_w = key_width(&lines(s), inner.width);
    let offset = offset.min(all.len().saturating_sub(inner.height as usize));
    let (what, keys) = if s.problems_open && s.view == crate::tui::state::View::Runs {
        ("not listed", "! or esc")
    } else if s.problems_open {
        ("load problems", "! or esc")
    } else {
        ("help", "? or esc")
    };
    // Longer than the box: say where it is and that it scrolls.
    let title = if all.len() > inner.height as usize {
        let last = (offset + inner.height as usize).min(all.len());
        format!(
            " {what} · {}–{last} of {} · j/k PgUp/PgDn g/G scroll · {keys} closes ",
            offset + 1,
            all.len()
        )
    } else {
        format!(" {what} · {keys} closes ")
    };
    block(Line::from(title), true, th).render(area, buf);
    for (i, (k, h, role)) in all.iter().skip(offset).take(inner.height as usize).enumerate() {
        let y = inner.y + i as u16;
        let ks = if *role == Role::Section {
            th.style(Role::Section)
        } else {
            th.style(Role::FooterKey)
        };
        if *role == Role::Section {
            put(buf, inner.x + 1, y, k, ks, inner.width.saturating_sub(1));
            continue;
        }
        if !k.is_empty() {
            put(buf, inner.x + 1, y, &format!(" {k} "), ks, key_w);
        }
        put(
            buf,
            inner.x + 2 + key_w,
            y,
            h,
            th.style(*role),
            inner.width.saturating_sub(key_w + 2),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_every_word_within_the_width() {
        assert_eq!(wrap("the run failed badly", 10), ["the run", "failed", "badly"]);
        assert_eq!(wrap("abcdefghijkl", 5), ["abcde", "fghij", "kl"]);
        assert_eq!(wrap("", 5), [""]);
    }
}
