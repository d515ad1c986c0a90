//! aider chat histories: `.aider.chat.history.md` at the root of a repository (or wherever
//! `--chat-history-file` points). Markdown, appended by aider's `InputOutput`:
//! - `# aider chat started at YYYY-MM-DD HH:MM:SS` opens each session: one run each, header-only
//!   runs included. The time is the machine's local time with no zone; it is read as UTC and it
//!   is the only clock the file has (events carry no times);
//! - `#### text` lines are the user's input (commands such as `/add` included);
//! - `> text` lines are aider's own output (tool output, warnings and errors look the same);
//! - everything else is the model's reply, written whole once it is complete (one LLM call),
//!   possibly with reasoning between `<thinking-content-…>` tags.
//!
//! Aider has no function calls: a tool call here is an edit aider applied (`> Applied edit to
//! X`) or a shell command it ran (`> Running X`, after the user said yes; declined commands and
//! `/run` typed by the user print no such line). Errors are recognised by their text:
//! `litellm.*Error` lines, Python tracebacks, and aider's own failure messages. Token counts come
//! from `> Tokens: 9.7k sent, 85 received.` lines, rounded as aider prints them; `sent` includes
//! the `cache write` and `cache hit` counts (taken out), and `Cost: $X message` is the call's
//! recorded cost (rounded as printed).
//!
//! A history under another name, or an excerpt of one that starts mid-session (no header
//! before its first lines: copied out of a longer history, or the start was cut), is read the
//! same way: the lines before the first header are one run of their own, with no start time.
//!
//! Detection, when the file is not named `.aider.chat.history.md`: its first non-blank line is
//! a `# aider chat started at` header, or the first 64 KiB hold both a `#### ` user line and a
//! `> ` line in aider's own words (`Aider v…`, `Main model: `, `Git repo: `, `Repo-map: `,
//! `Tokens: … sent`, `Applied edit to `, `Added … to the chat`, `Commit <hash> `, `Run shell
//! command?`, `Add command output to the chat?`). Markdown headings and block quotes alone are
//! not enough; a file that starts with `{` or `[` (JSON) is never aider's by content.
//!
//! Drift: there are no typed records. A `> ` line aider adds in a new version is its output
//! (a system message beside its neighbours), never a call, an error or tokens unless it says
//! so in the words above; text is the model's reply. The drift proptest holds that lines of
//! unknown words change no count.
//!
//! Payloads stay on disk: an event's origin is the byte range of its lines.

use super::{Format, LoadError, Loaded, Probe, open_regular};
use crate::model::*;
use serde_json::{Value, json};
use std::io::Read;
use std::path::Path;

pub struct Aider;

const FILE_NAME: &str = ".aider.chat.history.md";
const HEADER: &str = "# aider chat started at ";
/// The largest history read.
const LIMIT: u64 = 1 << 30;
const THINK_OPEN: &str = "<thinking-content-";
const THINK_CLOSE: &str = "</thinking-content-";
/// How much of a file detection looks at for aider's own lines.
const EVIDENCE_BYTES: usize = 64 << 10;

/// Aider's own failure messages (`tool_error` calls in base_coder.py), by how they begin.
const ERROR_STARTS: [&str; 6] = [
    "The LLM did not conform to the edit format.",
    "Exception while updating files:",
    "Empty response received from LLM",
    "Failed to apply edit to",
    "Unable to commit:",
    "Unable to create ",
];

impl Format for Aider {
    fn gist(&self, name: &str, input: &Value) -> Option<String> {
        tool_gist(name, input)
    }
    fn id(&self) -> &'static str {
        "aider"
    }
    fn describe(&self) -> &'static str {
        "aider chat history (.aider.chat.history.md in a repository, or any file of aider's `#### ` and `> ` lines), one run per `# aider chat started at` header"
    }

    fn detect(&self, p: &Probe) -> u8 {
        if p.is_dir {
            return 0;
        }
        if p.file_name() == FILE_NAME {
            return 100;
        }
        evidence(&p.head[..p.head.len().min(EVIDENCE_BYTES)])
    }

    fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let f = open_regular(path).map_err(|e| LoadError::io(path, e))?;
        if f.metadata().is_ok_and(|m| m.len() > LIMIT) {
            return Err(LoadError::invalid(
                path,
                format!("larger than {} MiB; not read", LIMIT >> 20),
            ));
        }
        let mut buf = Vec::new();
        f.take(LIMIT + 1)
            .read_to_end(&mut buf)
            .map_err(|e| LoadError::io(path, e))?;
        let traces = parse(path, &buf);
        if traces.is_empty() {
            return Err(LoadError::NotATrace {
                path: path.to_path_buf(),
                reason: "an empty file".into(),
                tried: "aider".into(),
            });
        }
        Ok(Loaded { traces })
    }

    fn decode_payload(&self, trace: &Trace, event: &Event, raw: &[&[u8]]) -> Payload {
        decode(trace, event, raw)
    }
}

