#!/usr/bin/env python3
"""`tracetui serve --no-tui` under a steady OTLP load (issue 19's memory budgets).

Sends agent-like traces (a root span and its children; children are sent before their root,
as SDKs export spans when they end) as OTLP/JSON over HTTP at a fixed rate, counts what
`serve --no-tui --format json` prints, and samples the server's RSS every --sample seconds.

    python3 bench/otlp_steady.py --rate 5000 --seconds 600 --max-spans 100000
        steady run: the RSS series' start (first sample with the cap reached), max and end
    python3 bench/otlp_steady.py --per-span 200000
        memory held per span: RSS with N spans held (cap above N) less RSS before any, over
        N, beside the attribute text (keys and values) each span carries

Run from the repository root after `cargo build --release` (TRACETUI=PATH: another binary).
No third-party packages.
"""
import argparse, json, os, random, subprocess, sys, threading, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPANS_PER_TRACE = 8


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for l in f:
                if l.startswith("VmRSS:"):
                    return int(l.split()[1])
    except OSError:
        pass
    return 0


def attr(k, v):
    if isinstance(v, int):
        return {"key": k, "value": {"intValue": str(v)}}
    return {"key": k, "value": {"stringValue": v}}


def trace_spans(n, now_ns):
    """One trace of SPANS_PER_TRACE spans, children first, root last; and the attribute
    text (keys and values) of its spans."""
    tid = "%032x" % random.getrandbits(128)
    root = "%016x" % random.getrandbits(64)
    spans, text = [], 0
    for i in range(SPANS_PER_TRACE - 1):
        sid = "%016x" % random.getrandbits(64)
        if i % 2 == 0:
            attrs = [attr("gen_ai.operation.name", "chat"), attr("gen_ai.request.model", "gpt-4o"),
                     attr("gen_ai.usage.input_tokens", 100 + i), attr("gen_ai.usage.output_tokens", 20)]
            name = "chat gpt-4o"
        else:
            attrs = [attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", "search"),
                     attr("gen_ai.tool.call.arguments", json.dumps({"q": f"query {n} {i}"}))]
            name = "execute_tool search"
        text += sum(len(a["key"]) + len(str(next(iter(a["value"].values())))) for a in attrs)
        spans.append({"traceId": tid, "spanId": sid, "parentSpanId": root, "name": name, "kind": 3,
                      "startTimeUnixNano": str(now_ns + i * 1000), "endTimeUnixNano": str(now_ns + i * 1000 + 500),
                      "attributes": attrs, "status": {}})
    attrs = [attr("gen_ai.operation.name", "invoke_agent"), attr("gen_ai.agent.name", "bench")]
    text += sum(len(a["key"]) + len(str(next(iter(a["value"].values())))) for a in attrs)
    spans.append({"traceId": tid, "spanId": root, "name": "invoke_agent bench", "kind": 1,
                  "startTimeUnixNano": str(now_ns), "endTimeUnixNano": str(now_ns + 10_000),
                  "attributes": attrs, "status": {}})
    return spans, text


def batch(spans):
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [attr("service.name", "bench")]},
                                          "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}).encode()


def post(url, body):
    while True:
        req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                r.read()
                return
        except urllib.error.HTTPError as e:
            if e.code in (429, 503):
                time.sleep(float(e.headers.get("Retry-After", "1")))
                continue
            raise


