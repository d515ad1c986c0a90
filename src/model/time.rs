//! Timestamps arrive as ISO-8601 (ms or µs, with or without zone), integer epoch
//! milliseconds, nanosecond strings, naive `YYYY-MM-DD HH:MM:SS`, or not at all.
//! Everything becomes nanoseconds since the Unix epoch.

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use serde_json::Value;

/// Parse any of the timestamp shapes traces use. Numbers are read by magnitude: seconds,
/// milliseconds, microseconds or nanoseconds since the epoch.
pub fn parse_timestamp(v: &Value) -> Option<i64> {
    parse_value(v).map(storable)
}

/// `i64::MIN` is how an event stores "no time" ([`super::Nanos`]): the earliest time is one
/// nanosecond later, the same in every parser and in the events.
fn storable(ns: i64) -> i64 {
    ns.max(i64::MIN + 1)
}

fn parse_value(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => parse_timestamp_str(s),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Some(epoch_number(i as i128))
            } else if let Some(u) = n.as_u64() {
                Some(epoch_number(u as i128))
            } else {
                n.as_f64().filter(|f| f.is_finite() && *f >= 0.0).map(|f| {
                    // f64 cannot hold epoch nanoseconds exactly: round to microseconds.
                    // Saturating: 9.9e10 seconds is 9.9e19 ns, past i64.
                    if f < 1e11 {
                        ((f * 1e6).round() as i64).saturating_mul(1_000)
                    } else if f < 1e14 {
                        ((f * 1e3).round() as i64).saturating_mul(1_000)
                    } else {
                        epoch_number(f as i128)
                    }
                })
            }
        }
        _ => None,
    }
}

fn epoch_number(i: i128) -> i64 {
    let a = i.abs();
    let ns = if a < 100_000_000_000 {
        i * 1_000_000_000 // seconds
    } else if a < 100_000_000_000_000 {
        i * 1_000_000 // milliseconds
    } else if a < 100_000_000_000_000_000 {
        i * 1_000 // microseconds
    } else {
        i // nanoseconds
    };
    ns.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, the shape nearly every trace writes, read without the
/// general parser (indexing a large file parses a million of them), and the same without the
/// `Z` (OpenHands, SWE-agent), which the general parser reads as UTC too. Anything else, or a
/// value the general parser might read differently (leap seconds, years outside 1678..=2261),
/// is None and goes the long way.
fn fast_utc(s: &[u8]) -> Option<i64> {
    let s = s.strip_suffix(b"Z").unwrap_or(s);
    if s.len() < 19 || s[4] != b'-' || s[7] != b'-' || s[10] != b'T' || s[13] != b':' || s[16] != b':' {
        return None;
    }
    let num = |a: usize, b: usize| -> Option<i64> {
        s[a..b]
            .iter()
            .try_fold(0i64, |n, &c| c.is_ascii_digit().then(|| n * 10 + (c - b'0') as i64))
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, min, sec) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    let frac = &s[19..];
    let nanos = match frac {
        [] => 0,
        [b'.', digits @ ..] if (1..=9).contains(&digits.len()) => {
            num(20, 20 + digits.len())? * 10i64.pow(9 - digits.len() as u32)
        }
        _ => return None,
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if !(1678..=2261).contains(&year)
        || !(1..=12).contains(&month)
        || day < 1
        || day > month_days[month as usize - 1]
        || hour > 23
        || min > 59
        || sec > 59
    {
        return None;
    }
    // Days from 1970-01-01 (H. Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hour * 3_600 + min * 60 + sec;
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// For fields documented as integer epoch milliseconds: integers are milliseconds whatever
/// their size; anything else is parsed as [`parse_timestamp`] would.
pub fn parse_timestamp_ms(v: &Value) -> Option<i64> {
    match v.as_i64() {
        Some(ms) => ms.checked_mul(1_000_000).map(storable),
        None => parse_timestamp(v),
    }
}

pub fn parse_timestamp_str(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    fast_utc(s.as_bytes()).or_else(|| parse_general(s)).map(storable)
}

/// Every shape `parse_timestamp_str` reads (of a trimmed, non-empty string).
fn parse_general(s: &str) -> Option<i64> {
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse::<i128>().ok().map(epoch_number);
    }
    if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
        return dt.timestamp_nanos_opt();
    }
    // Lenient ISO forms: "2026-01-01T00:00:00" (no zone), "2026-01-01 00:00:00[.fff]", "...+0000".
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
        if let Ok(n) = NaiveDateTime::parse_from_str(s, fmt) {
            return Utc.from_utc_datetime(&n).timestamp_nanos_opt();
        }
    }
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f%z",
        "%Y-%m-%d %H:%M:%S%.f%z",
        "%Y-%m-%d %H:%M:%S%.f %z",
    ] {
        if let Ok(dt) = DateTime::parse_from_str(s, fmt) {
            return dt.timestamp_nanos_opt();
        }
    }
    None
}

/// `2026-02-15 20:31:05.123` in UTC.
pub fn format_ts(ns: i64) -> String {
    let dt = Utc.timestamp_nanos(ns);
    dt.format("%Y-%m-%d %H:%M:%S%.3f").to_string()
}

