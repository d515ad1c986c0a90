//! The OTLP receiver (issue 19): OTLP/HTTP (protobuf or JSON bodies, gzip or not) on
//! `/v1/traces` and `/v1/logs`, OTLP/gRPC TraceService and LogsService. Every accepted request
//! becomes OTLP/JSON lines (the collector file exporter's layout) handed to the consumer,
//! which appends them to the spool and reads them back with the `otlp-json` format's own
//! parser.
//!
//! A request is acknowledged only once the consumer has appended it whole (issue 37): what
//! cannot be stored is refused, never acknowledged and then lost. Answers follow the OTLP
//! specification: 200 (or gRPC OK) with a partial success naming the spans rejected (invalid
//! ids); 400 for a body that does not decode; 413 (RESOURCE_EXHAUSTED) beyond
//! [`super::Options::max_body`], beyond the decoded limits of [`super::bound`], or for one span
//! or log record whose own OTLP/JSON line would be longer than the reader reads; 415 for
//! another content type; 429 with `Retry-After` when the consumer is behind (its queue is
//! full) and 503 with `Retry-After` when it has stopped, failed to store the batch, or did
//! not store it within [`STORE_TIMEOUT`] (gRPC: UNAVAILABLE, which exporters retry).
//!
//! Decoding, checking and encoding run on blocking threads, not the runtime's two workers
//! (a large request took one of them for seconds). Connections (both ports, one server of our
//! own over hyper): a request's headers must arrive within [`HEADER_TIMEOUT`], its body within
//! [`BODY_TIMEOUT`] (408); a connection with no request for [`IDLE_TIMEOUT`] is closed; at most
//! [`max_connections`] are open, the longest idle one closed to let a new one in, and a new one
//! refused (503) when none is idle. Accept errors (out of descriptors) are waited out, never
//! fatal.

use super::bound::{self, M};
use super::spool::TraceKey;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use http_body_util::BodyExt;
use opentelemetry_proto::tonic::collector::logs::v1::{ExportLogsServiceRequest, ExportLogsServiceResponse};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// How long a client may take to send one request body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a client may take to send a request's headers (HTTP/1).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection with no request in progress for this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a request waits for the consumer to store it before the client is told to retry.
pub const STORE_TIMEOUT: Duration = Duration::from_secs(10);
/// At a stop, requests in progress get this long to be stored and answered.
pub const GRACE: Duration = Duration::from_secs(3);
/// Connections open at most, both ports together (less when descriptors are fewer).
pub const MAX_CONNECTIONS: usize = 1024;
/// What a client is told to wait before retrying when the consumer is behind.
const RETRY_AFTER_SECS: &str = "1";

/// One OTLP/JSON line to append: `{"resourceSpans":[...]}` or `{"resourceLogs":[...]}`, no
/// newline.
pub struct Line {
    pub bytes: Vec<u8>,
    pub spans: usize,
    /// The trace ids in the line, each once, and whether it holds that trace's root span:
    /// the spool keeps each trace in one file by them.
    pub traces: Vec<(TraceKey, bool)>,
}

/// One accepted request, as the lines the spool gets (several when one line would be longer
/// than the reader reads).
pub struct Incoming {
    pub lines: Vec<Line>,
    pub spans: usize,
    pub logs: usize,
    pub received: Instant,
    /// Told once every line is appended (Ok), or why not: the client's answer waits for it.
    pub done: Option<tokio::sync::oneshot::Sender<Result<(), String>>>,
}

impl Incoming {
    /// Say how the append went (the client is answered by it).
    pub fn answer(&mut self, r: Result<(), String>) {
        if let Some(d) = self.done.take() {
            let _ = d.send(r);
        }
    }
}

/// The distinct trace ids of a batch (spans, or log records that name a trace) and whether
/// each one's root span (no parent) is among them. Batches hold few traces: a list is enough.
fn keys<'a>(ids: impl Iterator<Item = (&'a [u8], bool)>) -> Vec<(TraceKey, bool)> {
    let mut out: Vec<(TraceKey, bool)> = Vec::new();
    for (id, root) in ids {
        let Ok(k) = <TraceKey>::try_from(id) else {
            continue;
        };
        match out.iter_mut().rev().find(|(o, _)| *o == k) {
            Some((_, r)) => *r |= root,
            None => out.push((k, root)),
        }
    }
    out
}

/// Why a request was not stored.
#[derive(Debug, PartialEq, Eq)]
enum Refused {
    /// The consumer's queue is full: try again shortly.
    Busy,
    /// The consumer has stopped.
    Closed,
    /// The consumer did not store it in time.
    Slow,
    /// Appending it failed (the reason).
    NotStored(String),
}

