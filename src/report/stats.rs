//! `tracetui stats`: runs by status, LLM calls, tokens by kind and cost grouped by a key
//! (model, day, run, format), and per tool its calls, errors and latency percentiles.
//!
//! Runs are loaded in parallel and each is reduced to a [`RunStats`] at once (the trace is
//! dropped), so that memory stays that of the runs being loaded. Tokens and cost come from
//! [`crate::cost::usage`] (the one definition every view uses); the counts are
//! [`crate::source::summary::of`]'s, as in `ls`, `show`, `check` and the runs list.

use crate::cost::Prices;
use crate::cost::usage::{Total, each_call};
use crate::formats::{LoadError, Summary};
use crate::model::Trace;
use crate::output::Output;
use crate::source::liveness::Liveness;
use crate::source::{Discovery, RunRef};
use serde_json::{Value, json};
use std::io::Write;

/// What the LLM table is grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum By {
    #[default]
    Model,
    Day,
    Tool,
    Run,
    Format,
    /// The subagent (nested run) the calls are in; `(main)` for the run's own context.
    Subagent,
    /// The run's project.
    Project,
}

impl By {
    pub fn as_str(self) -> &'static str {
        match self {
            By::Model => "model",
            By::Day => "day",
            By::Tool => "tool",
            By::Run => "run",
            By::Format => "format",
            By::Subagent => "subagent",
            By::Project => "project",
        }
    }
}

/// One tool's calls across runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolAgg {
    pub calls: u64,
    pub errors: u64,
    /// Durations (ns) of the calls that have one.
    pub durations: Vec<i64>,
}

impl ToolAgg {
    fn merge(&mut self, o: &ToolAgg) {
        self.calls += o.calls;
        self.errors += o.errors;
        self.durations.extend_from_slice(&o.durations);
    }
}

/// One run reduced to what `stats` adds up.
#[derive(Clone, Debug)]
pub struct RunStats {
    /// Counts, tokens and cost as every view shows them.
    pub summary: Summary,
    /// Tokens and cost by the model each call is priced as (`""`: no model), in order of use.
    pub by_model: Vec<(String, Total)>,
    /// By the UTC day of each call's start (the run's start when the call has none; `""`:
    /// neither is known).
    pub by_day: Vec<(String, Total)>,
    pub tools: Vec<(String, ToolAgg)>,
    /// By subagent (`""`: the main context), by tool (each tool's results' direct and
    /// carried cost; `calls` counts its results, `total_tokens` their estimated tokens; the
    /// row `""` is the cost that is no tool result's), and the run's costliest results.
    pub by_subagent: Vec<(String, Total)>,
    pub by_tool: Vec<(String, Total)>,
    pub top: Vec<TopResult>,
    /// The run's project (set by `collect`).
    pub project: String,
}

/// A tool result and what it cost (`stats --top results`).
#[derive(Clone, Debug)]
pub struct TopResult {
    pub run: String,
    pub path: std::path::PathBuf,
    pub tool: String,
    /// The call's own id, else its event index.
    pub call: String,
    pub bytes: u64,
    pub tokens: u64,
    pub method: &'static str,
    pub direct: u64,
    pub carried: u64,
    pub resent: u32,
}

/// How many of a run's costliest results it keeps for `--top results`.
pub const TOP_RESULTS: usize = 20;

fn add_to(
    list: &mut Vec<(String, Total)>,
    key: &str,
    u: Option<&crate::model::Usage>,
    c: &crate::cost::usage::CallCost,
) {
    match list.iter_mut().find(|(k, _)| k == key) {
        Some((_, t)) => t.add(u, c),
        None => {
            let mut t = Total::default();
            t.add(u, c);
            list.push((key.to_string(), t));
        }
    }
}

/// `YYYY-MM-DD` (UTC) of a time in ns.
pub fn day_of(ns: i64) -> String {
    use chrono::TimeZone;
    chrono::Utc.timestamp_nanos(ns).format("%Y-%m-%d").to_string()
}

