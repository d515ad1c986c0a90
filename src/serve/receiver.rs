//! The OTLP receiver (issue 19): OTLP/HTTP (protobuf or JSON bodies, gzip or not) on
//! `/v1/traces` and `/v1/logs`, OTLP/gRPC TraceService and LogsService. Every accepted request
//! becomes one OTLP/JSON line (the collector file exporter's layout) handed to the consumer,
//! which appends it to the spool and reads it back with the `otlp-json` format's own parser.
//!
//! Answers follow the OTLP specification: 200 (or gRPC OK) with a partial success naming the
//! spans rejected (invalid ids); 400 for a body that does not decode; 413 beyond
//! [`super::Options::max_body`]; 415 for another content type; 429 with `Retry-After` when the
//! consumer is behind (its queue is full) and 503 with `Retry-After` when it has stopped
//! (gRPC: UNAVAILABLE, which exporters retry). Slow clients: a request body must arrive within
//! [`BODY_TIMEOUT`] (408), a gRPC call finish within it (DEADLINE_EXCEEDED).

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{LogsService, LogsServiceServer};
use opentelemetry_proto::tonic::collector::logs::v1::{ExportLogsServiceRequest, ExportLogsServiceResponse};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a client may take to send one request body (or a gRPC call to complete).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// What a client is told to wait before retrying when the consumer is behind.
const RETRY_AFTER_SECS: &str = "1";

/// One accepted request, as the line the spool gets.
pub struct Incoming {
    /// `{"resourceSpans":[...]}` or `{"resourceLogs":[...]}`, no newline.
    pub line: Vec<u8>,
    pub spans: usize,
    pub logs: usize,
    pub received: Instant,
    /// The trace ids in the batch, each once, and whether the batch holds that trace's root
    /// span: the spool keeps each trace in one file by them.
    pub traces: Vec<(super::spool::TraceKey, bool)>,
}

/// The distinct trace ids of a batch (spans, or log records that name a trace) and whether
/// each one's root span (no parent) is among them. Batches hold few traces: a list is enough.
fn keys<'a>(ids: impl Iterator<Item = (&'a [u8], bool)>) -> Vec<(super::spool::TraceKey, bool)> {
    let mut out: Vec<(super::spool::TraceKey, bool)> = Vec::new();
    for (id, root) in ids {
        let Ok(k) = <super::spool::TraceKey>::try_from(id) else {
            continue;
        };
        match out.iter_mut().rev().find(|(o, _)| *o == k) {
            Some((_, r)) => *r |= root,
            None => out.push((k, root)),
        }
    }
    out
}

/// Why a request was not taken.
#[derive(Debug, PartialEq, Eq)]
enum Refused {
    /// The consumer's queue is full: try again shortly.
    Busy,
    /// The consumer has stopped.
    Closed,
}

#[derive(Clone)]
struct Shared {
    tx: mpsc::SyncSender<Incoming>,
    max_body: usize,
}

impl Shared {
    fn offer(&self, inc: Incoming) -> Result<(), Refused> {
        self.tx.try_send(inc).map_err(|e| match e {
            mpsc::TrySendError::Full(_) => Refused::Busy,
            mpsc::TrySendError::Disconnected(_) => Refused::Closed,
        })
    }
}

/// Whether an id has the length OTLP requires and is not all zeros.
fn valid_id(id: &[u8], len: usize) -> bool {
    id.len() == len && id.iter().any(|&b| b != 0)
}

/// Drop the spans a reader cannot place (invalid trace or span id; a parent id of the wrong
/// length) and say how many and why: the partial success of the answer.
fn check_traces(req: &mut ExportTraceServiceRequest) -> (usize, usize, String) {
    let (mut kept, mut rejected) = (0, 0);
    for rs in &mut req.resource_spans {
        for ss in &mut rs.scope_spans {
            ss.spans.retain(|s| {
                let ok = valid_id(&s.trace_id, 16)
                    && valid_id(&s.span_id, 8)
                    && (s.parent_span_id.is_empty() || s.parent_span_id.len() == 8);
                if ok {
                    kept += 1
                } else {
                    rejected += 1
                }
                ok
            });
        }
    }
    let why = if rejected > 0 {
        format!("{rejected} span(s) rejected: a trace id must be 16 bytes, a span id 8 bytes, not all zero")
    } else {
        String::new()
    };
    (kept, rejected, why)
}

fn count_logs(req: &ExportLogsServiceRequest) -> usize {
    req.resource_logs
        .iter()
        .flat_map(|r| &r.scope_logs)
        .map(|s| s.log_records.len())
        .sum()
}

