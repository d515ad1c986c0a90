//! Terminal lifecycle. The terminal is restored however the program ends: on quit, on an
//! error (the guard's drop), on a panic of the UI thread (the hook restores before the message
//! prints), and on SIGTERM / SIGHUP / SIGINT (a flag the event loop checks, then a normal exit).

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::io::{BufWriter, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

static ACTIVE: AtomicBool = AtomicBool::new(false);
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
    let mut out = std::io::stdout();
    let _ = execute!(out, DisableMouseCapture, LeaveAlternateScreen, crossterm::cursor::Show);
    let _ = disable_raw_mode();
    let _ = out.flush();
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

/// A flag set by SIGTERM, SIGHUP and SIGINT. The event loop sees it within a tick and ends
/// normally. A thread stands by in case it cannot: on a terminal that hung up, crossterm's
/// reader can spin inside `event::poll` forever, timeout or not (crossterm#793), and the
/// process would outlive its terminal burning a core. After a grace period that thread
/// restores what can be restored and exits.
pub fn quit_signals() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT]) {
            let f = flag.clone();
            let _ = std::thread::Builder::new().name("signals".into()).spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    f.store(true, Ordering::SeqCst);
                    exit_if_still_running(128 + sig);
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

/// Give the event loop a moment to end by itself, then end the process from here.
#[cfg(unix)]
fn exit_if_still_running(code: i32) {
    std::thread::sleep(std::time::Duration::from_millis(500));
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
            exit_if_still_running(128 + libc::SIGHUP);
        }
    }
}
