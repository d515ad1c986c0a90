//! `tracetui compare`: many runs of one task. `--tree RUNS...` prints the prefix tree of their
//! call sequences (text, JSON, Markdown); `--baseline A... --current B...` compares two sets of
//! repeated runs metric by metric ([`crate::diff::repeated`]).

use crate::diff::Glob;
use crate::diff::repeated::{MetricTest, Repeated};
use crate::diff::tree::{Outcome, RunInfo, Spread, Tree};
use crate::formats::Format;
use crate::model::{EventKind, Role, Trace};
use crate::report::diff_md::{cell as md_cell, code, fenced};
use crate::sanitize;
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;

/// How a set of runs is split into tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupBy {
    /// The run's name (or id).
    Name,
    /// The task the format names: Inspect AI's sample (across epochs), SWE-agent's instance
    /// (the trajectory's file name); otherwise the first user input.
    Task,
    /// Inspect AI's sample id (across epochs); runs without one by name.
    Sample,
    /// The first user input (the task as the agent was given it).
    Input,
}

/// The first thing the user asked: the first user message, else the first LLM call's first
/// user message (or its prompt), else the run record's input. Unsanitized.
pub fn first_input(t: &Trace) -> Option<String> {
    let text = |v: &Value| -> Option<String> {
        let s = match v {
            Value::String(s) => s.clone(),
            Value::Array(a) => a
                .iter()
                .filter_map(|x| x.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Value::Object(m) => match m.get("content").or_else(|| m.get("text")) {
                Some(Value::String(s)) => s.clone(),
                _ => v.to_string(),
            },
            Value::Null => return None,
            other => other.to_string(),
        };
        let s = s.trim().to_string();
        (!s.is_empty()).then_some(s)
    };
    let walk = t.walk();
    for &(i, _) in &walk {
        let ev = t.event(i);
        if ev.kind == EventKind::Message(Role::User) {
            let p = crate::formats::payload(t, ev);
            if let Some(s) = p.input.as_ref().or(p.output.as_ref()).and_then(text) {
                return Some(s);
            }
        }
    }
    let from_llm = walk
        .iter()
        .find(|&&(i, _)| t.event(i).kind == EventKind::LlmCall)
        .and_then(|&(l, _)| match crate::formats::payload(t, t.event(l)).input? {
            Value::Array(msgs) => msgs
                .iter()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
                .and_then(|m| m.get("content"))
                .and_then(text),
            other => text(&other),
        });
    if from_llm.is_some() {
        return from_llm;
    }
    let &(r, _) = walk.iter().find(|&&(i, _)| t.event(i).kind == EventKind::Run)?;
    crate::formats::payload(t, t.event(r)).input.as_ref().and_then(text)
}

fn attr<'t>(t: &'t Trace, k: &str) -> Option<&'t Value> {
    t.meta.all_attributes().find(|(n, _)| n == k).map(|(_, v)| v)
}

fn name_of(t: &Trace) -> String {
    t.meta.name.clone().unwrap_or_else(|| t.meta.id.clone())
}

/// Inspect AI's sample across epochs: the run's name without its epoch.
fn sample_key(t: &Trace) -> Option<String> {
    let id = attr(t, "sample_id")?;
    let id = id.as_str().map_or_else(|| id.to_string(), str::to_owned);
    let name = name_of(t);
    Some(match name.rsplit_once(" · epoch ") {
        Some((head, _)) => head.to_string(),
        None => format!("sample {id}"),
    })
}

/// The group a run falls in.
pub fn group_key(t: &Trace, by: Option<GroupBy>) -> String {
    let input = || {
        first_input(t)
            .map(|s| crate::report::cut(&s.split_whitespace().collect::<Vec<_>>().join(" "), 120))
            .unwrap_or_else(|| "(no input)".into())
    };
    match by {
        None => "all runs".into(),
        Some(GroupBy::Name) => name_of(t),
        Some(GroupBy::Sample) => sample_key(t).unwrap_or_else(|| name_of(t)),
        Some(GroupBy::Input) => input(),
        Some(GroupBy::Task) => {
            if let Some(s) = sample_key(t) {
                s
            } else if t.meta.format == "swe-agent" {
                name_of(t)
            } else {
                input()
            }
        }
    }
}

