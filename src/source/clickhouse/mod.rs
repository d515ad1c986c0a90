//! `clickhouse://[user@]host[:port]/[database]`: the spans the OpenTelemetry Collector's
//! ClickHouse exporter stores (`otel_traces`), read over ClickHouse's HTTP interface.
//!
//! Here in `source/` (not a `remote/` module of its own) because it is one more place runs
//! come from, beside directories: it lists runs (traces) and loads one; everything above
//! (`ls`, `show`, the views) gets the same [`Summary`] and [`Trace`] a file gives.
//!
//! - The runs list is two queries: [`page_sql`] finds the page's traces reading `TraceId` and
//!   `Timestamp` only, then [`runs_sql`] aggregates in ClickHouse, for those traces alone, per
//!   `TraceId` its start, end, span counts, tool / LLM calls and errors (classified by the same
//!   GenAI / OpenInference / MCP keys as `formats/otlp.rs`), and token sums per model. Cost is
//!   priced here from those per-model sums with tracetui's price list (a call's recorded cost,
//!   `gen_ai.usage.cost` / `llm.cost.total`, summed in SQL, wins for its calls as in a file).
//! - Opening a run fetches its spans ([`spans_sql`], bounded), writes them as one OTLP/JSON
//!   document and loads that with the OTLP reader: a span maps exactly as the same span in an
//!   OTLP/JSON file would (attribute values are strings in ClickHouse, which that reader reads
//!   as numbers where it wants numbers).
//! - Every query is read-only (`readonly=1`), bounded (`max_execution_time`,
//!   `max_result_bytes`, `LIMIT`, a time window, a client timeout and a cap on the bytes read).
//!   The password comes from TRACETUI_CLICKHOUSE_PASSWORD or `[clickhouse] password` in the
//!   config, is sent as basic auth and is never printed (a password in the URL is refused).

pub mod live;
pub mod runs;
pub mod tail;

use crate::formats::Summary;
use crate::model::{RunStatus, Usage};
use serde_json::{Map, Value, json};
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

pub mod check;
pub mod grep;
pub mod stats;

/// A password that Debug and Display never show.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// The environment variable that holds the password.
pub const PASSWORD_ENV: &str = "TRACETUI_CLICKHOUSE_PASSWORD";
/// The default time window: the last 24 hours.
pub const DEFAULT_SINCE_SECS: u64 = 24 * 3600;
/// Runs listed at most per page (`?limit=`, up to [`MAX_LIMIT`]).
pub const DEFAULT_LIMIT: u64 = 200;
pub const MAX_LIMIT: u64 = 10_000;
/// Spans of one run fetched at most; a larger run is cut and says so.
pub const MAX_SPANS: u64 = 100_000;
/// The most bytes read from one response (and asked of the server as `max_result_bytes`).
pub const MAX_RESPONSE_BYTES: u64 = 256 << 20;
/// Seconds the server may spend on a query (`max_execution_time`); the client waits a little
/// longer, so the server's own error arrives first.
pub const MAX_EXECUTION_SECS: u64 = 60;

/// Whether a PATH argument is a ClickHouse source.
pub fn is_url(s: &str) -> bool {
    s.starts_with("clickhouse://") || s.starts_with("clickhouses://")
}

/// A parsed `clickhouse://` source: where, as whom, which table, which window, which trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub secure: bool,
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub database: String,
    pub table: String,
    pub since_secs: u64,
    pub limit: u64,
    pub offset: u64,
    /// `?trace=ID`: one run (what `show` opens).
    pub trace: Option<String>,
}

/// A name ClickHouse takes unquoted and that needs no escaping (database, table).
fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A trace id as the exporter writes it (hex), so it can be put in SQL as it is.
fn is_trace_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `30m`, `6h`, `7d`, `90s` or a bare number of seconds.
pub fn parse_window(s: &str) -> Option<u64> {
    let s = s.trim();
    let (n, unit) = match s.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => (&s[..i], c),
        _ => (s, 's'),
    };
    let n: u64 = n.parse().ok()?;
    let mul = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86400,
        'w' => 7 * 86400,
        _ => return None,
    };
    n.checked_mul(mul).filter(|&v| v > 0)
}

impl Source {
    pub fn parse(url: &str) -> Result<Source, String> {
        let bad = |why: &str| format!("{why}: expected clickhouse://[user@]host[:port]/[database][?options]");
        let (secure, rest) = if let Some(r) = url.strip_prefix("clickhouses://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("clickhouse://") {
            (false, r)
        } else {
            return Err(bad("not a clickhouse:// URL"));
        };
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (user, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => {
                if u.contains(':') {
                    return Err(format!(
                        "a password in a clickhouse:// URL is not read (it would show in ps and shell history): \
                         set {PASSWORD_ENV} or [clickhouse] password in the config"
                    ));
                }
                if u.is_empty() || !u.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)) {
                    return Err(bad("a user name of letters, digits, `_`, `-`, `.`"));
                }
                (Some(u.to_string()), h)
            }
            None => (None, authority),
        };
        let mut s = Source {
            secure,
            host: String::new(),
            port: if secure { 8443 } else { 8123 },
            user,
            database: "default".into(),
            table: "otel_traces".into(),
            since_secs: DEFAULT_SINCE_SECS,
            limit: DEFAULT_LIMIT,
            offset: 0,
            trace: None,
        };
        // `[v6]:port`, `host:port`, `host`.
        let (host, port) = if let Some(r) = hostport.strip_prefix('[') {
            let (h, p) = r.split_once(']').ok_or_else(|| bad("an unclosed [ in the host"))?;
            (h, p.strip_prefix(':'))
        } else {
            match hostport.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        if host.is_empty() || !host.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._:".contains(&b)) {
            return Err(bad("no host, or a host that is not a name or an address"));
        }
        s.host = host.to_string();
        if let Some(p) = port {
            s.port = p
                .parse()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| bad("a port of 1 to 65535"))?;
        }
        let db = path.trim_end_matches('/');
        if !db.is_empty() {
            if !is_ident(db) {
                return Err(bad("a database name of letters, digits and `_`"));
            }
            s.database = db.to_string();
        }
        for kv in query.split('&').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            let num = |v: &str| v.parse::<u64>().map_err(|_| format!("?{k}= takes a number"));
            match k {
                "secure" => s.secure = matches!(v, "1" | "true" | ""),
                "table" if is_ident(v) => s.table = v.to_string(),
                "table" => return Err("?table= takes a table name of letters, digits and `_`".into()),
                "since" => {
                    s.since_secs = parse_window(v).ok_or("?since= takes a window such as 30m, 6h, 7d")?;
                }
                "limit" => s.limit = num(v)?.clamp(1, MAX_LIMIT),
                "offset" => s.offset = num(v)?,
                "trace" if is_trace_id(v) => s.trace = Some(v.to_ascii_lowercase()),
                "trace" => return Err("?trace= takes a trace id (hex)".into()),
                _ => {
                    return Err(format!(
                        "unknown option ?{k}= (known: table, since, limit, offset, trace, secure)"
                    ));
                }
            }
        }
        if secure && port.is_none() {
            s.port = 8443;
        }
        Ok(s)
    }

    /// The source as a user may read it: no password (it is never in the URL).
    pub fn display(&self) -> String {
        format!("{}{}", self.base_display(), self.options())
    }

    fn base_display(&self) -> String {
        format!(
            "{}://{}{}:{}/{}",
            if self.secure { "clickhouses" } else { "clickhouse" },
            self.user.as_deref().map(|u| format!("{u}@")).unwrap_or_default(),
            self.host_for_url(),
            self.port,
            self.database
        )
    }

    fn options(&self) -> String {
        let mut o = Vec::new();
        if self.table != "otel_traces" {
            o.push(format!("table={}", self.table));
        }
        if self.since_secs != DEFAULT_SINCE_SECS {
            o.push(format!("since={}s", self.since_secs));
        }
        if let Some(t) = &self.trace {
            o.push(format!("trace={t}"));
        }
        if o.is_empty() {
            String::new()
        } else {
            format!("?{}", o.join("&"))
        }
    }

    /// The source of one of its runs (what `ls` lists, what `show` takes).
    pub fn run_url(&self, trace: &str) -> String {
        let mut s = self.clone();
        s.trace = Some(trace.to_string());
        s.display()
    }

    fn host_for_url(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        }
    }

    /// The HTTP endpoint.
    fn endpoint(&self) -> String {
        format!(
            "{}://{}:{}/",
            if self.secure { "https" } else { "http" },
            self.host_for_url(),
            self.port
        )
    }

    fn table_sql(&self) -> String {
        // Both are checked identifiers; quoted all the same.
        format!("`{}`.`{}`", self.database, self.table)
    }
}

