//! `tracetui stats clickhouse://...`: the LLM table and the tool table computed in ClickHouse
//! ([`stats_sql`], [`tools_sql`]), sent at once, priced here on the grouped token sums.
//!
//! The same [`Stats`] as a directory's is built from the rows, so the output (text and JSON)
//! is `stats`'s own. What differs, and is said so:
//! - the window bounds spans (`Timestamp`), as the runs list of a store does: a run that
//!   straddles its start is counted from there (it has no root span in it: status unknown);
//! - a group's cost is priced once on its token sums (within one model, price tier and way of
//!   counting the cache the price is linear), not call by call: it may differ from the sum of
//!   the calls' costs, each rounded to a microdollar, by under half a microdollar a call;
//! - `--by tool`, `subagent`, `project` and `format` need each run loaded (tool results'
//!   attribution, nesting, places) and are refused, as are `--check-costs` and `--top`.

use super::{Client, Error, Source, classified_spans, group_total, text, u};
use crate::model::Usage;
use crate::report::stats::{By, Group, RunStats, STATUSES, Stats, ToolRow};
use crate::source::liveness::Liveness;
use serde_json::{Map, Value};

/// Groups and tools returned at most (a store with more models or tools than this is cut, and
/// says so).
pub const MAX_ROWS: u64 = 10_000;

/// The start of a window: a duration back from the query's `now64()`, or a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Since {
    Ago(u64),
    At(i64),
}

/// The spans a pushed-down view reads: `Timestamp` in `[since, until)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub since: Since,
    /// Exclusive end (ns).
    pub until: Option<i64>,
}

impl Window {
    /// The source's own window (`?since=`, default 24 h).
    pub fn of(s: &Source) -> Window {
        Window {
            since: Since::Ago(s.since_secs),
            until: None,
        }
    }

    /// `--since` / `--until` as `stats` takes them (YYYY-MM-DD or an ISO-8601 time), or a
    /// duration back from now (30m, 6h, 7d) as `ls` of a store takes it.
    pub fn parse(s: &Source, since: Option<&str>, until: Option<&str>) -> Result<Window, String> {
        let mut w = Window::of(s);
        if let Some(v) = since {
            w.since = match super::parse_window(v) {
                Some(secs) => Since::Ago(secs),
                None => Since::At(crate::report::stats::parse_date(v, false)?),
            };
        }
        if let Some(v) = until {
            w.until = Some(crate::report::stats::parse_date(v, true)?);
        }
        Ok(w)
    }

    /// The WHERE condition on `Timestamp` (numbers only: nothing to escape).
    pub fn sql(&self) -> String {
        let since = match self.since {
            Since::Ago(secs) => format!("Timestamp >= now64(9) - INTERVAL {secs} SECOND"),
            Since::At(ns) => format!("Timestamp >= fromUnixTimestamp64Nano(toInt64({ns}))"),
        };
        match self.until {
            Some(ns) => format!("{since} AND Timestamp < fromUnixTimestamp64Nano(toInt64({ns}))"),
            None => since,
        }
    }

    /// As a user reads it, for messages.
    pub fn describe(&self) -> String {
        let since = match self.since {
            Since::Ago(secs) => format!(
                "the last {}",
                crate::model::format_duration((secs as i64).saturating_mul(1_000_000_000))
            ),
            Since::At(ns) => format!("since {}", crate::json::ts(ns)),
        };
        match self.until {
            Some(ns) => format!("{since} until {}", crate::json::ts(ns)),
            None => since,
        }
    }
}

