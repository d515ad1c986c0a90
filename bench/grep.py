#!/usr/bin/env python3
"""`tracetui grep` against `rg -c` on the same files, in one run (issue 18's budget: at most 2x).

Usage (from the repository root, after `cargo build --release`; ripgrep on PATH, e.g.
`apt-get install ripgrep`, or `cargo install ripgrep --root /tmp/rg` and `--rg /tmp/rg/bin/rg`):
    python3 bench/grep.py [--repeat 5] [--rg rg] [--runs DIR] [--big DIR] [--before BIN]

--before BIN times another tracetui binary (a build before a change) in the same rounds, so
that before and after are compared under the same load.

Data (read-only, shared): --runs, a directory of 2,000 AgentDbg runs x 200 events (763 MB), and
--big, the directory of the 1M-event AgentDbg run (1.99 GB). Patterns: a rare one (a handful of
lines) and one on about 1% of lines, per data set; the script prints how many lines rg counts.
The rare pattern is in text grep searches (a tool's argument: `/workspace/src/refund_783.py`,
5 lines of the 2,000 runs, 7 of the 1M-event run), so that both tools find the same lines;
an id (which grep does not search) would let tracetui skip work rg does.
With --before, the JSON output of both binaries is compared once per case (it must be the same).

Warm cache: every command runs once first, then the commands take turns, round by round (the
load of a shared machine drifts). Medians of wall time and of CPU time (user + sys, from
wait4): on a machine shared with other jobs the CPU time is the steadier figure.
"""
import argparse, os, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_once(cmd):
    """(seconds, CPU seconds, exit code, stdout)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    return time.perf_counter() - t0, ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rg", default="rg")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "tracetui"))
    ap.add_argument("--runs", default="/work/bench-shared/runs-2000x200")
    ap.add_argument("--big", default="/work/main/target/bench-data/formats/agentdbg-1000000/data")
    ap.add_argument("--rare-runs", default="refund_78")
    ap.add_argument("--rare-big", default="refund_78")
    ap.add_argument("--common", default="calendar_lookup")
    ap.add_argument("--before", help="another tracetui binary to time in the same rounds")
    a = ap.parse_args()

    cases = []
    for label, path, rare in [("runs-2000x200", a.runs, a.rare_runs), ("agentdbg-1M", a.big, a.rare_big)]:
        if not os.path.isdir(path):
            print(f"skipping {label}: {path} is missing", file=sys.stderr)
            continue
        for kind, pat in [("rare", rare), ("1%", a.common)]:
            cases.append((label, kind, pat, path))

    rows = []
    for label, kind, pat, path in cases:
        cmds = [("rg", [a.rg, "-c", "--no-messages", pat, path]), ("tracetui", [a.bin, "grep", pat, path])]
        if a.before:
            cmds.append(("before", [a.before, "grep", pat, path]))
        for _, c in cmds:
            run_once(c)  # warm the cache
        if a.before:
            outs = [run_once([b, "grep", "--format", "json", pat, path])[3] for b in (a.bin, a.before)]
            same = "the same" if outs[0] == outs[1] else "DIFFERENT"
            print(f"{label:14} {kind:5} {pat!r}: JSON output of tracetui and before: {same} "
                  f"({len(outs[0].splitlines())} lines)", flush=True)
        res = {n: [] for n, _ in cmds}
        counts = {}
        for _ in range(a.repeat):
            for n, c in cmds:
                t, cpu, code, out = run_once(c)
                res[n].append((t, cpu))
                if n == "rg":
                    counts["lines"] = sum(int(l.rsplit(b":", 1)[-1]) for l in out.splitlines() if l)
                elif n == "before":
                    counts["before"] = len(out.splitlines())
                else:
                    counts["matches"] = len(out.splitlines())
                    counts["code"] = code
        med = {n: (statistics.median(t for t, _ in r), statistics.median(c for _, c in r)) for n, r in res.items()}
        rows.append((label, kind, pat, counts, med))
        print(f"{label:14} {kind:5} {pat!r}: rg {counts.get('lines')} lines, tracetui {counts.get('matches')} matches "
              f"(exit {counts.get('code')}); wall rg {med['rg'][0]:.2f}s tracetui {med['tracetui'][0]:.2f}s "
              f"= {med['tracetui'][0] / med['rg'][0]:.2f}x; cpu rg {med['rg'][1]:.2f}s tracetui {med['tracetui'][1]:.2f}s "
              f"= {med['tracetui'][1] / max(med['rg'][1], 1e-3):.2f}x", flush=True)
        if "before" in med:
            print(f"{'':14} before: {counts.get('before')} matches, wall {med['before'][0]:.2f}s = "
                  f"{med['before'][0] / med['rg'][0]:.2f}x, cpu {med['before'][1]:.2f}s = "
                  f"{med['before'][1] / max(med['rg'][1], 1e-3):.2f}x", flush=True)

    print()
    before = " before wall | ratio | before cpu | ratio |" if a.before else ""
    print("| data | pattern | rg lines | tracetui matches | rg wall | tracetui wall | ratio | rg cpu | tracetui cpu | ratio |"
          + before)
    print("|---" * (10 + (4 if a.before else 0)) + "|")
    for label, kind, pat, counts, med in rows:
        (rw, rc), (tw, tc) = med["rg"], med["tracetui"]
        extra = ""
        if "before" in med:
            bw, bc = med["before"]
            extra = f" {bw:.2f} s | {bw / rw:.2f}x | {bc:.2f} s | {bc / max(rc, 1e-3):.2f}x |"
        print(f"| {label} | {kind} `{pat}` | {counts.get('lines')} | {counts.get('matches')} | {rw:.2f} s | {tw:.2f} s | "
              f"{tw / rw:.2f}x | {rc:.2f} s | {tc:.2f} s | {tc / max(rc, 1e-3):.2f}x |" + extra)
    print(f"\nmedians of {a.repeat} interleaved runs, warm cache; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores (shared machine)")


if __name__ == "__main__":
    main()
