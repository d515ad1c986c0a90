//! What a request will cost once decoded, known before it is decoded (issue 37): a 16 KB
//! gzip body of 8M empty attributes is 16 MB of protobuf (2 bytes an attribute), ~500 MB of
//! decoded messages and ~200 MB of OTLP/JSON. A cheap pass over the bytes (the protobuf wire
//! format, or the JSON text) counts the messages the request holds and bounds the size of its
//! OTLP/JSON form from above, so that what is beyond the limits is refused before anything is
//! allocated for it.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, EntityRef, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status, span};
use std::sync::OnceLock;

/// Messages (spans, attributes, values, ...) a request may hold: each costs tens to hundreds
/// of bytes once decoded whatever its size on the wire (an empty attribute is 2 bytes).
pub const MAX_ELEMENTS: usize = 1 << 20;

/// The message types of the two OTLP requests, as far as the estimate needs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum M {
    TraceRequest,
    ResourceSpans,
    Resource,
    ScopeSpans,
    Scope,
    Span,
    Event,
    Link,
    Status,
    KeyValue,
    AnyValue,
    ArrayValue,
    KvList,
    EntityRef,
    LogsRequest,
    ResourceLogs,
    ScopeLogs,
    LogRecord,
}

/// What a leaf field becomes in JSON.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Leaf {
    /// A string: quoted and escaped.
    Str,
    /// Bytes: hex (ids) or base64, at most twice as long, quoted.
    Bytes,
    /// A number or bool (64-bit integers are quoted strings in OTLP/JSON).
    Num,
}

enum Field {
    Msg(M),
    Leaf(Leaf),
    /// Not part of the message: skipped by the decoder, absent from the JSON.
    Unknown,
}

/// The type of field `n` of a message of type `m` (OTLP 1.x field numbers, as generated in
/// opentelemetry-proto).
fn field(m: M, n: u64) -> Field {
    use Field::{Leaf as L, Msg as F};
    use Leaf::*;
    match (m, n) {
        (M::TraceRequest, 1) => F(M::ResourceSpans),
        (M::LogsRequest, 1) => F(M::ResourceLogs),
        (M::ResourceSpans, 1) | (M::ResourceLogs, 1) => F(M::Resource),
        (M::ResourceSpans, 2) => F(M::ScopeSpans),
        (M::ResourceLogs, 2) => F(M::ScopeLogs),
        (M::ResourceSpans | M::ResourceLogs | M::ScopeSpans | M::ScopeLogs, 3) => L(Str),
        (M::Resource, 1) => F(M::KeyValue),
        (M::Resource, 2) => L(Num),
        (M::Resource, 3) => F(M::EntityRef),
        (M::ScopeSpans | M::ScopeLogs, 1) => F(M::Scope),
        (M::ScopeSpans, 2) => F(M::Span),
        (M::ScopeLogs, 2) => F(M::LogRecord),
        (M::Scope, 1 | 2) => L(Str),
        (M::Scope, 3) => F(M::KeyValue),
        (M::Scope, 4) => L(Num),
        (M::Span, 1 | 2 | 4) => L(Bytes),
        (M::Span, 3 | 5) => L(Str),
        (M::Span, 6 | 7 | 8 | 10 | 12 | 14 | 16) => L(Num),
        (M::Span, 9) => F(M::KeyValue),
        (M::Span, 11) => F(M::Event),
        (M::Span, 13) => F(M::Link),
        (M::Span, 15) => F(M::Status),
        (M::Event, 1 | 4) => L(Num),
        (M::Event, 2) => L(Str),
        (M::Event, 3) => F(M::KeyValue),
        (M::Link, 1 | 2) => L(Bytes),
        (M::Link, 3) => L(Str),
        (M::Link, 4) => F(M::KeyValue),
        (M::Link, 5 | 6) => L(Num),
        (M::Status, 2) => L(Str),
        (M::Status, 3) => L(Num),
        (M::KeyValue, 1) => L(Str),
        (M::KeyValue, 2) => F(M::AnyValue),
        (M::KeyValue, 3) => L(Num),
        (M::AnyValue, 1) => L(Str),
        (M::AnyValue, 2 | 3 | 4 | 8) => L(Num),
        (M::AnyValue, 5) => F(M::ArrayValue),
        (M::AnyValue, 6) => F(M::KvList),
        (M::AnyValue, 7) => L(Bytes),
        (M::ArrayValue, 1) => F(M::AnyValue),
        (M::KvList, 1) => F(M::KeyValue),
        (M::EntityRef, 1..=4) => L(Str),
        (M::LogRecord, 1 | 11 | 2 | 7 | 8) => L(Num),
        (M::LogRecord, 3 | 12) => L(Str),
        (M::LogRecord, 5) => F(M::AnyValue),
        (M::LogRecord, 6) => F(M::KeyValue),
        (M::LogRecord, 9 | 10) => L(Bytes),
        _ => Field::Unknown,
    }
}

