//! `ssh://[user@]host[:port][/path]`: runs on another machine, read through the system `ssh`
//! (so `~/.ssh/config`, agents and ProxyJump work) into a local mirror that every command and
//! the explorer then read as they read any directory.
//!
//! - One connection: a ControlMaster on a socket in a private (0700) temporary directory,
//!   started with `BatchMode=yes` (ssh never prompts inside the explorer); every later command
//!   goes through it and it is closed at exit (`-O exit`). `ControlPersist` is the backstop
//!   when tracetui is killed: an idle master ends by itself.
//! - Only reads run remotely, each a POSIX `sh -c` script with every path single-quoted:
//!   `uname`, `printf` of the variables that move the places, `find -printf` (GNU find) for
//!   the listing, `tail -c`/`head -c` for byte ranges. Nothing is written there.
//! - The mirror is in tracetui's cache directory (`<cache>/ssh/<host>/fs/<remote path>`),
//!   never in a trace directory. A file is fetched only when it differs from its mirror (size
//!   or modification time); a grown `.jsonl`/`.ndjson` session (they only grow) fetches only
//!   what was appended (with a few bytes before, compared, so a rewritten file is fetched
//!   whole). The mirror's files take the remote modification times, so the summary cache
//!   (keyed by path, length and times) works per host as it does locally.
//! - What the user sees names the remote: mirror paths in messages and output are shown as
//!   `ssh://host/remote/path` ([`shown`], [`ShownWriter`]).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use anyhow::{Context, anyhow, bail};

/// The ssh program (default `ssh`).
pub const PROGRAM_ENV: &str = "TRACETUI_SSH";
/// Options put before every ssh command's own, split at whitespace (`-F ~/other_config`).
pub const ARGS_ENV: &str = "TRACETUI_SSH_ARGS";
/// Set to 1: each sync says on stderr what it listed and fetched.
pub const DEBUG_ENV: &str = "TRACETUI_SSH_DEBUG";
/// Files a listing takes at most (as many entries as a local directory scan looks at).
pub const MAX_FILES: usize = super::MAX_ENTRIES;
/// The largest file fetched (as standard input's copy: 4 GiB); a larger one is named and left.
pub const MAX_FILE_BYTES: u64 = super::STDIN_LIMIT;
/// The most a mirror of one machine's listing may hold (a deeper path fetches less).
pub const MAX_MIRROR_BYTES: u64 = 32 << 30;
/// The most a listing reply may be.
const MAX_LISTING_BYTES: u64 = 64 << 20;
/// How deep the listing goes below a root (the local scan then applies its own limits).
const FIND_DEPTH: usize = 12;
/// One fetch command asks for at most this many bytes, and its script is at most this long
/// (a command line is one argument of at most 128 KiB on Linux).
const BATCH_BYTES: u64 = 256 << 20;
const BATCH_SCRIPT: usize = 48 << 10;
/// Bytes before an appended range fetched again and compared with the mirror's end.
pub const OVERLAP: u64 = 64;
/// Waits that only catch hangs: connecting, a listing, a fetch (plus a second a MiB).
const CONNECT_WAIT: Duration = Duration::from_secs(60);
const COMMAND_WAIT: Duration = Duration::from_secs(120);
/// An idle master ends by itself this long after tracetui stopped using it (when tracetui
/// could not close it: killed).
const PERSIST_SECS: u64 = 60;
/// How often the explorer looks for new bytes.
pub const POLL: Duration = Duration::from_millis(1500);
/// Files whose content only grows (sessions are JSON Lines): fetched by appended range.
const APPEND_ONLY: [&str; 2] = [".jsonl", ".ndjson"];
/// Directories a local scan never enters, not listed either (`subagents/` is read).
const SKIP_DIRS: [&str; 4] = [".git", "node_modules", "target", "__pycache__"];

/// Whether a PATH argument is an ssh source.
pub fn is_url(s: &str) -> bool {
    s.starts_with("ssh://")
}

/// A parsed `ssh://[user@]host[:port][/path]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
    /// `None`: the machine's standard places. `~/x`: below the remote home. Else absolute.
    pub path: Option<Vec<u8>>,
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, String> {
        let usage = "expected ssh://[user@]host[:port][/path]";
        let rest = url
            .strip_prefix("ssh://")
            .ok_or_else(|| format!("{url}: not an ssh:// URL; {usage}"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let (user, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        if let Some(u) = user {
            if u.contains(':') {
                return Err(format!(
                    "ssh://…: a password in the URL is not read (ssh uses your keys and agent); {usage}"
                ));
            }
            if u.is_empty() || u.starts_with('-') || u.chars().any(|c| c.is_whitespace() || c.is_control() || c == '@')
            {
                return Err(format!("{}: not a user name; {usage}", crate::sanitize::line(u)));
            }
        }
        let (host, port) = if let Some(r) = hostport.strip_prefix('[') {
            let (h, after) = r
                .split_once(']')
                .ok_or_else(|| format!("{hostport}: an unclosed [ in the host; {usage}"))?;
            match after {
                "" => (h, None),
                p => (h, Some(p.strip_prefix(':').unwrap_or(p))),
            }
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        let ok_host = !host.is_empty()
            && !host.starts_with('-')
            && host.len() <= 255
            && host.chars().all(|c| c.is_ascii_alphanumeric() || ".-_:%".contains(c));
        if !ok_host {
            return Err(format!("{}: not a host name; {usage}", crate::sanitize::line(host)));
        }
        let port = match port {
            None => None,
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|&p| p > 0)
                    .ok_or_else(|| format!("{}: not a port; {usage}", crate::sanitize::line(p)))?,
            ),
        };
        let path = match path {
            "" | "/" => None,
            "/~" => Some(b"~".to_vec()),
            p if p.starts_with("/~/") => Some(p[1..].trim_end_matches('/').as_bytes().to_vec()),
            p => Some(p.trim_end_matches('/').as_bytes().to_vec()),
        };
        Ok(Target {
            user: user.map(str::to_string),
            host: host.to_string(),
            port,
            path,
        })
    }

    /// `user@host:port` as given.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') && self.port.is_some() {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let mut s = match &self.user {
            Some(u) => format!("{u}@{host}"),
            None => host,
        };
        if let Some(p) = self.port {
            s.push_str(&format!(":{p}"));
        }
        s
    }

    /// `ssh://user@host:port`: what remote paths are shown after.
    pub fn url(&self) -> String {
        format!("ssh://{}", self.authority())
    }

    /// The name of this machine's mirror directory (one per user, host and port).
    fn key(&self) -> String {
        self.authority()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._@-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }
}

