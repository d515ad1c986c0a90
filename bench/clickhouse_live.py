#!/usr/bin/env python3
"""The explorer's live-mode queries on a ClickHouse store against its runs-list query, in one
run, on ClickHouse's own engine (chdb, `pip install chdb`).

Usage (from the repository root):
    python3 bench/clickhouse_live.py [--spans 2000000] [--repeat 3]

Makes the Collector exporter's table (tests/clickhouse/store.py's DDL) with SPANS spans over the
last 20 hours (10 a trace, half of them GenAI LLM calls), then times, best of REPEAT, each query
as docs/remote.md shows it (the same text the code sends, checked by unit tests): the runs
list's page, and what the explorer sends every 2 seconds while open (the traces that grew,
those aggregated again, the open run's count). The poll should cost a small part of the list.
"""
import argparse, os, re, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "clickhouse"))
try:
    from chdb import session as chs
except Exception as e:  # noqa: BLE001 - no engine: nothing to measure
    sys.exit("SKIPPED: needs chdb (pip install chdb): %s" % e)
import store  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--spans", type=int, default=2_000_000)
ap.add_argument("--repeat", type=int, default=3)
a = ap.parse_args()

s = chs.Session(tempfile.mkdtemp(prefix="chdb-bench-"))
s.query("CREATE DATABASE otel")
s.query(store.DDL.format(table="otel.otel_traces"))
s.query(f"""INSERT INTO otel.otel_traces (Timestamp, TraceId, SpanId, ParentSpanId, SpanName, SpanKind,
  ServiceName, SpanAttributes, Duration, StatusCode)
SELECT now64(9) - toIntervalMillisecond(intDiv(intDiv(number, 10) * {72_000_000 * 10 // max(a.spans, 10)}, 1) + number % 10 * 50),
  lower(hex(cityHash64(intDiv(number, 10)))) || lower(hex(intDiv(number, 10))),
  lower(hex(number)), if(number % 10 = 0, '', lower(hex(number - number % 10))),
  if(number % 2 = 0, 'chat gpt-4o', 'execute_tool search'), 'SPAN_KIND_CLIENT',
  ['planner', 'coder', 'retriever'][number % 3 + 1],
  if(number % 2 = 0,
     map('gen_ai.operation.name', 'chat', 'gen_ai.request.model', 'gpt-4o',
         'gen_ai.usage.input_tokens', toString(number % 1000), 'gen_ai.usage.output_tokens', '50'),
     map('gen_ai.operation.name', 'execute_tool', 'gen_ai.tool.name', 'search')),
  40000000, 'STATUS_CODE_UNSET'
FROM numbers({a.spans})""")

doc = open(os.path.join(ROOT, "docs", "remote.md")).read()
runs, _spans, changed, trace = re.findall(r"```sql\n(.*?)\n```", doc, re.S)
now = int(s.query("SELECT toUnixTimestamp64Nano(now64(9))", "CSV").bytes().decode().strip())
# The first poll's watermark: a minute back.
changed = re.sub(r"> \d+\n", "> %d\n" % (now - 60_000_000_000), changed)
# The newest traces: those a poll finds grown.
newest = "SELECT TraceId FROM otel.otel_traces GROUP BY TraceId ORDER BY max(Timestamp) DESC LIMIT 10"
ids = [i.strip('"') for i in s.query(newest, "CSV").bytes().decode().split()]
window = "INTERVAL 86400 SECOND\n),"
rerun = runs.replace(window, "INTERVAL 86400 SECOND AND TraceId IN (%s)\n)," % ", ".join("'%s'" % i for i in ids), 1)
rerun = rerun.replace("LIMIT 200 OFFSET 0", "LIMIT %d OFFSET 0" % len(ids))
trace = trace.replace("5b8efff798038103d269b633813fc60c", ids[0])


def best(q):
    t = 1e9
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        r = s.query(q, "JSONEachRow")
        t = min(t, time.perf_counter() - t0)
    return t, len(r.bytes().splitlines())


base, n = best(runs)
print(f"{a.spans:,} spans; best of {a.repeat}")
print(f"{'runs list page (ls, the explorer)':42s} {base * 1000:8.0f} ms  ({n} rows)  baseline")
for name, q in [("live poll: the traces that grew", changed),
                ("live poll: %d traces aggregated again" % len(ids), rerun),
                ("open run: its span count and last end", trace)]:
    t, n = best(q)
    print(f"{name:42s} {t * 1000:8.0f} ms  ({n} rows)  {t / base:5.1%} of the list")
