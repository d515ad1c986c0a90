#!/usr/bin/env python3
"""Issue 38: `tracetui stats` beside `ccusage` on the same generated Claude Code home.

N sessions (default 500) made from one bench/gen/claude-code.py session: each copy gets its own
session id, message ids and request ids (so no tool may take one for another's duplicate), a day
of its own (one of 30, 10:00 UTC on) and one of three models. Then, with that HOME and TZ=UTC:

- `tracetui stats --by day|model --format json` and `ccusage daily|session --json --offline`,
  each timed, with its peak memory (GNU time's maximum resident set size);
- the raw sums: every assistant line's `message.usage`, counted once per (message.id,
  requestId) as Claude Code repeats a response's usage on each of its lines, by day and model;
- the totals side by side, and where a tool differs from the raw sums, by how much and of which
  token kind.

Usage (after `cargo build --release`; ccusage on PATH, `npm install -g ccusage`):
    python3 bench/ccusage.py [--sessions 500] [--events 500] [--bin target/release/tracetui]
"""
import argparse, collections, json, os, re, shutil, subprocess, sys, tempfile, time, uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SID = "5f0c6d1e-8a3b-4c2d-9e7f-0a1b2c3d4e5f"
MODELS = ["claude-opus-4-5-20251101", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"]
TS = re.compile(r'"timestamp":"(\d{4}-\d{2}-\d{2})T(\d{2}):')


def same_usage(text):
    """Every line of one API response with the same usage, its last line's: the generator
    varies it from line to line, Claude Code repeats it (as the corpus's real sessions show),
    and a tool that counts the first line and one that counts the last must see the same."""
    recs = [json.loads(l) for l in text.splitlines() if l.strip()]
    last = {}
    for r in recs:
        m = r.get("message")
        if r.get("type") == "assistant" and isinstance(m, dict) and m.get("usage"):
            last[(m.get("id"), r.get("requestId"))] = m["usage"]
    for r in recs:
        m = r.get("message")
        if r.get("type") == "assistant" and isinstance(m, dict) and m.get("usage"):
            m["usage"] = last[(m.get("id"), r.get("requestId"))]
    return "".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n" for r in recs)


def make_home(base, n, events):
    gen = os.path.join(base, "gen")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench/gen/claude-code.py"), gen,
                    "--events", str(events)], check=True, stdout=subprocess.DEVNULL)
    body = same_usage(open(os.path.join(gen, SID + ".jsonl")).read())
    subs = {f: same_usage(open(os.path.join(gen, SID, "subagents", f)).read())
            for f in os.listdir(os.path.join(gen, SID, "subagents"))}
    gen_model = re.search(r'"model":"(claude-[^"]+)"', body).group(1)
    home = os.path.join(base, "home")
    for i in range(n):
        sid = str(uuid.UUID(int=i + 1, version=4))
        day = f"2026-10-{1 + i % 30:02d}"

        def copy(text):
            text = text.replace(SID, sid)
            text = re.sub(r'"(msg_[^"]+)"', lambda m: f'"{m.group(1)}x{i}"', text)
            text = re.sub(r'"(req_[^"]+)"', lambda m: f'"{m.group(1)}x{i}"', text)
            text = text.replace(gen_model, MODELS[i % 3])
            # The generated session starts at 2026-01-01T00:00; each copy on its day from 10:00.
            return TS.sub(lambda m: f'"timestamp":"{day}T{10 + int(m.group(2)):02d}:', text)

        proj = os.path.join(home, ".claude", "projects", f"-home-dev-project-{i % 20:02d}")
        os.makedirs(os.path.join(proj, sid, "subagents"), exist_ok=True)
        with open(os.path.join(proj, sid + ".jsonl"), "w") as f:
            f.write(copy(body))
        for name, text in subs.items():
            with open(os.path.join(proj, sid, "subagents", name), "w") as f:
                f.write(copy(text))
    return home


def raw_sums(home):
    """By day and by model: input, output, cache write, cache read, once per (message, request)."""
    seen = set()
    by_day = collections.defaultdict(lambda: [0, 0, 0, 0])
    by_model = collections.defaultdict(lambda: [0, 0, 0, 0])
    for dirpath, _, files in os.walk(os.path.join(home, ".claude", "projects")):
        for fn in files:
            if not fn.endswith(".jsonl"):
                continue
            for line in open(os.path.join(dirpath, fn)):
                if '"usage"' not in line:
                    continue
                r = json.loads(line)
                m = r.get("message") or {}
                u = m.get("usage")
                if r.get("type") != "assistant" or not u:
                    continue
                key = (m.get("id"), r.get("requestId"))
                if key in seen:
                    continue
                seen.add(key)
                v = [u.get("input_tokens", 0), u.get("output_tokens", 0),
                     u.get("cache_creation_input_tokens", 0), u.get("cache_read_input_tokens", 0)]
                for tot in (by_day[r["timestamp"][:10]], by_model[m.get("model")]):
                    for k in range(4):
                        tot[k] += v[k]
    return by_day, by_model, len(seen)


