//! `tracetui serve` with real clients (issue 19): the official OpenTelemetry Rust SDK exporters
//! (`opentelemetry-otlp`: HTTP/protobuf, HTTP/JSON, gRPC) send an agent's spans and a log
//! record; what `serve --no-tui --format json` printed and what `--save` wrote are checked:
//! counts, parents, tokens, statuses.

use opentelemetry::KeyValue;
use opentelemetry::logs::{LogRecord as _, Logger as _, LoggerProvider as _};
use opentelemetry::trace::{Span as _, Status, TraceContextExt as _, Tracer as _, TracerProvider as _};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

struct Server {
    child: Child,
    http: String,
    grpc: String,
    lines: mpsc::Receiver<Value>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(save: &std::path::Path) -> Server {
    serve_with(&["--save".as_ref(), save.as_os_str()], None)
}

/// `serve --no-tui --format json` with more arguments; its later stderr lines go to `notes`.
fn serve_with(args: &[&std::ffi::OsStr], notes: Option<mpsc::Sender<String>>) -> Server {
    spawn_serve(args, notes, None)
}

/// The same, with at most `nofile` descriptors (soft and hard limit) when given.
fn spawn_serve(args: &[&std::ffi::OsStr], notes: Option<mpsc::Sender<String>>, nofile: Option<u64>) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tracetui"));
    if let Some(n) = nofile {
        use std::os::unix::process::CommandExt;
        // SAFETY: setrlimit only, between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let r = libc::rlimit {
                    rlim_cur: n as libc::rlim_t,
                    rlim_max: n as libc::rlim_t,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd
        .args([
            "serve",
            "--no-tui",
            "--format",
            "json",
            "--http",
            "127.0.0.1:0",
            "--grpc",
            "127.0.0.1:0",
        ])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The bound addresses are announced on stderr.
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    let http = first
        .split("http://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no HTTP address in {first:?}"))
        .to_string();
    let grpc = first
        .split("OTLP/gRPC on ")
        .nth(1)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| panic!("no gRPC address in {first:?}"));
    std::thread::spawn(move || {
        for l in err.lines() {
            let (Ok(l), Some(tx)) = (l, &notes) else { continue };
            let _ = tx.send(l);
        }
    });
    let out = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines() {
            let Ok(l) = l else { break };
            let v: Value = serde_json::from_str(&l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}"));
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    Server {
        child,
        http,
        grpc,
        lines,
    }
}

