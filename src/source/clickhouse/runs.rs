//! A store run as a [`RunRef`]: its path is its URL (`clickhouse://…?trace=ID`) and its format
//! is [`Store`], whose `load` fetches the run's spans. Everything that takes runs from
//! discovery (`diff`, `compare`, `export`, the explorer's diff of two marked runs, its stats)
//! then reads a store run as it reads a file, with no branch of its own.
//!
//! The password is the one source of state: the config's (`[clickhouse] password`) is handed
//! over once by the binary ([`configure`]), as the core does not read the explorer's config;
//! the environment's wins as in [`super::Client::new`].

use super::{Client, Secret, Source};
use crate::formats::{Format, LoadError, Loaded, Probe};
use crate::source::RunRef;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

static PASSWORD: OnceLock<Option<Secret>> = OnceLock::new();

/// The config's password for every store source of this process (the first call wins).
pub fn configure(config_password: Option<Secret>) {
    let _ = PASSWORD.set(config_password);
}

/// A client of `url`, with the configured password.
pub fn client(url: &str) -> Result<Client, String> {
    let src = Source::parse(url)?;
    Client::new(src, PASSWORD.get().cloned().flatten()).map_err(|e| e.0)
}

/// The format of store runs. Never detected: a store run is named by its URL.
pub struct Store;

pub static STORE: Store = Store;

/// The temporary OTLP/JSON documents of loaded runs: the traces read their payloads from them,
/// so they live as long as a view may show one. A run loaded again (the explorer's live
/// mode) keeps its [`KEPT`] latest; all go at [`cleanup`] (the binary's exit).
static TEMPS: Mutex<Vec<(String, tempfile::TempPath)>> = Mutex::new(Vec::new());
const KEPT: usize = 3;

/// Remove the temporary documents (at exit).
pub fn cleanup() {
    TEMPS.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

fn keep(url: &str, file: tempfile::TempPath) {
    let mut t = TEMPS.lock().unwrap_or_else(|e| e.into_inner());
    t.push((url.to_string(), file));
    let mine: Vec<usize> = t
        .iter()
        .enumerate()
        .filter(|(_, (u, _))| u == url)
        .map(|(i, _)| i)
        .collect();
    if mine.len() > KEPT {
        t.remove(mine[0]);
    }
}

/// The message of a store error without its leading source (a [`LoadError`] names it).
fn bare<'a>(url: &str, msg: &'a str) -> &'a str {
    msg.strip_prefix(url).and_then(|m| m.strip_prefix(": ")).unwrap_or(msg)
}

/// Load the run `url` names (`?trace=ID`).
pub fn load_url(url: &str) -> Result<Loaded, LoadError> {
    let path = PathBuf::from(redact(url));
    let invalid = |message: String| LoadError::Invalid {
        path: path.clone(),
        message,
        diagnostics: Vec::new(),
    };
    let c = client(url).map_err(&invalid)?;
    let shown = c.source.display();
    let Some(trace) = c.source.trace.clone() else {
        return Err(invalid(format!(
            "which run? add ?trace=ID (`tracetui ls {shown}` lists them)"
        )));
    };
    let (loaded, file) = super::load(&c, &trace).map_err(|e| invalid(bare(&shown, &e.0).to_string()))?;
    keep(&shown, file);
    Ok(loaded)
}

impl Format for Store {
    fn id(&self) -> &'static str {
        "clickhouse"
    }
    fn describe(&self) -> &'static str {
        "a run in a ClickHouse trace store (clickhouse://…?trace=ID)"
    }
    fn detect(&self, _probe: &Probe) -> u8 {
        0
    }
    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        load_url(&path.to_string_lossy())
    }
}

/// Discovery of a clickhouse:// PATH: the run it names (`?trace=ID`), as a [`RunRef`] of
/// [`STORE`]. A URL without a trace is refused here (which run?); the runs list of a store
/// is the explorer's and `ls`'s.
pub fn discover(url: &str) -> Result<RunRef, LoadError> {
    let path = PathBuf::from(redact(url));
    let src = Source::parse(url).map_err(|message| LoadError::Invalid {
        path: path.clone(),
        message,
        diagnostics: Vec::new(),
    })?;
    if src.trace.is_none() {
        return Err(LoadError::Invalid {
            path,
            message: format!("which run? add ?trace=ID (`tracetui ls {}` lists them)", src.display()),
            diagnostics: Vec::new(),
        });
    }
    // Named by its canonical URL, as the runs list names it.
    let canon = PathBuf::from(src.display());
    Ok(RunRef::new(canon.clone(), &STORE, Arc::from(canon.as_path())))
}

/// Whether a run is a store run.
pub fn is_store(run: &RunRef) -> bool {
    run.format.id() == STORE.id()
}

/// `url` with no password in it (`user:password@` becomes `user@`), for messages about a URL
/// that did not parse.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    match rest[..end].rsplit_once('@') {
        Some((user, host)) if user.contains(':') => {
            let user = user.split(':').next().unwrap_or("");
            format!("{scheme}://{user}@{host}{}", &rest[end..])
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_url_is_discovered_as_its_run_and_a_bare_one_asks_which() {
        let r = discover("clickhouse://u@h:9/db?trace=ABCD").unwrap();
        assert_eq!(r.path, PathBuf::from("clickhouse://u@h:9/db?trace=abcd"));
        assert!(is_store(&r));
        let e = discover("clickhouse://u@h:9/db").unwrap_err().to_string();
        assert!(
            e.contains("?trace=ID") && e.starts_with("clickhouse://u@h:9/db: "),
            "{e}"
        );
        let e = discover("clickhouse://u:pw@h/db?trace=ab").unwrap_err().to_string();
        assert!(!e.contains(":pw"), "{e}");
    }

    #[test]
    fn an_unreachable_store_fails_the_load_with_the_url_once() {
        let e = load_url("clickhouse://127.0.0.1:1/otel?trace=ab")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("clickhouse://127.0.0.1:1/otel?trace=ab: cannot connect"),
            "{e}"
        );
    }
}