/// How sure the head of a file under another name makes it an aider history (see the module
/// docs): 90 for a header first, 80 for aider's own user and output lines, else 0.
fn evidence(head: &[u8]) -> u8 {
    if matches!(head.iter().find(|b| !b.is_ascii_whitespace()), None | Some(b'{' | b'[')) {
        return 0;
    }
    // A cut last line is not looked at (the head may end anywhere).
    let head = match memchr::memrchr(b'\n', head) {
        Some(end) => &head[..end],
        None => head,
    };
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|l| String::from_utf8_lossy(l.strip_suffix(b"\r").unwrap_or(l)));
    let mut nonblank = lines.by_ref().skip_while(|l| l.trim().is_empty()).peekable();
    if nonblank.peek().is_some_and(|l| l.starts_with(HEADER)) {
        return 90;
    }
    let (mut user, mut own) = (false, false);
    for l in nonblank {
        user |= l.starts_with("#### ");
        own |= (l.starts_with("> ")) && aider_words(output_text(&l));
        if user && own {
            return 80;
        }
    }
    0
}

/// Whether a `> ` line's text is in aider's own words (what no Markdown quote says).
fn aider_words(x: &str) -> bool {
    const STARTS: [&str; 9] = [
        "Aider v",
        "Main model: ",
        "Weak model: ",
        "Git repo: ",
        "Repo-map: ",
        "Applied edit to ",
        "Run shell command?",
        "Run shell commands?",
        "Add command output to the chat?",
    ];
    if STARTS.iter().any(|s| x.starts_with(s)) {
        return true;
    }
    if x.starts_with("Tokens: ") && x.contains(" sent") {
        return true;
    }
    if x.starts_with("Added ") && x.contains(" to the chat") {
        return true;
    }
    // `Commit 1a2b3c4 fix: ...`: a short hash, then the message.
    x.strip_prefix("Commit ")
        .and_then(|r| r.split_once(' '))
        .is_some_and(|(h, _)| h.len() >= 7 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// What a line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    User,
    Output,
    Reply,
    Blank,
}

/// One line of the file, without its line ending.
#[derive(Clone, Copy, Debug)]
struct Line<'a> {
    text: &'a str,
    no: u32,
    offset: u64,
    /// Length in bytes, line ending excluded.
    len: u32,
}

fn lines(buf: &[u8]) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut no = 0u32;
    while at < buf.len() {
        let end = memchr::memchr(b'\n', &buf[at..]).map_or(buf.len(), |i| at + i);
        let mut e = end;
        if e > at && buf[e - 1] == b'\r' {
            e -= 1;
        }
        no = no.saturating_add(1);
        // Invalid UTF-8 (a history written in another encoding) is read as an empty line.
        let text = std::str::from_utf8(&buf[at..e]).unwrap_or("");
        out.push(Line {
            text,
            no,
            offset: at as u64,
            len: (e - at).min(u32::MAX as usize) as u32,
        });
        at = end + 1;
    }
    out
}

/// A `> ` line's text: aider ends each with two spaces (a Markdown line break).
fn output_text(l: &str) -> &str {
    l.strip_prefix('>')
        .map_or(l, |s| s.strip_prefix(' ').unwrap_or(s))
        .trim_end()
}

fn user_text(l: &str) -> &str {
    l.strip_prefix("####")
        .map_or(l, |s| s.strip_prefix(' ').unwrap_or(s))
        .trim_end()
}

fn class(l: &str) -> Class {
    if l.trim().is_empty() {
        Class::Blank
    } else if l.starts_with("####") {
        Class::User
    } else if l == ">" || l.starts_with("> ") {
        Class::Output
    } else {
        Class::Reply
    }
}

fn origin_of(first: &Line, last: &Line) -> Origin {
    Origin {
        file: 0,
        line: first.no,
        offset: first.offset,
        len: (last.offset + last.len as u64)
            .saturating_sub(first.offset)
            .min(u32::MAX as u64) as u32,
    }
}

/// The id and name of the run a file starts with when no header opens it.
const NO_HEADER: &str = "(no header)";

/// Split a history into its runs and read each: the lines before the first header (a
/// history that starts mid-session) are a run of their own.
fn parse(path: &Path, buf: &[u8]) -> Vec<Trace> {
    let all = lines(buf);
    let mut traces = Vec::new();
    let starts: Vec<usize> = (0..all.len()).filter(|&i| all[i].text.starts_with(HEADER)).collect();
    let first = starts.first().copied().unwrap_or(all.len());
    let repo = path
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    let mut seen = std::collections::HashSet::new();
    if all[..first].iter().any(|l| !l.text.trim().is_empty()) {
        traces.push(run(path, None, &all[..first], repo.as_deref(), &mut seen));
    }
    for (n, &s) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(all.len());
        traces.push(run(path, Some(all[s]), &all[s + 1..end], repo.as_deref(), &mut seen));
    }
    traces
}

