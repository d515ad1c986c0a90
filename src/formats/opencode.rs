//! OpenCode sessions, in either of the two places OpenCode keeps them under its data dir
//! (`$XDG_DATA_HOME/opencode`, usually `~/.local/share/opencode`):
//! - up to 1.1.x, JSON storage: `storage/session/<project>/<session>.json`,
//!   `storage/message/<session>/<message>.json`, `storage/part/<message>/<part>.json`;
//! - from 1.2 on, the SQLite database `opencode.db` (`opencode-<channel>.db` for other release
//!   channels): tables `session` (columns), `message` and `part` (`id`, owner ids, times and
//!   the same JSON as the files in `data`, less the ids).
//!
//! One trace per session; a `task` subagent runs in a child session (`parentID`), which is a
//! trace of its own (its task call names it). A message holds parts: an assistant message is
//! one or more steps (`step-start` … `step-finish`), each ONE LLM call (the finish carries the
//! tokens and OpenCode's own `cost`), with its text, reasoning and tool parts as children. A
//! step's `tokens` are already the normalized kinds (`input` without the cache, which OpenCode
//! takes out itself, `output`, `reasoning`, `cache.read`, `cache.write`); its `cost` (dollars,
//! when not 0) is the call's recorded cost. A
//! tool call is one `tool` part whose `state.status` moves `pending` → `running` →
//! `completed` | `error`, with `state.time.start`/`end` in epoch ms.
//!
//! In JSON storage the `id` inside a session or message file wins over the file's name: its
//! messages (parts) are filed under that id, and a file may keep an older name (OpenCode's
//! storage migration copies files under their old names; users restore and copy them). A
//! session's messages filed under its file's name are read too.
//!
//! Drift (formats/mod.rs): a part type or message role OpenCode did not write before is
//! skipped quietly, counted, and shown as a generic event of that type or role when it
//! carries text (a message's text may be in its text parts); a part without a type and a
//! message without a role are still said.
//!
//! Run sources: a data dir (holding `opencode.db` or `storage/`), a `storage/` dir, or a
//! database file. A data dir holding both reads the database and then the storage sessions
//! the database does not have (OpenCode migrates storage into the database once and leaves
//! the files behind, so most are in both).
//!
//! The database is read where it lies, read-only, and nothing is written beside it. OpenCode
//! keeps it in WAL mode and, while it runs (and after the CLI exits), most of the data is in
//! `opencode.db-wal`. With a WAL and its index (`-shm`), SQLite reads both, opening the index
//! read-only (`readonly_shm`: a reader that may not write the index keeps its own copy of it);
//! with no WAL (or an empty one) the main file is the database, read `immutable` (no lock, no
//! index). Only a WAL without its index or a hot rollback journal (SQLite would have to write
//! beside the database to read it) makes a private copy, bounded by the free space and never
//! left behind (see `copy_and_open`).
//!
//! A database is a file from outside: the tables read must be tables (a recursive view named
//! `session` ran for ever while SQLite's sorter filled the disk), every query runs under an
//! instruction budget proportional to the files' size, temporary storage is in memory and
//! SQLite's memory is capped. What exceeds them is an error naming the database; the other
//! sources still load.

use super::sqlite::{DbCopy, Kind, SQLITE_MAGIC, each_row, rows};
use super::{Format, LoadError, Loaded, Probe, Summary, field, read_json_file, str_of};
use crate::model::*;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

pub struct OpenCode;

const FORMAT: &str = "opencode";
/// The largest storage JSON file read (one message or part; tool outputs are capped by
/// OpenCode well below this).
const JSON_LIMIT: u64 = 64 << 20;
/// The database's guards are shared with the other agents' databases (formats/sqlite.rs).
const DB: Kind = Kind {
    format: FORMAT,
    agent: "OpenCode",
    tables: &["session", "message", "part"],
};

fn open_copy(db: &Path) -> Result<DbCopy, LoadError> {
    super::sqlite::open(db, &DB)
}

fn sql_err(db: &Path, what: &str, e: rusqlite::Error) -> LoadError {
    super::sqlite::sql_err(db, &DB, what, e)
}

impl Format for OpenCode {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        FORMAT
    }
    fn describe(&self) -> &'static str {
        "OpenCode data dir (~/.local/share/opencode): opencode.db (SQLite, with its -wal) or storage/{session,message,part}/ JSON files"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return if self.is_run_dir(&p.path) { 100 } else { 0 };
        }
        if !p.head.starts_with(SQLITE_MAGIC) {
            return 0;
        }
        if is_db_name(p.file_name()) {
            return 100;
        }
        // Another name: the schema on the first pages says (a database whose schema is
        // still in its WAL only is recognised by its name).
        let has = |s: &[u8]| memchr::memmem::find(&p.head, s).is_some();
        if has(b"CREATE TABLE `part`") && has(b"CREATE TABLE `message`") && has(b"CREATE TABLE `session`") {
            90
        } else {
            0
        }
    }

    fn is_run_dir(&self, dir: &Path) -> bool {
        dir.join("opencode.db").is_file() || is_storage_dir(dir) || is_storage_dir(&dir.join("storage"))
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let meta = std::fs::metadata(path).map_err(|e| LoadError::io(path, e))?;
        let mut out = Vec::new();
        let mut problems = Vec::new();
        if !meta.is_dir() {
            out = read_db(path, path, &mut problems)?;
        } else {
            let (dbs, storage) = locate(path);
            let mut seen = HashSet::new();
            let mut first_err = None;
            for db in &dbs {
                match read_db(path, db, &mut problems) {
                    Ok(traces) => {
                        for t in traces {
                            if seen.insert(t.meta.id.clone()) {
                                out.push(t);
                            }
                        }
                    }
                    Err(e) => {
                        problems.push(Diagnostic::error(db, None, e.to_string()));
                        first_err.get_or_insert(e);
                    }
                }
            }
            if let Some(st) = &storage {
                for s in read_storage(st, &seen, &mut problems) {
                    out.push(build(path, s));
                }
            }
            if out.is_empty()
                && let Some(e) = first_err
            {
                return Err(e);
            }
        }
        if out.is_empty() {
            return Err(LoadError::Invalid {
                path: path.to_path_buf(),
                message: "no OpenCode sessions in it".into(),
                diagnostics: problems,
            });
        }
        // Problems of the source that belong to no one session are told with the first.
        out[0].diagnostics.extend(problems);
        Ok(Loaded { traces: out })
    }

    /// From the session records and each session's last message only (status), never the
    /// parts: `ls` of a data dir with thousands of sessions stays cheap.
    fn summarize(&self, path: &Path) -> Result<Option<Vec<Summary>>, LoadError> {
        let meta = std::fs::metadata(path).map_err(|e| LoadError::io(path, e))?;
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let (dbs, storage) = if meta.is_dir() {
            locate(path)
        } else {
            (vec![path.to_path_buf()], None)
        };
        for db in &dbs {
            match summarize_db(path, db) {
                Ok(rows) => {
                    for s in rows {
                        if seen.insert(s.id.clone()) {
                            out.push(s);
                        }
                    }
                }
                Err(e) if !meta.is_dir() => return Err(e),
                Err(_) => {}
            }
        }
        if let Some(st) = &storage {
            out.extend(summarize_storage(path, st, &seen));
        }
        if out.is_empty() {
            // Nothing cheap to tell: a full load says why.
            return Ok(None);
        }
        Ok(Some(out))
    }
}

fn is_db_name(name: &str) -> bool {
    name == "opencode.db" || (name.starts_with("opencode-") && name.ends_with(".db"))
}

/// JSON storage: `session/` and `message/` directories, and `part/` or `project/`.
fn is_storage_dir(dir: &Path) -> bool {
    dir.join("session").is_dir()
        && dir.join("message").is_dir()
        && (dir.join("part").is_dir() || dir.join("project").is_dir())
}

/// The databases (`opencode.db` first) and the storage dir of a data dir or storage dir.
fn locate(dir: &Path) -> (Vec<PathBuf>, Option<PathBuf>) {
    if is_storage_dir(dir) && !dir.join("opencode.db").is_file() {
        return (Vec::new(), Some(dir.to_path_buf()));
    }
    let mut dbs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| is_db_name(&e.file_name().to_string_lossy()))
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    dbs.sort_by_key(|p| (p.file_name().is_none_or(|n| n != "opencode.db"), p.clone()));
    let st = dir.join("storage");
    (dbs, is_storage_dir(&st).then_some(st))
}

/// A session as read from either source, before it becomes a trace.
#[derive(Debug, Default)]
struct SessionRec {
    id: String,
    title: Option<String>,
    /// Epoch ms.
    created: Option<i64>,
    updated: Option<i64>,
    /// Run attributes (directory, version, ...).
    attrs: Vec<(String, Value)>,
    /// The session's JSON file (storage).
    file: Option<PathBuf>,
    messages: Vec<MessageRec>,
    diags: Vec<Diagnostic>,
}

#[derive(Debug)]
struct MessageRec {
    id: String,
    data: Value,
    file: Option<PathBuf>,
    parts: Vec<PartRec>,
}

#[derive(Debug)]
struct PartRec {
    id: String,
    data: Value,
    file: Option<PathBuf>,
    /// The database row's time (epoch ms): the only clock of a step's start and finish.
    row_time: Option<i64>,
}

fn ms(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64)),
        _ => None,
    }
}

fn ns(ms: Option<i64>) -> Option<i64> {
    ms?.checked_mul(1_000_000)
}

fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

/// Session fields common to both sources, from the storage JSON (`parentID`, `time.created`).
fn session_from_json(id: String, v: &Value) -> SessionRec {
    let mut attrs = Vec::new();
    for (k, name) in [
        ("directory", "directory"),
        ("version", "version"),
        ("slug", "slug"),
        ("projectID", "project"),
    ] {
        if let Some(x) = field(v, k) {
            attrs.push((name.to_string(), x.clone()));
        }
    }
    let parent = str_of(v, "parentID").map(str::to_owned);
    if let Some(p) = &parent {
        attrs.push(("parent session".into(), Value::String(p.clone())));
    }
    SessionRec {
        id,
        title: str_of(v, "title").map(str::to_owned),
        created: ms(at(v, &["time", "created"])),
        updated: ms(at(v, &["time", "updated"])),
        attrs,
        ..Default::default()
    }
}

/// Session fields from a `session` row (every column, so that schema changes cost nothing).
fn session_from_row(row: &Map<String, Value>) -> Option<SessionRec> {
    let id = row.get("id")?.as_str()?.to_string();
    let s = |k: &str| row.get(k).and_then(Value::as_str).filter(|x| !x.is_empty());
    let mut attrs = Vec::new();
    for (k, name) in [
        ("directory", "directory"),
        ("version", "version"),
        ("slug", "slug"),
        ("project_id", "project"),
        ("agent", "agent"),
    ] {
        if let Some(x) = s(k) {
            attrs.push((name.to_string(), Value::String(x.to_string())));
        }
    }
    if let Some(m) = s("model") {
        attrs.push(("model".into(), super::json_or_string(m)));
    }
    if let Some(c) = row.get("cost").filter(|c| c.as_f64().is_some_and(|c| c > 0.0)) {
        attrs.push(("cost".into(), c.clone()));
    }
    let parent = s("parent_id").map(str::to_owned);
    if let Some(p) = &parent {
        attrs.push(("parent session".into(), Value::String(p.clone())));
    }
    Some(SessionRec {
        id,
        title: s("title").map(str::to_owned),
        created: ms(row.get("time_created")),
        updated: ms(row.get("time_updated")),
        attrs,
        ..Default::default()
    })
}

