//! The explorer's export key (issue 20): the prompt as drawn (TestBackend + insta), and the
//! file it writes (or refuses to write) through update and the background job.

use std::path::{Path, PathBuf};
use tracetui::export::To;
use tracetui::tui::action::Action;
use tracetui::tui::diffview::Source;
use tracetui::tui::keymap::Keymap;
use tracetui::tui::state::{Effect, State, View, read};
use tracetui::tui::update::update;

mod common;
use common::press;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// A run copied into `dir/traces/` (its trace directory), listed and opened; exports go to
/// `dir/out/` (the prompt's current directory).
fn opened(dir: &Path, size: (u16, u16)) -> State {
    let traces = dir.join("traces");
    copy_dir(
        &fixture("tests/fixtures/tui/agentdbg/runs/run-7f3a"),
        &traces.join("run-7f3a"),
    );
    std::fs::create_dir_all(dir.join("out")).unwrap();
    let mut s = common::listed(&[traces], size);
    common::open_selected(&mut s);
    s
}

/// Run the export job the prompt queued, as the app's thread does.
fn finish(s: &mut State) {
    let Some(Effect::Export(job)) = s.effects.pop() else {
        panic!("no export effect: {:?}", s.effects)
    };
    let done = tracetui::tui::export::run(job);
    update(s, done);
}

fn set_cwd(s: &mut State, cwd: &Path) {
    s.export.prompt.as_mut().expect("the prompt is open").cwd = cwd.to_path_buf();
}

fn typed(s: &mut State, text: &str) {
    for c in text.chars() {
        update(s, Action::Export(tracetui::tui::export::Input::Char(c)));
    }
}

#[test]
fn export_prompt_of_a_run() {
    let d = tempfile::tempdir().unwrap();
    let mut s = opened(d.path(), (100, 24));
    press(&mut s, &["X", "tab"]);
    set_cwd(&mut s, Path::new("/home/dev/project"));
    insta::assert_snapshot!(common::screen(&s, 100, 24));
}

#[test]
fn the_footer_and_the_help_list_the_export_key() {
    let d = tempfile::tempdir().unwrap();
    let mut s = opened(d.path(), (160, 24));
    assert!(common::screen(&s, 160, 24).contains(" X  export "));
    press(&mut s, &["?"]);
    let help = common::screen(&s, 160, 60);
    assert!(
        help.contains("export the run to a file: HTML, Markdown or OTLP/JSON"),
        "{help}"
    );
}

#[test]
fn export_writes_the_run_into_the_current_directory_and_says_where() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let mut s = opened(d.path(), (100, 24));
    press(&mut s, &["X"]);
    set_cwd(&mut s, &out);
    let p = s.export.prompt.as_ref().unwrap();
    assert_eq!(p.name, "run-7f3a.html");
    // The format moves the default name's extension along.
    press(&mut s, &["tab"]);
    assert_eq!(s.export.prompt.as_ref().unwrap().name, "run-7f3a.md");
    press(&mut s, &["tab"]);
    assert_eq!(s.export.prompt.as_ref().unwrap().name, "run-7f3a.otlp.jsonl");
    press(&mut s, &["backtab"]);
    press(&mut s, &["enter"]);
    assert!(s.export.prompt.is_none());
    assert!(s.export.busy.is_some());
    assert!(common::screen(&s, 100, 24).contains("exporting to"));
    finish(&mut s);
    let file = out.join("run-7f3a.md");
    let written = std::fs::read_to_string(&file).unwrap();
    let expected = {
        let r = s.run.as_ref().unwrap();
        let t = read(&r.trace);
        let mut b = Vec::new();
        tracetui::export::write(&t, To::Markdown, &mut b).unwrap();
        String::from_utf8(b).unwrap()
    };
    assert_eq!(written, expected);
    let m = s.message.as_ref().unwrap();
    assert!(!m.error, "{m:?}");
    assert!(m.text.starts_with(&format!("wrote {}", file.display())), "{}", m.text);
    assert!(m.text.contains("(Markdown, "), "{}", m.text);
    assert!(s.export.busy.is_none());

    // Again: the file exists, and only a second Enter replaces it.
    press(&mut s, &["X", "tab"]);
    set_cwd(&mut s, &out);
    press(&mut s, &["enter"]);
    let p = s.export.prompt.as_ref().expect("still open");
    assert!(p.error.as_ref().unwrap().contains("exists"), "{:?}", p.error);
    assert!(s.effects.is_empty());
    press(&mut s, &["enter"]);
    finish(&mut s);
    assert!(!s.message.as_ref().unwrap().error);

    // An edited name keeps its stem when the format changes; OTLP/JSON reads back.
    press(&mut s, &["X", "ctrl-u"]);
    set_cwd(&mut s, &out);
    typed(&mut s, "mine.html");
    press(&mut s, &["tab", "tab"]);
    assert_eq!(s.export.prompt.as_ref().unwrap().name, "mine.otlp.jsonl");
    press(&mut s, &["enter"]);
    finish(&mut s);
    let back = tracetui::formats::load(&out.join("mine.otlp.jsonl"), None).unwrap();
    let r = s.run.as_ref().unwrap();
    assert_eq!(back.traces[0].counts(), read(&r.trace).counts());
}