/// Read one run: its header line (None: the lines a file starts with before any header) and
/// the lines up to the next header.
fn run(
    path: &Path,
    header: Option<Line>,
    body: &[Line],
    repo: Option<&str>,
    seen: &mut std::collections::HashSet<String>,
) -> Trace {
    let when = header.map_or(NO_HEADER, |h| h.text[HEADER.len()..].trim());
    let start = header.and_then(|_| parse_timestamp_str(when));
    let mut id = when.to_string();
    let mut k = 2;
    while !seen.insert(id.clone()) {
        id = format!("{when}#{k}");
        k += 1;
    }
    let clock = match header {
        Some(_) => "local time of the session start, no zone (read as UTC)",
        None => "none: the file starts mid-session, with no header",
    };
    let mut t = Trace::new(RunMeta {
        id,
        name: Some(match repo {
            Some(r) => format!("{r} {when}"),
            None => when.to_string(),
        }),
        format: "aider",
        source: path.to_path_buf(),
        start,
        status: RunStatus::Ok,
        attributes: vec![("clock".into(), json!(clock))],
        ..Default::default()
    });
    t.add_file(path);
    if let Some(h) = header
        && start.is_none()
    {
        t.diagnostics.push(Diagnostic::warning(
            path,
            Some(h.no as u64),
            format!("unreadable session start time {when:?}"),
        ));
    }
    // A run without a header has no line of its own: it is where its first line is, no bytes.
    let origin = match header {
        Some(h) => origin_of(&h, &h),
        None => body
            .iter()
            .find(|l| !l.text.trim().is_empty())
            .map_or(Origin::default(), |l| Origin {
                len: 0,
                ..origin_of(l, l)
            }),
    };
    let root = t.add(NewEvent {
        start,
        status: Status::Ok,
        origin,
        ..NewEvent::new(EventKind::Run, when)
    });

    let mut model: Option<String> = None;
    let mut llm: Option<u32> = None;
    // Whether the last thing that happened was a failure (the run's status).
    let mut failed = false;
    let mut i = 0;
    while i < body.len() {
        let l = body[i];
        match class(l.text) {
            Class::Blank => i += 1,
            Class::User => {
                let from = i;
                while i < body.len() && class(body[i].text) == Class::User {
                    i += 1;
                }
                let text = user_text(body[from].text);
                let name = match text.split_whitespace().next() {
                    Some(c) if c.starts_with('/') => c,
                    _ => "user",
                };
                t.add(NewEvent {
                    parent: Parent::Index(root),
                    status: Status::Ok,
                    payload: PayloadRef::Deferred,
                    origin: origin_of(&body[from], &body[i - 1]),
                    ..NewEvent::new(EventKind::Message(Role::User), name)
                });
            }
            Class::Reply => {
                // The reply runs to the next user or output line outside a code fence (a reply
                // may quote `> ` or `####` lines inside its edit blocks).
                let from = i;
                let mut fence = false;
                let mut last = i;
                while i < body.len() {
                    let x = body[i].text;
                    let c = class(x);
                    if !fence && matches!(c, Class::User | Class::Output) {
                        break;
                    }
                    if x.trim_start().starts_with("```") {
                        fence = !fence;
                    }
                    if c != Class::Blank {
                        last = i;
                    }
                    i += 1;
                }
                let e = t.add(NewEvent {
                    parent: Parent::Index(root),
                    status: Status::Ok,
                    model: model.as_deref(),
                    payload: PayloadRef::Deferred,
                    origin: origin_of(&body[from], &body[last]),
                    ..NewEvent::new(EventKind::LlmCall, model.as_deref().unwrap_or("assistant"))
                });
                llm = Some(e);
                failed = false;
                add_thinking(&mut t, e, &body[from..=last]);
            }
            Class::Output => {
                let from = i;
                while i < body.len() && class(body[i].text) == Class::Output {
                    i += 1;
                }
                output_block(&mut t, root, &body[from..i], &mut model, llm, &mut failed);
            }
        }
    }
    if failed {
        t.meta.status = RunStatus::Error;
        t.event_mut(root).status = Status::Error;
    }
    t.meta.model = model;
    t.finalize();
    t
}

/// Reasoning between `<thinking-content-…>` tags becomes a child of its reply.
fn add_thinking(t: &mut Trace, llm: u32, reply: &[Line]) {
    let mut open: Option<usize> = None;
    for (k, l) in reply.iter().enumerate() {
        let x = l.text.trim();
        if x.starts_with(THINK_OPEN) && x.ends_with('>') {
            open = Some(k);
        } else if x.starts_with(THINK_CLOSE)
            && let Some(o) = open.take()
        {
            t.add(NewEvent {
                parent: Parent::Index(llm),
                status: Status::Ok,
                payload: PayloadRef::Deferred,
                origin: origin_of(&reply[o], l),
                ..NewEvent::new(EventKind::Other, "thinking")
            });
        }
    }
}

