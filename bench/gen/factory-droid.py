#!/usr/bin/env python3
"""Factory Droid session store at scale: one ~/.factory/sessions/<project>/<id>.jsonl of --events
lines, with its <id>.settings.json (the session's model and token totals).

Mimics the store's shapes (see tests/fixtures/factory-droid/): a session_start line, then turns of
a user text message (a <system-reminder> now and then), assistant messages with thinking, text and
1-3 tool_use blocks (ids `toolu_…`), user messages with the tool_result blocks (an error now and
then), and a final assistant text. Deterministic (fixed seed).
Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, json, os, random, time

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--events", type=int, default=1_000_000)
a = ap.parse_args()

rng = random.Random(23)
WORDS = ("the config loader reads every file under src and the tests fail when a key is missing so we "
         "rename it check the parser run cargo test again look at the output fix the import update docs "
         "error warning line column path module function struct value result option").split()
ID = "d0d0d0d0-0000-4000-8000-%012d" % 23
run = os.path.join(a.out, "sessions", "-home-ada-project")
os.makedirs(run, exist_ok=True)
path = os.path.join(run, ID + ".jsonl")
settings = os.path.join(run, ID + ".settings.json")
dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def words(lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def lines_of(lo, hi):
    return "\n".join(f"src/{rng.choice(WORDS)}.rs:{rng.randint(1, 900)}: {words(3, 12)}" for _ in range(rng.randint(lo, hi)))


out = open(path, "w", buffering=1 << 22)
n = 0
seq = 0
ms = 1_790_000_000_000


def line(obj):
    global n
    out.write(dumps(obj))
    out.write("\n")
    n += 1


def message(role, content):
    global seq, ms
    seq += 1
    ms += rng.randint(50, 4000)
    sec, milli = divmod(ms, 1000)
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + ".%03dZ" % milli
    line({"type": "message", "id": "m%d" % seq, "parentId": "m%d" % (seq - 1), "timestamp": ts,
          "message": {"role": role, "content": content}})


line({"type": "session_start", "id": ID, "title": "bench", "sessionTitle": "bench", "owner": "ada", "version": 2,
      "cwd": "/home/ada/project"})
calls = 0
while n < a.events:
    prompt = words(5, 40)
    if rng.random() < 0.2:
        prompt = "<system-reminder>\n" + words(5, 20) + "\n</system-reminder>\n\n" + prompt
    message("user", [{"type": "text", "text": prompt}])
    for _ in range(rng.randint(1, 5)):
        uses = []
        for _ in range(rng.randint(1, 3)):
            calls += 1
            name = rng.choice(["Execute", "Read", "Grep", "Edit"])
            uses.append({"type": "tool_use", "id": "toolu_%08d" % calls, "name": name,
                         "input": {"command": words(2, 8), "file_path": f"src/{rng.choice(WORDS)}.rs"}})
        message("assistant", [{"type": "thinking", "thinking": words(5, 30), "signature": "sig"},
                              {"type": "text", "text": words(3, 20)}] + uses)
        results = []
        for u in uses:
            r = {"type": "tool_result", "tool_use_id": u["id"], "content": lines_of(1, 30)}
            if rng.random() < 0.05:
                r["is_error"] = True
            results.append(r)
        message("user", results)
    message("assistant", [{"type": "text", "text": words(20, 120)}])
out.close()
with open(settings, "w") as f:
    json.dump({"model": "claude-sonnet-4-5-20250929", "tokenUsage": {"inputTokens": n * 40, "outputTokens": n * 9,
               "cacheCreationTokens": n * 3, "cacheReadTokens": n * 300, "thinkingTokens": n}}, f)
print(json.dumps({"load": path, "files": [path, settings], "format": "factory-droid"}))
