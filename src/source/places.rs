//! The places where agents and recorders write their runs, as data: `tracetui` with no PATH
//! opens every run found in them, `tracetui sources` lists them. Adding an agent's place is one
//! row of [`PLACES`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What a place's path is relative to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// The home directory (`HOME`).
    Home,
    /// `$XDG_DATA_HOME`, else `~/.local/share`.
    XdgData,
    /// `$XDG_CONFIG_HOME`, else `~/.config` (VS Code keeps its user data there on Linux).
    XdgConfig,
    /// The current directory (paths stay relative, as the user would type them).
    Cwd,
}

/// Which systems a place exists on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Os {
    Any,
    MacOs,
    NotMacOs,
}

/// How a run's project is read from its path below the place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Project {
    /// The first directory below the place names the project (Claude Code's
    /// `projects/<encoded cwd>/`, Cursor's `projects/<encoded path>/`, Gemini CLI's
    /// `tmp/<project hash>/`).
    FirstDir,
    /// No project in the layout: the run's parent directory relative to the place.
    Parent,
    /// A directory a run and no project (gptme's `logs/<conversation>/`): none.
    None,
}

/// One place runs are looked for.
#[derive(Clone, Copy, Debug)]
pub struct Place {
    /// The agent or recorder that writes here (its format id where tracetui reads it).
    pub agent: &'static str,
    /// Where it is by default, relative to `base`.
    pub base: Base,
    pub default: &'static str,
    /// An environment variable that moves it, and the place relative to that variable's
    /// directory (`CLAUDE_CONFIG_DIR` replaces `~/.claude`, so `projects` is below it).
    pub env: Option<(&'static str, &'static str)>,
    pub os: Os,
    pub project: Project,
    /// The format of every `.jsonl` file below the place, when the agent writes nothing else
    /// there: those files are not detected one by one (detection read the head of each of
    /// 2,000 sessions, as long as summarizing them took). A file that is not of it fails to
    /// load with a message, so nothing is lost silently.
    pub jsonl: Option<&'static str>,
}

const fn home(agent: &'static str, default: &'static str, env: Option<(&'static str, &'static str)>) -> Place {
    Place {
        agent,
        base: Base::Home,
        default,
        env,
        os: Os::Any,
        project: Project::Parent,
        jsonl: None,
    }
}

const fn cwd(agent: &'static str, default: &'static str) -> Place {
    Place {
        agent,
        base: Base::Cwd,
        default,
        env: None,
        os: Os::Any,
        project: Project::Parent,
        jsonl: None,
    }
}

/// Its `.jsonl` files are of this format.
const fn jsonl(format: &'static str, p: Place) -> Place {
    Place {
        jsonl: Some(format),
        ..p
    }
}

const fn by_project(p: Place) -> Place {
    Place {
        project: Project::FirstDir,
        ..p
    }
}

/// Cline's VS Code extension keeps its tasks in the editor's global storage.
const CLINE_VSCODE: &str = "Code/User/globalStorage/saoudrizwan.claude-dev/tasks";

