#!/usr/bin/env python3
"""OTLP/JSON at scale: the collector file exporter's JSON Lines, one minified
{"resourceSpans":[...]} batch a line, --events spans in all (deterministic: seeded).

Shaped like a GenAI agent service exporting through a batch span processor: agent runs
(`invoke_agent` roots) of LLM calls (`chat`, with gen_ai.input/output.messages as JSON strings,
usage) and tool calls (`execute_tool`, arguments and results), a few plain internal spans,
some failures with an `exception` span event. Spans are written when they end, so children come
before their parents; two runs are in flight at once, so their spans interleave. A batch holds
1-24 spans, grouped by resource (service) and scope (instrumentation library), as the exporter does.
Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, json, os, random

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--events", type=int, default=1_000_000)
ap.add_argument("--seed", type=int, default=13)
a = ap.parse_args()
rng = random.Random(a.seed)

WORDS = ("the of and to in is that for it as with was on be by this are from at or an have not "
         "file function error value result request response model tool agent search weather city "
         "temperature forecast query rows table user assistant system return import def class "
         "config path token cache retry timeout status data json list dict string number").split()
MODELS = ["gpt-4o-2024-08-06", "gpt-4o-mini", "claude-sonnet-4-20250514", "gemini-2.5-pro"]
TOOLS = ["get_weather", "search_docs", "read_file", "write_file", "run_sql", "http_get", "list_dir"]
SERVICES = ["support-agent", "research-agent", "coding-agent"]
SCOPES = {"llm": ("opentelemetry.instrumentation.openai_v2", "2.1b0"),
          "tool": ("agent.tools", "0.9.3"),
          "agent": ("agent.framework", "1.4.0")}
RESOURCES = {}
for s in SERVICES:
    RESOURCES[s] = [
        {"key": "service.name", "value": {"stringValue": s}},
        {"key": "service.version", "value": {"stringValue": "1.8.2"}},
        {"key": "telemetry.sdk.language", "value": {"stringValue": "python"}},
        {"key": "telemetry.sdk.name", "value": {"stringValue": "opentelemetry"}},
        {"key": "telemetry.sdk.version", "value": {"stringValue": "1.33.1"}},
        {"key": "host.name", "value": {"stringValue": "worker-7f9c"}},
        {"key": "process.pid", "value": {"intValue": "48213"}},
    ]

POOL = " ".join(rng.choice(WORDS) for _ in range(200_000))


def text(n):
    i = rng.randrange(0, len(POOL) - n)
    return POOL[i:i + n]


def hexid(nbytes):
    return "%0*x" % (nbytes * 2, rng.getrandbits(nbytes * 8))


def sv(s):
    return {"stringValue": s}


def iv(n):
    return {"intValue": str(n)}


class Run:
    """One agent run: a trace whose spans are produced as they end."""

    def __init__(self, t0):
        self.trace = hexid(16)
        self.service = rng.choice(SERVICES)
        self.t = t0
        self.root = hexid(8)
        self.root_start = t0
        self.turns = rng.randint(3, 40)
        self.model = rng.choice(MODELS)
        self.pending = []  # spans ended, in end order

    def span(self, kind_key, parent, name, start, end, attrs, kind=1, status=None, events=None):
        s = {"traceId": self.trace, "spanId": hexid(8)}
        if parent:
            s["parentSpanId"] = parent
        s.update({"name": name, "kind": kind, "startTimeUnixNano": str(start),
                  "endTimeUnixNano": str(end), "attributes": attrs})
        if events:
            s["events"] = events
        s["status"] = status or {}
        return kind_key, s

    def steps(self):
        """Yield (scope key, span) as each span ends; the root last."""
        for turn in range(self.turns):
            start = self.t
            dur = rng.randint(300, 9000) * 1_000_000
            msgs = [{"role": "system", "content": text(rng.randint(150, 700))}]
            for _ in range(rng.randint(1, 5)):
                msgs.append({"role": rng.choice(["user", "assistant", "tool"]), "content": text(rng.randint(80, 1100))})
            inp, outp = rng.randint(200, 20000), rng.randint(10, 1500)
            out = [{"role": "assistant", "content": text(rng.randint(40, 600)), "finish_reason": "tool_calls"}]
            attrs = [
                {"key": "gen_ai.operation.name", "value": sv("chat")},
                {"key": "gen_ai.system", "value": sv("openai")},
                {"key": "gen_ai.request.model", "value": sv(self.model)},
                {"key": "gen_ai.response.model", "value": sv(self.model)},
                {"key": "gen_ai.request.temperature", "value": {"doubleValue": 0.2}},
                {"key": "gen_ai.response.id", "value": sv("chatcmpl-" + hexid(12))},
                {"key": "gen_ai.usage.input_tokens", "value": iv(inp)},
                {"key": "gen_ai.usage.output_tokens", "value": iv(outp)},
                {"key": "gen_ai.response.finish_reasons", "value": {"arrayValue": {"values": [sv("tool_calls")]}}},
                {"key": "gen_ai.input.messages", "value": sv(json.dumps(msgs))},
                {"key": "gen_ai.output.messages", "value": sv(json.dumps(out))},
            ]
            status = None
            events = None
            if rng.random() < 0.02:
                status = {"code": 2, "message": "rate limited"}
                events = [{"timeUnixNano": str(start + dur), "name": "exception", "attributes": [
                    {"key": "exception.type", "value": sv("openai.RateLimitError")},
                    {"key": "exception.message", "value": sv("Rate limit reached: " + text(60))},
                    {"key": "exception.stacktrace", "value": sv("Traceback (most recent call last):\n  " + text(300))}]}]
            yield self.span("llm", self.root, "chat " + self.model, start, start + dur, attrs, kind=3,
                            status=status, events=events)
            self.t = start + dur + 1_000_000
            for _ in range(rng.randint(0, 3)):
                tool = rng.choice(TOOLS)
                ts = self.t
                td = rng.randint(5, 3000) * 1_000_000
                # A tool may call a helper (an internal span), which ends first.
                wrapper = hexid(8) if rng.random() < 0.15 else None
                tool_parent = self.root
                failed = rng.random() < 0.04
                args = {"q": text(rng.randint(10, 120)), "limit": rng.randint(1, 50)}
                result = {"rows": [text(rng.randint(20, 90)) for _ in range(rng.randint(1, 12))]}
                attrs = [
                    {"key": "gen_ai.operation.name", "value": sv("execute_tool")},
                    {"key": "gen_ai.tool.name", "value": sv(tool)},
                    {"key": "gen_ai.tool.call.id", "value": sv("call_" + hexid(10))},
                    {"key": "gen_ai.tool.call.arguments", "value": sv(json.dumps(args))},
                ]
                if not failed:
                    attrs.append({"key": "gen_ai.tool.call.result", "value": sv(json.dumps(result))})
                events = None
                status = None
                if failed:
                    status = {"code": 2, "message": tool + " failed"}
                    events = [{"timeUnixNano": str(ts + td), "name": "exception", "attributes": [
                        {"key": "exception.type", "value": sv("TimeoutError")},
                        {"key": "exception.message", "value": sv("timed out after 30s")}]}]
                elif rng.random() < 0.1:
                    events = [{"timeUnixNano": str(ts + 1000), "name": "cache.lookup",
                               "attributes": [{"key": "hit", "value": {"boolValue": False}}]}]
                tool_span = self.span("tool", tool_parent, "execute_tool " + tool, ts, ts + td, attrs,
                                      kind=1, status=status, events=events)
                if wrapper:
                    yield self.span("agent", tool_span[1]["spanId"], "helper." + tool, ts + 1000, ts + td - 1000,
                                    [{"key": "code.function", "value": sv("helper_" + tool)}])
                yield tool_span
                self.t = ts + td + 1_000_000
        attrs = [
            {"key": "gen_ai.operation.name", "value": sv("invoke_agent")},
            {"key": "gen_ai.agent.name", "value": sv(self.service)},
            {"key": "gen_ai.conversation.id", "value": sv(hexid(8))},
        ]
        _, root = self.span("agent", None, "invoke_agent " + self.service, self.root_start, self.t, attrs, kind=1)
        root["spanId"] = self.root
        yield "agent", root


def write_batch(f, batch):
    """One exporter line: spans grouped by service, then by scope, in first-seen order."""
    by_res = {}
    for service, scope, span in batch:
        by_res.setdefault(service, {}).setdefault(scope, []).append(span)
    rs = []
    for service, scopes in by_res.items():
        ss = []
        for scope, spans in scopes.items():
            name, version = SCOPES[scope]
            ss.append({"scope": {"name": name, "version": version}, "spans": spans})
        rs.append({"resource": {"attributes": RESOURCES[service]}, "scopeSpans": ss})
    f.write(json.dumps({"resourceSpans": rs}, separators=(",", ":")))
    f.write("\n")


os.makedirs(a.out, exist_ok=True)
path = os.path.join(a.out, "traces.jsonl")
t0 = 1_767_225_600_000_000_000
written = 0
with open(path, "w") as f:
    runs = [Run(t0), Run(t0 + 5_000_000)]
    gens = [r.steps() for r in runs]
    batch, size = [], rng.randint(1, 24)
    while written < a.events:
        k = rng.randrange(len(runs))
        try:
            scope, span = next(gens[k])
        except StopIteration:
            runs[k] = Run(runs[k].t + 7_000_000)
            gens[k] = runs[k].steps()
            continue
        batch.append((runs[k].service, scope, span))
        written += 1
        if len(batch) >= size:
            write_batch(f, batch)
            batch, size = [], rng.randint(1, 24)
    if batch:
        write_batch(f, batch)
print(json.dumps({"load": path, "files": [path], "format": "otlp-json"}))