/// An agent run: a root span, an LLM call with tokens, a failed tool call, and a log record
/// emitted inside the root span.
fn agent(tracer: &opentelemetry_sdk::trace::SdkTracer, logger: &opentelemetry_sdk::logs::SdkLogger) {
    tracer.in_span("invoke_agent weather", |cx| {
        cx.span()
            .set_attribute(KeyValue::new("gen_ai.operation.name", "invoke_agent"));
        let mut llm = tracer.start("chat gpt-4o");
        llm.set_attribute(KeyValue::new("gen_ai.operation.name", "chat"));
        llm.set_attribute(KeyValue::new("gen_ai.request.model", "gpt-4o"));
        llm.set_attribute(KeyValue::new("gen_ai.usage.input_tokens", 120i64));
        llm.set_attribute(KeyValue::new("gen_ai.usage.output_tokens", 30i64));
        llm.end();
        let mut tool = tracer.start("execute_tool get_weather");
        tool.set_attribute(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        tool.set_attribute(KeyValue::new("gen_ai.tool.name", "get_weather"));
        tool.set_attribute(KeyValue::new("gen_ai.tool.call.arguments", "{\"city\":\"Paris\"}"));
        tool.set_status(Status::error("timeout"));
        tool.end();
        let mut r = logger.create_log_record();
        r.set_event_name("agent.note");
        r.set_body("looked up the weather".into());
        logger.emit(r);
    });
}

fn resource(service: &str) -> Resource {
    Resource::builder_empty().with_service_name(service.to_string()).build()
}

fn send_http(s: &Server, protocol: Protocol, service: &str) {
    let spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(protocol)
        .with_endpoint(format!("http://{}/v1/traces", s.http))
        .build()
        .unwrap();
    let logs = opentelemetry_otlp::LogExporter::builder()
        .with_http()
        .with_protocol(protocol)
        .with_endpoint(format!("http://{}/v1/logs", s.http))
        .build()
        .unwrap();
    let tp = SdkTracerProvider::builder()
        .with_simple_exporter(spans)
        .with_resource(resource(service))
        .build();
    let lp = SdkLoggerProvider::builder()
        .with_simple_exporter(logs)
        .with_resource(resource(service))
        .build();
    agent(&tp.tracer("test"), &lp.logger("test"));
    tp.shutdown().unwrap();
    lp.shutdown().unwrap();
}

fn send_grpc(s: &Server, service: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(format!("http://{}", s.grpc))
            .build()
            .unwrap();
        let logs = opentelemetry_otlp::LogExporter::builder()
            .with_tonic()
            .with_endpoint(format!("http://{}", s.grpc))
            .build()
            .unwrap();
        let tp = SdkTracerProvider::builder()
            .with_batch_exporter(spans)
            .with_resource(resource(service))
            .build();
        let lp = SdkLoggerProvider::builder()
            .with_batch_exporter(logs)
            .with_resource(resource(service))
            .build();
        agent(&tp.tracer("test"), &lp.logger("test"));
        // The batch processors export from their own threads, through this runtime.
        let (tp2, lp2) = (tp.clone(), lp.clone());
        tokio::task::spawn_blocking(move || {
            tp2.force_flush().unwrap();
            lp2.force_flush().unwrap();
        })
        .await
        .unwrap();
        tokio::task::spawn_blocking(move || {
            tp.shutdown().unwrap();
            lp.shutdown().unwrap();
        })
        .await
        .unwrap();
    });
}

/// Lines printed until `runs` runs ended and `logs` log events came (or the time is up).
fn collect(s: &Server, runs: usize, logs: usize) -> Vec<Value> {
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let ended = got.iter().filter(|v: &&Value| v["kind"] == "run_end").count();
        let notes = got.iter().filter(|v: &&Value| v["name"] == "agent.note").count();
        if ended >= runs && notes >= logs {
            // Anything that follows at once belongs too.
            while let Ok(v) = s.lines.recv_timeout(Duration::from_millis(300)) {
                got.push(v);
            }
            return got;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match s.lines.recv_timeout(left) {
            Ok(v) => got.push(v),
            Err(_) => panic!("timed out; printed so far: {got:#?}"),
        }
    }
}

