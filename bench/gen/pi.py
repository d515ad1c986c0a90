#!/usr/bin/env python3
"""pi session at scale: one ~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl of --events entries.

Mimics pi's session entries (see tests/fixtures/pi/): a session header, then turns of a user
message, assistant messages with thinking, text and 1-3 toolCall blocks and their usage (with
pi's cost), a toolResult message per call (an error now and then), a final assistant text, and
now and then a model_change. Deterministic (fixed seed).
Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, datetime, json, os, random

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--events", type=int, default=1_000_000)
a = ap.parse_args()

rng = random.Random(31)
WORDS = ("the config loader reads every file under src and the tests fail when a key is missing so we "
         "rename it check the parser run cargo test again look at the output fix the import update docs "
         "error warning line column path module function struct value result option").split()
ID = "f0f0f0f0-0000-4000-8000-%012d" % 31
run = os.path.join(a.out, "sessions", "--home-ada-project--")
os.makedirs(run, exist_ok=True)
path = os.path.join(run, "2026-09-01T10-00-00-000Z_" + ID + ".jsonl")
dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def words(lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def lines_of(lo, hi):
    return "\n".join(f"src/{rng.choice(WORDS)}.rs:{rng.randint(1, 900)}: {words(3, 12)}" for _ in range(rng.randint(lo, hi)))


out = open(path, "w", buffering=1 << 22)
n = 0
t = 1_790_000_000_000
prev = None
seq = 0


def iso(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def entry(ty, **kw):
    global n, t, prev, seq
    t += rng.randint(20, 4000)
    seq += 1
    r = {"type": ty, "id": "%08x" % seq, "parentId": prev, "timestamp": iso(t)}
    r.update(kw)
    prev = r["id"]
    out.write(dumps(r))
    out.write("\n")
    n += 1


def message(m):
    m["timestamp"] = t
    entry("message", message=m)


def usage():
    i, o, r = rng.randint(10, 4000), rng.randint(10, 600), rng.randint(0, 40000)
    return {"input": i, "output": o, "cacheRead": r, "cacheWrite": 0, "totalTokens": i + o + r,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": round((i * 3 + o * 15 + r * 0.3) / 1e6, 6)}}


out.write(dumps({"type": "session", "version": 3, "id": ID, "timestamp": iso(t), "cwd": "/home/ada/project"}) + "\n")
n += 1
calls = 0
while n < a.events:
    if rng.random() < 0.02:
        entry("model_change", provider="anthropic", modelId="claude-sonnet-4-5")
    message({"role": "user", "content": [{"type": "text", "text": words(5, 40)}]})
    for _ in range(rng.randint(1, 5)):
        blocks = [{"type": "thinking", "thinking": words(5, 30), "thinkingSignature": "sig"}, {"type": "text", "text": words(3, 20)}]
        ids = []
        for _ in range(rng.randint(1, 3)):
            calls += 1
            name = rng.choice(["bash", "read", "grep", "edit"])
            ids.append(("toolu_%08d" % calls, name))
            blocks.append({"type": "toolCall", "id": ids[-1][0], "name": name,
                           "arguments": {"command": words(2, 8), "path": f"src/{rng.choice(WORDS)}.rs"}})
        message({"role": "assistant", "content": blocks, "api": "anthropic-messages", "provider": "anthropic",
                 "model": "claude-sonnet-4-5", "usage": usage(), "stopReason": "toolUse"})
        for cid, name in ids:
            message({"role": "toolResult", "toolCallId": cid, "toolName": name,
                     "content": [{"type": "text", "text": lines_of(1, 30)}], "isError": rng.random() < 0.05})
    message({"role": "assistant", "content": [{"type": "text", "text": words(20, 120)}], "api": "anthropic-messages",
             "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": usage(), "stopReason": "stop"})
out.close()
print(json.dumps({"load": path, "files": [path], "format": "pi"}))
