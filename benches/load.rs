//! `cargo bench --bench load`: index a generated AgentDbg run of 100k events, against reading
//! the same bytes (what `cat` does) in the same run. The data is generated once into
//! target/bench-data/ by ../shared/bench/gen_traces.py (skipped, with a message, without it).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::path::{Path, PathBuf};
use std::process::Command;
use tracetui::formats::{Format, agentdbg::AgentDbg};

pub fn bench_data(name: &str, runs: u32, events: u32) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = root.join("target/bench-data").join(name);
    if out.join(".done").exists() {
        return Some(out);
    }
    let script = root.join("../shared/bench/gen_traces.py");
    if !script.exists() {
        eprintln!("skipping: {} not found", script.display());
        return None;
    }
    let _ = std::fs::remove_dir_all(&out);
    let ok = Command::new("python3")
        .arg(&script)
        .arg(&out)
        .args(["--runs", &runs.to_string(), "--events", &events.to_string()])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("skipping: could not run python3 {}", script.display());
        return None;
    }
    std::fs::write(out.join(".done"), b"").ok()?;
    Some(out)
}

fn load(c: &mut Criterion) {
    let Some(dir) = bench_data("load-100k", 1, 100_000) else {
        return;
    };
    let run = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("one run directory");
    let events = run.join("events.jsonl");
    let bytes = std::fs::metadata(&events).unwrap().len();
    let mut g = c.benchmark_group("load");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("cat (read the file)", |b| {
        b.iter(|| {
            let mut f = std::fs::File::open(&events).unwrap();
            std::io::copy(&mut f, &mut std::io::sink()).unwrap()
        })
    });
    g.bench_function("agentdbg index 100k events", |b| {
        b.iter(|| {
            let l = AgentDbg.load(&run).unwrap();
            assert_eq!(l.traces[0].len(), 99_999);
            l
        })
    });
    g.finish();
}

criterion_group!(benches, load);
criterion_main!(benches);
