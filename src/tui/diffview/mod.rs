//! The diff view's state: two runs' aligned calls (from [`crate::diff`]), how they are shown
//! (side by side or inline), the selection, and the detail of one pair. Everything derived
//! from the diff is built once when it arrives (in the background thread); rendering only
//! slices it, so a frame costs the same for ten calls or a hundred thousand.

pub mod task;
pub mod update;

pub use task::Source;

use super::detail::{self, Doc, Line, Tok};
use super::theme::Role;
use crate::diff::words::Mark;
use crate::diff::{Diff, Op, PathChange, Row, Verdict};
use crate::model::{EventKind, Trace};
use crate::report::short;
use crate::sanitize;
use std::sync::Arc;

/// Path changes shown under a row in the inline layout; Enter shows them all.
pub const INLINE_PATHS: usize = 20;
/// Lines of one kind (regressions, notes, warnings) in the header; the rest are counted.
const HEADER_KIND_MAX: usize = 3;

/// One screen line of the inline layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InlineLine {
    /// The row itself: `~ tools[0] search`.
    Head(u32),
    /// Path change `k` of the row, under it.
    Path(u32, u32),
    /// `… and N more` under a row with more than [`INLINE_PATHS`] changes.
    More(u32, u32),
}

impl InlineLine {
    pub fn item(self) -> usize {
        match self {
            InlineLine::Head(i) | InlineLine::Path(i, _) | InlineLine::More(i, _) => i as usize,
        }
    }
}

/// A row of the view: the run records (when they differ), then the aligned calls.
#[derive(Clone, Copy, Debug)]
pub enum Item<'a> {
    Run(&'a [PathChange]),
    Call(&'a Row),
}

/// A computed diff with everything the view derives from it.
#[derive(Debug)]
pub struct DiffData {
    pub a: Arc<Trace>,
    pub b: Arc<Trace>,
    pub diff: Diff,
    /// How the two runs were chosen or loaded (several traces in a source, diagnostics).
    pub warnings: Vec<String>,
    pub inline: Vec<InlineLine>,
    /// Per item: its `Head` line in `inline`.
    pub inline_pos: Vec<u32>,
    /// How word-level changes are shown: words of context, bracket marks (no colour).
    pub words: WordStyle,
    /// The gists of the calls that were in view, baseline's and current run's (made by
    /// `settle`, read by the frame).
    pub gists: [crate::tui::gist::Gists; 2],
}

/// How word-level changes of strings are shown in the view and the pair detail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WordStyle {
    pub context: usize,
    /// `[-…-]{+…+}` around changes: the theme has no colours (NO_COLOR).
    pub marks: bool,
}

impl Default for WordStyle {
    fn default() -> Self {
        WordStyle {
            context: crate::diff::words::DEFAULT_CONTEXT,
            marks: false,
        }
    }
}

/// Strings this long (both sides together) are word-diffed while a frame is drawn; longer
/// ones show `from → to` in the list and their word diff in the pair detail (Enter).
pub const INLINE_WORDS_MAX: usize = 4_000;

/// The word diff of a string change as display lines of (mark, sanitized text); `None` when
/// the change is not string to string or has no word in common.
pub fn word_lines(p: &PathChange, context: usize) -> Option<Vec<Vec<(Mark, String)>>> {
    let (x, y) = crate::diff::words::strings(p.from.as_ref(), p.to.as_ref())?;
    let segs = crate::diff::words::segments(x, y);
    if !crate::diff::words::worth_showing(&segs) {
        return None;
    }
    let shown = crate::diff::words::Shown::new(&segs, context);
    Some(
        shown
            .lines
            .into_iter()
            .map(|l| {
                l.into_iter()
                    .map(|(m, t)| {
                        (
                            m,
                            crate::report::cut(&sanitize::line(&t), crate::report::diff::WORD_PIECE_MAX),
                        )
                    })
                    .collect()
            })
            .collect(),
    )
}

/// One word-diff line as pieces with their marks spelled out when `marks`.
pub fn marked_pieces(line: &[(Mark, String)], marks: bool) -> Vec<(Mark, String)> {
    line.iter()
        .map(|(m, t)| {
            let t = match (m, marks) {
                (Mark::Delete, true) => format!("[-{t}-]"),
                (Mark::Insert, true) => format!("{{+{t}+}}"),
                _ => t.clone(),
            };
            (*m, t)
        })
        .collect()
}

