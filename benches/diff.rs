//! Diff of two generated AgentDbg traces of 10k events (budget 100 ms) and of 100k events
//! (budget 2 s). `unrelated`: two seeds, so the runs differ everywhere (the worst case: a long
//! alignment and every paired payload decoded); `identical`: the same seed generated twice into
//! two directories (a rerun that changed nothing: the raw-record check skips decoding).
//! Loading is not timed; reading the paired calls' payloads from disk is.
//!
//! The traces come from /work/shared/bench/gen_traces.py (or $TRACETUI_GEN_TRACES), written once
//! into target/bench-data/; without python3 or the generator the bench prints why and skips.

use criterion::{Criterion, criterion_group, criterion_main};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tracetui::diff::{Options, diff};
use tracetui::model::Trace;

fn generator() -> PathBuf {
    std::env::var_os("TRACETUI_GEN_TRACES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/shared/bench/gen_traces.py"))
}

/// The run directory of a generated trace, generating it when missing.
fn generated(events: usize, seed: u32, copy: &str) -> Result<PathBuf, String> {
    let out = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/bench-data")
        .join(format!("e{events}-s{seed}{copy}"));
    let find = |dir: &Path| -> Option<PathBuf> {
        std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join("events.jsonl").is_file())
    };
    if let Some(run) = find(&out) {
        return Ok(run);
    }
    let gen_py = generator();
    if !gen_py.is_file() {
        return Err(format!("generator {} not found", gen_py.display()));
    }
    let status = Command::new("python3")
        .arg(&gen_py)
        .arg(&out)
        .args([
            "--runs",
            "1",
            "--events",
            &events.to_string(),
            "--seed",
            &seed.to_string(),
        ])
        .status()
        .map_err(|e| format!("python3: {e}"))?;
    if !status.success() {
        return Err(format!("{} failed: {status}", gen_py.display()));
    }
    find(&out).ok_or_else(|| format!("no run directory in {}", out.display()))
}

fn load(p: &Path) -> Trace {
    let mut l = tracetui::formats::load(p, None).expect("generated trace loads");
    l.traces.remove(0)
}

fn bench_diff(c: &mut Criterion) {
    for (events, samples, secs) in [(10_000, 20, 10), (100_000, 10, 30)] {
        for (label, seed_b, copy) in [("unrelated", 2, ""), ("identical", 1, "-copy")] {
            let (a, b) = match (generated(events, 1, ""), generated(events, seed_b, copy)) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(e), _) | (_, Err(e)) => {
                    println!("skipping diff bench of {events} events: {e}");
                    return;
                }
            };
            let (ta, tb) = (load(&a), load(&b));
            let mut g = c.benchmark_group("diff");
            g.sample_size(samples).measurement_time(Duration::from_secs(secs));
            let opts = Options::default();
            g.bench_function(format!("agentdbg_{events}_events_{label}"), |bch| {
                bch.iter(|| diff(&ta, &tb, &opts))
            });
            g.finish();
        }
    }
}

criterion_group!(benches, bench_diff);
criterion_main!(benches);
