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


def mixed_spans(base_ns):
    """Other recorders' spans, as they reach the same table: Claude Code's own spans (flat
    Anthropic counts, a recorded `cost_usd`, a long prompt priced at its model's long-context
    tier), OpenInference (span kinds, `llm.*` counts with cache and reasoning, a recorded
    `llm.cost.total`), MCP's `tools/call` span, a tool whose process exited non-zero under an
    unset status, an LLM call known by its model keys alone with the older GenAI count keys
    and a recorded `gen_ai.usage.cost`, a chat without a model, an agent span that carries its
    run's summed usage (not a call: not counted again), an agent recorded alone with its
    totals. The SQL's classification and the OTLP reader must agree on each of them."""
    out = []

    def span(t, n, parent, name, service, start, secs, attrs, status=0, message="", events=(), kind=1):
        sid = "%016x" % ((0xC0 + t) << 16 | n)
        out.append(dict(trace="%032x" % (0xB2000 + t), span=sid, parent=parent, name=name, service=service,
                        kind=kind, start=start, end=start + int(secs * 1e9), status=status, message=message,
                        attrs=attrs, events=list(events)))
        return sid

    s = base_ns
    # Claude Code (its OTLP spans: claude_code.interaction > llm_request, tool > tool.execution).
    root = span(0, 1, "", "claude_code.interaction", "claude-code", s, 60,
                {"user_prompt_length": 42, "interaction.sequence": 1})
    span(0, 2, root, "claude_code.llm_request", "claude-code", s + 1_000_000_000, 5,
         {"model": "claude-sonnet-4-5", "input_tokens": 12, "output_tokens": 40, "cache_read_tokens": 1000,
          "cache_creation_tokens": 200, "cost_usd": 0.0123, "duration_ms": 5000}, kind=3)
    tool = span(0, 3, root, "claude_code.tool", "claude-code", s + 7_000_000_000, 3,
                {"tool_name": "Bash", "duration_ms": 3000})
    span(0, 4, tool, "claude_code.tool.execution", "claude-code", s + 7_500_000_000, 2,
         {"success": False}, status=2, message="exit 1")
    span(0, 5, root, "claude_code.tool", "claude-code", s + 11_000_000_000, 1, {"tool_name": "Read"})
    # A prompt past 200k tokens: the long-context price, its cache counted in the prompt.
    span(0, 6, root, "claude_code.llm_request", "claude-code", s + 13_000_000_000, 20,
         {"model": "claude-sonnet-4-5", "input_tokens": 150000, "output_tokens": 900,
          "cache_read_tokens": 60000, "cache_creation_tokens": 0}, kind=3)
    # A request that names its usage the GenAI way: counted so (the cache inside the input).
    span(0, 7, root, "claude_code.llm_request", "claude-code", s + 34_000_000_000, 4,
         {"model": "claude-haiku-4-5", "gen_ai.usage.input_tokens": 3000,
          "gen_ai.usage.cache_read.input_tokens": 1000, "gen_ai.usage.output_tokens": 80}, kind=3)

    # OpenInference (an agent, its LLM call with cache and reasoning and a recorded cost, a tool).
    s = base_ns + 600_000_000_000
    root = span(1, 1, "", "agent run", "oi-app", s, 30, {"openinference.span.kind": "AGENT", "input.value": "plan"})
    span(1, 2, root, "ChatCompletion", "oi-app", s + 1_000_000_000, 6,
         {"openinference.span.kind": "LLM", "llm.model_name": "o3-mini", "llm.token_count.prompt": 500,
          "llm.token_count.prompt_details.cache_read": 200, "llm.token_count.completion": 900,
          "llm.token_count.completion_details.reasoning": 700, "llm.token_count.total": 1400,
          "llm.cost.total": "0.0042"}, kind=3)
    span(1, 3, root, "lookup", "oi-app", s + 8_000_000_000, 1,
         {"openinference.span.kind": "TOOL", "tool.name": "lookup", "input.value": "{\"q\": 1}"})
    span(1, 4, root, "retrieve", "oi-app", s + 10_000_000_000, 1, {"openinference.span.kind": "chain"})
    span(1, 5, root, "ChatCompletion", "oi-app", s + 12_000_000_000, 3,
         {"openinference.span.kind": "llm", "llm.model_name": "gpt-4o-mini", "llm.token_count.prompt": 800,
          "llm.token_count.completion": 60}, kind=3)

    # MCP, a failed process, model keys alone, older count keys, a model-less chat.
    s = base_ns + 1_200_000_000_000
    root = span(2, 1, "", "invoke_agent ops", "ops-agent", s, 40,
                {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "ops",
                 "gen_ai.usage.input_tokens": 99999, "gen_ai.usage.output_tokens": 9999})
    span(2, 2, root, "tools/call fetch", "ops-agent", s + 1_000_000_000, 2,
         {"mcp.method.name": "tools/call", "mcp.session.id": "m1"}, kind=3)
    span(2, 3, root, "execute_tool", "ops-agent", s + 4_000_000_000, 1,
         {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "shell", "process.exit.code": 2})
    span(2, 4, root, "completion", "ops-agent", s + 6_000_000_000, 2,
         {"gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.prompt_tokens": 1200,
          "gen_ai.usage.completion_tokens": 300, "gen_ai.usage.cost": 0.0061}, kind=3)
    span(2, 5, root, "chat", "ops-agent", s + 9_000_000_000, 2,
         {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 700,
          "gen_ai.usage.output_tokens": 70}, kind=3)
    span(2, 6, root, "embeddings", "ops-agent", s + 12_000_000_000, 1,
         {"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "text-embedding-3-small",
          "gen_ai.usage.input_tokens": 64}, kind=3)
    span(2, 7, root, "execute_tool", "ops-agent", s + 14_000_000_000, 1,
         {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "shell", "process.exit.code": 0})

    # An instrumentation that records the agent alone: its totals, no LLM call span.
    s = base_ns + 1_800_000_000_000
    root = span(3, 1, "", "invoke_agent summarizer", "summarizer", s, 12,
                {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "summarizer",
                 "gen_ai.usage.input_tokens": 4200, "gen_ai.usage.output_tokens": 380})
    span(3, 2, root, "execute_tool", "summarizer", s + 2_000_000_000, 1,
         {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_doc"})
    return out


SETS = {"team": spans, "mixed": mixed_spans}


def _any(v):
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": str(v)}


def _kv(d):
    return [{"key": k, "value": _any(v)} for k, v in d.items()]


def otlp_document(all_spans):
    """The same spans as one OTLP/JSON document (a resourceSpans entry per service)."""
    rs = []
    for svc in dict.fromkeys(s["service"] for s in all_spans):
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
