//! ssh:// against a real sshd: Debian's openssh-server started by the test on 127.0.0.1 (a
//! free port, a throwaway host key and client key, its own ssh_config through
//! TRACETUI_SSH_ARGS=-F), whose "home" (SetEnv HOME) is a temporary directory of sessions the
//! test writes (Claude Code and Codex shapes). `ls` and `show` over ssh must equal the same
//! commands on the directory itself; a remote append is fetched as a range; nothing is written
//! remotely; every connection is closed.
//!
//! Skips (saying so) without /usr/sbin/sshd, ssh or ssh-keygen (.ci/run installs
//! openssh-server).

mod tmux;

use assert_cmd::Command;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use tmux::Tmux;

const SSHD: &str = "/usr/sbin/sshd";

struct Sshd {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sshd {
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn url(&self, path: &Path) -> String {
        format!("ssh://127.0.0.1:{}{}", self.port, path.display())
    }
    fn base(&self) -> String {
        format!("ssh://127.0.0.1:{}", self.port)
    }
    /// tracetui with this server's ssh config, its own cache and temporary directories.
    fn tracetui(&self) -> Command {
        let mut c = Command::cargo_bin("tracetui").unwrap();
        let d = self.dir.path();
        c.env("TRACETUI_SSH_ARGS", format!("-F {}", d.join("ssh_config").display()))
            .env("TRACETUI_CACHE_DIR", d.join("cache"))
            .env("TMPDIR", d.join("tmp"))
            .env("XDG_CONFIG_HOME", d.join("config"))
            .env_remove("TRACETUI_SSH_DEBUG")
            .timeout(Duration::from_secs(180));
        c
    }
}

fn have(cmd: &str) -> bool {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {cmd}"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn keygen(path: &Path) {
    let ok = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "ssh-keygen");
}

