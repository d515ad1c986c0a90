//! Every verdict, volatile fields, ignores and a cross-format pair, on tests/fixtures/diff/.

use super::*;
use serde_json::json;
use std::path::PathBuf;

fn fixture(rel: &str) -> Trace {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/diff")
        .join(rel);
    let mut l = crate::formats::load(&p, None).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert_eq!(l.traces.len(), 1, "{rel}");
    l.traces.remove(0)
}

fn snap(name: &str) -> Trace {
    fixture(&format!("agentsnap/{name}"))
}

fn run(a: &Trace, b: &Trace) -> Diff {
    diff(a, b, &Options::default())
}

fn paths(d: &Diff) -> Vec<(String, Option<Value>, Option<Value>)> {
    d.rows
        .iter()
        .flat_map(|r| &r.paths)
        .chain(&d.run)
        .map(|p| (p.path.clone(), p.from.clone(), p.to.clone()))
        .collect()
}

fn ops(d: &Diff) -> Vec<(Op, &str)> {
    d.rows.iter().map(|r| (r.op, r.name.as_str())).collect()
}

#[test]
fn only_volatile_fields_differ_passed() {
    let d = run(&snap("trip.snap.json"), &snap("passed.current.json"));
    assert_eq!(d.verdict, Verdict::Passed, "{:?}", paths(&d));
    assert!(paths(&d).is_empty());
    assert_eq!(d.changes().count(), 0);
    assert_eq!(d.rows.len(), 3);
    assert!(d.notes.is_empty(), "{:?}", d.notes);
}

#[test]
fn strict_compares_the_volatile_fields() {
    let opts = Options {
        strict: true,
        ..Default::default()
    };
    let d = diff(&snap("trip.snap.json"), &snap("passed.current.json"), &opts);
    assert_eq!(d.verdict, Verdict::OutputDrift);
    let p = paths(&d);
    assert!(p.contains(&(
        "tools[2].result.request_id".into(),
        Some(json!("req-a1")),
        Some(json!("req-b7"))
    )));
    assert!(p.contains(&(
        "run.fingerprint.node".into(),
        Some(json!("v20.11.0")),
        Some(json!("v22.3.0"))
    )));
}

#[test]
fn changed_result_hash_and_output_is_drift() {
    let d = run(&snap("trip.snap.json"), &snap("drift.current.json"));
    assert_eq!(d.verdict, Verdict::OutputDrift);
    let p = paths(&d);
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!(p[0].0, "tools[1].result_hash");
    assert_eq!(p[1].0, "run.output");
    assert_eq!(ops(&d)[1], (Op::Changed, "forecast"));
    assert_eq!(d.rows[1].paths[0].section, Section::Output);
}

#[test]
fn swapped_calls_are_reordered() {
    let d = run(&snap("trip.snap.json"), &snap("reordered.current.json"));
    assert_eq!(d.verdict, Verdict::ToolsReordered, "{:?}", ops(&d));
    assert_eq!(d.rows.iter().filter(|r| r.op == Op::Moved).count(), 1);
    assert!(!d.rows.iter().any(|r| matches!(r.op, Op::Added | Op::Removed)));
    assert!(paths(&d).is_empty());
}

#[test]
fn other_arguments_and_an_added_call_change_the_tools() {
    let d = run(&snap("trip.snap.json"), &snap("changed.current.json"));
    assert_eq!(d.verdict, Verdict::ToolsChanged);
    assert_eq!(
        ops(&d),
        vec![
            (Op::Same, "geocode"),
            (Op::Changed, "forecast"),
            (Op::Same, "events"),
            (Op::Added, "restaurants")
        ]
    );
    assert_eq!(
        paths(&d),
        vec![("tools[1].args.days".into(), Some(json!(2)), Some(json!(3)))]
    );
    assert_eq!(d.rows[3].current.unwrap().index, 3);
    assert_eq!(d.rows[3].baseline, None);
    let tools = d.metrics.iter().find(|m| m.name == "tool_calls").unwrap();
    assert_eq!(
        (tools.baseline, tools.current, tools.delta()),
        (Some(3), Some(4), Some(1))
    );
    assert!((tools.pct().unwrap() - 33.333).abs() < 0.01);
}

