//! The end-to-end tests' terminal: the real binary in tmux, driven by keys and read from the
//! screen. Each `Tmux` is its own tmux server (`-L`), so nothing touches the user's sessions.
#![allow(dead_code)] // each test file uses some of it

use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub const PROMPT: &str = "E2E$";

pub struct Tmux {
    pub socket: String,
}

static N: AtomicUsize = AtomicUsize::new(0);

pub fn available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

impl Tmux {
    /// A fresh server with one 120x40 pane running a plain shell in the crate root.
    pub fn start() -> Tmux {
        Tmux::start_sized(120, 40)
    }

    pub fn start_sized(w: u16, h: u16) -> Tmux {
        let socket = format!(
            "tracetui-e2e-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let t = Tmux { socket };
        let root = env!("CARGO_MANIFEST_DIR");
        let shell = format!("env PS1='{PROMPT} ' HISTFILE=/dev/null bash --norc --noprofile -i");
        let (w, h) = (w.to_string(), h.to_string());
        t.ok(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "e2e",
            "-x",
            &w,
            "-y",
            &h,
            "-c",
            root,
            &shell,
        ]);
        // OSC 52 from the pane becomes a tmux paste buffer: what reaches the "clipboard" is visible.
        t.ok(&["set-option", "-g", "set-clipboard", "on"]);
        t.ok(&["set-option", "-s", "escape-time", "0"]);
        t.ok(&["select-pane", "-t", "e2e", "-T", "e2e-title"]);
        t.wait_for("the shell prompt", |s| s.contains(PROMPT));
        t
    }

    pub fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs")
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    pub fn screen(&self) -> String {
        self.ok(&["capture-pane", "-p", "-t", "e2e"])
    }

    pub fn var(&self, name: &str) -> String {
        self.ok(&["display-message", "-p", "-t", "e2e", &format!("#{{{name}}}")])
            .trim()
            .to_string()
    }

    /// Keys as tmux names them ("Enter", "Escape", "C-c", "j"). Escape is sent on its own and
    /// followed by a pause, so that the next key is not read as Alt+key.
    pub fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.ok(&["send-keys", "-t", "e2e", k]);
            std::thread::sleep(Duration::from_millis(if *k == "Escape" { 150 } else { 40 }));
        }
    }

    pub fn type_text(&self, text: &str) {
        self.ok(&["send-keys", "-t", "e2e", "-l", text]);
        std::thread::sleep(Duration::from_millis(100));
    }

    /// A shell command line, typed and run.
    pub fn type_line(&self, text: &str) {
        self.type_text(text);
        self.keys(&["Enter"]);
    }

    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                // A capture can land in the middle of a frame being drawn: accept the
                // screen only once it holds still.
                std::thread::sleep(Duration::from_millis(200));
                let again = self.screen();
                if again == s {
                    return s;
                }
                continue;
            }
            // Only a hang: a loaded CI machine may take many seconds to draw.
            if start.elapsed() > Duration::from_secs(90) {
                panic!("timed out waiting for {what}; the screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn buffers(&self) -> String {
        self.ok(&["list-buffers", "-F", "#{buffer_sample}"])
    }

    /// The terminal is back to normal: main screen, cursor shown, no mouse reporting, the
    /// shell prompt on screen.
    pub fn assert_restored(&self) {
        let s = self.wait_for("the shell prompt after quitting", |s| {
            s.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.starts_with(PROMPT))
        });
        assert_eq!(self.var("alternate_on"), "0", "alternate screen left\n{s}");
        assert_eq!(self.var("cursor_flag"), "1", "cursor visible");
        assert_eq!(self.var("mouse_any_flag"), "0", "mouse reporting off");
        assert_eq!(self.var("mouse_standard_flag"), "0", "mouse reporting off");
        assert_eq!(self.var("pane_title"), "e2e-title", "title untouched");
    }

    pub fn launch(&self, args: &str) {
        let bin = env!("CARGO_BIN_EXE_tracetui");
        self.type_text(&format!("{bin} {args}"));
        self.keys(&["Enter"]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}
