//! SQLite databases of agents (OpenCode's `opencode.db`, Zed's `threads.db`, ...), read where
//! they lie, read-only, with nothing written beside them, under the same guards for every
//! format that reads one.
//!
//! An agent keeps its database in WAL mode and, while it runs, most of the data may be in the
//! `-wal` file. With a WAL and its index (`-shm`), SQLite reads both, opening the index
//! read-only (`readonly_shm`: a reader that may not write the index keeps its own copy of it);
//! with no WAL (or an empty one) the main file is the database, read `immutable` (no lock, no
//! index). Only a WAL without its index or a hot rollback journal (SQLite would have to write
//! beside the database to read it) makes a private copy, bounded by the free space and never
//! left behind (see `copy_and_open`).
//!
//! A database is a file from outside: the tables read must be tables (a recursive view named
//! like one ran for ever while SQLite's sorter filled the disk), every query runs under an
//! instruction budget proportional to the files' size, temporary storage is in memory and
//! SQLite's memory is capped. What exceeds them is an error naming the database; the other
//! sources still load.

use super::LoadError;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

pub const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";
/// How many times a database that changed while it was copied is copied again.
const COPY_TRIES: usize = 3;

/// Whose database it is: the format reading it, the agent's name for messages, and the tables
/// it reads (which must be tables).
pub struct Kind {
    pub format: &'static str,
    pub agent: &'static str,
    pub tables: &'static [&'static str],
}

pub fn sqlite_value(v: rusqlite::types::ValueRef<'_>) -> Value {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::String(format!("<{} bytes>", b.len())),
    }
}

/// (size, modification time) of a file, `None` when it does not exist.
pub fn stamp(p: &Path) -> Option<(u64, Option<std::time::SystemTime>)> {
    std::fs::metadata(p).ok().map(|m| (m.len(), m.modified().ok()))
}

pub fn sidecar(db: &Path, suffix: &str) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The database, opened read-only: in place whenever SQLite can read it there without
/// writing anything beside it, else (rarely) a private copy.
pub struct DbCopy {
    pub conn: rusqlite::Connection,
    /// The database changed during every copy: what was read may mix two moments.
    pub unsettled: bool,
}

/// How a database is opened where it lies.
pub fn in_place_uri(db: &Path) -> Option<String> {
    let len = |s: &str| std::fs::symlink_metadata(sidecar(db, s)).ok().map(|m| m.len());
    if len("-journal").is_some_and(|n| n > 0) {
        // A hot rollback journal (a crash in DELETE mode): only a writer may roll it back.
        return None;
    }
    let params = match len("-wal") {
        // No WAL, or an empty one: the main file is the whole database, read with no lock
        // and no shared memory (`immutable`).
        None | Some(0) => "mode=ro&immutable=1",
        // A WAL and its shared-memory index (the agent running, or exited without closing):
        // SQLite reads the WAL itself and opens the index read-only (`readonly_shm`), never
        // writing it; readers do not hold up the agent's writes in WAL mode.
        Some(_) if len("-shm").is_some() => "mode=ro&readonly_shm=1",
        // A WAL without its index: SQLite would have to create the index beside it.
        Some(_) => return None,
    };
    Some(format!("file:{}?{params}", uri_path(db)))
}

