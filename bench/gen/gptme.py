#!/usr/bin/env python3
"""gptme at scale: one ~/.local/share/gptme/logs/<date>-<name>/conversation.jsonl of --events
messages.

Mimics gptme's log (see tests/fixtures/gptme/): a pinned system prompt, then turns of a user
message, assistant messages whose ```shell / ```ipython / ```save blocks are tool calls (with
model, usage and cost in `metadata`), each answered by a system message (`Ran command: ...`,
with stdout, an error now and then), and a closing answer. Deterministic (fixed seed).
Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, json, os, random

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--events", type=int, default=1_000_000)
a = ap.parse_args()

rng = random.Random(41)
WORDS = ("the export writes every row of the table but the header is missing so we read the writer "
         "check the csv module run the tests again look at the output fix the call update the docs "
         "error warning line column path module function value result file").split()
run = os.path.join(a.out, "logs", "2026-09-01-bench-the-export")
os.makedirs(run, exist_ok=True)
path = os.path.join(run, "conversation.jsonl")
dumps = json.JSONEncoder(ensure_ascii=False).encode
out = open(path, "w", buffering=1 << 22)
n = 0
clock = 1_788_256_800.0  # 2026-09-01T10:00:00Z


def words(lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def ts():
    global clock
    clock += rng.uniform(0.2, 4.0)
    s = "%.6f" % (clock % 60)
    t = __import__("time").gmtime(clock)
    return "%04d-%02d-%02dT%02d:%02d:%09s" % (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, s.zfill(9))


def line(obj):
    global n
    out.write(dumps(obj))
    out.write("\n")
    n += 1


line({"role": "system", "content": "You are gptme, a personal AI assistant running in the terminal.",
      "timestamp": ts(), "pinned": True, "hide": True})
while n < a.events:
    line({"role": "user", "content": words(5, 40), "timestamp": ts()})
    for _ in range(rng.randint(1, 5)):
        tool = rng.choice(["shell", "shell", "ipython", "save"])
        if tool == "save":
            body = "\n".join(words(3, 12) for _ in range(rng.randint(3, 40)))
            block = f"```save src/{rng.choice(WORDS)}.py\n{body}\n```"
        else:
            block = f"```{tool}\n{words(2, 8)}\n```"
        usage = {"input_tokens": rng.randint(500, 30000), "output_tokens": rng.randint(10, 800),
                 "cache_read_tokens": rng.randint(0, 20000), "cache_creation_tokens": rng.randint(0, 2000)}
        line({"role": "assistant", "content": f"{words(3, 20)}\n\n{block}", "timestamp": ts(),
              "metadata": {"model": "anthropic/claude-sonnet-4-5", "usage": usage,
                           "cost": round(rng.uniform(0.001, 0.05), 6)}})
        if rng.random() < 0.05:
            answer = (f"Ran command: `{words(2, 6)}`\n\n```stderr\n{words(3, 10)}\n```\n\nReturn code: 1"
                      if tool != "save" else f"Error executing tool '{tool}': {words(3, 10)}")
        elif tool == "save":
            answer = f"Saved to src/{rng.choice(WORDS)}.py"
        else:
            stdout = "\n".join(f"{rng.choice(WORDS)}.py:{rng.randint(1, 900)}: {words(3, 12)}" for _ in range(rng.randint(1, 30)))
            answer = f"Ran command: `{words(2, 6)}`\n\n```stdout\n{stdout}\n```\n"
        line({"role": "system", "content": answer, "timestamp": ts(), "metadata": {"tool": tool}})
    line({"role": "assistant", "content": words(20, 120), "timestamp": ts(),
          "metadata": {"model": "anthropic/claude-sonnet-4-5",
                       "usage": {"input_tokens": rng.randint(500, 30000), "output_tokens": rng.randint(10, 800)},
                       "cost": round(rng.uniform(0.001, 0.05), 6)}})
out.close()
print(json.dumps({"load": path, "files": [path], "format": "gptme"}))