/// The limits a request is held to.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The body, before and after gzip.
    pub max_body: usize,
    /// The longest line the spool may get: the `otlp-json` reader skips longer ones.
    pub line: usize,
    /// Decoded messages and OTLP/JSON bytes.
    pub decoded: bound::Limits,
}

impl Limits {
    /// The limits for a body limit: JSON up to eight times the body (protobuf becomes 2-4
    /// times larger as JSON; a control character 6 times), lines as the reader reads them.
    pub fn new(max_body: usize) -> Limits {
        Limits {
            max_body,
            line: crate::formats::jsonl::MAX_LINE,
            decoded: bound::Limits {
                elements: bound::MAX_ELEMENTS,
                json: max_body.saturating_mul(8),
            },
        }
    }
}

struct Shared {
    tx: mpsc::SyncSender<Incoming>,
    limits: Limits,
}

impl Shared {
    fn offer(&self, inc: Incoming) -> Result<(), Refused> {
        self.tx.try_send(inc).map_err(|e| match e {
            mpsc::TrySendError::Full(_) => Refused::Busy,
            mpsc::TrySendError::Disconnected(_) => Refused::Closed,
        })
    }

    /// Hand the lines to the consumer and wait until it has appended them.
    async fn store(&self, lines: Vec<Line>, spans: usize, logs: usize) -> Result<(), Refused> {
        if lines.is_empty() {
            return Ok(());
        }
        let (done, stored) = tokio::sync::oneshot::channel();
        self.offer(Incoming {
            lines,
            spans,
            logs,
            received: Instant::now(),
            done: Some(done),
        })?;
        match tokio::time::timeout(STORE_TIMEOUT, stored).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(e))) => Err(Refused::NotStored(e)),
            Ok(Err(_)) => Err(Refused::Closed),
            Err(_) => Err(Refused::Slow),
        }
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

/// The OTLP/JSON form of a message (the collector's file exporter writes the same).
fn line_of<T: serde::Serialize>(req: &T) -> Vec<u8> {
    // Serializing generated message types cannot fail (no maps with non-string keys).
    serde_json::to_vec(req).unwrap_or_default()
}

/// A request as lines no longer than `limit`: one line when it fits (the usual case), else
/// cut by resource and scope, and a scope's records into runs that fit, each line with its
/// resource and scope. A single record too long for a line with them is refused (the reason).
macro_rules! lines_of {
    ($name:ident, $Req:ty, $res:ident, $scopes:ident, $items:ident, $what:literal, $spans:expr, $ids:expr) => {
        fn $name(req: $Req, limit: usize) -> Result<Vec<Line>, String> {
            let line = |req: &$Req| {
                let n: usize = req.$res.iter().flat_map(|r| &r.$scopes).map(|s| s.$items.len()).sum();
                Line {
                    bytes: line_of(req),
                    spans: if $spans { n } else { 0 },
                    traces: keys(
                        req.$res
                            .iter()
                            .flat_map(|r| &r.$scopes)
                            .flat_map(|s| &s.$items)
                            .filter_map($ids),
                    ),
                }
            };
            let whole = line(&req);
            if whole.bytes.len() <= limit {
                return Ok(vec![whole]);
            }
            drop(whole);
            let mut out = Vec::new();
            for mut r in req.$res {
                let scopes = std::mem::take(&mut r.$scopes);
                for mut sc in scopes {
                    let items = std::mem::take(&mut sc.$items);
                    if items.is_empty() {
                        continue;
                    }
                    // The line's size without records: its resource and scope, once.
                    let mut shell_r = r.clone();
                    shell_r.$scopes = vec![sc.clone()];
                    let shell = <$Req>::default();
                    let mut shell = shell;
                    shell.$res = vec![shell_r];
                    let overhead = line_of(&shell).len();
                    let mut run: Vec<_> = Vec::new();
                    let mut size = overhead;
                    let flush = |run: Vec<_>, out: &mut Vec<Line>| {
                        let mut req = <$Req>::default();
                        let mut rr = r.clone();
                        let mut s = sc.clone();
                        s.$items = run;
                        rr.$scopes = vec![s];
                        req.$res = vec![rr];
                        out.push(line(&req));
                    };
                    for it in items {
                        let n = line_of(&it).len() + 1;
                        if overhead + n > limit {
                            return Err(format!(
                                "a {} whose OTLP/JSON line (with its resource and scope) is {} bytes, over the {} bytes a line may have: it cannot be stored",
                                $what,
                                overhead + n,
                                limit
                            ));
                        }
                        if size + n > limit {
                            flush(std::mem::take(&mut run), &mut out);
                            size = overhead;
                        }
                        size += n;
                        run.push(it);
                    }
                    if !run.is_empty() {
                        flush(run, &mut out);
                    }
                }
            }
            Ok(out)
        }
    };
}

