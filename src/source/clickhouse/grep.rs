//! `tracetui grep PATTERN clickhouse://...`: the search done in ClickHouse ([`grep_sql`]) over
//! each span's name, status message, attribute values and its events' attribute values, in the
//! window, at most `-m N` spans a trace and [`MAX_HITS`] in all.
//!
//! The pattern is never spliced into the SQL: it is a query parameter (`{p:String}`). As
//! local grep: a literal by default (`position`, or `positionCaseInsensitiveUTF8` with `-i`),
//! a regular expression with `--regex` (`match`, ClickHouse's RE2; `(?i)` with `-i`). A
//! pattern is first compiled as local grep compiles it (Rust's regex syntax); one RE2 cannot
//! take is refused with ClickHouse's reason. One line a span, its first matching field (as a
//! file's event gives its first), the snippet cut here around the match from a window the
//! server cuts (the values of a span may be megabytes; a row is at most a few kB).

use super::{Client, Error, Source, text};
use crate::output::Output;
use crate::sanitize;
use crate::search::grep::{Pattern, Snippet};
use serde_json::{Map, Value, json};
use std::io::Write;

/// Matching spans returned at most (one more is asked for, to know the list was cut).
pub const MAX_HITS: u64 = 10_000;
/// The longest pattern sent (a query parameter in the URL).
pub const MAX_PATTERN: usize = 4096;
/// Characters of a matching value the server sends: from a little before the match.
const WINDOW: u64 = 1000;
const BEFORE: u64 = 100;

/// What to search for, as `grep`'s flags say.
#[derive(Clone, Debug)]
pub struct Request {
    pub pattern: String,
    pub ignore_case: bool,
    pub regex: bool,
    /// `-m N`: at most N matching spans a trace.
    pub max_count: Option<usize>,
}

/// The pattern as the query parameter `p` holds it.
fn param(r: &Request) -> String {
    if r.regex && r.ignore_case {
        format!("(?i){}", r.pattern)
    } else {
        r.pattern.clone()
    }
}

/// The SQL: the spans of the window with a field that matches, their first such field and a
/// window of its value around the match.
pub fn grep_sql(s: &Source, w: &super::stats::Window, r: &Request) -> String {
    let (matches, pos) = match (r.regex, r.ignore_case) {
        (true, _) => (
            "match(f.2, {p:String})",
            "positionUTF8(v, regexpExtract(v, {p:String}, 0))",
        ),
        (false, false) => ("position(f.2, {p:String}) > 0", "positionUTF8(v, {p:String})"),
        (false, true) => (
            "positionCaseInsensitiveUTF8(f.2, {p:String}) > 0",
            "positionCaseInsensitiveUTF8(v, {p:String})",
        ),
    };
    let per_trace = match r.max_count {
        Some(n) => format!("\nLIMIT {} BY TraceId", n.max(1)),
        None => String::new(),
    };
    // The fields searched, and the first that matches: computed on the row, before the
    // classification (only matching spans are classified).
    let fields = format!(
        "SpanAttributes,
    arrayConcat([('name', SpanName), ('status', StatusMessage)],
      arrayMap((k, v) -> (toString(k), v), mapKeys(SpanAttributes), mapValues(SpanAttributes)),
      arrayFlatten(arrayMap((n, m) -> arrayMap((k, v) -> (concat('events.', n, '.', k), v), mapKeys(m), mapValues(m)),
        Events.Name, Events.Attributes))) AS fields,
    arrayFirstIndex(f -> {matches}, fields) AS at,
    fields[at].1 AS field, fields[at].2 AS v"
    );
    format!(
        "WITH spans AS (
{spans}
)
SELECT TraceId AS trace, SpanId AS span, toString(toUnixTimestamp64Nano(Timestamp)) AS start_ns,
  multiIf(is_tool, 'tool', is_llm, 'llm', is_error AND SpanName = 'exception', 'error', 'step') AS kind,
  multiIf(is_tool, {tool}, is_llm AND model != '', model, SpanName) AS name,
  field, {pos} AS pos, greatest(1, toInt64(pos) - {BEFORE}) AS w0,
  substringUTF8(v, w0, {WINDOW}) AS around, w0 > 1 AS cut_before, lengthUTF8(v) >= w0 + {WINDOW} AS cut_after,
  min(Timestamp) OVER (PARTITION BY TraceId) AS first
FROM spans
ORDER BY first DESC, TraceId, Timestamp, SpanId{per_trace}
LIMIT {limit}",
        spans = super::classified_spans(&s.table_sql(), &format!("{} AND at > 0", w.sql()), &fields, "1"),
        tool = super::stats::tool_name_sql(),
        limit = MAX_HITS + 1,
    )
}

