//! The shipped samples' costs, checked by hand against the makers' published prices (dollars
//! per million tokens, as the embedded list has them):
//! - Claude Sonnet 4.5 / Sonnet 4.6: $3 in, $15 out, $0.30 cache read, $3.75 cache write
//!   (Anthropic's pricing page; 4.6 through GitHub Copilot is listed at the same prices);
//! - Claude Haiku 4.5: $1 in, $5 out, $0.10 cache read, $1.25 cache write;
//! - GPT-5-Codex (as GPT-5): $1.25 in, $10 out, $0.125 cached input; reasoning is output;
//! - Gemini 2.5 Pro (prompts up to 200k): $1.25 in, $10 out (thinking included), $0.125 cached;
//! - GPT-4.1 mini: $0.40 in, $1.60 out; GPT-4o: $2.50 in, $10 out.
//!
//! A token at $P per million costs P microdollars, so each figure below is tokens x P; a
//! call's cost is rounded to the microdollar (half up) before the run adds its calls.

use std::path::{Path, PathBuf};
use tracetui::cost::Prices;
use tracetui::cost::usage::{RunCost, run_cost};

fn sample(rel: &str) -> Vec<(String, RunCost)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces").join(rel);
    let d = tracetui::source::discover(&[PathBuf::from(&path)], None);
    assert!(d.errors.is_empty(), "{rel}: {:?}", d.errors);
    let mut out = Vec::new();
    for (_, res) in tracetui::source::load_all(&d.runs) {
        for t in res.unwrap_or_else(|e| panic!("{rel}: {e}")).traces {
            out.push((t.meta.id.clone(), run_cost(&t, Prices::builtin())));
        }
    }
    assert!(!out.is_empty(), "{rel}: no run");
    out
}

fn one(rel: &str) -> RunCost {
    let mut v = sample(rel);
    assert_eq!(v.len(), 1, "{rel}: one run");
    v.remove(0).1
}

#[test]
fn claude_code_two_models() {
    let rc = one("claude-code");
    // Sonnet 4.5, seven calls: 18,432 in x 3 = 55,296; 7,200 cache read x 0.30 = 2,160;
    // 838 out x 15 = 12,570; = 70,026. Haiku 4.5, two calls: 720 in x 1 = 720; 2,400 cache
    // read x 0.10 = 240; 95 out x 5 = 475; = 1,435. Run: 71,461 = $0.071461.
    assert_eq!((rc.total.micros, rc.total.unknown), (71_461, 0));
    let by: Vec<(&str, u64)> = rc.by_model.iter().map(|(m, t)| (m.as_str(), t.micros)).collect();
    assert_eq!(by, [("claude-sonnet-4-5", 70_026), ("claude-haiku-4-5", 1_435)]);
}

#[test]
fn codex_cached_input_and_reasoning() {
    let rc = one("codex");
    // Seven calls, input (cache taken out) = cache read: 2,600 / 2,800 / 2,950 / 3,150 /
    // 3,350 / 3,475 / 3,550; output+reasoning 160 / 210 / 120 / 60 / 190 / 70 / 40 (all at $10).
    // Call by call, x1.25 + x0.125 + x10: 5,175; 5,950; 5,256.25 → 5,256; 4,931.25 → 4,931;
    // 6,506.25 → 6,506; 5,478.125 → 5,478; 5,281.25 → 5,281. Sum 38,577 = $0.038577.
    assert_eq!((rc.total.micros, rc.total.unknown), (38_577, 0));
    assert_eq!((rc.total.tokens.input, rc.total.tokens.cache_read), (21_875, 21_875));
    assert_eq!((rc.total.tokens.output, rc.total.tokens.reasoning), (568, 282));
}

#[test]
fn gemini_cli_cache_and_thoughts() {
    let rc = one("gemini-cli/chats/session-2026-06-10T08-30-9c1d2e3f.jsonl");
    // 6,120 in x 1.25 + (48 out + 96 thoughts) x 10 = 7,650 + 1,440 = 9,090;
    // 890 x 1.25 + 6,000 cached x 0.125 + 131 x 10 = 1,112.5 + 750 + 1,310 = 3,172.5 → 3,173;
    // 500 x 1.25 + 6,800 x 0.125 + 40 x 10 = 625 + 850 + 400 = 1,875;
    // 420 x 1.25 + 7,000 x 0.125 + 33 x 10 = 525 + 875 + 330 = 1,730. Sum 15,868.
    assert_eq!((rc.total.micros, rc.total.unknown), (15_868, 0));
}