/// The LLM table's rows for `--by model` or `--by day`, and the runs by status, in one query.
///
/// Per trace × model × recorded cost × way of counting × price tier (× day) the calls and
/// token sums; per trace its status (the root span's outcome) and its model (its first LLM
/// call's, for calls that name none, as a file's run model); then three grouping sets: the
/// sums per group key and pricing group (`g = 0`), the runs per group key (`g = 1`), the runs
/// per status (`g = 2`). A run whose agent span recorded more tokens than its calls add up to
/// is that span's totals instead, as one part at the run's model ([`super::classified_spans`]).
/// Only LLM calls, agent spans and root spans are aggregated: the others add no call and no
/// status, and leaving them out cuts the grouping (their attributes are still read, to
/// classify them); a run with none in the window is counted by [`count_sql`].
pub fn stats_sql(s: &Source, w: &Window, by: By) -> String {
    let day = match by {
        By::Day => "formatDateTime(Timestamp, '%F', 'UTC')",
        _ => "''",
    };
    let key = match by {
        By::Day => "x.5",
        _ => "pmodel",
    };
    let run_day = match by {
        By::Day => "formatDateTime(run_start, '%F', 'UTC')",
        _ => "''",
    };
    format!(
        "WITH spans AS (
{spans}
),
per AS (
  SELECT TraceId, model, cost IS NOT NULL AS recorded, anthropic, tier, day,
    minIf(Timestamp, is_llm) AS first_llm,
    countIf(ParentSpanId = '') AS n_roots, maxIf(is_error, ParentSpanId = '') AS root_error,
    countIf(is_llm) AS calls, countIf(is_llm AND has_usage) AS used,
    sum(input) AS s_input, sum(output) AS s_output, sum(cache_read) AS s_cache_read,
    sum(cache_write) AS s_cache_write, sum(reasoning) AS s_reasoning, sum(total) AS s_total,
    sum(toDecimal128OrZero(ifNull(cost, '0'), 9)) AS s_cost,
    sum(tokens) AS s_tokens, min(Timestamp) AS first_at,
    countIf(has_run_usage) AS n_run_usage,
    minIf(Timestamp, has_run_usage) AS run_at,
    argMinIf({run_usage}, Timestamp, has_run_usage) AS run_u
  FROM spans
  GROUP BY TraceId, model, recorded, anthropic, tier, day
),
runs AS (
  SELECT TraceId, status, run_model,
    -- An agent span's totals where they exceed the calls' tokens: the run's one part, at its
    -- model and start day (cost::usage::recorded_totals, as a file's run).
    if(has_ru AND {ru_tokens} > calls_tokens,
       [(run_model, ru.7 IS NOT NULL, false, {ru_tier}, {run_day}, run_calls, toUInt64(1), ru.1, ru.2, ru.3, ru.4,
         ru.5, ru.6, toDecimal128OrZero(ifNull(ru.7, '0'), 9))],
       parts) AS parts
  FROM (
    SELECT TraceId,
      multiIf(sum(n_roots) = 0, 'unknown', max(root_error), 'error', 'ok') AS status,
      argMinIf(model, first_llm, model != '' AND calls > 0) AS run_model,
      groupArray((model, recorded, anthropic, tier, day, calls, used, s_input, s_output, s_cache_read,
                  s_cache_write, s_reasoning, s_total, s_cost)) AS parts,
      sum(n_run_usage) > 0 AS has_ru, argMinIf(run_u, run_at, n_run_usage > 0) AS ru,
      ifNull(sum(s_tokens), 0) AS calls_tokens, sum(calls) AS run_calls, min(first_at) AS run_start
    FROM per
    GROUP BY TraceId
  )
)
SELECT grouping(key, pmodel, recorded, anthropic, tier, status) AS g, key, pmodel, recorded, anthropic, tier, status,
  uniqExactIf(TraceId, x.6 > 0 OR x.7 > 0) AS key_runs, uniqExact(TraceId) AS status_runs,
  sum(x.6) AS calls, sum(x.7) AS used,
  sum(x.8) AS s_input, sum(x.9) AS s_output, sum(x.10) AS s_cache_read, sum(x.11) AS s_cache_write,
  sum(x.12) AS s_reasoning, sum(x.13) AS s_total, toString(sum(x.14)) AS s_cost
FROM (
  SELECT TraceId, status, x, if(x.1 = '', run_model, x.1) AS pmodel, {key} AS key,
    x.2 AS recorded, x.3 AS anthropic, x.4 AS tier
  FROM runs ARRAY JOIN parts AS x
)
GROUP BY GROUPING SETS ((key, pmodel, recorded, anthropic, tier), (key), (status))
HAVING g != 1 OR calls > 0 OR used > 0
ORDER BY g, key, pmodel
LIMIT {limit}",
        spans = classified_spans(
            &s.table_sql(),
            &w.sql(),
            &format!("{day} AS day"),
            "is_llm OR is_run OR ParentSpanId = ''"
        ),
        limit = MAX_ROWS,
        run_day = run_day,
        run_usage = super::RUN_USAGE,
        ru_tokens = super::run_usage_tokens_sql("ru"),
        ru_tier = super::run_usage_tier_sql("ru"),
    )
}

