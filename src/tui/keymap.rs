//! Key bindings: the defaults are embedded TOML (`keymap.toml`), and the config file may
//! rebind any command per section. The same table answers "what does this key do" and "which
//! keys do this" (for the footer and the help overlay).

use super::action::Command;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::HashMap;

const DEFAULT: &str = include_str!("keymap.toml");

/// Where keys are looked up. `Global` applies everywhere a view does not bind the key itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Context {
    Global,
    Runs,
    Tree,
    Detail,
    Help,
    /// The diff of two runs.
    Diff,
    /// The detail of one pair of the diff.
    Pair,
    /// Tokens, cost and tool latency over the listed runs.
    Stats,
    /// The compare table (several runs against a baseline).
    Compare,
    /// The prefix tree of several runs' calls.
    Branches,
}

impl Context {
    pub const ALL: [Context; 10] = [
        Context::Global,
        Context::Runs,
        Context::Tree,
        Context::Detail,
        Context::Help,
        Context::Diff,
        Context::Pair,
        Context::Stats,
        Context::Compare,
        Context::Branches,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Context::Global => "global",
            Context::Runs => "runs",
            Context::Tree => "tree",
            Context::Detail => "detail",
            Context::Help => "help",
            Context::Diff => "diff",
            Context::Pair => "pair",
            Context::Stats => "stats",
            Context::Compare => "compare",
            Context::Branches => "branches",
        }
    }
    fn from_name(s: &str) -> Option<Context> {
        Context::ALL.into_iter().find(|c| c.name() == s)
    }
}

/// A key with its modifiers, normalised so that `G` and `shift-g` are the same key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

impl Key {
    pub fn from_event(e: &KeyEvent) -> Key {
        Key::new(e.code, e.modifiers)
    }

    pub fn new(code: KeyCode, mods: KeyModifiers) -> Key {
        let mut mods = mods & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        let code = match code {
            // The character already carries the shift; BackTab is shift-tab by itself.
            KeyCode::Char(_) | KeyCode::BackTab => {
                mods.remove(KeyModifiers::SHIFT);
                code
            }
            c => c,
        };
        Key { code, mods }
    }

    pub fn parse(s: &str) -> Result<Key, String> {
        let mut mods = KeyModifiers::NONE;
        let mut rest = s;
        loop {
            let lower = rest.to_ascii_lowercase();
            if rest.len() > 1 && lower.starts_with("ctrl-") {
                mods |= KeyModifiers::CONTROL;
                rest = &rest[5..];
            } else if rest.len() > 1 && lower.starts_with("alt-") {
                mods |= KeyModifiers::ALT;
                rest = &rest[4..];
            } else if rest.len() > 1 && lower.starts_with("shift-") {
                mods |= KeyModifiers::SHIFT;
                rest = &rest[6..];
            } else {
                break;
            }
        }
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) => KeyCode::Char(c),
            _ => match rest.to_ascii_lowercase().as_str() {
                "enter" | "return" => KeyCode::Enter,
                "esc" | "escape" => KeyCode::Esc,
                "tab" if mods.contains(KeyModifiers::SHIFT) => KeyCode::BackTab,
                "tab" => KeyCode::Tab,
                "backtab" => KeyCode::BackTab,
                "up" => KeyCode::Up,
                "down" => KeyCode::Down,
                "left" => KeyCode::Left,
                "right" => KeyCode::Right,
                "home" => KeyCode::Home,
                "end" => KeyCode::End,
                "pageup" => KeyCode::PageUp,
                "pagedown" => KeyCode::PageDown,
                "space" => KeyCode::Char(' '),
                "backspace" => KeyCode::Backspace,
                "delete" | "del" => KeyCode::Delete,
                f if f.starts_with('f') && f[1..].parse::<u8>().is_ok_and(|n| (1..=12).contains(&n)) => {
                    KeyCode::F(f[1..].parse().unwrap_or(1))
                }
                _ => return Err(format!("unknown key {s:?}")),
            },
        };
        Ok(Key::new(code, mods))
    }
}

#[derive(Clone, Debug)]
pub struct Keymap {
    by_key: HashMap<(Context, Key), Command>,
    /// Keys as written in the TOML, per (context, command), in order.
    names: HashMap<(Context, Command), Vec<String>>,
}

impl Default for Keymap {
    fn default() -> Self {
        let table: toml::Table = DEFAULT.parse().expect("the embedded keymap is valid TOML");
        let mut k = Keymap {
            by_key: HashMap::new(),
            names: HashMap::new(),
        };
        k.apply(&table).expect("the embedded keymap is valid");
        k
    }
}

impl Keymap {
    /// The defaults with the `[keys.*]` tables of a config file applied on top.
    pub fn with_overrides(over: &toml::Table) -> Result<Keymap, String> {
        let mut k = Keymap::default();
        k.apply(over)?;
        Ok(k)
    }

