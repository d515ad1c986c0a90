//! Verdicts over repeated runs (DESIGN §8): k baseline runs against m current runs, metric by
//! metric, as two distributions, their difference with a confidence interval, and a test. No
//! terminal, no I/O; every resampling is seeded, so the same runs give the same report.
//!
//! - Rates (error rate, tool-sequence change rate, each tool's frequency): Fisher's exact test
//!   on the 2×2 table; the interval of the difference is Newcombe's (hybrid Wilson score).
//! - Means (cost, tokens, duration): a permutation test of the difference of means (4,000
//!   seeded permutations); the interval is a seeded percentile bootstrap (4,000 resamples).
//!
//! A regression is the current side significantly worse on a metric that has a direction:
//! a higher error rate, a higher tool-sequence change rate (runs leaving the baseline's most
//! common tool sequence), a higher mean cost, tokens or duration; those tests are one-sided.
//! The family of regression tests is corrected with Holm's method, so that the chance of a
//! false REGRESSION over all of them stays at most alpha. A tool called more or less often is
//! a change, not in itself worse: its test is two-sided, reported, and does not decide.

use super::tree::RunInfo;
use std::collections::{BTreeMap, BTreeSet};

/// Resamples of the permutation test and of the bootstrap.
pub const RESAMPLES: usize = 4000;
/// The seed every resampling starts from.
pub const SEED: u64 = 0x7472_6163_6574_7569;

/// SplitMix64: small, fast and enough for resampling indices.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0); the modulo bias is below 2^-40 for the sizes used here.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// ln(n!) for 0..=n.
fn ln_factorials(n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(n + 1);
    let mut acc = 0.0;
    out.push(0.0);
    for i in 1..=n {
        acc += (i as f64).ln();
        out.push(acc);
    }
    out
}

/// Fisher's exact test of `k1` of `n1` (baseline) against `k2` of `n2` (current).
/// `greater`: one-sided, the current rate higher; otherwise two-sided.
pub fn fisher(k1: usize, n1: usize, k2: usize, n2: usize, greater: bool) -> f64 {
    let n = n1 + n2;
    let k = k1 + k2;
    if n == 0 || n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let lf = ln_factorials(n);
    let choose = |a: usize, b: usize| lf[a] - lf[b] - lf[a - b];
    // X = successes on the current side, hypergeometric given the margins.
    let lo = k.saturating_sub(n1);
    let hi = k.min(n2);
    let p = |x: usize| (choose(n2, x) + choose(n1, k - x) - choose(n, k)).exp();
    let total = if greater {
        (k2..=hi).map(p).sum::<f64>()
    } else {
        let observed = p(k2);
        (lo..=hi).map(p).filter(|&q| q <= observed * (1.0 + 1e-7)).sum::<f64>()
    };
    total.min(1.0)
}

/// The standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    let p = p.clamp(1e-12, 1.0 - 1e-12);
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383_577_518_672_69e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// Wilson's score interval of `k` of `n`.
fn wilson(k: usize, n: usize, z: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (n, p) = (n as f64, k as f64 / n as f64);
    let d = 1.0 + z * z / n;
    let c = (p + z * z / (2.0 * n)) / d;
    let h = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / d;
    ((c - h).max(0.0), (c + h).min(1.0))
}

/// Newcombe's interval of the difference of two rates (current − baseline), level `1 − alpha`.
pub fn newcombe(k1: usize, n1: usize, k2: usize, n2: usize, alpha: f64) -> (f64, f64) {
    let z = normal_quantile(1.0 - alpha / 2.0);
    let (p1, p2) = (ratio(k1, n1), ratio(k2, n2));
    let (l1, u1) = wilson(k1, n1, z);
    let (l2, u2) = wilson(k2, n2, z);
    let d = p2 - p1;
    (
        d - ((p2 - l2).powi(2) + (u1 - p1).powi(2)).sqrt(),
        d + ((u2 - p2).powi(2) + (p1 - l1).powi(2)).sqrt(),
    )
}

