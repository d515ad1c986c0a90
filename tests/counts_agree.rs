//! One definition of each count (issue 17): for every sample trace, the runs list (once its
//! runs are loaded), `ls`, `show`, `check` and `stats` agree on events, tool calls, LLM
//! calls, errors, tokens and cost; `ls --fast` shows the same counts or marks them provisional.

mod common;

use assert_cmd::Command;
use serde_json::Value;
use std::collections::BTreeMap;
use tracetui::tui::action::Action;
use tracetui::tui::state::{Effect, View};

/// (source path, run id) → [events, tool calls, LLM calls, errors, tokens]; a source may hold
/// several runs with one id, so each key holds a sorted list.
type Counts = BTreeMap<(String, String), Vec<[u64; 5]>>;
/// (source path, run id) → (cost in microdollars, calls of unknown cost).
type Costs = BTreeMap<(String, String), Vec<(u64, u64)>>;

const SAMPLES: &str = "sample-traces";

fn cli(args: &[&str], config: &std::path::Path) -> Vec<Value> {
    // A config dir of our own: the user's price overrides must not change the figures.
    let out = Command::cargo_bin("tracetui")
        .unwrap()
        .args(args)
        .env("XDG_CONFIG_HOME", config)
        .env("HOME", config)
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "{args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON lines"))
        .collect()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("a count, not {v}"))
}

fn put<T: Ord>(m: &mut BTreeMap<(String, String), Vec<T>>, path: &str, id: &str, x: T) {
    let list = m.entry((path.to_string(), id.to_string())).or_default();
    list.push(x);
    list.sort();
}

/// What loading each sample in this process says: the reference.
fn expected() -> (Counts, Costs, Vec<tracetui::source::RunRef>) {
    let d = tracetui::source::discover(&[SAMPLES.into()], None);
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    let mut counts = Counts::new();
    let mut costs = Costs::new();
    for (_, res) in tracetui::source::load_all(&d.runs) {
        for t in res.expect("every sample loads").traces {
            let c = t.counts();
            let rc = tracetui::cost::usage::run_cost(&t, tracetui::cost::Prices::builtin());
            let path = t.meta.source.display().to_string();
            put(
                &mut counts,
                &path,
                &t.meta.id,
                [
                    c.events as u64,
                    c.tool_calls as u64,
                    c.llm_calls as u64,
                    c.errors as u64,
                    c.tokens,
                ],
            );
            put(&mut costs, &path, &t.meta.id, (rc.total.micros, rc.total.unknown));
        }
    }
    (counts, costs, d.runs)
}

fn counts_of(v: &Value) -> [u64; 5] {
    [
        u(&v["events"]),
        u(&v["tool_calls"]),
        u(&v["llm_calls"]),
        u(&v["errors"]),
        u(&v["tokens"]),
    ]
}

