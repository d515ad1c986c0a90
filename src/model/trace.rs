use super::event::{Event, EventKind, NO_PARENT, Origin, Status, Usage};
use super::payload::{Payload, PayloadRef};
use super::strings::{StrRef, Strings};
use rustc_hash::{FxHashMap as HashMap, FxHasher};
use serde::Serialize;
use serde_json::Value;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Ok,
    Error,
    #[default]
    Unknown,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Ok => "ok",
            RunStatus::Error => "error",
            RunStatus::Unknown => "unknown",
        }
    }
    pub fn parse(s: &str) -> RunStatus {
        match s.to_ascii_lowercase().as_str() {
            "running" | "in_progress" | "started" | "active" => RunStatus::Running,
            "ok" | "success" | "succeeded" | "completed" | "done" | "passed" => RunStatus::Ok,
            "error" | "failed" | "failure" | "crashed" | "aborted" => RunStatus::Error,
            _ => RunStatus::Unknown,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// A problem found while loading: the rest of the input still loads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub path: PathBuf,
    /// 1-based line number, when the problem is on a line.
    pub line: Option<u64>,
    pub severity: Severity,
    pub message: String,
}

impl Diagnostic {
    pub fn error(path: impl Into<PathBuf>, line: Option<u64>, message: impl Into<String>) -> Self {
        Diagnostic {
            path: path.into(),
            line,
            severity: Severity::Error,
            message: message.into(),
        }
    }
    pub fn warning(path: impl Into<PathBuf>, line: Option<u64>, message: impl Into<String>) -> Self {
        Diagnostic {
            path: path.into(),
            line,
            severity: Severity::Warning,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        match self.line {
            Some(l) => write!(f, "{}:{}: {}: {}", self.path.display(), l, sev, self.message),
            None => write!(f, "{}: {}: {}", self.path.display(), sev, self.message),
        }
    }
}

/// Run metadata.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunMeta {
    pub id: String,
    pub name: Option<String>,
    pub format: &'static str,
    pub source: PathBuf,
    pub status: RunStatus,
    /// Nanoseconds since the epoch.
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub model: Option<String>,
    /// Free-form attributes from the source (cwd, argv, fingerprint, ...).
    pub attributes: Vec<(String, Value)>,
}

/// Counts derived from the events (never trusted from metadata that may lag behind).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub events: usize,
    pub tool_calls: usize,
    pub llm_calls: usize,
    pub errors: usize,
    pub tokens: u64,
}

/// How a new event names its parent.
#[derive(Clone, Copy, Debug)]
pub enum Parent<'a> {
    None,
    Index(u32),
    /// The source's id of the parent, which may not have arrived yet.
    Id(&'a str),
}

/// Everything needed to add one event; strings are borrowed and copied into the trace.
#[derive(Clone, Debug)]
pub struct NewEvent<'a> {
    pub kind: EventKind,
    pub name: &'a str,
    pub id: Option<&'a str>,
    pub parent: Parent<'a>,
    pub start: Option<i64>,
    pub duration: Option<i64>,
    pub status: Status,
    pub usage: Option<Usage>,
    pub model: Option<&'a str>,
    pub payload: PayloadRef,
    pub origin: Origin,
}

impl<'a> NewEvent<'a> {
    pub fn new(kind: EventKind, name: &'a str) -> Self {
        NewEvent {
            kind,
            name,
            id: None,
            parent: Parent::None,
            start: None,
            duration: None,
            status: Status::Unknown,
            usage: None,
            model: None,
            payload: PayloadRef::None,
            origin: Origin::default(),
        }
    }
}

