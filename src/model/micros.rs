//! Dollar amounts as recorders write them, read exactly into microdollars: what a format
//! reads off a record (a recorded cost) without knowing any price.

/// A dollar amount as a recorder wrote it (`0.0123`, `1.5e-05`, `"$0.01"`) → microdollars,
/// exactly from its decimal digits (no float on the way; half a microdollar rounds up).
/// None for anything else, a negative amount or one too large.
pub fn micros_of_decimal(s: &str) -> Option<u64> {
    let s = s.trim();
    let s = s.strip_prefix('$').unwrap_or(s).trim_start();
    let s = s.strip_prefix('+').unwrap_or(s);
    let (mant, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|c| c.is_ascii_digit())
        || !frac.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    // All digits, with the decimal point moved so that the unit is the microdollar.
    let digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|c| c - b'0').collect();
    let point = int.len() as i64 + exp as i64 + 6;
    let mut whole: u64 = 0;
    let mut round = false;
    for (i, &d) in digits.iter().enumerate() {
        let i = i as i64;
        if i < point {
            whole = whole.checked_mul(10)?.checked_add(d as u64)?;
        } else if i == point {
            round = d >= 5;
            break;
        }
    }
    // Integer digits the mantissa does not write (`1e3`): zeros.
    for _ in digits.len() as i64..point.min(40) {
        whole = whole.checked_mul(10)?;
    }
    if point > 40 {
        return None;
    }
    whole.checked_add(round as u64)
}

/// A recorded cost as the raw JSON text of a value (a fast skimmer's view): read as
/// [`micros_of_json`] reads the parsed value, so that both paths agree.
pub fn micros_of_raw(raw: &[u8]) -> Option<u64> {
    micros_of_json(&serde_json::from_slice(raw).ok()?)
}

/// A recorded cost in a JSON value (a number or a numeric string) → microdollars, exactly as
/// written: serde_json prints a float back in its shortest round-trip form, the digits the
/// recorder wrote.
pub fn micros_of_json(v: &serde_json::Value) -> Option<u64> {
    match v {
        serde_json::Value::Number(n) => micros_of_decimal(&n.to_string()),
        serde_json::Value::String(s) => micros_of_decimal(s),
        _ => None,
    }
}

/// Microdollars → `$1.2345` (four decimals, or more for amounts under a cent).
pub fn dollars(micro: u64) -> String {
    if micro > 0 && micro < 10_000 {
        return format!("${}.{:06}", micro / 1_000_000, micro % 1_000_000);
    }
    let tenths = (micro + 50) / 100; // 1/10,000 of a dollar, rounded
    format!("${}.{:04}", tenths / 10_000, tenths % 10_000)
}
