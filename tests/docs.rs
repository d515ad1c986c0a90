//! Docs that cannot drift. Four checks of README.md and docs/*.md against the program:
//! - every example runs, and prints what the doc says (below);
//! - the key tables of docs/explorer.md are the default keymap, src/tui/keymap.toml;
//! - every command of `tracetui --help` has a section in docs/commands.md that names each
//!   option of its `--help`;
//! - every relative link finds its file and heading.
//!
//! Examples: a fenced block whose info string is `console` holds examples: each line starting with
//! `$ ` is a command, the lines after it (up to the next `$ ` or the end of the block) are
//! what it prints on standard output. A line of just `...` in the expected output stands for
//! any number of lines (zero or more), so a long output can be shown in part. A command
//! exits 0 unless its line ends with a comment `# exits N`. Commands run through `sh -c` from
//! the repository root (so `sample-traces/...` paths and globs work as written), with the
//! built `tracetui` first on PATH and a fixed environment: TZ=UTC, NO_COLOR=1, HOME,
//! XDG_* and TRACETUI_CACHE_DIR in an empty temporary directory (no user config, no cache
//! shared with other runs), standard input empty. Trailing whitespace on each line and
//! trailing empty lines are not compared.
//!
//! When an output changes, this test fails and prints the block's file and line with the
//! expected and the actual output: change the doc with the program.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

struct Example {
    file: String,
    line: usize,
    command: String,
    exit: i32,
    expected: Vec<String>,
}

fn doc_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    let mut stack = vec![root.join("docs")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The examples of one Markdown text.
fn examples(file: &str, text: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        let ticks = trimmed.chars().take_while(|&c| c == '`').count();
        if ticks < 3 {
            i += 1;
            continue;
        }
        let info = trimmed[ticks..].trim();
        let fence = &trimmed[..ticks];
        // The end of this block: a line of at least as many backticks and nothing else.
        let mut end = i + 1;
        while end < lines.len() {
            let t = lines[end].trim();
            if t.starts_with(fence) && t.chars().all(|c| c == '`') {
                break;
            }
            end += 1;
        }
        if info.split_whitespace().next() == Some("console") {
            let mut current: Option<Example> = None;
            for (k, body) in lines.iter().enumerate().take(end).skip(i + 1) {
                if let Some(cmd) = body.strip_prefix("$ ") {
                    out.extend(current.take());
                    let (command, exit) = match cmd.rsplit_once("# exits ") {
                        Some((c, n)) => (c.trim_end().to_string(), n.trim().parse().unwrap_or(-1)),
                        None => (cmd.trim_end().to_string(), 0),
                    };
                    current = Some(Example {
                        file: file.to_string(),
                        line: k + 1,
                        command,
                        exit,
                        expected: Vec::new(),
                    });
                } else if let Some(ex) = current.as_mut() {
                    ex.expected.push(body.to_string());
                } else {
                    panic!("{file}:{}: a console block must start with a `$ ` command line", k + 1);
                }
            }
            out.extend(current);
        }
        i = end + 1;
    }
    out
}

fn normalize(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(|l| l.trim_end().to_string()).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// Whether `actual` matches `expected`, where a `...` line matches any run of lines.
fn matches(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => (0..=actual.len()).any(|skip| matches(rest, &actual[skip..])),
        Some((first, rest)) => actual.first().is_some_and(|a| a == first) && matches(rest, &actual[1..]),
    }
}