#[test]
fn sdk_exporters_over_http_protobuf_http_json_and_grpc() {
    tls();
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("session");
    let s = serve(&save);
    send_http(&s, Protocol::HttpBinary, "agent-http-proto");
    send_http(&s, Protocol::HttpJson, "agent-http-json");
    send_grpc(&s, "agent-grpc");
    let lines = collect(&s, 3, 3);

    let ends: Vec<&Value> = lines.iter().filter(|v| v["kind"] == "run_end").collect();
    assert_eq!(ends.len(), 3, "{lines:#?}");
    let mut parents = Vec::new();
    for e in &ends {
        let run = e["run"].as_str().unwrap();
        assert_eq!(e["run_name"], "invoke_agent weather");
        assert_eq!(e["status"], "ok", "the root span ended fine: {e}");
        assert_eq!(e["llm_calls"], 1);
        assert_eq!(e["tool_calls"], 1);
        assert_eq!(e["tokens"], 150, "{e}");
        let events: Vec<&Value> = lines
            .iter()
            .filter(|v| v["run"] == run && v["kind"] != "run_end")
            .collect();
        let root = events
            .iter()
            .find(|v| v["kind"] != "llm" && v["kind"] != "tool" && v["name"] != "agent.note")
            .expect("a root span");
        assert!(root["parent"].is_null(), "{root}");
        let root_id = root["id"].as_str().unwrap();
        let llm = events.iter().find(|v| v["kind"] == "llm").expect("the LLM call");
        assert_eq!(llm["name"], "gpt-4o");
        // Spans are exported as they end, children before their root: a child printed
        // before its parent arrived names the parent it waits for.
        assert_eq!(llm["parent"], root_id, "{llm}");
        assert_eq!(llm["status"], "ok");
        let tool = events.iter().find(|v| v["kind"] == "tool").expect("the tool call");
        assert_eq!(tool["name"], "get_weather");
        assert_eq!(tool["parent"], root_id, "{tool}");
        parents.push((llm["id"].clone(), tool["id"].clone(), root_id.to_string()));
        assert_eq!(tool["status"], "error");
        let note = events
            .iter()
            .find(|v| v["name"] == "agent.note")
            .expect("the log record");
        assert!(note["parent"].is_null() || note["parent"] == root_id, "{note}");
        assert_eq!(events.len(), 4, "{events:#?}");
    }
    drop(s);

    // What --save wrote reopens with the same runs and counts.
    let out = Command::new(env!("CARGO_BIN_EXE_tracetui"))
        .args(["check", "--format", "json"])
        .arg(&save)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let checked: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(checked.len(), 3, "{text}");
    for c in &checked {
        let e = ends.iter().find(|e| e["run"] == c["trace"]).expect("the same run");
        for k in ["status", "tool_calls", "llm_calls", "tokens"] {
            assert_eq!(c[k], e[k], "{k}: {c} vs {e}");
        }
        assert_eq!(c["events"], 4, "{c}");
    }
    // Every line of the saved files is one OTLP/JSON batch, as the Collector writes, and the
    // spans name their parents.
    let mut parent_of = std::collections::HashMap::new();
    for f in std::fs::read_dir(&save).unwrap() {
        let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
        for l in text.lines() {
            let v: Value = serde_json::from_str(l).unwrap();
            assert!(
                v.get("resourceSpans").is_some() || v.get("resourceLogs").is_some(),
                "{l}"
            );
            for rs in v["resourceSpans"].as_array().into_iter().flatten() {
                for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                    for sp in ss["spans"].as_array().into_iter().flatten() {
                        parent_of.insert(sp["spanId"].clone(), sp["parentSpanId"].clone());
                    }
                }
            }
        }
    }
    assert_eq!(parent_of.len(), 9, "three spans from each exporter");
    for (llm, tool, root) in parents {
        assert_eq!(parent_of[&llm], root.as_str());
        assert_eq!(parent_of[&tool], root.as_str());
    }
    // And the loaded tree has them under the root, as the stream said.
    let out = Command::new(env!("CARGO_BIN_EXE_tracetui"))
        .args(["show", "--format", "json"])
        .arg(&save)
        .output()
        .unwrap();
    let shown = String::from_utf8(out.stdout).unwrap();
    assert!(shown.contains("\"kind\":\"tool\""), "{shown}");
}

