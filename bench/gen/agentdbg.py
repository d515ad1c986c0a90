#!/usr/bin/env python3
"""AgentDbg at scale: one run directory of --events events, by ../shared/bench/gen_traces.py.
Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, json, os, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN = os.path.join(ROOT, "..", "shared", "bench", "gen_traces.py")

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--events", type=int, default=1_000_000)
a = ap.parse_args()
if not os.path.exists(GEN):
    sys.exit(f"the generator {GEN} is missing")
subprocess.run([sys.executable, GEN, a.out, "--runs", "1", "--events", str(a.events)], check=True,
               stdout=subprocess.DEVNULL)
run = next(os.path.join(a.out, d) for d in sorted(os.listdir(a.out)) if not d.startswith("."))
print(json.dumps({"load": run, "files": [os.path.join(run, "events.jsonl")], "format": "agentdbg"}))