/// The OTLP/JSON line of a request (the collector's file exporter writes the same).
fn line_of<T: serde::Serialize>(req: &T) -> Vec<u8> {
    // Serializing generated message types cannot fail (no maps with non-string keys).
    serde_json::to_vec(req).unwrap_or_default()
}

/// Accept a decoded trace request: returns (spans kept, spans rejected, message).
fn take_traces(sh: &Shared, mut req: ExportTraceServiceRequest) -> Result<(usize, String), Refused> {
    let (kept, rejected, why) = check_traces(&mut req);
    if kept > 0 {
        let traces = keys(
            req.resource_spans
                .iter()
                .flat_map(|r| &r.scope_spans)
                .flat_map(|s| &s.spans)
                .map(|s| (&s.trace_id[..], s.parent_span_id.is_empty())),
        );
        sh.offer(Incoming {
            line: line_of(&req),
            spans: kept,
            logs: 0,
            received: Instant::now(),
            traces,
        })?;
    }
    Ok((rejected, why))
}

fn take_logs(sh: &Shared, req: ExportLogsServiceRequest) -> Result<(), Refused> {
    let n = count_logs(&req);
    if n > 0 {
        let traces = keys(
            req.resource_logs
                .iter()
                .flat_map(|r| &r.scope_logs)
                .flat_map(|s| &s.log_records)
                .filter(|l| valid_id(&l.trace_id, 16))
                .map(|l| (&l.trace_id[..], false)),
        );
        sh.offer(Incoming {
            line: line_of(&req),
            spans: 0,
            logs: n,
            received: Instant::now(),
            traces,
        })?;
    }
    Ok(())
}

// ---- OTLP/HTTP ----

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Encoding {
    Protobuf,
    Json,
}

/// google.rpc.Status, the body of an OTLP/HTTP error answer (the spec's own message; not part
/// of the opentelemetry-proto crate).
#[derive(Clone, PartialEq, prost::Message, serde::Serialize)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

fn encode<M: Message + serde::Serialize>(enc: Encoding, m: &M) -> (HeaderValue, Vec<u8>) {
    match enc {
        Encoding::Protobuf => (HeaderValue::from_static("application/x-protobuf"), m.encode_to_vec()),
        Encoding::Json => (HeaderValue::from_static("application/json"), line_of(m)),
    }
}

fn error(enc: Encoding, status: StatusCode, grpc_code: i32, msg: impl Into<String>) -> Response {
    let (ct, body) = encode(
        enc,
        &RpcStatus {
            code: grpc_code,
            message: msg.into(),
        },
    );
    let mut r = (status, body).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, ct);
    if matches!(status, StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE) {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
    }
    r
}

fn refused(enc: Encoding, r: Refused) -> Response {
    match r {
        Refused::Busy => error(
            enc,
            StatusCode::TOO_MANY_REQUESTS,
            8,
            "tracetui is behind: retry after the delay given",
        ),
        Refused::Closed => error(enc, StatusCode::SERVICE_UNAVAILABLE, 14, "tracetui is stopping"),
    }
}

/// The body of a request: content type checked, read within the size and time limits,
/// gunzipped if it says so. Err is the answer to give.
async fn read_body(sh: &Shared, headers: &HeaderMap, body: Body) -> Result<(Encoding, Bytes), Response> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let enc = match ct.as_str() {
        "application/x-protobuf" | "application/protobuf" => Encoding::Protobuf,
        "application/json" => Encoding::Json,
        _ => {
            return Err(error(
                Encoding::Json,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                3,
                format!("unsupported Content-Type {ct:?}: OTLP/HTTP takes application/x-protobuf or application/json"),
            ));
        }
    };
    let gzip = match headers.get(header::CONTENT_ENCODING).and_then(|v| v.to_str().ok()) {
        None | Some("identity") | Some("") => false,
        Some(e) if e.eq_ignore_ascii_case("gzip") => true,
        Some(e) => {
            return Err(error(
                enc,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                3,
                format!("unsupported Content-Encoding {e:?}: gzip or none"),
            ));
        }
    };
    let too_big = || {
        error(
            enc,
            StatusCode::PAYLOAD_TOO_LARGE,
            8,
            format!("request body over the limit of {} bytes", sh.max_body),
        )
    };
    let raw = match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, sh.max_body)).await {
        Err(_) => {
            return Err(error(
                enc,
                StatusCode::REQUEST_TIMEOUT,
                4,
                "the request body did not arrive in time",
            ));
        }
        Ok(Err(e)) => {
            let is_limit = std::error::Error::source(&e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>())
                || e.into_inner().is::<http_body_util::LengthLimitError>();
            return Err(if is_limit {
                too_big()
            } else {
                error(enc, StatusCode::BAD_REQUEST, 3, "the request body could not be read")
            });
        }
        Ok(Ok(b)) => b,
    };
    if !gzip {
        return Ok((enc, raw));
    }
    // The limit holds for what the body inflates to as well.
    let mut out = Vec::new();
    let r = flate2::read::GzDecoder::new(&raw[..])
        .take(sh.max_body as u64 + 1)
        .read_to_end(&mut out);
    match r {
        Err(e) => Err(error(enc, StatusCode::BAD_REQUEST, 3, format!("bad gzip body: {e}"))),
        Ok(n) if n > sh.max_body => Err(too_big()),
        Ok(_) => Ok((enc, Bytes::from(out))),
    }
}

