//! The loading engine every line-oriented format shares (DESIGN §4). The reader
//! ([`super::jsonl`]) cuts a file into batches of lines; here a batch is read in two halves:
//!
//! - the **skim**, pure and on every core: a format reads each line into a typed record that
//!   borrows from the line (its ids, names, times and the byte ranges of what it leaves on
//!   disk), and
//! - the **apply**, in file order on one core: the format turns each record into events of the
//!   compact index, joins results to their calls by id, and leaves payloads on disk
//!   ([`PayloadRef::Deferred`](crate::model::PayloadRef)) to be decoded when shown.
//!
//! While one part of a batch is applied, the next is skimmed: both cores work through a load.
//! A format file holds only what is about its format: its record type, its skimmer, its
//! apply, and how it decodes a payload from the raw record(s).

use super::jsonl::{LineLoc, Sink};
use crate::model::Origin;

/// A format's two halves of reading a line.
pub(crate) trait Records: Send {
    /// What the skim reads of one line: typed, borrowing from the line.
    type Rec<'a>: Send + Sync;

    /// The pure half: read one line into `slot` (left `None` when the line is not a record the
    /// fast path reads; `apply` then reads it again slowly and reports what is wrong). Runs
    /// on many lines at once, so it sees nothing but the line. In place: a record can be a
    /// few hundred bytes, and returning it by value through rayon's collect copied it several
    /// times a line (4% of AgentDbg's load in `memmove`).
    fn skim<'a>(line: &'a [u8], slot: &mut Option<Self::Rec<'a>>);

    /// The in-order half: add the events of one line to the sink's traces.
    fn apply(&mut self, rec: Option<&Self::Rec<'_>>, line: &[u8], loc: LineLoc, sink: &mut Sink);

    /// A hint, `PREFETCH` records before `rec` is applied: ask the cache for what its apply
    /// will touch (the id table slots of its id and its parent's). A large load adds ids in
    /// random slots of a table far larger than the cache.
    fn prefetch(&self, _rec: &Self::Rec<'_>, _sink: &Sink) {}
}

/// How many records ahead [`Records::prefetch`] is asked for.
const PREFETCH: usize = 8;
/// Batches of fewer lines than this and fewer bytes than [`SMALL_BYTES`] are read on this
/// thread: handing work out costs more.
const SMALL: usize = 256;
const SMALL_BYTES: usize = 256 << 10;
/// The counts of lines below (parts, tasks) are for lines of up to this many bytes; longer
/// lines make them fewer, in proportion. A 4 MiB batch of OTLP's 26 KB lines is 160 lines:
/// counted in lines alone it was read on one core.
const LINE_BYTES: usize = 2 << 10;

/// One line, on this thread (the live tail's few lines, a partial line made whole).
pub(crate) fn one<R: Records>(r: &mut R, line: &[u8], loc: LineLoc, sink: &mut Sink) {
    let mut slot = None;
    R::skim(line, &mut slot);
    r.apply(slot.as_ref(), line, loc, sink);
}

/// A batch of whole lines in file order: skimmed on every core, applied in order.
pub(crate) fn batch<R: Records>(r: &mut R, batch: &[(&[u8], LineLoc)], sink: &mut Sink) {
    use rayon::prelude::*;
    fn skim_all<'a, R: Records>(part: &[(&'a [u8], LineLoc)], task: usize) -> Vec<Option<R::Rec<'a>>> {
        let mut out = Vec::with_capacity(part.len());
        out.resize_with(part.len(), || None);
        out.par_iter_mut()
            .zip(part)
            .with_min_len(task)
            .for_each(|(slot, (l, _))| R::skim(l, slot));
        out
    }
    let bytes: usize = batch.iter().map(|(l, _)| l.len()).sum();
    if batch.len() < SMALL && bytes < SMALL_BYTES {
        sink.held(|sink| {
            for (l, loc) in batch {
                one(r, l, *loc, sink);
            }
        });
        return;
    }
    // Skimming is most of the work and needs no state; applying must keep file order.
    // Pipeline: while one part is applied, the next is skimmed on the other cores.
    let scale = LineScale::of(batch.len(), bytes);
    let task = scale.lines(64);
    let parts = pipeline_parts(batch, scale);
    let mut ready = skim_all::<R>(parts[0], task);
    for k in 0..parts.len() {
        let next = parts.get(k + 1).copied();
        let current = std::mem::take(&mut ready);
        let part = parts[k];
        let (_, skimmed_next) = rayon::join(
            || {
                // Owned here, so that the records (and what they allocated: decoded texts) are
                // freed while the next part is skimmed, not after the join on the serial path.
                let current = current;
                // Only the apply holds a shared trace (see `Sink::held`): a view reads it
                // while the next part is skimmed.
                sink.held(|sink| {
                    // By reference: moving records out cost ~5% on AgentDbg.
                    for (i, (rec, (l, loc))) in current.iter().zip(part).enumerate() {
                        if let Some(Some(ahead)) = current.get(i + PREFETCH) {
                            r.prefetch(ahead, sink);
                        }
                        r.apply(rec.as_ref(), l, *loc, sink);
                    }
                });
            },
            || next.map(|p| skim_all::<R>(p, task)),
        );
        ready = skimmed_next.unwrap_or_default();
    }
}

