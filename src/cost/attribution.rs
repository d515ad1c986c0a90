//! Who spent a run's money: its cost by subagent (the nested run a call is in), and what each
//! tool result cost — directly, on the first LLM call that read it, and carried, re-sent as
//! input or cache read on every later call of the same context until a compaction cuts it
//! or the context ends.
//!
//! A result's tokens are estimated from the recorder's usage where it shows them: the growth
//! of the prompt (input + cache read + cache write) from one call to the next, less the
//! previous call's output (which the next prompt repeats), is what came in between, shared
//! by the results that came in between in proportion to their size. Where that shows nothing
//! (the first call of a context, a prompt that did not grow) the result's record size in
//! bytes / 4 is the estimate. Each result says which method gave its tokens.
//!
//! On each call, the results in its context are charged the call's average prompt price per
//! token, never more tokens than the prompt had (scaled down when the estimates exceed it),
//! so that a run's direct and carried costs never exceed its total; the rest of the total is
//! the calls' own (system prompt, messages, output, and what the recorder counted unlogged).

use super::Kind;
use super::usage::{RunCost, run_cost};
use crate::model::{EventKind, NO_PARENT, Status, Trace};

/// How a result's tokens were estimated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// From the recorder's usage: the prompt's growth between two calls.
    UsageDelta,
    /// From the size of the result's record (bytes / 4).
    Size,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::UsageDelta => "usage delta",
            Method::Size => "size",
        }
    }
}

/// One tool result's cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultCost {
    /// The tool call's event.
    pub event: u32,
    pub tool: String,
    /// Bytes of the result's record (its size).
    pub bytes: u64,
    /// Estimated tokens of the result, and how.
    pub tokens: u64,
    pub method: Method,
    /// Microdollars (rounded down) on the first call that read it, and on the later ones.
    pub direct: u64,
    pub carried: u64,
    /// Later calls that re-sent it.
    pub resent: u32,
}

/// A run's cost attributed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attribution {
    pub cost: RunCost,
    /// By subagent: the nested run the calls are in (`""`: the main context), micros.
    pub by_subagent: Vec<(String, super::usage::Total)>,
    /// Every tool result read by a later call, in event order.
    pub results: Vec<ResultCost>,
}

impl Attribution {
    /// Cost by tool: each tool's results' direct and carried cost, in order of first use.
    pub fn by_tool(&self) -> Vec<(String, u64, u64, u64)> {
        let mut out: Vec<(String, u64, u64, u64)> = Vec::new();
        for r in &self.results {
            match out.iter_mut().find(|(t, ..)| *t == r.tool) {
                Some(x) => {
                    x.1 += 1;
                    x.2 += r.direct;
                    x.3 += r.carried;
                }
                None => out.push((r.tool.clone(), 1, r.direct, r.carried)),
            }
        }
        out
    }
    /// The part of the total that is no tool result's (micros).
    pub fn not_results(&self) -> u64 {
        let r: u64 = self.results.iter().map(|r| r.direct + r.carried).sum();
        self.cost.total.micros.saturating_sub(r)
    }
}

/// The event's context: its nearest enclosing run (the root, or a subagent's nested run).
fn context_of(t: &Trace, mut i: u32) -> u32 {
    loop {
        let e = t.event(i);
        if e.kind == EventKind::Run || e.parent == NO_PARENT {
            return i;
        }
        i = e.parent;
    }
}

fn is_compaction(t: &Trace, i: u32) -> bool {
    let e = t.event(i);
    e.kind == EventKind::State && t.str(e.name).to_ascii_lowercase().contains("compact")
}

struct Live {
    result: usize,
    tokens: u64,
    fresh: bool,
    /// Picodollars so far.
    direct: u128,
    carried: u128,
}

#[derive(Default)]
struct Ctx {
    pending: Vec<usize>,
    live: Vec<Live>,
    /// The last call's prompt and output tokens.
    last: Option<(u64, u64)>,
}