impl DiffData {
    pub fn new(a: Arc<Trace>, b: Arc<Trace>, diff: Diff, warnings: Vec<String>) -> DiffData {
        let mut d = DiffData {
            a,
            b,
            diff,
            warnings,
            inline: Vec::new(),
            inline_pos: Vec::new(),
            words: WordStyle::default(),
            gists: Default::default(),
        };
        let n = d.len();
        let mut inline = Vec::with_capacity(n);
        let mut pos = Vec::with_capacity(n);
        for i in 0..n {
            pos.push(inline.len() as u32);
            inline.push(InlineLine::Head(i as u32));
            let k = d.paths(i).len();
            for p in 0..k.min(INLINE_PATHS) {
                inline.push(InlineLine::Path(i as u32, p as u32));
            }
            if k > INLINE_PATHS {
                inline.push(InlineLine::More(i as u32, (k - INLINE_PATHS) as u32));
            }
        }
        d.inline = inline;
        d.inline_pos = pos;
        d
    }

    fn has_run_item(&self) -> bool {
        !self.diff.run.is_empty()
    }

    /// Number of items (rows of the side-by-side layout).
    pub fn len(&self) -> usize {
        self.diff.rows.len() + self.has_run_item() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn item(&self, i: usize) -> Option<Item<'_>> {
        match (self.has_run_item(), i) {
            (true, 0) => Some(Item::Run(&self.diff.run)),
            (true, i) => self.diff.rows.get(i - 1).map(Item::Call),
            (false, i) => self.diff.rows.get(i).map(Item::Call),
        }
    }

    pub fn op(&self, i: usize) -> Op {
        match self.item(i) {
            Some(Item::Run(_)) => Op::Changed,
            Some(Item::Call(r)) => r.op,
            None => Op::Same,
        }
    }

    pub fn paths(&self, i: usize) -> &[PathChange] {
        match self.item(i) {
            Some(Item::Run(p)) => p,
            Some(Item::Call(r)) => &r.paths,
            None => &[],
        }
    }

    /// A divergence: any row that is not an unchanged pair.
    pub fn diverges(&self, i: usize) -> bool {
        self.op(i) != Op::Same
    }

    /// The first divergence, where the view starts.
    pub fn first_divergence(&self) -> Option<usize> {
        (0..self.len()).find(|&i| self.diverges(i))
    }

    /// Count of rows per op (run record included), in `Op` order of the legend.
    pub fn op_counts(&self) -> [(Op, usize); 5] {
        let mut c = [
            (Op::Changed, 0),
            (Op::Added, 0),
            (Op::Removed, 0),
            (Op::Moved, 0),
            (Op::Same, 0),
        ];
        for i in 0..self.len() {
            let op = self.op(i);
            if let Some(x) = c.iter_mut().find(|(o, _)| *o == op) {
                x.1 += 1;
            }
        }
        c
    }

    /// The event an item stands for on one side (the run record's root event for the run item).
    pub fn event(&self, i: usize, baseline: bool) -> Option<u32> {
        let t = if baseline { &self.a } else { &self.b };
        match self.item(i)? {
            Item::Run(_) => t.roots.iter().copied().find(|&r| t.event(r).kind == EventKind::Run),
            Item::Call(r) => (if baseline { r.baseline } else { r.current }).map(|c| c.event),
        }
    }

    /// `tools[N]` of an item on one side (numbered on that side), `run` for the run record.
    pub fn side_label(&self, i: usize, baseline: bool) -> Option<String> {
        match self.item(i)? {
            Item::Run(_) => Some("run".into()),
            Item::Call(r) => {
                let c = if baseline { r.baseline } else { r.current }?;
                Some(call_label(r.kind, c.kind_index))
            }
        }
    }

    /// The row as the inline layout and the pair detail title it: `~ tools[0] search`,
    /// `! tools[1]→tools[2] fetch`. Sanitized.
    pub fn title(&self, i: usize) -> String {
        let op = self.op(i);
        match self.item(i) {
            Some(Item::Run(_)) => format!("{} run", op.sign()),
            Some(Item::Call(r)) => {
                let label = match (r.op, r.baseline, r.current) {
                    (Op::Moved, Some(x), Some(y)) => {
                        format!(
                            "{}→{}",
                            call_label(r.kind, x.kind_index),
                            call_label(r.kind, y.kind_index)
                        )
                    }
                    _ => r.label(),
                };
                format!("{} {label} {}", op.sign(), sanitize::line(&r.name))
            }
            None => String::new(),
        }
    }

