#!/usr/bin/env python3
"""Issue 37, item 8: an idle explorer costs nothing. On a directory of a few runs beside a tree of
N other files (default 300,000 in 3,000 directories; a tenth of them `.json` that are no trace),
the explorer is started in tmux, left until its list shows every run and it has settled, then its
CPU time (utime + stime from /proc) is read over W seconds (default 60) of idleness, with the
number of files it opened meanwhile (`openat` calls, counted with strace when it is installed).

Usage (after `cargo build --release`; tmux on PATH):
    python3 bench/idle.py [--files 300000] [--seconds 60] [--bin target/release/tracetui]
                          [--baseline OTHER_BINARY] [--keep DIR]

With --baseline, the same tree is measured with that binary first, in the same run (the budget:
≤ 1% of a core averaged over the idle window). The tree is generated into a temporary directory
unless --keep names one (reused when it has the same size).
"""
import argparse, os, shutil, subprocess, sys, tempfile, time

import tmuxscreen
from tmuxscreen import screen

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")


def make_tree(base, files):
    tree = os.path.join(base, "tree")
    stamp = os.path.join(base, f".done-{files}")
    if os.path.exists(stamp):
        return tree
    shutil.rmtree(tree, ignore_errors=True)
    # A few real runs: the AgentDbg generator's run directories.
    subprocess.run([sys.executable, os.path.join(ROOT, "..", "shared", "bench", "gen_traces.py"),
                    os.path.join(tree, "runs"), "--runs", "5", "--events", "200"],
                   check=True, stdout=subprocess.DEVNULL)
    per_dir = 100
    for d in range(files // per_dir):
        # Three levels, all within the scan's depth, so every file is looked at.
        p = os.path.join(tree, "src", f"pkg{d // 100:02d}", f"mod{d % 100:02d}", "lib")
        os.makedirs(p, exist_ok=True)
        for i in range(per_dir):
            if i % 10 == 0:
                with open(os.path.join(p, f"data{i:03d}.json"), "w") as f:
                    f.write('{"name": "pkg%d", "version": "1.0.%d", "files": ["a", "b"]}\n' % (d, i))
            else:
                with open(os.path.join(p, f"file{i:03d}.py"), "w") as f:
                    f.write("def f():\n    return %d\n" % i)
    open(stamp, "w").close()
    return tree


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime, stime are fields 14 and 15 (1-based) of the whole line; after "comm)" they are 12, 13.
    return (int(fields[11]) + int(fields[12])) / TICK


def tracetui_pid(sock):
    out = tmuxscreen.tmux(sock, "list-panes", "-t", "b", "-F", "#{pane_pid}").split()
    return int(out[0])


def measure(binary, tree, seconds, label):
    sock = f"tracetui-idle-{os.getpid()}"
    cache = tempfile.mkdtemp(prefix="tracetui-idle-cache-")
    cmd = f"env TRACETUI_CACHE_DIR={cache} {binary} {tree}"
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "b",
                    "-x", "200", "-y", "50", cmd], check=True)
    try:
        tmuxscreen.wait(sock, lambda s: "runs 5 " in s and "indexing" not in s, 300, 0.05)
        pid = tracetui_pid(sock)
        # Settle: the first walk, detection of the other files, the watch set up.
        time.sleep(10)
        strace = shutil.which("strace")
        c0 = cpu_seconds(pid)
        t0 = time.monotonic()
        opens = None
        if strace:
            log = os.path.join(cache, "strace.log")
            tr = subprocess.Popen([strace, "-f", "-qq", "-e", "trace=openat,open", "-o", log,
                                   "-p", str(pid)], stderr=subprocess.DEVNULL)
            time.sleep(seconds)
            tr.terminate()
            tr.wait()
            with open(log) as f:
                opens = sum(1 for line in f if "open" in line)
        else:
            time.sleep(seconds)
        c1 = cpu_seconds(pid)
        wall = time.monotonic() - t0
        if "runs 5 " not in screen(sock):
            raise SystemExit(f"{label}: the list changed while idle:\n{screen(sock)}")
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
        shutil.rmtree(cache, ignore_errors=True)
    share = (c1 - c0) / wall * 100
    o = "" if opens is None else f", {opens} files opened"
    print(f"{label:10} {c1 - c0:6.2f} s CPU over {wall:5.1f} s idle = {share:5.2f}% of a core{o}")
    return share


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=300_000)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "tracetui"))
    ap.add_argument("--baseline", help="another build, measured first on the same tree")
    ap.add_argument("--keep", help="generate the tree here and keep it")
    a = ap.parse_args()
    base = a.keep or tempfile.mkdtemp(prefix="tracetui-idle-")
    os.makedirs(base, exist_ok=True)
    try:
        tree = make_tree(base, a.files)
        print(f"tree: 5 runs beside {a.files:,} other files; idle window {a.seconds:.0f} s")
        if a.baseline:
            measure(a.baseline, tree, a.seconds, "baseline")
        share = measure(a.bin, tree, a.seconds, "this build")
        print(f"budget ≤ 1% of a core: {'met' if share <= 1.0 else 'MISSED'}")
    finally:
        if not a.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