/// Attribute a run's cost at `prices`.
pub fn attribute(t: &Trace, prices: &super::Prices) -> Attribution {
    let cost = run_cost(t, prices);
    // Each model name's price entry, looked up once.
    let mut seen: Vec<(crate::model::StrRef, Option<&super::Entry>)> = Vec::new();
    let run_model = t.meta.model.as_deref();
    let mut subagents: Vec<(u32, super::usage::Total)> = Vec::new();
    let mut results: Vec<ResultCost> = Vec::new();
    let mut ctxs: rustc_hash::FxHashMap<u32, Ctx> = Default::default();
    for (i, e) in t.events.iter().enumerate() {
        let i = i as u32;
        match e.kind {
            EventKind::ToolCall if e.status != Status::Pending => {
                let bytes = e.origin2.as_deref().map_or(e.origin.len, |o| o.len) as u64;
                results.push(ResultCost {
                    event: i,
                    tool: t.str(e.name).to_string(),
                    bytes,
                    tokens: bytes / 4,
                    method: Method::Size,
                    direct: 0,
                    carried: 0,
                    resent: 0,
                });
                ctxs.entry(context_of(t, i))
                    .or_default()
                    .pending
                    .push(results.len() - 1);
            }
            EventKind::State if is_compaction(t, i) => {
                let c = ctxs.entry(context_of(t, i)).or_default();
                flush(c, &mut results);
                c.last = None;
            }
            EventKind::LlmCall => {
                let own = t.str(e.model);
                let model = if own.is_empty() { run_model } else { Some(own) };
                let u = e.usage.get();
                let cc = super::usage::call_cost(prices, model, u.as_ref());
                let entry = match seen.iter().find(|(r, _)| *r == e.model) {
                    Some((_, x)) => *x,
                    None => {
                        let x = model.and_then(|m| prices.lookup(m)).map(|(x, _)| x);
                        seen.push((e.model, x));
                        x
                    }
                };
                let parts = entry
                    .zip(u.as_ref())
                    .map(|(x, u)| super::price_parts(&x.price, super::usage::tokens_of(u)));
                let output = u.as_ref().and_then(|u| u.output).unwrap_or(0);
                let cc = &cc;
                let ctx_i = context_of(t, i);
                match subagents.iter_mut().find(|(k, _)| *k == ctx_i) {
                    Some((_, x)) => x.add(u.as_ref(), cc),
                    None => {
                        let mut x = super::usage::Total::default();
                        x.add(u.as_ref(), cc);
                        subagents.push((ctx_i, x));
                    }
                }
                let c = ctxs.entry(ctx_i).or_default();
                let prompt_kinds = [Kind::Input, Kind::CacheRead, Kind::CacheWrite5m, Kind::CacheWrite1h];
                let prompt: u64 = parts.map_or(0, |p| prompt_kinds.iter().map(|&k| p.parts[k as usize].0).sum());
                // The prompt's growth since the last call: what came in between.
                if let (Some((lp, lo)), false) = (c.last, c.pending.is_empty()) {
                    let grown = prompt.saturating_sub(lp.saturating_add(lo));
                    let sizes: u64 = c.pending.iter().map(|&r| results[r].bytes).sum();
                    if grown > 0 && sizes > 0 {
                        for &r in &c.pending {
                            results[r].tokens = (grown as u128 * results[r].bytes as u128 / sizes as u128) as u64;
                            results[r].method = Method::UsageDelta;
                        }
                    }
                }
                for r in c.pending.drain(..) {
                    c.live.push(Live {
                        result: r,
                        tokens: results[r].tokens,
                        fresh: true,
                        direct: 0,
                        carried: 0,
                    });
                }
                c.last = Some((prompt, output));
                // The call's prompt cost, in picodollars, scaled to its recorded cost if the
                // recorder wrote one (what the total counts).
                let Some(p) = parts else { continue };
                let Some(micros) = cc.micros else { continue };
                let mut prompt_pico: u128 = 0;
                for k in prompt_kinds {
                    prompt_pico += p.pico(k).unwrap_or(0);
                }
                let computed_pico: u128 = Kind::ALL.iter().map(|&k| p.pico(k).unwrap_or(0)).sum();
                if prompt == 0 || computed_pico == 0 {
                    continue;
                }
                let prompt_pico = prompt_pico.min(computed_pico) * micros as u128 * 1_000_000 / computed_pico.max(1);
                let prompt_pico = prompt_pico.min(micros as u128 * 1_000_000);
                let held: u128 = c.live.iter().map(|l| l.tokens as u128).sum();
                let tokens_charged = held.min(prompt as u128);
                if held == 0 {
                    continue;
                }
                for l in &mut c.live {
                    // Its share of the charged tokens, at the prompt's average price.
                    let a = prompt_pico * tokens_charged / prompt as u128 * l.tokens as u128 / held;
                    if l.fresh {
                        l.direct += a;
                        l.fresh = false;
                    } else {
                        l.carried += a;
                        results[l.result].resent += 1;
                    }
                }
            }
            _ => {}
        }
    }
    for c in ctxs.values_mut() {
        flush(c, &mut results);
    }
    // Results never read by a call cost nothing: left out.
    results.retain(|r| r.direct > 0 || r.carried > 0 || r.resent > 0);
    // The unlogged calls the recorder counted are the main context's.
    let mut by_subagent: Vec<(String, super::usage::Total)> = subagents
        .into_iter()
        .map(|(i, x)| {
            let name = if t.event(i).parent == NO_PARENT {
                String::new()
            } else {
                t.str(t.event(i).name).to_string()
            };
            (name, x)
        })
        .collect();
    for (_, x) in &cost.unlogged {
        match by_subagent.iter_mut().find(|(k, _)| k.is_empty()) {
            Some((_, m)) => m.merge(x),
            None => by_subagent.insert(0, (String::new(), x.clone())),
        }
    }
    // The run's recorded totals, where they replace the calls' (see `run_cost`): one row.
    let rows: u64 = by_subagent.iter().map(|(_, x)| x.micros).sum();
    if rows != cost.total.micros {
        by_subagent = vec![(String::new(), cost.total.clone())];
    }
    Attribution {
        cost,
        by_subagent,
        results,
    }
}

