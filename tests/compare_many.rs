//! `tracetui compare`: trees of hand-built run sets whose shape is known (ties, runs that stop
//! early, parallel calls in other orders, volatile fields), real repeated runs (an Inspect AI
//! log with epochs, SWE-agent trajectories), and a generated task whose 30 runs take one of
//! three known paths: the tree recovers them, and `--baseline/--current` tells a shifted mix
//! from the same mix in at least 95 of 100 seeded trials.

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use tracetui::diff::Glob;
use tracetui::diff::tree::RunInfo;
use tracetui::report::compare_tree::{self as ct, GroupBy};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn cli(args: &[&str]) -> (i32, String, String) {
    let out = cargo_bin_cmd!("tracetui")
        .current_dir(root())
        .env("XDG_CONFIG_HOME", root().join("tests/fixtures/no-config"))
        .arg("compare")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// One tool call of a generated run.
#[derive(Clone)]
struct Tool {
    name: &'static str,
    args: Value,
    fails: bool,
}

fn tool(name: &'static str, args: Value) -> Tool {
    Tool {
        name,
        args,
        fails: false,
    }
}

/// An AgentDbg run directory: per turn one LLM call and the tool calls it issued (children of
/// the call), then a closing LLM call. `salt` changes every volatile field: ids, clocks,
/// durations, the results' request ids.
fn write_run(dir: &Path, name: &str, turns: &[Vec<Tool>], error: bool, salt: u64, tokens: u64) {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let run_id = format!("{salt:08x}-0000-4000-8000-{:012x}", salt * 7 + 1);
    let mut lines = Vec::new();
    let mut n = 0u64;
    let mut t_ms = 1_000 * (salt % 97);
    let mut ev = |ty: &str, parent: Option<String>, name: &str, dur: Option<u64>, payload: Value| {
        n += 1;
        t_ms += 100 + (salt * 13 + n * 7) % 50;
        let id = format!("{run_id}-{n:04}");
        let ts = format!(
            "2026-11-20T09:{:02}:{:02}.{:03}Z",
            (t_ms / 60_000) % 60,
            (t_ms / 1000) % 60,
            t_ms % 1000
        );
        lines.push(json!({
            "spec_version": "0.1", "event_id": id, "run_id": run_id, "parent_id": parent,
            "event_type": ty, "ts": ts, "duration_ms": dur, "name": name, "payload": payload, "meta": {}
        }));
        id
    };
    ev("RUN_START", None, name, None, json!({"run_name": name}));
    let llm = |prompt: &str| {
        json!({"model": "gpt-4o", "prompt": prompt, "response": "ok",
               "usage": {"prompt_tokens": tokens, "completion_tokens": 20, "total_tokens": tokens + 20},
               "status": "ok", "error": null})
    };
    for (i, turn) in turns.iter().enumerate() {
        let l = ev(
            "LLM_CALL",
            None,
            "gpt-4o",
            Some(300 + salt % 200),
            llm(&format!("turn {i} of {salt}")),
        );
        for t in turn {
            let payload = if t.fails {
                json!({"tool_name": t.name, "args": t.args, "result": null, "status": "error",
                       "error": {"error_type": "Boom", "message": "failed"}})
            } else {
                json!({"tool_name": t.name, "args": t.args,
                       "result": {"request_id": format!("req-{salt}-{i}"), "ok": true}, "status": "ok", "error": null})
            };
            ev("TOOL_CALL", Some(l.clone()), t.name, Some(50 + salt % 90), payload);
        }
    }
    ev("LLM_CALL", None, "gpt-4o", Some(400), llm("summarise"));
    let status = if error { "error" } else { "ok" };
    ev("RUN_END", None, name, None, json!({"status": status, "summary": {}}));
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(d.join("events.jsonl"), body).unwrap();
    std::fs::write(
        d.join("run.json"),
        json!({"spec_version": "0.1", "run_id": run_id, "run_name": name, "status": status,
               "started_at": "2026-11-20T09:00:00.000Z", "ended_at": "2026-11-20T09:59:00.000Z"})
        .to_string(),
    )
    .unwrap();
}

fn groups(dir: &Path, by: Option<GroupBy>, ignore: &[Glob]) -> Vec<ct::Group> {
    let loaded = ct::load(&[dir.to_path_buf()], None, by, ignore).unwrap();
    ct::groups(loaded.runs)
}

/// (step labels from the root's child down, runs ending there) of every path, most runs first.
fn paths(g: &ct::Group) -> Vec<(Vec<String>, usize)> {
    g.tree
        .paths()
        .into_iter()
        .map(|p| {
            let labels = g
                .tree
                .path_to(p)
                .into_iter()
                .map(|n| {
                    let k = &g.tree.keys[g.tree.nodes[n as usize].key.unwrap() as usize];
                    format!("{}{}", if k.tool { "" } else { "llm:" }, k.name)
                })
                .collect();
            (labels, g.tree.nodes[p as usize].ends.len())
        })
        .collect()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn hand_built_set_counts_ties_early_stops_parallel_orders_and_volatile_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let look = || tool("lookup", json!({"order": "A-1"}));
    let policy = || tool("policy", json!({"topic": "damage"}));
    let refund = || tool("refund", json!({"order": "A-1", "amount": 10}));
    // Three runs: the same calls; volatile fields differ, and two of them issue their parallel
    // calls in the other order (and spell the amount 10.0, argument keys in another order).
    write_run(d, "r01", &[vec![look(), policy()], vec![refund()]], false, 1, 100);
    write_run(d, "r02", &[vec![policy(), look()], vec![refund()]], false, 2, 110);
    write_run(
        d,
        "r03",
        &[
            vec![policy(), look()],
            vec![tool("refund", json!({"amount": 10.0, "order": "A-1"}))],
        ],
        false,
        3,
        120,
    );
    // Two runs that take another amount (TOOLS_CHANGED for diff: another step here).
    write_run(
        d,
        "r04",
        &[
            vec![look(), policy()],
            vec![tool("refund", json!({"order": "A-1", "amount": 5}))],
        ],
        true,
        4,
        100,
    );
    write_run(
        d,
        "r05",
        &[
            vec![look(), policy()],
            vec![tool("refund", json!({"order": "A-1", "amount": 5}))],
        ],
        false,
        5,
        100,
    );
    // One that stops after its first turn: it ends at the LLM call where the others go on.
    write_run(d, "r06", &[vec![look(), policy()]], true, 6, 100);
    // A tie of one run each at the first step: escalate vs. lookup alone.
    write_run(d, "r07", &[vec![tool("escalate", json!({}))]], false, 7, 100);
    write_run(d, "r08", &[vec![look()]], false, 8, 100);

    let gs = groups(d, None, &[]);
    assert_eq!(gs.len(), 1);
    let g = &gs[0];
    assert_eq!(g.runs.len(), 8);
    let got = paths(g);
    let want = vec![
        (
            s(&["llm:gpt-4o", "lookup", "policy", "llm:gpt-4o", "refund", "llm:gpt-4o"]),
            3,
        ),
        (
            s(&["llm:gpt-4o", "lookup", "policy", "llm:gpt-4o", "refund", "llm:gpt-4o"]),
            2,
        ),
        // Paths of one run each: by the order their end was first reached.
        (s(&["llm:gpt-4o", "lookup", "policy", "llm:gpt-4o"]), 1),
        (s(&["llm:gpt-4o", "escalate", "llm:gpt-4o"]), 1),
        (s(&["llm:gpt-4o", "lookup", "llm:gpt-4o"]), 1),
    ];
    assert_eq!(got, want);
    // The two refund branches differ by their arguments: 3 runs (amount 10) before 2 (amount 5).
    let after = g.tree.path_to(g.tree.paths()[0])[3];
    let kids: Vec<usize> = g.tree.nodes[after as usize]
        .children
        .iter()
        .map(|&c| g.tree.nodes[c as usize].runs.len())
        .collect();
    assert_eq!(kids, [3, 2]);
    assert_eq!(
        g.tree.nodes[after as usize].ends.len(),
        1,
        "r06 stops after its first turn"
    );
    // After the first LLM call: lookup first (7 runs: the parallel lookup/policy pair is in
    // canonical order whichever way it was issued), then escalate (1).
    let first = g.tree.root().children[0];
    let kids: Vec<(String, usize)> = g.tree.nodes[first as usize]
        .children
        .iter()
        .map(|&c| {
            let n = &g.tree.nodes[c as usize];
            (g.tree.keys[n.key.unwrap() as usize].name.clone(), n.runs.len())
        })
        .collect();
    assert_eq!(kids, [("lookup".to_string(), 7), ("escalate".to_string(), 1)]);
    // Outcome of the amount-5 branch: one of its two runs ended in error.
    let five = g.tree.nodes[after as usize].children[1];
    let o = tracetui::diff::tree::Outcome::of(&g.runs, &g.tree.nodes[five as usize].runs);
    assert_eq!((o.ok, o.error), (1, 1));

    // --ignore makes the amounts one step.
    let gs = groups(d, None, &[Glob::new("tools[*].args.amount")]);
    let p = paths(&gs[0]);
    assert_eq!(p[0].1, 5, "{p:?}");

    // The CLI: text, JSON and Markdown agree; exit 1 (more than one path).
    let ds = d.to_str().unwrap();
    let (code, text, _) = cli(&["--tree", ds]);
    assert_eq!(code, 1);
    assert!(text.contains("all runs · 8 runs · 5 paths · ok 6 · error 2"), "{text}");
    assert!(text.contains("├─ 3/8 runs") && text.contains("└─ 2/8 runs"), "{text}");
    let (_, js, _) = cli(&["--tree", ds, "--format", "json"]);
    let v: Value = serde_json::from_str(&js).unwrap();
    let g = &v["groups"][0];
    assert_eq!(g["runs"], 8);
    assert_eq!(g["paths"].as_array().unwrap().len(), 5);
    assert_eq!(g["paths"][0]["runs"], 3);
    for n in g["nodes"].as_array().unwrap() {
        let below: u64 = n["children"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| g["nodes"][c.as_u64().unwrap() as usize]["runs"].as_u64().unwrap())
            .sum();
        assert_eq!(below + n["ends"].as_u64().unwrap(), n["runs"].as_u64().unwrap());
    }
    let (_, md, _) = cli(&["--tree", ds, "--format", "markdown"]);
    assert!(md.starts_with("## tracetui compare --tree: 8 runs in 1 group"), "{md}");
    assert!(md.contains("| 1 | 3/8 |"), "{md}");
    // One path only: exit 0.
    let one = tmp.path().join("one");
    write_run(&one, "a", &[vec![look()]], false, 1, 100);
    write_run(&one, "b", &[vec![look()]], false, 2, 100);
    assert_eq!(cli(&["--tree", one.to_str().unwrap()]).0, 0);
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(cli(&[]).0, 2);
    assert_eq!(cli(&["--tree"]).0, 2);
    assert_eq!(cli(&["--tree", "no/such/dir"]).0, 2);
    let (code, _, err) = cli(&[
        "--baseline",
        "sample-traces/compare/baseline",
        "--current",
        "sample-traces/compare/rerun-same",
        "--alpha",
        "2",
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(cli(&["--baseline", "sample-traces/compare/baseline"]).0, 2);
}

const CORPUS: &str = "../shared/corpus";

fn corpus(p: &str) -> Option<PathBuf> {
    let path = root().join(CORPUS).join(p);
    if path.exists() {
        Some(path)
    } else {
        eprintln!(
            "SKIP: {} is not here (the shared corpus is test data only)",
            path.display()
        );
        None
    }
}

#[test]
fn inspect_ai_epochs_group_by_sample() {
    let Some(log) = corpus("inspect-ai/generated-0.3.285") else {
        return;
    };
    // 2 samples x 2 epochs: two groups of two runs, each scored C.
    let gs = groups(&log, Some(GroupBy::Sample), &[]);
    assert_eq!(gs.len(), 2);
    for g in &gs {
        assert_eq!(g.runs.len(), 2, "{}", g.key);
        assert!(g.key.contains("sample q"), "{}", g.key);
        let o = tracetui::diff::tree::Outcome::of(&g.runs, &g.tree.root().runs);
        assert_eq!(o.verdicts.get("C"), Some(&2), "{o:?}");
        let ends: usize = g.tree.nodes.iter().map(|n| n.ends.len()).sum();
        assert_eq!(ends, 2);
    }
    // --group-by task is the sample for Inspect too.
    assert_eq!(groups(&log, Some(GroupBy::Task), &[]).len(), 2);
    if let Some(eval) = corpus("inspect-ai/inspect_ai/log_streaming.eval") {
        let gs = groups(&eval, Some(GroupBy::Sample), &[]);
        assert_eq!(gs.len(), 2);
        assert!(gs.iter().all(|g| g.runs.len() == 2));
    }
}

#[test]
fn swe_agent_trajectories_by_task_with_their_exit_status() {
    let Some(dir) = corpus("swe-agent") else { return };
    let loaded = ct::load(std::slice::from_ref(&dir), None, Some(GroupBy::Task), &[]).unwrap();
    let n = loaded.runs.len();
    assert!(n >= 5, "{n}");
    let all = ct::groups(loaded.runs);
    assert_eq!(all.iter().map(|g| g.runs.len()).sum::<usize>(), n);
    // Each trajectory is its own instance; the submitted ones say so.
    let submitted: usize = all
        .iter()
        .map(|g| {
            tracetui::diff::tree::Outcome::of(&g.runs, &g.tree.root().runs)
                .verdicts
                .iter()
                .filter(|(k, _)| k.starts_with("submitted"))
                .map(|(_, v)| v)
                .sum::<usize>()
        })
        .sum();
    assert!(submitted >= 2, "{submitted}");
    // As one set: one tree whose branch counts add up.
    let one = groups(&dir, None, &[]);
    assert_eq!(one.len(), 1);
    let t = &one[0].tree;
    assert_eq!(t.root().runs.len(), n);
    for node in &t.nodes {
        let below: usize = node.children.iter().map(|&c| t.nodes[c as usize].runs.len()).sum();
        assert_eq!(below + node.ends.len(), node.runs.len());
    }
}

// ---- three known paths ----

/// SplitMix64, for drawing paths.
struct Rng(u64);
impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn pick(&mut self, p: &[f64; 3]) -> usize {
        let u = self.unit();
        if u < p[0] {
            0
        } else if u < p[0] + p[1] {
            1
        } else {
            2
        }
    }
}

/// Path 0: lookup, refund. Path 1: policy and lookup in parallel (either order), refund.
/// Path 2: lookup, escalate (the run ends in error). Tokens differ a little per path.
fn write_path(dir: &Path, name: &str, path: usize, salt: u64) {
    let look = tool("lookup", json!({"order": "A-1"}));
    let refund = tool("refund", json!({"order": "A-1", "amount": 10}));
    let policy = tool("policy", json!({"topic": "damage"}));
    match path {
        0 => write_run(dir, name, &[vec![look], vec![refund]], false, salt, 400 + salt % 40),
        1 => {
            let first = if salt.is_multiple_of(2) {
                vec![policy, look]
            } else {
                vec![look, policy]
            };
            write_run(dir, name, &[first, vec![refund]], false, salt, 420 + salt % 40)
        }
        _ => write_run(
            dir,
            name,
            &[vec![look], vec![tool("escalate", json!({"to": "human"}))]],
            true,
            salt,
            440 + salt % 40,
        ),
    }
}

const BASE: [f64; 3] = [0.6, 0.3, 0.1];
const SHIFTED: [f64; 3] = [0.1, 0.3, 0.6];

#[test]
fn thirty_runs_of_three_known_paths() {
    let tmp = tempfile::tempdir().unwrap();
    // Exactly 15 / 9 / 6 runs, the paths interleaved.
    let plan: Vec<usize> = (0..30).map(|i| [0, 1, 0, 2, 0, 1, 0, 1, 0, 2][i % 10]).collect();
    let dir = tmp.path().join("task");
    for (i, &p) in plan.iter().enumerate() {
        write_path(&dir, &format!("run{i:02}"), p, i as u64 + 1);
    }
    let gs = groups(&dir, None, &[]);
    let got = paths(&gs[0]);
    assert_eq!(
        got,
        vec![
            (s(&["llm:gpt-4o", "lookup", "llm:gpt-4o", "refund", "llm:gpt-4o"]), 15),
            (
                s(&["llm:gpt-4o", "lookup", "policy", "llm:gpt-4o", "refund", "llm:gpt-4o"]),
                9
            ),
            (s(&["llm:gpt-4o", "lookup", "llm:gpt-4o", "escalate", "llm:gpt-4o"]), 6),
        ]
    );
    let o = tracetui::diff::tree::Outcome::of(&gs[0].runs, &gs[0].tree.root().runs);
    assert_eq!((o.ok, o.error), (24, 6));
}

/// The three paths loaded once each (two spellings of path 1's parallel order), for drawing
/// sets of RunInfo in the trials.
fn prototypes(tmp: &Path) -> Vec<Vec<RunInfo>> {
    let mut out = Vec::new();
    for p in 0..3 {
        let dir = tmp.join(format!("proto{p}"));
        for salt in 1..=4 {
            write_path(&dir, &format!("v{salt}"), p, salt);
        }
        let loaded = ct::load(&[dir], None, None, &[]).unwrap();
        out.push(loaded.runs.into_iter().map(|(_, r)| r).collect());
    }
    out
}

fn draw(protos: &[Vec<RunInfo>], mix: &[f64; 3], n: usize, rng: &mut Rng) -> Vec<RunInfo> {
    (0..n)
        .map(|i| {
            let p = rng.pick(mix);
            protos[p][i % protos[p].len()].clone()
        })
        .collect()
}

#[test]
fn shifted_mix_is_a_regression_same_mix_is_not_in_95_of_100_trials() {
    let tmp = tempfile::tempdir().unwrap();
    let protos = prototypes(tmp.path());
    let (mut caught, mut quiet) = (0, 0);
    for trial in 0..100u64 {
        let mut rng = Rng(0xC0FFEE + trial);
        let base = draw(&protos, &BASE, 30, &mut rng);
        let same = draw(&protos, &BASE, 30, &mut rng);
        let shifted = draw(&protos, &SHIFTED, 30, &mut rng);
        // 400 resamples instead of 4,000 keeps a debug build quick; the smallest p of a mean
        // (1/401) is still far below what Holm needs at 0.05.
        let cmp = |x: &[RunInfo], y: &[RunInfo]| tracetui::diff::repeated::compare_with(x, y, 0.05, 400).regression;
        caught += cmp(&base, &shifted) as usize;
        quiet += !cmp(&base, &same) as usize;
    }
    eprintln!("shifted caught in {caught}/100, same mix passed in {quiet}/100");
    assert!(caught >= 95, "shifted mix caught in {caught}/100");
    assert!(quiet >= 95, "same mix passed in {quiet}/100");
}

#[test]
fn baseline_current_on_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng(7);
    for (side, mix) in [("base", BASE), ("same", BASE), ("shifted", SHIFTED)] {
        for i in 0..30 {
            let p = rng.pick(&mix);
            write_path(&tmp.path().join(side), &format!("{side}{i:02}"), p, i + 1);
        }
    }
    let d = |s: &str| tmp.path().join(s).to_str().unwrap().to_string();
    let (code, out, _) = cli(&["--baseline", &d("base"), "--current", &d("shifted")]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("REGRESSION: "), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("sequence_change_rate") && l.ends_with("REGRESSION")),
        "{out}"
    );
    let (code, out, _) = cli(&["--baseline", &d("base"), "--current", &d("same")]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("PASSED: no metric significantly worse at alpha 0.05"),
        "{out}"
    );
    let (_, js, _) = cli(&["--baseline", &d("base"), "--current", &d("shifted"), "--format", "json"]);
    let v: Value = serde_json::from_str(&js).unwrap();
    assert_eq!(v["verdict"], "REGRESSION");
    assert_eq!(v["correction"], "holm");
    let m = v["metrics"].as_array().unwrap();
    assert!(
        m.iter()
            .any(|x| x["metric"] == "calls:escalate" && x["decides"] == false)
    );
    // One run on each side: the pair verdict, said on stderr.
    let (code, _, err) = cli(&[
        "--baseline",
        "sample-traces/compare/baseline",
        "--current",
        "sample-traces/compare/rerun-error",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("pair verdict"), "{err}");
    let (code, _, _) = cli(&[
        "--baseline",
        "sample-traces/compare/baseline",
        "--current",
        "sample-traces/compare/rerun-wording",
    ]);
    assert_eq!(code, 0, "OUTPUT_DRIFT is no regression");
}