impl RunStats {
    pub fn of(t: &Trace, prices: &Prices) -> RunStats {
        let mut summary = Summary::unpriced(t);
        let (run_start, _) = t.time_span();
        let mut by_model = Vec::new();
        let mut by_day: Vec<(String, Total)> = Vec::new();
        let mut total = Total::default();
        // Days change rarely from one call to the next: the last one's text is reused.
        let mut last_day: Option<(i64, String)> = None;
        each_call(t, prices, |e, model, u, c| {
            total.add(u, c);
            add_to(&mut by_model, model, u, c);
            let day = match e.start.or(run_start) {
                Some(ns) => {
                    let d = ns.div_euclid(86_400_000_000_000);
                    match &last_day {
                        Some((ld, s)) if *ld == d => s.clone(),
                        _ => {
                            let s = day_of(ns);
                            last_day = Some((d, s.clone()));
                            s
                        }
                    }
                }
                None => String::new(),
            };
            add_to(&mut by_day, &day, u, c);
        });
        // Run totals the recorder wrote where its calls add up to less: the same rule as
        // `run_cost` (priced at the run's model, on the run's day).
        if let Some((model, rt)) = crate::cost::usage::recorded_totals(t, prices, &total) {
            by_model = vec![(model, rt.clone())];
            by_day = vec![(run_start.map(day_of).unwrap_or_default(), rt.clone())];
            total = rt;
        }
        // What the recorder counted and the transcript does not log (a compaction's call):
        // the same rule as `run_cost`, on the day the run ends.
        for (model, u) in crate::cost::usage::unlogged(t, &by_model) {
            let c = crate::cost::usage::call_cost(prices, Some(&model), Some(&u));
            let mut x = Total::default();
            x.add_usage(Some(&u), &c);
            total.merge(&x);
            merge_into(&mut by_model, &model, &x);
            let (_, end) = t.time_span();
            merge_into(&mut by_day, &end.or(run_start).map(day_of).unwrap_or_default(), &x);
        }
        // The same definition as `source::summary::of` (run_cost over the same calls), at these
        // prices.
        summary.cost = Some(total);
        let mut tools: std::collections::HashMap<crate::model::StrRef, ToolAgg> = Default::default();
        for e in &t.events {
            if e.kind != crate::model::EventKind::ToolCall {
                continue;
            }
            let a = tools.entry(e.name).or_default();
            a.calls += 1;
            if e.is_error() {
                a.errors += 1;
            }
            if let Some(d) = e.duration.get() {
                a.durations.push(d);
            }
        }
        let mut named: Vec<(String, ToolAgg)> = Vec::with_capacity(tools.len());
        for (k, v) in tools {
            let name = t.str(k);
            match named.iter_mut().find(|(n, _)| n == name) {
                Some((_, a)) => a.merge(&v),
                None => named.push((name.to_string(), v)),
            }
        }
        let att = crate::cost::attribution::attribute(t, prices);
        let mut by_tool: Vec<(String, Total)> = att
            .by_tool()
            .into_iter()
            .map(|(name, n, d, c)| {
                let tokens: u64 = att.results.iter().filter(|r| r.tool == name).map(|r| r.tokens).sum();
                let t = Total {
                    calls: n,
                    total_tokens: tokens,
                    micros: d + c,
                    ..Default::default()
                };
                (name, t)
            })
            .collect();
        let rest = Total {
            micros: total_micros_of(&summary).saturating_sub(by_tool.iter().map(|(_, t)| t.micros).sum()),
            unknown: summary.cost.as_ref().map_or(0, |c| c.unknown),
            ..Default::default()
        };
        by_tool.push((String::new(), rest));
        let mut top: Vec<&crate::cost::attribution::ResultCost> = att.results.iter().collect();
        top.sort_by_key(|r| std::cmp::Reverse(r.direct + r.carried));
        let top = top
            .into_iter()
            .take(TOP_RESULTS)
            .map(|r| {
                let e = t.event(r.event);
                let id = t.str(e.source_id);
                TopResult {
                    run: summary.name.clone().unwrap_or_else(|| summary.id.clone()),
                    path: summary.path.clone(),
                    tool: r.tool.clone(),
                    call: if id.is_empty() {
                        format!("#{}", r.event)
                    } else {
                        id.to_string()
                    },
                    bytes: r.bytes,
                    tokens: r.tokens,
                    method: r.method.as_str(),
                    direct: r.direct,
                    carried: r.carried,
                    resent: r.resent,
                }
            })
            .collect();
        RunStats {
            summary,
            by_model,
            by_day,
            tools: named,
            by_subagent: att.by_subagent,
            by_tool,
            top,
            project: String::new(),
        }
    }

