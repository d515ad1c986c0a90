#!/usr/bin/env python3
"""iFlow CLI session at scale: one ~/.iflow/projects/<encoded cwd>/session-<id>.jsonl of --events records.

Mimics iFlow's Claude Code-shaped records (see tests/fixtures/iflow/): a user prompt, assistant
records (each written twice, as iFlow does) with text and 1-3 tool_use blocks of Gemini CLI's
tools and usage, a user record per result whose tool_result content is Gemini CLI's envelope
({callId, responseParts: {functionResponse}, resultDisplay}) with the line's toolUseResult (an
error response now and then), then a final text. Deterministic (fixed seed).
Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, datetime, json, os, random

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--events", type=int, default=1_000_000)
a = ap.parse_args()

rng = random.Random(37)
WORDS = ("the config loader reads every file under src and the tests fail when a key is missing so we "
         "rename it check the parser run the tests again look at the output fix the import update docs "
         "error warning line column path module function struct value result option").split()
SID = "session-f1f1f1f1-0000-4000-8000-%012d" % 37
CWD = "/home/ada/project"
run = os.path.join(a.out, "projects", "-home-ada-project")
os.makedirs(run, exist_ok=True)
path = os.path.join(run, SID + ".jsonl")
dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
out = open(path, "w", buffering=1 << 22)
n, t, prev, seq, calls = 0, 1_790_000_000_000, None, 0, 0


def words(lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def iso(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def record(ty, message, copies=1, **kw):
    global n, t, prev, seq
    t += rng.randint(20, 4000)
    seq += 1
    u = "%08x-0000-4000-8000-%012d" % (seq, 37)
    r = {"uuid": u, "parentUuid": prev, "sessionId": SID, "timestamp": iso(t), "type": ty,
         "isSidechain": False, "userType": "external", "message": message}
    if ty == "user":
        r.update(cwd=CWD, gitBranch="main", version="0.5.19")
    r.update(kw)
    line = dumps(r) + "\n"
    for _ in range(copies):
        out.write(line)
        n += 1
    prev = u


TOOLS = {"run_shell_command": lambda: {"command": words(2, 8)},
         "read_file": lambda: {"absolute_path": f"{CWD}/src/{rng.choice(WORDS)}.py"},
         "search_file_content": lambda: {"pattern": rng.choice(WORDS)},
         "replace": lambda: {"file_path": f"{CWD}/src/{rng.choice(WORDS)}.py", "old_string": words(2, 6), "new_string": words(2, 6)}}

while n < a.events:
    record("user", {"role": "user", "content": words(5, 40)})
    for _ in range(rng.randint(1, 5)):
        seq_msg = "msg-%d" % seq
        blocks = [{"type": "text", "text": words(3, 20)}]
        ids = []
        for _ in range(rng.randint(1, 3)):
            calls += 1
            name = rng.choice(list(TOOLS))
            ids.append(("call_-%d" % (9_000_000 + calls), name))
            blocks.append({"type": "tool_use", "id": ids[-1][0], "name": name, "input": TOOLS[name]()})
        usage = {"input_tokens": rng.randint(1000, 60000), "output_tokens": rng.randint(10, 600)}
        record("assistant", {"id": seq_msg, "type": "message", "role": "assistant", "content": blocks,
                             "model": "glm-4.6", "stop_reason": None, "stop_sequence": None, "usage": usage}, copies=2)
        for cid, name in ids:
            failed = rng.random() < 0.05
            resp = {"error": {"message": words(3, 10)}} if failed else {"output": "\n".join(words(3, 12) for _ in range(rng.randint(1, 30)))}
            content = {"callId": cid, "responseParts": {"functionResponse": {"id": cid, "name": name, "response": resp}},
                       "resultDisplay": words(1, 6)}
            record("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": content}]},
                   toolUseResult={"toolName": name, "status": "error" if failed else "success", "timestamp": t})
    record("assistant", {"id": "msg-%d" % seq, "type": "message", "role": "assistant",
                         "content": [{"type": "text", "text": words(20, 120)}], "model": "glm-4.6",
                         "stop_reason": None, "stop_sequence": None,
                         "usage": {"input_tokens": rng.randint(1000, 60000), "output_tokens": rng.randint(10, 600)}}, copies=2)
out.close()
print(json.dumps({"load": path, "files": [path], "format": "iflow"}))
