//! `tracetui serve` and `tracetui --otlp` (issue 19): receive OpenTelemetry spans and logs over
//! OTLP and show them as they arrive.
//!
//! One path for every received batch: the receiver ([`receiver`]) turns each request into the
//! OTLP/JSON line the Collector's file exporter would write; the consumer appends it to the
//! spool ([`spool`]: `--save DIR`, or a private temporary directory) and reads it back with
//! the `otlp-json` format's own incremental parser, exactly as `tail` follows a growing file.
//! So received spans are mapped by the same code as files (GenAI, OpenInference,
//! `claude_code.*`, log events), a trace is running until its root span ends, and a saved
//! session reopens with the same runs and counts.

pub mod bound;
pub mod receiver;
pub mod spool;

use crate::formats::otlp;
use crate::model::{RunStatus, Trace};
use crate::output::Output;
use crate::source::RunRef;
use crate::tail::Tailer;
use crate::tail::print::Printer;
use receiver::Incoming;
use spool::Spool;
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// Default OTLP/HTTP address (loopback: other machines need an address given explicitly).
pub const DEFAULT_HTTP: &str = "127.0.0.1:4318";
/// Default OTLP/gRPC address.
pub const DEFAULT_GRPC: &str = "127.0.0.1:4317";
/// Largest request body accepted, before and after gzip (413 beyond).
pub const MAX_BODY: usize = 16 << 20;
/// Spans held in memory by default (oldest finished traces are dropped first beyond it).
pub const MAX_SPANS: usize = 1_000_000;
/// Spool files rotate at this size (the Collector's file exporter rotates at 100 MB).
pub const ROTATE_BYTES: u64 = 64 << 20;
/// Requests waiting for the consumer; beyond, clients are told to retry (429 / UNAVAILABLE).
const QUEUE: usize = 1024;

#[derive(Clone, Debug)]
pub struct Options {
    pub http: Option<SocketAddr>,
    pub grpc: Option<SocketAddr>,
    /// Whether the addresses were given (else loopback defaults).
    pub http_given: bool,
    pub grpc_given: bool,
    pub save: Option<PathBuf>,
    pub max_body: usize,
    pub max_spans: usize,
    pub rotate_bytes: u64,
}

/// `--http`/`--grpc` values: `off`, or an address (`host:port`, `:port` for loopback).
pub fn parse_addr(v: Option<&str>, default: &str) -> Result<Option<SocketAddr>, String> {
    let v = v.unwrap_or(default);
    if v.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let v = if v.starts_with(':') {
        format!("127.0.0.1{v}")
    } else {
        v.to_string()
    };
    v.to_socket_addrs()
        .map_err(|e| format!("{v}: not an address to listen on ({e})"))?
        .next()
        .map(Some)
        .ok_or_else(|| format!("{v}: no address"))
}

impl Options {
    pub fn new(http: Option<&str>, grpc: Option<&str>, save: Option<PathBuf>) -> Result<Options, String> {
        let o = Options {
            http: parse_addr(http, DEFAULT_HTTP)?,
            grpc: parse_addr(grpc, DEFAULT_GRPC)?,
            http_given: http.is_some(),
            grpc_given: grpc.is_some(),
            save,
            max_body: MAX_BODY,
            max_spans: MAX_SPANS,
            rotate_bytes: ROTATE_BYTES,
        };
        if o.http.is_none() && o.grpc.is_none() {
            return Err("--http off and --grpc off: nothing to receive on".into());
        }
        Ok(o)
    }
}

/// Say where spans are received and whether other machines can reach it.
fn announce(s: &receiver::Servers, spool: &Spool, err: &mut dyn Write) {
    let mut parts = Vec::new();
    if let Some(a) = s.http {
        parts.push(format!("OTLP/HTTP on http://{a} (/v1/traces, /v1/logs)"));
    }
    if let Some(a) = s.grpc {
        parts.push(format!("OTLP/gRPC on {a}"));
    }
    let _ = writeln!(err, "tracetui: receiving {}", parts.join(" and "));
    let open: Vec<String> = s
        .http
        .iter()
        .chain(s.grpc.iter())
        .filter(|a| !a.ip().is_loopback())
        .map(|a| a.to_string())
        .collect();
    if open.is_empty() {
        let _ = writeln!(
            err,
            "tracetui: loopback only: this machine's agents can send, others cannot (give --http/--grpc ADDR to listen elsewhere)"
        );
    } else {
        let _ = writeln!(
            err,
            "tracetui: {} reachable from other machines, with no authentication (as given)",
            open.join(", ")
        );
    }
    let _ = if spool.is_private() {
        writeln!(
            err,
            "tracetui: holding batches in {} (removed at exit; --save DIR keeps them)",
            spool.dir().display()
        )
    } else {
        writeln!(
            err,
            "tracetui: saving batches to {} (OTLP/JSON lines, as the Collector's file exporter)",
            spool.dir().display()
        )
    };
}