fn run(example: &Example, root: &Path, bin_dir: &Path, tmp: &Path) -> Result<(), String> {
    let home = tmp.join("home");
    for dir in ["home", "cache", "config", "data", "xdg-cache", "tmp"] {
        fs::create_dir_all(tmp.join(dir)).unwrap();
    }
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin_dir.display());
    let output = Command::new("sh")
        .arg("-c")
        .arg(&example.command)
        .current_dir(root)
        .env_clear()
        .env("PATH", path)
        .env("HOME", &home)
        .env("TZ", "UTC")
        .env("NO_COLOR", "1")
        .env("LANG", "C.UTF-8")
        .env("TRACETUI_CACHE_DIR", tmp.join("cache"))
        .env("XDG_CONFIG_HOME", tmp.join("config"))
        .env("XDG_DATA_HOME", tmp.join("data"))
        .env("XDG_CACHE_HOME", tmp.join("xdg-cache"))
        .env("TMPDIR", tmp.join("tmp"))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run sh: {e}"))?;
    let actual = normalize(&String::from_utf8_lossy(&output.stdout));
    let expected: Vec<String> = {
        let mut e: Vec<String> = example.expected.iter().map(|l| l.trim_end().to_string()).collect();
        while e.last().is_some_and(|l| l.is_empty()) {
            e.pop();
        }
        e
    };
    let code = output.status.code().unwrap_or(-1);
    let mut problems = Vec::new();
    if code != example.exit {
        problems.push(format!(
            "exit status {code}, the doc says {} (end the command line with `# exits N` when it is not 0)",
            example.exit
        ));
    }
    if !matches(&expected, &actual) {
        problems.push(format!(
            "output differs\n--- expected (the doc)\n{}\n--- actual\n{}",
            expected.join("\n"),
            actual.join("\n")
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}:{}: $ {}\n{}\n--- stderr\n{}",
            example.file,
            example.line,
            example.command,
            problems.join("\n"),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

#[test]
fn every_example_in_the_docs_prints_what_the_docs_say() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = Path::new(env!("CARGO_BIN_EXE_tracetui"));
    let bin_dir = bin.parent().unwrap();
    let mut all = Vec::new();
    for file in doc_files(root) {
        let text = fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(root).unwrap().display().to_string();
        all.extend(examples(&name, &text));
    }
    // The extraction itself must find the examples (a broken parser would pass vacuously).
    assert!(
        all.len() >= 10,
        "only {} examples found in README.md and docs/",
        all.len()
    );
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = all
            .chunks(all.len().div_ceil(2))
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|ex| {
                            let tmp = tempfile::tempdir().unwrap();
                            run(ex, root, bin_dir, tmp.path()).err()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} examples in the docs differ from the program:\n\n{}",
        failures.len(),
        all.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_matcher_elides_only_where_told() {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert!(matches(&v(&["a", "...", "d"]), &v(&["a", "b", "c", "d"])));
    assert!(matches(&v(&["a", "...", "d"]), &v(&["a", "d"])));
    assert!(!matches(&v(&["a", "d"]), &v(&["a", "b", "d"])));
    assert!(!matches(&v(&["a", "...", "d"]), &v(&["a", "b", "c"])));
    let ex = examples(
        "x.md",
        "text\n```console\n$ tracetui check x   # exits 1\nout\n\n$ tracetui ls\n```\n```sh\n$ not run\n```\n",
    );
    assert_eq!(ex.len(), 2);
    assert_eq!(ex[0].exit, 1);
    assert_eq!(ex[0].command, "tracetui check x");
    assert_eq!(ex[0].expected, v(&["out", ""]));
    assert_eq!(ex[1].line, 6);
}

/// `(view, action) -> keys` of the default keymap, `src/tui/keymap.toml`.
fn keymap_bindings(text: &str) -> std::collections::BTreeMap<(String, String), Vec<String>> {
    let mut out = std::collections::BTreeMap::new();
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_string();
        } else if let Some((action, keys)) = line.split_once('=') {
            let keys = keys.trim().trim_start_matches('[').trim_end_matches(']');
            let keys = keys
                .split(',')
                .map(|k| k.trim().trim_matches('"').to_string())
                .filter(|k| !k.is_empty())
                .collect();
            out.insert((section.clone(), action.trim().to_string()), keys);
        }
    }
    out
}

/// `(view, action) -> keys` of the key tables in docs/explorer.md: a heading "### `[view]`..."
/// then rows "| `k`, `k2` | `action` | what it does |".
fn documented_bindings(text: &str) -> std::collections::BTreeMap<(String, String), Vec<String>> {
    let mut out = std::collections::BTreeMap::new();
    let mut section: Option<String> = None;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("### `[") {
            section = h.split_once("]`").map(|(s, _)| s.to_string());
            continue;
        }
        if line.starts_with("## ") {
            section = None;
        }
        let Some(section) = &section else { continue };
        let cells: Vec<&str> = line.split(" | ").collect();
        if !line.starts_with("| `") || cells.len() < 3 {
            continue;
        }
        let keys = cells[0]
            .trim_start_matches("| ")
            .split(", ")
            .map(|k| k.trim_matches('`').replace("\\|", "|"))
            .collect();
        let action = cells[1].trim_matches('`').to_string();
        out.insert((section.clone(), action), keys);
    }
    out
}

#[test]
fn the_key_tables_in_the_docs_are_the_default_keymap() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let keymap = fs::read_to_string(root.join("src/tui/keymap.toml"))
        .expect("src/tui/keymap.toml (moved? point this test and docs/explorer.md at it)");
    let docs = fs::read_to_string(root.join("docs/explorer.md")).unwrap();
    let bound = keymap_bindings(&keymap);
    let documented = documented_bindings(&docs);
    assert!(bound.len() > 50, "only {} bindings read from the keymap", bound.len());
    let mut problems = Vec::new();
    for ((view, action), keys) in &bound {
        match documented.get(&(view.clone(), action.clone())) {
            None => problems.push(format!("[{view}] {action} = {keys:?} is not in docs/explorer.md")),
            Some(doc) if doc != keys => problems.push(format!(
                "[{view}] {action}: the keymap binds {keys:?}, docs/explorer.md says {doc:?}"
            )),
            Some(_) => {}
        }
    }
    for (view, action) in documented.keys() {
        if !bound.contains_key(&(view.clone(), action.clone())) {
            problems.push(format!(
                "docs/explorer.md documents [{view}] {action}, which the keymap does not bind"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "the key tables differ from the keymap:\n{}",
        problems.join("\n")
    );
}

/// The text of docs/commands.md's section whose heading starts with "## `tracetui NAME".
fn command_section<'a>(doc: &'a str, name: &str) -> Option<&'a str> {
    let prefix = if name.is_empty() {
        "## `tracetui [".to_string()
    } else {
        format!("## `tracetui {name}")
    };
    let start = doc.lines().position(|l| {
        l.strip_prefix(prefix.as_str())
            .is_some_and(|rest| name.is_empty() || rest.starts_with([' ', '`']))
    })?;
    let offset: usize = doc.lines().take(start).map(|l| l.len() + 1).sum();
    let body = &doc[offset..];
    let end = body[3..].find("\n## ").map_or(body.len(), |i| i + 3);
    Some(&body[..end])
}

