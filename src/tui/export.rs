//! The explorer's export key (issue 20): on an open run it offers HTML, Markdown and OTLP/JSON,
//! on an open diff the Markdown and HTML reports; the file name starts as `<run id>.<ext>` in
//! the current directory and can be edited. A path inside a trace directory (the open run's, or
//! one the runs were found under) is refused in the prompt, which stays open to choose another.
//! The file is written on a background thread; the status line says where it went.

use super::action::Action;
use super::nav::say;
use super::state::{Effect, SharedTrace, State, View, read};
use crate::export::To;
use crate::model::{RunStatus, Trace};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the export of a run can be.
pub const RUN_FORMS: &[To] = &[To::Html, To::Markdown, To::OtlpJson];
/// What the export of a diff can be (the reports of `tracetui diff --format`).
pub const DIFF_FORMS: &[To] = &[To::Markdown, To::Html];

/// Ticks the "wrote …" message stays (the app ticks every 100 ms): long enough to read a path.
const DONE_TICKS: u64 = 100;

/// The prompt while it is open.
#[derive(Debug, Clone)]
pub struct Prompt {
    /// A diff's reports (else a run's exports).
    pub diff: bool,
    /// What is exported, as the title shows it (sanitized).
    pub title: String,
    /// The default file name without its extension.
    pub stem: String,
    pub forms: &'static [To],
    /// The chosen format, an index into `forms`.
    pub form: usize,
    /// The file name as typed.
    pub name: String,
    /// The user typed in the name: a new format changes only its extension.
    pub edited: bool,
    /// Why the last Enter did not write (refused, exists, no such directory).
    pub error: Option<String>,
    /// A file that exists and that a second Enter overwrites.
    pub overwrite: Option<PathBuf>,
    /// Where a relative name goes.
    pub cwd: PathBuf,
}

impl Prompt {
    pub fn to(&self) -> To {
        self.forms[self.form]
    }
}

/// The export part of the state: the prompt, and the file being written.
#[derive(Debug, Default)]
pub struct ExportState {
    pub prompt: Option<Prompt>,
    /// The path being written (for the status line), until it is done.
    pub busy: Option<String>,
}

/// Keys while the prompt is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    Char(char),
    Backspace,
    Clear,
    NextForm,
    PrevForm,
    Submit,
    Cancel,
}

/// The key's meaning in the prompt.
pub fn key(k: crossterm::event::KeyEvent) -> Option<Action> {
    use crossterm::event::{KeyCode, KeyModifiers};
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    let i = match k.code {
        KeyCode::Esc => Input::Cancel,
        KeyCode::Enter => Input::Submit,
        KeyCode::Backspace => Input::Backspace,
        KeyCode::Tab | KeyCode::Down => Input::NextForm,
        KeyCode::BackTab | KeyCode::Up => Input::PrevForm,
        KeyCode::Char('u') if ctrl => Input::Clear,
        KeyCode::Char(c) if !ctrl && !k.modifiers.contains(KeyModifiers::ALT) => Input::Char(c),
        _ => return None,
    };
    Some(Action::Export(i))
}

/// The export key: open the prompt for the open run or diff.
pub fn open(s: &mut State) {
    if s.export.busy.is_some() {
        say(s, "an export is still being written", true);
        return;
    }
    let (diff, title, stem) = match s.view {
        View::Run if let Some(r) = s.run.as_ref() => {
            if r.live.loading.is_some() {
                say(s, "the run is still loading: export it once it is read", true);
                return;
            }
            let t = read(&r.trace);
            let name = t.meta.name.clone().unwrap_or_else(|| t.meta.id.clone());
            (false, name, crate::export::file_stem(&t))
        }
        View::Diff if let Some(d) = s.diff.as_ref().and_then(|d| d.data.as_ref()) => {
            let name = |t: &Trace| t.meta.name.clone().unwrap_or_else(|| t.meta.id.clone());
            let title = format!("{} ↔ {}", name(&d.a), name(&d.b));
            let stem = format!(
                "diff-{}-{}",
                crate::export::file_stem(&d.a),
                crate::export::file_stem(&d.b)
            );
            (true, title, stem)
        }
        View::Diff => {
            say(s, "the diff is still being computed", true);
            return;
        }
        _ => {
            say(s, "open a run or a diff to export it", true);
            return;
        }
    };
    let forms = if diff { DIFF_FORMS } else { RUN_FORMS };
    let name = format!("{stem}.{}", forms[0].extension());
    s.export.prompt = Some(Prompt {
        diff,
        title: crate::sanitize::line(&title).into_owned(),
        stem,
        forms,
        form: 0,
        name,
        edited: false,
        error: None,
        overwrite: None,
        cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    });
}

