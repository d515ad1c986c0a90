//! Align two call sequences: tool and LLM calls in display order, keyed by kind + name, with
//! `similar`'s Myers (an LCS-family algorithm with xdiff-style work limits). Calls left over on
//! both sides with the same key are then paired as moves.

use crate::model::{EventKind, Trace};
use similar::algorithms::{Capture, Compact, DiffHook, Replace, diff_deadline};
use similar::{Algorithm, DiffOp};
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One call of a trace, in display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    pub event: u32,
    pub kind: EventKind,
    /// Position among the calls of the same kind: the `N` of `tools[N]` / `llm[N]`.
    pub kind_index: usize,
}

/// The calls of `t` in display order (`Trace::walk`); only tool calls when `tools_only`.
pub fn calls(t: &Trace, tools_only: bool) -> Vec<Call> {
    let (mut tools, mut llms) = (0, 0);
    let mut out = Vec::new();
    for (i, _) in t.walk() {
        let kind = t.event(i).kind;
        let counter = match kind {
            EventKind::ToolCall => &mut tools,
            EventKind::LlmCall if !tools_only => &mut llms,
            _ => continue,
        };
        out.push(Call {
            event: i,
            kind,
            kind_index: *counter,
        });
        *counter += 1;
    }
    out
}

/// One row of the alignment; numbers are positions in the two call sequences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Pair(usize, usize),
    Removed(usize),
    Added(usize),
    /// The same call (kind + name) at another place: (baseline, current).
    Moved(usize, usize),
}

/// Safety net only: similar's Myers already bounds its work on hard inputs (deterministically,
/// which a CI verdict needs); past this wall-clock limit it falls back to a coarse, still valid
/// script.
const DEADLINE: Duration = Duration::from_secs(10);

/// Align `a` (baseline) with `b` (current). Rows come in merged order; a moved call sits at
/// its place in the current run.
pub fn align<'t>(ta: &'t Trace, a: &[Call], tb: &'t Trace, b: &[Call]) -> Vec<Step> {
    align_with(ta, a, tb, b, |_, _, _| {})
}

/// [`align`], telling `early(baseline, current, len)` of each run of calls Myers matches as it
/// finds them, long before a hard alignment ends. Only a hint: the final script is compacted
/// afterwards, which can shift a match to another call of the same key, so work started from
/// it must be checked against the steps returned (most matches survive).
pub fn align_with<'t>(
    ta: &'t Trace,
    a: &[Call],
    tb: &'t Trace,
    b: &[Call],
    early: impl FnMut(usize, usize, usize),
) -> Vec<Step> {
    align_until(ta, a, tb, b, early, None).expect("not cancellable")
}

/// [`align_with`], given up (`None`) soon after `cancel` is set.
pub(crate) fn align_until<'t>(
    ta: &'t Trace,
    a: &[Call],
    tb: &'t Trace,
    b: &[Call],
    early: impl FnMut(usize, usize, usize),
    cancel: Option<&AtomicBool>,
) -> Option<Vec<Step>> {
    let mut ids: HashMap<(bool, &'t str), u32> = HashMap::new();
    let mut key = |t: &'t Trace, c: &Call| -> u32 {
        let k = (c.kind == EventKind::ToolCall, t.name(c.event));
        let next = ids.len() as u32;
        *ids.entry(k).or_insert(next)
    };
    let ka: Vec<u32> = a.iter().map(|c| key(ta, c)).collect();
    let kb: Vec<u32> = b.iter().map(|c| key(tb, c)).collect();
    let ops = script(&ka, &kb, early, cancel)?;
    let mut steps = Vec::with_capacity(a.len().max(b.len()));
    for op in ops {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => steps.extend((0..len).map(|k| Step::Pair(old_index + k, new_index + k))),
            DiffOp::Delete { old_index, old_len, .. } => {
                steps.extend((old_index..old_index + old_len).map(Step::Removed))
            }
            DiffOp::Insert { new_index, new_len, .. } => {
                steps.extend((new_index..new_index + new_len).map(Step::Added))
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                steps.extend((old_index..old_index + old_len).map(Step::Removed));
                steps.extend((new_index..new_index + new_len).map(Step::Added));
            }
        }
    }
    Some(pair_moves(&ka, &kb, steps))
}

