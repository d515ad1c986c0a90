use super::payload::PayloadRef;
use super::strings::StrRef;
use serde::Serialize;

/// Index value meaning "this event has no parent" (it is a root).
pub const NO_PARENT: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
    Other,
}

impl Role {
    pub fn parse(s: &str) -> Role {
        match s.to_ascii_lowercase().as_str() {
            "system" | "developer" => Role::System,
            "user" | "human" => Role::User,
            "assistant" | "ai" | "model" => Role::Assistant,
            "tool" | "function" => Role::Tool,
            _ => Role::Other,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Other => "other",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    Run,
    LlmCall,
    ToolCall,
    Message(Role),
    State,
    Error,
    LoopWarning,
    Step,
    /// A record type the model has no name for; the event's name says what it was.
    Other,
}

impl EventKind {
    /// Short stable name, used by `show`, the filter language (`kind:`) and JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Run => "run",
            EventKind::LlmCall => "llm",
            EventKind::ToolCall => "tool",
            EventKind::Message(_) => "message",
            EventKind::State => "state",
            EventKind::Error => "error",
            EventKind::LoopWarning => "loop",
            EventKind::Step => "step",
            EventKind::Other => "other",
        }
    }
    /// [`as_str`](Self::as_str), but a message says its role (`user`, `assistant`, `system`):
    /// the kind as `show`, `tail` and the exports label a row.
    pub fn label(self) -> &'static str {
        match self {
            EventKind::Message(r) => r.as_str(),
            k => k.as_str(),
        }
    }
    pub fn is_call(self) -> bool {
        matches!(self, EventKind::LlmCall | EventKind::ToolCall)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Error,
    Pending,
    #[default]
    Unknown,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error => "error",
            Status::Pending => "pending",
            Status::Unknown => "unknown",
        }
    }
}

/// Token usage of one LLM call, normalized the same way for every format (each format's
/// file says how its recorder counts): `input` is prompt tokens neither read from nor written
/// to a cache, `output` excludes reasoning tokens, so the five kinds add up to what the call
/// used. Any field may be unknown (absent or redacted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub input: Option<u64>,
    pub output: Option<u64>,
    /// The total as recorded (kept when the parts are not all known).
    pub total: Option<u64>,
    pub cache_read: Option<u64>,
    pub cache_write: Option<u64>,
    pub reasoning: Option<u64>,
    /// What the recorder said the call cost, in microdollars (wins over a computed cost).
    pub cost: Option<u64>,
    /// Of `cache_write`, the tokens written to the 1-hour cache (the rest went to the
    /// 5-minute one, which costs less); None when the recorder does not say which tier
    /// (then all are priced as 5-minute writes, and marked so).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<u64>,
    /// Web searches the call made (billed per request, not per token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_search: Option<u64>,
}

impl Usage {
    pub fn is_empty(&self) -> bool {
        self.input.is_none()
            && self.output.is_none()
            && self.total.is_none()
            && self.cache_read.is_none()
            && self.cache_write.is_none()
            && self.reasoning.is_none()
            && self.cost.is_none()
            && self.cache_write_1h.is_none()
            && self.web_search.is_none()
    }
    /// Total tokens: the recorded total, else the sum of the kinds that are known.
    pub fn sum(&self) -> Option<u64> {
        self.total.or_else(|| {
            let parts = [
                self.input,
                self.cache_read,
                self.cache_write,
                self.output,
                self.reasoning,
            ];
            if parts.iter().all(Option::is_none) {
                return None;
            }
            // Saturating: counts come from the trace and may be anything up to u64::MAX.
            Some(parts.iter().flatten().fold(0u64, |a, &b| a.saturating_add(b)))
        })
    }
}