/// The server, or None (the test skips, saying why).
fn start() -> Option<Sshd> {
    if !Path::new(SSHD).exists() || !have("ssh") || !have("ssh-keygen") {
        eprintln!("SKIPPED: the ssh:// tests need {SSHD}, ssh and ssh-keygen (apt-get install openssh-server)");
        return None;
    }
    // sshd started by root wants its privilege separation directory (the service makes it).
    if unsafe { libc::geteuid() } == 0
        && !Path::new("/run/sshd").exists()
        && std::fs::create_dir_all("/run/sshd").is_err()
    {
        eprintln!("SKIPPED: sshd needs /run/sshd, which cannot be made");
        return None;
    }
    let dir = tempfile::Builder::new().prefix("ts").tempdir_in("/tmp").unwrap();
    let d = dir.path();
    for sub in ["home", "cache", "tmp", "config"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    keygen(&d.join("host_key"));
    keygen(&d.join("client_key"));
    std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(
        d.join("sshd_config"),
        format!(
            "ListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
             PidFile {d}/sshd.pid\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nSetEnv HOME={d}/home\n",
            d = d.display()
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("ssh_config"),
        format!(
            "Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile {d}/known_hosts\n  IdentityFile {d}/client_key\n  IdentitiesOnly yes\n  LogLevel ERROR\n",
            d = d.display()
        ),
    )
    .unwrap();
    let child = std::process::Command::new(SSHD)
        .arg("-D")
        .arg("-f")
        .arg(d.join("sshd_config"))
        .arg("-p")
        .arg(port.to_string())
        .arg("-E")
        .arg(d.join("sshd.log"))
        .stdin(Stdio::null())
        .spawn()
        .expect("sshd runs");
    let s = Sshd { child, port, dir };
    // Up when a connection is accepted (a deadline that only catches a hang).
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(60), "sshd did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(s)
}

fn line(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

fn claude_line(i: usize, uuid: &str, parent: Option<&str>, kind: &str, text: &str) -> String {
    let ts = format!("2026-11-20T10:00:{:02}.000Z", i);
    let message = if kind == "assistant" {
        serde_json::json!({"model": "claude-sonnet-4-5", "id": format!("msg_{i}"), "type": "message",
            "role": "assistant", "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 100 + i, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 1000, "output_tokens": 20 + i}})
    } else {
        serde_json::json!({"role": "user", "content": text})
    };
    line(
        &serde_json::json!({"parentUuid": parent, "isSidechain": false, "userType": "external",
        "cwd": "/src/app", "sessionId": "aaaaaaaa-1111-4222-8333-444444444444", "version": "2.1.30",
        "type": kind, "uuid": uuid, "timestamp": ts, "message": message}),
    ) + "\n"
}

fn codex_rollout() -> String {
    let rec = |t: &str, ty: &str, payload: Value| {
        line(&serde_json::json!({"timestamp": t, "type": ty, "payload": payload})) + "\n"
    };
    let mut s = String::new();
    s += &rec(
        "2026-11-19T08:00:00.000Z",
        "session_meta",
        serde_json::json!({"id": "0196aaaa-0000-7000-8000-000000000001", "timestamp": "2026-11-19T08:00:00.000Z", "cwd": "/src/lib", "originator": "codex_cli_rs", "cli_version": "0.171.0"}),
    );
    s += &rec(
        "2026-11-19T08:00:00.100Z",
        "turn_context",
        serde_json::json!({"cwd": "/src/lib", "model": "gpt-5.1-codex"}),
    );
    s += &rec(
        "2026-11-19T08:00:00.200Z",
        "response_item",
        serde_json::json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the files"}]}),
    );
    s += &rec(
        "2026-11-19T08:00:01.000Z",
        "response_item",
        serde_json::json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "c1"}),
    );
    s += &rec(
        "2026-11-19T08:00:01.500Z",
        "response_item",
        serde_json::json!({"type": "function_call_output", "call_id": "c1", "output": "a.rs\nb.rs"}),
    );
    s += &rec(
        "2026-11-19T08:00:02.000Z",
        "event_msg",
        serde_json::json!({"type": "token_count", "info": {"total_token_usage": {"input_tokens": 5000, "cached_input_tokens": 4000, "output_tokens": 300, "reasoning_output_tokens": 100, "total_tokens": 5300}, "last_token_usage": {"input_tokens": 5000, "cached_input_tokens": 4000, "output_tokens": 300, "reasoning_output_tokens": 100, "total_tokens": 5300}}}),
    );
    s += &rec(
        "2026-11-19T08:00:03.000Z",
        "response_item",
        serde_json::json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Two files."}]}),
    );
    s
}

/// The remote home: a Claude Code project, a Codex rollout, and a directory whose name a
/// shell would expand or split.
fn seed(home: &Path) -> (PathBuf, PathBuf) {
    let claude = home.join(".claude/projects/-src-app");
    std::fs::create_dir_all(&claude).unwrap();
    let session = claude.join("aaaaaaaa-1111-4222-8333-444444444444.jsonl");
    let mut text = String::new();
    text += &claude_line(1, "u1", None, "user", "Read the notes");
    text += &claude_line(2, "u2", Some("u1"), "assistant", "Reading them.");
    text += &claude_line(3, "u3", Some("u2"), "user", "Thanks");
    text += &claude_line(4, "u4", Some("u3"), "assistant", "Done.");
    std::fs::write(&session, text).unwrap();
    let codex = home.join(".codex/sessions/2026/11/19");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::write(
        codex.join("rollout-2026-11-19T08-00-00-0196aaaa-0000-7000-8000-000000000001.jsonl"),
        codex_rollout(),
    )
    .unwrap();
    let odd = home.join("odd dir/it's $HOME \"q\" `x`");
    std::fs::create_dir_all(&odd).unwrap();
    std::fs::write(odd.join("s p.jsonl"), codex_rollout()).unwrap();
    (session, odd)
}

/// Every file and directory below `dir` with its length and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        let m = std::fs::symlink_metadata(&p).unwrap();
        out.insert(p.clone(), (m.len(), m.modified().unwrap()));
        if m.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        }
    }
    out
}

fn json_lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The rows of `ls --format json` by id, with the fields that must agree.
fn rows(out: &[u8]) -> BTreeMap<String, Value> {
    json_lines(out)
        .into_iter()
        .filter(|v| v.get("id").is_some())
        .map(|v| {
            let keep: serde_json::Map<String, Value> = [
                "format",
                "name",
                "start",
                "duration_ms",
                "tool_calls",
                "llm_calls",
                "errors",
                "tokens",
                "usage",
                "cost",
                "status",
                "project",
            ]
            .iter()
            .filter_map(|k| v.get(*k).map(|x| (k.to_string(), x.clone())))
            .collect();
            (v["id"].as_str().unwrap().to_string(), Value::Object(keep))
        })
        .collect()
}

/// No master left: the private socket directories are gone and no ssh runs on them.
fn no_connection_left(s: &Sshd) {
    let tmp = s.dir.path().join("tmp");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("tracetui-ssh-"))
        .collect();
    assert!(left.is_empty(), "socket directories left: {left:?}");
    let needle = tmp.to_string_lossy().into_owned();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(p.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            assert!(
                !(cmd.starts_with("ssh") && cmd.contains(&needle)),
                "an ssh still runs: {cmd}"
            );
        }
    }
}

