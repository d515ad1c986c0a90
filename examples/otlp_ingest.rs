//! Issue 19's ingest budgets against `tracetui serve --no-tui --format json`:
//!
//! 1. sustained ingest: `--spans N` spans (default 1,000,000) as OTLP/HTTP protobuf in batches of
//!    512 from 2 client threads, as fast as the receiver answers (429 is waited out and retried,
//!    as exporters do); prints spans/s answered and spans/s printed, and checks none is lost;
//! 2. latency: `--latency-secs S` seconds (default 10) at 1,000 spans/s (a batch of 10 every
//!    10 ms); for each span, the time from sending its request to reading its line on the
//!    server's stdout; prints p50, p99 and max.
//!
//! `cargo build --release && cargo run --release --example otlp_ingest [-- --spans N]`
//! (TRACETUI=PATH runs another binary).
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

const BATCH: u64 = 512;
const SPANS_PER_TRACE: u64 = 8;

fn attr(k: &str, v: &str) -> KeyValue {
    KeyValue {
        key: k.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v.into())),
        }),
        ..Default::default()
    }
}

/// Span number `n`: traces of 8 spans, the first of each the root, the others its children
/// (LLM calls and tool calls with GenAI attributes, about 60 bytes of attribute text).
fn span(n: u64, now: u64) -> Span {
    let trace = n / SPANS_PER_TRACE;
    let root = trace * SPANS_PER_TRACE;
    let mut trace_id = [0u8; 16];
    trace_id[8..].copy_from_slice(&(trace + 1).to_be_bytes());
    let id = |k: u64| (k + 1).to_be_bytes().to_vec();
    let (op, parent) = if n == root {
        ("invoke_agent", Vec::new())
    } else {
        (if n.is_multiple_of(2) { "chat" } else { "execute_tool" }, id(root))
    };
    Span {
        trace_id: trace_id.to_vec(),
        span_id: id(n),
        parent_span_id: parent,
        name: format!("s{n}"),
        start_time_unix_nano: now,
        end_time_unix_nano: now + 1_000_000,
        attributes: vec![
            attr("gen_ai.operation.name", op),
            attr("gen_ai.request.model", "gpt-4o-mini"),
            attr("gen_ai.tool.name", "search"),
        ],
        ..Default::default()
    }
}

fn body(from: u64, count: u64) -> Vec<u8> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![attr("service.name", "ingest-bench")],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "bench".into(),
                    ..Default::default()
                }),
                spans: (from..from + count).map(|n| span(n, now)).collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

/// POST a batch until it is accepted; returns how many 429/503 answers were waited out.
fn post(client: &reqwest::blocking::Client, url: &str, body: Vec<u8>) -> u64 {
    let mut retried = 0;
    loop {
        let r = client
            .post(url)
            .header("content-type", "application/x-protobuf")
            .body(body.clone())
            .send()
            .expect("the receiver answers");
        match r.status().as_u16() {
            200 => return retried,
            429 | 503 => {
                retried += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            s => panic!("the receiver answered {s}"),
        }
    }
}

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().expect("a number"))
        .unwrap_or(default)
}

fn main() {
    let spans = arg("--spans", 1_000_000) / BATCH * BATCH;
    let latency_secs = arg("--latency-secs", 10);
    let bin = std::env::var("TRACETUI").unwrap_or_else(|_| "target/release/tracetui".into());
    let mut child = Command::new(&bin)
        .args(["serve", "--no-tui", "--format", "json"])
        .args(["--http", "127.0.0.1:0", "--grpc", "off"])
        .args(["--max-spans", "10000000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {bin}: {e} (cargo build --release first)"));
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no HTTP address in {first:?}"))
        .to_string();
    std::thread::spawn(move || for _ in err.lines() {});
    let url = format!("http://{addr}/v1/traces");

    // The reader notes when each span's line is printed; senders note when its request left.
    let printed = Arc::new(AtomicU64::new(0));
    let seen: Arc<Mutex<HashMap<u64, Instant>>> = Arc::default();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let out = child.stdout.take().unwrap();
    {
        let (printed, seen) = (printed.clone(), seen.clone());
        let target = spans;
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                let v: serde_json::Value = serde_json::from_str(&l).expect("a JSON line");
                // Span n's id is n + 1 (hex); run-end lines carry no id.
                let Some(id) = v["id"].as_str() else { continue };
                let Ok(n) = u64::from_str_radix(id, 16).map(|id| id - 1) else {
                    continue;
                };
                if n >= target {
                    seen.lock().unwrap().insert(n, Instant::now());
                }
                if printed.fetch_add(1, Ordering::Relaxed) + 1 == target {
                    let _ = done_tx.send(());
                }
            }
        });
    }

    // 1. Sustained ingest from 2 clients.
    let next = Arc::new(AtomicU64::new(0));
    let retried = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let (next, retried, url) = (next.clone(), retried.clone(), url.clone());
            std::thread::spawn(move || {
                let client = reqwest::blocking::Client::new();
                loop {
                    let from = next.fetch_add(BATCH, Ordering::Relaxed);
                    if from >= spans {
                        break;
                    }
                    retried.fetch_add(post(&client, &url, body(from, BATCH)), Ordering::Relaxed);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let answered = start.elapsed();
    let all_printed = done_rx.recv_timeout(Duration::from_secs(600)).is_ok();
    let printed_at = start.elapsed();
    let got = printed.load(Ordering::Relaxed);
    println!(
        "ingest: {spans} spans in batches of {BATCH} from 2 clients: answered in {:.2} s ({:.0} spans/s), \
         printed in {:.2} s ({:.0} spans/s), {got} printed, {} lost, {} requests told to wait and retried",
        answered.as_secs_f64(),
        spans as f64 / answered.as_secs_f64(),
        printed_at.as_secs_f64(),
        spans as f64 / printed_at.as_secs_f64(),
        spans.saturating_sub(got),
        retried.load(Ordering::Relaxed),
    );
    if !all_printed {
        eprintln!("not every span was printed within 600 s");
    }

    // 2. Latency at 1,000 spans/s: a batch of 10 every 10 ms.
    let client = reqwest::blocking::Client::new();
    let mut sent: Vec<(u64, Instant)> = Vec::new();
    let t0 = Instant::now();
    let mut n = spans;
    let mut tick = 0u32;
    while t0.elapsed() < Duration::from_secs(latency_secs) {
        let at = Instant::now();
        post(&client, &url, body(n, 10));
        sent.extend((n..n + 10).map(|k| (k, at)));
        n += 10;
        tick += 1;
        let due = t0 + Duration::from_millis(10) * tick;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    std::thread::sleep(Duration::from_secs(2));
    let seen = seen.lock().unwrap();
    let mut lat: Vec<f64> = sent
        .iter()
        .filter_map(|(k, at)| seen.get(k).map(|t| t.duration_since(*at).as_secs_f64() * 1e3))
        .collect();
    lat.sort_by(f64::total_cmp);
    let q = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(f64::NAN)
    };
    println!(
        "latency at 1,000 spans/s for {latency_secs} s: {} spans sent, {} printed; send to printed p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        sent.len(),
        lat.len(),
        q(0.5),
        q(0.99),
        lat.last().copied().unwrap_or(f64::NAN),
    );
    let _ = child.kill();
    let _ = child.wait();
}