fn decode<M: Message + Default + serde::de::DeserializeOwned>(enc: Encoding, b: &[u8]) -> Result<M, String> {
    match enc {
        Encoding::Protobuf => M::decode(b).map_err(|e| format!("not an OTLP protobuf message: {e}")),
        Encoding::Json => serde_json::from_slice(b).map_err(|e| format!("not an OTLP/JSON message: {e}")),
    }
}

async fn http_traces(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    let (enc, bytes) = match read_body(&sh, &headers, body).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let req: ExportTraceServiceRequest = match decode(enc, &bytes) {
        Ok(r) => r,
        Err(e) => return error(enc, StatusCode::BAD_REQUEST, 3, e),
    };
    match take_traces(&sh, req) {
        Err(r) => refused(enc, r),
        Ok((rejected, why)) => {
            let resp = ExportTraceServiceResponse {
                partial_success: (rejected > 0).then_some(ExportTracePartialSuccess {
                    rejected_spans: rejected as i64,
                    error_message: why,
                }),
            };
            let (ct, body) = encode(enc, &resp);
            ([(header::CONTENT_TYPE, ct)], body).into_response()
        }
    }
}

async fn http_logs(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    let (enc, bytes) = match read_body(&sh, &headers, body).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let req: ExportLogsServiceRequest = match decode(enc, &bytes) {
        Ok(r) => r,
        Err(e) => return error(enc, StatusCode::BAD_REQUEST, 3, e),
    };
    match take_logs(&sh, req) {
        Err(r) => refused(enc, r),
        Ok(()) => {
            let (ct, body) = encode(enc, &ExportLogsServiceResponse { partial_success: None });
            ([(header::CONTENT_TYPE, ct)], body).into_response()
        }
    }
}

fn router(sh: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/traces", post(http_traces))
        .route("/v1/logs", post(http_logs))
        // Our own limit, applied while reading (axum's default of 2 MB would answer first).
        .layer(DefaultBodyLimit::disable())
        .with_state(sh)
}

// ---- OTLP/gRPC ----

struct Grpc(Arc<Shared>);

fn grpc_refused(r: Refused) -> tonic::Status {
    match r {
        // UNAVAILABLE is the code exporters retry (RESOURCE_EXHAUSTED only with RetryInfo).
        Refused::Busy => tonic::Status::unavailable("tracetui is behind: retry shortly"),
        Refused::Closed => tonic::Status::unavailable("tracetui is stopping"),
    }
}

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let (rejected, why) = take_traces(&self.0, request.into_inner()).map_err(grpc_refused)?;
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: (rejected > 0).then_some(ExportTracePartialSuccess {
                rejected_spans: rejected as i64,
                error_message: why,
            }),
        }))
    }
}

#[tonic::async_trait]
impl LogsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportLogsServiceRequest>,
    ) -> Result<tonic::Response<ExportLogsServiceResponse>, tonic::Status> {
        take_logs(&self.0, request.into_inner()).map_err(grpc_refused)?;
        Ok(tonic::Response::new(ExportLogsServiceResponse {
            partial_success: None,
        }))
    }
}

// ---- running it ----

