//! Many runs of one task as a prefix tree of their call sequences (DESIGN §8): each node a
//! step (a tool call with its arguments, or an LLM call by model), each branch the runs that
//! took it, with counts, outcomes and the spread of cost, tokens and duration. No terminal.
//!
//! "The same step" is what the diff pairs without a `TOOLS_CHANGED`: same kind and name, and
//! for a tool call the same arguments, compared as the diff compares them (object keys in any
//! order, `10` = `10.0`, `--ignore` globs over `tools[N].args...` left out). Results, ids,
//! clocks, durations and usage never take part, so runs that differ only there share a step.
//! An LLM call is keyed by its model alone: its prompt is the conversation so far, which holds
//! every earlier result, so keying on it would split runs at the first drifting result.
//!
//! Parallel calls: the tool calls between two LLM calls are what one response asked for, and
//! their order is the runtime's, not the agent's; they are put in canonical order (by step
//! key) before the tree is built. A trace without LLM calls keeps its order.

use super::ignore::Glob;
use super::payloads::PayloadReader;
use crate::model::{EventKind, RunStatus, Trace};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// What makes two calls the same step.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StepKey {
    /// Tool calls sort after LLM calls of the same name (`false` < `true`).
    pub tool: bool,
    pub name: String,
    /// The arguments as canonical JSON (sorted keys, ignored paths removed); empty for LLM calls.
    pub args: String,
}

/// One call of a run, in canonical order.
#[derive(Clone, Debug, PartialEq)]
pub struct RawStep {
    pub key: StepKey,
    /// The event in its trace (for opening a run at this step).
    pub event: u32,
    pub failed: bool,
    /// What the call did, one line, already sanitized (`formats::gist`).
    pub gist: Option<String>,
}

/// A run reduced to what a tree and the statistics need; the trace itself is dropped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunInfo {
    /// The run's name (or id), as the trace gives it: unsanitized.
    pub name: String,
    /// Where it was read from, `PATH#ID` when the source holds several traces.
    pub spec: String,
    pub format: &'static str,
    pub steps: Vec<RawStep>,
    pub error: bool,
    /// The format's verdict on the run, when it has one: Inspect's scores (`C`, `I`, `0.5`),
    /// SWE-agent's `exit_status` (`submitted`, `exit_cost`).
    pub verdict: Option<String>,
    /// Microdollars; `None` when a price is unknown.
    pub cost: Option<i64>,
    pub tokens: Option<i64>,
    /// Nanoseconds.
    pub duration: Option<i64>,
}

/// Arguments as canonical JSON: keys sorted, whole numbers written as integers (the diff
/// holds `10` and `10.0` equal), paths the globs name left out.
pub fn canonical_args(prefix: &str, v: &Value, ignore: &[Glob]) -> String {
    let mut out = String::new();
    let mut path = prefix.to_string();
    write_canonical(&mut path, v, ignore, &mut out);
    out
}

fn write_canonical(path: &mut String, v: &Value, ignore: &[Glob], out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            let mut first = true;
            let len = path.len();
            for k in keys {
                super::json::push_key(path, k);
                if !ignore.iter().any(|g| g.ignores(path)) {
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write_canonical(path, &m[k], ignore, out);
                }
                path.truncate(len);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            let len = path.len();
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                super::json::push_index(path, i);
                if ignore.iter().any(|g| g.ignores(path)) {
                    out.push_str("null");
                } else {
                    write_canonical(path, x, ignore, out);
                }
                path.truncate(len);
            }
            out.push(']');
        }
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => out.push_str(&(f as i64).to_string()),
            _ => out.push_str(&n.to_string()),
        },
        other => out.push_str(&other.to_string()),
    }
}