/// Results leave the context (a compaction, or its end): their costs are final.
fn flush(c: &mut Ctx, results: &mut [ResultCost]) {
    for l in c.live.drain(..) {
        let r = &mut results[l.result];
        r.direct = (l.direct / 1_000_000) as u64;
        r.carried = (l.carried / 1_000_000) as u64;
    }
    c.pending.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::Prices;
    use crate::model::{NewEvent, Origin, Parent, RunMeta, Usage};
    use proptest::prelude::*;

    /// One step of a generated run: a call (model, input, cache read, cache write of which
    /// 1-hour, output, recorded cost), a tool result of a size, a compaction, a subagent.
    #[derive(Clone, Debug)]
    enum Step {
        Call(usize, u64, u64, u64, u64, u64, Option<u64>),
        Result(u32, bool),
        Compact,
        Subagent,
        Back,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (0usize..4, 0u64..300_000, 0u64..300_000, 0u64..50_000, 0u64..50_000, 0u64..5_000, prop::option::weighted(0.2, 0u64..2_000_000))
                .prop_map(|(m, i, r, w, h, o, c)| Step::Call(m, i, r, w, h.min(w), o, c)),
            4 => (0u32..200_000, any::<bool>()).prop_map(|(n, p)| Step::Result(n, p)),
            1 => Just(Step::Compact),
            1 => Just(Step::Subagent),
            1 => Just(Step::Back),
        ]
    }

    fn build(steps: &[Step]) -> Trace {
        const MODELS: [&str; 4] = ["claude-sonnet-4-5", "gpt-4o", "gemini-2.5-pro", "no-such-model"];
        let mut t = Trace::new(RunMeta::default());
        let root = t.add(NewEvent::new(EventKind::Run, "run"));
        let mut at = vec![root];
        for s in steps {
            let parent = Parent::Index(*at.last().unwrap_or(&root));
            match *s {
                Step::Call(m, input, read, write, w1h, output, cost) => {
                    t.add(NewEvent {
                        parent,
                        model: Some(MODELS[m]),
                        usage: Some(Usage {
                            input: Some(input),
                            cache_read: Some(read),
                            cache_write: Some(write),
                            cache_write_1h: Some(w1h),
                            output: Some(output),
                            cost,
                            ..Default::default()
                        }),
                        ..NewEvent::new(EventKind::LlmCall, "call")
                    });
                }
                Step::Result(len, pending) => {
                    t.add(NewEvent {
                        parent,
                        status: if pending { Status::Pending } else { Status::Ok },
                        origin: Origin {
                            len,
                            ..Default::default()
                        },
                        ..NewEvent::new(EventKind::ToolCall, if len % 2 == 0 { "Read" } else { "Bash" })
                    });
                }
                Step::Compact => {
                    t.add(NewEvent {
                        parent,
                        ..NewEvent::new(EventKind::State, "compaction")
                    });
                }
                Step::Subagent => {
                    let i = t.add(NewEvent {
                        parent,
                        ..NewEvent::new(EventKind::Run, "agent x")
                    });
                    at.push(i);
                }
                Step::Back => {
                    if at.len() > 1 {
                        at.pop();
                    }
                }
            }
        }
        t.finalize();
        t
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// A run's attribution adds up to its total: by subagent exactly; the results' direct
        /// and carried costs never more than the total, the rest being the calls' own.
        #[test]
        fn a_runs_attribution_sums_to_its_total(steps in prop::collection::vec(step(), 0..40)) {
            let t = build(&steps);
            let a = attribute(&t, Prices::builtin());
            let total = a.cost.total.micros;
            let subagents: u64 = a.by_subagent.iter().map(|(_, x)| x.micros).sum();
            prop_assert_eq!(subagents, total);
            let results: u64 = a.results.iter().map(|r| r.direct + r.carried).sum();
            prop_assert!(results <= total, "results {} > total {}", results, total);
            prop_assert_eq!(results + a.not_results(), total);
            let tools: u64 = a.by_tool().iter().map(|x| x.2 + x.3).sum();
            prop_assert_eq!(tools, results);
        }
    }

    /// By hand: two calls of Claude Sonnet 4.5 in one context with a result between them.
    /// Call 1: 1,000 input. A result of 4,000 bytes. Call 2: 1,000 + 100 (call 1's output) +
    /// 600 new = 1,700 input: the result is the 600 grown (usage delta), charged at $3/M on
    /// call 2 ($0.0018, direct) and again on call 3 (2,000 input: $0.0018, carried).
    #[test]
    fn a_result_is_charged_where_it_is_read_and_again_where_it_is_resent() {
        let call = |i| Step::Call(0, i, 0, 0, 0, 100, None);
        let t = build(&[call(1_000), Step::Result(4_000, false), call(1_700), call(2_000)]);
        let a = attribute(&t, Prices::builtin());
        assert_eq!(a.results.len(), 1);
        let r = &a.results[0];
        assert_eq!((r.tokens, r.method, r.resent), (600, Method::UsageDelta, 1));
        assert_eq!((r.direct, r.carried), (1_800, 1_800));
        // Total: 4,700 in x $3/M + 300 out x $15/M = 0.0141 + 0.0045.
        assert_eq!(a.cost.total.micros, 18_600);
        assert_eq!(a.not_results(), 18_600 - 3_600);
        // A compaction cuts it: nothing carried after.
        let t = build(&[
            call(1_000),
            Step::Result(4_000, false),
            call(1_700),
            Step::Compact,
            call(2_000),
        ]);
        let r = &attribute(&t, Prices::builtin()).results[0];
        assert_eq!((r.direct, r.carried, r.resent), (1_800, 0, 0));
        // The first call of a context shows no growth: the size (4,000 / 4) is the estimate.
        let t = build(&[Step::Result(4_000, false), call(2_000)]);
        let r = &attribute(&t, Prices::builtin()).results[0];
        assert_eq!((r.tokens, r.method, r.direct), (1_000, Method::Size, 3_000));
    }
}