/// Myers' edit script of two key sequences: what `similar::capture_diff_slices_deadline` does,
/// with a tap under the compaction.
fn script(
    ka: &[u32],
    kb: &[u32],
    early: impl FnMut(usize, usize, usize),
    cancel: Option<&AtomicBool>,
) -> Option<Vec<DiffOp>> {
    let mut hook = Tap {
        inner: Compact::new(Replace::new(Capture::new()), ka, kb),
        early,
        cancel,
    };
    let deadline = Some(Instant::now() + DEADLINE);
    diff_deadline(Algorithm::Myers, &mut hook, ka, 0..ka.len(), kb, 0..kb.len(), deadline).ok()?;
    Some(hook.inner.into_inner().into_inner().into_ops())
}

/// The alignment was given up: its cancel flag was set.
struct Cancelled;

/// Passes Myers' ops on unchanged, telling `early` of the matches on the way; stops Myers
/// (an error out of a hook ends it) once `cancel` is set.
struct Tap<'c, D, F> {
    inner: D,
    early: F,
    cancel: Option<&'c AtomicBool>,
}

impl<D, F> Tap<'_, D, F> {
    fn go(&self) -> Result<(), Cancelled> {
        match self.cancel {
            Some(c) if c.load(Ordering::Relaxed) => Err(Cancelled),
            _ => Ok(()),
        }
    }
}

fn never(e: Infallible) -> Cancelled {
    match e {}
}

impl<D: DiffHook<Error = Infallible>, F: FnMut(usize, usize, usize)> DiffHook for Tap<'_, D, F> {
    type Error = Cancelled;
    fn equal(&mut self, old_index: usize, new_index: usize, len: usize) -> Result<(), Cancelled> {
        self.go()?;
        (self.early)(old_index, new_index, len);
        self.inner.equal(old_index, new_index, len).map_err(never)
    }
    fn delete(&mut self, old_index: usize, old_len: usize, new_index: usize) -> Result<(), Cancelled> {
        self.go()?;
        self.inner.delete(old_index, old_len, new_index).map_err(never)
    }
    fn insert(&mut self, old_index: usize, new_index: usize, new_len: usize) -> Result<(), Cancelled> {
        self.go()?;
        self.inner.insert(old_index, new_index, new_len).map_err(never)
    }
    fn replace(&mut self, old_index: usize, old_len: usize, new_index: usize, new_len: usize) -> Result<(), Cancelled> {
        self.go()?;
        self.inner
            .replace(old_index, old_len, new_index, new_len)
            .map_err(never)
    }
    fn finish(&mut self) -> Result<(), Cancelled> {
        self.go()?;
        self.inner.finish().map_err(never)
    }
}

