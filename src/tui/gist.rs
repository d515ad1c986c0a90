//! What a row of the tree (or of the diff) says after its name: a tool call's gist
//! ([`crate::formats::gist`]), an LLM call's tokens and cost.
//!
//! A gist needs the call's payload, which stays on disk until shown, and rendering reads no
//! file: the update step makes the gists of the rows that come into view ([`Gists::fill`],
//! from `settle`) and keeps them here, a bounded map per view; a frame only looks them up.
//! Filling has a time budget, so that a page of huge records (a `Write` of a large file) does
//! not hold a key: what is left is made on the next ticks, the row showing its name meanwhile.

use crate::model::{Event, EventKind, Status, Trace};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Gists kept per view: many screens of rows. Past it, those out of view are forgotten.
pub const CAP: usize = 4096;

/// Time one update spends reading payloads for gists; the rest waits for the next tick.
pub const BUDGET: Duration = Duration::from_millis(8);

/// The gists made for a view's rows, by event index.
#[derive(Debug, Default)]
pub struct Gists {
    /// (what the event was when its gist was made, the gist).
    map: HashMap<u32, (Stamp, Option<Box<str>>)>,
    /// Rows in view still without their gist (the budget ran out).
    pending: bool,
}

/// A gist is made again when its event changed: a pending call completed, or its record was
/// read anew.
type Stamp = (Status, u64);

fn stamp(e: &Event) -> Stamp {
    (e.status, e.origin.offset)
}

impl Gists {
    /// The gist of event `ev`, when made (and it has one).
    pub fn get(&self, ev: u32) -> Option<&str> {
        self.map.get(&ev).and_then(|(_, g)| g.as_deref())
    }

    /// Whether rows in view are still waiting for their gist.
    pub fn pending(&self) -> bool {
        self.pending
    }

    /// Forget every gist (the trace was read again: indices mean other events).
    pub fn clear(&mut self) {
        self.map.clear();
        self.pending = false;
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Make the gists of the tool calls among `events` (the rows in view) that have none yet,
    /// for at most [`BUDGET`]. Returns how many were made.
    pub fn fill(&mut self, t: &Trace, events: &[u32]) -> usize {
        self.fill_within(t, events, BUDGET)
    }

    /// [`Gists::fill`] with the time budget given (tests).
    pub fn fill_within(&mut self, t: &Trace, events: &[u32], budget: Duration) -> usize {
        let todo = |m: &HashMap<u32, (Stamp, Option<Box<str>>)>, ev: u32| {
            let Some(e) = t.events.get(ev as usize) else { return false };
            e.kind == EventKind::ToolCall && m.get(&ev).is_none_or(|(s, _)| *s != stamp(e))
        };
        if !events.iter().any(|&ev| todo(&self.map, ev)) {
            self.pending = false;
            return 0;
        }
        if self.map.len() + events.len() > CAP {
            // Keep what is in view; the rest is made again when it comes back.
            let keep: std::collections::HashSet<u32> = events.iter().copied().collect();
            self.map.retain(|ev, _| keep.contains(ev));
        }
        let started = Instant::now();
        let mut made = 0;
        self.pending = false;
        for &ev in events {
            if !todo(&self.map, ev) {
                continue;
            }
            if made > 0 && started.elapsed() >= budget {
                self.pending = true;
                break;
            }
            let e = t.event(ev);
            let g = crate::formats::gist::of(t, e).map(String::into_boxed_str);
            self.map.insert(ev, (stamp(e), g));
            made += 1;
        }
        made
    }
}

/// What an LLM call's row shows after its name, most important first: its tokens
/// (`5,708 tok`) and, when known, its cost (`$0.0070`). Whole numbers: a narrow column drops
/// the last ones, never cuts them.
pub fn llm_parts(t: &Trace, e: &Event, prices: &crate::cost::Prices) -> Vec<String> {
    if e.kind != EventKind::LlmCall {
        return Vec::new();
    }
    let Some(u) = e.usage.get() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(n) = u.sum() {
        out.push(format!("{} tok", crate::model::thousands(n)));
    }
    let own = t.str(e.model);
    let model = if own.is_empty() { t.meta.model.as_deref() } else { Some(own) };
    if let Some(m) = crate::cost::usage::call_cost(prices, model, Some(&u)).micros {
        out.push(crate::cost::dollars(m));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::*;

    fn trace(n: usize) -> Trace {
        let mut t = Trace::new(RunMeta {
            id: "r".into(),
            format: "agentdbg",
            ..Default::default()
        });
        let root = t.add(NewEvent::new(EventKind::Run, "r"));
        for k in 0..n {
            t.add(NewEvent {
                parent: Parent::Index(root),
                status: Status::Ok,
                payload: PayloadRef::Inline(Box::new(Payload {
                    input: Some(serde_json::json!({"path": format!("/src/f{k}.rs")})),
                    ..Default::default()
                })),
                ..NewEvent::new(EventKind::ToolCall, "read_file")
            });
        }
        t.add(NewEvent {
            parent: Parent::Index(root),
            model: Some("claude-sonnet-4-5"),
            usage: Some(Usage {
                input: Some(5000),
                output: Some(708),
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::LlmCall, "claude-sonnet-4-5")
        });
        t.finalize();
        t
    }

    #[test]
    fn gists_are_made_for_the_rows_in_view_and_bounded() {
        let t = trace(CAP + 100);
        let mut g = Gists::default();
        let view: Vec<u32> = (1..41).collect();
        assert_eq!(g.fill(&t, &view), 40);
        assert_eq!(g.get(1), Some("/src/f0.rs"));
        assert_eq!(g.get(0), None, "the run event has no gist");
        // Made once: the next update finds them.
        assert_eq!(g.fill(&t, &view), 0);
        // Scrolling through every row keeps the map bounded.
        for start in (1..t.len() as u32 - 40).step_by(40) {
            let view: Vec<u32> = (start..start + 40).collect();
            g.fill(&t, &view);
            assert!(g.len() <= CAP, "{}", g.len());
            assert_eq!(g.get(start), Some(format!("/src/f{}.rs", start - 1).as_str()));
        }
    }

    #[test]
    fn an_exhausted_budget_leaves_the_rest_for_later() {
        let t = trace(100);
        let mut g = Gists::default();
        let view: Vec<u32> = (1..101).collect();
        // A budget already spent still makes one (the screen always moves on).
        assert_eq!(g.fill_within(&t, &view, Duration::ZERO), 1);
        assert!(g.pending());
        assert_eq!(g.fill_within(&t, &view, Duration::from_secs(10)), 99);
        assert!(!g.pending());
    }

    #[test]
    fn llm_rows_show_tokens_and_cost() {
        let t = trace(1);
        let e = t.event(t.len() as u32 - 1);
        let parts = llm_parts(&t, e, crate::cost::Prices::builtin());
        assert_eq!(parts[0], "5,708 tok");
        // claude-sonnet-4-5: $3 / M input, $15 / M output.
        assert_eq!(parts[1], "$0.0256");
        assert!(llm_parts(&t, t.event(1), crate::cost::Prices::builtin()).is_empty());
    }
}
