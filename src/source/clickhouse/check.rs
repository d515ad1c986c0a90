//! `tracetui check clickhouse://...`: whether every trace of the window can be opened, and what
//! opening it would find, computed in ClickHouse ([`check_sql`]) without fetching a span.
//!
//! Per trace: its counts (as the runs list), and as diagnostics:
//! - errors (the trace cannot be opened whole): a trace id that is not hex (`show` and the
//!   runs list name a run by it), spans without a span id (nothing can hang below them);
//! - warnings (it opens, differently than it was written): no root span in the window (it
//!   began before the window, or its root is not written yet), spans whose parent is not in
//!   the trace (shown as roots, as in a file), repeats of a span id (skipped, as in a file),
//!   more spans than `show` opens.
//!
//! One page of traces is listed (problems first, then newest; `?limit=`, `?offset=`); the
//! totals and the exit code are the whole window's: 0 clean, 1 a trace with an error
//! diagnostic, 2 the store could not be read (as `check` of files).

use super::{Client, Error, MAX_SPANS, Source, classified_spans, flag, text, u};
use crate::model::{Diagnostic, RunStatus, Severity};
use crate::output::Output;
use serde_json::{Map, Value, json};
use std::io::Write;

/// The SQL: one row per trace of the window (a page of them), with the window's totals.
pub fn check_sql(s: &Source, w: &super::stats::Window) -> String {
    format!(
        "WITH spans AS (
{spans}
),
traces AS (
  SELECT TraceId, min(Timestamp) AS first, count() AS n_spans, countIf(is_tool) AS tool_calls,
    countIf(is_llm) AS llm_calls, countIf(is_error) AS errors,
    -- The calls' tokens, or the first agent span's totals where they say more (Trace::counts).
    if(countIf(has_run_usage) > 0, greatest(ifNull(sum(tokens), 0), {ru_tokens}), sum(tokens)) AS n_tokens,
    argMinIf(SpanName, Timestamp, ParentSpanId = '') AS name, countIf(ParentSpanId = '') AS roots,
    maxIf(is_error, ParentSpanId = '') AS root_error
  FROM spans
  GROUP BY TraceId
),
ids AS (
  SELECT TraceId, x.1 AS id, countIf(x.2 = 1) AS as_span, countIf(x.2 = 0) AS as_parent
  FROM {table}
  ARRAY JOIN arrayConcat([(SpanId, 1)], if(ParentSpanId != '', [(ParentSpanId, 0)], [])) AS x
  WHERE {window}
  GROUP BY TraceId, id
),
links AS (
  SELECT TraceId, sumIf(as_parent, as_span = 0 AND id != '') AS orphans,
    sumIf(as_span - 1, as_span > 1 AND id != '') AS repeats, sumIf(as_span, id = '') AS no_id
  FROM ids
  GROUP BY TraceId
)
SELECT TraceId AS trace, toString(toUnixTimestamp64Nano(first)) AS start_ns, n_spans AS spans, tool_calls,
  llm_calls, errors, n_tokens AS tokens, name, roots, root_error, orphans, repeats, no_id,
  NOT (length(TraceId) BETWEEN 1 AND 64 AND match(TraceId, '^[0-9a-fA-F]+$')) AS bad_id,
  n_spans > {max_spans} AS too_many,
  bad_id OR no_id > 0 AS has_error,
  roots = 0 OR orphans > 0 OR repeats > 0 OR too_many AS has_warning,
  count() OVER () AS window_traces, sum(toUInt64(has_error)) OVER () AS window_errors,
  sum(toUInt64(has_warning)) OVER () AS window_warnings
FROM traces INNER JOIN links USING (TraceId)
ORDER BY has_error DESC, has_warning DESC, first DESC, TraceId
LIMIT {limit} OFFSET {offset}",
        spans = classified_spans(&s.table_sql(), &w.sql(), "", "1"),
        ru_tokens = super::run_usage_tokens_sql(&format!("argMinIf({}, Timestamp, has_run_usage)", super::RUN_USAGE)),
        table = s.table_sql(),
        window = w.sql(),
        max_spans = MAX_SPANS,
        limit = s.limit,
        offset = s.offset,
    )
}

/// One trace as `check` reports it.
#[derive(Clone, Debug)]
pub struct TraceCheck {
    pub trace: String,
    pub name: Option<String>,
    pub start: Option<i64>,
    pub status: RunStatus,
    pub spans: u64,
    pub tool_calls: u64,
    pub llm_calls: u64,
    pub errors: u64,
    pub tokens: u64,
    pub diagnostics: Vec<Diagnostic>,
}

/// The window's totals (not only the page's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub traces: u64,
    pub with_errors: u64,
    pub with_warnings: u64,
}

fn count(n: u64, what: &str) -> String {
    crate::report::count(n as usize, what)
}