lines_of!(
    trace_lines,
    ExportTraceServiceRequest,
    resource_spans,
    scope_spans,
    spans,
    "span",
    true,
    |s| Some((&s.trace_id[..], s.parent_span_id.is_empty()))
);
lines_of!(
    log_lines,
    ExportLogsServiceRequest,
    resource_logs,
    scope_logs,
    log_records,
    "log record",
    false,
    |l| valid_id(&l.trace_id, 16).then_some((&l.trace_id[..], false))
);

// ---- decoding (on a blocking thread) ----

/// What a request carries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Traces,
    Logs,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Encoding {
    Protobuf,
    Json,
}

/// A request decoded and ready to store.
#[derive(Default)]
pub struct Prepared {
    pub lines: Vec<Line>,
    pub spans: usize,
    pub logs: usize,
    /// Spans rejected (invalid ids), and why: the partial success.
    pub rejected: usize,
    pub why: String,
}

/// A request refused: the HTTP status, the gRPC code and the reason.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub status: StatusCode,
    pub grpc: i32,
    pub message: String,
}

fn too_large(message: String) -> Refusal {
    Refusal {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        grpc: 8, // RESOURCE_EXHAUSTED
        message,
    }
}

fn bad(message: String) -> Refusal {
    Refusal {
        status: StatusCode::BAD_REQUEST,
        grpc: 3, // INVALID_ARGUMENT
        message,
    }
}

/// Gunzip (when `gzip`), bound, decode, check and encode one request body: everything a
/// request costs beyond reading it, done before it is queued (so a refusal comes before any
/// acknowledgement). Public for the fuzz tests: no input panics.
pub fn prepare(kind: Kind, enc: Encoding, gzip: bool, raw: &[u8], lim: &Limits) -> Result<Prepared, Refusal> {
    let inflated;
    let body: &[u8] = if gzip {
        // The limit holds for what the body inflates to as well.
        let mut out = Vec::new();
        match flate2::read::GzDecoder::new(raw)
            .take(lim.max_body as u64 + 1)
            .read_to_end(&mut out)
        {
            Err(e) => return Err(bad(format!("bad gzip body: {e}"))),
            Ok(n) if n > lim.max_body => {
                return Err(too_large(format!(
                    "request body over the limit of {} bytes once inflated",
                    lim.max_body
                )));
            }
            Ok(_) => {}
        }
        inflated = out;
        &inflated
    } else {
        raw
    };
    let m = match kind {
        Kind::Traces => M::TraceRequest,
        Kind::Logs => M::LogsRequest,
    };
    let est = match enc {
        Encoding::Protobuf => bound::protobuf(body, m, &lim.decoded),
        Encoding::Json => bound::json(body, m, &lim.decoded),
    };
    match est {
        Ok(_) => {}
        Err(bound::Over::Limit(why)) => return Err(too_large(why)),
        Err(bound::Over::Malformed(why)) => return Err(bad(format!("not an OTLP protobuf message: {why}"))),
    }
    match kind {
        Kind::Traces => {
            let mut req: ExportTraceServiceRequest = decode(enc, body).map_err(bad)?;
            let (kept, rejected, why) = check_traces(&mut req);
            let lines = if kept > 0 {
                trace_lines(req, lim.line).map_err(too_large)?
            } else {
                Vec::new()
            };
            Ok(Prepared {
                lines,
                spans: kept,
                logs: 0,
                rejected,
                why,
            })
        }
        Kind::Logs => {
            let req: ExportLogsServiceRequest = decode(enc, body).map_err(bad)?;
            let n: usize = req
                .resource_logs
                .iter()
                .flat_map(|r| &r.scope_logs)
                .map(|s| s.log_records.len())
                .sum();
            let lines = if n > 0 {
                log_lines(req, lim.line).map_err(too_large)?
            } else {
                Vec::new()
            };
            Ok(Prepared {
                lines,
                spans: 0,
                logs: n,
                rejected: 0,
                why: String::new(),
            })
        }
    }
}

fn decode<M: Message + Default + serde::de::DeserializeOwned>(enc: Encoding, b: &[u8]) -> Result<M, String> {
    match enc {
        Encoding::Protobuf => M::decode(b).map_err(|e| format!("not an OTLP protobuf message: {e}")),
        Encoding::Json => serde_json::from_slice(b).map_err(|e| format!("not an OTLP/JSON message: {e}")),
    }
}