/// Cut a batch into parts for the skim/apply pipeline. Applying a part overlaps with skimming
/// the next, but the last part is applied alone: so parts shrink towards the end, each about
/// a third of the one before (applying costs about a third of skimming), and the serial tail
/// is a few dozen lines. The first part is skimmed on every core and takes what is left over.
fn pipeline_parts<T>(batch: &[T], scale: LineScale) -> Vec<&[T]> {
    let full = scale.lines(1024);
    let last = scale.lines(32);
    let mut sizes = Vec::new();
    let (mut left, mut size) = (batch.len(), last);
    while left > 0 {
        let n = size.min(left);
        sizes.push(n);
        left -= n;
        size = (size * 3).min(full);
    }
    // The first part (last pushed) takes the remainder; merge a small one into its neighbour.
    if sizes.len() > 1 && sizes[sizes.len() - 1] < last {
        let r = sizes.pop().unwrap_or(0);
        *sizes.last_mut().expect("two or more") += r;
    }
    let mut parts = Vec::with_capacity(sizes.len());
    let mut at = 0;
    for n in sizes.into_iter().rev() {
        parts.push(&batch[at..at + n]);
        at += n;
    }
    parts
}

/// How many lines of a batch weigh what [`LINE_BYTES`]-long lines would.
#[derive(Clone, Copy)]
struct LineScale {
    /// The batch's mean line length, at least [`LINE_BYTES`].
    mean: usize,
}

impl LineScale {
    fn of(lines: usize, bytes: usize) -> LineScale {
        LineScale {
            mean: (bytes / lines.max(1)).max(LINE_BYTES),
        }
    }

    /// `n` lines of up to [`LINE_BYTES`], as as many of this batch's (at least one).
    fn lines(self, n: usize) -> usize {
        (n * LINE_BYTES / self.mean).max(1)
    }
}

