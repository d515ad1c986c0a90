#!/usr/bin/env python3
"""Time `tracetui ls` with no PATH over a fake HOME of many small Claude Code sessions (issue 15:
the runs list of thousands of sessions must appear within the `ls` budget, 150 ms for 2,000).

Usage: python3 bench/discovery.py [--sessions 2000] [--repeat 7] [--bin target/release/tracetui]
       python3 bench/discovery.py --codex [--sessions 2000] [--baseline-bin OLD] [--repeat 7]
       python3 bench/discovery.py --run-dirs maida [--sessions 2000] [--repeat 5]
       python3 bench/discovery.py --run-dirs agentdbg --dir /work/bench-shared/runs-2000x200

With --codex: the fake HOME holds ~/.codex/sessions/2026/MM/DD/rollout-*.jsonl instead, copies of one
rollout of 200 events from bench/gen/codex.py with fresh thread ids over 40 days, one in ten with a
sub-agent's rollout beside it (its session_meta names the parent: `parent_thread_id`,
`source.subagent.thread_spawn`), so that discovery's reading of each rollout's head (to nest the
sub-agents) shows; timed as above, with `--baseline-bin` beside it (`ls` first with an empty cache, cached,
and with no cache).

With --run-dirs FORMAT (a format whose runs are directories: agentdbg, maida, copilot-cli, cursor; or files:
 gemini-cli, claude-code, codex): one
run of 200 events from bench/gen/FORMAT.py, copied --sessions times with fresh ids into
target/bench-data/discovery/FORMAT-N/ (or an existing directory of runs, --dir), and timed,
interleaved: the floor (reading every file of every run once, in this process), `tracetui ls
DIR` and `tracetui ls --format json DIR` (issue 13: 150 ms for 2,000 runs): with the summary
cache filled by an earlier `ls` (a private cache directory under target/bench-data/discovery/),
from an empty cache each time, and with the cache off. Delete the copies with --clean.

Writes the fake HOME under the ignored target/bench-data/discovery/ (sessions made from
sample-traces/claude-code with fresh ids, spread over 40 projects, one session in ten with a
subagent), then times, interleaved: the floor (reading every session file once, in this
process), `tracetui sources`, `tracetui ls` (no PATH) and `tracetui ls --format json`, and prints
medians of wall time (with each one's ratio to the floor) and of CPU time (user + system; on a
shared machine the wall time mostly measures the others). Compare within one run.
"""
import argparse, json, os, re, resource, shutil, statistics, subprocess, sys, time, uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "sample-traces/claude-code/7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f.jsonl")
SAMPLE_ID = "7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f"


def make_home(base, n, pad_kb):
    home = os.path.join(base, f"home-{n}" + (f"-pad{pad_kb}k" if pad_kb else ""))
    stamp = os.path.join(home, ".done")
    if os.path.exists(stamp):
        return home
    shutil.rmtree(home, ignore_errors=True)
    text = open(SAMPLE).read()
    if pad_kb:
        # Long sessions: user prompts of 1 KB inserted after the first records (a real session
        # of a few MB), the sample's last records still last.
        lines = text.splitlines(keepends=True)
        user = json.loads(lines[1])
        extra = []
        for k in range(pad_kb):
            u = dict(user, uuid=f"pad{k}", message={"role": "user", "content": "x" * 1000})
            extra.append(json.dumps(u) + "\n")
        text = "".join(lines[:3] + extra + lines[3:])
    projects = os.path.join(home, ".claude", "projects")
    for i in range(n):
        proj = os.path.join(projects, f"-home-ada-src-project-{i % 40:02d}")
        os.makedirs(proj, exist_ok=True)
        sid = str(uuid.UUID(int=i + 1))
        body = text.replace(SAMPLE_ID, sid)
        with open(os.path.join(proj, sid + ".jsonl"), "w") as f:
            f.write(body)
        if i % 10 == 0:
            sub = os.path.join(proj, sid, "subagents")
            os.makedirs(sub, exist_ok=True)
            with open(os.path.join(sub, "agent-a1.jsonl"), "w") as f:
                f.write(body.replace('"isSidechain": false', '"isSidechain": true'))
    open(stamp, "w").close()
    return home