/// An event's token usage, or none: a [`Usage`] packed into one 24-byte allocation (the
/// smallest the allocator hands out holds 24), where a `Box<Usage>` took 112 bytes and the
/// allocator 128 (issue 13: an OTLP file of 4M spans has 1.4M LLM calls, 180 MB of boxes).
/// The known fields are kept as LEB128 varints behind a presence byte (its top bit set: a
/// second presence byte, for the fields after the seventh, opens `bytes`); a usage whose
/// counts do not fit in 22 bytes (counts over 2^21 in most of its fields) is boxed whole.
/// Read it with [`UsageCell::get`], set it with [`UsageCell::new`] / `From<Usage>`.
#[derive(Clone, Default)]
pub struct UsageCell(Option<Box<Packed>>);

#[derive(Clone)]
enum Packed {
    /// Bit k of `known`: field k (in [`Usage::fields`] order) is known; the known fields'
    /// varints follow one another in `bytes`.
    Small {
        known: u8,
        bytes: [u8; 22],
    },
    Big(Box<Usage>),
}

impl Usage {
    /// Its fields in a fixed order (the packed order of [`UsageCell`]).
    fn fields(&self) -> [Option<u64>; FIELDS] {
        [
            self.input,
            self.output,
            self.total,
            self.cache_read,
            self.cache_write,
            self.reasoning,
            self.cost,
            self.cache_write_1h,
            self.web_search,
        ]
    }
    fn from_fields(f: [Option<u64>; FIELDS]) -> Usage {
        let [
            input,
            output,
            total,
            cache_read,
            cache_write,
            reasoning,
            cost,
            cache_write_1h,
            web_search,
        ] = f;
        Usage {
            input,
            output,
            total,
            cache_read,
            cache_write,
            reasoning,
            cost,
            cache_write_1h,
            web_search,
        }
    }
}

impl UsageCell {
    pub const NONE: UsageCell = UsageCell(None);

    pub fn new(u: Option<Usage>) -> UsageCell {
        UsageCell(u.map(|u| Box::new(Packed::of(&u))))
    }
    pub fn get(&self) -> Option<Usage> {
        self.0.as_deref().map(Packed::usage)
    }
    pub fn is_some(&self) -> bool {
        self.0.is_some()
    }
    pub fn is_none(&self) -> bool {
        self.0.is_none()
    }
    /// Takes the usage out, leaving none.
    pub fn take(&mut self) -> Option<Usage> {
        let u = self.get();
        self.0 = None;
        u
    }
}

/// Fields of a [`Usage`]; the first seven are marked in `known`, the others in the extra
/// presence byte.
const FIELDS: usize = 9;
/// `known`'s bit saying that `bytes` opens with the presence byte of fields 7 on.
const MORE: u8 = 0x80;

impl Packed {
    fn of(u: &Usage) -> Packed {
        let f = u.fields();
        let mut known = 0u8;
        let mut bytes = [0u8; 22];
        let mut at = 0;
        let more: u8 = f[7..]
            .iter()
            .enumerate()
            .fold(0, |m, (k, v)| m | (u8::from(v.is_some()) << k));
        if more != 0 {
            known |= MORE;
            bytes[0] = more;
            at = 1;
        }
        for (k, v) in f.into_iter().enumerate() {
            let Some(mut v) = v else { continue };
            if k < 7 {
                known |= 1 << k;
            }
            loop {
                let Some(b) = bytes.get_mut(at) else {
                    return Packed::Big(Box::new(*u));
                };
                *b = (v & 0x7f) as u8 | if v >= 0x80 { 0x80 } else { 0 };
                at += 1;
                v >>= 7;
                if v == 0 {
                    break;
                }
            }
        }
        Packed::Small { known, bytes }
    }

    fn usage(&self) -> Usage {
        let (known, bytes) = match self {
            Packed::Big(u) => return **u,
            Packed::Small { known, bytes } => (*known, bytes),
        };
        let mut at = 0;
        let mut more = 0u8;
        if known & MORE != 0 {
            more = bytes[0];
            at = 1;
        }
        let mut f = [None; FIELDS];
        for (k, slot) in f.iter_mut().enumerate() {
            let present = if k < 7 { known & (1 << k) } else { more & (1 << (k - 7)) };
            if present == 0 {
                continue;
            }
            let (mut v, mut shift) = (0u64, 0);
            // Written by `of`: every varint is whole and within the 22 bytes.
            while let Some(&b) = bytes.get(at) {
                at += 1;
                v |= u64::from(b & 0x7f) << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    break;
                }
            }
            *slot = Some(v);
        }
        Usage::from_fields(f)
    }
}

