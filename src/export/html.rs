//! A run as one self-contained HTML page: opens offline, asks no other host for anything, and
//! needs no script (folding is `<details>`). Its Content-Security-Policy allows no script, no
//! request and no image but inline `data:` ones, as a second wall behind the escaping: every
//! text from the trace is written as escaped text content (never into an attribute or a URL),
//! with controls and bidi overrides shown as visible escapes (`\x1b`, `<U+202E>`).
//!
//! A large run stays usable: at most [`MAX_EVENTS`] events, each value cut to
//! [`MAX_VALUE`] bytes, and payloads only while the page is under [`MAX_PAGE`] bytes; the page
//! says what it left out.

use super::{Header, cut_bytes, header, is_conversation, message_text, pretty};
use crate::formats;
use crate::model::{EventKind, Payload, Status, Trace, Usage, format_duration};
use serde_json::Value;
use std::fmt::Write as _;
use std::io::{self, Write};

/// Events shown on a page (in tree order).
pub const MAX_EVENTS: usize = 2_000;
/// Bytes of one value shown.
pub const MAX_VALUE: usize = 32 << 10;
/// Once the page is this large, later events show their row only.
pub const MAX_PAGE: usize = 24 << 20;
/// Nesting deeper than this is drawn flat with its depth (browsers cap the DOM depth).
const MAX_NEST: usize = 40;

