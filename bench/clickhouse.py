#!/usr/bin/env python3
"""Issue 42's budgets for a ClickHouse store: with 10M spans in the exporter's `otel_traces`,
`tracetui ls clickhouse://...` (the runs list of the last day) in at most 1 s and
`tracetui stats --by model clickhouse://...` in at most 2 s.

Usage (from the repository root, after `cargo build --release`; needs python3 with chdb):
    python3 bench/clickhouse.py [--spans 10000000] [--traces 3000] [--repeat 5]
                                [--bin target/release/tracetui] [--compare OTHER_BUILD]

The engine is chdb (ClickHouse in Python) behind the test front (tests/clickhouse/chdb_http.py,
ClickHouse's HTTP protocol), its data in a temporary directory removed at the end. The table is
the exporter's own DDL, filled inside the engine by one INSERT ... SELECT FROM numbers(N) (no
row crosses Python): TRACES agent runs over the last 23 hours, each a root `invoke_agent` span
and alternating `chat` and `execute_tool` spans in three services, four models, GenAI token
attributes as the exporter stores them (strings), every 97th tool span failing with an
exception event.

Baselines, from the same run: the SQL tracetui sent (read back from the front's query log) sent
again directly over HTTP with the same settings (stats' queries at once, as tracetui sends
them), so the figures separate tracetui's own time (process start, pricing, printing) from the
engine's; the same SQL's planning alone (EXPLAIN); and the floor of each view on this table
(the runs list: reading the window's TraceId column, which its first query groups; stats:
reading the window's attribute values, by which every span is classified); and the simplest
SQL that answers each view on this table, without tracetui's classification (the GenAI keys
this table has, nothing else): what any client of this table pays for the view on this
machine. Each command runs once to warm up, then the commands take turns, round by round;
medians and minimums of wall time.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, threading, time, urllib.parse, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "clickhouse"))

MODELS = ["gpt-4o", "claude-sonnet-4-5", "gpt-4o-mini", "claude-haiku-4-5"]
TOOLS = ["search", "read_file", "run_tests", "edit_file", "fetch_url"]


def fill_sql(spans, traces):
    """INSERT ... SELECT of `spans` rows: span `i` of trace `t` is row t + i * traces."""
    models = "[" + ", ".join("'%s'" % m for m in MODELS) + "]"
    tools = "[" + ", ".join("'%s'" % t for t in TOOLS) + "]"
    return f"""INSERT INTO otel.otel_traces
SELECT
  fromUnixTimestamp64Nano(toInt64(base + intDiv(t * 82800000000000, {traces}) + i * 10000000)) AS Timestamp,
  lower(hex(MD5(toString(t)))) AS TraceId,
  leftPad(lower(hex(number + 1)), 16, '0') AS SpanId,
  if(i = 0, '', leftPad(lower(hex(t + 1)), 16, '0')) AS ParentSpanId,
  '' AS TraceState,
  multiIf(i = 0, 'invoke_agent team', i % 2 = 1, concat('chat ', model), 'execute_tool') AS SpanName,
  multiIf(i = 0, 'SPAN_KIND_INTERNAL', i % 2 = 1, 'SPAN_KIND_CLIENT', 'SPAN_KIND_INTERNAL') AS SpanKind,
  ['planner', 'coder', 'retriever'][1 + (t + i) % 3] AS ServiceName,
  map('service.name', ServiceName, 'team', 'ml', 'host.name', concat('runner-', toString(t % 40))) AS ResourceAttributes,
  'genai-demo' AS ScopeName,
  '1.0' AS ScopeVersion,
  multiIf(
    i = 0, map('gen_ai.operation.name', 'invoke_agent', 'gen_ai.agent.name', concat('team-', toString(t % 50)),
               'otel.scope.name', 'genai-demo', 'otel.scope.version', '1.0'),
    i % 2 = 1, map('gen_ai.operation.name', 'chat', 'gen_ai.system', 'openai',
                   'gen_ai.request.model', model, 'gen_ai.response.model', model,
                   'gen_ai.usage.input_tokens', toString(1000 + (number % 7919)),
                   'gen_ai.usage.output_tokens', toString(100 + (number % 613)),
                   'gen_ai.usage.cache_read.input_tokens', toString(number % 500),
                   'otel.scope.name', 'genai-demo', 'otel.scope.version', '1.0'),
    map('gen_ai.operation.name', 'execute_tool', 'gen_ai.tool.name', tool,
        'gen_ai.tool.call.id', concat('call_', toString(number)),
        'gen_ai.tool.call.arguments', concat('{{"q": "item ', toString(number % 1000), '"}}'),
        'gen_ai.tool.call.result', if(failed, 'error', concat('found ', toString(number % 97))),
        'otel.scope.name', 'genai-demo', 'otel.scope.version', '1.0')) AS SpanAttributes,
  toUInt64(multiIf(i = 0, 30000000000, i % 2 = 1, 2000000000 + (number % 1000) * 1000000, 50000000 + (number % 300) * 1000000)) AS Duration,
  if(failed, 'STATUS_CODE_ERROR', 'STATUS_CODE_UNSET') AS StatusCode,
  if(failed, 'tool failed: timeout', '') AS StatusMessage,
  if(failed, [Timestamp], []) AS `Events.Timestamp`,
  if(failed, ['exception'], []) AS `Events.Name`,
  if(failed, [map('exception.type', 'TimeoutError', 'exception.message', 'search timed out')], []) AS `Events.Attributes`,
  [] AS `Links.TraceId`, [] AS `Links.SpanId`, [] AS `Links.TraceState`, [] AS `Links.Attributes`