/// Every place, in the order `tracetui sources` lists them.
pub static PLACES: &[Place] = &[
    jsonl(
        "claude-code",
        by_project(home(
            "claude-code",
            ".claude/projects",
            Some(("CLAUDE_CONFIG_DIR", "projects")),
        )),
    ),
    jsonl(
        "codex",
        home("codex", ".codex/sessions", Some(("CODEX_HOME", "sessions"))),
    ),
    // Gemini CLI's GEMINI_CLI_HOME stands for the home directory (its `.gemini` is below it).
    by_project(home(
        "gemini-cli",
        ".gemini/tmp",
        Some(("GEMINI_CLI_HOME", ".gemini/tmp")),
    )),
    // COPILOT_HOME replaces `~/.copilot` (GitHub's docs: it supersedes `--config-dir`).
    home(
        "copilot-cli",
        ".copilot/session-state",
        Some(("COPILOT_HOME", "session-state")),
    ),
    by_project(home("cursor", ".cursor/projects", None)),
    Place {
        agent: "opencode",
        base: Base::XdgData,
        default: "opencode",
        env: None,
        os: Os::Any,
        project: Project::Parent,
        jsonl: None,
    },
    home("cline", ".cline/data/tasks", None),
    Place {
        agent: "cline",
        base: Base::XdgConfig,
        default: CLINE_VSCODE,
        env: None,
        os: Os::NotMacOs,
        project: Project::Parent,
        jsonl: None,
    },
    Place {
        agent: "cline",
        base: Base::Home,
        default: "Library/Application Support/Code/User/globalStorage/saoudrizwan.claude-dev/tasks",
        env: None,
        os: Os::MacOs,
        project: Project::Parent,
        jsonl: None,
    },
    // OpenHands (V1, the SDK and CLI) keeps a folder per conversation.
    home("openhands", ".openhands/conversations", None),
    cwd("agentdbg, maida", "runs"),
    cwd("assay, maida", "traces"),
    cwd("assay", ".assay/traces"),
    cwd("openai-chat", ".invariant"),
    cwd("agentsnap", "__agentsnap__"),
    // Inspect AI's default log directory (INSPECT_LOG_DIR moves it, relative to the current one).
    Place {
        env: Some(("INSPECT_LOG_DIR", "")),
        ..cwd("inspect-ai", "logs")
    },
    // SWE-agent writes trajectories/<user>/<run>/<instance>/<instance>.traj.
    cwd("swe-agent", "trajectories"),
    // Factory Droid: `sessions/<encoded cwd>/<id>.jsonl` (and `<id>.settings.json`).
    // FACTORY_DIR stands for `~/.factory`, as ccusage's Droid reader takes it.
    jsonl(
        "factory-droid",
        by_project(home(
            "factory-droid",
            ".factory/sessions",
            Some(("FACTORY_DIR", "sessions")),
        )),
    ),
    // Kimi Code: `sessions/wd_<dir>_<hash>/<session>/agents/<agent>/wire.jsonl`; KIMI_CODE_HOME
    // stands for `~/.kimi-code`.
    by_project(home(
        "kimi-cli",
        ".kimi-code/sessions",
        Some(("KIMI_CODE_HOME", "sessions")),
    )),
    // pi: `sessions/--<cwd>--/<time>_<id>.jsonl`; PI_CODING_AGENT_DIR stands for `~/.pi/agent`.
    jsonl(
        "pi",
        by_project(home(
            "pi",
            ".pi/agent/sessions",
            Some(("PI_CODING_AGENT_DIR", "sessions")),
        )),
    ),
    // Mistral Vibe: a directory a session; VIBE_HOME stands for `~/.vibe`.
    home(
        "mistral-vibe",
        ".vibe/logs/session",
        Some(("VIBE_HOME", "logs/session")),
    ),
    // gptme: `logs/<date>-<name>/conversation.jsonl` in its data dir (platformdirs').
    Place {
        agent: "gptme",
        base: Base::XdgData,
        default: "gptme/logs",
        env: None,
        os: Os::NotMacOs,
        project: Project::None,
        jsonl: None,
    },
    Place {
        agent: "gptme",
        base: Base::Home,
        default: "Library/Application Support/gptme/logs",
        env: None,
        os: Os::MacOs,
        project: Project::None,
        jsonl: None,
    },
    // Zed's agent threads: threads/threads.db in its data dir (Flatpak's data dir first).
    Place {
        agent: "zed",
        base: Base::XdgData,
        default: "zed/threads",
        env: Some(("FLATPAK_XDG_DATA_HOME", "zed/threads")),
        os: Os::NotMacOs,
        project: Project::Parent,
        jsonl: None,
    },
    Place {
        agent: "zed",
        base: Base::Home,
        default: "Library/Application Support/Zed/threads",
        env: None,
        os: Os::MacOs,
        project: Project::Parent,
        jsonl: None,
    },
    // goose: sessions/sessions.db in its data dir (the XDG layout on macOS too);
    // `GOOSE_PATH_ROOT` moves all of goose's dirs below it (`data/`).
    Place {
        agent: "goose",
        base: Base::XdgData,
        default: "goose/sessions",
        env: Some(("GOOSE_PATH_ROOT", "data/sessions")),
        os: Os::Any,
        project: Project::Parent,
        jsonl: None,
    },
    // Roo Code and Kilo Code (Cline's forks) keep tasks in VS Code's global storage too, under
    // their own extension ids; the first Kilo CLI in ~/.kilocode.
    Place {
        agent: "roo-code",
        base: Base::XdgConfig,
        default: "Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks",
        env: None,
        os: Os::NotMacOs,
        project: Project::Parent,
        jsonl: None,
    },
    Place {
        agent: "roo-code",
        base: Base::Home,
        default: "Library/Application Support/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks",
        env: None,
        os: Os::MacOs,
        project: Project::Parent,
        jsonl: None,
    },
    Place {
        agent: "kilo-code",
        base: Base::XdgConfig,
        default: "Code/User/globalStorage/kilocode.kilo-code/tasks",
        env: None,
        os: Os::NotMacOs,
        project: Project::Parent,
        jsonl: None,
    },
    Place {
        agent: "kilo-code",
        base: Base::Home,
        default: "Library/Application Support/Code/User/globalStorage/kilocode.kilo-code/tasks",
        env: None,
        os: Os::MacOs,
        project: Project::Parent,
        jsonl: None,
    },
    home("kilo-code", ".kilocode/cli/global/tasks", None),
    // iFlow CLI: `projects/<encoded cwd>/session-<id>.jsonl`, Claude Code-shaped. No variable
    // moves `~/.iflow` (its IFLOW_* variables are settings).
    jsonl("iflow", by_project(home("iflow", ".iflow/projects", None))),
    // Qwen Code: `projects/<sanitized cwd>/chats/<sessionId>.jsonl`; QWEN_HOME stands for
    // `~/.qwen` (QWEN_RUNTIME_DIR, which wins over it for sessions, is given as PATH).
    jsonl(
        "qwen-code",
        by_project(home("qwen-code", ".qwen/projects", Some(("QWEN_HOME", "projects")))),
    ),
    // GitHub Copilot Chat keeps a workspace's chat sessions in VS Code's workspace storage,
    // `workspaceStorage/<hash>/chatSessions/<id>.jsonl`: the hash directory is the project
    // (its `workspace.json` names the folder, shown as the run's `workspace`).
    Place {
        agent: "copilot-chat",
        base: Base::XdgConfig,
        default: "Code/User/workspaceStorage",
        env: None,
        os: Os::NotMacOs,
        project: Project::FirstDir,
        jsonl: None,
    },
    Place {
        agent: "copilot-chat",
        base: Base::Home,
        default: "Library/Application Support/Code/User/workspaceStorage",
        env: None,
        os: Os::MacOs,
        project: Project::FirstDir,
        jsonl: None,
    },
];