/// A block of `> ` lines: calls, token counts, errors, and the rest as aider's output.
fn output_block(
    t: &mut Trace,
    root: u32,
    block: &[Line],
    model: &mut Option<String>,
    llm: Option<u32>,
    failed: &mut bool,
) {
    let mut plain: Option<usize> = None;
    let flush = |t: &mut Trace, plain: &mut Option<usize>, upto: usize| {
        if let Some(p) = plain.take()
            && upto > p
        {
            t.add(NewEvent {
                parent: Parent::Index(root),
                status: Status::Ok,
                payload: PayloadRef::Deferred,
                origin: origin_of(&block[p], &block[upto - 1]),
                ..NewEvent::new(EventKind::Message(Role::System), "aider")
            });
        }
    };
    let mut k = 0;
    while k < block.len() {
        let l = &block[k];
        let x = output_text(l.text);
        let parent = Parent::Index(llm.unwrap_or(root));
        if let Some(m) = x.strip_prefix("Main model: ").or_else(|| x.strip_prefix("Model: ")) {
            let name = m.split(" with ").next().unwrap_or(m).trim();
            if !name.is_empty() {
                *model = Some(name.to_string());
            }
        }
        let call = if x.starts_with("Applied edit to ") {
            Some(("edit", Status::Ok))
        } else if x.starts_with("Running ") {
            // The exit status is not recorded.
            Some(("shell", Status::Unknown))
        } else {
            None
        };
        if let Some((name, status)) = call {
            flush(t, &mut plain, k);
            t.add(NewEvent {
                parent,
                status,
                payload: PayloadRef::Deferred,
                origin: origin_of(l, l),
                ..NewEvent::new(EventKind::ToolCall, name)
            });
            k += 1;
            continue;
        }
        if let Some(tokens) = x.strip_prefix("Tokens: ") {
            if let Some(e) = llm {
                let u = parse_tokens(tokens);
                if !u.is_empty() {
                    t.event_mut(e).usage = u.into();
                    t.event_mut(e).origin2 = Some(Box::new(origin_of(l, l)));
                }
            }
            flush(t, &mut plain, k);
            plain = Some(k);
            k += 1;
            continue;
        }
        // Errors: a traceback runs to its exception line; the others are one line.
        let error = if x.starts_with("Traceback (most recent call last)") {
            let mut j = k + 1;
            let mut name = "Traceback".to_string();
            while j < block.len() {
                let y = output_text(block[j].text);
                j += 1;
                if let Some(cls) = exception_class(y) {
                    name = cls.to_string();
                    break;
                }
            }
            Some((name, j))
        } else if let Some(cls) = x.strip_prefix("litellm.").and_then(exception_class) {
            Some((format!("litellm.{cls}"), k + 1))
        } else {
            ERROR_STARTS
                .iter()
                .find(|p| x.starts_with(**p))
                .map(|p| (p.trim_end_matches([' ', ':', '.']).to_string(), k + 1))
        };
        if let Some((name, end)) = error {
            flush(t, &mut plain, k);
            t.add(NewEvent {
                parent,
                status: Status::Error,
                payload: PayloadRef::Deferred,
                origin: origin_of(l, &block[end - 1]),
                ..NewEvent::new(EventKind::Error, &name)
            });
            *failed = true;
            k = end;
            continue;
        }
        if plain.is_none() {
            plain = Some(k);
        }
        k += 1;
    }
    flush(t, &mut plain, block.len());
}

/// `TypeError: ...`, `BadRequestError: ...`: the class of an exception line.
fn exception_class(l: &str) -> Option<&str> {
    let end = l.find(':').unwrap_or(l.len());
    let cls = &l[..end];
    let ok = !cls.is_empty()
        && cls.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
        && ["Error", "Exception", "Interrupt", "Exit"]
            .iter()
            .any(|s| cls.ends_with(s));
    ok.then_some(cls)
}

/// `9.7k sent, 2.1k cache write, 1.1k cache hit, 85 received. Cost: $0.01 message, $0.03
/// session.`: numbers are rounded as aider prints them (`9.7k`, `1.2M`). `sent` is LiteLLM's
/// `prompt_tokens`, the cache written and hit included (taken out here); the message's cost is
/// the call's recorded cost, rounded as printed (to the cent above a cent).
fn parse_tokens(s: &str) -> Usage {
    let (counts, cost) = s.split_once(". Cost:").unwrap_or((s, ""));
    let counts = counts.trim_end_matches('.');
    let mut u = Usage::default();
    for part in counts.split(',') {
        let part = part.trim();
        let (num, label) = part.split_once(' ').unwrap_or((part, ""));
        let Some(n) = rounded(num) else { continue };
        match label.trim() {
            "sent" => u.input = Some(n),
            "cache write" => u.cache_write = Some(n),
            "cache hit" => u.cache_read = Some(n),
            "received" => u.output = Some(n),
            _ => {}
        }
    }
    u.cost = cost
        .split(',')
        .find_map(|p| p.trim().strip_suffix(" message"))
        .and_then(crate::model::micros::micros_of_decimal);
    super::usage_input_with_cache(u)
}