/// The same fields by their OTLP/JSON names (lowerCamelCase, as the specification writes
/// them; the snake_case forms the decoder also takes are listed too).
fn json_field(m: M, key: &[u8]) -> Option<M> {
    Some(match (m, key) {
        (M::TraceRequest, b"resourceSpans" | b"resource_spans") => M::ResourceSpans,
        (M::LogsRequest, b"resourceLogs" | b"resource_logs") => M::ResourceLogs,
        (M::ResourceSpans | M::ResourceLogs, b"resource") => M::Resource,
        (M::ResourceSpans, b"scopeSpans" | b"scope_spans") => M::ScopeSpans,
        (M::ResourceLogs, b"scopeLogs" | b"scope_logs") => M::ScopeLogs,
        (M::Resource | M::Scope | M::Span | M::Event | M::Link | M::LogRecord, b"attributes") => M::KeyValue,
        (M::Resource, b"entityRefs" | b"entity_refs") => M::EntityRef,
        (M::ScopeSpans | M::ScopeLogs, b"scope") => M::Scope,
        (M::ScopeSpans, b"spans") => M::Span,
        (M::ScopeLogs, b"logRecords" | b"log_records") => M::LogRecord,
        (M::Span, b"events") => M::Event,
        (M::Span, b"links") => M::Link,
        (M::Span, b"status") => M::Status,
        (M::KeyValue, b"value") | (M::LogRecord, b"body") => M::AnyValue,
        (M::AnyValue, b"arrayValue" | b"array_value") => M::ArrayValue,
        (M::AnyValue, b"kvlistValue" | b"kvlist_value") => M::KvList,
        (M::ArrayValue, b"values") => M::AnyValue,
        (M::KvList, b"values") => M::KeyValue,
        _ => return None,
    })
}

/// The OTLP/JSON size of a message with every field at its default (what an empty message on
/// the wire, 2 bytes, becomes), measured once with the encoder the receiver uses.
fn base(m: M) -> usize {
    static SIZES: OnceLock<Vec<usize>> = OnceLock::new();
    fn len<T: serde::Serialize + Default>() -> usize {
        serde_json::to_vec(&T::default()).map_or(4096, |v| v.len())
    }
    let sizes = SIZES.get_or_init(|| {
        vec![
            len::<ExportTraceServiceRequest>(),
            len::<ResourceSpans>(),
            len::<Resource>(),
            len::<ScopeSpans>(),
            len::<InstrumentationScope>(),
            len::<Span>(),
            len::<span::Event>(),
            len::<span::Link>(),
            len::<Status>(),
            len::<KeyValue>(),
            len::<AnyValue>(),
            len::<ArrayValue>(),
            len::<KeyValueList>(),
            len::<EntityRef>(),
            len::<ExportLogsServiceRequest>(),
            len::<ResourceLogs>(),
            len::<ScopeLogs>(),
            len::<LogRecord>(),
        ]
    });
    sizes[m as usize]
}

/// The JSON size of a value given in a field: with its key (the default's key is in the
/// parent's base already, a repeated field's elements are not), a separator and the largest
/// form of a value (`{"intValue":"..."}`, a oneof, is not in AnyValue's base).
const FIELD: usize = 32;
/// A number: at most 20 digits and a sign, quoted (64-bit integers are strings in OTLP/JSON).
const NUM: usize = 24;

/// What a request holds, counted without decoding it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Estimate {
    /// Messages in it (each a decoded struct).
    pub elements: usize,
    /// An upper bound of the size of its OTLP/JSON form, in bytes.
    pub json: usize,
}

/// Why a request is refused before decoding.
#[derive(Debug, PartialEq, Eq)]
pub enum Over {
    /// Beyond a limit: the message says which (HTTP 413 / RESOURCE_EXHAUSTED).
    Limit(String),
    /// Not the protobuf wire format (HTTP 400 / INVALID_ARGUMENT).
    Malformed(String),
}

/// The limits a request is held to.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub elements: usize,
    pub json: usize,
}

impl Estimate {
    fn check(&self, lim: &Limits) -> Result<(), Over> {
        if self.elements > lim.elements {
            return Err(Over::Limit(format!(
                "the request holds over {} messages (spans, attributes, values): too many to decode; send smaller batches",
                lim.elements
            )));
        }
        if self.json > lim.json {
            return Err(Over::Limit(format!(
                "the request would take over {} bytes as OTLP/JSON: too large to store; send smaller batches",
                lim.json
            )));
        }
        Ok(())
    }
}