/// A path as the path of an SQLite URI: `%`, `?` and `#` escaped (and a relative path made
/// absolute, so that `file:` reads it as a path).
fn uri_path(db: &Path) -> String {
    let abs = std::path::absolute(db).unwrap_or_else(|_| db.to_path_buf());
    let mut out = String::new();
    for b in abs.as_os_str().as_encoded_bytes() {
        match b {
            b'%' | b'?' | b'#' => out.push_str(&format!("%{b:02X}")),
            0x21..=0x7e => out.push(*b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Limits a database (a file from outside) is read under: a query runs at most this many
/// SQLite instructions per byte of the files, on top of [`BUDGET_BASE`] (a recursive view
/// in a 32 KB file ran for ever while its sorter filled the disk); temporary storage is in
/// memory, and SQLite's memory as a whole is capped ([`HEAP_LIMIT`]).
const BUDGET_PER_BYTE: u64 = 2_000;
const BUDGET_BASE: u64 = 200_000_000;
const HEAP_LIMIT: i64 = 1 << 30;
/// The instructions between two checks of the budget.
const BUDGET_STEP: i32 = 10_000;

/// Open and guard: read-only, no trusted schema, temp storage in memory, a budget.
pub fn open_guarded(uri: &str, db: &Path, bytes: u64) -> Result<rusqlite::Connection, LoadError> {
    use rusqlite::OpenFlags;
    static HEAP: std::sync::Once = std::sync::Once::new();
    // SAFETY: sets a process-wide limit; callable at any time from any thread.
    HEAP.call_once(|| unsafe {
        rusqlite::ffi::sqlite3_hard_heap_limit64(HEAP_LIMIT);
    });
    let mut conn = rusqlite::Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
    )
    .map_err(|e| LoadError::invalid(db, format!("cannot open the database: {e}")))?;
    // A database is data: its schema may not call functions with side effects.
    let _ = conn.pragma_update(None, "trusted_schema", false);
    let _ = conn.pragma_update(None, "query_only", true);
    let _ = conn.pragma_update(None, "temp_store", "MEMORY");
    let budget = (BUDGET_BASE + bytes.saturating_mul(BUDGET_PER_BYTE)) / BUDGET_STEP as u64;
    let mut spent = 0u64;
    let _ = conn.progress_handler(
        BUDGET_STEP,
        Some(move || {
            spent += 1;
            spent > budget
        }),
    );
    Ok(conn)
}

/// The tables read must be tables: a view (or anything else) of one of their names is a
/// database made to look like the agent's, refused.
fn check_tables(conn: &rusqlite::Connection, db: &Path, kind: &Kind) -> Result<(), LoadError> {
    let mut st = conn
        .prepare("SELECT name, type FROM sqlite_schema")
        .map_err(|e| sql_err(db, kind, "schema", e))?;
    let found: Vec<(String, String)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect())
        .map_err(|e| sql_err(db, kind, "schema", e))?;
    if let Some((name, ty)) = found
        .iter()
        .find(|(n, t)| t != "table" && kind.tables.iter().any(|k| k.eq_ignore_ascii_case(n)))
    {
        return Err(LoadError::invalid(
            db,
            format!(
                "`{name}` is a {ty}, not a table: not {} database; refused",
                kind.agent_a()
            ),
        ));
    }
    Ok(())
}

impl Kind {
    /// "an OpenCode", "a Zed".
    fn agent_a(&self) -> String {
        let vowel = self.agent.starts_with(['A', 'E', 'I', 'O', 'U']);
        format!("{} {}", if vowel { "an" } else { "a" }, self.agent)
    }
}

/// The database opened read-only and guarded ([`open_guarded`], [`check_tables`]): in place
/// when SQLite can read it there without writing beside it, else from a private copy.
pub fn open(db: &Path, kind: &Kind) -> Result<DbCopy, LoadError> {
    use std::io::Read;
    let mut head = [0u8; 16];
    let n = super::open_regular(db)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| LoadError::io(db, e))?;
    if head[..n] != *SQLITE_MAGIC {
        return Err(LoadError::NotATrace {
            path: db.to_path_buf(),
            reason: "not an SQLite database".into(),
            tried: kind.format.into(),
        });
    }
    let bytes = ["", "-wal", "-journal"]
        .iter()
        .filter_map(|s| stamp(&sidecar(db, s)))
        .map(|(n, _)| n)
        .fold(0u64, u64::saturating_add);
    if let Some(uri) = in_place_uri(db)
        && let Ok(conn) = open_guarded(&uri, db, bytes)
        // The first read opens the WAL and its index: what fails there falls back to a copy.
        && conn
            .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get::<_, i64>(0))
            .is_ok()
    {
        check_tables(&conn, db, kind)?;
        return Ok(DbCopy { conn, unsettled: false });
    }
    copy_and_open(db, bytes, kind)
}