#[test]
fn ignoring_the_changed_argument_leaves_the_added_call() {
    let opts = Options {
        ignore: vec![Glob::new("tools[*].args.days")],
        ..Default::default()
    };
    let d = diff(&snap("trip.snap.json"), &snap("changed.current.json"), &opts);
    assert!(paths(&d).is_empty());
    assert_eq!(d.verdict, Verdict::ToolsChanged, "the added call still counts");
    let opts = Options {
        ignore: vec![Glob::new("tools[*].result_hash"), Glob::new("run.output")],
        ..Default::default()
    };
    let d = diff(&snap("trip.snap.json"), &snap("drift.current.json"), &opts);
    assert_eq!(d.verdict, Verdict::Passed);
}

#[test]
fn a_new_tool_error_is_a_regression() {
    let d = run(&snap("trip.snap.json"), &snap("regression.current.json"));
    assert_eq!(d.verdict, Verdict::Regression);
    assert_eq!(d.regressions.len(), 1, "{:?}", d.regressions);
    assert!(d.regressions[0].contains("forecast"), "{}", d.regressions[0]);
    assert!(d.regressions[0].contains("TimeoutError: upstream took 30s"));
    // and the reverse, the error going away, is a drift
    let d = run(&snap("regression.current.json"), &snap("trip.snap.json"));
    assert_eq!(d.verdict, Verdict::OutputDrift);
    assert!(paths(&d).iter().any(|p| p.0 == "tools[1].error" && p.2.is_none()));
}

#[test]
fn different_recorders_explain_hash_drift() {
    let d = run(&snap("trip.snap.json"), &snap("python.current.json"));
    assert_eq!(d.verdict, Verdict::OutputDrift);
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("node in the baseline, python in the current run")),
        "{:?}",
        d.notes
    );
    let d = run(&snap("trip.snap.json"), &snap("drift.current.json"));
    assert!(d.notes.is_empty(), "same recorder, no note");
}

#[test]
fn agentdbg_rerun_differs_only_in_ids_clocks_durations_and_usage() {
    let a = fixture("agentdbg/baseline");
    let b = fixture("agentdbg/rerun");
    let d = run(&a, &b);
    assert_eq!(d.verdict, Verdict::Passed, "{:?}", paths(&d));
    assert_eq!(d.rows.len(), 5);
    assert_eq!(d.rows[0].kind, EventKind::LlmCall);
    let tokens = d.metrics.iter().find(|m| m.name == "tokens").unwrap();
    assert_eq!(tokens.delta(), Some(8));
    let dur = d.metrics.iter().find(|m| m.name == "duration").unwrap();
    assert_eq!(dur.delta(), Some(1_037_000_000));
    // --strict sees the result's request id and clock, the LLM usage
    let strict = diff(
        &a,
        &b,
        &Options {
            strict: true,
            ..Default::default()
        },
    );
    assert_eq!(strict.verdict, Verdict::OutputDrift);
    let p: Vec<String> = paths(&strict).into_iter().map(|p| p.0).collect();
    assert!(p.contains(&"tools[1].result.created_at".to_string()), "{p:?}");
    assert!(p.contains(&"tools[2].result.request_id".to_string()), "{p:?}");
    assert!(p.contains(&"llm[0].usage.prompt_tokens".to_string()), "{p:?}");
}

