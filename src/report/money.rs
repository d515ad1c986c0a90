//! Where the money went: `stats --check-costs` (the recorder's own cost of each run beside
//! the one tracetui computes, and where they differ, by model and kind of token).
//!
//! A recorder's cost is Claude Code's `cost-state` (the run's total, and its tokens by
//! model), or the costs OpenCode, Cline and OpenRouter write on each call. Both are kept
//! beside the computed cost (`cost::usage`); a difference says either that the price list
//! and the recorder disagree on a price, or that one side counts tokens the other does not.

use crate::cost::usage::{RunCost, Total, call_parts, recorded_by_model, run_cost};
use crate::cost::{Kind, Prices, dollars};
use crate::model::Trace;
use serde_json::{Value, json};
use std::io::Write;

/// One model's part of a cost check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelCheck {
    pub model: String,
    /// What the recorder says this model cost (None: it wrote no cost for it).
    pub recorded: Option<u64>,
    /// What tracetui computes for the same calls.
    pub computed: u64,
    /// Calls whose cost tracetui cannot compute (unknown model or price), left out of `computed`.
    pub uncomputed: u64,
    /// Where the recorder wrote tokens by kind: recorded minus logged, by kind, in tokens and
    /// in microdollars at the model's price (None: that kind has no price).
    pub kinds: Vec<(Kind, i128, Option<i128>)>,
}

/// A run's recorded cost beside its computed one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CostCheck {
    pub recorded: u64,
    pub computed: u64,
    /// LLM calls (the bound on the difference that per-call rounding can make: half a
    /// microdollar each).
    pub calls: u64,
    pub by_model: Vec<ModelCheck>,
    /// What the recorder counted and the transcript does not log, added to `computed`.
    pub unlogged: Vec<(String, Total)>,
}

impl CostCheck {
    /// Recorded minus computed, microdollars.
    pub fn diff(&self) -> i128 {
        self.recorded as i128 - self.computed as i128
    }
    /// Calls whose cost tracetui cannot compute (no model, no price, no tokens): while there
    /// are any, `computed` is only a lower bound and the two are not compared.
    pub fn uncomputed(&self) -> u64 {
        self.by_model.iter().map(|m| m.uncomputed).sum()
    }
    /// Whether the two differ by more than the rounding of each call's cost to microdollars
    /// (and of the recorder's dollars) can make; false when they cannot be compared.
    pub fn differs(&self) -> bool {
        self.uncomputed() == 0 && self.diff().unsigned_abs() > (self.calls / 2 + 2) as u128
    }
    /// Recorded minus computed, as a percentage of the computed (None when that is 0).
    pub fn pct(&self) -> Option<f64> {
        (self.computed > 0).then(|| self.diff() as f64 / self.computed as f64 * 100.0)
    }
}

/// The cost check of a run; None when its recorder wrote no cost.
pub fn check(t: &Trace, prices: &Prices) -> Option<CostCheck> {
    let rc: RunCost = run_cost(t, prices);
    let (recorded, computed) = rc.recorded_vs_computed()?;
    let mut c = CostCheck {
        recorded,
        computed,
        calls: rc.total.calls,
        unlogged: rc.unlogged.clone(),
        ..Default::default()
    };
    let rec_models = recorded_by_model(t);
    if rc.recorded_run.is_some() && !rec_models.is_empty() {
        // The logged calls alone, by model (the run's cost adds the unlogged to them).
        let mut logged: Vec<(String, Total)> = Vec::new();
        crate::cost::usage::each_call(t, prices, |_, m, u, cc| match logged.iter_mut().find(|(k, _)| k == m) {
            Some((_, x)) => x.add(u, cc),
            None => {
                let mut x = Total::default();
                x.add(u, cc);
                logged.push((m.to_string(), x));
            }
        });
        let computed_of = |m: &str| rc.by_model.iter().find(|(k, _)| k == m).map(|(_, t)| t.clone());
        for (model, r) in &rec_models {
            let t = logged
                .iter()
                .find(|(k, _)| k == model)
                .map(|(_, t)| t.tokens)
                .unwrap_or_default();
            let rt = crate::cost::usage::tokens_of(r);
            let parts = call_parts(prices, Some(model), Some(r)).map(|p| p.0);
            let kinds = Kind::ALL
                .into_iter()
                .filter_map(|k| {
                    let d = rt.of(k) as i128 - t.of(k) as i128;
                    (d != 0).then(|| {
                        let price = parts.and_then(|p| p.parts[k as usize].1);
                        // Rounded to microdollars from picodollars.
                        (k, d, price.map(|p| (d * p as i128) / 1_000_000))
                    })
                })
                .collect();
            let ct = computed_of(model).unwrap_or_default();
            c.by_model.push(ModelCheck {
                model: model.clone(),
                recorded: r.cost,
                computed: ct.micros,
                uncomputed: ct.unknown,
                kinds,
            });
        }
        // Models the calls name and the recorder does not.
        for (m, x) in &rc.by_model {
            if !rec_models.iter().any(|(k, _)| k == m) && x.calls > 0 {
                c.by_model.push(ModelCheck {
                    model: m.clone(),
                    recorded: None,
                    computed: x.micros,
                    uncomputed: x.unknown,
                    kinds: Vec::new(),
                });
            }
        }
    } else {
        for (m, x) in &rc.by_model {
            if x.recorded_calls == 0 {
                continue;
            }
            c.by_model.push(ModelCheck {
                model: m.clone(),
                recorded: Some(x.recorded),
                computed: x.recomputed,
                uncomputed: x.recorded_uncomputed,
                kinds: Vec::new(),
            });
        }
    }
    Some(c)
}

