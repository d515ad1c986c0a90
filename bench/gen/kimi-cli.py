#!/usr/bin/env python3
"""Kimi Code journal at scale: one ~/.kimi-code/sessions/<wd>/<session>/agents/main/wire.jsonl of
--events records.

Mimics the journal's shapes (see tests/fixtures/kimi-cli/): a metadata line and config updates,
then turns of a turn.prompt (and its context.append_message copy), steps of step.begin,
llm.request, think and text content parts, 1-3 tool.call / tool.result pairs (an error now and
then) and step.end with usage, each repeated by a usage.record, and a turn.ended. Deterministic
(fixed seed). Loaded as the journal file.
Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, json, os, random

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--events", type=int, default=1_000_000)
a = ap.parse_args()

rng = random.Random(29)
WORDS = ("the config loader reads every file under src and the tests fail when a key is missing so we "
         "rename it check the parser run cargo test again look at the output fix the import update docs "
         "error warning line column path module function struct value result option").split()
run = os.path.join(a.out, "sessions", "wd_project_0a0b0c0d0e0f", "session_e0e0e0e0-0000-4000-8000-000000000029", "agents", "main")
os.makedirs(run, exist_ok=True)
path = os.path.join(run, "wire.jsonl")
dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def words(lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def lines_of(lo, hi):
    return "\n".join(f"src/{rng.choice(WORDS)}.rs:{rng.randint(1, 900)}: {words(3, 12)}" for _ in range(rng.randint(lo, hi)))


out = open(path, "w", buffering=1 << 22)
n = 0
t = 1_790_000_000_000


def line(obj):
    global n, t
    t += rng.randint(1, 3000)
    obj["time"] = t
    out.write(dumps(obj))
    out.write("\n")
    n += 1


def loop(ev):
    line({"type": "context.append_loop_event", "event": ev})


line({"type": "metadata", "protocol_version": "1.4", "created_at": t})
line({"type": "config.update", "modelAlias": "moonshot-ai/kimi-k2.7-code", "thinkingEffort": "on"})
turn = 0
calls = 0
while n < a.events:
    text = words(5, 40)
    line({"type": "turn.prompt", "input": [{"type": "text", "text": text}], "origin": {"kind": "user"}, "agentId": "main"})
    line({"type": "context.append_message", "message": {"role": "user", "content": [{"type": "text", "text": text}], "toolCalls": []}})
    steps = rng.randint(1, 5)
    for s in range(1, steps + 1):
        su = "st-%d-%d" % (turn, s)
        loop({"type": "step.begin", "uuid": su, "turnId": str(turn), "step": s})
        line({"type": "llm.request", "kind": "loop", "provider": "kimi", "model": "kimi-k2.7-code",
              "modelAlias": "moonshot-ai/kimi-k2.7-code", "messageCount": s * 2, "turnStep": "%d.%d" % (turn, s)})
        loop({"type": "content.part", "uuid": su + "-t", "turnId": str(turn), "step": s, "stepUuid": su,
              "part": {"type": "think", "think": words(5, 30)}})
        last = s == steps
        if last:
            loop({"type": "content.part", "uuid": su + "-x", "turnId": str(turn), "step": s, "stepUuid": su,
                  "part": {"type": "text", "text": words(20, 120)}})
        else:
            for _ in range(rng.randint(1, 3)):
                calls += 1
                cid = "%s_%d" % (rng.choice(["Bash", "Read", "Grep", "Edit"]), calls)
                loop({"type": "tool.call", "uuid": cid, "turnId": str(turn), "step": s, "stepUuid": su, "toolCallId": cid,
                      "name": cid.split("_")[0], "args": {"command": words(2, 8), "file_path": f"src/{rng.choice(WORDS)}.rs"},
                      "description": words(2, 6)})
                r = {"output": lines_of(1, 30)}
                if rng.random() < 0.05:
                    r["isError"] = True
                loop({"type": "tool.result", "parentUuid": cid, "toolCallId": cid, "result": r})
        u = {"inputOther": rng.randint(100, 5000), "output": rng.randint(10, 500), "inputCacheRead": rng.randint(0, 40000),
             "inputCacheCreation": 0}
        loop({"type": "step.end", "uuid": su, "turnId": str(turn), "step": s, "usage": u,
              "finishReason": "end_turn" if last else "tool_use", "messageId": "chatcmpl-" + su})
        line({"type": "usage.record", "model": "moonshot-ai/kimi-k2.7-code", "usage": u, "usageScope": "turn"})
    line({"type": "turn.ended", "turnId": turn, "reason": "completed", "durationMs": rng.randint(1000, 90000), "agentId": "main"})
    turn += 1
out.close()
print(json.dumps({"load": path, "files": [path], "format": "kimi-cli"}))
