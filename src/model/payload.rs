use serde::Serialize;
use serde_json::Value;

/// What an event carries, as it is shown in the detail pane and compared by diff.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Payload {
    /// Arguments, prompt, or message content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// Result, response, or result hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    /// Other fields worth showing (provider, meta, state diff, ...), in source order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<(String, Value)>,
    /// What the event was sent with that one other event holds for many (an LLM call's
    /// system prompt and tool definitions, held once by the run's request-shape event): shown
    /// in the detail, but not searched, compared or exported with each event, where it would
    /// match and repeat on every call.
    #[serde(skip)]
    pub context: Vec<(String, Value)>,
}

impl Payload {
    pub fn is_empty(&self) -> bool {
        self.input.is_none()
            && self.output.is_none()
            && self.error.is_none()
            && self.extra.is_empty()
            && self.context.is_empty()
    }

    /// Set an extra field, replacing one of the same name.
    pub fn set_extra(&mut self, key: &str, v: Value) {
        match self.extra.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = v,
            None => self.extra.push((key.to_string(), v)),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ErrorInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ErrorInfo {
    /// A record whose payload was left on disk could not be decoded when it was shown.
    pub fn unreadable(e: &serde_json::Error) -> ErrorInfo {
        ErrorInfo {
            kind: Some("unreadable".into()),
            message: format!("cannot decode the record: {e}"),
            ..Default::default()
        }
    }

    /// Read the error shapes formats use: `null`, a string, `{error_type|type|name, message, stack}`.
    pub fn from_value(v: &Value) -> Option<ErrorInfo> {
        match v {
            Value::Null => None,
            Value::Bool(false) => None,
            Value::String(s) if s.is_empty() => None,
            Value::String(s) => Some(ErrorInfo {
                message: s.clone(),
                ..Default::default()
            }),
            Value::Object(m) => {
                let text = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
                let kind = text("error_type")
                    .or_else(|| text("type"))
                    .or_else(|| text("name"))
                    .or_else(|| m.get("code").filter(|c| !c.is_null()).map(|c| c.to_string()));
                let message = text("message")
                    .or_else(|| text("msg"))
                    .or_else(|| text("error"))
                    .unwrap_or_else(|| v.to_string());
                let stack = text("stack").or_else(|| text("traceback"));
                let known = [
                    "error_type",
                    "type",
                    "name",
                    "code",
                    "message",
                    "msg",
                    "error",
                    "stack",
                    "traceback",
                ];
                let rest: serde_json::Map<String, Value> = m
                    .iter()
                    .filter(|(k, _)| !known.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                Some(ErrorInfo {
                    kind,
                    message,
                    stack,
                    details: (!rest.is_empty()).then_some(Value::Object(rest)),
                })
            }
            other => Some(ErrorInfo {
                message: other.to_string(),
                ..Default::default()
            }),
        }
    }
}

/// Where an event's payload is.
#[derive(Clone, Debug, Default)]
pub enum PayloadRef {
    #[default]
    None,
    /// Held in memory (small formats).
    Inline(Box<Payload>),
    /// On disk at the event's origin(s): the format decodes it when it is shown (DESIGN §4).
    Deferred,
}

impl PayloadRef {
    /// Held in memory, or none when there is nothing to hold.
    pub fn inline(p: Payload) -> PayloadRef {
        if p.is_empty() {
            PayloadRef::None
        } else {
            PayloadRef::Inline(Box::new(p))
        }
    }
}

/// Payload markers (DESIGN §2): data shown as badges, never errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Marker {
    Redacted,
    Truncated,
    Missing,
    Hash,
}

impl Marker {
    pub fn label(self) -> &'static str {
        match self {
            Marker::Redacted => "REDACTED",
            Marker::Truncated => "TRUNCATED",
            Marker::Missing => "MISSING",
            Marker::Hash => "HASH",
        }
    }

    /// The marker a single string value is, if any.
    pub fn of_str(s: &str) -> Option<Marker> {
        let t = s.trim();
        if t == "__REDACTED__" || t == "[REDACTED]" {
            Some(Marker::Redacted)
        } else if t == "__TRUNCATED__" || t.ends_with("...[TRUNCATED]") || is_truncation_note(t) {
            Some(Marker::Truncated)
        } else if t == "__MISSING__" {
            Some(Marker::Missing)
        } else if t.starts_with("sha256:") && t.len() >= 7 + 16 && t[7..].bytes().all(|b| b.is_ascii_hexdigit()) {
            Some(Marker::Hash)
        } else {
            None
        }
    }
}

/// `<...truncated 1234 characters...>` anywhere in the string.
fn is_truncation_note(s: &str) -> bool {
    // memmem: a 50 MB value is scanned at memory speed.
    if let Some(i) = memchr::memmem::find(s.as_bytes(), b"<...truncated ") {
        return s[i..].contains(" characters...>");
    }
    false
}

/// Every marker found anywhere inside a JSON value (bounded walk).
pub fn markers_in(v: &Value, out: &mut Vec<Marker>) {
    fn walk(v: &Value, out: &mut Vec<Marker>, budget: &mut usize) {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        match v {
            Value::String(s) => {
                if let Some(m) = Marker::of_str(s)
                    && !out.contains(&m)
                {
                    out.push(m);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out, budget)),
            Value::Object(o) => {
                for (k, x) in o {
                    if k == "truncations"
                        && x.as_array().is_some_and(|a| !a.is_empty())
                        && !out.contains(&Marker::Truncated)
                    {
                        out.push(Marker::Truncated);
                    }
                    walk(x, out, budget);
                }
            }
            _ => {}
        }
    }
    let mut budget = 100_000;
    walk(v, out, &mut budget);
    out.sort();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn markers_are_recognised() {
        assert_eq!(Marker::of_str("__REDACTED__"), Some(Marker::Redacted));
        assert_eq!(Marker::of_str("abc...[TRUNCATED]"), Some(Marker::Truncated));
        assert_eq!(
            Marker::of_str("x <...truncated 120 characters...> y"),
            Some(Marker::Truncated)
        );
        assert_eq!(Marker::of_str("__MISSING__"), Some(Marker::Missing));
        assert_eq!(
            Marker::of_str("sha256:fb4cd1f2d946618719ce7fb5321e9c782ba1984f9c669b17675e1792b4284bb6"),
            Some(Marker::Hash)
        );
        assert_eq!(Marker::of_str("sha256: not a hash"), None);
        assert_eq!(Marker::of_str("hello"), None);
    }

    #[test]
    fn markers_found_deep_inside_values() {
        let v = json!({"a": [1, {"b": "__REDACTED__"}], "truncations": [{"path": "x"}], "c": "__MISSING__"});
        let mut m = Vec::new();
        markers_in(&v, &mut m);
        assert_eq!(m, vec![Marker::Redacted, Marker::Truncated, Marker::Missing]);
    }

    #[test]
    fn error_shapes() {
        assert_eq!(ErrorInfo::from_value(&json!(null)), None);
        assert_eq!(ErrorInfo::from_value(&json!("boom")).unwrap().message, "boom");
        let e = ErrorInfo::from_value(&json!({"error_type": "KeyError", "message": "'x'", "stack": "tb", "extra": 1}))
            .unwrap();
        assert_eq!(e.kind.as_deref(), Some("KeyError"));
        assert_eq!(e.message, "'x'");
        assert_eq!(e.stack.as_deref(), Some("tb"));
        assert_eq!(e.details, Some(json!({"extra": 1})));
        let e = ErrorInfo::from_value(&json!({"name": "TypeError", "message": "bad"})).unwrap();
        assert_eq!(e.kind.as_deref(), Some("TypeError"));
    }
}