/// A signed dollar amount: `+$0.0218`, `-$0.0001`.
pub fn signed(micros: i128) -> String {
    let sign = if micros < 0 { "-" } else { "+" };
    format!(
        "{sign}{}",
        dollars(u64::try_from(micros.unsigned_abs()).unwrap_or(u64::MAX))
    )
}

/// One checked run, for the report.
pub struct Checked {
    pub summary: crate::formats::Summary,
    pub check: CostCheck,
}

/// Load every run and check the cost of those whose recorder wrote one.
pub fn collect(runs: &[crate::source::RunRef], prices: &Prices) -> (Vec<Checked>, Vec<super::stats::Failed>) {
    let per = crate::source::load_each(runs, |r, res| match res {
        Ok(loaded) => {
            let s: Vec<Checked> = loaded
                .traces
                .iter()
                .filter_map(|t| {
                    check(t, prices).map(|check| Checked {
                        summary: crate::source::summary::of(t),
                        check,
                    })
                })
                .collect();
            super::drop_in_background(loaded);
            Ok(s)
        }
        Err(e) => Err(Box::new((r.clone(), e))),
    });
    let mut out = Vec::new();
    let mut failed = Vec::new();
    for p in per {
        match p {
            Ok(s) => out.extend(s),
            Err(f) => failed.push(*f),
        }
    }
    (out, failed)
}

fn model_json(m: &ModelCheck) -> Value {
    json!({
        "model": m.model,
        "recorded_micros": m.recorded,
        "computed_micros": m.computed,
        "uncomputed_calls": m.uncomputed,
        "kinds": m.kinds.iter().map(|(k, tokens, micros)| json!({
            "kind": k.key(),
            "recorded_minus_logged": tokens.to_string().parse::<i64>().ok(),
            "micros": micros.and_then(|x| i64::try_from(x).ok()),
        })).collect::<Vec<_>>(),
    })
}

