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

/// The run's format as the runs list names it: a store's run is `clickhouse` there, though its
/// spans are read as OTLP/JSON.
fn format_of(t: &Trace) -> &'static str {
    if crate::source::clickhouse::is_url(&t.meta.source.to_string_lossy()) {
        "clickhouse"
    } else {
        t.meta.format
    }
}

/// The header's two lines' fields (tests read them).
pub fn lines(r: &RunView, t: &Trace) -> [Vec<Field>; 2] {
    let m = &t.meta;
    let (st, role) = super::runs::status_cell(m.status);
    let name = crate::sanitize::line(m.name.as_deref().unwrap_or(&m.id)).into_owned();
    let fact = |k: &str, v: String| -> Spans { vec![(format!("{k} "), Role::Dim), (v, Role::Text)] };
    let mut first = vec![
        Field::text(st, role),
        Field::new(vec![(name, Role::Title)]).elastic(24),
        Field::new(fact("format", format_of(t).to_string())).drop_at(4),
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
    let error_role = if c.errors > 0 { Role::Error } else { Role::Text };
    // Ranks: the lower goes first. The by-model costs go (1), the token kinds go (2, 3; the
    // detail pane lists them), the labels shorten (4), then the totals take units (5: `4.3M
    // tokens`, `$13.26`), the counts (6), and last `tok` and whole dollars (7).
    let mut second = vec![
        count_field(c.events, plural(c.events, "event", "events"), None, Role::Text),
        count_field(
            c.tool_calls,
            plural(c.tool_calls, "tool call", "tool calls"),
            Some(plural(c.tool_calls, "tool", "tools")),
            Role::Text,
        ),
        count_field(
            c.llm_calls,
            plural(c.llm_calls, "LLM call", "LLM calls"),
            Some("LLM"),
            Role::Text,
        ),
        count_field(c.errors, plural(c.errors, "error", "errors"), Some("err"), error_role),
    ];
    if c.tokens > 0 {
        let forms = num::count_forms(c.tokens);
        let mut f = Field::new(spans(&forms[0], "tokens", Role::Text));
        for x in &forms[1..] {
            f = f.or(5, spans(x, "tokens", Role::Text));
        }
        second.push(f.or(7, spans(forms.last().unwrap_or(&forms[0]), "tok", Role::Text)));
    } else {
        second.push(Field::new(spans("-", "tokens", Role::Text)));
    }
    let tt = &r.cost.total;
    if tt.total_tokens > 0 || tt.micros > 0 || tt.unknown > 0 {
        let k = &tt.tokens;
        let kind = |label: &str, n: u64, rank: u8| Field::labelled(label, &[thousands(n as usize)], 0).drop_at(rank);
        second.push(kind("in", k.input, 3));
        if k.cache_read + k.cache_write > 0 {
            second.push(
                Field::new(vec![
                    ("cache r ".into(), Role::Dim),
                    (thousands(k.cache_read as usize), Role::Text),
                    (" w ".into(), Role::Dim),
                    (thousands(k.cache_write as usize), Role::Text),
                ])
                .drop_at(2),
            );
        }
        second.push(kind("out", k.output, 3));
        if k.reasoning > 0 {
            second.push(kind("reasoning", k.reasoning, 2));
        }
        // The cost: exact, then to the cent (5), then whole dollars (7); never cut.
        let forms = num::cost_forms(tt);
        let mut f = Field::labelled("cost", &forms[..1], 0);
        for (i, x) in forms.iter().enumerate().skip(1) {
            f = f.or(
                if i == 1 { 5 } else { 7 },
                Field::labelled("cost", std::slice::from_ref(x), 0).spans_owned(),
            );
        }
        second.push(f);
        if r.cost.by_model.len() > 1 {
            let parts: Vec<String> = r
                .cost
                .by_model
                .iter()
                .map(|(m, mt)| {
                    format!(
                        "{} {}",
                        crate::sanitize::line(if m.is_empty() { "?" } else { m }),
                        num::cost_forms(mt)[0]
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

/// A number then its dim label.
fn spans(n: &str, label: &str, role: Role) -> Spans {
    vec![(n.to_string(), role), (format!(" {label}"), Role::Dim)]
}

/// A count with its label: the short label from rank 4, the number's shorter forms from 6.
fn count_field(n: usize, label: &str, short: Option<&str>, role: Role) -> Field {
    let forms = num::count_forms(n as u64);
    let mut f = Field::new(spans(&forms[0], label, role));
    let label = match short {
        Some(s) => {
            f = f.or(4, spans(&forms[0], s, role));
            s
        }
        None => label,
    };
    for x in &forms[1..] {
        f = f.or(6, spans(x, label, role));
    }
    f
}

pub fn render(buf: &mut Buffer, area: Rect, r: &RunView, t: &Trace, th: &Theme) {
    let [mut first, mut second] = lines(r, t);
    let w = area.width.saturating_sub(2);
    fields::draw(buf, area.x + 1, area.y, &mut first, ("  ", Role::Dim), th, w);
    if area.height > 1 {
        fields::draw(buf, area.x + 1, area.y + 1, &mut second, (" · ", Role::Dim), th, w);
    }
}