fn sessions_of(db: &Path, c: &DbCopy, problems: &mut Vec<Diagnostic>) -> Result<Vec<SessionRec>, LoadError> {
    if c.unsettled {
        problems.push(Diagnostic::warning(
            db,
            None,
            "the database changed during each copy (OpenCode is writing): what was read may miss the latest records",
        ));
    }
    let rows =
        rows(&c.conn, "SELECT * FROM session ORDER BY time_created, id").map_err(|e| sql_err(db, "sessions", e))?;
    let mut out = Vec::new();
    for r in rows {
        match session_from_row(&r) {
            Some(s) => out.push(s),
            None => problems.push(Diagnostic::error(db, None, "a session row without an id; skipped")),
        }
    }
    Ok(out)
}

/// The sessions of a database as traces. Parts are read in session order and each session is
/// made a trace as soon as its parts are in, so that only one session's records are held
/// parsed at a time (a database holds every session: all of them parsed at once took 3 KB a
/// part).
fn read_db(source: &Path, db: &Path, problems: &mut Vec<Diagnostic>) -> Result<Vec<Trace>, LoadError> {
    let c = open_copy(db)?;
    let mut sessions = sessions_of(db, &c, problems)?;
    let index: HashMap<String, usize> = sessions.iter().enumerate().map(|(i, s)| (s.id.clone(), i)).collect();
    let text = |r: &Map<String, Value>, k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let parse = |r: &Map<String, Value>, what: &str, id: &str, diags: &mut Vec<Diagnostic>| -> Option<Value> {
        let raw = r.get("data").and_then(Value::as_str).unwrap_or("");
        match serde_json::from_str::<Value>(raw) {
            Ok(v @ Value::Object(_)) => Some(v),
            Ok(_) => {
                diags.push(Diagnostic::error(
                    db,
                    None,
                    format!("{what} {id}: data is not a JSON object; skipped"),
                ));
                None
            }
            Err(e) => {
                let m = super::jsonl::json_error(&e);
                diags.push(Diagnostic::error(db, None, format!("{what} {id}: {m}; skipped")));
                None
            }
        }
    };
    // message id -> (session index, message index)
    let mut where_msg: HashMap<String, (usize, usize)> = HashMap::new();
    each_row(
        &c.conn,
        "SELECT id, session_id, time_created, data FROM message ORDER BY session_id, time_created, id",
        |r| {
            let (id, sid) = (text(&r, "id"), text(&r, "session_id"));
            let Some(&si) = index.get(&sid) else {
                problems.push(Diagnostic::warning(
                    db,
                    None,
                    format!("message {id} of unknown session {sid:?}; skipped"),
                ));
                return;
            };
            let s = &mut sessions[si];
            let Some(data) = parse(&r, "message", &id, &mut s.diags) else {
                return;
            };
            where_msg.insert(id.clone(), (si, s.messages.len()));
            s.messages.push(MessageRec {
                id,
                data,
                file: None,
                parts: Vec::new(),
            });
        },
    )
    .map_err(|e| sql_err(db, "messages", e))?;
    let mut traces: Vec<Option<Trace>> = sessions.iter().map(|_| None).collect();
    let flush = |si: usize, sessions: &mut Vec<SessionRec>, traces: &mut Vec<Option<Trace>>| {
        let mut s = std::mem::take(&mut sessions[si]);
        for m in &mut s.messages {
            m.parts.sort_by(|a, b| a.id.cmp(&b.id));
        }
        traces[si] = Some(build(source, s));
    };
    // The rows' own session (by the index on session_id) tells when a session is complete.
    let mut current: Option<String> = None;
    each_row(
        &c.conn,
        "SELECT id, message_id, session_id, time_created, data FROM part ORDER BY session_id",
        |r| {
            let (id, mid, sid) = (text(&r, "id"), text(&r, "message_id"), text(&r, "session_id"));
            if current.as_ref() != Some(&sid) {
                if let Some(&prev) = current.as_ref().and_then(|c| index.get(c))
                    && traces[prev].is_none()
                {
                    flush(prev, &mut sessions, &mut traces);
                }
                current = Some(sid);
            }
            let Some(&(si, mi)) = where_msg.get(&mid) else {
                problems.push(Diagnostic::warning(
                    db,
                    None,
                    format!("part {id} of unknown message {mid:?}; skipped"),
                ));
                return;
            };
            if traces[si].is_some() {
                // Its session column names another session than its message's.
                problems.push(Diagnostic::warning(
                    db,
                    None,
                    format!("part {id} is filed under another session than its message {mid}; skipped"),
                ));
                return;
            }
            let s = &mut sessions[si];
            let Some(data) = parse(&r, "part", &id, &mut s.diags) else {
                return;
            };
            s.messages[mi].parts.push(PartRec {
                id,
                data,
                file: None,
                row_time: ms(r.get("time_created")),
            });
        },
    )
    .map_err(|e| sql_err(db, "parts", e))?;
    for si in 0..sessions.len() {
        if traces[si].is_none() {
            flush(si, &mut sessions, &mut traces);
        }
    }
    Ok(traces.into_iter().flatten().collect())
}

fn summarize_db(source: &Path, db: &Path) -> Result<Vec<Summary>, LoadError> {
    let c = open_copy(db)?;
    let mut problems = Vec::new();
    let sessions = sessions_of(db, &c, &mut problems)?;
    // OpenCode keeps each session's token totals in its row (0 in sessions migrated from
    // storage, which are then left unknown here).
    let tokens: HashMap<String, u64> = rows(&c.conn, "SELECT * FROM session")
        .unwrap_or_default()
        .iter()
        .filter_map(|r| {
            let id = r.get("id")?.as_str()?.to_string();
            let n = [
                "tokens_input",
                "tokens_output",
                "tokens_reasoning",
                "tokens_cache_read",
                "tokens_cache_write",
            ]
            .iter()
            .filter_map(|k| r.get(*k).and_then(Value::as_u64))
            .fold(0u64, u64::saturating_add);
            Some((id, n))
        })
        .collect();
    // The last message of each session (the index on (session_id, time_created, id) serves it).
    let last = rows(
        &c.conn,
        "SELECT m.session_id AS sid, m.data AS data FROM message m \
         JOIN (SELECT session_id, max(time_created) AS t FROM message GROUP BY session_id) x \
         ON m.session_id = x.session_id AND m.time_created = x.t ORDER BY m.id",
    )
    .map_err(|e| sql_err(db, "messages", e))?;
    let mut last_of: HashMap<String, Value> = HashMap::new();
    for r in last {
        let sid = r.get("sid").and_then(Value::as_str).unwrap_or("").to_string();
        let data = r
            .get("data")
            .and_then(Value::as_str)
            .and_then(|d| serde_json::from_str(d).ok());
        if let Some(d) = data {
            last_of.insert(sid, d);
        }
    }
    Ok(sessions
        .into_iter()
        .map(|s| {
            let status = last_of
                .get(&s.id)
                .and_then(status_of_last)
                .unwrap_or(RunStatus::Unknown);
            let mut sum = summary(source, &s, status);
            sum.tokens = tokens.get(&s.id).copied().filter(|&n| n > 0);
            sum
        })
        .collect())
}

fn summary(source: &Path, s: &SessionRec, status: RunStatus) -> Summary {
    let start = ns(s.created);
    Summary {
        id: s.id.clone(),
        name: s.title.clone(),
        format: FORMAT,
        path: source.to_path_buf(),
        status,
        start,
        duration: span(start, ns(s.updated)),
        ..Default::default()
    }
}

/// A session's status from its last message; None for a message of a role OpenCode does not
/// write (drift: the status is the last known message's).
fn status_of_last(m: &Value) -> Option<RunStatus> {
    let role = str_of(m, "role");
    if role.is_some_and(|r| !is_known_role(r)) {
        return None;
    }
    if field(m, "error").is_some() {
        return Some(RunStatus::Error);
    }
    Some(match role {
        Some("assistant") if at(m, &["time", "completed"]).is_some_and(|t| !t.is_null()) => RunStatus::Ok,
        // No reply yet, or one still being written.
        Some("assistant") | Some("user") => RunStatus::Running,
        _ => RunStatus::Unknown,
    })
}

fn is_known_role(role: &str) -> bool {
    matches!(role, "user" | "assistant")
}

// ---------------------------------------------------------------------------------------
// JSON storage

