//! Numbers that fit: each number has forms from the exact one to shorter ones with units
//! (`50,062,931` → `50.1M` → `50M`, `$10.5100` → `$10.51` → `$11`). A view picks the longest
//! form that fits its room and never cuts one: a cut number (`$0` for $0.2748, `73` for
//! 733,475) reads as another number.

use crate::cost::usage::Total;
use crate::model::thousands;
use unicode_width::UnicodeWidthStr;

/// A count's forms, longest first: `50,062,931`, `50.1M`, `50M` (a count under 1,000 has one).
pub fn count_forms(n: u64) -> Vec<String> {
    let mut out = vec![thousands(n)];
    if n < 1000 {
        return out;
    }
    const UNITS: [(u64, &str); 4] = [
        (1_000, "k"),
        (1_000_000, "M"),
        (1_000_000_000, "B"),
        (1_000_000_000_000, "T"),
    ];
    // The largest unit the number reaches once rounded (999,960 is 1.0M, not 1000k).
    let mut at = 0;
    while at + 1 < UNITS.len() && (n as u128 + UNITS[at].0 as u128 / 2) / UNITS[at].0 as u128 >= 1000 {
        at += 1;
    }
    let (unit, suffix) = UNITS[at];
    // Tenths of the unit, rounded: 50,062,931 → 501 (50.1M).
    let tenths = (n as u128 * 10 + unit as u128 / 2) / unit as u128;
    let whole = (n as u128 + unit as u128 / 2) / unit as u128;
    if tenths < 1000 {
        out.push(format!("{}.{}{suffix}", tenths / 10, tenths % 10));
    }
    out.push(format!("{whole}{suffix}"));
    out.dedup();
    out
}

/// An amount of microdollars, longest first: `$0.2748`, `$0.27`; `$10.5100`, `$10.51`, `$11`;
/// `$1234.5678`, `$1234.57`, `$1,235`, `$1.2k`; under a cent `$0.000123`, `$0.0001`, `<$0.01`.
pub fn dollar_forms(micros: u64) -> Vec<String> {
    let mut out = vec![crate::cost::dollars(micros)];
    if micros == 0 {
        return out;
    }
    if micros < 10_000 {
        // Under a cent: four decimals, then a bound (never `$0.00`, which reads as free).
        if micros >= 100 {
            out.push(format!("$0.{:04}", (micros + 50) / 100));
        }
        out.push("<$0.01".into());
        out.dedup();
        return out;
    }
    let cents = (micros + 5_000) / 10_000;
    out.push(format!("${}.{:02}", cents / 100, cents % 100));
    if micros >= 10_000_000 {
        let dollars = (micros + 500_000) / 1_000_000;
        out.push(format!("${}", thousands(dollars)));
        if dollars >= 1000 {
            out.extend(count_forms(dollars).into_iter().skip(1).map(|f| format!("${f}")));
        }
    }
    out.dedup();
    out
}

/// A total's cost as [`Total::cost_text`] writes it, in forms: `≥` when some calls have no
/// price, `?` when none has, `-` when there is nothing to price.
pub fn cost_forms(t: &Total) -> Vec<String> {
    if t.micros == 0 && t.unknown == 0 && t.total_tokens == 0 {
        return vec!["-".into()];
    }
    match (t.micros, t.unknown) {
        (0, u) if u > 0 => vec!["?".into()],
        (m, 0) => dollar_forms(m),
        (m, _) => dollar_forms(m).into_iter().map(|f| format!("≥{f}")).collect(),
    }
}

/// The forms of a cell of a table of text (`stats`' tables): a plain count, a `~` or `≥`
/// marked one, or dollars; anything else is its only form.
pub fn cell_forms(cell: &str) -> Vec<String> {
    for mark in ["~", "≥"] {
        if let Some(rest) = cell.strip_prefix(mark)
            && !rest.is_empty()
        {
            let inner = cell_forms(rest);
            if inner.len() > 1 {
                return inner.into_iter().map(|f| format!("{mark}{f}")).collect();
            }
        }
    }
    if !cell.is_empty()
        && cell.bytes().all(|b| b.is_ascii_digit())
        && let Ok(n) = cell.parse::<u64>()
    {
        return count_forms(n);
    }
    if let Some(d) = cell.strip_prefix('$')
        && let Some(m) = parse_micros(d)
    {
        return dollar_forms(m);
    }
    vec![cell.to_string()]
}

