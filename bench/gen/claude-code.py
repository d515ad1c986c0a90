#!/usr/bin/env python3
"""Claude Code at scale: one session transcript of --events lines, shaped like the real ones
(~/.claude/projects/<dir>/<session>.jsonl, Claude Code 2.1): compact JSON as JSON.stringify
writes it, the envelope every line repeats, user prompts, one API response split over several
assistant lines that share message.id (thinking, text, then one tool_use a line, the usage
repeated on each), tool_result lines with a structured toolUseResult (file contents, command
output: most of the bytes), parentUuid chains, system and bookkeeping lines, and a Task call
whose subagent writes <session>/subagents/agent-<id>.jsonl. Deterministic (fixed seed).

Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, json, os, random, uuid

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--events", type=int, default=1_000_000)
a = ap.parse_args()

rng = random.Random(13)
SESSION = "5f0c6d1e-8a3b-4c2d-9e7f-0a1b2c3d4e5f"
CWD = "/home/dev/projects/tracetui"
WORDS = ("the a of to in is it for on that with as was this be by are not at or from file line "
         "function return value error test struct impl self let mut fn use pub match some none "
         "result string vec index event trace load parse line byte range payload call tool").split()
TOOLS = ["Read", "Bash", "Grep", "Edit", "Glob", "Write"]


def uid():
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def words(n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def code(lines):
    """Numbered file contents as the Read tool returns them (newlines, quotes, tabs: escapes)."""
    out = []
    for i in range(1, lines + 1):
        indent = "    " * rng.randint(0, 3)
        out.append(f"{i:6}\u2192{indent}{words(rng.randint(2, 9))}(\"{rng.choice(WORDS)}\");")
    return "\n".join(out)


class Clock:
    def __init__(self):
        self.ms = 1_767_225_600_000  # 2026-01-01

    def tick(self, lo=50, hi=4000):
        self.ms += rng.randint(lo, hi)
        s, ms = divmod(self.ms, 1000)
        import time
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + f".{ms:03d}Z"


def envelope(parent, kind, u, ts, sidechain=False, extra=None):
    e = {"parentUuid": parent, "isSidechain": sidechain, "userType": "external", "cwd": CWD,
         "sessionId": SESSION, "version": "2.1.14", "gitBranch": "main", "slug": "curious-tracing-otter"}
    e["type"] = kind
    if extra:
        e.update(extra)
    e["uuid"] = u
    e["timestamp"] = ts
    return e


def dump(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def usage(inp, out):
    return {"input_tokens": inp, "cache_creation_input_tokens": rng.randint(0, 4000),
            "cache_read_input_tokens": rng.randint(10_000, 90_000),
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": out, "service_tier": "standard"}


def tool_input(name):
    path = f"{CWD}/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.rs"
    return {"Read": lambda: {"file_path": path},
            "Bash": lambda: {"command": f"cargo test {rng.choice(WORDS)} 2>&1 | tail -40",
                             "description": words(6)},
            "Grep": lambda: {"pattern": rng.choice(WORDS) + "_" + rng.choice(WORDS), "path": CWD + "/src",
                             "output_mode": "content"},
            "Edit": lambda: {"file_path": path, "old_string": words(20), "new_string": words(24)},
            "Glob": lambda: {"pattern": "**/*.rs"},
            "Write": lambda: {"file_path": path, "content": code(rng.randint(10, 30))}}[name]()


def tool_output(name, inp):
    """(tool_result content, toolUseResult, is_error)."""
    if name == "Read":
        text = code(rng.randint(20, 60))
        return text, {"type": "text", "file": {"filePath": inp["file_path"], "content": text,
                                               "numLines": text.count("\n") + 1, "startLine": 1,
                                               "totalLines": 400}}, False
    if name == "Bash":
        err = rng.random() < 0.08
        out = "\n".join(f"test {rng.choice(WORDS)}::{rng.choice(WORDS)} ... {'FAILED' if err else 'ok'}"
                        for _ in range(rng.randint(10, 50)))
        if err:
            return f"Exit code 101\n{out}", f"Error: Exit code 101\n{out}", True
        return out, {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}, False
    if name in ("Grep", "Glob"):
        files = [f"{CWD}/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.rs" for _ in range(rng.randint(3, 30))]
        text = "\n".join(files)
        return text, {"mode": "files_with_matches", "filenames": files, "numFiles": len(files)}, False
    text = f"The file {inp['file_path']} has been updated."
    return text, {"filePath": inp["file_path"], "oldString": inp.get("old_string", ""),
                  "newString": inp.get("new_string", ""), "structuredPatch": [], "userModified": False}, False


def main():
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"{SESSION}.jsonl")
    sub_dir = os.path.join(a.out, SESSION, "subagents")
    os.makedirs(sub_dir, exist_ok=True)
    clock = Clock()
    n = 0
    parent = None
    turn = 0
    with open(path, "w") as f:
        def put(v):
            nonlocal n
            f.write(dump(v) + "\n")
            n += 1

        put({"type": "queue-operation", "operation": "dequeue", "timestamp": clock.tick(), "sessionId": SESSION})
        while n < a.events:
            turn += 1
            u = uid()
            put(envelope(parent, "user", u, clock.tick(),
                         extra={"message": {"role": "user", "content": words(rng.randint(8, 60)) + "\n\n" + words(20)}}))
            parent = u
            if turn % 7 == 1:
                put({"type": "file-history-snapshot", "messageId": u, "snapshot": {
                    "messageId": u, "trackedFileBackups": {}, "timestamp": clock.tick(0, 5)}, "isSnapshotUpdate": False})
            # A few API calls a turn, each answered by its tools.
            for _ in range(rng.randint(2, 8)):
                mid = "msg_01" + "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789")
                                         for _ in range(22))
                req = "req_011C" + "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789") for _ in range(20))
                inp = rng.randint(1, 12)
                blocks = []
                if rng.random() < 0.5:
                    blocks.append({"type": "thinking", "thinking": words(rng.randint(20, 120)),
                                   "signature": "Eo" + "".join(rng.choice("abcdefghijklmnop0123456789+/") for _ in range(300))})
                if rng.random() < 0.7:
                    blocks.append({"type": "text", "text": words(rng.randint(5, 60))})
                calls = []
                task = turn % 50 == 7 and not os.listdir(sub_dir)
                for _ in range(rng.choice([1, 1, 1, 2, 3])):
                    name = rng.choice(TOOLS)
                    ti = tool_input(name)
                    if task:
                        name, ti, task = "Task", {"description": "Survey the loader",
                                                  "prompt": "Find every place the loader reads a payload.",
                                                  "subagent_type": "Explore"}, False
                    tid = "toolu_01" + "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789")
                                               for _ in range(22))
                    blocks.append({"type": "tool_use", "id": tid, "name": name, "input": ti})
                    calls.append((tid, name, ti))
                out = rng.randint(20, 900)
                last_asst = None
                for k, b in enumerate(blocks):
                    u = uid()
                    stop = "tool_use" if k == len(blocks) - 1 and calls else None
                    put(envelope(parent, "assistant", u, clock.tick(100, 3000), extra={
                        "message": {"model": "claude-opus-4-5-20251101", "id": mid, "type": "message",
                                    "role": "assistant", "content": [b], "stop_reason": stop, "stop_sequence": None,
                                    "usage": usage(inp, out if k == len(blocks) - 1 else rng.randint(1, 20))},
                        "requestId": req}))
                    parent = last_asst = u
                for tid, name, ti in calls:
                    u = uid()
                    if name == "Task":
                        agent = "a" + "".join(rng.choice("0123456789abcdef") for _ in range(16))
                        write_subagent(sub_dir, agent, ti["prompt"], clock)
                        text = f"Found 3 places.\nagentId: {agent} (for resuming)"
                        content, structured, err = [{"type": "text", "text": text}], {
                            "status": "completed", "prompt": ti["prompt"], "agentId": agent,
                            "content": [{"type": "text", "text": text}], "totalDurationMs": 41000}, False
                    else:
                        content, structured, err = tool_output(name, ti)
                    block = {"tool_use_id": tid, "type": "tool_result", "content": content}
                    if err:
                        block["is_error"] = True
                    put(envelope(parent, "user", u, clock.tick(20, 9000), extra={
                        "message": {"role": "user", "content": [block]}, "toolUseResult": structured,
                        "sourceToolAssistantUUID": last_asst}))
                    parent = u
                    if n >= a.events:
                        break
                if n >= a.events:
                    break
            if n < a.events and turn % 3 == 0:
                u = uid()
                put(envelope(parent, "system", u, clock.tick(10, 100), extra={
                    "subtype": "turn_duration", "durationMs": rng.randint(1000, 90000), "isMeta": False}))
                parent = u
    files = [path] + [os.path.join(sub_dir, x) for x in sorted(os.listdir(sub_dir))]
    print(json.dumps({"load": path, "files": files, "format": "claude-code"}))


def write_subagent(sub_dir, agent, prompt, clock):
    p = os.path.join(sub_dir, f"agent-{agent}.jsonl")
    parent = None
    with open(p, "w") as f:
        for k in range(40):
            u = uid()
            if k == 0:
                v = envelope(None, "user", u, clock.tick(5, 50), sidechain=True,
                             extra={"agentId": agent, "message": {"role": "user", "content": prompt}})
            elif k % 2:
                tid = f"toolu_sub_{agent}_{k}"
                v = envelope(parent, "assistant", u, clock.tick(100, 2000), sidechain=True, extra={
                    "agentId": agent, "message": {
                        "model": "claude-haiku-4-5", "id": f"msg_sub_{agent}_{k}", "type": "message",
                        "role": "assistant", "stop_reason": "tool_use",
                        "content": [{"type": "tool_use", "id": tid, "name": "Grep",
                                     "input": {"pattern": "payload", "path": CWD}}],
                        "usage": usage(3, 80)}, "requestId": f"req_sub_{k}"})
            else:
                tid = f"toolu_sub_{agent}_{k - 1}"
                v = envelope(parent, "user", u, clock.tick(20, 500), sidechain=True, extra={
                    "agentId": agent, "message": {"role": "user", "content": [
                        {"tool_use_id": tid, "type": "tool_result", "content": f"{CWD}/src/formats/engine.rs"}]}})
            f.write(dump(v) + "\n")
            parent = u


main()