fn spool_for(o: &Options) -> std::io::Result<Spool> {
    // A file holds at most a quarter of the cap, so that removing a private spool's old
    // files (once their traces are dropped) keeps the disk near the cap too.
    Spool::new(o.save.as_deref(), o.rotate_bytes, (o.max_spans / 4).max(1)).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!(
                "{}: {e}",
                o.save.as_deref().unwrap_or(Path::new("temporary directory")).display()
            ),
        )
    })
}

/// After a stop, how long the consumer keeps storing what the receiver still hands it.
const DRAIN: Duration = Duration::from_secs(5);

/// Append a batch's lines, then answer its client: acknowledged only once every line is
/// written (a file started on the way is passed to `started`). A batch that could not be
/// written is answered with the reason (the client retries) and does not end `serve`.
fn store(spool: &mut Spool, mut inc: Incoming, mut started: impl FnMut(PathBuf)) -> Result<(), String> {
    let mut r = Ok(());
    for l in &inc.lines {
        match spool.append(&l.bytes, l.spans, &l.traces) {
            Ok(Some(p)) => started(p),
            Ok(None) => {}
            Err(e) => {
                r = Err(format!("{}: {e}", spool.dir().display()));
                break;
            }
        }
    }
    inc.answer(r.clone());
    r
}

/// `serve --no-tui`: receive until `stop` is set, printing each new event as `tail --no-tui`
/// prints it. At the stop, requests in progress are stored and answered (for a few seconds
/// at most, whatever clients do) before it returns.
pub fn print(
    o: &Options,
    fmt: Output,
    out: &mut dyn Write,
    err: &mut dyn Write,
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    let (tx, rx) = mpsc::sync_channel::<Incoming>(QUEUE);
    let mut spool = spool_for(o)?;
    let servers = receiver::start(o.http, o.grpc, o.max_body, tx)?;
    announce(&servers, &spool, err);
    let _ = err.flush();
    let mut tailer = Tailer::files(spool.dir());
    // A received run ends when its root span does, which is final (spans are sent as they
    // end, the root last): said at once, not after a quiet time as for a file (and the
    // printer runs only when a batch comes).
    let mut printer = Printer::with_quiet(fmt, Duration::ZERO);
    let mut cap = Cap::new(o.max_spans);
    let mut stopping: Option<std::time::Instant> = None;
    let dir: Arc<Path> = Arc::from(spool.dir());
    loop {
        if stopping.is_none() && stop.load(Ordering::Relaxed) {
            servers.stop();
            stopping = Some(std::time::Instant::now());
        }
        if stopping.is_some_and(|t| t.elapsed() >= DRAIN) {
            break;
        }
        let first = match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(x) => x,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        // Whatever else waits is appended before reading back: one read, one print.
        let mut next = Some(first);
        let mut n = 0;
        while let Some(inc) = next.take() {
            let r = store(&mut spool, inc, |p| {
                let run = RunRef {
                    path: p.clone(),
                    format: &otlp::Otlp,
                    root: dir.clone(),
                    nested: None,
                };
                cap.live.push((tailer.follow_file(run, otlp::follow_lines(&p)), p));
            });
            if let Err(e) = r {
                let _ = writeln!(
                    err,
                    "{}",
                    crate::sanitize::line(&format!(
                        "tracetui: a batch was not stored (its client was told to retry): {e}"
                    ))
                );
            }
            n += 1;
            if n < 256 {
                next = rx.try_recv().ok();
            }
        }
        let changes = tailer.poll(None);
        if printer.print(&tailer, &changes, out)? > 0 {
            out.flush()?;
        }
        for e in tailer.errors.drain(..) {
            let _ = writeln!(err, "{}", crate::sanitize::line(&format!("tracetui: {e}")));
        }
        cap.keep(&mut tailer, &mut printer, &mut spool, err);
    }
    drop(servers);
    Ok(())
}

/// The cap on spans held in memory by `serve --no-tui`.
struct Cap {
    max: usize,
    /// The spool files followed (source index, path), oldest first.
    live: Vec<(usize, PathBuf)>,
    /// Traces dropped so far, and spans in them.
    dropped: usize,
    dropped_spans: usize,
}

impl Cap {
    fn new(max: usize) -> Cap {
        Cap {
            max,
            live: Vec::new(),
            dropped: 0,
            dropped_spans: 0,
        }
    }