/// `prepare` on a blocking thread.
async fn prepare_off(kind: Kind, enc: Encoding, gzip: bool, raw: Bytes, lim: Limits) -> Result<Prepared, Refusal> {
    tokio::task::spawn_blocking(move || prepare(kind, enc, gzip, &raw, &lim))
        .await
        .unwrap_or_else(|_| {
            Err(Refusal {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                grpc: 13,
                message: "internal error while decoding the request".into(),
            })
        })
}

/// The answer to a request that was stored (or held nothing to store): its protobuf and its
/// JSON form.
fn export_response(kind: Kind, p: &Prepared) -> (Vec<u8>, Vec<u8>) {
    match kind {
        Kind::Traces => {
            let resp = ExportTraceServiceResponse {
                partial_success: (p.rejected > 0).then(|| ExportTracePartialSuccess {
                    rejected_spans: p.rejected as i64,
                    error_message: p.why.clone(),
                }),
            };
            (resp.encode_to_vec(), line_of(&resp))
        }
        Kind::Logs => {
            let resp = ExportLogsServiceResponse { partial_success: None };
            (resp.encode_to_vec(), line_of(&resp))
        }
    }
}

// ---- OTLP/HTTP ----

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

/// Why a request was not stored, as (HTTP status, message); gRPC says UNAVAILABLE for all.
fn refused_why(r: Refused) -> (StatusCode, String) {
    match r {
        Refused::Busy => (
            StatusCode::TOO_MANY_REQUESTS,
            "tracetui is behind: retry after the delay given".into(),
        ),
        Refused::Closed => (StatusCode::SERVICE_UNAVAILABLE, "tracetui is stopping".into()),
        Refused::Slow => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "tracetui did not store the batch within {} s: retry",
                STORE_TIMEOUT.as_secs()
            ),
        ),
        Refused::NotStored(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("tracetui could not store the batch ({e}): retry"),
        ),
    }
}

/// Read a body within the size and time limits. Err: (HTTP status, gRPC code, message).
async fn read_limited(body: Body, max: usize) -> Result<Bytes, (StatusCode, i32, String)> {
    match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, max)).await {
        Err(_) => Err((
            StatusCode::REQUEST_TIMEOUT,
            4,
            "the request body did not arrive in time".into(),
        )),
        Ok(Err(e)) => {
            let is_limit = std::error::Error::source(&e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>())
                || e.into_inner().is::<http_body_util::LengthLimitError>();
            Err(if is_limit {
                (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    8,
                    format!("request body over the limit of {max} bytes"),
                )
            } else {
                (StatusCode::BAD_REQUEST, 3, "the request body could not be read".into())
            })
        }
        Ok(Ok(b)) => Ok(b),
    }
}

/// The body of a request: content type checked, read within the size and time limits.
/// Err is the answer to give.
async fn read_body(sh: &Shared, headers: &HeaderMap, body: Body) -> Result<(Encoding, bool, Bytes), Response> {
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
    let raw = read_limited(body, sh.limits.max_body)
        .await
        .map_err(|(status, code, msg)| error(enc, status, code, msg))?;
    Ok((enc, gzip, raw))
}

async fn http_export(sh: &Shared, kind: Kind, headers: HeaderMap, body: Body) -> Response {
    let (enc, gzip, raw) = match read_body(sh, &headers, body).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let mut p = match prepare_off(kind, enc, gzip, raw, sh.limits).await {
        Ok(p) => p,
        Err(r) => return error(enc, r.status, r.grpc, r.message),
    };
    match sh.store(std::mem::take(&mut p.lines), p.spans, p.logs).await {
        Err(r) => {
            let (status, msg) = refused_why(r);
            error(
                enc,
                status,
                if status == StatusCode::TOO_MANY_REQUESTS { 8 } else { 14 },
                msg,
            )
        }
        Ok(()) => {
            let (proto, json) = export_response(kind, &p);
            let (ct, body) = match enc {
                Encoding::Protobuf => (HeaderValue::from_static("application/x-protobuf"), proto),
                Encoding::Json => (HeaderValue::from_static("application/json"), json),
            };
            ([(header::CONTENT_TYPE, ct)], body).into_response()
        }
    }
}

async fn http_traces(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    http_export(&sh, Kind::Traces, headers, body).await
}

async fn http_logs(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    http_export(&sh, Kind::Logs, headers, body).await
}

fn http_router(sh: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/traces", post(http_traces))
        .route("/v1/logs", post(http_logs))
        // Our own limit, applied while reading (axum's default of 2 MB would answer first).
        .layer(DefaultBodyLimit::disable())
        .with_state(sh)
}

// ---- OTLP/gRPC ----
//
// Served by the same code as OTLP/HTTP (a unary gRPC call is an HTTP/2 POST whose body is one
// length-prefixed message and whose status comes in trailers), so that the bounds are applied
// before the message is decoded: a generated server decodes first.