/// The long options (`--name`) a `--help` text lists under "Options:", `--help` and
/// `--version` left out.
fn help_options(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_options = false;
    for line in help.lines() {
        if line.starts_with("Options:") {
            in_options = true;
            continue;
        }
        if !line.starts_with(' ') && !line.is_empty() {
            in_options = false;
        }
        let trimmed = line.trim_start();
        if !in_options || !(trimmed.starts_with("--") || trimmed.starts_with('-')) {
            continue;
        }
        if let Some(i) = trimmed.find("--") {
            let name: String = trimmed[i..]
                .chars()
                .take_while(|c| *c == '-' || c.is_ascii_alphanumeric())
                .collect();
            if name != "--help" && name != "--version" && !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

#[test]
fn every_command_and_option_of_the_build_has_its_place_in_commands_md() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = env!("CARGO_BIN_EXE_tracetui");
    let doc = fs::read_to_string(root.join("docs/commands.md")).unwrap();
    let help = |args: &[&str]| {
        let out = Command::new(bin).args(args).env("NO_COLOR", "1").output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let top = help(&["--help"]);
    let mut commands = vec![String::new()];
    let mut in_commands = false;
    for line in top.lines() {
        if line.starts_with("Commands:") {
            in_commands = true;
            continue;
        }
        if !line.starts_with(' ') {
            in_commands = false;
        }
        if in_commands
            && let Some(name) = line.split_whitespace().next()
            && name != "help"
        {
            commands.push(name.to_string());
        }
    }
    assert!(commands.len() > 10, "commands read from --help: {commands:?}");
    let mut problems = Vec::new();
    for cmd in &commands {
        let shown = if cmd.is_empty() {
            "tracetui [PATH...]".to_string()
        } else {
            format!("tracetui {cmd}")
        };
        let Some(section) = command_section(&doc, cmd) else {
            problems.push(format!("docs/commands.md has no section \"## `{shown}`\""));
            continue;
        };
        let args: Vec<&str> = if cmd.is_empty() {
            vec!["--help"]
        } else {
            vec![cmd.as_str(), "--help"]
        };
        for option in help_options(&help(&args)) {
            let mentioned = section.match_indices(option.as_str()).any(|(i, _)| {
                !section[i + option.len()..].starts_with(|c: char| c == '-' || c.is_ascii_alphanumeric())
            });
            if !mentioned {
                problems.push(format!(
                    "`{shown}` has {option}, which its section in docs/commands.md does not mention"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text's headings (outside fenced blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    for line in text.lines() {
        let t = line.trim_start();
        let ticks: String = t.chars().take_while(|&c| c == '`').collect();
        if ticks.len() >= 3 {
            match &fence {
                None => fence = Some(ticks),
                Some(f) if ticks.len() >= f.len() && t.trim_end() == ticks => fence = None,
                Some(_) => {}
            }
            continue;
        }
        if fence.is_none() && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#')));
        }
    }
    out
}

#[test]
fn every_link_between_the_docs_finds_its_file_and_heading() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in doc_files(root) {
        let text = fs::read_to_string(&file).unwrap();
        let dir = file.parent().unwrap();
        let name = file.strip_prefix(root).unwrap().display().to_string();
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if target.contains("://") || target.contains(' ') || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            let linked = if path.is_empty() { file.clone() } else { dir.join(path) };
            checked += 1;
            if !linked.exists() {
                problems.push(format!("{name}: ({target}): no file {}", linked.display()));
                continue;
            }
            if !anchor.is_empty() {
                let linked_text = fs::read_to_string(&linked).unwrap_or_default();
                if !anchors(&linked_text).iter().any(|a| a == anchor) {
                    problems.push(format!("{name}: ({target}): no heading #{anchor} there"));
                }
            }
        }
    }
    assert!(checked > 10, "only {checked} links found");
    assert!(problems.is_empty(), "broken links:\n{}", problems.join("\n"));
}
