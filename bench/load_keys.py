#!/usr/bin/env python3
"""Key latency while the explorer loads a large trace (issue 13: "keys responsive" during a load).

Usage (from the repository root, after `cargo build --release`; tmux on PATH):
    python3 bench/load_keys.py [--repeat 3] FILE...

For each FILE, in each round, the explorer opens it in a private tmux server (200x60). As soon
as the status line says `loading`, keys are sent one after the other until it no longer does:
`/` (the filter prompt opens: the footer starts with `/`), then Escape (it closes). The time
from a key to the screen that shows its effect is one sample. Polling the screen costs a few
ms a sample, so the figures are upper bounds; they include drawing the frame. Printed per file:
the number of samples, median, 90th percentile and maximum over every round, and the load's
time (from the first `loading` screen to the last).
"""
import argparse, os, statistics, subprocess, time

from tmuxscreen import screen, tmux
import tmuxscreen

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wait(sock, pred, timeout):
    # Keys are timed to the millisecond: poll at that rate.
    return tmuxscreen.wait(sock, pred, timeout, poll=0.001)


def loading(s):
    return "loading" in s.splitlines()[0] if s else False


def prompt_open(s):
    lines = s.rstrip("\n").splitlines()
    return bool(lines) and lines[-1].startswith("/")


def one(binary, path):
    sock = f"tracetui-loadkeys-{os.getpid()}"
    for attempt in range(5):
        # A server of the round before may still be going away.
        r = subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "b",
                            "-x", "200", "-y", "60", f"{binary} {path}"], capture_output=True)
        if r.returncode == 0:
            break
        time.sleep(0.2)
    else:
        raise SystemExit(f"tmux would not start: {r.stderr.decode()}")
    samples = []
    try:
        wait(sock, loading, 30)
        t0 = time.perf_counter()
        last_loading = t0
        while True:
            s = screen(sock)
            if not loading(s):
                break
            last_loading = time.perf_counter()
            k0 = time.perf_counter()
            tmux(sock, "send-keys", "-t", "b", "/")
            _, s = wait(sock, prompt_open, 30)
            samples.append(time.perf_counter() - k0)
            k0 = time.perf_counter()
            tmux(sock, "send-keys", "-t", "b", "Escape")
            _, s = wait(sock, lambda s: not prompt_open(s), 30)
            samples.append(time.perf_counter() - k0)
        return samples, last_loading - t0
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "tracetui"))
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    print("| file | keys sent while loading | median | p90 | max | load (as seen) |")
    print("|---|---:|---:|---:|---:|---:|")
    for f in a.files:
        all_samples, loads = [], []
        for _ in range(a.repeat):
            s, load = one(a.bin, f)
            all_samples += s
            loads.append(load)
        all_samples.sort()
        ms = lambda x: f"{x * 1000:.0f} ms"
        if not all_samples:
            print(f"| {os.path.basename(f)} | 0 | – | – | – | {statistics.median(loads):.2f} s |")
            continue
        p90 = all_samples[min(len(all_samples) - 1, int(len(all_samples) * 0.9))]
        print(f"| {os.path.basename(f)} | {len(all_samples)} | {ms(statistics.median(all_samples))} | "
              f"{ms(p90)} | {ms(all_samples[-1])} | {statistics.median(loads):.2f} s |", flush=True)
    print(f"\n{a.repeat} rounds a file; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
