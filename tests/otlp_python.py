#!/usr/bin/env python3
"""`tracetui serve` with the Python OpenTelemetry SDK and an OpenInference-instrumented fake
agent (issue 19). Optional in CI: it skips, saying why, when the packages are not installed:

    pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http \
        openinference-semantic-conventions [opentelemetry-exporter-otlp-proto-grpc]

    python3 tests/otlp_python.py [path/to/tracetui]

The fake agent is an AGENT span with an LLM span (model, prompt/completion token counts) and a
failed TOOL span under it, attributes named by OpenInference's own semantic conventions. It is
sent over OTLP/HTTP protobuf (and gRPC when that exporter is installed); what
`serve --no-tui --format json` printed and what `--save` wrote are checked.
"""
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

try:
    from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import Status, StatusCode
except ImportError as e:
    print(f"SKIP: {e.name} is not installed (see this script's docstring)")
    sys.exit(0)
try:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
except ImportError:
    GrpcExporter = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "debug", "tracetui")
KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND


def fake_agent(tracer, question):
    with tracer.start_as_current_span("weather-agent") as agent:
        agent.set_attribute(KIND, OpenInferenceSpanKindValues.AGENT.value)
        agent.set_attribute(SpanAttributes.INPUT_VALUE, question)
        with tracer.start_as_current_span("ChatOpenAI") as llm:
            llm.set_attribute(KIND, OpenInferenceSpanKindValues.LLM.value)
            llm.set_attribute(SpanAttributes.LLM_MODEL_NAME, "gpt-4o-mini")
            llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_PROMPT, 120)
            llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_COMPLETION, 30)
            llm.set_attribute(SpanAttributes.OUTPUT_VALUE, "call get_weather")
        with tracer.start_as_current_span("get_weather") as tool:
            tool.set_attribute(KIND, OpenInferenceSpanKindValues.TOOL.value)
            tool.set_attribute(SpanAttributes.TOOL_NAME, "get_weather")
            tool.set_attribute(SpanAttributes.INPUT_VALUE, json.dumps({"city": "Paris"}))
            tool.set_status(Status(StatusCode.ERROR, "timeout"))
        agent.set_attribute(SpanAttributes.OUTPUT_VALUE, "I could not look it up")


def main():
    if not os.path.exists(BIN):
        print(f"FAIL: no binary at {BIN} (cargo build first)")
        return 1
    save = tempfile.mkdtemp(prefix="tracetui-py-")
    p = subprocess.Popen(
        [BIN, "serve", "--no-tui", "--format", "json", "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0",
         "--save", os.path.join(save, "s")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = p.stderr.readline()
        http = first.split("http://")[1].split()[0]
        grpc = first.split("OTLP/gRPC on ")[1].strip()
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(json.loads(l)) for l in p.stdout], daemon=True).start()
        exporters = [("http/protobuf", OTLPSpanExporter(endpoint=f"http://{http}/v1/traces"))]
        if GrpcExporter:
            exporters.append(("grpc", GrpcExporter(endpoint=grpc, insecure=True)))
        else:
            print("note: opentelemetry-exporter-otlp-proto-grpc not installed: gRPC not tried")
        for name, ex in exporters:
            tp = TracerProvider(resource=Resource.create({"service.name": f"py-{name}"}))
            tp.add_span_processor(SimpleSpanProcessor(ex))
            fake_agent(tp.get_tracer("fake-agent"), "weather in Paris?")
            tp.shutdown()
        got, deadline = [], time.time() + 30
        while sum(v["kind"] == "run_end" for v in got) < len(exporters):
            try:
                got.append(lines.get(timeout=max(0.1, deadline - time.time())))
            except queue.Empty:
                print("FAIL: timed out; printed:", *got, sep="\n  ")
                return 1
        ok = True
        for end in (v for v in got if v["kind"] == "run_end"):
            evs = [v for v in got if v["run"] == end["run"] and v["kind"] != "run_end"]
            want = {"run_name": "weather-agent", "status": "ok", "llm_calls": 1, "tool_calls": 1, "tokens": 150}
            bad = {k: end[k] for k in want if end[k] != want[k]}
            tool = [v for v in evs if v["kind"] == "tool"]
            if bad or len(evs) != 3 or not tool or tool[0]["status"] != "error":
                ok = False
                print("FAIL:", end, bad, evs)
        p.terminate()
        p.wait(10)
        checked = [json.loads(l) for l in subprocess.run(
            [BIN, "check", "--format", "json", os.path.join(save, "s")], capture_output=True, text=True).stdout.splitlines()]
        if len(checked) != len(exporters) or any(c["events"] != 3 or c["tokens"] != 150 for c in checked):
            ok = False
            print("FAIL: the saved session reads back as", checked)
        print("ok: python SDK over", ", ".join(n for n, _ in exporters) if ok else "FAILED")
        return 0 if ok else 1
    finally:
        if p.poll() is None:
            p.kill()
        subprocess.run(["rm", "-rf", save])


if __name__ == "__main__":
    sys.exit(main())