fn rounded(s: &str) -> Option<u64> {
    let (num, mul) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1e3),
        b'M' | b'm' => (&s[..s.len() - 1], 1e6),
        _ => (s, 1.0),
    };
    let f: f64 = num.parse().ok()?;
    (f.is_finite() && f >= 0.0).then(|| (f * mul).round() as u64)
}

// ---- payloads, decoded from the event's lines when shown ----

fn decode(trace: &Trace, ev: &Event, raw: &[&[u8]]) -> Payload {
    let mut p = Payload::default();
    let Some(first) = raw.first() else {
        return p;
    };
    let text = String::from_utf8_lossy(first);
    let each = |f: fn(&str) -> &str| text.lines().map(f).collect::<Vec<_>>().join("\n");
    match ev.kind {
        EventKind::Message(Role::User) => p.input = Some(Value::String(each(user_text))),
        EventKind::LlmCall => {
            p.output = Some(Value::String(without_thinking(&text)));
            if let Some(u) = raw.get(1) {
                p.extra.push((
                    "usage".into(),
                    Value::String(output_text(&String::from_utf8_lossy(u)).to_string()),
                ));
            }
        }
        EventKind::ToolCall => {
            let x = output_text(&text).to_string();
            p.input = Some(match trace.str(ev.name) {
                "edit" => json!({"path": x.strip_prefix("Applied edit to ").unwrap_or(&x)}),
                _ => json!({"command": x.strip_prefix("Running ").unwrap_or(&x)}),
            });
        }
        EventKind::Error => {
            p.error = Some(ErrorInfo {
                kind: Some(trace.str(ev.name).to_string()),
                message: each(output_text),
                ..Default::default()
            });
        }
        EventKind::Other => {
            let t: Vec<&str> = text
                .lines()
                .filter(|l| !l.trim().starts_with(THINK_OPEN) && !l.trim().starts_with(THINK_CLOSE))
                .collect();
            p.output = Some(Value::String(t.join("\n").trim().to_string()));
        }
        _ => p.output = Some(Value::String(each(output_text))),
    }
    p
}

fn without_thinking(text: &str) -> String {
    let mut out = Vec::new();
    let mut inside = false;
    for l in text.lines() {
        let x = l.trim();
        if x.starts_with(THINK_OPEN) && x.ends_with('>') {
            inside = true;
        } else if x.starts_with(THINK_CLOSE) {
            inside = false;
        } else if !inside {
            out.push(l);
        }
    }
    out.join("\n").trim().to_string()
}

/// A call's gist: the file an applied edit changed, the shell command aider ran.
fn tool_gist(name: &str, input: &Value) -> Option<String> {
    super::gist::key_or_generic(name, input, &["path", "command"])
}

#[cfg(test)]
mod tests {
    use super::*;

    const HISTORY: &str = "
# aider chat started at 2026-01-02 10:00:00

> /usr/bin/aider --model sonnet  
> Aider v0.86.1  
> Main model: anthropic/claude-sonnet-4 with diff edit format  
> Git repo: .git with 12 files  

#### /add src/greet.py  
> Added src/greet.py to the chat  

#### Fix the typo in the greeting  
####   and run the tests  

<thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>

The typo is Helo.

</thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>

Here is the fix:

src/greet.py
```python
<<<<<<< SEARCH
> quoted in a fence  
#### not a user line
=======
    return \"Hello\"
>>>>>>> REPLACE
```

```bash
python -m unittest
```

> Tokens: 2.5k sent, 1.2k cache hit, 85 received. Cost: $0.01 message, $0.01 session.  
> Applied edit to src/greet.py  
> Commit 1a2b3c4 fix: greeting typo  
>  
> python -m unittest  
> Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y  
>  
> Running python -m unittest  
> Add command output to the chat? (Y)es/(N)o/(D)on't ask again [Yes]: n  

#### /run ls  
> Add 1 line of output to the chat? (Y)es/(N)o/(D)on't ask again [Yes]: n  

# aider chat started at 2026-01-02 11:00:00


# aider chat started at 2026-01-02 12:00:00

> Aider v0.86.1  
> Model: gpt-4o with diff edit format  

#### hello  
> litellm.RateLimitError: litellm.RateLimitError: quota exceeded  
> Retrying in 0.2 seconds...  
> Traceback (most recent call last):  
> File \"base_coder.py\", line 1, in send  
> cost += x * 1.25  
> TypeError: can't multiply sequence by non-int of type 'float'  
> can't multiply sequence by non-int of type 'float'  

#### run it  

ok

> Tokens: 10 sent, 2 received.  
> python -m pytest  
> Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: n  
";