/// One run: metadata plus an arena of events with parent/children links. A forest is legal.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub meta: RunMeta,
    pub events: Vec<Event>,
    pub roots: Vec<u32>,
    pub strings: Strings,
    /// Files that events' origins point into.
    pub files: Vec<PathBuf>,
    pub diagnostics: Vec<Diagnostic>,
    ids: IdIndex,
    /// Children that arrived before their parent, by the parent's id hash.
    waiting: HashMap<u64, Vec<(u32, StrRef)>>,
    /// Parents whose children must be re-sorted at the next `finalize`.
    dirty: Vec<u32>,
    roots_dirty: bool,
    /// One entry each time events already there changed place (adopted, re-parented,
    /// re-sorted): the lowest index that moved. Plain appends add nothing. A view of a growing
    /// trace that knows its first N events extends its rows while every entry since its last
    /// look is at least N, and rebuilds them otherwise.
    moves: Vec<u32>,
}

/// Source id → event index, storing only a 64-bit hash per id (the id text lives in
/// `Strings`); the rare hash collision falls back to a map keyed by the full id.
#[derive(Clone, Debug, Default)]
struct IdIndex {
    by_hash: HashSlots,
    /// SipHash here: ids crafted to collide under the fast hash land in this map, which must
    /// not degrade in turn.
    collided: std::collections::HashMap<Box<str>, u32>,
}

/// An open-addressing table of (id hash, event index), linear probing, at most half full.
/// Our own rather than a `HashMap` for one thing a map does not offer: a prefetch of the
/// slot an id will use, without waiting for it. A large load adds ids in random slots of a
/// table far larger than the cache; a lookup ahead (what we did before) stalled on the miss
/// itself and was 5.6% of a load's CPU.
#[derive(Clone, Debug, Default)]
struct HashSlots {
    /// `(hash, index + 1)`; index 0 is an empty slot.
    slots: Vec<(u64, u32)>,
    len: usize,
}

/// Ask for transparent huge pages for a large table read at random: with 4 KiB pages
/// nearly every prefetch of an id's slot also missed the TLB, and the page walk held it up.
/// `check` of 1M events, two sets of nine interleaved runs: 1.62 → 1.43 and 1.64 → 1.57 s
/// median; the prefetch went from 6% to 3% of samples. Only a hint: where the system has
/// none to give, nothing changes.
fn advise_huge_pages<T>(table: &[T]) {
    const HUGE: usize = 2 << 20;
    let bytes = std::mem::size_of_val(table);
    if bytes < 2 * HUGE {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let start = table.as_ptr() as usize;
        let aligned = start.next_multiple_of(HUGE);
        let end = start + bytes;
        if end > aligned {
            // SAFETY: the range lies inside `table`'s allocation; MADV_HUGEPAGE changes how
            // its pages are backed, never their contents.
            unsafe { libc::madvise(aligned as *mut libc::c_void, end - aligned, libc::MADV_HUGEPAGE) };
        }
    }
}