/// One matching span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub trace: String,
    pub span: String,
    pub start: Option<i64>,
    pub kind: String,
    pub name: String,
    pub field: String,
    pub snippet: Snippet,
}

/// A row as a hit: the snippet found again in the window the server cut (by the local
/// pattern; where it does not find it there, the window's start, unmarked).
fn hit_of(row: &Map<String, Value>, p: &Pattern) -> Option<Hit> {
    let around = text(row.get("around"));
    let (a, b) = p.find(around).unwrap_or((0, 0));
    let mut snippet = crate::search::grep::snippet(around, (a, b));
    snippet.cut_before |= super::flag(row.get("cut_before")) && !around.is_empty();
    snippet.cut_after |= super::flag(row.get("cut_after"));
    let trace = text(row.get("trace"));
    if trace.is_empty() {
        return None;
    }
    Some(Hit {
        trace: trace.to_string(),
        span: text(row.get("span")).to_string(),
        start: super::i(row.get("start_ns")),
        kind: text(row.get("kind")).to_string(),
        name: text(row.get("name")).to_string(),
        field: text(row.get("field")).to_string(),
        snippet,
    })
}

/// What a search came to (grep's exit codes: 0 matches, 1 none, 2 trouble).
pub struct Outcome {
    pub hits: Vec<Hit>,
    /// More spans matched than [`MAX_HITS`].
    pub cut: bool,
}

/// Search the store.
pub fn search(c: &Client, w: &super::stats::Window, r: &Request) -> Result<Outcome, Error> {
    let src = c.source.display();
    if r.pattern.len() > MAX_PATTERN {
        return Err(Error(format!(
            "{src}: a pattern of {} bytes; a store is searched with at most {MAX_PATTERN}",
            r.pattern.len()
        )));
    }
    // Local grep's syntax and its errors first; the server's matcher is the one used.
    let p = Pattern::new(&r.pattern, r.ignore_case, r.regex).map_err(|e| Error(format!("{src}: {e}")))?;
    let rows = c
        .query_with(&grep_sql(&c.source, w, r), &[("p", &param(r))])
        .map_err(|e| {
            if e.0.contains("CANNOT_COMPILE_REGEXP") || e.0.contains("Code: 427") {
                Error(format!(
                    "{src}: ClickHouse's regular expressions (RE2) cannot take this pattern (no look-around, \
                 no back-references): {}",
                    e.0.strip_prefix(&format!("{src}: ")).unwrap_or(&e.0)
                ))
            } else {
                e
            }
        })?;
    let cut = rows.len() as u64 > MAX_HITS;
    let hits = rows
        .iter()
        .take(MAX_HITS as usize)
        .filter_map(|row| hit_of(row, &p))
        .collect();
    Ok(Outcome { hits, cut })
}

