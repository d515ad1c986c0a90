#!/usr/bin/env python3
"""Mistral Vibe session at scale: one ~/.vibe/logs/session/session_<time>_<id>/messages.jsonl of
--events messages, with its meta.json.

Mimics Vibe's messages (see tests/fixtures/mistral-vibe/): turns of a user message, assistant
messages with reasoning and 1-3 tool_calls (arguments as a JSON string or an object), a tool
answer per call (a `<tool_error>` now and then), and a final assistant answer. Deterministic
(fixed seed). Loaded as the messages file (its meta.json beside it).
Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, json, os, random

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--events", type=int, default=1_000_000)
a = ap.parse_args()

rng = random.Random(37)
WORDS = ("the config loader reads every file under src and the tests fail when a key is missing so we "
         "rename it check the parser run cargo test again look at the output fix the import update docs "
         "error warning line column path module function struct value result option").split()
run = os.path.join(a.out, "logs", "session", "session_20260901_100000_a0a0a0a0")
os.makedirs(run, exist_ok=True)
path = os.path.join(run, "messages.jsonl")
meta = os.path.join(run, "meta.json")
dumps = json.JSONEncoder(ensure_ascii=False).encode


def words(lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def lines_of(lo, hi):
    return "\n".join(f"src/{rng.choice(WORDS)}.rs:{rng.randint(1, 900)}: {words(3, 12)}" for _ in range(rng.randint(lo, hi)))


out = open(path, "w", buffering=1 << 22)
n = 0
seq = 0


def line(obj):
    global n
    out.write(dumps(obj))
    out.write("\n")
    n += 1


while n < a.events:
    seq += 1
    line({"role": "user", "content": words(5, 40), "injected": False, "message_id": "u%d" % seq})
    for _ in range(rng.randint(1, 5)):
        calls = []
        for i in range(rng.randint(1, 3)):
            seq += 1
            args = {"command": words(2, 8), "path": f"src/{rng.choice(WORDS)}.rs"}
            calls.append({"id": "call_%08d" % seq, "index": i, "type": "function",
                          "function": {"name": rng.choice(["bash", "read_file", "grep", "search_replace"]),
                                       "arguments": json.dumps(args) if rng.random() < 0.5 else args}})
        line({"role": "assistant", "content": words(3, 20), "reasoning_content": words(5, 30), "injected": False,
              "message_id": "a%d" % seq, "tool_calls": calls})
        for c in calls:
            text = lines_of(1, 30)
            if rng.random() < 0.05:
                text = "<tool_error>%s: %s</tool_error>" % (c["function"]["name"], words(3, 10))
            line({"role": "tool", "content": text, "injected": False, "name": c["function"]["name"], "tool_call_id": c["id"]})
    seq += 1
    line({"role": "assistant", "content": words(20, 120), "injected": False, "message_id": "a%d" % seq})
out.close()
with open(meta, "w") as f:
    json.dump({"session_id": "a0a0a0a0-0000-4000-8000-000000000037", "parent_session_id": None,
               "start_time": "2026-09-01T10:00:00+00:00", "end_time": "2026-09-03T10:00:00+00:00", "model": "mistral-medium-3.5",
               "environment": {"working_directory": "/home/ada/project"}, "title": "bench",
               "stats": {"steps": n // 3, "session_prompt_tokens": n * 400, "session_completion_tokens": n * 30}, "total_messages": n}, f)
print(json.dumps({"load": path, "files": [path, meta], "format": "mistral-vibe"}))
