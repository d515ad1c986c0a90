//! `cargo bench --bench finalize [-- EVENTS [SLICE]]`: the cost of `Trace::finalize` per slice
//! of a load whose spans come children first and the root last (Maida, OTLP), the way the
//! explorer loads: `finalize` after every slice (a 1 MiB slice of a Maida file holds about
//! 450 spans). Prints the median `finalize` time of the slices in each tenth of the load: a
//! cost that follows what changed stays flat as the trace grows; re-sorting whole sibling
//! lists grows with it.
//! With `-- --load PATH [FORMAT]` it loads a trace instead and prints the bytes of its index
//! by part (`Trace::index_bytes`), per event.
//! Not a criterion bench: the figure is a curve over one load, not a per-iteration time.

use std::time::{Duration, Instant};
use tracetui::model::{EventKind, NewEvent, Parent, Trace};

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = raw.iter().position(|a| a == "--load") {
        let path = std::path::Path::new(&raw[at + 1]);
        let forced = raw.get(at + 2).and_then(|f| tracetui::formats::by_id(f));
        let loaded = tracetui::formats::load(path, forced).expect("load");
        for t in &loaded.traces {
            let n = t.len().max(1);
            let parts = t.index_bytes();
            let total: usize = parts.iter().map(|p| p.1).sum();
            println!(
                "{} events, {:.1} bytes an event in all:",
                t.len(),
                total as f64 / n as f64
            );
            for (what, b) in parts {
                println!(
                    "  {what:>14}: {:>6.1} MB, {:>6.1} bytes an event",
                    b as f64 / 1e6,
                    b as f64 / n as f64
                );
            }
        }
        return;
    }
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let events = args.first().copied().unwrap_or(1_000_000);
    let slice = args.get(1).copied().unwrap_or(450);
    // One run: turns of an LLM call and three tool calls under a turn span, all under the
    // run's root; each span is written when it ends (post-order), the root last.
    let turns = events.saturating_sub(1) / 5;
    let mut spans: Vec<(String, String, i64, i64, EventKind)> = Vec::with_capacity(turns * 5 + 1);
    const MS: i64 = 1_000_000;
    for k in 0..turns {
        let t0 = k as i64 * 100 * MS;
        let turn = format!("turn{k}");
        spans.push((format!("llm{k}"), turn.clone(), t0 + MS, 40 * MS, EventKind::LlmCall));
        for j in 0..3 {
            // Two tools start together: ties broken by end, then file order.
            let s = t0 + (50 + 10 * (j / 2)) * MS;
            spans.push((
                format!("tool{k}.{j}"),
                turn.clone(),
                s,
                (5 + j) * MS,
                EventKind::ToolCall,
            ));
        }
        spans.push((turn, "root".into(), t0, 95 * MS, EventKind::Step));
    }
    spans.push(("root".into(), String::new(), 0, turns as i64 * 100 * MS, EventKind::Run));

    let mut t = Trace::default();
    let (mut adding, mut fin) = (Duration::ZERO, Vec::new());
    for chunk in spans.chunks(slice) {
        let a = Instant::now();
        for (id, parent, start, dur, kind) in chunk {
            t.add(NewEvent {
                id: Some(id),
                parent: if parent.is_empty() {
                    Parent::None
                } else {
                    Parent::Id(parent)
                },
                start: Some(*start),
                duration: Some(*dur),
                ..NewEvent::new(*kind, "span")
            });
        }
        let b = Instant::now();
        t.finalize();
        adding += b - a;
        fin.push(b.elapsed());
    }
    let total: Duration = fin.iter().sum();
    println!(
        "{} events in {} slices of {slice}: adds {:.0} ms, finalize {:.0} ms in all; roots at the end: {}",
        t.len(),
        fin.len(),
        adding.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3,
        t.roots.len()
    );
    println!("median finalize per slice (µs), by tenth of the load:");
    let tenth = fin.len().div_ceil(10).max(1);
    let row: Vec<String> = fin
        .chunks(tenth)
        .map(|c| {
            let mut c = c.to_vec();
            c.sort();
            format!("{:.0}", c[c.len() / 2].as_secs_f64() * 1e6)
        })
        .collect();
    println!("{}", row.join(" | "));
}
