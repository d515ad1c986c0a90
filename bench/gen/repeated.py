#!/usr/bin/env python3
"""Repeated runs of one task as AgentDbg run directories, for `tracetui compare`.

Each run takes one of three paths, drawn with the --mix frequencies (seeded):
  0: lookup_order, then refund_order                          (ok)
  1: check_policy and lookup_order in parallel (either order), then refund_order   (ok)
  2: lookup_order, then escalate                              (the run ends in error)
The task is the first LLM call's user message. Ids, timestamps, durations and the results' request ids differ on every run (volatile fields).
With --events N each run is padded to about N events by repeating a read_notes turn before
the path (the same in every run), and --tasks K gives the runs K different first user inputs
(for --group-by input).

Usage: repeated.py OUT [--runs 30] [--mix 0.6,0.3,0.1] [--seed 1] [--events 0] [--tasks 1] [--prefix run]
Stdlib only.
"""
import argparse, json, os, random


def write_run(out, name, path, rng, salt, events=0, task="Order A-1042 arrived broken, please refund it."):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    run_id = "%08x-0000-4000-8000-%012x" % (salt, salt * 7 + 1)
    lines = []
    state = {"n": 0, "ms": 1000 * (salt % 97)}

    def ev(ty, parent, ev_name, dur, payload):
        state["n"] += 1
        state["ms"] += 100 + rng.randrange(50)
        ms = state["ms"]
        eid = "%s-%04d" % (run_id, state["n"])
        ts = "2026-11-20T%02d:%02d:%02d.%03dZ" % (9 + ms // 3_600_000 % 10, ms // 60_000 % 60, ms // 1000 % 60, ms % 1000)
        lines.append({"spec_version": "0.1", "event_id": eid, "run_id": run_id, "parent_id": parent,
                      "event_type": ty, "ts": ts, "duration_ms": dur, "name": ev_name, "payload": payload, "meta": {}})
        return eid

    def llm(prompt, tokens):
        return {"model": "gpt-4o", "prompt": prompt, "response": "ok",
                "usage": {"prompt_tokens": tokens, "completion_tokens": 20 + rng.randrange(10),
                          "total_tokens": tokens + 20}, "status": "ok", "error": None}

    def tool(parent, tool_name, args, fails=False):
        if fails:
            payload = {"tool_name": tool_name, "args": args, "result": None, "status": "error",
                       "error": {"error_type": "Escalated", "message": "handed to a human"}}
        else:
            payload = {"tool_name": tool_name, "args": args,
                       "result": {"request_id": "req-%d-%d" % (salt, state["n"]), "ok": True},
                       "status": "ok", "error": None}
        ev("TOOL_CALL", parent, tool_name, 40 + rng.randrange(200), payload)

    ev("RUN_START", None, "refund-agent", None, {"run_name": name})
    base = 400 + 20 * path
    pad = max(0, (events - 6) // 2)  # the path itself is 7 or 8 events
    for i in range(pad):
        l = ev("LLM_CALL", None, "gpt-4o", 200 + rng.randrange(300), llm([{"role": "user", "content": task}, {"role": "assistant", "content": "note %d" % i}], 50))
        tool(l, "read_notes", {"page": i})
    l = ev("LLM_CALL", None, "gpt-4o", 300 + rng.randrange(400), llm([{"role": "user", "content": task}], base + rng.randrange(40)))
    if path == 1:
        pair = [("check_policy", {"topic": "damaged goods"}), ("lookup_order", {"order_id": "A-1042"})]
        rng.shuffle(pair)
        for t, a in pair:
            tool(l, t, a)
    else:
        tool(l, "lookup_order", {"order_id": "A-1042"})
    l = ev("LLM_CALL", None, "gpt-4o", 300 + rng.randrange(400), llm("decide", base + rng.randrange(40)))
    if path == 2:
        tool(l, "escalate", {"to": "human"}, fails=True)
    else:
        tool(l, "refund_order", {"order_id": "A-1042", "amount": "59.90"})
    ev("LLM_CALL", None, "gpt-4o", 400 + rng.randrange(400), llm("summarise", 500 + rng.randrange(40)))
    status = "error" if path == 2 else "ok"
    ev("RUN_END", None, "refund-agent", None, {"status": status, "summary": {}})
    with open(os.path.join(d, "events.jsonl"), "w") as f:
        for x in lines:
            f.write(json.dumps(x) + "\n")
    with open(os.path.join(d, "run.json"), "w") as f:
        json.dump({"spec_version": "0.1", "run_id": run_id, "run_name": name, "status": status,
                   "started_at": lines[0]["ts"], "ended_at": lines[-1]["ts"]}, f, indent=2)


def write_runs(out, runs, mix, seed, events=0, tasks=1, prefix="run"):
    rng = random.Random(seed)
    for i in range(runs):
        u, path = rng.random(), 2
        if u < mix[0]:
            path = 0
        elif u < mix[0] + mix[1]:
            path = 1
        task = "Order A-%d arrived broken, please refund it." % (1042 + i % tasks)
        write_run(out, "%s%03d" % (prefix, i), path, rng, seed * 100_000 + i + 1, events, task)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--mix", default="0.6,0.3,0.1")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--events", type=int, default=0)
    ap.add_argument("--tasks", type=int, default=1)
    ap.add_argument("--prefix", default="run")
    a = ap.parse_args()
    write_runs(a.out, a.runs, [float(x) for x in a.mix.split(",")], a.seed, a.events, a.tasks, a.prefix)
