#!/usr/bin/env python3
"""Scale of `tracetui compare`: 1,000 runs of 200 events, grouped and treed.

Usage (from the repository root, after `cargo build --release`):
    python3 bench/compare_tree.py [--runs 1000] [--events 200] [--tasks 10] [--repeat 5] [--bin PATH]

Generates the runs into a temporary directory with bench/gen/repeated.py (AgentDbg run
directories; three paths per task, --tasks first user inputs), then times, the commands
taking turns round by round after one warm-up run each (warm cache):
  - baseline: `tracetui check DIR`, which loads every run and nothing more
  - `tracetui compare --tree DIR --group-by input --format json` (one tree per task)
  - `tracetui compare --tree DIR --format json` (one tree of every run)
  - `tracetui compare --baseline (half the runs) --current (the other half) --format json`
and prints medians, the ratio to the baseline, and whether the tree is within the 2 s goal.
Stdlib only.
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "gen"))
import repeated  # noqa: E402


def run_once(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.decode(errors='replace')[:500]}")
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--events", type=int, default=200)
    ap.add_argument("--tasks", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "tracetui"))
    a = ap.parse_args()
    if not os.path.exists(a.bin):
        sys.exit(f"compare_tree.py: {a.bin} is missing (cargo build --release, or --bin PATH)")
    tmp = tempfile.mkdtemp(prefix="tracetui-compare-tree-")
    try:
        d = os.path.join(tmp, "runs")
        half = a.runs // 2
        repeated.write_runs(d, half, [0.6, 0.3, 0.1], 1, a.events, a.tasks, "base")
        repeated.write_runs(d, a.runs - half, [0.1, 0.3, 0.6], 2, a.events, a.tasks, "curr")
        runs = sorted(os.listdir(d))
        size = sum(os.path.getsize(os.path.join(d, r, f)) for r in runs for f in os.listdir(os.path.join(d, r)))
        events = sum(1 for r in runs for _ in open(os.path.join(d, r, "events.jsonl")))
        print(f"{len(runs)} runs, {events} events ({events / len(runs):.0f} a run), {size / 1e6:.1f} MB, "
              f"{a.tasks} tasks; {os.cpu_count()} cores; median of {a.repeat}")
        base_dirs = [os.path.join(d, r) for r in runs if r.startswith("base")]
        curr_dirs = [os.path.join(d, r) for r in runs if r.startswith("curr")]
        cmds = [
            ("check (baseline: load every run)", [a.bin, "check", d]),
            ("compare --tree --group-by input", [a.bin, "compare", "--tree", d, "--group-by", "input", "--format", "json"]),
            ("compare --tree (one tree)", [a.bin, "compare", "--tree", d, "--format", "json"]),
            ("compare --baseline --current", [a.bin, "compare", "--baseline", *base_dirs, "--current", *curr_dirs,
                                              "--format", "json"]),
        ]
        for _, c in cmds:
            run_once(c)
        times = {n: [] for n, _ in cmds}
        for _ in range(a.repeat):
            for n, c in cmds:
                times[n].append(run_once(c))
        base = statistics.median(times[cmds[0][0]])
        print(f"{'command':36} {'median':>8} {'min':>8} {'vs check':>9}")
        for n, _ in cmds:
            m = statistics.median(times[n])
            print(f"{n:36} {m:7.3f}s {min(times[n]):7.3f}s {m / base:8.2f}x")
        tree = statistics.median(times[cmds[1][0]])
        print(f"goal: {a.runs} runs grouped and treed in <= 2 s: {'met' if tree <= 2.0 else 'NOT met'} ({tree:.3f}s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
