//! What a diff leaves out: volatile keys by default, and the user's `--ignore` globs.

/// Keys whose values change on every run whatever the agent does. They are ignored by default
/// in results, errors and extras, but never inside a call's arguments or prompt: there a changed
/// `order_id` or `ts` is the agent's own decision, exactly what `TOOLS_CHANGED` must catch (the
/// user can still `--ignore tools[*].args.ts`). Event ids, start times and durations never reach
/// the comparison at all: the model keeps them outside the payload.
pub const VOLATILE_KEYS: &[&str] = &[
    // Ids minted per request / event / message by the runtime or the provider.
    "id",
    "request_id",
    "requestId",
    "call_id",
    "tool_call_id",
    "tool_use_id",
    "event_id",
    "run_id",
    "trace_id",
    "span_id",
    "parent_id",
    "session_id",
    "response_id",
    "message_id",
    // Clocks.
    "ts",
    "timestamp",
    "created",
    "created_at",
    "updated_at",
    "started_at",
    "ended_at",
    "start_time",
    "end_time",
    // Durations and latencies.
    "duration",
    "duration_ms",
    "elapsed",
    "elapsed_ms",
    "latency",
    "latency_ms",
    // agentsnap's environment record (node / python / agentsnap versions), not the agent's behaviour.
    "fingerprint",
    // Stack traces carry file paths, line numbers and addresses; the error type and message stay.
    "stack",
    // Token usage differs on every LLM call; it is reported as a metric delta instead.
    "usage",
];

pub fn is_volatile_key(k: &str) -> bool {
    VOLATILE_KEYS.contains(&k)
}

/// A glob over JSON paths (`*.request_id`, `tools[*].args.ts`): `*` matches any run of
/// characters (dots and brackets included), `?` one character; everything else is literal.
/// A pattern ignores the paths it matches and everything under them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob(String);

impl Glob {
    pub fn new(pattern: &str) -> Glob {
        Glob(pattern.to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `path` or one of its ancestors (a prefix ending at `.` or `[`) matches.
    pub fn ignores(&self, path: &str) -> bool {
        if wildcard(self.0.as_bytes(), path.as_bytes()) {
            return true;
        }
        path.char_indices()
            .filter(|&(i, c)| i > 0 && (c == '.' || c == '['))
            .any(|(i, _)| wildcard(self.0.as_bytes(), &path.as_bytes()[..i]))
    }
}

/// Iterative wildcard match with single-star backtracking: linear in practice, no recursion.
fn wildcard(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) && p[pi] != b'*' {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_paths_and_their_subtrees() {
        let g = Glob::new("*.request_id");
        assert!(g.ignores("tools[3].result.request_id"));
        assert!(g.ignores("tools[3].result.request_id.part"));
        assert!(!g.ignores("tools[3].result.request_ids"));
        let g = Glob::new("tools[*].args.ts");
        assert!(g.ignores("tools[12].args.ts"));
        assert!(!g.ignores("tools[12].args.tsx"));
        assert!(!g.ignores("llm[1].args.ts"));
        let g = Glob::new("tools[0].args");
        assert!(g.ignores("tools[0].args.limit"));
        assert!(g.ignores("tools[0].args[\"a b\"]"));
        assert!(!g.ignores("tools[0].result"));
        assert!(Glob::new("tools[?].result").ignores("tools[7].result"));
        assert!(!Glob::new("tools[?].result").ignores("tools[17].result"));
    }

    #[test]
    fn volatile_keys_are_runtime_noise_not_arguments() {
        assert!(is_volatile_key("request_id"));
        assert!(is_volatile_key("fingerprint"));
        assert!(!is_volatile_key("limit"));
        assert!(!is_volatile_key("order_id"));
    }
}
