//! Word-level changes inside a string that differs between paired calls (a prompt, a result,
//! an error message): `similar`'s word diff, merged into runs of equal / deleted / inserted
//! text, and the long unchanged stretches around the changes elided for display.
//!
//! No terminal here: renderers (text, Markdown, HTML, the explorer) walk [`Shown`] lines and
//! choose their own marks and escaping.

use serde::Serialize;
use similar::{Algorithm, ChangeTag, TextDiff};
use std::time::{Duration, Instant};

/// Words of unchanged text kept on each side of a change unless told otherwise.
pub const DEFAULT_CONTEXT: usize = 8;

/// Fewer unchanged words than this are shown rather than elided.
const MIN_ELIDED: usize = 4;

/// A word diff that takes longer than this falls back to a coarser (still correct) diff:
/// two unrelated 100,000-word strings must not hold a report up.
const DEADLINE: Duration = Duration::from_millis(500);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SegOp {
    Equal,
    Delete,
    Insert,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Segment {
    pub op: SegOp,
    pub text: String,
}

/// The word diff of `old` against `new`: adjacent pieces of the same kind merged, deletions
/// before insertions where they replace each other.
pub fn segments(old: &str, new: &str) -> Vec<Segment> {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .deadline(Instant::now() + DEADLINE)
        .diff_words(old, new);
    let mut out: Vec<Segment> = Vec::new();
    // Deletions and insertions between two equal stretches are gathered apart so that a
    // replacement reads `[-old words-]{+new words+}`, not interleaved word by word.
    let (mut del, mut ins) = (String::new(), String::new());
    let flush = |out: &mut Vec<Segment>, del: &mut String, ins: &mut String| {
        for (op, s) in [(SegOp::Delete, del), (SegOp::Insert, ins)] {
            if !s.is_empty() {
                out.push(Segment {
                    op,
                    text: std::mem::take(s),
                });
            }
        }
    };
    for c in diff.iter_all_changes() {
        match c.tag() {
            ChangeTag::Delete => del.push_str(c.value()),
            ChangeTag::Insert => ins.push_str(c.value()),
            ChangeTag::Equal => {
                // Whitespace alone between two changes belongs to both sides of the change.
                if (!del.is_empty() || !ins.is_empty()) && c.value().trim().is_empty() {
                    del.push_str(c.value());
                    ins.push_str(c.value());
                    continue;
                }
                flush(&mut out, &mut del, &mut ins);
                match out.last_mut() {
                    Some(s) if s.op == SegOp::Equal => s.text.push_str(c.value()),
                    _ => out.push(Segment {
                        op: SegOp::Equal,
                        text: c.value().to_string(),
                    }),
                }
            }
        }
    }
    flush(&mut out, &mut del, &mut ins);
    // Trailing whitespace moved into a change above is equal text really: give it back.
    tidy(out)
}

/// Move whitespace common to the end of a delete/insert pair out into the equal text after it.
fn tidy(segs: Vec<Segment>) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::with_capacity(segs.len());
    let mut i = 0;
    while i < segs.len() {
        if segs[i].op == SegOp::Delete && segs.get(i + 1).is_some_and(|s| s.op == SegOp::Insert) {
            let (d, n) = (&segs[i].text, &segs[i + 1].text);
            let common = d
                .chars()
                .rev()
                .zip(n.chars().rev())
                .take_while(|(x, y)| x == y && x.is_whitespace())
                .map(|(x, _)| x.len_utf8())
                .sum::<usize>()
                .min(d.len().saturating_sub(1))
                .min(n.len().saturating_sub(1));
            let tail = d[d.len() - common..].to_string();
            out.push(Segment {
                op: SegOp::Delete,
                text: d[..d.len() - common].to_string(),
            });
            out.push(Segment {
                op: SegOp::Insert,
                text: n[..n.len() - common].to_string(),
            });
            if !tail.is_empty() {
                match segs.get(i + 2) {
                    Some(s) if s.op == SegOp::Equal => {
                        out.push(Segment {
                            op: SegOp::Equal,
                            text: tail + &s.text,
                        });
                        i += 3;
                        continue;
                    }
                    _ => out.push(Segment {
                        op: SegOp::Equal,
                        text: tail,
                    }),
                }
            }
            i += 2;
            continue;
        }
        out.push(segs[i].clone());
        i += 1;
    }
    out
}

/// What a shown piece is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    Equal,
    Delete,
    Insert,
    /// Unchanged words left out; the text says how many.
    Elided,
}

/// The word diff as display lines (split at the newlines of the text), unchanged stretches
/// longer than `2 × context` words elided. Text is raw trace text: renderers escape it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shown {
    pub lines: Vec<Vec<(Mark, String)>>,
}