/// The window's runs (traces), for the runs by status: the LLM query aggregates only LLM calls
/// and root spans, so a run with neither is not in its rows (it is a run of unknown status: no
/// root span in the window).
pub fn count_sql(s: &Source, w: &Window) -> String {
    format!(
        "SELECT uniqExact(TraceId) AS runs
FROM {table}
WHERE {window}
LIMIT 1",
        table = s.table_sql(),
        window = w.sql(),
    )
}

/// A tool span's tool, as the OTLP reader names it.
pub fn tool_name_sql() -> String {
    let a = |k: &str| format!("nullIf({}, '')", super::attr(k));
    format!(
        "coalesce({}, {}, {}, if(SpanName = 'claude_code.tool', {}, NULL),
      if(startsWith(SpanName, 'tools/call '), substring(SpanName, 12), NULL), SpanName)",
        a("gen_ai.tool.name"),
        a("tool.name"),
        a("mcp.tool.name"),
        a("tool_name")
    )
}

/// The tool table: per tool (named as the OTLP reader names it) its calls, errors and the
/// nearest-rank latency percentiles, as `stats` computes them from a file.
pub fn tools_sql(s: &Source, w: &Window) -> String {
    let rank = |p: u32| format!("d[toUInt64(greatest(1, intDiv(timed * {p} + 99, 100)))]");
    format!(
        "WITH spans AS (
{spans}
)
SELECT name, calls, errors, timed,
  toString({p50}) AS p50, toString({p95}) AS p95, toString({p99}) AS p99, toString(d[timed]) AS max
FROM (
  SELECT tool AS name, count() AS calls, countIf(is_error) AS errors,
    arraySort(groupArray(Duration)) AS d, length(d) AS timed
  FROM spans
  GROUP BY name
)
ORDER BY calls DESC, name
LIMIT {limit}",
        spans = classified_spans(
            &s.table_sql(),
            &w.sql(),
            &format!("{} AS tool", tool_name_sql()),
            "is_tool"
        ),
        p50 = rank(50),
        p95 = rank(95),
        p99 = rank(99),
        limit = MAX_ROWS,
    )
}

fn status_of(s: &str) -> Liveness {
    match s {
        "ok" => Liveness::Ok,
        "error" => Liveness::Error,
        _ => Liveness::Unknown,
    }
}

/// The stats of a store's window from the two queries' rows.
pub fn build(
    prices: &crate::cost::Prices,
    by: By,
    rows: &[Map<String, Value>],
    tool_rows: &[Map<String, Value>],
) -> Stats {
    let mut s = Stats {
        by,
        ..Default::default()
    };
    let mut groups: Vec<Group> = Vec::new();
    let group = |groups: &mut Vec<Group>, key: &str| -> usize {
        match groups.iter().position(|g| g.key == key) {
            Some(i) => i,
            None => {
                groups.push(Group {
                    key: key.to_string(),
                    ..Default::default()
                });
                groups.len() - 1
            }
        }
    };
    // `g` is ClickHouse's grouping() bitmask of (key, pmodel, recorded, anthropic, tier,
    // status), a bit set for each column the row's grouping set leaves out.
    for r in rows {
        let g = u(r.get("g")).unwrap_or(u64::MAX);
        let key = text(r.get("key"));
        match g {
            // (key, pmodel, recorded, anthropic, tier): one pricing group.
            0b000001 => {
                let recorded = super::flag(r.get("recorded"));
                let usage = Usage {
                    input: u(r.get("s_input")),
                    output: u(r.get("s_output")),
                    cache_read: u(r.get("s_cache_read")),
                    cache_write: u(r.get("s_cache_write")),
                    reasoning: u(r.get("s_reasoning")),
                    total: u(r.get("s_total")),
                    cost: if recorded {
                        r.get("s_cost")
                            .and_then(Value::as_str)
                            .and_then(crate::model::micros::micros_of_decimal)
                    } else {
                        None
                    },
                    ..Default::default()
                };
                let t = group_total(
                    prices,
                    text(r.get("pmodel")),
                    super::flag(r.get("anthropic")),
                    u(r.get("calls")).unwrap_or(0),
                    u(r.get("used")).unwrap_or(0),
                    usage,
                );
                let i = group(&mut groups, key);
                groups[i].total.merge(&t);
                s.total.merge(&t);
            }
            // (key): the runs with a call (or their recorded totals) in the group.
            0b011111 => {
                let n = u(r.get("key_runs")).unwrap_or(0) as usize;
                if n > 0 {
                    let i = group(&mut groups, key);
                    groups[i].runs = n;
                }
            }
            // (status): runs by status.
            0b111110 => {
                let n = u(r.get("status_runs")).unwrap_or(0) as usize;
                let st = status_of(text(r.get("status")));
                let at = STATUSES.iter().position(|x| *x == st).unwrap_or(4);
                s.status[at] += n;
                s.runs += n;
            }
            _ => {}
        }
    }
    s.groups = groups;
    match by {
        By::Day => s.groups.sort_by(|a, b| a.key.cmp(&b.key)),
        _ => s.groups.sort_by(|a, b| {
            b.total
                .micros
                .cmp(&a.total.micros)
                .then(b.total.total_tokens.cmp(&a.total.total_tokens))
                .then_with(|| a.key.cmp(&b.key))
        }),
    }
    s.tools = tool_rows.iter().map(tool_row).collect();
    s.tools
        .sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.name.cmp(&b.name)));
    s
}