/// Runs read from PATHs, reduced, with the group each falls in and the warnings met.
pub struct Loaded {
    pub runs: Vec<(String, RunInfo)>,
    pub warnings: Vec<String>,
}

/// A run reduced where it was loaded: its group, what compare needs, its diagnostics.
type Reduced = (String, RunInfo, Vec<String>);

/// Load every trace under `paths` (each trace of a source that holds several is a run).
/// `Err`: a path that is unreadable or holds no trace.
pub fn load(
    paths: &[PathBuf],
    forced: Option<&'static dyn Format>,
    by: Option<GroupBy>,
    ignore: &[Glob],
) -> Result<Loaded, String> {
    let d = crate::source::discover(paths, forced);
    if let Some(e) = d.errors.first() {
        return Err(e.to_string());
    }
    let prices = crate::cost::Prices::builtin();
    let per_source: Vec<Result<Vec<Reduced>, String>> = crate::source::load_each(&d.runs, |r, res| {
        let loaded = res.map_err(|e| e.to_string())?;
        let many = loaded.traces.len() > 1;
        Ok(loaded
            .traces
            .iter()
            .map(|t| {
                let spec = if many {
                    format!("{}#{}", r.path.display(), t.meta.id)
                } else {
                    r.path.display().to_string()
                };
                let info = RunInfo::of(t, spec, false, ignore, prices);
                let warnings = t.diagnostics.iter().map(|d| d.to_string()).collect();
                (group_key(t, by), info, warnings)
            })
            .collect())
    });
    let mut runs = Vec::new();
    let mut warnings = Vec::new();
    for res in per_source {
        for (g, info, w) in res? {
            runs.push((g, info));
            warnings.extend(w);
        }
    }
    if runs.is_empty() {
        let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(format!("{}: holds no trace", shown.join(", ")));
    }
    Ok(Loaded { runs, warnings })
}

/// One task's runs and their tree.
#[derive(Debug)]
pub struct Group {
    pub key: String,
    pub runs: Vec<RunInfo>,
    pub tree: Tree,
    /// Its runs come from several formats: only tool calls are compared (as `diff` does).
    pub tools_only: bool,
}

impl Group {
    pub fn new(key: String, mut runs: Vec<RunInfo>) -> Group {
        let tools_only = runs.iter().any(|r| r.format != runs[0].format);
        if tools_only {
            for r in &mut runs {
                r.steps.retain(|s| s.key.tool);
            }
        }
        let tree = Tree::build(&runs);
        Group {
            key,
            runs,
            tree,
            tools_only,
        }
    }
}

/// Split runs into groups, in the order their first run was given; runs sorted by source.
pub fn groups(runs: Vec<(String, RunInfo)>) -> Vec<Group> {
    let mut order: Vec<String> = Vec::new();
    let mut by: std::collections::HashMap<String, Vec<RunInfo>> = std::collections::HashMap::new();
    for (g, r) in runs {
        if !by.contains_key(&g) {
            order.push(g.clone());
        }
        by.entry(g).or_default().push(r);
    }
    order
        .into_iter()
        .map(|k| {
            let mut rs = by.remove(&k).unwrap_or_default();
            rs.sort_by(|a, b| a.spec.cmp(&b.spec));
            Group::new(k, rs)
        })
        .collect()
}

fn spread_text(s: &Spread, show: impl Fn(i64) -> String) -> Option<String> {
    if s.n == 0 {
        return None;
    }
    let mean = show(s.mean.round() as i64);
    Some(if s.n > 1 {
        format!("{mean} ±{}", show(s.sd.round() as i64))
    } else {
        mean
    })
}