impl Shown {
    pub fn new(segs: &[Segment], context: usize) -> Shown {
        let mut pieces: Vec<(Mark, String)> = Vec::new();
        let last = segs.len().saturating_sub(1);
        for (k, s) in segs.iter().enumerate() {
            match s.op {
                SegOp::Delete => pieces.push((Mark::Delete, s.text.clone())),
                SegOp::Insert => pieces.push((Mark::Insert, s.text.clone())),
                SegOp::Equal => {
                    let words = word_starts(&s.text);
                    let n = words.len();
                    // The first stretch keeps its end, the last its start, a middle one both.
                    let (keep_head, keep_tail) = match (k == 0, k == last) {
                        (true, true) => (n, 0),
                        (true, false) => (0, context),
                        (false, true) => (context, 0),
                        (false, false) => (context, context),
                    };
                    // Eliding a few words saves nothing: say so only past a handful.
                    if keep_head + keep_tail + MIN_ELIDED > n {
                        pieces.push((Mark::Equal, s.text.clone()));
                        continue;
                    }
                    let head_end = if keep_head == 0 {
                        0
                    } else {
                        word_end(&s.text, words[keep_head - 1])
                    };
                    let tail_start = if keep_tail == 0 {
                        s.text.len()
                    } else {
                        words[n - keep_tail]
                    };
                    let gone = n - keep_head - keep_tail;
                    if head_end > 0 {
                        pieces.push((Mark::Equal, format!("{} ", &s.text[..head_end])));
                    }
                    pieces.push((
                        Mark::Elided,
                        format!("…{gone} unchanged word{}…", if gone == 1 { "" } else { "s" }),
                    ));
                    if tail_start < s.text.len() {
                        // A space keeps the elision apart from the words after it.
                        let t = &s.text[tail_start..];
                        pieces.push((Mark::Equal, format!(" {t}")));
                    }
                }
            }
        }
        let mut lines: Vec<Vec<(Mark, String)>> = vec![Vec::new()];
        for (m, text) in pieces {
            for (i, part) in text.split('\n').enumerate() {
                if i > 0 {
                    lines.push(Vec::new());
                }
                if !part.is_empty() {
                    lines.last_mut().expect("one line at least").push((m, part.to_string()));
                }
            }
        }
        Shown { lines }
    }

    /// Plain text with `[-deleted-]{+inserted+}` marks, lines joined by `\n` (unescaped).
    pub fn marked(&self) -> String {
        let mut out = String::new();
        for (i, l) in self.lines.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            for (m, t) in l {
                match m {
                    Mark::Delete => {
                        out.push_str("[-");
                        out.push_str(t);
                        out.push_str("-]");
                    }
                    Mark::Insert => {
                        out.push_str("{+");
                        out.push_str(t);
                        out.push_str("+}");
                    }
                    Mark::Equal | Mark::Elided => out.push_str(t),
                }
            }
        }
        out
    }
}

/// Byte offsets where the words (runs of non-whitespace) of `s` start.
fn word_starts(s: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut prev_ws = true;
    for (i, c) in s.char_indices() {
        let ws = c.is_whitespace();
        if !ws && prev_ws {
            out.push(i);
        }
        prev_ws = ws;
    }
    out
}

/// The end of the word starting at `start`.
fn word_end(s: &str, start: usize) -> usize {
    s[start..]
        .char_indices()
        .find(|(_, c)| c.is_whitespace())
        .map_or(s.len(), |(i, _)| start + i)
}

/// Whether a word diff says more than `old → new`: some words are common to both.
pub fn worth_showing(segs: &[Segment]) -> bool {
    segs.iter().any(|s| s.op == SegOp::Equal && !s.text.trim().is_empty())
}

/// Both sides strings: the word diff applies.
pub fn strings<'a>(
    from: Option<&'a serde_json::Value>,
    to: Option<&'a serde_json::Value>,
) -> Option<(&'a str, &'a str)> {
    Some((from?.as_str()?, to?.as_str()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(op: SegOp, t: &str) -> Segment {
        Segment { op, text: t.into() }
    }

    #[test]
    fn a_replaced_word_is_one_delete_and_one_insert() {
        let s = segments("the quick brown fox", "the quick red fox");
        assert_eq!(
            s,
            vec![
                seg(SegOp::Equal, "the quick "),
                seg(SegOp::Delete, "brown"),
                seg(SegOp::Insert, "red"),
                seg(SegOp::Equal, " fox"),
            ]
        );
    }

    #[test]
    fn segments_rebuild_both_sides() {
        let (a, b) = (
            "one two three four five six\nseven eight",
            "one 2 three four six\nseven eight nine",
        );
        let s = segments(a, b);
        let side = |skip: SegOp| {
            s.iter()
                .filter(|x| x.op != skip)
                .map(|x| x.text.as_str())
                .collect::<String>()
        };
        assert_eq!(side(SegOp::Insert), a);
        assert_eq!(side(SegOp::Delete), b);
    }

    #[test]
    fn several_changed_words_in_a_row_read_as_one_replacement() {
        let s = segments("a b c d e", "a x y z e");
        assert_eq!(
            s,
            vec![
                seg(SegOp::Equal, "a "),
                seg(SegOp::Delete, "b c d"),
                seg(SegOp::Insert, "x y z"),
                seg(SegOp::Equal, " e"),
            ]
        );
    }

    #[test]
    fn long_unchanged_stretches_are_elided_around_the_change() {
        let words: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        let a = words.join(" ");
        let mut b_words = words.clone();
        b_words[50] = "CHANGED".into();
        let b = b_words.join(" ");
        let shown = Shown::new(&segments(&a, &b), 3);
        assert_eq!(
            shown.marked(),
            "…47 unchanged words… w47 w48 w49 [-w50-]{+CHANGED+} w51 w52 w53 …46 unchanged words…"
        );
        // Context large enough: nothing left out.
        let all = Shown::new(&segments(&a, &b), 100);
        assert!(!all.marked().contains('…'));
    }

    #[test]
    fn lines_split_at_newlines() {
        let shown = Shown::new(&segments("a\nb c\nd", "a\nb x\nd"), 8);
        assert_eq!(shown.lines.len(), 3);
        assert_eq!(shown.marked(), "a\nb [-c-]{+x+}\nd");
    }

    #[test]
    fn a_change_between_two_far_apart_changes_keeps_both_contexts() {
        let words: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
        let mut b = words.clone();
        b[5] = "X".into();
        b[30] = "Y".into();
        let shown = Shown::new(&segments(&words.join(" "), &b.join(" ")), 2);
        assert_eq!(
            shown.marked(),
            "w0 w1 w2 w3 w4 [-w5-]{+X+} w6 w7 …20 unchanged words… w28 w29 [-w30-]{+Y+} w31 w32 …7 unchanged words…"
        );
    }
}