    /// What a side-by-side cell shows after the name and gist: for a row with path changes,
    /// that side's values at the changed paths (`args.limit: 10`). Sanitized.
    pub fn preview(&self, i: usize, baseline: bool, max: usize) -> String {
        let paths = self.paths(i);
        if !paths.is_empty() {
            let prefix = match self.item(i) {
                Some(Item::Call(r)) => r.label(),
                _ => "run".into(),
            };
            let mut out = String::new();
            for p in paths {
                if out.chars().count() >= max {
                    break;
                }
                let rel = p
                    .path
                    .strip_prefix(prefix.as_str())
                    .map(|r| r.trim_start_matches('.'))
                    .unwrap_or(&p.path);
                let v = if baseline { &p.from } else { &p.to };
                let v = v.as_ref().map_or("(absent)".to_string(), |v| short(v, max));
                if !out.is_empty() {
                    out.push_str("  ");
                }
                out.push_str(&format!("{}: {v}", sanitize::line(rel)));
            }
            return out;
        }
        String::new()
    }

    /// The gist of item `i`'s call on one side, when made ([`DiffData::fill_gists`]).
    pub fn gist(&self, i: usize, baseline: bool) -> Option<&str> {
        let ev = self.event(i, baseline)?;
        self.gists[usize::from(!baseline)].get(ev)
    }

    /// Make the gists of the calls of `items` (those in view), both sides.
    pub fn fill_gists(&mut self, items: &[usize]) {
        for (k, baseline) in [(0, true), (1, false)] {
            let evs: Vec<u32> = items
                .iter()
                .filter(|&&i| matches!(self.item(i), Some(Item::Call(_))))
                .filter_map(|&i| self.event(i, baseline))
                .collect();
            let t = if baseline { &self.a } else { &self.b };
            self.gists[k].fill(t, &evs);
        }
    }

    /// The detail of item `i`: its path changes, then both sides' events in full.
    pub fn pair_doc(&self, i: usize) -> Doc {
        let mut d = Doc::default();
        let mut l = Line::default();
        let op = self.op(i);
        l.spans.push((Tok::Heading, self.title(i).trim_start().to_string()));
        l.spans.push((
            Tok::Dim,
            format!("  {}", if op == Op::Same { "unchanged" } else { op.as_str() }),
        ));
        d.lines.push(l);
        d.lines.push(Line::default());
        let paths = self.paths(i);
        push_section(&mut d, &format!("Changes ({})", paths.len()));
        if paths.is_empty() {
            let why = match self.op(i) {
                Op::Added => "only the current run makes this call",
                Op::Removed => "only the baseline makes this call",
                Op::Moved => "the same call, at another place",
                _ => "no difference in the compared fields",
            };
            d.lines.push(text_line(Tok::Dim, why));
        }
        for p in paths {
            if let Some(lines) = word_lines(p, self.words.context) {
                let mut l = Line::default();
                l.spans.push((Tok::Key, sanitize::line(&p.path).into_owned()));
                l.spans.push((Tok::Punct, ":".into()));
                d.lines.push(l);
                for wl in lines {
                    let mut l = Line {
                        hang: 2,
                        ..Line::default()
                    };
                    l.spans.push((Tok::Text, "  ".into()));
                    for (m, t) in marked_pieces(&wl, self.words.marks) {
                        let tok = match m {
                            Mark::Equal => Tok::Text,
                            Mark::Delete => Tok::Error,
                            Mark::Insert => Tok::Ok,
                            Mark::Elided => Tok::Dim,
                        };
                        l.spans.push((tok, t));
                    }
                    d.lines.push(l);
                }
                continue;
            }
            let v = |x: &Option<serde_json::Value>| x.as_ref().map_or("(absent)".to_string(), |v| short(v, 400));
            let mut l = Line::default();
            l.spans.push((Tok::Key, sanitize::line(&p.path).into_owned()));
            l.spans.push((Tok::Punct, ": ".into()));
            l.spans.push((Tok::Error, v(&p.from)));
            l.spans.push((Tok::Punct, " → ".into()));
            l.spans.push((Tok::Ok, v(&p.to)));
            d.lines.push(l);
        }
        for (baseline, name) in [(true, "Baseline"), (false, "Current")] {
            let t = if baseline { &self.a } else { &self.b };
            if !d.is_empty() && !d.line(d.len() - 1).spans.is_empty() {
                d.lines.push(Line::default());
            }
            let label = self.side_label(i, baseline);
            match (self.event(i, baseline), label) {
                (Some(ev), Some(label)) => {
                    push_section(&mut d, &format!("{name} {label} · {}", run_label(t)));
                    append(&mut d, detail::build(t, ev, false, t.time_span().0));
                }
                _ => {
                    push_section(&mut d, &format!("{name} · {}", run_label(t)));
                    d.lines.push(text_line(Tok::Dim, "(no such call on this side)"));
                }
            }
        }
        d
    }
}