/// What can go wrong talking to ClickHouse; the message names the source (never a password).
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Error {}

/// A read-only client of one source.
pub struct Client {
    pub source: Source,
    password: Option<Secret>,
    http: reqwest::blocking::Client,
}

impl Client {
    /// `password`: the config's; the environment's wins.
    pub fn new(source: Source, config_password: Option<Secret>) -> Result<Client, Error> {
        let password = std::env::var(PASSWORD_ENV).ok().map(Secret).or(config_password);
        // reqwest is built with rustls and no provider chosen: ring is ours (no C toolchain
        // beyond cc, no OpenSSL). Installing twice is harmless (the first one stays).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut http = reqwest::blocking::Client::builder();
        if !source.secure {
            // No TLS to verify: the platform's root certificates are not loaded (100 ms of a
            // command's start, reading and parsing /etc/ssl/certs).
            http = http.tls_certs_only(std::iter::empty());
        }
        let http = http
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(MAX_EXECUTION_SECS + 15))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("tracetui/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error(format!("{}: cannot make an HTTP client: {e}", source.display())))?;
        Ok(Client { source, password, http })
    }

    /// Run one read-only query; its rows (`FORMAT JSONEachRow`), at most
    /// [`MAX_RESPONSE_BYTES`] of them.
    pub fn query(&self, sql: &str) -> Result<Vec<Map<String, Value>>, Error> {
        self.query_with(sql, &[])
    }

    /// [`Client::query`] with query parameters: `{name:String}` in the SQL takes the value of
    /// `("name", value)`, sent as the URL parameter `param_name` (the server parses it as
    /// the type's text form; [`param_text`] escapes it so), never spliced into the SQL.
    pub fn query_with(&self, sql: &str, params: &[(&str, &str)]) -> Result<Vec<Map<String, Value>>, Error> {
        let src = self.source.display();
        // Settings as URL parameters (ClickHouse's HTTP interface); all are plain words and
        // numbers (the database is a checked identifier), so nothing needs escaping.
        let url = format!(
            "{}?database={}&default_format=JSONEachRow&readonly=1&max_execution_time={MAX_EXECUTION_SECS}\
             &max_result_bytes={MAX_RESPONSE_BYTES}&result_overflow_mode=throw\
             &output_format_json_quote_64bit_integers=0",
            self.source.endpoint(),
            self.source.database
        );
        let mut url =
            reqwest::Url::parse(&url).map_err(|e| Error(format!("{src}: cannot make the query's URL: {e}")))?;
        for (k, v) in params {
            url.query_pairs_mut().append_pair(&format!("param_{k}"), &param_text(v));
        }
        let mut req = self.http.post(url).body(sql.to_string());
        let user = self.source.user.as_deref().unwrap_or("default");
        req = req.basic_auth(user, self.password.as_ref().map(|p| p.0.as_str()));
        let resp = req.send().map_err(|e| {
            let why = if e.is_timeout() {
                "timed out"
            } else if e.is_connect() {
                "cannot connect"
            } else {
                "request failed"
            };
            // The causes (connection refused, DNS, TLS), which the top error does not say;
            // no credentials among them (they are in a header).
            let e = e.without_url();
            let mut causes = vec![e.to_string()];
            let mut cur = std::error::Error::source(&e);
            while let Some(c) = cur.filter(|_| causes.len() < 6) {
                causes.push(c.to_string());
                cur = c.source();
            }
            Error(format!(
                "{src}: {why} to {} ({})",
                self.source.endpoint(),
                crate::sanitize::line(&causes.join(": "))
            ))
        })?;
        let status = resp.status();
        let mut body = Vec::new();
        resp.take(MAX_RESPONSE_BYTES + 1)
            .read_to_end(&mut body)
            .map_err(|e| Error(format!("{src}: reading the response: {e}")))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body[..body.len().min(2000)]);
            let text = crate::sanitize::line(text.trim());
            let hint = if text.contains("UNKNOWN_TABLE") || text.contains("UNKNOWN_DATABASE") {
                format!(
                    " (no table {}.{} there: is the Collector's clickhouse exporter writing to it? ?table= names another)",
                    self.source.database, self.source.table
                )
            } else {
                String::new()
            };
            return Err(Error(format!("{src}: HTTP {}: {text}{hint}", status.as_u16())));
        }
        if body.len() as u64 > MAX_RESPONSE_BYTES {
            return Err(Error(format!(
                "{src}: the response is larger than {} MiB; narrow the window (?since=)",
                MAX_RESPONSE_BYTES >> 20
            )));
        }
        let mut rows = Vec::new();
        for line in body.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            match serde_json::from_slice::<Value>(line) {
                Ok(Value::Object(m)) => rows.push(m),
                _ => {
                    return Err(Error(format!(
                        "{src}: the server sent something other than JSONEachRow rows"
                    )));
                }
            }
        }
        Ok(rows)
    }
}

/// A String query parameter's value as ClickHouse parses it (escaped text, as in
/// TabSeparated): a backslash, tab, newline or NUL would otherwise be read as an escape.
pub fn param_text(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    out
}

// ---- SQL. Classification follows formats/otlp.rs (`Attrs::classify`, `SpanRec::of`).

const LLM_OPS: &str = "('chat', 'text_completion', 'generate_content', 'completion', 'embeddings')";

/// The distinct prompt sizes above which some model of the price list has long-context
/// prices: calls are grouped by how many of them their prompt exceeds, so that a group's token
/// sums are priced at the tier each of its calls was (a sum of short prompts is not long).
pub(crate) fn tier_thresholds(prices: &crate::cost::Prices) -> Vec<u64> {
    let mut t: Vec<u64> = prices
        .entries
        .iter()
        .filter_map(|e| e.price.tier.as_ref().map(|t| t.above))
        .collect();
    t.sort_unstable();
    t.dedup();
    t
}