/// `ok 18 · error 2 · C 15, I 5 · cost $0.01 ±$0.001 · tokens 1,200 ±40 · 2.0s ±300ms`.
pub fn outcome_text(o: &Outcome) -> String {
    let mut parts = vec![format!("ok {}", o.ok)];
    if o.error > 0 {
        parts.push(format!("error {}", o.error));
    }
    if !o.verdicts.is_empty() {
        let v: Vec<String> = o
            .verdicts
            .iter()
            .map(|(k, n)| format!("{} {n}", crate::report::cut(k, 24)))
            .collect();
        parts.push(v.join(", "));
    }
    if let Some(c) = spread_text(&o.cost, |x| crate::cost::dollars(x.unsigned_abs())) {
        parts.push(format!("cost {c}"));
    }
    if let Some(t) = spread_text(&o.tokens, |x| {
        let t = crate::model::thousands(x.unsigned_abs());
        if x < 0 { format!("-{t}") } else { t }
    }) {
        parts.push(format!("tokens {t}"));
    }
    if let Some(d) = spread_text(&o.duration, crate::model::format_duration) {
        parts.push(d);
    }
    sanitize::line(&parts.join(" · ")).into_owned()
}

/// Writes the text tree; `steps`: steps shown of a stretch without a branch (0: all).
struct TextTree<'a> {
    g: &'a Group,
    steps: usize,
    lines: Vec<String>,
}

/// Work left in [`TextTree::segment`].
enum Todo {
    Line(String),
    Stretch(Option<u32>, String),
}

/// Guides stop growing past this many characters (a tree branching at every step).
const MAX_PREFIX: usize = 48;

impl TextTree<'_> {
    fn step_line(&self, n: u32) -> String {
        let node = &self.g.tree.nodes[n as usize];
        let mut s = crate::report::cut(&sanitize::line(&self.g.tree.label(node.key.expect("a step"))), 100);
        if node.failed > 0 {
            s.push_str(&format!("  ✗ failed in {}", node.failed));
        }
        s
    }

    fn ends_line(&self, n: u32) -> String {
        let node = &self.g.tree.nodes[n as usize];
        format!(
            "■ {} {} here · {}",
            crate::report::count(node.ends.len(), "run"),
            if node.ends.len() == 1 { "ends" } else { "end" },
            outcome_text(&Outcome::of(&self.g.runs, &node.ends))
        )
    }

    /// The tree from `start` (`None`: the root), each stretch of single steps, then its
    /// branches. An explicit stack, not recursion: a set of runs may branch at every step.
    fn segment(&mut self, start: Option<u32>, prefix: &str) {
        let mut todo = vec![Todo::Stretch(start, prefix.to_string())];
        while let Some(item) = todo.pop() {
            match item {
                Todo::Line(l) => self.lines.push(l),
                Todo::Stretch(s, p) => self.stretch(s, &p, &mut todo),
            }
        }
    }

    /// One stretch: its steps and ends lines now; its branches (header, then stretch) onto `todo`.
    fn stretch(&mut self, start: Option<u32>, prefix: &str, todo: &mut Vec<Todo>) {
        let t = &self.g.tree;
        let mut chain = Vec::new();
        let mut n = start.unwrap_or(0);
        if start.is_some() {
            chain.push(n);
        }
        while t.nodes[n as usize].children.len() == 1 && t.nodes[n as usize].ends.is_empty() {
            n = t.nodes[n as usize].children[0];
            chain.push(n);
        }
        if self.steps == 0 || chain.len() <= self.steps {
            for &c in &chain {
                let l = format!("{prefix}{}", self.step_line(c));
                self.lines.push(l);
            }
        } else {
            // The first and last steps of a long stretch; the count of those between.
            let head = self.steps.div_ceil(2);
            let tail = self.steps - head;
            for &c in &chain[..head] {
                let l = format!("{prefix}{}", self.step_line(c));
                self.lines.push(l);
            }
            let skipped = chain.len() - head - tail;
            self.lines
                .push(format!("{prefix}┆ {}", crate::report::count(skipped, "more step")));
            for &c in &chain[chain.len() - tail..] {
                let l = format!("{prefix}{}", self.step_line(c));
                self.lines.push(l);
            }
        }
        let node = &t.nodes[n as usize];
        if !node.ends.is_empty() {
            let l = format!("{prefix}{}", self.ends_line(n));
            self.lines.push(l);
        }
        let kids = node.children.clone();
        let total = self.g.runs.len();
        for (i, &c) in kids.iter().enumerate().rev() {
            let last = i + 1 == kids.len();
            let cn = &t.nodes[c as usize];
            let rep = cn
                .representative()
                .map(|(r, _)| crate::report::ls::cut_front(&sanitize::line(&self.g.runs[r as usize].spec), 60))
                .unwrap_or_default();
            let header = format!(
                "{prefix}{} {}/{total} runs · {} · e.g. {rep}",
                if last { "└─" } else { "├─" },
                cn.runs.len(),
                outcome_text(&Outcome::of(&self.g.runs, &cn.runs)),
            );
            let deeper = if prefix.chars().count() >= MAX_PREFIX {
                prefix.to_string()
            } else {
                format!("{prefix}{}", if last { "   " } else { "│  " })
            };
            // Pushed in reverse: the first branch's header comes off the stack first.
            todo.push(Todo::Stretch(Some(c), deeper));
            todo.push(Todo::Line(header));
        }
    }
}