#[test]
fn over_a_real_sshd() {
    let Some(s) = start() else { return };
    let home = s.home();
    let (session, odd) = seed(&home);
    let before = snapshot(&home);

    // `ls` of the machine's places equals `ls` of the same directories here.
    let remote = s
        .tracetui()
        .args(["ls", "--format", "json"])
        .arg(s.base())
        .output()
        .unwrap();
    assert!(remote.status.success(), "{}", String::from_utf8_lossy(&remote.stderr));
    // Here: the places of the same home, from inside it (no current-directory place).
    let mut here = s.tracetui();
    for v in ["XDG_DATA_HOME", "XDG_CONFIG_HOME"].into_iter().chain(
        tracetui::source::places::PLACES
            .iter()
            .filter_map(|p| p.env.map(|e| e.0)),
    ) {
        here.env_remove(v);
    }
    let local = here
        .env("HOME", &home)
        .current_dir(&home)
        .args(["ls", "--format", "json"])
        .output()
        .unwrap();
    assert!(local.status.success(), "{}", String::from_utf8_lossy(&local.stderr));
    let (r, l) = (rows(&remote.stdout), rows(&local.stdout));
    assert_eq!(r.len(), 2, "{}", String::from_utf8_lossy(&remote.stdout));
    assert_eq!(r, l);
    let claude = r.values().find(|v| v["format"] == "claude-code").unwrap();
    assert_eq!(claude["llm_calls"], 2);
    assert!(claude["tokens"].as_u64().unwrap() > 0);
    assert!(claude.get("usage").is_some(), "{claude}");
    // Paths name the remote, not the mirror.
    let paths: Vec<String> = json_lines(&remote.stdout)
        .iter()
        .filter_map(|v| v["path"].as_str().map(str::to_string))
        .collect();
    assert!(paths.contains(&s.url(&session)), "{paths:?}");
    assert!(!String::from_utf8_lossy(&remote.stdout).contains("/cache/"));
    no_connection_left(&s);

    // `show` of one session equals `show` of the file.
    let remote = s
        .tracetui()
        .args(["show", "--format", "json"])
        .arg(s.url(&session))
        .output()
        .unwrap();
    assert!(remote.status.success(), "{}", String::from_utf8_lossy(&remote.stderr));
    let local = s
        .tracetui()
        .args(["show", "--format", "json"])
        .arg(&session)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&remote.stdout).replace(&s.base(), "");
    assert_eq!(text, String::from_utf8_lossy(&local.stdout));
    let text = s.tracetui().arg("show").arg(s.url(&session)).output().unwrap();
    let local_text = s.tracetui().arg("show").arg(&session).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&s.url(&session)), "{text}");
    assert_eq!(text.replace(&s.base(), ""), String::from_utf8_lossy(&local_text.stdout));

    // A session the agent appends to: the next listing fetches the appended bytes only
    // (and the few before them it compares).
    let appended = claude_line(5, "u5", Some("u4"), "assistant", "One more thing.");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&session)
        .unwrap()
        .write_all(appended.as_bytes())
        .unwrap();
    let after = snapshot(&home);
    let out = s
        .tracetui()
        .env("TRACETUI_SSH_DEBUG", "1")
        .args(["ls", "--format", "json"])
        .arg(s.base())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!(
        "fetched 0 whole, 1 appended ranges, {} bytes",
        appended.len() as u64 + tracetui::source::ssh::OVERLAP
    );
    assert!(err.contains(&want), "{err}");
    let r = rows(&out.stdout);
    let claude = r.values().find(|v| v["format"] == "claude-code").unwrap();
    assert_eq!(claude["llm_calls"], 3);
    let mirror = std::fs::read(
        s.dir
            .path()
            .join(format!("cache/ssh/127.0.0.1_{}/fs", s.port))
            .join(session.strip_prefix("/").unwrap()),
    )
    .unwrap();
    assert_eq!(mirror, std::fs::read(&session).unwrap());
    // Nothing changed: nothing fetched.
    let out = s
        .tracetui()
        .env("TRACETUI_SSH_DEBUG", "1")
        .arg("ls")
        .arg(s.base())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("fetched 0 whole, 0 appended ranges, 0 bytes"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A path a shell would split, expand or end the quote of.
    let out = s
        .tracetui()
        .args(["ls", "--format", "json"])
        .arg(s.url(&odd))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = rows(&out.stdout);
    assert_eq!(r.len(), 1);
    assert_eq!(r.values().next().unwrap()["tool_calls"], 1);
    let out = s
        .tracetui()
        .arg("show")
        .arg(s.url(&odd.join("s p.jsonl")))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("shell"));

    // check, stats and grep read the same mirror.
    let out = s.tracetui().arg("check").arg(s.url(&session)).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = s
        .tracetui()
        .args(["grep", "One more thing"])
        .arg(s.base())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&s.base()),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = s
        .tracetui()
        .args(["stats", "--by", "model"])
        .arg(s.base())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("claude-sonnet-4-5"));

    // A missing path: one line naming it, exit 2.
    let out = s
        .tracetui()
        .arg("ls")
        .arg(s.url(&home.join("nowhere")))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("{}: no such file or directory", s.url(&home.join("nowhere")))),
        "{err}"
    );

    // A key the server does not know: BatchMode fails at once, one line, exit 2.
    let other = s.dir.path().join("other_key");
    keygen(&other);
    let cfg = s.dir.path().join("other_config");
    std::fs::write(
        &cfg,
        format!(
            "Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  IdentityFile {}\n  IdentitiesOnly yes\n  LogLevel ERROR\n",
            other.display()
        ),
    )
    .unwrap();
    let out = s
        .tracetui()
        .env("TRACETUI_SSH_ARGS", format!("-F {}", cfg.display()))
        .arg("ls")
        .arg(s.base())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&s.base()) && err.contains("Permission denied"), "{err}");

    // Nothing was written where the traces live (only the test's own append).
    assert_eq!(snapshot(&home), after);
    assert_ne!(before, after);
    no_connection_left(&s);
}