impl HashSlots {
    fn home(&self, h: u64) -> usize {
        // The high bits of a multiplicative mix: FxHash's low bits are weak.
        let bits = self.slots.len().trailing_zeros();
        (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    fn get(&self, h: u64) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(h);
        loop {
            match self.slots[i] {
                (_, 0) => return None,
                (k, v) if k == h => return Some(v - 1),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Insert a hash that is not there yet.
    fn insert_new(&mut self, h: u64, idx: u32) {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(h);
        while self.slots[i].1 != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = (h, idx + 1);
        self.len += 1;
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(64);
        let old = std::mem::replace(&mut self.slots, vec![(0, 0); size]);
        advise_huge_pages(&self.slots);
        self.len = 0;
        for (h, v) in old.into_iter().filter(|&(_, v)| v != 0) {
            self.insert_new(h, v - 1);
        }
    }

    fn prefetch(&self, h: u64) {
        if self.slots.is_empty() {
            return;
        }
        let slot = &self.slots[self.home(h)];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is a hint; it never faults and reads nothing into the program.
        unsafe {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            _mm_prefetch::<_MM_HINT_T0>((slot as *const (u64, u32)).cast::<i8>());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }
}

/// Ids are not attacker-chosen keys of a long-lived service: a fast hash is fine here, and
/// it is a measurable share of indexing time.
fn hash_id(id: &str) -> u64 {
    let mut h = FxHasher::default();
    id.hash(&mut h);
    h.finish()
}

impl Trace {
    pub fn new(meta: RunMeta) -> Self {
        Trace {
            meta,
            ..Default::default()
        }
    }

    pub fn str(&self, r: StrRef) -> &str {
        self.strings.get(r)
    }
    pub fn name(&self, i: u32) -> &str {
        self.strings.get(self.events[i as usize].name)
    }
    pub fn event(&self, i: u32) -> &Event {
        &self.events[i as usize]
    }
    pub fn event_mut(&mut self, i: u32) -> &mut Event {
        &mut self.events[i as usize]
    }
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// The in-memory payload of an event, made (empty) if it has none: for formats that fill
    /// an event from several records (a call, then its result).
    pub fn payload_mut(&mut self, i: u32) -> &mut Payload {
        let e = &mut self.events[i as usize];
        if !matches!(e.payload, PayloadRef::Inline(_)) {
            e.payload = PayloadRef::Inline(Box::default());
        }
        match &mut e.payload {
            PayloadRef::Inline(p) => p,
            _ => unreachable!("set just above"),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Register a file that origins can point to; returns its index.
    pub fn add_file(&mut self, path: impl Into<PathBuf>) -> u16 {
        let p = path.into();
        if let Some(i) = self.files.iter().position(|f| *f == p) {
            return i as u16;
        }
        self.files.push(p);
        (self.files.len() - 1).min(u16::MAX as usize) as u16
    }

    /// Start bringing the id index's slot for `id` into the cache: an `add` of that id follows
    /// soon. The index is large and its slots random, so without this nearly every add waits
    /// for memory (most of the in-order half of a large load).
    pub fn prefetch_id(&self, id: &str) {
        self.ids.by_hash.prefetch(hash_id(id));
    }

    /// Find an event by the source's own id.
    pub fn find(&self, id: &str) -> Option<u32> {
        let h = hash_id(id);
        match self.ids.by_hash.get(h) {
            Some(i) if self.strings.get(self.events[i as usize].source_id) == id => Some(i),
            _ => self.ids.collided.get(id).copied(),
        }
    }

    /// Add an event. A parent named by id that has not arrived yet is waited for: the event is
    /// a root until its parent appears (DESIGN §2: Maida and OTLP write children first).
    pub fn add(&mut self, ev: NewEvent<'_>) -> u32 {
        let idx = self.events.len() as u32;
        let name = self.strings.intern(ev.name);
        let model = ev.model.map(|m| self.strings.intern(m)).unwrap_or_default();
        let source_id = ev.id.map(|s| self.strings.push(s)).unwrap_or_default();
        let parent = match ev.parent {
            Parent::None => NO_PARENT,
            Parent::Index(p) if (p as usize) < self.events.len() => p,
            Parent::Index(_) => NO_PARENT,
            Parent::Id(pid) => match self.find(pid) {
                Some(p) => p,
                None => {
                    let r = self.strings.push(pid);
                    self.waiting.entry(hash_id(pid)).or_default().push((idx, r));
                    NO_PARENT
                }
            },
        };
        self.events.push(Event {
            kind: ev.kind,
            name,
            source_id,
            model,
            parent,
            children: Vec::new(),
            start: ev.start,
            duration: ev.duration,
            status: ev.status,
            usage: ev.usage.filter(|u| !u.is_empty()).map(Box::new),
            payload: ev.payload,
            origin: ev.origin,
            origin2: None,
        });
        if parent == NO_PARENT {
            if self.roots.last().is_some_and(|&l| !self.in_order(l, idx)) {
                self.roots_dirty = true;
            }
            self.roots.push(idx);
        } else {
            self.link_child(parent, idx);
        }
        if let Some(id) = ev.id.filter(|s| !s.is_empty()) {
            self.index_id(id, idx);
            self.adopt_waiting(id, idx);
        }
        idx
    }

    fn index_id(&mut self, id: &str, idx: u32) {
        let h = hash_id(id);
        match self.ids.by_hash.get(h) {
            None => self.ids.by_hash.insert_new(h, idx),
            // A repeated id keeps pointing at its first event; a true collision goes aside.
            Some(other) if self.strings.get(self.events[other as usize].source_id) == id => {}
            Some(_) => {
                self.ids.collided.entry(id.into()).or_insert(idx);
            }
        }
    }

    fn adopt_waiting(&mut self, id: &str, parent: u32) {
        let h = hash_id(id);
        let Some(list) = self.waiting.remove(&h) else {
            return;
        };
        let mut keep = Vec::new();
        for (child, pid) in list {
            if self.strings.get(pid) != id {
                keep.push((child, pid));
                continue;
            }
            if child == parent || self.is_ancestor(child, parent) {
                continue; // a cycle in the source: leave the child a root
            }
            self.events[child as usize].parent = parent;
            self.link_child(parent, child);
            self.roots_dirty = true;
            self.moves.push(child);
        }
        if !keep.is_empty() {
            self.waiting.insert(h, keep);
        }
    }

    fn is_ancestor(&self, a: u32, mut b: u32) -> bool {
        let mut steps = 0;
        while b != NO_PARENT && steps < 100_000 {
            if b == a {
                return true;
            }
            b = self.events[b as usize].parent;
            steps += 1;
        }
        false
    }

    fn link_child(&mut self, parent: u32, child: u32) {
        let last = self.events[parent as usize].children.last().copied();
        let in_order = last.is_none_or(|l| self.in_order(l, child));
        self.events[parent as usize].children.push(child);
        if !in_order {
            self.dirty.push(parent);
        }
    }

    fn in_order(&self, a: u32, b: u32) -> bool {
        sibling_key(&self.events_key(a)) <= sibling_key(&self.events_key(b))
    }

    fn events_key(&self, i: u32) -> (Option<i64>, Option<i64>, u32) {
        let e = &self.events[i as usize];
        (e.start, e.end(), i)
    }

    /// Make a child of `child` under `parent` after the fact (formats that learn the
    /// relation late, such as a result that names its call).
    pub fn set_parent(&mut self, child: u32, parent: u32) {
        if child == parent || self.is_ancestor(child, parent) {
            return;
        }
        let old = self.events[child as usize].parent;
        if old == parent {
            return;
        }
        if old == NO_PARENT {
            self.roots_dirty = true;
        } else {
            self.events[old as usize].children.retain(|&c| c != child);
        }
        self.events[child as usize].parent = parent;
        self.link_child(parent, child);
        self.moves.push(child);
    }

    /// How many times events already there changed place (see the field).
    pub fn reshaped(&self) -> u64 {
        self.moves.len() as u64
    }

    /// The lowest event index that changed place since `reshaped()` was `since`
    /// (`u32::MAX` when none did).
    pub fn moved_since(&self, since: u64) -> u32 {
        let from = (since as usize).min(self.moves.len());
        self.moves[from..].iter().copied().min().unwrap_or(u32::MAX)
    }

    /// Sort what changed since the last call: siblings by (start, end, file order), where a
    /// sibling group in which any event has no time is kept in file order (DESIGN §2).
    /// Cheap when little changed, so the live tail can call it after every batch.
    pub fn finalize(&mut self) {
        if self.roots_dirty {
            let events = &self.events;
            let before = std::mem::take(&mut self.roots);
            let mut roots: Vec<u32> = before
                .iter()
                .copied()
                .filter(|&r| events[r as usize].parent == NO_PARENT)
                .collect();
            self.sort_siblings(&mut roots);
            roots.dedup();
            if let Some(m) = first_moved(&before, &roots) {
                self.moves.push(m);
            }
            self.roots = roots;
            self.roots_dirty = false;
        }
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable();
        dirty.dedup();
        for p in dirty {
            let mut ch = std::mem::take(&mut self.events[p as usize].children);
            let before = ch.clone();
            self.sort_siblings(&mut ch);
            if let Some(m) = first_moved(&before, &ch) {
                self.moves.push(m);
            }
            self.events[p as usize].children = ch;
        }
    }

    fn sort_siblings(&self, list: &mut [u32]) {
        if list.iter().all(|&i| self.events[i as usize].start.is_some()) {
            list.sort_by_key(|&i| sibling_key(&self.events_key(i)));
        } else {
            list.sort_unstable();
        }
    }

    pub fn children(&self, i: u32) -> &[u32] {
        &self.events[i as usize].children
    }

    pub fn depth(&self, mut i: u32) -> usize {
        let mut d = 0;
        while self.events[i as usize].parent != NO_PARENT && d < 10_000 {
            i = self.events[i as usize].parent;
            d += 1;
        }
        d
    }

    /// Depth-first walk over the forest in display order: (index, depth).
    pub fn walk(&self) -> Vec<(u32, usize)> {
        let mut out = Vec::with_capacity(self.events.len());
        let mut stack: Vec<(u32, usize)> = self.roots.iter().rev().map(|&r| (r, 0)).collect();
        while let Some((i, d)) = stack.pop() {
            out.push((i, d));
            for &c in self.events[i as usize].children.iter().rev() {
                stack.push((c, d + 1));
            }
        }
        out
    }

    pub fn counts(&self) -> Counts {
        counts_of(&self.events)
    }

    /// Start and end of the run: metadata where it has them, else the events' extent.
    pub fn time_span(&self) -> (Option<i64>, Option<i64>) {
        let (lo, hi) = (self.meta.start, self.meta.end);
        if lo.is_some() && hi.is_some() {
            return (lo, hi);
        }
        let (elo, ehi) = self.events_span();
        (lo.or(elo), hi.or(ehi))
    }

    /// The earliest start and latest end of the events that have a start.
    pub fn events_span(&self) -> (Option<i64>, Option<i64>) {
        let mut lo: Option<i64> = None;
        let mut hi: Option<i64> = None;
        for e in &self.events {
            if let Some(s) = e.start {
                lo = Some(lo.map_or(s, |x| x.min(s)));
                let end = e.end().unwrap_or(s);
                hi = Some(hi.map_or(end, |x| x.max(end)));
            }
        }
        (lo, hi)
    }

    pub fn duration(&self) -> Option<i64> {
        match self.time_span() {
            // Checked: times from a trace may span more than i64 (i64::MIN to i64::MAX).
            (Some(a), Some(b)) if b >= a => b.checked_sub(a),
            _ => None,
        }
    }

    /// The worst error diagnostic, if any.
    pub fn has_error_diagnostics(&self) -> bool {
        self.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }
}

/// Counts of a run's events (a slice of them: a view adds up the events that arrive).
pub fn counts_of(events: &[Event]) -> Counts {
    let mut c = Counts {
        events: events.len(),
        ..Default::default()
    };
    for e in events {
        match e.kind {
            EventKind::ToolCall => c.tool_calls += 1,
            EventKind::LlmCall => c.llm_calls += 1,
            _ => {}
        }
        // The run's own status is reported apart; errors are the failing steps inside it.
        if e.is_error() && e.kind != EventKind::Run {
            c.errors += 1;
        }
        if e.kind == EventKind::LlmCall {
            let n = e.usage.as_ref().and_then(|u| u.sum()).unwrap_or(0);
            c.tokens = c.tokens.saturating_add(n);
        }
    }
    c
}

/// The lowest index among the events whose position differs between two sibling lists
/// (one dropped from the list counts as moved).
fn first_moved(before: &[u32], after: &[u32]) -> Option<u32> {
    let from = before.iter().zip(after).take_while(|(a, b)| a == b).count();
    before[from..].iter().chain(&after[from..]).copied().min()
}

fn sibling_key(k: &(Option<i64>, Option<i64>, u32)) -> (i64, i64, u32) {
    (k.0.unwrap_or(i64::MIN), k.1.unwrap_or(i64::MIN), k.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The id table answers as a map would, across growth; hashes that share a home
        /// slot (here: many small ones) probe past each other.
        #[test]
        fn hash_slots_answer_as_a_map(keys in proptest::collection::vec(0u64..5000, 0..3000)) {
            use proptest::prop_assert_eq;
            let mut slots = HashSlots::default();
            let mut map = std::collections::HashMap::new();
            for (i, k) in keys.iter().enumerate() {
                if slots.get(*k).is_none() {
                    slots.insert_new(*k, i as u32);
                    map.insert(*k, i as u32);
                }
            }
            prop_assert_eq!(slots.len, map.len());
            for k in 0..5000u64 {
                prop_assert_eq!(slots.get(k), map.get(&k).copied());
            }
            proptest::prop_assert!(slots.slots.len() >= 2 * slots.len);
        }
    }

    fn ev<'a>(name: &'a str, id: &'a str, parent: Parent<'a>, start: Option<i64>) -> NewEvent<'a> {
        NewEvent {
            id: Some(id),
            parent,
            start,
            ..NewEvent::new(EventKind::Step, name)
        }
    }

    #[test]
    fn children_before_parent_are_adopted() {
        let mut t = Trace::default();
        let c1 = t.add(ev("c1", "c1", Parent::Id("root"), Some(10)));
        let c2 = t.add(ev("c2", "c2", Parent::Id("root"), Some(5)));
        assert_eq!(t.roots.len(), 2);
        let r = t.add(ev("root", "root", Parent::None, Some(0)));
        t.finalize();
        assert_eq!(t.roots, vec![r]);
        assert_eq!(t.children(r), &[c2, c1], "sorted by start");
        assert_eq!(t.depth(c1), 1);
    }

    #[test]
    fn orphans_whose_parent_never_comes_stay_roots() {
        let mut t = Trace::default();
        let a = t.add(ev("a", "a", Parent::Id("missing"), None));
        t.finalize();
        assert_eq!(t.roots, vec![a]);
    }

    #[test]
    fn missing_times_keep_file_order() {
        let mut t = Trace::default();
        let r = t.add(ev("r", "r", Parent::None, None));
        let a = t.add(ev("a", "a", Parent::Index(r), Some(50)));
        let b = t.add(ev("b", "b", Parent::Index(r), None));
        let c = t.add(ev("c", "c", Parent::Index(r), Some(10)));
        t.finalize();
        assert_eq!(t.children(r), &[a, b, c]);
    }

    #[test]
    fn ties_keep_file_order() {
        let mut t = Trace::default();
        let r = t.add(ev("r", "r", Parent::None, Some(1)));
        let a = t.add(ev("a", "a", Parent::Index(r), Some(5)));
        let b = t.add(ev("b", "b", Parent::Index(r), Some(5)));
        t.finalize();
        assert_eq!(t.children(r), &[a, b]);
        assert_eq!(t.walk(), vec![(r, 0), (a, 1), (b, 1)]);
    }

    #[test]
    fn a_cycle_in_the_source_does_not_hang() {
        let mut t = Trace::default();
        let a = t.add(ev("a", "a", Parent::Id("b"), None));
        let b = t.add(ev("b", "b", Parent::Id("a"), None));
        t.finalize();
        assert!(t.walk().len() == 2);
        assert!(t.event(a).parent == b || t.event(b).parent == a || t.roots.len() == 2);
    }

    #[test]
    fn counts_come_from_events() {
        let mut t = Trace::default();
        t.add(NewEvent::new(EventKind::ToolCall, "x"));
        t.add(NewEvent {
            status: Status::Error,
            ..NewEvent::new(EventKind::ToolCall, "y")
        });
        t.add(NewEvent {
            usage: Some(Usage {
                input: Some(3),
                output: Some(4),
                total: None,
            }),
            ..NewEvent::new(EventKind::LlmCall, "m")
        });
        let c = t.counts();
        assert_eq!(
            (c.events, c.tool_calls, c.llm_calls, c.errors, c.tokens),
            (3, 2, 1, 1, 7)
        );
    }
}