/// `12.3456` (dollars, up to six decimals) → microdollars.
fn parse_micros(d: &str) -> Option<u64> {
    let (whole, frac) = d.split_once('.').unwrap_or((d, ""));
    if whole.is_empty() || frac.len() > 6 || !(whole.bytes().chain(frac.bytes())).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let w: u64 = whole.parse().ok()?;
    let f: u64 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<6}").parse().ok()?
    };
    w.checked_mul(1_000_000)?.checked_add(f)
}

/// The longest form that fits `width` cells; the shortest when none does (the caller then
/// has no room for it and should drop the field rather than cut it).
pub fn fit(forms: &[String], width: usize) -> &str {
    forms
        .iter()
        .find(|f| f.width() <= width)
        .or(forms.last())
        .map_or("", String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_shorten_with_units_and_round() {
        assert_eq!(count_forms(570), ["570"]);
        assert_eq!(count_forms(733_475), ["733,475", "733k"]);
        assert_eq!(count_forms(50_062_931), ["50,062,931", "50.1M", "50M"]);
        assert_eq!(count_forms(1_234), ["1,234", "1.2k", "1k"]);
        // 999,960 is 1.0M, not 1000.0k
        assert_eq!(count_forms(999_960), ["999,960", "1.0M", "1M"]);
        assert_eq!(count_forms(1_999_960_000), ["1,999,960,000", "2.0B", "2B"]);
        assert_eq!(count_forms(u64::MAX)[0], "18,446,744,073,709,551,615");
    }

    #[test]
    fn dollars_shorten_and_never_read_as_free() {
        assert_eq!(dollar_forms(274_800), ["$0.2748", "$0.27"]);
        assert_eq!(dollar_forms(10_510_000), ["$10.5100", "$10.51", "$11"]);
        assert_eq!(
            dollar_forms(1_234_567_800),
            ["$1234.5678", "$1234.57", "$1,235", "$1.2k", "$1k"]
        );
        assert_eq!(dollar_forms(123), ["$0.000123", "$0.0001", "<$0.01"]);
        assert_eq!(dollar_forms(12), ["$0.000012", "<$0.01"]);
        assert_eq!(dollar_forms(0), ["$0.0000"]);
    }

    #[test]
    fn a_cost_keeps_its_marks() {
        let t = Total {
            micros: 274_800,
            unknown: 2,
            total_tokens: 10,
            ..Default::default()
        };
        assert_eq!(cost_forms(&t), ["≥$0.2748", "≥$0.27"]);
        assert_eq!(cost_forms(&Total::default()), ["-"]);
    }

    #[test]
    fn cells_of_text_tables() {
        assert_eq!(cell_forms("50062931"), ["50,062,931", "50.1M", "50M"]);
        assert_eq!(cell_forms("~12345"), ["~12,345", "~12.3k", "~12k"]);
        assert_eq!(cell_forms("≥$0.2748"), ["≥$0.2748", "≥$0.27"]);
        assert_eq!(cell_forms("1.5s"), ["1.5s"]);
        assert_eq!(cell_forms("-"), ["-"]);
        assert_eq!(cell_forms("$1.2.3"), ["$1.2.3"]);
    }

    #[test]
    fn fit_takes_the_longest_that_fits() {
        let f = count_forms(50_062_931);
        assert_eq!(fit(&f, 20), "50,062,931");
        assert_eq!(fit(&f, 5), "50.1M");
        assert_eq!(fit(&f, 4), "50M");
        assert_eq!(fit(&f, 1), "50M");
    }
}