#[test]
fn bad_bodies_get_the_answers_the_spec_gives() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(&dir.path().join("s"));
    let post = |ct: &str, enc: Option<&str>, body: Vec<u8>| {
        let c = {
            tls();
            reqwest::blocking::Client::new()
        };
        let mut r = c
            .post(format!("http://{}/v1/traces", s.http))
            .header("content-type", ct);
        if let Some(e) = enc {
            r = r.header("content-encoding", e);
        }
        let resp = r.body(body).send().unwrap();
        (resp.status().as_u16(), resp.text().unwrap())
    };
    assert_eq!(post("application/x-protobuf", None, b"\xff\xff\xff".to_vec()).0, 400);
    assert_eq!(post("application/json", None, b"{".to_vec()).0, 400);
    assert_eq!(post("text/plain", None, b"{}".to_vec()).0, 415);
    assert_eq!(post("application/json", Some("br"), b"{}".to_vec()).0, 415);
    // Over the 16 MiB limit, before or after gzip.
    assert_eq!(post("application/json", None, vec![b' '; 17 << 20]).0, 413);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &vec![b' '; 17 << 20]).unwrap();
    assert_eq!(post("application/json", Some("gzip"), gz.finish().unwrap()).0, 413);
    // A span without a valid trace id is rejected, the others kept: partial success.
    let body = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[
        {"traceId":"","spanId":"00f067aa0ba902b7","name":"bad"},
        {"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"00f067aa0ba902b7","name":"good","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}"#;
    let (code, text) = post("application/json", None, body.as_bytes().to_vec());
    assert_eq!(code, 200);
    let v: Value = serde_json::from_str(&text).unwrap();
    let rejected = v["partialSuccess"]["rejectedSpans"].to_string();
    assert_eq!(rejected.trim_matches('"'), "1", "{text}");
    let lines = collect(&s, 1, 0);
    assert!(lines.iter().any(|l| l["name"] == "good"));
    assert!(!lines.iter().any(|l| l["name"] == "bad"));
}

/// POST an OTLP/JSON body to /v1/traces.
fn post_json(s: &Server, body: &Value) {
    let r = {
        tls();
        reqwest::blocking::Client::new()
    }
    .post(format!("http://{}/v1/traces", s.http))
    .header("content-type", "application/json")
    .body(body.to_string())
    .send()
    .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

/// A batch of spans: (trace id digit, span id digit, parent span id digit or none).
fn spans(list: &[(char, char, Option<char>)]) -> Value {
    let spans: Vec<Value> = list
        .iter()
        .map(|&(t, id, parent)| {
            let mut s = serde_json::json!({
                "traceId": t.to_string().repeat(32),
                "spanId": id.to_string().repeat(16),
                "name": format!("span {id}"),
                "startTimeUnixNano": "1000",
                "endTimeUnixNano": "2000",
                "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": if parent.is_some() { "chat" } else { "invoke_agent" }}}],
            });
            if let Some(p) = parent {
                s["parentSpanId"] = Value::String(p.to_string().repeat(16));
            }
            s
        })
        .collect();
    serde_json::json!({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]})
}

/// The stderr lines said until one containing `what` (or 10 s passed).
fn wait_note(notes: &mpsc::Receiver<String>, what: &str) -> Vec<String> {
    let mut said = Vec::new();
    while let Ok(l) = notes.recv_timeout(Duration::from_secs(10)) {
        let found = l.contains(what);
        said.push(l);
        if found {
            break;
        }
    }
    said
}

/// Wait for the next printed line.
fn next(s: &Server) -> Value {
    s.lines
        .recv_timeout(Duration::from_secs(30))
        .expect("a line printed in time")
}