/// `stats --check-costs`: every run whose recorded cost differs from the computed one beyond
/// rounding, with the difference by model and kind. Returns how many differ.
pub fn report(
    checked: &[Checked],
    prices: &Prices,
    output: crate::output::Output,
    out: &mut dyn Write,
) -> std::io::Result<usize> {
    let differ: Vec<&Checked> = checked.iter().filter(|c| c.check.differs()).collect();
    let uncompared: Vec<&Checked> = checked.iter().filter(|c| c.check.uncomputed() > 0).collect();
    if output == crate::output::Output::Json {
        let runs_json = |list: &[&Checked]| -> Vec<Value> {
            list.iter()
                .map(|c| {
                    let s = &c.summary;
                    let mut v = json!({
                        "id": s.id,
                        "name": s.name,
                        "format": s.format,
                        "recorded_micros": c.check.recorded,
                        "computed_micros": c.check.computed,
                        "difference_micros": i64::try_from(c.check.diff()).ok(),
                        "by_model": c.check.by_model.iter().map(model_json).collect::<Vec<_>>(),
                        "unlogged": c.check.unlogged.iter().map(|(m, t)| {
                            let mut v = super::stats::total_json(t);
                            v["model"] = json!(m);
                            v
                        }).collect::<Vec<_>>(),
                    });
                    crate::json::put_path(&mut v, "path", &s.path);
                    v
                })
                .collect()
        };
        crate::json::write_line(
            out,
            &json!({
                "runs_with_recorded_cost": checked.len(),
                "differ": differ.len(),
                "runs": runs_json(&differ),
                "not_compared": runs_json(&uncompared),
            }),
        )?;
        return Ok(differ.len());
    }
    let added: Vec<&Checked> = checked.iter().filter(|c| !c.check.unlogged.is_empty()).collect();
    writeln!(
        out,
        "{} with a cost the recorder wrote; {}{} beyond rounding{}",
        super::count(checked.len(), "run"),
        if uncompared.is_empty() {
            String::new()
        } else {
            format!("{} not compared (calls tracetui cannot price); ", uncompared.len())
        },
        differ.len(),
        if differ.is_empty() { "" } else { ":" }
    )?;
    for c in &differ {
        let s = &c.summary;
        let k = &c.check;
        writeln!(out)?;
        writeln!(
            out,
            "{}  ({}, {})",
            crate::sanitize::line(s.name.as_deref().unwrap_or(&s.id)),
            s.format,
            crate::sanitize::line(&s.path.display().to_string())
        )?;
        let pct = k.pct().map(|p| format!(" ({p:+.2}%)")).unwrap_or_default();
        writeln!(
            out,
            "  recorded {}  computed {}  difference {}{pct}",
            dollars(k.recorded),
            dollars(k.computed),
            signed(k.diff())
        )?;
        for m in &k.by_model {
            let rec = m.recorded.map(dollars).unwrap_or_else(|| "-".into());
            let unk = if m.uncomputed > 0 {
                format!(" ({} of unknown cost)", super::count(m.uncomputed as usize, "call"))
            } else {
                String::new()
            };
            writeln!(
                out,
                "  {}: recorded {rec}  computed {}{unk}",
                crate::sanitize::line(if m.model.is_empty() { "(no model)" } else { &m.model }),
                dollars(m.computed)
            )?;
            for (kind, tokens, micros) in &m.kinds {
                let unit = if kind.per_request() { "requests" } else { "tokens" };
                let cost = micros.map(signed).unwrap_or_else(|| "unpriced".into());
                writeln!(
                    out,
                    "    {:<15} {tokens:+} {unit} counted by the recorder and not in the transcript: {cost}",
                    kind.label()
                )?;
            }
        }
    }
    if !uncompared.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "Not compared: runs with calls whose cost tracetui cannot compute (the computed cost would be only a part):"
        )?;
        for c in &uncompared {
            let s = &c.summary;
            writeln!(
                out,
                "  {}  ({}, {}): recorded {}",
                crate::sanitize::line(s.name.as_deref().unwrap_or(&s.id)),
                s.format,
                crate::sanitize::line(&s.path.display().to_string()),
                dollars(c.check.recorded)
            )?;
            for m in c.check.by_model.iter().filter(|m| m.uncomputed > 0) {
                let why = if m.model.is_empty() {
                    "no model named".to_string()
                } else if prices.lookup(&m.model).is_none() {
                    format!("{} is not in the price list", crate::sanitize::line(&m.model))
                } else {
                    format!("{}: no token counts", crate::sanitize::line(&m.model))
                };
                writeln!(
                    out,
                    "    {} of unknown cost: {why}",
                    super::count(m.uncomputed as usize, "call")
                )?;
            }
        }
    }
    if !added.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{} count calls their transcript does not log (added to the computed cost):",
            super::count(added.len(), "recorder")
        )?;
        for c in added {
            let s = &c.summary;
            for (m, t) in &c.check.unlogged {
                writeln!(
                    out,
                    "  {}: {} {} in, {} out, {} cache read, {} cache write: {}",
                    crate::sanitize::line(s.name.as_deref().unwrap_or(&s.id)),
                    crate::sanitize::line(m),
                    t.tokens.input,
                    t.tokens.output,
                    t.tokens.cache_read,
                    t.tokens.cache_write,
                    t.cost_text()
                )?;
            }
        }
    }
    Ok(differ.len())
}