    pub fn total(&self) -> Total {
        self.summary.cost.clone().unwrap_or_default()
    }
}

fn total_micros_of(s: &Summary) -> u64 {
    s.cost.as_ref().map_or(0, |c| c.micros)
}

/// A run that could not be loaded.
pub type Failed = (RunRef, LoadError);

/// Load every run in parallel and reduce each trace to its [`RunStats`].
pub fn collect(runs: &[RunRef], prices: &Prices) -> (Vec<RunStats>, Vec<Failed>) {
    let places = crate::source::places::resolve_env();
    let per = crate::source::load_each(runs, |r, res| match res {
        Ok(loaded) => {
            let project = r.project(&places);
            let s: Vec<RunStats> = loaded
                .traces
                .iter()
                .map(|t| RunStats {
                    project: project.clone(),
                    ..RunStats::of(t, prices)
                })
                .collect();
            super::drop_in_background(loaded);
            Ok(s)
        }
        Err(e) => Err(Box::new((r.clone(), e))),
    });
    let mut out = Vec::new();
    let mut failed = Vec::new();
    for p in per {
        match p {
            Ok(s) => out.extend(s),
            Err(f) => failed.push(*f),
        }
    }
    (out, failed)
}

/// A time window on the runs' start (`--since`, `--until`), both ends included.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    pub since: Option<i64>,
    /// Exclusive end (ns).
    pub until: Option<i64>,
}

impl Window {
    pub fn any(&self) -> bool {
        self.since.is_some() || self.until.is_some()
    }
    /// Whether a run starting at `start` is in the window (a run with no start is not, when
    /// the window has an end).
    pub fn contains(&self, start: Option<i64>) -> bool {
        if !self.any() {
            return true;
        }
        let Some(s) = start else { return false };
        self.since.is_none_or(|a| s >= a) && self.until.is_none_or(|b| s < b)
    }
}

/// `YYYY-MM-DD` (a whole UTC day) or a timestamp tracetui reads in traces. `end`: the day
/// given is included (the window ends at the next midnight).
pub fn parse_date(s: &str, end: bool) -> Result<i64, String> {
    let s = s.trim();
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        let d = if end { d.succ_opt().unwrap_or(d) } else { d };
        return d
            .and_hms_opt(0, 0, 0)
            .and_then(|t| t.and_utc().timestamp_nanos_opt())
            .ok_or_else(|| format!("date out of range: {s}"));
    }
    match crate::model::parse_timestamp(&Value::String(s.to_string())) {
        Some(ns) => Ok(if end { ns.saturating_add(1) } else { ns }),
        None => Err(format!("not a date: {s:?} (expected YYYY-MM-DD or an ISO-8601 time)")),
    }
}

/// One row of the LLM table.
#[derive(Clone, Debug, Default)]
pub struct Group {
    pub key: String,
    pub runs: usize,
    pub total: Total,
    /// `--by run`: the run itself.
    pub run: Option<usize>,
}

/// One row of the tool table.
#[derive(Clone, Debug, Default)]
pub struct ToolRow {
    pub name: String,
    pub calls: u64,
    pub errors: u64,
    pub timed: usize,
    /// p50, p95, p99, max (ns), when some call has a duration.
    pub latency: Option<[i64; 4]>,
}

impl ToolRow {
    pub fn error_rate(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.errors as f64 / self.calls as f64
        }
    }
}

