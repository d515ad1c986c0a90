//! `tracetui export PATH [--run ID]... --to FORMAT [-o FILE|DIR]`: the runs chosen, to standard
//! output, to one file, or one file a run into a directory. Sources are loaded one at a time
//! and each run is written and dropped, so a directory of many runs never sits in memory.

use super::{To, check_output, file_name, trace_dirs, write};
use crate::formats::Format;
use crate::model::Trace;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The runs asked for, each read alone where the source's format can (an Inspect AI log's
/// samples, each its own archive member: one of 2,000 in milliseconds, not the whole log in
/// seconds). None when any one cannot be: the source is then loaded whole.
fn alone(
    r: &crate::source::RunRef,
    ids: &[String],
) -> Option<Result<crate::formats::Loaded, crate::formats::LoadError>> {
    if ids.is_empty() {
        return None;
    }
    let mut traces = Vec::new();
    for (k, id) in ids.iter().enumerate() {
        if ids[..k].contains(id) {
            continue;
        }
        match r.load_run(0, id)? {
            Ok(l) => traces.extend(l.traces),
            Err(e) => return Some(Err(e)),
        }
    }
    Some(Ok(crate::formats::Loaded { traces }))
}

/// Where the runs go.
enum Dest {
    Stdout,
    File(PathBuf),
    Dir(PathBuf),
}

pub struct Request<'a> {
    pub path: &'a Path,
    pub runs: &'a [String],
    pub to: To,
    pub output: Option<&'a Path>,
    /// Overwrite existing files (never through a symbolic link).
    pub force: bool,
    pub forced: Option<&'static dyn Format>,
}

/// Run the command; the exit code (0 all written, 2 input unreadable, a run not found, or
/// output refused). Messages go to stderr, sanitized.
pub fn run(req: &Request, stdout: &mut dyn Write) -> anyhow::Result<u8> {
    let say = |m: &str| eprintln!("{}", crate::sanitize::line(&format!("tracetui: {m}")));
    let protected = vec![req.path.to_path_buf()];
    let dest = match req.output {
        None => Dest::Stdout,
        Some(o) => {
            check_output(o, &protected).map_err(anyhow::Error::msg)?;
            let as_dir = o.is_dir() || o.as_os_str().to_string_lossy().ends_with(std::path::MAIN_SEPARATOR);
            if as_dir {
                Dest::Dir(o.to_path_buf())
            } else {
                Dest::File(o.to_path_buf())
            }
        }
    };
    let d = crate::source::discover(std::slice::from_ref(&req.path.to_path_buf()), req.forced);
    let mut code = 0u8;
    for e in &d.errors {
        say(&e.to_string());
        code = 2;
    }
    if d.skipped.any() {
        say(&d.skipped.message());
    }
    let mut found = vec![false; req.runs.len()];
    // File and standard output of a single-document form take one run: it is held until
    // it is sure no second one comes, so that nothing half-done is written.
    let single = matches!(dest, Dest::File(_)) || (matches!(dest, Dest::Stdout) && req.to == To::Html);
    let mut held: Option<Trace> = None;
    let mut written: Vec<PathBuf> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for r in &d.runs {
        let loaded = match alone(r, req.runs).unwrap_or_else(|| r.load()) {
            Ok(l) => l,
            Err(e) => {
                say(&e.to_string());
                code = 2;
                continue;
            }
        };
        for t in loaded.traces {
            if !req.runs.is_empty() {
                // An id given twice is found once for both.
                let mut asked = false;
                for (k, id) in req.runs.iter().enumerate() {
                    if *id == t.meta.id {
                        found[k] = true;
                        asked = true;
                    }
                }
                if !asked {
                    continue;
                }
            }
            if single {
                if held.is_some() {
                    anyhow::bail!(
                        "{} holds several runs: give --run ID, or -o DIR to write one file a run{}",
                        req.path.display(),
                        if req.to == To::Html {
                            ""
                        } else {
                            " (or no -o to print them all)"
                        }
                    );
                }
                held = Some(t);
                continue;
            }
            match &dest {
                Dest::Stdout => {
                    write(&t, req.to, stdout)?;
                    if req.to == To::Markdown {
                        writeln!(stdout)?;
                    }
                }
                Dest::Dir(dir) => {
                    std::fs::create_dir_all(dir)?;
                    let mut name = file_name(&t, req.to);
                    let mut n = 2;
                    while names.contains(&name) {
                        name = format!("{}-{n}.{}", super::file_stem(&t), req.to.extension());
                        n += 1;
                    }
                    names.push(name.clone());
                    let p = dir.join(&name);
                    write_file(&t, req.to, &p, req.force)?;
                    written.push(p);
                }
                Dest::File(_) => unreachable!("a file takes one run, held above"),
            }
        }
    }
    for (id, ok) in req.runs.iter().zip(&found) {
        if !ok {
            say(&format!("{}: no run with id {id}", req.path.display()));
            code = 2;
        }
    }
    match (held, &dest) {
        (Some(t), Dest::File(p)) => {
            write_file(&t, req.to, p, req.force)?;
            written.push(p.clone());
        }
        (Some(t), Dest::Stdout) => write(&t, req.to, stdout)?,
        (None, _) if written.is_empty() && !matches!(dest, Dest::Stdout) || d.runs.is_empty() => {
            if code == 0 {
                say(&format!("{}: no run to export", req.path.display()));
            }
            code = 2;
        }
        _ => {}
    }
    match (&dest, written.len()) {
        (Dest::File(p), 1) => say(&format!("wrote {} ({})", p.display(), req.to.label())),
        (Dest::Dir(dir), n) if n > 0 => say(&format!(
            "wrote {} to {} ({})",
            crate::words::count(n, "run"),
            dir.display(),
            req.to.label()
        )),
        _ => {}
    }
    Ok(code)
}

/// Write one run to a file, refusing a trace's own directory.
pub fn write_file(t: &Trace, to: To, path: &Path, force: bool) -> anyhow::Result<()> {
    check_output(path, &trace_dirs(t)).map_err(anyhow::Error::msg)?;
    let f = create(path, force)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    write(t, to, &mut w)?;
    w.flush()?;
    Ok(())
}

/// Create the file an export writes: a new one (`O_EXCL`: neither an existing file nor a
/// symbolic link placed there is opened), or with `force` an existing regular file emptied,
/// still never through a symbolic link (`O_NOFOLLOW`).
pub fn create(path: &Path, force: bool) -> anyhow::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true);
    if force {
        o.create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut o, libc::O_NOFOLLOW);
    } else {
        o.create_new(true);
    }
    o.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            anyhow::anyhow!("{}: exists; not overwritten (--force overwrites it)", path.display())
        }
        _ if e.raw_os_error() == Some(libc::ELOOP) => {
            anyhow::anyhow!("{}: a symbolic link; not followed", path.display())
        }
        _ => anyhow::anyhow!("{}: {e}", path.display()),
    })
}