#[test]
fn agentdbg_failing_run_is_a_regression_for_three_reasons() {
    let d = run(&fixture("agentdbg/baseline"), &fixture("agentdbg/failing"));
    assert_eq!(d.verdict, Verdict::Regression);
    let r = d.regressions.join("\n");
    assert!(r.contains("tools[1] forecast fails"), "{r}");
    assert!(r.contains("the run ended in error"), "{r}");
    assert!(r.contains("1 error event(s) \"TimeoutError\""), "{r}");
    let errors = d.metrics.iter().find(|m| m.name == "errors").unwrap();
    // the failing tool and the error event; the run's own status is reported apart
    assert_eq!((errors.baseline, errors.current), (Some(0), Some(2)));
}

#[test]
fn cross_format_compares_the_shared_tool_sequence() {
    let d = run(&snap("trip.snap.json"), &fixture("agentdbg/baseline"));
    assert!(d.cross_format);
    assert_eq!(d.verdict, Verdict::Passed, "{:?}", paths(&d));
    assert_eq!(
        ops(&d),
        vec![(Op::Same, "geocode"), (Op::Same, "forecast"), (Op::Same, "events")],
        "LLM calls are left out"
    );
    assert!(d.notes[0].contains("baseline is agentsnap, current is agentdbg"));
    assert!(
        d.notes[1].starts_with("2 tool result(s) recorded as a hash"),
        "{:?}",
        d.notes
    );

    let d = run(&snap("changed.current.json"), &fixture("agentdbg/baseline"));
    assert_eq!(d.verdict, Verdict::ToolsChanged);
    assert_eq!(
        paths(&d),
        vec![("tools[1].args.days".into(), Some(json!(3)), Some(json!(2)))]
    );

    let d = run(&snap("trip.snap.json"), &fixture("agentdbg/failing"));
    assert_eq!(d.verdict, Verdict::Regression);
    assert!(d.regressions.iter().any(|r| r.contains("forecast fails")));
}

#[test]
fn a_trace_against_itself_passes() {
    for t in [snap("trip.snap.json"), fixture("agentdbg/failing")] {
        let d = diff(
            &t,
            &t,
            &Options {
                strict: true,
                ..Default::default()
            },
        );
        assert_eq!(d.verdict, Verdict::Passed);
        assert!(d.metrics.iter().all(|m| m.delta().is_none_or(|x| x == 0)));
    }
}

#[test]
fn empty_traces_pass() {
    let d = run(&Trace::default(), &Trace::default());
    assert_eq!(d.verdict, Verdict::Passed);
    assert!(d.rows.is_empty());
}

#[test]
fn verdict_names_parse() {
    for v in Verdict::ALL {
        assert_eq!(Verdict::parse(v.as_str()), Some(v));
    }
    assert_eq!(Verdict::parse("tools-changed"), Some(Verdict::ToolsChanged));
    assert_eq!(Verdict::parse("nope"), None);
}

/// Two AgentDbg runs of `n` calls drawn from a few names, with arguments and results that
/// sometimes differ: long enough for Myers to report matches while it works.
fn generated_pair(n: usize) -> (tempfile::TempDir, Trace, Trace) {
    let dir = tempfile::tempdir().unwrap();
    let mut traces = Vec::new();
    for (side, seed) in [("a", 7u64), ("b", 11u64)] {
        let mut x = seed;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let mut lines = vec![
            r#"{"event_id":"r0","run_id":"r1","parent_id":null,"event_type":"RUN_START","ts":"2026-02-15T20:31:00.000Z","name":"run","payload":{"run_name":"run"},"meta":{}}"#.to_string(),
        ];
        for i in 0..n {
            let ty = if next(4) == 0 { "LLM_CALL" } else { "TOOL_CALL" };
            let name = ["search", "fetch", "read", "write", "gpt"][next(5) as usize];
            let payload = if ty == "LLM_CALL" {
                format!(
                    r#"{{"model":"m{}","prompt":"p{}","response":"r{}","usage":{{"total_tokens":{}}}}}"#,
                    next(2),
                    next(3),
                    next(3),
                    i
                )
            } else {
                format!(
                    r#"{{"tool_name":"{name}","args":{{"q":{},"k":"v"}},"result":"{{\"n\":{}}}","status":"{}"}}"#,
                    next(3),
                    next(3),
                    if next(9) == 0 { "error" } else { "ok" }
                )
            };
            lines.push(format!(
                r#"{{"event_id":"{side}{i}","run_id":"r1","parent_id":"r0","event_type":"{ty}","ts":"2026-02-15T20:31:{:02}.{:03}Z","duration_ms":{},"name":"{name}","payload":{payload},"meta":{{}}}}"#,
                (i / 1000) % 60,
                i % 1000,
                next(50)
            ));
        }
        let run = dir.path().join(side);
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
        let mut l = crate::formats::load(&run, None).unwrap();
        traces.push(l.traces.remove(0));
    }
    let b = traces.pop().unwrap();
    let a = traces.pop().unwrap();
    (dir, a, b)
}