/// `tracetui ls DIR --format json`: (run id, events, status) sorted.
fn listed(dir: &std::path::Path) -> Vec<(String, u64, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_tracetui"))
        .args(["ls", "--format", "json"])
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut v: Vec<(String, u64, String)> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"));
            (
                v["id"].as_str().unwrap_or_else(|| panic!("no id: {l}")).to_string(),
                v["events"].as_u64().unwrap_or_else(|| panic!("no events: {l}")),
                v["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_trace_across_a_file_rotation_is_one_run_live_and_saved() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("session");
    // A cap of 8 spans: files rotate every 2 spans.
    let s = serve_with(
        &[
            "--save".as_ref(),
            save.as_os_str(),
            "--max-spans".as_ref(),
            "8".as_ref(),
        ],
        None,
    );
    // Trace a begins, trace b fills the first file; a continues as the second file starts
    // (with trace c), then ends.
    post_json(&s, &spans(&[('a', '1', Some('9'))]));
    let mut got = vec![next(&s)];
    post_json(&s, &spans(&[('b', '2', Some('8')), ('b', '8', None)]));
    got.extend((0..3).map(|_| next(&s)));
    post_json(&s, &spans(&[('a', '3', Some('9')), ('c', '5', None)]));
    got.extend((0..3).map(|_| next(&s)));
    post_json(&s, &spans(&[('a', '9', None)]));
    got.extend((0..2).map(|_| next(&s)));
    let ends: Vec<&Value> = got.iter().filter(|v| v["kind"] == "run_end").collect();
    assert_eq!(ends.len(), 3, "{got:#?}");
    let mut live: Vec<(String, u64, String)> = ends
        .iter()
        .map(|e| {
            (
                e["run"].as_str().unwrap().to_string(),
                e["events"].as_u64().unwrap(),
                e["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    live.sort();
    let ok = || "ok".to_string();
    assert_eq!(
        live,
        [
            ("a".repeat(32), 3, ok()),
            ("b".repeat(32), 2, ok()),
            ("c".repeat(32), 1, ok())
        ],
        "{got:#?}"
    );
    drop(s);
    let files = std::fs::read_dir(&save).unwrap().count();
    assert!(files >= 2, "the session rotated ({files} file)");
    assert_eq!(listed(&save), live, "tracetui DIR shows the runs the session printed");
}

#[test]
fn the_cap_drops_the_oldest_finished_traces_and_a_saved_one_stays_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("session");
    let (tx, notes) = mpsc::channel();
    let s = serve_with(
        &[
            "--save".as_ref(),
            save.as_os_str(),
            "--max-spans".as_ref(),
            "10".as_ref(),
        ],
        Some(tx),
    );
    // A trace still running (its root never comes) and five finished ones of 3 spans.
    post_json(&s, &spans(&[('f', '1', Some('9'))]));
    next(&s);
    for t in ['1', '2', '3', '4', '5'] {
        post_json(&s, &spans(&[(t, 'a', Some('c')), (t, 'b', Some('c')), (t, 'c', None)]));
        for _ in 0..4 {
            next(&s);
        }
    }
    // 16 spans came, 10 are held at most: the oldest finished traces went first, the
    // running one stayed.
    let said = wait_note(&notes, "over the cap of 10 spans");
    let dropped: Vec<&String> = said.iter().filter(|l| l.contains("over the cap of 10 spans")).collect();
    assert!(!dropped.is_empty(), "{said:#?}");
    assert!(dropped.iter().all(|l| l.contains("they stay in")), "{dropped:#?}");
    assert!(!said.iter().any(|l| l.contains("still running")), "{said:#?}");
    // A late span of a dropped trace prints as new.
    post_json(&s, &spans(&[('1', 'd', Some('c'))]));
    let late = next(&s);
    assert_eq!(
        (late["run"].as_str().unwrap(), late["name"].as_str().unwrap()),
        ("1".repeat(32).as_str(), "span d")
    );
    assert_eq!(late["parent"], "c".repeat(16), "it names its parent, dropped or not");
    drop(s);
    // Every trace is on disk, whole.
    let runs = listed(&save);
    assert_eq!(runs.len(), 6, "{runs:?}");
    assert_eq!(runs[0], ("1".repeat(32), 4, "ok".to_string()));
    for (id, n, _) in &runs[1..5] {
        assert_eq!(*n, 3, "{id}");
    }
    assert_eq!(runs[5], ("f".repeat(32), 1, "running".to_string()));

    // Without --save the dropped traces are gone, and it says so.
    let (tx, notes) = mpsc::channel();
    let s = serve_with(&["--max-spans".as_ref(), "4".as_ref()], Some(tx));
    for t in ['1', '2', '3'] {
        post_json(&s, &spans(&[(t, 'a', Some('c')), (t, 'c', None)]));
        for _ in 0..3 {
            next(&s);
        }
    }
    let said = wait_note(&notes, "over the cap of 4 spans");
    assert!(
        said.iter()
            .any(|l| l.contains("over the cap of 4 spans") && l.contains("they are gone")),
        "{said:#?}"
    );
}

#[test]
fn a_child_before_its_root_names_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(&dir.path().join("s"));
    post_json(&s, &spans(&[('e', '1', Some('9'))]));
    let child = next(&s);
    assert_eq!(child["name"], "span 1");
    assert_eq!(child["parent"], "9".repeat(16), "{child}");
    post_json(&s, &spans(&[('e', '9', None)]));
    let root = next(&s);
    assert_eq!(root["name"], "span 9");
    assert!(root["parent"].is_null(), "{root}");
    assert_eq!(next(&s)["kind"], "run_end");
}

// ---- issue 37: nothing acknowledged is lost; what is too large is refused; connections ----

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue as PbKeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span as PbSpan};
use prost::Message as _;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

/// One trace: a root span and `children` spans under it, each with an attribute `text`.
fn big_request(children: usize, text: &str) -> ExportTraceServiceRequest {
    let span = |id: u8, parent: Option<u8>| PbSpan {
        trace_id: vec![0x5a; 16],
        span_id: vec![id; 8],
        parent_span_id: parent.map(|p| vec![p; 8]).unwrap_or_default(),
        name: format!("span {id}"),
        start_time_unix_nano: 1_000,
        end_time_unix_nano: 2_000,
        attributes: vec![PbKeyValue {
            key: "payload".into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(text.into())),
            }),
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut spans = vec![span(1, None)];
    spans.extend((0..children).map(|i| span(i as u8 + 2, Some(1))));
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// POST a body to /v1/traces: (status, answer).
fn post_raw(s: &Server, ct: &str, gzip: bool, body: Vec<u8>) -> (u16, String) {
    let mut r = {
        tls();
        reqwest::blocking::Client::builder()
    }
    .timeout(Duration::from_secs(120))
    .build()
    .unwrap()
    .post(format!("http://{}/v1/traces", s.http))
    .header("content-type", ct);
    if gzip {
        r = r.header("content-encoding", "gzip");
    }
    let resp = r.body(body).send().unwrap();
    let code = resp.status().as_u16();
    (code, String::from_utf8_lossy(&resp.bytes().unwrap()).into_owned())
}

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut gz, b).unwrap();
    gz.finish().unwrap()
}

/// The peak resident memory of a process, in bytes (Linux).
fn vm_hwm(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    kb * 1024
}

#[test]
fn a_batch_too_long_for_one_line_is_stored_as_several_and_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("s");
    let s = serve(&save);
    // Two 6 MB attributes of control characters: 12 MB of protobuf (under the 16 MiB body
    // limit), 72 MB of OTLP/JSON (each is 6 bytes escaped): more than the 64 MiB a line may
    // have. It was acknowledged and then skipped when read back.
    let text = "\u{1}".repeat(6_000_000);
    let body = big_request(1, &text).encode_to_vec();
    assert!(body.len() < 16 << 20);
    let (code, answer) = post_raw(&s, "application/x-protobuf", false, body);
    assert_eq!(code, 200, "{answer}");
    let got = collect(&s, 1, 0);
    let end = got.iter().find(|v| v["kind"] == "run_end").unwrap();
    assert_eq!(end["events"], 2, "{end}");
    drop(s);
    let mut lines = 0;
    for f in std::fs::read_dir(&save).unwrap() {
        let text = std::fs::read(f.unwrap().path()).unwrap();
        for l in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            assert!(l.len() <= 64 << 20, "a line of {} bytes", l.len());
            lines += 1;
        }
    }
    assert!(lines >= 2, "{lines} line(s)");
    assert_eq!(listed(&save), [("5a".repeat(16), 2, "ok".to_string())]);
}

