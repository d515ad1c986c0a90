//! `cargo bench --bench filter`: the run view's filter over 1M events (issue 5 budgets: name
//! filters within 60 ms; free text over payloads shows its first matches within 200 ms).
//! Runs on the generated 1M-event AgentDbg run when it is there (payloads stay on disk and
//! are read back to search them, as in the explorer); else on 1M events built in memory.
//!
//! - `name filter`: typing `tool:search` (the name pass and the rows rebuilt with the hits);
//! - `free text, first matches`: a background search of payloads until its first hits;
//! - `free text, first matches of a name`: the same when names already match.

use criterion::{Criterion, criterion_group, criterion_main};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tracetui::model::*;
use tracetui::tui::filter::apply_filter;
use tracetui::tui::state::{RunView, SharedTrace, read, shared};

fn synthetic() -> Trace {
    let mut t = Trace::new(RunMeta {
        id: "bench".into(),
        format: "agentdbg",
        ..Default::default()
    });
    let root = t.add(NewEvent::new(EventKind::Run, "run"));
    let names = ["search", "read_file", "write_file", "run_tests", "fetch_url"];
    while t.len() < 1_000_000 {
        let llm = t.add(NewEvent {
            parent: Parent::Index(root),
            model: Some("gpt-4o"),
            ..NewEvent::new(EventKind::LlmCall, "gpt-4o")
        });
        for k in 0..9 {
            let n = t.len();
            t.add(NewEvent {
                parent: Parent::Index(llm),
                payload: PayloadRef::Inline(Box::new(Payload {
                    input: Some(serde_json::json!({"query": format!("item {n} of step {k}"), "limit": 10})),
                    output: Some(serde_json::json!(if n % 1000 == 7 {
                        "found the refund ticket"
                    } else {
                        "nothing"
                    })),
                    ..Default::default()
                })),
                ..NewEvent::new(EventKind::ToolCall, names[n % names.len()])
            });
        }
    }
    t.finalize();
    t
}

fn trace() -> (Trace, &'static str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/one-1m");
    if let Some(dir) = std::fs::read_dir(&root)
        .ok()
        .and_then(|d| d.flatten().map(|e| e.path()).find(|p| p.is_dir()))
    {
        let t0 = Instant::now();
        let mut l = tracetui::formats::load(&dir, None).expect("the generated run loads");
        eprintln!("loaded {} in {:.1} s", dir.display(), t0.elapsed().as_secs_f64());
        return (l.traces.remove(0), "generated AgentDbg run, payloads on disk");
    }
    eprintln!(
        "no generated 1M-event run in {}: 1M events built in memory",
        root.display()
    );
    (synthetic(), "in memory")
}

/// Time from starting a background search to its first batch with hits, `iters` times.
fn first_matches(trace: &SharedTrace, text: &str, iters: u64) -> Duration {
    let q = tracetui::search::parse(text).unwrap();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let cancel = AtomicBool::new(false);
        let t0 = Instant::now();
        let mut first = None;
        tracetui::search::search_in(
            || read(trace),
            0,
            &q,
            &cancel,
            |b| {
                if !b.hits.is_empty() && first.is_none() {
                    first = Some(t0.elapsed());
                    cancel.store(true, Ordering::Relaxed);
                }
            },
        );
        total += first.unwrap_or_else(|| t0.elapsed());
    }
    total
}

fn bench(c: &mut Criterion) {
    let (t, what) = trace();
    eprintln!("filter bench on {} events ({what})", t.len());
    let mut view = RunView::new(shared(t), None);
    for text in ["tool:search", "kind:error"] {
        c.bench_function(&format!("name filter {text}, 1M events (search + rows)"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    apply_filter(&mut view, String::new(), usize::MAX);
                    let t0 = Instant::now();
                    apply_filter(&mut view, text.into(), usize::MAX);
                    total += t0.elapsed();
                    assert!(view.filter.count > 0);
                }
                total
            })
        });
        let q = tracetui::search::parse(text).unwrap();
        let trace = view.trace.clone();
        c.bench_function(&format!("name filter {text}, 1M events (search only)"), |b| {
            b.iter(|| {
                let mut n = 0;
                tracetui::search::search(&read(&trace), &q, &AtomicBool::new(false), |b| n += b.hits.len());
                n
            })
        });
    }
    let trace = view.trace.clone();
    let mut g = c.benchmark_group("free text");
    g.sample_size(10);
    g.bench_function("first matches of \"refund\" (payloads)", |b| {
        b.iter_custom(|n| first_matches(&trace, "refund", n))
    });
    g.bench_function("first matches of \"search\" (names)", |b| {
        b.iter_custom(|n| first_matches(&trace, "search", n))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