/// An attribute of the span, '' when missing. Read through the map's subcolumns: `m['k']`
/// reads and searches the whole map for each key (the tool table's query of 10M spans took
/// 2.5x as long in bench/clickhouse.py); the keys are LowCardinality and cheap to scan.
pub(crate) fn attr(k: &str) -> String {
    format!("SpanAttributes.values[indexOf(SpanAttributes.keys, '{k}')]")
}

/// The spans of `table` that pass `filter`, each classified as the OTLP reader classifies it
/// (formats/otlp.rs): a subquery's SQL. Its columns: the row's own (`TraceId`, `Timestamp`,
/// `Duration`, `ParentSpanId`, `SpanId`, `SpanName`, `ServiceName`, `StatusCode`), `extra`
/// (expressions on the row, which `filter` may name; a view that needs more of the row, such
/// as `SpanAttributes`, names it there), then `is_tool`, `is_llm`, `is_error`, and an LLM call's `model`, `anthropic` (Claude
/// Code's way of counting the cache), tokens (`input`, `output`, `cache_read`,
/// `cache_write`, `reasoning`, `total`), recorded `cost` (text), `has_usage`, price `tier`
/// and `tokens` (NULL or '' on other spans: usage on them is not counted, as in a file).
/// `keep` is a condition on the classified span (`is_llm`, `is_tool`, `is_run`, the row's
/// columns): the rows it drops are not looked into further.
///
/// An agent span (`is_run`: GenAI's `invoke_agent`/`create_agent`, OpenInference's `AGENT`)
/// may carry its run's summed usage (`has_run_usage`; its counts are `g_input` … `g_cost`,
/// the GenAI way): the views take a run's first such span's totals ([`RUN_USAGE`]) where they
/// exceed what its LLM calls add up to, as a file's run is counted
/// (`cost::usage::recorded_totals`).
///
/// Layered, each layer naming the one below's columns: one SELECT whose aliases name each
/// other made ClickHouse's analyzer expand every use of an alias into its whole expression,
/// and planning alone took 0.43 s for the runs list's query and 1.2 s for stats' (EXPLAIN, in
/// bench/clickhouse.py's store); the lookups of an LLM call's keys are made for LLM calls only
/// (`if` evaluates its branch for the rows that take it).
pub(crate) fn classified_spans(table: &str, filter: &str, extra: &str, keep: &str) -> String {
    let a = attr;
    // A key's value (parsed a layer above, used on LLM calls only), looked up on the row: not
    // `if(is_llm, .., '')`, as each such `if` copies the rows it evaluates its branch on (the
    // attribute map's arrays), which cost more than the lookup saves (bench/clickhouse.py: 8.4
    // s against 7.2 s for the LLM calls' token sums of 10M spans). The map is not passed up:
    // `keep` would copy it for the rows it keeps (the tool table's query took 4.7–5.7 s
    // against 3.4–4.1 s so).
    let llm = a;
    // Claude Code's keys, on its LLM spans only (an `if` taken by few rows copies few).
    let cc = |k: &str| format!("if(SpanName = 'claude_code.llm_request', {}, '')", a(k));
    let num = |cols: &[&str]| {
        let parts: Vec<String> = cols.iter().map(|c| format!("toUInt64OrNull({c})")).collect();
        format!("coalesce({}, NULL)", parts.join(", "))
    };
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(",\n    {extra}")
    };
    format!(
        "SELECT *,
  if(NOT is_llm, 0, {tier}) AS tier,
  if(has_usage, coalesce(total, base_input + if(anthropic, ifNull(output, 0), greatest(ifNull(output, 0), ifNull(reasoning, 0)))), NULL) AS tokens
FROM (
SELECT *,
  input IS NOT NULL OR output IS NOT NULL OR cache_read IS NOT NULL OR cache_write IS NOT NULL
    OR reasoning IS NOT NULL OR total IS NOT NULL OR cost IS NOT NULL AS has_usage,
  if(anthropic, ifNull(input, 0) + ifNull(cache_read, 0) + ifNull(cache_write, 0),
    greatest(ifNull(input, 0), ifNull(cache_read, 0) + ifNull(cache_write, 0))) AS base_input
FROM (
SELECT *,
  if(is_llm, if(anthropic, cc_input, g_input), NULL) AS input,
  if(is_llm, if(anthropic, cc_output, g_output), NULL) AS output,
  if(is_llm, if(anthropic, cc_cache_read, g_cache_read), NULL) AS cache_read,
  if(is_llm, if(anthropic, cc_cache_write, g_cache_write), NULL) AS cache_write,
  if(is_llm AND NOT anthropic, g_reasoning, NULL) AS reasoning,
  if(is_llm AND NOT anthropic, g_total, NULL) AS total,
  if(is_llm, if(anthropic, nullIf(r_cc_cost, ''), g_cost), NULL) AS cost,
  is_run AND (g_input IS NOT NULL OR g_output IS NOT NULL OR g_cache_read IS NOT NULL OR g_cache_write IS NOT NULL
    OR g_reasoning IS NOT NULL OR g_total IS NOT NULL OR g_cost IS NOT NULL) AS has_run_usage
FROM (
SELECT *,
  SpanName = 'claude_code.llm_request' AND g_input IS NULL AND g_output IS NULL AND g_total IS NULL
    AND g_cache_read IS NULL AND g_cache_write IS NULL AND g_reasoning IS NULL AND g_cost IS NULL AS anthropic
FROM (
SELECT *,
  if(NOT is_llm, '', coalesce(nullIf(r_rm, ''), nullIf(r_qm, ''), nullIf(r_lm, ''),
    if(SpanName = 'claude_code.llm_request', nullIf(r_ccm, ''), NULL), '')) AS model,
  {g_input} AS g_input,
  {g_output} AS g_output,
  {g_cache_read} AS g_cache_read,
  {g_cache_write} AS g_cache_write,
  toUInt64OrNull(r_reasoning) AS g_reasoning,
  toUInt64OrNull(r_total) AS g_total,
  coalesce(nullIf(r_cost1, ''), nullIf(r_cost2, '')) AS g_cost,
  toUInt64OrNull(r_cc_in) AS cc_input,
  toUInt64OrNull(r_cc_out) AS cc_output,
  toUInt64OrNull(r_cc_cr) AS cc_cache_read,
  toUInt64OrNull(r_cc_cw) AS cc_cache_write
FROM (
SELECT *,
  StatusCode IN ('STATUS_CODE_ERROR', 'Error') OR has_exception
    OR (is_tool AND toInt64OrZero(r_exit) != 0) AS is_error
FROM (
SELECT *,
  SpanName = 'claude_code.tool'
    OR (SpanName != 'claude_code.llm_request' AND (op = 'execute_tool'
    OR (op NOT IN {LLM_OPS} AND op NOT IN ('invoke_agent', 'create_agent')
        AND (oi = 'TOOL' OR (oi NOT IN ('LLM', 'EMBEDDING', 'AGENT', 'CHAIN') AND mcp = 'tools/call'))))) AS is_tool,
  SpanName = 'claude_code.llm_request'
    OR (SpanName != 'claude_code.tool' AND (op IN {LLM_OPS}
    OR (op NOT IN ('execute_tool', 'invoke_agent', 'create_agent')
        AND (oi IN ('LLM', 'EMBEDDING')
             OR (oi NOT IN ('TOOL', 'AGENT', 'CHAIN') AND mcp != 'tools/call' AND model_keys))))) AS is_llm,
  SpanName NOT IN ('claude_code.llm_request', 'claude_code.tool') AND (op IN ('invoke_agent', 'create_agent')
    OR (op NOT IN {LLM_OPS} AND op != 'execute_tool' AND oi = 'AGENT')) AS is_run
FROM (
SELECT TraceId, Timestamp, Duration, ParentSpanId, SpanId, SpanName, ServiceName, StatusCode,
    {op} AS op,
    upper({oi}) AS oi,
    {mcp} AS mcp,
    has(SpanAttributes.keys, 'gen_ai.system') OR has(SpanAttributes.keys, 'gen_ai.request.model')
      OR has(SpanAttributes.keys, 'llm.model_name') AS model_keys,
    has(Events.Name, 'exception') AS has_exception,
    {exit} AS r_exit,
    {rm} AS r_rm, {qm} AS r_qm, {lm} AS r_lm, {ccm} AS r_ccm,
    {in1} AS r_in1, {in2} AS r_in2, {in3} AS r_in3,
    {out1} AS r_out1, {out2} AS r_out2, {out3} AS r_out3,
    {cr1} AS r_cr1, {cr2} AS r_cr2, {cw1} AS r_cw1, {cw2} AS r_cw2,
    {reasoning} AS r_reasoning, {total} AS r_total, {cost1} AS r_cost1, {cost2} AS r_cost2,
    {cc_in} AS r_cc_in, {cc_out} AS r_cc_out, {cc_cr} AS r_cc_cr, {cc_cw} AS r_cc_cw, {cc_cost} AS r_cc_cost{extra}
  FROM {table}
  WHERE {filter}
)
)
WHERE {keep}
)
)
)
)
)",
        op = a("gen_ai.operation.name"),
        oi = a("openinference.span.kind"),
        mcp = a("mcp.method.name"),
        exit = a("process.exit.code"),
        rm = llm("gen_ai.response.model"),
        qm = llm("gen_ai.request.model"),
        lm = llm("llm.model_name"),
        ccm = cc("model"),
        in1 = llm("gen_ai.usage.input_tokens"),
        in2 = llm("gen_ai.usage.prompt_tokens"),
        in3 = llm("llm.token_count.prompt"),
        out1 = llm("gen_ai.usage.output_tokens"),
        out2 = llm("gen_ai.usage.completion_tokens"),
        out3 = llm("llm.token_count.completion"),
        cr1 = llm("gen_ai.usage.cache_read.input_tokens"),
        cr2 = llm("llm.token_count.prompt_details.cache_read"),
        cw1 = llm("gen_ai.usage.cache_creation.input_tokens"),
        cw2 = llm("llm.token_count.prompt_details.cache_write"),
        reasoning = llm("llm.token_count.completion_details.reasoning"),
        total = llm("llm.token_count.total"),
        cost1 = llm("llm.cost.total"),
        cost2 = llm("gen_ai.usage.cost"),
        // Claude Code's `claude_code.llm_request` spans: flat keys, input without the cache.
        cc_in = cc("input_tokens"),
        cc_out = cc("output_tokens"),
        cc_cr = cc("cache_read_tokens"),
        cc_cw = cc("cache_creation_tokens"),
        cc_cost = cc("cost_usd"),
        g_input = num(&["r_in1", "r_in2", "r_in3"]),
        g_output = num(&["r_out1", "r_out2", "r_out3"]),
        g_cache_read = num(&["r_cr1", "r_cr2"]),
        g_cache_write = num(&["r_cw1", "r_cw2"]),
        tier = tier_sql("base_input"),
    )
}