const CSS: &str = r#"
:root{--bg:#fff;--fg:#1f2328;--mut:#656d76;--line:#d0d7de;--code:#f6f8fa;--err:#cf222e;--errbg:#ffebe9;--ok:#1a7f37;--bar:#0969da;--tool:#8250df;--llm:#0969da;--msg:#9a6700}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mut:#8d96a0;--line:#30363d;--code:#161b22;--err:#ff7b72;--errbg:#3b1618;--ok:#3fb950;--bar:#4493f8;--tool:#bc8cff;--llm:#4493f8;--msg:#d29922}}
*{box-sizing:border-box}
body{margin:0;padding:1rem 1.5rem;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
h1{font-size:1.4rem;margin:.2rem 0 .8rem;overflow-wrap:anywhere}
table.head{border-collapse:collapse;margin-bottom:1rem}
table.head th{text-align:left;color:var(--mut);font-weight:normal;padding:.15rem 1rem .15rem 0;vertical-align:top}
table.head td{padding:.15rem 0;overflow-wrap:anywhere}
.note{border:1px solid var(--line);border-left:4px solid var(--msg);padding:.4rem .8rem;margin:.6rem 0}
.cols,summary{display:grid;grid-template-columns:minmax(0,1fr) 5.5rem 5rem 28%;gap:.6rem;align-items:center}
.cols{color:var(--mut);border-bottom:1px solid var(--line);padding:.2rem 0;font-size:.85rem}
summary{list-style:none;cursor:pointer;padding:.12rem 0;border-bottom:1px solid var(--line)}
summary::-webkit-details-marker{display:none}
summary:hover{background:var(--code)}
.nm{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.nm::before{content:"\25B8";display:inline-block;width:1em;color:var(--mut)}
details[open]>summary .nm::before{content:"\25BE"}
details.leaf>summary .nm::before{content:"\00B7"}
.k{display:inline-block;min-width:4.2em;font-size:.78rem;color:var(--mut);text-transform:uppercase}
.g{color:var(--mut);font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem}
.k-tool{color:var(--tool)}.k-llm{color:var(--llm)}.k-message{color:var(--msg)}
.st{font-size:.85rem}.st-error{color:var(--err);font-weight:600}.st-ok{color:var(--ok)}
.d{text-align:right;color:var(--mut);font-variant-numeric:tabular-nums}
.tl{position:relative;height:.7rem;background:var(--code);border-radius:2px}
.tl i{position:absolute;top:0;bottom:0;background:var(--bar);border-radius:2px;min-width:2px}
.e-err>summary{background:var(--errbg)}
.e-err>summary .tl i{background:var(--err)}
.body{margin:.3rem 0 .6rem;padding:.2rem .8rem;border-left:2px solid var(--line)}
.sec{margin:.4rem 0}
.sec>b{display:block;color:var(--mut);font-weight:600;font-size:.8rem;text-transform:uppercase}
pre{margin:.2rem 0;padding:.5rem .7rem;background:var(--code);border-radius:4px;white-space:pre-wrap;overflow-wrap:anywhere;font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;max-height:40rem;overflow:auto}
.err{border:1px solid var(--err);background:var(--errbg);padding:.4rem .7rem;border-radius:4px}
.err>b{color:var(--err)}
.msg{margin:.3rem 0;padding:.2rem .6rem;border-left:3px solid var(--line)}
.msg>b{font-size:.8rem;text-transform:uppercase;color:var(--mut)}
.r-user{border-left-color:var(--llm)}.r-assistant{border-left-color:var(--ok)}.r-system{border-left-color:var(--msg)}.r-tool{border-left-color:var(--tool)}
.cut{color:var(--msg);font-style:italic}
table.u{border-collapse:collapse}table.u td{padding:0 1rem 0 0}
summary.x{display:block;border:0;color:var(--mut);font-size:.85rem;padding:.1rem 0}
summary.x::before{content:"\25B8 "}details[open]>summary.x::before{content:"\25BE "}
footer{margin-top:1rem;color:var(--mut);font-size:.85rem}
"#;

use crate::sanitize::html as esc;

/// What the page left out.
#[derive(Default)]
struct Omitted {
    values_cut: usize,
    payloads_skipped: usize,
}

pub fn write(t: &Trace, out: &mut dyn Write) -> io::Result<()> {
    let h = header(t);
    let walk = t.walk();
    let shown = walk.len().min(MAX_EVENTS);
    let mut body = String::new();
    let mut om = Omitted::default();
    let (lo, hi) = t.time_span();
    let span = match (lo, hi) {
        (Some(a), Some(b)) if b > a => Some((a, b - a)),
        _ => None,
    };
    // Failing events and their ancestors start open: an error is never folded away.
    let mut leads_to_error = vec![false; t.len()];
    for e in &t.events {
        if e.is_error() && e.kind != EventKind::Run {
            let mut p = e.parent;
            let mut guard = 0;
            while p != crate::model::NO_PARENT && !leads_to_error[p as usize] && guard < 100_000 {
                leads_to_error[p as usize] = true;
                p = t.event(p).parent;
                guard += 1;
            }
        }
    }
    // Open <details> elements of the events whose children follow.
    let mut open: Vec<usize> = Vec::new();
    for (k, &(i, depth)) in walk.iter().take(shown).enumerate() {
        let nest = depth.min(MAX_NEST);
        while open.last().is_some_and(|&d| d >= nest) {
            open.pop();
            body.push_str("</div></details>\n");
        }
        let has_kids = !t.children(i).is_empty() && depth < MAX_NEST && walk.get(k + 1).is_some_and(|n| n.1 > depth);
        let open_it = leads_to_error[i as usize];
        event(t, i, depth, span, open_it, body.len() < MAX_PAGE, &mut body, &mut om);
        if has_kids && k + 1 < shown {
            body.push_str("<div class=\"kids\">");
            open.push(nest);
        } else {
            body.push_str("</details>\n");
        }
    }
    for _ in open.drain(..) {
        body.push_str("</div></details>\n");
    }
    page(t, &h, walk.len(), shown, &om, &body, out)
}

fn page(
    t: &Trace,
    h: &Header,
    total: usize,
    shown: usize,
    om: &Omitted,
    body: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut s = String::with_capacity(body.len() + 8192);
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    // No script, no request to any host: only inline styles and inline data images.
    s.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'\">\n");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n");
    s.push_str("<meta name=\"color-scheme\" content=\"light dark\">\n");
    let _ = writeln!(s, "<title>{} · tracetui</title>", esc(&h.title));
    let _ = writeln!(s, "<style>{CSS}</style></head><body>");
    let _ = writeln!(
        s,
        "<h1>{}{}</h1>",
        if h.error {
            "<span class=\"st-error\">✗</span> "
        } else {
            ""
        },
        esc(&h.title)
    );
    s.push_str("<table class=\"head\">\n");
    for (k, v) in &h.rows {
        let cls = if *k == "Status" && h.error {
            " class=\"st-error\""
        } else {
            ""
        };
        let _ = writeln!(s, "<tr><th>{k}</th><td{cls}>{}</td></tr>", esc(v));
    }
    s.push_str("</table>\n");
    if shown < total {
        let _ = writeln!(
            s,
            "<p class=\"note\">This page shows the first {shown} of {total} events (in tree order); {} left out. Export to OTLP/JSON or Markdown, or open the run in tracetui, for all of them.</p>",
            crate::words::count(total - shown, "event")
        );
    }
    if om.payloads_skipped > 0 {
        let _ = writeln!(
            s,
            "<p class=\"note\">The page reached its size bound ({} MiB): the details of the last {} are left out (their rows are shown).</p>",
            MAX_PAGE >> 20,
            crate::words::count(om.payloads_skipped, "event")
        );
    }
    if om.values_cut > 0 {
        let _ = writeln!(
            s,
            "<p class=\"note\">{} longer than {} KiB {} cut (marked where cut).</p>",
            crate::words::count(om.values_cut, "value"),
            MAX_VALUE >> 10,
            if om.values_cut == 1 { "was" } else { "were" }
        );
    }
    if !t.diagnostics.is_empty() {
        let _ = writeln!(
            s,
            "<details class=\"note\"><summary>{} while loading</summary><pre>",
            crate::words::count(t.diagnostics.len(), "diagnostic")
        );
        for d in t.diagnostics.iter().take(200) {
            let _ = writeln!(s, "{}", esc(&d.to_string()));
        }
        s.push_str("</pre></details>\n");
    }
    s.push_str("<div class=\"cols\"><span>event</span><span>status</span><span class=\"d\">duration</span><span>timeline</span></div>\n");
    out.write_all(s.as_bytes())?;
    out.write_all(body.as_bytes())?;
    let foot = format!(
        "<footer>Exported by tracetui {} from {} ({}).</footer>\n</body></html>\n",
        env!("CARGO_PKG_VERSION"),
        esc(&t.meta.source.display().to_string()),
        esc(t.meta.format)
    );
    out.write_all(foot.as_bytes())
}

#[allow(clippy::too_many_arguments)]
fn event(
    t: &Trace,
    i: u32,
    depth: usize,
    span: Option<(i64, i64)>,
    on_error_path: bool,
    with_payload: bool,
    s: &mut String,
    om: &mut Omitted,
) {
    let e = t.event(i);
    let p = if with_payload {
        formats::payload(t, e)
    } else {
        om.payloads_skipped += 1;
        Payload::default()
    };
    let mut cls = String::from("ev");
    if e.is_error() {
        cls.push_str(" e-err");
    }
    let leaf = t.children(i).is_empty() && p.is_empty() && e.usage.is_none();
    if leaf {
        cls.push_str(" leaf");
    }
    // Roots and failing events start open; everything else folds.
    let open = (depth == 0 && !t.children(i).is_empty()) || e.is_error() || on_error_path;
    let _ = write!(s, "<details class=\"{cls}\"{}>", if open { " open" } else { "" });
    let kind = e.kind.label();
    let _ = write!(
        s,
        "<summary><span class=\"nm\" style=\"padding-left:{}em\">",
        depth.min(MAX_NEST)
    );
    if depth > MAX_NEST {
        let _ = write!(s, "<span class=\"k\">⋯{depth}</span> ");
    }
    let _ = write!(
        s,
        "<span class=\"k k-{}\">{}</span> {}",
        e.kind.as_str(),
        kind,
        esc(&crate::sanitize::line(t.name(i)))
    );
    // What a call did (its command, its file): past the page's bound its payload is not
    // shown, but its row still says it.
    let gist = if with_payload {
        formats::gist::from_payload(t, e, &p)
    } else {
        formats::gist::of(t, e)
    };
    if let Some(g) = gist {
        let _ = write!(s, " <span class=\"g\">{}</span>", esc(&g));
    }
    if let Some(n) = e.usage.get().and_then(|u| u.sum()) {
        let _ = write!(s, " <span class=\"k\">{n} tok</span>");
    }
    let st = if e.is_error() { Status::Error } else { e.status };
    let _ = write!(
        s,
        "</span><span class=\"st st-{0}\">{1}{0}</span><span class=\"d\">{2}</span><span class=\"tl\">",
        st.as_str(),
        if st == Status::Error { "✗ " } else { "" },
        e.duration.map(format_duration).unwrap_or_default()
    );
    if let (Some((lo, width)), Some(start)) = (span, e.start.get()) {
        let left = ((start - lo) as f64 / width as f64 * 100.0).clamp(0.0, 100.0);
        let w = (e.duration.unwrap_or(0) as f64 / width as f64 * 100.0).clamp(0.0, 100.0 - left);
        let _ = write!(s, "<i style=\"left:{left:.2}%;width:{w:.2}%\"></i>");
    }
    s.push_str("</span></summary>");
    if leaf {
        return;
    }
    // An event with children folds its own details apart, so that opening it shows them first.
    let apart = !t.children(i).is_empty();
    if apart {
        let _ = write!(
            s,
            "<details class=\"pl\"{} style=\"margin-left:{}em\"><summary class=\"x\">details</summary>",
            if e.is_error() { " open" } else { "" },
            depth.min(MAX_NEST) + 1
        );
    }
    let margin = if apart { 0 } else { depth.min(MAX_NEST) + 1 };
    let _ = write!(s, "<div class=\"body\" style=\"margin-left:{margin}em\">");
    if let Some(err) = &p.error {
        s.push_str("<div class=\"sec err\"><b>✗ Error");
        if let Some(k) = &err.kind {
            let _ = write!(s, ": {}", esc(k));
        }
        s.push_str("</b>");
        let _ = write!(s, "<pre>{}</pre>", value_text(&err.message, om));
        if let Some(st) = &err.stack {
            let _ = write!(s, "<pre>{}</pre>", value_text(st, om));
        }
        if let Some(d) = &err.details {
            let _ = write!(s, "<pre>{}</pre>", value_text(&pretty(d), om));
        }
        s.push_str("</div>");
    }
    let (il, ol) = match e.kind {
        EventKind::ToolCall => ("Arguments", "Result"),
        EventKind::LlmCall => ("Prompt", "Response"),
        EventKind::Message(_) => ("Content", "Output"),
        _ => ("Input", "Output"),
    };
    if let Some(v) = &p.input {
        section(s, il, v, om);
    }
    if let Some(v) = &p.output {
        section(s, ol, v, om);
    }
    if let Some(u) = e.usage.get() {
        usage(s, &u);
    }
    if !e.model.is_empty() {
        let _ = write!(s, "<div class=\"sec\"><b>Model</b>{}</div>", esc(t.str(e.model)));
    }
    if let Some(st) = e.start.get() {
        let _ = write!(
            s,
            "<div class=\"sec\"><b>Started</b>{} UTC</div>",
            crate::model::format_ts(st)
        );
    }
    for (k, v) in &p.extra {
        if k == "usage" && e.usage.is_some() {
            continue;
        }
        let _ = write!(
            s,
            "<details class=\"sec\"><summary class=\"x\"><b>{}</b></summary><pre>{}</pre></details>",
            esc(k),
            value_text(&pretty(v), om)
        );
    }
    s.push_str("</div>");
    if apart {
        s.push_str("</details>");
    }
}

/// A value: a conversation as messages, a string as text, anything else as pretty JSON.
fn section(s: &mut String, label: &str, v: &Value, om: &mut Omitted) {
    let _ = write!(s, "<div class=\"sec\"><b>{label}</b>");
    if is_conversation(v) {
        for m in v.as_array().into_iter().flatten() {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("other");
            let r = crate::model::Role::parse(role).as_str();
            let _ = write!(
                s,
                "<div class=\"msg r-{r}\"><b>{}</b><pre>{}</pre></div>",
                esc(role),
                value_text(&message_text(m), om)
            );
        }
    } else {
        let _ = write!(s, "<pre>{}</pre>", value_text(&pretty(v), om));
    }
    s.push_str("</div>");
}

/// Escaped text of a value, cut to [`MAX_VALUE`] bytes with a visible mark.
fn value_text(text: &str, om: &mut Omitted) -> String {
    let (head, left) = cut_bytes(text, MAX_VALUE);
    let mut out = esc(head);
    if left > 0 {
        om.values_cut += 1;
        let _ = write!(out, "<span class=\"cut\">… {left} more bytes left out</span>");
    }
    out
}

fn usage(s: &mut String, u: &Usage) {
    s.push_str("<div class=\"sec\"><b>Usage</b><table class=\"u\">");
    let rows = [
        ("input", u.input),
        ("output", u.output),
        ("cache read", u.cache_read),
        ("cache write", u.cache_write),
        ("reasoning", u.reasoning),
        ("total", u.sum()),
    ];
    for (k, v) in rows {
        if let Some(n) = v {
            let _ = write!(s, "<tr><td>{k}</td><td>{n}</td></tr>");
        }
    }
    if let Some(c) = u.cost {
        let _ = write!(s, "<tr><td>cost</td><td>{}</td></tr>", crate::cost::dollars(c));
    }
    s.push_str("</table></div>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_says_what_each_call_did() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/session.jsonl");
        let t = formats::load(&path, None).unwrap().traces.remove(0);
        let mut out = Vec::new();
        write(&t, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        for g in ["/home/dev/proj/notes.txt", "ls missing/", "wc -w notes.txt"] {
            assert!(out.contains(&format!("<span class=\"g\">{g}</span>")), "{g}");
        }
    }
}