impl From<Usage> for UsageCell {
    fn from(u: Usage) -> UsageCell {
        UsageCell::new(Some(u))
    }
}

impl From<Option<Usage>> for UsageCell {
    fn from(u: Option<Usage>) -> UsageCell {
        UsageCell::new(u)
    }
}

impl PartialEq for UsageCell {
    fn eq(&self, o: &UsageCell) -> bool {
        self.get() == o.get()
    }
}

impl Eq for UsageCell {}

impl std::fmt::Debug for UsageCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl Serialize for UsageCell {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

/// Where an event came from, so the raw record can always be shown.
///
/// Packed to 4-byte alignment: 20 bytes instead of 24 in every event (the `u64` would
/// otherwise pad the struct). Read its fields by value (`o.offset`), never by reference.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, packed(4))]
pub struct Origin {
    /// Index into `Trace::files`.
    pub file: u16,
    /// 1-based line number; 0 when the source has no lines (a whole-file JSON document).
    pub line: u32,
    /// Byte range of the record in the file.
    pub offset: u64,
    pub len: u32,
}

/// One node of the event tree. Kept compact (DESIGN §4, issue 13: at most 128 bytes an
/// event with the index around it): strings live in the trace's string store, large
/// payloads stay on disk until shown, and children lists live in the trace (only parents
/// pay for one, a `Vec` here was 24 bytes: see [`super::Trace::children`]), and the times
/// are [`Nanos`] (8 bytes each where an `Option<i64>` takes 16).
#[derive(Clone, Debug)]
pub struct Event {
    pub kind: EventKind,
    pub name: StrRef,
    /// The source's own id for the event, if it has one.
    pub source_id: StrRef,
    pub model: StrRef,
    /// Index of the parent event, or [`NO_PARENT`]. Change it through `Trace::set_parent`
    /// (the children lists follow), never directly.
    pub parent: u32,
    /// 1 + the index of its children list in the trace, 0 for none (`Trace::children`).
    pub(super) kids: u32,
    /// Nanoseconds since the Unix epoch. `start` and `duration` order siblings: change them
    /// through `Trace::event_mut`, which notes the change for the next `finalize`.
    pub start: Nanos,
    /// Nanoseconds.
    pub duration: Nanos,
    pub status: Status,
    pub usage: UsageCell,
    pub payload: PayloadRef,
    pub origin: Origin,
    /// A second record merged into this event (a tool result line joined to its call).
    /// Boxed: few events have one, and this keeps every event 24 bytes smaller (1M events: 24 MB).
    pub origin2: Option<Box<Origin>>,
}

impl Event {
    pub fn end(&self) -> Option<i64> {
        match (self.start.get(), self.duration.get()) {
            (Some(s), Some(d)) => Some(s.saturating_add(d)),
            _ => None,
        }
    }
    pub fn is_error(&self) -> bool {
        self.status == Status::Error || self.kind == EventKind::Error
    }
}

/// An optional count of nanoseconds in 8 bytes (an `Option<i64>` takes 16): `i64::MIN` means
/// none. Every event holds two (issue 13: the index at most 128 bytes an event). It orders as
/// `Option<i64>` does (none first), and reads like one (`get`, `map`, `unwrap_or`, ...).
/// The one value it cannot hold, `i64::MIN` itself, is stored as `i64::MIN + 1`: no trace
/// means a time 292 years before the epoch to the nanosecond.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(i64);

impl Nanos {
    pub const NONE: Nanos = Nanos(i64::MIN);
    pub const fn new(v: Option<i64>) -> Nanos {
        match v {
            Some(i64::MIN) => Nanos(i64::MIN + 1),
            Some(x) => Nanos(x),
            None => Nanos::NONE,
        }
    }
    #[inline]
    pub const fn get(self) -> Option<i64> {
        if self.0 == i64::MIN { None } else { Some(self.0) }
    }
    pub fn is_some(self) -> bool {
        self.0 != i64::MIN
    }
    pub fn is_none(self) -> bool {
        self.0 == i64::MIN
    }
    pub fn is_some_and(self, f: impl FnOnce(i64) -> bool) -> bool {
        self.get().is_some_and(f)
    }
    pub fn is_none_or(self, f: impl FnOnce(i64) -> bool) -> bool {
        self.get().is_none_or(f)
    }
    pub fn map<T>(self, f: impl FnOnce(i64) -> T) -> Option<T> {
        self.get().map(f)
    }
    pub fn and_then<T>(self, f: impl FnOnce(i64) -> Option<T>) -> Option<T> {
        self.get().and_then(f)
    }
    pub fn unwrap_or(self, d: i64) -> i64 {
        self.get().unwrap_or(d)
    }
    pub fn unwrap_or_default(self) -> i64 {
        self.get().unwrap_or_default()
    }
    pub fn or(self, o: Option<i64>) -> Option<i64> {
        self.get().or(o)
    }
    pub fn filter(self, f: impl FnOnce(&i64) -> bool) -> Option<i64> {
        self.get().filter(f)
    }
}

impl Default for Nanos {
    fn default() -> Nanos {
        Nanos::NONE
    }
}

impl From<Option<i64>> for Nanos {
    fn from(v: Option<i64>) -> Nanos {
        Nanos::new(v)
    }
}

impl From<Nanos> for Option<i64> {
    fn from(v: Nanos) -> Option<i64> {
        v.get()
    }
}

impl PartialEq<Option<i64>> for Nanos {
    fn eq(&self, o: &Option<i64>) -> bool {
        self.get() == *o
    }
}

impl std::fmt::Debug for Nanos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl Serialize for Nanos {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_usage_takes_24_bytes_and_the_event_8() {
        assert_eq!(std::mem::size_of::<Packed>(), 24);
        assert_eq!(std::mem::size_of::<UsageCell>(), 8);
    }