#[test]
fn openhands_litellm_usage() {
    let rc = one("openhands");
    // Sonnet 4.5: (2,100 + 2,300 + 2,500) in x 3 = 20,700; (40 + 95 + 30) out x 15 = 2,475.
    assert_eq!((rc.total.micros, rc.total.unknown), (23_175, 0));
}

#[test]
fn otlp_genai_spans() {
    let rc = one("otlp/genai-trace.json");
    // GPT-4.1 mini (one span names the dated model, the list has it too):
    // 412 x 0.4 + 38 x 1.6 = 164.8 + 60.8 = 225.6 → 226; 503 x 0.4 + 29 x 1.6 = 247.6 → 248;
    // 560 x 0.4 + 61 x 1.6 = 321.6 → 322. Sum 796.
    assert_eq!((rc.total.micros, rc.total.unknown), (796, 0));
}

#[test]
fn agentdbg_gpt_4o() {
    let rc = one("runs/agentdbg-refund-ok");
    // 412 x 2.5 + 38 x 10 = 1,410; 530 x 2.5 + 41 x 10 = 1,735. Sum 3,145.
    assert_eq!((rc.total.micros, rc.total.unknown), (3_145, 0));
}

#[test]
fn copilot_cli_session_totals() {
    let rc = one("copilot-cli");
    // The replies carry output tokens only; the shutdown's totals (11,100 new input, 30,100
    // cache read, 175 out) at Sonnet 4.6's prices: 33,300 + 9,030 + 2,625 = 44,955.
    assert_eq!((rc.total.micros, rc.total.unknown), (44_955, 0));
    assert_eq!(rc.total.total_tokens, 11_100 + 30_100 + 175);
}

/// A sample copied into a temporary directory with `edit` applied to `file` (relative to it).
fn edited(rel: &str, file: &str, edit: impl Fn(String) -> String) -> (tempfile::TempDir, PathBuf) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces").join(rel);
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join(src.file_name().unwrap());
    if src.is_dir() {
        std::fs::create_dir_all(&dst).unwrap();
        for e in std::fs::read_dir(&src).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    } else {
        std::fs::copy(&src, &dst).unwrap();
    }
    let target = if file.is_empty() { dst.clone() } else { dst.join(file) };
    let text = std::fs::read_to_string(&target).unwrap();
    let changed = edit(text.clone());
    assert_ne!(changed, text, "{rel}: the edit changed nothing");
    std::fs::write(&target, changed).unwrap();
    (dir, dst)
}

fn one_at(path: &Path) -> RunCost {
    let d = tracetui::source::discover(&[path.to_path_buf()], None);
    let mut runs = tracetui::source::load_all(&d.runs);
    assert_eq!(runs.len(), 1);
    let t = runs.remove(0).1.unwrap().traces.remove(0);
    run_cost(&t, Prices::builtin())
}

#[test]
fn recorded_costs_win() {
    // The samples' recorded costs equal the computed ones (`stats --check-costs` lists none),
    // so the recorder's figures are changed in copies to tell the two apart.
    // SWE-agent's model_stats.instance_cost ($0.03354, as computed), made $0.031.
    let (_d, p) = edited("swe-agent/stats-mean-empty.traj", "", |s| {
        s.replace("\"instance_cost\": 0.03354", "\"instance_cost\": 0.031")
    });
    assert_eq!(one_at(&p).total.micros, 31_000);
    // Cline's api_req_started costs, as written: the first of them made $0.0168 (computed
    // $0.016731); the run is the five costs added.
    let (_d, p) = edited("cline/tasks/1767225600000", "ui_messages.json", |s| {
        s.replace("cost\\\": 0.016731}", "cost\\\": 0.0168}")
    });
    let cline = one_at(&p);
    assert_eq!(
        (cline.total.micros, cline.total.unknown),
        (16_800 + 3_807 + 2_667 + 2_802 + 3_087, 0)
    );
}