    fn apply(&mut self, table: &toml::Table) -> Result<(), String> {
        for (section, v) in table {
            let ctx = Context::from_name(section).ok_or_else(|| {
                format!("keys: unknown section [{section}]; sections are global, runs, tree, detail, help, diff, pair, stats")
            })?;
            let Some(bindings) = v.as_table() else {
                return Err(format!("keys.{section} must be a table"));
            };
            for (cmd_name, keys) in bindings {
                let cmd = Command::from_name(cmd_name)
                    .ok_or_else(|| format!("keys.{section}: unknown command {cmd_name:?}"))?;
                let keys: Vec<String> = match keys {
                    toml::Value::String(s) => vec![s.clone()],
                    toml::Value::Array(a) => a
                        .iter()
                        .map(|x| x.as_str().map(str::to_owned))
                        .collect::<Option<_>>()
                        .ok_or_else(|| format!("keys.{section}.{cmd_name}: keys must be strings"))?,
                    _ => return Err(format!("keys.{section}.{cmd_name}: expected a key or a list of keys")),
                };
                let parsed = keys
                    .iter()
                    .map(|s| Key::parse(s).map_err(|e| format!("keys.{section}.{cmd_name}: {e}")))
                    .collect::<Result<Vec<_>, _>>()?;
                self.by_key.retain(|(c, _), v| !(*c == ctx && *v == cmd));
                for (key, name) in parsed.iter().zip(&keys) {
                    if let Some(old) = self.by_key.insert((ctx, *key), cmd)
                        && let Some(list) = self.names.get_mut(&(ctx, old))
                    {
                        list.retain(|n| Key::parse(n).ok() != Some(*key) || n == name);
                    }
                }
                self.names.insert((ctx, cmd), keys);
            }
        }
        Ok(())
    }

    /// The command a key means in a context (the context's own bindings first, then global).
    pub fn lookup(&self, ctx: Context, key: Key) -> Option<Command> {
        self.by_key
            .get(&(ctx, key))
            .or_else(|| self.by_key.get(&(Context::Global, key)))
            .copied()
    }

    /// The keys bound to a command in a context, as written in the keymap.
    pub fn keys(&self, ctx: Context, cmd: Command) -> Vec<&str> {
        let own = self.names.get(&(ctx, cmd)).filter(|v| !v.is_empty());
        let list = own.or_else(|| self.names.get(&(Context::Global, cmd)));
        let mut out: Vec<&str> = list.map(|v| v.iter().map(String::as_str).collect()).unwrap_or_default();
        // A global key shadowed by the context means something else there.
        out.retain(|k| Key::parse(k).is_ok_and(|key| self.lookup(ctx, key) == Some(cmd)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_bind_vim_keys() {
        let k = Keymap::default();
        let key = |s: &str| Key::parse(s).unwrap();
        assert_eq!(k.lookup(Context::Tree, key("j")), Some(Command::Down));
        assert_eq!(k.lookup(Context::Tree, key("l")), Some(Command::Expand));
        assert_eq!(k.lookup(Context::Runs, key("l")), Some(Command::Open));
        assert_eq!(k.lookup(Context::Tree, key("ctrl-d")), Some(Command::PageDown));
        assert_eq!(k.lookup(Context::Tree, key("G")), Some(Command::Bottom));
        assert_eq!(k.lookup(Context::Tree, key("e")), Some(Command::NextError));
        assert_eq!(k.lookup(Context::Runs, key("e")), None);
        assert_eq!(k.keys(Context::Tree, Command::Down), vec!["j", "down"]);
    }

    #[test]
    fn shifted_letters_match_with_or_without_the_shift_flag() {
        let a = Key::new(KeyCode::Char('G'), KeyModifiers::SHIFT);
        assert_eq!(a, Key::parse("G").unwrap());
        assert_eq!(Key::parse("shift-tab").unwrap(), Key::parse("backtab").unwrap());
    }

    #[test]
    fn overrides_replace_a_commands_keys() {
        let over: toml::Table = "[tree]\nnext_error = [\"x\"]\n".parse().unwrap();
        let k = Keymap::with_overrides(&over).unwrap();
        assert_eq!(
            k.lookup(Context::Tree, Key::parse("x").unwrap()),
            Some(Command::NextError)
        );
        assert_eq!(k.lookup(Context::Tree, Key::parse("e").unwrap()), None);
        assert_eq!(k.keys(Context::Tree, Command::NextError), vec!["x"]);
        // taking a key from another command removes it from that command's list
        let over: toml::Table = "[tree]\nnext_error = [\"t\"]\n".parse().unwrap();
        let k = Keymap::with_overrides(&over).unwrap();
        assert!(k.keys(Context::Tree, Command::NextTool).is_empty());
    }

    #[test]
    fn bad_overrides_are_errors_that_say_where() {
        let bad: toml::Table = "[tree]\nfly = [\"x\"]\n".parse().unwrap();
        assert!(Keymap::with_overrides(&bad).unwrap_err().contains("fly"));
        let bad: toml::Table = "[tree]\nup = [\"ctrl-\"]\n".parse().unwrap();
        assert!(Keymap::with_overrides(&bad).is_err());
        let bad: toml::Table = "[nowhere]\nup = [\"k\"]\n".parse().unwrap();
        assert!(Keymap::with_overrides(&bad).is_err());
    }
}