/// Everything `stats` shows, added up over some runs.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub by: By,
    pub runs: usize,
    /// Runs by status ([`STATUSES`]: the liveness rule's running, stale, ok, error, unknown).
    pub status: [usize; 5],
    pub total: Total,
    pub groups: Vec<Group>,
    pub tools: Vec<ToolRow>,
    /// Cost and tokens per day and per model, whatever the grouping (the charts').
    pub days: Vec<(String, Total)>,
    pub models: Vec<(String, Total)>,
}

/// The statuses runs are counted by: the one rule `ls` and the runs list use (a run that says
/// it is running but has not been written for long is stale).
pub const STATUSES: [Liveness; 5] = [
    Liveness::Running,
    Liveness::Stale,
    Liveness::Ok,
    Liveness::Error,
    Liveness::Unknown,
];

/// The nearest-rank percentile `p` (0-100) of sorted values.
pub fn percentile(sorted: &[i64], p: u32) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (sorted.len() * p as usize).div_ceil(100).max(1);
    Some(sorted[rank.min(sorted.len()) - 1])
}

fn merge_into(list: &mut Vec<(String, Total)>, key: &str, t: &Total) -> bool {
    match list.iter_mut().find(|(k, _)| k == key) {
        Some((_, x)) => {
            x.merge(t);
            false
        }
        None => {
            list.push((key.to_string(), t.clone()));
            true
        }
    }
}