/// The servers, running on their own threads until dropped.
pub struct Servers {
    pub http: Option<SocketAddr>,
    pub grpc: Option<SocketAddr>,
    stop: Option<tokio::sync::watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Servers {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(true);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Bind both listeners (errors name the address) and serve them on a small runtime of its own.
pub fn start(
    http: Option<SocketAddr>,
    grpc: Option<SocketAddr>,
    max_body: usize,
    tx: mpsc::SyncSender<Incoming>,
) -> anyhow::Result<Servers> {
    use anyhow::Context;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("otlp-receiver")
        .enable_all()
        .build()?;
    let sh = Arc::new(Shared { tx, max_body });
    let http_l = http
        .map(|a| {
            rt.block_on(tokio::net::TcpListener::bind(a))
                .with_context(|| format!("cannot listen for OTLP/HTTP on {a}"))
        })
        .transpose()?;
    let grpc_l = grpc
        .map(|a| {
            rt.block_on(tokio::net::TcpListener::bind(a))
                .with_context(|| format!("cannot listen for OTLP/gRPC on {a}"))
        })
        .transpose()?;
    let http_addr = http_l.as_ref().map(|l| l.local_addr()).transpose()?;
    let grpc_addr = grpc_l.as_ref().map(|l| l.local_addr()).transpose()?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let thread = std::thread::Builder::new()
        .name("otlp-receiver".into())
        .spawn(move || {
            rt.block_on(async move {
                let mut tasks = Vec::new();
                if let Some(l) = http_l {
                    let mut stop = stop_rx.clone();
                    let app = router(sh.clone());
                    tasks.push(tokio::spawn(async move {
                        let _ = axum::serve(l, app)
                            .with_graceful_shutdown(async move {
                                let _ = stop.wait_for(|s| *s).await;
                            })
                            .await;
                    }));
                }
                if let Some(l) = grpc_l {
                    let mut stop = stop_rx.clone();
                    let g = Arc::new(Grpc(sh.clone()));
                    let traces = TraceServiceServer::from_arc(g.clone())
                        .accept_compressed(tonic::codec::CompressionEncoding::Gzip)
                        .send_compressed(tonic::codec::CompressionEncoding::Gzip)
                        .max_decoding_message_size(max_body);
                    let logs = LogsServiceServer::from_arc(g)
                        .accept_compressed(tonic::codec::CompressionEncoding::Gzip)
                        .send_compressed(tonic::codec::CompressionEncoding::Gzip)
                        .max_decoding_message_size(max_body);
                    tasks.push(tokio::spawn(async move {
                        let _ = tonic::transport::Server::builder()
                            .timeout(BODY_TIMEOUT)
                            .add_service(traces)
                            .add_service(logs)
                            .serve_with_incoming_shutdown(tonic::transport::server::TcpIncoming::from(l), async move {
                                let _ = stop.wait_for(|s| *s).await;
                            })
                            .await;
                    }));
                }
                for t in tasks {
                    let _ = t.await;
                }
            });
            // Connections still open (a client that keeps one alive) are not waited for.
            rt.shutdown_timeout(Duration::from_millis(200));
        })?;
    Ok(Servers {
        http: http_addr,
        grpc: grpc_addr,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

    fn span(tid: Vec<u8>, sid: Vec<u8>) -> Span {
        Span {
            trace_id: tid,
            span_id: sid,
            name: "s".into(),
            ..Default::default()
        }
    }

    #[test]
    fn spans_with_invalid_ids_are_rejected_and_counted() {
        let mut req = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans: vec![
                        span(vec![1; 16], vec![2; 8]),
                        span(vec![0; 16], vec![2; 8]),
                        span(vec![1; 15], vec![2; 8]),
                        span(vec![1; 16], vec![]),
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let (kept, rejected, why) = check_traces(&mut req);
        assert_eq!((kept, rejected), (1, 3));
        assert!(why.starts_with("3 span(s) rejected"), "{why}");
        assert_eq!(req.resource_spans[0].scope_spans[0].spans.len(), 1);
    }

    #[test]
    fn a_full_queue_is_busy_and_a_closed_one_closed() {
        let (tx, rx) = mpsc::sync_channel(1);
        let sh = Shared { tx, max_body: 100 };
        let inc = || Incoming {
            line: b"{}".to_vec(),
            spans: 1,
            logs: 0,
            received: Instant::now(),
            traces: Vec::new(),
        };
        assert_eq!(sh.offer(inc()), Ok(()));
        assert_eq!(sh.offer(inc()), Err(Refused::Busy));
        drop(rx);
        assert_eq!(sh.offer(inc()), Err(Refused::Closed));
    }

    #[test]
    fn the_json_line_is_what_the_file_format_reads() {
        let req = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans: vec![span(vec![0xab; 16], vec![0xcd; 8])],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let line = String::from_utf8(line_of(&req)).unwrap();
        assert!(line.starts_with("{\"resourceSpans\":["), "{line}");
        assert!(
            line.contains("\"traceId\":\"abababababababababababababababab\""),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }
}