/// The steps of `t` in canonical order: tool calls only when `tools_only` (a group that mixes
/// formats shares only tool calls, as the diff across formats does).
pub fn steps(t: &Trace, tools_only: bool, ignore: &[Glob]) -> Vec<RawStep> {
    let calls = super::align::calls(t, tools_only);
    let has_llm = calls.iter().any(|c| c.kind == EventKind::LlmCall);
    let mut reader = PayloadReader::new(t);
    let mut out: Vec<RawStep> = Vec::with_capacity(calls.len());
    let mut batch_start = 0;
    for c in &calls {
        let ev = t.event(c.event);
        let name = t.name(c.event).to_string();
        let step = if c.kind == EventKind::LlmCall {
            sort_batch(&mut out[batch_start..], has_llm);
            batch_start = out.len() + 1;
            RawStep {
                key: StepKey {
                    tool: false,
                    name,
                    args: String::new(),
                },
                event: c.event,
                failed: ev.is_error(),
                gist: None,
            }
        } else {
            let p = reader.get(ev);
            let prefix = format!("tools[{}].args", c.kind_index);
            let args = p
                .input
                .as_ref()
                .map_or_else(String::new, |v| canonical_args(&prefix, v, ignore));
            let gist = crate::formats::gist::from_payload(t, ev, &p);
            RawStep {
                key: StepKey { tool: true, name, args },
                event: c.event,
                failed: ev.is_error(),
                gist,
            }
        };
        out.push(step);
    }
    let from = batch_start.min(out.len());
    sort_batch(&mut out[from..], has_llm);
    out
}

/// Tool calls issued by one response in canonical order (stable: equal keys keep theirs).
fn sort_batch(batch: &mut [RawStep], has_llm: bool) {
    if has_llm {
        batch.sort_by(|a, b| a.key.cmp(&b.key));
    }
}

/// The format's verdict on a run: Inspect's scores, SWE-agent's `exit_status`.
pub fn verdict(t: &Trace) -> Option<String> {
    let attr = |k: &str| t.meta.all_attributes().find(|(n, _)| n == k).map(|(_, v)| v);
    if let Some(s) = attr("scores").and_then(Value::as_object) {
        let text = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let parts: Vec<String> = match s.len() {
            0 => return None,
            1 => s.values().map(text).collect(),
            _ => s.iter().map(|(k, v)| format!("{k}={}", text(v))).collect(),
        };
        return Some(parts.join(" "));
    }
    attr("exit_status").and_then(Value::as_str).map(str::to_owned)
}

impl RunInfo {
    pub fn of(t: &Trace, spec: String, tools_only: bool, ignore: &[Glob], prices: &crate::cost::Prices) -> RunInfo {
        RunInfo {
            name: t.meta.name.clone().unwrap_or_else(|| t.meta.id.clone()),
            spec,
            format: t.meta.format,
            steps: steps(t, tools_only, ignore),
            error: t.meta.status == RunStatus::Error,
            verdict: verdict(t),
            cost: super::compare::cost(t, prices),
            tokens: Some(t.counts().tokens as i64),
            duration: t.duration(),
        }
    }
}

/// Mean and spread of a metric over the runs that record it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    /// Runs that record it.
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (0 for one value).
    pub sd: f64,
    pub min: i64,
    pub max: i64,
}

impl Spread {
    pub fn of(values: impl Iterator<Item = i64>) -> Spread {
        let v: Vec<i64> = values.collect();
        if v.is_empty() {
            return Spread::default();
        }
        let n = v.len();
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
        let var = if n > 1 {
            v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Spread {
            n,
            mean,
            sd: var.sqrt(),
            min: *v.iter().min().expect("not empty"),
            max: *v.iter().max().expect("not empty"),
        }
    }
}

/// How the runs through a node ended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    pub ok: usize,
    pub error: usize,
    /// Runs by the format's verdict; runs without one are not counted here.
    pub verdicts: BTreeMap<String, usize>,
    pub cost: Spread,
    pub tokens: Spread,
    pub duration: Spread,
}