#[test]
fn pairs_compared_while_aligning_are_compared_as_afterwards() {
    let (_dir, a, b) = generated_pair(1500);
    let opts = Options::default();
    let ctx = Ctx {
        a: &a,
        b: &b,
        opts: &opts,
        cross: false,
        cancel: None,
    };
    let (ca, cb) = (calls(&a, false), calls(&b, false));
    let (_, early) = ctx.align_comparing(&ca, &cb, Overlap::All).unwrap();
    let mut ra = PayloadReader::new(&a);
    let mut rb = PayloadReader::new(&b);
    let mut checked = 0;
    for (i, e) in early.iter().enumerate() {
        if let Some((j, c)) = e {
            let fresh = ctx.compare_call(call_ref(&ca, i), call_ref(&cb, *j), &mut ra, &mut rb);
            assert_eq!(c, &fresh, "pair {i}, {j}");
            checked += 1;
        }
    }
    assert!(checked > 300, "only {checked} pairs compared early");
}

#[test]
fn overlapping_comparison_with_the_alignment_changes_nothing() {
    let (_dir, a, b) = generated_pair(1500);
    for opts in [
        Options::default(),
        Options {
            strict: true,
            ..Default::default()
        },
    ] {
        let plain = diff_overlapping(&a, &b, &opts, Overlap::Off);
        assert!(plain.rows.iter().any(|r| r.op == Op::Same), "some pairs are unchanged");
        assert!(plain.rows.iter().any(|r| r.op == Op::Changed), "some pairs changed");
        assert!(plain.rows.iter().any(|r| r.op == Op::Added), "the runs differ");
        for overlap in [Overlap::UntilAligned, Overlap::All] {
            let d = diff_overlapping(&a, &b, &opts, overlap);
            assert_eq!(
                format!("{d:?}"),
                format!("{plain:?}"),
                "{overlap:?}, strict {}",
                opts.strict
            );
        }
    }
}

#[test]
fn a_cancelled_diff_gives_up_and_an_uncancelled_one_is_the_plain_diff() {
    let (_dir, a, b) = generated_pair(1500);
    let opts = Options::default();
    let flag = std::sync::atomic::AtomicBool::new(false);
    let d = try_diff(&a, &b, &opts, &flag).expect("not cancelled");
    assert_eq!(format!("{d:?}"), format!("{:?}", diff(&a, &b, &opts)));
    flag.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(try_diff(&a, &b, &opts, &flag).is_none());
    for overlap in [Overlap::Off, Overlap::UntilAligned, Overlap::All] {
        assert!(diff_until(&a, &b, &opts, overlap, Some(&flag)).is_none(), "{overlap:?}");
    }
}

