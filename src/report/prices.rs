//! `tracetui prices [MODEL]`: the prices costs are computed with, and where they come from.

use crate::cost::{Entry, How, Pico, Prices, Source, per_million};
use crate::output::Output;
use crate::report::cut;
use std::io::Write;

fn cell(p: Option<Pico>) -> String {
    p.map_or_else(|| "-".into(), per_million)
}

fn source_of(e: &Entry, prices: &Prices) -> String {
    match &e.source {
        Source::Builtin => format!("builtin ({})", prices.builtin_source),
        Source::Config(p) => p.display().to_string(),
    }
}

fn json_of(e: &Entry, prices: &Prices, how: Option<How>, asked: Option<&str>) -> serde_json::Value {
    let per_m = |p: Option<Pico>| p.map(|p| p as f64 / 1e6);
    let mut v = serde_json::json!({
        "model": e.model,
        "provider": e.provider,
        "unit": "USD per million tokens",
        "input": per_m(e.price.input),
        "output": per_m(e.price.output),
        "cache_read": per_m(e.price.cache_read),
        "cache_write": per_m(e.price.cache_write),
        "reasoning": per_m(e.price.reasoning),
        "source": source_of(e, prices),
    });
    if let Some(t) = &e.price.tier {
        v["tier"] = serde_json::json!({
            "above_prompt_tokens": t.above,
            "input": per_m(t.input),
            "output": per_m(t.output),
            "cache_read": per_m(t.cache_read),
            "cache_write": per_m(t.cache_write),
        });
    }
    if let (Some(h), Some(a)) = (how, asked) {
        v["asked"] = serde_json::Value::String(a.to_string());
        v["match"] = serde_json::Value::String(
            match h {
                How::Exact => "exact",
                How::Spelling => "spelling",
                How::Family => "family",
            }
            .into(),
        );
    }
    v
}

fn header(out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<48} {:>9} {:>9} {:>10} {:>11} {:>9} {:>12}  SOURCE",
        "MODEL", "INPUT", "OUTPUT", "CACHE-READ", "CACHE-WRITE", "REASONING", "LONG-CONTEXT"
    )
}

fn row(out: &mut dyn Write, e: &Entry, prices: &Prices) -> std::io::Result<()> {
    let tier = e
        .price
        .tier
        .as_ref()
        .map_or_else(|| "-".into(), |t| format!(">{}k", t.above / 1000));
    let src = match &e.source {
        Source::Builtin => "builtin".to_string(),
        Source::Config(_) => "config".to_string(),
    };
    let _ = prices;
    writeln!(
        out,
        "{:<48} {:>9} {:>9} {:>10} {:>11} {:>9} {:>12}  {}",
        cut(&crate::sanitize::line(&e.model), 48),
        cell(e.price.input),
        cell(e.price.output),
        cell(e.price.cache_read),
        cell(e.price.cache_write),
        cell(e.price.reasoning),
        tier,
        src
    )
}

/// Print every price, or the one `model` resolves to. Returns the exit code: 1 when `model`
/// has no price.
pub fn run(prices: &Prices, model: Option<&str>, out: &mut dyn Write, fmt: Output) -> std::io::Result<u8> {
    match model {
        None => {
            match fmt {
                Output::Json => {
                    for e in &prices.entries {
                        crate::json::write_line(out, &json_of(e, prices, None, None))?;
                    }
                }
                Output::Text => {
                    let users = prices
                        .entries
                        .iter()
                        .filter(|e| matches!(e.source, Source::Config(_)))
                        .count();
                    writeln!(
                        out,
                        "# {} models, dollars per million tokens; builtin: {}; from config: {users}",
                        prices.entries.len(),
                        prices.builtin_source
                    )?;
                    header(out)?;
                    for e in &prices.entries {
                        row(out, e, prices)?;
                    }
                }
            }
            Ok(0)
        }
        Some(m) => match prices.lookup(m) {
            Some((e, how)) => {
                match fmt {
                    Output::Json => crate::json::write_line(out, &json_of(e, prices, Some(how), Some(m)))?,
                    Output::Text => {
                        writeln!(
                            out,
                            "{} -> {} ({}; provider {})",
                            crate::sanitize::line(m),
                            crate::sanitize::line(&e.model),
                            how.describe(),
                            crate::sanitize::line(&e.provider)
                        )?;
                        writeln!(out, "from {}", crate::sanitize::line(&source_of(e, prices)))?;
                        header(out)?;
                        row(out, e, prices)?;
                        if let Some(t) = &e.price.tier {
                            writeln!(
                                out,
                                "prompts over {} tokens: input {}, output {}, cache read {}, cache write {}",
                                t.above,
                                cell(t.input.or(e.price.input)),
                                cell(t.output.or(e.price.output)),
                                cell(t.cache_read.or(e.price.cache_read)),
                                cell(t.cache_write.or(e.price.cache_write))
                            )?;
                        }
                    }
                }
                Ok(0)
            }
            None => {
                if fmt == Output::Json {
                    crate::json::write_line(out, &serde_json::json!({"asked": m, "match": null}))?;
                }
                eprintln!(
                    "{}",
                    crate::sanitize::line(&format!(
                        "tracetui: no price for model {m:?}: its cost shows as unknown (?); add it under [prices.{m:?}] in config.toml"
                    ))
                );
                Ok(1)
            }
        },
    }
}