/// A gRPC answer: OK with a message, or a status (trailers-only).
fn grpc_answer(code: i32, message: &str, reply: Option<Vec<u8>>) -> Response {
    let ct = HeaderValue::from_static("application/grpc");
    let status = HeaderValue::from_str(&code.to_string()).unwrap_or(HeaderValue::from_static("13"));
    match reply {
        Some(msg) if code == 0 => {
            let mut frame = Vec::with_capacity(msg.len() + 5);
            frame.push(0);
            frame.extend_from_slice(&(msg.len() as u32).to_be_bytes());
            frame.extend_from_slice(&msg);
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", status);
            let body = http_body_util::Full::new(Bytes::from(frame)).with_trailers(std::future::ready(Some(Ok::<
                _,
                std::convert::Infallible,
            >(
                trailers,
            ))));
            let mut r = Response::new(Body::new(body));
            r.headers_mut().insert(header::CONTENT_TYPE, ct);
            r
        }
        _ => {
            let mut r = Response::new(Body::empty());
            let h = r.headers_mut();
            h.insert(header::CONTENT_TYPE, ct);
            h.insert("grpc-status", status);
            if let Ok(v) = HeaderValue::from_str(&grpc_message(message)) {
                h.insert("grpc-message", v);
            }
            r
        }
    }
}

