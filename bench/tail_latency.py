#!/usr/bin/env python3
"""Live-tail benchmark: a writer appends AgentDbg events to a run directory at a fixed rate
while `tracetui tail --no-tui --format json` reads it. Reports events lost and duplicated,
the latency from write to print (p50/p99), and tracetui's CPU use.

Usage (from the repository root, after `cargo build --release`):
    python3 bench/tail_latency.py [--rate 10000] [--seconds 10] [--poll MS]

Every event's id carries its sequence number and the monotonic time it was written; the
reader (in this same process, so the clocks agree) stamps each printed line on arrival.
Writes go out every millisecond in small batches, some lines split in two writes.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def event(seq, t_ns, parent):
    payload = {"tool_name": "search", "args": {"q": "x" * (seq % 50)}, "result": {"n": seq}, "status": "ok", "error": None}
    return json.dumps({"spec_version": "0.1", "event_id": f"e{seq}_{t_ns}", "run_id": "bench", "parent_id": parent,
                       "event_type": "TOOL_CALL", "ts": "2026-01-01T00:00:00.000Z", "duration_ms": 1, "name": "search",
                       "payload": payload, "meta": {}}) + "\n"


def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=int, default=10_000, help="events per second")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--poll", type=int, help="pass --poll MS to tracetui (no notify)")
    a = ap.parse_args()
    tt = os.path.join(ROOT, "target", "release", "tracetui")
    if not os.path.exists(tt):
        sys.exit("tail_latency.py: build first: cargo build --release")
    tmp = tempfile.mkdtemp(prefix="tracetui-tail-bench-")
    run = os.path.join(tmp, "runs", "bench")
    os.makedirs(run)
    with open(os.path.join(run, "run.json"), "w") as f:
        json.dump({"spec_version": "0.1", "run_id": "bench", "run_name": "bench", "started_at": "2026-01-01T00:00:00.000Z",
                   "ended_at": None, "duration_ms": None, "status": "running",
                   "counts": {"llm_calls": 0, "tool_calls": 0, "errors": 0, "loop_warnings": 0}, "last_event_ts": None}, f)
    events = os.path.join(run, "events.jsonl")
    with open(events, "w") as f:
        f.write(json.dumps({"spec_version": "0.1", "event_id": "root", "run_id": "bench", "parent_id": None,
                            "event_type": "RUN_START", "ts": "2026-01-01T00:00:00.000Z", "duration_ms": None,
                            "name": "bench", "payload": {"run_name": "bench"}, "meta": {}}) + "\n")
    cmd = [tt, "tail", "--no-tui", "--format", "json", os.path.join(tmp, "runs")]
    if a.poll:
        cmd += ["--poll", str(a.poll)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    arrivals = []

    def reader():
        for line in p.stdout:
            arrivals.append((time.monotonic_ns(), line))

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    time.sleep(0.5)  # let the watcher arm
    total = int(a.rate * a.seconds)
    per_ms = max(1, a.rate // 1000)
    t0 = time.monotonic()
    seq = 0
    with open(events, "a", buffering=1 << 20) as f:
        while seq < total:
            batch = []
            for _ in range(per_ms):
                if seq >= total:
                    break
                batch.append(event(seq, time.monotonic_ns(), "root"))
                seq += 1
            data = "".join(batch)
            if seq % 97 == 0 and len(data) > 20:  # a line split across two writes
                f.write(data[:20]); f.flush(); f.write(data[20:])
            else:
                f.write(data)
            f.flush()
            target = t0 + seq / a.rate
            delay = target - time.monotonic()
            if delay > 0:
                time.sleep(delay)
    write_s = time.monotonic() - t0
    deadline = time.monotonic() + 5
    while len(arrivals) < total and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    cpu = cpu_seconds(p.pid)
    wall = time.monotonic() - t0 + 0.5
    p.kill()
    p.wait()
    seen, dup, lat = set(), 0, []
    for t_arr, line in arrivals:
        v = json.loads(line)
        eid = v.get("id") or ""
        if not eid.startswith("e"):
            continue
        s, t_w = eid[1:].split("_")
        if s in seen:
            dup += 1
            continue
        seen.add(s)
        lat.append((t_arr - int(t_w)) / 1e6)
    lat.sort()
    pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")
    lost = total - len(seen)
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; mode: {'poll ' + str(a.poll) + ' ms' if a.poll else 'notify'}")
    print(f"| events written | rate achieved | lost | duplicated | latency p50 | p99 | max | tracetui CPU |")
    print(f"|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {total} | {total / write_s:.0f}/s | {lost} | {dup} | {pct(0.5):.1f} ms | {pct(0.99):.1f} ms | {lat[-1] if lat else float('nan'):.1f} ms | {cpu / wall * 100:.0f}% of a core |")
    shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(0 if lost == 0 and dup == 0 else 1)


if __name__ == "__main__":
    main()
