#!/usr/bin/env python3
"""GitHub Copilot Chat session at scale: one <Code/User>/workspaceStorage/<hash>/chatSessions/<id>.jsonl
mutation log of --events entries.

Mimics how VS Code writes it (ObjectMutationLog, see tests/fixtures/copilot-chat/): a session
entry (kind 0), then per request a push on ["requests"] (kind 2), pushes of response parts
(markdown and toolInvocationSerialized, with an isError result now and then), a set of a part when
a tool completes (kind 1), the result with its tool call rounds and timings, and the modelState;
now and then a failed request (errorDetails, modelState 3). VS Code compacts a log past 1024
entries; this one is not compacted (the reader's worst case). Deterministic (fixed seed).
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
SID = "c0c0c0c0-0000-4000-8000-%012d" % 37
ws = os.path.join(a.out, "workspaceStorage", "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b")
os.makedirs(os.path.join(ws, "chatSessions"), exist_ok=True)
with open(os.path.join(ws, "workspace.json"), "w") as f:
    f.write('{"folder":"file:///home/ada/project"}\n')
path = os.path.join(ws, "chatSessions", SID + ".jsonl")
dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def words(lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def lines_of(lo, hi):
    return "\n".join(f"src/{rng.choice(WORDS)}.rs:{rng.randint(1, 900)}: {words(3, 12)}" for _ in range(rng.randint(lo, hi)))


def md(s):
    return {"value": s, "supportThemeIcons": False, "supportHtml": False}


out = open(path, "w", buffering=1 << 22)
n = 0
t = 1_790_000_000_000


def entry(e):
    global n
    out.write(dumps(e))
    out.write("\n")
    n += 1


entry({"kind": 0, "v": {"version": 3, "creationDate": t, "initialLocation": "panel", "responderUsername": "GitHub Copilot",
                        "sessionId": SID, "requests": [], "pendingRequests": [], "hasPendingEdits": False}})
req = 0
calls = 0
while n < a.events:
    t += rng.randint(5_000, 120_000)
    start = t
    rid = "request_%08d" % req
    entry({"kind": 2, "k": ["requests"], "v": [{
        "requestId": rid, "timestamp": t, "message": {"text": words(5, 40), "parts": []}, "variableData": {"variables": []},
        "response": [], "modelId": "copilot/claude-sonnet-4.5", "agent": {"id": "github.copilot.editsAgent"},
        "modelState": {"value": 0}, "responseId": "response_%08d" % req}]})
    rounds = []
    nparts = 0
    if rng.random() < 0.03:
        entry({"kind": 1, "k": ["requests", req, "result"], "v": {"timings": {"firstProgress": 0, "totalElapsed": 1500},
              "errorDetails": {"message": "Sorry, your request failed. Please try again.", "code": "failed"}, "metadata": {}}})
        entry({"kind": 1, "k": ["requests", req, "modelState"], "v": {"value": 3}})
        req += 1
        continue
    for _ in range(rng.randint(1, 5)):
        text = words(3, 20)
        tcs = []
        parts = [md(text)]
        for _ in range(rng.randint(1, 3)):
            calls += 1
            cid = "toolu_%08d" % calls
            name = rng.choice(["run_in_terminal", "read_file", "grep_search", "replace_string_in_file"])
            args = {"command": words(2, 8)} if name == "run_in_terminal" else {"filePath": f"/home/ada/project/src/{rng.choice(WORDS)}.rs", "query": words(1, 3)}
            tcs.append({"name": name, "arguments": json.dumps(args), "id": cid})
            parts.append({"kind": "toolInvocationSerialized", "invocationMessage": md("Running " + name), "pastTenseMessage": None,
                          "isConfirmed": {"type": 1}, "isComplete": False, "toolCallId": cid, "toolId": name,
                          "source": {"type": "internal", "label": "Built-In"}})
        entry({"kind": 2, "k": ["requests", req, "response"], "v": parts})
        for k, p in enumerate(parts[1:]):
            t += rng.randint(100, 8000)
            p = dict(p, isComplete=True, pastTenseMessage=md("Ran " + p["toolId"]),
                     resultDetails={"input": "", "output": [{"type": "embed", "isText": True, "value": lines_of(1, 30)}],
                                    "isError": rng.random() < 0.05})
            entry({"kind": 1, "k": ["requests", req, "response", nparts + 1 + k], "v": p})
        nparts += len(parts)
        rounds.append({"response": text, "toolCalls": tcs, "toolInputRetry": 0, "id": "round_%08d_%d" % (req, len(rounds))})
    final = words(20, 120)
    entry({"kind": 2, "k": ["requests", req, "response"], "v": [md(final)]})
    rounds.append({"response": final, "toolCalls": [], "toolInputRetry": 0, "id": "round_%08d_%d" % (req, len(rounds))})
    t += rng.randint(500, 5000)
    entry({"kind": 1, "k": ["requests", req, "result"], "v": {"timings": {"firstProgress": 700, "totalElapsed": t - start},
          "metadata": {"toolCallRounds": rounds, "toolCallResults": {}}}})
    entry({"kind": 1, "k": ["requests", req, "modelState"], "v": {"value": 1, "completedAt": t}})
    req += 1
out.close()
print(json.dumps({"load": path, "files": [path], "format": "copilot-chat"}))
