//! A line of fields that fits its width without cutting a number: each field has forms,
//! longest first, and each shorter form a rank; while the line is too wide, the field whose
//! next form has the lowest rank takes it (the rightmost first on a tie), so that lower-priority
//! fields are dropped or shortened before others. A field is never cut in the middle: when no
//! form is left to take, whole fields are dropped from the right. One field may be elastic (a
//! name): it takes the room left and is cut with `…`.

use super::{fit, put};
use crate::tui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use unicode_width::UnicodeWidthStr;

pub type Spans = Vec<(String, Role)>;

pub struct Field {
    /// (rank from which this form is taken, spans); the first form's rank is unused, and an
    /// empty form drops the field.
    forms: Vec<(u8, Spans)>,
    cur: usize,
    /// An elastic field: the fewest cells it keeps while the others are fitted.
    elastic: Option<usize>,
}

impl Field {
    pub fn new(spans: Spans) -> Field {
        Field {
            forms: vec![(0, spans)],
            cur: 0,
            elastic: None,
        }
    }
    pub fn text(t: impl Into<String>, role: Role) -> Field {
        Field::new(vec![(t.into(), role)])
    }
    /// A number (its [`num`] forms) followed by a dim label (`12,345 tokens`); from `rank` on
    /// it takes its shorter forms, one a step.
    pub fn number(forms: &[String], role: Role, label: &str, rank: u8) -> Field {
        let spans = |f: &str| -> Spans {
            let mut v = vec![(f.to_string(), role)];
            if !label.is_empty() {
                v.push((format!(" {label}"), Role::Dim));
            }
            v
        };
        let mut out = Field::new(spans(&forms[0]));
        for f in &forms[1..] {
            out = out.or(rank, spans(f));
        }
        out
    }
    /// A dim label then a number (`out 30,123`).
    pub fn labelled(label: &str, forms: &[String], rank: u8) -> Field {
        let spans = |f: &str| -> Spans { vec![(format!("{label} "), Role::Dim), (f.to_string(), Role::Text)] };
        let mut out = Field::new(spans(&forms[0]));
        for f in &forms[1..] {
            out = out.or(rank, spans(f));
        }
        out
    }
    /// The spans of the first form (to build another field's form from).
    pub fn spans_owned(self) -> Spans {
        self.forms.into_iter().next().map(|f| f.1).unwrap_or_default()
    }
    /// A shorter form, taken from `rank` on.
    pub fn or(mut self, rank: u8, spans: Spans) -> Field {
        self.forms.push((rank, spans));
        self
    }
    /// From `rank` on the field may go.
    pub fn drop_at(self, rank: u8) -> Field {
        self.or(rank, Vec::new())
    }
    /// This field takes the room the others leave, at least `min` cells (cut with `…`).
    pub fn elastic(mut self, min: usize) -> Field {
        self.elastic = Some(min);
        self
    }
    fn spans(&self) -> &Spans {
        &self.forms[self.cur].1
    }
    fn full_width(&self) -> usize {
        self.spans().iter().map(|(t, _)| t.width()).sum()
    }
    fn width(&self) -> usize {
        let w = self.full_width();
        self.elastic.map_or(w, |m| w.min(m))
    }
    fn shown(&self) -> bool {
        !self.spans().is_empty()
    }
    /// The text of the form in use (tests read it).
    pub fn current(&self) -> String {
        self.spans().iter().map(|(t, _)| t.as_str()).collect()
    }
}

fn total(fields: &[Field], sep: usize) -> usize {
    let shown: Vec<&Field> = fields.iter().filter(|f| f.shown()).collect();
    shown.iter().map(|f| f.width()).sum::<usize>() + sep * shown.len().saturating_sub(1)
}

/// Choose each field's form so that the line fits `width` cells with `sep` cells between
/// fields.
pub fn fit_fields(fields: &mut [Field], sep: usize, width: usize) {
    while total(fields, sep) > width {
        let next = fields
            .iter()
            .enumerate()
            .filter(|(_, f)| f.cur + 1 < f.forms.len())
            .min_by_key(|(i, f)| (f.forms[f.cur + 1].0, std::cmp::Reverse(*i)))
            .map(|(i, _)| i);
        match next {
            Some(i) => fields[i].cur += 1,
            None => break,
        }
    }
    // No shorter form left: whole fields go, the rightmost first; never a part of one.
    while total(fields, sep) > width {
        match fields.iter_mut().rev().find(|f| f.shown()) {
            Some(f) => {
                f.forms.push((u8::MAX, Vec::new()));
                f.cur = f.forms.len() - 1;
            }
            None => break,
        }
    }
}

/// Fit the fields to `max` cells from x and draw them with `sep` between; returns the x after.
pub fn draw(buf: &mut Buffer, x: u16, y: u16, fields: &mut [Field], sep: (&str, Role), th: &Theme, max: u16) -> u16 {
    let sep_w = sep.0.width();
    fit_fields(fields, sep_w, max as usize);
    // The elastic field gets what the others leave.
    let spare = (max as usize).saturating_sub(total(fields, sep_w));
    let right = x + max;
    let mut x = x;
    let mut first = true;
    for f in fields.iter().filter(|f| f.shown()) {
        if !first {
            x = put(buf, x, y, sep.0, th.style(sep.1), right.saturating_sub(x));
        }
        first = false;
        match f.elastic {
            Some(min) => {
                let room = min.min(f.full_width()) + spare;
                let text = fit(&f.current(), room);
                let role = f.spans().first().map_or(Role::Text, |s| s.1);
                x = put(buf, x, y, &text, th.style(role), right.saturating_sub(x));
            }
            None => {
                for (t, role) in f.spans() {
                    x = put(buf, x, y, t, th.style(*role), right.saturating_sub(x));
                }
            }
        }
    }
    x
}

/// Fit the fields to `width` cells and join their text with `sep` (a box title).
pub fn fit_text(fields: &mut [Field], sep: &str, width: usize) -> String {
    fit_fields(fields, sep.width(), width);
    fields
        .iter()
        .filter(|f| f.shown())
        .map(|f| f.current())
        .collect::<Vec<_>>()
        .join(sep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::render::num::count_forms as count;

    fn line(fields: &mut [Field], w: usize) -> String {
        fit_fields(fields, 3, w);
        fields
            .iter()
            .filter(|f| f.shown())
            .map(|f| f.current())
            .collect::<Vec<_>>()
            .join(" · ")
    }

    fn fields() -> Vec<Field> {
        vec![
            Field::number(&count(1_234_567), Role::Text, "events", 5),
            Field::labelled("out", &count(30_123), 3),
            Field::text("(opus $1, haiku $2)", Role::Text).drop_at(1),
        ]
    }

    #[test]
    fn lower_ranks_go_first_then_numbers_shorten_never_cut() {
        assert_eq!(
            line(&mut fields(), 80),
            "1,234,567 events · out 30,123 · (opus $1, haiku $2)"
        );
        assert_eq!(line(&mut fields(), 40), "1,234,567 events · out 30,123");
        assert_eq!(line(&mut fields(), 28), "1,234,567 events · out 30.1k");
        assert_eq!(line(&mut fields(), 24), "1.2M events · out 30k");
        assert_eq!(line(&mut fields(), 20), "1M events · out 30k");
        // Nothing shorter left: the rightmost field goes whole.
        assert_eq!(line(&mut fields(), 12), "1M events");
        assert_eq!(line(&mut fields(), 3), "");
    }
}