/// `(file stem, path)` of the `*.json` files in a directory, by name (OpenCode's ids sort in
/// creation order).
fn json_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let stem = name.strip_suffix(".json")?.to_string();
                    e.file_type().ok().filter(|t| t.is_file())?;
                    Some((stem, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The session files of a storage dir, `session/<project>/<id>.json`.
fn session_files(st: &Path) -> Vec<(String, PathBuf)> {
    subdirs(&st.join("session"))
        .iter()
        .flat_map(|d| json_files(d))
        .collect()
}

fn read_object(path: &Path, diags: &mut Vec<Diagnostic>) -> Option<Value> {
    match read_json_file(path, JSON_LIMIT) {
        Ok(v @ Value::Object(_)) => Some(v),
        Ok(_) => {
            diags.push(Diagnostic::error(path, None, "not a JSON object; skipped"));
            None
        }
        Err(LoadError::Invalid { message, .. }) => {
            diags.push(Diagnostic::error(path, None, format!("{message}; skipped")));
            None
        }
        Err(e) => {
            diags.push(Diagnostic::error(path, None, format!("{e}; skipped")));
            None
        }
    }
}

/// A session file of a storage dir: the session's id (the `id` inside, else the file's
/// name), its record, and the message directories holding its messages.
struct SessionFile {
    id: String,
    path: PathBuf,
    record: Option<Value>,
    diags: Vec<Diagnostic>,
    /// `message/<id>/`, and `message/<file name>/` when the file is named otherwise and that
    /// directory belongs to no other session.
    message_dirs: Vec<PathBuf>,
}

/// The session files of a storage dir, one per session id. The id inside a file wins over its
/// name: OpenCode files a session's messages under its id, and a file renamed, copied or
/// migrated under an older name (its storage migration keeps the old file name) is still
/// that session. Of two files with one id, the one named after it is read.
fn storage_sessions(st: &Path, skip: &HashSet<String>) -> Vec<SessionFile> {
    // (file name, the session as its file says)
    let mut files: Vec<(String, SessionFile)> = session_files(st)
        .into_iter()
        .map(|(stem, path)| {
            let mut diags = Vec::new();
            let record = read_object(&path, &mut diags);
            let id = record
                .as_ref()
                .and_then(|v| str_of(v, "id"))
                .filter(|s| !s.is_empty())
                .map_or_else(|| stem.clone(), str::to_owned);
            let message_dirs = vec![st.join("message").join(&id)];
            let f = SessionFile {
                id,
                path,
                record,
                diags,
                message_dirs,
            };
            (stem, f)
        })
        .collect();
    // Stable: by name within each group.
    files.sort_by_key(|(stem, f)| f.id != *stem);
    let ids: HashSet<String> = files.iter().map(|(_, f)| f.id.clone()).collect();
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<SessionFile> = Vec::new();
    for (stem, mut f) in files {
        if skip.contains(&f.id) {
            continue;
        }
        let by_name = st.join("message").join(&stem);
        let by_name = (stem != f.id && !ids.contains(&stem) && by_name.is_dir()).then_some(by_name);
        match at.get(&f.id) {
            // Another file of a session already read: its messages are that session's.
            Some(&i) => out[i].message_dirs.extend(by_name),
            None => {
                at.insert(f.id.clone(), out.len());
                f.message_dirs.extend(by_name);
                out.push(f);
            }
        }
    }
    out
}

fn read_storage(st: &Path, skip: &HashSet<String>, problems: &mut Vec<Diagnostic>) -> Vec<SessionRec> {
    let mut out = Vec::new();
    // Message directories already some session's.
    let mut taken = HashSet::new();
    let mut dirs_of: HashMap<String, Vec<PathBuf>> = HashMap::new();
    for f in storage_sessions(st, skip) {
        // An unreadable session file still leaves its messages to show.
        let mut s = match &f.record {
            Some(v) => session_from_json(f.id.clone(), v),
            None => SessionRec {
                id: f.id.clone(),
                ..Default::default()
            },
        };
        s.diags = f.diags;
        s.file = Some(f.path);
        for d in &f.message_dirs {
            taken.insert(d.clone());
        }
        dirs_of.insert(f.id, f.message_dirs);
        out.push(s);
    }
    // Messages whose session file is missing are a session all the same.
    for d in subdirs(&st.join("message")) {
        let Some(id) = d.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        if skip.contains(&id) || taken.contains(&d) || dirs_of.contains_key(&id) {
            continue;
        }
        let mut s = SessionRec {
            id: id.clone(),
            ..Default::default()
        };
        s.diags.push(Diagnostic::warning(
            &d,
            None,
            "messages of a session with no session file: shown as a session without title",
        ));
        dirs_of.insert(id, vec![d]);
        out.push(s);
    }
    // Session ids sort newest first: order by creation, as the database does.
    out.sort_by(|a, b| (a.created, &a.id).cmp(&(b.created, &b.id)));
    for s in &mut out {
        let mut files: Vec<(String, PathBuf)> = dirs_of
            .get(&s.id)
            .map(|ds| ds.iter().flat_map(|d| json_files(d)).collect())
            .unwrap_or_default();
        files.sort();
        for (stem, path) in files {
            let Some(data) = read_object(&path, &mut s.diags) else {
                continue;
            };
            // As for sessions, the id inside wins: a message's parts are filed under it.
            let mid = str_of(&data, "id")
                .filter(|x| !x.is_empty())
                .map_or_else(|| stem.clone(), str::to_owned);
            let mut part_dir = st.join("part").join(&mid);
            if mid != stem && !part_dir.is_dir() {
                part_dir = st.join("part").join(&stem);
            }
            let parts = json_files(&part_dir)
                .into_iter()
                .filter_map(|(pid, pp)| {
                    let data = read_object(&pp, &mut s.diags)?;
                    Some(PartRec {
                        id: pid,
                        data,
                        file: Some(pp),
                        row_time: None,
                    })
                })
                .collect();
            s.messages.push(MessageRec {
                id: mid,
                data,
                file: Some(path),
                parts,
            });
        }
    }
    if out.is_empty() {
        problems.push(Diagnostic::warning(st, None, "a storage directory with no sessions"));
    }
    out
}

fn summarize_storage(source: &Path, st: &Path, skip: &HashSet<String>) -> Vec<Summary> {
    let mut out = Vec::new();
    for f in storage_sessions(st, skip) {
        let mut diags = f.diags;
        let s = match &f.record {
            Some(v) => session_from_json(f.id.clone(), v),
            None => SessionRec {
                id: f.id.clone(),
                ..Default::default()
            },
        };
        // The last message of a role OpenCode writes (a few back at most: newer roles are drift).
        let mut files: Vec<(String, PathBuf)> = f.message_dirs.iter().flat_map(|d| json_files(d)).collect();
        files.sort();
        let status = files
            .iter()
            .rev()
            .take(8)
            .filter_map(|(_, p)| read_object(p, &mut diags))
            .find_map(|m| status_of_last(&m))
            .unwrap_or(RunStatus::Unknown);
        out.push(summary(source, &s, status));
    }
    out
}

// ---------------------------------------------------------------------------------------
// Sessions into traces

/// The fields of a part shown as such, not repeated among its extras.
const PART_ENVELOPE: [&str; 5] = ["id", "sessionID", "messageID", "type", "time"];

/// The fields of a record not shown otherwise, moved out of it (a database's records are
/// all in memory at once: they are not copied).
fn take_extras(v: &mut Value, skip: &[&str]) -> Vec<(String, Value)> {
    match v {
        Value::Object(o) => std::mem::take(o)
            .into_iter()
            .filter(|(k, x)| !x.is_null() && !skip.contains(&k.as_str()) && !PART_ENVELOPE.contains(&k.as_str()))
            .collect(),
        _ => Vec::new(),
    }
}

/// Move a present, non-null field out of a record.
fn take_field(v: &mut Value, key: &str) -> Option<Value> {
    v.get_mut(key).filter(|x| !x.is_null()).map(Value::take)
}

/// OpenCode's errors are `{name, data: {message, ...}}`.
fn error_info(v: &Value) -> Option<ErrorInfo> {
    match v {
        Value::Object(o) => {
            let data = o.get("data");
            let message = data
                .and_then(|d| str_of(d, "message"))
                .or_else(|| o.get("message").and_then(Value::as_str))
                .map(str::to_owned)
                .unwrap_or_else(|| v.to_string());
            Some(ErrorInfo {
                kind: o.get("name").and_then(Value::as_str).map(str::to_owned),
                message,
                details: data.filter(|d| d.as_object().is_some_and(|m| m.len() > 1)).cloned(),
                ..Default::default()
            })
        }
        other => ErrorInfo::from_value(other),
    }
}

fn span(start: Option<i64>, end: Option<i64>) -> Option<i64> {
    // Checked: the times are the file's, and may be anything.
    end?.checked_sub(start?).filter(|d| *d >= 0)
}

fn usage_of(tokens: Option<&Value>) -> Option<Usage> {
    let t = tokens?;
    let n = |p: &[&str]| at(t, p).and_then(Value::as_u64);
    let parts = [
        n(&["input"]),
        n(&["output"]),
        n(&["reasoning"]),
        n(&["cache", "read"]),
        n(&["cache", "write"]),
    ];
    let sum = parts
        .iter()
        .flatten()
        .fold(None, |a: Option<u64>, x| Some(a.unwrap_or(0).saturating_add(*x)));
    // OpenCode already writes the normalized kinds: it takes the cache out of the provider's
    // input itself, and reasoning is apart from output.
    let u = Usage {
        input: parts[0],
        output: parts[1],
        reasoning: parts[2],
        cache_read: parts[3],
        cache_write: parts[4],
        total: n(&["total"]).or(sum),
        ..Default::default()
    };
    (!u.is_empty()).then_some(u)
}

/// What building a trace keeps track of.
struct Builder<'a> {
    t: Trace,
    root: u32,
    source: &'a Path,
    /// A part without a type was said (once a session).
    warned_untyped: bool,
    first: Option<i64>,
    last: Option<i64>,
    pending_tools: usize,
    model: Option<String>,
    cost: f64,
}

impl Builder<'_> {
    fn seen(&mut self, t: Option<i64>) {
        if let Some(t) = t {
            self.first = Some(self.first.map_or(t, |f| f.min(t)));
            self.last = Some(self.last.map_or(t, |l| l.max(t)));
        }
    }

    fn origin(&mut self, file: &Option<PathBuf>) -> Origin {
        match file {
            // Past u16 files, the part is shown without its source file. Every record is a
            // file of its own, asked for once: pushed without `add_file`'s search (which made
            // a session of many parts quadratic).
            Some(f) if self.t.files.len() < u16::MAX as usize => {
                self.t.files.push(f.clone());
                Origin {
                    file: (self.t.files.len() - 1) as u16,
                    ..Default::default()
                }
            }
            _ => Origin {
                file: u16::MAX,
                ..Default::default()
            },
        }
    }

    fn warn(&mut self, file: &Option<PathBuf>, msg: String) {
        let p = file.clone().unwrap_or_else(|| self.source.to_path_buf());
        self.t.diagnostics.push(Diagnostic::warning(p, None, msg));
    }
}

fn build(source: &Path, s: SessionRec) -> Trace {
    let name = s.title.clone().unwrap_or_else(|| s.id.clone());
    let mut t = Trace::new(RunMeta {
        id: s.id.clone(),
        name: Some(name.clone()),
        format: FORMAT,
        source: source.to_path_buf(),
        attributes: s.attrs.clone(),
        ..Default::default()
    });
    t.diagnostics = s.diags;
    let mut b = Builder {
        root: 0,
        t,
        source,
        warned_untyped: false,
        first: None,
        last: None,
        pending_tools: 0,
        model: None,
        cost: 0.0,
    };
    let origin = b.origin(&s.file);
    b.root = b.t.add(NewEvent {
        id: Some(&s.id),
        start: ns(s.created),
        origin,
        ..NewEvent::new(EventKind::Run, &name)
    });
    b.seen(ns(s.created));
    b.seen(ns(s.updated));
    let last_status = s.messages.iter().rev().find_map(|m| status_of_last(&m.data));
    for mut m in s.messages {
        let role = str_of(&m.data, "role").map(str::to_owned);
        match role.as_deref() {
            Some("user") => user_message(&mut b, m),
            Some("assistant") => assistant_message(&mut b, m),
            // A role OpenCode did not write before: drift (formats/mod.rs).
            Some(role) => drift_message(&mut b, role, m),
            None => {
                b.warn(&m.file, format!("message {} has no role; shown as is", m.id));
                let origin = b.origin(&m.file);
                let start = ns(ms(at(&m.data, &["time", "created"])));
                b.t.add(NewEvent {
                    id: Some(&m.id),
                    parent: Parent::Index(b.root),
                    start,
                    origin,
                    payload: PayloadRef::inline(Payload {
                        extra: take_extras(&mut m.data, &[]),
                        ..Default::default()
                    }),
                    ..NewEvent::new(EventKind::Message(Role::Other), "message")
                });
            }
        }
    }
    let mut status = last_status.unwrap_or(RunStatus::Unknown);
    if b.pending_tools > 0 {
        status = RunStatus::Running;
    }
    let (first, last) = (b.first, b.last);
    let model = b.model.take();
    let cost = b.cost;
    let root = b.root;
    let mut t = b.t;
    if cost > 0.0
        && !t.meta.attributes.iter().any(|(k, _)| k == "cost")
        && let Some(c) = serde_json::Number::from_f64(cost)
    {
        t.meta.attributes.push(("cost".into(), Value::Number(c)));
    }
    t.meta.status = status;
    t.meta.start = first;
    t.meta.end = last;
    t.meta.model = model;
    let e = t.event_mut(root);
    e.start = first.into();
    e.duration = span(first, last).into();
    e.status = status.event_status();
    t.finalize();
    t
}