/// How long a string is once quoted and escaped as JSON.
fn escaped_len(b: &[u8]) -> usize {
    2 + b
        .iter()
        .map(|&c| match c {
            b'"' | b'\\' => 2,
            0..=0x1f | 0x7f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// Nesting deeper than this is refused by the decoder anyway (prost's recursion limit).
const DEPTH: usize = 100;

fn varint(b: &[u8], at: &mut usize) -> Result<u64, Over> {
    let mut v: u64 = 0;
    for i in 0..10 {
        let Some(&c) = b.get(*at) else {
            return Err(Over::Malformed("truncated varint".into()));
        };
        *at += 1;
        v |= u64::from(c & 0x7f) << (7 * i);
        if c & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(Over::Malformed("varint longer than 10 bytes".into()))
}

/// Estimate a protobuf request (`m`: [`M::TraceRequest`] or [`M::LogsRequest`]).
pub fn protobuf(b: &[u8], m: M, lim: &Limits) -> Result<Estimate, Over> {
    let mut e = Estimate::default();
    message(b, m, 0, &mut e, lim)?;
    Ok(e)
}

fn message(b: &[u8], m: M, depth: usize, e: &mut Estimate, lim: &Limits) -> Result<(), Over> {
    if depth > DEPTH {
        return Err(Over::Malformed("messages nested too deep".into()));
    }
    e.elements += 1;
    e.json += base(m);
    // Checked as it goes: a bomb is refused after the limit's worth of work, not all of it.
    e.check(lim)?;
    let mut at = 0;
    while at < b.len() {
        let key = varint(b, &mut at)?;
        let (n, wire) = (key >> 3, key & 7);
        let f = field(m, n);
        match wire {
            0 => {
                varint(b, &mut at)?;
            }
            1 | 5 => {
                let w = if wire == 1 { 8 } else { 4 };
                if b.len() - at < w {
                    return Err(Over::Malformed("truncated fixed-size field".into()));
                }
                at += w;
            }
            2 => {
                let len = varint(b, &mut at)?;
                if len > (b.len() - at) as u64 {
                    return Err(Over::Malformed("a length beyond the end of the message".into()));
                }
                let body = &b[at..at + len as usize];
                at += len as usize;
                match f {
                    Field::Msg(c) => {
                        e.json += FIELD;
                        message(body, c, depth + 1, e, lim)?;
                        continue;
                    }
                    Field::Leaf(Leaf::Str) => e.json += FIELD + escaped_len(body),
                    Field::Leaf(Leaf::Bytes) => e.json += FIELD + 2 + 2 * body.len(),
                    // A number in a length-delimited field is not OTLP (the decoder says so);
                    // a packed list would be at most its bytes' worth of numbers.
                    Field::Leaf(Leaf::Num) => e.json += FIELD + NUM * body.len(),
                    Field::Unknown => continue,
                }
            }
            _ => return Err(Over::Malformed(format!("wire type {wire} is not used by OTLP"))),
        }
        if matches!(f, Field::Leaf(_)) && wire != 2 {
            e.json += FIELD + NUM;
        }
    }
    e.check(lim)
}

/// Estimate an OTLP/JSON request: each object of a known type is one decoded message with its
/// defaults, strings and numbers are at most three times their text (a number is quoted, an
/// escape never grows). Text that is not JSON is left to the decoder to refuse.
pub fn json(b: &[u8], m: M, lim: &Limits) -> Result<Estimate, Over> {
    let mut e = Estimate {
        elements: 0,
        json: 3 * b.len(),
    };
    // Containers open: the message type of an object (None: a field that is not decoded),
    // and for an array, the type of its elements.
    let mut stack: Vec<(bool, Option<M>)> = Vec::new();
    // The key just read in the object on top, while its value is pending.
    let mut key: Option<(usize, usize)> = None;
    let mut expect_key = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if expect_key {
                    key = Some((start, i.min(b.len())));
                    expect_key = false;
                }
            }
            b'{' | b'[' => {
                let ty = match stack.last() {
                    None => Some(m),
                    Some(&(true, ty)) => ty,
                    Some(&(false, parent)) => parent.zip(key).and_then(|(p, (s, t))| json_field(p, &b[s..t])),
                };
                let array = c == b'[';
                if !array && let Some(t) = ty {
                    e.elements += 1;
                    e.json += base(t);
                    e.check(lim)?;
                }
                if stack.len() > DEPTH {
                    return Err(Over::Malformed("JSON nested too deep".into()));
                }
                stack.push((array, ty));
                expect_key = !array;
                key = None;
            }
            b'}' | b']' => {
                stack.pop();
                expect_key = false;
            }
            b',' => expect_key = matches!(stack.last(), Some((false, _))),
            _ => {}
        }
        i += 1;
    }
    e.check(lim)?;
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    const WIDE: Limits = Limits {
        elements: usize::MAX,
        json: usize::MAX,
    };

    fn kv(k: &str, v: &str) -> KeyValue {
        KeyValue {
            key: k.into(),
            value: Some(AnyValue {
                value: Some(opentelemetry_proto::tonic::common::v1::any_value::Value::StringValue(
                    v.into(),
                )),
            }),
            ..Default::default()
        }
    }

    fn request(spans: usize, attrs: usize, text: &str) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![kv("service.name", "svc")],
                    ..Default::default()
                }),
                scope_spans: vec![ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: "s".into(),
                        ..Default::default()
                    }),
                    spans: (0..spans)
                        .map(|i| Span {
                            trace_id: vec![1; 16],
                            span_id: vec![(i % 200) as u8 + 1; 8],
                            name: format!("span {i}"),
                            start_time_unix_nano: 1_700_000_000_000_000_000,
                            attributes: (0..attrs).map(|j| kv(&format!("k{j}"), text)).collect(),
                            status: Some(Status {
                                message: text.into(),
                                code: 2,
                            }),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }

    #[test]
    fn the_estimate_bounds_the_json_from_above_and_counts_the_messages() {
        for (spans, attrs, text) in [
            (0, 0, ""),
            (1, 0, ""),
            (3, 5, "plain"),
            (2, 2, "\u{1}\u{2}\"\\\n control"),
            (50, 1, "é ü 漢字"),
        ] {
            let req = request(spans, attrs, text);
            let wire = req.encode_to_vec();
            let json = serde_json::to_vec(&req).unwrap();
            let e = protobuf(&wire, M::TraceRequest, &WIDE).unwrap();
            assert!(e.json >= json.len(), "{spans}/{attrs}: {} < {}", e.json, json.len());
            // Not wildly above: the limit must not refuse ordinary batches.
            assert!(
                e.json <= 4 * json.len() + 1024,
                "{spans}/{attrs}: {} vs {}",
                e.json,
                json.len()
            );
            // request, resource spans, resource, its attribute and value, scope spans, scope;
            // a span, its status, and two per attribute.
            assert_eq!(e.elements, 7 + spans * (2 + 2 * attrs), "{spans}/{attrs}");
            let j = super::json(&json, M::TraceRequest, &WIDE).unwrap();
            assert!(j.json >= json.len());
            assert_eq!(j.elements, e.elements, "the JSON body counts the same messages");
        }
    }

    #[test]
    fn a_bomb_of_empty_attributes_is_refused_before_decoding() {
        // One resource with 1M empty attributes: 2 bytes each on the wire.
        let n = 1 << 20;
        let mut res = Vec::with_capacity(2 * n);
        for _ in 0..n {
            res.extend_from_slice(&[0x0a, 0x00]);
        }
        let mut rs = vec![0x0a];
        prost::encoding::encode_varint(res.len() as u64, &mut rs);
        rs.extend_from_slice(&res);
        let mut req = vec![0x0a];
        prost::encoding::encode_varint(rs.len() as u64, &mut req);
        req.extend_from_slice(&rs);
        let lim = Limits {
            elements: MAX_ELEMENTS,
            json: 128 << 20,
        };
        match protobuf(&req, M::TraceRequest, &lim) {
            Err(Over::Limit(why)) => assert!(why.contains("messages"), "{why}"),
            other => panic!("{other:?}"),
        }
        // Its JSON form, likewise.
        let json = format!(
            "{{\"resourceSpans\":[{{\"resource\":{{\"attributes\":[{}{{}}]}}}}]}}",
            "{},".repeat(n)
        );
        assert!(matches!(
            super::json(json.as_bytes(), M::TraceRequest, &lim),
            Err(Over::Limit(_))
        ));
        // Under a JSON limit of 1 MB, far fewer of them are too many.
        let small = Limits {
            elements: MAX_ELEMENTS,
            json: 1 << 20,
        };
        match protobuf(&req[..], M::TraceRequest, &small) {
            Err(Over::Limit(why)) => assert!(why.contains("OTLP/JSON"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_is_not_protobuf_is_malformed() {
        for b in [
            &b"\x0a\x05ab"[..],
            b"\x0b",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ] {
            assert!(
                matches!(protobuf(b, M::TraceRequest, &WIDE), Err(Over::Malformed(_))),
                "{b:?}"
            );
        }
        assert_eq!(protobuf(b"", M::LogsRequest, &WIDE).unwrap().elements, 1);
    }
}