impl Outcome {
    pub fn of(runs: &[RunInfo], ids: &[u32]) -> Outcome {
        let it = || ids.iter().map(|&i| &runs[i as usize]);
        let mut verdicts = BTreeMap::new();
        for r in it() {
            if let Some(v) = &r.verdict {
                *verdicts.entry(v.clone()).or_insert(0) += 1;
            }
        }
        let error = it().filter(|r| r.error).count();
        Outcome {
            ok: ids.len() - error,
            error,
            verdicts,
            cost: Spread::of(it().filter_map(|r| r.cost)),
            tokens: Spread::of(it().filter_map(|r| r.tokens)),
            duration: Spread::of(it().filter_map(|r| r.duration)),
        }
    }
}

/// One step of the tree. The root (node 0) is no step: every run passes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// Index into [`Tree::keys`]; `None` for the root.
    pub key: Option<u32>,
    pub parent: Option<u32>,
    /// Steps from the root (the root is 0).
    pub depth: u32,
    /// Most runs first; ties by step key.
    pub children: Vec<u32>,
    /// Runs through this node, in input order.
    pub runs: Vec<u32>,
    /// Runs whose last step this is.
    pub ends: Vec<u32>,
    /// Runs whose call at this step failed.
    pub failed: usize,
    /// The event of this step in each run through it, in the order of `runs`.
    pub events: Vec<u32>,
}

impl Node {
    /// The run that stands for this branch: the first through it. With its event here.
    pub fn representative(&self) -> Option<(u32, Option<u32>)> {
        let r = *self.runs.first()?;
        Some((r, self.events.first().copied()))
    }
}

/// The prefix tree of a set of runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Tree {
    pub keys: Vec<StepKey>,
    /// Per key: the gist of the first call seen with it.
    pub gists: Vec<Option<String>>,
    pub nodes: Vec<Node>,
}

impl Tree {
    pub fn build(runs: &[RunInfo]) -> Tree {
        let mut ids: HashMap<&StepKey, u32> = HashMap::new();
        let mut keys: Vec<StepKey> = Vec::new();
        let mut gists = Vec::new();
        let root = Node {
            key: None,
            parent: None,
            depth: 0,
            children: Vec::new(),
            runs: (0..runs.len() as u32).collect(),
            ends: Vec::new(),
            failed: 0,
            events: Vec::new(),
        };
        let mut nodes = vec![root];
        let mut child: HashMap<(u32, u32), u32> = HashMap::new();
        for (ri, r) in runs.iter().enumerate() {
            let ri = ri as u32;
            let mut at = 0u32;
            for s in &r.steps {
                let k = *ids.entry(&s.key).or_insert_with(|| {
                    keys.push(s.key.clone());
                    gists.push(s.gist.clone());
                    keys.len() as u32 - 1
                });
                let next = *child.entry((at, k)).or_insert_with(|| {
                    let id = nodes.len() as u32;
                    let depth = nodes[at as usize].depth + 1;
                    nodes.push(Node {
                        key: Some(k),
                        parent: Some(at),
                        depth,
                        children: Vec::new(),
                        runs: Vec::new(),
                        ends: Vec::new(),
                        failed: 0,
                        events: Vec::new(),
                    });
                    nodes[at as usize].children.push(id);
                    id
                });
                let n = &mut nodes[next as usize];
                n.runs.push(ri);
                n.events.push(s.event);
                n.failed += s.failed as usize;
                at = next;
            }
            nodes[at as usize].ends.push(ri);
        }
        let mut kids: Vec<Vec<u32>> = nodes.iter_mut().map(|n| std::mem::take(&mut n.children)).collect();
        for list in &mut kids {
            list.sort_by(|&a, &b| {
                let (na, nb) = (&nodes[a as usize], &nodes[b as usize]);
                nb.runs.len().cmp(&na.runs.len()).then_with(|| {
                    let ka = &keys[na.key.expect("a child is a step") as usize];
                    let kb = &keys[nb.key.expect("a child is a step") as usize];
                    ka.cmp(kb)
                })
            });
        }
        for (n, list) in nodes.iter_mut().zip(kids) {
            n.children = list;
        }
        Tree { keys, gists, nodes }
    }

