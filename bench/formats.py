#!/usr/bin/env python3
"""Load benchmark for every format: tracetui check against the floor, wc -l and lnav, in one run.

Usage (from the repository root, after `cargo build --release`):
    python3 bench/formats.py [--only agentdbg,maida] [--events 1000000] [--repeat 5] [--no-lnav] [--explorer]
                             [--baseline PATH-TO-AN-EARLIER-tracetui]

Each format has a deterministic generator `bench/gen/<format>.py OUT --events N` that writes
files that mimic the format's real ones and prints one JSON line: {"load": PATH to give
tracetui, "files": [the data files], "format": the --format id}. Data goes once into the
ignored target/bench-data/formats/<format>-<N>/.

lnav is timed twice where it can be: indexing the file as text (it knows no format of these
files), and parsing it as JSON with the format definitions in bench/lnav/ (`lnav -I bench/lnav`;
formats without a top-level timestamp, OTLP and OpenAI-chat, have none).

The floor is bench/floor.c: read(2) into a 1 MiB buffer and count newlines (`cat >/dev/null`
may copy nothing). Each command runs once to warm the cache, then the commands take turns,
round by round (the load of a shared machine drifts). Medians; peak RSS from wait4().

With --explorer, the explorer opens each file too, in turn with the others, on a pseudo-terminal
of 200x60 (a detached tmux session), with TRACETUI_EXIT_AFTER_LOAD set: it quits when the load is complete and
says when its first screen of events was drawn and when the load ended, from its own start
(issue 13: first screen within 300 ms, load complete within 1.2x `check`'s time).
"""
import argparse, glob, json, os, re, shlex, shutil, statistics, subprocess, sys, time
from timing import run_once

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN_DIR = os.path.join(ROOT, "bench", "gen")


def explorer_once(cmd):
    """The explorer in a detached tmux session of 200x60 (it asks the terminal for the cursor
    position, which `script` with no terminal behind it never answers): (first screen, load
    complete) in seconds as it reports them from its own start."""
    out = os.path.join(ROOT, "target", "bench-explorer.err")
    if os.path.exists(out):
        os.remove(out)
    sock = f"tracetui-bench-{os.getpid()}"
    inner = "TRACETUI_EXIT_AFTER_LOAD=1 " + " ".join(shlex.quote(c) for c in cmd) + " 2>" + shlex.quote(out)
    subprocess.run(["tmux", "-L", sock, "new-session", "-d", "-x", "200", "-y", "60", inner], check=True)
    t0 = time.perf_counter()
    while subprocess.run(["tmux", "-L", sock, "has-session"], stderr=subprocess.DEVNULL).returncode == 0:
        if time.perf_counter() - t0 > 600:
            subprocess.run(["tmux", "-L", sock, "kill-server"])
            sys.exit("formats.py: the explorer did not end its load within 600 s")
        time.sleep(0.05)
    text = open(out).read() if os.path.exists(out) else ""
    m = re.search(r"first screen of events (\S+) ms, load complete (\S+) ms", text)
    if not m:
        sys.exit(f"formats.py: the explorer did not report its load: {text[-500:]!r}")
    return float(m.group(1)) / 1e3, float(m.group(2)) / 1e3, 0.0, 0, 0.0


def measure(cmds, repeat):
    def once(name, cmd):
        if name == "explorer":
            first, full, rss, code, cpu = explorer_once(cmd)
            firsts.append(first)
            return full, rss, code, cpu
        return run_once(cmd)

    firsts = []
    for name, cmd in cmds:
        once(name, cmd)
    firsts.clear()
    runs = {name: [] for name, _ in cmds}
    for _ in range(repeat):
        for name, cmd in cmds:
            runs[name].append(once(name, cmd))
    out = {}
    for name, _ in cmds:
        r = runs[name]
        out[name] = {"median": statistics.median(t for t, _, _, _ in r), "min": min(t for t, _, _, _ in r),
                     "rss": max(m for _, m, _, _ in r), "cpu": statistics.median(c for _, _, _, c in r),
                     "codes": sorted({c for _, _, c, _ in r})}
        if name == "explorer":
            out[name]["first_screen"] = statistics.median(firsts)
            # The ratio of each round (the explorer's load and `check`'s, one after the other).
            out[name]["x_check"] = statistics.median(e[0] / c[0] for e, c in zip(r, runs["check"]))
    return out


def floor_binary():
    out = os.path.join(ROOT, "target", "bench-floor")
    src = os.path.join(ROOT, "bench", "floor.c")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        subprocess.run(["cc", "-O2", "-o", out, src], check=True)
    return out