impl Stats {
    pub fn build<'a>(runs: impl IntoIterator<Item = &'a RunStats>, by: By) -> Stats {
        let mut s = Stats {
            by,
            ..Default::default()
        };
        let mut groups: Vec<(String, Total)> = Vec::new();
        let mut group_runs: Vec<usize> = Vec::new();
        let mut run_of: Vec<Option<usize>> = Vec::new();
        let mut tools: Vec<(String, ToolAgg)> = Vec::new();
        let mut tool_at: std::collections::HashMap<String, usize> = Default::default();
        for (ri, r) in runs.into_iter().enumerate() {
            s.runs += 1;
            let live = crate::source::liveness::now(r.summary.status, &r.summary.path);
            let st = STATUSES.iter().position(|x| *x == live).unwrap_or(4);
            s.status[st] += 1;
            let total = r.total();
            s.total.merge(&total);
            let mut touch = |key: &str, t: &Total, run: Option<usize>| match groups.iter().position(|(k, _)| k == key) {
                Some(i) => {
                    groups[i].1.merge(t);
                    group_runs[i] += 1;
                }
                None => {
                    groups.push((key.to_string(), t.clone()));
                    group_runs.push(1);
                    run_of.push(run);
                }
            };
            match by {
                By::Model => r.by_model.iter().for_each(|(k, t)| touch(k, t, None)),
                By::Day => r.by_day.iter().for_each(|(k, t)| touch(k, t, None)),
                By::Format => touch(r.summary.format, &total, None),
                // Runs are their own rows (keyed by position: ids may repeat across sources).
                By::Run => {
                    groups.push((r.summary.id.clone(), total.clone()));
                    group_runs.push(1);
                    run_of.push(Some(ri));
                }
                By::Tool => r.by_tool.iter().for_each(|(k, t)| touch(k, t, None)),
                By::Subagent => r.by_subagent.iter().for_each(|(k, t)| touch(k, t, None)),
                By::Project => touch(&r.project, &total, None),
            }
            for (k, t) in &r.by_day {
                merge_into(&mut s.days, k, t);
            }
            for (k, t) in &r.by_model {
                merge_into(&mut s.models, k, t);
            }
            for (name, a) in &r.tools {
                match tool_at.get(name) {
                    Some(&i) => tools[i].1.merge(a),
                    None => {
                        tool_at.insert(name.clone(), tools.len());
                        tools.push((name.clone(), a.clone()));
                    }
                }
            }
        }
        s.groups = groups
            .into_iter()
            .zip(group_runs)
            .zip(run_of)
            .map(|(((key, total), runs), run)| Group { key, runs, total, run })
            .collect();
        match by {
            By::Day => s.groups.sort_by(|a, b| a.key.cmp(&b.key)),
            By::Run => {}
            // Most expensive first, then most tokens, then by name.
            _ => s.groups.sort_by(|a, b| {
                b.total
                    .micros
                    .cmp(&a.total.micros)
                    .then(b.total.total_tokens.cmp(&a.total.total_tokens))
                    .then_with(|| a.key.cmp(&b.key))
            }),
        }
        s.days.sort_by(|a, b| a.0.cmp(&b.0));
        s.models
            .sort_by(|a, b| b.1.total_tokens.cmp(&a.1.total_tokens).then_with(|| a.0.cmp(&b.0)));
        s.tools = tools
            .into_iter()
            .map(|(name, mut a)| {
                a.durations.sort_unstable();
                let d = &a.durations;
                let latency = match (percentile(d, 50), percentile(d, 95), percentile(d, 99), d.last()) {
                    (Some(a), Some(b), Some(c), Some(&m)) => Some([a, b, c, m]),
                    _ => None,
                };
                ToolRow {
                    name,
                    calls: a.calls,
                    errors: a.errors,
                    timed: d.len(),
                    latency,
                }
            })
            .collect();
        s.tools
            .sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.name.cmp(&b.name)));
        s
    }

    /// `ok 2 · error 1 · running 1`: the statuses that occur.
    pub fn status_line(&self) -> String {
        let parts: Vec<String> = STATUSES
            .iter()
            .zip(self.status)
            .filter(|(_, n)| *n > 0)
            .map(|(st, n)| format!("{} {n}", st.as_str()))
            .collect();
        if parts.is_empty() {
            "-".into()
        } else {
            parts.join(" · ")
        }
    }

    /// The LLM table as text cells: a header, one row per group, and the total. `names` gives
    /// a run's label for `--by run`.
    pub fn llm_table(&self, runs: &[RunStats]) -> Vec<Vec<String>> {
        let mut rows = vec![
            [
                self.by.as_str().to_uppercase().as_str(),
                "RUNS",
                "CALLS",
                "INPUT",
                "CACHE R",
                "CACHE W",
                "OUTPUT",
                "REASON",
                "TOKENS",
                "COST",
            ]
            .map(String::from)
            .to_vec(),
        ];
        if self.by == By::Tool {
            // Tool rows: the results' count, estimated tokens and direct + carried cost.
            rows[0][2] = "RESULTS".into();
        }
        let cells = |key: String, runs: usize, t: &Total| {
            vec![
                key,
                runs.to_string(),
                t.calls.to_string(),
                t.tokens.input.to_string(),
                t.tokens.cache_read.to_string(),
                t.tokens.cache_write.to_string(),
                t.tokens.output.to_string(),
                t.tokens.reasoning.to_string(),
                t.total_tokens.to_string(),
                cost_cell(t),
            ]
        };
        for g in &self.groups {
            let key = match (self.by, g.run.and_then(|i| runs.get(i))) {
                (By::Run, Some(r)) => r.summary.name.clone().unwrap_or_else(|| r.summary.id.clone()),
                (By::Model, _) if g.key.is_empty() => "(no model)".into(),
                (By::Day, _) if g.key.is_empty() => "(no time)".into(),
                (By::Tool, _) if g.key.is_empty() => "(not tool results)".into(),
                (By::Subagent, _) if g.key.is_empty() => "(main)".into(),
                (By::Project, _) if g.key.is_empty() => "(no project)".into(),
                _ => g.key.clone(),
            };
            rows.push(cells(crate::sanitize::line(&key).into_owned(), g.runs, &g.total));
        }
        rows.push(cells("TOTAL".into(), self.runs, &self.total));
        rows
    }

    /// The tool table as text cells: a header and one row per tool.
    pub fn tool_table(&self) -> Vec<Vec<String>> {
        let mut rows = vec![
            ["TOOL", "CALLS", "ERRORS", "ERR %", "P50", "P95", "P99", "MAX"]
                .map(String::from)
                .to_vec(),
        ];
        for t in &self.tools {
            let lat = |i: usize| {
                t.latency
                    .map(|l| crate::model::format_duration(l[i]))
                    .unwrap_or_else(|| "-".into())
            };
            rows.push(vec![
                crate::sanitize::line(if t.name.is_empty() { "-" } else { &t.name }).into_owned(),
                t.calls.to_string(),
                t.errors.to_string(),
                format!("{:.1}", t.error_rate() * 100.0),
                lat(0),
                lat(1),
                lat(2),
                lat(3),
            ]);
        }
        rows
    }

    pub fn json(&self, runs: &[RunStats]) -> Value {
        let mut status = serde_json::Map::new();
        status.insert("total".into(), json!(self.runs));
        for (st, n) in STATUSES.iter().zip(self.status) {
            status.insert(st.as_str().into(), json!(n));
        }
        let groups: Vec<Value> = self
            .groups
            .iter()
            .map(|g| {
                let mut v = total_json(&g.total);
                v["key"] = json!(g.key);
                v["runs"] = json!(g.runs);
                if let Some(r) = g.run.and_then(|i| runs.get(i)) {
                    let sm = &r.summary;
                    v["name"] = json!(sm.name);
                    v["format"] = json!(sm.format);
                    v["status"] = json!(sm.status);
                    v["start"] = json!(sm.start.map(crate::json::ts));
                    v["events"] = json!(sm.events);
                    v["tool_calls"] = json!(sm.tool_calls);
                    v["errors"] = json!(sm.errors);
                    crate::json::put_path(&mut v, "path", &sm.path);
                }
                v
            })
            .collect();
        let ms = |ns: i64| ns as f64 / 1e6;
        let tools: Vec<Value> = self
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "calls": t.calls,
                    "errors": t.errors,
                    "error_rate": t.error_rate(),
                    "timed": t.timed,
                    "latency_ms": t.latency.map(|l| json!({"p50": ms(l[0]), "p95": ms(l[1]), "p99": ms(l[2]), "max": ms(l[3])})),
                })
            })
            .collect();
        json!({
            "by": self.by.as_str(),
            "runs": status,
            "total": total_json(&self.total),
            "groups": groups,
            "tools": tools,
        })
    }
}