fn ratio(k: usize, n: usize) -> f64 {
    if n == 0 { 0.0 } else { k as f64 / n as f64 }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// One-sided permutation test that the current mean is higher: the share of seeded
/// relabellings whose difference of means is at least the observed one (with the observed
/// labelling counted, so never 0).
pub fn permutation_greater(a: &[f64], b: &[f64], resamples: usize, rng: &mut Rng) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 1.0;
    }
    let observed = mean(b) - mean(a);
    let mut pool: Vec<f64> = a.iter().chain(b).copied().collect();
    let total: f64 = pool.iter().sum();
    let nb = b.len();
    // Rounding: a relabelling as extreme as the observed one must count as such.
    let eps = 1e-9 * (1.0 + observed.abs());
    let mut hits = 0usize;
    for _ in 0..resamples {
        // A partial Fisher-Yates shuffle: the first nb are the "current" side.
        let mut sb = 0.0;
        for i in 0..nb {
            let j = i + rng.below(pool.len() - i);
            pool.swap(i, j);
            sb += pool[i];
        }
        let d = sb / nb as f64 - (total - sb) / (pool.len() - nb) as f64;
        if d >= observed - eps {
            hits += 1;
        }
    }
    (hits + 1) as f64 / (resamples + 1) as f64
}

/// Seeded percentile bootstrap interval of mean(b) − mean(a), level `1 − alpha`.
pub fn bootstrap_ci(a: &[f64], b: &[f64], alpha: f64, resamples: usize, rng: &mut Rng) -> (f64, f64) {
    if a.is_empty() || b.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let resamples = resamples.max(1);
    let mut diffs: Vec<f64> = (0..resamples)
        .map(|_| {
            let ma = (0..a.len()).map(|_| a[rng.below(a.len())]).sum::<f64>() / a.len() as f64;
            let mb = (0..b.len()).map(|_| b[rng.below(b.len())]).sum::<f64>() / b.len() as f64;
            mb - ma
        })
        .collect();
    diffs.sort_by(f64::total_cmp);
    let at = |q: f64| diffs[((q * (resamples - 1) as f64).round() as usize).min(resamples - 1)];
    (at(alpha / 2.0), at(1.0 - alpha / 2.0))
}

/// How a metric was tested.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Test {
    /// Fisher's exact test, one-sided (current higher).
    FisherGreater,
    /// Fisher's exact test, two-sided.
    FisherTwoSided,
    /// Permutation test of the difference of means, one-sided (current higher).
    PermutationGreater,
}

impl Test {
    pub fn as_str(self) -> &'static str {
        match self {
            Test::FisherGreater => "Fisher exact, one-sided",
            Test::FisherTwoSided => "Fisher exact, two-sided",
            Test::PermutationGreater => "permutation, one-sided",
        }
    }
}

/// One side of a metric: a rate (`k` of `n`) or a sample's mean and spread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Side {
    /// Runs that record the metric.
    pub n: usize,
    /// Rates: the runs counted (`k` of `n`).
    pub k: Option<usize>,
    pub mean: f64,
    pub sd: f64,
}

/// One metric compared.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricTest {
    /// `error_rate`, `sequence_change_rate`, `cost`, `tokens`, `duration`, `calls:NAME`.
    pub name: String,
    /// Units of the means: `usd_micros`, `tokens`, `ns`; `rate` for rates.
    pub unit: &'static str,
    pub baseline: Side,
    pub current: Side,
    /// current − baseline.
    pub diff: f64,
    /// The interval of `diff`, level 1 − alpha.
    pub ci: (f64, f64),
    pub p: f64,
    pub test: Test,
    /// Whether a significant result is a regression (the one-sided family).
    pub decides: bool,
    /// Significant after Holm's correction within its family.
    pub significant: bool,
}

impl MetricTest {
    pub fn regression(&self) -> bool {
        self.decides && self.significant
    }
}

/// The comparison of two sets of runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Repeated {
    pub alpha: f64,
    pub baseline_runs: usize,
    pub current_runs: usize,
    pub metrics: Vec<MetricTest>,
    /// The baseline's most common tool sequence, as tool names (the reference of the change rate).
    pub modal_sequence: Vec<String>,
    pub regression: bool,
}