/// The window has `runs` runs: those the LLM query did not see (neither a root span nor an LLM
/// call in the window) are of unknown status.
fn count_unknown(s: &mut Stats, runs: u64) {
    let at = STATUSES.iter().position(|x| *x == Liveness::Unknown).unwrap_or(4);
    let known = s.runs - s.status[at];
    let unknown = (runs as usize).saturating_sub(known);
    s.status[at] = unknown;
    s.runs = known + unknown;
}

fn tool_row(r: &Map<String, Value>) -> ToolRow {
    let ns = |k: &str| super::i(r.get(k));
    let timed = u(r.get("timed")).unwrap_or(0) as usize;
    ToolRow {
        name: text(r.get("name")).to_string(),
        calls: u(r.get("calls")).unwrap_or(0),
        errors: u(r.get("errors")).unwrap_or(0),
        timed,
        latency: match (timed, ns("p50"), ns("p95"), ns("p99"), ns("max")) {
            (1.., Some(a), Some(b), Some(c), Some(m)) => Some([a, b, c, m]),
            _ => None,
        },
    }
}

/// What `stats` of a store shows: the [`Stats`] and, for `--by run`, its runs.
pub struct Report {
    pub stats: Stats,
    pub runs: Vec<RunStats>,
    /// Said on stderr (a cut list).
    pub notes: Vec<String>,
}

/// The queries, sent at once (two threads: each scans the window once, in parallel on the
/// server), and the [`Stats`] they make.
pub fn run(c: &Client, w: &Window, by: By) -> Result<Report, Error> {
    let prices = crate::cost::usage::current();
    let src = c.source.display();
    match by {
        By::Model | By::Day | By::Run => {}
        other => {
            return Err(Error(format!(
                "{src}: stats --by {} is not computed in a store (it needs each run loaded); \
                 --by model, day or run are",
                other.as_str()
            )));
        }
    }
    let tools_q = tools_sql(&c.source, w);
    let joined = |r: std::thread::Result<Result<Vec<Map<String, Value>>, Error>>| {
        r.unwrap_or_else(|_| Err(Error(format!("{src}: a query thread failed"))))
    };
    if by == By::Run {
        let (runs, tools) = std::thread::scope(|sc| {
            let t = sc.spawn(|| c.query(&tools_q));
            (run_rows(c, w), joined(t.join()))
        });
        let (runs, tools) = (runs?, tools?);
        let mut stats = Stats::build(&runs, By::Run);
        stats.tools = build(prices, By::Run, &[], &tools).tools;
        return Ok(Report {
            stats,
            runs,
            notes: cut_note(0, tools.len()),
        });
    }
    let q = stats_sql(&c.source, w, by);
    let count_q = count_sql(&c.source, w);
    let (groups, tools, count) = std::thread::scope(|sc| {
        let t = sc.spawn(|| c.query(&tools_q));
        let n = sc.spawn(|| c.query(&count_q));
        let g = c.query(&q);
        (g, joined(t.join()), joined(n.join()))
    });
    let (groups, tools, count) = (groups?, tools?, count?);
    let runs = count
        .first()
        .and_then(|r| u(r.get("runs")))
        .ok_or_else(|| Error(format!("{src}: the count of runs came back without a number")))?;
    let mut stats = build(prices, by, &groups, &tools);
    count_unknown(&mut stats, runs);
    Ok(Report {
        stats,
        runs: Vec::new(),
        notes: cut_note(groups.len(), tools.len()),
    })
}

