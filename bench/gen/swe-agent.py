#!/usr/bin/env python3
"""SWE-agent at scale: one .traj document of --events events (a step is two: the model's
response and its action), each step with a thought, a response, an action and an
observation of about 2 KB, `history` repeating the conversation as SWE-agent 1.x writes it.
Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, json, os

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--events", type=int, default=1_000_000)
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
path = os.path.join(a.out, "bench.traj")
steps = max(1, a.events // 2)
with open(path, "w") as f:
    f.write('{"environment": "swe_main", "trajectory": [')
    for i in range(steps):
        obs = ("file_%d.py: line %d\n" % (i, i)) * 90
        step = {"action": "open src/file_%d.py %d" % (i % 97, i), "observation": obs,
                "response": "I will open file %d.\n\n```\nopen src/file_%d.py\n```" % (i, i % 97),
                "thought": "I will open file %d." % i, "execution_time": 0.25,
                "state": json.dumps({"open_file": "src/file_%d.py" % (i % 97), "working_dir": "/repo"})}
        f.write((", " if i else "") + json.dumps(step))
    f.write('], "history": [{"role": "system", "content": "You are SWE-agent."}, '
            '{"role": "user", "content": "Fix the bug in calc.py"}')
    for i in range(steps):
        f.write(', ' + json.dumps({"role": "assistant", "content": "open src/file_%d.py" % (i % 97)}))
        f.write(', ' + json.dumps({"role": "user", "content": ("file_%d.py: line %d\n" % (i, i)) * 90}))
    info = {"exit_status": "submitted", "submission": "diff --git a/calc.py b/calc.py\n",
            "model_stats": {"tokens_sent": 1000 * steps, "tokens_received": 50 * steps, "instance_cost": 0.5}}
    f.write('], "info": %s}' % json.dumps(info))
print(json.dumps({"load": path, "files": [path], "format": "swe-agent"}))