/// The tool steps of a run, as the sequence whose change is counted.
fn tool_sequence(r: &RunInfo) -> Vec<&super::tree::StepKey> {
    r.steps.iter().filter(|s| s.key.tool).map(|s| &s.key).collect()
}

fn rate_test(name: String, k1: usize, n1: usize, k2: usize, n2: usize, alpha: f64, decides: bool) -> MetricTest {
    let (p1, p2) = (ratio(k1, n1), ratio(k2, n2));
    let test = if decides {
        Test::FisherGreater
    } else {
        Test::FisherTwoSided
    };
    let side = |k: usize, n: usize, p: f64| Side {
        n,
        k: Some(k),
        mean: p,
        sd: (p * (1.0 - p)).sqrt(),
    };
    MetricTest {
        name,
        unit: "rate",
        baseline: side(k1, n1, p1),
        current: side(k2, n2, p2),
        diff: p2 - p1,
        ci: newcombe(k1, n1, k2, n2, alpha),
        p: fisher(k1, n1, k2, n2, decides),
        test,
        decides,
        significant: false,
    }
}

fn mean_test(
    name: &str,
    unit: &'static str,
    (a, b): (&[f64], &[f64]),
    alpha: f64,
    resamples: usize,
    rng: &mut Rng,
) -> MetricTest {
    let sd = |v: &[f64]| {
        let m = mean(v);
        if v.len() > 1 {
            (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
        } else {
            0.0
        }
    };
    let side = |v: &[f64]| Side {
        n: v.len(),
        k: None,
        mean: mean(v),
        sd: sd(v),
    };
    MetricTest {
        name: name.to_string(),
        unit,
        baseline: side(a),
        current: side(b),
        diff: mean(b) - mean(a),
        ci: bootstrap_ci(a, b, alpha, resamples, rng),
        p: permutation_greater(a, b, resamples, rng),
        test: Test::PermutationGreater,
        decides: true,
        significant: false,
    }
}

/// Holm's step-down correction: mark the tests of `family` significant at family-wise `alpha`.
fn holm(tests: &mut [MetricTest], family: &[usize], alpha: f64) {
    let mut order: Vec<usize> = family.to_vec();
    order.sort_by(|&x, &y| tests[x].p.total_cmp(&tests[y].p).then(x.cmp(&y)));
    let m = order.len();
    for (i, &t) in order.iter().enumerate() {
        if tests[t].p <= alpha / (m - i) as f64 {
            tests[t].significant = true;
        } else {
            break;
        }
    }
}

/// Compare `current` runs against `baseline` runs at level `alpha`, with [`RESAMPLES`].
pub fn compare(baseline: &[RunInfo], current: &[RunInfo], alpha: f64) -> Repeated {
    compare_with(baseline, current, alpha, RESAMPLES)
}

/// [`compare`] with another number of resamples (the p-value of a mean is at least
/// 1 / (resamples + 1); Holm over five metrics at 0.05 needs under 0.01, so at least 100).
pub fn compare_with(baseline: &[RunInfo], current: &[RunInfo], alpha: f64, resamples: usize) -> Repeated {
    let mut rng = Rng::new(SEED);
    let (n1, n2) = (baseline.len(), current.len());
    let mut metrics = Vec::new();
    let errors = |rs: &[RunInfo]| rs.iter().filter(|r| r.error).count();
    metrics.push(rate_test(
        "error_rate".into(),
        errors(baseline),
        n1,
        errors(current),
        n2,
        alpha,
        true,
    ));
    // The reference sequence: the baseline's most common one (ties: the first seen).
    let mut counts: Vec<(Vec<&super::tree::StepKey>, usize)> = Vec::new();
    for r in baseline {
        let s = tool_sequence(r);
        match counts.iter_mut().find(|(x, _)| *x == s) {
            Some(c) => c.1 += 1,
            None => counts.push((s, 1)),
        }
    }
    let modal = counts
        .iter()
        .enumerate()
        .max_by(|(i, a), (j, b)| a.1.cmp(&b.1).then(j.cmp(i)))
        .map(|(_, (s, _))| s.clone())
        .unwrap_or_default();
    let changed = |rs: &[RunInfo]| rs.iter().filter(|r| tool_sequence(r) != modal).count();
    metrics.push(rate_test(
        "sequence_change_rate".into(),
        changed(baseline),
        n1,
        changed(current),
        n2,
        alpha,
        true,
    ));
    for (name, unit, get) in [
        (
            "cost",
            "usd_micros",
            (|r: &RunInfo| r.cost) as fn(&RunInfo) -> Option<i64>,
        ),
        ("tokens", "tokens", |r: &RunInfo| r.tokens),
        ("duration", "ns", |r: &RunInfo| r.duration),
    ] {
        let a: Vec<f64> = baseline.iter().filter_map(get).map(|x| x as f64).collect();
        let b: Vec<f64> = current.iter().filter_map(get).map(|x| x as f64).collect();
        if a.is_empty() || b.is_empty() {
            continue;
        }
        metrics.push(mean_test(name, unit, (&a, &b), alpha, resamples, &mut rng));
    }
    let decisive: Vec<usize> = (0..metrics.len()).collect();
    // Tool frequencies: the share of runs that call each tool at least once.
    let names: BTreeSet<&str> = baseline
        .iter()
        .chain(current)
        .flat_map(|r| r.steps.iter().filter(|s| s.key.tool).map(|s| s.key.name.as_str()))
        .collect();
    let calls = |rs: &[RunInfo], name: &str| {
        rs.iter()
            .filter(|r| r.steps.iter().any(|s| s.key.tool && s.key.name == name))
            .count()
    };
    let first_call = metrics.len();
    for name in names {
        metrics.push(rate_test(
            format!("calls:{name}"),
            calls(baseline, name),
            n1,
            calls(current, name),
            n2,
            alpha,
            false,
        ));
    }
    holm(&mut metrics, &decisive, alpha);
    let call_family: Vec<usize> = (first_call..metrics.len()).collect();
    holm(&mut metrics, &call_family, alpha);
    let regression = metrics.iter().any(MetricTest::regression);
    Repeated {
        alpha,
        baseline_runs: n1,
        current_runs: n2,
        metrics,
        modal_sequence: modal.iter().map(|k| k.name.clone()).collect(),
        regression,
    }
}

/// Runs by their verdict, for the report.
pub fn verdict_counts(runs: &[RunInfo]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for r in runs {
        if let Some(v) = &r.verdict {
            *out.entry(v.clone()).or_insert(0) += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn fisher_matches_known_values() {
        // R: fisher.test(matrix(c(3,1,1,3),2), alternative="greater")$p.value = 0.2428571
        // (the tea-tasting table; here the current side has 3 of 4, the baseline 1 of 4).
        assert!(close(fisher(1, 4, 3, 4, true), 0.242_857_1, 1e-6));
        // Two-sided: 0.4857143.
        assert!(close(fisher(1, 4, 3, 4, false), 0.485_714_3, 1e-6));
        // 0 of 10 against 10 of 10: 1 / C(20,10) = 5.41e-6 one-sided.
        assert!(close(fisher(0, 10, 10, 10, true), 5.412_544e-6, 1e-9));
        assert_eq!(fisher(0, 0, 1, 1, true), 1.0);
        assert!(close(fisher(5, 10, 5, 10, false), 1.0, 1e-9));
    }

    #[test]
    fn normal_quantiles() {
        assert!(close(normal_quantile(0.975), 1.959_964, 1e-6));
        assert!(close(normal_quantile(0.5), 0.0, 1e-9));
        assert!(close(normal_quantile(0.05), -1.644_854, 1e-6));
    }

    #[test]
    fn newcombe_interval_matches_the_paper() {
        // Newcombe (1998), example (a): 56/70 vs 48/80, difference 0.2, 95% CI 0.0524 to 0.3339.
        let (lo, hi) = newcombe(48, 80, 56, 70, 0.05);
        assert!(close(lo, 0.0524, 1e-4) && close(hi, 0.3339, 1e-4), "{lo} {hi}");
    }

    #[test]
    fn permutation_and_bootstrap_are_seeded_and_sensible() {
        let a: Vec<f64> = (0..20).map(|i| 100.0 + (i % 5) as f64).collect();
        let b: Vec<f64> = (0..20).map(|i| 110.0 + (i % 5) as f64).collect();
        let p = permutation_greater(&a, &b, RESAMPLES, &mut Rng::new(1));
        assert!(p < 0.001, "{p}");
        let q = permutation_greater(&b, &a, RESAMPLES, &mut Rng::new(1));
        assert!(q > 0.99, "{q}");
        let same = permutation_greater(&a, &a, RESAMPLES, &mut Rng::new(1));
        assert!(same > 0.4, "{same}");
        let ci = bootstrap_ci(&a, &b, 0.05, RESAMPLES, &mut Rng::new(7));
        assert!(ci.0 > 8.0 && ci.1 < 12.0, "{ci:?}");
        assert_eq!(ci, bootstrap_ci(&a, &b, 0.05, RESAMPLES, &mut Rng::new(7)));
    }

    #[test]
    fn holm_steps_down() {
        let t = |p: f64| MetricTest {
            name: String::new(),
            unit: "rate",
            baseline: Side {
                n: 1,
                k: None,
                mean: 0.0,
                sd: 0.0,
            },
            current: Side {
                n: 1,
                k: None,
                mean: 0.0,
                sd: 0.0,
            },
            diff: 0.0,
            ci: (0.0, 0.0),
            p,
            test: Test::FisherGreater,
            decides: true,
            significant: false,
        };
        // m = 3: 0.01 <= 0.05/3, 0.02 <= 0.05/2, 0.04 <= 0.05/1.
        let mut v = vec![t(0.04), t(0.01), t(0.02)];
        holm(&mut v, &[0, 1, 2], 0.05);
        assert!(v.iter().all(|m| m.significant));
        // 0.03 > 0.05/2 stops the rest.
        let mut v = vec![t(0.04), t(0.01), t(0.03)];
        holm(&mut v, &[0, 1, 2], 0.05);
        assert_eq!(
            v.iter().map(|m| m.significant).collect::<Vec<_>>(),
            [false, true, false]
        );
    }

    fn runs(paths: &[(&[&str], usize)], error: usize) -> Vec<RunInfo> {
        let mut out = Vec::new();
        for (p, n) in paths {
            for _ in 0..*n {
                out.push(super::super::tree::tests::run(p));
            }
        }
        for r in out.iter_mut().take(error) {
            r.error = true;
        }
        out
    }

    #[test]
    fn a_shifted_path_mix_is_a_regression_and_the_same_mix_is_not() {
        let base = runs(&[(&["a", "b"], 24), (&["a", "c"], 6)], 0);
        let same = runs(&[(&["a", "b"], 23), (&["a", "c"], 7)], 0);
        let shifted = runs(&[(&["a", "b"], 8), (&["a", "c"], 22)], 0);
        let r = compare(&base, &same, 0.05);
        assert!(!r.regression);
        assert_eq!(r.modal_sequence, ["a", "b"]);
        let r = compare(&base, &shifted, 0.05);
        assert!(r.regression);
        let m = r.metrics.iter().find(|m| m.name == "sequence_change_rate").unwrap();
        assert!(m.significant && m.ci.0 > 0.0, "{m:?}");
        // The tool frequencies moved too, but they only inform.
        assert!(
            r.metrics
                .iter()
                .any(|m| m.name == "calls:c" && m.significant && !m.decides)
        );
        // Runs keeping to the baseline's common sequence more often is no regression.
        let steadier = runs(&[(&["a", "b"], 30)], 0);
        assert!(!compare(&base, &steadier, 0.05).regression);
    }

    #[test]
    fn more_errors_is_a_regression() {
        let base = runs(&[(&["a"], 20)], 1);
        let worse = runs(&[(&["a"], 20)], 12);
        assert!(compare(&base, &worse, 0.05).regression);
        assert!(!compare(&worse, &base, 0.05).regression);
    }
}
