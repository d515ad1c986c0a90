//! `cargo run --release --example detail_memory [MiB]`: the memory the detail pane takes to
//! show a tool call whose result is one long line (issue 16: at most 3x the value's size).
//! Writes an AgentDbg run with that result under `target/detail-memory/` (removed after),
//! loads it as the explorer does (the payload stays on disk), then opens the event's detail:
//! reads and decodes the record, builds the document, lays it out and draws a 200x60 frame.
//! A counting allocator gives the peak of live heap bytes over that step, above what the
//! loaded run held before it; getrusage gives the process's peak RSS.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;
static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only counts are kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let n = NOW.fetch_add(l.size(), Relaxed) + l.size();
            PEAK.fetch_max(n, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        NOW.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                let n = NOW.fetch_add(new - l.size(), Relaxed) + (new - l.size());
                PEAK.fetch_max(n, Relaxed);
            } else {
                NOW.fetch_sub(l.size() - new, Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static A: Counting = Counting;

fn max_rss() -> usize {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    u.ru_maxrss as usize * 1024
}

fn main() {
    use tracetui::tui::action::Action;
    use tracetui::tui::keymap::Keymap;
    use tracetui::tui::state::{Pane, RunView, State, View};
    let mib: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(50);
    let size = mib << 20;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/detail-memory/run");
    std::fs::create_dir_all(&dir).unwrap();
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join("events.jsonl")).unwrap());
        let head = r#"{"spec_version": "0.1", "event_id": "e1", "run_id": "r1", "parent_id": null, "event_type": "RUN_START", "ts": "2026-11-20T10:02:11.005Z", "duration_ms": null, "name": "big", "payload": {"run_name": "big"}, "meta": {}}"#;
        writeln!(f, "{head}").unwrap();
        write!(f, r#"{{"spec_version": "0.1", "event_id": "e2", "run_id": "r1", "parent_id": "e1", "event_type": "TOOL_CALL", "ts": "2026-11-20T10:02:12.150Z", "duration_ms": 380, "name": "fetch_page", "payload": {{"tool_name": "fetch_page", "args": {{"url": "https://example.com/big"}}, "result": ""#).unwrap();
        let mut k = 0usize;
        let mut written = 0;
        while written < size {
            let w = format!("chunk{k:07}-{} ", "q".repeat(k % 200));
            f.write_all(w.as_bytes()).unwrap();
            written += w.len();
            k += 1;
        }
        f.write_all(b"END-MARKER").unwrap();
        writeln!(f, r#"", "error": null, "status": "ok"}}, "meta": {{}}}}"#).unwrap();
    }
    let value = size + "END-MARKER".len();
    let loaded = tracetui::formats::load(&dir.join("events.jsonl"), None).expect("loads");
    let t = loaded.traces.into_iter().next().expect("a trace");
    let ev = (0..t.len() as u32)
        .find(|&i| t.event(i).kind == tracetui::model::EventKind::ToolCall)
        .expect("the tool call");
    let mut s = State::new(Keymap::default(), (200, 60));
    s.run = Some(RunView::new(tracetui::tui::state::shared(t), None));
    s.view = View::Run;
    let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let theme = tracetui::tui::theme::Theme::dark();
    let rss_before = max_rss();
    let before = NOW.load(Relaxed);
    PEAK.store(before, Relaxed);
    let t0 = std::time::Instant::now();
    let r = s.run.as_mut().unwrap();
    r.rebuild_detail(ev);
    r.focus = Pane::Detail;
    update_tick(&mut s);
    term.draw(|f| tracetui::tui::render::render(f, &s, &theme)).unwrap();
    let took = t0.elapsed();
    let peak = PEAK.load(Relaxed) - before;
    let rss = max_rss();
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    println!("value           {:>8.1} MiB", value as f64 / 1048576.0);
    println!(
        "detail heap peak {:>7.1} MiB  {:.2}x the value (read, decode, build, lay out, draw; {took:.0?})",
        peak as f64 / 1048576.0,
        peak as f64 / value as f64
    );
    println!(
        "process peak RSS {:>7.1} MiB  {:.2}x the value (before the detail: {:.1} MiB, the load's)",
        rss as f64 / 1048576.0,
        rss as f64 / value as f64,
        rss_before as f64 / 1048576.0
    );

    fn update_tick(s: &mut State) {
        tracetui::tui::update::update(s, Action::Tick);
    }
}