/// The price tier of a prompt of `base_input` tokens (the input with its cache): how many of
/// the price list's long-context thresholds it exceeds ([`tier_thresholds`]).
fn tier_sql(base_input: &str) -> String {
    let t: Vec<String> = tier_thresholds(crate::cost::usage::current())
        .iter()
        .map(u64::to_string)
        .collect();
    format!("arrayCount(x -> {base_input} > x, [{}])", t.join(", "))
}

/// A group of LLM calls of one model (and tier, and recorded cost or not, and Anthropic's or
/// OpenAI's way of counting the cache) as the SQL sums them: its [`Total`], priced once on
/// the sums (the price is linear in the tokens within a tier). `calls` counts every call,
/// `used` those that recorded usage (what an unknown or a recorded cost counts).
pub(crate) fn group_total(
    prices: &crate::cost::Prices,
    model: &str,
    anthropic: bool,
    calls: u64,
    used: u64,
    usage: Usage,
) -> crate::model::usage::Total {
    let usage = if anthropic {
        usage
    } else {
        crate::formats::usage_openai(usage)
    };
    let mut t = crate::model::usage::Total::default();
    if used > 0 && !usage.is_empty() {
        let charge = crate::cost::usage::call_cost(prices, Some(model), Some(&usage));
        t.add_usage(Some(&usage), &charge);
        // Counted once above; they are each call's.
        t.unknown *= used;
        t.recorded_calls *= used;
        t.recorded_uncomputed *= used;
    }
    t.calls = calls;
    t
}

/// The runs list's first query: the page's traces (newest first by their start, the first of
/// their spans in the window) and how many traces the window has. It reads `TraceId` and
/// `Timestamp` only: the attributes are read by [`runs_sql`] for this page's traces alone.
pub fn page_sql(s: &Source) -> String {
    format!(
        "SELECT TraceId AS trace, toString(toUnixTimestamp64Nano(min(Timestamp))) AS start_ns,
  count() OVER () AS traces
FROM {table}
WHERE {window}
GROUP BY TraceId
ORDER BY min(Timestamp) DESC, TraceId
LIMIT {limit} OFFSET {offset}",
        table = s.table_sql(),
        window = stats::Window::of(s).sql(),
        limit = s.limit,
        offset = s.offset,
    )
}

/// The runs list's second query: one row per trace of the page ([`page_sql`]), newest first.
/// Its `models` are per (model, recorded cost or not): calls and token sums, priced in Rust.
///
/// Query parameters: `traces`, the page's trace ids, and `oldest`, the page's oldest start
/// (ns). Every span of the window of a page's trace is at or after that trace's start, so at
/// or after `oldest`; and a span of such a trace at or after `oldest` is in the window (it
/// starts at or after the window's start). So `Timestamp >= oldest` gives the same spans as
/// the window, and lets the engine skip the rest of the table (partitions, the sorting key's
/// time, the `TraceId` bloom filter) before it reads a map.
pub fn runs_sql(s: &Source) -> String {
    runs_sql_where(
        s,
        "TraceId IN {traces:Array(String)} AND Timestamp >= fromUnixTimestamp64Nano({oldest:Int64})",
        &format!("LIMIT {}", s.limit),
    )
}

/// The runs list in one aggregation over the spans of a window (`stats --by run`, which wants
/// every run of the window).
pub fn runs_sql_in(s: &Source, w: &stats::Window) -> String {
    runs_sql_where(s, &w.sql(), &format!("LIMIT {} OFFSET {}", s.limit, s.offset))
}