#[test]
fn every_view_agrees_on_every_count_of_every_sample() {
    let (want, want_cost, runs) = expected();
    assert!(
        want.values().map(Vec::len).sum::<usize>() >= 30,
        "the samples hold many runs"
    );
    let cfg = tempfile::tempdir().unwrap();

    // check
    let mut got = Counts::new();
    for v in cli(&["check", "--format", "json", SAMPLES], cfg.path()) {
        if v.get("trace").is_some() {
            put(
                &mut got,
                v["path"].as_str().unwrap(),
                v["trace"].as_str().unwrap(),
                counts_of(&v),
            );
        }
    }
    assert_eq!(got, want, "check");

    // show, source by source
    let mut got = Counts::new();
    for r in &runs {
        for v in cli(&["show", "--format", "json", &r.path.display().to_string()], cfg.path()) {
            let t = &v["trace"];
            let c = &v["counts"];
            put(
                &mut got,
                t["source"].as_str().unwrap(),
                t["id"].as_str().unwrap(),
                counts_of(c),
            );
        }
    }
    assert_eq!(got, want, "show");

    // stats --by run: counts, tokens and cost of each run
    let mut got = Counts::new();
    let mut got_cost = Costs::new();
    let stats = cli(&["stats", "--by", "run", "--format", "json", SAMPLES], cfg.path());
    for g in stats[0]["groups"].as_array().unwrap() {
        let (path, id) = (g["path"].as_str().unwrap(), g["key"].as_str().unwrap());
        put(&mut got, path, id, counts_of(g));
        put(
            &mut got_cost,
            path,
            id,
            (g["cost_micros"].as_u64().unwrap_or(0), u(&g["cost_unknown_calls"])),
        );
    }
    assert_eq!(got, want, "stats");
    assert_eq!(got_cost, want_cost, "stats cost");
    let total: u64 = want.values().flatten().map(|c| c[4]).sum();
    assert_eq!(u(&stats[0]["total"]["tokens"]), total, "stats total tokens");

    // ls: the loaded counts, tokens and cost (`--load`, what it did before it was the default,
    // says the same)
    let mut got = Counts::new();
    let mut got_cost = Costs::new();
    let listed = cli(&["ls", "--format", "json", SAMPLES], cfg.path());
    assert_eq!(listed, cli(&["ls", "--load", "--format", "json", SAMPLES], cfg.path()));
    for v in listed {
        assert_eq!(v["provisional"], false, "{v}");
        let (path, id) = (v["path"].as_str().unwrap(), v["id"].as_str().unwrap());
        put(&mut got, path, id, counts_of(&v));
        let us = &v["usage"];
        put(
            &mut got_cost,
            path,
            id,
            (us["cost_micros"].as_u64().unwrap_or(0), u(&us["cost_unknown_calls"])),
        );
    }
    assert_eq!(got, want, "ls");
    assert_eq!(got_cost, want_cost, "ls cost");

    // ls --fast (no summary cache: it would hold the loaded ones by now): a row's counts are
    // the loaded ones, or marked provisional (run.json's own counts).
    let mut provisional = 0;
    let fast = Command::cargo_bin("tracetui")
        .unwrap()
        .args(["ls", "--fast", "--format", "json", SAMPLES])
        .env("XDG_CONFIG_HOME", cfg.path())
        .env("HOME", cfg.path())
        .env("TRACETUI_NO_CACHE", "1")
        .output()
        .unwrap();
    let fast: Vec<Value> = String::from_utf8_lossy(&fast.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON lines"))
        .collect();
    for v in fast {
        let key = (
            v["path"].as_str().unwrap().to_string(),
            v["id"].as_str().unwrap().to_string(),
        );
        if v["provisional"] == true {
            provisional += 1;
            assert!(v.get("usage").is_none(), "no cost from metadata: {v}");
            continue;
        }
        assert!(want[&key].contains(&counts_of(&v)), "ls {key:?}: {v}");
    }
    assert!(provisional > 0, "finished AgentDbg runs are listed from run.json");

    // The runs list: every row once `$` has loaded the listed runs.
    let mut s = common::listed(&[SAMPLES.into()], (200, 60));
    assert!(
        s.runs.entries.iter().any(|e| e.summary.provisional()),
        "some rows start from metadata"
    );
    common::press(&mut s, &["$"]);
    assert_eq!(s.view, View::Stats);
    let job = s
        .effects
        .drain(..)
        .find_map(|e| match e {
            Effect::Stats(j) => Some(j),
            _ => None,
        })
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Action>();
    tracetui::tui::stats::spawn(job, tx);
    while s.stats.as_ref().is_some_and(|v| v.loading()) {
        let a = rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap();
        tracetui::tui::update::update(&mut s, a);
    }
    assert!(s.stats.as_ref().unwrap().failed.is_empty());
    let mut got = Counts::new();
    let mut got_cost = Costs::new();
    for e in &s.runs.entries {
        let sm = &e.summary;
        assert!(!sm.provisional(), "{} is loaded", sm.id);
        let path = sm.path.display().to_string();
        let n = |x: Option<usize>| x.unwrap() as u64;
        put(
            &mut got,
            &path,
            &sm.id,
            [
                n(sm.events),
                n(sm.tool_calls),
                n(sm.llm_calls),
                n(sm.errors),
                sm.tokens.unwrap(),
            ],
        );
        let c = sm.cost.as_ref().unwrap();
        put(&mut got_cost, &path, &sm.id, (c.micros, c.unknown));
    }
    assert_eq!(got, want, "runs list");
    assert_eq!(got_cost, want_cost, "runs list cost");
    // And the screen shows them: the invoice run's loaded ERR 2 and 322 tokens, no `~`.
    common::press(&mut s, &["esc"]);
    common::press(&mut s, &["/"]);
    common::typed(&mut s, "invoice-mailer");
    common::press(&mut s, &["enter"]);
    let screen = common::screen(&s, 200, 16);
    let row = screen
        .lines()
        .find(|l| l.contains("invoice-mailer") && l.contains("agentdbg"))
        .unwrap_or_else(|| panic!("{screen}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert!(
        cells.windows(5).any(|w| w == ["2", "1", "2", "322", "$0.001254"]),
        "{row}"
    );
    assert!(!row.contains('~'), "{row}");
}

/// A Codex run and its sub-agent's rollout, listed together (issue 35): one run in every view,
/// the sub-agent's calls and tokens counted in it, never a second row.
#[test]
fn a_sub_agent_read_into_its_parent_is_one_run_in_every_view() {
    let dir = "tests/fixtures/codex/nested";
    let d = tracetui::source::discover(&[dir.into()], None);
    assert_eq!(d.runs.len(), 1, "{:?}", d.runs);
    let loaded = tracetui::source::load_all(&d.runs);
    let t = &loaded[0].1.as_ref().unwrap().traces[0];
    let c = t.counts();
    let want = [
        c.events as u64,
        c.tool_calls as u64,
        c.llm_calls as u64,
        c.errors as u64,
        c.tokens,
    ];
    assert_eq!(want[1], 5, "the parent's 4 calls and the sub-agent's");
    let cfg = tempfile::tempdir().unwrap();
    let check = cli(&["check", "--format", "json", dir], cfg.path());
    let rows: Vec<&Value> = check.iter().filter(|v| v.get("trace").is_some()).collect();
    assert_eq!(rows.len(), 1, "check: {check:?}");
    assert_eq!(counts_of(rows[0]), want, "check");
    let show = cli(&["show", "--format", "json", dir], cfg.path());
    assert_eq!(show.len(), 1, "show");
    assert_eq!(counts_of(&show[0]["counts"]), want, "show");
    let stats = cli(&["stats", "--by", "run", "--format", "json", dir], cfg.path());
    let groups = stats[0]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "stats");
    assert_eq!(counts_of(&groups[0]), want, "stats");
    for args in [
        &["ls", "--load", "--format", "json", dir][..],
        &["ls", "--format", "json", dir][..],
    ] {
        let ls = cli(args, cfg.path());
        assert_eq!(ls.len(), 1, "{args:?}");
        assert_eq!(counts_of(&ls[0]), want, "{args:?}");
    }
    let mut s = common::listed(&[dir.into()], (200, 60));
    assert_eq!(s.runs.entries.len(), 1, "runs list");
    let sm = &s.runs.entries[0].summary;
    assert_eq!(sm.tool_calls, Some(5));
    assert_eq!(sm.tokens, Some(want[4]));
    let (_, opened) = common::enter_and_load(&mut s);
    assert_eq!(opened.unwrap().counts().tool_calls, 5, "the explorer opens it nested");
}