fn head_line(g: &Group) -> String {
    format!(
        "{} · {} · {} · {}",
        sanitize::line(&g.key),
        crate::report::count(g.runs.len(), "run"),
        crate::report::count(g.tree.paths().len(), "path"),
        outcome_text(&Outcome::of(&g.runs, &g.tree.root().runs))
    )
}

pub fn tree_text(groups: &[Group], steps: usize, out: &mut dyn Write) -> std::io::Result<()> {
    for (i, g) in groups.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(out, "{}", head_line(g))?;
        if g.tools_only {
            writeln!(
                out,
                "  note: the runs are of several formats: only their tool calls are compared"
            )?;
        }
        let mut t = TextTree {
            g,
            steps,
            lines: Vec::new(),
        };
        t.segment(None, "  ");
        for l in t.lines {
            writeln!(out, "{l}")?;
        }
    }
    if groups.len() > 1 {
        let runs: usize = groups.iter().map(|g| g.runs.len()).sum();
        writeln!(
            out,
            "\n{} · {}",
            crate::report::count(groups.len(), "group"),
            crate::report::count(runs, "run")
        )?;
    }
    Ok(())
}

fn spread_json(s: &Spread) -> Value {
    if s.n == 0 {
        return Value::Null;
    }
    json!({"n": s.n, "mean": s.mean, "sd": s.sd, "min": s.min, "max": s.max})
}

fn outcome_json(o: &Outcome) -> Value {
    json!({
        "ok": o.ok,
        "error": o.error,
        "verdicts": o.verdicts,
        "cost_usd_micros": spread_json(&o.cost),
        "tokens": spread_json(&o.tokens),
        "duration_ns": spread_json(&o.duration),
    })
}