/// grpc-message is percent-encoded (everything but printable ASCII, and '%').
fn grpc_message(m: &str) -> String {
    let mut out = String::with_capacity(m.len());
    for b in m.bytes() {
        if (0x20..0x7f).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

async fn grpc_export(sh: &Shared, kind: Kind, headers: HeaderMap, body: Body) -> Response {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !ct.starts_with("application/grpc") {
        return StatusCode::UNSUPPORTED_MEDIA_TYPE.into_response();
    }
    let raw = match read_limited(body, sh.limits.max_body.saturating_add(5)).await {
        Ok(b) => b,
        Err((_, code, msg)) => return grpc_answer(code, &msg, None),
    };
    if raw.len() < 5 {
        return grpc_answer(3, "no message in the request", None);
    }
    let n = u32::from_be_bytes([raw[1], raw[2], raw[3], raw[4]]) as usize;
    if raw.len() - 5 != n {
        return grpc_answer(3, "a unary call carries one message", None);
    }
    let gzip = match raw[0] {
        0 => false,
        1 => match headers.get("grpc-encoding").and_then(|v| v.to_str().ok()) {
            Some(e) if e.eq_ignore_ascii_case("gzip") => true,
            e => {
                return grpc_answer(12, &format!("unsupported grpc-encoding {e:?}: gzip or none"), None);
            }
        },
        f => return grpc_answer(3, &format!("bad message flag {f}"), None),
    };
    let mut p = match prepare_off(kind, Encoding::Protobuf, gzip, raw.slice(5..), sh.limits).await {
        Ok(p) => p,
        Err(r) => return grpc_answer(r.grpc, &r.message, None),
    };
    match sh.store(std::mem::take(&mut p.lines), p.spans, p.logs).await {
        // UNAVAILABLE is the code exporters retry (RESOURCE_EXHAUSTED only with RetryInfo).
        Err(r) => grpc_answer(14, &refused_why(r).1, None),
        Ok(()) => grpc_answer(0, "", Some(export_response(kind, &p).0)),
    }
}

async fn grpc_traces(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    grpc_export(&sh, Kind::Traces, headers, body).await
}

async fn grpc_logs(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    grpc_export(&sh, Kind::Logs, headers, body).await
}

fn grpc_router(sh: Arc<Shared>) -> Router {
    Router::new()
        .route(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            post(grpc_traces),
        )
        .route(
            "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
            post(grpc_logs),
        )
        .fallback(|| async { grpc_answer(12, "unknown service or method", None) })
        .layer(DefaultBodyLimit::disable())
        .with_state(sh)
}

// ---- connections ----

/// One open connection.
struct Conn {
    /// Requests in progress on it.
    busy: AtomicUsize,
    /// Since when no request has been in progress.
    idle_since: Mutex<Instant>,
    /// Told to close (to let a new connection in).
    close: tokio::sync::Notify,
}

impl Conn {
    fn idle_for(&self) -> Option<Duration> {
        if self.busy.load(Ordering::Acquire) > 0 {
            return None;
        }
        Some(self.idle_since.lock().unwrap_or_else(|e| e.into_inner()).elapsed())
    }
}

/// The connections open, on both ports.
struct Conns {
    cap: usize,
    next: AtomicU64,
    open: Mutex<std::collections::HashMap<u64, Arc<Conn>>>,
}

impl Conns {
    /// Let a new connection in: under the cap, or in place of the longest idle one. None when
    /// every connection has a request in progress.
    fn admit(&self) -> Option<(u64, Arc<Conn>)> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.len() >= self.cap {
            let (&id, _) = open
                .iter()
                .filter_map(|(id, c)| c.idle_for().map(|d| (id, d)))
                .max_by_key(|(_, d)| *d)?;
            if let Some(c) = open.remove(&id) {
                c.close.notify_one();
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let c = Arc::new(Conn {
            busy: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            close: tokio::sync::Notify::new(),
        });
        open.insert(id, c.clone());
        Some((id, c))
    }

    fn gone(&self, id: u64) {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    }

    fn busy(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .map(|c| c.busy.load(Ordering::Acquire))
            .sum()
    }
}

/// Counts a connection's requests in progress (while a request's future lives).
struct Busy(Arc<Conn>);

impl Drop for Busy {
    fn drop(&mut self) {
        if self.0.busy.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.0.idle_since.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        }
    }
}

#[derive(Clone)]
struct Tracked {
    inner: hyper_util::service::TowerToHyperService<Router>,
    conn: Arc<Conn>,
}

type BoxFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Response, std::convert::Infallible>> + Send>>;

impl hyper::service::Service<hyper::Request<hyper::body::Incoming>> for Tracked {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = BoxFuture;

    fn call(&self, req: hyper::Request<hyper::body::Incoming>) -> Self::Future {
        self.conn.busy.fetch_add(1, Ordering::AcqRel);
        let guard = Busy(self.conn.clone());
        let fut = self.inner.call(req);
        Box::pin(async move {
            let r = fut.await;
            drop(guard);
            r
        })
    }
}

/// The answer to a connection over the cap (HTTP/1; a gRPC client is closed on, and retries).
fn full() -> Vec<u8> {
    let body = "tracetui: too many connections open, retry in a moment.\n";
    format!(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Accept connections until `stop`, each served until it ends, idles out or is closed.
async fn accept_loop(
    l: tokio::net::TcpListener,
    app: Router,
    conns: Arc<Conns>,
    grpc: bool,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut builder = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT);
    builder.http2().timer(hyper_util::rt::TokioTimer::new());
    let builder = Arc::new(builder);
    let mut backoff = Duration::ZERO;
    loop {
        let accepted = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            a = l.accept() => a,
        };
        let stream = match accepted {
            Ok((s, _)) => {
                backoff = Duration::ZERO;
                s
            }
            Err(e) => {
                // Out of descriptors (EMFILE, ENFILE) or memory: wait for some to be freed
                // (idle connections time out), longer each time; a connection that failed
                // before it was accepted is no reason to wait.
                if !matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::Interrupted
                ) {
                    backoff = (backoff * 2).clamp(Duration::from_millis(10), Duration::from_secs(1));
                    tokio::time::sleep(backoff).await;
                }
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let Some((id, conn)) = conns.admit() else {
            if !grpc {
                tokio::spawn(async move {
                    use tokio::io::AsyncWriteExt;
                    let mut s = stream;
                    let _ = tokio::time::timeout(Duration::from_secs(2), s.write_all(&full())).await;
                });
            }
            continue;
        };
        let svc = Tracked {
            inner: hyper_util::service::TowerToHyperService::new(app.clone()),
            conn: conn.clone(),
        };
        let builder = builder.clone();
        let conns = conns.clone();
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let c = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), svc);
            tokio::pin!(c);
            let mut stopping = false;
            loop {
                let idle = conn.idle_for();
                let wake = tokio::time::Instant::now() + idle.map_or(IDLE_TIMEOUT, |d| IDLE_TIMEOUT.saturating_sub(d));
                tokio::select! {
                    _ = c.as_mut() => break,
                    _ = conn.close.notified() => break,
                    _ = tokio::time::sleep_until(wake) => {
                        if conn.idle_for().is_some_and(|d| d >= IDLE_TIMEOUT) {
                            break;
                        }
                    }
                    _ = stop.wait_for(|s| *s), if !stopping => {
                        // Requests in progress finish; nothing new is read.
                        c.as_mut().graceful_shutdown();
                        stopping = true;
                    }
                }
            }
            conns.gone(id);
        });
    }
}

/// Raise the soft limit on open descriptors to the hard one (each connection takes one);
/// returns the soft limit then in force.
fn raise_nofile() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit write and read the struct given, nothing else.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return None;
        }
        if r.rlim_cur < r.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: r.rlim_max,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                r.rlim_cur = r.rlim_max;
            }
        }
    }
    // rlim_t is u64 on Linux, not everywhere.
    #[allow(clippy::unnecessary_cast)]
    Some(r.rlim_cur as u64)
}