/// A key in the prompt.
pub fn input(s: &mut State, i: Input) {
    let Some(p) = s.export.prompt.as_mut() else { return };
    match i {
        Input::Cancel => {
            s.export.prompt = None;
            return;
        }
        Input::Submit => return submit(s),
        Input::NextForm | Input::PrevForm => {
            let old = p.to();
            let n = p.forms.len();
            p.form = if i == Input::NextForm {
                (p.form + 1) % n
            } else {
                (p.form + n - 1) % n
            };
            let new = p.to();
            if !p.edited {
                p.name = format!("{}.{}", p.stem, new.extension());
            } else if let Some(base) = p.name.strip_suffix(&format!(".{}", old.extension())) {
                p.name = format!("{base}.{}", new.extension());
            }
        }
        Input::Char(c) => {
            p.name.push(c);
            p.edited = true;
        }
        Input::Backspace => {
            p.name.pop();
            p.edited = true;
        }
        Input::Clear => {
            p.name.clear();
            p.edited = true;
        }
    }
    p.error = None;
    p.overwrite = None;
}

/// The path a typed name means: `~/` is the home directory, a relative name is in `cwd`.
pub fn resolve(name: &str, cwd: &Path) -> PathBuf {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    match (name.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => PathBuf::from(h).join(rest),
        _ => cwd.join(name),
    }
}

/// The directories no export may go into: the open run's (or both diffed runs'), and the paths
/// the runs were found under.
fn protected(s: &State, diff: bool) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    if diff {
        if let Some(d) = s.diff.as_ref().and_then(|d| d.data.as_ref()) {
            out.extend(crate::export::trace_dirs(&d.a));
            out.extend(crate::export::trace_dirs(&d.b));
        }
    } else if let Some(r) = s.run.as_ref() {
        out.extend(crate::export::trace_dirs(&read(&r.trace)));
    }
    for e in &s.runs.entries {
        let root = e.run.root.to_path_buf();
        if !out.contains(&root) {
            out.push(root);
        }
    }
    out
}

