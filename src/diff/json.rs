//! Structural comparison of two JSON values as a list of JSON-path changes
//! (`tools[2].args.limit: 10 → 25`). Values are taken by value and the differing leaves moved
//! into the result, so large payloads are not copied.

use super::ignore::{Glob, is_volatile_key};
use serde_json::{Map, Value};

/// One difference at one path. `None` means the path is absent on that side.
#[derive(Clone, Debug, PartialEq)]
pub struct Leaf {
    pub path: String,
    pub from: Option<Value>,
    pub to: Option<Value>,
}

/// What to skip while walking.
pub struct Skip<'a> {
    /// Apply the built-in volatile keys (off under `--strict` and inside arguments).
    pub volatile: bool,
    pub globs: &'a [Glob],
}

impl Skip<'_> {
    pub fn path(&self, path: &str) -> bool {
        self.globs.iter().any(|g| g.ignores(path))
    }
}

/// Append `key` to a path: `.key` when it reads as an identifier, else `["key"]`.
pub fn push_key(path: &mut String, key: &str) {
    let plain = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
    } else {
        path.push('[');
        path.push_str(&Value::String(key.to_string()).to_string());
        path.push(']');
    }
}

pub fn push_index(path: &mut String, i: usize) {
    use std::fmt::Write;
    let _ = write!(path, "[{i}]");
}

/// Compare `a` (baseline) with `b` (current) at `path`, appending differences to `out`.
pub fn compare(path: &mut String, a: Option<Value>, b: Option<Value>, skip: &Skip, out: &mut Vec<Leaf>) {
    if skip.path(path) {
        return;
    }
    match (a, b) {
        (None, None) => {}
        (Some(Value::Object(ma)), Some(Value::Object(mb))) => objects(path, ma, mb, skip, out),
        (Some(Value::Array(va)), Some(Value::Array(vb))) => {
            if va == vb {
                return;
            }
            let n = va.len().max(vb.len());
            let mut ia = va.into_iter();
            let mut ib = vb.into_iter();
            let len = path.len();
            for i in 0..n {
                push_index(path, i);
                compare(path, ia.next(), ib.next(), skip, out);
                path.truncate(len);
            }
        }
        (Some(a), Some(b)) => {
            if !same_scalar(&a, &b) {
                out.push(Leaf {
                    path: path.clone(),
                    from: Some(a),
                    to: Some(b),
                });
            }
        }
        (a, b) => out.push(Leaf {
            path: path.clone(),
            from: a,
            to: b,
        }),
    }
}

fn objects(path: &mut String, ma: Map<String, Value>, mut mb: Map<String, Value>, skip: &Skip, out: &mut Vec<Leaf>) {
    if ma == mb {
        return;
    }
    // Keys only in `b` are listed after the shared ones, in `b`'s order.
    let b_only: Vec<String> = mb.keys().filter(|k| !ma.contains_key(*k)).cloned().collect();
    let len = path.len();
    for (k, va) in ma {
        let vb = mb.get_mut(&k).map(Value::take);
        if skip.volatile && is_volatile_key(&k) {
            continue;
        }
        push_key(path, &k);
        compare(path, Some(va), vb, skip, out);
        path.truncate(len);
    }
    for k in b_only {
        if skip.volatile && is_volatile_key(&k) {
            continue;
        }
        let vb = mb.get_mut(&k).map(Value::take);
        push_key(path, &k);
        compare(path, None, vb, skip, out);
        path.truncate(len);
    }
}

/// Scalars compare by value; numbers numerically, so `10` and `10.0` (a JS and a Python
/// recorder of the same call) are the same.
fn same_scalar(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y
                || match (x.as_f64(), y.as_f64()) {
                    (Some(p), Some(q)) => p == q,
                    _ => false,
                }
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(a: Value, b: Value, volatile: bool, globs: &[Glob]) -> Vec<(String, Option<Value>, Option<Value>)> {
        let mut out = Vec::new();
        let mut path = String::from("tools[0].args");
        compare(&mut path, Some(a), Some(b), &Skip { volatile, globs }, &mut out);
        out.into_iter().map(|l| (l.path, l.from, l.to)).collect()
    }

    #[test]
    fn leaves_are_reported_by_path() {
        let d = run(
            json!({"query": "coffee", "limit": 10, "opts": {"a": [1, 2]}}),
            json!({"query": "coffee", "limit": 25, "opts": {"a": [1, 3, 4]}, "new": true}),
            false,
            &[],
        );
        assert_eq!(
            d,
            vec![
                ("tools[0].args.limit".into(), Some(json!(10)), Some(json!(25))),
                ("tools[0].args.opts.a[1]".into(), Some(json!(2)), Some(json!(3))),
                ("tools[0].args.opts.a[2]".into(), None, Some(json!(4))),
                ("tools[0].args.new".into(), None, Some(json!(true))),
            ]
        );
    }

    #[test]
    fn odd_keys_are_quoted_and_numbers_compare_numerically() {
        let d = run(json!({"a b": 1, "n": 10}), json!({"a b": 2, "n": 10.0}), false, &[]);
        assert_eq!(
            d,
            vec![("tools[0].args[\"a b\"]".into(), Some(json!(1)), Some(json!(2)))]
        );
    }

    #[test]
    fn volatile_keys_and_globs_are_skipped() {
        let a = json!({"request_id": "r1", "x": {"ts": 1, "v": 1}});
        let b = json!({"request_id": "r2", "x": {"ts": 2, "v": 1}});
        assert!(run(a.clone(), b.clone(), true, &[]).is_empty());
        assert_eq!(run(a.clone(), b.clone(), false, &[]).len(), 2);
        let d = run(a, b, false, &[Glob::new("*.request_id")]);
        assert_eq!(d, vec![("tools[0].args.x.ts".into(), Some(json!(1)), Some(json!(2)))]);
    }

    #[test]
    fn type_changes_and_absence() {
        let d = run(json!({"a": [1]}), json!({"a": {"0": 1}}), false, &[]);
        assert_eq!(d.len(), 1);
        let mut out = Vec::new();
        let mut p = String::from("r");
        compare(
            &mut p,
            None,
            Some(json!(1)),
            &Skip {
                volatile: true,
                globs: &[],
            },
            &mut out,
        );
        assert_eq!(out[0].from, None);
    }
}