def timed(cmd, env):
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-2000:]}")
    peak_kb = int(p.stderr.strip().splitlines()[-1])
    return p.stdout, took, peak_kb


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=500)
    ap.add_argument("--events", type=int, default=500)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/tracetui"))
    ap.add_argument("--keep")
    a = ap.parse_args()
    base = a.keep or tempfile.mkdtemp(prefix="tracetui-ccusage-")
    try:
        home = make_home(base, a.sessions, a.events)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(home) for f in fs)
        env = dict(os.environ, HOME=home, TZ="UTC", CLAUDE_CONFIG_DIR=os.path.join(home, ".claude"),
                   TRACETUI_CACHE_DIR=os.path.join(base, "cache"))
        for v in ("CODEX_HOME", "GEMINI_CLI_HOME", "COPILOT_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
            env.pop(v, None)
        by_day, by_model, responses = raw_sums(home)
        print(f"# {a.sessions} sessions, {size / 1e6:.0f} MB, {responses:,} API responses "
              f"(raw usage, once per message and request)\n")
        runs = {}
        for name, cmd in [
            ("tracetui stats --by day", [a.bin, "stats", "--by", "day", "--format", "json"]),
            ("tracetui stats --by model", [a.bin, "stats", "--by", "model", "--format", "json"]),
            ("ccusage daily", ["ccusage", "daily", "--json", "--offline"]),
            ("ccusage session", ["ccusage", "session", "--json", "--offline"]),
        ]:
            # First run warms the page cache (and tracetui's summary cache is not used by stats).
            timed(cmd, env)
            best = min((timed(cmd, env) for _ in range(3)), key=lambda r: r[1])
            runs[name] = best
            print(f"{name:28} {best[1]:7.2f} s   peak {best[2] / 1024:7.0f} MB")
        print()
        tt_day = json.loads(runs["tracetui stats --by day"][0])
        tt_model = json.loads(runs["tracetui stats --by model"][0])
        cc_day = json.loads(runs["ccusage daily"][0])
        kinds = ["input", "output", "cache write", "cache read"]

        def tt_rows(j):
            rows = {}
            for g in j.get("groups", j.get("llm", [])):
                rows[g.get("key") or g.get("name")] = g
            return rows

        print("by day (raw | tracetui | ccusage): tokens in, out, cache write, cache read; cost")
        tt = tt_rows(tt_day)
        cc = {d["date"]: d for d in cc_day.get("daily", [])}
        diffs = collections.Counter()
        for day in sorted(by_day):
            r = by_day[day]
            t = tt.get(day, {})
            c = cc.get(day, {})
            tv = [t.get("input", 0), t.get("output", 0), t.get("cache_write", 0), t.get("cache_read", 0)]
            cv = [c.get("inputTokens", 0), c.get("outputTokens", 0), c.get("cacheCreationTokens", 0),
                  c.get("cacheReadTokens", 0)]
            for k in range(4):
                if tv[k] != r[k]:
                    diffs[("tracetui", kinds[k])] += tv[k] - r[k]
                if cv[k] != r[k]:
                    diffs[("ccusage", kinds[k])] += cv[k] - r[k]
            print(f"{day}  raw {r}  tracetui {tv} ${t.get('cost_usd', 0):.4f}  "
                  f"ccusage {cv} ${c.get('totalCost', 0):.4f}")
        tt_total = sum(t.get("cost_usd", 0) for t in tt.values())
        cc_total = sum(c.get("totalCost", 0) for c in cc.values())
        print(f"\ntotal cost: tracetui ${tt_total:.4f}  ccusage ${cc_total:.4f}")
        print("\nby model (raw | tracetui | ccusage): tokens in, out, cache write, cache read; cost")
        tm = tt_rows(tt_model)
        cm = collections.defaultdict(lambda: [0, 0, 0, 0, 0.0])
        for d in cc_day.get("daily", []):
            for b in d.get("modelBreakdowns", []):
                x = cm[b.get("modelName")]
                for k, f in enumerate(["inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens"]):
                    x[k] += b.get(f, 0)
                x[4] += b.get("cost", 0.0)
        for m in sorted(by_model):
            t = tm.get(m, {})
            c = cm.get(m, [0, 0, 0, 0, 0.0])
            print(f"{m:28} raw {by_model[m]}  tracetui [{t.get('input', 0)}, {t.get('output', 0)}, "
                  f"{t.get('cache_write', 0)}, {t.get('cache_read', 0)}] ${t.get('cost_usd', 0):.4f}  "
                  f"ccusage {c[:4]} ${c[4]:.4f}")
        print("\ndifferences from the raw sums (tokens):", dict(diffs) or "none")
    finally:
        if not a.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
