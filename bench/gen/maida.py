#!/usr/bin/env python3
"""Maida (trace spec 0.2.x) at scale: one run directory `OUT/<trace_id>/` with meta.json and
spans.jsonl of --events spans, as Maida's local exporter writes them (maida/_tracing/_otel.py:
`json.dumps(span_to_dict(span), ensure_ascii=False)`, one span a line when it ends): so children
come first and the root span last.

Shape of a run, in write order:
  steps of: LLM span (CLIENT, gen_ai.* attributes, prompt and completion as gen_ai.*.message
            span events), 0-3 tool spans (maida.tool_name, args and result as JSON strings in
            maida.tool.args / maida.tool.result span events), sometimes a delegate_task tool
            span whose sub-agent spans (depth 2 and 3) are written before it, a state span every
            few steps (JSON strings in a `state` span event), rarely a LOOP_WARNING span;
  failed tools carry maida.error_* attributes and status ERROR;
  the root span last (counts as attributes; an `exception` span event when the run failed).
Payload text, models and tools come from ../shared/bench/gen_traces.py (the AgentDbg
generator), so both formats carry the same kind of text. Deterministic for the same arguments.

Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, importlib.util, json, os, sys
from datetime import datetime, timezone

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN = os.path.join(ROOT, "..", "shared", "bench", "gen_traces.py")


def load_gen():
    if not os.path.exists(GEN):
        sys.exit(f"the generator {GEN} is missing")
    spec = importlib.util.spec_from_file_location("gen_traces", GEN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def iso_us(us):
    dt = datetime.fromtimestamp(us // 1_000_000, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + "%06dZ" % (us % 1_000_000)


class Run:
    def __init__(self, gt, g, n):
        self.gt, self.g, self.rng, self.n = gt, g, g.rng, n
        self.trace_id = "%032x" % self.rng.getrandbits(128)
        self.root_id = self.span_id()
        self.run_name = "%s-0000" % self.rng.choice(gt.RUN_NAMES)
        self.us = 1771187465123000  # 2026-02-15T20:31:05.123Z
        self.start_us = self.us
        self.count = 0
        self.counts = {"llm_calls": 0, "tool_calls": 0, "errors": 0, "loop_warnings": 0}

    def span_id(self):
        return "%016x" % self.rng.getrandbits(64)

    def tick(self, lo, hi):
        self.us += self.rng.randint(lo, hi)
        return self.us

    def span(self, sid, parent, name, kind, start, end, attrs, events, status="OK", desc=""):
        self.count += 1
        return {
            "trace_id": self.trace_id, "span_id": sid, "parent_span_id": parent, "name": name,
            "kind": kind, "start_time": iso_us(start), "end_time": iso_us(end),
            "duration_ms": max(0, (end - start) // 1000), "attributes": attrs, "events": events,
            "status_code": status, "status_description": desc,
        }

    def meta_attr(self, depth):
        if self.rng.random() < 0.8:
            return {}
        return {"maida.meta": json.dumps({"agent_depth": depth, "step": self.count,
                                          "tags": ["retry"] if self.rng.random() < 0.3 else []})}

    def llm(self, parent, depth, sid=None):
        g, r = self.g, self.rng
        model, provider = r.choice(self.gt.MODELS)
        start = self.tick(1_000, 400_000)
        end = self.tick(300_000, 20_000_000)
        p = g.prompt()
        resp = g.text(g.lognorm(400, 0.9, 200, 20_000))
        plen = len(p) if isinstance(p, str) else sum(len(m["content"]) for m in p)
        pt, ct = plen // 4 + r.randint(5, 60), len(resp) // 4 + r.randint(1, 20)
        failed = r.random() < 0.004
        attrs = {"gen_ai.system": provider, "gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                 "maida.status": "error" if failed else "ok",
                 "gen_ai.request.temperature": r.choice((0.0, 0.2, 0.7, 1.0)),
                 "gen_ai.response.finish_reasons": r.choice(("stop", "tool_calls", "length")),
                 "gen_ai.usage.input_tokens": pt, "gen_ai.usage.output_tokens": ct,
                 "gen_ai.usage.total_tokens": pt + ct}
        if failed:
            attrs["maida.error_type"] = "RateLimitError"
            attrs["maida.error_message"] = "429 Too Many Requests"
        attrs.update(self.meta_attr(depth))
        # Chat-style prompts are one span event a message, as GenAI emitters write them.
        msgs = p if isinstance(p, list) else [{"role": "user", "content": p}]
        events = [{"name": "gen_ai.%s.message" % m["role"], "timestamp": iso_us(start + k),
                   "attributes": {"content": m["content"]}} for k, m in enumerate(msgs)]
        events.append({"name": "gen_ai.assistant.message", "timestamp": iso_us(end - 1),
                       "attributes": {"content": resp}})
        self.counts["llm_calls"] += 1
        return self.span(sid or self.span_id(), parent, model, "CLIENT", start, end, attrs, events,
                         "ERROR" if failed else "OK", "429 Too Many Requests" if failed else "")

    def tool(self, parent, depth, name=None, sid=None, start=None):
        g, r = self.g, self.rng
        name = name or r.choice(self.gt.TOOLS[:-1])
        start = start if start is not None else self.tick(1_000, 400_000)
        end = self.tick(1_000, 5_000_000)
        failed = r.random() < 0.02
        attrs = {"maida.tool_name": name, "maida.status": "error" if failed else "ok"}
        events = [{"name": "maida.tool.args", "timestamp": iso_us(start),
                   "attributes": {"args": json.dumps(g.tool_args(name), ensure_ascii=False)}}]
        if failed:
            et, msg = r.choice(self.gt.ERROR_TYPES)
            attrs["maida.error_type"], attrs["maida.error_message"] = et, msg
        else:
            events.append({"name": "maida.tool.result", "timestamp": iso_us(end),
                           "attributes": {"result": json.dumps(g.tool_result(name), ensure_ascii=False)}})
        attrs.update(self.meta_attr(depth))
        self.counts["tool_calls"] += 1
        self.counts["errors"] += failed
        return self.span(sid or self.span_id(), parent, name, "INTERNAL", start, end, attrs, events,
                         "ERROR" if failed else "OK", attrs.get("maida.error_message", ""))

    def state(self, parent):
        g, r = self.g, self.rng
        start = self.tick(100, 5_000)
        st = {"step": self.count, "plan": [g.text(r.randint(20, 80)) for _ in range(r.randint(1, 6))],
              "memory": {"scratchpad": g.text(r.randint(50, 600))},
              "budget": {"tokens_used": r.randint(0, 10**6), "usd": round(r.random() * 3, 4)}}
        diff = {"changed": ["plan", "memory.scratchpad"], "added": {}, "removed": []}
        ev = {"name": "state", "timestamp": iso_us(start),
              "attributes": {"state": json.dumps(st, ensure_ascii=False), "diff": json.dumps(diff)}}
        return self.span(self.span_id(), parent, "state", "INTERNAL", start, start, {}, [ev])

    def loop_warning(self, parent):
        r = self.rng
        start = self.tick(100, 5_000)
        pattern = "LLM_CALL:%s -> TOOL_CALL:%s" % (r.choice(self.gt.MODELS)[0], r.choice(self.gt.TOOLS))
        ev = {"name": "maida.loop.warning", "timestamp": iso_us(start),
              "attributes": {"pattern": pattern, "repetitions": 3, "window_size": 12,
                             "evidence_event_ids": json.dumps([self.span_id() for _ in range(6)])}}
        self.counts["loop_warnings"] += 1
        return self.span(self.span_id(), parent, "loop_warning", "INTERNAL", start, start,
                         {"maida.event_type": "LOOP_WARNING"}, [ev], "UNSET")

    def spans(self):
        r, root = self.rng, self.root_id
        failed = r.random() < 0.1
        budget = self.n - 1  # the root comes last
        step = 0
        while self.count < budget:
            step += 1
            if budget - self.count < 8:
                yield self.state(root)
                continue
            yield self.llm(root, 1)
            for _ in range(r.choice((0, 1, 1, 1, 2, 2, 3))):
                yield self.tool(root, 1)
            if r.random() < 0.04:
                # A sub-agent: its spans end (and are written) before the delegating tool span.
                delegate, start = self.span_id(), self.tick(1_000, 50_000)
                sub = self.span_id()
                if r.random() < 0.7:
                    yield self.tool(sub, 3)
                yield self.llm(delegate, 2, sub)
                yield self.tool(root, 1, "delegate_task", delegate, start)
            if step % r.randint(2, 5) == 0:
                yield self.state(root)
            if r.random() < 0.002:
                yield self.loop_warning(root)
        end = self.tick(1_000, 100_000)
        attrs = {"maida.run_name": self.run_name, "maida.python_version": "3.11.7", "maida.platform": "linux",
                 "maida.cwd": "/home/dev/agents/%s" % self.run_name,
                 "maida.argv": ["python", "-m", "agent", "--task", self.g.text(60)],
                 "maida.llm_calls": self.counts["llm_calls"], "maida.tool_calls": self.counts["tool_calls"],
                 "maida.errors": self.counts["errors"] + failed, "maida.loop_warnings": self.counts["loop_warnings"]}
        events = []
        if failed:
            et, msg = r.choice(self.gt.ERROR_TYPES)
            events.append({"name": "exception", "timestamp": iso_us(end - 10),
                           "attributes": {"maida.error_type": et, "maida.error_message": msg,
                                          "maida.error_stack": self.g.stack()}})
        self.end_us, self.failed = end, failed
        yield self.span(root, None, self.run_name, "INTERNAL", self.start_us, end, attrs, events,
                        "ERROR" if failed else "OK", "error" if failed else "")

    def meta(self):
        return {"spec_version": "0.2.0", "trace_id": self.trace_id, "run_name": self.run_name,
                "started_at": iso_us(self.start_us), "ended_at": iso_us(self.end_us),
                "duration_ms": (self.end_us - self.start_us) // 1000,
                "status": "error" if self.failed else "ok",
                "counts": dict(self.counts, errors=self.counts["errors"] + self.failed)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--events", type=int, default=1_000_000, help="spans in the run, the root included")
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    if a.events < 10:
        ap.error("--events must be >= 10")
    gt = load_gen()
    run = Run(gt, gt.Gen(a.seed), a.events)
    d = os.path.join(a.out, run.trace_id)
    os.makedirs(d, exist_ok=True)
    spans = os.path.join(d, "spans.jsonl")
    dumps = json.JSONEncoder(ensure_ascii=False).encode  # json.dumps(..., ensure_ascii=False)
    with open(spans, "w", encoding="utf-8", buffering=8 << 20) as f:
        for s in run.spans():
            f.write(dumps(s) + "\n")
    with open(os.path.join(d, "meta.json"), "w", encoding="utf-8") as f:
        json.dump(run.meta(), f, ensure_ascii=False, indent=2)
        f.write("\n")
    print(json.dumps({"load": d, "files": [spans], "format": "maida"}))


if __name__ == "__main__":
    main()
