//! Terminal lifecycle. The terminal is restored however the program ends: on quit, on an
//! error (the guard's drop), on a panic of the UI thread (the hook restores before the message
//! prints), and on SIGTERM / SIGHUP / SIGINT / SIGQUIT / SIGUSR1 / SIGUSR2 / SIGALRM (a flag
//! the event loop checks, then a normal exit). SIGTSTP (Ctrl-Z) restores the terminal and
//! stops; on SIGCONT the explorer takes the terminal back and draws again.
//!
//! Restoring takes no lock the UI thread can hold: the escape sequences go to the terminal by
//! `write(2)` on file descriptor 1 (not through `Stdout`, whose lock `main` or a frame may
//! hold), and the terminal mode saved at entry is put back by `tcsetattr`. A stuck event loop
//! therefore cannot keep a signal from restoring the terminal and ending the process.

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::io::{BufWriter, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Set when the explorer took the terminal back after a stop: the next frame redraws all.
static RESUMED: AtomicBool = AtomicBool::new(false);
/// The terminal's mode before raw mode: (file descriptor, termios), saved once at entry.
#[cfg(unix)]
static SAVED_MODE: OnceLock<(i32, libc::termios)> = OnceLock::new();
static UI_THREAD: OnceLock<std::thread::ThreadId> = OnceLock::new();
/// The message of the last panic on a background thread (reported through the UI instead of
/// being printed over the screen).
static BACKGROUND_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Frames are written through a large buffer: one write per frame, so a terminal (or tmux)
/// never shows half of one.
pub type Term = Terminal<CrosstermBackend<BufWriter<Stdout>>>;

/// Restores the terminal when dropped.
pub struct Guard {
    pub term: Term,
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Enter raw mode, the alternate screen and mouse reporting.
pub fn enter() -> std::io::Result<Guard> {
    let _ = UI_THREAD.set(std::thread::current().id());
    install_panic_hook();
    #[cfg(unix)]
    save_mode();
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = std::io::stdout();
    if let Err(e) = execute!(out, EnterAlternateScreen, EnableMouseCapture) {
        restore();
        return Err(e);
    }
    let mut term = match Terminal::new(CrosstermBackend::new(BufWriter::with_capacity(
        1 << 20,
        std::io::stdout(),
    ))) {
        Ok(t) => t,
        Err(e) => {
            restore();
            return Err(e);
        }
    };
    term.hide_cursor()?;
    term.clear()?;
    Ok(Guard { term })
}

/// Leave the alternate screen, stop mouse reporting, show the cursor, leave raw mode.
/// Idempotent and best effort: it runs from drop, the panic hook and error paths.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    leave_screen();
    #[cfg(unix)]
    if let Some((fd, mode)) = SAVED_MODE.get() {
        // SAFETY: a termios read from this descriptor at entry; tcsetattr takes no lock of ours.
        unsafe { libc::tcsetattr(*fd, libc::TCSANOW, mode) };
        return;
    }
    let _ = disable_raw_mode();
}

/// The sequences that leave the screen as it was, written straight to file descriptor 1.
fn leave_screen() {
    write_ansi(&[&DisableMouseCapture, &LeaveAlternateScreen, &crossterm::cursor::Show]);
}

/// Write commands' escape sequences by `write(2)`, bypassing `Stdout` and its lock.
fn write_ansi(cmds: &[&dyn AnsiCommand]) {
    let mut s = String::new();
    for c in cmds {
        c.ansi(&mut s);
    }
    write_fd1(s.as_bytes());
}

/// `crossterm::Command` is not object safe; this is the part of it used here.
trait AnsiCommand {
    fn ansi(&self, s: &mut String);
}

impl<T: crossterm::Command> AnsiCommand for T {
    fn ansi(&self, s: &mut String) {
        let _ = self.write_ansi(s);
    }
}

fn write_fd1(mut bytes: &[u8]) {
    #[cfg(unix)]
    while !bytes.is_empty() {
        // SAFETY: a valid buffer and length; fd 1 may be closed, which only fails the write.
        let n = unsafe { libc::write(1, bytes.as_ptr().cast(), bytes.len()) };
        if n <= 0 {
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        bytes = &bytes[n as usize..];
    }
    #[cfg(not(unix))]
    {
        use std::io::Write;
        let _ = std::io::stdout().write_all(bytes);
        let _ = std::io::stdout().flush();
    }
}

/// The terminal crossterm puts in raw mode: standard input when it is one, else /dev/tty.
#[cfg(unix)]
fn save_mode() {
    use std::os::fd::IntoRawFd;
    if SAVED_MODE.get().is_some() {
        return;
    }
    // SAFETY: isatty on a descriptor number.
    let fd = if unsafe { libc::isatty(0) } == 1 {
        0
    } else {
        match std::fs::File::open("/dev/tty") {
            // Kept open for the process's life: restore may need it at any moment.
            Ok(f) => f.into_raw_fd(),
            Err(_) => return,
        }
    };
    // SAFETY: a zeroed termios is a valid out-parameter for tcgetattr.
    let mut mode: libc::termios = unsafe { std::mem::zeroed() };
    if unsafe { libc::tcgetattr(fd, &mut mode) } == 0 {
        let _ = SAVED_MODE.set((fd, mode));
    }
}

/// Ctrl-Z: give the terminal back as it was, then stop as a stopped program does.
#[cfg(unix)]
fn suspend() -> bool {
    if !ACTIVE.load(Ordering::SeqCst) {
        return false;
    }
    restore();
    true
}

/// Continued after a stop: raw mode, the alternate screen and the mouse again; the next frame
/// draws everything.
#[cfg(unix)]
fn resume() {
    if let Some((fd, mode)) = SAVED_MODE.get() {
        let mut raw = *mode;
        // SAFETY: a copy of the saved termios, made raw as crossterm makes it.
        unsafe {
            libc::cfmakeraw(&mut raw);
            libc::tcsetattr(*fd, libc::TCSANOW, &raw);
        }
    }
    write_ansi(&[&EnterAlternateScreen, &EnableMouseCapture, &crossterm::cursor::Hide]);
    ACTIVE.store(true, Ordering::SeqCst);
    RESUMED.store(true, Ordering::SeqCst);
}

/// Show `text` in the user's pager (`$PAGER`, else `less`): the explorer gives the terminal
/// back while the pager runs and takes it again after.
#[cfg(unix)]
pub fn page(text: &str) -> std::io::Result<()> {
    let pager = command_from(&["PAGER"], "less");
    restore();
    let shown = view_in(&pager, text);
    resume();
    shown
}

/// Open `text` in the user's editor (`$VISUAL`, `$EDITOR`, else `vi`), likewise. What the
/// editor saves is not read back: the file is removed after.
#[cfg(unix)]
pub fn edit(text: &str) -> std::io::Result<()> {
    let editor = command_from(&["VISUAL", "EDITOR"], "vi");
    restore();
    let shown = view_in(&editor, text);
    resume();
    shown
}

/// The first of these variables that is set and not blank, else `default`.
fn command_from(vars: &[&str], default: &str) -> String {
    vars.iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|p| !p.trim().is_empty())
        .unwrap_or_else(|| default.into())
}

/// Write `text` to a private temporary file (created anew, mode 0600, in the system's
/// temporary directory, never beside the trace), run `cmd FILE` through the shell (so
/// `PAGER="less -R"` works), and remove the file after.
#[cfg(unix)]
pub fn view_in(cmd: &str, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    // tempfile opens with O_CREAT | O_EXCL and mode 0600; the file is removed on drop.
    let mut file = tempfile::Builder::new()
        .prefix("tracetui-")
        .suffix(".txt")
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(std::env::temp_dir())?;
    file.write_all(text.as_bytes())?;
    file.flush()?;
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} \"$1\""))
        .arg("sh")
        .arg(file.path())
        .status()
        .map_err(|e| std::io::Error::new(e.kind(), format!("{cmd}: {e}")))?;
    file.close()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("{cmd} exited with {status}")))
    }
}