/// The origin of a record that is a part of a line (one message of a conversation line, one
/// span of an OTLP batch): its own byte range, so that the raw view and a deferred payload
/// read just that part. `part` must be a subslice of `line`; anything else gives the line.
pub fn sub_origin(loc: LineLoc, file: u16, line: &[u8], part: &[u8]) -> Origin {
    let base = line.as_ptr() as usize;
    let at = part.as_ptr() as usize;
    let mut o = loc.origin(file);
    if at >= base && at + part.len() <= base + line.len() {
        o.offset = loc.offset + (at - base) as u64;
        o.len = part.len().min(u32::MAX as usize) as u32;
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EventKind, NewEvent, Trace};
    use std::path::Path;

    #[test]
    fn pipeline_parts_cover_the_batch_in_order_and_shrink_towards_the_end() {
        for n in [1usize, 31, 32, 33, 100, 256, 1000, 2100, 10_000] {
            let batch: Vec<usize> = (0..n).collect();
            let parts = pipeline_parts(&batch, LineScale::of(n, n * 100));
            let joined: Vec<usize> = parts.iter().flat_map(|p| p.iter().copied()).collect();
            assert_eq!(joined, batch, "n = {n}");
            assert!(parts.iter().all(|p| !p.is_empty()), "n = {n}");
            let last = parts.last().expect("one part or more").len();
            assert!(last <= 2 * 32 || parts.len() == 1, "n = {n}: a last part of {last}");
            // After the first part, sizes never grow: applying one overlaps skimming the next.
            for w in parts[1..].windows(2) {
                assert!(w[0].len() >= w[1].len(), "n = {n}: {} then {}", w[0].len(), w[1].len());
            }
            assert!(parts[1..].iter().all(|p| p.len() <= 1024), "n = {n}");
        }
    }

    /// Long lines make parts of fewer lines: OTLP's 26 KB lines, 160 to a 4 MiB batch.
    #[test]
    fn long_lines_make_parts_of_fewer_lines() {
        let batch: Vec<usize> = (0..160).collect();
        let parts = pipeline_parts(&batch, LineScale::of(160, 160 * 26_000));
        assert!(parts.len() >= 4, "{} parts", parts.len());
        assert!(parts.last().unwrap().len() <= 2, "the serial tail is a line or two");
        let joined: Vec<usize> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        assert_eq!(joined, batch);
        // Lines up to LINE_BYTES count as they did.
        let short = pipeline_parts(&batch, LineScale::of(160, 160 * 500));
        assert_eq!(short.len(), pipeline_parts(&batch, LineScale::of(160, 160)).len());
        assert_eq!(LineScale::of(10, 10 * 26_000).lines(64), 5);
        assert_eq!(LineScale::of(10, 10 * 100).lines(64), 64);
        assert_eq!(LineScale::of(1, 1 << 30).lines(64), 1);
    }

    /// Skims the first field's number; applies an event named after it (or "bad").
    struct Numbers;
    impl Records for Numbers {
        type Rec<'a> = &'a str;
        fn skim<'a>(line: &'a [u8], slot: &mut Option<&'a str>) {
            *slot = std::str::from_utf8(line)
                .ok()
                .and_then(|s| s.strip_prefix("{\"n\":"))
                .and_then(|s| s.strip_suffix('}'));
        }
        fn apply(&mut self, rec: Option<&&str>, _: &[u8], loc: LineLoc, sink: &mut Sink) {
            if sink.traces.is_empty() {
                sink.push_trace(Trace::default());
            }
            match rec {
                Some(n) => sink.traces[0].add(NewEvent::new(EventKind::Step, n)),
                None => {
                    sink.error(loc.line, "bad");
                    sink.traces[0].add(NewEvent::new(EventKind::Step, "bad"))
                }
            };
        }
    }

    #[test]
    fn a_batch_is_applied_in_file_order_on_every_path() {
        // Few long lines go the parallel way too (their bytes, not their count).
        for (n, pad) in [
            (0usize, 0usize),
            (5, 0),
            (255, 0),
            (256, 0),
            (3000, 0),
            (5, 60_000),
            (200, 26_000),
        ] {
            let pad = " ".repeat(pad);
            let lines: Vec<String> = (0..n)
                .map(|i| {
                    if i % 97 == 3 {
                        "junk".into()
                    } else {
                        format!("{{\"n\":{i}{pad}}}")
                    }
                })
                .collect();
            let batch: Vec<(&[u8], LineLoc)> = lines
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let loc = LineLoc {
                        line: i as u64 + 1,
                        offset: 0,
                        len: l.len(),
                    };
                    (l.as_bytes(), loc)
                })
                .collect();
            let mut sink = Sink::new(Path::new("x"));
            super::batch(&mut Numbers, &batch, &mut sink);
            let names: Vec<String> = match sink.traces.first() {
                Some(t) => (0..t.len() as u32).map(|i| t.name(i).to_string()).collect(),
                None => Vec::new(),
            };
            let want: Vec<String> = (0..n)
                .map(|i| if i % 97 == 3 { "bad".into() } else { format!("{i}{pad}") })
                .collect();
            assert_eq!(names, want, "n = {n}");
            let errors = sink.traces.first().map_or(0, |t| t.diagnostics.len());
            assert_eq!(errors, want.iter().filter(|w| *w == "bad").count(), "n = {n}");
        }
    }

    #[test]
    fn a_sub_origin_is_the_part_of_its_line() {
        let line = b"[{\"a\":1},{\"b\":2}]";
        let loc = LineLoc {
            line: 7,
            offset: 100,
            len: line.len(),
        };
        let o = sub_origin(loc, 2, line, &line[9..16]);
        assert_eq!((o.file, o.line, o.offset, o.len), (2, 7, 109, 7));
        let other = b"{\"b\":2}";
        let o = sub_origin(loc, 2, line, other);
        assert_eq!((o.offset, o.len as usize), (100, line.len()), "not a part: the line");
    }
}
