#!/usr/bin/env python3
"""Issue 21's many-run budget: a baseline and 10 runs of 10,000 events each, compared.

Usage (from the repository root, after `cargo build --release`):
    python3 bench/compare_table.py [--repeat 7] [--bin NAME=PATH]... [--only table|json] [--keep]

Generates, once, into the ignored target/bench-data/ (the same runs as `cargo bench --bench
diff compare`): the baseline (seed 1) and ten unrelated runs (seed 7), AgentDbg, 10,000 events
each (about 200 MB), with ../shared/bench/gen_traces.py. Then times, for each binary given
(default: target/release/tracetui), the commands taking turns round by round (a shared machine's
load drifts; one build timed in a quiet minute and another in a busy one would skew the ratio):

  - `tracetui diff BASE R1..R10 --format text`: the compare table (each run loaded, aligned,
    diffed, summarized into its row), what the explorer's table computes;
  - `tracetui diff BASE R1..R10 --format json`: the same plus each run's full diff as JSON
    (every changed string with its word segments), written to /dev/null;
  - the same two against ten reruns identical to the baseline (ten copies of it).

Prints medians, minimum, CPU time and peak RSS; with two binaries, the ratio of each to the
first. Budget: the table within 1 s. `--keep` leaves the data in place; otherwise the ten
copies are deleted at the end (the generated runs stay for the criterion bench).
"""
import argparse, os, shutil, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN = os.environ.get("TRACETUI_GEN_TRACES", os.path.join(ROOT, "..", "shared", "bench", "gen_traces.py"))
DATA = os.path.join(ROOT, "target", "bench-data")


def run_dirs(out):
    if not os.path.isdir(out):
        return []
    return sorted(os.path.join(out, d) for d in os.listdir(out)
                  if os.path.isfile(os.path.join(out, d, "events.jsonl")))


def generate(out, runs, seed):
    have = run_dirs(out)
    if len(have) == runs:
        return have
    if not os.path.exists(GEN):
        sys.exit(f"compare_table.py: the generator {GEN} is missing")
    shutil.rmtree(out, ignore_errors=True)
    print(f"generating {runs} run(s) x 10000 events into {out} (once)...", file=sys.stderr)
    subprocess.run([sys.executable, GEN, out, "--runs", str(runs), "--events", "10000", "--seed", str(seed)],
                   check=True, stdout=subprocess.DEVNULL)
    return run_dirs(out)


def run_once(cmd):
    """(seconds, peak RSS in MB, exit code, CPU seconds) of one run, output discarded."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"compare_table.py: {' '.join(cmd[:3])} ... exited {code}: {err.strip()}")
    return dt, ru.ru_maxrss / 1024.0, code, ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--bin", action="append", default=[], metavar="NAME=PATH",
                    help="a tracetui binary to time (repeatable; the first is the reference)")
    ap.add_argument("--keep", action="store_true", help="keep the copies of the baseline")
    ap.add_argument("--only", choices=["table", "json"], help="time only the table or only the JSON report")
    a = ap.parse_args()
    bins = []
    for b in a.bin or [f"tracetui={os.path.join(ROOT, 'target', 'release', 'tracetui')}"]:
        name, _, path = b.partition("=")
        if not os.path.exists(path):
            sys.exit(f"compare_table.py: {path} not found (cargo build --release first)")
        bins.append((name, path))
    base = generate(os.path.join(DATA, "e10000-s1"), 1, 1)[0]
    unrelated = generate(os.path.join(DATA, "many10-e10000-s7"), 10, 7)
    # Ten reruns identical to the baseline: copies in their own directories (a run's files are
    # what identify it; the same path ten times would be one run).
    copies = os.path.join(DATA, "compare-table-reruns")
    reruns = []
    for i in range(10):
        d = os.path.join(copies, f"rerun-{i}")
        if not os.path.isfile(os.path.join(d, "events.jsonl")):
            shutil.copytree(base, d, dirs_exist_ok=True)
        reruns.append(d)
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} (shared: medians, turns round by round)")

    cmds = []
    for label, runs in [("unrelated", unrelated), ("reruns", reruns)]:
        for fmt, what in [("text", "table"), ("json", "json")]:
            if a.only and a.only != what:
                continue
            for name, path in bins:
                cmds.append((f"{what} · {label}", name, [path, "diff", base, *runs, "--format", fmt]))
    for _, _, cmd in cmds:
        run_once(cmd)  # warm the page cache
    times = {(w, n): [] for w, n, _ in cmds}
    for _ in range(a.repeat):
        for w, n, cmd in cmds:
            times[(w, n)].append(run_once(cmd))

    print("\n| what | build | median | min | CPU (user+sys) | peak RSS | vs first build |")
    print("|---|---|---:|---:|---:|---:|---:|")
    ref = {}
    for w, n, _ in cmds:
        r = times[(w, n)]
        med = statistics.median(t for t, _, _, _ in r)
        ref.setdefault(w, med)
        print(f"| {w} | {n} | {med:.3f} s | {min(t for t, _, _, _ in r):.3f} s | "
              f"{statistics.median(c for _, _, _, c in r):.2f} s | {max(m for _, m, _, _ in r):.0f} MB | "
              f"{med / ref[w]:.2f}x |")
    print("\nbudget: the compare table (`table` rows) within 1 s")
    if not a.keep:
        shutil.rmtree(copies, ignore_errors=True)


if __name__ == "__main__":
    main()