#[test]
fn a_span_too_large_for_any_line_is_refused_with_the_reason_over_http_and_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("s");
    let s = serve(&save);
    // One 12 MB attribute of control characters: 72 MB as JSON, in a single span.
    let req = big_request(0, &"\u{1}".repeat(12_000_000));
    let (code, answer) = post_raw(&s, "application/x-protobuf", false, req.encode_to_vec());
    assert_eq!(code, 413, "{answer}");
    assert!(answer.contains("cannot be stored"), "{answer}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let status = rt.block_on(async {
        use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
        let mut c = TraceServiceClient::connect(format!("http://{}", s.grpc))
            .await
            .unwrap()
            .max_encoding_message_size(64 << 20);
        c.export(req).await.unwrap_err()
    });
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("cannot be stored"), "{status:?}");
    // Nothing was stored, and the server goes on.
    post_json(&s, &spans(&[('e', '9', None)]));
    assert_eq!(next(&s)["name"], "span 9");
    drop(s);
    assert_eq!(listed(&save).len(), 1);
}

#[test]
fn a_gzip_bomb_of_empty_attributes_is_refused_and_costs_little_memory() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(&dir.path().join("s"));
    // One resource with 8M empty attributes (2 bytes each: 16 MB of protobuf, ~10 KB gzipped)
    // and one span. Decoded it took ~780 MB, and ~200 MB of spool.
    let n = 8_000_000;
    let mut resource = Vec::with_capacity(2 * n);
    for _ in 0..n {
        resource.extend_from_slice(&[0x0a, 0x00]);
    }
    let span = big_request(0, "x").resource_spans[0].scope_spans[0].encode_to_vec();
    let mut rs = Vec::new();
    prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut rs);
    prost::encoding::encode_varint(resource.len() as u64, &mut rs);
    rs.extend_from_slice(&resource);
    prost::encoding::encode_key(2, prost::encoding::WireType::LengthDelimited, &mut rs);
    prost::encoding::encode_varint(span.len() as u64, &mut rs);
    rs.extend_from_slice(&span);
    let mut body = Vec::new();
    prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut body);
    prost::encoding::encode_varint(rs.len() as u64, &mut body);
    body.extend_from_slice(&rs);
    assert!(body.len() < 16 << 20);
    drop(resource);
    let bomb = gzip(&body);
    drop(body);
    let before = vm_hwm(s.child.id());
    let (code, answer) = post_raw(&s, "application/x-protobuf", true, bomb);
    assert_eq!(code, 413, "{answer}");
    assert!(answer.contains("messages"), "{answer}");
    // Its JSON form, 3 bytes an attribute.
    let json = format!(
        "{{\"resourceSpans\":[{{\"resource\":{{\"attributes\":[{}{{}}]}}}}]}}",
        "{},".repeat(5_000_000)
    );
    let (code, answer) = post_raw(&s, "application/json", true, gzip(json.as_bytes()));
    assert_eq!(code, 413, "{answer}");
    let after = vm_hwm(s.child.id());
    eprintln!(
        "serve's peak memory: {} MB before the bombs, {} MB after",
        before >> 20,
        after >> 20
    );
    // Refused before decoding: the inflated 16 MB body and a little more, not hundreds of MB.
    assert!(after < 200 << 20, "peak memory {} MB", after >> 20);
    // Still serving.
    post_json(&s, &spans(&[('e', '9', None)]));
    assert_eq!(next(&s)["name"], "span 9");
}