/// A place resolved against the environment.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub place: &'static Place,
    pub path: PathBuf,
    /// The environment variable that chose the path, when one did.
    pub via: Option<&'static str>,
}

impl Resolved {
    pub fn exists(&self) -> bool {
        self.path.is_dir()
    }
}

/// The places on this system, resolved with `env` (`std::env::var_os` in the program, a map in
/// tests). Places relative to a home directory are left out when there is none.
pub fn resolve(env: &dyn Fn(&str) -> Option<OsString>) -> Vec<Resolved> {
    resolve_for(env, cfg!(target_os = "macos"))
}

/// [`resolve`] for a system that is macOS or not (`mac`): another machine's places, read
/// over ssh ([`super::ssh`]).
pub fn resolve_for(env: &dyn Fn(&str) -> Option<OsString>, mac: bool) -> Vec<Resolved> {
    let set = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = set("HOME");
    let mut out = Vec::new();
    for p in PLACES {
        match p.os {
            Os::MacOs if !mac => continue,
            Os::NotMacOs if mac => continue,
            _ => {}
        }
        if let Some((var, sub)) = p.env
            && let Some(dir) = set(var)
        {
            out.push(Resolved {
                place: p,
                path: dir.join(sub),
                via: Some(var),
            });
            continue;
        }
        let (base, via) = match p.base {
            Base::Cwd => (Some(PathBuf::new()), None),
            Base::Home => (home.clone(), None),
            Base::XdgData => match set("XDG_DATA_HOME") {
                Some(d) => (Some(d), Some("XDG_DATA_HOME")),
                None => (home.as_ref().map(|h| h.join(".local/share")), None),
            },
            Base::XdgConfig => match set("XDG_CONFIG_HOME") {
                Some(d) => (Some(d), Some("XDG_CONFIG_HOME")),
                None => (home.as_ref().map(|h| h.join(".config")), None),
            },
        };
        if let Some(b) = base {
            out.push(Resolved {
                place: p,
                path: b.join(p.default),
                via,
            });
        }
    }
    out
}