/// The database and its WAL or journal copied into a private temporary directory and opened
/// there (SQLite rebuilds the WAL index, or rolls the journal back, in the copy). Bounded: it
/// is refused when the temporary directory has not room for it and a margin. The copies'
/// names are removed once the connection has opened them (it keeps them open), so that no
/// exit, a signal's included, leaves them behind after that; before, a copy being made is an
/// unnamed file (`O_TMPFILE`, where the file system has it) given its name once whole.
pub fn copy_and_open(db: &Path, bytes: u64, kind: &Kind) -> Result<DbCopy, LoadError> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("tracetui-{}-", kind.format))
        .tempdir()
        .map_err(|e| {
            LoadError::invalid(
                db,
                format!("cannot make a temporary directory for a copy of the database: {e}"),
            )
        })?;
    if let Some(free) = free_bytes(dir.path())
        && free < bytes.saturating_add(bytes / 4).saturating_add(256 << 20)
    {
        return Err(LoadError::invalid(
            db,
            format!(
                "the database must be copied to be read ({} MiB with its WAL), and {} has {} MiB free; not read",
                bytes >> 20,
                dir.path().display(),
                free >> 20
            ),
        ));
    }
    let copy = dir.path().join("copy.db");
    // The WAL, or the rollback journal of a database left in DELETE mode by a crash (SQLite
    // rolls the copy back with it).
    let sides = ["-wal", "-journal"].map(|s| (sidecar(db, s), sidecar(&copy, s)));
    let stamps = || (stamp(db), sides.each_ref().map(|(p, _)| stamp(p)));
    let mut unsettled = true;
    for _ in 0..COPY_TRIES {
        let before = stamps();
        copy_file(db, &copy).map_err(|e| LoadError::io(db, e))?;
        for (side, side_copy) in &sides {
            let _ = std::fs::remove_file(side_copy);
            match copy_file(side, side_copy) {
                Ok(()) => {}
                // None (checkpointed and removed, or never there): the file is whole.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LoadError::io(side, e)),
            }
        }
        if stamps() == before {
            unsettled = false;
            break;
        }
    }
    use rusqlite::OpenFlags;
    // Read-write on our own copy: SQLite may need to rebuild the WAL index beside it.
    let conn = rusqlite::Connection::open_with_flags(
        &copy,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
    )
    .map_err(|e| LoadError::invalid(db, format!("cannot open the database: {e}")))?;
    // The first read opens the WAL and the index (and rolls a journal back); then the names go.
    let first = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get::<_, i64>(0));
    drop(conn);
    // Our own copy, which nothing else writes: read with no lock and no index beside it.
    let uri = format!("file:{}?mode=ro&immutable=1", uri_path(&copy));
    let conn = match first {
        Ok(_) => open_guarded(&uri, db, bytes)?,
        Err(e) => return Err(LoadError::invalid(db, format!("cannot read the database: {e}"))),
    };
    conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get::<_, i64>(0))
        .map_err(|e| LoadError::invalid(db, format!("cannot read the database: {e}")))?;
    drop(dir);
    check_tables(&conn, db, kind)?;
    Ok(DbCopy { conn, unsettled })
}

/// Copy `from` to `to`: into an unnamed file named once whole where the system can, so that
/// an exit in the middle leaves nothing.
fn copy_file(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut src = super::open_regular(from)?;
    let _ = std::fs::remove_file(to);
    #[cfg(target_os = "linux")]
    if let Some(parent) = to.parent()
        && let Ok(mut tmp) = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_TMPFILE)
                .mode(0o600)
                .open(parent)
        }
    {
        use std::os::fd::AsRawFd;
        std::io::copy(&mut src, &mut tmp)?;
        let proc =
            std::ffi::CString::new(format!("/proc/self/fd/{}", tmp.as_raw_fd())).map_err(std::io::Error::other)?;
        let dest = std::ffi::CString::new(to.as_os_str().as_encoded_bytes()).map_err(std::io::Error::other)?;
        // SAFETY: both are valid NUL-terminated paths for the duration of the call.
        let r = unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                proc.as_ptr(),
                libc::AT_FDCWD,
                dest.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        };
        if r == 0 {
            return Ok(());
        }
    }
    let mut dst = std::fs::File::create(to)?;
    std::io::copy(&mut src, &mut dst)?;
    Ok(())
}

/// Free bytes for an unprivileged user in the file system of `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid path and `st` a valid out-pointer.
    (unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// A query's error as a load error naming the database: the budget and memory limits said as
/// such, a missing table as not the agent's database.
pub fn sql_err(db: &Path, kind: &Kind, what: &str, e: rusqlite::Error) -> LoadError {
    let msg = e.to_string();
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) {
        return LoadError::invalid(
            db,
            format!(
                "reading the {what} took more work than a database of its size can need; stopped (a damaged or hostile database?)"
            ),
        );
    }
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OutOfMemory) {
        return LoadError::invalid(
            db,
            format!("reading the {what} took more memory than tracetui gives a database; stopped"),
        );
    }
    if msg.contains("no such table") {
        return LoadError::NotATrace {
            path: db.to_path_buf(),
            reason: format!("an SQLite database without {}'s tables ({msg})", kind.agent),
            tried: kind.format.into(),
        };
    }
    LoadError::invalid(db, format!("cannot read the {what}: {msg}"))
}

/// Every row of a query as a JSON object of its columns, one at a time (a database holds
/// every session: its rows are not all kept twice).
pub fn each_row(conn: &rusqlite::Connection, sql: &str, mut f: impl FnMut(Map<String, Value>)) -> rusqlite::Result<()> {
    let mut st = conn.prepare(sql)?;
    let names: Vec<String> = st.column_names().map(str::to_owned).collect();
    let mut q = st.query([])?;
    while let Some(r) = q.next()? {
        let mut m = Map::new();
        for (i, n) in names.iter().enumerate() {
            m.insert(n.clone(), sqlite_value(r.get_ref(i)?));
        }
        f(m);
    }
    Ok(())
}

pub fn rows(conn: &rusqlite::Connection, sql: &str) -> rusqlite::Result<Vec<Map<String, Value>>> {
    let mut out = Vec::new();
    each_row(conn, sql, |m| out.push(m))?;
    Ok(out)
}
