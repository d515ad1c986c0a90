#!/usr/bin/env python3
"""Qwen Code session at scale: one ~/.qwen/projects/<sanitized cwd>/chats/<sessionId>.jsonl of --events records.

Mimics Qwen Code's ChatRecords (see tests/fixtures/qwen-code/): a user record, assistant records
whose Gemini `parts` hold thoughts, text and 1-3 functionCall parts, with usageMetadata (cache and
thoughts inside, as Qwen converts OpenAI-compatible usage) and a ui_telemetry record after each,
a tool_result record per call (functionResponse + toolCallResult; an error now and then), then a
final text, and now and then a chat_compression. Deterministic (fixed seed).
Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, datetime, json, os, random

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--events", type=int, default=1_000_000)
a = ap.parse_args()

rng = random.Random(41)
WORDS = ("the config loader reads every file under src and the tests fail when a key is missing so we "
         "rename it check the parser run the tests again look at the output fix the import update docs "
         "error warning line column path module function struct value result option").split()
SID = "a1a1a1a1-0000-4000-8000-%012d" % 41
CWD = "/home/ada/project"
run = os.path.join(a.out, "projects", "-home-ada-project", "chats")
os.makedirs(run, exist_ok=True)
path = os.path.join(run, SID + ".jsonl")
dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
out = open(path, "w", buffering=1 << 22)
n, t, prev, seq, calls = 0, 1_790_000_000_000, None, 0, 0


def words(lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def iso(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def record(ty, **kw):
    global n, t, prev, seq
    t += rng.randint(20, 4000)
    seq += 1
    u = "%08x-0000-4000-8000-%012d" % (seq, 41)
    r = {"uuid": u, "parentUuid": prev, "sessionId": SID, "timestamp": iso(t), "type": ty,
         "cwd": CWD, "version": "0.19.2", "gitBranch": "main"}
    r.update(kw)
    out.write(dumps(r) + "\n")
    n += 1
    prev = u


def usage():
    p, c, th = rng.randint(1000, 90000), rng.randint(10, 900), rng.randint(0, 200)
    return {"promptTokenCount": p, "candidatesTokenCount": c + th, "thoughtsTokenCount": th,
            "cachedContentTokenCount": rng.randint(0, p), "totalTokenCount": p + c + th}


TOOLS = {"run_shell_command": lambda: {"command": words(2, 8)},
         "read_file": lambda: {"absolute_path": f"{CWD}/src/{rng.choice(WORDS)}.py"},
         "grep_search": lambda: {"pattern": rng.choice(WORDS)},
         "edit": lambda: {"file_path": f"{CWD}/src/{rng.choice(WORDS)}.py", "old_string": words(2, 6), "new_string": words(2, 6)}}

while n < a.events:
    if rng.random() < 0.01:
        record("system", subtype="chat_compression",
               systemPayload={"info": {"originalTokenCount": 90000, "newTokenCount": 9000}, "compressedHistory": [{"role": "user", "parts": [{"text": words(20, 60)}]}]})
    record("user", message={"role": "user", "parts": [{"text": words(5, 40)}]})
    for _ in range(rng.randint(1, 5)):
        parts = [{"text": words(5, 30), "thought": True}, {"text": words(3, 20)}]
        ids = []
        for _ in range(rng.randint(1, 3)):
            calls += 1
            name = rng.choice(list(TOOLS))
            ids.append(("call_%08d" % calls, name))
            parts.append({"functionCall": {"id": ids[-1][0], "name": name, "args": TOOLS[name]()}})
        u = usage()
        record("assistant", model="qwen3-coder-plus", message={"role": "model", "parts": parts}, usageMetadata=u)
        record("system", subtype="ui_telemetry", systemPayload={"uiEvent": {"event.name": "qwen-code.api_response", "input_token_count": u["promptTokenCount"]}})
        for cid, name in ids:
            failed = rng.random() < 0.05
            resp = {"error": words(3, 10)} if failed else {"output": "\n".join(words(3, 12) for _ in range(rng.randint(1, 30)))}
            tcr = {"callId": cid, "status": "error" if failed else "success", "resultDisplay": words(1, 6)}
            record("tool_result", message={"role": "user", "parts": [{"functionResponse": {"id": cid, "name": name, "response": resp}}]},
                   toolCallResult=tcr)
    record("assistant", model="qwen3-coder-plus", message={"role": "model", "parts": [{"text": words(20, 120)}]}, usageMetadata=usage())
out.close()
print(json.dumps({"load": path, "files": [path], "format": "qwen-code"}))