/// [`resolve`] with the process's environment; another machine's places instead when an
/// `ssh://host` source stands for them ([`set_remote`]).
pub fn resolve_env() -> Vec<Resolved> {
    if let Some(r) = REMOTE.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return r.clone();
    }
    resolve(&|k| std::env::var_os(k))
}

static REMOTE: std::sync::RwLock<Option<Vec<Resolved>>> = std::sync::RwLock::new(None);

/// Read `places` (another machine's, in its local mirror: `tracetui ssh://host` without a
/// path) where this machine's would be: a command without PATH and the explorer use them.
/// Several machines' places add up.
pub fn set_remote(places: Vec<Resolved>) {
    REMOTE
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(Vec::new)
        .extend(places);
}

/// Whether `dir` is the root of an agent's known layout (`…/.claude/projects`,
/// `…/.codex/sessions`, …): a scan that reaches it starts counting depth again from there, so
/// that runs in these layouts are found whatever directory the scan started from.
pub fn is_layout_root(dir: &Path) -> bool {
    layout_of(dir).is_some()
}

/// The place whose layout `dir` is the root of ([`is_layout_root`]).
pub fn layout_of(dir: &Path) -> Option<&'static Place> {
    PLACES
        .iter()
        .filter(|p| p.base != Base::Cwd)
        .find(|p| dir.ends_with(p.default) || p.env.is_some_and(|(_, sub)| sub.contains('/') && dir.ends_with(sub)))
}