    fn load_str(name: &str, s: &str) -> (tempfile::TempDir, Vec<Trace>) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(name);
        std::fs::write(&p, s).unwrap();
        let l = Aider.load(&p).unwrap();
        (d, l.traces)
    }

    fn names(t: &Trace, kind: EventKind) -> Vec<String> {
        t.walk()
            .into_iter()
            .filter(|(i, _)| t.event(*i).kind == kind)
            .map(|(i, _)| t.name(i).to_string())
            .collect()
    }

    #[test]
    fn runs_calls_replies_and_errors() {
        let (_d, ts) = load_str(FILE_NAME, HISTORY);
        assert_eq!(ts.len(), 3);
        let t = &ts[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.model.as_deref(), Some("anthropic/claude-sonnet-4"));
        assert_eq!(t.meta.start, parse_timestamp_str("2026-01-02 10:00:00"));
        // The edit and the command aider ran; the /run typed by the user is no call.
        assert_eq!(names(t, EventKind::ToolCall), vec!["edit", "shell"]);
        assert_eq!(names(t, EventKind::LlmCall), vec!["anthropic/claude-sonnet-4"]);
        assert_eq!(names(t, EventKind::Message(Role::User)), vec!["/add", "user", "/run"]);
        assert_eq!(names(t, EventKind::Other), vec!["thinking"]);
        let llm = t.events.iter().find(|e| e.kind == EventKind::LlmCall).unwrap();
        // 2.5k sent of which 1.2k cache hit: 1,300 new input; the message cost $0.01.
        assert_eq!(
            llm.usage.get().map(|u| (u.input, u.cache_read, u.output, u.cost)),
            Some((Some(1300), Some(1200), Some(85), Some(10_000)))
        );
        let p = super::super::payload(t, llm);
        let out = p.output.unwrap();
        assert!(out.as_str().unwrap().starts_with("Here is the fix:"), "{out}");
        assert!(out.as_str().unwrap().contains("#### not a user line"));
        assert!(p.extra[0].1.as_str().unwrap().contains("Cost: $0.01"));
        let edit = t.walk().into_iter().find(|(i, _)| t.name(*i) == "edit").unwrap().0;
        assert_eq!(
            super::super::payload(t, t.event(edit)).input,
            Some(json!({"path": "src/greet.py"}))
        );
        let th = t.walk().into_iter().find(|(i, _)| t.name(*i) == "thinking").unwrap().0;
        assert_eq!(
            super::super::payload(t, t.event(th)).output,
            Some(json!("The typo is Helo."))
        );
        let user = t.walk().into_iter().find(|(i, _)| t.name(*i) == "user").unwrap().0;
        assert_eq!(
            super::super::payload(t, t.event(user)).input,
            Some(json!("Fix the typo in the greeting\n  and run the tests"))
        );
        assert_eq!(t.meta.status, RunStatus::Ok);

        // A header-only run is a run.
        assert_eq!(ts[1].counts().events, 1);

        let t = &ts[2];
        assert_eq!(t.meta.model.as_deref(), Some("gpt-4o"));
        assert_eq!(names(t, EventKind::Error), vec!["litellm.RateLimitError", "TypeError"]);
        // The declined command is no call; the reply after the errors makes the run ok.
        assert_eq!(t.counts().tool_calls, 0);
        assert_eq!(t.meta.status, RunStatus::Ok);
        let e = t.walk().into_iter().find(|(i, _)| t.name(*i) == "TypeError").unwrap().0;
        let p = super::super::payload(t, t.event(e));
        let m = p.error.unwrap().message;
        assert!(m.starts_with("Traceback") && m.ends_with("'float'"), "{m}");
    }

    #[test]
    fn a_run_that_ends_in_an_error_failed() {
        let (_d, ts) = load_str(
            FILE_NAME,
            "# aider chat started at 2026-01-02 12:00:00\n\n#### hi  \n> litellm.BadRequestError: no provider  \n",
        );
        assert_eq!(ts[0].meta.status, RunStatus::Error);
        assert_eq!(ts[0].counts().errors, 1);
    }

    #[test]
    fn damaged_histories() {
        // Nothing at all: not a history.
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FILE_NAME);
        std::fs::write(&p, "\n  \n").unwrap();
        assert!(matches!(Aider.load(&p), Err(LoadError::NotATrace { .. })));
        // Text before the first header (a run of its own), a bad time, invalid UTF-8, a
        // cut-off last line, a thinking tag never closed, a traceback with no exception line.
        let mut bytes =
            b"stray\n# aider chat started at yesterday\n\n#### a\n\xff\xfe\n<thinking-content-1>\nhalf".to_vec();
        bytes.extend_from_slice(b"\n> Traceback (most recent call last):\n> File \"x\"");
        std::fs::write(&p, &bytes).unwrap();
        let ts = Aider.load(&p).unwrap().traces;
        assert_eq!(ts.len(), 2);
        assert_eq!((ts[0].meta.id.as_str(), ts[0].counts().llm_calls), (NO_HEADER, 1));
        assert!(ts[0].diagnostics.is_empty());
        let t = &ts[1];
        assert_eq!(t.diagnostics.len(), 1, "{:?}", t.diagnostics);
        assert!(t.diagnostics.iter().all(|d| d.severity == Severity::Warning));
        assert_eq!(names(t, EventKind::Error), vec!["Traceback"]);
        assert_eq!(t.meta.status, RunStatus::Error);
        for (i, _) in t.walk() {
            let _ = super::super::payload(t, t.event(i));
        }
    }

    #[test]
    fn detection() {
        let probe = |name: &str, body: &[u8]| Probe::from_bytes(Path::new(name), body.to_vec(), true);
        assert_eq!(Aider.detect(&probe(FILE_NAME, b"")), 100);
        assert_eq!(
            Aider.detect(&probe("chat.md", b"\n# aider chat started at 2026-01-01 00:00:00\n")),
            90
        );
        assert_eq!(Aider.detect(&probe("README.md", b"# Project\n")), 0);
        // Under any name: a header first, or aider's own user and output lines.
        assert_eq!(
            Aider.detect(&probe("chat.log", b"# aider chat started at 2026-01-01 00:00:00\n")),
            90
        );
        for name in ["session-excerpt.md", "aider-log.txt"] {
            let text = std::fs::read(crate::formats::testing::fixture("aider", name)).unwrap();
            assert_eq!(Aider.detect(&probe(name, &text)), 80, "{name}");
        }
        // Markdown with headings of four hashes and block quotes is not enough, nor is one
        // of the two kinds of lines alone, nor JSON.
        let readme = b"# Tool\n\n#### Install  \n\n> Note: run `make` first.  \n> Tokens are read from the environment.  \n\n#### Usage\n\n> Applied science, applied edits.\n";
        assert_eq!(Aider.detect(&probe("README.md", readme)), 0);
        assert_eq!(
            Aider.detect(&probe(
                "x.md",
                b"> Applied edit to a.py  \n> Tokens: 1k sent, 2 received.  \n"
            )),
            0
        );
        assert_eq!(Aider.detect(&probe("x.md", b"#### hi  \n\nhello\n")), 0);
        assert_eq!(
            Aider.detect(&probe("x.json", b"[\"#### a\",\n\"> Applied edit to b\"]\n")),
            0
        );
        // A header later in the file: aider's lines before it say it.
        assert_eq!(
            Aider.detect(&probe(
                "x.md",
                b"#### go on  \n\nok\n\n> Commit 1a2b3c4 feat: x  \n\n# aider chat started at 2026-01-01 00:00:00\n"
            )),
            80
        );
    }

    /// A history that starts mid-session (an excerpt, under any name): its first lines are a
    /// run of their own, counted as any other.
    #[test]
    fn histories_that_start_mid_session() {
        let load = |name: &str| {
            Aider
                .load(&crate::formats::testing::fixture("aider", name))
                .unwrap()
                .traces
        };
        let ts = load("session-excerpt.md");
        let ids: Vec<&str> = ts.iter().map(|t| t.meta.id.as_str()).collect();
        assert_eq!(ids, [NO_HEADER, "2025-04-03 09:15:02"]);
        let t = &ts[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.meta.start, None);
        assert_eq!(names(t, EventKind::ToolCall), vec!["edit"]);
        assert_eq!(t.counts().llm_calls, 2);
        assert_eq!(names(t, EventKind::Message(Role::User)), vec!["user", "/run", "user"]);
        // 3.1k sent of which 1.0k cache hit, and 3.4k of which 2.9k: inputs 2,100 and 500.
        let usage: Vec<(Option<u64>, Option<u64>, Option<u64>)> = t
            .events
            .iter()
            .filter_map(|e| e.usage.get())
            .map(|u| (u.input, u.cache_read, u.output))
            .collect();
        assert_eq!(
            usage,
            [(Some(2100), Some(1000), Some(120)), (Some(500), Some(2900), Some(6))]
        );
        let root = t.event(t.roots[0]);
        assert_eq!((root.origin.line, root.origin.len), (1, 0));
        assert_eq!(ts[1].meta.model.as_deref(), Some("gpt-4o"));
        assert_eq!((ts[1].counts().tool_calls, ts[1].counts().llm_calls), (1, 1));

        let ts = load("aider-log.txt");
        assert_eq!(ts.len(), 1);
        let t = &ts[0];
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        // The edit applied before the excerpt's first reply, and the command aider ran.
        assert_eq!(names(t, EventKind::ToolCall), vec!["edit", "shell"]);
        assert_eq!(t.counts().llm_calls, 2);
        assert_eq!(names(t, EventKind::Error), vec!["litellm.APIConnectionError"]);
        assert_eq!(t.meta.status, RunStatus::Error);
        // The tokens of a reply before the excerpt have no call to go to.
        assert_eq!(t.events.iter().filter(|e| e.usage.get().is_some()).count(), 1);
    }

    /// A line in words aider does not use yet, `> ` output or reply text: at a place where
    /// it joins what is there (next to another `> ` line, before a user line, after a line
    /// of a reply). Returns the lines with some inserted.
    fn drift_lines(text: &str, rng: &mut crate::formats::testing::Rng) -> String {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let mut out = String::with_capacity(text.len() + text.len() / 4);
        for (k, l) in lines.iter().enumerate() {
            let c = class(l.trim_end_matches(['\n', '\r']));
            let header = l.starts_with(HEADER);
            if matches!(c, Class::Output | Class::User) && !header && rng.one_in(4) {
                out.push_str(&format!("> {} {}  \n", rng.type_name(), rng.next() % 1000));
            }
            out.push_str(l);
            if !l.ends_with('\n') {
                out.push('\n');
            }
            let reply = c == Class::Reply && !header;
            if (reply || c == Class::Output) && rng.one_in(4) {
                let next = lines.get(k + 1).map(|n| class(n.trim_end_matches(['\n', '\r'])));
                if reply {
                    out.push_str(&format!("{} drift text {}\n", rng.type_name(), rng.next() % 1000));
                } else if next == Some(Class::Output) || next.is_none() {
                    out.push_str(&format!("> {} after  \n", rng.type_name()));
                }
            }
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(16))]
        /// The drift rule for a format of no typed records: lines in words aider does not
        /// use yet change no run, no count and no diagnostic, on our fixtures, the sample and
        /// the corpus' histories.
        #[test]
        fn unknown_lines_change_no_count(seed in proptest::prelude::any::<u64>()) {
            let sources = crate::formats::testing::drift_sources(
                "aider",
                &[
                    "tests/fixtures/aider/session-excerpt.md",
                    "tests/fixtures/aider/aider-log.txt",
                    "sample-traces/aider/greeter/.aider.chat.history.md",
                ],
            );
            let mut rng = crate::formats::testing::Rng::new(seed);
            let view = |ts: &[Trace]| -> Vec<(String, [u64; 4], Vec<String>, u64)> {
                ts.iter()
                    .map(|t| {
                        let c = t.counts();
                        let mut sev: Vec<String> = t.diagnostics.iter().map(|d| format!("{:?}", d.severity)).collect();
                        sev.sort();
                        (t.meta.id.clone(), [c.tool_calls as u64, c.llm_calls as u64, c.errors as u64, c.tokens], sev, t.skipped.total())
                    })
                    .collect()
            };
            for src in &sources {
                let text = String::from_utf8_lossy(&std::fs::read(src).unwrap()).into_owned();
                let d = tempfile::tempdir().unwrap();
                let copy = d.path().join(src.file_name().unwrap());
                let drifted = drift_lines(&text, &mut rng);
                std::fs::write(&copy, &drifted).unwrap();
                let f = crate::formats::detect(&copy).unwrap();
                proptest::prop_assert_eq!(f.id(), "aider", "{}", src.display());
                let before = Aider.load(src).unwrap().traces;
                let after = Aider.load(&copy).unwrap().traces;
                proptest::prop_assert_eq!(view(&before), view(&after), "{} (seed {}):\n{}", src.display(), seed, drifted);
            }
        }
    }

    #[test]
    fn tokens_as_aider_prints_them() {
        let u = parse_tokens("9.7k sent, 85 received. Cost: $0.01 message, $0.03 session.");
        assert_eq!((u.input, u.output, u.cost), (Some(9700), Some(85), Some(10_000)));
        let u = parse_tokens("1.2M sent, 2.5k cache write, 10.0k received.");
        assert_eq!(
            (u.input, u.cache_write, u.output, u.cost),
            (Some(1_197_500), Some(2_500), Some(10_000), None)
        );
        let u = parse_tokens("6.3k sent, 55 received. Cost: $0.0084 message, $0.0084 session.");
        assert_eq!(u.cost, Some(8_400));
        assert!(parse_tokens("garbage").is_empty());
    }
}

#[cfg(test)]
mod gist_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn edits_and_commands() {
        // The inputs `decode_payload` makes of `> Applied edit to X` and `> Running X`.
        assert_eq!(
            Aider.gist("edit", &json!({"path": "CONVENTIONS.md"})).as_deref(),
            Some("CONVENTIONS.md")
        );
        assert_eq!(
            Aider.gist("shell", &json!({"command": "pytest -q"})).as_deref(),
            Some("pytest -q")
        );
    }
}
