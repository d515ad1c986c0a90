#!/usr/bin/env python3
"""Export speed (issue 20): `tracetui export --to otlp-json` against `tracetui check` on the same run.

Usage (from the repository root, after `cargo build --release`):
    python3 bench/export.py [PATH] [--repeat 3] [--bin target/release/tracetui] [--baseline OTHER_BIN]

PATH defaults to the 1M-event AgentDbg run that bench/formats.py generates
(target/bench-data/formats/agentdbg-1000000/data/<run>; `--events 1000000 --only agentdbg`).
The export goes to /dev/null (what is timed is tracetui, not the disk). Each command runs once
to warm the cache, then they take turns, round by round (a shared machine's load drifts).
Prints medians, the ratio export/check (the budget: at most 2.0, i.e. at least half the speed
of check) and peak RSS (the budget: within check's, 300 MB at 1M events). With --baseline,
the other binary's export is timed in the same rounds.
"""
import argparse, glob, os, statistics, subprocess, sys, time
from timing import run_once

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path", nargs="?")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "tracetui"))
    ap.add_argument("--baseline", help="another tracetui binary whose export is timed too")
    a = ap.parse_args()
    path = a.path
    if path is None:
        found = sorted(glob.glob(os.path.join(ROOT, "target", "bench-data", "formats", "agentdbg-1000000", "data", "*")))
        if not found:
            sys.exit("no PATH and no target/bench-data/formats/agentdbg-1000000: run "
                     "`python3 bench/formats.py --only agentdbg --events 1000000` first, or give PATH")
        path = found[0]
    cmds = [("check", [a.bin, "check", path]), ("export otlp-json", [a.bin, "export", path, "--to", "otlp-json"])]
    if a.baseline:
        cmds.append(("baseline export", [a.baseline, "export", path, "--to", "otlp-json"]))
    for _, cmd in cmds:
        run_once(cmd)
    runs = {n: [] for n, _ in cmds}
    for _ in range(a.repeat):
        for n, cmd in cmds:
            runs[n].append(run_once(cmd)[:3])
    print(f"{path}  ({a.repeat} rounds, medians)")
    check = statistics.median(t for t, _, _ in runs["check"])
    print(f"{'command':<18} {'median s':>9} {'min s':>7} {'x check':>8} {'speed':>6} {'peak RSS MB':>12}  exit")
    for n, _ in cmds:
        r = runs[n]
        med = statistics.median(t for t, _, _ in r)
        print(f"{n:<18} {med:>9.2f} {min(t for t, _, _ in r):>7.2f} {med / check:>8.2f} {check / med:>6.2f}"
              f" {max(m for _, m, _ in r):>12.0f}  {sorted({c for _, _, c in r})}")


if __name__ == "__main__":
    main()
