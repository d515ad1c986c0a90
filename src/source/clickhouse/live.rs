//! The live mode of a store: what changed since the last look, by span time.
//!
//! The Collector inserts a span when it ends, so a trace grows by spans whose *end*
//! (`Timestamp + Duration`) is recent, while their `Timestamp` (the start) may be old: an agent's
//! root span is inserted last and starts first. A poll therefore asks for the traces with a
//! span that ended after a watermark ([`changed_sql`]): the latest end seen less [`SLACK_NS`],
//! the delay the Collector's batching may add between a span's end and its insert. Those
//! traces are aggregated again as the runs list aggregates them ([`rerun_sql`]), so a growing
//! trace's row is current and a new trace is listed. A trace re-read within the slack is read
//! again whole, never half.
//!
//! An open run asks for its own count and last end ([`trace_sql`]) and is fetched again when
//! either moved (a span inserted late, with an old end, still changes the count).

use super::{Client, Error, Source, is_trace_id, runs_sql_where, summary_of, text};
use crate::formats::Summary;
use serde_json::Value;
use std::time::Duration;

/// How often the explorer looks for new spans.
pub const POLL: Duration = Duration::from_secs(2);
/// How long after its end a span may be inserted and still be seen by a poll (the Collector's
/// batch and exporter timeouts are seconds; a minute covers a retry).
pub const SLACK_NS: i64 = 60_000_000_000;
/// Traces re-aggregated per poll at most; more carry over to the next poll.
pub const MAX_CHANGED: u64 = 500;

fn end_expr() -> &'static str {
    "toUnixTimestamp64Nano(Timestamp) + toInt64(Duration)"
}

/// The traces of the window with a span that ended after `after_ns`, oldest change first.
pub fn changed_sql(s: &Source, after_ns: i64) -> String {
    format!(
        "SELECT TraceId AS trace, toString(max({end})) AS end_ns
FROM {table}
WHERE Timestamp >= now64(9) - INTERVAL {since} SECOND AND {end} > {after_ns}
GROUP BY TraceId
ORDER BY max({end}), TraceId
LIMIT {MAX_CHANGED}",
        end = end_expr(),
        table = s.table_sql(),
        since = s.since_secs,
    )
}

/// The runs-list rows of `traces` (checked hex ids), as the runs list aggregates them, over
/// the window.
pub fn rerun_sql(s: &Source, traces: &[String]) -> String {
    let ids: Vec<String> = traces.iter().map(|t| format!("'{t}'")).collect();
    runs_sql_where(
        s,
        &format!(
            "{} AND TraceId IN ({})",
            super::stats::Window::of(s).sql(),
            ids.join(", ")
        ),
        &format!("LIMIT {}", traces.len().max(1)),
    )
}

/// One run's span count and latest end in the window.
pub fn trace_sql(s: &Source, trace: &str) -> String {
    format!(
        "SELECT count() AS spans, toString(max({end})) AS end_ns
FROM {table}
WHERE TraceId = '{trace}' AND Timestamp >= now64(9) - INTERVAL {since} SECOND
LIMIT 1",
        end = end_expr(),
        table = s.table_sql(),
        since = s.since_secs,
    )
}

fn ns(v: Option<&Value>) -> Option<i64> {
    text(v).parse().ok()
}

/// One page of the runs list (`limit` rows from `offset`), newest first, as `ls` finds it.
pub fn page(c: &Client, offset: u64, limit: u64) -> Result<Vec<Summary>, Error> {
    let s = Source {
        limit,
        offset,
        ..c.source.clone()
    };
    Ok(super::list_page_of(c, &s)?.runs)
}

/// Where the next poll starts: spans that ended after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watermark(pub i64);

impl Watermark {
    /// The slack before the client's clock now (the first poll).
    pub fn now() -> Watermark {
        let now = chrono::Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX);
        Watermark(now.saturating_sub(SLACK_NS))
    }
}

/// The rows of the traces that grew since `mark`, which moves on.
pub fn poll(c: &Client, mark: &mut Watermark) -> Result<Vec<Summary>, Error> {
    let rows = c.query(&changed_sql(&c.source, mark.0))?;
    let mut ids = Vec::new();
    let mut last = None;
    for r in &rows {
        let id = text(r.get("trace"));
        if is_trace_id(id) {
            ids.push(id.to_ascii_lowercase());
        }
        last = last.max(ns(r.get("end_ns")));
    }
    if let Some(end) = last {
        // A full batch: the rest come next, from where this one ended (no slack, or the same
        // batch would come again). Otherwise everything up to `end` was seen.
        let next = if rows.len() as u64 >= MAX_CHANGED {
            end
        } else {
            end.saturating_sub(SLACK_NS)
        };
        mark.0 = mark.0.max(next);
    }
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = c.query(&rerun_sql(&c.source, &ids))?;
    let prices = crate::cost::usage::current();
    Ok(rows.iter().filter_map(|r| summary_of(&c.source, r, prices)).collect())
}

/// How far a run is: its span count and latest end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceState {
    pub spans: u64,
    pub end_ns: Option<i64>,
}

pub fn trace_state(c: &Client, trace: &str) -> Result<TraceState, Error> {
    if !is_trace_id(trace) {
        return Err(Error(format!("{}: a trace id is hex", c.source.run_url(trace))));
    }
    let rows = c.query(&trace_sql(&c.source, trace))?;
    let r = rows.first();
    Ok(TraceState {
        spans: r.and_then(|r| super::u(r.get("spans"))).unwrap_or(0),
        end_ns: r.and_then(|r| ns(r.get("end_ns"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_queries_are_bounded_and_quote_nothing_unchecked() {
        let s = Source::parse("clickhouse://h/otel").unwrap();
        let q = changed_sql(&s, 42);
        assert!(
            q.contains("> 42") && q.contains("LIMIT 500") && q.contains("INTERVAL 86400 SECOND"),
            "{q}"
        );
        let q = rerun_sql(&s, &["ab".into(), "cd".into()]);
        assert!(
            q.contains("AND TraceId IN ('ab', 'cd')") && q.contains("LIMIT 2"),
            "{q}"
        );
        let q = trace_sql(&s, "ab");
        assert!(q.contains("TraceId = 'ab'") && q.contains("LIMIT 1"), "{q}");
    }

    #[test]
    fn docs_remote_md_shows_the_live_sql_as_sent() {
        let doc = include_str!("../../../docs/remote.md");
        let s = Source::parse("clickhouse://localhost/otel").unwrap();
        for sql in [
            changed_sql(&s, 1795917748000000000),
            trace_sql(&s, "5b8efff798038103d269b633813fc60c"),
        ] {
            let block = format!("```sql\n{sql}\n```");
            assert!(doc.contains(&block), "docs/remote.md lacks, as sent:\n{block}");
        }
    }
}