    /// Keep the spans held under the cap: drop whole traces from memory, the oldest finished
    /// ones first (oldest: first seen), down to nine tenths of the cap so that this is not
    /// done again at every batch; only when that is not enough, the oldest still running
    /// (their later spans print as they come, starting the trace anew). A saved trace stays
    /// on disk (`tracetui DIR` shows it); a private spool file whose traces were all dropped
    /// is removed.
    fn keep(&mut self, t: &mut Tailer, p: &mut Printer, spool: &mut Spool, err: &mut dyn Write) {
        let mut total: usize = self
            .live
            .iter()
            .map(|(s, _)| t.sources[*s].traces().iter().map(Trace::len).sum::<usize>())
            .sum();
        if total <= self.max {
            return;
        }
        let goal = self.max - self.max / 10;
        let (before, before_spans) = (self.dropped, self.dropped_spans);
        let mut running = 0;
        for running_too in [false, true] {
            for &(s, _) in &self.live {
                if total <= goal {
                    break;
                }
                let n = t.sources[s].traces().len();
                for ti in 0..n {
                    if total <= goal {
                        break;
                    }
                    let tr = &t.sources[s].traces()[ti];
                    let ended = matches!(tr.meta.status, RunStatus::Ok | RunStatus::Error);
                    if tr.is_empty() || !(ended || running_too) {
                        continue;
                    }
                    running += usize::from(!ended);
                    let freed = t.drop_trace(s, ti);
                    p.dropped(s, ti);
                    total -= freed;
                    self.dropped += 1;
                    self.dropped_spans += freed;
                }
            }
        }
        let _ = writeln!(
            err,
            "tracetui: over the cap of {} spans held: dropped {} trace(s) ({} spans) from memory, {} in all{}; {}",
            self.max,
            self.dropped - before,
            self.dropped_spans - before_spans,
            self.dropped,
            if running > 0 {
                format!(" ({running} still running: their later spans print as a new part)")
            } else {
                String::new()
            },
            if spool.is_private() {
                "they are gone (--save DIR keeps them)".to_string()
            } else {
                format!("they stay in {}", spool.dir().display())
            }
        );
        // A private file whose traces are all dropped holds nothing anyone will read again.
        if spool.is_private() {
            let current = spool.current().map(Path::to_path_buf);
            self.live.retain(|(s, path)| {
                let empty = t.sources[*s].traces().iter().all(|tr| tr.is_empty());
                if !empty || current.as_deref() == Some(path.as_path()) {
                    return true;
                }
                t.release(*s);
                p.forget(*s);
                let _ = spool.remove(path);
                false
            });
        }
    }
}

/// The receiver beside the explorer (`tracetui --otlp`, `tracetui serve`): batches go to the
/// spool directory, which the explorer watches like any other.
pub struct Background {
    servers: Option<receiver::Servers>,
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    pub fn start(o: &Options, err: &mut dyn Write) -> anyhow::Result<Background> {
        let (tx, rx) = mpsc::sync_channel::<Incoming>(QUEUE);
        let mut spool = spool_for(o)?;
        let servers = receiver::start(o.http, o.grpc, o.max_body, tx)?;
        announce(&servers, &spool, err);
        let dir = spool.dir().to_path_buf();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let writer = std::thread::Builder::new().name("otlp-spool".into()).spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(inc) => {
                        // The explorer is on the terminal: a write error goes to the client,
                        // which retries; keep receiving.
                        let _ = store(&mut spool, inc, |_| {});
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
            }
            drop(spool);
        })?;
        Ok(Background {
            servers: Some(servers),
            dir,
            stop,
            writer: Some(writer),
        })
    }

    /// The directory the explorer should watch.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.servers.take();
        self.stop.store(true, Ordering::Relaxed);
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(
            parse_addr(None, DEFAULT_HTTP).unwrap(),
            Some("127.0.0.1:4318".parse().unwrap())
        );
        assert_eq!(parse_addr(Some("off"), DEFAULT_HTTP).unwrap(), None);
        assert_eq!(
            parse_addr(Some(":9999"), DEFAULT_HTTP).unwrap(),
            Some("127.0.0.1:9999".parse().unwrap())
        );
        assert_eq!(
            parse_addr(Some("0.0.0.0:1"), DEFAULT_HTTP).unwrap(),
            Some("0.0.0.0:1".parse().unwrap())
        );
        assert!(parse_addr(Some("nonsense"), DEFAULT_HTTP).is_err());
        assert!(Options::new(Some("off"), Some("off"), None).is_err());
    }
}