fn trace_of(s: &Source, r: &Map<String, Value>) -> TraceCheck {
    let trace = text(r.get("trace")).to_string();
    let at = s.run_url(&trace);
    let mut d = Vec::new();
    let n = |k: &str| u(r.get(k)).unwrap_or(0);
    if flag(r.get("bad_id")) {
        d.push(Diagnostic::error(
            &at,
            None,
            format!(
                "trace id {:?} is not hex: it cannot be opened (`show` takes ?trace=HEX)",
                trace
            ),
        ));
    }
    if n("no_id") > 0 {
        d.push(Diagnostic::error(
            &at,
            None,
            format!("{} without a span id", count(n("no_id"), "span")),
        ));
    }
    if n("roots") == 0 {
        d.push(Diagnostic::warning(
            &at,
            None,
            "no root span in the window: the run began before it, or its root is not written yet",
        ));
    }
    if n("orphans") > 0 {
        d.push(Diagnostic::warning(
            &at,
            None,
            format!(
                "{} whose parent is not in the trace (shown as roots)",
                count(n("orphans"), "span")
            ),
        ));
    }
    if n("repeats") > 0 {
        d.push(Diagnostic::warning(
            &at,
            None,
            format!(
                "{} of a span id (skipped when the run is opened)",
                count(n("repeats"), "repeat")
            ),
        ));
    }
    if flag(r.get("too_many")) {
        d.push(Diagnostic::warning(
            &at,
            None,
            format!("more than {MAX_SPANS} spans: `show` opens the first {MAX_SPANS}"),
        ));
    }
    let name = text(r.get("name"));
    TraceCheck {
        trace,
        name: (!name.is_empty()).then(|| name.to_string()),
        start: super::i(r.get("start_ns")),
        status: match (n("roots") > 0, flag(r.get("root_error"))) {
            (true, true) => RunStatus::Error,
            (true, false) => RunStatus::Ok,
            _ => RunStatus::Unknown,
        },
        spans: n("spans"),
        tool_calls: n("tool_calls"),
        llm_calls: n("llm_calls"),
        errors: n("errors"),
        tokens: n("tokens"),
        diagnostics: d,
    }
}

/// Check a page of the window's traces.
pub fn run(c: &Client, w: &super::stats::Window) -> Result<(Vec<TraceCheck>, Totals), Error> {
    let rows = c.query(&check_sql(&c.source, w))?;
    let totals = rows
        .first()
        .map(|r| Totals {
            traces: u(r.get("window_traces")).unwrap_or(0),
            with_errors: u(r.get("window_errors")).unwrap_or(0),
            with_warnings: u(r.get("window_warnings")).unwrap_or(0),
        })
        .unwrap_or_default();
    Ok((rows.iter().map(|r| trace_of(&c.source, r)).collect(), totals))
}

/// Print the page (as `check` prints traces) and the window's totals; the exit code.
pub fn print(
    s: &Source,
    w: &super::stats::Window,
    checks: &[TraceCheck],
    totals: Totals,
    fmt: Output,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<u8> {
    for t in checks {
        let url = s.run_url(&t.trace);
        match fmt {
            Output::Json => {
                let v = json!({
                    "format": "clickhouse",
                    "trace": t.trace,
                    "name": t.name,
                    "status": t.status,
                    "start": t.start.map(crate::json::ts),
                    "path": url,
                    "spans": t.spans,
                    "tool_calls": t.tool_calls,
                    "llm_calls": t.llm_calls,
                    "errors": t.errors,
                    "tokens": t.tokens,
                    "diagnostics": t.diagnostics.iter().map(crate::report::check::diag_json).collect::<Vec<_>>(),
                });
                crate::json::write_line(out, &v)?;
            }
            Output::Text => {
                let name = t.name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
                let line = format!(
                    "{url}: clickhouse trace {}{name}: {}, {}, {}, {}, status {}",
                    t.trace,
                    count(t.spans, "span"),
                    count(t.tool_calls, "tool call"),
                    count(t.llm_calls, "LLM call"),
                    count(t.errors, "error"),
                    t.status.as_str()
                );
                writeln!(out, "{}", crate::sanitize::line(&line))?;
                for d in &t.diagnostics {
                    writeln!(out, "  {}", crate::sanitize::line(&d.to_string()))?;
                }
            }
        }
    }
    let shown = checks.len() as u64;
    let mut line = format!(
        "tracetui: {} in {} of {}: {} with errors, {} with warnings",
        count(totals.traces, "trace"),
        w.describe(),
        s.display(),
        totals.with_errors,
        totals.with_warnings
    );
    if s.offset + shown < totals.traces {
        line.push_str(&format!(
            "; listed {} from {} (problems first), more with ?offset={}",
            shown,
            s.offset,
            s.offset + shown
        ));
    }
    writeln!(err, "{}", crate::sanitize::line(&line))?;
    let errors = totals.with_errors > 0
        || checks
            .iter()
            .any(|t| t.diagnostics.iter().any(|d| d.severity == Severity::Error));
    Ok(u8::from(errors))
}