pub fn group_json(g: &Group) -> Value {
    let t = &g.tree;
    let nodes: Vec<Value> = t
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let step = n.key.map(|k| {
                let key = &t.keys[k as usize];
                json!({
                    "kind": if key.tool { "tool" } else { "llm" },
                    "name": key.name,
                    "gist": t.gists[k as usize],
                })
            });
            let rep = n
                .representative()
                .map(|(r, ev)| json!({"run": g.runs[r as usize].spec, "name": g.runs[r as usize].name, "event": ev}));
            json!({
                "id": i,
                "parent": n.parent,
                "depth": n.depth,
                "step": step,
                "runs": n.runs.len(),
                "ends": n.ends.len(),
                "failed": n.failed,
                "outcome": outcome_json(&Outcome::of(&g.runs, &n.runs)),
                "representative": rep,
                "children": n.children,
            })
        })
        .collect();
    let paths: Vec<Value> = t
        .paths()
        .into_iter()
        .map(|p| {
            let n = &t.nodes[p as usize];
            json!({
                "end": p,
                "runs": n.ends.len(),
                "steps": n.depth,
                "divergence": t.divergence(p),
                "outcome": outcome_json(&Outcome::of(&g.runs, &n.ends)),
                "members": n.ends.iter().map(|&r| g.runs[r as usize].spec.as_str()).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "group": g.key,
        "runs": g.runs.len(),
        "tools_only": g.tools_only,
        "outcome": outcome_json(&Outcome::of(&g.runs, &t.root().runs)),
        "paths": paths,
        "nodes": nodes,
    })
}

pub fn tree_json(groups: &[Group], out: &mut dyn Write) -> std::io::Result<()> {
    let v = json!({"groups": groups.iter().map(group_json).collect::<Vec<_>>()});
    crate::json::write_line(out, &v)
}

/// The step where a path leaves its closest, as a label (`-`: a path that only stops early,
/// or the only one).
fn divergence_label(g: &Group, end: u32) -> String {
    match g.tree.divergence(end) {
        Some(d) => {
            let n = &g.tree.nodes[d as usize];
            format!("step {}: {}", n.depth, g.tree.label(n.key.expect("a step")))
        }
        None if end == 0 => "(no call)".into(),
        None if !g.tree.nodes[end as usize].children.is_empty() => {
            format!("stops after step {}", g.tree.nodes[end as usize].depth)
        }
        None => "-".into(),
    }
}

pub fn tree_markdown(groups: &[Group], steps: usize, out: &mut dyn Write) -> std::io::Result<()> {
    let runs: usize = groups.iter().map(|g| g.runs.len()).sum();
    writeln!(
        out,
        "## tracetui compare --tree: {} in {}\n",
        crate::report::count(runs, "run"),
        crate::report::count(groups.len(), "group")
    )?;
    for g in groups {
        writeln!(
            out,
            "### {} · {} · {}\n",
            code(&g.key),
            crate::report::count(g.runs.len(), "run"),
            crate::report::count(g.tree.paths().len(), "path")
        )?;
        writeln!(out, "| path | runs | outcome | where it leaves the others | e.g. |")?;
        writeln!(out, "|---|---|---|---|---|")?;
        for (i, p) in g.tree.paths().into_iter().enumerate() {
            let n = &g.tree.nodes[p as usize];
            let rep = n.ends.first().map(|&r| g.runs[r as usize].spec.as_str()).unwrap_or("-");
            writeln!(
                out,
                "| {} | {}/{} | {} | {} | {} |",
                i + 1,
                n.ends.len(),
                g.runs.len(),
                md_cell(&outcome_text(&Outcome::of(&g.runs, &n.ends))),
                md_cell(&code(&divergence_label(g, p))),
                md_cell(&code(rep)),
            )?;
        }
        let mut t = TextTree {
            g,
            steps,
            lines: Vec::new(),
        };
        t.segment(None, "");
        writeln!(
            out,
            "\n<details><summary>tree</summary>\n\n{}\n\n</details>\n",
            fenced(&t.lines.join("\n"), "text")
        )?;
    }
    Ok(())
}

// ---- --baseline / --current ----

/// A value of a metric as shown: rates in percent, cost in dollars, durations in their unit.
pub fn metric_value(m: &MetricTest, x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    match m.unit {
        "rate" => format!("{:.1}%", x * 100.0),
        "usd_micros" => {
            let sign = if x < 0.0 { "-" } else { "" };
            format!("{sign}{}", crate::cost::dollars(x.abs().round() as u64))
        }
        "ns" => {
            let sign = if x < 0.0 { "-" } else { "" };
            format!("{sign}{}", crate::model::format_duration(x.abs().round() as i64))
        }
        _ => {
            let sign = if x.round() < 0.0 { "-" } else { "" };
            format!("{sign}{}", crate::model::thousands(x.abs().round() as u64))
        }
    }
}

fn signed(m: &MetricTest, x: f64) -> String {
    let s = metric_value(m, x);
    if x > 0.0 { format!("+{s}") } else { s }
}

fn side_text(m: &MetricTest, s: &crate::diff::repeated::Side) -> String {
    match s.k {
        Some(k) => format!("{k}/{} ({})", s.n, metric_value(m, s.mean)),
        None if s.n > 1 => format!("{} ±{}", metric_value(m, s.mean), metric_value(m, s.sd)),
        None => metric_value(m, s.mean),
    }
}

fn mark(m: &MetricTest) -> &'static str {
    match (m.significant, m.decides) {
        (true, true) => "REGRESSION",
        (true, false) => "changed",
        (false, _) => "-",
    }
}