fn call_label(kind: EventKind, n: usize) -> String {
    match kind {
        EventKind::LlmCall => format!("llm[{n}]"),
        _ => format!("tools[{n}]"),
    }
}

/// `name (id)` of a run, or its id; sanitized.
pub fn run_label(t: &Trace) -> String {
    let s = match t.meta.name.as_deref() {
        Some(n) if n != t.meta.id => format!("{n} ({})", t.meta.id),
        _ => t.meta.id.clone(),
    };
    sanitize::line(&s).into_owned()
}

fn text_line(t: Tok, s: &str) -> Line {
    Line {
        spans: vec![(t, s.to_string())],
        copy: None,
        hang: 0,
    }
}

fn push_section(d: &mut Doc, title: &str) {
    d.lines
        .push(text_line(Tok::Section, &format!("── {} ", sanitize::line(title))));
}

/// Append a document, keeping its copy targets pointing at its own values.
fn append(dst: &mut Doc, src: Doc) {
    dst.append(src);
}

/// What the diff view holds while it is open.
#[derive(Debug)]
pub struct DiffView {
    pub generation: u64,
    /// The two runs as named when the diff was asked for (sanitized), until it arrives.
    pub names: [String; 2],
    /// `None` while computing.
    pub data: Option<Box<DiffData>>,
    pub error: Option<String>,
    pub inline: bool,
    /// The selected item.
    pub selected: usize,
    /// First shown line: an item side by side, an `inline` line inline.
    pub offset: usize,
    pub pair: Option<PairDetail>,
    pub wrap: bool,
    /// Shared with the background diff: set when the view is left, so the work stops.
    pub cancel: Arc<std::sync::atomic::AtomicBool>,
}

#[derive(Debug)]
pub struct PairDetail {
    pub item: usize,
    pub doc: Doc,
    pub cursor: usize,
    pub offset: usize,
}

impl DiffView {
    pub fn new(generation: u64, names: [String; 2]) -> DiffView {
        DiffView {
            generation,
            names,
            data: None,
            error: None,
            inline: false,
            selected: 0,
            offset: 0,
            pair: None,
            wrap: true,
            cancel: Arc::default(),
        }
    }

    pub fn computing(&self) -> bool {
        self.data.is_none() && self.error.is_none()
    }

    /// Lines the body scrolls through in the current layout.
    pub fn lines(&self) -> usize {
        match &self.data {
            Some(d) if self.inline => d.inline.len(),
            Some(d) => d.len(),
            None => 0,
        }
    }

    /// The body line of the selected item.
    pub fn selected_line(&self) -> usize {
        match &self.data {
            Some(d) if self.inline => d.inline_pos.get(self.selected).copied().unwrap_or(0) as usize,
            _ => self.selected,
        }
    }

    /// The item shown on body line `line`.
    pub fn item_at(&self, line: usize) -> Option<usize> {
        let d = self.data.as_ref()?;
        if self.inline {
            d.inline.get(line).map(|l| l.item())
        } else {
            (line < d.len()).then_some(line)
        }
    }
}

/// One header line: styled pieces.
pub type HeaderLine = Vec<(Role, String)>;