/// Whether the server closed a connection (an answer, an end, or a reset) within `within`,
/// while `poke` keeps writing to it.
fn closed_within(c: &mut TcpStream, within: Duration, mut poke: impl FnMut(&mut TcpStream) -> bool) -> bool {
    c.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let t0 = Instant::now();
    let mut buf = [0u8; 1024];
    while t0.elapsed() < within {
        if !poke(c) {
            return true;
        }
        match c.read(&mut buf) {
            Ok(_) => return true,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
        std::thread::sleep(Duration::from_millis(1500));
    }
    false
}

#[test]
fn a_client_trickling_its_headers_is_disconnected() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(&dir.path().join("s"));
    let mut c = TcpStream::connect(&s.http).unwrap();
    c.write_all(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n").unwrap();
    // A header byte every 2 s: never a whole request. The deadline only catches a hang (the
    // timeout is 10 s).
    let closed = closed_within(&mut c, Duration::from_secs(90), |c| c.write_all(b"X").is_ok());
    assert!(closed, "still connected after 90 s");
    // An idle connection (no request at all) is closed too.
    let mut idle = TcpStream::connect(&s.http).unwrap();
    assert!(
        closed_within(&mut idle, Duration::from_secs(120), |_| true),
        "idle connection kept"
    );
}

#[test]
fn many_idle_connections_do_not_keep_a_new_exporter_out() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("s");
    // 256 descriptors: 300 idle connections would take them all.
    let s = spawn_serve(&["--save".as_ref(), save.as_os_str()], None, Some(256));
    let idle: Vec<TcpStream> = (0..300).map(|_| TcpStream::connect(&s.http).unwrap()).collect();
    // Kept-alive connections that sent one request each, then nothing.
    let client = {
        tls();
        reqwest::blocking::Client::builder()
    }
    .timeout(Duration::from_secs(60))
    .build()
    .unwrap();
    let post = |body: &Value| {
        client
            .post(format!("http://{}/v1/traces", s.http))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .map(|r| r.status().as_u16())
    };
    // Each batch is a whole run: its span, then its end.
    let run = |s: &Server| {
        let span = next(s);
        assert_eq!(next(s)["kind"], "run_end");
        span["name"].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(post(&spans(&[('a', '1', None)])).unwrap(), 200);
    assert_eq!(run(&s), "span 1");
    // A new exporter is served (it timed out: the descriptors were gone).
    let fresh = {
        tls();
        reqwest::blocking::Client::builder()
    }
    .timeout(Duration::from_secs(60))
    .build()
    .unwrap();
    let code = fresh
        .post(format!("http://{}/v1/traces", s.http))
        .header("content-type", "application/json")
        .body(spans(&[('b', '2', None)]).to_string())
        .send()
        .map(|r| r.status().as_u16());
    assert_eq!(code.unwrap(), 200);
    assert_eq!(run(&s), "span 2");
    // And the kept-alive one again.
    assert_eq!(post(&spans(&[('c', '3', None)])).unwrap(), 200);
    assert_eq!(run(&s), "span 3");
    drop(idle);
    drop(s);
    assert_eq!(listed(&save).len(), 3);
}

#[test]
fn sigterm_ends_serve_within_seconds_whatever_its_clients_do_and_keeps_what_it_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("s");
    let mut s = serve(&save);
    post_json(&s, &spans(&[('a', '1', None)]));
    // A client trickling its headers, one whose body never comes, and an idle one.
    let mut trickle = TcpStream::connect(&s.http).unwrap();
    trickle.write_all(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n").unwrap();
    let mut slow = TcpStream::connect(&s.http).unwrap();
    slow.write_all(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"resourceSpans\":")
        .unwrap();
    let _idle = TcpStream::connect(&s.http).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let pid = s.child.id() as libc::pid_t;
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let t0 = Instant::now();
    let status = loop {
        let _ = trickle.write_all(b"X");
        if let Some(st) = s.child.try_wait().unwrap() {
            break Some(st);
        }
        // Only a hang fails: the stop takes a few seconds at most.
        if t0.elapsed() > Duration::from_secs(40) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let status = status.expect("serve still running 40 s after SIGTERM");
    assert!(status.success(), "{status:?}");
    assert_eq!(listed(&save), [("a".repeat(32), 1, "ok".to_string())]);
}

/// reqwest is built with rustls and no bundled crypto provider (the clickhouse:// client
/// installs ring before it makes a client): a test's clients need it installed too.
fn tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
