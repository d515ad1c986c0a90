#!/usr/bin/env python3
"""Scale benchmark: tracetui against cat, wc -l, jq and lnav on the same files, in one run.

Usage (from the repository root, after `cargo build --release`):
    python3 bench/compare.py [--events 1000000] [--runs 2000] [--repeat 5] [--data DIR] [--quick]

Generates, once, into an ignored directory (default target/bench-data/scale):
  - one AgentDbg run of --events events (1M events is about 2 GB) with ../shared/bench/gen_traces.py
  - a directory of --runs runs of 200 events each
Then runs each command --repeat times (after one warm-up run each: warm cache), the commands
taking turns round by round, and prints a table of medians, peak RSS and ratios against `cat`
of the same bytes, and tracetui's time as a share of lnav's. Tools that are not installed
are listed as such. Stdlib only; peak RSS per process comes from wait4().
"""
import argparse, os, shutil, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN = os.path.join(ROOT, "..", "shared", "bench", "gen_traces.py")


def generate(out, runs, events):
    marker = os.path.join(out, ".done")
    if os.path.exists(marker):
        return
    if not os.path.exists(GEN):
        sys.exit(f"compare.py: the generator {GEN} is missing")
    shutil.rmtree(out, ignore_errors=True)
    print(f"generating {runs} run(s) x {events} events into {out} (once)...", file=sys.stderr)
    subprocess.run([sys.executable, GEN, out, "--runs", str(runs), "--events", str(events)], check=True)
    open(marker, "w").close()


def run_once(cmd):
    """(seconds, peak RSS in MB, exit code, CPU seconds) of one run, output discarded."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, shell=isinstance(cmd, str))
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return dt, ru.ru_maxrss / 1024.0, p.returncode, ru.ru_utime + ru.ru_stime


def measure(cmds):
    """Rows of medians for [(name, cmd, repeat)]. Each command runs once to warm the cache,
    then the commands take turns, round by round: on a shared machine the load drifts over
    minutes, and one tool measured in a quiet minute and another in a busy one would skew
    the ratios."""
    for _, cmd, _ in cmds:
        run_once(cmd)
    runs = {name: [] for name, _, _ in cmds}
    for i in range(max(r for _, _, r in cmds)):
        for name, cmd, repeat in cmds:
            if i < repeat:
                runs[name].append(run_once(cmd))
    rows = []
    for name, _, _ in cmds:
        times = [t for t, _, _, _ in runs[name]]
        rows.append({"name": name, "median": statistics.median(times), "min": min(times),
                     "rss": max(m for _, m, _, _ in runs[name]), "codes": {c for _, _, c, _ in runs[name]},
                     "cpu": statistics.median(u for _, _, _, u in runs[name])})
    return rows


def table(title, rows, base):
    print(f"\n### {title}\n")
    print("| command | median | min | CPU (user+sys) | peak RSS | vs `cat` |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        ratio = r["median"] / base if base else float("nan")
        print(f"| {r['name']} | {r['median']:.3f} s | {r['min']:.3f} s | {r['cpu']:.2f} s | {r['rss']:.0f} MB | {ratio:.1f}x |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", default=os.path.join(ROOT, "target", "bench-data", "scale"))
    ap.add_argument("--quick", action="store_true", help="100k events and 200 runs, 3 repeats")
    a = ap.parse_args()
    if a.quick:
        a.events, a.runs, a.repeat = 100_000, 200, 3
    tt = os.path.join(ROOT, "target", "release", "tracetui")
    if not os.path.exists(tt):
        sys.exit("compare.py: build first: cargo build --release")
    big = os.path.join(a.data, f"one-{a.events}")
    many = os.path.join(a.data, f"runs-{a.runs}x200")
    generate(big, 1, a.events)
    generate(many, a.runs, 200)
    run_dir = next(os.path.join(big, d) for d in os.listdir(big) if not d.startswith("."))
    events = os.path.join(run_dir, "events.jsonl")
    size = os.path.getsize(events)
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; file {size / 1e9:.2f} GB, {a.events} events")

    cmds = [("cat", ["cat", events], a.repeat), ("wc -l", ["wc", "-l", events], a.repeat),
            ("tracetui check (full index)", [tt, "check", run_dir], a.repeat)]
    if shutil.which("lnav"):
        # headless: open and index the file, move to its end, quit (without a command, -n
        # prints the whole view, which is not indexing).
        cmds.append(("lnav -n (index, go to end)", ["lnav", "-n", "-c", ":goto 100%", events], a.repeat))
    else:
        print("lnav: not installed (apt-get install lnav)")
    if shutil.which("jq"):
        cmds.append(("jq empty", ["jq", "empty", events], max(1, min(a.repeat, 2))))
    else:
        print("jq: not installed")
    rows = measure(cmds)
    table(f"Index one {size / 1e9:.2f} GB AgentDbg run ({a.events} events)", rows, rows[0]["median"])
    by = {r["name"]: r["median"] for r in rows}
    if "lnav -n (index, go to end)" in by:
        share = by["tracetui check (full index)"] / by["lnav -n (index, go to end)"]
        print(f"\ntracetui check / lnav: {share:.2f} of lnav's time (budget: at most 0.50)")
    print("\n(Peak RSS has a floor of this script's own size: a child starts with its parent's.)")

    run_jsons = [os.path.join(many, d, "run.json") for d in sorted(os.listdir(many)) if not d.startswith(".")]
    rows = measure([
        ("cat */run.json", "cat " + os.path.join(many, "*", "run.json") + " > /dev/null", a.repeat),
        ("ls -l", ["ls", "-l", many], a.repeat),
        (f"tracetui ls ({len(run_jsons)} runs)", [tt, "ls", many], a.repeat),
        ("tracetui ls --format json", [tt, "ls", "--format", "json", many], a.repeat),
    ])
    table(f"List a directory of {len(run_jsons)} runs", rows, rows[0]["median"])


if __name__ == "__main__":
    main()