#[test]
fn cancelling_from_another_thread_stops_a_long_diff() {
    let (_dir, a, b) = generated_pair(1500);
    let opts = Options::default();
    let flag = std::sync::atomic::AtomicBool::new(false);
    let t0 = std::time::Instant::now();
    let full = diff(&a, &b, &opts);
    let whole = t0.elapsed();
    assert!(!full.rows.is_empty());
    // Set while the diff runs: it returns None, or a complete diff when it beat the flag.
    let got = std::thread::scope(|s| {
        let h = s.spawn(|| try_diff(&a, &b, &opts, &flag));
        std::thread::sleep(whole / 4);
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
        h.join().unwrap()
    });
    if let Some(d) = got {
        assert_eq!(format!("{d:?}"), format!("{full:?}"));
    }
}

/// The compare table's row made with [`summary_diff`] (only the pairs its verdict and first
/// divergence need) equals the row made from the whole diff, on every pair of fixtures, both
/// ways, plain and strict, and on long generated runs that differ here and there.
#[test]
fn a_table_row_from_the_summary_diff_is_the_row_from_the_whole_diff() {
    use super::compare::RunDelta;
    let prices = crate::cost::Prices::builtin();
    let mut traces = vec![
        snap("trip.snap.json"),
        snap("passed.current.json"),
        snap("drift.current.json"),
        snap("changed.current.json"),
        snap("reordered.current.json"),
        snap("regression.current.json"),
        snap("python.current.json"),
        fixture("agentdbg/baseline"),
        fixture("agentdbg/rerun"),
        fixture("agentdbg/failing"),
    ];
    for name in ["baseline", "rerun-same", "rerun-wording", "rerun-prompt", "rerun-error"] {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("sample-traces/compare")
            .join(name);
        traces.push(crate::formats::load(&p, None).unwrap().traces.remove(0));
    }
    let (dir, ga, gb) = generated_pair(1500);
    // The first run again with one late call's arguments and another's result changed: the
    // first divergence lies past several blocks of unchanged pairs.
    let text = std::fs::read_to_string(dir.path().join("a/events.jsonl")).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let tool_lines: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].contains("\"k\":\"v\"")).collect();
    let (late, later) = (tool_lines[tool_lines.len() - 40], tool_lines[tool_lines.len() - 3]);
    lines[later] = lines[later].replacen("\"k\":\"v\"", "\"k\":\"w\"", 1);
    lines[late] = lines[late].replacen("{\\\"n\\\":", "{\\\"n\\\":1", 1);
    std::fs::create_dir_all(dir.path().join("c")).unwrap();
    std::fs::write(dir.path().join("c/events.jsonl"), lines.join("\n") + "\n").unwrap();
    let gc = crate::formats::load(&dir.path().join("c"), None)
        .unwrap()
        .traces
        .remove(0);
    let strict = Options {
        strict: true,
        ..Default::default()
    };
    let mut verdicts = std::collections::HashSet::new();
    let mut check = |a: &Trace, b: &Trace| {
        for opts in [&Options::default(), &strict] {
            let full = RunDelta::new(&diff(a, b, opts), a, b, prices);
            let quick = RunDelta::compare(a, b, opts, prices, None).expect("not cancelled");
            assert_eq!(
                quick,
                full,
                "{} against {}",
                b.meta.source.display(),
                a.meta.source.display()
            );
            verdicts.insert(full.verdict);
        }
    };
    for a in &traces {
        for b in &traces {
            check(a, b);
        }
    }
    check(&ga, &gb);
    check(&gb, &ga);
    check(&ga, &ga);
    check(&ga, &gc);
    check(&gc, &ga);
    let d = diff(&ga, &gc, &Options::default());
    let first = d.rows.iter().position(|r| r.op != Op::Same).expect("c differs");
    assert!(first > 1000, "the first divergence is late: row {first}");
    assert_eq!(d.verdict, Verdict::ToolsChanged);
    assert_eq!(verdicts.len(), Verdict::ALL.len(), "every verdict met: {verdicts:?}");
    let flag = std::sync::atomic::AtomicBool::new(true);
    assert!(RunDelta::compare(&ga, &gb, &Options::default(), prices, Some(&flag)).is_none());
}