/// `s` as one word for a POSIX shell: single quotes, a quote inside as `'\''`.
pub fn quote(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    out.push(b'\'');
    for &b in s {
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
    out
}

/// `s` with every mirror path named as the remote one (`ssh://host/path`), when it holds one
/// (the table is sanitize's: every line shown goes through it).
pub fn shown(s: &str) -> Option<String> {
    crate::sanitize::shown_paths(s)
}

/// The machines whose places stand for this one's (`ssh://host` without a path).
static PLACES_OF: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// `ssh://host` (joined by `, ` for several) when the standard places are another machine's:
/// the runs list says whose they are.
pub fn places_of() -> Option<String> {
    let p = PLACES_OF.read().unwrap_or_else(|e| e.into_inner());
    (!p.is_empty()).then(|| p.join(", "))
}

/// Whether mirror paths are being shown as remote ones (an ssh source is open).
pub fn active() -> bool {
    crate::sanitize::showing_paths()
}

/// A writer that names mirror paths as remote ones ([`shown`]) in what goes through it,
/// also where a path is split between two writes.
pub struct ShownWriter<W: Write> {
    inner: W,
    pending: Vec<u8>,
    map: Vec<(Vec<u8>, Vec<u8>)>,
    longest: usize,
}

impl<W: Write> ShownWriter<W> {
    pub fn new(inner: W) -> ShownWriter<W> {
        let map: Vec<(Vec<u8>, Vec<u8>)> = crate::sanitize::shown_path_table()
            .into_iter()
            .map(|(m, u)| (m.into_bytes(), u.into_bytes()))
            .collect();
        let longest = map.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
        ShownWriter {
            inner,
            pending: Vec::new(),
            map,
            longest,
        }
    }

    fn drain(&mut self, all: bool) -> std::io::Result<()> {
        let mut out = Vec::with_capacity(self.pending.len());
        let mut i = 0;
        loop {
            let next = self
                .map
                .iter()
                .filter_map(|(m, u)| memchr::memmem::find(&self.pending[i..], m).map(|j| (j, m.len(), u)))
                .min_by_key(|(j, ..)| *j);
            match next {
                Some((j, len, url)) => {
                    out.extend_from_slice(&self.pending[i..i + j]);
                    out.extend_from_slice(url);
                    i += j + len;
                }
                None => break,
            }
        }
        // The end may be the start of a path the next write completes.
        let keep = if all {
            0
        } else {
            (self.pending.len() - i).min(self.longest.saturating_sub(1))
        };
        let upto = self.pending.len() - keep;
        out.extend_from_slice(&self.pending[i..upto]);
        self.pending.drain(..upto);
        self.inner.write_all(&out)
    }
}

impl<W: Write> Write for ShownWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.map.is_empty() {
            return self.inner.write(buf);
        }
        self.pending.extend_from_slice(buf);
        if self.pending.len() >= 64 << 10 {
            self.drain(false)?;
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.drain(true)?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for ShownWriter<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// One remote file as the listing gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remote {
    pub path: Vec<u8>,
    pub size: u64,
    pub mtime: (i64, u32),
}

/// What one sync did (for `TRACETUI_SSH_DEBUG` and the tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Synced {
    pub listed: usize,
    /// Files fetched whole, and ranges appended to a mirror file.
    pub whole: usize,
    pub appended: usize,
    /// Bytes the remote sent of files' content (the overlap of appended ranges included).
    pub bytes: u64,
    pub removed: usize,
}

/// One open connection to a machine, and its mirror.
pub struct Session {
    pub target: Target,
    program: OsString,
    extra: Vec<OsString>,
    /// The master's socket, in a private temporary directory removed at the end.
    socket: PathBuf,
    _dir: tempfile::TempDir,
    /// `<cache>/ssh/<host>`: `fs/` mirrors the remote file system, `tmp/` holds fetches
    /// until they are checked, `lock` keeps two tracetuis from writing one mirror at once.
    base: PathBuf,
    /// The remote paths listed: one given, or the places there.
    pub roots: Vec<Vec<u8>>,
    /// Without a path: the machine's places (remote paths).
    pub places: Vec<super::places::Resolved>,
    /// Problems that did not stop a sync (a file too large, a directory not readable).
    pub warnings: Mutex<Vec<String>>,
    pub fetched: AtomicU64,
    closed: AtomicBool,
    /// Held while the master is checked or started again (a lost connection is remade).
    master: Mutex<()>,
}