/// The project of a run at `path` found below `root`: the agent's project directory where
/// the place's layout has one, else the run's parent directory relative to `root`.
pub fn project(root: &Path, path: &Path, places: &[Resolved]) -> String {
    // The place the run is in decides; a path in no place is read relative to the scan's root.
    let (rule, base) = match places.iter().find(|r| path.starts_with(&r.path) && path != r.path) {
        Some(r) => (r.place.project, r.path.as_path()),
        None => (Project::Parent, root),
    };
    let Ok(rel) = path.strip_prefix(base) else {
        return path.parent().map(|p| p.display().to_string()).unwrap_or_default();
    };
    match rule {
        Project::FirstDir => {
            let mut c = rel.components();
            match (c.next(), c.next()) {
                (Some(first), Some(_)) => first.as_os_str().to_string_lossy().into_owned(),
                _ => String::new(),
            }
        }
        Project::Parent => rel
            .parent()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default(),
        Project::None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let m: HashMap<String, OsString> = pairs.iter().map(|(k, v)| (k.to_string(), (*v).into())).collect();
        move |k| m.get(k).cloned()
    }

    fn path_of<'a>(r: &'a [Resolved], agent: &str) -> &'a Path {
        &r.iter().find(|r| r.place.agent == agent).unwrap().path
    }

    #[test]
    fn defaults_are_below_home_and_the_current_directory() {
        let r = resolve(&env(&[("HOME", "/h")]));
        assert_eq!(path_of(&r, "claude-code"), Path::new("/h/.claude/projects"));
        assert_eq!(path_of(&r, "codex"), Path::new("/h/.codex/sessions"));
        assert_eq!(path_of(&r, "gemini-cli"), Path::new("/h/.gemini/tmp"));
        assert_eq!(path_of(&r, "copilot-cli"), Path::new("/h/.copilot/session-state"));
        assert_eq!(path_of(&r, "opencode"), Path::new("/h/.local/share/opencode"));
        assert_eq!(path_of(&r, "agentsnap"), Path::new("__agentsnap__"));
        assert!(r.iter().all(|r| r.via.is_none()));
    }

    #[test]
    fn the_agents_variables_move_their_places() {
        let r = resolve(&env(&[
            ("HOME", "/h"),
            ("CLAUDE_CONFIG_DIR", "/c"),
            ("CODEX_HOME", "/x"),
            ("GEMINI_CLI_HOME", "/g"),
            ("COPILOT_HOME", "/p"),
            ("XDG_DATA_HOME", "/d"),
            ("XDG_CONFIG_HOME", "/cfg"),
        ]));
        assert_eq!(path_of(&r, "claude-code"), Path::new("/c/projects"));
        assert_eq!(path_of(&r, "codex"), Path::new("/x/sessions"));
        assert_eq!(path_of(&r, "gemini-cli"), Path::new("/g/.gemini/tmp"));
        assert_eq!(path_of(&r, "copilot-cli"), Path::new("/p/session-state"));
        assert_eq!(path_of(&r, "opencode"), Path::new("/d/opencode"));
        assert_eq!(path_of(&r, "goose"), Path::new("/d/goose/sessions"));
        let g = resolve(&env(&[("HOME", "/h"), ("GOOSE_PATH_ROOT", "/gr")]));
        assert_eq!(path_of(&g, "goose"), Path::new("/gr/data/sessions"));
        let claude = r.iter().find(|r| r.place.agent == "claude-code").unwrap();
        assert_eq!(claude.via, Some("CLAUDE_CONFIG_DIR"));
        if !cfg!(target_os = "macos") {
            assert!(r.iter().any(|r| r.path == Path::new("/cfg").join(CLINE_VSCODE)));
            assert_eq!(path_of(&r, "zed"), Path::new("/d/zed/threads"));
            let r = resolve(&env(&[("HOME", "/h"), ("FLATPAK_XDG_DATA_HOME", "/f")]));
            assert_eq!(path_of(&r, "zed"), Path::new("/f/zed/threads"));
            assert!(r.iter().any(|r| r.path
                == Path::new("/h/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks")));
            assert!(r.iter().any(|r| r.path == Path::new("/h/.kilocode/cli/global/tasks")));
        }
    }

    #[test]
    fn without_a_home_only_the_current_directory_and_set_variables_remain() {
        let r = resolve(&env(&[("CODEX_HOME", "/x")]));
        assert!(r.iter().any(|r| r.place.agent == "codex"));
        assert!(!r.iter().any(|r| r.place.agent == "claude-code"));
        assert!(r.iter().any(|r| r.path == Path::new("runs")));
    }

    #[test]
    fn layout_roots_are_recognised_wherever_they_are() {
        assert!(is_layout_root(Path::new("/a/b/.claude/projects")));
        assert!(is_layout_root(Path::new("/a/.codex/sessions")));
        assert!(!is_layout_root(Path::new("/a/sessions")));
        assert!(!is_layout_root(Path::new("/a/runs")));
    }

    #[test]
    fn projects_come_from_the_layout() {
        let r = resolve(&env(&[("HOME", "/h")]));
        let claude = Path::new("/h/.claude/projects");
        assert_eq!(
            project(claude, &claude.join("-home-a-proj/s1.jsonl"), &r),
            "-home-a-proj"
        );
        // Scanned from above the place, the place's rule still applies.
        assert_eq!(
            project(Path::new("/h/.claude"), &claude.join("-home-a-proj/s1.jsonl"), &r),
            "-home-a-proj"
        );
        let codex = Path::new("/h/.codex/sessions");
        assert_eq!(
            project(codex, &codex.join("2026/11/20/rollout-1.jsonl"), &r),
            "2026/11/20"
        );
        assert_eq!(project(Path::new("/t"), Path::new("/t/a/b/run"), &r), "a/b");
        assert_eq!(project(Path::new("/t"), Path::new("/t/run"), &r), "");
    }
}