fn submit(s: &mut State) {
    let Some(p) = s.export.prompt.as_ref() else { return };
    let name = p.name.trim();
    if name.is_empty() {
        return set_error(s, "type a file name".into(), None);
    }
    let path = resolve(name, &p.cwd);
    let shown = crate::sanitize::line(&path.display().to_string()).into_owned();
    if path.is_dir() {
        return set_error(s, format!("{shown} is a directory: type a file name"), None);
    }
    let parent = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(d) = parent.filter(|d| !d.is_dir()) {
        let d = crate::sanitize::line(&d.display().to_string()).into_owned();
        return set_error(s, format!("no directory {d}"), None);
    }
    let inside = protected(s, p.diff)
        .into_iter()
        .find(|d| crate::export::check_output(&path, std::slice::from_ref(d)).is_err());
    if let Some(d) = inside {
        let d = crate::sanitize::line(&d.display().to_string()).into_owned();
        return set_error(
            s,
            // The reason first: the box cuts what does not fit its two lines (the path is above).
            format!("refused: inside a trace directory, and tracetui never writes there (~/ is home): {d}"),
            None,
        );
    }
    if path.exists() && p.overwrite.as_ref() != Some(&path) {
        return set_error(
            s,
            format!("{shown} exists: enter again replaces it, or edit the name"),
            Some(path),
        );
    }
    let to = p.to();
    let source = if p.diff {
        let Some(d) = s.diff.as_ref().and_then(|d| d.data.as_ref()) else {
            s.export.prompt = None;
            return say(s, "the diff is no longer open", true);
        };
        Source::Diff {
            a: d.a.clone(),
            b: d.b.clone(),
            diff: Box::new(d.diff.clone()),
            context: s.words.context,
        }
    } else {
        let Some(r) = s.run.as_ref() else {
            s.export.prompt = None;
            return say(s, "the run is no longer open", true);
        };
        // A run still being written is copied first, so its loader never waits for the export.
        let snapshot = r.live.watched && read(&r.trace).meta.status == RunStatus::Running;
        Source::Run {
            trace: r.trace.clone(),
            snapshot,
        }
    };
    s.export.prompt = None;
    s.export.busy = Some(shown.clone());
    s.effects.push(Effect::Export(Job {
        source,
        to,
        path,
        shown,
    }));
}

fn set_error(s: &mut State, e: String, overwrite: Option<PathBuf>) {
    if let Some(p) = s.export.prompt.as_mut() {
        p.error = Some(e);
        p.overwrite = overwrite;
    }
}

/// What to write.
pub enum Source {
    Run {
        trace: SharedTrace,
        /// Copy the trace and let go of it before writing (its loader may be adding to it).
        snapshot: bool,
    },
    Diff {
        a: Arc<Trace>,
        b: Arc<Trace>,
        diff: Box<crate::diff::Diff>,
        context: usize,
    },
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Run { snapshot, .. } => write!(f, "Run(snapshot: {snapshot})"),
            Source::Diff { .. } => write!(f, "Diff"),
        }
    }
}

/// One export for the background: what, in which form, where.
#[derive(Debug)]
pub struct Job {
    pub source: Source,
    pub to: To,
    pub path: PathBuf,
    /// The path as the status line shows it.
    pub shown: String,
}

/// Write the export (on a background thread in the app); the action says how it went.
pub fn run(job: Job) -> Action {
    let result = write(&job).map(|bytes| {
        format!(
            "wrote {} ({}, {})",
            job.shown,
            job.to.label(),
            crate::tui::render::bytes(bytes)
        )
    });
    Action::Exported(result.map_err(|e| format!("export to {} failed: {e}", job.shown)))
}

fn write(job: &Job) -> anyhow::Result<u64> {
    // The prompt asked before replacing a file; a symbolic link there is still not followed.
    let f = crate::export::command::create(&job.path, true)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    let res = match &job.source {
        Source::Run { trace, snapshot: true } => {
            let t = read(trace).clone();
            crate::export::write(&t, job.to, &mut w)
        }
        Source::Run { trace, snapshot: false } => crate::export::write(&read(trace), job.to, &mut w),
        Source::Diff { a, b, diff, context } => match job.to {
            To::Html => crate::report::diff_html::write(diff, a, b, &mut w, *context),
            _ => crate::report::diff_md::write(diff, a, b, &mut w, *context),
        },
    };
    let res = res.and_then(|_| w.flush());
    if let Err(e) = res {
        // Nothing half-written is left behind.
        drop(w);
        let _ = std::fs::remove_file(&job.path);
        return Err(e.into());
    }
    Ok(std::fs::metadata(&job.path).map(|m| m.len()).unwrap_or(0))
}

/// The background write finished.
pub fn done(s: &mut State, result: Result<String, String>) {
    s.export.busy = None;
    let error = result.is_err();
    let text = result.unwrap_or_else(|e| e);
    say(s, text, error);
    if let Some(m) = s.message.as_mut() {
        m.until = s.tick + DONE_TICKS;
    }
}