pub fn verdict_role(v: Verdict) -> Role {
    match v {
        Verdict::Passed => Role::Ok,
        Verdict::OutputDrift | Verdict::ToolsReordered => Role::Warning,
        Verdict::ToolsChanged | Verdict::Regression => Role::Error,
    }
}

pub fn op_role(op: Op) -> Role {
    match op {
        Op::Same => Role::Text,
        Op::Changed => Role::DiffChanged,
        Op::Added => Role::DiffAdded,
        Op::Removed => Role::DiffRemoved,
        Op::Moved => Role::DiffMoved,
    }
}

/// `tool calls 2 → 3 +1 (+50.0%)`: (name, values, delta) pieces.
pub fn metric_text(m: &crate::diff::Metric) -> (String, String, Option<String>) {
    let name = match m.name {
        "llm_calls" => "LLM calls".to_string(),
        n => n.replace('_', " "),
    };
    let values = format!("{} → {}", m.value_text(m.baseline), m.value_text(m.current));
    (name, values, m.delta_text().filter(|d| d != "±0"))
}

/// The header above the rows: verdict and row counts, metric deltas (flowed into as many
/// lines as the width needs), regressions, notes and load warnings (each wrapped, a few of
/// each). `update` uses its length for the layout, `render` draws it.
pub fn header(v: &DiffView, width: u16) -> Vec<HeaderLine> {
    let width = (width as usize).max(20);
    let Some(d) = &v.data else {
        return match &v.error {
            Some(e) => wrapped(Role::Error, "", &format!("could not diff: {e}"), width),
            None => vec![vec![(Role::Dim, "computing the diff… (esc cancels)".into())]],
        };
    };
    let mut out = Vec::new();
    let mut first = vec![
        (verdict_role(d.diff.verdict), format!(" {} ", d.diff.verdict.as_str())),
        (Role::Dim, "  ".into()),
    ];
    let mut sep = "";
    for (op, n) in d.op_counts() {
        if n == 0 && op != Op::Same {
            continue;
        }
        let word = match op {
            Op::Same => "unchanged",
            other => other.as_str(),
        };
        first.push((Role::Dim, sep.into()));
        first.push((if n > 0 { op_role(op) } else { Role::Dim }, format!("{n} {word}")));
        sep = " · ";
    }
    out.push(first);

    let mut line: HeaderLine = Vec::new();
    let mut used = 0;
    for m in &d.diff.metrics {
        let (name, vals, delta) = metric_text(m);
        let mut piece = vec![(Role::Dim, format!("{name} ")), (Role::Text, vals)];
        if let Some(dl) = delta {
            let bad = m.name == "errors" && m.delta().is_some_and(|x| x > 0);
            piece.push((if bad { Role::Error } else { Role::Info }, format!(" {dl}")));
        }
        let w: usize = piece
            .iter()
            .map(|(_, s)| unicode_width::UnicodeWidthStr::width(s.as_str()))
            .sum();
        if used > 0 && used + 3 + w > width {
            out.push(std::mem::take(&mut line));
            used = 0;
        }
        if used > 0 {
            line.push((Role::Dim, " · ".into()));
            used += 3;
        }
        line.extend(piece);
        used += w;
    }
    if !line.is_empty() {
        out.push(line);
    }
    for (list, role, lead) in [
        (&d.diff.regressions, Role::Error, "✗ "),
        (&d.diff.notes, Role::Dim, "note: "),
        (&d.warnings, Role::Warning, "! "),
    ] {
        for r in list.iter().take(HEADER_KIND_MAX) {
            out.extend(wrapped(role, lead, r, width));
        }
        if list.len() > HEADER_KIND_MAX {
            out.push(vec![(role, format!("  … and {} more", list.len() - HEADER_KIND_MAX))]);
        }
    }
    out
}

/// A sanitized text wrapped to `width`, `lead` before the first line.
fn wrapped(role: Role, lead: &str, text: &str, width: usize) -> Vec<HeaderLine> {
    let l = Line {
        spans: vec![(Tok::Text, format!("{lead}{}", sanitize::line(text)))],
        copy: None,
        hang: 0,
    };
    detail::wrap(&l, width)
        .into_iter()
        .map(|row| vec![(role, row.into_iter().map(|(_, s)| s).collect::<String>())])
        .collect()
}

#[cfg(test)]
mod tests;