#[test]
fn export_refuses_a_path_inside_a_trace_directory() {
    let d = tempfile::tempdir().unwrap();
    let mut s = opened(d.path(), (100, 24));
    let run_dir = d.path().join("traces/run-7f3a");
    // The run's own directory as the current directory: the default name is refused.
    press(&mut s, &["X"]);
    set_cwd(&mut s, &run_dir);
    press(&mut s, &["enter"]);
    let p = s.export.prompt.as_ref().expect("the prompt stays open");
    let e = p.error.clone().unwrap();
    assert!(e.starts_with("refused:") && e.contains("never writes there"), "{e}");
    assert!(s.effects.is_empty());
    let screen = common::screen(&s, 100, 24);
    assert!(screen.contains("refused:"), "{screen}");
    // A path typed into the directory the runs were listed from is refused too.
    press(&mut s, &["ctrl-u"]);
    let inside = d.path().join("traces/new.html");
    typed(&mut s, &inside.display().to_string());
    press(&mut s, &["enter"]);
    assert!(
        s.export
            .prompt
            .as_ref()
            .unwrap()
            .error
            .as_ref()
            .unwrap()
            .starts_with("refused:")
    );
    press(&mut s, &["esc"]);
    assert!(s.export.prompt.is_none());
    assert!(!inside.exists());
    assert!(!run_dir.join("run-7f3a.html").exists());
    assert!(s.effects.is_empty());
}

#[test]
fn export_of_the_runs_list_says_what_to_open() {
    let d = tempfile::tempdir().unwrap();
    let mut s = opened(d.path(), (100, 24));
    press(&mut s, &["esc", "esc"]);
    assert_eq!(s.view, View::Runs);
    press(&mut s, &["X"]);
    assert!(s.export.prompt.is_none());
    assert!(s.message.as_ref().unwrap().text.contains("open a run or a diff"));
}

#[test]
fn export_of_an_open_diff_writes_its_report() {
    let d = tempfile::tempdir().unwrap();
    let mut s = State::new(Keymap::default(), (100, 24));
    let src = |p: &str| Source::Path {
        path: fixture(p),
        forced: None,
    };
    tracetui::tui::diffview::update::start(
        &mut s,
        ["baseline".into(), "current".into()],
        src("tests/fixtures/diff/agentdbg/baseline"),
        src("tests/fixtures/diff/agentdbg/failing"),
    );
    common::finish_diff(&mut s);
    press(&mut s, &["X"]);
    set_cwd(&mut s, d.path());
    let p = s.export.prompt.as_ref().unwrap();
    assert!(p.diff);
    assert!(p.name.starts_with("diff-") && p.name.ends_with(".md"), "{}", p.name);
    let name = p.name.clone();
    press(&mut s, &["enter"]);
    finish(&mut s);
    let written = std::fs::read_to_string(d.path().join(&name)).unwrap();
    let expected = {
        let v = s.diff.as_ref().unwrap().data.as_ref().unwrap();
        let mut b = Vec::new();
        tracetui::report::diff_md::write(&v.diff, &v.a, &v.b, &mut b, s.words.context).unwrap();
        String::from_utf8(b).unwrap()
    };
    assert_eq!(written, expected);
    assert!(written.contains("REGRESSION"), "{written}");
    // HTML is the other choice.
    press(&mut s, &["X", "tab"]);
    set_cwd(&mut s, d.path());
    let name = s.export.prompt.as_ref().unwrap().name.clone();
    assert!(name.ends_with(".html"));
    press(&mut s, &["enter"]);
    finish(&mut s);
    let html = std::fs::read_to_string(d.path().join(&name)).unwrap();
    assert!(
        html.starts_with("<!DOCTYPE html>") || html.starts_with("<!doctype html>"),
        "{}",
        &html[..80]
    );
}
