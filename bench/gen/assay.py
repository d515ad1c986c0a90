#!/usr/bin/env python3
"""Assay trace JSONL at scale: one file of --events records (lines), deterministic, stdlib only.
Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON.

What it mimics (Rul1an/assay's recorders and fixtures, see ../shared/corpus/assay/):
  - V2 episodes (nearly all lines): `episode_start` {input, meta}, `step` {step_id, idx, kind
    llm|tool, name, content (text, or JSON text {prompt, completion, model}), content_sha256,
    truncations, meta}, `tool_call` {step_id, tool_name, call_index, args, result | error,
    *_sha256, truncations}, `episode_end` {outcome, final_output}; integer-ms timestamps.
    Several episodes are open at once and their lines interleave; about 5% of tool calls are
    written before their step; about 3% of episodes never end (still open); a blank line
    follows an episode's end half of the time.
  - The documented `{"type":"tool_call","id","tool","arguments"}` + `{"type":"tool_result",
    "id","result"}` lines (about 6% of lines): results usually right after their call, some
    later, a few before it, a few never; ISO timestamps; some MCP `isError` results.
  - V1 `assay.trace` request lines (0.2%).
Record sizes: about 1.1 KB a line on average (step contents ~log-normal around 500 B with a
tail to 16 KB, tool results around 300 B), text with escapes and non-ASCII.
"""
import argparse, json, math, os, random

WORDS = (
    "the agent should call tool search file path result error retry timeout user request "
    "context window token budget plan step execute verify summary function module return value "
    "config cache index query vector database table schema deploy build test failure success "
    "latency memory stream parse json http response status payload customer order invoice refund "
    "shipping account ticket priority resolve analyze compare patch commit branch review policy "
    "grounding chunk citation answer please think carefully about which tools you need"
).split()
UNICODE = ["naïve café", "Grüße aus München", "日本語のテキスト", "Привет, мир", "emoji 🚀✅",
           "“quotes” — dash", "eigen risico van €385", "ℕ ⊆ ℤ"]
CODE = ['def f(x):\n    return {"ok": x}\n', 'SELECT id FROM t WHERE a = \'b\';\n',
        'C:\\Users\\agent\\out.log\n', '{"key": "value", "list": [1, 2]}\n', '\tindented\ttabs\n']
TOOLS = ["search_web", "fetch_url", "read_file", "write_file", "grep_code", "run_shell", "sql_query",
         "vector_search", "get_weather", "send_email", "lookup_order", "refund_order", "calculator",
         "kb.retrieve", "kb.rerank", "mcp__github__create_issue", "mcp__slack__post_message",
         "mcp__filesystem__read_text_file", "get_customer", "update_customer"]