fn user_message(b: &mut Builder, mut m: MessageRec) {
    let start = ns(ms(at(&m.data, &["time", "created"])));
    b.seen(start);
    let texts: Vec<&str> = m
        .parts
        .iter()
        .filter(|p| str_of(&p.data, "type") == Some("text"))
        .filter_map(|p| str_of(&p.data, "text"))
        .collect();
    let input = match texts.as_slice() {
        [] => None,
        [one] => Some(Value::String(one.to_string())),
        many => Some(Value::String(many.join("\n\n"))),
    };
    let origin = b.origin(&m.file);
    let msg = b.t.add(NewEvent {
        id: Some(&m.id),
        parent: Parent::Index(b.root),
        start,
        status: Status::Ok,
        origin,
        payload: PayloadRef::inline(Payload {
            input,
            extra: take_extras(&mut m.data, &["role", "summary"]),
            ..Default::default()
        }),
        ..NewEvent::new(EventKind::Message(Role::User), "user")
    });
    for p in m.parts.iter_mut().filter(|p| str_of(&p.data, "type") != Some("text")) {
        other_part(b, p, msg, start);
    }
}

/// One step of an assistant message: its LLM call and what it has seen.
struct Step {
    event: u32,
    start: Option<i64>,
    end: Option<i64>,
}

