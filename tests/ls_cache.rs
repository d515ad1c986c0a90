//! `ls`'s summary cache (src/source/cache.rs) as a user meets it: a repeated `ls` lists from
//! it, a session that changed is read again, and nothing is written beside the traces.

use assert_cmd::Command;
use std::path::Path;

const SESSION: &str = "sample-traces/claude-code/7f3c2a10-5b7e-4c1d-9e2f-0a1b2c3d4e5f.jsonl";

fn ls(cache: &Path, dir: &Path, extra_env: &[(&str, &str)]) -> String {
    let mut c = Command::cargo_bin("tracetui").unwrap();
    c.env("TRACETUI_CACHE_DIR", cache).env_remove("TRACETUI_NO_CACHE");
    for (k, v) in extra_env {
        c.env(k, v);
    }
    let out = c
        .args(["ls", "--format", "json"])
        .arg(dir)
        .assert()
        .code(0)
        .get_output()
        .clone();
    String::from_utf8(out.stdout).unwrap()
}

fn names(json: &str) -> Vec<String> {
    json.lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["name"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

/// A trace directory with one Claude Code session, old enough to be cached (a source written
/// in the last two seconds is not).
fn runs() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(SESSION, d.path().join("s1.jsonl")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2100));
    d
}

#[test]
fn a_repeated_ls_lists_from_the_cache_until_the_session_changes() {
    let runs = runs();
    let cache = tempfile::tempdir().unwrap();
    let first = ls(cache.path(), runs.path(), &[]);
    let file = cache.path().join("summaries.jsonl");
    let text = std::fs::read_to_string(&file).expect("the first ls writes the cache");
    assert_eq!(
        ls(cache.path(), runs.path(), &[]),
        first,
        "the same rows from the cache"
    );
    assert_eq!(
        std::fs::read_dir(runs.path()).unwrap().count(),
        1,
        "nothing written beside the traces"
    );

    // The rows do come from the cache: a name changed in it is what ls shows.
    let name = &names(&first)[0];
    assert!(text.contains(&format!("\"name\":{}", serde_json::to_string(name).unwrap())));
    let edited = text.replace(
        &format!("\"name\":{}", serde_json::to_string(name).unwrap()),
        "\"name\":\"from the cache\"",
    );
    std::fs::write(&file, &edited).unwrap();
    assert_eq!(names(&ls(cache.path(), runs.path(), &[])), ["from the cache"]);
    // ... unless the cache is off,
    assert_eq!(
        names(&ls(cache.path(), runs.path(), &[("TRACETUI_NO_CACHE", "1")])),
        vec![name.to_string()]
    );
    // ... or it was written by another build,
    std::fs::write(
        &file,
        edited.replacen("tracetui_summary_cache\":\"", "tracetui_summary_cache\":\"x", 1),
    )
    .unwrap();
    assert_eq!(names(&ls(cache.path(), runs.path(), &[])), vec![name.to_string()]);
    std::fs::write(&file, &edited).unwrap();
    // ... or the session was written since: its new line is counted.
    let before: serde_json::Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(runs.path().join("s1.jsonl"))
        .unwrap();
    let last = std::fs::read_to_string(SESSION)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .replace("\"uuid\": \"", "\"uuid\": \"x")
        // A new response (the same one again is a record written twice: read once).
        .replace("\"id\": \"msg_", "\"id\": \"msg_x");
    std::io::Write::write_all(&mut f, format!("{last}\n").as_bytes()).unwrap();
    drop(f);
    let after: serde_json::Value =
        serde_json::from_str(ls(cache.path(), runs.path(), &[]).lines().next().unwrap()).unwrap();
    assert_eq!(after["name"], before["name"]);
    assert!(
        after["events"].as_u64() > before["events"].as_u64(),
        "{after} after {before}"
    );
}

#[test]
fn a_damaged_cache_is_ignored_and_replaced() {
    let runs = runs();
    let cache = tempfile::tempdir().unwrap();
    let fresh = ls(cache.path(), runs.path(), &[("TRACETUI_NO_CACHE", "1")]);
    let file = cache.path().join("summaries.jsonl");
    assert!(!file.exists(), "no cache written when it is off");
    std::fs::write(&file, b"\x00\xffnot json\n{\"path\":1}\n").unwrap();
    assert_eq!(ls(cache.path(), runs.path(), &[]), fresh);
    assert!(
        std::fs::read(&file)
            .unwrap()
            .starts_with(b"{\"tracetui_summary_cache\"")
    );
    assert_eq!(ls(cache.path(), runs.path(), &[]), fresh);
}

#[test]
fn an_unwritable_cache_directory_changes_nothing() {
    let runs = runs();
    let cache = tempfile::tempdir().unwrap();
    // A file where the cache directory should be.
    let not_dir = cache.path().join("file");
    std::fs::write(&not_dir, "x").unwrap();
    let fresh = ls(cache.path(), runs.path(), &[("TRACETUI_NO_CACHE", "1")]);
    assert_eq!(ls(&not_dir, runs.path(), &[]), fresh);
}