/// A total's cost as a cell: `-` for calls that recorded no usage at all (nothing to price).
pub fn cost_cell(t: &Total) -> String {
    if t.micros == 0 && t.unknown == 0 && t.total_tokens == 0 {
        "-".into()
    } else {
        t.cost_text()
    }
}

/// Tokens and cost as JSON: cost in dollars (null when no call's cost is known) and in
/// integer microdollars, and how many calls' costs are unknown (left out of both).
pub fn total_json(t: &Total) -> Value {
    let known = t.micros > 0 || t.unknown == 0;
    json!({
        "llm_calls": t.calls,
        "input": t.tokens.input,
        "cache_read": t.tokens.cache_read,
        "cache_write": t.tokens.cache_write,
        "output": t.tokens.output,
        "reasoning": t.tokens.reasoning,
        "tokens": t.total_tokens,
        "cost_usd": known.then(|| t.micros as f64 / 1e6),
        "cost_micros": known.then_some(t.micros),
        "cost_unknown_calls": t.unknown,
    })
}

/// Aligned columns: the first left, the rest right.
pub fn write_table(out: &mut dyn Write, rows: &[Vec<String>]) -> std::io::Result<()> {
    use unicode_width::UnicodeWidthStr;
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut w = vec![0; n];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.width());
        }
    }
    // A long key (a model or run name) is cut to keep rows on one line.
    w[0] = w[0].min(40);
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            let pad = w[i].saturating_sub(c.width());
            if i == 0 {
                let c = super::cut(c, 40);
                line.push_str(&c);
                line.push_str(&" ".repeat(w[0].saturating_sub(c.width())));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(c);
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// What a `stats` command asks for.
#[derive(Clone, Copy, Debug, Default)]
pub struct Request {
    pub by: By,
    pub window: Window,
    pub output: Output,
    /// `--check-costs`: the runs whose recorded cost differs from the computed one.
    pub check_costs: bool,
    /// `--top results`: the costliest tool results across runs instead of the tables.
    pub top_results: bool,
}

/// The costliest tool results of some runs, costliest first (at most [`TOP_RESULTS`]).
pub fn top_results(runs: &[RunStats]) -> Vec<&TopResult> {
    let mut all: Vec<&TopResult> = runs.iter().flat_map(|r| r.top.iter()).collect();
    all.sort_by(|a, b| {
        (b.direct + b.carried)
            .cmp(&(a.direct + a.carried))
            .then_with(|| a.run.cmp(&b.run))
            .then_with(|| a.call.cmp(&b.call))
    });
    all.truncate(TOP_RESULTS);
    all
}

fn top_json(r: &TopResult) -> Value {
    let mut v = json!({
        "run": r.run, "tool": r.tool, "call": r.call, "bytes": r.bytes, "tokens": r.tokens,
        "tokens_from": r.method, "resent": r.resent, "direct_micros": r.direct,
        "carried_micros": r.carried, "cost_micros": r.direct + r.carried,
    });
    crate::json::put_path(&mut v, "path", &r.path);
    v
}

fn top_table(top: &[&TopResult]) -> Vec<Vec<String>> {
    let mut rows = vec![
        [
            "RUN", "TOOL", "CALL", "BYTES", "TOKENS", "FROM", "RESENT", "DIRECT", "CARRIED", "COST",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for r in top {
        rows.push(vec![
            crate::sanitize::line(&r.run).into_owned(),
            crate::sanitize::line(&r.tool).into_owned(),
            crate::sanitize::line(&r.call).into_owned(),
            r.bytes.to_string(),
            r.tokens.to_string(),
            r.method.to_string(),
            r.resent.to_string(),
            crate::cost::dollars(r.direct),
            crate::cost::dollars(r.carried),
            crate::cost::dollars(r.direct + r.carried),
        ]);
    }
    rows
}

/// Run `stats` over what discovery found; returns the exit code (2 when a source could
/// not be read, as `ls` does; the others are still counted).
pub fn run(d: &Discovery, prices: &Prices, req: Request, out: &mut dyn Write) -> std::io::Result<u8> {
    if d.skipped.any() {
        eprintln!(
            "{}",
            crate::sanitize::line(&format!("tracetui: {}", d.skipped.message()))
        );
    }
    let mut code = 0;
    for e in &d.errors {
        eprintln!("{}", crate::sanitize::line(&format!("tracetui: {e}")));
        code = 2;
    }
    if req.check_costs {
        let (mut checked, failed) = super::money::collect(&d.runs, prices);
        for (_, e) in &failed {
            eprintln!("{}", crate::sanitize::line(&format!("tracetui: {e}")));
            code = 2;
        }
        checked.retain(|c| req.window.contains(c.summary.start));
        checked.sort_by(|a, b| {
            b.summary
                .start
                .cmp(&a.summary.start)
                .then_with(|| a.summary.id.cmp(&b.summary.id))
        });
        super::money::report(&checked, prices, req.output, out)?;
        return Ok(code);
    }
    let (mut runs, failed) = collect(&d.runs, prices);
    for (_, e) in &failed {
        eprintln!("{}", crate::sanitize::line(&format!("tracetui: {e}")));
        code = 2;
    }
    if req.window.any() {
        let before = runs.len();
        runs.retain(|r| req.window.contains(r.summary.start));
        let out_of = before - runs.len();
        if out_of > 0 {
            eprintln!(
                "tracetui: {} outside --since/--until left out",
                super::count(out_of, "run")
            );
        }
    }
    // A stable order for `--by run`: newest first, as `ls` lists them.
    runs.sort_by(|a, b| {
        let (a, b) = (&a.summary, &b.summary);
        b.start
            .cmp(&a.start)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.id.cmp(&b.id))
    });
    if req.top_results {
        let top = top_results(&runs);
        match req.output {
            Output::Json => {
                let v = json!({"top_results": top.iter().map(|r| top_json(r)).collect::<Vec<_>>()});
                crate::json::write_line(out, &v)?;
            }
            Output::Text if top.is_empty() => writeln!(out, "no tool result was read by a later LLM call")?,
            Output::Text => write_table(out, &top_table(&top))?,
        }
        return Ok(code);
    }
    let s = Stats::build(&runs, req.by);
    write(&s, &runs, req.output, failed.len() + d.errors.len(), out)?;
    Ok(code)
}

/// Print stats as text tables or one JSON object (`unreadable`: the sources that could not be
/// read, in the JSON). `runs`: those of `--by run`'s rows.
pub fn write(
    s: &Stats,
    runs: &[RunStats],
    output: Output,
    unreadable: usize,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    match output {
        Output::Json => {
            let mut v = s.json(runs);
            v["unreadable"] = json!(unreadable);
            crate::json::write_line(out, &v)?;
        }
        Output::Text => {
            writeln!(out, "{}: {}", super::count(s.runs, "run"), s.status_line())?;
            if s.total.unknown > 0 {
                writeln!(
                    out,
                    "cost leaves out {} of an unknown model or price (`tracetui prices MODEL`)",
                    super::count(s.total.unknown as usize, "call")
                )?;
            }
            writeln!(out)?;
            write_table(out, &s.llm_table(runs))?;
            writeln!(out)?;
            if s.tools.is_empty() {
                writeln!(out, "no tool calls")?;
            } else {
                write_table(out, &s.tool_table())?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), Some(50));
        assert_eq!(percentile(&v, 95), Some(95));
        assert_eq!(percentile(&v, 99), Some(99));
        assert_eq!(percentile(&[7], 99), Some(7));
        assert_eq!(percentile(&[1, 2], 50), Some(1));
        assert_eq!(percentile(&[], 50), None);
    }

    #[test]
    fn dates_are_whole_utc_days() {
        let a = parse_date("2026-11-20", false).unwrap();
        let b = parse_date("2026-11-20", true).unwrap();
        assert_eq!(b - a, 86_400_000_000_000);
        assert_eq!(day_of(a), "2026-11-20");
        assert_eq!(day_of(b - 1), "2026-11-20");
        assert!(parse_date("yesterday", false).is_err());
        let w = Window {
            since: Some(a),
            until: Some(b),
        };
        assert!(w.contains(Some(a)) && w.contains(Some(b - 1)));
        assert!(!w.contains(Some(b)) && !w.contains(None) && !w.contains(Some(a - 1)));
        assert!(Window::default().contains(None));
    }

    #[test]
    fn a_sample_run_adds_up_as_checked_by_hand() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/runs");
        let d = crate::source::discover(&[path], None);
        let (runs, failed) = collect(&d.runs, Prices::builtin());
        assert!(failed.is_empty());
        let inv = runs
            .iter()
            .find(|r| r.summary.name.as_deref() == Some("invoice-mailer"))
            .unwrap();
        // One claude-sonnet-4-5 call: 298 input x $3/M + 24 output x $15/M = $0.000894 + $0.00036.
        let t = inv.total();
        assert_eq!((t.calls, t.tokens.input, t.tokens.output, t.micros), (1, 298, 24, 1254));
        assert_eq!(inv.by_day, vec![("2026-11-20".to_string(), t.clone())]);
        assert_eq!(inv.by_model[0].0, "claude-sonnet-4-5");
        let send = &inv.tools.iter().find(|(n, _)| n == "send_email").unwrap().1;
        assert_eq!(
            (send.calls, send.errors, send.durations.clone()),
            (1, 1, vec![3_100_000_000])
        );
        // The loaded counts, not run.json's (which says 1 error).
        assert_eq!(inv.summary.errors, Some(2));
        let s = Stats::build(&runs, By::Day);
        assert_eq!(s.runs, 5);
        assert_eq!(s.groups.iter().map(|g| g.total.calls).sum::<u64>(), s.total.calls);
        assert!(s.groups.windows(2).all(|w| w[0].key < w[1].key), "days in order");
        let json = s.json(&runs);
        assert_eq!(json["runs"]["total"], 5);
        assert_eq!(json["total"]["cost_unknown_calls"], s.total.unknown);
    }
}