#[test]
fn an_unreachable_host_is_one_line_and_exit_2() {
    if !have("ssh") {
        eprintln!("SKIPPED: no ssh client");
        return;
    }
    // A port nothing listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("ssh_config");
    std::fs::write(
        &cfg,
        "Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n",
    )
    .unwrap();
    let url = format!("ssh://127.0.0.1:{port}");
    let out = Command::cargo_bin("tracetui")
        .unwrap()
        .env("TRACETUI_SSH_ARGS", format!("-F {}", cfg.display()))
        .env("TRACETUI_CACHE_DIR", dir.path().join("cache"))
        .arg("ls")
        .arg(&url)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!("tracetui: {url}: cannot connect")), "{err}");
    assert!(err.contains("Connection refused"), "{err}");
    // A bad URL never reaches ssh.
    let out = Command::cargo_bin("tracetui")
        .unwrap()
        .args(["ls", "ssh://-oProxyCommand=touch"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a host name"));
}

/// The explorer on a machine's places in a real terminal (tmux): the runs list says whose
/// places they are, an open session follows what the remote agent appends, and quitting
/// restores the terminal and closes the connection.
#[test]
fn the_explorer_follows_a_remote_session() {
    if !tmux::available() {
        eprintln!("SKIPPED: no tmux");
        return;
    }
    let Some(s) = start() else { return };
    let (session, _) = seed(&s.home());
    let d = s.dir.path();
    let bin = assert_cmd::cargo::cargo_bin("tracetui");
    let t = Tmux::start_sized(120, 40);
    t.type_line(&format!(
        "env TRACETUI_SSH_ARGS='-F {d}/ssh_config' TRACETUI_CACHE_DIR={d}/cache TMPDIR={d}/tmp XDG_CONFIG_HOME={d}/config {bin} {url}; echo EXIT=$?",
        d = d.display(),
        bin = bin.display(),
        url = s.base()
    ));
    let whose = format!("every agent's place on {}", s.base());
    let screen = t.wait_for("the runs list", |sc| {
        sc.contains(&whose) && sc.contains("List the files")
    });
    assert!(screen.contains("Read the notes"), "{screen}");
    // The newest run (the Claude Code session) is first: open it.
    t.keys(&["Enter"]);
    t.wait_for("the session", |sc| sc.contains("2 LLM calls"));
    std::fs::OpenOptions::new()
        .append(true)
        .open(&session)
        .unwrap()
        .write_all(claude_line(5, "u5", Some("u4"), "assistant", "Appended remotely.").as_bytes())
        .unwrap();
    t.wait_for("the appended call", |sc| sc.contains("3 LLM calls"));
    t.keys(&["q"]);
    std::thread::sleep(Duration::from_millis(200));
    t.keys(&["q"]);
    t.wait_for("the exit", |sc| sc.contains("EXIT=0"));
    drop(t);
    no_connection_left(&s);
}