#[test]
fn unknown_models_are_unknown_not_free() {
    // Inspect's mock model is in no price list: its calls are unknown, the cost is `?`.
    for (_, rc) in sample("inspect-ai/agentic.json") {
        assert_eq!((rc.total.micros, rc.total.unknown), (0, 3));
        assert_eq!(rc.total.cost_text(), "?");
    }
}

/// `check` and `show` print the same tokens by kind and cost as `cost::usage` computes.
#[test]
fn check_and_show_json_carry_tokens_by_kind_and_cost() {
    let cfg = tempfile::tempdir().unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/claude-code");
    let run = |args: &[&str]| -> serde_json::Value {
        let out = assert_cmd::Command::cargo_bin("tracetui")
            .unwrap()
            .env("XDG_CONFIG_HOME", cfg.path())
            .env("HOME", cfg.path())
            .args(args)
            .arg(&path)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        serde_json::from_str(text.lines().next().unwrap()).unwrap()
    };
    let want_kinds = serde_json::json!({"input": 19_152, "cache_read": 9_600, "cache_write": 0,
        "output": 933, "reasoning": 0, "total": 29_685});
    let check = run(&["check", "--format", "json"]);
    assert_eq!(check["tokens_by_kind"], want_kinds);
    assert_eq!(check["tokens"], 29_685, "the run's total agrees with its kinds");
    assert_eq!(check["cost_usd_micros"], 71_461);
    assert_eq!(check["cost_unknown_calls"], 0);
    assert_eq!(check["cost_by_model"][0]["model"], "claude-sonnet-4-5");
    assert_eq!(check["cost_by_model"][0]["cost_usd_micros"], 70_026);
    let show = run(&["show", "--format", "json"]);
    assert_eq!(show["trace"]["tokens_by_kind"], want_kinds);
    assert_eq!(show["trace"]["cost_usd_micros"], 71_461);
}