/// `URL?trace=ID span SPAN: kind name field: …snippet…`, the match in colour on a terminal
/// and in `[` `]` otherwise (as local grep's lines, the run's URL and span for the place).
pub fn hit_line(s: &Source, h: &Hit, color: bool) -> String {
    let mut line = format!(
        "{} span {}: {} {} {}: ",
        sanitize::line(&s.run_url(&h.trace)),
        sanitize::line(&h.span),
        sanitize::line(&h.kind),
        sanitize::line(&crate::report::cut(&h.name, 60)),
        sanitize::line(&h.field)
    );
    let sn = &h.snippet;
    let (open, close) = if color { ("\x1b[1;31m", "\x1b[0m") } else { ("[", "]") };
    if sn.cut_before {
        line.push('…');
    }
    line.push_str(&sanitize::line(&sn.text[..sn.start]));
    if sn.end > sn.start {
        line.push_str(open);
        line.push_str(&sanitize::line(&sn.text[sn.start..sn.end]));
        line.push_str(close);
    }
    line.push_str(&sanitize::line(&sn.text[sn.end..]));
    if sn.cut_after {
        line.push('…');
    }
    line
}

pub fn hit_json(s: &Source, h: &Hit) -> Value {
    let sn = &h.snippet;
    json!({
        "format": "clickhouse",
        "run": s.run_url(&h.trace),
        "trace": h.trace,
        "event_id": h.span,
        "start": h.start.map(crate::json::ts),
        "kind": h.kind,
        "name": h.name,
        "field": h.field,
        "snippet": sn.text,
        "match": [sn.text[..sn.start].chars().count(), sn.text[..sn.end].chars().count()],
    })
}

/// Print the hits; the exit code (grep's).
pub fn print(s: &Source, o: &Outcome, fmt: Output, color: bool, out: &mut dyn Write) -> std::io::Result<u8> {
    for h in &o.hits {
        match fmt {
            Output::Json => crate::json::write_line(out, &hit_json(s, h))?,
            Output::Text => writeln!(out, "{}", hit_line(s, h, color))?,
        }
    }
    Ok(if o.hits.is_empty() { 1 } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(p: &str, ignore_case: bool, regex: bool) -> Request {
        Request {
            pattern: p.into(),
            ignore_case,
            regex,
            max_count: None,
        }
    }

    #[test]
    fn the_pattern_is_a_parameter_never_sql() {
        let s = Source::parse("clickhouse://h/otel").unwrap();
        let w = super::super::stats::Window::of(&s);
        let hostile = "x'); DROP TABLE t; --\\";
        let q = grep_sql(&s, &w, &req(hostile, false, false));
        assert!(
            !q.contains("DROP") && q.contains("position(f.2, {p:String}) > 0"),
            "{q}"
        );
        assert!(q.contains(&format!("LIMIT {}", MAX_HITS + 1)));
        let q = grep_sql(
            &s,
            &w,
            &Request {
                max_count: Some(3),
                ..req("a.b", true, true)
            },
        );
        assert!(
            q.contains("match(f.2, {p:String})") && q.contains("LIMIT 3 BY TraceId"),
            "{q}"
        );
        assert_eq!(param(&req("a.b", true, true)), "(?i)a.b");
        assert_eq!(param(&req("a.b", true, false)), "a.b");
    }

    #[test]
    fn a_hit_marks_its_match_in_the_servers_window() {
        let p = Pattern::new("needle", false, false).unwrap();
        let row: Map<String, Value> = serde_json::from_value(json!({
            "trace": "ab", "span": "01", "start_ns": "5", "kind": "tool", "name": "search",
            "field": "gen_ai.tool.call.result", "around": format!("{}needle tail", "x".repeat(100)),
            "cut_before": 1, "cut_after": 0
        }))
        .unwrap();
        let h = hit_of(&row, &p).unwrap();
        let s = Source::parse("clickhouse://h/otel").unwrap();
        let line = hit_line(&s, &h, false);
        assert!(line.starts_with("clickhouse://h:8123/otel?trace=ab span 01: tool search gen_ai.tool.call.result: …"));
        assert!(line.ends_with("x[needle] tail"), "{line}");
    }
}