/// Human duration: `850µs`, `12ms`, `1.25s`, `3m05s`, `2h04m`.
pub fn format_duration(ns: i64) -> String {
    let ns = ns.max(0);
    if ns < 1_000_000 {
        format!("{}µs", ns / 1_000)
    } else if ns < 1_000_000_000 {
        format!("{}ms", ns / 1_000_000)
    } else if ns < 60_000_000_000 {
        format!("{:.2}s", ns as f64 / 1e9)
    } else if ns < 3_600_000_000_000 {
        let s = ns / 1_000_000_000;
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        let m = ns / 60_000_000_000;
        format!("{}h{:02}m", m / 60, m % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const T: i64 = 1_771_187_465_123_000_000; // 2026-02-15T20:31:05.123Z

    fn chrono_ns(s: &str) -> Option<i64> {
        DateTime::parse_from_rfc3339(s).ok()?.timestamp_nanos_opt()
    }

    #[test]
    fn fast_path_agrees_with_chrono() {
        for s in [
            "2026-02-15T20:31:05.123Z",
            "2026-02-15T20:31:05Z",
            "1970-01-01T00:00:00Z",
            "1969-12-31T23:59:59.999999999Z",
            "2000-02-29T12:00:00.5Z",
            "2024-12-31T23:59:59.000001Z",
            "1678-01-01T00:00:00Z",
            "2261-12-31T23:59:59.9Z",
        ] {
            assert_eq!(fast_utc(s.as_bytes()), chrono_ns(s), "{s}");
            assert!(fast_utc(s.as_bytes()).is_some(), "{s}");
            // Without a zone: UTC, as the general parser reads it.
            let naive = &s[..s.len() - 1];
            assert_eq!(fast_utc(naive.as_bytes()), chrono_ns(s), "{naive}");
            assert_eq!(fast_utc(naive.as_bytes()), parse_general(naive), "{naive}");
        }
        // Left to the general parser: all of these are None on the fast path.
        for s in [
            "2023-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-02-15T24:00:00Z",
            "2026-02-15T23:59:60Z",
            "2026-02-15T20:31:05.Z",
            "2026-02-15T20:31:05.1234567890Z",
            "2026-02-15T20:31:05+00:00",
            "2026-02-15 20:31:05Z",
            "2026-02-15T20:31:05.12a Z",
            "+2026-02-15T20:31:05Z",
            "2026-02-15T20:31:05ZZ",
            "2026-02-15T20:31:05.",
            "2026-02-15T20:31",
        ] {
            assert_eq!(fast_utc(s.as_bytes()), None, "{s}");
        }
    }

    proptest::proptest! {
        #[test]
        fn fast_path_agrees_with_chrono_everywhere(
            y in 1600i64..2300, mo in 0i64..14, d in 0i64..33, h in 0i64..25, mi in 0i64..61,
            sec in 0i64..61, frac in proptest::option::of("[0-9]{1,10}"), zone in proptest::bool::ANY,
        ) {
            let f = frac.map(|f| format!(".{f}")).unwrap_or_default();
            let z = if zone { "Z" } else { "" };
            let s = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}{f}{z}");
            let zoned = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}{f}Z");
            if let Some(ns) = fast_utc(s.as_bytes()) {
                proptest::prop_assert_eq!(Some(ns), chrono_ns(&zoned), "{}", s);
            }
            proptest::prop_assert_eq!(parse_timestamp_str(&s), parse_general(&s), "{}", s);
        }
    }

    #[test]
    fn all_shapes_parse_to_the_same_instant() {
        assert_eq!(parse_timestamp(&json!("2026-02-15T20:31:05.123Z")), Some(T));
        assert_eq!(parse_timestamp(&json!("2026-02-15T20:31:05.123000Z")), Some(T));
        assert_eq!(parse_timestamp(&json!("2026-02-15T20:31:05.123+00:00")), Some(T));
        assert_eq!(parse_timestamp(&json!("2026-02-15T20:31:05.123")), Some(T));
        assert_eq!(parse_timestamp(&json!("2026-02-15 20:31:05.123")), Some(T));
        assert_eq!(parse_timestamp(&json!(1_771_187_465_123_i64)), Some(T));
        assert_eq!(parse_timestamp(&json!("1771187465123000000")), Some(T));
        assert_eq!(parse_timestamp(&json!(1_771_187_465_123_000_i64)), Some(T));
        assert_eq!(parse_timestamp(&json!(1771187465.123)), Some(T));
    }

    #[test]
    fn declared_milliseconds_stay_milliseconds() {
        // Assay V2 fixtures use tiny integer-ms clocks (1000, 1100): 100 ms apart, not 100 s.
        let a = parse_timestamp_ms(&json!(1000)).unwrap();
        let b = parse_timestamp_ms(&json!(1100)).unwrap();
        assert_eq!(b - a, 100_000_000);
        assert_eq!(parse_timestamp_ms(&json!("2026-02-15T20:31:05.123Z")), Some(T));
    }

    #[test]
    fn garbage_is_none() {
        assert_eq!(parse_timestamp(&json!("yesterday")), None);
        assert_eq!(parse_timestamp(&json!(null)), None);
        assert_eq!(parse_timestamp(&json!({"a": 1})), None);
        assert_eq!(parse_timestamp(&json!("")), None);
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(format_duration(850_000), "850µs");
        assert_eq!(format_duration(12_000_000), "12ms");
        assert_eq!(format_duration(1_250_000_000), "1.25s");
        assert_eq!(format_duration(185_000_000_000), "3m05s");
        assert_eq!(format_ts(T), "2026-02-15 20:31:05.123");
    }
}
