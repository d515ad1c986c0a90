#!/usr/bin/env python3
"""Inspect AI at scale: one .eval log (deflated members, as Python's zipfile writes them) of
--events model and tool events, 250 turns a sample (a model call and a tool call each), model
inputs deduplicated into events_data.messages with input_refs as Inspect 0.3.2xx writes them.
With --json, the same samples as one .json EvalLog document (Inspect's other log format).
Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, json, os, zipfile

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--events", type=int, default=1_000_000)
ap.add_argument("--json", action="store_true", help="write bench.json (one EvalLog document), not bench.eval")
a = ap.parse_args()
TURNS = 250
os.makedirs(a.out, exist_ok=True)
path = os.path.join(a.out, "bench.json" if a.json else "bench.eval")


def ts(i):
    return "2026-01-02T%02d:%02d:%02d.%06d+00:00" % (i // 3600000000 % 24, i // 60000000 % 60, i // 1000000 % 60, i % 1000000)


header = {"version": 2, "status": "success", "eval": {"task": "bench", "model": "mockllm/model"}, "plan": {}, "results": {}, "stats": {}}
samples = max(1, a.events // (2 * TURNS))


def put(z, name, text):
    # A fixed member time: the same --events give the same bytes.
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 2, 3, 4, 5))
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, text)


def sample_texts():
    for s in range(samples):
        pool = [{"role": "user", "content": "task %d" % s}]
        ev = [{"event": "span_begin", "id": "solvers", "name": "solvers", "type": "solvers", "timestamp": ts(0)}]
        t = 1
        for c in range(TURNS):
            call = {"id": "c%d" % c, "function": "bash", "arguments": {"cmd": "ls %d" % c}}
            pool.append({"role": "assistant", "content": "", "tool_calls": [call]})
            usage = {"input_tokens": 100 + c, "output_tokens": 10, "total_tokens": 110 + c}
            ev.append({"event": "model", "span_id": "solvers", "timestamp": ts(t), "completed": ts(t + 5), "model": "mockllm/model",
                       "input": [], "input_refs": [[0, len(pool) - 1]], "output": {"choices": [{"message": pool[-1]}], "usage": usage}})
            result = "file_%d.txt\n" % c * 8
            ev.append({"event": "tool", "span_id": "solvers", "timestamp": ts(t + 6), "completed": ts(t + 9), "type": "function",
                       "id": call["id"], "function": "bash", "arguments": call["arguments"], "result": result, "events": []})
            pool.append({"role": "tool", "content": result, "tool_call_id": call["id"], "function": "bash"})
            t += 10
        ev.append({"event": "span_end", "id": "solvers", "timestamp": ts(t)})
        usage = {"mockllm/model": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}
        sample = {"id": s, "epoch": 1, "input": "task %d" % s, "target": "x", "messages": pool, "events": ev,
                  "events_data": {"messages": pool}, "model_usage": usage}
        yield s, usage, json.dumps(sample)


if a.json:
    with open(path, "w") as f:
        f.write(json.dumps(header)[:-1] + ', "samples": [')
        for s, _, text in sample_texts():
            f.write((", " if s else "") + text)
        f.write("]}")
else:
    with zipfile.ZipFile(path, "w") as z:
        put(z, "_journal/start.json", json.dumps(header))
        summaries = []
        for s, usage, text in sample_texts():
            put(z, "samples/%d_epoch_1.json" % s, text)
            summaries.append({"id": s, "epoch": 1, "model_usage": usage})
        put(z, "summaries.json", json.dumps(summaries))
        put(z, "header.json", json.dumps(header))
print(json.dumps({"load": path, "files": [path], "format": "inspect-ai"}))