class Server:
    def __init__(self, max_spans):
        tt = os.environ.get("TRACETUI", os.path.join(ROOT, "target", "release", "tracetui"))
        self.p = subprocess.Popen([tt, "serve", "--no-tui", "--format", "json", "--http", "127.0.0.1:0",
                                   "--grpc", "off", "--max-spans", str(max_spans)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = self.p.stderr.readline()
        self.url = "http://" + first.split("http://")[1].split()[0] + "/v1/traces"
        self.printed = 0
        self.ends = 0
        self.notes = []
        threading.Thread(target=self._out, daemon=True).start()
        threading.Thread(target=self._err, daemon=True).start()

    def _out(self):
        for l in self.p.stdout:
            if '"kind":"run_end"' in l:
                self.ends += 1
            else:
                self.printed += 1

    def _err(self):
        for l in self.p.stderr:
            self.notes.append(l.rstrip())

    def wait_printed(self, n, timeout=120):
        t0 = time.time()
        while self.printed < n and time.time() - t0 < timeout:
            time.sleep(0.05)
        return self.printed

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=10)


def steady(a):
    s = Server(a.max_spans)
    time.sleep(0.5)
    traces_per_batch = max(1, a.batch // SPANS_PER_TRACE)
    spans_per_batch = traces_per_batch * SPANS_PER_TRACE
    interval = spans_per_batch / a.rate
    sent, n = 0, 0
    series = []
    t0 = time.monotonic()
    next_sample = t0
    next_send = t0
    while time.monotonic() - t0 < a.seconds:
        now = time.monotonic()
        if now >= next_sample:
            series.append((round(now - t0), rss_kb(s.p.pid), sent, s.printed))
            print("t=%4ds rss=%7.1f MB sent=%9d printed=%9d" % (series[-1][0], series[-1][1] / 1024, sent, s.printed),
                  flush=True)
            next_sample += a.sample
        if now < next_send:
            time.sleep(min(next_send, next_sample) - now)
            continue
        spans = []
        for _ in range(traces_per_batch):
            sp, _ = trace_spans(n, time.time_ns())
            n += 1
            spans += sp
        post(s.url, batch(spans))
        sent += len(spans)
        next_send += interval
    elapsed = time.monotonic() - t0
    s.wait_printed(sent, timeout=60)
    series.append((round(time.monotonic() - t0), rss_kb(s.p.pid), sent, s.printed))
    s.stop()
    # The cap is reached once more spans were sent than it holds: the series from there on.
    reached = [x for x in series if x[2] >= a.max_spans] or series
    rss = [x[1] / 1024 for x in reached]
    print(json.dumps({
        "rate_asked": a.rate, "rate_sent": round(sent / elapsed), "seconds": round(elapsed),
        "spans_sent": sent, "spans_printed": s.printed, "traces_ended": s.ends, "max_spans": a.max_spans,
        "samples": len(series), "rss_mb_at_cap_start": round(rss[0], 1), "rss_mb_max": round(max(rss), 1),
        "rss_mb_end": round(rss[-1], 1), "rss_mb_first_sample": round(series[0][1] / 1024, 1),
        "cap_notes": len([x for x in s.notes if "over the cap" in x]),
    }))


def per_span(a):
    s = Server(a.per_span * 2)
    time.sleep(0.5)
    before = rss_kb(s.p.pid)
    sent, text, n = 0, 0, 0
    while sent < a.per_span:
        spans = []
        for _ in range(max(1, a.batch // SPANS_PER_TRACE)):
            sp, t = trace_spans(n, time.time_ns())
            n += 1
            text += t
            spans += sp
        post(s.url, batch(spans))
        sent += len(spans)
    got = s.wait_printed(sent)
    time.sleep(1.0)
    after = rss_kb(s.p.pid)
    s.stop()
    per = (after - before) * 1024 / sent
    print(json.dumps({"spans": sent, "printed": got, "rss_mb_before": round(before / 1024, 1),
                      "rss_mb_after": round(after / 1024, 1), "bytes_per_span": round(per),
                      "attribute_text_per_span": round(text / sent), "beyond_attributes": round(per - text / sent)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=int, default=5000, help="spans per second")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--max-spans", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=512, help="spans per request (rounded to whole traces)")
    ap.add_argument("--sample", type=float, default=10.0, help="seconds between RSS samples")
    ap.add_argument("--per-span", type=int, metavar="N", help="measure memory held per span with N spans")
    a = ap.parse_args()
    if a.per_span:
        per_span(a)
    else:
        steady(a)


if __name__ == "__main__":
    main()
