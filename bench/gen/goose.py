#!/usr/bin/env python3
"""goose session database at scale: one ~/.local/share/goose/sessions/sessions.db holding one
session of --events messages (rows of `messages`), as goose's schema 13 lays it out (see
tests/fixtures/goose/sessions.sql).

Mimics goose's messages: turns of a user text, assistant messages with text and 1-3
toolRequest items (developer__shell / developer__text_editor), a user message of toolResponse
items (a result for the model and a copy for the user, an error status now and then), and a
final assistant answer; accumulated tokens on the session. Deterministic (fixed seed).
Prints the generator contract of bench/formats.py: {"load", "files", "format"} as JSON."""
import argparse, json, os, random, sqlite3

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--events", type=int, default=1_000_000)
a = ap.parse_args()

rng = random.Random(41)
WORDS = ("the config loader reads every file under src and the tests fail when a key is missing so we "
         "rename it check the parser run cargo test again look at the output fix the import update docs "
         "error warning line column path module function struct value result option").split()
d = os.path.join(a.out, "sessions")
os.makedirs(d, exist_ok=True)
path = os.path.join(d, "sessions.db")
for s in ("", "-wal", "-shm", "-journal"):
    if os.path.exists(path + s):
        os.remove(path + s)
db = sqlite3.connect(path)
db.executescript("""
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
INSERT INTO schema_version (version) VALUES (13);
CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user', working_dir TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    extension_data TEXT DEFAULT '{}', total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER,
    schedule_id TEXT, recipe_json TEXT, user_recipe_values_json TEXT, provider_name TEXT, model_config_json TEXT,
    goose_mode TEXT NOT NULL DEFAULT 'auto', thread_id TEXT, archived_at TIMESTAMP, project_id TEXT, accumulated_cost REAL);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT, message_id TEXT);
CREATE INDEX idx_messages_session ON messages(session_id);
""")
SID = "20260901_1"
META = '{"userVisible":true,"agentVisible":true}'
dumps = json.JSONEncoder(ensure_ascii=False).encode


def words(lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def lines_of(lo, hi):
    return "\n".join(f"src/{rng.choice(WORDS)}.rs:{rng.randint(1, 900)}: {words(3, 12)}" for _ in range(rng.randint(lo, hi)))


t = 1788256800  # 2026-09-01 10:00:00 UTC
n = 0
seq = 0
batch = []


def msg(role, content):
    global n, t
    t += rng.randint(1, 20)
    n += 1
    batch.append((SID, role, dumps(content), t, META, "msg_%s_%d" % (SID, n)))
    if len(batch) >= 10_000:
        flush()


def flush():
    db.executemany("INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json, message_id) "
                   "VALUES (?, ?, ?, ?, ?, ?)", batch)
    batch.clear()


while n < a.events:
    msg("user", [{"type": "text", "text": words(5, 40)}])
    for _ in range(rng.randint(1, 5)):
        items = [{"type": "text", "text": words(3, 20)}]
        ids = []
        for _ in range(rng.randint(1, 3)):
            seq += 1
            cid = "toolu_%08d" % seq
            ids.append(cid)
            if rng.random() < 0.5:
                call = {"name": "developer__shell", "arguments": {"command": "rg -n %s src/" % rng.choice(WORDS)}}
            else:
                call = {"name": "developer__text_editor",
                        "arguments": {"command": "view", "path": "/home/ada/project/src/%s.rs" % rng.choice(WORDS)}}
            items.append({"type": "toolRequest", "id": cid, "toolCall": {"status": "success", "value": call}})
        msg("assistant", items)
        out = []
        for cid in ids:
            if rng.random() < 0.05:
                out.append({"type": "toolResponse", "id": cid,
                            "toolResult": {"status": "error", "error": "-32603: " + words(3, 10)}})
            else:
                text = lines_of(1, 30)
                out.append({"type": "toolResponse", "id": cid, "toolResult": {"status": "success", "value": {
                    "content": [{"type": "text", "text": text, "annotations": {"audience": ["assistant"]}},
                                {"type": "text", "text": text, "annotations": {"audience": ["user"], "priority": 0.0}}],
                    "isError": False}}})
        msg("user", out)
    msg("assistant", [{"type": "text", "text": words(20, 120)}])
flush()
db.execute("INSERT INTO sessions (id, name, working_dir, created_at, updated_at, total_tokens, input_tokens, output_tokens, "
           "accumulated_total_tokens, accumulated_input_tokens, accumulated_output_tokens, provider_name, model_config_json) "
           "VALUES (?, 'bench', '/home/ada/project', '2026-09-01 10:00:00', datetime(?, 'unixepoch'), 4400, 4000, 400, ?, ?, ?, "
           "'anthropic', '{\"model_name\":\"claude-sonnet-4-5\"}')",
           (SID, t, n * 430, n * 400, n * 30))
db.commit()
db.close()
print(json.dumps({"load": path, "files": [path], "format": "goose"}))