FROM (
  SELECT number, number % {traces} AS t, intDiv(number, {traces}) AS i,
    {models}[1 + (t + i) % {len(MODELS)}] AS model, {tools}[1 + (t + i) % {len(TOOLS)}] AS tool,
    i > 0 AND i % 2 = 0 AND number % 97 = 0 AS failed,
    (toUnixTimestamp(now()) - 86400 + 600) * 1000000000 AS base
  FROM numbers({spans})
)"""


def post(port, sql, params, timeout=600):
    q = urllib.parse.urlencode(params)
    req = urllib.request.Request(f"http://127.0.0.1:{port}/?{q}", data=sql.encode(), method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read()


def time_direct(port, queries):
    """Wall time of sending `queries` (SQL, params) at once, each on its own connection."""
    errs = []

    def one(sql, params):
        try:
            post(port, sql, params)
        except Exception as e:  # noqa: BLE001 - reported below
            errs.append(e)

    t0 = time.perf_counter()
    th = [threading.Thread(target=one, args=q) for q in queries]
    for x in th:
        x.start()
    for x in th:
        x.join()
    if errs:
        raise SystemExit(f"direct query failed: {errs[0]}")
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spans", type=int, default=10_000_000)
    ap.add_argument("--traces", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "tracetui"))
    ap.add_argument("--compare", help="another build of tracetui (say, the last commit's), timed in the same rounds")
    a = ap.parse_args()
    import store  # tests/clickhouse/store.py: the exporter's DDL

    tmp = tempfile.mkdtemp(prefix="tracetui-bench-ch-")
    front = None
    try:
        port_file, log = os.path.join(tmp, "port"), os.path.join(tmp, "queries.jsonl")
        front = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests/clickhouse/chdb_http.py"),
                                  "--port-file", port_file, "--log", log, "--data", os.path.join(tmp, "chdb")])
        for _ in range(1200):
            if os.path.exists(port_file) or front.poll() is not None:
                break
            time.sleep(0.1)
        if front.poll() is not None:
            raise SystemExit("the chdb front did not start (is chdb installed? pip install chdb)")
        port = int(open(port_file).read())
        post(port, "CREATE DATABASE IF NOT EXISTS otel", {})
        post(port, store.DDL.format(table="otel.otel_traces"), {})
        t0 = time.perf_counter()
        post(port, fill_sql(a.spans, a.traces), {}, timeout=3600)
        fill = time.perf_counter() - t0
        n = json.loads(post(port, "SELECT count() AS n, uniqExact(TraceId) AS t FROM otel.otel_traces",
                            {"default_format": "JSONEachRow"}))
        print(f"table: {n['n']:,} spans in {n['t']:,} traces, filled in {fill:.1f}s (chdb {tmp})")
        url = f"clickhouse://127.0.0.1:{port}/otel"
        env = dict(os.environ, HOME=tmp, XDG_CONFIG_HOME=os.path.join(tmp, "config"),
                   XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        env.pop("TRACETUI_CLICKHOUSE_PASSWORD", None)
        window = "Timestamp >= now64(9) - INTERVAL 86400 SECOND"
        # What no query of the view can avoid on this table, timed in the same rounds: the runs
        # list's first query groups the window's spans by TraceId (reading that column);
        # stats classifies every span of the window by its attributes (reading their values).
        floors = {
            "ls": f"SELECT sum(length(TraceId)) FROM otel.otel_traces WHERE {window}",
            "stats --by model": "SELECT sum(length(arrayStringConcat(SpanAttributes.values))) "
                                f"FROM otel.otel_traces WHERE {window}",
        }
        # The simplest SQL that answers each view on this table, without tracetui's
        # classification (the OpenTelemetry GenAI keys only, which is all this table has):
        # what any client pays for the view here. `ls`: the page's query as tracetui sent it,
        # then its traces' spans, counted and their tokens summed by model (the same query
        # parameters); `stats`: LLM calls by model with their runs and token sums, tools
        # with their calls and latency percentiles, and the count of runs, sent at once.
        v = lambda k: f"SpanAttributes.values[indexOf(SpanAttributes.keys, '{k}')]"
        simplest = {
            "ls": [f"""SELECT TraceId, model, count(), sum(toUInt64OrZero(i)), sum(toUInt64OrZero(o)),
  sum(toUInt64OrZero(c)), min(Timestamp), max(Timestamp)