pub(super) fn runs_sql_where(s: &Source, filter: &str, page: &str) -> String {
    format!(
        "WITH spans AS (
{spans}
),
per_model AS (
  SELECT TraceId,
    min(Timestamp) AS first, max(toUnixTimestamp64Nano(Timestamp) + toInt64(Duration)) AS last_end,
    count() AS n_spans, countIf(is_tool) AS n_tools, countIf(is_llm) AS n_llms, countIf(is_error) AS n_errors,
    argMinIf(SpanName, Timestamp, ParentSpanId = '') AS root_name,
    argMinIf(ServiceName, Timestamp, ParentSpanId = '') AS root_service,
    countIf(ParentSpanId = '') AS n_roots, maxIf(is_error, ParentSpanId = '') AS root_error,
    model, cost IS NOT NULL AS recorded, anthropic, tier,
    countIf(is_llm) AS calls, countIf(is_llm AND has_usage) AS used,
    sum(input) AS s_input, sum(output) AS s_output, sum(cache_read) AS s_cache_read,
    sum(cache_write) AS s_cache_write, sum(reasoning) AS s_reasoning, sum(total) AS s_total,
    sum(toDecimal128OrZero(ifNull(cost, '0'), 9)) AS s_cost,
    sum(tokens) AS s_tokens,
    minIf(Timestamp, is_llm) AS first_llm,
    countIf(has_run_usage) AS n_run_usage,
    minIf(Timestamp, has_run_usage) AS run_at,
    argMinIf({run_usage}, Timestamp, has_run_usage) AS run_u
  FROM spans
  GROUP BY TraceId, model, recorded, anthropic, tier
)
SELECT TraceId AS trace,
  toString(toUnixTimestamp64Nano(min(first))) AS start_ns,
  toString(max(last_end)) AS end_ns,
  sum(n_spans) AS spans, sum(n_tools) AS tool_calls, sum(n_llms) AS llm_calls, sum(n_errors) AS errors,
  sum(s_tokens) AS tokens,
  argMin(root_name, if(root_name = '', 1, 0)) AS name,
  argMin(root_service, if(root_service = '', 1, 0)) AS service,
  sum(n_roots) > 0 AS has_root, max(root_error) AS root_failed,
  groupArray((model, recorded, calls, s_input, s_output, s_cache_read, s_cache_write, s_reasoning,
              s_total, toString(s_cost), anthropic, used)) AS models,
  argMinIf(model, first_llm, model != '' AND calls > 0) AS run_model,
  sum(n_run_usage) > 0 AS has_run_usage,
  argMinIf(run_u, run_at, n_run_usage > 0) AS run_usage
FROM per_model
GROUP BY TraceId
ORDER BY min(first) DESC, TraceId
{page}",
        spans = classified_spans(&s.table_sql(), filter, "", "1"),
        run_usage = RUN_USAGE,
    )
}

/// An agent span's run totals as the queries aggregate them (`argMinIf(RUN_USAGE, Timestamp,
/// has_run_usage)`: the first agent span's, by start; not by (start, span id), which read
/// every span's id for the rare tie): a tuple (input, output, cache read, cache write,
/// reasoning, total, cost as text), read by [`run_usage_of`].
///
/// Each count under `if(has_run_usage, …)`: the counts are parsed for every span that
/// reaches the aggregation otherwise, where a call's are parsed for LLM calls only (the runs
/// list's second query 1.28 s against 1.17 s, medians of 21 rounds; 1.07 s before agent spans
/// were counted).
pub(crate) const RUN_USAGE: &str = "(if(has_run_usage, g_input, NULL), if(has_run_usage, g_output, NULL), \
     if(has_run_usage, g_cache_read, NULL), if(has_run_usage, g_cache_write, NULL), \
     if(has_run_usage, g_reasoning, NULL), if(has_run_usage, g_total, NULL), if(has_run_usage, g_cost, NULL))";

/// A [`RUN_USAGE`] tuple's tokens and price tier in SQL (`u` names the tuple), as `tokens` and
/// `tier` are a call's (the cache and reasoning counted the GenAI way).
pub(crate) fn run_usage_tokens_sql(u: &str) -> String {
    format!(
        "coalesce({u}.6, greatest(ifNull({u}.1, 0), ifNull({u}.3, 0) + ifNull({u}.4, 0)) \
         + greatest(ifNull({u}.2, 0), ifNull({u}.5, 0)))"
    )
}

/// The price tier of a [`RUN_USAGE`] tuple's prompt (see `tier` in [`classified_spans`]).
pub(crate) fn run_usage_tier_sql(u: &str) -> String {
    tier_sql(&format!(
        "greatest(ifNull({u}.1, 0), ifNull({u}.3, 0) + ifNull({u}.4, 0))"
    ))
}

/// [`RUN_USAGE`]'s tuple as a [`Usage`] (GenAI's counts, the cache inside the input) and its
/// tokens as a file counts them; None when the row has none.
pub(crate) fn run_usage_of(v: Option<&Value>) -> Option<(Usage, u64)> {
    let t = v?.as_array()?;
    let usage = Usage {
        input: u(t.first()),
        output: u(t.get(1)),
        cache_read: u(t.get(2)),
        cache_write: u(t.get(3)),
        reasoning: u(t.get(4)),
        total: u(t.get(5)),
        cost: t
            .get(6)
            .and_then(Value::as_str)
            .and_then(crate::model::micros::micros_of_decimal),
        ..Default::default()
    };
    let tokens = crate::formats::usage_openai(usage).sum().unwrap_or(0);
    Some((usage, tokens))
}

/// A run's totals in place of its calls' where an agent span recorded more tokens than its LLM
/// calls add up to (`calls`): priced at the run's model, as `cost::usage::recorded_totals`
/// does for a file's run.
pub(crate) fn run_totals(
    prices: &crate::cost::Prices,
    run_model: &str,
    run: Option<(Usage, u64)>,
    calls: &crate::model::usage::Total,
) -> Option<crate::model::usage::Total> {
    let (usage, tokens) = run?;
    (tokens > calls.total_tokens).then(|| group_total(prices, run_model, false, calls.calls, 1, usage))
}

/// All spans of one trace in the window, oldest first, at most [`MAX_SPANS`] (+1 to know it
/// was cut). Columns as the exporter's DDL names them (old and new: the scope is read from
/// the span attributes the exporter adds, not from the newer `ScopeName` column).
pub fn spans_sql(s: &Source, trace: &str) -> String {
    format!(
        "SELECT toString(toUnixTimestamp64Nano(Timestamp)) AS start_ns, toString(Duration) AS duration,
  TraceId, SpanId, ParentSpanId, TraceState, SpanName, SpanKind, ServiceName,
  ResourceAttributes, SpanAttributes, StatusCode, StatusMessage,
  arrayMap(t -> toString(toUnixTimestamp64Nano(t)), Events.Timestamp) AS event_times,
  Events.Name AS event_names, Events.Attributes AS event_attrs,
  Links.TraceId AS link_traces, Links.SpanId AS link_spans, Links.TraceState AS link_states,
  Links.Attributes AS link_attrs
FROM {table}
WHERE TraceId = '{trace}' AND Timestamp >= now64(9) - INTERVAL {since} SECOND
ORDER BY Timestamp, SpanId
LIMIT {limit}",
        table = s.table_sql(),
        since = s.since_secs,
        limit = MAX_SPANS + 1,
    )
}

