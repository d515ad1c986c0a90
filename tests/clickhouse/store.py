"""A fake team store: three services' GenAI spans, as the OTel Collector's ClickHouse exporter
writes them (rows of `otel_traces`) and as the same spans in an OTLP/JSON file.

The DDL is the exporter's own: opentelemetry-collector-contrib,
exporter/clickhouseexporter/internal/sql_templates/traces_table.sql (commit ff7a946, v0.12x:
the template with ScopeName/ScopeVersion and `Duration UInt64`), with its `%s` filled as the
exporter fills them (table name, no cluster, ENGINE MergeTree(), no TTL). Rows are what its
exporter_traces.go passes to that INSERT: attributes stringified (`AsString`, so an int is
"1000"), kind and status as `traceutil.SpanKindStr` / `StatusCodeStr` spell them.
"""

import json

DDL = """CREATE TABLE IF NOT EXISTS {table}  (
    Timestamp DateTime64(9) CODEC(Delta, ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    ParentSpanId String CODEC(ZSTD(1)),
    TraceState String CODEC(ZSTD(1)),
    SpanName LowCardinality(String) CODEC(ZSTD(1)),
    SpanKind LowCardinality(String) CODEC(ZSTD(1)),
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    ResourceAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    ScopeName String CODEC(ZSTD(1)),
    ScopeVersion String CODEC(ZSTD(1)),
    SpanAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    Duration UInt64 CODEC(ZSTD(1)),
    StatusCode LowCardinality(String) CODEC(ZSTD(1)),
    StatusMessage String CODEC(ZSTD(1)),
    Events Nested (
    Timestamp DateTime64(9),
    Name LowCardinality(String),
    Attributes Map(LowCardinality(String), String)
    ) CODEC(ZSTD(1)),
    Links Nested (
                     TraceId String,
                     SpanId String,
                     TraceState String,
                     Attributes Map(LowCardinality(String), String)
    ) CODEC(ZSTD(1)),
    INDEX idx_trace_id TraceId TYPE bloom_filter(0.001) GRANULARITY 1,
    INDEX idx_res_attr_key mapKeys(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_res_attr_value mapValues(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_span_attr_key mapKeys(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_span_attr_value mapValues(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_duration Duration TYPE minmax GRANULARITY 1
    ) ENGINE = MergeTree()
    PARTITION BY toDate(Timestamp)
    ORDER BY (ServiceName, SpanName, toDateTime(Timestamp))
    SETTINGS index_granularity=8192, ttl_only_drop_parts = 1
"""

KINDS = {1: "SPAN_KIND_INTERNAL", 2: "SPAN_KIND_SERVER", 3: "SPAN_KIND_CLIENT"}
STATUS = {0: "STATUS_CODE_UNSET", 1: "STATUS_CODE_OK", 2: "STATUS_CODE_ERROR"}
SERVICES = ["planner", "coder", "retriever"]
MODELS = ["gpt-4o", "claude-sonnet-4-5", "gpt-4o-mini"]


def spans(base_ns, traces=6):
    """Each trace: an agent span in `planner`, LLM calls and tool calls across the three
    services, one failing tool in every third trace. Returns dicts of plain values."""
    out = []
    for t in range(traces):
        tid = "%032x" % (0xA1000 + t)
        start = base_ns + t * 600_000_000_000  # ten minutes apart
        n = [0]

        def sid():
            n[0] += 1
            return "%016x" % ((t + 1) << 16 | n[0])

        root = sid()
        out.append(dict(trace=tid, span=root, parent="", name="invoke_agent team", service="planner",
                        kind=1, start=start, end=start + 90_000_000_000, status=1, message="",
                        attrs={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "team-%d" % t},
                        events=[]))
        at = start + 1_000_000_000
        for i in range(3):
            svc = SERVICES[(t + i) % 3]
            model = MODELS[(t + i) % 3]
            inp, cr, outp = 1000 * (i + 1) + t, 200 * i, 150 + 10 * t
            llm = sid()
            out.append(dict(trace=tid, span=llm, parent=root, name="chat " + model, service=svc, kind=3,
                            start=at, end=at + 4_000_000_000, status=0, message="",
                            attrs={"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
                                   "gen_ai.request.model": model, "gen_ai.response.model": model,
                                   "gen_ai.usage.input_tokens": inp, "gen_ai.usage.output_tokens": outp,
                                   "gen_ai.usage.cache_read.input_tokens": cr},
                            events=[]))
            at += 5_000_000_000
            fail = t % 3 == 0 and i == 2
            tool = sid()
            out.append(dict(trace=tid, span=tool, parent=root, name="execute_tool search", service=svc, kind=1,
                            start=at, end=at + 2_000_000_000, status=2 if fail else 0,
                            message="tool failed: timeout" if fail else "",
                            attrs={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_%s" % svc,
                                   "gen_ai.tool.call.id": "call_%d_%d" % (t, i),
                                   "gen_ai.tool.call.arguments": json.dumps({"q": "item %d" % i}),
                                   "gen_ai.tool.call.result": "error" if fail else "found %d" % i},
                            events=[dict(time=at + 1_000_000_000, name="exception",
                                         attrs={"exception.type": "TimeoutError",
                                                "exception.message": "search timed out"})] if fail else []))
            at += 3_000_000_000
    return out