/// When the calls left over on the two sides are the same multiset, the runs made the same
/// calls in another order: pair them, first with first per key, as moves. Otherwise they stay
/// added and removed (pairing leftovers of runs that differ anyway would invent moves, and
/// make a diff of two unrelated long runs compare every payload).
fn pair_moves(ka: &[u32], kb: &[u32], steps: Vec<Step>) -> Vec<Step> {
    let mut removed: HashMap<u32, VecDeque<usize>> = HashMap::new();
    let mut balance: HashMap<u32, i64> = HashMap::new();
    for s in &steps {
        match *s {
            Step::Removed(i) => {
                removed.entry(ka[i]).or_default().push_back(i);
                *balance.entry(ka[i]).or_default() += 1;
            }
            Step::Added(j) => *balance.entry(kb[j]).or_default() -= 1,
            _ => {}
        }
    }
    if removed.is_empty() || balance.values().any(|&b| b != 0) {
        return steps;
    }
    let mut moved_from = vec![false; ka.len()];
    let mut out = Vec::with_capacity(steps.len());
    for s in steps {
        match s {
            Step::Added(j) => {
                let i = removed
                    .get_mut(&kb[j])
                    .and_then(VecDeque::pop_front)
                    .expect("balanced multisets");
                moved_from[i] = true;
                out.push(Step::Moved(i, j));
            }
            _ => out.push(s),
        }
    }
    out.retain(|s| !matches!(*s, Step::Removed(i) if moved_from[i]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NewEvent, Trace};

    fn trace(names: &[&str]) -> (Trace, Vec<Call>) {
        let mut t = Trace::default();
        for n in names {
            let kind = if n.starts_with("llm") {
                EventKind::LlmCall
            } else {
                EventKind::ToolCall
            };
            t.add(NewEvent::new(kind, n));
        }
        t.add(NewEvent::new(EventKind::State, "not a call"));
        t.finalize();
        let c = calls(&t, false);
        (t, c)
    }

    fn run(a: &[&str], b: &[&str]) -> Vec<Step> {
        let (ta, ca) = trace(a);
        let (tb, cb) = trace(b);
        align(&ta, &ca, &tb, &cb)
    }

    #[test]
    fn calls_are_numbered_per_kind() {
        let (_, c) = trace(&["search", "llm-a", "fetch", "llm-a"]);
        let idx: Vec<_> = c.iter().map(|c| c.kind_index).collect();
        assert_eq!(idx, vec![0, 0, 1, 1]);
        assert_eq!(c.len(), 4, "the state event is no call");
    }

    #[test]
    fn added_and_removed_calls() {
        use Step::*;
        assert_eq!(
            run(&["a", "b", "c"], &["a", "c", "d"]),
            vec![Pair(0, 0), Removed(1), Pair(2, 1), Added(2)]
        );
    }

    #[test]
    fn swapped_calls_are_moves() {
        use Step::*;
        let s = run(&["a", "b"], &["b", "a"]);
        assert_eq!(s.len(), 2);
        assert!(s.iter().any(|x| matches!(x, Moved(_, _))));
        assert!(!s.iter().any(|x| matches!(x, Added(_) | Removed(_))));
    }

    #[test]
    fn leftovers_of_different_multisets_are_not_moves() {
        use Step::*;
        // `a` moved and `d` added: not the same calls, so no move is invented
        let s = run(&["a", "b", "c"], &["b", "c", "a", "d"]);
        assert!(!s.iter().any(|x| matches!(x, Moved(_, _))), "{s:?}");
        assert_eq!(s.iter().filter(|x| matches!(x, Added(_))).count(), 2);
    }

    proptest::proptest! {
        /// The tapped script is similar's own, and every early match pairs equal keys.
        #[test]
        fn the_tapped_script_is_similars(
            ka in proptest::collection::vec(0u32..6, 0..120),
            kb in proptest::collection::vec(0u32..6, 0..120),
        ) {
            let mut early = Vec::new();
            let ops = script(&ka, &kb, |i, j, n| early.push((i, j, n)), None).unwrap();
            let reference = similar::capture_diff_slices_deadline(Algorithm::Myers, &ka, &kb, None);
            proptest::prop_assert_eq!(ops, reference);
            let mut seen_a = vec![false; ka.len()];
            for (i, j, n) in early {
                for k in 0..n {
                    proptest::prop_assert_eq!(ka[i + k], kb[j + k]);
                    proptest::prop_assert!(!std::mem::replace(&mut seen_a[i + k], true), "one match per call");
                }
            }
        }
    }

    #[test]
    fn early_matches_of_a_long_alignment_mostly_survive() {
        // Two unrelated sequences over a small alphabet, as two runs of one agent.
        let keys = |seed: u64, n: usize| -> Vec<u32> {
            let mut x = seed;
            (0..n)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((x >> 33) % 12) as u32
                })
                .collect()
        };
        let (ka, kb) = (keys(1, 3000), keys(2, 3000));
        let mut early = std::collections::HashSet::new();
        let ops = script(&ka, &kb, |i, j, n| early.extend((0..n).map(|k| (i + k, j + k))), None).unwrap();
        let fin: Vec<(usize, usize)> = ops
            .iter()
            .filter_map(|op| match *op {
                DiffOp::Equal {
                    old_index,
                    new_index,
                    len,
                } => Some((0..len).map(move |k| (old_index + k, new_index + k))),
                _ => None,
            })
            .flatten()
            .collect();
        assert!(fin.len() > 1000, "{}", fin.len());
        let kept = fin.iter().filter(|p| early.contains(p)).count();
        assert!(
            kept * 10 >= fin.len() * 9,
            "{kept} of {} final matches were told early",
            fin.len()
        );
    }

    #[test]
    fn kind_is_part_of_the_key() {
        use Step::*;
        // a tool named like an LLM call does not pair with it
        let (mut ta, _) = trace(&[]);
        ta.add(NewEvent::new(EventKind::ToolCall, "gpt"));
        let (mut tb, _) = trace(&[]);
        tb.add(NewEvent::new(EventKind::LlmCall, "gpt"));
        let (ca, cb) = (calls(&ta, false), calls(&tb, false));
        assert_eq!(align(&ta, &ca, &tb, &cb), vec![Removed(0), Added(0)]);
    }
}
