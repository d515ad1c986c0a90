//! Also issue 21's budgets: the compare table of 10 runs of 10k events, and the word diff of a
//! 50,000-word prompt pair (see the functions below).
//!
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

/// The run directories of `runs` generated runs of `events` events each (one seed, one dir).
fn generated_many(runs: usize, events: usize, seed: u32) -> Result<Vec<PathBuf>, String> {
    let out = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/bench-data")
        .join(format!("many{runs}-e{events}-s{seed}"));
    let list = |dir: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|r| {
                r.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.join("events.jsonl").is_file())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let have = list(&out);
    if have.len() == runs {
        return Ok(have);
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
            &runs.to_string(),
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
    Ok(list(&out))
}

/// An explorer runs-list entry for a run directory, as the explorer lists it.
fn entry(dir: &Path) -> tracetui::tui::diffview::Source {
    let run = tracetui::source::discover(&[dir.to_path_buf()], None)
        .runs
        .into_iter()
        .next()
        .expect("a generated run is found");
    let e = tracetui::tui::entries(&run)
        .expect("a generated run is summarized")
        .remove(0);
    tracetui::tui::diffview::Source::Entry {
        run: e.run,
        index: e.index,
        id: e.summary.id,
    }
}

/// Issue 21's budget: 10 runs of 10,000 events against a baseline, the compare table complete
/// within 1 s. Timed end to end as the explorer does it (`tui::compare::compute`: the baseline
/// and every run loaded from disk, aligned, diffed, summarized into rows). `unrelated`: ten
/// other seeds' runs (every pair differs); `reruns`: the baseline itself ten times over (a
/// rerun that changed nothing). `tracetui diff BASE R1..R10 --format json` is timed against
/// another build by bench/compare_table.py.
fn bench_compare_table(c: &mut Criterion) {
    use std::sync::Mutex;
    use std::sync::atomic::AtomicBool;
    let (base, others) = match (generated(10_000, 1, ""), generated_many(10, 10_000, 7)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            println!("skipping compare-table bench: {e}");
            return;
        }
    };
    let baseline = entry(&base);
    let unrelated: Vec<_> = others.iter().map(|p| entry(p)).collect();
    let reruns: Vec<_> = (0..10).map(|_| entry(&base)).collect();
    let mut g = c.benchmark_group("compare");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    for (label, runs) in [("unrelated", &unrelated), ("reruns", &reruns)] {
        g.bench_function(format!("table_10_runs_of_10000_events_{label}"), |bch| {
            bch.iter(|| {
                let rows = Mutex::new(vec![None; runs.len()]);
                tracetui::tui::compare::compute(
                    &baseline,
                    runs,
                    &Options::default(),
                    &AtomicBool::new(false),
                    &|i, r| rows.lock().unwrap()[i] = Some(r.map(|d| d.verdict)),
                );
                let rows = rows.into_inner().unwrap();
                assert!(rows.iter().all(|r| matches!(r, Some(Ok(_)))), "every row compared");
                rows
            })
        });
    }
    g.finish();
}

/// Issue 21's budget: a 50,000-word prompt pair with one changed sentence, word-diffed (and
/// elided for display) within 50 ms.
fn bench_word_diff(c: &mut Criterion) {
    let words = [
        "the",
        "agent",
        "reads",
        "a",
        "file",
        "and",
        "calls",
        "tool",
        "with",
        "arguments",
        "then",
        "reports",
    ];
    let mut a = String::new();
    for i in 0..50_000usize {
        if i > 0 {
            a.push(if i % 17 == 0 { '\n' } else { ' ' });
        }
        a.push_str(words[(i * 7 + i / 13) % words.len()]);
        if i % 29 == 0 {
            a.push_str(&i.to_string());
        }
    }
    let at = a.len() / 2;
    let at = at + a[at..].find(' ').unwrap();
    let b = format!(
        "{} Never retry a failed refund without asking the user first.{}",
        &a[..at],
        &a[at..]
    );
    let mut g = c.benchmark_group("words");
    g.sample_size(20).measurement_time(Duration::from_secs(10));
    g.bench_function("prompt_50000_words_one_sentence_changed", |bch| {
        bch.iter(|| {
            let segs = tracetui::diff::words::segments(&a, &b);
            tracetui::diff::words::Shown::new(&segs, tracetui::diff::words::DEFAULT_CONTEXT)
        })
    });
    g.finish();
}

criterion_group!(benches, bench_diff, bench_compare_table, bench_word_diff);
criterion_main!(benches);