/// Ctrl-Z pressed in raw mode (where the terminal sends no SIGTSTP): send it to ourselves,
/// so that the signal thread gives the terminal back and stops the process.
pub fn stop_self() {
    #[cfg(unix)]
    // SAFETY: raising a signal whose handler is installed (quit_signals).
    unsafe {
        libc::raise(libc::SIGTSTP);
    }
}

/// Whether the explorer came back from a stop since the last call (the screen must be drawn
/// anew: the shell drew over it).
pub fn take_resumed() -> bool {
    RESUMED.swap(false, Ordering::SeqCst)
}

fn install_panic_hook() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let on_ui = UI_THREAD.get().is_none_or(|id| *id == std::thread::current().id());
            if on_ui || !ACTIVE.load(Ordering::SeqCst) {
                restore();
                prev(info);
            } else if let Ok(mut slot) = BACKGROUND_PANIC.lock() {
                // A loader or search thread: the UI reports it; printing now would draw over
                // the screen.
                *slot = Some(info.to_string());
            }
        }));
    });
}

/// Take the message of a background panic, if one happened.
pub fn take_background_panic() -> Option<String> {
    BACKGROUND_PANIC.lock().ok().and_then(|mut s| s.take())
}

/// A flag set by SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2 and SIGALRM (their
/// default is to end the process, so they do, with the terminal restored). The event loop sees
/// it within a tick and ends normally. A thread stands by in case it cannot: on a terminal that hung up, crossterm's
/// reader can spin inside `event::poll` forever, timeout or not (crossterm#793), and the
/// process would outlive its terminal burning a core. After a grace period that thread
/// restores what can be restored and exits.
pub fn quit_signals() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGALRM, SIGCONT, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP, SIGUSR1, SIGUSR2};
        const QUIT: [i32; 7] = [SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM];
        let mut all = QUIT.to_vec();
        all.extend([SIGTSTP, SIGCONT]);
        if let Ok(mut signals) = signal_hook::iterator::Signals::new(all) {
            let f = flag.clone();
            let _ = std::thread::Builder::new().name("signals".into()).spawn(move || {
                for sig in signals.forever() {
                    match sig {
                        SIGTSTP => {
                            let was = suspend();
                            // Stop as the default action would; this returns on SIGCONT.
                            let _ = signal_hook::low_level::emulate_default_handler(SIGTSTP);
                            if was {
                                resume();
                            }
                        }
                        // Continued by someone else than a Ctrl-Z we saw: take the screen
                        // back only if we gave it up.
                        SIGCONT => {}
                        _ => {
                            f.store(true, Ordering::SeqCst);
                            // A hung-up terminal makes crossterm's reader spin on its end of
                            // file (crossterm#793) and the loop cannot end by itself: leave
                            // sooner than for a signal the loop can answer.
                            let grace = if sig == SIGHUP { HANGUP_GRACE } else { QUIT_GRACE };
                            exit_if_still_running(128 + sig, grace);
                        }
                    }
                }
            });
        }
        let f = flag.clone();
        let _ = std::thread::Builder::new()
            .name("tty-watch".into())
            .spawn(move || watch_hangup(&f));
    }
    flag
}