impl Session {
    /// Connect (the master), read the remote environment and find what to list.
    pub fn open(target: Target) -> anyhow::Result<Session> {
        let url = target.url();
        let cache = super::cache::dir()
            .ok_or_else(|| anyhow!("{url}: no cache directory for the mirror (set HOME or TRACETUI_CACHE_DIR)"))?;
        let base = cache.join("ssh").join(target.key());
        // A socket path is at most 104-108 bytes: a short temporary directory.
        let tmp = std::env::temp_dir();
        let tmp = if tmp.as_os_str().len() > 60 {
            PathBuf::from("/tmp")
        } else {
            tmp
        };
        let dir = tempfile::Builder::new()
            .prefix("tracetui-ssh-")
            .tempdir_in(&tmp)
            .with_context(|| format!("{url}: a private directory for the ssh socket in {}", tmp.display()))?;
        let socket = dir.path().join("m");
        let program = std::env::var_os(PROGRAM_ENV)
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "ssh".into());
        let extra: Vec<OsString> = std::env::var_os(ARGS_ENV)
            .map(|v| {
                v.as_bytes()
                    .split(|b| b.is_ascii_whitespace())
                    .filter(|w| !w.is_empty())
                    .map(|w| OsString::from_vec(w.to_vec()))
                    .collect()
            })
            .unwrap_or_default();
        let mut s = Session {
            target,
            program,
            extra,
            socket,
            _dir: dir,
            base,
            roots: Vec::new(),
            places: Vec::new(),
            warnings: Mutex::new(Vec::new()),
            fetched: AtomicU64::new(0),
            closed: AtomicBool::new(true),
            master: Mutex::new(()),
        };
        s.start_master()?;
        s.closed.store(false, Ordering::Relaxed);
        (s.roots, s.places) = s.find_roots()?;
        let fs = s.base.join("fs");
        let mirror = fs.to_string_lossy().into_owned();
        crate::sanitize::show_path_as(&mirror, &s.target.url());
        Ok(s)
    }

    fn url(&self) -> String {
        self.target.url()
    }

    /// `ssh [TRACETUI_SSH_ARGS] -o BatchMode=yes [-p port] [-l user] OPTIONS -- host`.
    fn ssh(&self, options: &[&str]) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.extra);
        c.args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=20"]);
        if let Some(p) = self.target.port {
            c.arg("-p").arg(p.to_string());
        }
        if let Some(u) = &self.target.user {
            c.arg("-l").arg(u);
        }
        let mut path = OsString::from("ControlPath=");
        path.push(self.socket.as_os_str());
        c.arg("-o").arg(path);
        c.args(options);
        c.arg("--").arg(&self.target.host);
        c.stdin(Stdio::null());
        c
    }

    fn start_master(&self) -> anyhow::Result<()> {
        let url = self.url();
        let log = self.socket.with_file_name("master.log");
        let err = std::fs::File::create(&log).with_context(|| format!("{url}: {}", log.display()))?;
        let persist = format!("ControlPersist={PERSIST_SECS}");
        let mut c = self.ssh(&[
            "-o",
            "ControlMaster=yes",
            "-o",
            &persist,
            "-o",
            "ServerAliveInterval=15",
            "-o",
            "ServerAliveCountMax=4",
            "-f",
            "-N",
        ]);
        c.stdout(Stdio::null()).stderr(err);
        let mut child = c.spawn().map_err(|e| {
            anyhow!(
                "{url}: cannot run {}: {e}",
                crate::sanitize::line(&self.program.to_string_lossy())
            )
        })?;
        // `-f`: it returns once the connection is up (or failed), the master going on alone.
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait()? {
                break s;
            }
            if start.elapsed() > CONNECT_WAIT {
                let _ = child.kill();
                let _ = child.wait();
                bail!("{url}: no connection after {} s", CONNECT_WAIT.as_secs());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if !status.success() {
            let text = std::fs::read(&log).unwrap_or_default();
            bail!("{url}: cannot connect: {}", last_lines(&text));
        }
        Ok(())
    }

    /// Run `script` with `sh -c` on the remote machine through the master; its output is
    /// handed to `read` as it comes (at most `limit` bytes), within `wait`.
    fn run<T>(
        &self,
        script: &[u8],
        limit: u64,
        wait: Duration,
        read: impl FnOnce(&mut dyn Read) -> anyhow::Result<T>,
    ) -> anyhow::Result<(T, i32, String)> {
        // A master that ended (the network dropped, the machine rebooted) removed its
        // socket: start it again rather than let ssh connect anew for every command.
        {
            let _held = self.master.lock().unwrap_or_else(|e| e.into_inner());
            if self.closed.load(Ordering::Relaxed) {
                bail!("{}: the connection is closed", self.url());
            }
            if !self.socket.exists() {
                self.start_master()?;
            }
        }
        let mut cmd_line = b"sh -c ".to_vec();
        cmd_line.extend_from_slice(&quote(script));
        let mut c = self.ssh(&["-o", "ControlMaster=no"]);
        c.arg(OsString::from_vec(cmd_line));
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        let url = self.url();
        let mut child = c.spawn().map_err(|e| anyhow!("{url}: cannot run ssh: {e}"))?;
        let mut out = child.stdout.take().expect("piped");
        let mut err = child.stderr.take().expect("piped");
        let errs = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = (&mut err).take(64 << 10).read_to_end(&mut b);
            let _ = std::io::copy(&mut err, &mut std::io::sink());
            b
        });
        let child = Arc::new(Mutex::new(child));
        let timed_out = Arc::new(AtomicBool::new(false));
        let (done, wait_rx) = std::sync::mpsc::channel::<()>();
        let watchdog = {
            let (child, timed_out) = (child.clone(), timed_out.clone());
            std::thread::spawn(move || {
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait_rx.recv_timeout(wait) {
                    timed_out.store(true, Ordering::Relaxed);
                    let _ = child.lock().unwrap_or_else(|e| e.into_inner()).kill();
                }
            })
        };
        let mut bounded = (&mut out).take(limit);
        let got = read(&mut bounded);
        // Whatever is left (a reply larger than asked) is not read: the command is ended.
        let over = got.is_ok() && bounded.limit() == 0 && out.read(&mut [0u8; 1]).is_ok_and(|n| n > 0);
        if over || got.is_err() {
            let _ = child.lock().unwrap_or_else(|e| e.into_inner()).kill();
        }
        drop(out);
        let _ = done.send(());
        let _ = watchdog.join();
        let status = child.lock().unwrap_or_else(|e| e.into_inner()).wait()?;
        let stderr = String::from_utf8_lossy(&errs.join().unwrap_or_default()).into_owned();
        if timed_out.load(Ordering::Relaxed) {
            bail!("{url}: no answer within {} s", wait.as_secs());
        }
        let code = status.code().unwrap_or(-1);
        // 255: ssh's own failure (the connection), not the command's.
        if code == 255 {
            bail!("{url}: connection lost: {}", last_lines(stderr.as_bytes()));
        }
        let got = got?;
        if over {
            bail!("{url}: the reply is larger than the {limit} bytes expected");
        }
        Ok((got, code, stderr))
    }

    /// The remote system and the variables that move the places; the roots to list.
    fn find_roots(&self) -> anyhow::Result<(Vec<Vec<u8>>, Vec<super::places::Resolved>)> {
        let url = self.url();
        let mut vars: Vec<&str> = vec!["HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"];
        for p in super::places::PLACES {
            if let Some((v, _)) = p.env
                && !vars.contains(&v)
            {
                vars.push(v);
            }
        }
        let mut script = b"printf 'uname=%s\\000' \"$(uname -s 2>/dev/null)\"; ".to_vec();
        for v in &vars {
            script.extend_from_slice(format!("printf '{v}=%s\\000' \"${{{v}-}}\"; ").as_bytes());
        }
        script.extend_from_slice(b"if find . -maxdepth 0 -printf '' >/dev/null 2>&1; then printf 'gnufind=1\\000'; fi");
        let (out, code, err) = self.run(&script, 1 << 20, COMMAND_WAIT, |r| {
            let mut b = Vec::new();
            r.read_to_end(&mut b)?;
            Ok(b)
        })?;
        if code != 0 {
            bail!(
                "{url}: the remote shell failed (exit {code}): {}",
                last_lines(err.as_bytes())
            );
        }
        let mut env: HashMap<String, OsString> = HashMap::new();
        for rec in out.split(|&b| b == 0).filter(|r| !r.is_empty()) {
            if let Some(i) = rec.iter().position(|&b| b == b'=') {
                env.insert(
                    String::from_utf8_lossy(&rec[..i]).into_owned(),
                    OsString::from_vec(rec[i + 1..].to_vec()),
                );
            }
        }
        if !env.contains_key("gnufind") {
            bail!(
                "{url}: the remote `find` has no -printf (tracetui lists over ssh with GNU find; on macOS or BSD install findutils as `find` first in PATH)"
            );
        }
        let home = env.get("HOME").filter(|h| h.as_bytes().starts_with(b"/")).cloned();
        match &self.target.path {
            Some(p) if p == b"~" || p.starts_with(b"~/") => {
                let Some(h) = home else {
                    bail!("{url}: the remote HOME is not set (or not absolute): give an absolute path");
                };
                let mut r = h.into_vec();
                r.extend_from_slice(&p[1..]);
                Ok((vec![clean(&r)], Vec::new()))
            }
            Some(p) => Ok((vec![clean(p)], Vec::new())),
            None => {
                let mac = env.get("uname").is_some_and(|u| u == "Darwin");
                let get = |k: &str| env.get(k).cloned();
                let mut roots: Vec<Vec<u8>> = Vec::new();
                let mut places = Vec::new();
                for r in super::places::resolve_for(&get, mac) {
                    // The current directory's places (`runs/`, `logs/`, …) are the user's
                    // choice of a directory: over ssh they are given as a path.
                    if r.place.base == super::places::Base::Cwd && r.via.is_none() {
                        continue;
                    }
                    let b = clean(r.path.as_os_str().as_bytes());
                    if !b.starts_with(b"/") {
                        continue;
                    }
                    if !roots.contains(&b) {
                        roots.push(b);
                    }
                    places.push(r);
                }
                if roots.is_empty() {
                    bail!("{url}: the remote HOME is not set: give a path (ssh://host/path)");
                }
                Ok((roots, places))
            }
        }
    }

    /// The mirror path of a remote path.
    pub fn mirror_of(&self, remote: &[u8]) -> PathBuf {
        self.base
            .join("fs")
            .join(OsStr::from_bytes(remote.strip_prefix(b"/").unwrap_or(remote)))
    }

    /// The mirror paths to read: the given path's, or those of the places that hold files.
    pub fn local_paths(&self) -> Vec<PathBuf> {
        self.roots
            .iter()
            .map(|r| self.mirror_of(r))
            .filter(|p| p.exists())
            .collect()
    }

    /// Every file below the roots, with its size and modification time (one remote command).
    pub fn list(&self) -> anyhow::Result<Vec<Remote>> {
        let url = self.url();
        let mut script = Vec::new();
        let given = self.target.path.is_some();
        if given {
            let q = quote(&self.roots[0]);
            script.extend_from_slice(b"if [ ! -e ");
            script.extend_from_slice(&q);
            script.extend_from_slice(b" ]; then exit 3; fi; set -- ");
            script.extend_from_slice(&q);
            script.extend_from_slice(b"; ");
        } else {
            script.extend_from_slice(b"for r in");
            for r in &self.roots {
                script.push(b' ');
                script.extend_from_slice(&quote(r));
            }
            script.extend_from_slice(
                b"; do if [ -e \"$r\" ]; then set -- \"$@\" \"$r\"; fi; done; [ \"$#\" -gt 0 ] || exit 0; ",
            );
        }
        script.extend_from_slice(format!("exec find -H \"$@\" -maxdepth {FIND_DEPTH} \\( -type d \\(").as_bytes());
        for (i, d) in SKIP_DIRS.iter().enumerate() {
            let or = if i == 0 { "" } else { " -o" };
            script.extend_from_slice(format!("{or} -name '{d}'").as_bytes());
        }
        script.extend_from_slice(b" \\) \\) -prune -o -type f -printf '%s %T@ %p\\000'");
        let (out, code, err) = self.run(&script, MAX_LISTING_BYTES, COMMAND_WAIT, |r| {
            let mut b = Vec::new();
            r.read_to_end(&mut b)?;
            Ok(b)
        })?;
        if code == 3 {
            bail!(
                "{url}{}: no such file or directory",
                String::from_utf8_lossy(&self.roots[0])
            );
        }
        // 1: find could not read some directory (the rest is listed): said, not fatal.
        if code != 0 && code != 1 {
            bail!("{url}: listing failed (exit {code}): {}", last_lines(err.as_bytes()));
        }
        if code == 1 && !err.trim().is_empty() {
            self.warn(format!("{url}: {}", last_lines(err.as_bytes())));
        }
        let files = parse_listing(&out, &self.roots).map_err(|e| anyhow!("{url}: {e}"))?;
        if files.len() > MAX_FILES {
            bail!(
                "{url}: more than {MAX_FILES} files below {}: give a deeper path",
                if given {
                    String::from_utf8_lossy(&self.roots[0]).into_owned()
                } else {
                    "the places agents write to".into()
                }
            );
        }
        Ok(files)
    }

    fn warn(&self, w: String) {
        let mut ws = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
        if !ws.contains(&w) {
            ws.push(w);
        }
    }

    /// Make the mirror equal to the remote files: list, fetch what differs (appended ranges
    /// of grown sessions), remove what is gone.
    pub fn sync(&self) -> anyhow::Result<Synced> {
        let url = self.url();
        std::fs::create_dir_all(self.base.join("tmp"))
            .with_context(|| format!("{url}: the mirror {}", self.base.display()))?;
        let lock = std::fs::File::create(self.base.join("lock"))
            .with_context(|| format!("{url}: the mirror {}", self.base.display()))?;
        lock.lock()
            .with_context(|| format!("{url}: locking the mirror {}", self.base.display()))?;
        // Fetches a killed tracetui left unchecked (no other sync runs: the lock is ours).
        if let Ok(rd) = std::fs::read_dir(self.base.join("tmp")) {
            for e in rd.flatten() {
                let _ = std::fs::remove_file(e.path());
            }
        }
        let files = self.list()?;
        let total: u64 = files.iter().map(|f| f.size).filter(|&n| n <= MAX_FILE_BYTES).sum();
        if total > MAX_MIRROR_BYTES {
            bail!(
                "{url}: the files below {} hold {} GiB, more than the {} GiB a mirror takes: give a deeper path",
                self.roots
                    .iter()
                    .map(|r| String::from_utf8_lossy(r).into_owned())
                    .collect::<Vec<_>>()
                    .join(", "),
                total >> 30,
                MAX_MIRROR_BYTES >> 30
            );
        }
        let mut done = Synced {
            listed: files.len(),
            ..Synced::default()
        };
        // A file that changes while it is read is read again (a few times, then left for the
        // next sync with a warning).
        let mut todo: Vec<Fetch> = Vec::new();
        for f in &files {
            if f.size > MAX_FILE_BYTES {
                self.warn(format!(
                    "{url}{}: larger than {} GiB, not fetched",
                    String::from_utf8_lossy(&f.path),
                    MAX_FILE_BYTES >> 30
                ));
                continue;
            }
            if let Some(x) = self.plan(f) {
                todo.push(x);
            }
        }
        for round in 0..3 {
            if todo.is_empty() {
                break;
            }
            let mut again = Vec::new();
            for batch in batches(todo) {
                again.extend(self.fetch(batch, &mut done)?);
            }
            todo = again;
            if round == 2 {
                for f in &todo {
                    self.warn(format!(
                        "{url}{}: changed while it was read; read again at the next refresh",
                        String::from_utf8_lossy(&f.remote.path)
                    ));
                }
            }
        }
        done.removed = self.prune(&files)?;
        self.fetched.fetch_add(done.bytes, Ordering::Relaxed);
        if std::env::var_os(DEBUG_ENV).is_some_and(|v| v == "1") {
            eprintln!(
                "tracetui: {url}: listed {} files; fetched {} whole, {} appended ranges, {} bytes; removed {}",
                done.listed, done.whole, done.appended, done.bytes, done.removed
            );
        }
        drop(lock);
        Ok(done)
    }

    /// What to fetch of `f` so that its mirror equals it, if anything.
    fn plan(&self, f: &Remote) -> Option<Fetch> {
        let local = self.mirror_of(&f.path);
        let meta = std::fs::symlink_metadata(&local).ok().filter(|m| m.is_file());
        let whole = Fetch {
            remote: f.clone(),
            off: 0,
            append: false,
        };
        let Some(m) = meta else { return Some(whole) };
        let same_time = m.modified().ok().map(split_time) == Some(f.mtime);
        if m.len() == f.size && same_time {
            return None;
        }
        let append_only = APPEND_ONLY.iter().any(|x| f.path.ends_with(x.as_bytes()));
        if append_only && m.len() > 0 && f.size > m.len() {
            return Some(Fetch {
                remote: f.clone(),
                off: m.len().saturating_sub(OVERLAP),
                append: true,
            });
        }
        Some(whole)
    }

    /// Fetch one batch; the fetches to do again (the file changed while it was read).
    fn fetch(&self, batch: Vec<Fetch>, done: &mut Synced) -> anyhow::Result<Vec<Fetch>> {
        let url = self.url();
        let mut script =
            b"f() { { tail -c \"+$2\" \"$1\" 2>/dev/null | head -c \"$3\"; cat /dev/zero; } | head -c \"$3\"; }; "
                .to_vec();
        let mut stat = b"exec find -H".to_vec();
        let mut total = 0u64;
        for f in &batch {
            let len = f.remote.size - f.off;
            total += len;
            let q = quote(&f.remote.path);
            script.extend_from_slice(b"f ");
            script.extend_from_slice(&q);
            script.extend_from_slice(format!(" {} {len}; ", f.off + 1).as_bytes());
            stat.push(b' ');
            stat.extend_from_slice(&q);
        }
        stat.extend_from_slice(b" -maxdepth 0 -printf '%s %T@ %p\\000' 2>/dev/null; exit 0");
        script.extend_from_slice(&stat);
        let staged = self.base.join("tmp");
        let wait = COMMAND_WAIT + Duration::from_secs(total >> 20);
        let (parts, _, _) = self
            .run(&script, total + MAX_LISTING_BYTES, wait, |r| {
                let mut parts = Vec::with_capacity(batch.len());
                for f in &batch {
                    let len = f.remote.size - f.off;
                    let mut tmp = tempfile::NamedTempFile::new_in(&staged)?;
                    let got = std::io::copy(&mut (&mut *r).take(len), tmp.as_file_mut())?;
                    if got != len {
                        bail!(
                            "{}: the reply held {got} bytes where {len} were asked",
                            String::from_utf8_lossy(&f.remote.path)
                        );
                    }
                    parts.push(tmp);
                }
                let mut after = Vec::new();
                r.read_to_end(&mut after)?;
                Ok((parts, after))
            })
            .map_err(|e| anyhow!("{}", prefixed(&url, &e.to_string())))?;
        let (parts, after) = parts;
        let now: HashMap<Vec<u8>, Remote> = parse_listing(&after, &[])
            .map_err(|e| anyhow!("{url}: {e}"))?
            .into_iter()
            .map(|r| (r.path.clone(), r))
            .collect();
        let mut again = Vec::new();
        for (f, part) in batch.into_iter().zip(parts) {
            let len = f.remote.size - f.off;
            done.bytes += len;
            let append_only = APPEND_ONLY.iter().any(|x| f.remote.path.ends_with(x.as_bytes()));
            // The range is what the file held: it did not change while read, or (a session)
            // it only grew.
            let valid = now.get(&f.remote.path).is_some_and(|n| {
                (n.size == f.remote.size && n.mtime == f.remote.mtime) || (append_only && n.size >= f.remote.size)
            });
            if !valid {
                again.push(Fetch {
                    remote: now.get(&f.remote.path).cloned().unwrap_or(f.remote.clone()),
                    off: 0,
                    append: false,
                });
                continue;
            }
            let local = self.mirror_of(&f.remote.path);
            let wrote = if f.append {
                self.append(&local, part, f.off)
                    .with_context(|| format!("{url}: the mirror {}", local.display()))?
            } else {
                place(&local, part).with_context(|| format!("{url}: the mirror {}", local.display()))?;
                true
            };
            if !wrote {
                // The mirror's end is not what the remote holds there: fetched whole.
                again.push(Fetch {
                    remote: f.remote.clone(),
                    off: 0,
                    append: false,
                });
                continue;
            }
            let t = SystemTime::UNIX_EPOCH + Duration::new(f.remote.mtime.0.max(0) as u64, f.remote.mtime.1);
            std::fs::File::options()
                .write(true)
                .open(&local)
                .and_then(|h| h.set_modified(t))
                .with_context(|| format!("{url}: the mirror {}", local.display()))?;
            if f.append {
                done.appended += 1;
            } else {
                done.whole += 1;
            }
        }
        Ok(again)
    }

    /// Append a fetched range (it starts at `off`, before the mirror's end) to the mirror file,
    /// when the bytes it repeats equal the mirror's. False: they differ (or the mirror is not
    /// as planned), nothing written.
    fn append(&self, local: &Path, part: tempfile::NamedTempFile, off: u64) -> std::io::Result<bool> {
        use std::io::{Seek, SeekFrom};
        let mut m = std::fs::File::options().read(true).append(true).open(local)?;
        let len = m.metadata()?.len();
        if len < off || len - off > OVERLAP {
            return Ok(false);
        }
        let ov = (len - off) as usize;
        let mut mine = vec![0u8; ov];
        m.seek(SeekFrom::Start(off))?;
        m.read_exact(&mut mine)?;
        let mut src = part.reopen()?;
        let mut theirs = vec![0u8; ov];
        if src.read_exact(&mut theirs).is_err() || mine != theirs {
            return Ok(false);
        }
        std::io::copy(&mut src, &mut m)?;
        Ok(true)
    }

    /// Remove from the mirror, below the roots, the files the remote no longer has.
    fn prune(&self, files: &[Remote]) -> anyhow::Result<usize> {
        let keep: HashSet<PathBuf> = files.iter().map(|f| self.mirror_of(&f.path)).collect();
        let mut removed = 0;
        for r in &self.roots {
            let root = self.mirror_of(r);
            let mut stack = vec![root];
            let mut budget = MAX_FILES * 2;
            while let Some(p) = stack.pop() {
                let Ok(m) = std::fs::symlink_metadata(&p) else { continue };
                if m.is_dir() {
                    if let Ok(rd) = std::fs::read_dir(&p) {
                        for e in rd.flatten() {
                            if budget == 0 {
                                break;
                            }
                            budget -= 1;
                            stack.push(e.path());
                        }
                    }
                } else if !keep.contains(&p) {
                    std::fs::remove_file(&p).with_context(|| format!("{}: the mirror {}", self.url(), p.display()))?;
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }

    /// Close the master (`ssh -O exit`); also done when the session is dropped.
    pub fn close(&self) {
        if self.closed.swap(true, Ordering::Relaxed) {
            return;
        }
        let mut c = self.ssh(&["-O", "exit"]);
        c.stdout(Stdio::null()).stderr(Stdio::null());
        if let Ok(mut child) = c.spawn() {
            let start = std::time::Instant::now();
            while start.elapsed() < Duration::from_secs(10) {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Keep the mirror current on a thread of its own (every [`POLL`]) until the returned
    /// guard is dropped: the explorer's live follow of the mirror shows what the remote agent
    /// writes.
    pub fn follow(self: &Arc<Self>) -> Follower {
        let stop = Arc::new(AtomicBool::new(false));
        let errors = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let (s, stop, errors) = (self.clone(), stop.clone(), errors.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let start = std::time::Instant::now();
                    while start.elapsed() < POLL && !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if let Err(e) = s.sync() {
                        let mut es: std::sync::MutexGuard<Vec<String>> =
                            errors.lock().unwrap_or_else(|e| e.into_inner());
                        let e = format!("{e:#}");
                        if !es.contains(&e) {
                            es.push(e);
                        }
                        // A lost connection is not retried every poll.
                        if es.len() > 20 {
                            break;
                        }
                    }
                }
            })
        };
        Follower {
            stop,
            thread: Some(thread),
            errors,
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

/// The thread that keeps a mirror current ([`Session::follow`]).
pub struct Follower {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl Follower {
    /// Stop it; what went wrong while it ran.
    pub fn finish(mut self) -> Vec<String> {
        self.stop_now();
        std::mem::take(&mut *self.errors.lock().unwrap_or_else(|e| e.into_inner()))
    }
    fn stop_now(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // A sync waiting on a machine that went away is not waited for: quitting stays
            // prompt (what it leaves half-fetched, the next sync completes or fetches again).
            let start = std::time::Instant::now();
            while !t.is_finished() && start.elapsed() < Duration::from_secs(2) {
                std::thread::sleep(Duration::from_millis(20));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// One range to fetch: `[off, size)` of a file.
#[derive(Clone, Debug)]
struct Fetch {
    remote: Remote,
    off: u64,
    append: bool,
}

/// Fetches in batches that fit one command (script length, bytes).
fn batches(todo: Vec<Fetch>) -> Vec<Vec<Fetch>> {
    let mut out: Vec<Vec<Fetch>> = Vec::new();
    let (mut bytes, mut script) = (0u64, 0usize);
    for f in todo {
        let len = f.remote.size - f.off;
        let cost = 2 * f.remote.path.len() + 64;
        if out.is_empty() || bytes + len > BATCH_BYTES || script + cost > BATCH_SCRIPT {
            out.push(Vec::new());
            bytes = 0;
            script = 0;
        }
        bytes += len;
        script += cost;
        out.last_mut().expect("pushed").push(f);
    }
    out
}

/// Put a fetched file in place in the mirror (a file or directory in its way is removed:
/// the remote changed the kind of that path).
fn place(local: &Path, part: tempfile::NamedTempFile) -> std::io::Result<()> {
    if let Some(parent) = local.parent()
        && std::fs::create_dir_all(parent).is_err()
    {
        // A mirrored file where the remote now has a directory.
        let mut p = parent.to_path_buf();
        loop {
            if std::fs::symlink_metadata(&p).is_ok_and(|m| !m.is_dir()) {
                std::fs::remove_file(&p)?;
                break;
            }
            if !p.pop() {
                break;
            }
        }
        std::fs::create_dir_all(parent)?;
    }
    if std::fs::symlink_metadata(local).is_ok_and(|m| m.is_dir()) {
        std::fs::remove_dir_all(local)?;
    }
    part.persist(local).map_err(|e| e.error)?;
    Ok(())
}

/// A remote path as given, without a trailing `/` (`/` stays).
fn clean(p: &[u8]) -> Vec<u8> {
    let mut p = p.to_vec();
    while p.len() > 1 && p.ends_with(b"/") {
        p.pop();
    }
    p
}

/// `find -printf '%s %T@ %p\0'` records. With `roots`, every path must be below one of them
/// and hold no `.`/`..` component (what a remote answers is not trusted to stay in place).
pub fn parse_listing(out: &[u8], roots: &[Vec<u8>]) -> Result<Vec<Remote>, String> {
    let mut files = Vec::new();
    for rec in out.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let bad = || {
            format!(
                "an unexpected listing line: {}",
                crate::sanitize::line(&String::from_utf8_lossy(rec))
            )
        };
        let mut it = rec.splitn(3, |&b| b == b' ');
        let (Some(size), Some(time), Some(path)) = (it.next(), it.next(), it.next()) else {
            return Err(bad());
        };
        let size: u64 = std::str::from_utf8(size)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)?;
        let mtime = parse_time(time).ok_or_else(bad)?;
        let inside = roots.is_empty()
            || roots.iter().any(|r| {
                path == r.as_slice()
                    || (path.starts_with(r) && (r.as_slice() == b"/" || path.get(r.len()) == Some(&b'/')))
            });
        let tidy = path.starts_with(b"/")
            && path
                .split(|&b| b == b'/')
                .skip(1)
                .all(|c| !c.is_empty() && c != b"." && c != b"..");
        if !inside || !tidy {
            return Err(format!(
                "a listed path outside what was asked: {}",
                crate::sanitize::line(&String::from_utf8_lossy(path))
            ));
        }
        files.push(Remote {
            path: path.to_vec(),
            size,
            mtime,
        });
        if files.len() > MAX_FILES {
            break;
        }
    }
    Ok(files)
}

/// `%T@`: seconds, a dot and up to ten digits of a fraction.
fn parse_time(t: &[u8]) -> Option<(i64, u32)> {
    let t = std::str::from_utf8(t).ok()?;
    let (s, f) = t.split_once('.').unwrap_or((t, ""));
    let secs: i64 = s.parse().ok()?;
    if !f.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut digits: String = f.chars().take(9).collect();
    while digits.len() < 9 {
        digits.push('0');
    }
    Some((secs, digits.parse().ok()?))
}

fn split_time(t: SystemTime) -> (i64, u32) {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
        Err(_) => (0, 0),
    }
}

/// The last non-empty lines of ssh's stderr, as one sanitized line.
fn last_lines(text: &[u8]) -> String {
    let s = String::from_utf8_lossy(text);
    let lines: Vec<&str> = s.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(2)..];
    if tail.is_empty() {
        return "ssh failed without a message".into();
    }
    crate::sanitize::line(&tail.join("; ")).into_owned()
}

/// `url` before a message that does not name it yet.
fn prefixed(url: &str, msg: &str) -> String {
    if msg.starts_with(url) {
        msg.to_string()
    } else if msg.starts_with('/') {
        format!("{url}{msg}")
    } else {
        format!("{url}: {msg}")
    }
}

/// The sources of a command line: each `ssh://` argument opened and mirrored, and the
/// arguments with it replaced by its mirror's paths.
pub struct Sources {
    pub sessions: Vec<Arc<Session>>,
    pub args: Vec<OsString>,
}

/// Open every `ssh://` argument of `args` (the program's name first), sync its mirror once,
/// and put the mirror's path in its place; without a path, the machine's places stand for
/// this one's ([`super::places::set_remote`]) and the argument is left out. `single`: the
/// command reads one run (`show`, `tail`, `export`, `diff`): it needs a path.
pub fn open_args(args: Vec<OsString>) -> anyhow::Result<Sources> {
    let sub = args
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .find(|a| !a.starts_with('-'))
        .unwrap_or("")
        .to_string();
    let single = matches!(sub.as_str(), "show" | "tail" | "export" | "diff");
    let mut out = Vec::with_capacity(args.len());
    let mut sessions: Vec<Arc<Session>> = Vec::new();
    for a in args {
        let Some(url) = a.to_str().filter(|s| is_url(s)) else {
            out.push(a);
            continue;
        };
        let target = Target::parse(url).map_err(|e| anyhow!("{e}"))?;
        if single && target.path.is_none() {
            bail!(
                "{}: `{sub}` reads one run: give its path (`tracetui ls {}` lists them)",
                target.url(),
                target.url()
            );
        }
        let s = Arc::new(Session::open(target)?);
        s.sync()?;
        let paths = s.local_paths();
        if !paths.is_empty() && s.target.path.is_none() {
            // The machine's places stand for this one's: read as a command without PATH
            // reads them (each run's project from its place's layout).
            super::places::set_remote(
                s.places
                    .iter()
                    .map(|r| super::places::Resolved {
                        place: r.place,
                        path: s.mirror_of(r.path.as_os_str().as_bytes()),
                        via: r.via,
                    })
                    .collect(),
            );
            PLACES_OF.write().unwrap_or_else(|e| e.into_inner()).push(s.url());
            sessions.push(s);
            continue;
        }
        if paths.is_empty() && s.target.path.is_some() {
            bail!("{}{}: no files in it", s.url(), String::from_utf8_lossy(&s.roots[0]));
        }
        if paths.is_empty() {
            bail!(
                "{}: no runs in the places agents write to there ({} places looked at, those `tracetui sources` lists); give a path: {}/PATH",
                s.url(),
                s.roots.len(),
                s.url()
            );
        }
        out.extend(paths.into_iter().map(PathBuf::into_os_string));
        sessions.push(s);
    }
    Ok(Sources { sessions, args: out })
}

/// For a command that ends by a signal (`tail --no-tui`, a `ls` interrupted): on SIGINT,
/// SIGTERM or SIGHUP close the connections, then end as the signal would have. Not for the
/// explorer, which ends its loop on these signals and closes them on its way out.
pub fn close_on_signals(sessions: &[Arc<Session>]) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    // Weak: the sessions still end (and close) when the command does.
    let sessions: Vec<std::sync::Weak<Session>> = sessions.iter().map(Arc::downgrade).collect();
    if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        let _ = std::thread::Builder::new().name("ssh-signals".into()).spawn(move || {
            if let Some(sig) = signals.forever().next() {
                for s in sessions.iter().filter_map(std::sync::Weak::upgrade) {
                    s.close();
                    // No destructor runs after exit: the socket's directory goes now.
                    let _ = std::fs::remove_dir_all(s._dir.path());
                }
                std::process::exit(128 + sig);
            }
        });
    }
}

/// Whether any argument is an `ssh://` source.
pub fn in_args(args: &[OsString]) -> bool {
    args.iter().skip(1).any(|a| a.to_str().is_some_and(is_url))
}

impl Sources {
    /// Warnings of the syncs so far, once each.
    pub fn warnings(&self) -> Vec<String> {
        self.sessions
            .iter()
            .flat_map(|s| std::mem::take(&mut *s.warnings.lock().unwrap_or_else(|e| e.into_inner())))
            .collect()
    }
}

/// For tests of the display: a mirror directory shown as `url`.
#[doc(hidden)]
pub fn show_as(mirror: &str, url: &str) {
    crate::sanitize::show_path_as(mirror, url);
}

/// The text of `s` with mirror paths shown as remote ones, borrowed when unchanged.
pub fn shown_cow(s: &str) -> Cow<'_, str> {
    match shown(s) {
        Some(o) => Cow::Owned(o),
        None => Cow::Borrowed(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse() {
        let t = Target::parse("ssh://dev").unwrap();
        assert_eq!((t.user, t.host.as_str(), t.port, t.path), (None, "dev", None, None));
        let t = Target::parse("ssh://me@dev.example.com:2222/home/me/runs/").unwrap();
        assert_eq!(t.user.as_deref(), Some("me"));
        assert_eq!(t.port, Some(2222));
        assert_eq!(t.path.as_deref(), Some(&b"/home/me/runs"[..]));
        assert_eq!(t.url(), "ssh://me@dev.example.com:2222");
        let t = Target::parse("ssh://dev/~/.claude/projects").unwrap();
        assert_eq!(t.path.as_deref(), Some(&b"~/.claude/projects"[..]));
        assert_eq!(Target::parse("ssh://dev/").unwrap().path, None);
        let t = Target::parse("ssh://[::1]:22/x y").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", Some(22)));
        assert_eq!(t.path.as_deref(), Some(&b"/x y"[..]));
        assert_eq!(t.url(), "ssh://[::1]:22");
        for bad in [
            "ssh://-oProxyCommand=x",
            "ssh://",
            "ssh://a:b@h",
            "ssh://h:0",
            "ssh://h:x",
            "ssh://-u@h",
            "ssh://h;rm",
            "ssh://h$(x)",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Target::parse("ssh://u@h:22").unwrap().key(), "u@h_22");
    }

    #[test]
    fn quoting_survives_a_real_shell() {
        for s in [
            "plain",
            "a b",
            "it's",
            "$HOME `x` $(y)",
            "'",
            "''\\'",
            "new\nline",
            "*?[a]",
            "-n",
        ] {
            let mut script = b"printf '%s' ".to_vec();
            script.extend_from_slice(&quote(s.as_bytes()));
            // As the remote end runs it: the login shell reads `sh -c '<script>'`.
            let mut line = b"sh -c ".to_vec();
            line.extend_from_slice(&quote(&script));
            let out = Command::new("sh")
                .arg("-c")
                .arg(OsString::from_vec(line))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), s);
        }
    }

    #[test]
    fn listings_parse_and_stay_below_their_roots() {
        let roots = vec![b"/h/.claude/projects".to_vec()];
        let out = b"12 1700000000.1234567890 /h/.claude/projects/p/a b.jsonl\x000 1700000001 /h/.claude/projects/q\x00";
        let l = parse_listing(out, &roots).unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].path, b"/h/.claude/projects/p/a b.jsonl");
        assert_eq!((l[0].size, l[0].mtime), (12, (1_700_000_000, 123_456_789)));
        assert_eq!(l[1].mtime, (1_700_000_001, 0));
        for bad in [
            &b"1 2 /etc/passwd\x00"[..],
            b"1 2 /h/.claude/projects/../../etc/x\x00",
            b"1 2 /h/.claude/projectsX/a\x00",
            b"x 2 /h/.claude/projects/a\x00",
            b"1 2\x00",
        ] {
            assert!(parse_listing(bad, &roots).is_err());
        }
    }

    #[test]
    fn the_writer_names_mirror_paths_as_remote_ones_across_writes() {
        show_as("/c/ssh/dev/fs", "ssh://dev");
        let mut w = ShownWriter::new(Vec::new());
        let text = b"{\"path\":\"/c/ssh/dev/fs/h/s.jsonl\"} /c/ssh/dev/f /c/ssh/dev/fs/x\n";
        for chunk in text.chunks(5) {
            w.write_all(chunk).unwrap();
            w.drain(false).unwrap();
        }
        w.flush().unwrap();
        let out = String::from_utf8(std::mem::take(&mut w.inner)).unwrap();
        assert_eq!(out, "{\"path\":\"ssh://dev/h/s.jsonl\"} /c/ssh/dev/f ssh://dev/x\n");
        assert_eq!(
            shown("tracetui: /c/ssh/dev/fs/a: bad").as_deref(),
            Some("tracetui: ssh://dev/a: bad")
        );
        assert_eq!(shown("nothing here"), None);
    }

    #[test]
    fn batches_are_bounded() {
        let f = |n: usize, size: u64| Fetch {
            remote: Remote {
                path: format!("/p/{n}").into_bytes(),
                size,
                mtime: (0, 0),
            },
            off: 0,
            append: false,
        };
        let b = batches((0..10).map(|i| f(i, BATCH_BYTES / 3)).collect());
        assert!(b.iter().all(|b| b.len() <= 3));
        assert_eq!(b.iter().map(Vec::len).sum::<usize>(), 10);
        let b = batches((0..2000).map(|i| f(i, 1)).collect());
        assert!(b.len() > 1);
    }

    #[test]
    fn times_parse() {
        assert_eq!(parse_time(b"1.5"), Some((1, 500_000_000)));
        assert_eq!(parse_time(b"-1"), Some((-1, 0)));
        assert_eq!(parse_time(b"1.x"), None);
    }
}