// ---- Rows to summaries and to OTLP/JSON.

fn u(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn i(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// A ClickHouse boolean in JSON: `true`, `1` or `"1"`.
fn flag(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        other => u(other) == Some(1),
    }
}

fn text(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or("")
}

/// One runs-list row as `ls` prints it, priced at `prices`.
pub fn summary_of(s: &Source, row: &Map<String, Value>, prices: &crate::cost::Prices) -> Option<Summary> {
    let trace = text(row.get("trace"));
    if trace.is_empty() {
        return None;
    }
    let start = i(row.get("start_ns"));
    let end = i(row.get("end_ns"));
    let mut total = crate::model::usage::Total::default();
    for m in row.get("models").and_then(Value::as_array).into_iter().flatten() {
        let Some(t) = m.as_array() else { continue };
        let recorded = flag(t.get(1));
        let usage = Usage {
            input: u(t.get(3)),
            output: u(t.get(4)),
            cache_read: u(t.get(5)),
            cache_write: u(t.get(6)),
            reasoning: u(t.get(7)),
            total: u(t.get(8)),
            cost: if recorded {
                t.get(9)
                    .and_then(Value::as_str)
                    .and_then(crate::model::micros::micros_of_decimal)
            } else {
                None
            },
            ..Default::default()
        };
        let model = t.first().and_then(Value::as_str).unwrap_or("");
        let (calls, used) = (u(t.get(2)).unwrap_or(0), u(t.get(11)).unwrap_or(0));
        total.merge(&group_total(prices, model, flag(t.get(10)), calls, used, usage));
    }
    let run = flag(row.get("has_run_usage"))
        .then(|| run_usage_of(row.get("run_usage")))
        .flatten();
    // The run's tokens: its calls', or its agent span's where that says more (`Trace::counts`).
    let tokens = match (u(row.get("tokens")), &run) {
        (n, Some(r)) => Some(n.unwrap_or(0).max(r.1)),
        (n, None) => n,
    };
    if let Some(t) = run_totals(prices, text(row.get("run_model")), run, &total) {
        total = t;
    }
    let name = text(row.get("name"));
    Some(Summary {
        id: trace.to_string(),
        name: (!name.is_empty()).then(|| name.to_string()),
        format: "clickhouse",
        path: PathBuf::from(s.run_url(trace)),
        // As the OTLP reader says it: the root span's outcome (a child's error the root
        // handled is not a failed run); without a root span in the window, unknown.
        status: match (flag(row.get("has_root")), flag(row.get("root_failed"))) {
            (true, true) => RunStatus::Error,
            (true, false) => RunStatus::Ok,
            _ => RunStatus::Unknown,
        },
        start,
        duration: match (start, end) {
            (Some(a), Some(b)) if b >= a => Some(b - a),
            _ => None,
        },
        events: u(row.get("spans")).map(|n| n as usize),
        tool_calls: u(row.get("tool_calls")).map(|n| n as usize),
        llm_calls: u(row.get("llm_calls")).map(|n| n as usize),
        errors: u(row.get("errors")).map(|n| n as usize),
        tokens,
        // Computed in ClickHouse, not by loading the run: exact counts, no diagnostics read.
        problems: Some(0),
        badges: Vec::new(),
        cost: Some(total),
        resume: None,
    })
}

fn attrs_of(v: Option<&Value>, skip: &[&str]) -> Value {
    let mut out = Vec::new();
    if let Some(Value::Object(m)) = v {
        for (k, v) in m {
            if skip.contains(&k.as_str()) {
                continue;
            }
            let s = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            out.push(json!({"key": k, "value": {"stringValue": s}}));
        }
    }
    Value::Array(out)
}

/// The exporter's SpanKind (`SPAN_KIND_CLIENT`, or `Client` from newer pdata) as OTLP's number.
fn kind_number(k: &str) -> u8 {
    let k = k.trim_start_matches("SPAN_KIND_").to_ascii_uppercase();
    match k.as_str() {
        "INTERNAL" => 1,
        "SERVER" => 2,
        "CLIENT" => 3,
        "PRODUCER" => 4,
        "CONSUMER" => 5,
        _ => 0,
    }
}

fn status_number(s: &str) -> u8 {
    match s.trim_start_matches("STATUS_CODE_").to_ascii_uppercase().as_str() {
        "OK" => 1,
        "ERROR" => 2,
        _ => 0,
    }
}

/// Spans rows → one OTLP/JSON document (`resourceSpans` per service and resource, a scope per
/// `otel.scope.name`), as the OTLP reader reads files.
pub fn otlp_document(rows: &[Map<String, Value>]) -> Value {
    // Resource key → (resource attrs, scope name → spans), in order of first appearance.
    type Scopes = Vec<(String, String, Vec<Value>)>;
    let mut resources: Vec<(String, Value, Scopes)> = Vec::new();
    for r in rows {
        let res = r.get("ResourceAttributes").cloned().unwrap_or(Value::Null);
        let mut res_attrs = attrs_of(Some(&res), &[]);
        let service = text(r.get("ServiceName"));
        if !service.is_empty()
            && !res.as_object().is_some_and(|m| m.contains_key("service.name"))
            && let Value::Array(a) = &mut res_attrs
        {
            a.push(json!({"key": "service.name", "value": {"stringValue": service}}));
        }
        let key = format!("{service}\u{0}{res}");
        let sa = r.get("SpanAttributes");
        let scope = sa
            .and_then(|m| m.get("otel.scope.name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let version = sa
            .and_then(|m| m.get("otel.scope.version"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let start = i(r.get("start_ns")).unwrap_or(0);
        let end = start.saturating_add(i(r.get("duration")).unwrap_or(0));
        let empty = Vec::new();
        let arr = |k: &str| r.get(k).and_then(Value::as_array).unwrap_or(&empty).clone();
        let (times, names, eattrs) = (arr("event_times"), arr("event_names"), arr("event_attrs"));
        let events: Vec<Value> = names
            .iter()
            .enumerate()
            .map(|(n, name)| {
                json!({
                    "timeUnixNano": times.get(n).and_then(Value::as_str).unwrap_or("0"),
                    "name": name.as_str().unwrap_or(""),
                    "attributes": attrs_of(eattrs.get(n), &[]),
                })
            })
            .collect();
        let (lt, ls, lst, la) = (
            arr("link_traces"),
            arr("link_spans"),
            arr("link_states"),
            arr("link_attrs"),
        );
        let links: Vec<Value> = lt
            .iter()
            .enumerate()
            .map(|(n, t)| {
                json!({
                    "traceId": t, "spanId": ls.get(n).cloned().unwrap_or_default(),
                    "traceState": lst.get(n).cloned().unwrap_or_default(),
                    "attributes": attrs_of(la.get(n), &[]),
                })
            })
            .collect();
        let mut status = Map::new();
        status.insert("code".into(), status_number(text(r.get("StatusCode"))).into());
        let msg = text(r.get("StatusMessage"));
        if !msg.is_empty() {
            status.insert("message".into(), msg.into());
        }
        let mut span = json!({
            "traceId": text(r.get("TraceId")),
            "spanId": text(r.get("SpanId")),
            "parentSpanId": text(r.get("ParentSpanId")),
            "name": text(r.get("SpanName")),
            "kind": kind_number(text(r.get("SpanKind"))),
            "startTimeUnixNano": start.to_string(),
            "endTimeUnixNano": end.to_string(),
            // The exporter adds the scope to the span's attributes; in OTLP it is the scope's.
            "attributes": attrs_of(sa, &["otel.scope.name", "otel.scope.version"]),
            "events": events,
            "links": links,
            "status": status,
        });
        let ts = text(r.get("TraceState"));
        if !ts.is_empty() {
            span["traceState"] = ts.into();
        }
        let ri = match resources.iter().position(|(k, ..)| *k == key) {
            Some(p) => p,
            None => {
                resources.push((key, res_attrs, Vec::new()));
                resources.len() - 1
            }
        };
        let scopes = &mut resources[ri].2;
        match scopes.iter_mut().find(|(n, v, _)| n == scope && v == version) {
            Some((_, _, spans)) => spans.push(span),
            None => scopes.push((scope.to_string(), version.to_string(), vec![span])),
        }
    }
    let rs: Vec<Value> = resources
        .into_iter()
        .map(|(_, attrs, scopes)| {
            let ss: Vec<Value> = scopes
                .into_iter()
                .map(|(name, version, spans)| {
                    let mut scope = Map::new();
                    if !name.is_empty() {
                        scope.insert("name".into(), name.into());
                    }
                    if !version.is_empty() {
                        scope.insert("version".into(), version.into());
                    }
                    json!({"scope": scope, "spans": spans})
                })
                .collect();
            json!({"resource": {"attributes": attrs}, "scopeSpans": ss})
        })
        .collect();
    json!({ "resourceSpans": rs })
}

/// The runs list of a source (one page), newest first.
pub fn list(c: &Client) -> Result<Vec<Summary>, Error> {
    Ok(list_page(c)?.runs)
}

/// One page of the runs list and how many runs the window has.
pub struct Page {
    pub runs: Vec<Summary>,
    /// Traces in the window (all pages); `None` for a page past the last (nothing said it).
    pub total: Option<u64>,
}

/// An Array(String) query parameter's value: `['a','b']`, each quoted and escaped as a
/// ClickHouse string literal (then [`param_text`] escapes the whole for the URL parameter).
fn array_param<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = items
        .into_iter()
        .map(|v| format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'")))
        .collect();
    format!("[{}]", quoted.join(","))
}

/// The runs list in two queries: [`page_sql`] finds the page's traces reading two columns,
/// then [`runs_sql`] aggregates the spans of those traces only (the attributes are what costs:
/// reading them for every span of a day takes seconds on 10M spans).
pub fn list_page(c: &Client) -> Result<Page, Error> {
    list_page_of(c, &c.source)
}

/// [`list_page`] of the page `s` names (its `limit` and `offset`: the explorer's next pages).
pub fn list_page_of(c: &Client, s: &Source) -> Result<Page, Error> {
    let page = c.query(&page_sql(s))?;
    let total = match page.first() {
        Some(r) => u(r.get("traces")),
        None if s.offset == 0 => Some(0),
        None => None,
    };
    let ids: Vec<&str> = page
        .iter()
        .map(|r| text(r.get("trace")))
        .filter(|t| !t.is_empty())
        .collect();
    let oldest = page.iter().filter_map(|r| i(r.get("start_ns"))).min();
    let (Some(oldest), false) = (oldest, ids.is_empty()) else {
        return Ok(Page {
            runs: Vec::new(),
            total,
        });
    };
    let rows = c.query_with(
        &runs_sql(s),
        &[
            ("traces", &array_param(ids.iter().copied())),
            ("oldest", &oldest.to_string()),
        ],
    )?;
    let prices = crate::cost::usage::current();
    let mut by_trace: std::collections::HashMap<&str, &Map<String, Value>> =
        rows.iter().map(|r| (text(r.get("trace")), r)).collect();
    // In the page's order (the same as the second query's, kept should a trace's spans have
    // gone between the two queries, by a TTL: it is then left out).
    let runs = ids
        .iter()
        .filter_map(|t| by_trace.remove(t))
        // Named by the source as given: a run's URL is the same from every page.
        .filter_map(|r| summary_of(&c.source, r, prices))
        .collect();
    Ok(Page { runs, total })
}

/// One run of a source, loaded through the OTLP reader from a private temporary file (kept
/// while the returned path lives: payloads are read from it when shown).
pub fn load(c: &Client, trace: &str) -> Result<(crate::formats::Loaded, tempfile::TempPath), Error> {
    let src = c.source.run_url(trace);
    if !is_trace_id(trace) {
        return Err(Error(format!("{src}: a trace id is hex")));
    }
    let mut rows = c.query(&spans_sql(&c.source, trace))?;
    if rows.is_empty() {
        return Err(Error(format!(
            "{src}: no spans of this trace in the last {} (?since= widens the window)",
            crate::model::format_duration((c.source.since_secs as i64).saturating_mul(1_000_000_000))
        )));
    }
    let cut = rows.len() as u64 > MAX_SPANS;
    rows.truncate(MAX_SPANS as usize);
    let doc = otlp_document(&rows);
    let mut f = tempfile::Builder::new()
        .prefix("tracetui-clickhouse-")
        .suffix(".json")
        .tempfile()
        .map_err(|e| Error(format!("{src}: a temporary file: {e}")))?;
    serde_json::to_writer(std::io::BufWriter::new(f.as_file_mut()), &doc)
        .map_err(|e| Error(format!("{src}: writing a temporary file: {e}")))?;
    let path = f.into_temp_path();
    let mut loaded =
        crate::formats::load(&path, Some(&crate::formats::otlp::Otlp)).map_err(|e| Error(format!("{src}: {e}")))?;
    for t in &mut loaded.traces {
        // Views name the run by its URL, not the temporary file (records are read through
        // `trace.files`, which keeps the file).
        t.meta.source = PathBuf::from(&src);
    }
    if cut {
        for t in &mut loaded.traces {
            t.diagnostics.push(crate::model::Diagnostic::warning(
                src.as_str(),
                None,
                format!("more than {MAX_SPANS} spans: the first {MAX_SPANS} are shown"),
            ));
        }
    }
    Ok((loaded, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse() {
        let s = Source::parse("clickhouse://reader@ch.example.com:9000/otel").unwrap();
        assert_eq!(
            (s.host.as_str(), s.port, s.database.as_str()),
            ("ch.example.com", 9000, "otel")
        );
        assert_eq!(s.user.as_deref(), Some("reader"));
        assert!(!s.secure);
        assert_eq!(s.endpoint(), "http://ch.example.com:9000/");
        let s = Source::parse("clickhouse://localhost").unwrap();
        assert_eq!(
            (s.port, s.database.as_str(), s.table.as_str()),
            (8123, "default", "otel_traces")
        );
        let s = Source::parse("clickhouses://h/").unwrap();
        assert_eq!((s.secure, s.port), (true, 8443));
        assert_eq!(s.endpoint(), "https://h:8443/");
        let s = Source::parse("clickhouse://h:8443/db?secure=1&since=6h&limit=5&trace=ABC1&table=spans").unwrap();
        assert!(s.secure);
        assert_eq!((s.since_secs, s.limit, s.table.as_str()), (6 * 3600, 5, "spans"));
        assert_eq!(s.trace.as_deref(), Some("abc1"));
        assert_eq!(
            s.display(),
            "clickhouses://h:8443/db?table=spans&since=21600s&trace=abc1"
        );
        let s = Source::parse("clickhouse://[::1]:8123/x").unwrap();
        assert_eq!(s.endpoint(), "http://[::1]:8123/");
    }

    #[test]
    fn bad_urls_say_why_and_never_echo_a_password() {
        let e = Source::parse("clickhouse://u:hunter2@h/db").unwrap_err();
        assert!(e.contains(PASSWORD_ENV) && !e.contains("hunter2"), "{e}");
        for bad in [
            "clickhouse:///db",
            "clickhouse://h:0/db",
            "clickhouse://h:99999/db",
            "clickhouse://h/db;drop",
            "clickhouse://h/db?trace=x'--",
            "clickhouse://h/db?table=a.b",
            "clickhouse://h/db?since=soon",
            "clickhouse://h/db?what=1",
            "clickhouse://h w/db",
            "http://h/db",
        ] {
            assert!(Source::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn windows_parse() {
        assert_eq!(parse_window("30m"), Some(1800));
        assert_eq!(parse_window("2d"), Some(172800));
        assert_eq!(parse_window("90"), Some(90));
        assert_eq!(parse_window("0h"), None);
        assert_eq!(parse_window("h"), None);
        assert_eq!(parse_window("99999999999999999999d"), None);
    }

    #[test]
    fn every_query_is_bounded() {
        let s = Source::parse("clickhouse://h/otel").unwrap();
        let q = page_sql(&s);
        assert!(
            q.contains("LIMIT 200 OFFSET 0") && q.contains("INTERVAL 86400 SECOND"),
            "{q}"
        );
        assert!(q.contains("`otel`.`otel_traces`"));
        let q = runs_sql(&s);
        assert!(
            q.contains("TraceId IN {traces:Array(String)}") && q.contains("LIMIT 200"),
            "{q}"
        );
        let q = spans_sql(&s, "abc");
        assert!(q.contains("TraceId = 'abc'") && q.contains(&format!("LIMIT {}", MAX_SPANS + 1)));
    }

    #[test]
    fn docs_remote_md_shows_the_sql_each_view_sends() {
        let doc = include_str!("../../../docs/remote.md");
        let s = Source::parse("clickhouse://localhost/otel").unwrap();
        let w = stats::Window::of(&s);
        let grep = grep::Request {
            pattern: "timed out".into(),
            ignore_case: false,
            regex: false,
            max_count: None,
        };
        let mut missing = Vec::new();
        for sql in [
            page_sql(&s),
            runs_sql(&s),
            spans_sql(&s, "5b8efff798038103d269b633813fc60c"),
            stats::stats_sql(&s, &w, crate::report::stats::By::Model),
            stats::tools_sql(&s, &w),
            stats::count_sql(&s, &w),
            grep::grep_sql(&s, &w, &grep),
            check::check_sql(&s, &w),
        ] {
            let block = format!("```sql\n{sql}\n```");
            if !doc.contains(&block) {
                missing.push(block);
            }
        }
        // All of them at once: the blocks to paste.
        assert!(
            missing.is_empty(),
            "docs/remote.md lacks, as sent:\n{}",
            missing.join("\n\n")
        );
    }

    #[test]
    fn trace_ids_are_quoted_in_the_array_parameter() {
        assert_eq!(array_param(["ab12", "o'k\\"]), "['ab12','o\\'k\\\\']");
    }

    #[test]
    fn an_unreachable_server_is_named_without_its_password() {
        // Port 1 on loopback: refused at once (nothing listens there).
        let s = Source::parse("clickhouse://reader@127.0.0.1:1/otel").unwrap();
        let c = Client::new(s, Some(Secret("hunter2".into()))).unwrap();
        let e = c.query("SELECT 1").unwrap_err().0;
        assert!(e.starts_with("clickhouse://reader@127.0.0.1:1/otel: "), "{e}");
        assert!(e.contains("cannot connect"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        assert_eq!(format!("{:?}", Secret("hunter2".into())), "Secret(…)");
    }

    #[test]
    fn an_agent_spans_totals_replace_the_calls_only_where_they_say_more() {
        let s = Source::parse("clickhouse://localhost/otel").unwrap();
        let prices = crate::cost::Prices::builtin();
        // One gpt-4o call of 1,000 + 100 tokens; the agent span says 10,000 in, 1,000 out
        // (and a cost it recorded, kept as recorded).
        let row = |run_input: u64, run_cost: &str| {
            serde_json::json!({
                "trace": "ab".repeat(16), "start_ns": "1767000000000000000", "end_ns": "1767000001000000000",
                "spans": 3, "tool_calls": 0, "llm_calls": 1, "errors": 0, "tokens": 1100,
                "name": "invoke_agent a", "has_root": 1, "root_failed": 0,
                "models": [["gpt-4o", 0, 1, 1000, 100, 0, 0, 0, null, "0", false, 1]],
                "run_model": "gpt-4o", "has_run_usage": 1,
                "run_usage": [run_input, 1000, null, null, null, null, run_cost],
            })
            .as_object()
            .unwrap()
            .clone()
        };
        let more = summary_of(&s, &row(10_000, "0.5"), prices).unwrap();
        let c = more.cost.as_ref().unwrap();
        assert_eq!((more.tokens, c.total_tokens, c.calls), (Some(11_000), 11_000, 1));
        assert_eq!((c.tokens.input, c.tokens.output, c.micros), (10_000, 1_000, 500_000));
        // Fewer than the calls: the calls count.
        let fewer = summary_of(&s, &row(50, ""), prices).unwrap();
        let c = fewer.cost.as_ref().unwrap();
        assert_eq!(
            (fewer.tokens, c.total_tokens, c.tokens.input),
            (Some(1_100), 1_100, 1_000)
        );
    }

    #[test]
    fn rows_map_to_otlp_as_the_exporter_stored_them() {
        let row: Map<String, Value> = serde_json::from_value(json!({
            "start_ns": "1000", "duration": "500", "TraceId": "ab", "SpanId": "01", "ParentSpanId": "",
            "TraceState": "", "SpanName": "chat", "SpanKind": "SPAN_KIND_CLIENT", "ServiceName": "svc",
            "ResourceAttributes": {"service.name": "svc"},
            "SpanAttributes": {"gen_ai.usage.input_tokens": "10", "otel.scope.name": "lib"},
            "StatusCode": "Error", "StatusMessage": "boom",
            "event_times": ["1200"], "event_names": ["exception"], "event_attrs": [{"exception.message": "x"}],
            "link_traces": [], "link_spans": [], "link_states": [], "link_attrs": []
        }))
        .unwrap();
        let d = otlp_document(&[row]);
        let rs = &d["resourceSpans"][0];
        assert_eq!(rs["scopeSpans"][0]["scope"]["name"], "lib");
        let sp = &rs["scopeSpans"][0]["spans"][0];
        assert_eq!((sp["kind"].as_u64(), sp["status"]["code"].as_u64()), (Some(3), Some(2)));
        assert_eq!(sp["endTimeUnixNano"], "1500");
        assert_eq!(
            sp["attributes"].as_array().unwrap().len(),
            1,
            "the scope is not a span attribute"
        );
        assert_eq!(sp["events"][0]["timeUnixNano"], "1200");
    }
}