fn p_text(p: f64) -> String {
    if p < 0.0001 {
        "<0.0001".into()
    } else {
        format!("{p:.4}")
    }
}

/// The rows of the verdict table: metric, baseline, current, difference, interval, p, test, mark.
fn rows(r: &Repeated) -> Vec<[String; 8]> {
    r.metrics
        .iter()
        .map(|m| {
            [
                sanitize::line(&m.name).into_owned(),
                side_text(m, &m.baseline),
                side_text(m, &m.current),
                signed(m, m.diff),
                format!("[{}, {}]", signed(m, m.ci.0), signed(m, m.ci.1)),
                p_text(m.p),
                m.test.as_str().to_string(),
                mark(m).to_string(),
            ]
        })
        .collect()
}

pub fn verdict_line(r: &Repeated) -> String {
    let worse: Vec<&str> = r
        .metrics
        .iter()
        .filter(|m| m.regression())
        .map(|m| m.name.as_str())
        .collect();
    if worse.is_empty() {
        format!(
            "PASSED: no metric significantly worse at alpha {} ({} baseline, {} current runs; Holm-corrected)",
            r.alpha, r.baseline_runs, r.current_runs
        )
    } else {
        format!(
            "REGRESSION: {} significantly worse at alpha {} ({} baseline, {} current runs; Holm-corrected)",
            sanitize::line(&worse.join(", ")),
            r.alpha,
            r.baseline_runs,
            r.current_runs
        )
    }
}

pub fn repeated_text(r: &Repeated, out: &mut dyn Write) -> std::io::Result<()> {
    let level = ((1.0 - r.alpha) * 100.0 * 10.0).round() / 10.0;
    let head = [
        "METRIC".to_string(),
        "BASELINE".into(),
        "CURRENT".into(),
        "DIFF".into(),
        format!("{level}% CI"),
        "P".into(),
        "TEST".into(),
        "".into(),
    ];
    let rows = rows(r);
    let w = |i: usize| {
        rows.iter()
            .map(|x| unicode_width::UnicodeWidthStr::width(x[i].as_str()))
            .chain([head[i].len()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..8).map(w).collect();
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            s.push_str(c);
            if i + 1 < cells.len() {
                let n = unicode_width::UnicodeWidthStr::width(c.as_str());
                s.push_str(&" ".repeat(widths[i].saturating_sub(n)));
            }
        }
        s.trim_end().to_string()
    };
    writeln!(out, "{}", line(&head))?;
    for row in &rows {
        writeln!(out, "{}", line(row))?;
    }
    if !r.modal_sequence.is_empty() {
        writeln!(
            out,
            "reference tool sequence (the baseline's most common): {}",
            crate::report::cut(&sanitize::line(&r.modal_sequence.join(" → ")), 200)
        )?;
    }
    writeln!(out, "{}", verdict_line(r))
}

