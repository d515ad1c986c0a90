#!/usr/bin/env python3
"""Codex CLI rollout at scale: one ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl of --events lines.

Mimics real rollouts (shapes from CLI 0.52 to 0.146, see tests/fixtures/codex/): session_meta
first; then many turns, each a user prompt (response_item message + its event_msg twin),
turn_context (model, policies, turn_id), task_started, several sampling requests (encrypted
reasoning with a summary and its agent_reasoning twin, commentary, function_call /
custom_tool_call with arguments as a JSON string, their outputs by call_id, token_count with
cumulative and last usage and rate limits), a final answer and task_complete. Many short turns,
as a long session has, so that per-turn costs show. Deterministic (fixed seed).
Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, base64, json, os, random

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--events", type=int, default=1_000_000)
a = ap.parse_args()

rng = random.Random(13)
WORDS = ("the config loader reads every file under src and the tests fail when a key is missing so we "
         "rename it check the parser run cargo test again look at the output fix the import update docs "
         "error warning line column path module function struct value result option").split()
SESSION = "0196f000-aaaa-7bbb-8ccc-%012d" % 13
day = os.path.join(a.out, "sessions", "2026", "05", "01")
os.makedirs(day, exist_ok=True)
path = os.path.join(day, f"rollout-2026-05-01T10-00-00-{SESSION}.jsonl")
dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def words(lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def lines_of(lo, hi):
    return "\n".join(f"src/{rng.choice(WORDS)}.rs:{rng.randint(1, 900)}: {words(3, 12)}" for _ in range(rng.randint(lo, hi)))


def blob(n):
    return base64.b64encode(rng.randbytes(n)).decode()


class Clock:
    ms = 0

    def tick(self, lo=5, hi=900):
        self.ms += rng.randint(lo, hi)
        s, ms = divmod(self.ms, 1000)
        m, s = divmod(s, 60)
        h, m = divmod(m, 60)
        return f"2026-05-01T{10 + h % 14:02d}:{m:02d}:{s:02d}.{ms:03d}Z"


clock = Clock()
out = open(path, "w", buffering=1 << 22)
n = 0
total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0,
         "total_tokens": 0}


def rec(ty, payload, ts=None):
    global n
    out.write(dumps({"timestamp": ts or clock.tick(), "type": ty, "payload": payload}))
    out.write("\n")
    n += 1


def tokens():
    last = {"input_tokens": rng.randint(2000, 60000), "cached_input_tokens": rng.randint(0, 40000),
            "output_tokens": rng.randint(20, 3000), "reasoning_output_tokens": rng.randint(0, 1500)}
    last["total_tokens"] = last["input_tokens"] + last["output_tokens"]
    for k, v in last.items():
        total[k] += v
    rec("event_msg", {"type": "token_count", "info": {"total_token_usage": dict(total), "last_token_usage": last,
                                                       "model_context_window": 272000},
                      "rate_limits": {"primary": {"used_percent": round(rng.random() * 50, 1), "window_minutes": 300,
                                                  "resets_in_seconds": rng.randint(1, 18000)},
                                      "secondary": {"used_percent": round(rng.random() * 20, 1),
                                                    "window_minutes": 10080, "resets_in_seconds": rng.randint(1, 600000)}}})


ts0 = clock.tick()
rec("session_meta", {"id": SESSION, "timestamp": ts0, "cwd": "/src/app", "originator": "codex_cli_rs",
                     "cli_version": "0.146.0", "source": "cli", "model_provider": "openai",
                     "base_instructions": {"text": words(200, 300)},
                     "git": {"commit_hash": "%040x" % rng.getrandbits(160), "branch": "main",
                             "repository_url": "https://example.invalid/app.git"}}, ts0)
rec("response_item", {"type": "message", "role": "user", "content": [
    {"type": "input_text", "text": "<environment_context>\n  <cwd>/src/app</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n  <shell>zsh</shell>\n</environment_context>"}]})

turn = 0
call = 0
while n < a.events:
    turn += 1
    turn_id = "0196f000-0000-7000-8000-%012d" % turn
    prompt = words(5, 40).capitalize()
    rec("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]})
    rec("event_msg", {"type": "user_message", "message": prompt, "images": [], "kind": "plain"})
    rec("turn_context", {"turn_id": turn_id, "cwd": "/src/app", "approval_policy": "on-request",
                         "sandbox_policy": {"type": "workspace-write", "writable_roots": ["/src/app"],
                                            "network_access": False, "exclude_tmpdir_env_var": False,
                                            "exclude_slash_tmp": False},
                         "model": "gpt-5-codex", "effort": "medium", "summary": "auto",
                         "collaboration_mode": {"mode": "default", "settings": {"model": "gpt-5-codex",
                                                                                "reasoning_effort": "medium"}}})
    rec("event_msg", {"type": "task_started", "turn_id": turn_id, "model_context_window": 272000})
    for _ in range(rng.randint(1, 6)):
        summary = words(8, 30)
        rec("event_msg", {"type": "agent_reasoning", "text": "**" + summary + "**"})
        rec("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**" + summary + "**"}],
                              "content": None, "encrypted_content": blob(rng.randint(900, 3600))})
        if rng.random() < 0.4:
            say = words(6, 30) + "."
            rec("event_msg", {"type": "agent_message", "message": say, "phase": "commentary"})
            rec("response_item", {"type": "message", "role": "assistant", "phase": "commentary",
                                  "content": [{"type": "output_text", "text": say}]})
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            call += 1
            cid = "call_%022d" % call
            if rng.random() < 0.8:
                cmd = rng.choice(["rg -n", "sed -n 1,80p", "cargo test -q", "git diff", "ls -la"]) + " " + rng.choice(WORDS)
                rec("response_item", {"type": "function_call", "name": "exec_command",
                                      "arguments": dumps({"cmd": cmd, "workdir": "/src/app", "yield_time_ms": 10000}),
                                      "call_id": cid})
                code = 0 if rng.random() < 0.9 else 1
                rec("response_item", {"type": "function_call_output", "call_id": cid,
                                      "output": f"Chunk ID: {rng.getrandbits(24):06x}\nWall time: {rng.random():.4f} seconds\n"
                                                f"Process exited with code {code}\nOriginal token count: {rng.randint(10, 3000)}\nOutput:\n"
                                                + lines_of(2, 36)})
            else:
                rec("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": cid,
                                      "name": "apply_patch",
                                      "input": "*** Begin Patch\n*** Update File: src/config.rs\n@@\n-" + words(4, 12)
                                               + "\n+" + words(4, 12) + "\n*** End Patch\n"})
                ok = rng.random() < 0.9
                rec("response_item", {"type": "custom_tool_call_output", "call_id": cid,
                                      "output": dumps({"output": "Success. Updated the following files:\nM src/config.rs\n" if ok
                                                       else "patch does not apply", "metadata": {"exit_code": 0 if ok else 1,
                                                                                                "duration_seconds": 0.0}})})
        tokens()
    answer = words(10, 80) + "."
    rec("event_msg", {"type": "agent_message", "message": answer, "phase": "final_answer"})
    rec("response_item", {"type": "message", "role": "assistant", "phase": "final_answer",
                          "content": [{"type": "output_text", "text": answer}]})
    tokens()
    rec("event_msg", {"type": "task_complete", "turn_id": turn_id, "last_agent_message": answer,
                      "duration_ms": rng.randint(1000, 90000)})
out.close()
print(json.dumps({"load": path, "files": [path], "format": "codex"}))