/// How long the event loop has to end by itself after a quit signal, and after a hang-up.
#[cfg(unix)]
const QUIT_GRACE: std::time::Duration = std::time::Duration::from_millis(500);
#[cfg(unix)]
const HANGUP_GRACE: std::time::Duration = std::time::Duration::from_millis(50);

/// Give the event loop a moment to end by itself, then end the process from here.
#[cfg(unix)]
fn exit_if_still_running(code: i32, grace: std::time::Duration) {
    std::thread::sleep(grace);
    restore();
    std::process::exit(code);
}

/// A terminal can vanish without a SIGHUP reaching us (a multiplexer killed, a nohup'd
/// shell): look at the terminal every half second, and quit once it has hung up.
#[cfg(unix)]
fn watch_hangup(flag: &AtomicBool) {
    use std::os::fd::AsRawFd;
    // The terminal crossterm reads: standard input when it is one, else /dev/tty. A pipe on
    // standard input reaching its end is no hang-up.
    let tty = if unsafe { libc::isatty(0) } == 1 {
        None
    } else {
        match std::fs::File::open("/dev/tty") {
            Ok(f) => Some(f),
            Err(_) => return,
        }
    };
    let fd = tty.as_ref().map_or(0, |f| f.as_raw_fd());
    loop {
        std::thread::sleep(std::time::Duration::from_millis(500));
        if !ACTIVE.load(Ordering::SeqCst) {
            continue;
        }
        let mut p = libc::pollfd {
            fd,
            events: 0,
            revents: 0,
        };
        // SAFETY: one valid pollfd, zero timeout.
        let r = unsafe { libc::poll(&mut p, 1, 0) };
        if r > 0 && p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            flag.store(true, Ordering::SeqCst);
            exit_if_still_running(128 + libc::SIGHUP, HANGUP_GRACE);
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_viewed_from_a_private_file_that_is_gone_after() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("seen");
        let script = d.path().join("viewer.sh");
        // The viewer copies the file and records its mode and path.
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\ncp \"$1\" '{0}'\nstat -c %a \"$1\" > '{0}.mode'\nprintf %s \"$1\" > '{0}.path'\n",
                out.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
        view_in(&script.display().to_string(), "a value\\x1b[31m\n").unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "a value\\x1b[31m\n");
        let mode = std::fs::read_to_string(d.path().join("seen.mode")).unwrap();
        assert_eq!(mode.trim(), "600");
        let path = std::fs::read_to_string(d.path().join("seen.path")).unwrap();
        assert!(std::path::Path::new(&path).starts_with(std::env::temp_dir()), "{path}");
        assert!(!std::path::Path::new(&path).exists(), "removed after");
        let failed = view_in("false", "x").unwrap_err();
        assert!(failed.to_string().contains("false exited"), "{failed}");
    }

    #[test]
    fn restore_does_not_wait_for_a_stdout_lock_held_elsewhere() {
        // `main` holds the stdout lock for the whole session; a signal's restore ran on
        // another thread and blocked on it forever.
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            let _lock = std::io::stdout().lock();
            held_tx.send(()).unwrap();
            let _ = done_rx.recv_timeout(std::time::Duration::from_secs(10));
        });
        held_rx.recv().unwrap();
        ACTIVE.store(true, Ordering::SeqCst);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            restore();
            tx.send(()).unwrap();
        });
        let finished = rx.recv_timeout(std::time::Duration::from_secs(3)).is_ok();
        done_tx.send(()).unwrap();
        holder.join().unwrap();
        assert!(finished, "restore waited on the stdout lock");
        assert!(!ACTIVE.load(Ordering::SeqCst));
    }
}