pub fn repeated_json(r: &Repeated) -> Value {
    let metrics: Vec<Value> = r
        .metrics
        .iter()
        .map(|m| {
            let side = |s: &crate::diff::repeated::Side| json!({"n": s.n, "k": s.k, "mean": s.mean, "sd": s.sd});
            let f = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
            json!({
                "metric": m.name,
                "unit": m.unit,
                "baseline": side(&m.baseline),
                "current": side(&m.current),
                "diff": f(m.diff),
                "ci": [f(m.ci.0), f(m.ci.1)],
                "p": m.p,
                "test": m.test,
                "decides": m.decides,
                "significant": m.significant,
                "regression": m.regression(),
            })
        })
        .collect();
    json!({
        "verdict": if r.regression { "REGRESSION" } else { "PASSED" },
        "alpha": r.alpha,
        "ci_level": 1.0 - r.alpha,
        "correction": "holm",
        "baseline_runs": r.baseline_runs,
        "current_runs": r.current_runs,
        "reference_sequence": r.modal_sequence,
        "metrics": metrics,
    })
}

pub fn repeated_markdown(r: &Repeated, out: &mut dyn Write) -> std::io::Result<()> {
    let mark = if r.regression { "❌" } else { "✅" };
    writeln!(
        out,
        "## tracetui compare: {mark} {}\n",
        if r.regression { "REGRESSION" } else { "PASSED" }
    )?;
    let level = ((1.0 - r.alpha) * 100.0 * 10.0).round() / 10.0;
    writeln!(
        out,
        "| metric | baseline | current | difference | {level}% CI | p | test | |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|---|---|")?;
    for row in rows(r) {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| if i == 0 { md_cell(&code(c)) } else { md_cell(c) })
            .collect();
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    writeln!(out, "\n{}", md_cell(&verdict_line(r)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree's own test run, named and with a gist holding an escape (to be shown escaped).
    fn run(seq: &[&str], spec: &str) -> RunInfo {
        let mut r = crate::diff::tree::tests::run(seq);
        r.name = spec.into();
        r.spec = spec.into();
        r.format = "agentdbg";
        for st in &mut r.steps {
            st.gist = Some(format!("{}\u{1b}[31m", st.key.name));
        }
        r
    }

    #[test]
    fn text_tree_folds_long_stretches_and_escapes() {
        let long: Vec<String> = (0..20).map(|i| format!("s{i}")).collect();
        let long: Vec<&str> = long.iter().map(String::as_str).collect();
        let mut a = long.clone();
        a.push("x");
        let mut b = long.clone();
        b.push("y");
        let g = Group::new("t".into(), vec![run(&a, "r1"), run(&b, "r2"), run(&a, "r3")]);
        let mut out = Vec::new();
        tree_text(&[g], 6, &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("┆ 14 more steps"), "{s}");
        assert!(s.contains("├─ 2/3 runs") && s.contains("└─ 1/3 runs"), "{s}");
        assert!(!s.contains('\u{1b}'), "{s}");
    }

    #[test]
    fn a_set_branching_at_every_step_renders_in_order() {
        // Run i shares i steps with the others, then takes its own: 1,000 nested branches.
        let runs: Vec<RunInfo> = (0..1000)
            .map(|i| {
                let mut seq: Vec<String> = (0..i).map(|_| "same".to_string()).collect();
                seq.push(format!("own{i}"));
                let seq: Vec<&str> = seq.iter().map(String::as_str).collect();
                run(&seq, &format!("r{i:04}"))
            })
            .collect();
        let g = Group::new("deep".into(), runs);
        let mut out = Vec::new();
        tree_text(&[g], 0, &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert_eq!(s.matches("■ 1 run ends here").count(), 1000);
        let first = s.find("e.g. r0001").unwrap();
        assert!(
            s.find("e.g. r0000").unwrap() > first,
            "the larger branch (999 runs via `same`) comes first"
        );
    }
}
