//! The run header: status, name, format, model and times; then counts, tokens and cost. On a
//! narrow screen the by-model costs go first, then the token kinds shorten (`1.2M`) and go,
//! then the counts shorten; a number is never cut (`cost $0` for $0.2748 read as free).

use super::fields::{self, Field, Spans};
use crate::model::{Trace, format_duration, format_ts};
use crate::tui::render::num;
use crate::tui::state::RunView;
use crate::tui::theme::{Role, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// The header's two lines' fields (tests read them).
pub fn lines(r: &RunView, t: &Trace) -> [Vec<Field>; 2] {
    let m = &t.meta;
    let (st, role) = super::runs::status_cell(m.status);
    let name = crate::sanitize::line(m.name.as_deref().unwrap_or(&m.id)).into_owned();
    let fact = |k: &str, v: String| -> Spans { vec![(format!("{k} "), Role::Dim), (v, Role::Text)] };
    let mut first = vec![
        Field::text(st, role),
        Field::new(vec![(name, Role::Title)]).elastic(12),
        Field::new(fact("format", m.format.to_string())).drop_at(4),
    ];
    if let Some(model) = &r.model {
        first.push(Field::new(fact("model", crate::sanitize::line(model).into_owned())).drop_at(3));
    }
    if let Some(a) = r.span.0 {
        let ts = format_ts(a);
        // To the minute, then gone: a time is never cut.
        let minute = ts.get(..16).unwrap_or(&ts).to_string();
        first.push(
            Field::new(fact("started", ts.clone()))
                .or(2, fact("started", minute))
                .drop_at(5),
        );
    }
    if let (Some(a), Some(b)) = r.span {
        first.push(Field::new(fact("took", format_duration(b - a))).drop_at(6));
    }

    let c = &r.counts;
    let plural = |n: usize, one: &'static str, many: &'static str| if n == 1 { one } else { many };
    let n = |v: usize| num::count_forms(v as u64);
    let error_role = if c.errors > 0 { Role::Error } else { Role::Text };
    let mut second = vec![
        Field::number(&n(c.events), Role::Text, plural(c.events, "event", "events"), 6),
        Field::number(
            &n(c.tool_calls),
            Role::Text,
            plural(c.tool_calls, "tool call", "tool calls"),
            6,
        )
        .or(7, count_spans(c.tool_calls, "tools")),
        Field::number(
            &n(c.llm_calls),
            Role::Text,
            plural(c.llm_calls, "LLM call", "LLM calls"),
            6,
        )
        .or(7, count_spans(c.llm_calls, "LLM")),
        Field::number(&n(c.errors), error_role, plural(c.errors, "error", "errors"), 6),
    ];
    let tokens = if c.tokens > 0 {
        fields::count(c.tokens as u64)
    } else {
        vec!["-".into()]
    };
    second.push(Field::number(&tokens, Role::Text, "tokens", 5).or(7, short_spans(&tokens, "tok")));
    let tt = &r.cost.total;
    if tt.total_tokens > 0 || tt.micros > 0 || tt.unknown > 0 {
        let k = &tt.tokens;
        second.push(Field::labelled("in", &n(k.input as usize), 2).drop_at(4));
        if k.cache_read + k.cache_write > 0 {
            let cache = |r: &str, w: &str| -> Spans {
                vec![
                    ("cache r ".into(), Role::Dim),
                    (r.to_string(), Role::Text),
                    (" w ".into(), Role::Dim),
                    (w.to_string(), Role::Text),
                ]
            };
            let (rf, wf) = (num::count_forms(k.cache_read), num::count_forms(k.cache_write));
            let mut f = Field::new(cache(&rf[0], &wf[0]));
            f = f.or(2, cache(rf.last().unwrap_or(&rf[0]), wf.last().unwrap_or(&wf[0])));
            second.push(f.drop_at(3));
        }
        second.push(Field::labelled("out", &num::count_forms(k.output), 2).drop_at(4));
        if k.reasoning > 0 {
            second.push(Field::labelled("reasoning", &num::count_forms(k.reasoning), 2).drop_at(3));
        }
        second.push(Field::labelled("cost", &num::cost_forms(tt), 5));
        if r.cost.by_model.len() > 1 {
            let parts: Vec<String> = r
                .cost
                .by_model
                .iter()
                .map(|(m, mt)| {
                    let forms = num::cost_forms(mt);
                    format!(
                        "{} {}",
                        crate::sanitize::line(if m.is_empty() { "?" } else { m }),
                        num::fit(&forms, 8)
                    )
                })
                .collect();
            second.push(Field::text(format!("({})", parts.join(", ")), Role::Text).drop_at(1));
        }
    }
    for b in t.meta.badges() {
        second.push(Field::text(format!("⚠ {}", crate::sanitize::line(&b)), Role::Warning).drop_at(8));
    }
    let diags = t.diagnostics.len();
    if diags > 0 {
        let what = format!("{} load problem{}", thousands(diags), if diags == 1 { "" } else { "s" });
        second.push(
            Field::text(format!("{what} (! lists them)"), Role::Warning)
                .or(1, vec![(format!("{what} (!)"), Role::Warning)]),
        );
    }
    [first, second]
}

fn thousands(n: usize) -> String {
    crate::model::thousands(n as u64)
}

fn count_spans(n: usize, label: &str) -> Spans {
    let f = num::count_forms(n as u64);
    vec![
        (f.last().cloned().unwrap_or_default(), Role::Text),
        (format!(" {label}"), Role::Dim),
    ]
}

fn short_spans(forms: &[String], label: &str) -> Spans {
    vec![
        (forms.last().cloned().unwrap_or_default(), Role::Text),
        (format!(" {label}"), Role::Dim),
    ]
}

pub fn render(buf: &mut Buffer, area: Rect, r: &RunView, t: &Trace, th: &Theme) {
    let [mut first, mut second] = lines(r, t);
    let w = area.width.saturating_sub(2);
    fields::draw(buf, area.x + 1, area.y, &mut first, ("  ", Role::Dim), th, w);
    if area.height > 1 {
        fields::draw(buf, area.x + 1, area.y + 1, &mut second, (" · ", Role::Dim), th, w);
    }
}