fn assistant_message(b: &mut Builder, m: MessageRec) {
    let MessageRec {
        id: mid,
        data,
        file: mfile,
        mut parts,
    } = m;
    let d = &data;
    let created = ns(ms(at(d, &["time", "created"])));
    let completed = ns(ms(at(d, &["time", "completed"])));
    b.seen(created);
    b.seen(completed);
    let model = str_of(d, "modelID").filter(|x| !x.is_empty());
    if let Some(md) = model {
        b.model = Some(md.to_string());
    }
    let error = field(d, "error").and_then(error_info);
    let mut step: Option<Step> = None;
    let mut last_step: Option<u32> = None;
    let mut prev_end = created;
    let last_finish = parts
        .iter()
        .rposition(|p| str_of(&p.data, "type") == Some("step-finish"));
    for (pi, p) in parts.iter_mut().enumerate() {
        let ty = str_of(&p.data, "type").unwrap_or("").to_string();
        let row = ns(p.row_time);
        match ty.as_str() {
            "step-start" => {
                if let Some(open) = step.take() {
                    // A step that never finished (cut off, or retried).
                    close_step(b, &open, None, Status::Unknown);
                    last_step = Some(open.event);
                    prev_end = open.end.or(prev_end);
                }
                let start = row.or(prev_end);
                step = Some(open_step(b, (&mid, d), p, model, start));
            }
            "step-finish" => {
                let open = match step.take() {
                    Some(s) => s,
                    None => open_step(b, (&mid, d), p, model, row.or(prev_end)),
                };
                // The finish's own row time, else the last time inside the step, else (the
                // last step) the message's completion.
                let end = row
                    .or(open.end)
                    .or(if Some(pi) == last_finish { completed } else { None });
                finish_step(b, &open, p, end);
                last_step = Some(open.event);
                prev_end = end.or(prev_end);
            }
            _ => {
                // Parts after a step's finish (its `patch`) belong to that step.
                let parent = match &step {
                    Some(s) => s.event,
                    None => last_step.unwrap_or(b.root),
                };
                let end = part_event(b, p, parent, prev_end);
                if let Some(s) = &mut step {
                    s.end = end.or(s.end);
                }
            }
        }
    }
    if let Some(open) = step.take() {
        let status = if error.is_some() {
            Status::Error
        } else if completed.is_none() {
            Status::Pending
        } else {
            Status::Unknown
        };
        let end = open.end.or(completed);
        close_step(b, &open, end, status);
    }
    if let Some(err) = error {
        let origin = b.origin(&mfile);
        let name = err.kind.clone().unwrap_or_else(|| "error".into());
        b.t.add(NewEvent {
            id: Some(&mid),
            parent: Parent::Index(b.root),
            start: completed.or(created),
            status: Status::Error,
            origin,
            payload: PayloadRef::inline(Payload {
                error: Some(err),
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::Error, &name)
        });
    }
}

/// An LLM call for a step of message `(id, data)`, opened by part `p`.
fn open_step(b: &mut Builder, m: (&str, &Value), p: &PartRec, model: Option<&str>, start: Option<i64>) -> Step {
    b.seen(start);
    let d = m.1;
    let mut extra = Vec::new();
    for k in ["providerID", "agent", "mode", "variant"] {
        if let Some(x) = field(d, k) {
            extra.push((k.to_string(), x.clone()));
        }
    }
    extra.push(("message".into(), Value::String(m.0.to_string())));
    let origin = b.origin(&p.file);
    let event = b.t.add(NewEvent {
        id: Some(&p.id),
        parent: Parent::Index(b.root),
        start,
        status: Status::Pending,
        model,
        origin,
        payload: PayloadRef::inline(Payload {
            extra,
            ..Default::default()
        }),
        ..NewEvent::new(EventKind::LlmCall, model.unwrap_or("assistant"))
    });
    Step {
        event,
        start,
        end: None,
    }
}

fn close_step(b: &mut Builder, s: &Step, end: Option<i64>, status: Status) {
    let end = end.or(s.end);
    b.seen(end);
    let e = b.t.event_mut(s.event);
    e.duration = span(s.start, end).into();
    e.status = status;
}

fn finish_step(b: &mut Builder, s: &Step, p: &mut PartRec, end: Option<i64>) {
    close_step(b, s, end, Status::Ok);
    let d = &p.data;
    // OpenCode's own cost of the step (dollars); 0 is what it writes for a model it cannot
    // price, so it is left unknown.
    let cost = d
        .get("cost")
        .and_then(crate::model::micros::micros_of_json)
        .filter(|&c| c > 0);
    if let Some(u) = usage_of(d.get("tokens")) {
        b.t.event_mut(s.event).usage = Usage { cost, ..u }.into();
    }
    if let Some(c) = d.get("cost").and_then(Value::as_f64).filter(|c| c.is_finite()) {
        b.cost += c;
    }
    if p.file.is_some() {
        // The finish is the part worth showing raw (tokens, cost), not the start.
        let o = b.origin(&p.file);
        b.t.event_mut(s.event).origin2 = Some(Box::new(o));
    }
    let extra = take_extras(&mut p.data, &[]);
    let pay = b.t.payload_mut(s.event);
    for (k, v) in extra {
        pay.set_extra(&k, v);
    }
}

/// A text, reasoning, tool or other part as an event; returns when it ended, if known.
fn part_event(b: &mut Builder, p: &mut PartRec, parent: u32, fallback: Option<i64>) -> Option<i64> {
    let d = &p.data;
    let ty = str_of(d, "type").unwrap_or("").to_string();
    let tstart = ns(ms(at(d, &["time", "start"])));
    let tend = ns(ms(at(d, &["time", "end"])));
    match ty.as_str() {
        "text" | "reasoning" => {
            let start = tstart.or(ns(p.row_time)).or(fallback);
            b.seen(start);
            b.seen(tend);
            let origin = b.origin(&p.file);
            let text = take_field(&mut p.data, "text");
            let (kind, name) = if ty == "text" {
                (EventKind::Message(Role::Assistant), "assistant")
            } else {
                (EventKind::Other, "reasoning")
            };
            b.t.add(NewEvent {
                id: Some(&p.id),
                parent: Parent::Index(parent),
                start,
                duration: span(start, tend),
                status: Status::Ok,
                origin,
                payload: PayloadRef::inline(Payload {
                    output: text,
                    extra: take_extras(&mut p.data, &[]),
                    ..Default::default()
                }),
                ..NewEvent::new(kind, name)
            });
            tend.or(start)
        }
        "tool" => tool_part(b, p, parent, fallback),
        _ => other_part(b, p, parent, fallback),
    }
}

fn tool_part(b: &mut Builder, p: &mut PartRec, parent: u32, fallback: Option<i64>) -> Option<i64> {
    let d = &mut p.data;
    let name = str_of(d, "tool").filter(|x| !x.is_empty()).map(str::to_owned);
    let call_id = str_of(d, "callID").filter(|x| !x.is_empty()).map(str::to_owned);
    let mut state = take_field(d, "state").unwrap_or(Value::Null);
    let part_meta = take_field(d, "metadata");
    if name.is_none() {
        b.warn(&p.file, format!("tool part {} has no tool name", p.id));
    }
    let st = str_of(&state, "status").unwrap_or("").to_string();
    let status = match st.as_str() {
        "completed" => Status::Ok,
        "error" => Status::Error,
        "pending" | "running" => {
            b.pending_tools += 1;
            Status::Pending
        }
        other => {
            let what = if other.is_empty() {
                "no state.status".to_string()
            } else {
                format!("unknown state.status {other:?}")
            };
            b.warn(&p.file, format!("tool part {} has {what}", p.id));
            Status::Unknown
        }
    };
    let start = ns(ms(at(&state, &["time", "start"])));
    let end = ns(ms(at(&state, &["time", "end"])));
    b.seen(start);
    b.seen(end);
    let input = take_field(&mut state, "input");
    let output = take_field(&mut state, "output");
    let error = field(&state, "error").and_then(error_info);
    let mut extra = Vec::new();
    for k in ["title", "metadata", "attachments", "raw"] {
        let Some(mut x) = take_field(&mut state, k) else {
            continue;
        };
        // Bash repeats its output in metadata.
        if k == "metadata"
            && let Some(o) = x.as_object_mut()
            && o.get("output") == output.as_ref()
        {
            o.remove("output");
        }
        extra.push((k.to_string(), x));
    }
    if let Some(c) = &call_id {
        extra.push(("callID".into(), Value::String(c.clone())));
    }
    if let Some(m) = part_meta {
        extra.push(("part metadata".into(), m));
    }
    let origin = b.origin(&p.file);
    b.t.add(NewEvent {
        id: Some(call_id.as_deref().unwrap_or(&p.id)),
        parent: Parent::Index(parent),
        start: start.or(ns(p.row_time)).or(fallback),
        duration: span(start, end),
        status,
        origin,
        payload: PayloadRef::inline(Payload {
            input,
            output,
            error,
            extra,
            context: Vec::new(),
        }),
        ..NewEvent::new(EventKind::ToolCall, name.as_deref().unwrap_or("?"))
    });
    end.or(start)
}

/// Part types shown as generic events of their type (text, reasoning, tool and the step
/// parts are built on their own).
const KNOWN_OTHER: [&str; 8] = [
    "file",
    "agent",
    "subtask",
    "compaction",
    "retry",
    "patch",
    "snapshot",
    "step-start",
];

fn is_known_part(ty: &str) -> bool {
    KNOWN_OTHER.contains(&ty) || ["text", "reasoning", "tool", "step-finish"].contains(&ty)
}

/// Fields every part repeats, left out of a drift event's record.
const DRIFT_ENVELOPE: [&str; 3] = ["id", "sessionID", "messageID"];

fn other_part(b: &mut Builder, p: &mut PartRec, parent: u32, fallback: Option<i64>) -> Option<i64> {
    let d = &p.data;
    let ty = str_of(d, "type").unwrap_or("").to_string();
    let ty = ty.as_str();
    if !ty.is_empty() && !is_known_part(ty) {
        drift_part(b, p, ty, parent, fallback);
        return None;
    }
    if ty.is_empty() && !std::mem::replace(&mut b.warned_untyped, true) {
        b.warn(&p.file, format!("a part without a type (part {}); shown as is", p.id));
    }
    let created = ns(ms(at(d, &["time", "created"])));
    let start = created
        .or(ns(ms(at(d, &["time", "start"]))))
        .or(ns(p.row_time))
        .or(fallback);
    b.seen(created);
    let error = if ty == "retry" {
        field(d, "error").and_then(error_info)
    } else {
        None
    };
    let origin = b.origin(&p.file);
    b.t.add(NewEvent {
        id: Some(&p.id),
        parent: Parent::Index(parent),
        start,
        status: Status::Ok,
        origin,
        payload: PayloadRef::inline(Payload {
            error,
            extra: take_extras(&mut p.data, if ty == "retry" { &["error"] } else { &[] }),
            ..Default::default()
        }),
        ..NewEvent::new(EventKind::Other, if ty.is_empty() { "part" } else { ty })
    });
    start
}

/// A part of a type OpenCode did not write before: counted as skipped and, when it carries
/// text, shown as a generic event of its type. It moves no step's or run's times.
fn drift_part(b: &mut Builder, p: &PartRec, ty: &str, parent: u32, fallback: Option<i64>) {
    b.t.skipped.add(ty);
    if super::drift_text(&p.data).is_none() {
        return;
    }
    let d = &p.data;
    let start = ns(ms(at(d, &["time", "created"])))
        .or(ns(ms(at(d, &["time", "start"]))))
        .or(ns(p.row_time))
        .or(fallback);
    let origin = b.origin(&p.file);
    b.t.add(NewEvent {
        id: Some(&p.id),
        parent: Parent::Index(parent),
        start,
        status: Status::Ok,
        origin,
        payload: PayloadRef::inline(super::drift_payload(d, &DRIFT_ENVELOPE)),
        ..NewEvent::new(EventKind::Other, ty)
    });
}

/// A message of a role OpenCode did not write before, with its parts: counted once as
/// skipped and, when it or a text part carries text, shown as a generic event of its role.
fn drift_message(b: &mut Builder, role: &str, m: MessageRec) {
    b.t.skipped.add(role);
    let part_text = || {
        m.parts
            .iter()
            .find_map(|p| {
                (str_of(&p.data, "type") == Some("text"))
                    .then(|| str_of(&p.data, "text"))
                    .flatten()
            })
            .filter(|t| !t.trim().is_empty())
    };
    let text = super::drift_text(&m.data).or_else(part_text).map(str::to_owned);
    let Some(text) = text else {
        return;
    };
    let mut payload = super::drift_payload(&m.data, &["id", "sessionID"]);
    payload.input = Some(Value::String(text));
    let origin = b.origin(&m.file);
    b.t.add(NewEvent {
        id: Some(&m.id),
        parent: Parent::Index(b.root),
        start: ns(ms(at(&m.data, &["time", "created"]))),
        status: Status::Ok,
        origin,
        payload: PayloadRef::inline(payload),
        ..NewEvent::new(EventKind::Other, role)
    });
}

/// A call's gist by OpenCode's tools (`packages/opencode/src/tool`): the command, the file
/// (`filePath`), the pattern, the URL or query, a task's description, the to-do in progress.
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    use super::gist::{first_arg, generic, key_or_generic, todos};
    let by = |keys: &[&str]| key_or_generic(name, input, keys);
    match name {
        "bash" => by(&["command"]),
        "read" | "write" | "edit" | "multiedit" | "patch" => by(&["filePath", "file_path", "path"]),
        "list" | "ls" => by(&["path"]),
        "glob" | "grep" => by(&["pattern"]),
        "webfetch" => by(&["url"]),
        "websearch" | "codesearch" => by(&["query"]),
        "task" => by(&["description", "prompt"]),
        "todowrite" => input
            .get("todos")
            .and_then(|t| todos(t, &["content"], "status"))
            .or_else(|| generic(name, input)),
        n if n.contains('_') && !n.starts_with("todo") => first_arg(input).or_else(|| generic(name, input)),
        _ => generic(name, input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::sqlite::{in_place_uri, open_guarded};
    use crate::formats::testing::outline;
    use serde_json::json;

    /// A storage dir written file by file: sessions under project `global`.
    struct Storage {
        dir: tempfile::TempDir,
    }

    impl Storage {
        fn new() -> Storage {
            let dir = tempfile::tempdir().unwrap();
            for d in ["session/global", "message", "part", "project"] {
                std::fs::create_dir_all(dir.path().join("storage").join(d)).unwrap();
            }
            Storage { dir }
        }
        fn root(&self) -> PathBuf {
            self.dir.path().join("storage")
        }
        fn write(&self, rel: &str, text: &str) -> PathBuf {
            let p = self.root().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
            p
        }
        fn session(&self, id: &str, v: Value) {
            self.write(&format!("session/global/{id}.json"), &v.to_string());
        }
        fn message(&self, sid: &str, mid: &str, v: Value) {
            self.write(&format!("message/{sid}/{mid}.json"), &v.to_string());
        }
        fn part(&self, mid: &str, pid: &str, v: Value) {
            self.write(&format!("part/{mid}/{pid}.json"), &v.to_string());
        }
    }

    fn tokens(input: u64, output: u64) -> Value {
        json!({"total": input + output, "input": input, "output": output, "reasoning": 0, "cache": {"read": 0, "write": 0}})
    }

    /// A parent session (prompt, one step with text + a completed and a failed tool call, a
    /// step with a task call) and the task's child session.
    fn two_sessions(st: &Storage) {
        st.session(
            "ses_b",
            json!({"id": "ses_b", "title": "Fix the tests", "directory": "/p", "version": "1.1.0",
                   "time": {"created": 1_000, "updated": 9_000}}),
        );
        st.session(
            "ses_a",
            json!({"id": "ses_a", "title": "child (@general subagent)", "parentID": "ses_b",
                   "time": {"created": 5_000, "updated": 6_000}}),
        );
        st.message(
            "ses_b",
            "msg_1",
            json!({"id": "msg_1", "role": "user", "time": {"created": 1_100}, "agent": "build"}),
        );
        st.part("msg_1", "prt_1", json!({"type": "text", "text": "fix it"}));
        st.message(
            "ses_b",
            "msg_2",
            json!({"id": "msg_2", "role": "assistant", "time": {"created": 1_200, "completed": 4_000},
                   "modelID": "m-1", "providerID": "p", "cost": 0.5, "tokens": tokens(100, 10)}),
        );
        st.part("msg_2", "prt_2a", json!({"type": "step-start"}));
        st.part(
            "msg_2",
            "prt_2b",
            json!({"type": "text", "text": "looking", "time": {"start": 1_300, "end": 1_400}}),
        );
        st.part(
            "msg_2",
            "prt_2c",
            json!({"type": "tool", "tool": "bash", "callID": "call_1",
                   "state": {"status": "completed", "input": {"command": "ls"}, "output": "a\n", "title": "ls",
                             "metadata": {"output": "a\n", "exit": 0}, "time": {"start": 1_500, "end": 1_700}}}),
        );
        st.part(
            "msg_2",
            "prt_2d",
            json!({"type": "tool", "tool": "read", "callID": "call_2",
                   "state": {"status": "error", "input": {"filePath": "x"}, "error": "File not found: x",
                             "time": {"start": 1_800, "end": 1_900}}}),
        );
        st.part(
            "msg_2",
            "prt_2e",
            json!({"type": "step-finish", "reason": "tool-calls", "cost": 0.25, "tokens": {"total": 110, "input": 100, "output": 10, "reasoning": 5, "cache": {"read": 1000, "write": 50}}}),
        );
        st.part("msg_2", "prt_2f", json!({"type": "step-start"}));
        st.part(
            "msg_2",
            "prt_2g",
            json!({"type": "tool", "tool": "task", "callID": "call_3",
                   "state": {"status": "completed", "input": {"prompt": "count"}, "output": "2 lines",
                             "title": "count", "metadata": {"sessionId": "ses_a"}, "time": {"start": 5_000, "end": 6_100}}}),
        );
        st.part(
            "msg_2",
            "prt_2h",
            json!({"type": "step-finish", "reason": "stop", "cost": 0.25, "tokens": tokens(200, 20)}),
        );
        st.part(
            "msg_2",
            "prt_2i",
            json!({"type": "patch", "hash": "abc", "files": ["a.rs"]}),
        );
        st.message(
            "ses_a",
            "msg_3",
            json!({"id": "msg_3", "role": "user", "time": {"created": 5_010}}),
        );
        st.part("msg_3", "prt_3", json!({"type": "text", "text": "count"}));
        st.message(
            "ses_a",
            "msg_4",
            json!({"id": "msg_4", "role": "assistant", "time": {"created": 5_020, "completed": 5_900}, "modelID": "m-2"}),
        );
        st.part("msg_4", "prt_4a", json!({"type": "step-start"}));
        st.part(
            "msg_4",
            "prt_4b",
            json!({"type": "reasoning", "text": "hmm", "time": {"start": 5_100, "end": 5_200}}),
        );
        st.part(
            "msg_4",
            "prt_4c",
            json!({"type": "text", "text": "2 lines", "time": {"start": 5_300, "end": 5_400}}),
        );
        st.part(
            "msg_4",
            "prt_4d",
            json!({"type": "step-finish", "reason": "stop", "cost": 0, "tokens": tokens(50, 5)}),
        );
    }

    fn by_id<'a>(l: &'a Loaded, id: &str) -> &'a Trace {
        l.traces.iter().find(|t| t.meta.id == id).unwrap()
    }

    #[test]
    fn storage_steps_tools_and_child_session() {
        let st = Storage::new();
        two_sessions(&st);
        for path in [st.root(), st.dir.path().to_path_buf()] {
            assert!(OpenCode.is_run_dir(&path), "{}", path.display());
            let l = OpenCode.load(&path).unwrap();
            // Ordered by creation (session ids sort newest first).
            let ids: Vec<&str> = l.traces.iter().map(|t| t.meta.id.as_str()).collect();
            assert_eq!(ids, ["ses_b", "ses_a"]);
            let t = by_id(&l, "ses_b");
            assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
            assert_eq!(
                outline(t),
                [
                    "run Fix the tests",
                    "  message user",
                    "  llm m-1",
                    "    message assistant",
                    "    tool bash",
                    "    tool read",
                    "  llm m-1",
                    "    tool task",
                    "    other patch",
                ]
            );
            let c = t.counts();
            assert_eq!((c.tool_calls, c.llm_calls, c.errors, c.tokens), (3, 2, 1, 330));
            assert_eq!(t.meta.status, RunStatus::Ok);
            assert_eq!(t.meta.model.as_deref(), Some("m-1"));
            assert_eq!(t.meta.start, Some(1_000_000_000));
            assert_eq!(t.meta.end, Some(9_000_000_000));
            assert!(t.meta.attributes.contains(&("cost".into(), json!(0.5))));
            let bash = t.find("call_1").unwrap();
            let e = t.event(bash);
            assert_eq!(
                (e.status, e.start.get(), e.duration.get()),
                (Status::Ok, Some(1_500_000_000), Some(200_000_000))
            );
            let p = crate::formats::payload(t, e);
            assert_eq!(p.input, Some(json!({"command": "ls"})));
            assert_eq!(p.output, Some(json!("a\n")));
            // Bash's metadata repeats the output: shown once.
            assert!(p.extra.contains(&("metadata".into(), json!({"exit": 0}))));
            let read = t.event(t.find("call_2").unwrap());
            assert_eq!(read.status, Status::Error);
            let p = crate::formats::payload(t, read);
            assert_eq!(p.error.unwrap().message, "File not found: x");
            // The first step starts with the message, ends with its last part.
            let llm = t.event(t.find("prt_2a").unwrap());
            assert_eq!(
                (llm.start.get(), llm.duration.get()),
                (Some(1_200_000_000), Some(700_000_000))
            );
            assert_eq!(llm.usage.get().unwrap().total, Some(110));
            // OpenCode's kinds as written, its cost of the step recorded.
            let u = llm.usage.get().unwrap();
            assert_eq!(
                (u.input, u.output, u.reasoning, u.cache_read, u.cache_write, u.cost),
                (Some(100), Some(10), Some(5), Some(1000), Some(50), Some(250_000))
            );
            let p = crate::formats::payload(t, llm);
            assert!(p.extra.contains(&("cost".into(), json!(0.25))));
            assert!(p.extra.contains(&("reason".into(), json!("tool-calls"))));
            // The last step ends with the message.
            let llm2 = t.event(t.find("prt_2f").unwrap());
            assert_eq!(llm2.start, Some(1_900_000_000));
            assert_eq!(llm2.duration, Some(4_200_000_000));
            // The raw record of a part is its file.
            assert!(t.files[e.origin.file as usize].ends_with("part/msg_2/prt_2c.json"));
            let child = by_id(&l, "ses_a");
            assert_eq!(
                outline(child),
                [
                    "run child (@general subagent)",
                    "  message user",
                    "  llm m-2",
                    "    other reasoning",
                    "    message assistant",
                ]
            );
            assert!(
                child
                    .meta
                    .attributes
                    .contains(&("parent session".into(), json!("ses_b")))
            );
        }
    }

    #[test]
    fn running_and_failed_sessions() {
        let st = Storage::new();
        st.session("ses_r", json!({"title": "running", "time": {"created": 1}}));
        st.message(
            "ses_r",
            "msg_1",
            json!({"role": "assistant", "time": {"created": 2}, "modelID": "m"}),
        );
        st.part("msg_1", "prt_1", json!({"type": "step-start"}));
        st.part(
            "msg_1",
            "prt_2",
            json!({"type": "tool", "tool": "bash", "callID": "c", "state": {"status": "running", "input": {}, "time": {"start": 3}}}),
        );
        st.session("ses_e", json!({"title": "failed", "time": {"created": 10}}));
        st.message(
            "ses_e",
            "msg_2",
            json!({"role": "assistant", "time": {"created": 11},
                   "error": {"name": "APIError", "data": {"message": "rate limited", "statusCode": 429}}}),
        );
        st.part("msg_2", "prt_3", json!({"type": "step-start"}));
        let l = OpenCode.load(&st.root()).unwrap();
        let r = by_id(&l, "ses_r");
        assert_eq!(r.meta.status, RunStatus::Running);
        assert_eq!(r.event(r.find("c").unwrap()).status, Status::Pending);
        assert_eq!(r.event(r.find("prt_1").unwrap()).status, Status::Pending);
        let e = by_id(&l, "ses_e");
        assert_eq!(e.meta.status, RunStatus::Error);
        assert_eq!(outline(e), ["run failed", "  llm assistant", "  error APIError"]);
        let err = e.event(e.find("msg_2").unwrap());
        let p = crate::formats::payload(e, err).error.unwrap();
        assert_eq!(
            (p.kind.as_deref(), p.message.as_str()),
            (Some("APIError"), "rate limited")
        );
        assert_eq!(e.event(e.find("prt_3").unwrap()).status, Status::Error);
        // ls: from the session file and the last message only.
        let sums = crate::formats::testing::summaries(&OpenCode, &st.root()).unwrap();
        let status: HashMap<&str, RunStatus> = sums.iter().map(|s| (s.id.as_str(), s.status)).collect();
        assert_eq!(status["ses_r"], RunStatus::Running);
        assert_eq!(status["ses_e"], RunStatus::Error);
        assert!(sums.iter().all(|s| s.events.is_none()));
    }

    #[test]
    fn damaged_storage_loads_the_rest() {
        let st = Storage::new();
        two_sessions(&st);
        // A part cut off mid-write, a message that is not JSON, a part with no type, a tool
        // part without state, one with a status never seen, a message without role.
        let cut = st.write("part/msg_2/prt_2z.json", r#"{"type": "tool", "tool": "ba"#);
        let bad = st.write("message/ses_b/msg_9.json", "not json");
        st.part("msg_4", "prt_4e", json!({"text": "no type"}));
        st.part(
            "msg_4",
            "prt_4f",
            json!({"type": "tool", "tool": "grep", "callID": "c9"}),
        );
        st.part(
            "msg_4",
            "prt_4g",
            json!({"type": "tool", "callID": "c10", "state": {"status": "exploded"}}),
        );
        st.message("ses_a", "msg_5", json!({"time": {"created": 5_950}}));
        // A session whose file is broken still shows its messages.
        st.write("session/global/ses_c.json", "{");
        st.message("ses_c", "msg_6", json!({"role": "user", "time": {"created": 20_000}}));
        let l = OpenCode.load(&st.root()).unwrap();
        assert_eq!(l.traces.len(), 3);
        let b = by_id(&l, "ses_b");
        assert_eq!(b.counts().tool_calls, 3);
        let msgs: Vec<String> = b.diagnostics.iter().map(|d| d.to_string()).collect();
        assert!(
            msgs.iter()
                .any(|m| m.contains(&*cut.to_string_lossy()) && m.contains("incomplete JSON")),
            "{msgs:?}"
        );
        assert!(
            msgs.iter()
                .any(|m| m.contains(&*bad.to_string_lossy()) && m.contains("invalid JSON")),
            "{msgs:?}"
        );
        let a = by_id(&l, "ses_a");
        let msgs: Vec<String> = a.diagnostics.iter().map(|d| d.message.clone()).collect();
        for want in [
            "without a type",
            "prt_4f has no state.status",
            "unknown state.status \"exploded\"",
            "no tool name",
            "has no role",
        ] {
            assert!(msgs.iter().any(|m| m.contains(want)), "{want}: {msgs:?}");
        }
        assert_eq!(a.counts().tool_calls, 2);
        assert_eq!(a.event(a.find("c10").unwrap()).status, Status::Unknown);
        let c = by_id(&l, "ses_c");
        assert_eq!(c.meta.name.as_deref(), Some("ses_c"));
        assert!(c.diagnostics.iter().any(|d| d.severity == Severity::Error));
    }

    /// OpenCode's tables, as far as tracetui reads them.
    const SCHEMA: &str = "
        CREATE TABLE `session` (`id` text PRIMARY KEY, `project_id` text NOT NULL, `parent_id` text,
          `slug` text NOT NULL, `directory` text NOT NULL, `title` text NOT NULL, `version` text NOT NULL,
          `cost` real DEFAULT 0 NOT NULL, `tokens_input` integer DEFAULT 0 NOT NULL,
          `tokens_output` integer DEFAULT 0 NOT NULL, `time_created` integer NOT NULL, `time_updated` integer NOT NULL);
        CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL, `data` text NOT NULL);
        CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
          `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
        CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);";

    /// A database in WAL mode whose writer stays open with automatic checkpoints off: what
    /// OpenCode leaves while it runs (and, in effect, after the CLI exits).
    fn live_db(dir: &Path) -> rusqlite::Connection {
        let c = rusqlite::Connection::open(dir.join("opencode.db")).unwrap();
        c.pragma_update(None, "journal_mode", "wal").unwrap();
        c.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        c.execute_batch(SCHEMA).unwrap();
        c.execute_batch(
            r#"
            INSERT INTO session VALUES ('ses_p', 'global', NULL, 's', '/p', 'parent', '1.18.0', 0.75, 300, 30, 1000, 9000);
            INSERT INTO session VALUES ('ses_c', 'global', 'ses_p', 's', '/p', 'child', '1.18.0', 0, 0, 0, 5000, 6000);
            INSERT INTO message VALUES ('msg_1', 'ses_p', 1100, 1100, '{"role":"user","time":{"created":1100}}');
            INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_p', 1100, 1100, '{"type":"text","text":"go"}');
            INSERT INTO message VALUES ('msg_2', 'ses_p', 1200, 4000,
              '{"role":"assistant","time":{"created":1200,"completed":4000},"modelID":"m","cost":0.75}');
            INSERT INTO part VALUES ('prt_2', 'msg_2', 'ses_p', 1300, 1300, '{"type":"step-start"}');
            INSERT INTO part VALUES ('prt_3', 'msg_2', 'ses_p', 1400, 1600,
              '{"type":"tool","tool":"task","callID":"call_1","state":{"status":"completed","input":{"prompt":"x"},"output":"done","title":"t","metadata":{"sessionId":"ses_c"},"time":{"start":1400,"end":1600}}}');
            INSERT INTO part VALUES ('prt_4', 'msg_2', 'ses_p', 1700, 1700,
              '{"type":"step-finish","reason":"stop","cost":0.75,"tokens":{"input":300,"output":30,"reasoning":0,"cache":{"read":0,"write":0}}}');
            INSERT INTO message VALUES ('msg_3', 'ses_c', 5100, 5100, '{"role":"user","time":{"created":5100}}');
            INSERT INTO part VALUES ('prt_5', 'msg_3', 'ses_c', 5100, 5100, '{"type":"text","text":"x"}');
            "#,
        )
        .unwrap();
        c
    }

    fn listing(dir: &Path) -> Vec<(String, u64, Option<std::time::SystemTime>)> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| {
                let m = e.metadata().unwrap();
                (e.file_name().to_string_lossy().into_owned(), m.len(), m.modified().ok())
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_live_database_is_read_with_its_wal_and_left_untouched() {
        let d = tempfile::tempdir().unwrap();
        // OpenCode is another process: in this one, SQLite would share the writer's mapping
        // of the index with the reader, which then writes it as the writer may.
        let mut writer = Writer::spawn(d.path());
        let db = d.path().join("opencode.db");
        // The data is in the WAL only: the main file alone has no sessions.
        let main_only = rusqlite::Connection::open_with_flags(
            format!("file:{}?immutable=1", db.display()),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
        )
        .unwrap();
        assert!(
            main_only
                .query_row("SELECT count(*) FROM session", [], |r| r.get::<_, i64>(0))
                .is_err()
        );
        drop(main_only);
        // Read where it lies: its WAL and index are there, so no copy is made.
        assert!(in_place_uri(&db).is_some_and(|u| u.ends_with("mode=ro&readonly_shm=1")));
        let before = listing(d.path());
        let bytes = |p: &Path| {
            let mut v: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(p)
                .unwrap()
                .flatten()
                .map(|e| (e.path(), std::fs::read(e.path()).unwrap()))
                .collect();
            v.sort();
            v
        };
        let bytes_before = bytes(d.path());
        for path in [db.clone(), d.path().to_path_buf()] {
            let probe = Probe::open(&path).unwrap();
            assert_eq!(OpenCode.detect(&probe), 100);
            let l = OpenCode.load(&path).unwrap();
            assert_eq!(l.traces.len(), 2);
            let p = by_id(&l, "ses_p");
            assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
            assert_eq!(outline(p), ["run parent", "  message user", "  llm m", "    tool task"]);
            // Step times come from the part rows.
            let llm = p.event(p.find("prt_2").unwrap());
            assert_eq!(
                (llm.start.get(), llm.duration.get()),
                (Some(1_300_000_000), Some(400_000_000))
            );
            assert_eq!(llm.usage.get().unwrap().total, Some(330));
            assert_eq!(p.meta.status, RunStatus::Ok);
            let sums = crate::formats::testing::summaries(&OpenCode, &path).unwrap();
            assert_eq!(sums.len(), 2);
            assert_eq!(sums[0].tokens, Some(330));
            assert_eq!(sums[0].status, RunStatus::Ok);
            // The child's last message is the prompt: its reply is still to come.
            assert_eq!(sums[1].status, RunStatus::Running);
        }
        // Nothing was created, removed, or written beside the database, its index included.
        assert_eq!(listing(d.path()), before);
        for ((p, a), (_, b)) in bytes(d.path()).iter().zip(&bytes_before) {
            let at = a.iter().zip(b).position(|(x, y)| x != y);
            assert!(a == b, "{} changed at byte {at:?}", p.display());
        }
        // And the writer goes on undisturbed.
        writer.say("INSERT INTO message VALUES ('msg_9', 'ses_c', 5200, 5200, '{\"role\":\"assistant\",\"time\":{\"created\":5200}}')");
        let l = OpenCode.load(&db).unwrap();
        assert_eq!(by_id(&l, "ses_c").meta.status, RunStatus::Running);
    }

    /// A writer in another process (this test binary, running [`writer_process`]): it makes
    /// the live database in `dir`, then runs each line it is sent as SQL, answering `ok`.
    struct Writer {
        child: std::process::Child,
        out: std::io::BufReader<std::process::ChildStdout>,
    }

    impl Writer {
        fn spawn(dir: &Path) -> Writer {
            let mut child = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "formats::opencode::tests::writer_process",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("TRACETUI_TEST_WRITER_DIR", dir)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let out = std::io::BufReader::new(child.stdout.take().unwrap());
            let mut w = Writer { child, out };
            w.wait_ok();
            w
        }

        fn wait_ok(&mut self) {
            use std::io::BufRead;
            let mut l = String::new();
            loop {
                l.clear();
                assert!(self.out.read_line(&mut l).unwrap() > 0, "the writer ended");
                // libtest may print its "test … … " before it on the same line.
                if l.trim_end().ends_with("WRITER ok") {
                    return;
                }
            }
        }

        fn say(&mut self, sql: &str) {
            use std::io::Write;
            writeln!(self.child.stdin.as_mut().unwrap(), "{sql}").unwrap();
            self.wait_ok();
        }
    }

    impl Drop for Writer {
        fn drop(&mut self) {
            drop(self.child.stdin.take());
            let _ = self.child.wait();
        }
    }

    #[test]
    #[ignore = "the writer process of a_live_database_is_read_with_its_wal_and_left_untouched"]
    fn writer_process() {
        use std::io::BufRead;
        let Some(dir) = std::env::var_os("TRACETUI_TEST_WRITER_DIR") else {
            return;
        };
        let c = live_db(Path::new(&dir));
        println!("WRITER ok");
        for l in std::io::stdin().lock().lines() {
            c.execute_batch(&l.unwrap()).unwrap();
            println!("WRITER ok");
        }
    }

    /// Issue 37: a 32 KB database whose `session` is a recursive view made `check` run for
    /// ever while SQLite's sorter filled the disk. The tables read must be tables, and any
    /// query runs under a budget.
    #[test]
    fn a_hostile_database_is_refused_quickly_and_the_rest_still_loads() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("opencode.db");
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE message (id, session_id, time_created, time_updated, data);
             CREATE TABLE part (id, message_id, session_id, time_created, time_updated, data);
             CREATE VIEW session AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r)
               SELECT printf('ses_%d', n) AS id, n AS time_created, zeroblob(100000) AS title FROM r;",
        )
        .unwrap();
        drop(c);
        let e = OpenCode.load(&db).unwrap_err().to_string();
        assert!(e.contains("`session` is a view, not a table"), "{e}");
        assert!(OpenCode.summarize(&db).is_err());
        // The budget stops a query that would run for ever, whatever the schema.
        let conn = open_guarded(&in_place_uri(&db).unwrap(), &db, 32 << 10).unwrap();
        let e = conn
            .query_row(
                "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap_err();
        let e = sql_err(&db, "sessions", e).to_string();
        assert!(e.contains("took more work than a database of its size can need"), "{e}");
        // Beside it, a good database in another data dir loads.
        let good = tempfile::tempdir().unwrap();
        let _w = live_db(good.path());
        let d = crate::source::discover(&[d.path().to_path_buf(), good.path().to_path_buf()], None);
        let loaded: Vec<_> = d.runs.iter().map(|r| r.load().map(|l| l.traces.len())).collect();
        assert!(
            loaded.iter().any(|l| l.is_err()) && loaded.iter().any(|l| l.as_ref().is_ok_and(|&n| n == 2)),
            "{loaded:?}"
        );
    }

    /// A WAL without its index: SQLite would have to create the index beside the database,
    /// so a private copy is read (and nothing is written beside the database).
    #[test]
    fn a_wal_without_its_index_is_read_from_a_copy() {
        let d = tempfile::tempdir().unwrap();
        let writer = live_db(d.path());
        let other = tempfile::tempdir().unwrap();
        for f in ["opencode.db", "opencode.db-wal"] {
            std::fs::copy(d.path().join(f), other.path().join(f)).unwrap();
        }
        drop(writer);
        let db = other.path().join("opencode.db");
        assert_eq!(in_place_uri(&db), None);
        let before = listing(other.path());
        let l = OpenCode.load(&db).unwrap();
        assert_eq!(l.traces.len(), 2);
        assert_eq!(listing(other.path()), before);
    }

    #[test]
    fn damaged_database_rows_are_diagnosed() {
        let d = tempfile::tempdir().unwrap();
        let c = live_db(d.path());
        c.execute_batch(
            r#"
            INSERT INTO part VALUES ('prt_8', 'msg_2', 'ses_p', 1650, 1650, '{"type":"text","te');
            INSERT INTO part VALUES ('prt_9', 'msg_nope', 'ses_p', 1650, 1650, '{"type":"text"}');
            INSERT INTO message VALUES ('msg_8', 'ses_nope', 1, 1, '{"role":"user"}');
            INSERT INTO message VALUES ('msg_7', 'ses_p', 1150, 1150, '[1]');
            INSERT INTO part VALUES ('prt_7', 'msg_1', 'ses_zz', 1650, 1650, '{"type":"text","text":"late"}');
            "#,
        )
        .unwrap();
        let l = OpenCode.load(&d.path().join("opencode.db")).unwrap();
        let p = by_id(&l, "ses_p");
        assert_eq!(p.counts().tool_calls, 1);
        let msgs: Vec<String> = p.diagnostics.iter().map(|d| d.message.clone()).collect();
        for want in [
            "part prt_8: incomplete JSON",
            "part prt_9 of unknown message",
            "message msg_8 of unknown session",
            "message msg_7: data is not a JSON object",
            "part prt_7 is filed under another session than its message msg_1",
        ] {
            assert!(msgs.iter().any(|m| m.contains(want)), "{want}: {msgs:?}");
        }
    }

    #[test]
    fn other_sqlite_files_and_garbage_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let other = d.path().join("places.sqlite");
        rusqlite::Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE moz_places (id integer); INSERT INTO moz_places VALUES (1);")
            .unwrap();
        assert_eq!(OpenCode.detect(&Probe::open(&other).unwrap()), 0);
        let e = OpenCode.load(&other).unwrap_err().to_string();
        assert!(e.contains("without OpenCode's tables"), "{e}");
        let junk = d.path().join("opencode.db");
        std::fs::write(&junk, b"SQLite format 3\0 and then nothing").unwrap();
        let e = OpenCode.load(&junk).unwrap_err().to_string();
        assert!(e.contains("opencode.db"), "{e}");
        let text = d.path().join("notes.db");
        std::fs::write(&text, b"hello").unwrap();
        assert_eq!(OpenCode.detect(&Probe::open(&text).unwrap()), 0);
        assert!(matches!(OpenCode.load(&text), Err(LoadError::NotATrace { .. })));
        // A directory that is neither a data dir nor storage.
        assert!(!OpenCode.is_run_dir(d.path().parent().unwrap()));
    }

    #[test]
    fn a_data_dir_reads_the_database_then_storage_it_lacks() {
        let st = Storage::new();
        two_sessions(&st);
        // ses_b was migrated into the database; ses_a was not.
        let c = rusqlite::Connection::open(st.dir.path().join("opencode.db")).unwrap();
        c.execute_batch(SCHEMA).unwrap();
        c.execute(
            "INSERT INTO session VALUES ('ses_b', 'global', NULL, 's', '/p', 'from the db', '1.2', 0, 0, 0, 1000, 9000)",
            [],
        )
        .unwrap();
        drop(c);
        let l = OpenCode.load(st.dir.path()).unwrap();
        let names: Vec<_> = l
            .traces
            .iter()
            .map(|t| (t.meta.id.as_str(), t.meta.name.as_deref().unwrap()))
            .collect();
        assert_eq!(
            names,
            [("ses_b", "from the db"), ("ses_a", "child (@general subagent)")]
        );
        let sums = crate::formats::testing::summaries(&OpenCode, st.dir.path()).unwrap();
        assert_eq!(sums.len(), 2);
    }

    fn fixture(name: &str) -> PathBuf {
        crate::formats::testing::fixture("opencode", name)
    }

    #[test]
    fn a_session_file_named_otherwise_than_its_id_is_that_session() {
        // The session file keeps an older name; so does the assistant's message file, whose
        // parts are filed under the id inside it (OpenCode's storage migration does both).
        let dir = fixture("renamed/storage");
        let l = OpenCode.load(&dir).unwrap();
        assert_eq!(
            l.traces.len(),
            1,
            "{:?}",
            l.traces.iter().map(|t| &t.meta.id).collect::<Vec<_>>()
        );
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.id, "ses_2d7a91c4bffeKx7Pq2Lm9Rt4Wz");
        assert_eq!(
            outline(t),
            [
                "run Why does /health return 503?",
                "  message user",
                "  llm claude-sonnet-4-5",
                "    tool bash",
                "    message assistant",
            ]
        );
        let c = t.counts();
        assert_eq!((c.tool_calls, c.llm_calls, c.errors, c.tokens), (1, 1, 0, 4360));
        assert_eq!(t.meta.status, RunStatus::Ok);
        let sums = crate::formats::testing::summaries(&OpenCode, &dir).unwrap();
        assert_eq!(sums.len(), 1);
        assert_eq!(
            (sums[0].id.as_str(), sums[0].status),
            ("ses_2d7a91c4bffeKx7Pq2Lm9Rt4Wz", RunStatus::Ok)
        );
        // Messages filed under the file's name (not the id inside) are its messages too, and
        // of two files with one id the one named after it is read.
        let st = Storage::new();
        st.session(
            "ses_old",
            json!({"id": "ses_new", "title": "renamed", "time": {"created": 1}}),
        );
        st.session(
            "ses_new",
            json!({"id": "ses_new", "title": "own name", "time": {"created": 1}}),
        );
        st.message("ses_old", "msg_1", json!({"role": "user", "time": {"created": 2}}));
        st.message("ses_new", "msg_2", json!({"role": "user", "time": {"created": 3}}));
        let l = OpenCode.load(&st.root()).unwrap();
        assert_eq!(l.traces.len(), 1);
        let t = &l.traces[0];
        assert_eq!(
            (t.meta.id.as_str(), t.meta.name.as_deref()),
            ("ses_new", Some("own name"))
        );
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(outline(t), ["run own name", "  message user", "  message user"]);
    }

    #[test]
    fn unknown_parts_and_roles_are_counted_quietly_and_shown_when_they_carry_text() {
        let l = OpenCode.load(&fixture("drift/storage")).unwrap();
        let t = &l.traces[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let mut skipped: Vec<(String, u64)> = t.skipped.iter().map(|(k, n)| (k.to_string(), n)).collect();
        skipped.sort();
        assert_eq!(
            skipped,
            [
                ("citation".to_string(), 1),
                ("context-pin".to_string(), 1),
                ("notice".to_string(), 1)
            ]
        );
        assert_eq!(
            outline(t),
            [
                "run Bump the lockfile",
                "  message user",
                "  other notice",
                "  llm gpt-5",
                "    other reasoning",
                "    tool bash",
                "    other citation",
                "    message assistant",
            ]
        );
        let c = t.counts();
        assert_eq!((c.tool_calls, c.llm_calls, c.errors, c.tokens), (1, 1, 0, 9648));
        assert_eq!(t.meta.status, RunStatus::Ok);
        let notice = crate::formats::payload(t, t.event(t.find("msg_d3b0c1a30001Mn4Bv6Cx8Zl1Kj").unwrap()));
        assert_eq!(notice.input, Some(json!("Auto-compaction is on for this session.")));
        let cite = crate::formats::payload(t, t.event(t.find("prt_d3b0c1a40104Mn4Bv6Cx8Zl1Kj").unwrap()));
        assert_eq!(cite.input, Some(json!("npm docs: package-lock-only")));
        assert_eq!(
            cite.extra,
            vec![(
                "record".to_string(),
                json!({"type": "citation", "text": "npm docs: package-lock-only",
                       "url": "https://docs.npmjs.com/cli/v10/commands/npm-update", "time": {"start": 1798900007500_i64}})
            )]
        );
        // A message of an unknown role last: the status is the last known message's.
        let st = Storage::new();
        st.session("ses_x", json!({"title": "x", "time": {"created": 1}}));
        st.message(
            "ses_x",
            "msg_1",
            json!({"role": "assistant", "time": {"created": 2, "completed": 3}}),
        );
        st.message("ses_x", "msg_2", json!({"role": "hint", "time": {"created": 4}}));
        assert_eq!(OpenCode.load(&st.root()).unwrap().traces[0].meta.status, RunStatus::Ok);
        assert_eq!(
            crate::formats::testing::summaries(&OpenCode, &st.root()).unwrap()[0].status,
            RunStatus::Ok
        );
    }

    /// Drift in a storage dir: an unknown field in about a third of its records; beside about
    /// a quarter of the part files a part of a type OpenCode does not write yet, and beside
    /// some message files a message of a role it does not write (sometimes with a text part).
    /// Returns the parts and messages added.
    fn drift_storage(f: &Path, rng: &mut crate::formats::testing::Rng) -> usize {
        use crate::formats::testing::Rng;
        fn hex(rng: &mut Rng) -> String {
            format!("{:012x}{:014x}", rng.next() >> 16, rng.next() >> 8)
        }
        let Some(dir) = f.parent() else { return 0 };
        let kind = dir
            .parent()
            .and_then(|d| d.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("");
        if f.extension().is_none_or(|x| x != "json") || !["part", "message", "session"].contains(&kind) {
            return 0;
        }
        let Ok(mut v) = serde_json::from_str::<Value>(&std::fs::read_to_string(f).unwrap()) else {
            return 0;
        };
        if rng.one_in(3)
            && let Some(o) = v.as_object_mut()
        {
            o.insert(rng.type_name(), rng.value());
            std::fs::write(f, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        }
        let sid = v.get("sessionID").cloned().unwrap_or(Value::Null);
        let mut added = 0;
        // Beside the parts of messages of the roles OpenCode writes: a message of another
        // role is drift whole, its parts with it.
        let role_known = || {
            let (Some(sid), Some(mid)) = (str_of(&v, "sessionID"), str_of(&v, "messageID")) else {
                return false;
            };
            let m = dir
                .parent()
                .unwrap()
                .parent()
                .unwrap()
                .join("message")
                .join(sid)
                .join(format!("{mid}.json"));
            std::fs::read(m)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .is_some_and(|m| str_of(&m, "role").is_some_and(is_known_role))
        };
        if kind == "part" && rng.one_in(4) && role_known() {
            let id = format!("prt_{}", hex(rng));
            let mut p = json!({"id": id, "sessionID": sid, "messageID": v.get("messageID"), "type": rng.type_name()});
            if let Some(t) = rng.maybe_text() {
                p["text"] = json!(t);
            }
            if rng.one_in(2) {
                p["time"] = json!({"start": 1 + rng.below(1 << 40)});
            }
            std::fs::write(dir.join(format!("{id}.json")), p.to_string()).unwrap();
            added += 1;
        }
        if kind == "message" && rng.one_in(5) {
            let id = format!("msg_{}", hex(rng));
            let m = json!({"id": id, "sessionID": sid, "role": rng.type_name(), "time": {"created": 1 + rng.below(1 << 40)}});
            std::fs::write(dir.join(format!("{id}.json")), m.to_string()).unwrap();
            if let Some(t) = rng.maybe_text() {
                let parts = dir.parent().unwrap().parent().unwrap().join("part").join(&id);
                std::fs::create_dir_all(&parts).unwrap();
                let p = json!({"id": format!("prt_{}", hex(rng)), "sessionID": sid, "messageID": id, "type": "text", "text": t});
                std::fs::write(parts.join("prt_1.json"), p.to_string()).unwrap();
            }
            added += 1;
        }
        added
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
        /// The drift rule (formats/mod.rs) on the JSON storage of our fixtures, the sample and
        /// the corpus (its database is left out: a copy of it alone, without its WAL, is not
        /// the same database).
        #[test]
        fn drift_is_skipped_quietly(seed in proptest::prelude::any::<u64>()) {
            let mut sources = crate::formats::testing::drift_sources(
                "opencode",
                &[
                    "tests/fixtures/opencode/renamed/storage",
                    "tests/fixtures/opencode/drift/storage",
                    "sample-traces/opencode/storage",
                ],
            );
            sources.retain(|p| p.is_dir());
            crate::formats::testing::drift_check(&sources, seed, &drift_storage);
        }
    }

    #[test]
    fn the_sample_loads() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/opencode");
        assert!(OpenCode.is_run_dir(&dir));
        let l = OpenCode.load(&dir).unwrap();
        assert_eq!(l.traces.len(), 2);
        for t in &l.traces {
            assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        }
        let c: Vec<_> = l.traces.iter().map(|t| t.counts().tool_calls).collect();
        assert_eq!(c, [3, 1]);
    }
}

#[cfg(test)]
mod gist_tests {
    use super::*;
    use serde_json::json;

    fn g(name: &str, input: Value) -> Option<String> {
        OpenCode.gist(name, &input)
    }

    #[test]
    fn each_tool_says_what_it_did() {
        // A `tool` part's `state.input`.
        assert_eq!(
            g("bash", json!({"command": "ls -la", "description": "List files"})).as_deref(),
            Some("ls -la")
        );
        assert_eq!(
            g("read", json!({"filePath": "/p/missing.md"})).as_deref(),
            Some("/p/missing.md")
        );
        let w = json!({"filePath": "/p/notes.md", "content": "# Notes\nhello\n"});
        assert_eq!(g("write", w).as_deref(), Some("/p/notes.md"));
        let e = json!({"filePath": "/p/a.ts", "oldString": "a", "newString": "b"});
        assert_eq!(g("edit", e).as_deref(), Some("/p/a.ts"));
        assert_eq!(
            g("grep", json!({"pattern": "TODO", "include": "*.ts"})).as_deref(),
            Some("TODO")
        );
        assert_eq!(
            g("webfetch", json!({"url": "https://x.dev", "format": "markdown"})).as_deref(),
            Some("https://x.dev")
        );
        let t = json!({"description": "Count lines", "prompt": "SUBTASK-7", "subagent_type": "general"});
        assert_eq!(g("task", t).as_deref(), Some("Count lines"));
        let todo = json!({"todos": [{"content": "Plan", "status": "in_progress", "id": "1", "priority": "high"}]});
        assert_eq!(g("todowrite", todo).as_deref(), Some("0/1 done · Plan"));
        // MCP tools are `<server>_<tool>`: their first argument.
        assert_eq!(
            g("github_get_issue", json!({"issue": 7, "repo": "a/b"})).as_deref(),
            Some("7")
        );
    }
}