/// Connections let in at most: [`MAX_CONNECTIONS`], or fewer so that descriptors remain for
/// the spool, the explorer's watches and the files it opens.
pub fn max_connections(nofile: Option<u64>) -> usize {
    match nofile {
        Some(n) => (n.saturating_sub(96) / 2).clamp(8, MAX_CONNECTIONS as u64) as usize,
        None => MAX_CONNECTIONS,
    }
}

// ---- running it ----

/// The servers, running on their own threads until dropped.
pub struct Servers {
    pub http: Option<SocketAddr>,
    pub grpc: Option<SocketAddr>,
    /// Connections let in at most.
    pub max_connections: usize,
    stop: Option<tokio::sync::watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Servers {
    /// Stop accepting and reading requests; those in progress are answered once stored
    /// (within [`GRACE`]). The consumer keeps storing until its channel closes.
    pub fn stop(&self) {
        if let Some(s) = &self.stop {
            let _ = s.send(true);
        }
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        self.stop();
        self.stop.take();
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
    let cap = max_connections(raise_nofile());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("otlp-receiver")
        .enable_all()
        .build()?;
    let sh = Arc::new(Shared {
        tx,
        limits: Limits::new(max_body),
    });
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
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let conns = Arc::new(Conns {
        cap,
        next: AtomicU64::new(0),
        open: Mutex::new(std::collections::HashMap::new()),
    });
    let thread = std::thread::Builder::new()
        .name("otlp-receiver".into())
        .spawn(move || {
            rt.block_on(async move {
                if let Some(l) = http_l {
                    tokio::spawn(accept_loop(
                        l,
                        http_router(sh.clone()),
                        conns.clone(),
                        false,
                        stop_rx.clone(),
                    ));
                }
                if let Some(l) = grpc_l {
                    tokio::spawn(accept_loop(
                        l,
                        grpc_router(sh.clone()),
                        conns.clone(),
                        true,
                        stop_rx.clone(),
                    ));
                }
                drop(sh);
                let _ = stop_rx.wait_for(|s| *s).await;
                // Requests in progress are stored and answered, for a while: a client that
                // never finishes its request does not hold the stop up.
                let t0 = Instant::now();
                while conns.busy() > 0 && t0.elapsed() < GRACE {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            });
            // Connections still open are closed; decoding still under way is not waited for.
            rt.shutdown_timeout(Duration::from_millis(100));
        })?;
    Ok(Servers {
        http: http_addr,
        grpc: grpc_addr,
        max_connections: cap,
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
        let sh = Shared {
            tx,
            limits: Limits::new(100),
        };
        let inc = || Incoming {
            lines: Vec::new(),
            spans: 1,
            logs: 0,
            received: Instant::now(),
            done: None,
        };
        assert_eq!(sh.offer(inc()), Ok(()));
        assert_eq!(sh.offer(inc()), Err(Refused::Busy));
        drop(rx);
        assert_eq!(sh.offer(inc()), Err(Refused::Closed));
    }

    #[test]
    fn the_answer_waits_for_the_store() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (tx, rx) = mpsc::sync_channel::<Incoming>(4);
        let sh = Shared {
            tx,
            limits: Limits::new(100),
        };
        let line = || Line {
            bytes: b"{}".to_vec(),
            spans: 1,
            traces: Vec::new(),
        };
        // Stored: Ok, only once the consumer said so; failed: the reason; dropped: Closed.
        let consumer = std::thread::spawn(move || {
            let mut first = rx.recv().unwrap();
            std::thread::sleep(Duration::from_millis(50));
            first.answer(Ok(()));
            rx.recv().unwrap().answer(Err("disk full".into()));
            drop(rx.recv().unwrap());
        });
        rt.block_on(async {
            assert_eq!(sh.store(vec![line()], 1, 0).await, Ok(()));
            assert_eq!(
                sh.store(vec![line()], 1, 0).await,
                Err(Refused::NotStored("disk full".into()))
            );
            assert_eq!(sh.store(vec![line()], 1, 0).await, Err(Refused::Closed));
            // Nothing to store: nothing waited for.
            assert_eq!(sh.store(Vec::new(), 0, 0).await, Ok(()));
        });
        consumer.join().unwrap();
    }

    fn request(n: usize, text: &str) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans: (0..n)
                        .map(|i| Span {
                            name: format!("{i} {text}"),
                            ..span(vec![(i % 3) as u8 + 1; 16], vec![(i % 250) as u8 + 1; 8])
                        })
                        .collect(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }

    #[test]
    fn a_batch_too_long_for_one_line_is_cut_and_each_part_reads_back() {
        let req = request(40, &"\u{1}".repeat(100));
        let whole = line_of(&req).len();
        let lines = trace_lines(req.clone(), whole / 3).unwrap();
        assert!(lines.len() >= 3, "{}", lines.len());
        let mut names = Vec::new();
        for l in &lines {
            assert!(l.bytes.len() <= whole / 3);
            let back: ExportTraceServiceRequest = serde_json::from_slice(&l.bytes).unwrap();
            let spans = &back.resource_spans[0].scope_spans[0].spans;
            assert_eq!(l.spans, spans.len());
            // The trace ids of the part, not of the batch.
            let mut ids: Vec<TraceKey> = spans.iter().map(|s| s.trace_id[..].try_into().unwrap()).collect();
            ids.sort();
            ids.dedup();
            assert_eq!(l.traces.len(), ids.len());
            names.extend(spans.iter().map(|s| s.name.clone()));
        }
        let expected: Vec<String> = req.resource_spans[0].scope_spans[0]
            .spans
            .iter()
            .map(|s| s.name.clone())
            .collect();
        assert_eq!(names, expected, "every span once, in order");
        // Whole when it fits.
        assert_eq!(trace_lines(req.clone(), whole).unwrap().len(), 1);
        // One span longer than a line: refused, with the reason.
        let e = trace_lines(request(1, &"x".repeat(500)), 300).err().unwrap();
        assert!(e.contains("over the 300 bytes a line may have"), "{e}");
    }

    #[test]
    fn prepare_refuses_what_cannot_be_stored_before_it_is_queued() {
        let lim = Limits {
            max_body: 1 << 20,
            line: 1000,
            decoded: bound::Limits {
                elements: 1000,
                json: 1 << 20,
            },
        };
        let body = request(1, &"x".repeat(2000)).encode_to_vec();
        let r = prepare(Kind::Traces, Encoding::Protobuf, false, &body, &lim)
            .err()
            .unwrap();
        assert_eq!((r.status, r.grpc), (StatusCode::PAYLOAD_TOO_LARGE, 8), "{r:?}");
        let body = request(2000, "").encode_to_vec();
        let r = prepare(Kind::Traces, Encoding::Protobuf, false, &body, &lim)
            .err()
            .unwrap();
        assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{r:?}");
        assert!(r.message.contains("messages"), "{r:?}");
        let r = prepare(Kind::Logs, Encoding::Json, false, b"{", &lim).err().unwrap();
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        let p = prepare(
            Kind::Traces,
            Encoding::Protobuf,
            false,
            &request(5, "").encode_to_vec(),
            &lim,
        )
        .unwrap();
        assert_eq!((p.spans, p.rejected), (5, 0));
        assert!(p.lines.len() > 1 && p.lines.iter().all(|l| l.bytes.len() <= 1000));
        assert_eq!(grpc_message("a%b é"), "a%25b %C3%A9");
    }

    #[test]
    fn the_cap_lets_a_new_connection_in_for_the_longest_idle_one() {
        let conns = Conns {
            cap: 2,
            next: AtomicU64::new(0),
            open: Mutex::new(Default::default()),
        };
        let (a, ca) = conns.admit().unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let (_b, cb) = conns.admit().unwrap();
        cb.busy.fetch_add(1, Ordering::AcqRel);
        // Full: the idle one (a) makes room; b is busy and stays.
        let (_c, cc) = conns.admit().unwrap();
        assert!(!conns.open.lock().unwrap().contains_key(&a));
        assert!(ca.close.notified().now_or_never_is_ready(), "told to close");
        cc.busy.fetch_add(1, Ordering::AcqRel);
        // Every one busy: refused.
        assert!(conns.admit().is_none());
        assert_eq!(conns.busy(), 2);
        let answer = String::from_utf8(full()).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 ") && head.ends_with(&format!("Content-Length: {}", body.len())));
        assert_eq!(max_connections(Some(1024)), 464);
        assert_eq!(max_connections(Some(100)), 8);
        assert_eq!(max_connections(Some(1 << 20)), MAX_CONNECTIONS);
    }

    trait ReadyNow {
        fn now_or_never_is_ready(self) -> bool;
    }

    impl<F: std::future::Future> ReadyNow for F {
        fn now_or_never_is_ready(self) -> bool {
            let waker = std::task::Waker::noop();
            let mut cx = std::task::Context::from_waker(waker);
            let mut f = std::pin::pin!(self);
            f.as_mut().poll(&mut cx).is_ready()
        }
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
        assert!(line.starts_with("{\"resourceSpans\":[{"), "{line}");
        assert!(
            line.contains("\"traceId\":\"abababababababababababababababab\""),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }
}