    #[test]
    fn usages_read_back_as_written() {
        let big = Usage {
            input: Some(u64::MAX),
            output: Some(u64::MAX - 1),
            total: Some(1 << 63),
            cache_read: Some(0),
            cache_write: None,
            reasoning: Some(127),
            cost: Some(128),
            cache_write_1h: Some(1 << 40),
            web_search: Some(3),
        };
        for u in [
            Usage::default(),
            Usage {
                input: Some(12_000),
                output: Some(900),
                ..Default::default()
            },
            big,
        ] {
            assert_eq!(UsageCell::from(u).get(), Some(u));
        }
        assert!(matches!(*UsageCell::from(big).0.unwrap(), Packed::Big(_)));
        // A Claude Code call with its cache tier and web searches stays in the 24 bytes.
        let cc = Usage {
            input: Some(3),
            output: Some(1_500),
            cache_read: Some(150_000),
            cache_write: Some(20_000),
            cache_write_1h: Some(20_000),
            web_search: Some(0),
            ..Default::default()
        };
        assert!(matches!(*UsageCell::from(cc).0.unwrap(), Packed::Small { .. }));
        assert_eq!(UsageCell::from(cc).get(), Some(cc));
        assert_eq!(UsageCell::NONE.get(), None);
        assert_eq!(UsageCell::new(None), UsageCell::NONE);
    }

    fn field() -> impl Strategy<Value = Option<u64>> {
        prop_oneof![
            Just(None),
            (0u64..128).prop_map(Some),
            (0u64..1 << 24).prop_map(Some),
            any::<u64>().prop_map(Some),
        ]
    }

    proptest! {
        #[test]
        fn any_usage_reads_back(f in proptest::array::uniform9(field())) {
            let u = Usage::from_fields(f);
            prop_assert_eq!(UsageCell::from(u).get(), Some(u));
            prop_assert_eq!(format!("{:?}", UsageCell::from(u)), format!("{:?}", Some(Box::new(u))));
        }
    }
}
