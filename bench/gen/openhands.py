#!/usr/bin/env python3
"""OpenHands V0 at scale: one trajectory (a JSON array of events) of --events events: a user
message, then agent actions (`run`, each its own LLM response with usage) and the
observations that answer them by `cause` (about 2 KB of command output each).
Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, json, os

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--events", type=int, default=1_000_000)
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
path = os.path.join(a.out, "bench.json")


def ts(i):
    return "2026-01-02T%02d:%02d:%02d.%06d" % (i // 3600000000 % 24, i // 60000000 % 60, i // 1000000 % 60, i % 1000000)


with open(path, "w") as f:
    f.write("[" + json.dumps({"id": 0, "timestamp": ts(0), "source": "user", "message": "Fix the bug",
                              "action": "message", "args": {"content": "Fix the bug in calc.py"}}))
    calls = max(1, (a.events - 1) // 2)
    for c in range(calls):
        i = 1 + 2 * c
        usage = {"prompt_tokens": 1000 + c, "completion_tokens": 20, "total_tokens": 1020 + c}
        act = {"id": i, "timestamp": ts(i * 1000), "source": "agent", "message": "Running command: ls %d" % c,
               "action": "run", "args": {"command": "ls src/%d" % c, "thought": "Look at directory %d." % c},
               "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "toolu_%d" % c,
                                      "model_response": {"id": "resp_%d" % c, "model": "claude-sonnet-4", "usage": usage}}}
        obs = {"id": i + 1, "timestamp": ts(i * 1000 + 500), "source": "agent", "message": "Command finished",
               "cause": i, "observation": "run", "content": ("src/%d/file.py\n" % c) * 120,
               "extras": {"command": "ls src/%d" % c, "metadata": {"exit_code": 0}}}
        f.write(",\n" + json.dumps(act) + ",\n" + json.dumps(obs))
    f.write("]\n")
print(json.dumps({"load": path, "files": [path], "format": "openhands"}))