/// A fixture of a format, loaded (one run).
fn fixture_run(format: &str, path: &Path) -> tracetui::model::Trace {
    let mut l = tracetui::formats::by_id(format).unwrap().load(path).unwrap();
    assert_eq!(l.traces.len(), 1, "{}", path.display());
    l.traces.remove(0)
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// SWE-agent's run totals only (`model_stats`): the run's tokens, its recorded $0.02 and its
/// three calls.
#[test]
fn swe_agent_run_totals_and_recorded_cost() {
    let t = fixture_run("swe-agent", &fixtures().join("swe-agent/fix-typo.traj"));
    let rc = run_cost(&t, Prices::builtin());
    assert_eq!((rc.total.tokens.input, rc.total.tokens.output), (1200, 90));
    assert_eq!((rc.total.micros, rc.total.unknown, rc.total.calls), (20_000, 0, 3));
}

/// Claude Code's `costUSD` is its call's cost and wins over the price; a call without one is
/// priced.
#[test]
fn claude_code_recorded_cost_usd_wins_over_the_price() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("c.jsonl");
    let line = |uuid: &str, parent: &str, msg: &str, usage: &str, cost: &str| {
        format!(
            r#"{{"parentUuid":{parent},"isSidechain":false,"sessionId":"s1","type":"assistant","uuid":"{uuid}","timestamp":"2026-03-01T10:00:0{}.000Z","message":{{"model":"claude-sonnet-4-5-20250929","id":"{msg}","role":"assistant","content":[{{"type":"text","text":"hi"}}],"usage":{usage}}}{cost}}}"#,
            uuid.len()
        )
    };
    let usage =
        r#"{"input_tokens":3,"cache_creation_input_tokens":2000,"cache_read_input_tokens":10000,"output_tokens":500}"#;
    let src = [
        line("a", "null", "m1", usage, r#","costUSD":0.0123"#),
        line("bb", "\"a\"", "m2", usage, ""),
    ]
    .join("\n");
    std::fs::write(&path, src + "\n").unwrap();
    let t = fixture_run("claude-code", &path);
    // m2 priced: 3 x $3 + 2,000 x $3.75 + 10,000 x $0.30 + 500 x $15 per million
    // = 9 + 7,500 + 3,000 + 7,500 = 18,009 microdollars; m1 as recorded.
    let rc = run_cost(&t, Prices::builtin());
    assert_eq!((rc.total.micros, rc.total.unknown), (12_300 + 18_009, 0));
}

/// Gemini CLI's models (2.5 Pro, 2.5 Flash) are priced.
#[test]
fn gemini_cli_models_are_priced() {
    let t = fixture_run(
        "gemini-cli",
        &fixtures().join("gemini-cli/chats/session-2026-05-02T09-15-1a2b3c4d.jsonl"),
    );
    let rc = run_cost(&t, Prices::builtin());
    assert!(rc.total.calls > 0 && rc.total.micros > 0);
    assert_eq!(rc.total.unknown, 0, "every Gemini model of the fixture is priced");
}

/// Copilot CLI's shutdown totals equal to its calls' sum: the calls are priced, once (not the
/// calls plus the totals); totals above the calls' are the run's.
#[test]
fn copilot_cli_shutdown_totals_are_not_counted_twice() {
    let session = fixtures().join("copilot-cli/session-state/7c1e5a90-0000-4000-8000-000000000102/events.jsonl");
    let text = std::fs::read_to_string(session).unwrap();
    let shutdown = |input: u64, output: u64| {
        format!(
            r#"{{"type":"session.shutdown","data":{{"shutdownType":"routine","modelMetrics":{{"claude-sonnet-4.5":{{"requests":{{"count":3,"cost":0}},"usage":{{"inputTokens":{input},"outputTokens":{output},"cacheReadTokens":12192,"cacheWriteTokens":0}}}}}}}},"id":"z1","timestamp":"2026-11-28T09:00:06Z","parentId":null}}"#
        )
    };
    let d = tempfile::tempdir().unwrap();
    let run = |name: &str, last: &str| {
        let dir = d.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("events.jsonl");
        std::fs::write(&p, format!("{}\n{last}\n", text.trim_end())).unwrap();
        run_cost(&fixture_run("copilot-cli", &p), Prices::builtin())
    };
    let calls = (5000 + 60) + (5400 + 45) + (5500 + 30);
    let same = run("same", &shutdown(5000 + 5400 + 5500, 60 + 45 + 30));
    assert_eq!(
        same.total.total_tokens, calls,
        "priced per call, not per call plus totals"
    );
    let more = run("more", &shutdown(30_000, 500));
    assert_eq!(more.total.total_tokens, 30_500);
}

/// `stats --check-costs` of the samples: every recorded cost is the computed one, and the
/// Roo Code and Kilo Code tasks, whose calls name no model, are not compared (their computed
/// cost would be a part passed off as the whole).
#[test]
fn check_costs_of_the_samples() {
    let cfg = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = assert_cmd::Command::cargo_bin("tracetui")
            .unwrap()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("TRACETUI_CACHE_DIR", cfg.path())
            .env("XDG_CONFIG_HOME", cfg.path())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run(&["stats", "--check-costs", "sample-traces/"]);
    let first = text.lines().next().unwrap();
    assert!(
        first.ends_with("2 not compared (calls tracetui cannot price); 0 beyond rounding"),
        "{text}"
    );
    assert!(text.contains("(roo-code, sample-traces/roo-code/"), "{text}");
    assert!(text.contains("(kilo-code, sample-traces/kilo-code/"), "{text}");
    assert!(text.contains("5 calls of unknown cost: no model named"), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&run(&["stats", "--check-costs", "sample-traces/", "--format", "json"])).unwrap();
    assert_eq!(v["differ"], 0);
    assert_eq!(v["not_compared"].as_array().unwrap().len(), 2);

    // A recorded cost changed in a copy is listed, with the difference.
    let (d, _) = edited("swe-agent/stats-mean-empty.traj", "", |s| {
        s.replace("\"instance_cost\": 0.03354", "\"instance_cost\": 0.031")
    });
    let text = run(&["stats", "--check-costs", d.path().to_str().unwrap()]);
    assert!(
        text.starts_with("1 run with a cost the recorder wrote; 1 beyond rounding:"),
        "{text}"
    );
    assert!(
        text.contains("recorded $0.0310  computed $0.0335  difference -$0.002540 (-7.57%)"),
        "{text}"
    );
}