FROM (SELECT TraceId, Timestamp, {v('gen_ai.request.model')} AS model, {v('gen_ai.usage.input_tokens')} AS i,
  {v('gen_ai.usage.output_tokens')} AS o, {v('gen_ai.usage.cache_read.input_tokens')} AS c
  FROM otel.otel_traces
  WHERE TraceId IN {{traces:Array(String)}} AND Timestamp >= fromUnixTimestamp64Nano({{oldest:Int64}}))
GROUP BY TraceId, model"""],
            "stats --by model": [
                f"""SELECT model, count(), uniqExact(TraceId), sum(toUInt64OrZero(i)), sum(toUInt64OrZero(o)),
  sum(toUInt64OrZero(c))
FROM (SELECT TraceId, {v('gen_ai.request.model')} AS model, {v('gen_ai.usage.input_tokens')} AS i,
  {v('gen_ai.usage.output_tokens')} AS o, {v('gen_ai.usage.cache_read.input_tokens')} AS c,
  {v('gen_ai.operation.name')} AS op
  FROM otel.otel_traces WHERE {window})
WHERE op = 'chat' GROUP BY model""",
                f"""SELECT tool, count(), countIf(StatusCode = 'STATUS_CODE_ERROR'), quantilesExact(0.5, 0.95, 0.99)(Duration), max(Duration)
FROM (SELECT Duration, StatusCode, {v('gen_ai.tool.name')} AS tool, {v('gen_ai.operation.name')} AS op
  FROM otel.otel_traces WHERE {window})
WHERE op = 'execute_tool' GROUP BY tool""",
                f"SELECT uniqExact(TraceId) FROM otel.otel_traces WHERE {window}",
            ],
        }
        cases = [
            ("ls", [a.bin, "ls", url, "--format", "json"], 1.0),
            ("stats --by model", [a.bin, "stats", "--by", "model", url, "--format", "json"], 2.0),
        ]
        print("machine: shared, 2 cores; medians of", a.repeat, "rounds, commands interleaved")
        print(f"{'command':<34} {'median':>8} {'min':>8}  budget")
        ok = True
        for name, cmd, budget in cases:
            # Once to warm up, and to read back the SQL it sends.
            open(log, "w").close()
            p = subprocess.run(cmd, env=env, capture_output=True)
            if p.returncode != 0:
                raise SystemExit(f"{name}: exit {p.returncode}: {p.stderr.decode()[:2000]}")
            sent = [json.loads(x) for x in open(log) if x.strip()]
            queries = []
            for q in sent:
                params = dict(q["params"])
                params["default_format"] = "JSONEachRow"
                params["database"] = q["database"] or "otel"
                params.update({"param_" + k: v for k, v in q.get("query_params", {}).items()})
                queries.append((q["query"], params))
            tt, td, tf, tp, to, ts = [], [], [], [], [], []
            if name == "ls":
                # The page's query as sent, then the simplest per-trace query with the
                # parameters tracetui sent with its second.
                plain = [queries[0], (simplest["ls"][0], dict(queries[1][1], default_format="JSONEachRow"))]
            else:
                plain = [(q, {"default_format": "JSONEachRow"}) for q in simplest[name]]
            other = [a.compare] + cmd[1:] if a.compare else None
            floor = [(floors[name], {"default_format": "JSONEachRow"})]
            plans = [("EXPLAIN " + sql, params) for sql, params in queries]
            for _ in range(a.repeat):
                tt.append(run_once_env(cmd, env))
                if other:
                    to.append(run_once_env(other, env))
                td.append(time_direct(port, queries))
                tf.append(time_direct(port, floor))
                tp.append(sum(time_direct(port, [p]) for p in plans))
                ts.append(time_direct(port, [plain[0]]) + time_direct(port, plain[1:]) if name == "ls"
                          else time_direct(port, plain))
            mt, md = statistics.median(tt), statistics.median(td)
            within = mt <= budget
            ok &= within
            print(f"{'tracetui ' + name:<34} {mt:>7.3f}s {min(tt):>7.3f}s  {budget:.0f} s: {'ok' if within else 'OVER'}")
            if other:
                print(f"{'  the --compare build':<34} {statistics.median(to):>7.3f}s {min(to):>7.3f}s")
            print(f"{'  its SQL sent directly (%d)' % len(queries):<34} {md:>7.3f}s {min(td):>7.3f}s")
            print(f"{'  tracetui own time':<34} {mt - md:>7.3f}s")
            print(f"{'  of its SQL, planning (EXPLAIN)':<34} {statistics.median(tp):>7.3f}s {min(tp):>7.3f}s")
            print(f"{'  the simplest SQL for it (%d)' % len(plain):<34} {statistics.median(ts):>7.3f}s {min(ts):>7.3f}s")
            print(f"{'  floor: ' + ('TraceId read' if name == 'ls' else 'attribute values read'):<34} "
                  f"{statistics.median(tf):>7.3f}s {min(tf):>7.3f}s  (x{mt / statistics.median(tf):.1f})")
        sys.exit(0 if ok else 1)
    finally:
        if front is not None:
            front.kill()
            front.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def run_once_env(cmd, env):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if p.returncode != 0:
        raise SystemExit(f"{cmd}: exit {p.returncode}")
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
