#!/usr/bin/env python3
"""`tracetui stats` against `tracetui check` on the same data, in one run (issue 17's budgets).

Usage (from the repository root, after `cargo build --release`):
    python3 bench/stats.py [--runs DIR] [--big DIR] [--repeat 5] [--bin target/release/tracetui]

--runs: a directory of many runs (default /work/bench-shared/runs-2000x200: AgentDbg, 2,000 runs
x 200 events, `gen_traces.py --runs 2000 --events 200`); budget: stats at most 1.5x check.
--big: one large run (default the 1M-event AgentDbg run of bench/formats.py,
target/bench-data/formats/agentdbg-1000000/data, also looked for under /work/main); budget:
stats at most 1.2x check.

Each command runs once to warm the cache, then the commands take turns, round by round (the
load of a shared machine drifts); medians, peak RSS from wait4(), ratios of medians.
"""
import argparse, os, statistics, subprocess, sys, time
from timing import run_once

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(cmds, repeat):
    for _, cmd in cmds:
        run_once(cmd)
    runs = {name: [] for name, _ in cmds}
    for _ in range(repeat):
        for name, cmd in cmds:
            runs[name].append(run_once(cmd)[:3])
    return {
        name: {
            "median": statistics.median(t for t, _, _ in r),
            "min": min(t for t, _, _ in r),
            "rss": max(m for _, m, _ in r),
            "codes": sorted({c for _, _, c in r}),
        }
        for name, r in runs.items()
    }


def first_existing(paths):
    return next((p for p in paths if p and os.path.exists(p)), None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", default="/work/bench-shared/runs-2000x200")
    ap.add_argument("--big", default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "tracetui"))
    a = ap.parse_args()
    big = a.big or first_existing([
        os.path.join(ROOT, "target/bench-data/formats/agentdbg-1000000/data"),
        "/work/main/target/bench-data/formats/agentdbg-1000000/data",
    ])
    cases = []
    if os.path.isdir(a.runs):
        cases.append((f"{a.runs}", a.runs, 1.5))
    else:
        print(f"(no {a.runs}: skipped)", file=sys.stderr)
    if big:
        cases.append((f"{big}", big, 1.2))
    else:
        print("(no 1M-event run: generate it with bench/formats.py --only agentdbg --events 1000000)", file=sys.stderr)
    print("machine: shared, 2 cores; medians of", a.repeat, "rounds, commands interleaved")
    print(f"{'data':<62} {'command':<22} {'median':>8} {'min':>8} {'RSS MB':>8}  codes")
    ok = True
    for label, path, budget in cases:
        cmds = [
            ("check", [a.bin, "check", "--format", "json", path]),
            ("stats", [a.bin, "stats", "--format", "json", path]),
            ("stats --by day", [a.bin, "stats", "--by", "day", path]),
        ]
        r = measure(cmds, a.repeat)
        for name, _ in cmds:
            m = r[name]
            print(f"{label[-62:]:<62} {name:<22} {m['median']:>7.3f}s {m['min']:>7.3f}s {m['rss']:>8.0f}  {m['codes']}")
        for name in ("stats", "stats --by day"):
            ratio = r[name]["median"] / r["check"]["median"]
            within = ratio <= budget
            ok &= within
            print(f"  {name} / check = {ratio:.2f} (budget {budget}x: {'ok' if within else 'OVER'})")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