MODELS = ["gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet-20241022", "gemini-1.5-pro", "llama-3.1-70b"]
AGENTS = ["support-bot", "rag-grounding", "code-review", "sql-analyst", "mcp_import"]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        pr = random.Random(seed ^ 0xA55A)
        parts, n = [], 0
        while n < 2_000_000:
            x = pr.random()
            if x < 0.82:
                s = " ".join(pr.choice(WORDS) for _ in range(pr.randint(4, 22)))
                s = s[0].upper() + s[1:] + pr.choice([". ", ".\n", "? ", ":\n- ", ", "])
            elif x < 0.94:
                s = pr.choice(CODE)
            else:
                s = pr.choice(UNICODE) + " "
            parts.append(s)
            n += len(s)
        self.pool = "".join(parts)

    def text(self, n):
        n = max(1, min(int(n), len(self.pool) - 1))
        o = self.r.randrange(0, len(self.pool) - n)
        return self.pool[o:o + n]

    def lognorm(self, median, sigma, lo, hi):
        return int(min(hi, max(lo, median * math.exp(self.r.gauss(0.0, sigma)))))

    def hexid(self, bits=64):
        return "%0*x" % (bits // 4, self.r.getrandbits(bits))

    def sha(self):
        return "sha256:" + self.hexid(256)

    def args(self, tool):
        r = self.r
        if tool in ("search_web", "vector_search", "kb.retrieve", "grep_code", "kb.rerank"):
            return {"query": self.text(r.randint(10, 120)), "top_k": r.choice((3, 5, 10)),
                    "filters": {"lang": r.choice(("en", "nl", "ja")), "tags": [r.choice(WORDS) for _ in range(r.randint(0, 3))]}}
        if tool in ("read_file", "write_file", "mcp__filesystem__read_text_file"):
            a = {"path": "/workspace/src/%s_%d.py" % (r.choice(WORDS), r.randint(0, 999))}
            if tool == "write_file":
                a["content"] = self.text(self.lognorm(500, 1.0, 40, 6000))
            return a
        if tool in ("run_shell", "sql_query"):
            return {"code": self.text(self.lognorm(160, 0.8, 20, 2000)), "timeout_s": r.choice((10, 30))}
        return {"id": r.randint(1, 10_000_000), "text": self.text(r.randint(10, 200)),
                "options": {"dry_run": r.random() < 0.3, "nested": {"a": [1, 2, {"b": None}]}}}

    def result(self):
        r = self.r
        x = r.random()
        if x < 0.5:
            return {"content": [{"type": "text", "text": self.text(self.lognorm(450, 1.0, 10, 12000))}]}
        if x < 0.8:
            n = r.randint(1, 5)
            return {"matches": [{"file": "src/%s.py" % r.choice(WORDS), "line": r.randint(1, 900),
                                 "score": round(r.random(), 4), "text": self.text(r.randint(20, 200))} for _ in range(n)],
                    "total": n}
        return {"ok": True, "rows": [[r.randint(0, 99), r.choice(WORDS)] for _ in range(r.randint(0, 12))]}


class Episode:
    """The lines of one V2 episode, in write order (a tool call may come before its step)."""

    def __init__(self, g, eid, n, t0):
        self.g, self.eid, self.n, self.t = g, eid, n, t0
        self.lines = self.build()

    def tick(self):
        self.t += self.g.r.randint(1, 900)
        return self.t

    def build(self):
        g, r, eid = self.g, self.g.r, self.eid
        out = [{"type": "episode_start", "episode_id": eid, "timestamp": self.tick(),
                "input": {"prompt": g.text(g.lognorm(300, 0.9, 20, 4000))},
                "meta": {"agent": r.choice(AGENTS), "episode_id": eid, "run": g.hexid(32)}}]
        opened = r.random() < 0.03
        body = self.n - 1 - (0 if opened else 1)
        idx = 0
        while body > 0:
            step_id = "step_%03d" % idx
            llm = r.random() < 0.55
            model = r.choice(MODELS)
            if llm and r.random() < 0.25:
                content = json.dumps({"prompt": g.text(g.lognorm(400, 1.0, 20, 8000)),
                                      "completion": g.text(g.lognorm(300, 1.0, 10, 6000)), "model": model},
                                     ensure_ascii=False)
            elif r.random() < 0.08:
                content = None
            else:
                content = g.text(g.lognorm(700, 1.1, 10, 16000))
            step = {"type": "step", "episode_id": eid, "step_id": step_id, "idx": idx, "timestamp": self.tick(),
                    "kind": "llm" if llm else "tool"}
            tools = [] if body == 1 else [r.choice(TOOLS) for _ in range(min(body - 1, r.choice((0, 1, 1, 1, 2, 3))))]
            if not llm and tools:
                step["name"] = tools[0]
            elif llm and r.random() < 0.5:
                step["name"] = r.choice(("planner", "responder", model))
            step["content"] = content
            step["content_sha256"] = g.sha() if r.random() < 0.3 else None
            step["truncations"] = ([{"field": "content", "original_len": 40000, "kept_len": 4096,
                                     "sha256": g.hexid(256), "strategy": "head"}] if r.random() < 0.02 else [])
            step["meta"] = ({"gen_ai.request.model": model} if llm and r.random() < 0.4
                            else {"jsonrpc_id": str(r.randint(1, 9999))} if not llm and r.random() < 0.5 else {})
            calls = []
            for k, tool in enumerate(tools):
                err = r.random() < 0.03
                calls.append({"type": "tool_call", "episode_id": eid, "step_id": step_id, "timestamp": self.tick(),
                              "tool_name": tool, "call_index": k, "args": g.args(tool), "args_sha256": None,
                              "result": None if err else g.result(), "result_sha256": None,
                              "error": r.choice(("timeout/no_response", "upstream 503", "denied")) if err else None,
                              "truncations": []})
            if calls and r.random() < 0.05:
                out += calls + [step]  # the tool call was recorded before its step
            else:
                out += [step] + calls
            body -= 1 + len(calls)
            idx += 1
        if not opened:
            out.append({"type": "episode_end", "episode_id": eid, "timestamp": self.tick(),
                        "outcome": r.choice(("pass", "pass", "pass", "fail", None)),
                        "final_output": g.text(g.lognorm(200, 0.9, 5, 3000))})
        return out


def iso(ms):
    s, ms = divmod(ms, 1000)
    d, s = divmod(s, 86400)
    # Days from 2025-12-01 are enough for a benchmark: keep within the month and wrap.
    return "2025-12-%02dT%02d:%02d:%02d.%03dZ" % (1 + d % 28, s // 3600, s % 3600 // 60, s % 60, ms)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=13)
    a = ap.parse_args()
    g = Gen(a.seed)
    r = g.r
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "traces.jsonl")
    enc = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    left = a.events
    t0 = 1766601666050
    open_eps = []  # [Episode, next line]
    calls_open = []  # documented calls whose result comes later: (id, tool)
    early_results = []  # results written before their call: (id, tool)
    n_ep = n_call = 0
    with open(path, "w", encoding="utf-8", buffering=8 << 20) as f:
        def put(rec):
            nonlocal left
            f.write(enc(rec) + "\n")
            left -= 1

        while left > 0:
            x = r.random()
            if x < 0.002:
                put({"schema_version": 1, "type": "assay.trace", "request_id": "req_%d" % r.randint(0, 10**9),
                     "prompt": g.text(r.randint(20, 300)), "response": g.text(r.randint(20, 600)),
                     "model": r.choice(MODELS), "provider": "trace", "meta": {}})
                continue
            if x < 0.062:
                t0 += r.randint(1, 50)
                if early_results and r.random() < 0.5 and left >= 1:
                    cid, tool = early_results.pop()
                    put({"type": "tool_call", "id": cid, "tool": tool, "arguments": g.args(tool), "timestamp": iso(t0 - 400)})
                elif calls_open and r.random() < 0.45:
                    cid, tool = calls_open.pop(r.randrange(len(calls_open)))
                    res = g.result()
                    rec = {"type": "tool_result", "id": cid, "result": res, "timestamp": iso(t0)}
                    if r.random() < 0.03:
                        res["isError"] = True
                    put(rec)
                else:
                    n_call += 1
                    cid, tool = "call_%06d_%s" % (n_call, g.hexid(32)), r.choice(TOOLS)
                    if r.random() < 0.005:
                        put({"type": "tool_result", "id": cid, "result": g.result(), "timestamp": iso(t0)})
                        early_results.append((cid, tool))
                    else:
                        args = g.args(tool)
                        put({"type": "tool_call", "id": cid, "tool": tool,
                             "arguments": enc(args) if r.random() < 0.3 else args, "timestamp": iso(t0)})
                        if r.random() < 0.99:  # a few calls never get a result
                            calls_open.append((cid, tool))
                continue
            while len(open_eps) < 4 + (n_ep % 3) and left > 0:
                n_ep += 1
                n = min(left, g.lognorm(70, 0.8, 3, 600))
                eid = "ep_%05d_%s" % (n_ep, g.hexid(32))
                open_eps.append([Episode(g, eid, n, t0 + n_ep * 1000), 0])
            k = r.randrange(len(open_eps))
            ep, i = open_eps[k]
            put(ep.lines[i])
            if i + 1 == len(ep.lines):
                open_eps.pop(k)
                if ep.lines[-1]["type"] == "episode_end" and r.random() < 0.5:
                    f.write("\n")
            else:
                open_eps[k][1] = i + 1
    print(json.dumps({"load": path, "files": [path], "format": "assay"}))


if __name__ == "__main__":
    main()