def _any(v):
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    return {"stringValue": str(v)}


def _kv(d):
    return [{"key": k, "value": _any(v)} for k, v in d.items()]


def otlp_document(all_spans):
    """The same spans as one OTLP/JSON document (a resourceSpans entry per service)."""
    rs = []
    for svc in SERVICES:
        mine = [s for s in all_spans if s["service"] == svc]
        rs.append({
            "resource": {"attributes": _kv({"service.name": svc, "team": "ml"})},
            "scopeSpans": [{"scope": {"name": "genai-demo", "version": "1.0"}, "spans": [{
                "traceId": s["trace"], "spanId": s["span"], "parentSpanId": s["parent"], "name": s["name"],
                "kind": s["kind"], "startTimeUnixNano": str(s["start"]), "endTimeUnixNano": str(s["end"]),
                "attributes": _kv(s["attrs"]),
                "events": [{"timeUnixNano": str(e["time"]), "name": e["name"], "attributes": _kv(e["attrs"])}
                           for e in s["events"]],
                "status": {"code": s["status"], **({"message": s["message"]} if s["message"] else {})},
            } for s in mine]}],
        })
    return {"resourceSpans": rs}


def _ts(ns):
    import datetime
    d = datetime.datetime.fromtimestamp(ns // 1_000_000_000, datetime.timezone.utc)
    return d.strftime("%Y-%m-%d %H:%M:%S") + ".%09d" % (ns % 1_000_000_000)


def _str_map(d):
    # The exporter's attributesToMap: every value as its string (AsString).
    return {k: (("true" if v else "false") if isinstance(v, bool) else str(v)) for k, v in d.items()}


def exporter_rows(all_spans):
    """Rows of the exporter's INSERT (traces_insert.sql), for `FORMAT JSONEachRow`."""
    for s in all_spans:
        attrs = _str_map(s["attrs"])
        # The exporter adds the scope as span attributes (and, in this template, columns).
        attrs["otel.scope.name"] = "genai-demo"
        attrs["otel.scope.version"] = "1.0"
        yield {
            "Timestamp": _ts(s["start"]), "TraceId": s["trace"], "SpanId": s["span"],
            "ParentSpanId": s["parent"], "TraceState": "", "SpanName": s["name"],
            "SpanKind": KINDS[s["kind"]], "ServiceName": s["service"],
            "ResourceAttributes": {"service.name": s["service"], "team": "ml"},
            "ScopeName": "genai-demo", "ScopeVersion": "1.0",
            "SpanAttributes": attrs, "Duration": s["end"] - s["start"],
            "StatusCode": STATUS[s["status"]], "StatusMessage": s["message"],
            "Events.Timestamp": [_ts(e["time"]) for e in s["events"]],
            "Events.Name": [e["name"] for e in s["events"]],
            "Events.Attributes": [_str_map(e["attrs"]) for e in s["events"]],
            "Links.TraceId": [], "Links.SpanId": [], "Links.TraceState": [], "Links.Attributes": [],
        }


INSERT_COLUMNS = ("Timestamp, TraceId, SpanId, ParentSpanId, TraceState, SpanName, SpanKind, ServiceName, "
                  "ResourceAttributes, ScopeName, ScopeVersion, SpanAttributes, Duration, StatusCode, StatusMessage, "
                  "Events.Timestamp, Events.Name, Events.Attributes, Links.TraceId, Links.SpanId, "
                  "Links.TraceState, Links.Attributes")