fn cut_note(groups: usize, tools: usize) -> Vec<String> {
    if groups as u64 >= MAX_ROWS || tools as u64 >= MAX_ROWS {
        vec![format!(
            "more than {MAX_ROWS} rows of groups or tools: the table is cut (narrow the window)"
        )]
    } else {
        Vec::new()
    }
}

/// `--by run`: the runs list of the window (the runs-list query), each run one row.
fn run_rows(c: &Client, w: &Window) -> Result<Vec<RunStats>, Error> {
    let mut src = c.source.clone();
    src.limit = super::MAX_LIMIT;
    src.offset = 0;
    let q = super::runs_sql_in(&src, w);
    let rows = c.query(&q)?;
    if rows.len() as u64 >= super::MAX_LIMIT {
        return Err(Error(format!(
            "{}: more than {} runs in {}: too many to list one a row; narrow the window (--since, --until)",
            c.source.display(),
            super::MAX_LIMIT,
            w.describe()
        )));
    }
    let prices = crate::cost::usage::current();
    let runs = rows
        .iter()
        .filter_map(|r| super::summary_of(&c.source, r, prices))
        .map(|summary| RunStats {
            summary,
            by_model: Vec::new(),
            by_day: Vec::new(),
            tools: Vec::new(),
            by_subagent: Vec::new(),
            by_tool: Vec::new(),
            top: Vec::new(),
            project: String::new(),
        })
        .collect();
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_numbers_in_the_sql() {
        let s = Source::parse("clickhouse://h/otel").unwrap();
        let w = Window::parse(&s, Some("2026-11-20"), Some("2026-11-21")).unwrap();
        assert_eq!(
            w.sql(),
            "Timestamp >= fromUnixTimestamp64Nano(toInt64(1795132800000000000)) \
             AND Timestamp < fromUnixTimestamp64Nano(toInt64(1795305600000000000))"
        );
        let w = Window::parse(&s, Some("6h"), None).unwrap();
        assert_eq!(w.sql(), "Timestamp >= now64(9) - INTERVAL 21600 SECOND");
        assert_eq!(Window::of(&s).sql(), "Timestamp >= now64(9) - INTERVAL 86400 SECOND");
        assert!(Window::parse(&s, Some("soon"), None).is_err());
    }

    #[test]
    fn runs_the_llm_query_did_not_see_are_unknown() {
        let mut s = Stats::default();
        let at = |l: Liveness| STATUSES.iter().position(|x| *x == l).unwrap();
        s.status[at(Liveness::Ok)] = 2;
        s.status[at(Liveness::Error)] = 1;
        s.status[at(Liveness::Unknown)] = 1;
        s.runs = 4;
        count_unknown(&mut s, 7);
        assert_eq!(
            (s.runs, s.status[at(Liveness::Unknown)], s.status[at(Liveness::Ok)]),
            (7, 4, 2)
        );
    }

    #[test]
    fn a_pricing_group_is_priced_once_and_counts_each_call() {
        let prices = crate::cost::Prices::builtin();
        // Three gpt-4o calls of 1000 input, 100 output tokens each: $2.50/M in, $10/M out.
        let u = Usage {
            input: Some(3000),
            output: Some(300),
            ..Default::default()
        };
        let t = group_total(prices, "gpt-4o", false, 3, 3, u);
        assert_eq!((t.calls, t.micros, t.unknown, t.total_tokens), (3, 10_500, 0, 3300));
        // An unpriced model: each call with usage is an unknown cost.
        let t = group_total(prices, "no-such-model-xyz", false, 4, 3, u);
        assert_eq!((t.calls, t.micros, t.unknown), (4, 0, 3));
    }
}