def generate(fmt, events, data):
    out = os.path.join(data, f"{fmt}-{events}")
    done = os.path.join(out, ".done.json")
    if not os.path.exists(done):
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        print(f"generating {fmt}, {events} events, into {out} (once)...", file=sys.stderr)
        p = subprocess.run([sys.executable, os.path.join(GEN_DIR, fmt + ".py"), os.path.join(out, "data"),
                            "--events", str(events)], check=True, stdout=subprocess.PIPE, text=True)
        with open(done, "w") as f:
            f.write(p.stdout.strip().splitlines()[-1])
    with open(done) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="comma-separated formats (default: every generator in bench/gen)")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", default=os.path.join(ROOT, "target", "bench-data", "formats"))
    ap.add_argument("--no-lnav", action="store_true")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--explorer", action="store_true", help="also time the explorer's load (on a pseudo-terminal)")
    ap.add_argument("--baseline", help="another tracetui binary (an earlier build): its check takes turns with this one's")
    a = ap.parse_args()
    tt = os.environ.get("TRACETUI") or os.path.join(ROOT, "target", "release", "tracetui")
    if not os.path.exists(tt):
        sys.exit("formats.py: build first: cargo build --release")
    fmts = a.only.split(",") if a.only else sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(GEN_DIR, "*.py")))
    floor = floor_binary()
    lnav = None if a.no_lnav else shutil.which("lnav")
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {a.events} events a format; "
          f"median of {a.repeat}, commands in turns; lnav: {'yes' if lnav else 'not installed'}")
    ex_head = " explorer: first screen | load complete | x check (each round) |" if a.explorer else ""
    print("\n| format | size | floor | wc -l | check | x floor | peak RSS | CPU | lnav (text) | x lnav | lnav (JSON) | x lnav JSON | exit |"
          + ex_head)
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|" + ("---:|---:|---:|" if a.explorer else ""))
    # lnav keeps state under $HOME and writes its default formats and configs into the
    # directory -I names (a run once left ~5,000 lines of them at the top of the repository):
    # a home of its own and a copy of bench/lnav in it, so that neither a user's config plays a
    # part nor anything is written into the checkout.
    lnav_home = os.path.join(ROOT, "target", "bench-lnav-home")
    lnav_dir = os.path.join(lnav_home, "lnav-formats")
    shutil.rmtree(lnav_dir, ignore_errors=True)
    shutil.copytree(os.path.join(ROOT, "bench", "lnav"), lnav_dir)
    figures = {}
    for fmt in fmts:
        g = generate(fmt, a.events, a.data)
        size = sum(os.path.getsize(f) for f in g["files"])
        cmds = [("floor", [floor] + g["files"]), ("wc", ["wc", "-l"] + g["files"]),
                ("check", [tt, "check", "--format", g["format"], g["load"]])]
        if lnav and len(g["files"]) == 1:
            cmds.append(("lnav", ["env", "HOME=" + lnav_home, lnav, "-n", "-c", ":goto 100%", g["files"][0]]))
        if lnav and os.path.exists(os.path.join(lnav_dir, "formats", "installed", fmt + ".json")):
            # The file lnav parses as JSON: the format's own (the session of claude-code).
            cmds.append(("lnav_json", ["env", "HOME=" + lnav_home, lnav, "-I", lnav_dir, "-n", "-c", ":goto 100%",
                                       g["files"][0]]))
        if a.explorer:
            cmds.append(("explorer", [tt, "--format", g["format"], g["load"]]))
        if a.baseline:
            cmds.append(("baseline", [a.baseline, "check", "--format", g["format"], g["load"]]))
        # A file tracetui refuses (OpenHands V0 and SWE-agent documents over 512 MiB) has no
        # load to time: say so and go on (the explorer would show the refusal and never end).
        probe = subprocess.run(cmds[2][1], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        said = probe.stdout.strip()
        if said.lower().startswith("error:"):
            print(f"| {fmt} | {size / 1e9:.2f} GB | refused: {said.splitlines()[0][:120]} |",
                  flush=True)
            figures[fmt] = {"size": size, "refused": said}
            continue
        m = measure(cmds, a.repeat)
        ex = m.get("explorer")
        c = m["check"]
        ln = m.get("lnav")
        lj = m.get("lnav_json")
        figures[fmt] = {"size": size, **{k: v for k, v in m.items()}}
        print(f"| {fmt} | {size / 1e9:.2f} GB | {m['floor']['median']:.3f} s | {m['wc']['median']:.3f} s | "
              f"{c['median']:.3f} s | {c['median'] / m['floor']['median']:.1f} | {c['rss']:.0f} MB | {c['cpu']:.2f} s | "
              + (f"{ln['median']:.3f} s | {c['median'] / ln['median']:.2f} |" if ln else "– | – |")
              + (f" {lj['median']:.3f} s | {c['median'] / lj['median']:.2f} |" if lj else " – | – |")
              + f" {','.join(map(str, c['codes']))} |"
              + (f" {ex['first_screen'] * 1e3:.0f} ms | {ex['median']:.3f} s | {ex['x_check']:.2f} |"
                 if ex else ""), flush=True)
        if a.baseline:
            b = m["baseline"]
            print(f"|   baseline {fmt} | | | | {b['median']:.3f} s | {b['median'] / m['floor']['median']:.1f} | "
                  f"{b['rss']:.0f} MB | {b['cpu']:.2f} s | this build / baseline: {c['median'] / b['median']:.2f} (CPU "
                  f"{c['cpu'] / max(b['cpu'], 1e-9):.2f}) | | | | |", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figures, f, indent=1)
    print("\n(exit: tracetui check's exit codes; 1 means diagnostics were found. Peak RSS has a floor of"
          " this script's own size.)")


if __name__ == "__main__":
    main()
