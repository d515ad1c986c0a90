use super::event::{Event, EventKind, NO_PARENT, Origin, Status, Usage};
use super::payload::{Payload, PayloadRef};
use super::strings::{StrRef, Strings};
use rustc_hash::{FxHashMap as HashMap, FxHasher};
use serde::Serialize;
use serde_json::Value;
use smallvec::SmallVec;
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
    /// The status of the run's root event: a run still going is a pending event.
    pub fn event_status(self) -> Status {
        match self {
            RunStatus::Running => Status::Pending,
            RunStatus::Ok => Status::Ok,
            RunStatus::Error => Status::Error,
            RunStatus::Unknown => Status::Unknown,
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
    /// Attributes every run of its source shares (a dataset's metadata line), held once for
    /// all of them: a clone in each of a dataset's 59,000 runs was 35 MB. Read both with
    /// [`RunMeta::all_attributes`].
    #[serde(skip)]
    pub shared: Option<std::sync::Arc<Vec<(String, Value)>>>,
}

/// The run attribute holding its badges: short warnings shown beside its name in the runs
/// list and the header (an attribute, so that every `RunMeta { .. }` stays as it is).
pub const BADGES_ATTR: &str = "tracetui.badges";

/// The run attribute holding the cost the recorder itself wrote for the whole run, in US
/// dollars (Claude Code's `cost-state`): kept beside the cost tracetui computes from tokens.
pub const RECORDED_COST_ATTR: &str = "recorded_cost_usd";

/// The run attribute holding the tokens and cost the recorder itself counted for the whole
/// run, by model, as it wrote them (Claude Code's `cost-state.modelUsage`: per model
/// `inputTokens`, `outputTokens`, `cacheReadInputTokens`, `cacheCreationInputTokens`,
/// `cacheCreationEphemeral5mInputTokens`, `cacheCreationEphemeral1hInputTokens`,
/// `webSearchRequests`, `costUSD`); read by `recorded_by_model` in cost/usage.rs.
pub const RECORDED_USAGE_ATTR: &str = "recorded_usage";

impl RunMeta {
    /// The shared attributes, then the run's own.
    pub fn all_attributes(&self) -> impl Iterator<Item = &(String, Value)> {
        self.shared.iter().flat_map(|s| s.iter()).chain(self.attributes.iter())
    }

    /// Add a badge (once).
    pub fn add_badge(&mut self, text: &str) {
        let i = match self.attributes.iter().position(|(k, _)| k == BADGES_ATTR) {
            Some(i) => i,
            None => {
                self.attributes.push((BADGES_ATTR.into(), Value::Array(Vec::new())));
                self.attributes.len() - 1
            }
        };
        if let Value::Array(list) = &mut self.attributes[i].1
            && !list.iter().any(|b| b.as_str() == Some(text))
        {
            list.push(Value::String(text.into()));
        }
    }

    pub fn badges(&self) -> Vec<String> {
        self.attributes
            .iter()
            .filter(|(k, _)| k == BADGES_ATTR)
            .filter_map(|(_, v)| v.as_array())
            .flatten()
            .filter_map(|b| b.as_str().map(str::to_string))
            .collect()
    }
}

/// Records of a type (or shape) the format does not know, counted by type. Formats drift: a
/// recorder's new record type is normal, not a problem, so it is skipped quietly (no
/// diagnostic) and counted here, for `check` to say what was not read (DESIGN §3).
///
/// Bounded: at most [`Skipped::MAX_KINDS`] types of at most [`Skipped::MAX_NAME`] bytes each
/// (a hostile file could name a new type on every line); the rest count under one name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skipped(Vec<(Box<str>, u64)>);

impl Skipped {
    pub const MAX_KINDS: usize = 64;
    pub const MAX_NAME: usize = 80;
    /// Where types past [`Skipped::MAX_KINDS`] are counted.
    pub const OTHERS: &'static str = "(other types)";

    /// One more record of type `ty`.
    pub fn add(&mut self, ty: &str) {
        self.add_n(ty, 1);
    }

    pub fn add_n(&mut self, ty: &str, n: u64) {
        if n == 0 {
            return;
        }
        let ty = cut(ty, Self::MAX_NAME);
        if let Some(e) = self.0.iter_mut().find(|(k, _)| &**k == ty) {
            e.1 += n;
            return;
        }
        if self.0.len() + 1 < Self::MAX_KINDS || ty == Self::OTHERS {
            self.0.push((ty.into(), n));
        } else {
            self.add_n(Self::OTHERS, n);
        }
    }

    /// Add another trace's counts (a subagent's file read into its parent's trace).
    pub fn merge(&mut self, other: &Skipped) {
        for (k, n) in &other.0 {
            self.add_n(k, *n);
        }
    }

    /// (type, count), in the order first seen.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(k, n)| (&**k, *n))
    }

    pub fn total(&self) -> u64 {
        self.0.iter().map(|(_, n)| n).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// `s` cut to at most `max` bytes, at a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    &s[..i]
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
///
/// Sibling lists (the roots, each event's children) are kept sorted by `finalize`, which
/// costs what changed since its last call, not the size of the trace: each list remembers
/// how much of it is sorted and how many of its members have no time, and the changes since
/// (members appended, members that left, members whose times changed through `event_mut`)
/// are merged into it. Between two `finalize`s the lists hold the new members unsorted at
/// their end and, until then, members that have left.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub meta: RunMeta,
    pub events: Vec<Event>,
    pub roots: Vec<u32>,
    pub strings: Strings,
    /// Files that events' origins point into.
    pub files: Vec<PathBuf>,
    pub diagnostics: Vec<Diagnostic>,
    /// Records the format does not know, skipped quietly (DESIGN §3: formats drift).
    pub skipped: Skipped,
    /// Empty (not initialized) after `release_ids`: rebuilt from the events' ids at the next
    /// lookup or add. A whole trace rarely looks an id up again, and the table was 12–24
    /// bytes an event (issue 13's index budget is 128).
    ids: std::sync::OnceLock<IdIndex>,
    /// Children that arrived before their parent, by the parent's id hash.
    waiting: HashMap<u64, Vec<(u32, StrRef)>>,
    /// The children lists of the events that have children (`Event::kids` is 1 + the
    /// index here; most events have none, and a `Vec` in every event was 24 bytes).
    kids: Vec<Kids>,
    /// The sorted state of `roots`.
    roots_order: Sorted,
    /// Sibling groups (parent index, [`NO_PARENT`] for the roots) that were appended to
    /// since the last `finalize`.
    dirty: Vec<u32>,
    /// Members that left a group since the last `finalize`: (group, event).
    left: Vec<(u32, u32)>,
    /// Events lent out by `event_mut` since the last `finalize`, with their times then.
    touched: Vec<(u32, Option<i64>, Option<i64>)>,
    /// `touched` is compacted when it reaches this length.
    touched_cap: usize,
    /// The number of events at the last `finalize`: those after it sit in no sorted part.
    base: u32,
    /// `files` by path, once a trace has many (an event file each, as OpenHands and OpenCode
    /// sessions do): a search of the list made such a load quadratic (20,000 files: 73 s).
    file_index: HashMap<PathBuf, usize>,
    /// How much of `files` is in `file_index`.
    files_indexed: usize,
    /// `events_span` of the events before `base`, with their times at the last `finalize`:
    /// a growing run's extent then costs what came or changed since, not a scan of every event
    /// (Codex settles its run's times after every slice the explorer reads: that scan was 47%
    /// of its 1M-event load).
    span: (Option<i64>, Option<i64>),
    /// One entry each time events already there changed place (adopted, re-parented,
    /// re-sorted): the lowest index that moved. Plain appends add nothing. A view of a growing
    /// trace that knows its first N events extends its rows while every entry since its last
    /// look is at least N, and rebuilds them otherwise.
    moves: Vec<u32>,
}

/// How much of a sibling list `finalize` left sorted, and in which order: by (start, end,
/// index) when every member has a start, else by index (file order, DESIGN §2).
#[derive(Clone, Copy, Debug, Default)]
struct Sorted {
    /// Length of the sorted part (the list's length at the last `finalize`).
    len: u32,
    /// Members of the sorted part without a start.
    untimed: u32,
}

/// One event's children. Most parents have a few (an LLM call's tool calls): up to four
/// live in the list itself, with no allocation of their own (AgentDbg 1M: 5 bytes an event).
#[derive(Clone, Debug, Default)]
struct Kids {
    list: SmallVec<[u32; 4]>,
    order: Sorted,
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

impl IdIndex {
    fn index(&mut self, id: &str, idx: u32, events: &[Event], strings: &Strings) {
        let h = hash_id(id);
        match self.by_hash.get(h) {
            None => self.by_hash.insert_new(h, idx),
            // A repeated id keeps pointing at its first event; a true collision goes aside.
            Some(other) if strings.get(events[other as usize].source_id) == id => {}
            Some(_) => {
                self.collided.entry(id.into()).or_insert(idx);
            }
        }
    }
}

/// An open-addressing table of (id tag, event index), linear probing, at most two thirds
/// full (half full cost 8–16 bytes an event more than the index budget of issue 13 allows on
/// Copilot CLI and Assay; a probe past the home slot mostly stays in its cache line).
/// Our own rather than a `HashMap` for one thing a map does not offer: a prefetch of the
/// slot an id will use, without waiting for it. A large load adds ids in random slots of a
/// table far larger than the cache; a lookup ahead (what we did before) stalled on the miss
/// itself and was 5.6% of a load's CPU.
///
/// A slot is 8 bytes: a 32-bit tag of the id's hash (the home slot is derived from the tag,
/// so the table grows without the ids) and the index. Two ids are confused only when their
/// tags agree (about 120 pairs among 1M ids); the caller checks the id text and sends those
/// aside. Slots of full 64-bit hashes cost 16 bytes an event more.
#[derive(Clone, Debug, Default)]
struct HashSlots {
    /// `(tag, index + 1)`; index 0 is an empty slot.
    slots: Vec<(u32, u32)>,
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

/// The 32-bit tag of an id's hash: the SplitMix64 finalizer, so that every bit of the tag
/// depends on every bit of the hash (FxHash's low bits are weak), folded to 32 bits.
fn tag_of(h: u64) -> u32 {
    let mut z = h;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 32) as u32 ^ z as u32
}

impl HashSlots {
    fn home(&self, tag: u32) -> usize {
        // The high bits of a multiplicative mix of the tag.
        let bits = self.slots.len().trailing_zeros();
        ((tag as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    fn get(&self, h: u64) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let tag = tag_of(h);
        let mask = self.slots.len() - 1;
        let mut i = self.home(tag);
        loop {
            match self.slots[i] {
                (_, 0) => return None,
                (k, v) if k == tag => return Some(v - 1),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Insert an id whose hash `get` does not find.
    fn insert_new(&mut self, h: u64, idx: u32) {
        if (self.len + 1) * 3 > self.slots.len() * 2 {
            self.grow();
        }
        self.put(tag_of(h), idx + 1);
    }

    fn put(&mut self, tag: u32, v: u32) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(tag);
        while self.slots[i].1 != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = (tag, v);
        self.len += 1;
    }

    fn grow(&mut self) {
        // Small to start: a dataset holds thousands of traces of a few calls each.
        let size = (self.slots.len() * 2).max(16);
        let old = std::mem::replace(&mut self.slots, vec![(0, 0); size]);
        advise_huge_pages(&self.slots);
        self.len = 0;
        for (tag, v) in old.into_iter().filter(|&(_, v)| v != 0) {
            self.put(tag, v);
        }
    }

    fn prefetch(&self, h: u64) {
        if self.slots.is_empty() {
            return;
        }
        let slot = &self.slots[self.home(tag_of(h))];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is a hint; it never faults and reads nothing into the program.
        unsafe {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            _mm_prefetch::<_MM_HINT_T0>((slot as *const (u32, u32)).cast::<i8>());
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
    /// The event to change. Its times may change too: the next `finalize` moves it to its
    /// new place among its siblings.
    /// The index of an event of this trace given by reference (a format's payload decoder
    /// gets the event, not its index); None for an event of another trace.
    pub fn index_of(&self, e: &Event) -> Option<u32> {
        let size = std::mem::size_of::<Event>();
        let off = (e as *const Event as usize).wrapping_sub(self.events.as_ptr() as usize);
        let i = off / size;
        (off.is_multiple_of(size) && i < self.events.len() && std::ptr::eq(&self.events[i], e)).then_some(i as u32)
    }

    pub fn event_mut(&mut self, i: u32) -> &mut Event {
        let (start, duration) = (self.events[i as usize].start, self.events[i as usize].duration);
        // An event added since the last finalize sits in no sorted part: it is sorted in by
        // its times then, whatever they were (a load in one go noted every call's and
        // response's event here: a map of 300,000 notes for nothing, 3% of a Codex load).
        if i < self.base && self.touched.last().is_none_or(|t| t.0 != i) {
            if self.touched.len() >= self.touched_cap {
                self.compact_touched();
            }
            self.touched.push((i, start.into(), duration.into()));
        }
        &mut self.events[i as usize]
    }

    /// Keep only the first note of each event, and only of those whose times did change
    /// (most calls set a status or a result): the notes stay a few per retimed event.
    fn compact_touched(&mut self) {
        let events = &self.events;
        self.touched.sort_by_key(|t| t.0);
        self.touched.dedup_by_key(|t| t.0);
        self.touched.retain(|&(i, s, d)| {
            let e = &events[i as usize];
            (e.start, e.end()) != (s.into(), end_of(s, d))
        });
        self.touched_cap = (2 * self.touched.len()).max(1024);
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
        let found = if self.files.len() < FILES_SCANNED {
            self.files.iter().position(|f| *f == p)
        } else {
            // Files pushed to `files` directly are indexed here too; the first of equal
            // paths wins, as the scan would have it.
            for i in self.files_indexed..self.files.len() {
                self.file_index.entry(self.files[i].clone()).or_insert(i);
            }
            self.files_indexed = self.files.len();
            self.file_index.get(&p).copied()
        };
        if let Some(i) = found {
            return i.min(u16::MAX as usize) as u16;
        }
        self.files.push(p);
        (self.files.len() - 1).min(u16::MAX as usize) as u16
    }

    /// Start bringing the id index's slot for `id` into the cache: an `add` of that id follows
    /// soon. The index is large and its slots random, so without this nearly every add waits
    /// for memory (most of the in-order half of a large load).
    pub fn prefetch_id(&self, id: &str) {
        self.ids().by_hash.prefetch(hash_id(id));
    }

    fn ids(&self) -> &IdIndex {
        self.ids.get_or_init(|| self.rebuilt_ids())
    }

    fn ids_mut(&mut self) -> &mut IdIndex {
        if self.ids.get().is_none() {
            let t = self.rebuilt_ids();
            let _ = self.ids.set(t);
        }
        self.ids.get_mut().expect("set just above")
    }

    /// The table `add` would have built: every event's non-empty id in order, the first event
    /// of a repeated id kept.
    fn rebuilt_ids(&self) -> IdIndex {
        let mut t = IdIndex::default();
        for (idx, e) in self.events.iter().enumerate() {
            let id = self.strings.get(e.source_id);
            if !id.is_empty() {
                t.index(id, idx as u32, &self.events, &self.strings);
            }
        }
        t
    }

    /// Drop the id table of a trace that is whole (after its load's last `finalize`): it is
    /// rebuilt, the same, if an id is looked up or an event added later.
    pub fn release_ids(&mut self) {
        self.ids = std::sync::OnceLock::new();
    }

    /// Find an event by the source's own id.
    pub fn find(&self, id: &str) -> Option<u32> {
        let h = hash_id(id);
        let ids = self.ids();
        match ids.by_hash.get(h) {
            Some(i) if self.strings.get(self.events[i as usize].source_id) == id => Some(i),
            _ => ids.collided.get(id).copied(),
        }
    }

    /// Add an event. A parent named by id that has not arrived yet is waited for: the event is
    /// a root until its parent appears (DESIGN §2: Maida and OTLP write children first).
    pub fn add(&mut self, ev: NewEvent<'_>) -> u32 {
        let idx = self.events.len() as u32;
        let name = self.strings.intern(ev.name);
        let model = ev.model.map(|m| self.strings.intern(m)).unwrap_or_default();
        // An id that children already wait for is in the store once, with them (spans are
        // written children first: each OTLP span's id was stored twice, 17 MB a 1M spans).
        let source_id = ev
            .id
            .map(|s| self.waiting_ref(s).unwrap_or_else(|| self.strings.push(s)))
            .unwrap_or_default();
        let parent = match ev.parent {
            Parent::None => NO_PARENT,
            Parent::Index(p) if (p as usize) < self.events.len() => p,
            Parent::Index(_) => NO_PARENT,
            Parent::Id(pid) => match self.find(pid) {
                Some(p) => p,
                None => {
                    // Siblings waiting for one parent share its id's text.
                    let r = self.waiting_ref(pid).unwrap_or_else(|| self.strings.push(pid));
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
            kids: 0,
            start: ev.start.into(),
            duration: ev.duration.into(),
            status: ev.status,
            usage: ev.usage.filter(|u| !u.is_empty()).into(),
            payload: ev.payload,
            origin: ev.origin,
            origin2: None,
        });
        self.link(parent, idx);
        if let Some(id) = ev.id.filter(|s| !s.is_empty()) {
            self.index_id(id, idx);
            self.adopt_waiting(id, idx);
        }
        idx
    }

    /// Children that arrived before their parent, with the id of the parent they wait for.
    pub fn waiting_parents(&self) -> impl Iterator<Item = (u32, &str)> + '_ {
        self.waiting.values().flatten().map(|&(c, r)| (c, self.strings.get(r)))
    }

    /// The stored text of `id` if children wait for it.
    fn waiting_ref(&self, id: &str) -> Option<StrRef> {
        if id.is_empty() {
            return None;
        }
        let list = self.waiting.get(&hash_id(id))?;
        list.iter().map(|&(_, r)| r).find(|&r| self.strings.get(r) == id)
    }

    fn index_id(&mut self, id: &str, idx: u32) {
        self.ids_mut();
        let ids = self.ids.get_mut().expect("initialized just above");
        ids.index(id, idx, &self.events, &self.strings);
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
            // Usually a root; a format may have placed it meanwhile (`set_parent`).
            let old = std::mem::replace(&mut self.events[child as usize].parent, parent);
            self.left.push((old, child));
            self.link(parent, child);
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

    /// Append `child` to the sibling list of `parent` (the roots for [`NO_PARENT`]); the
    /// next `finalize` sorts it in.
    fn link(&mut self, parent: u32, child: u32) {
        let was_sorted = if parent == NO_PARENT {
            let sorted = self.roots.len() == self.roots_order.len as usize;
            self.roots.push(child);
            sorted
        } else {
            let slot = &mut self.events[parent as usize].kids;
            if *slot == 0 {
                self.kids.push(Kids::default());
                *slot = self.kids.len() as u32;
            }
            let k = &mut self.kids[*slot as usize - 1];
            let sorted = k.list.len() == k.order.len as usize;
            k.list.push(child);
            sorted
        };
        if was_sorted {
            self.dirty.push(parent);
        }
    }

    /// Make a child of `child` under `parent` after the fact (formats that learn the
    /// relation late, such as a result that names its call). The child leaves its old
    /// sibling list at the next `finalize`.
    pub fn set_parent(&mut self, child: u32, parent: u32) {
        if child == parent || self.is_ancestor(child, parent) {
            return;
        }
        let old = self.events[child as usize].parent;
        if old == parent {
            return;
        }
        self.left.push((old, child));
        self.events[child as usize].parent = parent;
        self.link(parent, child);
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
    /// The cost follows what changed (members appended, gone, or retimed through
    /// `event_mut`), not the size of the lists, so a loader can call it after every slice
    /// of a file: the result is the same as one call at the end.
    pub fn finalize(&mut self) {
        self.span = self.events_span();
        // Times as they were at the last finalize, of the events whose sort key changed since.
        let mut was: HashMap<u32, (Option<i64>, Option<i64>)> = HashMap::default();
        // Taken, not cleared: a finished trace keeps no notes' capacity (a dataset of 59,000
        // small traces kept 22 MB of it).
        for (i, s, d) in std::mem::take(&mut self.touched) {
            was.entry(i).or_insert((s, d));
        }
        self.touched_cap = 0;
        let events = &self.events;
        was.retain(|&i, &mut (s, d)| {
            let e = &events[i as usize];
            (e.start, e.end()) != (s.into(), end_of(s, d))
        });
        // (group, member, left): members that left a group, and retimed members, which
        // leave their place and come back in.
        let mut cands: Vec<(u32, u32, bool)> = std::mem::take(&mut self.left)
            .into_iter()
            .map(|(g, x)| (g, x, true))
            .collect();
        cands.extend(was.keys().map(|&x| (events[x as usize].parent, x, false)));
        // One entry a member, "left" first: a member that left may be anywhere.
        cands.sort_unstable_by_key(|c| (c.0, c.1, !c.2));
        cands.dedup_by_key(|c| (c.0, c.1));
        let mut groups: Vec<u32> = std::mem::take(&mut self.dirty);
        groups.extend(cands.iter().map(|c| c.0));
        groups.sort_unstable();
        groups.dedup();
        let ctx = Settle {
            events,
            was: &was,
            base: self.base,
        };
        let mut at = 0;
        for g in groups {
            while at < cands.len() && cands[at].0 < g {
                at += 1;
            }
            let from = at;
            while at < cands.len() && cands[at].0 == g {
                at += 1;
            }
            let cands = &cands[from..at];
            if g == NO_PARENT {
                ctx.settle(g, &mut self.roots, &mut self.roots_order, cands, &mut self.moves);
            } else if let Some(k) = self.kids.get_mut((events[g as usize].kids as usize).wrapping_sub(1)) {
                ctx.settle(g, &mut k.list, &mut k.order, cands, &mut self.moves);
            }
        }
        self.base = self.events.len() as u32;
    }

    /// Bytes the index holds, by part (capacities, not lengths: what the allocator gave),
    /// for the memory budget of issue 13. Payloads held in memory and metadata not counted.
    pub fn index_bytes(&self) -> Vec<(&'static str, usize)> {
        use std::mem::size_of;
        // Lists held in `Kids` itself are counted with it.
        let lists: usize = self
            .kids
            .iter()
            .filter(|k| k.list.spilled())
            .map(|k| k.list.capacity() * 4)
            .sum();
        vec![
            ("events", self.events.capacity() * size_of::<Event>()),
            ("roots", self.roots.capacity() * 4),
            ("children lists", self.kids.capacity() * size_of::<Kids>() + lists),
            (
                "id table",
                self.ids.get().map_or(0, |t| t.by_hash.slots.capacity()) * size_of::<(u32, u32)>(),
            ),
            ("strings", self.strings.bytes()),
            (
                "finalize notes",
                self.touched.capacity() * size_of::<(u32, Option<i64>, Option<i64>)>()
                    + (self.dirty.capacity() + self.moves.capacity()) * 4
                    + self.left.capacity() * 8,
            ),
            ("waiting", self.waiting.capacity() * 40),
        ]
    }

    /// The children of event `i`, in display order (after `finalize`).
    /// Give back the spare capacity of the events and children lists (a trace that is
    /// likely whole: its vectors grew by doubling).
    pub fn shrink_to_fit(&mut self) {
        self.events.shrink_to_fit();
        self.kids.shrink_to_fit();
        self.roots.shrink_to_fit();
        for k in &mut self.kids {
            k.list.shrink_to_fit();
        }
        // The text store grew by doubling too (4M OTLP spans in 67k traces: 40 MB of slack).
        self.strings.shrink_to_fit();
        // finalize's notes of what changed (empty after it; OTLP 1M: 5.5 MB kept for nothing).
        self.dirty.shrink_to_fit();
        self.left.shrink_to_fit();
        self.touched.shrink_to_fit();
        self.moves.shrink_to_fit();
    }

    pub fn children(&self, i: u32) -> &[u32] {
        match self.events[i as usize].kids {
            0 => &[],
            k => &self.kids[k as usize - 1].list,
        }
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
            for &c in self.children(i).iter().rev() {
                stack.push((c, d + 1));
            }
        }
        out
    }

    /// Counts of the run's events. Tokens: the sum over its LLM calls, or the totals the
    /// recorder wrote on the run event when the calls add up to fewer (as cost/usage.rs does).
    pub fn counts(&self) -> Counts {
        let mut c = counts_of(&self.events);
        let run = self.events.iter().filter(|e| e.kind == EventKind::Run);
        if let Some(n) = run.filter_map(|e| e.usage.get()?.sum()).next() {
            c.tokens = c.tokens.max(n);
        }
        c
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
        let (mut lo, mut hi) = self.span;
        for &(i, s, d) in &self.touched {
            if i >= self.base {
                continue; // among the new events below
            }
            let e = &self.events[i as usize];
            // An event at an edge that moved inward may have been the only one there.
            let (was_end, end) = (end_of(s, d).or(s), e.end().or(e.start.into()));
            let start_in = s.is_some() && s == lo && e.start.is_none_or(|x| Some(x) > s);
            let end_in = was_end.is_some() && was_end == hi && end.is_none_or(|x| Some(x) < was_end);
            if start_in || end_in {
                return Self::span_of(&self.events);
            }
            extend_span(&mut lo, &mut hi, e);
        }
        for e in &self.events[self.base as usize..] {
            extend_span(&mut lo, &mut hi, e);
        }
        (lo, hi)
    }

    fn span_of(events: &[Event]) -> (Option<i64>, Option<i64>) {
        let (mut lo, mut hi) = (None, None);
        for e in events {
            extend_span(&mut lo, &mut hi, e);
        }
        (lo, hi)
    }

    pub fn duration(&self) -> Option<i64> {
        match self.time_span() {
            // One instant and no recorded end (aider writes only a session's start) says
            // nothing of how long the run took: unknown, not 0.
            (Some(a), Some(b)) if a == b && self.meta.end.is_none() => None,
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
            let n = e.usage.get().and_then(|u| u.sum()).unwrap_or(0);
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

/// The order of siblings: by start, then end (unknown first), then file order.
fn sibling_key(start: Option<i64>, end: Option<i64>, i: u32) -> (i64, i64, u32) {
    (start.unwrap_or(i64::MIN), end.unwrap_or(i64::MIN), i)
}

/// Below this many files, `add_file` searches the list (no index to keep).
const FILES_SCANNED: usize = 16;

/// Widen an extent by an event that has a start.
fn extend_span(lo: &mut Option<i64>, hi: &mut Option<i64>, e: &Event) {
    if let Some(s) = e.start.get() {
        *lo = Some(lo.map_or(s, |x| x.min(s)));
        let end = e.end().unwrap_or(s);
        *hi = Some(hi.map_or(end, |x| x.max(end)));
    }
}

/// `Event::end` of given times.
fn end_of(start: Option<i64>, duration: Option<i64>) -> Option<i64> {
    match (start, duration) {
        (Some(s), Some(d)) => Some(s.saturating_add(d)),
        _ => None,
    }
}
/// A sibling list's members that left or were retimed are found by one pass over its sorted
/// part when they are at least this share of it (1 in this many), else by a binary search each.
const LINEAR_DROPS: usize = 32;
/// ... and at least this many (the pass marks them in a bitmap of every event). Tests take the
/// pass on small lists too.
const LINEAR_MIN: usize = if cfg!(test) { 1 } else { 256 };

/// What `finalize` reads while it settles one sibling list.
struct Settle<'a> {
    events: &'a [Event],
    /// (start, duration) at the last finalize of the events whose sort key changed since.
    was: &'a HashMap<u32, (Option<i64>, Option<i64>)>,
    /// Events from this index on were added since the last finalize: in no sorted part.
    base: u32,
}

impl Settle<'_> {
    fn start(&self, i: u32) -> Option<i64> {
        self.events[i as usize].start.into()
    }

    /// The sort key an event has now.
    fn key(&self, i: u32) -> (i64, i64, u32) {
        let e = &self.events[i as usize];
        sibling_key(e.start.into(), e.end(), i)
    }

    /// The sort key an event had at the last finalize (its place in a sorted part).
    fn key_was(&self, i: u32) -> (i64, i64, u32) {
        match self.was.get(&i) {
            Some(&(s, d)) => sibling_key(s, end_of(s, d), i),
            None => self.key(i),
        }
    }

    fn start_was(&self, i: u32) -> Option<i64> {
        match self.was.get(&i) {
            Some(&(s, _)) => s,
            None => self.start(i),
        }
    }

    /// Bring one sibling list up to date: drop the members of its sorted part that left or
    /// were retimed (found by binary search), then merge the new and retimed members in.
    /// Only the list from the first place that changes is rewritten; the lowest index of the
    /// events whose place changed goes to `moves` (one that left counts as moved).
    fn settle<L: SiblingList>(
        &self,
        group: u32,
        list: &mut L,
        order: &mut Sorted,
        cands: &[(u32, u32, bool)],
        moves: &mut Vec<u32>,
    ) {
        let sorted = (order.len as usize).min(list.len());
        let by_index = order.untimed > 0;
        let head = &list[..sorted];
        let mut drop: Vec<usize> = Vec::with_capacity(cands.len());
        let linear = cands.len() >= LINEAR_MIN && cands.len().saturating_mul(LINEAR_DROPS) >= sorted;
        if linear {
            // Many leave at once (Maida's root, written last, adopts every span of the roots
            // list at the end of a load): one pass over the sorted part finds them all. A
            // binary search each read the events at random: 0.3 s for 1M spans, on one core,
            // where a load in one go (`check`) finds them in no sorted part at all.
            let mut marked = vec![0u64; (self.base as usize).div_ceil(64)];
            for &(_, x, _) in cands {
                if x < self.base {
                    marked[x as usize / 64] |= 1 << (x % 64);
                }
            }
            drop.extend(
                head.iter()
                    .enumerate()
                    .filter(|&(_, &y)| y < self.base && marked[y as usize / 64] & (1 << (y % 64)) != 0)
                    .map(|(p, _)| p),
            );
        }
        for &(_, x, left) in cands.iter().filter(|_| !linear) {
            let found = if x >= self.base {
                None
            } else if by_index {
                head.binary_search(&x).ok()
            } else {
                let k = self.key_was(x);
                head.binary_search_by(|&y| self.key_was(y).cmp(&k)).ok()
            };
            // A member that left must go even if its times changed behind `event_mut`'s back
            // (then the sorted part is not sorted by what we know): look for it everywhere.
            let found = found.or_else(|| {
                (left && x < self.base)
                    .then(|| head.iter().position(|&y| y == x))
                    .flatten()
            });
            drop.extend(found);
        }
        drop.sort_unstable();
        drop.dedup();
        let member = |x: u32| self.events[x as usize].parent == group;
        let mut add: Vec<u32> = list[sorted..]
            .iter()
            .chain(drop.iter().map(|&p| &head[p]))
            .copied()
            .filter(|&x| member(x))
            .collect();
        // A member linked twice (it left and came back) is one member: counted once, after
        // the duplicates go (counted twice, the group kept a phantom untimed member and
        // stayed in file order once every member had a time).
        add.sort_unstable();
        add.dedup();
        let untimed_gone = drop.iter().filter(|&&p| self.start_was(head[p]).is_none()).count() as u32;
        let untimed_new = add.iter().filter(|&&x| self.start(x).is_none()).count() as u32;
        let untimed = order.untimed - untimed_gone.min(order.untimed) + untimed_new;
        let now_by_index = untimed > 0;
        if !now_by_index {
            add.sort_unstable_by_key(|&x| self.key(x));
        }
        // From where the list changes: the first member dropped, or where the first new one
        // goes (the sorted part's other members kept their keys, so `key_was` is theirs).
        let from = if now_by_index != by_index {
            0
        } else {
            let first_drop = drop.first().copied().unwrap_or(sorted);
            let first_add = match add.first() {
                None => sorted,
                Some(&a) if by_index => head.partition_point(|&y| y < a),
                Some(&a) => {
                    let k = self.key(a);
                    head.partition_point(|&y| self.key_was(y) < k)
                }
            };
            first_drop.min(first_add)
        };
        if from == list.len() {
            // Nothing new, nothing gone.
            order.len = list.len() as u32;
            order.untimed = untimed;
            return;
        }
        let before = list.split_off(from);
        let mut dropped = drop.iter().copied().filter(|&p| p >= from).peekable();
        let kept: Vec<u32> = before[..sorted - from]
            .iter()
            .enumerate()
            .filter(|&(k, _)| {
                if dropped.peek() == Some(&(from + k)) {
                    dropped.next();
                    false
                } else {
                    true
                }
            })
            .map(|(_, &y)| y)
            .collect();
        if now_by_index != by_index {
            list.extend(kept);
            list.extend(add);
            if now_by_index {
                list.sort_unstable();
            } else {
                list.sort_unstable_by_key(|&x| self.key(x));
            }
        } else {
            // Merge: both runs are sorted by the current order.
            list.reserve(kept.len() + add.len());
            let (mut a, mut b) = (kept.iter().peekable(), add.iter().peekable());
            loop {
                let take_a = match (a.peek(), b.peek()) {
                    (Some(&&x), Some(&&y)) => {
                        if now_by_index {
                            x < y
                        } else {
                            self.key(x) < self.key(y)
                        }
                    }
                    (Some(_), None) => true,
                    (None, Some(_)) => false,
                    (None, None) => break,
                };
                let next = if take_a { a.next() } else { b.next() };
                list.extend(next.copied());
            }
        }
        if let Some(m) = first_moved(&before, &list[from..]) {
            moves.push(m);
        }
        order.len = list.len() as u32;
        order.untimed = untimed;
    }
}

/// What `Settle::settle` needs of a sibling list: the roots are a `Vec`, children lists
/// a `SmallVec`.
trait SiblingList: std::ops::DerefMut<Target = [u32]> + Extend<u32> {
    fn split_off(&mut self, at: usize) -> Vec<u32>;
    fn reserve(&mut self, n: usize);
}

impl SiblingList for Vec<u32> {
    fn split_off(&mut self, at: usize) -> Vec<u32> {
        Vec::split_off(self, at)
    }
    fn reserve(&mut self, n: usize) {
        Vec::reserve(self, n)
    }
}

impl SiblingList for SmallVec<[u32; 4]> {
    fn split_off(&mut self, at: usize) -> Vec<u32> {
        self.drain(at..).collect()
    }
    fn reserve(&mut self, n: usize) {
        SmallVec::reserve(self, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipped_counts_by_type_within_its_bounds() {
        let mut s = Skipped::default();
        s.add("atis-latch");
        s.add("tools-used");
        s.add("atis-latch");
        assert_eq!(s.iter().collect::<Vec<_>>(), [("atis-latch", 2), ("tools-used", 1)]);
        // A name per line: the kinds stop at the bound, the rest are counted, not lost.
        for i in 0..500 {
            s.add(&format!("t{i}"));
        }
        assert_eq!(s.iter().count(), Skipped::MAX_KINDS);
        assert_eq!(s.total(), 503);
        assert!(s.iter().any(|(k, n)| k == Skipped::OTHERS && n > 400));
        // Long names are cut at a character boundary.
        let mut s = Skipped::default();
        s.add(&"é".repeat(100));
        assert!(
            s.iter()
                .all(|(k, _)| k.len() <= Skipped::MAX_NAME && k.starts_with('é'))
        );
        let mut m = Skipped::default();
        m.merge(&s);
        m.merge(&s);
        assert_eq!(m.total(), 2);
    }

    proptest::proptest! {
        /// The id table answers as a map would, across growth; hashes that share a home
        /// slot (here: many small ones) probe past each other.
        #[test]
        fn hash_slots_answer_as_a_map(keys in proptest::collection::vec(0u64..5000, 0..3000)) {
            use proptest::prop_assert_eq;
            let mut slots = HashSlots::default();
            // Keyed by tag: two ids whose tags agree are one key to the table (the caller
            // tells them apart by their text).
            let mut map = std::collections::HashMap::new();
            for (i, k) in keys.iter().enumerate() {
                if slots.get(*k).is_none() {
                    slots.insert_new(*k, i as u32);
                    map.insert(tag_of(*k), i as u32);
                }
            }
            prop_assert_eq!(slots.len, map.len());
            for k in 0..5000u64 {
                prop_assert_eq!(slots.get(k), map.get(&tag_of(k)).copied());
            }
            proptest::prop_assert!(slots.slots.len() * 2 >= 3 * slots.len);
        }
    }

    proptest::proptest! {
        /// A trace whose id table was released answers every lookup as before, and events
        /// added afterwards (ids repeated, parents named by id) land where they would have.
        #[test]
        fn released_ids_are_rebuilt_the_same(
            ids in proptest::collection::vec((0u8..40, proptest::option::of(0u8..40)), 0..120),
            cut in 0usize..120,
        ) {
            let name = |k: u8| if k == 0 { String::new() } else { format!("id{k}") };
            let mut kept = Trace::default();
            let mut released = Trace::default();
            for (i, (id, parent)) in ids.iter().enumerate() {
                if i == cut {
                    released.release_ids();
                }
                let (id, pid) = (name(*id), parent.map(name));
                let parent = pid.as_deref().map_or(Parent::None, Parent::Id);
                let a = kept.add(ev("e", &id, parent, None));
                let b = released.add(ev("e", &id, parent, None));
                proptest::prop_assert_eq!(a, b);
            }
            released.release_ids();
            for k in 0..40u8 {
                proptest::prop_assert_eq!(kept.find(&name(k)), released.find(&name(k)));
            }
            let parents = |t: &Trace| t.events.iter().map(|e| e.parent).collect::<Vec<_>>();
            proptest::prop_assert_eq!(parents(&kept), parents(&released));
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
                ..Default::default()
            }),
            ..NewEvent::new(EventKind::LlmCall, "m")
        });
        let c = t.counts();
        assert_eq!(
            (c.events, c.tool_calls, c.llm_calls, c.errors, c.tokens),
            (3, 2, 1, 1, 7)
        );
    }

    /// The index budget (issue 13): 128 bytes an event with the id table and the sibling
    /// lists. The event itself is 96 (`start`/`duration` are [`crate::model::Nanos`], 8 bytes each).
    #[test]
    fn event_stays_compact() {
        assert!(
            std::mem::size_of::<Event>() <= 96,
            "Event is {} bytes",
            std::mem::size_of::<Event>()
        );
        assert_eq!(std::mem::size_of::<Origin>(), 20);
        assert_eq!(std::mem::size_of::<StrRef>(), 4);
        assert_eq!(std::mem::size_of::<(u32, u32)>(), 8, "an id table slot");
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// parent: 0 none, 1 an index, 2 an id (which may come later); id from a small pool.
        Add {
            parent: (u8, usize),
            id: Option<u8>,
            start: Option<i64>,
            dur: Option<i64>,
        },
        SetParent(usize, usize),
        Retime(usize, Option<i64>, Option<i64>),
        Finalize,
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        let time = proptest::option::weighted(0.8, 0i64..6);
        prop_oneof![
            6 => ((0u8..3, 0usize..64), proptest::option::weighted(0.8, 0u8..12), time.clone(), proptest::option::of(0i64..4))
                .prop_map(|(parent, id, start, dur)| Op::Add { parent, id, start, dur }),
            1 => (0usize..64, 0usize..64).prop_map(|(a, b)| Op::SetParent(a, b)),
            1 => (0usize..64, time, proptest::option::of(0i64..4)).prop_map(|(a, s, d)| Op::Retime(a, s, d)),
            2 => Just(Op::Finalize),
        ]
    }

    const IDS: [&str; 12] = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"];

    fn apply(t: &mut Trace, op: &Op) {
        match *op {
            Op::Add { parent, id, start, dur } => {
                let parent = match parent {
                    (1, k) if !t.is_empty() => Parent::Index((k % t.len()) as u32),
                    (2, k) => Parent::Id(IDS[k % IDS.len()]),
                    _ => Parent::None,
                };
                t.add(NewEvent {
                    id: id.map(|i| IDS[i as usize]),
                    parent,
                    start,
                    duration: dur,
                    ..NewEvent::new(EventKind::Step, "e")
                });
            }
            Op::SetParent(a, b) if !t.is_empty() => t.set_parent((a % t.len()) as u32, (b % t.len()) as u32),
            Op::Retime(a, s, d) if !t.is_empty() => {
                let e = t.event_mut((a % t.len()) as u32);
                e.start = s.into();
                e.duration = d.into();
            }
            _ => {}
        }
    }

    /// Every sibling list, straight from the parents: by (start, end, index), or by index
    /// where a member has no start.
    fn canonical(t: &Trace) -> (Vec<u32>, Vec<Vec<u32>>) {
        let mut groups = vec![Vec::new(); t.len()];
        let mut roots = Vec::new();
        for (i, e) in t.events.iter().enumerate() {
            match e.parent {
                NO_PARENT => roots.push(i as u32),
                p => groups[p as usize].push(i as u32),
            }
        }
        let sort = |g: &mut Vec<u32>| {
            if g.iter().all(|&i| t.event(i).start.is_some()) {
                g.sort_by_key(|&i| sibling_key(t.event(i).start.into(), t.event(i).end(), i));
            }
        };
        sort(&mut roots);
        groups.iter_mut().for_each(sort);
        (roots, groups)
    }

    fn tree(t: &Trace) -> (Vec<u32>, Vec<Vec<u32>>) {
        (
            t.roots.clone(),
            (0..t.len() as u32).map(|i| t.children(i).to_vec()).collect(),
        )
    }

    #[test]
    fn add_file_finds_a_file_among_many_also_one_pushed_directly() {
        let mut t = Trace::default();
        for i in 0..1000 {
            assert_eq!(t.add_file(format!("events/e{i}.json")), i as u16);
        }
        assert_eq!(t.add_file("events/e3.json"), 3);
        assert_eq!(t.add_file("events/e999.json"), 999);
        t.files.push("direct.json".into());
        t.files.push("events/e5.json".into()); // a duplicate pushed directly: the first wins
        assert_eq!(t.add_file("direct.json"), 1000);
        assert_eq!(t.add_file("events/e5.json"), 5);
        assert_eq!(t.add_file("new.json"), 1002);
        assert_eq!(t.files.len(), 1003);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Children before parents, missing times, ties, re-parenting and retiming, with
        /// `finalize` at random points, give the tree of one `finalize` at the end, which is
        /// the tree the parents and times describe. And whenever no event a view knew of
        /// moved (`moved_since`), the view's rows stay a prefix of the new ones: the old
        /// events keep their parents and order, and come before the new ones among siblings.
        #[test]
        fn finalize_anytime_is_finalize_once(ops in proptest::collection::vec(op(), 0..120)) {
            use proptest::prop_assert_eq;
            let mut often = Trace::default();
            let mut once = Trace::default();
            let (mut known, mut shape, mut walk) = (0usize, 0u64, Vec::new());
            let mut parents: Vec<u32> = Vec::new();
            for op in &ops {
                apply(&mut often, op);
                apply(&mut once, op);
                // The extent kept between finalizes is the one a scan of every event gives.
                prop_assert_eq!(often.events_span(), Trace::span_of(&often.events));
                if matches!(op, Op::Finalize) {
                    often.finalize();
                    prop_assert_eq!(tree(&often), canonical(&often));
                    if often.moved_since(shape) >= known as u32 {
                        let old: Vec<u32> = often.walk().into_iter().map(|w| w.0).filter(|&i| (i as usize) < known).collect();
                        prop_assert_eq!(&old, &walk);
                        let now: Vec<u32> = often.events[..known].iter().map(|e| e.parent).collect();
                        prop_assert_eq!(&now, &parents);
                        let (roots, groups) = tree(&often);
                        for g in std::iter::once(&roots).chain(&groups) {
                            let first_new = g.iter().position(|&i| i as usize >= known).unwrap_or(g.len());
                            proptest::prop_assert!(g[first_new..].iter().all(|&i| i as usize >= known), "new before old in {:?}", g);
                        }
                    }
                    known = often.len();
                    shape = often.reshaped();
                    walk = often.walk().into_iter().map(|w| w.0).collect();
                    parents = often.events.iter().map(|e| e.parent).collect();
                }
            }
            often.finalize();
            once.finalize();
            prop_assert_eq!(tree(&often), tree(&once));
            prop_assert_eq!(tree(&once), canonical(&once));
            prop_assert_eq!(often.walk().len(), often.len());
        }
    }

    /// A late parent adopts children that waited as roots through many finalizes: most of the
    /// roots list (found by one pass) or a few of a long one (by binary search); either way
    /// the tree is the one a single finalize at the end makes.
    #[test]
    fn a_late_parent_adopting_many_or_few_sorted_roots() {
        for adopted_every in [1usize, 2, 700] {
            let mut often = Trace::default();
            let mut once = Trace::default();
            let names: Vec<String> = (0..3000).map(|i| format!("e{i}")).collect();
            for (i, n) in names.iter().enumerate() {
                let parent = if i % adopted_every == 0 {
                    Parent::Id("late")
                } else {
                    Parent::None
                };
                // Starts out of order, so that the sorted lists are merged, not appended to.
                let start = Some(((i * 7919) % 3001) as i64);
                often.add(ev(n, n, parent, start));
                once.add(ev(n, n, parent, start));
                if i % 100 == 99 {
                    often.finalize();
                }
            }
            for t in [&mut often, &mut once] {
                t.add(ev("late", "late", Parent::None, Some(-1)));
                t.finalize();
            }
            assert_eq!(tree(&often), tree(&once), "one in {adopted_every} adopted");
            assert_eq!(tree(&often), canonical(&often), "one in {adopted_every} adopted");
            let late = often.len() as u32 - 1;
            assert_eq!(often.children(late).len(), 3000usize.div_ceil(adopted_every));
        }
    }

    /// A parent whose child's times change after both were added re-sorts its children,
    /// and a view that knew the child rebuilds (the child moved).
    #[test]
    fn retimed_children_move() {
        let mut t = Trace::default();
        let r = t.add(ev("r", "r", Parent::None, Some(0)));
        let a = t.add(ev("a", "a", Parent::Index(r), Some(5)));
        let b = t.add(ev("b", "b", Parent::Index(r), Some(7)));
        t.finalize();
        assert_eq!(t.children(r), &[a, b]);
        let shape = t.reshaped();
        t.event_mut(a).start = Some(9).into();
        t.finalize();
        assert_eq!(t.children(r), &[b, a]);
        assert!(t.moved_since(shape) <= a);
        t.event_mut(b).start = None.into();
        t.finalize();
        assert_eq!(t.children(r), &[a, b], "a member without a time: file order");
    }
}
