"""A minimal ClickHouse HTTP interface in front of chdb (ClickHouse's engine in Python), for
tracetui's clickhouse:// tests.

    python3 chdb_http.py --port-file F [--seed OTLP_DIR [--set mixed]] [--password P] [--log F] [--data DIR]

Listens on 127.0.0.1 (a free port, written to F once it serves). A query is the `query` URL
parameter and/or the POST body (ClickHouse joins them); `database` / X-ClickHouse-Database
select the database; the other URL parameters are settings: `default_format` is applied,
`readonly=1` refuses what is not a read (Code 164, READONLY), `param_NAME` are query
parameters (`{NAME:Type}` in the SQL, as the server takes them), the rest are recorded only.
Errors come back as ClickHouse sends them: status 404 for an unknown table or database, 400
for bad SQL, 500 otherwise, the text `Code: N. DB::Exception: ...` and the
X-ClickHouse-Exception-Code header. `--log` appends one JSON line per request (its URL
parameters and query, never the password), so a test can see what a client sent.
`--seed` creates the exporter's table in database `otel`, inserts the fake team store as the
exporter inserts it and writes the same spans as OTLP/JSON to OTLP_DIR/store.json (`--set
mixed`: other recorders' spans instead, store.mixed_spans).

A test inserts more spans, as the Collector would while tracetui watches, with
`POST /_test/insert` and a JSON list of spans in store.spans()'s form: they are inserted as the
exporter inserts them, apart from the query path (not logged, no readonly): tracetui's own
queries stay read-only.
"""

import argparse
import base64
import json
import os
import re
import sys
import tempfile
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

os.environ.setdefault("TZ", "UTC")
try:
    from chdb import session as chs
except Exception as e:  # noqa: BLE001 - any import failure means: no engine here
    print("chdb unavailable: %s" % e, file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import store  # noqa: E402

READ = re.compile(r"^\s*(\(\s*)*(SELECT|WITH|SHOW|DESCRIBE|DESC|EXISTS|EXPLAIN)\b", re.I)
CODE = re.compile(r"Code: (\d+)")


def seed(sess, out_dir, which="team"):
    sess.query("CREATE DATABASE IF NOT EXISTS otel")
    sess.query(store.DDL.format(table="otel.otel_traces"))
    # Two hours ago, to the second: inside the default 24 h window.
    base = (int(time.time()) - 7200) * 1_000_000_000
    spans = store.SETS[which](base)
    rows = "\n".join(json.dumps(r) for r in store.exporter_rows(spans))
    sess.query("INSERT INTO otel.otel_traces (%s) FORMAT JSONEachRow\n%s" % (store.INSERT_COLUMNS, rows))
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "store.json"), "w") as f:
        json.dump(store.otlp_document(spans), f)


class Handler(BaseHTTPRequestHandler):
    sess = None
    password = None
    log = None

    def log_message(self, *a):  # quiet
        pass

    def reply(self, status, body, code=None):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=UTF-8")
        if code is not None:
            self.send_header("X-ClickHouse-Exception-Code", str(code))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_query(self, body):
        url = urllib.parse.urlparse(self.path)
        params = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        if url.path in ("/ping",) and not body and "query" not in params:
            return self.reply(200, "Ok.\n")
        user, key = self.headers.get("X-ClickHouse-User"), self.headers.get("X-ClickHouse-Key")
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            user, _, key = base64.b64decode(auth[6:]).decode().partition(":")
        if self.password is not None and key != self.password:
            return self.reply(401, "Code: 516. DB::Exception: %s: Authentication failed: password is incorrect, "
                              "or there is no user with such name. (AUTHENTICATION_FAILED)\n" % (user or "default"), 516)
        sql = " ".join(x for x in (params.pop("query", ""), body) if x.strip())
        db = params.pop("database", None) or self.headers.get("X-ClickHouse-Database")
        fmt = params.pop("default_format", "TabSeparated")
        # Query parameters (`{name:Type}` in the SQL): passed to the engine, which parses
        # each value as the server does (escaped text).
        qparams = {k[len("param_"):]: params.pop(k) for k in list(params) if k.startswith("param_")}
        if self.log:
            with open(self.log, "a") as f:
                f.write(json.dumps({"params": params, "query_params": qparams, "database": db, "user": user,
                                    "query": sql}) + "\n")
        if params.get("readonly") in ("1", "2") and not READ.match(sql):
            return self.reply(500, "Code: 164. DB::Exception: %s: Cannot execute query in readonly mode. "
                              "(READONLY)\n" % (user or "default"), 164)
        try:
            if db:
                self.sess.query("USE %s" % db)
            res = self.sess.query(sql, fmt, params=qparams or None)
            data = res.bytes() if hasattr(res, "bytes") else str(res).encode()
        except Exception as e:  # noqa: BLE001 - the engine's error, as the server sends it
            text = str(e)
            m = CODE.search(text)
            code = int(m.group(1)) if m else 1000
            status = 404 if code in (60, 81) else 400 if code in (62,) else 500
            if not text.startswith("Code:"):
                text = "Code: %d. DB::Exception: %s" % (code, text)
            return self.reply(status, text.rstrip() + "\n", code)
        self.reply(200, data)

    def do_GET(self):
        self.handle_query("")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode()
        if urllib.parse.urlparse(self.path).path == "/_test/insert":
            return self.insert(json.loads(body))
        self.handle_query(body)

    def insert(self, spans):
        rows = "\n".join(json.dumps(r) for r in store.exporter_rows(spans))
        try:
            self.sess.query("INSERT INTO otel.otel_traces (%s) FORMAT JSONEachRow\n%s" % (store.INSERT_COLUMNS, rows))
        except Exception as e:  # noqa: BLE001 - the test sees why
            return self.reply(500, str(e))
        self.reply(200, "Ok.\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--seed")
    ap.add_argument("--set", default="team", choices=sorted(store.SETS), help="which spans --seed inserts")
    ap.add_argument("--password")
    ap.add_argument("--log")
    ap.add_argument("--data", help="the engine's directory (default: a new one under $TMPDIR)")
    a = ap.parse_args()
    sess = chs.Session(a.data or tempfile.mkdtemp(prefix="chdb-"))
    if a.seed:
        seed(sess, a.seed, a.set)
    Handler.sess, Handler.password, Handler.log = sess, a.password, a.log
    srv = HTTPServer(("127.0.0.1", 0), Handler)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, a.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
