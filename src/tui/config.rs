//! The optional config file: `$XDG_CONFIG_HOME/tracetui/config.toml`, else
//! `~/.config/tracetui/config.toml` (on macOS too, as terminal tools do).
//!
//! ```toml
//! theme = "light"            # a built-in name, a file in themes/ next to this file, or a path
//! [keys.tree]                # sections: global, runs, tree, detail, help
//! next_error = ["e", "ctrl-e"]
//! [diff]
//! context = 8                # words of unchanged text kept around a word-level change
//! [prices."my-model"]        # dollars per million tokens; overrides the embedded list
//! input = 0.5
//! output = 1.5
//! ```

use std::path::{Path, PathBuf};

/// The directory of the config file and of user themes.
pub fn dir() -> Option<PathBuf> {
    dir_from(std::env::var_os("XDG_CONFIG_HOME"), std::env::var_os("HOME"))
}

fn dir_from(xdg: Option<std::ffi::OsString>, home: Option<std::ffi::OsString>) -> Option<PathBuf> {
    // The XDG spec says relative values are to be ignored.
    let base = xdg
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home.map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("tracetui"))
}

pub fn path() -> Option<PathBuf> {
    dir().map(|d| d.join("config.toml"))
}

#[derive(Debug, Default)]
pub struct Config {
    pub theme: Option<String>,
    pub keys: toml::Table,
    /// `[prices."MODEL"]` tables (checked when read: see [`crate::cost::Prices::with_overrides`]).
    pub prices: toml::Table,
    /// `[diff] context = N`: words kept around a word-level change.
    pub diff_context: Option<usize>,
    /// `[clickhouse] password = "..."`: the password of clickhouse:// sources (the
    /// environment's TRACETUI_CLICKHOUSE_PASSWORD wins); never printed, not even by Debug.
    pub clickhouse_password: Option<crate::source::clickhouse::Secret>,
    /// A config that could not be read (its directory or file unreadable): the explorer
    /// starts with the defaults and says so.
    pub warning: Option<String>,
}

/// Read the config file; a missing file is the default config, an unreadable one the default
/// config with a warning, a broken one an error that names the file.
pub fn load(path: Option<&Path>) -> Result<Config, String> {
    let Some(path) = path else { return Ok(Config::default()) };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
        Err(e) => {
            return Ok(Config {
                warning: Some(format!("config not read ({}: {e}); using the defaults", path.display())),
                ..Config::default()
            });
        }
    };
    let table: toml::Table = text.parse().map_err(|e| format!("{}: {e}", path.display()))?;
    let mut c = Config::default();
    for (k, v) in table {
        match k.as_str() {
            "theme" => {
                c.theme = Some(
                    v.as_str()
                        .ok_or_else(|| format!("{}: theme must be a string", path.display()))?
                        .to_string(),
                )
            }
            "keys" => {
                c.keys = v
                    .as_table()
                    .cloned()
                    .ok_or_else(|| format!("{}: [keys] must be a table", path.display()))?
            }
            "prices" => {
                let t = v
                    .as_table()
                    .cloned()
                    .ok_or_else(|| format!("{}: [prices] must be a table", path.display()))?;
                crate::cost::Prices::with_overrides(&t, path)?;
                c.prices = t;
            }
            "diff" => {
                let t = v
                    .as_table()
                    .ok_or_else(|| format!("{}: [diff] must be a table", path.display()))?;
                for (k, v) in t {
                    match (k.as_str(), v.as_integer()) {
                        ("context", Some(n)) if n >= 0 => c.diff_context = Some(n as usize),
                        ("context", _) => {
                            return Err(format!(
                                "{}: [diff] context must be a whole number of words",
                                path.display()
                            ));
                        }
                        (other, _) => {
                            return Err(format!(
                                "{}: unknown setting [diff] {other:?} (known: context)",
                                path.display()
                            ));
                        }
                    }
                }
            }
            "clickhouse" => {
                let t = v
                    .as_table()
                    .ok_or_else(|| format!("{}: [clickhouse] must be a table", path.display()))?;
                for (k, v) in t {
                    match (k.as_str(), v.as_str()) {
                        ("password", Some(p)) => {
                            c.clickhouse_password = Some(crate::source::clickhouse::Secret(p.to_string()))
                        }
                        ("password", None) => {
                            return Err(format!("{}: [clickhouse] password must be a string", path.display()));
                        }
                        (other, _) => {
                            return Err(format!(
                                "{}: unknown setting [clickhouse] {other:?} (known: password)",
                                path.display()
                            ));
                        }
                    }
                }
            }
            other => {
                return Err(format!(
                    "{}: unknown setting {other:?} (known: theme, keys, prices, diff, clickhouse)",
                    path.display()
                ));
            }
        }
    }
    Ok(c)
}

/// The prices costs are computed with: the embedded list with the user's `[prices]` over it,
/// read once. A config that cannot be read gives the embedded list (the explorer and `prices`
/// say what was wrong with it).
pub fn prices() -> &'static crate::cost::Prices {
    static P: std::sync::OnceLock<Option<crate::cost::Prices>> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let path = path()?;
        let c = load(Some(&path)).ok()?;
        if c.prices.is_empty() {
            return None;
        }
        crate::cost::Prices::with_overrides(&c.prices, &path).ok()
    })
    .as_ref()
    .unwrap_or_else(|| crate::cost::Prices::builtin())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdg_wins_when_absolute() {
        assert_eq!(
            dir_from(Some("/x/cfg".into()), Some("/home/u".into())),
            Some(PathBuf::from("/x/cfg/tracetui"))
        );
        assert_eq!(
            dir_from(Some("rel".into()), Some("/home/u".into())),
            Some(PathBuf::from("/home/u/.config/tracetui"))
        );
        assert_eq!(dir_from(None, None), None);
    }

    #[test]
    fn reads_theme_and_keys_and_rejects_typos() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("config.toml");
        assert!(load(Some(&p)).unwrap().theme.is_none(), "missing file is fine");
        std::fs::write(&p, "theme = \"light\"\n[keys.tree]\nnext_error = \"x\"\n").unwrap();
        let c = load(Some(&p)).unwrap();
        assert_eq!(c.theme.as_deref(), Some("light"));
        assert!(c.keys.contains_key("tree"));
        std::fs::write(&p, "colour = 1\n").unwrap();
        assert!(load(Some(&p)).unwrap_err().contains("colour"));
    }

    #[test]
    fn an_unreadable_config_is_a_warning_and_the_defaults() {
        let d = tempfile::tempdir().unwrap();
        // A directory where the file should be: reading it fails (as a directory without
        // permission does for users other than root).
        let p = d.path().join("config.toml");
        std::fs::create_dir(&p).unwrap();
        let c = load(Some(&p)).unwrap();
        assert!(c.theme.is_none() && c.keys.is_empty());
        assert!(c.warning.unwrap().contains("using the defaults"));
        // XDG_CONFIG_HOME pointing at a file: the config "directory" cannot be entered.
        let f = d.path().join("file");
        std::fs::write(&f, "").unwrap();
        let c = load(Some(&f.join("tracetui/config.toml"))).unwrap();
        assert!(c.warning.is_some());
    }
}