def timed(cmd, env, cwd):
    """Wall time, and CPU time (user + system) of the child: on a shared machine the CPU time
    says more, the wall time is what a user waits."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return dt, cpu, out


def floor(home):
    t0 = time.perf_counter()
    for d, _, files in os.walk(os.path.join(home, ".claude", "projects")):
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                fh.read()
    return time.perf_counter() - t0


UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def make_codex_home(base, n):
    home = os.path.join(base, f"codex-home-{n}")
    stamp = os.path.join(home, ".done")
    if os.path.exists(stamp):
        return home
    shutil.rmtree(home, ignore_errors=True)
    tmpl = os.path.join(base, "codex-template")
    shutil.rmtree(tmpl, ignore_errors=True)
    gen = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen", "codex.py"), tmpl, "--events", "200"],
                         check=True, stdout=subprocess.PIPE, text=True)
    run = json.loads(gen.stdout.strip().splitlines()[-1])["load"]
    body = open(run if os.path.isabs(run) else os.path.join(ROOT, run), "rb").read()
    old = UUID.search(os.path.basename(run).encode()).group(0)
    for i in range(n):
        day = os.path.join(home, ".codex", "sessions", "2026", "%02d" % (1 + i % 40 // 28), "%02d" % (1 + i % 40 % 28))
        os.makedirs(day, exist_ok=True)
        new = b"0197%04x-0000-7000-8000-%012x" % (i % 65536, i + 1)
        with open(os.path.join(day, "rollout-2026-05-01T10-00-00-%s.jsonl" % new.decode()), "wb") as f:
            f.write(body.replace(old, new))
        if i % 10 == 0:
            sub = b"0198%04x-0000-7000-8000-%012x" % (i % 65536, i + 1)
            meta = b'"id":"%s","parent_thread_id":"%s","source":{"subagent":{"thread_spawn":{"parent_thread_id":"%s","depth":1,"agent_nickname":"Hopper"}}},"thread_source":"subagent","agent_nickname":"Hopper",' % (sub, new, new)
            child = body.replace(old, sub).replace(b'"id":"%s",' % sub, meta, 1)
            with open(os.path.join(day, "rollout-2026-05-01T10-00-01-%s.jsonl" % sub.decode()), "wb") as f:
                f.write(child)
    shutil.rmtree(tmpl, ignore_errors=True)
    open(stamp, "w").close()
    return home


def codex_home(a, base):
    home = make_codex_home(base, a.sessions)
    sessions = os.path.join(home, ".codex", "sessions")
    cwd = os.path.join(base, "empty-cwd")
    os.makedirs(cwd, exist_ok=True)
    cache = os.path.join(base, "cache-codex-home")
    env = {k: v for k, v in os.environ.items()
           if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "COPILOT_HOME",
                        "XDG_CACHE_HOME", "TRACETUI_NO_CACHE")}
    env.update(HOME=home, XDG_DATA_HOME=os.path.join(home, ".local/share"),
               XDG_CONFIG_HOME=os.path.join(home, ".config"), TRACETUI_CACHE_DIR=cache)
    off = dict(env, TRACETUI_NO_CACHE="1")
    bins = [("", a.bin)] + ([("baseline: ", a.baseline_bin)] if a.baseline_bin else [])
    cases = []
    for tag, b in bins:
        cache_b = cache + ("-base" if tag else "")
        e = dict(env, TRACETUI_CACHE_DIR=cache_b)
        cases += [(tag + "ls (no PATH, first: cache empty)", [b, "ls"], e, cache_b),
                  (tag + "ls (no PATH, cached)", [b, "ls"], e, None),
                  (tag + "ls (no PATH, no cache)", [b, "ls"], dict(off, TRACETUI_CACHE_DIR=cache_b), None)]
    names = ["floor (read every file)"] + [c[0] for c in cases]
    times = {k: [] for k in names}
    cpus = {k: [] for k in names}

    def floor():
        t0 = time.perf_counter()
        for d, _, files in os.walk(sessions):
            for f in files:
                with open(os.path.join(d, f), "rb") as fh:
                    fh.read()
        return time.perf_counter() - t0

    floor()
    for name, cmd, e, _ in cases:
        timed(cmd, e, cwd)
    for _ in range(a.repeat):
        f = floor()
        times[names[0]].append(f)
        cpus[names[0]].append(f)
        for name, cmd, e, empty in cases:
            if empty:
                shutil.rmtree(empty, ignore_errors=True)
            dt, cpu, out = timed(cmd, e, cwd)
            if out.returncode not in (0, 1):
                raise SystemExit(f"{name}: exit {out.returncode}: {out.stderr.decode()[:500]}")
            times[name].append(dt)
            cpus[name].append(cpu)
    files = sum(len(fs) for _, _, fs in os.walk(sessions))
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(sessions) for f in fs)
    for tag, b in bins:
        rows = subprocess.run([b, "ls", "--format", "json"], env=off, cwd=cwd, stdout=subprocess.PIPE).stdout
        listed = sum(1 for l in rows.splitlines() if l.strip().startswith(b"{") and b'"skipped"' not in l)
        print(f"{tag or 'this build: '}{listed} runs listed")
    print(f"{files} Codex rollouts in a fake HOME ({size / 1e6:.0f} MB, one run in ten with a sub-agent's rollout); "
          f"medians of {a.repeat}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'case':<44} {'wall':>10} {'x floor':>8} {'cpu':>10}")
    f0 = statistics.median(times[names[0]])
    for name in names:
        m = statistics.median(times[name])
        print(f"{name:<44} {m * 1e3:>8.1f}ms {m / f0:>8.1f} {statistics.median(cpus[name]) * 1e3:>8.1f}ms")
    print(json.dumps({k: round(statistics.median(v) * 1e3, 1) for k, v in times.items()}))


def make_run_dirs(base, fmt, n):
    """n copies of one generated run of `fmt`, each with its own id (the run directory's name,
    replaced wherever the run's files and file names say it). A format whose runs are files
    (gemini-cli, claude-code, codex): the session file copied n times beside itself, its
    session id (the first UUID of its name or of its first line) replaced, and its name's
    8-digit short form too. Returns the directory that holds them."""
    out = os.path.join(base, f"{fmt}-{n}")
    stamp = os.path.join(out, ".done")
    if os.path.exists(stamp):
        return json.load(open(stamp))["dir"]
    shutil.rmtree(out, ignore_errors=True)
    tmpl = os.path.join(out, "template")
    gen = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen", fmt + ".py"), tmpl, "--events", "200"],
                         check=True, stdout=subprocess.PIPE, text=True)
    run = json.loads(gen.stdout.strip().splitlines()[-1])["load"]
    if not os.path.isabs(run):
        run = os.path.join(ROOT, run)
    if os.path.isfile(run) and os.path.basename(os.path.dirname(run)) == os.path.splitext(os.path.basename(run))[0]:
        run = os.path.dirname(run)  # a run directory named by the id its file is named by (cursor)
    if os.path.isfile(run):
        body = open(run, "rb").read()
        name = os.path.basename(run)
        m = UUID.search(name.encode()) or UUID.search(body.split(b"\n", 1)[0])
        # No id to replace (OpenHands V0, SWE-agent, Inspect AI files): copies named apart.
        old = m.group(0).decode() if m else None
        # The layout is kept (Gemini CLI sessions live in `chats/`, Codex ones in `sessions/Y/M/D/`).
        dest = os.path.normpath(os.path.join(out, "runs", os.path.relpath(os.path.dirname(run), tmpl)))
        os.makedirs(dest)
        for i in range(n):
            new = "%08x-0000-4000-8000-%012x" % (i + 1, i + 1)
            if old is None:
                with open(os.path.join(dest, "%05d-%s" % (i, name)), "wb") as fh:
                    fh.write(body)
                continue
            f = name.replace(old, new).replace(old[:8], new[:8])
            with open(os.path.join(dest, f), "wb") as fh:
                fh.write(body.replace(old.encode(), new.encode()))
    else:
        old = os.path.basename(run)
        # The runs keep the parent's name (copilot-cli sessions live in `session-state/`).
        parent = os.path.basename(os.path.dirname(run))
        dest = os.path.join(out, "runs", parent if parent != "template" else "all")
        files = {f: open(os.path.join(run, f), "rb").read() for f in os.listdir(run)
                 if os.path.isfile(os.path.join(run, f))}
        for i in range(n):
            new = str(uuid.UUID(int=i + 1)) if "-" in old else "%0*x" % (len(old), i + 1)
            d = os.path.join(dest, new)
            os.makedirs(d)
            for f, body in files.items():
                with open(os.path.join(d, f.replace(old, new)), "wb") as fh:
                    fh.write(body.replace(old.encode(), new.encode()))
    shutil.rmtree(tmpl)
    with open(stamp, "w") as f:
        json.dump({"dir": dest}, f)
    return dest


def run_dirs(a, base):
    d = a.dir or make_run_dirs(base, a.run_dirs, a.sessions)
    runs = [os.path.join(d, r) for r in sorted(os.listdir(d)) if not r.startswith(".")]

    def files_of(r):
        return [os.path.join(r, f) for f in os.listdir(r)] if os.path.isdir(r) else [r]

    def floor():
        t0 = time.perf_counter()
        for r in runs:
            for p in files_of(r):
                if os.path.isfile(p):
                    with open(p, "rb") as fh:
                        fh.read()
        return time.perf_counter() - t0

    # The summary cache (src/source/cache.rs) in a directory of its own: "cached" cases find
    # every summary in it (a repeated `ls`), "first" ones start each time from an empty cache
    # (the first `ls` after installing), "no cache" ones do not use it at all.
    cache = os.path.join(base, f"cache-{a.run_dirs or 'dir'}")
    env = dict(os.environ, TRACETUI_CACHE_DIR=cache)
    env.pop("TRACETUI_NO_CACHE", None)
    off = dict(env, TRACETUI_NO_CACHE="1")
    cases = [("ls DIR (cached)", [a.bin, "ls", d], env), ("ls --format json DIR (cached)", [a.bin, "ls", "--format", "json", d], env),
             ("ls DIR (first: cache empty)", [a.bin, "ls", d], env),
             ("ls DIR (no cache)", [a.bin, "ls", d], off),
             ("ls -lR DIR (coreutils)", ["ls", "-lR", d], env)]
    if a.baseline_bin:
        cases.append(("baseline: ls DIR", [a.baseline_bin, "ls", d], off))
    times = {"floor (read every file)": []}
    cpus = {"floor (read every file)": []}
    for name, *_ in cases:
        times[name], cpus[name] = [], []
    shutil.rmtree(cache, ignore_errors=True)
    floor()
    for name, cmd, e in cases:
        timed(cmd, e, ROOT)
    for _ in range(a.repeat):
        f = floor()
        times["floor (read every file)"].append(f)
        cpus["floor (read every file)"].append(f)
        for name, cmd, e in cases:
            if "first" in name:
                shutil.rmtree(cache, ignore_errors=True)
            dt, cpu, out = timed(cmd, e, ROOT)
            if out.returncode not in (0, 1):
                raise SystemExit(f"{name}: exit {out.returncode}: {out.stderr.decode()[:500]}")
            times[name].append(dt)
            cpus[name].append(cpu)
    rows = subprocess.run([a.bin, "ls", "--format", "json", d], env=off, stdout=subprocess.PIPE).stdout
    listed = [json.loads(l) for l in rows.splitlines() if l.strip().startswith(b"{")]
    prov = sum(1 for r in listed if r.get("provisional"))
    size = sum(os.path.getsize(p) for r in runs for p in files_of(r))
    print(f"{len(runs)} {a.run_dirs or 'run'} directories in {d} ({size / 1e6:.0f} MB); {len(listed)} runs listed, "
          f"{prov} from metadata (provisional); medians of {a.repeat}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'case':<36} {'wall':>10} {'x floor':>8} {'cpu':>10}")
    f0 = statistics.median(times["floor (read every file)"])
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"{name:<36} {m * 1e3:>8.1f}ms {m / f0:>8.1f} {statistics.median(cpus[name]) * 1e3:>8.1f}ms")
    print(json.dumps({k: round(statistics.median(v) * 1e3, 1) for k, v in times.items()}))
    if a.clean and not a.dir:
        # What make_run_dirs made, whatever the depth of the runs' layout inside it (the
        # parent of a shallow one's `runs/` was the whole discovery directory).
        shutil.rmtree(os.path.join(base, f"{a.run_dirs}-{a.sessions}"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--pad-kb", type=int, default=0, help="make each session about this many KB longer")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/tracetui"))
    ap.add_argument("--baseline-bin", help="another build to time beside it (e.g. before a change)")
    ap.add_argument("--run-dirs", metavar="FORMAT", help="time `ls DIR` over run directories of this format")
    ap.add_argument("--dir", help="with --run-dirs: an existing directory of runs instead of generated ones")
    ap.add_argument("--clean", action="store_true", help="with --run-dirs: delete the generated runs afterwards")
    ap.add_argument("--codex", action="store_true", help="a fake HOME of Codex rollouts (one in ten with a sub-agent)")
    a = ap.parse_args()
    base = os.path.join(ROOT, "target/bench-data/discovery")
    os.makedirs(base, exist_ok=True)
    if a.codex:
        return codex_home(a, base)
    if a.run_dirs or a.dir:
        return run_dirs(a, base)
    home = make_home(base, a.sessions, a.pad_kb)
    cwd = os.path.join(base, "empty-cwd")
    os.makedirs(cwd, exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "COPILOT_HOME",
                        "TRACETUI_CACHE_DIR", "XDG_CACHE_HOME", "TRACETUI_NO_CACHE")}
    env.update(HOME=home, XDG_DATA_HOME=os.path.join(home, ".local/share"),
               XDG_CONFIG_HOME=os.path.join(home, ".config"))
    projects = os.path.join(home, ".claude", "projects")
    cases = [
        ("sources", [a.bin, "sources"]),
        ("ls (no PATH)", [a.bin, "ls"]),
        ("ls --format json (no PATH)", [a.bin, "ls", "--format", "json"]),
        ("ls (no PATH, no cache)", [a.bin, "ls"], dict(env, TRACETUI_NO_CACHE="1")),
        ("check (full loads, no PATH)", [a.bin, "check", "--format", "json"]),
    ]
    if a.baseline_bin:
        cases.append(("baseline: ls ~/.claude/projects", [a.baseline_bin, "ls", projects]))
    times = {"floor (read every file)": []}
    cpus = {"floor (read every file)": []}
    for name, *_ in cases:
        times[name] = []
        cpus[name] = []
    # Warm the page cache once, and the summary cache (under the fake HOME's .cache).
    floor(home)
    for name, cmd, *e in cases:
        timed(cmd, e[0] if e else env, cwd)
    for _ in range(a.repeat):
        f = floor(home)
        times["floor (read every file)"].append(f)
        cpus["floor (read every file)"].append(f)
        for name, cmd, *e in cases:
            dt, cpu, out = timed(cmd, e[0] if e else env, cwd)
            cpus[name].append(cpu)
            if out.returncode not in (0, 1):
                raise SystemExit(f"{name}: exit {out.returncode}: {out.stderr.decode()[:500]}")
            times[name].append(dt)
    rows = subprocess.run([a.bin, "ls", "--format", "json"], env=env, cwd=cwd, stdout=subprocess.PIPE).stdout
    listed = sum(1 for l in rows.splitlines() if b'"skipped"' not in l)
    f0 = statistics.median(times["floor (read every file)"])
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(home) for f in fs)
    print(f"{a.sessions} Claude Code sessions in a fake HOME ({size / 1e6:.0f} MB); {listed} runs listed; medians of {a.repeat}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'case':<36} {'wall':>10} {'x floor':>8} {'cpu':>10}")
    for name, ts in times.items():
        m = statistics.median(ts)
        c = statistics.median(cpus[name])
        print(f"{name:<36} {m * 1e3:>8.1f}ms {m / f0:>8.1f} {c * 1e3:>8.1f}ms")
    print(json.dumps({k: round(statistics.median(v) * 1e3, 1) for k, v in times.items()}))


if __name__ == "__main__":
    main()