    pub fn root(&self) -> &Node {
        &self.nodes[0]
    }

    /// Distinct call sequences: the nodes where runs end, most runs first.
    pub fn paths(&self) -> Vec<u32> {
        let mut out: Vec<u32> = (0..self.nodes.len() as u32)
            .filter(|&i| !self.nodes[i as usize].ends.is_empty())
            .collect();
        out.sort_by(|&a, &b| {
            self.nodes[b as usize]
                .ends
                .len()
                .cmp(&self.nodes[a as usize].ends.len())
                .then(a.cmp(&b))
        });
        out
    }

    /// The nodes from the root's child down to `n`.
    pub fn path_to(&self, mut n: u32) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(p) = self.nodes[n as usize].parent {
            out.push(n);
            n = p;
        }
        out.reverse();
        out
    }

    /// Where the path to `n` leaves the paths closest to it: the last node on it whose parent
    /// has more than one way on (or where some runs stopped). `None`: no other path.
    pub fn divergence(&self, n: u32) -> Option<u32> {
        self.path_to(n).into_iter().rev().find(|&x| {
            let p = &self.nodes[self.nodes[x as usize].parent.expect("below the root") as usize];
            p.children.len() > 1 || !p.ends.is_empty()
        })
    }

    /// A step as one line (unsanitized name; the gist is sanitized): `tool search · paris`.
    pub fn label(&self, key: u32) -> String {
        let k = &self.keys[key as usize];
        let kind = if k.tool { "tool" } else { "llm" };
        match &self.gists[key as usize] {
            Some(g) => format!("{kind} {} · {g}", k.name),
            None => format!("{kind} {}", k.name),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn run(seq: &[&str]) -> RunInfo {
        RunInfo {
            name: seq.join(","),
            steps: seq
                .iter()
                .enumerate()
                .map(|(i, s)| RawStep {
                    key: StepKey {
                        tool: true,
                        name: s.to_string(),
                        args: String::new(),
                    },
                    event: i as u32,
                    failed: false,
                    gist: None,
                })
                .collect(),
            ..RunInfo::default()
        }
    }

    #[test]
    fn counts_ties_and_early_stops() {
        let runs = vec![
            run(&["a", "b", "c"]),
            run(&["a", "b", "d"]),
            run(&["a", "b"]),
            run(&["a", "b", "c"]),
            run(&["a", "e"]),
            run(&["a", "e"]),
            run(&[]),
        ];
        let t = Tree::build(&runs);
        assert_eq!(t.root().runs.len(), 7);
        assert_eq!(t.root().ends, vec![6], "the run with no call ends at the root");
        let a = t.root().children[0];
        assert_eq!(t.nodes[a as usize].runs.len(), 6);
        let kids: Vec<(String, usize)> = t.nodes[a as usize]
            .children
            .iter()
            .map(|&c| {
                (
                    t.label(t.nodes[c as usize].key.unwrap()),
                    t.nodes[c as usize].runs.len(),
                )
            })
            .collect();
        assert_eq!(kids, vec![("tool b".to_string(), 4), ("tool e".to_string(), 2)]);
        let b = t.nodes[a as usize].children[0];
        assert_eq!(t.nodes[b as usize].ends, vec![2], "the run that stops early");
        // c (2 runs) before d (1); a tie would go by key.
        let kids: Vec<usize> = t.nodes[b as usize]
            .children
            .iter()
            .map(|&c| t.nodes[c as usize].runs.len())
            .collect();
        assert_eq!(kids, vec![2, 1]);
        assert_eq!(t.paths().len(), 5);
        let ends: usize = t.paths().iter().map(|&p| t.nodes[p as usize].ends.len()).sum();
        assert_eq!(ends, 7);
    }

    #[test]
    fn ties_go_by_step_key() {
        let t = Tree::build(&[run(&["z"]), run(&["m"]), run(&["a"])]);
        let names: Vec<String> = t
            .root()
            .children
            .iter()
            .map(|&c| t.keys[t.nodes[c as usize].key.unwrap() as usize].name.clone())
            .collect();
        assert_eq!(names, ["a", "m", "z"]);
    }

    #[test]
    fn canonical_args_ignore_order_number_spelling_and_globs() {
        let a = serde_json::json!({"q": "paris", "limit": 10, "ts": 1});
        let b = serde_json::json!({"ts": 2, "limit": 10.0, "q": "paris"});
        assert_ne!(
            canonical_args("tools[0].args", &a, &[]),
            canonical_args("tools[0].args", &b, &[])
        );
        let g = [Glob::new("tools[*].args.ts")];
        assert_eq!(
            canonical_args("tools[0].args", &a, &g),
            canonical_args("tools[3].args", &b, &g)
        );
        assert_eq!(canonical_args("tools[0].args", &a, &g), r#"{"limit":10,"q":"paris"}"#);
    }

    #[test]
    fn spread_of_values() {
        let s = Spread::of([2, 4, 4, 4, 5, 5, 7, 9].into_iter());
        assert_eq!((s.n, s.mean, s.min, s.max), (8, 5.0, 2, 9));
        assert!((s.sd - 2.138).abs() < 0.001);
        assert_eq!(Spread::of(std::iter::empty()), Spread::default());
    }

    #[test]
    fn divergence_is_where_a_path_leaves_its_closest() {
        let runs = vec![
            run(&["a", "b", "c", "x"]),
            run(&["a", "b", "d", "y"]),
            run(&["a", "b", "c", "z"]),
            run(&["a"]),
        ];
        let t = Tree::build(&runs);
        let depth = |end: u32| t.divergence(end).map(|d| t.nodes[d as usize].depth);
        let ends: Vec<u32> = t.paths();
        // a-b-c-x and a-b-c-z part at their 4th step; a-b-d-y leaves them at the 3rd; `a`
        // alone: its runs stop where the others go on, so it has no step of its own.
        let by_run = |r: u32| *ends.iter().find(|&&e| t.nodes[e as usize].ends.contains(&r)).unwrap();
        assert_eq!(depth(by_run(0)), Some(4));
        assert_eq!(depth(by_run(1)), Some(3));
        assert_eq!(depth(by_run(2)), Some(4));
        assert_eq!(depth(by_run(3)), None);
        assert_eq!(t.divergence(Tree::build(&[run(&["a"])]).paths()[0]), None);
    }
}

#[cfg(test)]
mod props {
    use super::tests::run;
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// At every node, the runs that go on through its children and the runs that end there
        /// are exactly the runs that reached it; and so, depth by depth, branch counts sum to
        /// the runs that reached that depth.
        #[test]
        fn branch_counts_sum_to_the_runs_that_reached(seqs in prop::collection::vec(
            prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 0..8), 0..40)) {
            let runs: Vec<RunInfo> = seqs.iter().map(|s| run(s)).collect();
            let t = Tree::build(&runs);
            prop_assert_eq!(t.root().runs.len(), runs.len());
            for n in &t.nodes {
                let below: usize = n.children.iter().map(|&c| t.nodes[c as usize].runs.len()).sum();
                prop_assert_eq!(below + n.ends.len(), n.runs.len());
            }
            let max = seqs.iter().map(Vec::len).max().unwrap_or(0);
            for d in 1..=max {
                let reached = seqs.iter().filter(|s| s.len() >= d).count();
                let at: usize = t.nodes.iter().filter(|n| n.depth as usize == d).map(|n| n.runs.len()).sum();
                prop_assert_eq!(at, reached);
            }
            let ends: usize = t.nodes.iter().map(|n| n.ends.len()).sum();
            prop_assert_eq!(ends, runs.len());
        }
    }
}
